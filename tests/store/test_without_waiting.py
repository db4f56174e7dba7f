"""SQLite's writes made on the event loop (EventStore.without_waiting): a write that meets
another writer's lock writes nothing and says so at once; the application then makes it on its
writer thread, which waits for the lock, while the loop goes on; the writes' WAL is checkpointed
off the loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from croupier.app.runner import AsyncLog
from croupier.log import GameRecord, NewEvent, StoreBusy
from croupier.service.store import sqlite as sqlite_store
from croupier.service.store.sqlite import SqliteEventStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteEventStore]:
    store = SqliteEventStore(tmp_path / "events.sqlite3")
    yield store
    store.close()


def _game(store: SqliteEventStore) -> str:
    game_id = str(uuid.uuid4())
    store.create_game(
        GameRecord(game_id, "hoola", 2, b"s" * 32, "c" * 64, 1), [NewEvent("E", b"e")], 1
    )
    return game_id


def _held(store: SqliteEventStore) -> sqlite3.Connection:
    """Another connection holding the file's write lock (as another process would)."""
    other = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_a_write_that_meets_the_lock_held_writes_nothing_and_says_so_at_once(
    store: SqliteEventStore,
) -> None:
    game_id = _game(store)
    at_once = store.without_waiting()
    other = _held(store)
    started = time.monotonic()
    with pytest.raises(StoreBusy):
        at_once.append(game_id, 1, [NewEvent("A", b"a")], "cmd", 0, 2)
    assert time.monotonic() - started < 1.0  # no busy timeout (the store's is 30 s)
    other.execute("ROLLBACK")
    other.close()
    assert store.game(game_id).version == 1 and store.result_of(game_id, "cmd") is None
    # Once the lock is free, the same write lands.
    assert at_once.append(game_id, 1, [NewEvent("A", b"a")], "cmd", 0, 2).last_version == 2


def test_the_application_makes_a_write_that_met_the_lock_on_its_writer_thread(
    store: SqliteEventStore,
) -> None:
    game_id = _game(store)
    log = AsyncLog(store)
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
            log.append(game_id, 1, [NewEvent("A", b"a")], "cmd", 0, 2, False, b"")
        )
        await asyncio.sleep(0.3)
        assert not append.done()  # waiting on the writer thread for the lock
        other.execute("ROLLBACK")  # the other writer lets go
        result = await asyncio.wait_for(append, 30)
        beat.cancel()
        return result.last_version, ticks

    try:
        version, ticks = asyncio.run(scenario())
    finally:
        other.close()
        log.close()
    assert version == 2 and store.game(game_id).version == 2
    assert ticks >= 10  # the loop went on while the write waited


def test_the_writes_wal_is_checkpointed_off_the_loop(
    store: SqliteEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop's connection never checkpoints (a checkpoint flushes the disk); without the
    store's own checkpoints its WAL file would grow by every write, for ever."""
    monkeypatch.setattr(sqlite_store, "CHECKPOINT_S", 0.01)
    at_once = store.without_waiting()
    wal = Path(f"{store.path}-wal")
    game_id = _game(store)
    payload = b"p" * 3000  # a page of its own per event
    for version in range(1, 1201):
        at_once.append(game_id, version, [NewEvent("A", payload)], f"c{version}", 0, 2)
        if version % 100 == 0:
            time.sleep(0.05)  # room for the checkpoints (and the WAL's restart after one)
    assert store.game(game_id).version == 1201
    # Never checkpointed, these writes leave a WAL of 37 MB; restarted after checkpoints, 3.4 MB.
    assert wal.stat().st_size < 10_000_000, wal.stat().st_size


class _BusyReads(SqliteEventStore):
    """A store whose view for the loop finds every read busy (as another process's exclusive
    lock would make it)."""

    def without_waiting(self) -> SqliteEventStore:
        view = super().without_waiting()

        def busy(*args: object, **kwargs: object) -> None:
            raise StoreBusy("database is locked")

        view.read = busy  # type: ignore[method-assign]
        return view


def test_a_read_that_meets_the_lock_is_made_on_a_reader_thread(tmp_path: Path) -> None:
    store = _BusyReads(tmp_path / "events.sqlite3")
    game_id = _game(store)
    log = AsyncLog(store)
    try:
        events = asyncio.run(log.read(game_id))
    finally:
        log.close()
        store.close()
    assert [e.version for e in events] == [1]


def test_calls_are_made_on_the_loop_where_the_store_can_make_them_without_waiting(
    store: SqliteEventStore,
) -> None:
    """No thread of the application's store pools is used: the loop's own thread makes them."""
    game_id = _game(store)
    log = AsyncLog(store)
    threads: set[str] = set()
    view = store.without_waiting()
    original = view.append

    def append(*args: object, **kwargs: object) -> object:
        threads.add(threading.current_thread().name)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    view.append = append  # type: ignore[method-assign]

    async def scenario() -> int:
        result = await log.append(game_id, 1, [NewEvent("A", b"a")], "cmd", 0, 2, False, b"")
        return result.last_version

    try:
        assert asyncio.run(scenario()) == 2
    finally:
        log.close()
    assert threads == {threading.main_thread().name}
