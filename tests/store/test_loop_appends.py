"""PostgreSQL appends made on the application's event loop (EventStore.loop_appender): where the
store knows the game's chain ends, the loop sends the one statement over a non-blocking
connection and no thread of the application's pools takes part; anything else goes the store's
own way on a thread, as before. A caller that goes while its statement is out is told what it
made all the same. Needs PostgreSQL (skips without it, except in CI)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from prometheus_client import CollectorRegistry

from croupier.app.runner import AsyncLog
from croupier.log import CommandResult, NewEvent, VersionConflict, key_of, verify_chain
from croupier.service.metrics import Metrics
from croupier.service.store import postgres
from croupier.service.store.observed import ObservedStore
from croupier.service.store.postgres import (
    LOOP_CONNECTIONS,
    PostgresEventStore,
    PostgresLoopAppender,
)
from tests.store.games import new_game

pytestmark = pytest.mark.postgres


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresEventStore]:
    store = PostgresEventStore(postgres_url)
    yield store
    store.close()


def _threads_of_the_store_s_own_append(
    store: PostgresEventStore, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """The threads the store's own (blocking) append is called on, from now on."""
    threads: list[str] = []
    own = PostgresEventStore.append

    def spied(self: PostgresEventStore, *args: Any, **kwargs: Any) -> CommandResult:
        threads.append(threading.current_thread().name)
        return own(self, *args, **kwargs)

    monkeypatch.setattr(PostgresEventStore, "append", spied)
    return threads


async def _in_turn(
    log: AsyncLog, game_id: str, version: int, command_ids: list[str], event: NewEvent
) -> list[CommandResult]:
    """One append of ``event`` per command id, each at the version the one before reached
    (recorded at ``version + 1`` ms on)."""
    results = []
    for command_id in command_ids:
        made = await log.append(
            game_id, version, [event], command_id, 0, version + 1, finished=False
        )
        results.append(made)
        version = made.last_version
    return results


def test_an_append_at_the_known_end_is_made_on_the_loop_and_the_rest_the_store_s_way(
    store: PostgresEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    game_id = new_game(store)  # the store knows where the chain ends: version 1
    threads = _threads_of_the_store_s_own_append(store, monkeypatch)

    async def scenario() -> list[CommandResult]:
        log = AsyncLog(store)
        try:
            made = await log.append(
                game_id, 1, [NewEvent("A", b"a")], "one", 0, 2, finished=False, command=b"c"
            )
            # A retry of the same command: the database finds it recorded, the loop's statement
            # writes nothing, and the store's own append answers with the first answer.
            again = await log.append(
                game_id, 2, [NewEvent("A", b"a")], "one", 0, 3, finished=False, command=b"c"
            )
            with pytest.raises(VersionConflict):
                await log.append(game_id, 1, [NewEvent("B", b"b")], "stale", 0, 4, finished=False)
            after = await log.append(game_id, 2, [NewEvent("B", b"b")], "two", 1, 5, finished=False)
            return [made, again, after]
        finally:
            await log.aclose()

    made, again, after = asyncio.run(scenario())
    assert (made.first_version, made.last_version, made.duplicate) == (2, 2, False)
    assert [e.version for e in made.events] == [2]
    assert again.duplicate and again.last_version == 2
    assert (after.last_version, after.duplicate) == (3, False)
    # The retry and the stale command went to a thread; the two new appends did not.
    assert len(threads) == 2 and all(t.startswith("log-read-") for t in threads), threads
    stored = store.read(game_id)
    assert [e.version for e in stored] == [1, 2, 3]
    assert stored[1:] == list(made.events) + list(after.events)
    assert verify_chain(stored, key_of(store.game(game_id))) is None


def test_a_caller_gone_while_its_statement_is_out_is_told_what_it_made(
    store: PostgresEventStore, postgres_url: str
) -> None:
    """Another connection holds the game's row, so the loop's statement waits in the database;
    the caller is cancelled meanwhile. The statement cannot be taken back: once it is through,
    what it appended is handed to ``late``, and the loop's connection serves the next append."""
    game_id = new_game(store)
    told: list[CommandResult] = []

    async def scenario() -> CommandResult:
        log = AsyncLog(store)
        holder = await psycopg.AsyncConnection.connect(postgres_url)
        try:
            await holder.execute("SELECT 1 FROM games WHERE game_id = %s FOR UPDATE", (game_id,))
            caller = asyncio.create_task(
                log.append(
                    game_id,
                    1,
                    [NewEvent("A", b"a")],
                    "gone",
                    0,
                    2,
                    finished=False,
                    late=told.append,
                )
            )
            await asyncio.sleep(0.3)  # the statement is out, waiting for the row
            caller.cancel()
            with pytest.raises(asyncio.CancelledError):
                await caller
            assert told == []
            await holder.rollback()  # the row is let go: the statement goes through
            async with asyncio.timeout(10):
                while not told:
                    await asyncio.sleep(0.01)
            return await log.append(game_id, 2, [NewEvent("B", b"b")], "next", 1, 3, finished=False)
        finally:
            await holder.close()
            await log.aclose()

    after = asyncio.run(scenario())
    assert [(r.command_id, r.last_version, r.duplicate) for r in told] == [("gone", 2, False)]
    assert after.last_version == 3
    assert [e.version for e in store.read(game_id)] == [1, 2, 3]


def test_a_connection_lost_under_an_append_is_answered_the_store_s_way_and_made_anew(
    store: PostgresEventStore, postgres_url: str
) -> None:
    """The database drops the loop's connections (a restart, a network cut): the next append on
    each is not lost to the client; the store's own append, which reads first, makes it, and the
    appends after it are the loop's again, on new connections."""
    game_id = new_game(store)

    async def scenario() -> list[CommandResult]:
        log = AsyncLog(store)
        try:
            results = [
                await log.append(game_id, 1, [NewEvent("A", b"a")], "a", 0, 2, finished=False)
            ]
            appender = log._on_loop
            assert isinstance(appender, PostgresLoopAppender)
            backends = [c.info.backend_pid for c in appender._idle]
            assert backends
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                for pid in backends:
                    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            # The dead connection met, then new ones.
            return results + await _in_turn(
                log, game_id, 2, ["b0", "b1", "b2"], NewEvent("B", b"b")
            )
        finally:
            await log.aclose()

    results = asyncio.run(scenario())
    assert [r.last_version for r in results] == list(range(2, 6))
    assert not any(r.duplicate for r in results)
    assert verify_chain(store.read(game_id), key_of(store.game(game_id))) is None


def test_an_append_waiting_for_its_game_holds_up_no_other_game(
    store: PostgresEventStore, postgres_url: str
) -> None:
    """Another connection holds one game's row (another replica's transaction, paused): that
    game's append waits for it on a connection of its own, and every other game's appends go on
    meanwhile, more of them than there are connections."""
    locked = new_game(store)
    others = [new_game(store) for _ in range(2 * LOOP_CONNECTIONS)]

    async def scenario() -> tuple[bool, list[int]]:
        log = AsyncLog(store)
        holder = await psycopg.AsyncConnection.connect(postgres_url)
        try:
            await holder.execute("SELECT 1 FROM games WHERE game_id = %s FOR UPDATE", (locked,))
            waiting = asyncio.create_task(
                log.append(locked, 1, [NewEvent("A", b"a")], "waits", 0, 2, finished=False)
            )
            await asyncio.sleep(0.2)  # its statement is out, waiting for the row
            versions = []
            async with asyncio.timeout(5):  # the row stays locked all the while
                for index, game_id in enumerate(others):
                    made = await log.append(
                        game_id, 1, [NewEvent("B", b"b")], f"o{index}", 0, 3, finished=False
                    )
                    versions.append(made.last_version)
            still_waiting = not waiting.done()
            await holder.rollback()
            await asyncio.wait_for(waiting, 10)
            return still_waiting, versions
        finally:
            await holder.close()
            await log.aclose()

    still_waiting, versions = asyncio.run(scenario())
    assert still_waiting and versions == [2] * len(others)
    assert store.game(locked).version == 2


def test_appends_waiting_for_a_connection_go_on_when_those_out_are_lost(
    store: PostgresEventStore, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every connection is out, on appends waiting for their games' rows; one more append waits
    for a connection. The database drops the connections out (a restart): their appends go the
    store's way, and the one waiting gets a new connection at once, with the rows still held."""
    monkeypatch.setattr(postgres, "LOOP_CONNECTIONS", 2)
    locked = [new_game(store) for _ in range(2)]
    free = new_game(store)

    async def scenario() -> tuple[bool, int]:
        log = AsyncLog(store)
        holder = await psycopg.AsyncConnection.connect(postgres_url)
        try:
            for game_id in locked:
                await holder.execute(
                    "SELECT 1 FROM games WHERE game_id = %s FOR UPDATE", (game_id,)
                )
            waiting = [
                asyncio.create_task(
                    log.append(game_id, 1, [NewEvent("A", b"a")], f"w{i}", 0, 2, finished=False)
                )
                for i, game_id in enumerate(locked)
            ]
            await asyncio.sleep(0.3)  # both statements out, waiting for their rows
            queued = asyncio.create_task(
                log.append(free, 1, [NewEvent("B", b"b")], "queued", 0, 3, finished=False)
            )
            await asyncio.sleep(0.2)
            assert not queued.done()  # no connection for it
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE query LIKE 'SELECT croupier_append%%' AND state = 'active'"
                )
            made = await asyncio.wait_for(queued, 5)  # the rows are still held
            still_waiting = not any(task.done() for task in waiting)
            await holder.rollback()
            await asyncio.wait_for(asyncio.gather(*waiting), 10)
            return still_waiting, made.last_version
        finally:
            await holder.close()
            await log.aclose()

    still_waiting, version = asyncio.run(scenario())
    assert still_waiting and version == 2
    assert [store.game(g).version for g in locked] == [2, 2]


def test_a_refused_connection_leaves_the_appends_to_the_threads_for_a_while(
    store: PostgresEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database refuses new connections (its limit reached): the appends are made the
    store's way, and the loop does not ask for a connection again at every append."""
    game_id = new_game(store)
    tries: list[str] = []

    async def refused(*args: Any, **kwargs: Any) -> Any:
        tries.append("connect")
        raise psycopg.OperationalError("sorry, too many clients already")

    monkeypatch.setattr(psycopg.AsyncConnection, "connect", refused)

    async def scenario() -> list[CommandResult]:
        log = AsyncLog(store)
        try:
            return await _in_turn(log, game_id, 1, [f"c{i}" for i in range(5)], NewEvent("A", b"a"))
        finally:
            await log.aclose()

    results = asyncio.run(scenario())
    assert [r.last_version for r in results] == [2, 3, 4, 5, 6]
    assert tries == ["connect"]  # once, then left alone for a while


def test_other_processes_appends_are_heard_on_the_loop_and_its_own_are_not(
    store: PostgresEventStore, postgres_url: str
) -> None:
    """The application listens on its event loop (no thread of the store's): another store's
    append is told to the loop's listener, on the loop's thread; the process's own appends,
    which it told of as it made them, are passed over, and so is a notice on the channel that
    is not an append's (someone's NOTIFY), without ending the listening."""
    mine, theirs = new_game(store), new_game(store)
    heard: list[tuple[str, int, str]] = []

    def from_thread(game: str, version: int) -> None:
        raise AssertionError("told from a thread")

    async def scenario() -> None:
        log = AsyncLog(store)
        other = PostgresEventStore(postgres_url)
        try:
            log.listen(
                lambda game, version: heard.append(
                    (game, version, threading.current_thread().name)
                ),
                from_thread,
            )
            async with asyncio.timeout(10):
                while not store.wait_listening(0):
                    await asyncio.sleep(0.01)
            await log.append(mine, 1, [NewEvent("A", b"a")], "mine", 0, 2, finished=False)
            with psycopg.connect(postgres_url, autocommit=True) as admin:  # not an append's
                admin.execute("NOTIFY croupier_events, 'not an append'")
            other.append(theirs, 1, [NewEvent("A", b"a")], "theirs", 0, 2)
            async with asyncio.timeout(10):
                while not heard:
                    await asyncio.sleep(0.01)
        finally:
            other.close()
            await log.aclose()

    asyncio.run(scenario())
    # Notices arrive in commit order: the process's own came first, and was passed over.
    assert heard == [(theirs, 2, threading.main_thread().name)]
    assert not any(t.name == "pg-listen" for t in threading.enumerate())
    assert not store.wait_listening(0)  # its connection went with the log


def test_an_observed_store_counts_each_append_once_wherever_it_was_made(
    store: PostgresEventStore,
) -> None:
    registry = CollectorRegistry()
    observed = ObservedStore(store, Metrics(registry))
    game_id = new_game(store)

    async def scenario() -> None:
        log = AsyncLog(observed)
        try:
            await log.append(game_id, 1, [NewEvent("A", b"a")], "one", 0, 2, finished=False)  # loop
            await log.append(
                game_id, 2, [NewEvent("A", b"a")], "one", 0, 3, finished=False
            )  # thread
        finally:
            await log.aclose()

    asyncio.run(scenario())
    counted = registry.get_sample_value(
        "croupier_store_operation_seconds_count", {"operation": "append"}
    )
    assert counted == 2


def test_a_refusal_the_loop_s_appends_met_is_forgotten_once_they_connect(
    store: PostgresEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the database said to a refused connection is kept for the log of an outage
    (``connect_error``), until a connection is made again. A refusal the loop's appends met (the
    database's connection limit, reached for a moment) was kept for ever while the listener,
    connected all along, never cleared it: a later pool wait (every connection in use) was
    logged with it, hours later."""
    refused = "FATAL:  sorry, too many clients already"
    connect = psycopg.AsyncConnection.connect

    async def refusing(*args: Any, **kwargs: Any) -> Any:
        raise psycopg.OperationalError(refused)

    async def scenario() -> None:
        appender = store.loop_appender()
        try:
            monkeypatch.setattr(psycopg.AsyncConnection, "connect", refusing)
            assert await appender._take() is None
            assert store.connect_error == refused
            monkeypatch.setattr(psycopg.AsyncConnection, "connect", connect)
            monkeypatch.setattr(appender, "_connect_again_at", 0.0)
            conn = await appender._take()
            assert conn is not None
            await appender._give_back(conn)
            assert store.connect_error == ""
        finally:
            await appender.close()

    asyncio.run(scenario())
