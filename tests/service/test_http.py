"""The HTTP listener (service/http.py) on a real port: Connect (JSON and binary) and gRPC-Web
clients play, stream, and meet the same errors, codes, reasons and details as native gRPC; CORS;
what GET / answers; mounting a static site or another app."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import queue
import random
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.protobuf import any_pb2, duration_pb2, json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from hypothesis import assume, given
from hypothesis import strategies as st
from prometheus_client import REGISTRY
from protobuf import message_to_json_value
from pyqwest import Client, HTTPTransport, HTTPVersion
from starlette.responses import PlainTextResponse

from croupier.app.ratelimit import RateLimit
from croupier.app.tokens import TokenSigner
from croupier.service.bots import auth, finish_game
from croupier.service.http import (
    CONNECT_CODES,
    GRPC_NEEDS_HTTP2,
    METHOD_NAMES,
    HttpListener,
    connect_error,
    create_http_app,
    grpc_name,
    is_off,
    parse_origins,
    static_site,
    unknown_method_message,
)
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, gin_pb2, service_pb2, service_pb2_grpc
from croupier.v1.service_connect import GameServiceClient, GameServiceClientSync

from .conftest import SECRET, STUDIO_KEYS, studio_token

ORIGIN = "http://localhost:5173"
#: A stream's reads end within this (a bug must fail the test, not hang it).
TIMEOUT_MS = 30_000
GIN = common_pb2.GAME_KIND_GIN


@dataclass
class Served:
    thread: ServerThread
    channel: grpc.Channel
    stub: service_pb2_grpc.GameServiceStub
    url: str


@contextlib.contextmanager
def _serve(tmp: Path, **kwargs: Any) -> Iterator[Served]:
    store = open_store(f"sqlite:///{tmp / 'http.sqlite3'}")
    thread = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(SECRET),
        studio_keys=STUDIO_KEYS,
        http_address="127.0.0.1:0",
        **kwargs,
    )
    port = thread.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Served(
            thread,
            channel,
            service_pb2_grpc.GameServiceStub(channel),
            f"http://127.0.0.1:{thread.http_port}",
        )
    finally:
        channel.close()
        thread.stop(grace=None)
        store.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with _serve(tmp_path_factory.mktemp("http"), cors_origins=[ORIGIN]) as running:
        yield running


CLIENTS = {
    "connect-json": {"codec": google_protobuf_json_codec()},
    "connect-binary": {"codec": google_protobuf_binary_codec()},
    "grpc-web": {"protocol": ProtocolType.GRPC_WEB},
}


def client(served: Served, kind: str) -> GameServiceClientSync:
    return GameServiceClientSync(served.url, timeout_ms=TIMEOUT_MS, **CLIENTS[kind])


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


# --- playing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(CLIENTS))
def test_create_play_and_stream_over_http(served: Served, kind: str) -> None:
    """A game created, played a few moves and streamed over one protocol; what the seat's stream
    carries is what the same seat's gRPC stream carries."""
    with client(served, kind) as http:
        game = http.create_game(
            service_pb2.CreateGameRequest(kind=GIN, seats=2, client_seeds=[kind]),
            headers=bearer(studio_token()),
        )
        assert len(game.tokens) == 2 and len(game.commitment) == 64
        seat_view = http.get_view(
            service_pb2.GetViewRequest(game_id=game.game_id), headers=bearer(game.tokens[0].token)
        )
        version = seat_view.version
        to_act = [s.seat for s in seat_view.to_act]
        moves_played = 0
        while moves_played < 6 and to_act:
            seat = to_act[0]
            me = bearer(game.tokens[seat].token)
            moves = http.list_legal_moves(
                service_pb2.ListLegalMovesRequest(game_id=game.game_id), headers=me
            )
            assert moves.moves, "a seat to act has moves"
            reply = http.submit_command(
                service_pb2.SubmitCommandRequest(
                    game_id=game.game_id,
                    command_id=uuid.uuid4().hex,
                    expected_version=version,
                    command=moves.moves[0].command,
                    include=service_pb2.Include(to_act=True, legal_moves=True),
                ),
                headers=me,
            )
            assert reply.version > version and reply.events
            version, to_act = reply.version, [s.seat for s in reply.to_act]
            moves_played += 1
        assert moves_played == 6

        request = service_pb2.StreamEventsRequest(game_id=game.game_id, after_version=0)
        streamed: list[service_pb2.GameEvent] = []
        stream = http.stream_events(request, headers=bearer(game.tokens[1].token))
        for message in stream:
            streamed.append(message.event)
            if message.event.version == version:
                break
        stream.close()  # type: ignore[attr-defined]
    assert [e.version for e in streamed] == list(range(1, version + 1))
    native = served.stub.StreamEvents(
        request, metadata=auth(game.tokens[1].token), timeout=TIMEOUT_MS / 1000
    )
    expected = []
    for message in native:
        expected.append(message.event)
        if message.event.version == version:
            break
    native.cancel()
    assert streamed == expected
    # Seat 1's copy hides seat 0's cards: the deal is redacted.
    assert any(e.redacted for e in streamed)


def test_presets_over_json_are_the_grpc_ones(served: Served) -> None:
    with client(served, "connect-json") as http:
        over_http = http.list_presets(service_pb2.ListPresetsRequest(kind=GIN))
    assert over_http == served.stub.ListPresets(service_pb2.ListPresetsRequest(kind=GIN))
    assert {p.name for p in over_http.presets} >= {"standard", "single-hand", "big-gin"}


# --- errors -----------------------------------------------------------------------------------

DETAIL_TYPES: dict[str, type[Message]] = {
    "google.rpc.ErrorInfo": error_details_pb2.ErrorInfo,
    "google.rpc.BadRequest": error_details_pb2.BadRequest,
    "google.rpc.RetryInfo": error_details_pb2.RetryInfo,
}


@dataclass(frozen=True)
class Failure:
    code: str
    message: str
    details: tuple[tuple[str, bytes], ...]

    def parsed(self) -> list[Message]:
        """The details as messages (compared as messages: a map's bytes may come in any order)."""
        return [DETAIL_TYPES[name].FromString(value) for name, value in self.details]

    def reason(self) -> str:
        infos = [d for d in self.parsed() if isinstance(d, error_details_pb2.ErrorInfo)]
        assert len(infos) == 1 and infos[0].domain == "croupier.v1"
        return infos[0].reason


def grpc_failure(call: Callable[[], object]) -> Failure:
    with pytest.raises(grpc.RpcError) as info:
        call()
    status = rpc_status.from_call(info.value)  # type: ignore[arg-type]
    assert status is not None, "every error carries google.rpc details"
    details = tuple((d.type_url.rsplit("/", 1)[-1], d.value) for d in status.details)
    return Failure(info.value.code().name, status.message, details)  # type: ignore[attr-defined]


def http_failure(call: Callable[[], object]) -> Failure:
    with pytest.raises(ConnectError) as info:
        call()
    error = info.value
    details = tuple((d.type_name, d.message_bytes) for d in error.details)
    return Failure(error.code.name, error.message, details)


def assert_same(native: Failure, over_http: Failure, code: str, reason: str) -> None:
    assert (native.code, native.reason()) == (code, reason)
    assert (over_http.code, over_http.message) == (native.code, native.message)
    assert over_http.parsed() == native.parsed()


@pytest.mark.parametrize("kind", list(CLIENTS))
def test_errors_carry_the_grpc_codes_reasons_and_details(served: Served, kind: str) -> None:
    game = served.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=auth(studio_token())
    )
    seat0 = game.tokens[0].token
    stranger = TokenSigner(SECRET).issue("no-such-game", 0)
    no_command_id = service_pb2.SubmitCommandRequest(
        game_id=game.game_id,
        expected_version=game.version,
        command=service_pb2.Command(gin=gin_pb2.GinCommand(draw_stock=gin_pb2.DrawStock())),
    )
    settlement = service_pb2.GetSettlementRequest(game_id=game.game_id)
    unknown = service_pb2.GetViewRequest(game_id="no-such-game")
    own = service_pb2.GetViewRequest(game_id=game.game_id)
    other_game = TokenSigner(SECRET).issue("another-game", 1)
    with client(served, kind) as http:
        cases = [
            (
                lambda: served.stub.GetView(unknown, metadata=auth(stranger)),
                lambda: http.get_view(unknown, headers=bearer(stranger)),
                "NOT_FOUND",
                "GAME_NOT_FOUND",
            ),
            (
                lambda: served.stub.SubmitCommand(no_command_id, metadata=auth(seat0)),
                lambda: http.submit_command(no_command_id, headers=bearer(seat0)),
                "INVALID_ARGUMENT",
                "MISSING_FIELD",
            ),
            (
                lambda: served.stub.GetSettlement(settlement, metadata=auth(seat0)),
                lambda: http.get_settlement(settlement, headers=bearer(seat0)),
                "FAILED_PRECONDITION",
                "ROUND_NOT_FINISHED",
            ),
            (
                lambda: served.stub.GetView(own),
                lambda: http.get_view(own),
                "UNAUTHENTICATED",
                "MISSING_TOKEN",
            ),
            (
                lambda: served.stub.GetView(own, metadata=(("authorization", seat0),)),
                lambda: http.get_view(own, headers={"authorization": seat0}),
                "UNAUTHENTICATED",
                "BAD_AUTH_SCHEME",
            ),
            (
                lambda: served.stub.GetView(own, metadata=auth(other_game)),
                lambda: http.get_view(own, headers=bearer(other_game)),
                "PERMISSION_DENIED",
                "TOKEN_FOR_OTHER_GAME",
            ),
        ]
        for native_call, http_call, code, reason in cases:
            assert_same(grpc_failure(native_call), http_failure(http_call), code, reason)
        # A stream refused before its first message: the same status (here, no such game).
        events = service_pb2.StreamEventsRequest(game_id="no-such-game")
        native = grpc_failure(
            lambda: list(served.stub.StreamEvents(events, metadata=auth(stranger)))
        )
        over_http = http_failure(lambda: list(http.stream_events(events, headers=bearer(stranger))))
        assert_same(native, over_http, "NOT_FOUND", "GAME_NOT_FOUND")
        # The missing field is named in a BadRequest (the same as gRPC's, compared above).
        missing = http_failure(lambda: http.submit_command(no_command_id, headers=bearer(seat0)))
    fields = [
        v.field
        for d in missing.parsed()
        if isinstance(d, error_details_pb2.BadRequest)
        for v in d.field_violations
    ]
    assert fields == ["command_id"]


#: The details a Connect JSON error holds, by their type's name.
DETAIL_TYPES: dict[str, type[Message]] = {
    "google.rpc.ErrorInfo": error_details_pb2.ErrorInfo,
    "google.rpc.BadRequest": error_details_pb2.BadRequest,
    "google.rpc.RetryInfo": error_details_pb2.RetryInfo,
}


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers.items()), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers.items()), error.read()


@pytest.mark.parametrize("content_type", ["application/grpc", "application/grpc+proto"])
@pytest.mark.parametrize("method", ["GetReplay", "VerifyReplay", "NoSuchMethod"])
def test_native_grpc_over_http1_is_told_to_use_http2(
    served: Served, content_type: str, method: str
) -> None:
    """gRPC's status travels in trailers, which HTTP/1.1 does not carry here: such a call (a
    proxy that downgraded it, a curl by hand) is told what to use instead, 505, rather than
    reaching the runtime, which answered it with its internal error in grpc-message (a 200) and
    logged its traceback for each such request. Over HTTP/2 the same calls are served (the
    gRPC clients of the tests above)."""
    status, headers, body = _post(
        f"{served.url}/croupier.v1.GameService/{method}",
        b"\0\0\0\0\0",
        {"content-type": content_type},
    )
    assert status == 505, (status, headers, body)
    assert "grpc-message" not in headers
    assert body.decode() == GRPC_NEEDS_HTTP2 and "HTTP/2" in body.decode()


def test_commit_seed_and_a_ticket_game_over_json(served: Served) -> None:
    """CommitSeed in Connect's JSON (its int64 expiry a string, as JSON writes int64), then
    CreateGame with ``seedTicket``: the game's commitment is the ticket's; without the studio's
    credential, 401 unauthenticated."""
    url = f"{served.url}/croupier.v1.GameService"
    headers = {"content-type": "application/json", **bearer(studio_token())}
    status, _, body = _post(f"{url}/CommitSeed", b"{}", headers)
    assert status == 200, body
    committed = json.loads(body)
    assert set(committed) == {"ticket", "commitment", "expiresAtMs"}
    assert int(committed["expiresAtMs"]) > time.time() * 1000
    asked = {"kind": "GAME_KIND_GIN", "seats": 2, "seedTicket": committed["ticket"]}
    asked["clientSeeds"] = ["chosen after"]
    status, _, body = _post(f"{url}/CreateGame", json.dumps(asked).encode(), headers)
    assert status == 200, body
    assert json.loads(body)["commitment"] == committed["commitment"]
    status, _, body = _post(f"{url}/CreateGame", json.dumps(asked).encode(), headers)
    assert (status, json.loads(body)["code"]) == (400, "failed_precondition")
    status, _, body = _post(f"{url}/CommitSeed", b"{}", {"content-type": "application/json"})
    assert (status, json.loads(body)["code"]) == (401, "unauthenticated")


def test_malformed_requests_are_invalid_argument_malformed_request_on_both(served: Served) -> None:
    garbage = b"\xff\xff\xff"
    raw = served.channel.unary_unary(
        "/croupier.v1.GameService/GetView",
        request_serializer=lambda b: b,
        response_deserializer=service_pb2.GetViewResponse.FromString,
    )
    native = grpc_failure(lambda: raw(garbage))
    # A Connect client cannot send garbage: post it as Connect's unary binary request.
    status, _, body = _post(
        f"{served.url}/croupier.v1.GameService/GetView",
        garbage,
        {"content-type": "application/proto", "connect-protocol-version": "1"},
    )
    answer = json.loads(body)
    assert status == 400 and answer["code"] == "invalid_argument"
    details = tuple(
        (d["type"], base64.b64decode(d["value"] + "=" * (-len(d["value"]) % 4)))
        for d in answer["details"]
    )
    over_http = Failure("INVALID_ARGUMENT", native.message, details)
    assert native.code == "INVALID_ARGUMENT" and native.reason() == "MALFORMED_REQUEST"
    assert over_http.reason() == "MALFORMED_REQUEST"
    # JSON that is not the message: the same reason.
    status, _, body = _post(
        f"{served.url}/croupier.v1.GameService/GetView",
        b'{"game_id": 5}',
        {"content-type": "application/json"},
    )
    assert status == 400 and json.loads(body)["code"] == "invalid_argument"
    info = error_details_pb2.ErrorInfo()
    any_detail = any_pb2.Any(
        type_url="type.googleapis.com/google.rpc.ErrorInfo",
        value=base64.b64decode(json.loads(body)["details"][0]["value"] + "=="),
    )
    any_detail.Unpack(info)
    assert info.reason == "MALFORMED_REQUEST"


def test_a_json_error_shows_each_detail_as_json_too(served: Served) -> None:
    """docs/errors.md: a Connect JSON error's details carry, beside the base64 protobuf, the same
    message as JSON in ``debug``, so that a client reading JSON alone can branch on the reason
    and read its metadata. Here a stale version (ErrorInfo with metadata) and a missing field
    (ErrorInfo and BadRequest)."""
    game = served.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=auth(studio_token())
    )
    url = f"{served.url}/croupier.v1.GameService/SubmitCommand"
    headers = {"content-type": "application/json", **bearer(game.tokens[0].token)}
    stale = {
        "gameId": game.game_id,
        "commandId": "stale",
        "expectedVersion": game.version + 5,
        "command": {"gin": {"drawStock": {}}},
    }
    answers = [
        _post(url, json.dumps(body).encode(), headers)
        for body in (stale, {**stale, "commandId": ""})
    ]
    shown = {}
    for status, _, body in answers:
        answer = json.loads(body)
        assert status in (400, 409), body
        for detail in answer["details"]:
            message = DETAIL_TYPES[detail["type"]]()
            padded = detail["value"] + "=" * (-len(detail["value"]) % 4)
            message.ParseFromString(base64.b64decode(padded))
            assert detail["debug"] == json_format.MessageToDict(message), detail
        shown[_reason_of(answer)] = [d["debug"] for d in answer["details"]]
    [conflict] = shown["VERSION_CONFLICT"]
    assert conflict["metadata"]["current_version"] == str(game.version)
    assert shown["MISSING_FIELD"][1]["fieldViolations"][0]["field"] == "command_id"


def test_every_detail_type_reads_as_json_as_google_protobuf_writes_it() -> None:
    """What ``debug`` shows is each detail as google.protobuf's JSON shows it: the retry delay
    of RATE_LIMITED and STORE_UNAVAILABLE (a Duration) as well as the metadata map."""
    details = [
        error_details_pb2.ErrorInfo(
            reason="RATE_LIMITED", domain="croupier.v1", metadata={"retry_after_ms": "250"}
        ),
        error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=1, nanos=5 * 10**8)),
        error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field="a", description="b")
            ]
        ),
    ]
    status = status_pb2.Status(code=8, message="slow down")
    for detail in details:
        status.details.add().Pack(detail)
    error = connect_error(status)
    assert [message_to_json_value(d.value()) for d in error.details] == [
        json_format.MessageToDict(d) for d in details
    ]
    assert [d.message_bytes for d in error.details] == [d.value for d in status.details]


def test_fields_the_request_does_not_have_are_ignored_in_json_as_in_binary(served: Served) -> None:
    """docs/errors.md: a newer client's field reaches an older server as an unknown field, not as
    an error, over JSON as over binary protobuf."""
    status, _, body = _post(
        f"{served.url}/croupier.v1.GameService/ListPresets",
        b'{"kind": "GAME_KIND_GIN", "addedLater": {"by": "a newer contract"}}',
        {"content-type": "application/json"},
    )
    assert status == 200, body
    over_json = json_format.Parse(body, service_pb2.ListPresetsResponse())
    assert over_json == served.stub.ListPresets(service_pb2.ListPresetsRequest(kind=GIN))


def _reason_of(answer: dict[str, Any]) -> str:
    """The ErrorInfo reason of a Connect JSON error (its details' base64, unpadded)."""
    [info] = [d for d in answer["details"] if d["type"] == "google.rpc.ErrorInfo"]
    padded = info["value"] + "=" * (-len(info["value"]) % 4)
    return str(error_details_pb2.ErrorInfo.FromString(base64.b64decode(padded)).reason)


def test_a_rule_option_the_server_does_not_know_is_refused_not_dropped(served: Served) -> None:
    """docs/errors.md UNKNOWN_OPTION: a misspelt option in CreateGame's JSON overrides would
    otherwise be dropped and the game played by other rules (here its stakes); so too an option
    a newer contract's client sends in binary. Nothing is created; the right spelling is."""
    headers = {"content-type": "application/json", **bearer(studio_token())}
    url = f"{served.url}/croupier.v1.GameService/CreateGame"
    misspelt = b'{"kind": "GAME_KIND_GIN", "seats": 2, "overrides": {"gin": {"stakePerPont": 100}}}'
    status, _, body = _post(url, misspelt, headers)
    assert status == 400, body
    answer = json.loads(body)
    assert answer["code"] == "invalid_argument" and "stakePerPont" in answer["message"]
    assert _reason_of(answer) == "UNKNOWN_OPTION"
    status, _, body = _post(url, misspelt.replace(b"stakePerPont", b"stakePerPoint"), headers)
    assert status == 200 and json.loads(body)["rules"]["gin"]["stakePerPoint"] == 100
    # A misspelt or unknown field of the request itself: its rules would be the preset's.
    for wrong in (b'"rules"', b'"Overrides"'):
        status, _, body = _post(url, misspelt.replace(b'"overrides"', wrong), headers)
        assert status == 400 and "UNKNOWN_FIELD" in _reason_of(json.loads(body)), body
    newer_request = service_pb2.CreateGameRequest(kind=GIN, seats=2)
    newer_request.MergeFromString(b"\xf8\x07\x01")  # field 127: a newer contract's
    failure = grpc_failure(
        lambda: served.stub.CreateGame(newer_request, metadata=auth(studio_token()))
    )
    assert (failure.code, failure.reason()) == ("INVALID_ARGUMENT", "UNKNOWN_FIELD")
    # In binary, an option of a newer contract: a field number this one does not have.
    newer = service_pb2.CreateGameRequest(kind=GIN, seats=2)
    newer.overrides.gin.MergeFromString(b"\xf8\x07\x01")  # field 127, varint 1
    failure = grpc_failure(lambda: served.stub.CreateGame(newer, metadata=auth(studio_token())))
    assert (failure.code, failure.reason()) == ("INVALID_ARGUMENT", "UNKNOWN_OPTION")


def test_a_replay_format_the_server_does_not_know_is_refused_not_dropped(served: Served) -> None:
    """docs/errors.md UNKNOWN_REPLAY_FORMAT: a format of a newer contract, by its JSON name or by
    a number, is refused rather than answered in binary, as in binary protobuf; the names this
    contract has are taken, and a field it lacks is still ignored."""
    game = served.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=GIN, seats=2, preset="single-hand"),
        metadata=auth(studio_token()),
    )
    finish_game(served.channel, game.game_id, [t.token for t in game.tokens], random.Random(3))
    url = f"{served.url}/croupier.v1.GameService/ExportReplay"
    headers = {"content-type": "application/json"}
    for unknown in (b'"REPLAY_FORMAT_CBOR"', b"3", b"-1"):
        body = b'{"gameId": "%s", "format": %s}' % (game.game_id.encode(), unknown)
        status, _, answer = _post(url, body, headers)
        assert status == 400, answer
        assert _reason_of(json.loads(answer)) == "UNKNOWN_REPLAY_FORMAT", answer
    body = b'{"gameId": "%s", "format": "REPLAY_FORMAT_JSON", "addedLater": 1}' % (
        game.game_id.encode()
    )
    status, _, answer = _post(url, body, headers)
    assert status == 200, answer
    exported = json_format.Parse(answer, service_pb2.ExportReplayResponse()).replay
    assert exported.startswith(b"{")
    failure = grpc_failure(
        lambda: served.stub.ExportReplay(
            service_pb2.ExportReplayRequest(game_id=game.game_id, format=3)
        )
    )
    assert (failure.code, failure.reason()) == ("INVALID_ARGUMENT", "UNKNOWN_REPLAY_FORMAT")
    # JSON that is no object reads as an empty request, as on every other call: the service's
    # own refusal, with its reason, not the runtime's words for a Python error.
    for empty in (b"[]", b'"x"'):
        status, _, answer = _post(url, empty, headers)
        assert status == 400, answer
        assert _reason_of(json.loads(answer)) == "MISSING_FIELD", answer


def test_one_rate_limit_for_both_transports(tmp_path: Path) -> None:
    """A seat's allowance is one, whichever way its commands come."""
    with _serve(tmp_path, rate_limit=RateLimit(0.01, 2)) as served:
        game = served.stub.CreateGame(
            service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=auth(studio_token())
        )
        me = game.tokens[0].token
        # Each of these takes from the allowance, then fails its check (no command id).
        empty = service_pb2.SubmitCommandRequest(game_id=game.game_id)
        with client(served, "connect-json") as http:
            assert (
                grpc_failure(lambda: served.stub.SubmitCommand(empty, metadata=auth(me))).reason()
                == "MISSING_FIELD"
            )
            assert (
                http_failure(lambda: http.submit_command(empty, headers=bearer(me))).reason()
                == "MISSING_FIELD"
            )
            over_http = http_failure(lambda: http.submit_command(empty, headers=bearer(me)))
        native = grpc_failure(lambda: served.stub.SubmitCommand(empty, metadata=auth(me)))
        assert (over_http.code, over_http.reason()) == ("RESOURCE_EXHAUSTED", "RATE_LIMITED")
        assert (native.code, native.reason()) == ("RESOURCE_EXHAUSTED", "RATE_LIMITED")
        assert [type(d).__name__ for d in over_http.parsed()] == ["ErrorInfo", "RetryInfo"]


# --- CORS -------------------------------------------------------------------------------------


def _preflight(url: str, origin: str) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(
        f"{url}/croupier.v1.GameService/CreateGame",
        method="OPTIONS",
        headers={
            "origin": origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": (
                "authorization,content-type,connect-protocol-version,traceparent"
            ),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, {k.lower(): v for k, v in answer.headers.items()}
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}


def test_cors_preflight_and_calls_from_an_allowed_origin(served: Served) -> None:
    status, headers = _preflight(served.url, ORIGIN)
    assert status == 200
    assert headers["access-control-allow-origin"] == ORIGIN
    allowed = {h.strip().lower() for h in headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type", "connect-protocol-version", "traceparent"} <= allowed
    assert "POST" in headers["access-control-allow-methods"]
    # The call itself: the browser may read the answer and the gRPC-Web status headers.
    status, headers, _ = _post(
        f"{served.url}/croupier.v1.GameService/ListPresets",
        b'{"kind": "GAME_KIND_GIN"}',
        {"content-type": "application/json", "origin": ORIGIN},
    )
    lowered = {k.lower(): v for k, v in headers.items()}
    assert status == 200 and lowered["access-control-allow-origin"] == ORIGIN
    exposed = {h.strip() for h in lowered["access-control-expose-headers"].lower().split(",")}
    assert {"grpc-status-details-bin", "date"} <= exposed  # Date: the server's clock
    # Another origin is not allowed.
    status, headers = _preflight(served.url, "http://elsewhere.example")
    assert status == 400 and "access-control-allow-origin" not in headers


def test_without_cors_origins_no_origin_is_allowed(tmp_path: Path) -> None:
    with _serve(tmp_path) as served:
        status, headers = _preflight(served.url, ORIGIN)
        assert "access-control-allow-origin" not in headers, (status, headers)


# --- GET / and mounts -------------------------------------------------------------------------


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


JSON = {"content-type": "application/json"}


def _compact(body: bytes) -> bytes:
    return json.dumps(json.loads(body), separators=(",", ":")).encode()


def test_json_answers_and_streamed_messages_are_compact(served: Served) -> None:
    """A JSON answer, and each message of a JSON stream, is written on one line without spaces:
    indented (the runtime's default), a phone received every view and move's answer at about
    twice its size."""
    game = served.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=auth(studio_token())
    )
    seat = game.tokens[0].token
    base = f"{served.url}/croupier.v1.GameService"
    asked = json.dumps({"gameId": game.game_id}).encode()
    status, _, view = _post(f"{base}/GetView", asked, {**JSON, **bearer(seat)})
    assert status == 200 and view == _compact(view)
    indented = json_format.MessageToJson(
        json_format.Parse(view, service_pb2.GetViewResponse())
    ).encode()
    assert len(view) < 0.6 * len(indented)
    status, _, presets = _post(f"{base}/ListPresets", b'{"kind": 3}', JSON)
    assert status == 200 and presets == _compact(presets) and json.loads(presets)["presets"]
    # The stream's first frames: the game's two events (its deal) and the seat's state.
    framed = json.dumps({"gameId": game.game_id, "include": {"toAct": True}}).encode()
    request = urllib.request.Request(
        f"{base}/StreamEvents",
        data=b"\0" + len(framed).to_bytes(4, "big") + framed,
        headers={"content-type": "application/connect+json", **bearer(seat)},
        method="POST",
    )
    messages = []
    with urllib.request.urlopen(request, timeout=30) as answer:
        while len(messages) < 3:  # two events and the state after them
            flags, size = answer.read(1)[0], int.from_bytes(answer.read(4), "big")
            assert flags == 0
            messages.append(answer.read(size))
    assert [sorted(json.loads(m)) for m in messages] == [["event"], ["event"], ["state"]]
    assert all(m == _compact(m) for m in messages)


@given(
    method=st.sampled_from(METHOD_NAMES),
    upper=st.lists(st.booleans(), min_size=1, max_size=len(max(METHOD_NAMES, key=len))),
)
def test_an_unknown_method_spelt_in_another_case_names_the_method_meant(
    method: str, upper: list[bool]
) -> None:
    spelt = "".join(c.upper() if upper[i % len(upper)] else c.lower() for i, c in enumerate(method))
    assume(spelt != method)
    said = unknown_method_message(spelt)
    assert f"no method '{spelt}'" in said and f"did you mean '{method}'?" in said


def test_an_unknown_method_is_404_unimplemented_with_a_body_naming_the_method_meant(
    served: Served,
) -> None:
    """A JSON client that spells a method as its fields are spelt (``submitCommand``), or not at
    all, is told so: a bare 404 read as a wrong address."""
    base = f"{served.url}/croupier.v1.GameService"
    status, _, body = _post(f"{base}/submitCommand", b"{}", JSON)
    assert status == 404
    error = json.loads(body)
    assert error["code"] == "unimplemented"
    assert "did you mean 'SubmitCommand'?" in error["message"]
    status, _, body = _post(f"{base}/Deal", b"{}", JSON)
    assert status == 404 and "CreateGame, SubmitCommand" in json.loads(body)["message"]
    # A known method is still served, and a stream's unknown method answered the same.
    with GameServiceClientSync(served.url, timeout_ms=TIMEOUT_MS) as http:
        presets = http.list_presets(service_pb2.ListPresetsRequest(kind=GIN))
    assert presets.presets
    framed = b"\0\0\0\0\0"
    status, _, body = _post(
        f"{base}/streamEvents", framed, {"content-type": "application/connect+json"}
    )
    assert status == 404 and json.loads(body)["code"] == "unimplemented"


def test_get_root_says_how_to_call_and_other_paths_are_404_with_a_hint(served: Served) -> None:
    status, page = _get(f"{served.url}/")
    assert status == 200 and "/croupier.v1.GameService/ListPresets" in page
    status, text = _get(f"{served.url}/nothing-here")
    assert status == 404 and "/croupier.v1.GameService/<Method>" in text


def test_a_static_site_at_root_and_another_app_mounted(served: Served, tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<p>the web client</p>")
    (tmp_path / "app.js").write_text("console.log('hi')")
    metrics = PlainTextResponse("croupier_up 1\n")
    app = create_http_app(
        served.thread.core, mounts={"/metrics": metrics}, root=static_site(tmp_path)
    )
    listener = HttpListener(app, "127.0.0.1:0", grace_s=0.1)
    port = served.thread.call(listener.start())
    try:
        base = f"http://127.0.0.1:{port}"
        assert _get(f"{base}/") == (200, "<p>the web client</p>")
        assert _get(f"{base}/app.js") == (200, "console.log('hi')")
        assert _get(f"{base}/metrics") == (200, "croupier_up 1\n")
        assert _get(f"{base}/missing.js")[0] == 404
        with GameServiceClientSync(base, timeout_ms=TIMEOUT_MS) as http:
            presets = http.list_presets(service_pb2.ListPresetsRequest(kind=GIN))
        assert presets.presets
    finally:
        served.thread.call(listener.stop())


# --- Play over HTTP/2 (not for browsers) ------------------------------------------------------


def test_play_over_connect_on_http2(served: Served) -> None:
    """A non-browser Connect client holds the bidirectional Play stream over HTTP/2 without TLS:
    it joins, gets the seat's state, moves, and gets the move accepted."""
    game = served.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=auth(studio_token())
    )
    seat = (
        served.stub.GetView(
            service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
        )
        .to_act[0]
        .seat
    )

    async def play() -> list[service_pb2.PlayResponse]:
        outgoing: asyncio.Queue[service_pb2.PlayRequest | None] = asyncio.Queue()

        async def requests() -> AsyncIterator[service_pb2.PlayRequest]:
            while (request := await outgoing.get()) is not None:
                yield request

        await outgoing.put(
            service_pb2.PlayRequest(
                join=service_pb2.PlayJoin(
                    game_id=game.game_id,
                    include=service_pb2.Include(legal_moves=True, to_act=True),
                )
            )
        )
        seen: list[service_pb2.PlayResponse] = []
        moved = False
        async with (
            HTTPTransport(http_version=HTTPVersion.HTTP2) as transport,
            GameServiceClient(
                served.url, http_client=Client(transport), timeout_ms=TIMEOUT_MS
            ) as http,
        ):
            async for answer in http.play(requests(), headers=bearer(game.tokens[seat].token)):
                seen.append(answer)
                if answer.HasField("state") and answer.state.legal_moves and not moved:
                    moved = True
                    move = answer.state.legal_moves[0].command
                    await outgoing.put(
                        service_pb2.PlayRequest(
                            command=service_pb2.PlayCommand(
                                command_id="first",
                                expected_version=answer.state.version,
                                command=move,
                            )
                        )
                    )
                if answer.HasField("accepted"):
                    await outgoing.put(None)
                    break
        return seen

    seen = asyncio.run(play())
    kinds = [answer.WhichOneof("kind") for answer in seen]
    assert kinds[-1] == "accepted" and seen[-1].accepted.command_id == "first"
    assert "state" in kinds and "event" in kinds
    assert seen[-1].accepted.version > game.version


def _silent_play_over_connect(served: Served, headers: dict[str, str]) -> tuple[str, str, float]:
    """A Connect Play stream over HTTP/2 that never sends a message (nor closes its side): the
    code and reason it ended with, and after how many seconds."""

    async def play() -> tuple[str, str, float]:
        never = asyncio.Event()

        async def requests() -> AsyncIterator[service_pb2.PlayRequest]:
            await never.wait()
            yield service_pb2.PlayRequest()  # pragma: no cover - never sent

        started = time.monotonic()
        async with (
            HTTPTransport(http_version=HTTPVersion.HTTP2) as transport,
            GameServiceClient(served.url, http_client=Client(transport), timeout_ms=10_000) as http,
        ):
            with pytest.raises(ConnectError) as failed:
                async for _ in http.play(requests(), headers=headers):
                    pass
        error = failed.value
        details = [d.message_bytes for d in error.details if d.type_name.endswith("ErrorInfo")]
        assert len(details) == 1, f"the service's answer, with its ErrorInfo: {error}"
        reason = error_details_pb2.ErrorInfo.FromString(details[0]).reason
        return grpc_name(error.code), reason, time.monotonic() - started

    return asyncio.run(play())


def test_play_over_connect_without_a_token_is_refused_at_once_and_a_late_join_times_out(
    served: Served,
) -> None:
    """Play over Connect as over gRPC: a call without a seat token is refused UNAUTHENTICATED
    MISSING_TOKEN at once, before any join; a seat's stream whose join does not come in time
    ends INVALID_ARGUMENT JOIN_TIMEOUT."""
    core = served.thread.core
    before = core.join_timeout_s
    try:
        core.join_timeout_s = 60.0
        code, reason, took_s = _silent_play_over_connect(served, {})
        assert (code, reason) == ("UNAUTHENTICATED", "MISSING_TOKEN") and took_s < 5
        # A gRPC client on the HTTP port, the same.
        with grpc.insecure_channel(served.url.removeprefix("http://")) as channel:
            outgoing: queue.Queue[service_pb2.PlayRequest | None] = queue.Queue()
            call = service_pb2_grpc.GameServiceStub(channel).Play(
                iter(outgoing.get, None), timeout=10
            )
            try:
                failure = grpc_failure(lambda: next(call))
            finally:
                outgoing.put(None)
            assert (failure.code, failure.reason()) == ("UNAUTHENTICATED", "MISSING_TOKEN")
        game = served.stub.CreateGame(
            service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=auth(studio_token())
        )
        core.join_timeout_s = 0.5
        code, reason, took_s = _silent_play_over_connect(served, bearer(game.tokens[0].token))
        assert (code, reason) == ("INVALID_ARGUMENT", "JOIN_TIMEOUT") and 0.5 <= took_s < 5
    finally:
        core.join_timeout_s = before


def test_every_connect_code_is_logged_by_its_grpc_name() -> None:
    """An HTTP call's outcome is spelled as on the gRPC port (CANCELLED, not CANCELED), so one
    log filter or metric label finds both."""
    for code in grpc.StatusCode:
        if code != grpc.StatusCode.OK:
            assert grpc_name(CONNECT_CODES[code.value[0]]) == code.name


def _handled(method: str, code: str) -> float:
    return (
        REGISTRY.get_sample_value(
            "grpc_server_handled_total",
            {
                "grpc_service": "croupier.v1.GameService",
                "grpc_method": method,
                "grpc_type": "bidi_stream",
                "grpc_code": code,
            },
        )
        or 0.0
    )


def test_a_play_stream_its_client_cancels_over_http2_is_counted_cancelled(served: Served) -> None:
    """A gRPC client's Play stream on the HTTP port (HTTP/2), cancelled by the client once
    joined: counted (and logged) CANCELLED, as on the gRPC port, never Connect's CANCELED."""
    game = served.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=auth(studio_token())
    )
    before = _handled("Play", "CANCELLED")
    with grpc.insecure_channel(served.url.removeprefix("http://")) as channel:
        outgoing: queue.Queue[service_pb2.PlayRequest | None] = queue.Queue()
        outgoing.put(service_pb2.PlayRequest(join=service_pb2.PlayJoin(game_id=game.game_id)))
        call = service_pb2_grpc.GameServiceStub(channel).Play(
            iter(outgoing.get, None), metadata=auth(game.tokens[0].token)
        )
        assert next(call).WhichOneof("kind") in ("event", "state")
        call.cancel()
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while _handled("Play", "CANCELLED") == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _handled("Play", "CANCELLED") == before + 1
    assert _handled("Play", "CANCELED") == 0


def test_http_address_and_origins_settings() -> None:
    assert is_off("off") and is_off("") and is_off(" OFF ") and is_off(None)
    assert not is_off("127.0.0.1:8080")
    assert parse_origins("") == ()
    assert parse_origins("http://a.example/, https://b.example") == (
        "http://a.example",
        "https://b.example",
    )


@pytest.mark.parametrize("kind", list(CLIENTS))
def test_a_bug_is_internal_with_an_error_id_on_both(
    served: Served, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(kind: int) -> list[service_pb2.Preset]:
        raise RuntimeError("a bug")

    monkeypatch.setattr(served.thread.core, "presets", broken)
    request = service_pb2.ListPresetsRequest(kind=GIN)
    native = grpc_failure(lambda: served.stub.ListPresets(request))
    with client(served, kind) as http:
        over_http = http_failure(lambda: http.list_presets(request))
    for failure in (native, over_http):
        assert (failure.code, failure.reason()) == ("INTERNAL", "INTERNAL_ERROR")
        (info,) = failure.parsed()
        error_id = info.metadata["error_id"]  # type: ignore[attr-defined]
        assert failure.message.startswith(f"internal error {error_id}")
        assert "a bug" not in failure.message
