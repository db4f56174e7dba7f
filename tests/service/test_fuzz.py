"""Fuzzing every GameService RPC against a real in-process server on SQLite (issue 13).

Valid-but-wrong requests (unknown or foreign game ids, stale or absurd versions, commands of
another game kind, other seats' and other games' tokens, forged tokens), raw bytes as request
bodies (through a generic channel method, no serializer), huge sizes and odd unicode (NUL,
combining marks, right-to-left text). Whatever comes in:

- no call ever ends ``UNKNOWN`` (an unhandled exception), and a ``Play`` stream never refuses a
  command with it;
- every refusal is the service's, with an ``ErrorInfo`` whose reason docs/errors.md lists under
  its status (but gRPC's own: a message over 4 MiB, or the fuzzer hanging up on a stream);
- any ``INTERNAL`` names an error id that the server logged with its traceback;
- no game is stuck: afterwards, every game the fuzzer touched is played to its end by bots and its
  replay verifies.

The budget is fixed and derandomized (the same examples on every run), about a minute in all.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
import structlog
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_error_reasons import DOC, documented

from croupier.app.tokens import TokenSigner
from croupier.service.bots import auth, finish_game
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

from .conftest import SECRET, STUDIO_KEYS, studio_auth
from .conftest import TestClock as Clock

SERVICE = service_pb2.DESCRIPTOR.services_by_name["GameService"]
PREFIX = f"/{SERVICE.full_name}/"
METHODS = {m.name: m for m in SERVICE.methods}
# How long a stream is read before the fuzzer hangs up (a live game's stream stays open).
STREAM_S = 0.3
UNARY_S = 10.0
BUDGET = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
#: The reasons docs/errors.md lists, each with the statuses its rows name.
REASONS = documented(DOC.read_text(encoding="utf-8"))
KINDS = {
    common_pb2.GAME_KIND_HOOLA: 3,
    common_pb2.GAME_KIND_KOIKOI: 2,
    common_pb2.GAME_KIND_GIN: 2,
    common_pb2.GAME_KIND_RUMMY: 2,
}


@dataclass
class Game:
    game_id: str
    tokens: list[str]


@dataclass
class Arena:
    """The server under fuzz, its games, what the fuzzer draws from, and the server's log."""

    channel: grpc.Channel
    stub: service_pb2_grpc.GameServiceStub
    clock: Clock
    games: list[Game]
    commands: list[service_pb2.Command]
    foreign_tokens: list[str]
    logs: list[dict[str, Any]] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)

    def check(self, error: grpc.RpcError) -> None:
        """The outcome rules for one failed call."""
        code = error.code()  # type: ignore[attr-defined]
        self.outcomes[code.name] = self.outcomes.get(code.name, 0) + 1
        assert code != grpc.StatusCode.UNKNOWN, error
        said = rpc_status.from_call(error)  # type: ignore[arg-type]
        if said is None:
            # gRPC's own refusal of a message over its limit (README, "Limits"): no ErrorInfo.
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, error
            assert "larger than max" in (error.details() or ""), error  # type: ignore[attr-defined]
            return
        reason = error_details_pb2.ErrorInfo()
        assert any(d.Unpack(reason) for d in said.details if d.Is(reason.DESCRIPTOR)), error
        assert reason.domain == "croupier.v1", error
        assert any(code.name in row for row in REASONS.get(reason.reason, [])), (
            f"{code.name} {reason.reason} is not in docs/errors.md under that status"
        )
        if code == grpc.StatusCode.INTERNAL:
            status = rpc_status.from_call(error)  # type: ignore[arg-type]
            assert status is not None, f"an INTERNAL without details: {error}"
            info = error_details_pb2.ErrorInfo()
            assert any(d.Unpack(info) for d in status.details if d.Is(info.DESCRIPTOR))
            error_id = info.metadata["error_id"]
            assert any(e.get("error_id") == error_id and e.get("exc_info") for e in self.logs), (
                f"INTERNAL {error_id} is not in the server's log with a traceback"
            )

    def check_response(self, response: Message) -> None:
        if isinstance(response, service_pb2.PlayResponse) and response.HasField("refused"):
            assert response.refused.status not in ("UNKNOWN", "INTERNAL"), response


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'croupier.sqlite3'}")
    clock = Clock()
    thread = ServerThread(
        "127.0.0.1:0", store, TokenSigner(SECRET), clock=clock, studio_keys=STUDIO_KEYS
    )
    port = thread.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = service_pb2_grpc.GameServiceStub(channel)
    capture = structlog.testing.LogCapture()
    saved = structlog.get_config()
    structlog.configure(processors=[capture])
    try:
        games, commands = [], []
        for kind, seats in KINDS.items():
            created = stub.CreateGame(
                service_pb2.CreateGameRequest(
                    kind=kind, seats=seats, players=[f"p{s}" for s in range(seats)]
                ),
                metadata=studio_auth(),
            )
            tokens = [t.token for t in created.tokens]
            games.append(Game(created.game_id, tokens))
            for token in tokens:  # every seat's first moves: commands for the other kinds too
                moves = stub.ListLegalMoves(
                    service_pb2.ListLegalMovesRequest(game_id=created.game_id),
                    metadata=auth(token),
                )
                commands += [m.command for m in moves.moves][:6]
        other = TokenSigner(b"another-server-secret-0123456789")
        foreign = [other.issue(g.game_id, 0) for g in games] + [other.issue(str(uuid.uuid4()), 1)]
        yield Arena(channel, stub, clock, games, commands, foreign, capture.entries)
    finally:
        structlog.configure(**saved)
        channel.close()
        thread.stop(grace=None)
        store.close()


# -- what the fuzzer draws ------------------------------------------------------------------------

# Text as a client may send it: any unicode a protobuf string holds (no lone surrogates), NUL and
# control characters, right-to-left and combining marks included.
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
HUGE = st.sampled_from([100_000, 1 << 20]).map(lambda n: "9" * n)
#: The command ids the service keeps for itself (a tick's, the opening batch's).
RESERVED = ("tick:1", "create")
# Metadata values are printable ASCII (gRPC refuses anything else before sending).
HEADER_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=300)
# Mostly near a game's version (stale, current, ahead), sometimes absurd.
VERSIONS = st.one_of(
    st.integers(0, 8),
    st.integers(0, 8),
    st.integers(0, 8),
    st.integers(0, 2**64 - 1),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1]),
)


@st.composite
def game_ids(draw: st.DrawFn, arena: Arena, target: Game | None = None) -> str:
    """Mostly the targeted game's id (so that calls get past the checks of who calls), else any
    game's, an unknown one, text, NUL or a huge one."""
    choice = draw(st.sampled_from(["target"] * 12 + ["any", "uuid", "text", "nul", "huge"]))
    if choice == "target" and target is not None:
        return target.game_id
    if choice in ("target", "any"):
        return draw(st.sampled_from([g.game_id for g in arena.games]))
    return draw(
        {
            "uuid": st.uuids().map(str),
            "text": TEXT,
            "nul": st.sampled_from(["\x00", "a\x00b"]),
            "huge": HUGE,
        }[choice]
    )


@st.composite
def tokens(draw: st.DrawFn, arena: Arena, target: Game | None = None) -> str | None:
    """Mostly a seat token of the targeted game (any seat: often not the one to act), else
    another game's, a foreign server's, a forged one, text or none."""
    every = [t for g in arena.games for t in g.tokens]
    choice = draw(st.sampled_from(["target"] * 12 + ["any", "foreign", "forged", "text", "none"]))
    if choice == "target" and target is not None:
        return draw(st.sampled_from(target.tokens))
    if choice in ("target", "any"):
        return draw(st.sampled_from(every))
    if choice == "none":
        return None
    return draw(
        {
            "foreign": st.sampled_from(arena.foreign_tokens),
            # A genuine token with a character changed: a forged signature.
            "forged": st.sampled_from(every).map(
                lambda t: t[:-2] + ("A" if t[-2] != "A" else "B") + t[-1]
            ),
            "text": HEADER_TEXT,
        }[choice]
    )


@st.composite
def commands(draw: st.DrawFn, arena: Arena) -> service_pb2.Command:
    def parsed(data: bytes) -> service_pb2.Command:
        try:
            return service_pb2.Command.FromString(data)
        except Exception:  # not a Command: send an empty one
            return service_pb2.Command()

    return draw(
        st.one_of(
            st.sampled_from(arena.commands),
            st.binary(max_size=64).map(parsed),
            st.just(service_pb2.Command()),
        )
    )


@st.composite
def requests(draw: st.DrawFn, arena: Arena, method: str, target: Game) -> Message:
    """A request of ``method`` built from the fuzzer's ids, versions, commands and text."""
    game_id = draw(game_ids(arena, target))
    seat = draw(
        st.one_of(st.none(), st.none(), st.none(), st.integers(0, 8), st.integers(0, 2**32 - 1))
    )
    with_seat = {} if seat is None else {"seat": seat}
    include = service_pb2.Include(
        view=draw(st.booleans()), legal_moves=draw(st.booleans()), to_act=draw(st.booleans())
    )
    builders: dict[str, Callable[[], Message]] = {
        "CreateGame": lambda: service_pb2.CreateGameRequest(
            kind=draw(st.sampled_from([*KINDS, 0, 99])),
            preset=draw(st.one_of(st.just(""), TEXT)),
            seats=draw(st.integers(0, 2**32 - 1) | st.integers(0, 8)),
            client_seeds=draw(st.lists(TEXT | HUGE, max_size=20)),
            players=draw(st.lists(TEXT | HUGE, max_size=8)),
            seed_ticket=draw(st.one_of(st.just(""), TEXT, HUGE)),
        ),
        "CommitSeed": lambda: service_pb2.CommitSeedRequest(),
        "SubmitCommand": lambda: service_pb2.SubmitCommandRequest(
            game_id=game_id,
            command_id=draw(
                st.one_of(
                    st.uuids().map(str), st.uuids().map(str), TEXT, HUGE, st.sampled_from(RESERVED)
                )
            ),
            expected_version=draw(VERSIONS),
            command=draw(commands(arena)),
            include=include,
            **with_seat,
        ),
        "EndGame": lambda: service_pb2.EndGameRequest(
            game_id=game_id,
            command_id=draw(st.one_of(st.uuids().map(str), TEXT, HUGE, st.sampled_from(RESERVED))),
            reason=draw(st.one_of(st.just(""), TEXT, HUGE)),
            **draw(st.sampled_from([{}, {"expected_version": draw(VERSIONS)}])),
        ),
        "ValidateCommand": lambda: service_pb2.ValidateCommandRequest(
            game_id=game_id, command=draw(commands(arena)), **with_seat
        ),
        "ListLegalMoves": lambda: service_pb2.ListLegalMovesRequest(game_id=game_id, **with_seat),
        "GetView": lambda: service_pb2.GetViewRequest(game_id=game_id, **with_seat),
        "StreamEvents": lambda: service_pb2.StreamEventsRequest(
            game_id=game_id, after_version=draw(VERSIONS)
        ),
        "GetSettlement": lambda: service_pb2.GetSettlementRequest(
            game_id=game_id, round=draw(st.integers(0, 2**32 - 1)), final=draw(st.booleans())
        ),
        "GetReplay": lambda: service_pb2.GetReplayRequest(game_id=game_id),
        "ListPresets": lambda: service_pb2.ListPresetsRequest(
            kind=draw(st.sampled_from([*KINDS, 0, 99, -1]))
        ),
        "ExportReplay": lambda: service_pb2.ExportReplayRequest(
            game_id=game_id, format=draw(st.sampled_from([0, 1, 2, 3, 99, -1]))
        ),
        "VerifyReplay": lambda: service_pb2.VerifyReplayRequest(
            replay=draw(
                st.one_of(
                    st.binary(max_size=256),
                    TEXT.map(lambda t: ("{" + t).encode()),
                    st.just(b'{"header": ' + b"[" * 50_000 + b"}"),
                )
            )
        ),
        "ListRecentGames": lambda: service_pb2.ListRecentGamesRequest(game_id=game_id, **with_seat),
        "GetRecentGame": lambda: service_pb2.GetRecentGameRequest(
            game_id=game_id, recent_game_id=draw(game_ids(arena)), **with_seat
        ),
    }
    return builders[method]()


@st.composite
def play_messages(draw: st.DrawFn, arena: Arena, target: Game) -> list[service_pb2.PlayRequest]:
    join = service_pb2.PlayRequest(
        join=service_pb2.PlayJoin(
            game_id=draw(game_ids(arena, target)), after_version=draw(VERSIONS)
        )
    )
    moves = [
        service_pb2.PlayRequest(
            command=service_pb2.PlayCommand(
                command_id=draw(st.one_of(st.uuids().map(str), TEXT)),
                expected_version=draw(VERSIONS),
                command=draw(commands(arena)),
            )
        )
        for _ in range(draw(st.integers(0, 3)))
    ]
    first = draw(st.sampled_from(["join", "command", "none"]))
    head = {"join": [join], "none": []}.get(first, moves[:1])
    return head + moves + draw(st.lists(st.just(join), max_size=1))


# -- calling ----------------------------------------------------------------------------------


def call(arena: Arena, method: str, request: Any, metadata: Any, raw: bool = False) -> None:
    """Call ``method`` (with a message, or raw bytes through a generic method) and check the
    outcome; streams are read for ``STREAM_S`` and hung up."""
    descriptor = METHODS[method]
    path = PREFIX + method
    serialize: Any = None if raw else (lambda m: m.SerializeToString())
    try:
        arena.outcomes["calls"] = arena.outcomes.get("calls", 0) + 1
        if descriptor.client_streaming:
            stream = arena.channel.stream_stream(path, request_serializer=serialize)
            messages = request if isinstance(request, list) else [request]
            for data in stream(iter(messages), metadata=metadata, timeout=STREAM_S):
                arena.check_response(service_pb2.PlayResponse.FromString(data))
        elif descriptor.server_streaming:
            stream = arena.channel.unary_stream(path, request_serializer=serialize)
            for _ in stream(request, metadata=metadata, timeout=STREAM_S):
                pass
        else:
            arena.channel.unary_unary(path, request_serializer=serialize)(
                request, metadata=metadata, timeout=UNARY_S
            )
        arena.outcomes["OK"] = arena.outcomes.get("OK", 0) + 1
    except grpc.RpcError as error:
        if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED and (  # type: ignore[attr-defined]
            descriptor.client_streaming or descriptor.server_streaming
        ):
            return  # the fuzzer hung up on a live stream
        arena.check(error)


def metadata_of(token: str | None) -> tuple[tuple[str, str], ...]:
    return () if token is None else auth(token)


# -- the fuzzing ---------------------------------------------------------------------------------


@settings(BUDGET, max_examples=600)
@given(data=st.data())
def test_valid_but_wrong_requests_never_break_the_server(arena: Arena, data: st.DataObject) -> None:
    method = data.draw(st.sampled_from(sorted(METHODS)))
    target = data.draw(st.sampled_from(arena.games))
    token = data.draw(tokens(arena, target))
    if method == "Play":
        request: Any = data.draw(play_messages(arena, target))
    else:
        request = data.draw(requests(arena, method, target))
    call(arena, method, request, metadata_of(token))


@settings(BUDGET, max_examples=400)
@given(data=st.data())
def test_raw_bytes_as_requests_never_break_the_server(arena: Arena, data: st.DataObject) -> None:
    method = data.draw(st.sampled_from(sorted(METHODS)))
    body = data.draw(
        st.one_of(
            st.binary(max_size=512),
            # A real request with some bytes changed: parses often, means nonsense.
            st.builds(
                lambda b, at, to: b[:at] + to + b[at + 1 :],
                st.just(
                    service_pb2.SubmitCommandRequest(
                        game_id=arena.games[0].game_id,
                        command_id="c",
                        expected_version=1,
                        command=arena.commands[0],
                    ).SerializeToString()
                ),
                st.integers(0, 60),
                st.binary(min_size=1, max_size=3),
            ),
        )
    )
    token = data.draw(tokens(arena))
    call(
        arena,
        method,
        [body] if METHODS[method].client_streaming else body,
        metadata_of(token),
        True,
    )


@settings(BUDGET, max_examples=40)
@given(data=st.data())
def test_huge_and_odd_values_never_break_the_server(arena: Arena, data: st.DataObject) -> None:
    game = data.draw(st.sampled_from(arena.games))
    odd = data.draw(st.one_of(HUGE, st.just("\x00"), st.just("a\u0301\u202e\U0001f0a1" * 100)))
    field_name = data.draw(st.sampled_from(["game_id", "command_id", "player", "seed"]))
    if field_name in ("player", "seed"):
        request: Message = service_pb2.CreateGameRequest(
            kind=common_pb2.GAME_KIND_GIN,
            seats=2,
            players=[odd, "b"] if field_name == "player" else [],
            client_seeds=[odd] if field_name == "seed" else [],
        )
        call(arena, "CreateGame", request, ())
        return
    request = service_pb2.SubmitCommandRequest(
        game_id=odd if field_name == "game_id" else game.game_id,
        command_id=odd if field_name == "command_id" else uuid.uuid4().hex,
        expected_version=1,
        command=arena.commands[0],
    )
    call(arena, "SubmitCommand", request, auth(game.tokens[0]))


def test_the_games_the_fuzzer_touched_still_play_to_the_end_and_verify(arena: Arena) -> None:
    """Runs after the fuzzing (pytest keeps the file's order): no game is stuck."""
    # A second of the server's time: every seat's allowance of commands is full again.
    arena.clock.advance(60_000)
    for game in arena.games:
        result = finish_game(arena.channel, game.game_id, game.tokens, random.Random(11))
        assert result.final is not None and result.final.net, game
        me = auth(game.tokens[0])
        replay = arena.stub.ExportReplay(
            service_pb2.ExportReplayRequest(game_id=game.game_id), metadata=me
        ).replay
        assert arena.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=replay)).ok
    assert "UNKNOWN" not in arena.outcomes
