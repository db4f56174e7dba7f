"""PostgreSQL going away and coming back, as the store's pool of connections for its threads
meets it: after a restart no call meets a connection the restart killed; while the database
refuses connections, a call says the store is unavailable within the pool's wait; once it is
back, the pool finds it within a second or two rather than after a backoff as long as the
outage. Needs PostgreSQL (skips without it, except in CI)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg.errors
import pytest
from psycopg_pool import PoolTimeout

from croupier.log import StoreUnavailable
from croupier.service.store import postgres
from croupier.service.store.postgres import PostgresEventStore
from tests.store import network
from tests.store.games import new_game

pytestmark = pytest.mark.postgres

#: Connections the pool keeps open, as many as it may have (a busy server's pool grows to its
#: most): each is one the restart kills, whose replacement the pool then tries to connect.
KEPT = 4


@pytest.fixture
def store(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[PostgresEventStore]:
    monkeypatch.setattr(postgres, "POOL_WAIT_S", 0.5)
    store = PostgresEventStore(postgres_url, min_size=KEPT, max_size=KEPT)
    store._pool.wait(timeout=10)  # every kept connection open
    yield store
    store.close()


def _admin(url: str) -> psycopg.Connection[tuple[object, ...]]:
    """A connection to the server's maintenance database (a database's own connections cannot
    bar connections to it)."""
    return psycopg.connect(f"{url.rpartition('/')[0]}/postgres", autocommit=True)


def _drop_connections(admin: psycopg.Connection[tuple[object, ...]], url: str) -> int:
    row = admin.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s",
        (url.rpartition("/")[2],),
    ).fetchone()
    assert row is not None
    return int(str(row[0]))


def test_after_a_restart_no_call_meets_a_connection_it_killed(
    store: PostgresEventStore, postgres_url: str
) -> None:
    game_id = new_game(store)
    with _admin(postgres_url) as admin:
        assert _drop_connections(admin, postgres_url) >= KEPT
    # Each call takes the next kept connection (the pool hands them out in turn): each is found
    # dead as it is handed out, and replaced.
    for _ in range(2 * KEPT):
        assert store.game(game_id).version == 1


def test_while_the_database_refuses_connections_calls_say_so_and_find_it_back_soon(
    store: PostgresEventStore, postgres_url: str
) -> None:
    game_id = new_game(store)
    name = postgres_url.rpartition("/")[2]
    away_s = 3.5  # long enough for a doubling backoff's tries to come 1, 2, 4 s apart
    with _admin(postgres_url) as admin:
        admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        try:
            _drop_connections(admin, postgres_url)
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                store.game(game_id)
            assert time.monotonic() - started < 5 * postgres.POOL_WAIT_S  # not psycopg's 30 s
            time.sleep(max(0.0, away_s - (time.monotonic() - started)))
        finally:
            admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
    back = time.monotonic()
    while True:
        try:
            assert store.game(game_id).version == 1
            break
        except StoreUnavailable:
            # Found back within about a second of its return: the pool gave up on its tries
            # after RECONNECT_FOR_S, and the next call asked anew (here at once, 8 ms). With
            # psycopg_pool's default its tries came 1, 2, 4 s apart: found back 2.9 s late.
            assert time.monotonic() - back < 2.2  # psycopg_pool's own backoff: 2.9 s
            time.sleep(0.1)


@pytest.fixture
def silent_path(postgres_url: str) -> Iterator[tuple[network.Path, str]]:
    """A way to the test database over a network the test can cut (tests/store/network.py),
    and the database's URL through it. Skips where it cannot be made, except in CI."""
    why = network.available()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but a network of the test's own cannot be made: {why}")
        pytest.skip(why)
    url = urlsplit(postgres_url)
    with network.path_to(url.hostname or "127.0.0.1", url.port or 5432) as path:
        user = f"{url.netloc.rpartition('@')[0]}@" if "@" in url.netloc else ""
        yield path, urlunsplit(url._replace(netloc=f"{user}{path.host}:{path.port}"))


def test_a_database_gone_silent_is_found_out_and_found_again(
    silent_path: tuple[network.Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The network to the database drops everything (its host lost, a partition): nothing
    refuses, nothing resets. A call's statement goes unacknowledged and fails after the
    store's TCP_USER_TIMEOUT_MS, and the call says the store is unavailable; without it the
    kernel retransmits for some fifteen minutes, holding the call's thread. Once the network
    is back, the calls go through again."""
    path, url = silent_path
    monkeypatch.setattr(postgres, "TCP_USER_TIMEOUT_MS", 1000)
    monkeypatch.setattr(postgres, "CONNECT_TIMEOUT_S", 2)
    store = PostgresEventStore(url, min_size=1, max_size=1)
    try:
        game_id = new_game(store)
        path.cut()
        answered: list[BaseException | int] = []

        def call() -> None:
            try:
                answered.append(store.game(game_id).version)
            except BaseException as error:
                answered.append(error)

        started = time.monotonic()
        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        caller.join(timeout=30)
        took = time.monotonic() - started
        assert not caller.is_alive(), "the call still waits on a silent database after 30 s"
        assert len(answered) == 1 and isinstance(answered[0], StoreUnavailable), answered
        # The statement's 1 s, a look at the pool's other connection... and the pool's wait.
        assert took < 10, took
        path.mend()
        back_by = time.monotonic() + 15
        while True:
            try:
                assert store.game(game_id).version == 1
                break
            except StoreUnavailable:
                assert time.monotonic() < back_by
                time.sleep(0.2)
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            path.mend()
        store.close()


@pytest.mark.parametrize(
    ("error", "away"),
    [
        (psycopg.OperationalError("server closed the connection unexpectedly"), True),
        (PoolTimeout("couldn't get a connection after 5.00 sec"), True),
        (psycopg.errors.AdminShutdown("terminating connection"), True),  # 57P01: a restart
        (psycopg.errors.CannotConnectNow("the database system is starting up"), True),
        (psycopg.errors.TooManyConnections("too many clients already"), True),  # 53300
        (psycopg.errors.DiskFull("could not extend file"), True),  # 53100
        (psycopg.errors.DeadlockDetected("deadlock detected"), False),  # the call's own
        (psycopg.errors.SerializationFailure("could not serialize access"), False),
    ],
)
def test_what_says_the_database_is_away_and_what_is_the_call_s_own(
    error: psycopg.OperationalError, away: bool
) -> None:
    """Only a database that cannot be reached or serve now is an outage (answered
    STORE_UNAVAILABLE, the other calls told at once); a statement's own failure is not."""
    assert postgres._away(error) is away
