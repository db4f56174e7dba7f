"""No request breaks a game or the server (issue 13, items 7–10): unexpected errors are INTERNAL
with an id in the logs, every input is bounded, every accepted game can finish."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import structlog
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from croupier.app.ratelimit import RateLimit
from croupier.app.tokens import TokenSigner
from croupier.engine.game import MAX_MULTIPLIER, MAX_STAKE
from croupier.service.bots import auth, play_game
from croupier.service.server import ConnectionLimits, ServerThread
from croupier.service.store import MigrationLockBusy, StoreOpenError, open_store, postgres, sqlite
from croupier.v1 import (
    common_pb2,
    gin_pb2,
    hoola_pb2,
    koikoi_pb2,
    melds_pb2,
    replay_pb2,
    rummy_pb2,
    service_pb2,
    service_pb2_grpc,
)

from .conftest import SECRET, STUDIO_KEYS, Running, studio_auth, studio_token
from .conftest import TestClock as Clock

HOOLA = common_pb2.GAME_KIND_HOOLA


class Local:
    """A server of the test's own (the test may break its core)."""

    def __init__(self, path: Path, **options: Any) -> None:
        self.store = open_store(f"sqlite:///{path / 'croupier.sqlite3'}")
        self.clock = Clock()
        self.thread = ServerThread(
            "127.0.0.1:0",
            self.store,
            TokenSigner(SECRET),
            clock=self.clock,
            studio_keys=STUDIO_KEYS,
            **options,
        )
        port = self.thread.start()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = service_pb2_grpc.GameServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()
        self.thread.stop(grace=None)
        self.store.close()


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    server = Local(tmp_path)
    try:
        yield server
    finally:
        server.close()


def details(error: grpc.RpcError) -> tuple[error_details_pb2.ErrorInfo, list[str]]:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    info = error_details_pb2.ErrorInfo()
    fields: list[str] = []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            detail.Unpack(info)
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields += [v.field for v in bad.field_violations]
    return info, fields


def assert_internal_logged(error: grpc.RpcError, logs: list[dict[str, Any]]) -> None:
    """INTERNAL, with an error id that a log line with the traceback names."""
    assert error.code() == grpc.StatusCode.INTERNAL, error
    info, _ = details(error)
    assert info.reason == "INTERNAL_ERROR"
    error_id = info.metadata["error_id"]
    assert error_id in (error.details() or "")
    logged = [e for e in logs if e.get("error_id") == error_id and e.get("exc_info")]
    assert logged, f"no log line with the traceback of {error_id}"


def test_an_unexpected_error_is_internal_with_a_logged_id_in_every_kind_of_call(
    local: Local,
) -> None:
    game = local.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=HOOLA, seats=2), metadata=studio_auth()
    )
    me = auth(game.tokens[0].token)
    core = local.thread.core

    async def broken(*_: object, **__: object) -> Any:
        raise ZeroDivisionError("a bug")

    async def broken_stream(*_: object, **__: object) -> Any:
        raise ZeroDivisionError("a bug")
        yield  # pragma: no cover - an async generator

    core.view = broken  # type: ignore[method-assign]
    core.subscribe = broken_stream  # type: ignore[method-assign]
    core.play = broken_stream  # type: ignore[method-assign]
    join = service_pb2.PlayRequest(join=service_pb2.PlayJoin(game_id=game.game_id))
    calls = [
        lambda: local.stub.GetView(service_pb2.GetViewRequest(game_id=game.game_id), metadata=me),
        lambda: list(
            local.stub.StreamEvents(
                service_pb2.StreamEventsRequest(game_id=game.game_id), metadata=me
            )
        ),
        lambda: list(local.stub.Play(iter([join]), metadata=me)),
    ]
    for call in calls:
        with structlog.testing.capture_logs() as logs, pytest.raises(grpc.RpcError) as failed:
            call()
        assert_internal_logged(failed.value, logs)  # type: ignore[arg-type]


# -- limits (item 8) and the inputs that were UNKNOWN (item 7) ------------------------------------

MEGABYTE = "x" * (1 << 20)


def refused(call: Any) -> tuple[grpc.StatusCode, str, list[str], grpc.RpcError]:
    with pytest.raises(grpc.RpcError) as failed:
        call()
    info, fields = details(failed.value)  # type: ignore[arg-type]
    return failed.value.code(), info.reason, fields, failed.value  # type: ignore[attr-defined]


def small(error: grpc.RpcError) -> bool:
    """The answer quotes nothing without limit (message and trailing metadata)."""
    trailing = sum(len(k) + len(v) for k, v in error.trailing_metadata() or ())  # type: ignore[attr-defined]
    return len(error.details() or "") < 2000 and trailing < 10_000  # type: ignore[attr-defined]


def test_ids_are_bounded_and_never_echoed_whole(server: Running) -> None:
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=HOOLA, seats=2), metadata=studio_auth()
    )
    me = auth(game.tokens[0].token)
    for call, field in [
        (lambda: server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=MEGABYTE)), "game_id"),
        (
            lambda: server.stub.GetView(service_pb2.GetViewRequest(game_id=MEGABYTE), metadata=me),
            "game_id",
        ),
        (
            lambda: server.stub.SubmitCommand(
                service_pb2.SubmitCommandRequest(
                    game_id=game.game_id, command_id=MEGABYTE, expected_version=1
                ),
                metadata=me,
            ),
            "command_id",
        ),
    ]:
        code, reason, fields, error = refused(call)
        assert (code, reason, fields) == (grpc.StatusCode.INVALID_ARGUMENT, "TOO_LONG", [field])
        assert small(error)


@pytest.mark.parametrize("game_id", ["\x00", "abc\x00def"])
def test_a_nul_in_an_id_is_invalid_on_every_store(server: Running, game_id: str) -> None:
    code, reason, fields, _ = refused(
        lambda: server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game_id))
    )
    assert (code, reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_CHARACTER",
        ["game_id"],
    )
    code, reason, fields, _ = refused(
        lambda: server.stub.CreateGame(
            service_pb2.CreateGameRequest(kind=HOOLA, seats=2, players=["a\x00", "b"]),
            metadata=studio_auth(),
        )
    )
    assert (code, reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_CHARACTER",
        ["players[0]"],
    )


def test_player_ids_client_seeds_and_request_ids_are_bounded(server: Running) -> None:
    for request, reason, field in [
        ({"players": [MEGABYTE, "b"]}, "TOO_LONG", "players[0]"),
        ({"client_seeds": ["y" * 3_900_000]}, "TOO_LONG", "client_seeds[0]"),
        ({"client_seeds": ["s"] * 17}, "TOO_MANY", "client_seeds"),
        ({"request_id": "r" * 129}, "TOO_LONG", "request_id"),
        ({"request_id": "r\x00"}, "INVALID_CHARACTER", "request_id"),
    ]:
        code, got, fields, error = refused(
            lambda r=request: server.stub.CreateGame(  # type: ignore[misc]
                service_pb2.CreateGameRequest(kind=HOOLA, seats=2, **r), metadata=studio_auth()
            )
        )
        assert (code, got, fields) == (grpc.StatusCode.INVALID_ARGUMENT, reason, [field])
        assert small(error)
    # At the bounds, accepted.
    server.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=HOOLA,
            seats=2,
            players=["p" * 128, "q"],
            client_seeds=["s" * 256] * 16,
            request_id=f"{uuid.uuid4()}".ljust(128, "r"),
        ),
        metadata=studio_auth(),
    )


def test_a_version_past_the_stores_integers_is_invalid(server: Running) -> None:
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=HOOLA, seats=2), metadata=studio_auth()
    )
    me = auth(game.tokens[0].token)
    code, reason, fields, _ = refused(
        lambda: list(
            server.stub.StreamEvents(
                service_pb2.StreamEventsRequest(game_id=game.game_id, after_version=2**63),
                metadata=me,
            )
        )
    )
    assert (code, reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "OUT_OF_RANGE",
        ["after_version"],
    )
    join = service_pb2.PlayRequest(
        join=service_pb2.PlayJoin(game_id=game.game_id, after_version=2**64 - 1)
    )
    code, reason, fields, _ = refused(lambda: list(server.stub.Play(iter([join]), metadata=me)))
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "OUT_OF_RANGE")


def test_a_command_of_thousands_of_cards_is_too_long_on_every_command_call(
    server: Running,
) -> None:
    """A seat's 2 MB command (a meld naming 200,000 jokers) was read card by card on the event
    loop, every game of the process waiting over a second; ValidateCommand has no rate limit."""
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_RUMMY, seats=2),
        metadata=studio_auth(),
    )
    me = auth(game.tokens[0].token)
    named = melds_pb2.NamedJoker(joker="JK1", card="AS")
    meld = melds_pb2.MeldCards(cards=["JK1", "JK2", "AS1"], jokers=[named] * 5_000)
    huge = service_pb2.Command(
        rummy=rummy_pb2.RummyCommand(lay_down=rummy_pb2.LayDown(melds=[meld]))
    )
    calls = {
        "ValidateCommand": lambda: server.stub.ValidateCommand(
            service_pb2.ValidateCommandRequest(game_id=game.game_id, command=huge), metadata=me
        ),
        "SubmitCommand": lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id, command_id="huge", expected_version=2, command=huge
            ),
            metadata=me,
        ),
    }
    for name, call in calls.items():
        code, reason, fields, _ = refused(call)
        assert (code, reason, fields) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "TOO_LONG",
            ["command"],
        ), name


def test_verify_replay_refuses_deep_nesting_and_huge_files(server: Running) -> None:
    nested = b'{"header": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    code, reason, fields, _ = refused(
        lambda: server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=nested))
    )
    assert (code, reason, fields) == (grpc.StatusCode.INVALID_ARGUMENT, "NOT_A_REPLAY", ["replay"])
    huge = b"\x00" * (3 * 1024 * 1024 + 1)
    code, reason, fields, _ = refused(
        lambda: server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=huge))
    )
    assert (code, reason, fields) == (grpc.StatusCode.INVALID_ARGUMENT, "TOO_LONG", ["replay"])


def test_a_crafted_replay_file_does_not_stall_the_other_calls(server: Running) -> None:
    """VerifyReplay takes anyone's file: 3 MiB of the smallest records (some 400,000 messages to
    read) took seconds to parse, on the event loop, and every other call waited as long."""
    record = replay_pb2.ReplayRecord(event=service_pb2.GameEvent(version=1))
    one = record.SerializeToString(deterministic=True)
    framed = bytes([len(one)]) + one
    crafted = framed * ((3 * 1024 * 1024) // len(framed))
    outcome: list[float] = []

    def verify() -> None:
        started = time.monotonic()
        refused(lambda: server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=crafted)))
        outcome.append(time.monotonic() - started)

    worker = threading.Thread(target=verify)
    worker.start()
    slowest = 0.0
    while worker.is_alive():
        started = time.monotonic()
        refused(lambda: server.stub.GetSettlement(service_pb2.GetSettlementRequest(game_id="x")))
        slowest = max(slowest, time.monotonic() - started)
        time.sleep(0.01)
    worker.join()
    # Relative, not absolute, so that a slow machine passes: before, the other call waited for
    # the whole parse.
    assert slowest < outcome[0] / 2, (slowest, outcome)


# -- rule options are bounded so that an accepted game can always finish (item 7) ----------------

KINDS = {
    "hoola": common_pb2.GAME_KIND_HOOLA,
    "koikoi": common_pb2.GAME_KIND_KOIKOI,
    "gin": common_pb2.GAME_KIND_GIN,
    "rummy": common_pb2.GAME_KIND_RUMMY,
}
M, S = MAX_MULTIPLIER, MAX_STAKE
# Every Hoola payment multiplier at its bound at once: each option is in bounds, their product is
# not (the hand value's multipliers are the next case's).
EVERY_MULTIPLIER_AT_ITS_BOUND = hoola_pb2.HoolaRules(
    base_stake=S,
    unmelded_multiplier=M,
    seven_multiplier=M,
    joker_multiplier=M,
    hoola_multiplier=M,
    perfect_hoola_multiplier=M,
    four_sevens_multiplier=M,
    low_hand_multiplier=M,
    high_hand_multiplier=M,
    stop_penalty_multiplier=M,
    thank_you_penalty_multiplier=M,
    straight_flush_multiplier=M,
    hoola_table_multiplier=hoola_pb2.Multipliers(values=[M] * 8),
    jokers=2,
    joker_value=13,
    rounds=3,
)
GREATEST = [
    # Near the bound of the amounts (greatest_amounts ≈ 1.7e15 of 2^53).
    service_pb2.Rules(
        hoola=hoola_pb2.HoolaRules(
            base_stake=S,
            seven_hand_multiplier=M,
            joker_hand_multiplier=5,
            unmelded_multiplier=M,
            seven_multiplier=M,
            joker_multiplier=1,
            hoola_multiplier=M,
            perfect_hoola_multiplier=M,
            jokers=2,
            joker_value=13,
            rounds=3,
        )
    ),
    service_pb2.Rules(
        koikoi=koikoi_pb2.KoiKoiRules(
            stake_per_point=S, koi_koi_multiplier=M, hand_yaku_points=100, double_from=1, rounds=3
        )
    ),
    service_pb2.Rules(
        gin=gin_pb2.GinRules(
            stake_per_point=S, gin_bonus=1000, undercut_bonus=1000, big_gin_bonus=1000
        )
    ),
    service_pb2.Rules(rummy=rummy_pb2.RummyRules(stake_per_point=S, max_reshuffles=100)),
]


@pytest.mark.parametrize(
    ("rules", "field"),
    [
        (service_pb2.Rules(hoola=hoola_pb2.HoolaRules(base_stake=4294967295)), "base_stake"),
        (service_pb2.Rules(hoola=hoola_pb2.HoolaRules(hoola_multiplier=21)), "hoola_multiplier"),
        (
            service_pb2.Rules(
                hoola=hoola_pb2.HoolaRules(
                    hoola_table_multiplier=hoola_pb2.Multipliers(values=[2, 4294967295])
                )
            ),
            "hoola_table_multiplier",
        ),
        (service_pb2.Rules(hoola=hoola_pb2.HoolaRules(claim_window_ms=10**9)), "claim_window_ms"),
        (
            service_pb2.Rules(koikoi=koikoi_pb2.KoiKoiRules(stake_per_point=10**6)),
            "stake_per_point",
        ),
        (
            service_pb2.Rules(koikoi=koikoi_pb2.KoiKoiRules(koi_koi_multiplier=4294967295)),
            "koi_koi_multiplier",
        ),
        (service_pb2.Rules(gin=gin_pb2.GinRules(gin_bonus=4294967295)), "gin_bonus"),
        (service_pb2.Rules(gin=gin_pb2.GinRules(match_points=10**6)), "match_points"),
        (
            service_pb2.Rules(rummy=rummy_pb2.RummyRules(stake_per_point=4294967295)),
            "stake_per_point",
        ),
        (service_pb2.Rules(hoola=EVERY_MULTIPLIER_AT_ITS_BOUND), "base_stake"),
        (
            service_pb2.Rules(
                hoola=hoola_pb2.HoolaRules(
                    jokers=2, joker_value=200, joker_hand_multiplier=M, seven_hand_multiplier=M
                )
            ),
            "seven_hand_multiplier",
        ),
    ],
)
def test_rule_options_past_their_bounds_are_refused_at_creation(
    server: Running, rules: service_pb2.Rules, field: str
) -> None:
    kind = KINDS[rules.WhichOneof("game")]
    seats = 2
    code, reason, fields, _ = refused(
        lambda: server.stub.CreateGame(
            service_pb2.CreateGameRequest(kind=kind, seats=seats, overrides=rules),
            metadata=studio_auth(),
        )
    )
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "OUT_OF_RANGE")
    assert fields == [f"overrides.{rules.WhichOneof('game')}.{field}"]


@pytest.mark.parametrize("rules", GREATEST, ids=lambda r: r.WhichOneof("game"))
def test_a_game_at_the_greatest_options_plays_to_its_end(
    server: Running, rules: service_pb2.Rules
) -> None:
    kind = KINDS[rules.WhichOneof("game")]
    result = play_game(
        server.channel,
        studio=studio_token(),
        seats=2,
        kind=kind,
        overrides=rules,
        rng=random.Random(7),
    )
    assert result.final.net, "the game ended with a settlement"
    replay = server.stub.ExportReplay(
        service_pb2.ExportReplayRequest(game_id=result.game_id), metadata=auth(result.tokens[0])
    ).replay
    assert server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=replay)).ok


# -- connection limits and the per-seat rate limit (item 8) --------------------------------------


def test_a_seat_sending_commands_too_fast_is_rate_limited_with_retry_info(tmp_path: Path) -> None:
    server = Local(tmp_path, rate_limit=RateLimit(per_second=1, burst=2))
    try:
        game = server.stub.CreateGame(
            service_pb2.CreateGameRequest(kind=HOOLA, seats=2), metadata=studio_auth()
        )
        me = auth(game.tokens[0].token)

        def submit() -> Any:
            return server.stub.SubmitCommand(
                service_pb2.SubmitCommandRequest(
                    game_id=game.game_id, command_id=uuid.uuid4().hex, expected_version=999
                ),
                metadata=me,
            )

        for _ in range(2):  # the burst: refused for what they are, not for their rate
            code, reason, _, _ = refused(submit)
            assert code != grpc.StatusCode.RESOURCE_EXHAUSTED, reason
        code, reason, _, error = refused(submit)
        assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
        assert status is not None
        retry = error_details_pb2.RetryInfo()
        assert any(d.Unpack(retry) for d in status.details if d.Is(retry.DESCRIPTOR))
        assert 0 < retry.retry_delay.ToMilliseconds() <= 1000
        # Another seat has its own allowance; and time refills this one.
        code, reason, _, _ = refused(
            lambda: server.stub.SubmitCommand(
                service_pb2.SubmitCommandRequest(
                    game_id=game.game_id, command_id="x", expected_version=999
                ),
                metadata=auth(game.tokens[1].token),
            )
        )
        assert reason != "RATE_LIMITED"
        server.clock.advance(1000)
        code, reason, _, _ = refused(submit)
        assert reason != "RATE_LIMITED"
        # A dry run of a command draws on the same allowance (each one is the engine's work).
        draw = service_pb2.Command(hoola=hoola_pb2.HoolaCommand(draw=hoola_pb2.Draw()))
        validate = service_pb2.ValidateCommandRequest(game_id=game.game_id, command=draw)
        server.clock.advance(2000)
        for _ in range(2):  # seat 0 may draw or not, but is answered, not limited
            server.stub.ValidateCommand(validate, metadata=me)
        code, reason, _, _ = refused(lambda: server.stub.ValidateCommand(validate, metadata=me))
        assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")
        code, reason, _, _ = refused(submit)
        assert reason == "RATE_LIMITED"  # the validations used up the commands' allowance too
    finally:
        server.close()


def test_the_default_allowance_lets_bots_play_at_full_speed(server: Running) -> None:
    result = play_game(
        server.channel,
        studio=studio_token(),
        seats=2,
        kind=common_pb2.GAME_KIND_GIN,
        rng=random.Random(3),
    )
    assert result.final is not None and result.final.net


def test_streams_beyond_a_connections_limit_wait_for_a_slot(tmp_path: Path) -> None:
    server = Local(tmp_path, limits=ConnectionLimits(max_streams=2))
    try:
        game = server.stub.CreateGame(
            service_pb2.CreateGameRequest(kind=HOOLA, seats=2), metadata=studio_auth()
        )
        me = auth(game.tokens[0].token)
        request = service_pb2.StreamEventsRequest(game_id=game.game_id)
        held = [server.stub.StreamEvents(request, metadata=me) for _ in range(2)]
        for call in held:
            next(call)  # each has its first event: both streams are open
        with pytest.raises(grpc.RpcError) as waited:
            next(server.stub.StreamEvents(request, metadata=me, timeout=0.5))
        assert waited.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
        held[0].cancel()
        assert next(server.stub.StreamEvents(request, metadata=me, timeout=5)).event.version == 1
        held[1].cancel()
    finally:
        server.close()


def test_the_server_sets_keepalive_and_idle_limits() -> None:
    options = dict(ConnectionLimits().options())
    for option in (
        "grpc.keepalive_time_ms",
        "grpc.keepalive_timeout_ms",
        "grpc.max_connection_idle_ms",
        "grpc.http2.max_pings_without_data",
        "grpc.http2.min_recv_ping_interval_without_data_ms",
        "grpc.max_concurrent_streams",
    ):
        assert option in options
    # Above the load tool's 10,000 streams over its default 4 connections.
    assert options["grpc.max_concurrent_streams"] > 10_000 // 4


# -- restarts: a kill during start-up leaves no lock behind (item 9) -----------------------------


def store_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'croupier.sqlite3'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_stale_migration_lock_does_not_stop_a_start(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = store_url(kind, tmp_path, request)
    open_store(url).close()  # the schema and yoyo's tables exist
    # What a process killed while migrating left: yoyo's lock row, its pid long gone.
    if kind == "sqlite":
        import sqlite3

        with sqlite3.connect(tmp_path / "croupier.sqlite3") as db:
            db.execute(
                "INSERT INTO yoyo_lock (locked, ctime, pid) VALUES (1, '2026-01-01', 999999)"
            )
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as db:
            db.execute("DELETE FROM yoyo_lock")
            db.execute("INSERT INTO yoyo_lock (locked, ctime, pid) VALUES (1, now(), 999999)")
    try:
        started = time.monotonic()
        open_store(url).close()
        assert time.monotonic() - started < 5, "yoyo's lock would have made it wait 10 s and fail"
    finally:
        if kind == "postgres":
            with psycopg.connect(url, autocommit=True) as db:
                db.execute("DELETE FROM yoyo_lock")


def _migration_lock_holder(url: str) -> subprocess.Popen[str]:
    """Another process holding the store's migration lock (for a minute); it says "held" once
    it does."""
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from croupier.service.store import postgres, sqlite\n"
            "from pathlib import Path\n"
            f"url = {url!r}\n"
            "lock = sqlite.migration_lock(Path(url.removeprefix('sqlite:///'))) "
            "if url.startswith('sqlite') else postgres.migration_lock(url)\n"
            "lock.__enter__()\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_process_killed_while_holding_the_migration_lock_releases_it(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = store_url(kind, tmp_path, request)
    open_store(url).close()
    holder = _migration_lock_holder(url)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        started = time.monotonic()
        open_store(url).close()
        assert time.monotonic() - started < 5
    finally:
        holder.kill()


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_migration_lock_held_too_long_fails_the_start_saying_so(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = store_url(kind, tmp_path, request)
    open_store(url).close()
    holder = _migration_lock_holder(url)
    wait_s = 0.5
    monkeypatch.setattr(sqlite, "MIGRATION_WAIT_S", wait_s)
    monkeypatch.setattr(postgres, "MIGRATION_WAIT_S", wait_s)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        # Not "cannot use PostgreSQL … check that it runs and is reachable" (it is), nor, on
        # SQLite, a wait for ever: the lock, and where to look for its holder.
        with pytest.raises(MigrationLockBusy, match=r"held .* for over 0\.5 s") as busy:
            open_store(url)
        assert wait_s <= time.monotonic() - started < wait_s + 5
        assert ("pg_locks" if kind == "postgres" else "fuser") in str(busy.value)
        assert isinstance(busy.value, StoreOpenError)  # a `failed` line, as any bad store
    finally:
        holder.kill()
        holder.wait(10)


# -- configuration errors are one clear line (item 10) -------------------------------------------

CROUPIER = str(Path(sys.executable).parent / "croupier")


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ("mysql://user:hunter2@db/croupier", "unsupported store URL scheme 'mysql'"),
        ("postgresql://postgres:hunter2@127.0.0.1:1/test", "cannot use PostgreSQL at"),
        # libpq's other place for a password: the URL's query
        ("postgresql://postgres@127.0.0.1:1/test?password=hunter2", "cannot use PostgreSQL at"),
        ("sqlite:////proc/no-such-folder/games.sqlite3", "cannot open the SQLite store"),
    ],
)
@pytest.mark.parametrize("workers", [1, 2])
def test_a_bad_store_is_one_clear_line_and_a_failed_exit(
    store: str, says: str, workers: int
) -> None:
    ran = subprocess.run(
        [
            CROUPIER,
            "serve",
            "--address",
            "127.0.0.1:0",
            "--store",
            store,
            "--workers",
            str(workers),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CROUPIER_SECRET": "hex:" + "ab" * 32},
    )
    assert ran.returncode != 0
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), ran.stderr
    assert says in lines[0] and "--store" in lines[0]
    assert "Traceback" not in ran.stderr and "hunter2" not in ran.stderr


def test_bytes_that_are_not_the_request_message_are_invalid_in_every_kind_of_call(
    local: Local,
) -> None:
    garbage = b"\x12\x80"  # a length-delimited field cut off
    prefix = "/croupier.v1.GameService/"
    # A Play stream's token is checked before its first message is read: a seat's, so that the
    # message is.
    game = local.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=HOOLA, seats=2), metadata=studio_auth()
    )
    me = auth(game.tokens[0].token)
    calls = [
        lambda: local.channel.unary_unary(prefix + "GetView")(garbage, timeout=10),
        lambda: list(local.channel.unary_stream(prefix + "StreamEvents")(garbage, timeout=10)),
        lambda: list(
            local.channel.stream_stream(prefix + "Play")(iter([garbage]), metadata=me, timeout=10)
        ),
    ]
    for call in calls:
        code, reason, _, _ = refused(call)
        assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_REQUEST")
