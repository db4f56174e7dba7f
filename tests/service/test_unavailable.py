"""A store that cannot be reached (PostgreSQL restarting or refusing connections; SQLite's write
lock held past the time a call may wait) is answered UNAVAILABLE, reason STORE_UNAVAILABLE, with
a RetryInfo: never INTERNAL, which says a bug. A Play stream refuses the command and stays open;
the same command sent again once the store is back is applied once. After a database restart,
no call fails on a connection the restart killed. The outages are real: another connection holds
SQLite's lock; PostgreSQL refuses new connections and drops the server's (the PostgreSQL cases
need it, and skip without it except in CI)."""

from __future__ import annotations

import logging
import queue
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
import psycopg
import pytest
import structlog
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from croupier.app import runner
from croupier.log import EventStore, StoreUnavailable
from croupier.service.bots import auth
from croupier.service.store import open_store, postgres, sqlite
from croupier.service.store.postgres import PostgresEventStore
from croupier.v1 import common_pb2, hoola_pb2, service_pb2, service_pb2_grpc

from .conftest import server_thread, studio_auth
from .test_streams import replicas

T = TypeVar("T")

#: A 3-seat Hoola game of one round.
HOOLA = service_pb2.CreateGameRequest(
    kind=common_pb2.GAME_KIND_HOOLA,
    seats=3,
    overrides=service_pb2.Rules(hoola=hoola_pb2.HoolaRules(rounds=1)),
)


@contextmanager
def _sqlite_lock_held(path: Path) -> Iterator[None]:
    """Another process's long write: it holds the file's write lock."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


@contextmanager
def _postgres_down(url: str) -> Iterator[None]:
    """The database refuses new connections and drops those it has (as a restart does, for the
    server: its connections die and new ones fail until it is back)."""
    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:  # not from within
        admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        try:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            yield
        finally:
            admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')


@dataclass
class Served:
    stub: service_pb2_grpc.GameServiceStub
    #: Takes the store away for as long as its context lasts.
    outage: Callable[[], AbstractContextManager[None]]
    store: EventStore


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Served]:
    # The waits a call makes before it says the store is unavailable, made short.
    monkeypatch.setattr(runner, "BUSY_RETRY_FOR_S", 0.05)
    monkeypatch.setattr(sqlite, "BUSY_TIMEOUT_MS", 200)
    monkeypatch.setattr(postgres, "POOL_WAIT_S", 0.5)
    monkeypatch.setattr(postgres, "CONNECT_AGAIN_S", 0.0)
    if request.param == "sqlite":
        path = tmp_path / "croupier.sqlite3"
        url = f"sqlite:///{path}"

        def outage() -> AbstractContextManager[None]:
            return _sqlite_lock_held(path)
    else:
        url = request.getfixturevalue("postgres_url")

        def outage() -> AbstractContextManager[None]:
            return _postgres_down(url)

    with _serving(url) as (stub, store):
        yield Served(stub, outage, store)


@contextmanager
def _serving(
    url: str, store: EventStore | None = None
) -> Iterator[tuple[service_pb2_grpc.GameServiceStub, EventStore]]:
    """A server on the store at ``url`` (or on ``store``): a client of it, and the store."""
    store = open_store(url) if store is None else store
    thread = server_thread(store)
    port = thread.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield service_pb2_grpc.GameServiceStub(channel), store
    finally:
        channel.close()
        thread.stop(grace=None)
        store.close()


Metadata = tuple[tuple[str, str], ...]


def _acting(
    stub: service_pb2_grpc.GameServiceStub,
) -> tuple[str, Metadata, service_pb2.LegalMove, int]:
    """A new game's acting seat: the game, the seat's credentials, a legal move and the version."""
    game = stub.CreateGame(HOOLA, metadata=studio_auth())
    view = stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    me = auth(game.tokens[view.to_act[0].seat].token)
    legal = stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=me
    )
    return game.game_id, me, legal.moves[0], legal.version


def _unavailable(error: grpc.RpcError) -> tuple[str, int]:
    """The reason and the RetryInfo's delay (ms) of an UNAVAILABLE status."""
    assert error.code() == grpc.StatusCode.UNAVAILABLE, error
    status = rpc_status.from_call(error)
    assert status is not None
    reason, delay = "", -1
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            reason = info.reason
        elif detail.Unpack(retry):
            delay = retry.retry_delay.ToMilliseconds()
    return reason, delay


#: How soon after the database is back a client that retries as told gets through (the pool
#: replaces its lost connections in about a second).
BACK_WITHIN_S = 5.0


def _once_back(call: Callable[[], T]) -> T:
    """``call``, made again after each STORE_UNAVAILABLE's delay, as a client does."""
    back_by = time.monotonic() + BACK_WITHIN_S
    while True:
        try:
            return call()
        except grpc.RpcError as error:
            reason, delay_ms = _unavailable(error)
            assert reason == "STORE_UNAVAILABLE" and time.monotonic() < back_by
            time.sleep(delay_ms / 1000)


class _PlayStream:
    """A seat's Play stream, read on a thread of its own: its answers, and the status it ended
    with (``None`` while open)."""

    def __init__(self, stub: service_pb2_grpc.GameServiceStub, me: Metadata) -> None:
        self._requests: queue.Queue[service_pb2.PlayRequest | None] = queue.Queue()
        self.answers: queue.Queue[service_pb2.PlayResponse] = queue.Queue()
        self.ended: grpc.StatusCode | None = None
        self._call = stub.Play(iter(self._requests.get, None), metadata=me)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for answer in self._call:
                self.answers.put(answer)
        except grpc.RpcError as error:
            self.ended = error.code()

    def send(self, request: service_pb2.PlayRequest) -> None:
        self._requests.put(request)

    def next(self, timeout: float) -> service_pb2.PlayResponse:
        return self.answers.get(timeout=timeout)

    def close(self) -> grpc.StatusCode | None:
        """Hang up; how the stream had ended before (CANCELLED: it was open until then)."""
        self._requests.put(None)
        self._call.cancel()
        self._reader.join(timeout=10)
        return self.ended


def _join(game_id: str) -> service_pb2.PlayRequest:
    return service_pb2.PlayRequest(join=service_pb2.PlayJoin(game_id=game_id, batched=True))


def _command(command_id: str, version: int, move: service_pb2.LegalMove) -> service_pb2.PlayRequest:
    return service_pb2.PlayRequest(
        command=service_pb2.PlayCommand(
            command_id=command_id, expected_version=version, command=move.command
        )
    )


def _commands_counted(outcome: str) -> float:
    """``croupier_commands_total`` of this process with ``outcome``, over every game kind."""
    return sum(
        sample.value
        for family in REGISTRY.collect()
        if family.name == "croupier_commands"
        for sample in family.samples
        if sample.name == "croupier_commands_total" and sample.labels["outcome"] == outcome
    )


def _submit(
    game_id: str, command_id: str, version: int, move: service_pb2.LegalMove
) -> service_pb2.SubmitCommandRequest:
    return service_pb2.SubmitCommandRequest(
        game_id=game_id, command_id=command_id, expected_version=version, command=move.command
    )


def test_a_command_while_the_store_is_away_is_answered_unavailable_and_applied_once_after(
    served: Served,
) -> None:
    game_id, me, move, version = _acting(served.stub)
    submit = _submit(game_id, "while-down", version, move)
    invalid, unavailable = _commands_counted("invalid"), _commands_counted("unavailable")
    with served.outage(), pytest.raises(grpc.RpcError) as refused:
        served.stub.SubmitCommand(submit, metadata=me, timeout=30)
    assert _unavailable(refused.value) == ("STORE_UNAVAILABLE", runner.UNAVAILABLE_RETRY_MS)
    # Counted as the outage it is, not as a malformed command (a client's bug on a dashboard).
    assert _commands_counted("unavailable") == unavailable + 1
    assert _commands_counted("invalid") == invalid
    # Back: the same command, sent again as the RetryInfo says, is applied; sent once more, it
    # is answered the same, applied once.
    first = _once_back(lambda: served.stub.SubmitCommand(submit, metadata=me, timeout=30))
    again = served.stub.SubmitCommand(submit, metadata=me, timeout=30)
    assert again.version == first.version == version + 1
    assert [e.version for e in again.events] == [e.version for e in first.events]
    events = served.store.read(game_id)
    assert events[-1].version == first.version
    assert [e.command_id for e in events].count("while-down") == len(first.events)


def test_a_play_stream_refuses_a_command_while_the_store_is_away_and_stays_open(
    served: Served,
) -> None:
    game_id, me, move, version = _acting(served.stub)
    stream = _PlayStream(served.stub, me)
    try:
        stream.send(_join(game_id))
        assert stream.next(10).WhichOneof("kind") == "batch"  # joined
        command = _command("while-down", version, move)
        invalid, unavailable = _commands_counted("invalid"), _commands_counted("unavailable")
        with served.outage():
            stream.send(command)
            refused = stream.next(30)
        assert refused.WhichOneof("kind") == "refused", refused
        assert _commands_counted("unavailable") == unavailable + 1
        assert _commands_counted("invalid") == invalid
        assert (refused.refused.status, refused.refused.reason) == (
            "UNAVAILABLE",
            "STORE_UNAVAILABLE",
        )
        assert refused.refused.metadata["retry_after_ms"] == str(runner.UNAVAILABLE_RETRY_MS)
        # The store is back: sent again on the same stream after each refusal's delay, it is
        # applied once.
        back_by = time.monotonic() + BACK_WITHIN_S
        stream.send(command)
        while (answer := stream.next(30)).WhichOneof("kind") != "accepted":
            if answer.WhichOneof("kind") == "refused":
                assert answer.refused.reason == "STORE_UNAVAILABLE"
                assert time.monotonic() < back_by
                time.sleep(runner.UNAVAILABLE_RETRY_MS / 1000)
                stream.send(command)
        assert answer.accepted.version == version + 1
    finally:
        ended = stream.close()
    assert ended == grpc.StatusCode.CANCELLED  # open until the test's own cancel


@pytest.mark.postgres
def test_after_a_database_restart_no_call_fails_on_a_connection_the_restart_killed(
    postgres_url: str,
) -> None:
    """The database drops every connection and takes new ones at once (it restarted): a pooled
    connection is found dead at its BEGIN and the call made again on a new one, the loop's
    appends are made the store's way and their connections anew, so every call after succeeds."""
    with _serving(postgres_url) as (stub, _):
        games = [_acting(stub) for _ in range(3)]  # connections in the pool and on the loop
        name = postgres_url.rpartition("/")[2]
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            ).fetchone()
        assert killed is not None and killed[0] >= 2
        for game_id, me, move, version in games:
            answer = stub.SubmitCommand(
                _submit(game_id, "after-restart", version, move), metadata=me, timeout=30
            )
            assert answer.version == version + 1
        assert _acting(stub)[3] >= 1  # a new game: CreateGame and reads on the pool


@pytest.mark.postgres
def test_a_command_on_a_game_another_transaction_holds_is_refused_in_time_and_others_go_on(
    postgres_url: str,
) -> None:
    """Another session holds a game's row and does not let go (a replica frozen mid-append: what
    a chaos test's script holding ``SELECT … FOR UPDATE`` does): a command on that game is
    refused UNAVAILABLE STORE_UNAVAILABLE once the store's lock timeout has passed (it waited
    with no end, and in some 20 s every thread and connection of the server, for all games, as
    its client retried), a command on another game goes through meanwhile, and the store is not
    taken for away (no outage: the other games' calls are not refused). Once the row is let go,
    the same command is applied once."""
    lock_s = 0.5
    store = PostgresEventStore(postgres_url, lock_timeout_s=lock_s)
    with _serving(postgres_url, store) as (stub, _):
        held_id, me, move, version = _acting(stub)
        others = [_acting(stub) for _ in range(2)]
        submit = _submit(held_id, "while-held", version, move)
        with (
            psycopg.connect(postgres_url) as holder,
            capture_logs() as logged,
            ThreadPoolExecutor(1) as calls,
        ):
            holder.execute("SELECT 1 FROM games WHERE game_id = ANY(%s) FOR UPDATE", ([held_id],))

            def refused() -> tuple[tuple[str, int], float]:
                started = time.monotonic()
                with pytest.raises(grpc.RpcError) as error:
                    stub.SubmitCommand(submit, metadata=me, timeout=30)
                return _unavailable(error.value), time.monotonic() - started

            # The first on one of the event loop's connections, the next on a thread (the
            # general way): each refused once the lock timeout has passed, while another game
            # plays on.
            for other_id, other_me, other_move, other_version in others:
                waiting = calls.submit(refused)
                time.sleep(0.1)  # its statement waits for the row
                started = time.monotonic()
                answer = stub.SubmitCommand(
                    _submit(other_id, "meanwhile", other_version, other_move),
                    metadata=other_me,
                    timeout=30,
                )
                assert time.monotonic() - started < lock_s / 2  # not behind the held game
                assert answer.version == other_version + 1 and not waiting.done()
                status, took = waiting.result(timeout=30)
                assert status == ("STORE_UNAVAILABLE", runner.UNAVAILABLE_RETRY_MS)
                assert lock_s * 0.9 <= took < lock_s + 1.5, took
            holder.rollback()
        # Named once in a warning, the game alone: the store was never taken for away.
        [said] = [line for line in logged if line.get("game_id") == held_id]
        assert said["log_level"] == "warning"
        assert not [line for line in logged if "store is unavailable" in line["event"]], logged
        first = stub.SubmitCommand(submit, metadata=me, timeout=30)
        again = stub.SubmitCommand(submit, metadata=me, timeout=30)
        assert again.version == first.version == version + 1
        events = store.read(held_id)
        assert [e.command_id for e in events].count("while-held") == len(first.events)


@pytest.mark.postgres
def test_a_database_refusing_connections_is_logged_with_what_it_said_and_not_told_clients(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator's review: with the database gone (dropped, or refusing connections), the
    store said only the pool's "couldn't get a connection after 5.00 sec"; what the database
    said showed only in the listener's warnings. The store's error now carries it, for the log.
    Clients are told only that the store is unavailable: the database's words name its host,
    port, database and user."""
    monkeypatch.setattr(postgres, "POOL_WAIT_S", 0.5)
    monkeypatch.setattr(postgres, "CONNECT_AGAIN_S", 0.0)
    with _serving(postgres_url) as (stub, store):
        game_id, me, move, version = _acting(stub)
        database = postgres_url.rpartition("/")[2]
        with _postgres_down(postgres_url):
            said = ""
            deadline = time.monotonic() + 30
            while "the last try to connect said: " not in said:
                assert time.monotonic() < deadline, said
                with pytest.raises(StoreUnavailable) as away:
                    store.game(game_id)
                said = str(away.value)
                time.sleep(0.2)
            assert "is not currently accepting connections" in said, said
            with pytest.raises(grpc.RpcError) as refused:
                stub.SubmitCommand(_submit(game_id, "told", version, move), metadata=me)
            told = refused.value.details() or ""
            assert told.startswith("the game store is unavailable"), told
            assert database not in told and "5432" not in told, told


def test_work_nobody_waits_on_logs_what_the_database_said_of_an_outage() -> None:
    """A diff reviewer's find: the sweeper's and the streams' recheck's lines logged the
    clients' answer, which no longer says what the database said; the log keeps its words."""
    from croupier.app.errors import Unavailable, log_failure

    logger = structlog.get_logger("test")
    with capture_logs() as logged:
        log_failure(logger, "sweep failed", Unavailable("cannot be reached", 1000, "db said no"))
        log_failure(logger, "sweep failed", StoreUnavailable("the store's own words"))
    assert [line["error"] for line in logged] == ["db said no", "the store's own words"]
    assert all(line["log_level"] == "warning" for line in logged)


#: SQLite's wait for its lock in the test below (ms).
LOCK_WAIT_MS = 4000


def test_while_the_store_is_away_calls_are_not_each_kept_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a call found the store unavailable, the others are answered at once while one at a
    time tries it: they no longer wait out the database each in turn (SQLite's writes queue for
    one thread: the k-th command was answered after k waits for the lock, 65 s for the third)."""
    monkeypatch.setattr(runner, "BUSY_RETRY_FOR_S", 0.05)
    monkeypatch.setattr(sqlite, "BUSY_TIMEOUT_MS", LOCK_WAIT_MS)
    path = tmp_path / "croupier.sqlite3"
    with _serving(f"sqlite:///{path}") as (stub, _):
        games = [_acting(stub) for _ in range(12)]
        took: list[float] = []
        codes: list[grpc.StatusCode] = []

        def submit(game_id: str, me: Metadata, move: Any, version: int) -> None:
            started = time.monotonic()
            try:
                stub.SubmitCommand(
                    _submit(game_id, "queued", version, move), metadata=me, timeout=30
                )
            except grpc.RpcError as error:
                codes.append(error.code())
            took.append(time.monotonic() - started)

        with _sqlite_lock_held(path):
            callers = [threading.Thread(target=submit, args=game) for game in games]
            for caller in callers:
                caller.start()
            for caller in callers:
                caller.join(timeout=60)
        assert codes == [grpc.StatusCode.UNAVAILABLE] * len(games)
        # One wait for the lock, and every call is told as soon: without it, each waited its
        # turn (the last some 12 waits); told on the loop only, the thread had already begun the
        # next one's wait (2 waits). The wait is long beside what the calls themselves take on
        # a loaded machine (1.5 s of them, seen under a CI run beside other work): slack on both
        # sides of the bound.
        assert max(took) < 1.6 * LOCK_WAIT_MS / 1000, took


@pytest.mark.postgres
def test_a_stream_whose_read_finds_the_store_away_waits_for_it_and_goes_on(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Play stream on a replica that has not read the game yet joins while the database is
    away: its read is made again after each refusal's delay, and the stream stays open (it ended
    UNAVAILABLE, and its client joined again into the same outage); once the database is back,
    it gets the game's state and plays on."""
    monkeypatch.setattr(postgres, "POOL_WAIT_S", 0.5)
    with replicas(postgres_url) as both:
        first, other = both.stubs
        game_id, me, move, version = _acting(first)
        stream = _PlayStream(other, me)
        try:
            with _postgres_down(postgres_url):
                stream.send(_join(game_id))
                time.sleep(2.5)  # several of the read's tries
                assert stream.answers.empty() and stream.ended is None  # waiting, not ended
            joined = stream.next(BACK_WITHIN_S + 5)
            assert joined.batch.state.version == version
            stream.send(_command("after", version, move))
            while (answer := stream.next(30)).WhichOneof("kind") != "accepted":
                assert answer.WhichOneof("kind") != "refused", answer
            assert answer.accepted.version == version + 1
        finally:
            assert stream.close() == grpc.StatusCode.CANCELLED


def test_a_call_its_client_gave_up_on_is_logged_cancelled(served: Served) -> None:
    """A call still waiting for the store when its client's deadline passes has its `rpc` line
    all the same, outcome CANCELLED (it had none: an operator saw the client's errors and no
    trace of the calls)."""
    game_id, me, move, version = _acting(served.stub)
    submit = _submit(game_id, "gave-up", version, move)
    every = structlog.get_config()["wrapper_class"]
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    try:
        with capture_logs() as logged, served.outage():
            with pytest.raises(grpc.RpcError) as gone:
                served.stub.SubmitCommand(submit, metadata=me, timeout=0.2)
            assert gone.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            deadline = time.monotonic() + 10
            while not [e for e in logged if e.get("method") == "SubmitCommand"]:
                assert time.monotonic() < deadline, logged
                time.sleep(0.05)
    finally:
        structlog.configure(wrapper_class=every)
    [line] = [e for e in logged if e.get("method") == "SubmitCommand"]
    assert line["event"] == "rpc" and line["outcome"] == "CANCELLED"


@pytest.mark.postgres
def test_the_sweeper_looks_again_after_the_delay_while_the_store_is_away(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn clock's sweeper looks at the database every 40 ms; while the store is away its
    looks are refused at once, and it looked again at that pace, logging each (25 lines a
    second): it now waits the refusal's delay."""
    monkeypatch.setattr(postgres, "POOL_WAIT_S", 0.5)
    with _serving(postgres_url) as (stub, _), capture_logs() as logged:
        _acting(stub)
        with _postgres_down(postgres_url):
            time.sleep(3.0)
    failed = [e for e in logged if e["event"] == "sweep failed"]
    assert 1 <= len(failed) <= 6, len(failed)  # about one a second (17 without the delay)
    assert {e["reason"] for e in failed} == {"STORE_UNAVAILABLE"}


def test_a_store_whose_file_is_deleted_under_the_server_refuses_every_later_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQLite store's folder deleted while the server runs: the commands were acknowledged
    and written to the deleted file, and the next start began empty. Now the next ones are
    answered UNAVAILABLE, STORE_UNAVAILABLE, the server says why once (an error naming the file
    and what to do), and nothing is acknowledged any more."""
    monkeypatch.setattr(sqlite, "CHECKPOINT_S", 0.02)
    path = tmp_path / "data" / "croupier.sqlite3"
    with _serving(f"sqlite:///{path}") as (stub, store), capture_logs() as logged:
        game_id, me, move, version = _acting(stub)
        shutil.rmtree(path.parent)
        deadline = time.monotonic() + 5
        assert isinstance(store, sqlite.SqliteEventStore)
        while not store.lost:  # found at the checkpointer's next turn
            assert time.monotonic() < deadline, "the deleted file was not found"
            time.sleep(0.01)
        for _ in range(3):  # every command from then on
            with pytest.raises(grpc.RpcError) as refused:
                stub.SubmitCommand(_submit(game_id, "later", version, move), metadata=me)
            assert _unavailable(refused.value) == ("STORE_UNAVAILABLE", runner.UNAVAILABLE_RETRY_MS)
            time.sleep(0.6)  # past the outage's probe delay: the probe is refused too
    said = [e for e in logged if e["log_level"] == "error"]
    assert len(said) == 1 and said[0]["path"] == str(path), said
    assert not path.parent.exists()  # not made again: the operator decides
