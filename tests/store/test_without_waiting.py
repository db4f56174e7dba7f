"""SQLite's writes made on the event loop (EventStore.without_waiting): a write that meets
another writer's lock writes nothing and says so at once; the application then makes it on its
writer thread, which waits for the lock, while the loop goes on; the writes' WAL is checkpointed
off the loop."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from croupier.app import runner
from croupier.app.runner import AsyncLog
from croupier.log import NewEvent, StoreBusy, StoreUnavailable
from croupier.log.store import AppendPoll
from croupier.service.store import sqlite
from croupier.service.store.sqlite import SqliteEventStore
from tests.store.games import new_game


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteEventStore]:
    store = SqliteEventStore(tmp_path / "events.sqlite3")
    yield store
    store.close()


def _held(store: SqliteEventStore) -> sqlite3.Connection:
    """Another connection holding the file's write lock (as another process would)."""
    other = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_a_write_that_meets_the_lock_held_writes_nothing_and_says_so_at_once(
    store: SqliteEventStore,
) -> None:
    game_id = new_game(store)
    at_once = store.without_waiting()
    other = _held(store)
    started = time.monotonic()
    with pytest.raises(StoreBusy):
        at_once.append(game_id, 1, [NewEvent("A", b"a")], "cmd", 0, 2)
    # No busy timeout (the store's is 5 s): half of it is a wide margin on a busy machine.
    assert time.monotonic() - started < 2.5
    other.execute("ROLLBACK")
    other.close()
    assert store.game(game_id).version == 1 and store.result_of(game_id, "cmd") is None
    # Once the lock is free, the same write lands.
    assert at_once.append(game_id, 1, [NewEvent("A", b"a")], "cmd", 0, 2).last_version == 2


def _wait_for_the_lock(store: SqliteEventStore, log: AsyncLog, held_s: float) -> tuple[int, int]:
    """An append through the application while another connection holds the write lock for
    ``held_s``: the append's version, and how often the loop ticked (every 10 ms) meanwhile."""
    game_id = new_game(store)
    other = _held(store)

    async def scenario() -> tuple[int, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        beat = asyncio.create_task(ticker())
        append = asyncio.create_task(
            log.append(game_id, 1, [NewEvent("A", b"a")], "cmd", 0, 2, finished=False)
        )
        await asyncio.sleep(held_s)
        assert not append.done()  # waiting for the lock
        other.execute("ROLLBACK")  # the other writer lets go
        result = await asyncio.wait_for(append, 30)
        beat.cancel()
        return result.last_version, ticks

    try:
        return asyncio.run(scenario())
    finally:
        other.close()
        log.close()


def test_a_write_that_met_the_lock_is_tried_again_on_the_loop_which_goes_on(
    store: SqliteEventStore,
) -> None:
    """Tried again soon and often on the loop (not in SQLite's busy handler on a thread, which
    sleeps up to 100 ms between tries and is not fair between processes)."""
    view = store.without_waiting()
    tries = 0
    original = view.append

    def append(*args: object, **kwargs: object) -> object:
        nonlocal tries
        tries += 1
        return original(*args, **kwargs)  # type: ignore[arg-type]

    view.append = append  # type: ignore[method-assign]
    version, ticks = _wait_for_the_lock(store, AsyncLog(store), held_s=0.3)
    assert version == 2 and ticks >= 10  # the loop went on while the write waited
    # Tried every 5 ms at most: 60 tries in 0.3 s; fewer on a loaded machine, never just one.
    assert tries >= 20


def test_a_write_that_met_the_lock_for_long_waits_on_the_writer_thread(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "BUSY_RETRY_FOR_S", 0.05)
    threads: set[str] = set()
    original = store.append

    def append(*args: object, **kwargs: object) -> object:
        threads.add(threading.current_thread().name)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    store.append = append  # type: ignore[method-assign]
    version, ticks = _wait_for_the_lock(store, AsyncLog(store), held_s=0.3)
    assert version == 2 and ticks >= 10
    assert threads == {"log-write-0"}


@dataclass
class Appended:
    largest: int  # the WAL's largest size meanwhile, in bytes
    held_back: int  # the appends' tries that met StoreBusy


def _appended(
    store: SqliteEventStore, appends: int, pause_s: float, game_id: str | None = None
) -> Appended:
    """``appends`` writes of a page or more each through the loop's view, ``pause_s`` apart (a
    loop does other work between them), each tried again while busy, as the application does."""
    at_once = store.without_waiting()
    wal = Path(f"{store.path}-wal")
    game_id = game_id or new_game(store)
    payload = b"p" * 3000  # a page of its own per event
    largest = held_back = 0
    first = store.game(game_id).version
    for version in range(first, first + appends):
        while True:
            try:
                at_once.append(game_id, version, [NewEvent("A", payload)], f"c{version}", 0, 2)
                break
            except StoreBusy:
                held_back += 1
                time.sleep(0.0005)
        if version % 50 == 0:
            largest = max(largest, wal.stat().st_size)
        if pause_s:
            time.sleep(pause_s)
    assert store.game(game_id).version == first + appends
    return Appended(largest, held_back)


def _wal_pages(store: SqliteEventStore) -> int:
    """The pages in the WAL now (a look of another connection's, which copies what it can)."""
    probe = sqlite3.connect(store.path, isolation_level=None)
    try:
        return int(probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
    finally:
        probe.close()


@pytest.fixture
def often(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkpointer's turns 20 ms apart rather than 250, and the WAL let start over past
    1,000 pages rather than 4,000: the tests' appends are fewer than a server's."""
    monkeypatch.setattr(sqlite, "CHECKPOINT_S", 0.02)
    monkeypatch.setattr(sqlite, "RESTART_PAGES", 1_000)


class _Restarts(list[bool]):
    """Whether each of the checkpointer's RESTARTs let the WAL start over (SQLite's answer: not
    busy). Counted where they are made: how full the WAL looks at the end depends on when the
    last one was, which a loaded machine's scheduling decides."""


@dataclass
class _Rows:
    """A cursor's stand-in: what the checkpointer reads of one."""

    rows: list[Any]

    def fetchone(self) -> Any:
        return self.rows[0]


class _Checkpointing:
    """The checkpointer's connection, recording what its RESTARTs answered."""

    def __init__(self, real: sqlite3.Connection, restarts: _Restarts) -> None:
        self.real, self.restarts = real, restarts

    def execute(self, sql: str) -> Any:
        rows = self.real.execute(sql).fetchall()
        if "RESTART" in sql:
            self.restarts.append(rows[0][0] == 0)
        return _Rows(rows)

    def close(self) -> None:
        self.real.close()


@pytest.fixture
def restarts(monkeypatch: pytest.MonkeyPatch) -> _Restarts:
    made = _Restarts()
    connect = sqlite._connect

    def recorded(path: Path, timeout_s: float) -> Any:
        conn = connect(path, timeout_s)
        if threading.current_thread().name == "sqlite-checkpoint":
            return _Checkpointing(conn, made)
        return conn

    monkeypatch.setattr(sqlite, "_connect", recorded)
    return made


@pytest.mark.usefixtures("often")
def test_the_wal_stays_bounded_while_writes_go_on_without_a_pause(
    store: SqliteEventStore, restarts: _Restarts
) -> None:
    """Writes that never pause but to be tried again: the checkpointer holds the loop's writes
    back to let the WAL start over (SQLite's own wait for the lock would never find it free; a
    checkpointing thread without it never caught up with such a writer: 37 MB of WAL and more).
    How large the WAL gets meanwhile depends on the disk's flushes, which such a writer outruns
    (12–52 MB here); the server's loop writes a quarter as fast at most."""
    appended = _appended(store, 4000, 0.0)  # some 5 pages each: 80 MB without a checkpoint
    assert appended.held_back > 0
    assert any(restarts)  # it started over


@pytest.mark.usefixtures("often")
def test_the_checkpoints_are_made_off_the_loop_and_the_wal_starts_over(
    tmp_path: Path, restarts: _Restarts
) -> None:
    """Writes paced as a loop makes them (it does other work between appends): the store's thread
    checkpoints and lets the WAL start over; the loop's connection makes no checkpoint (SQLite's
    own would copy and flush on the loop); closing the store stops the thread."""
    store = SqliteEventStore(tmp_path / "events.sqlite3")
    try:
        appended = _appended(store, 1500, 0.0005)  # 7,500 pages or so, without a checkpoint
        assert appended.held_back > 0  # writes were held back to let the WAL start over
        assert any(restarts)  # and it did
        with store.without_waiting()._connection() as loops:  # this thread's: the appends'
            assert loops.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    finally:
        store.close()
    thread = store._checkpointer
    assert thread is not None and thread.name == "sqlite-checkpoint" and not thread.is_alive()


class _Counted(threading.Event):
    """The checkpointer's hold on the loop's writes, counting how often it is taken (once per
    try to let the WAL start over)."""

    def __init__(self) -> None:
        super().__init__()
        self.taken = 0

    def set(self) -> None:
        self.taken += 1
        super().set()


@pytest.mark.usefixtures("often")
def test_a_reader_holding_an_old_snapshot_is_waited_for_less_and_less_often(
    store: SqliteEventStore,
) -> None:
    """While a long read transaction holds an old snapshot, no checkpoint can copy past it, and
    each try to let the WAL start over holds every write back for its wait (RESTART_WAIT_MS) and
    fails: the tries come further and further apart (1, 2, 4… turns), and once the reader is
    gone the WAL starts over again."""
    store._holding_back = hold = _Counted()
    game_id = new_game(store)
    reader = sqlite3.connect(store.path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM events").fetchone()  # its snapshot, from here on
    started = time.monotonic()
    try:
        _appended(store, 600, 0.0005, game_id)
        pages_pinned = _wal_pages(store)
    finally:
        turns = (time.monotonic() - started) / sqlite.CHECKPOINT_S
        reader.execute("ROLLBACK")
        reader.close()
    assert pages_pinned > sqlite.RESTART_PAGES  # every append since the snapshot: not copied
    # A try at turns 1, 3, 7, 15…: at most one per doubling of the turns (every turn: 3119
    # writes held back, 100 ms each second).
    assert 1 <= hold.taken <= math.log2(turns + 1) + 1, (hold.taken, turns)
    for _ in range(20):  # the next try may be some turns away yet
        _appended(store, 100, 0.0005, game_id)
        if _wal_pages(store) < pages_pinned / 2:
            break  # it started over
    else:
        pytest.fail("the WAL did not start over once the reader was gone")


def test_an_idle_store_holds_no_write_back(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the WAL was let start over, nothing is written: the next write starts it from the
    top, and until then it still counts its pages, all copied. The checkpointer lets it be,
    rather than take the write lock and hold the loop's writes back every turn."""
    monkeypatch.setattr(sqlite, "CHECKPOINT_S", 0.3)
    monkeypatch.setattr(sqlite, "RESTART_PAGES", 1_000)
    store._holding_back = hold = _Counted()
    _appended(store, 300, 0.0)  # 1,500 pages or so, well within the first turn
    time.sleep(8 * sqlite.CHECKPOINT_S)
    assert hold.taken == 1  # the turn that found the WAL over its size, and no other


class _BusyReads(SqliteEventStore):
    """A store whose view for the loop finds every load busy (as another process's exclusive
    lock would make it); the store's own loads say which thread made them."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.threads: set[str] = set()
        self.busy = 0

    def without_waiting(self) -> SqliteEventStore:
        view = super().without_waiting()

        def busy(*args: object, **kwargs: object) -> None:
            self.busy += 1
            raise StoreBusy("database is locked")

        view.load = busy  # type: ignore[method-assign]
        return view

    def load(self, *args: object, **kwargs: object) -> Any:
        self.threads.add(threading.current_thread().name)
        return super().load(*args, **kwargs)  # type: ignore[arg-type]


def test_a_read_that_meets_the_lock_for_long_is_made_on_a_reader_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "BUSY_RETRY_FOR_S", 0.05)
    store = _BusyReads(tmp_path / "events.sqlite3")
    game_id = new_game(store)
    log = AsyncLog(store)
    try:
        loaded = asyncio.run(log.load(game_id))
    finally:
        log.close()
        store.close()
    assert [e.version for e in loaded.events] == [1]
    assert store.busy >= 2  # tried on the loop, and again, before the thread
    assert len(store.threads) == 1 and next(iter(store.threads)).startswith("log-read-")


def test_calls_are_made_on_the_loop_where_the_store_can_make_them_without_waiting(
    store: SqliteEventStore,
) -> None:
    """No thread of the application's store pools is used: the loop's own thread makes them."""
    game_id = new_game(store)
    log = AsyncLog(store)
    threads: set[str] = set()
    view = store.without_waiting()
    original = view.append

    def append(*args: object, **kwargs: object) -> object:
        threads.add(threading.current_thread().name)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    view.append = append  # type: ignore[method-assign]

    async def scenario() -> int:
        result = await log.append(game_id, 1, [NewEvent("A", b"a")], "cmd", 0, 2, finished=False)
        return result.last_version

    try:
        assert asyncio.run(scenario()) == 2
    finally:
        log.close()
    assert threads == {threading.main_thread().name}


def test_a_busy_call_is_counted_as_busy_not_as_a_failure_nor_a_call(
    store: SqliteEventStore,
) -> None:
    """The metrics wrapper: a call on the loop that met the lock is made again on a thread and
    counted there; it is neither a failure of the database nor a second call."""
    from prometheus_client import CollectorRegistry

    from croupier.service.metrics import Metrics
    from croupier.service.store.observed import ObservedStore

    registry = CollectorRegistry()
    observed = ObservedStore(store, Metrics(registry))
    view = observed.without_waiting()
    assert view is not None
    game_id = new_game(store)
    other = _held(store)
    try:
        with pytest.raises(StoreBusy):
            view.append(game_id, 1, [NewEvent("A", b"a")], "cmd", 0, 2)
    finally:
        other.execute("ROLLBACK")
        other.close()
    value = registry.get_sample_value
    assert value("croupier_store_busy_total", {"operation": "append"}) == 1
    assert (
        value("croupier_store_errors_total", {"operation": "append", "error": "StoreBusy"}) is None
    )
    assert value("croupier_store_operation_seconds_count", {"operation": "append"}) is None


class _Connection:
    """A connection whose statements after BEGIN fail busy (with an extended code, as a reader
    meets while another process recovers the WAL)."""

    def __init__(self, real: sqlite3.Connection) -> None:
        self.real = real

    def cursor(self) -> _Cursor:
        return _Cursor(self.real.cursor())


class _Cursor:
    def __init__(self, real: sqlite3.Cursor) -> None:
        self.real = real

    def execute(self, sql: str, params: object = ()) -> sqlite3.Cursor:
        if sql.startswith(("SELECT", "INSERT", "UPDATE")):
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorcode = sqlite3.SQLITE_BUSY_RECOVERY  # type: ignore[attr-defined]
            raise error
        return self.real.execute(sql, params)  # type: ignore[arg-type]

    def close(self) -> None:
        self.real.close()


def test_a_read_busy_at_its_first_statement_did_nothing_a_write_busy_past_begin_is_an_error(
    store: SqliteEventStore,
) -> None:
    """A read takes its lock at its first statement: busy there (whatever the extended code),
    it did nothing and may be made again. A write holds the lock from BEGIN IMMEDIATE: a busy
    statement after it is the database failing, not a call to make again at once: the store is
    unavailable (its client tries again later); nothing was written."""
    game_id = new_game(store)
    view = store.without_waiting()
    real, in_use = view._held()
    view._held = lambda: (_Connection(real), in_use)  # type: ignore[method-assign,assignment,return-value]
    with pytest.raises(StoreBusy):
        view.read(game_id)
    with pytest.raises(StoreUnavailable) as unavailable:
        view.append(game_id, 1, [NewEvent("A", b"a")], "cmd", 0, 2)
    assert not isinstance(unavailable.value, StoreBusy)
    assert not real.in_transaction and store.game(game_id).version == 1


def test_closing_the_store_closes_the_loops_connections(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "events.sqlite3")
    game_id = new_game(store)
    view = store.without_waiting()
    view.read(game_id)
    with view._connection() as conn:
        pass
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):  # closed
        conn.execute("SELECT 1")


def test_the_loops_poll_tells_other_connections_appends_and_not_its_own(
    store: SqliteEventStore,
) -> None:
    """The loop's look for other processes' appends is one PRAGMA on its own connection, whose
    change counter its own commits do not move: what the loop appended (and told already) is
    not told again; another connection's appends are, each game once, at its newest version."""
    mine, theirs = new_game(store), new_game(store)
    at_once = store.without_waiting()
    assert at_once is not None
    poll = at_once.append_poll()
    assert poll is not None and store.wait_listening(0)
    at_once.append(mine, 1, [NewEvent("A", b"a")], "mine", 0, 2)
    assert poll.poll() == []
    other = SqliteEventStore(store.path)  # another process's connection to the file
    try:
        other.append(theirs, 1, [NewEvent("B", b"b"), NewEvent("C", b"c")], "theirs", 0, 3)
        assert dict(poll.poll())[theirs] == 3
        assert poll.poll() == []
    finally:
        other.close()
    assert store._poller is None  # no listener thread


def test_the_application_hears_other_processes_on_the_loop(store: SqliteEventStore) -> None:
    """AsyncLog.listen polls on the loop where the store offers it; the thread's listener is
    never called."""
    game_id = new_game(store)
    heard: list[tuple[str, int]] = []

    def from_thread(game: str, version: int) -> None:
        raise AssertionError("heard on the store's thread")

    async def run() -> None:
        log = AsyncLog(store)
        log.listen(lambda game, version: heard.append((game, version)), from_thread)
        other = SqliteEventStore(store.path)
        try:
            other.append(game_id, 1, [NewEvent("B", b"b")], "theirs", 0, 3)
            async with asyncio.timeout(10):
                while not heard:
                    await asyncio.sleep(0.01)
        finally:
            other.close()
            log.close()

    asyncio.run(run())
    assert heard == [(game_id, 2)] and store._poller is None


def test_a_look_that_fails_is_made_again_in_full(store: SqliteEventStore) -> None:
    """A look whose read of the new rows fails (the loop's connection answers busy at once)
    leaves the marks where they were: the next look reads those rows again."""
    from croupier.service.store.sqlite import _Changes

    game_id = new_game(store)
    conn = sqlite3.connect(store.path, isolation_level=None)

    class Flaky:
        """The loop's connection, whose next read of the rows answers busy."""

        failing = False

        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            if self.failing and sql.startswith("SELECT rowid"):
                self.failing = False
                raise sqlite3.OperationalError("database is locked")
            return conn.execute(sql, *args)

    flaky = Flaky()
    changes = _Changes(flaky)  # type: ignore[arg-type]
    other = SqliteEventStore(store.path)
    try:
        other.append(game_id, 1, [NewEvent("B", b"b")], "theirs", 0, 2)
    finally:
        other.close()
    flaky.failing = True
    with pytest.raises(sqlite3.OperationalError):
        changes.since(own_too=False)
    assert changes.since(own_too=False) == [(game_id, 2)]
    conn.close()


def test_closing_the_store_while_threads_use_it_ends_their_calls_with_an_error_not_a_crash(
    tmp_path: Path,
) -> None:
    """The sqlite3 module crashes the process when a connection is closed under another
    thread's statement: a store closed while its threads are busy (a server shutting down while
    a read or the sweeper's look is under way) waits for each statement, and later calls fail
    with an error. In a child process, so that a crash fails this test, not the run."""
    script = textwrap.dedent(
        f"""
        import sqlite3, threading, time
        from croupier.service.store.sqlite import SqliteEventStore

        store = SqliteEventStore({str(tmp_path / "events.sqlite3")!r})
        for attempt in range(5):
            stop, errors = threading.Event(), []

            def work():
                while not stop.is_set():
                    try:
                        store.next_due()
                    except sqlite3.ProgrammingError as error:
                        errors.append(error)

            threads = [threading.Thread(target=work) for _ in range(3)]
            for thread in threads:
                thread.start()
            time.sleep(0.01)
            store.close()
            time.sleep(0.01)
            stop.set()
            for thread in threads:
                thread.join()
            assert errors, "calls after close must fail"
            store = SqliteEventStore(store.path)
        print("closed five times under use")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "closed five times under use" in done.stdout


def test_closing_the_log_waits_for_its_threads_work_under_way(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``AsyncLog.aclose`` (a server's shutdown) returns once the store's threads are done with
    the calls under way, so that whoever opened the store may close it next."""
    started, finished = threading.Event(), threading.Event()
    next_due = store.next_due

    def slow_next_due() -> int | None:
        started.set()
        time.sleep(0.2)
        try:
            return next_due()
        finally:
            finished.set()

    monkeypatch.setattr(store, "next_due", slow_next_due)

    async def scenario() -> bool:
        log = AsyncLog(store)
        look = asyncio.ensure_future(log.next_due())
        await asyncio.to_thread(started.wait, 5)
        look.cancel()  # its caller gone (the sweeper stopped): the thread goes on all the same
        await log.aclose()
        return finished.is_set()

    assert asyncio.run(scenario())


def test_a_write_held_back_by_the_checkpoint_is_tried_again_every_half_millisecond(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpointer holds this process's writes back for a few ms while it lets the WAL
    start over: the loop tries them again at the shortest wait each time, not at the longer and
    longer waits of another process's lock (they added up to 5 ms to a command's answer)."""
    game_id = new_game(store)
    log = AsyncLog(store)
    store._holding_back.set()
    waits: list[float] = []
    sleep = asyncio.sleep

    async def recorded(delay: float) -> None:
        if delay != sqlite.POLL_S:  # not the loop's look for other processes' appends
            waits.append(delay)
            if len(waits) == 12:
                store._holding_back.clear()  # the checkpoint is done
        await sleep(0)

    monkeypatch.setattr(runner.asyncio, "sleep", recorded)
    try:
        result = asyncio.run(
            log.append(game_id, 1, [NewEvent("A", b"a")], "c", 0, 2, finished=False)
        )
    finally:
        log.close()
    assert result.last_version == 2
    assert waits == [runner.BUSY_RETRY_FIRST_S] * 12


class _Failing:
    """The checkpointer's connection on a disk that fails every statement."""

    def execute(self, sql: str) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    def close(self) -> None:
        pass


@pytest.mark.usefixtures("often")
def test_a_checkpoint_that_fails_every_turn_is_said_once(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full or failing disk fails every turn of the checkpointer: the warning is logged once
    (and again a minute later while it lasts), not four times a second."""
    connect = sqlite._connect

    def failing(path: Path, timeout_s: float) -> Any:
        if threading.current_thread().name == "sqlite-checkpoint":
            return _Failing()
        return connect(path, timeout_s)

    monkeypatch.setattr(sqlite, "_connect", failing)
    with capture_logs() as logged:
        store.without_waiting()  # starts the checkpointer
        time.sleep(30 * sqlite.CHECKPOINT_S)
    said = [e for e in logged if e["event"] == "checkpoint failed"]
    assert [e["error"] for e in said] == ["disk I/O error"]


def test_other_processes_appends_are_looked_for_often_only_while_a_stream_waits(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop's look for other processes' appends wakes streams: with none waiting it is made
    every ``IDLE_POLL_S`` (looking every 10 ms was half of an idle server's CPU), and at once
    when a stream begins to wait, then at the store's pace again. Only upper bounds on the
    looks and a generous wait are asserted: a slow machine makes fewer, never more."""
    monkeypatch.setattr(runner, "IDLE_POLL_S", 30.0)
    looks: list[float] = []

    def poll() -> list[tuple[str, int]]:
        looks.append(time.monotonic())
        return []

    async def scenario() -> None:
        log = AsyncLog(store)
        watching = asyncio.Event()
        every_s = 0.002
        task = asyncio.create_task(log._poll(AppendPoll(poll, every_s), print, watching))
        try:
            await asyncio.sleep(0.3)  # nobody waits: no look before IDLE_POLL_S
            assert looks == []
            watching.set()  # a stream waits: a look at once, then at the store's pace
            deadline = time.monotonic() + 10
            while len(looks) < 5:
                assert time.monotonic() < deadline, "looks at the store's pace"
                await asyncio.sleep(every_s)
            watching.clear()  # the last stream went: the looks stop again
            await asyncio.sleep(0.05)
            seen = len(looks)
            await asyncio.sleep(0.3)
            assert len(looks) == seen
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            log.close()

    asyncio.run(scenario())
