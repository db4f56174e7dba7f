"""A transaction that holds a game's row and never ends (a replica frozen mid-append: SIGSTOP, a
VM paused, a partition PostgreSQL has not noticed) no longer holds every call on that game, and
in the end every thread and connection of every replica, with no error and no end: a statement
of the store waits for a lock at most its lock timeout (``lock_timeout``), and is answered
:class:`GameLocked`, nothing written, whichever way it was made (in one statement from a thread
or from the event loop, the general way, a refusal's record); a session idle in its transaction
is ended by PostgreSQL (``idle_in_transaction_session_timeout``), which frees its locks. Needs
PostgreSQL (skips without it, except in CI)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
from structlog.testing import capture_logs

from croupier.log import CommandResult, GameLocked, NewEvent, StoreUnavailable
from croupier.service.store import postgres
from croupier.service.store.postgres import PostgresEventStore
from tests.store.games import new_game

pytestmark = pytest.mark.postgres

#: The lock timeout of the tests' store (the service's is postgres.LOCK_TIMEOUT_S).
LOCK_S = 0.5
#: How much longer than the lock timeout a refusal may take (a round trip, a busy machine).
SLACK_S = 1.5


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresEventStore]:
    store = PostgresEventStore(postgres_url, lock_timeout_s=LOCK_S)
    yield store
    store.close()


@pytest.fixture
def holder(postgres_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """Another session, which takes games' rows and keeps them until it rolls back."""
    with psycopg.connect(postgres_url) as conn:
        yield conn


def _hold(conn: psycopg.Connection[tuple[object, ...]], *game_ids: str) -> None:
    """What the chaos test's holder did: the rows locked, the transaction left open."""
    conn.execute("SELECT 1 FROM games WHERE game_id = ANY(%s) FOR UPDATE", (list(game_ids),))


def _append(store: PostgresEventStore, game_id: str, command_id: str) -> CommandResult:
    return store.append(game_id, 1, [NewEvent("A", b"a")], command_id, 0, 2)


def _loop_append(store: PostgresEventStore, game_id: str, command_id: str) -> CommandResult:
    async def scenario() -> CommandResult | None:
        appender = store.loop_appender()
        try:
            return await appender.append(
                game_id,
                1,
                [NewEvent("A", b"a")],
                command_id,
                0,
                2,
                finished=False,
                command=b"",
                fingerprint=b"",
                next_deadline_ms=None,
            )
        finally:
            await appender.close()

    # None: left to the store's own append (where the game ends not known), as AsyncLog does.
    return asyncio.run(scenario()) or _append(store, game_id, command_id)


def _general_append(store: PostgresEventStore, game_id: str, command_id: str) -> CommandResult:
    store._heads.clear()  # where the game ends not known: read first, the row locked
    return _append(store, game_id, command_id)


def _rejection(store: PostgresEventStore, game_id: str, command_id: str) -> CommandResult:
    return store.record_rejection(game_id, command_id, b"illegal", 1)


#: Each way a call locks a game's row: in one statement on a thread (the store knows where the
#: chain ends), in one statement from the event loop, the general way (reads first), a refusal.
WAYS: dict[str, Callable[[PostgresEventStore, str, str], CommandResult]] = {
    "at-once": _append,
    "on-the-loop": _loop_append,
    "general": _general_append,
    "rejection": _rejection,
}


@pytest.mark.parametrize("way", WAYS)
def test_a_call_on_a_game_another_transaction_holds_is_refused_after_the_lock_timeout(
    store: PostgresEventStore,
    holder: psycopg.Connection[tuple[object, ...]],
    way: str,
) -> None:
    call = WAYS[way]
    game_id = new_game(store)
    _hold(holder, game_id)
    started = time.monotonic()
    with pytest.raises(GameLocked) as refused:
        call(store, game_id, "while-held")
    took = time.monotonic() - started
    assert LOCK_S * 0.9 <= took < LOCK_S + SLACK_S, took
    assert refused.value.game_id == game_id
    assert isinstance(refused.value, StoreUnavailable)  # answered unavailable, to be sent again
    # Nothing was written: once the row is let go, the same call goes through, once.
    holder.rollback()
    first = call(store, game_id, "while-held")
    again = call(store, game_id, "while-held")
    assert again.duplicate and again.last_version == first.last_version
    events = store.read(game_id)
    expected = 1 if way == "rejection" else 2
    assert [e.version for e in events] == list(range(1, expected + 1))
    assert store.game(game_id).version == expected


def test_other_games_go_on_while_one_is_held_and_it_is_logged_once_a_while(
    store: PostgresEventStore, holder: psycopg.Connection[tuple[object, ...]]
) -> None:
    held, other = new_game(store), new_game(store)
    _hold(holder, held)
    refusals: list[BaseException] = []

    def refused() -> None:
        try:
            _general_append(store, held, "while-held")
        except GameLocked as error:
            refusals.append(error)

    with capture_logs() as logged:
        waiting = threading.Thread(target=refused)
        waiting.start()
        time.sleep(0.1)  # its statement waits for the row
        started = time.monotonic()
        made = _append(store, other, "meanwhile")
        assert time.monotonic() - started < LOCK_S / 2  # not behind the held game
        waiting.join(LOCK_S + SLACK_S)
        assert not waiting.is_alive() and len(refusals) == 1
        with pytest.raises(GameLocked):
            _append(store, held, "while-held")  # refused again: not logged again
    assert made.last_version == 2
    said = [line for line in logged if line.get("game_id") == held]
    assert len(said) == 1, logged
    assert said[0]["log_level"] == "warning" and said[0]["lock_timeout_s"] == LOCK_S


def test_the_sessions_have_their_settings_and_the_url_s_own_win(postgres_url: str) -> None:
    store = PostgresEventStore(postgres_url, lock_timeout_s=1.5, idle_in_transaction_s=40)
    try:
        with store._transaction(write=False) as cur:
            shown = cur.execute(
                "SELECT current_setting('lock_timeout'), "
                "current_setting('idle_in_transaction_session_timeout')"
            ).fetchone()
        assert shown == ("1500ms", "40s")

        async def on_the_loop() -> object:
            appender = store.loop_appender()
            try:
                conn = await appender._take()
                assert conn is not None
                try:
                    cur = await conn.execute("SELECT current_setting('lock_timeout')")
                    return await cur.fetchone()
                finally:
                    await appender._give_back(conn)
            finally:
                await appender.close()

        assert asyncio.run(on_the_loop()) == ("1500ms",)
    finally:
        store.close()
    assert postgres.session_settings(f"{postgres_url}?options=-c%20lock_timeout%3D9s", 3, 30) == (
        "SELECT set_config('idle_in_transaction_session_timeout', %s, false)",
        ("30000ms",),
    )
    assert (
        postgres.session_settings(
            "postgresql://h/d?options=--lock-timeout%3D1s%20-cidle_in_transaction_session_timeout%3D0",
            3,
            30,
        )
        is None
    )


def test_a_session_idle_in_its_transaction_is_ended_and_its_locks_let_go(
    postgres_url: str,
) -> None:
    """A replica frozen between the statements of its transaction, the game's row locked: the
    database ends its session, so that another append on the game goes through, long before its
    lock timeout; the frozen one, back, is answered that the store is unavailable (its call sent
    again is answered the store's way), not a failure of its own."""
    frozen_store = PostgresEventStore(postgres_url, idle_in_transaction_s=0.5)
    store = PostgresEventStore(postgres_url, lock_timeout_s=10)
    try:
        game_id = new_game(store)
        locked, thawed = threading.Event(), threading.Event()
        failed: list[BaseException] = []

        def frozen_mid_append() -> None:
            try:
                with frozen_store._transaction(write=True, game_id=game_id) as cur:
                    cur.execute("SELECT 1 FROM games WHERE game_id = %s FOR UPDATE", (game_id,))
                    locked.set()
                    thawed.wait(10)  # frozen (SIGSTOP, a VM paused)
                    cur.execute("SELECT 1")
            except BaseException as error:
                failed.append(error)

        frozen = threading.Thread(target=frozen_mid_append)
        frozen.start()
        assert locked.wait(10)
        started = time.monotonic()
        made = _general_append(store, game_id, "after-the-frozen")
        took = time.monotonic() - started
        assert made.last_version == 2 and took < 0.5 + SLACK_S, took
        thawed.set()
        frozen.join(10)
        [error] = failed
        assert type(error) is StoreUnavailable, repr(error)
        assert isinstance(error.__cause__, psycopg.errors.IdleInTransactionSessionTimeout)
        # The frozen store's pool replaced the ended connection: its next call goes through.
        assert frozen_store.game(game_id).version == 2
    finally:
        store.close()
        frozen_store.close()


@pytest.mark.parametrize("way", WAYS)
def test_while_a_call_waits_on_a_held_game_the_others_on_it_are_refused_at_once(
    store: PostgresEventStore,
    holder: psycopg.Connection[tuple[object, ...]],
    way: str,
) -> None:
    """Once a call on a game has waited out the lock timeout, one call at a time waits for its
    row again; the others are answered at once, so that clients sending again on a game a frozen
    replica holds do not take every thread of the pool (and the other games' calls with them).
    The first call through lets the game's calls wait again."""
    call = WAYS[way]
    held = new_game(store)
    _hold(holder, held)
    with pytest.raises(GameLocked):
        call(store, held, "first")  # waited out the timeout: the game is marked held
    waiting: list[BaseException] = []

    def wait() -> None:
        try:
            call(store, held, "waits")
        except GameLocked as error:
            waiting.append(error)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(LOCK_S / 5)  # its statement waits for the row
    started = time.monotonic()
    for attempt in range(5):
        with pytest.raises(GameLocked):
            call(store, held, f"at-once-{attempt}")
    assert time.monotonic() - started < LOCK_S / 2  # none of them waited
    waiter.join(LOCK_S + SLACK_S)
    assert not waiter.is_alive() and len(waiting) == 1  # it did wait, and was refused
    # Let go: the next call gets the row and clears the mark, so that, held again, the game's
    # next call waits for its row (not refused at once).
    holder.rollback()
    assert call(store, held, "after").command_id == "after"  # answered, not refused
    _hold(holder, held)
    started = time.monotonic()
    with pytest.raises(GameLocked):
        call(store, held, "held-again")
    assert time.monotonic() - started >= LOCK_S * 0.9


def test_the_calls_that_began_before_the_game_was_marked_held_do_not_let_a_second_call_wait(
    store: PostgresEventStore,
) -> None:
    """Calls that began waiting before the first refusal each end in a refusal of their own; the
    call waiting meanwhile stays the only one. (Each such refusal once cleared the mark of the
    call waiting: under retries every call waited again, and filled the pool as before.) Told
    in the store's own terms, without timing: under a loaded CI a test that timed it could not
    tell a late thread from the fault."""
    game_id = new_game(store)
    store._not_had(game_id)  # the first call's refusal: the game marked held
    waiter = store._waiting_on(game_id)
    waiter.__enter__()  # the one call that waits for the row
    assert store._held[game_id].waiting
    store._not_had(game_id)  # a call that began before the mark, refused after its wait
    assert store._held[game_id].waiting  # still the one waiting
    with pytest.raises(GameLocked), store._waiting_on(game_id):
        pass  # refused at once: a second call does not wait
    refused = store._not_had(game_id)  # the waiting call's own refusal, in the end
    assert waiter.__exit__(GameLocked, refused, None) is False  # raised on, not swallowed
    assert not store._held[game_id].waiting  # the next call may wait


def test_a_refusal_at_once_in_one_statement_is_not_taken_for_a_lost_connection(
    store: PostgresEventStore, holder: psycopg.Connection[tuple[object, ...]]
) -> None:
    """Where the store knows the game's end, an append goes in one statement; refused at once
    there (another call waits for the row), it is a refusal, not a connection lost mid-statement
    (which is logged and made again the general way, waiting for the row after all)."""
    held = new_game(store)
    head = store._heads[held]
    _hold(holder, held)
    with pytest.raises(GameLocked):
        _append(store, held, "first")  # waited out the timeout: marked held

    def wait() -> None:
        with contextlib.suppress(GameLocked):  # refused after its wait
            _general_append(store, held, "w")

    waiting = threading.Thread(target=wait)
    waiting.start()
    time.sleep(LOCK_S / 5)  # it waits for the row
    store._remember(head)  # the game's end known again: the one-statement way
    started = time.monotonic()
    with capture_logs() as logged, pytest.raises(GameLocked):
        _append(store, held, "at-once")
    assert time.monotonic() - started < LOCK_S / 2
    assert not [line for line in logged if "lost its connection" in line["event"]], logged
    waiting.join(LOCK_S + SLACK_S)
