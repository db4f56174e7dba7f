"""Prometheus metrics (issue 15): every family documented in docs/operations.md is scraped from
``/metrics`` after games played over gRPC, with the values those games must have produced; the
ASGI app serves the same; ``serve --workers 2`` adds up its workers' counts (multiprocess mode).

Metrics are the process's (every server of the test process counts into them): the tests compare
a scrape before with one after, on a server of their own with a store of its own (a sweeper on
the session's shared PostgreSQL database would also tick other modules' games, and count them)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import random
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import structlog
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from croupier.app import snapshots
from croupier.app.tokens import TokenSigner
from croupier.log import EventStore
from croupier.service import metrics
from croupier.service.bots import auth, play_game
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, gin_pb2, service_pb2, service_pb2_grpc

from .conftest import SECRET, STUDIO_KEYS, Running, server_thread, studio_auth, studio_token
from .conftest import TestClock as Clock
from .test_grpc import error_of, settle

GIN = common_pb2.GAME_KIND_GIN
TURN_MS = 600_000  # long: no second time-out falls due while a test looks
LATE_MS = 1_500
SERVICE = "croupier.v1.GameService"

#: Every family docs/operations.md documents, as the exposition names its samples' family.
FAMILIES = {
    "grpc_server_started": "counter",
    "grpc_server_handled": "counter",
    "grpc_server_handling_seconds": "histogram",
    "croupier_open_streams": "gauge",
    "croupier_commands": "counter",
    "croupier_command_seconds": "histogram",
    "croupier_store_operation_seconds": "histogram",
    "croupier_store_errors": "counter",
    "croupier_store_busy": "counter",
    "croupier_store_pool_connections": "gauge",
    "croupier_store_pool_max_connections": "gauge",
    "croupier_store_pool_waiting": "gauge",
    "croupier_timeouts": "counter",
    "croupier_timeout_lateness_seconds": "histogram",
    "croupier_turns_restarted": "counter",
    "croupier_state_cache_lookups": "counter",
    "croupier_state_cache_entries": "gauge",
    "croupier_fold_events": "histogram",
    "croupier_gc_pause_seconds": "histogram",
}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> tuple[dict[str, str], Samples]:
    """The families (name → type) and every sample's value by (name, labels)."""
    families: dict[str, str] = {}
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        families[family.name] = family.type
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return families, samples


def scrape(url: str) -> tuple[dict[str, str], Samples]:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        return parse(response.read().decode())


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample's value (0 when it is not there yet: a child appears on first use)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over the samples of ``name`` that carry ``labels`` (and any others)."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    listener = metrics.serve_http("127.0.0.1:0")
    try:
        yield f"http://127.0.0.1:{listener.port}/metrics"
    finally:
        listener.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Running]:
    """A server and a store of the test's own, on a clock the test moves."""
    store = open_store(f"sqlite:///{tmp_path / 'croupier.sqlite3'}")
    clock = Clock()
    thread = server_thread(store, clock=clock)
    port = thread.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub = service_pb2_grpc.GameServiceStub(channel)
        yield Running(channel, stub, store, f"127.0.0.1:{port}", clock, thread)
    finally:
        channel.close()
        thread.stop(grace=None)
        store.close()


def poll(check, what: str, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Wait until ``check()`` holds (a stream's start and end are the server's, a little later)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@contextlib.contextmanager
def captured_logs() -> Iterator[list[dict[str, Any]]]:
    """Every log line (info too: the test session logs warnings only) while the block runs."""
    capture = structlog.testing.LogCapture()
    saved = structlog.get_config()
    structlog.configure(
        processors=[capture], wrapper_class=structlog.make_filtering_bound_logger(logging.INFO)
    )
    try:
        yield capture.entries
    finally:
        structlog.configure(**saved)


def timed_gin(server: Running) -> service_pb2.CreateGameResponse:
    # A deadline recorded LATE_MS late is a time-out, not an outage (outage_grace_ms above it).
    rules = gin_pb2.GinRules(turn_time_ms=TURN_MS, outage_grace_ms=4 * LATE_MS)
    return server.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=GIN, seats=2, preset="single-hand", overrides=service_pb2.Rules(gin=rules)
        ),
        metadata=studio_auth(),
    )


def test_a_game_over_grpc_shows_in_every_family(server: Running, endpoint: str) -> None:
    _, before = scrape(endpoint)
    # A whole game, by the bots over unary calls: every move is one accepted command.
    played = play_game(
        server.channel,
        studio=studio_token(),
        seats=2,
        kind=GIN,
        preset="single-hand",
        rng=random.Random(15),
    )
    assert played.moves > 0
    # A refusal: the seat not to act moves (illegal), on a game this process holds (kind known).
    game = timed_gin(server)
    shown = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    idle = 1 - shown.to_act[0].seat
    pass_upcard = service_pb2.Command(gin=gin_pb2.GinCommand(**{"pass": gin_pb2.Pass()}))
    code, _, _ = error_of(
        lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id=uuid.uuid4().hex,
                expected_version=shown.version,
                command=pass_upcard,
            ),
            metadata=auth(game.tokens[idle].token),
        )
    )
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    # A token for another game: refused before any read.
    other = auth(TokenSigner(SECRET).issue(str(uuid.uuid4()), 0))
    code, _, _ = error_of(
        lambda: server.stub.GetView(service_pb2.GetViewRequest(game_id="x"), metadata=other)
    )
    assert code == grpc.StatusCode.PERMISSION_DENIED
    # A game nobody created (a genuine token for it): the store answers GameNotFound.
    ghost_id = str(uuid.uuid4())
    ghost = auth(TokenSigner(SECRET).issue(ghost_id, 0))
    code, _, _ = error_of(
        lambda: server.stub.GetView(service_pb2.GetViewRequest(game_id=ghost_id), metadata=ghost)
    )
    assert code == grpc.StatusCode.NOT_FOUND
    # A stream, open while the gauge is read, then closed.
    stream = server.stub.StreamEvents(
        service_pb2.StreamEventsRequest(game_id=game.game_id, after_version=game.version),
        metadata=auth(game.tokens[0].token),
        timeout=30,
    )
    opened = value(before, "croupier_open_streams", grpc_method="StreamEvents")
    poll(
        lambda: (
            value(scrape(endpoint)[1], "croupier_open_streams", grpc_method="StreamEvents")
            == opened + 1
        ),
        "the open stream is counted",
    )
    # A time-out, recorded LATE_MS after its deadline (the clock moved; the sweep run by hand, or
    # the background sweeper's); the stream sees it (after the core logged it) and is closed.
    with captured_logs() as logs:
        server.clock.advance(TURN_MS + LATE_MS)
        settle(server)
        assert next(iter(stream)).event.body.gin.HasField("turn_timed_out")
    stream.cancel()
    poll(
        lambda: (
            value(scrape(endpoint)[1], "croupier_open_streams", grpc_method="StreamEvents")
            == opened
        ),
        "the closed stream is no longer counted",
    )
    (recorded,) = [e for e in logs if e["event"] == "time-outs recorded"]
    (lateness_ms,) = recorded["lateness_ms"]
    assert lateness_ms >= LATE_MS
    # Named as every line about one game names it, so one filter on game_id finds its time-outs.
    assert recorded["game_id"] == game.game_id

    families, after = scrape(endpoint)
    assert {name: families.get(name) for name in FAMILIES} == FAMILIES

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    # RPCs: every move is a SubmitCommand answered OK, counted started and handled, and timed.
    submit = {"grpc_service": SERVICE, "grpc_method": "SubmitCommand", "grpc_type": "unary"}
    assert delta("grpc_server_handled_total", **submit, grpc_code="OK") == played.moves
    assert delta("grpc_server_handling_seconds_count", **submit, grpc_code="OK") == played.moves
    assert delta("grpc_server_handled_total", **submit, grpc_code="FAILED_PRECONDITION") == 1
    assert delta("grpc_server_started_total", **submit) == played.moves + 1
    create = {"grpc_service": SERVICE, "grpc_method": "CreateGame", "grpc_type": "unary"}
    assert delta("grpc_server_handled_total", **create, grpc_code="OK") == 2
    view = {"grpc_service": SERVICE, "grpc_method": "GetView", "grpc_type": "unary"}
    assert delta("grpc_server_handled_total", **view, grpc_code="NOT_FOUND") == 1
    assert delta("grpc_server_handled_total", **view, grpc_code="PERMISSION_DENIED") == 1
    streamed = {"grpc_service": SERVICE, "grpc_method": "StreamEvents"}
    assert delta("grpc_server_handled_total", **streamed, grpc_type="server_stream", grpc_code="CANCELLED") == 1  # fmt: skip
    assert value(after, "grpc_server_handling_seconds_bucket", **submit, grpc_code="OK", le="+Inf") == value(after, "grpc_server_handling_seconds_count", **submit, grpc_code="OK")  # fmt: skip
    # Commands: the moves accepted, the one refusal illegal, both of gin.
    assert delta("croupier_commands_total", kind="gin", outcome="accepted") == played.moves
    assert delta("croupier_commands_total", kind="gin", outcome="illegal") == 1
    # Each of them timed, from its arrival to its answer.
    assert delta("croupier_command_seconds_count", kind="gin") == played.moves + 1
    assert delta("croupier_command_seconds_sum", kind="gin") > 0
    # The store: one create_game per game, an append per move (and the tick), a refusal
    # recorded, the unknown game's load counted as an error; every call timed.
    store = "croupier_store_operation_seconds_count"
    assert delta(store, operation="create_game") == 2
    assert delta(store, operation="append") == played.moves + 1
    assert delta(store, operation="record_rejection") == 1
    assert delta("croupier_store_errors_total", operation="load", error="GameNotFound") == 1
    # The time-out, and how late it was recorded (the core logged the same lateness).
    assert delta("croupier_timeouts_total", kind="gin") == 1
    lateness = "croupier_timeout_lateness_seconds"
    assert delta(f"{lateness}_count", kind="gin") == 1
    assert delta(f"{lateness}_sum", kind="gin") == pytest.approx(lateness_ms / 1000)
    assert delta(f"{lateness}_bucket", kind="gin", le="1.0") == 0  # 1.5 s late: not within 1 s
    assert delta(f"{lateness}_bucket", kind="gin", le="2.5") == 1 or lateness_ms > 2_500
    # The cache: the game's views and moves came from it; it holds the games.
    assert delta("croupier_state_cache_lookups_total", result="hit") >= played.moves
    assert delta("croupier_state_cache_lookups_total", result="miss") >= 1  # the unknown game
    assert value(after, "croupier_state_cache_entries") >= 2
    # Folds: a read brings the cached game up to date (no event to fold: this process wrote
    # them); the unknown game's fold never happened (its load failed).
    folds = total(after, "croupier_fold_events_count") - total(before, "croupier_fold_events_count")
    assert folds >= played.moves  # a GetView or ListLegalMoves before each move at least
    assert delta("croupier_fold_events_bucket", kind="gin", start="cache", le="0.0") >= 1


def test_a_turn_restarted_after_its_grace_is_counted(server: Running, endpoint: str) -> None:
    """A deadline passed by more than its grace (the service down, or a process stalled) restarts
    the turn instead of timing it out: only a warning said so, which no alert could count."""
    _, before = scrape(endpoint)
    game = timed_gin(server)
    server.clock.advance(TURN_MS + 5 * LATE_MS)  # past the game's outage_grace_ms (4 × LATE_MS)
    settle(server)
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    assert [e for e in replay.events if e.body.gin.HasField("turn_restarted")]
    _, after = scrape(endpoint)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("croupier_turns_restarted_total", kind="gin") == 1
    assert delta("croupier_timeouts_total", kind="gin") == 0


def test_a_play_stream_s_command_is_timed_while_the_stream_is_open(
    server: Running, endpoint: str
) -> None:
    """A Play stream is one call, timed by ``grpc_server_handling_seconds`` only when it ends:
    its commands' latency is ``croupier_command_seconds``'s, counted as each is answered."""
    game = timed_gin(server)
    shown = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    seat = auth(game.tokens[shown.to_act[0].seat].token)
    legal = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=seat
    )
    _, before = scrape(endpoint)
    outgoing: queue.Queue[service_pb2.PlayRequest | None] = queue.Queue()
    outgoing.put(
        service_pb2.PlayRequest(
            join=service_pb2.PlayJoin(game_id=game.game_id, after_version=legal.version)
        )
    )
    outgoing.put(
        service_pb2.PlayRequest(
            command=service_pb2.PlayCommand(
                command_id=uuid.uuid4().hex,
                expected_version=legal.version,
                command=legal.moves[0].command,
            )
        )
    )
    stream = server.stub.Play(iter(outgoing.get, None), metadata=seat, timeout=30)
    try:
        assert next(m for m in stream if m.WhichOneof("kind") in ("accepted", "refused")).accepted
        _, during = scrape(endpoint)
    finally:
        outgoing.put(None)
        stream.cancel()

    def delta(name: str, **labels: str) -> float:
        return value(during, name, **labels) - value(before, name, **labels)

    assert delta("croupier_command_seconds_count", kind="gin") == 1
    assert delta("croupier_commands_total", kind="gin", outcome="accepted") == 1
    play = {"grpc_service": SERVICE, "grpc_method": "Play", "grpc_type": "bidi_stream"}
    assert total(during, "grpc_server_handling_seconds_count", **play) == total(
        before, "grpc_server_handling_seconds_count", **play
    )


def test_after_a_restart_games_fold_from_their_snapshot_or_their_log(
    tmp_path: Path, endpoint: str
) -> None:
    """A process that never held a game folds it from its latest snapshot (the events after it)
    or, for a short game, from its whole log."""
    store = open_store(f"sqlite:///{tmp_path / 'croupier.sqlite3'}")
    try:
        # A fixed server seed: the same deals every run, so the same match.
        first = ServerThread(
            "127.0.0.1:0",
            store,
            TokenSigner(SECRET),
            seed_source=lambda: bytes(32),
            studio_keys=STUDIO_KEYS,
        )
        port = first.start()
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            # A match (hands to 100 points): hundreds of events, snapshots on the way.
            long = play_game(
                channel, studio=studio_token(), seats=2, kind=GIN, rng=random.Random(7)
            )
            assert long.version > 2 * snapshots.SNAPSHOT_EVERY
            short = service_pb2_grpc.GameServiceStub(channel).CreateGame(
                service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=studio_auth()
            )
        first.stop(grace=None)  # its background snapshot writes are done when it has stopped
        snapshot = store.load(long.game_id, 0, snapshot=snapshots.FORMAT).snapshot
        assert snapshot is not None and 0 < snapshot.version < long.version
        _, before = scrape(endpoint)
        again = server_thread(store)  # a restart: nothing in memory
        port = again.start()
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = service_pb2_grpc.GameServiceStub(channel)
                for game_id, token in ((long.game_id, long.tokens[0]), (short.game_id, short.tokens[0].token)):  # fmt: skip
                    stub.GetView(service_pb2.GetViewRequest(game_id=game_id), metadata=auth(token))
        finally:
            again.stop(grace=None)
        _, after = scrape(endpoint)
    finally:
        store.close()

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    fold = "croupier_fold_events"
    assert delta(f"{fold}_count", kind="gin", start="snapshot") == 1
    assert delta(f"{fold}_sum", kind="gin", start="snapshot") == long.version - snapshot.version
    assert delta(f"{fold}_count", kind="gin", start="log") == 1
    assert delta(f"{fold}_sum", kind="gin", start="log") == short.version
    assert delta("croupier_state_cache_lookups_total", result="miss") == 2


def test_the_asgi_app_serves_the_same_families() -> None:
    """``asgi_app()`` is what the HTTP listener mounts at /metrics."""
    app = metrics.asgi_app()
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/metrics",
        "headers": [],
        "query_string": b"",
    }
    asyncio.run(app(scope, receive, send))
    start, body = sent[0], sent[1]
    assert start["status"] == 200
    families, _ = parse(bytes(body["body"]).decode())  # type: ignore[arg-type]
    assert set(FAMILIES) <= set(families)


def test_the_http_listener_serves_them_and_counts_its_own_calls(tmp_path: Path) -> None:
    """``/metrics`` on the HTTP listener, where a Connect call is counted like a gRPC one."""
    store = open_store(f"sqlite:///{tmp_path / 'croupier.sqlite3'}")
    thread = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(SECRET),
        studio_keys=STUDIO_KEYS,
        http_address="127.0.0.1:0",
    )
    thread.start()
    base = f"http://127.0.0.1:{thread.http_port}"
    try:
        labels = {"grpc_method": "ListPresets", "grpc_code": "OK"}
        _, before = scrape(f"{base}/metrics")
        calls = 3
        for _ in range(calls):
            request = urllib.request.Request(
                f"{base}/croupier.v1.GameService/ListPresets",
                data=b'{"kind": "GAME_KIND_GIN"}',
                headers={"content-type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as answer:
                assert answer.status == 200
        families, after = scrape(f"{base}/metrics")
        assert set(FAMILIES) <= set(families)
        counted = total(after, "grpc_server_handled_total", **labels)
        assert counted - total(before, "grpc_server_handled_total", **labels) == calls
    finally:
        thread.stop(grace=None)
        store.close()


def test_a_metrics_address_that_cannot_be_listened_on_fails_the_start(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            *(sys.executable, "-m", "croupier.service.cli", "serve", "--address", "127.0.0.1:0"),
            *("--metrics-address", "no-port"),
            *("--store", f"sqlite:///{tmp_path / 'croupier.sqlite3'}"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "--metrics-address: cannot listen on no-port: HOST:PORT" in result.stderr


def _serving(text: str) -> list[tuple[str, str]]:
    """(pid, port) of every worker's JSON "serving" line."""
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    return [
        (str(line["pid"]), line["address"].rpartition(":")[2])
        for line in lines
        if line.get("event") == "serving"
    ]


def test_serve_workers_count_in_multiprocess_mode(tmp_path: Path) -> None:
    """Two workers count into files of PROMETHEUS_MULTIPROC_DIR; the parent's /metrics adds them
    up; after the group stops, no worker's open-stream gauge is left."""
    counts = tmp_path / "counts"
    counts.mkdir()
    (counts / "counter_1.db").write_bytes(b"stale")  # an earlier run's: cleared at the start
    log = tmp_path / "serve.log"
    unset = {"CROUPIER_SECRET", "CROUPIER_STUDIO_SECRET", "CROUPIER_PREVIOUS_SECRETS"}
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env[metrics.MULTIPROC_DIR_ENV] = str(counts)
    with log.open("wb") as sink:
        parent = subprocess.Popen(
            [
                *(sys.executable, "-m", "croupier.service.cli", "serve", "--workers", "2"),
                *("--address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"),
                *("--store", f"sqlite:///{tmp_path / 'croupier.sqlite3'}", "--log-format", "json"),
            ],
            stderr=sink,
            env=env,
        )
    try:
        deadline = time.monotonic() + 30
        found: list[tuple[str, str]] = []
        while len(found) < 2:
            assert time.monotonic() < deadline, log.read_text()
            assert parent.poll() is None, log.read_text()
            time.sleep(0.05)
            found = _serving(log.read_text())
        port = int(found[0][1])
        (listening,) = [
            json.loads(line)
            for line in log.read_text().splitlines()
            if line.startswith("{") and json.loads(line).get("event") == "metrics"
        ]
        endpoint = f"http://{listening['address']}/metrics"
        studio = auth((tmp_path / "dev-studio-credential").read_text().strip())
        games = 8
        for _ in range(games):  # a connection each: SO_REUSEPORT spreads them over the workers
            with grpc.insecure_channel(
                f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)]
            ) as channel:
                service_pb2_grpc.GameServiceStub(channel).CreateGame(
                    service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=studio
                )
        _, samples = scrape(endpoint)
        create = {"grpc_service": SERVICE, "grpc_method": "CreateGame", "grpc_type": "unary"}
        assert value(samples, "grpc_server_handled_total", **create, grpc_code="OK") == games
        assert value(samples, "croupier_store_operation_seconds_count", operation="create_game") == games  # fmt: skip
        assert value(samples, "croupier_state_cache_entries") == games  # summed over the workers
        served = {
            json.loads(line)["pid"]
            for line in log.read_text().splitlines()
            if line.startswith("{") and '"CreateGame"' in line
        }
        assert served == {int(pid) for pid, _ in found}  # both workers counted into the sum
        # Each worker reports its garbage collections' pauses (every second).
        while total(samples, "croupier_gc_pause_seconds_count") == 0:
            assert time.monotonic() < deadline + 30, "no collection reported"
            time.sleep(0.2)
            _, samples = scrape(endpoint)
        assert not (counts / "counter_1.db").exists()
        assert {f"counter_{pid}.db" for pid in served} <= {p.name for p in counts.iterdir()}
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=20) == 0
        # The workers exited: their live gauges went with them.
        assert not list(counts.glob("gauge_livesum_*.db"))
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def _pool_sampled(store: EventStore, registry: CollectorRegistry) -> Samples:
    """The registry's samples after ``sample_pool`` ran on ``store`` for a moment."""

    async def sample() -> None:
        task = asyncio.create_task(metrics.sample_pool(store, metrics.Metrics(registry), 0.01))
        await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(sample())
    return parse(generate_latest(registry).decode())[1]


@pytest.mark.postgres
def test_the_postgresql_pool_is_sampled(postgres_url: str) -> None:
    """Docs/operations.md sizes the pool (its connections a process), but no metric showed it
    in use: open and idle connections, its most, and calls waiting for one."""
    from croupier.service.store.postgres import PostgresEventStore

    store = open_store(postgres_url)
    try:
        assert isinstance(store, PostgresEventStore)
        store.versions(["a-game"])  # a call on a thread: a connection of the pool's used
        samples = _pool_sampled(store, CollectorRegistry())
        stats = store.pool_stats()
    finally:
        store.close()
    opened = value(samples, "croupier_store_pool_connections", state="open")
    idle = value(samples, "croupier_store_pool_connections", state="idle")
    assert 1 <= opened == stats.open and idle == stats.idle <= opened
    assert value(samples, "croupier_store_pool_max_connections") == stats.max >= opened
    assert value(samples, "croupier_store_pool_waiting") == 0


def test_a_store_without_a_pool_sets_no_pool_gauges(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'croupier.sqlite3'}")
    try:
        samples = _pool_sampled(store, CollectorRegistry())
    finally:
        store.close()
    # No connection counted; the families without labels read 0, as for a pool of none.
    assert not [name for name, _ in samples if name == "croupier_store_pool_connections"]
    assert value(samples, "croupier_store_pool_max_connections") == 0
