"""Graceful shutdown of `croupier serve` (and of `serve --workers`): on SIGTERM or SIGINT health
checking says NOT_SERVING, open streams end UNAVAILABLE with reason SERVER_SHUTTING_DOWN and the
version they reached, new calls are refused, a call in flight still finishes, and the process
exits 0 within the grace period."""

from __future__ import annotations

import asyncio
import fcntl
import os
import queue
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from croupier.app import runner
from croupier.app.runner import AsyncLog
from croupier.app.tokens import KeyRing, TokenSigner, mint_studio_token
from croupier.service.bots import auth
from croupier.service.server import SERVICE_NAME, PortInUse, ServerThread
from croupier.service.store import sqlite as sqlite_store
from croupier.service.store.sqlite import SqliteEventStore
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc
from tests.service.processes import STUDIO_SECRET, Served, serve, stop

GRACE_S = 30.0
WAIT_S = 30.0
FAR_AHEAD_S = 4_000_000_000


def _until(done: Any, what: str, timeout: float = WAIT_S) -> None:
    """Poll ``done()`` until it holds (or fail after ``timeout``, naming ``what``)."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _own_channel(address: str) -> grpc.Channel:
    """A channel with a connection of its own (with --workers, it may reach another worker)."""
    return grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])


@dataclass
class Watched:
    """What a stream received on its thread, and how it ended."""

    items: list[Any] = field(default_factory=list)
    error: grpc.RpcError | None = None
    ended: threading.Event = field(default_factory=threading.Event)

    def follow(self, stream: Iterator[Any]) -> threading.Thread:
        def run() -> None:
            try:
                for item in stream:
                    self.items.append(item)
            except grpc.RpcError as error:
                self.error = error
            finally:
                self.ended.set()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread


def _shutting_down(error: grpc.RpcError | None) -> dict[str, str]:
    """The ErrorInfo metadata of a stream that ended because its server shuts down."""
    assert error is not None, "the stream ended without a status"
    assert error.code() == grpc.StatusCode.UNAVAILABLE, error
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    info = error_details_pb2.ErrorInfo()
    assert [d.Unpack(info) for d in status.details if d.Is(info.DESCRIPTOR)] == [True]
    assert info.reason == "SERVER_SHUTTING_DOWN" and info.domain == "croupier.v1"
    return dict(info.metadata)


@pytest.fixture
def pg_store(postgres_url: str) -> str:
    # The call in flight waits on the test's lock for as long as the drain takes: longer than the
    # store's lock timeout would let it (the URL's own lock_timeout wins).
    return f"{postgres_url}?options=-c%20lock_timeout%3D60s"


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("workers", "signum"), [(1, signal.SIGTERM), (2, signal.SIGTERM), (1, signal.SIGINT)]
)
def test_a_signal_drains_streams_and_finishes_the_call_in_flight(
    pg_store: str, tmp_path: Path, workers: int, signum: int
) -> None:
    import psycopg

    served = serve(
        tmp_path / "serve.log",
        pg_store,
        "--workers",
        str(workers),
        "--shutdown-grace",
        str(GRACE_S),
    )
    try:
        _drain(served, signum, lock_store=lambda game_id: _locked(psycopg, pg_store, game_id))
    finally:
        stop(served)


def test_a_signal_drains_streams_on_sqlite(tmp_path: Path) -> None:
    """The same without a call in flight (only PostgreSQL lets a test hold one there)."""
    served = serve(tmp_path / "serve.log", f"sqlite:///{tmp_path / 'games.sqlite3'}")
    try:
        _drain(served, signal.SIGTERM, lock_store=None)
    finally:
        stop(served)


#: The test's --shutdown-delay: long enough to make calls in, short enough for a test.
DELAY_S = 3.0


def test_with_a_delay_health_says_not_serving_while_calls_and_streams_are_still_served(
    tmp_path: Path,
) -> None:
    """With --shutdown-delay, a balancer polling health sees NOT_SERVING while the replica still
    serves: new calls (a new connection's) are answered and the streams stay open, for the delay;
    then the drain goes as without it. Without it the port closed some 20 ms after health said
    NOT_SERVING, which a balancer polling every few seconds never saw."""
    served = serve(
        tmp_path / "serve.log",
        f"sqlite:///{tmp_path / 'games.sqlite3'}",
        "--shutdown-delay",
        str(DELAY_S),
    )
    try:
        stub = service_pb2_grpc.GameServiceStub(_own_channel(served.address))
        created = stub.CreateGame(
            service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_GIN, seats=2),
            metadata=auth(mint_studio_token(STUDIO_SECRET, FAR_AHEAD_S)),
        )
        token = created.tokens[0].token
        events = Watched()
        events.follow(
            service_pb2_grpc.GameServiceStub(_own_channel(served.address)).StreamEvents(
                service_pb2.StreamEventsRequest(game_id=created.game_id), metadata=auth(token)
            )
        )
        _until(lambda: events.items, "the stream's first event")

        def health() -> int:
            with _own_channel(served.address) as fresh:
                return (
                    health_pb2_grpc.HealthStub(fresh)
                    .Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5)
                    .status
                )

        assert health() == health_pb2.HealthCheckResponse.SERVING
        served.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        _until(lambda: health() == health_pb2.HealthCheckResponse.NOT_SERVING, "NOT_SERVING")
        # Within the delay: a new connection's call is answered, the stream still open.
        with _own_channel(served.address) as fresh:
            view = service_pb2_grpc.GameServiceStub(fresh).GetView(
                service_pb2.GetViewRequest(game_id=created.game_id), metadata=auth(token)
            )
        assert view.version == created.version
        assert time.monotonic() - signalled < DELAY_S and not events.ended.is_set()
        # Then the drain, as without a delay: the stream ends to be resumed elsewhere.
        assert events.ended.wait(WAIT_S)
        assert time.monotonic() - signalled >= DELAY_S
        assert _shutting_down(events.error) == {"after_version": str(created.version)}
        assert served.process.wait(timeout=WAIT_S) == 0
        assert "not serving" in served.output()
    finally:
        stop(served)


class _locked:
    """A transaction that holds the game's row (FOR UPDATE): the server's next append to it
    waits, in flight, until the test lets go."""

    def __init__(self, psycopg: Any, url: str, game_id: str) -> None:
        self.holder = psycopg.connect(url)
        self.holder.execute("SELECT 1 FROM games WHERE game_id = %s FOR UPDATE", (game_id,))
        self.watcher = psycopg.connect(url, autocommit=True)
        self.pid = self.holder.info.backend_pid

    def blocked(self) -> bool:
        """Whether a server's query waits on the test's lock."""
        row = self.watcher.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
            (self.pid,),
        ).fetchone()
        return bool(row and row[0])

    def release(self) -> None:
        self.holder.rollback()
        self.holder.close()
        self.watcher.close()


def _drain(served: Served, signum: int, lock_store: Any) -> None:
    chan = _own_channel(served.address)
    grpc.channel_ready_future(chan).result(timeout=WAIT_S)
    stub = service_pb2_grpc.GameServiceStub(chan)
    created = stub.CreateGame(
        service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_HOOLA, seats=3),
        metadata=auth(mint_studio_token(STUDIO_SECRET, FAR_AHEAD_S)),
    )
    game_id, tokens = created.game_id, [t.token for t in created.tokens]

    health = Watched()
    health.follow(
        health_pb2_grpc.HealthStub(_own_channel(served.address)).Watch(
            health_pb2.HealthCheckRequest(service=SERVICE_NAME)
        )
    )
    events = Watched()
    events.follow(
        service_pb2_grpc.GameServiceStub(_own_channel(served.address)).StreamEvents(
            service_pb2.StreamEventsRequest(game_id=game_id), metadata=auth(tokens[0])
        )
    )
    sends: queue.Queue[service_pb2.PlayRequest | None] = queue.Queue()
    sends.put(service_pb2.PlayRequest(join=service_pb2.PlayJoin(game_id=game_id)))
    play = Watched()
    play.follow(
        service_pb2_grpc.GameServiceStub(_own_channel(served.address)).Play(
            iter(sends.get, None), metadata=auth(tokens[1])
        )
    )
    _until(
        lambda: health.items and events.items and any(p.HasField("state") for p in play.items),
        "the streams' first messages",
    )

    view = stub.GetView(service_pb2.GetViewRequest(game_id=game_id), metadata=auth(tokens[0]))
    seat = getattr(view.view, str(view.view.WhichOneof("game"))).turn
    legal = stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game_id), metadata=auth(tokens[seat])
    )
    lock = lock_store(game_id) if lock_store is not None else None
    in_flight = None
    if lock is not None:
        in_flight = stub.SubmitCommand.future(
            service_pb2.SubmitCommandRequest(
                game_id=game_id,
                command_id="in-flight",
                expected_version=legal.version,
                command=legal.moves[0].command,
            ),
            metadata=auth(tokens[seat]),
        )
        _until(lock.blocked, "the command to wait on the test's lock")

    served.process.send_signal(signum)
    signalled = time.monotonic()

    # Every stream ends, telling its client to resume elsewhere from what it has.
    for stream in (events, play):
        assert stream.ended.wait(WAIT_S), "a stream outlived the shutdown"
    last_event = events.items[-1].event.version
    assert _shutting_down(events.error) == {"after_version": str(last_event)}
    played = [p.event.version for p in play.items if p.HasField("event")]
    assert _shutting_down(play.error) == {"after_version": str(played[-1])}
    assert health.ended.wait(WAIT_S)
    assert [h.status for h in health.items] == [
        health_pb2.HealthCheckResponse.SERVING,
        health_pb2.HealthCheckResponse.NOT_SERVING,
    ]
    assert health.error is None  # the Watch ends once it said NOT_SERVING

    refusals: list[grpc.StatusCode] = []

    def refused() -> bool:
        try:
            with _own_channel(served.address) as fresh:
                service_pb2_grpc.GameServiceStub(fresh).GetView(
                    service_pb2.GetViewRequest(game_id=game_id),
                    metadata=auth(tokens[0]),
                    timeout=5,
                )
        except grpc.RpcError as error:
            refusals.append(error.code())
            return True
        return False

    _until(refused, "a new call to be refused")
    assert refusals == [grpc.StatusCode.UNAVAILABLE]
    if lock is not None and in_flight is not None:
        assert not in_flight.done() and served.process.poll() is None
        lock.release()
        answer = in_flight.result(timeout=WAIT_S)  # it finished, within the grace
        assert answer.version > legal.version and answer.version > last_event
    sends.put(None)
    # Within the grace period of the signal (wait's timeout fails the test otherwise).
    assert served.process.wait(timeout=max(0.0, GRACE_S - (time.monotonic() - signalled))) == 0
    assert "shut down" in served.output()


def _store_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(("log-read", "log-write"))}


def test_a_server_whose_start_fails_closes_its_core_before_its_store_is_closed(
    tmp_path: Path,
) -> None:
    """The core was started (its sweeper, the store's threads) when the HTTP listener found its
    port taken: the failed start stops the core, so that the store may be closed after it."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    store = SqliteEventStore(tmp_path / "events.sqlite3")
    before = _store_threads()
    server = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(b"s" * 32),
        studio_keys=KeyRing(b"k" * 32),
        http_address=f"127.0.0.1:{busy.getsockname()[1]}",
    )
    try:
        with pytest.raises(PortInUse):
            server.start()
        server.stop(grace=None)
    finally:
        store.close()
        busy.close()
    assert not {t for t in _store_threads() - before if t.is_alive()}


def test_closing_waits_for_every_pool_within_one_deadline_and_the_store_within_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shutdown's waits are bounded: the log waits for both of its pools' calls under way
    (a write held by another process's lock, a slow read) within one deadline, and the store's
    close leaves a connection still busy after its own deadline open rather than wait on."""
    monkeypatch.setattr(runner, "CLOSE_JOIN_S", 0.3)
    monkeypatch.setattr(sqlite_store, "CLOSE_WAIT_S", 0.3)
    path = tmp_path / "events.sqlite3"
    store = SqliteEventStore(path)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process's write (a worker, a backup)
    joined: list[str] = []
    real_join = runner.Pool.join

    def join(self: runner.Pool, deadline: float) -> bool:
        joined.append(self._threads[0].name)
        return real_join(self, deadline)

    monkeypatch.setattr(runner.Pool, "join", join)
    read_started = threading.Event()
    real_next_due = store.next_due

    def slow_next_due() -> int | None:
        read_started.set()
        time.sleep(1.0)
        return real_next_due()

    monkeypatch.setattr(store, "next_due", slow_next_due)

    async def scenario() -> float:
        log = AsyncLog(store, readers=1)
        # On the writer thread (the loop would answer busy), waiting for the other's lock.
        write = asyncio.ensure_future(
            log._on_thread(log._writes, runner.Rank.CLOCK, lambda s: s.claim_due, 0, 1000, 10)
        )
        read = asyncio.ensure_future(log.next_due())
        await asyncio.to_thread(read_started.wait, 5)
        started = time.monotonic()
        await log.aclose()
        for call in (write, read):
            call.cancel()
        return time.monotonic() - started

    release = threading.Timer(2.0, other.execute, ("ROLLBACK",))
    release.start()
    try:
        took_aclose = asyncio.run(scenario())
        started = time.monotonic()
        store.close()
        took_close = time.monotonic() - started
    finally:
        release.join()
        other.close()
    assert sorted(joined) == ["log-read-0", "log-write-0"]
    # Neither waited for the lock's release at 2 s.
    assert took_aclose < 1.5 and took_close < 1.5, (took_aclose, took_close)


#: Runs a command as the first process (pid 1) of a new PID namespace, as a container's entry
#: point runs; in a user namespace of its own, so that no privilege is needed.
AS_CONTAINER_INIT = ["unshare", "--user", "--map-root-user", "--pid", "--fork"]


def _namespaces_allowed() -> bool:
    try:
        tried = subprocess.run([*AS_CONTAINER_INIT, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return tried.returncode == 0


def _children(pid: int) -> list[int]:
    try:
        listed = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in listed.split()]


@pytest.mark.skipif(not _namespaces_allowed(), reason="no unprivileged PID namespaces here")
def test_a_containers_first_process_ends_on_sigterm_while_it_waits_to_migrate(
    tmp_path: Path,
) -> None:
    """``croupier migrate`` and ``serve`` as a container's first process (the image's entry
    point, Kubernetes' init container) end on SIGTERM while they start, here while another
    process holds the migration lock: pid 1 gets no signal it set no handler for, and the
    stop was ignored until the lock came or the wait gave up (60 s), Docker's or the kubelet's
    SIGKILL first (30 s in deploy/kubernetes/)."""
    store = tmp_path / "croupier.sqlite3"
    for command in (["migrate"], ["serve", "--address", "127.0.0.1:0", "--http-address", "off"]):
        with open(f"{store}.migrate.lock", "a+b") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # another process migrating: the start waits
            process = subprocess.Popen(
                [
                    *AS_CONTAINER_INIT,
                    sys.executable,
                    "-m",
                    "croupier.service.cli",
                    *command,
                    "--store",
                    f"sqlite:///{store}",
                    "--log-format",
                    "json",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={**os.environ, "CROUPIER_STUDIO_SECRET": STUDIO_SECRET},
            )
            try:
                # Sent until it ends: the first may come before Python has set the handler.
                stop_by = time.monotonic() + 20
                while process.poll() is None and time.monotonic() < stop_by:
                    for init in _children(process.pid):  # pid 1 of the new namespace
                        os.kill(init, signal.SIGTERM)
                    time.sleep(0.2)
                ended = process.poll()
            finally:
                for init in _children(process.pid):
                    os.kill(init, signal.SIGKILL)  # the namespace's pid 1 takes SIGKILL
                process.kill()
                _, errors = process.communicate()
        assert ended == 128 + signal.SIGTERM, (command, ended, errors.decode()[-2000:])
