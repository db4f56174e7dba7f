"""The HTTP listener: Connect (JSON and binary), gRPC-Web and plain JSON over HTTP, for browsers
and ``curl``, served by the service itself beside its gRPC port (no proxy).

The same application core and the same handlers (:class:`croupier.service.grpc_api.GameServicer`)
as gRPC, behind the Connect project's Python runtime (``connectrpc``, which speaks Connect, gRPC
and gRPC-Web) with the service and client generated from ``proto/`` (``service_connect.py``,
``make gen``). Around every call, :class:`ConnectCalls` does what the gRPC interceptor does, through
the one :class:`croupier.service.calls.Call`: the ``authorization: Bearer <token>`` header, the
core's caller resolution and rate limits, the same status codes, messages and ``google.rpc``
details (Connect's JSON ``details``, gRPC-Web's ``grpc-status-details-bin``), one log line.

:func:`create_http_app` composes the ASGI application (starlette routes): the service at
``/croupier.v1.GameService/``, any extra mounts (``/metrics``…), and at ``/`` a short page saying
how to call it, or a static directory (:func:`static_site`, for a web client). CORS is off unless
origins are given (``--cors-origins``). :class:`HttpListener` serves it with hypercorn on the event
loop of the gRPC server, in the same process.

Bidirectional streaming (``Play``) needs HTTP/2, which browsers only speak over TLS and then not
with streaming request bodies: browsers use ``SubmitCommand`` with ``include`` and
``StreamEvents`` instead. Over HTTP/2 without TLS (prior knowledge), non-browser Connect or gRPC
clients can hold a ``Play`` stream here too (hypercorn's HTTP/2 protocol mended for it:
service/http2.py).
"""

from __future__ import annotations

import asyncio
import difflib
import errno
import json
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
import structlog
from connectrpc.code import Code
from connectrpc.codec import Codec
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.request import RequestContext
from google.protobuf import any_pb2, descriptor_pb2, json_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.json_format import ParseError
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2
from hypercorn.asyncio.run import worker_serve
from hypercorn.config import Config, Sockets
from hypercorn.utils import wrap_app
from protobuf import Registry
from protobuf._codegen import file_desc
from protobuf.wkt import Any as AnyDetail
from protobuf.wkt.google.protobuf import duration_pb
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

from croupier.app import limits
from croupier.app.core import Croupier
from croupier.app.errors import AppError, TooManyUploads, invalid
from croupier.app.throttle import Throttle
from croupier.service import http2, http_limits
from croupier.service.calls import Call
from croupier.service.config import DEFAULT_HTTP_PER_ADDRESS, port_of
from croupier.service.grpc_api import GameServicer
from croupier.service.http_limits import (
    BODY_MIN_BYTES,
    BODY_TIMEOUT_S,
    REFUSED_LOG_EVERY_S,
    BodyTimeout,
    CappedSocket,
    connection_cap,
)
from croupier.service.metrics import BIDI_STREAM, SERVER_STREAM, UNARY, metrics
from croupier.service.server import SERVICE_NAME, PortInUse
from croupier.service.status import status_of
from croupier.service.tls import ServerTLS
from croupier.v1 import service_pb2 as pb
from croupier.v1.service_connect import GameService, GameServiceASGIApplication

SERVICE_PATH = "/croupier.v1.GameService"
#: The paths of the calls whose request is a stream (``Play``): their body may be silent for as
#: long as the client has nothing to send (http_limits.BodyTimeout leaves them be).
STREAMING_REQUEST_PATHS = frozenset(
    f"{SERVICE_PATH}/{method.name}"
    for method in pb.DESCRIPTOR.services_by_name["GameService"].methods
    if method.client_streaming
)
#: The largest request a call takes over HTTP (bytes, as sent and once decompressed), but for
#: ``LARGE_REQUEST_PATHS``': past it, ``RESOURCE_EXHAUSTED`` (the runtime's). A call's request is a
#: few hundred bytes (a command at most 16 KiB; JSON spells it out at a few times that); each
#: request coming holds up to this much memory, and an HTTP/2 connection carries 100 at once:
#: with the runtime's default, 4 MiB for every call, one connection held 400 MB.
MAX_REQUEST_BYTES = 64 * 1024
#: The calls whose request is a file (``VerifyReplay``: a replay of up to 3 MiB), and only
#: ``MAX_UPLOADS`` of them at once. They take what the largest file needs in JSON: its base64
#: (4 MiB) and the rest of the request (up to ``MAX_REQUEST_BYTES``, spaces and escapes
#: included). At 4 MiB, as gRPC's limit, a file the contract takes (3 MiB, or within 20 bytes
#: of it) was refused in JSON by the runtime, RESOURCE_EXHAUSTED, and never read.
LARGE_REQUEST_PATHS = frozenset({f"{SERVICE_PATH}/VerifyReplay"})
MAX_LARGE_REQUEST_BYTES = 4 * -(-limits.MAX_REPLAY_BYTES // 3) + MAX_REQUEST_BYTES
#: Large requests (``LARGE_REQUEST_PATHS``) received or answered at once per process: past it,
#: ``RESOURCE_EXHAUSTED`` ``TOO_MANY_UPLOADS`` before a byte of the body is read. A replay file
#: is verified two at a time anyway (``croupier.app.replaying.MAX_VERIFYING``), and without a
#: bound 100 bodies of 4 MiB a connection, sent at the slowest pace the listener takes, held the process's memory.
MAX_UPLOADS = 8
#: How long a client refused TOO_MANY_UPLOADS waits before sending again (its RetryInfo).
UPLOAD_RETRY_MS = 1000
#: On every answer of the service: a seat's view is its own (a hand, a token's games), kept by no
#: cache on the way, and an answer is read as the type it says.
API_HEADERS = {"cache-control": "no-store", "x-content-type-options": "nosniff"}
#: What a browser may send and read on a cross-origin call (the Connect and gRPC-Web headers, and
#: our credential), when CORS is on.
CORS_ALLOW_HEADERS = (
    "Authorization",
    "Content-Type",
    "Connect-Protocol-Version",
    "Connect-Timeout-Ms",
    "Connect-Accept-Encoding",
    "Connect-Content-Encoding",
    "Grpc-Timeout",
    "X-Grpc-Web",
    "X-User-Agent",
    # W3C trace context, which a page's OpenTelemetry instrumentation adds to every call (the
    # server continues its trace): without them its preflights failed.
    "Traceparent",
    "Tracestate",
)
# Date: a reading of the server's clock, which a page counts the turn clocks against (the
# deadlines are on the server's clock; clients/web/src/servertime.ts): not a header browsers let
# another origin's page read unless exposed.
CORS_EXPOSE_HEADERS = ("Grpc-Status", "Grpc-Message", "Grpc-Status-Details-Bin", "Date")
#: How long a browser may keep a preflight's answer (seconds).
CORS_MAX_AGE_S = 7200
#: The seconds a stopping listener gives open calls (streams) before it drops them.
DEFAULT_GRACE_S = 2.0
#: After the grace, hypercorn cancels the calls still open; a call that then waits to send to a
#: client that no longer reads has its connection cut this much later (service/http2.py), and
#: the listener stops waiting for its server this much later again.
RELEASE_AFTER_S = 1.0

log = structlog.get_logger("croupier.http")


# --- the service -------------------------------------------------------------------------------


class ConnectGameService(GameService):
    """The generated Connect service, answered by the gRPC handlers (they read nothing of the
    call but the request: who calls is :func:`croupier.service.calls.caller`'s)."""

    def __init__(self, handlers: GameServicer) -> None:
        self._h = handlers

    async def create_game(
        self,
        request: pb.CreateGameRequest,
        ctx: RequestContext[pb.CreateGameRequest, pb.CreateGameResponse],
        /,
    ) -> pb.CreateGameResponse:
        return await self._h.CreateGame(request, ctx)

    async def commit_seed(
        self,
        request: pb.CommitSeedRequest,
        ctx: RequestContext[pb.CommitSeedRequest, pb.CommitSeedResponse],
        /,
    ) -> pb.CommitSeedResponse:
        return await self._h.CommitSeed(request, ctx)

    async def submit_command(
        self,
        request: pb.SubmitCommandRequest,
        ctx: RequestContext[pb.SubmitCommandRequest, pb.SubmitCommandResponse],
        /,
    ) -> pb.SubmitCommandResponse:
        return await self._h.SubmitCommand(request, ctx)

    async def end_game(
        self,
        request: pb.EndGameRequest,
        ctx: RequestContext[pb.EndGameRequest, pb.EndGameResponse],
        /,
    ) -> pb.EndGameResponse:
        return await self._h.EndGame(request, ctx)

    async def validate_command(
        self,
        request: pb.ValidateCommandRequest,
        ctx: RequestContext[pb.ValidateCommandRequest, pb.ValidateCommandResponse],
        /,
    ) -> pb.ValidateCommandResponse:
        return await self._h.ValidateCommand(request, ctx)

    async def list_legal_moves(
        self,
        request: pb.ListLegalMovesRequest,
        ctx: RequestContext[pb.ListLegalMovesRequest, pb.ListLegalMovesResponse],
        /,
    ) -> pb.ListLegalMovesResponse:
        return await self._h.ListLegalMoves(request, ctx)

    async def get_view(
        self,
        request: pb.GetViewRequest,
        ctx: RequestContext[pb.GetViewRequest, pb.GetViewResponse],
        /,
    ) -> pb.GetViewResponse:
        return await self._h.GetView(request, ctx)

    def stream_events(
        self,
        request: pb.StreamEventsRequest,
        ctx: RequestContext[pb.StreamEventsRequest, pb.StreamEventsResponse],
        /,
    ) -> AsyncIterator[pb.StreamEventsResponse]:
        return self._h.StreamEvents(request, ctx)

    async def get_settlement(
        self,
        request: pb.GetSettlementRequest,
        ctx: RequestContext[pb.GetSettlementRequest, pb.GetSettlementResponse],
        /,
    ) -> pb.GetSettlementResponse:
        return await self._h.GetSettlement(request, ctx)

    async def get_replay(
        self,
        request: pb.GetReplayRequest,
        ctx: RequestContext[pb.GetReplayRequest, pb.GetReplayResponse],
        /,
    ) -> pb.GetReplayResponse:
        return await self._h.GetReplay(request, ctx)

    async def list_presets(
        self,
        request: pb.ListPresetsRequest,
        ctx: RequestContext[pb.ListPresetsRequest, pb.ListPresetsResponse],
        /,
    ) -> pb.ListPresetsResponse:
        return await self._h.ListPresets(request, ctx)

    async def export_replay(
        self,
        request: pb.ExportReplayRequest,
        ctx: RequestContext[pb.ExportReplayRequest, pb.ExportReplayResponse],
        /,
    ) -> pb.ExportReplayResponse:
        return await self._h.ExportReplay(request, ctx)

    async def verify_replay(
        self,
        request: pb.VerifyReplayRequest,
        ctx: RequestContext[pb.VerifyReplayRequest, pb.VerifyReplayResponse],
        /,
    ) -> pb.VerifyReplayResponse:
        return await self._h.VerifyReplay(request, ctx)

    async def list_recent_games(
        self,
        request: pb.ListRecentGamesRequest,
        ctx: RequestContext[pb.ListRecentGamesRequest, pb.ListRecentGamesResponse],
        /,
    ) -> pb.ListRecentGamesResponse:
        return await self._h.ListRecentGames(request, ctx)

    async def get_recent_game(
        self,
        request: pb.GetRecentGameRequest,
        ctx: RequestContext[pb.GetRecentGameRequest, pb.GetRecentGameResponse],
        /,
    ) -> pb.GetRecentGameResponse:
        return await self._h.GetRecentGame(request, ctx)

    def play(
        self,
        request: AsyncIterator[pb.PlayRequest],
        ctx: RequestContext[pb.PlayRequest, pb.PlayResponse],
        /,
    ) -> AsyncIterator[pb.PlayResponse]:
        return self._h.Play(request, ctx)


# --- errors and calls --------------------------------------------------------------------------

#: google.rpc codes (what a status carries) → Connect's codes (the same numbers and names, but
#: for Connect's spelling of CANCELED).
CONNECT_CODES: dict[int, Code] = {
    code.value[0]: Code[code.name.replace("CANCELLED", "CANCELED")]
    for code in grpc.StatusCode
    if code != grpc.StatusCode.OK
}


def grpc_name(code: Code) -> str:
    """A Connect code by its gRPC name (CANCELLED, not Connect's CANCELED): the calls' log lines
    and metrics name outcomes the same on every transport."""
    return "CANCELLED" if code == Code.CANCELED else code.name


def connect_error(status: status_pb2.Status) -> ConnectError:
    """A ``google.rpc.Status`` as the Connect error of the same code, message and details
    (Connect's JSON error ``details``; gRPC-Web's ``grpc-status-details-bin``)."""
    code = CONNECT_CODES.get(status.code, Code.INTERNAL if status.code else Code.UNKNOWN)
    return ConnectError(code, status.message, [_readable(d) for d in status.details])


def _readable(detail: any_pb2.Any) -> ErrorDetail:
    """A detail that Connect's JSON error also shows as JSON, in its ``debug`` field
    (``{"reason": "NOT_YOUR_TURN", "domain": …, "metadata": {…}}``), so that a client reading
    JSON needs no protobuf to branch on the reason. connectrpc writes ``debug`` only for a
    message of its own runtime (protobuf-py), and ours are google.protobuf's: the detail is
    read again as protobuf-py's message of the same type (the same bytes on the wire)."""
    packed = AnyDetail(type_url=detail.type_url, value=detail.value)
    desc = _DETAIL_TYPES.message(detail.type_url.removeprefix(TYPE_URL_PREFIX))
    return ErrorDetail(packed if desc is None else packed.unpack(desc) or packed)


def _detail_types() -> Registry:
    """google/rpc/error_details.proto's messages (``ErrorInfo``, ``BadRequest``,
    ``RetryInfo``…) for protobuf-py, from the descriptor google.protobuf holds: the entry that
    protobuf-py's generated modules build their types with, given the JSON names protoc would
    have written (protobuf-py names a field's JSON by them; the runtime's copy leaves them
    out)."""
    proto = descriptor_pb2.FileDescriptorProto()
    error_details_pb2.DESCRIPTOR.CopyToProto(proto)
    for message in proto.message_type:
        _name_json(message, error_details_pb2.DESCRIPTOR.message_types_by_name[message.name])
    return Registry(file_desc(proto.SerializeToString(), [duration_pb.desc()], {}))


def _name_json(proto: descriptor_pb2.DescriptorProto, desc: Descriptor) -> None:
    for field in proto.field:
        field.json_name = desc.fields_by_name[field.name].json_name
    for nested in proto.nested_type:
        _name_json(nested, desc.nested_types_by_name[nested.name])


TYPE_URL_PREFIX = "type.googleapis.com/"
_DETAIL_TYPES = _detail_types()


def _protocol(ctx: RequestContext[Any, Any]) -> str:
    """What the call came as, for its log line."""
    content_type = ctx.request_headers.get("content-type", "")
    if content_type.startswith("application/grpc-web"):
        return "grpc-web"
    if content_type.startswith("application/grpc"):
        return "grpc-http"
    return "connect"


class ConnectCalls:
    """The Connect interceptor of every call: :class:`Call` around it (auth, errors, the log)."""

    def __init__(self, core: Croupier) -> None:
        self._core = core
        self._metrics = metrics()  # counted with the gRPC calls, by the same labels

    def _call(self, ctx: RequestContext[Any, Any], kind: str) -> Call:
        return Call(
            self._core,
            ctx.method.name,
            metrics=self._metrics,
            service=SERVICE_NAME,
            kind=kind,
            transport=_protocol(ctx),
        )

    async def intercept_unary(
        self,
        call_next: Callable[[Any, RequestContext[Any, Any]], Awaitable[Any]],
        request: Any,
        ctx: RequestContext[Any, Any],
        /,
    ) -> Any:
        call = self._call(ctx, UNARY)
        try:
            call.begin(ctx.request_headers.allitems())
            response = await call_next(request, ctx)
        except AppError as error:
            raise connect_error(call.failed(error)) from None
        except ConnectError as error:  # the runtime's own (a client gone, a deadline)
            call.ended(grpc_name(error.code))
            raise
        except asyncio.CancelledError:  # the client went away: the call's line says so
            call.cancelled()
            raise
        except Exception as error:  # every bug becomes INTERNAL with an id
            raise connect_error(call.crashed(error)) from None
        call.ok()
        return response

    async def _stream(
        self,
        responses: Callable[[], AsyncIterator[Any]],
        ctx: RequestContext[Any, Any],
        kind: str,
    ) -> AsyncIterator[Any]:
        call = self._call(ctx, kind)
        try:
            call.begin(ctx.request_headers.allitems())
            async for response in responses():
                yield response
            call.ok()
        except AppError as error:
            raise connect_error(call.failed(error)) from None
        except ConnectError as error:
            call.ended(grpc_name(error.code))
            raise
        except Exception as error:  # every bug becomes INTERNAL with an id
            raise connect_error(call.crashed(error)) from None
        finally:
            # The client went away (a cancelled task, or the generator closed from outside): the
            # stream and its wait are dropped at once.
            if call.open:
                call.cancelled()

    def intercept_server_stream(
        self,
        call_next: Callable[[Any, RequestContext[Any, Any]], AsyncIterator[Any]],
        request: Any,
        ctx: RequestContext[Any, Any],
        /,
    ) -> AsyncIterator[Any]:
        return self._stream(lambda: call_next(request, ctx), ctx, SERVER_STREAM)

    def intercept_bidi_stream(
        self,
        call_next: Callable[[AsyncIterator[Any], RequestContext[Any, Any]], AsyncIterator[Any]],
        request: AsyncIterator[Any],
        ctx: RequestContext[Any, Any],
        /,
    ) -> AsyncIterator[Any]:
        return self._stream(lambda: call_next(request, ctx), ctx, BIDI_STREAM)


class Uploads:
    """The Connect metadata interceptor in front of the large requests' service
    (``LARGE_REQUEST_PATHS``): at most ``most`` of them at once, counted from before their body
    is read (the runtime runs a leading metadata interceptor first) to their answer; one more is
    refused ``RESOURCE_EXHAUSTED`` ``TOO_MANY_UPLOADS`` with a ``RetryInfo``, in its protocol's
    form (Connect, gRPC-Web, gRPC), with one warning a minute at most."""

    def __init__(self, most: int) -> None:
        self.most = most
        #: Large requests being received or answered.
        self.open = 0
        self._refusals = Throttle(REFUSED_LOG_EVERY_S)

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        if self.open >= self.most:
            if (said := self._refusals.due()) is not None:
                log.warning(
                    "http uploads refused: as many are coming as may",
                    method=ctx.method.name,
                    max_uploads=self.most,
                    refused=said.unsaid + 1,
                    since_s=None if said.since_s is None else round(said.since_s),
                )
            raise connect_error(status_of(TooManyUploads(self.most, UPLOAD_RETRY_MS)))
        self.open += 1

    async def on_end(
        self, token: None, ctx: RequestContext[Any, Any], error: Exception | None, /
    ) -> None:
        self.open -= 1


def with_headers(app: ASGIApp, headers: Mapping[str, str]) -> ASGIApp:
    """``app`` with ``headers`` set on each of its answers."""

    async def marked(scope: Scope, receive: Receive, send: Send) -> None:
        async def send_marked(message: ASGIMessage) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).update(headers)
            await send(message)

        await app(scope, receive, send_marked)

    return marked


class _AsApp:
    """``app``, seen by Starlette's ``Route`` as an ASGI app, not as a request handler (it takes a
    plain function for one, such as prometheus-client's app)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)


class _Malformed:
    """A google.protobuf codec whose undecodable request is INVALID_ARGUMENT ``MALFORMED_REQUEST``,
    as on gRPC (the runtime's own answer has no details)."""

    def __init__(self, codec: Codec[Message, Any], options_checked: bool = False) -> None:
        self._codec = codec
        # The JSON codec's: CreateGame's overrides are checked for misspelt options, and
        # ExportReplay's format for a name this contract does not have.
        self._options_checked = options_checked

    def name(self) -> str:
        return self._codec.name()

    def encode(self, message: Message) -> bytes:
        return self._codec.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        try:
            decoded = self._codec.decode(data, message_class)
        except (DecodeError, ParseError, ValueError, TypeError) as error:
            malformed = invalid(
                "MALFORMED_REQUEST", f"the request is not its message type: {error}", ""
            )
            raise connect_error(status_of(malformed)) from None
        if self._options_checked and message_class is pb.CreateGameRequest:
            _known_options(data)
        if self._options_checked and message_class is pb.ExportReplayRequest:
            _known_format(data)
        return decoded


def _known_format(data: bytes | bytearray) -> None:
    """ExportReplay's ``format`` in JSON names a format of this contract: the JSON codec drops a
    name it does not know (a newer contract's format) as it drops an unknown field, and the file
    would come back in binary, not in the form asked for. A number is kept, and the handler refuses
    one this contract does not have, as in binary (``UNKNOWN_REPLAY_FORMAT``, docs/errors.md)."""
    parsed = json.loads(bytes(data))
    # Not an object: protobuf's parser reads ``[]`` or ``"x"`` as an empty request, and so does
    # every other call (an AttributeError here answered it with Python's words, no ErrorInfo).
    asked = parsed.get("format") if isinstance(parsed, dict) else None
    if isinstance(asked, str) and asked not in pb.ReplayFormat.DESCRIPTOR.values_by_name:
        unknown = invalid(
            "UNKNOWN_REPLAY_FORMAT",
            f"format {asked[:64]!r} is not a replay format of this server's contract "
            "(REPLAY_FORMAT_BINARY or REPLAY_FORMAT_JSON; unset: binary)",
            "format",
        )
        raise connect_error(status_of(unknown))


def _known_options(data: bytes | bytearray) -> None:
    """CreateGame in JSON holds only fields and rule options this contract has: a misspelt one,
    which the JSON codec drops like any unknown field, would play the game by other rules than
    the studio asked for, stakes included (``"stakePerPont"``; ``"rules"`` for ``overrides``), so
    it is refused: ``UNKNOWN_OPTION`` among the overrides, ``UNKNOWN_FIELD`` elsewhere, as the
    gRPC handler and the core refuse them in binary. Other calls ignore an unknown field
    (docs/errors.md)."""
    try:
        json_format.Parse(bytes(data), pb.CreateGameRequest(), ignore_unknown_fields=False)
    except ParseError as error:
        said = (
            f"{str(error).splitlines()[0]} (not in this contract: a misspelling, or a newer one's)"
        )
        if '"CreateGameRequest.overrides' in said:
            unknown = invalid("UNKNOWN_OPTION", said, "overrides")
        else:
            unknown = invalid("UNKNOWN_FIELD", said, "")
        raise connect_error(status_of(unknown)) from None


class _CompactJson:
    """google.protobuf's JSON codec, its answers written on one line without spaces.

    The runtime's writes every answer and every streamed message indented (``MessageToJson``'s
    default, two spaces a level, a line a field): a view, a move's answer with its state, a
    replay came at about twice their size (a Gin view 2,121 bytes, 1,096 compact), on a phone's
    data, for every move and every event of a stream. The same JSON otherwise (protobuf's
    mapping: ``MessageToJson`` is ``json.dumps`` of ``MessageToDict``), read the same by any
    JSON reader."""

    def __init__(self, codec: Codec[Message, Any]) -> None:
        self._codec = codec

    def name(self) -> str:
        return self._codec.name()

    def encode(self, message: Message) -> bytes:
        # As MessageToJson writes it but for the spaces: UTF-8, not \u escapes.
        compact = json.dumps(
            json_format.MessageToDict(message), separators=(",", ":"), ensure_ascii=False
        )
        return compact.encode()

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        return self._codec.decode(data, message_class)


CODECS: tuple[Codec[Message, Any], ...] = (
    _Malformed(google_protobuf_binary_codec()),
    _Malformed(
        _CompactJson(google_protobuf_json_codec(ignore_unknown_fields=True)), options_checked=True
    ),
)

#: The service's methods, as their paths name them (``/croupier.v1.GameService/CreateGame``).
METHOD_NAMES = tuple(m.name for m in pb.DESCRIPTOR.services_by_name["GameService"].methods)
#: How much of an unknown method's name its refusal quotes.
QUOTED_NAME_CHARS = 100


def unknown_method_message(name: str) -> str:
    """Why a path under the service names no method, and what it may have meant: the JSON's
    fields are lowerCamelCase (``gameId``), and a client that spells the method so too
    (``submitCommand``) found a bare 404."""
    quoted = name[:QUOTED_NAME_CHARS]
    said = f"croupier.v1.GameService has no method '{quoted}'"
    by_case = {m.lower(): m for m in METHOD_NAMES}
    if (meant := by_case.get(quoted.lower())) is not None:
        return (
            f"{said}: did you mean '{meant}'? Method names are UpperCamelCase, as in "
            "proto/croupier/v1/service.proto (the JSON's fields are lowerCamelCase)"
        )
    close = difflib.get_close_matches(quoted, METHOD_NAMES, n=1)
    if close:
        return f"{said}: did you mean '{close[0]}'?"
    return f"{said}; its methods are {', '.join(METHOD_NAMES)}"


def with_unknown_methods(app: ASGIApp) -> ASGIApp:
    """``app`` (the service), with a path that names no method of it answered as Connect
    answers an unknown method (``404``, ``unimplemented``), but with a JSON body that says so and
    names the method meant: the runtime's answer has no body at all, which a client calling by
    hand (curl, the JDK's HttpClient) reads as a wrong address. gRPC and gRPC-Web requests get
    the runtime's answer, in their protocol's form."""

    async def checked(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        path: str = scope["path"]
        name = path.removeprefix(SERVICE_PATH).removeprefix("/")
        content_type = dict(scope.get("headers", ())).get(b"content-type", b"")
        if name in METHOD_NAMES or content_type.startswith(b"application/grpc"):
            await app(scope, receive, send)
            return
        body = json.dumps(
            {"code": Code.UNIMPLEMENTED.value, "message": unknown_method_message(name)}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 404,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return checked


#: Native gRPC's content types (``application/grpc``, ``application/grpc+proto``…; not
#: gRPC-Web's), as the Connect runtime tells them apart.
GRPC_CONTENT_TYPE = b"application/grpc"
GRPC_CONTENT_TYPE_PREFIX = GRPC_CONTENT_TYPE + b"+"
#: The ASGI extension of a server that can send HTTP trailers (hypercorn's HTTP/2): gRPC's status
#: travels in them.
TRAILERS_EXTENSION = "http.response.trailers"
#: What a native gRPC call over HTTP/1.1 is told.
GRPC_NEEDS_HTTP2 = (
    "gRPC needs HTTP/2 (h2c with prior knowledge, or TLS with ALPN h2); over HTTP/1.1 call with "
    "Connect or gRPC-Web\n"
)


def with_grpc_over_http2_only(app: ASGIApp) -> ASGIApp:
    """``app``, with a native gRPC call that cannot have its trailers (it came over HTTP/1.1)
    refused before the runtime sees it: ``505``, a line saying what to use instead. The runtime
    raised on it, so that any client, unauthenticated, had each such request answered with the
    runtime's internal error in ``grpc-message`` and its traceback logged twice (once not as
    JSON), some 60 lines a request."""

    async def checked(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and TRAILERS_EXTENSION not in scope.get("extensions", {}):
            content_type = dict(scope.get("headers", ())).get(b"content-type", b"").lower()
            if content_type == GRPC_CONTENT_TYPE or content_type.startswith(
                GRPC_CONTENT_TYPE_PREFIX
            ):
                await PlainTextResponse(GRPC_NEEDS_HTTP2, status_code=505)(scope, receive, send)
                return
        await app(scope, receive, send)

    return checked


# --- the application ---------------------------------------------------------------------------

HOME = """<!doctype html>
<html lang="en"><meta charset="utf-8"><title>Croupier</title>
<h1>Croupier</h1>
<p>This is Croupier's HTTP listener: the game service over Connect (JSON or binary), gRPC-Web and
plain JSON. Call <code>POST {path}/&lt;Method&gt;</code>, for example:</p>
<pre>curl -s {base}{path}/ListPresets -H 'content-type: application/json' \\
  -d '{{"kind": "GAME_KIND_HOOLA"}}'</pre>
<p>The contract is <code>proto/croupier/v1/service.proto</code>; the README's "Over HTTP" section
says how to authenticate and stream.</p>
"""


async def _home(request: Request) -> Response:
    if request.url.path != "/":
        return PlainTextResponse(
            f"Not found. The game service is at POST {SERVICE_PATH}/<Method> "
            "(Connect, gRPC-Web or JSON); GET / says more.\n",
            status_code=404,
        )
    base = f"{request.url.scheme}://{request.url.netloc}"
    return HTMLResponse(HOME.format(path=SERVICE_PATH, base=base))


def home_page() -> ASGIApp:
    """What ``/`` answers without a static site: a short page saying how to call the service;
    any other path is 404 with the same hint."""
    return Starlette(routes=[Route("/{path:path}", _home, methods=["GET", "HEAD"])])


def static_site(directory: Path) -> ASGIApp:
    """A directory served as a site (``index.html`` at ``/``), to mount at ``/`` (a web client)."""
    return StaticFiles(directory=directory, html=True)


def create_http_app(
    core: Croupier,
    *,
    cors_origins: Sequence[str] = (),
    mounts: Mapping[str, ASGIApp] | None = None,
    root: ASGIApp | None = None,
) -> ASGIApp:
    """The HTTP listener's application: the game service at ``/croupier.v1.GameService/`` (a path
    there that names no method answered :func:`with_unknown_methods`' way), each of
    ``mounts`` at its path (``{"/metrics": app}``), and ``root`` at ``/`` (default
    :func:`home_page`; :func:`static_site` serves a directory there). With ``cors_origins``
    (``["*"]`` for any), browsers on those origins may call it; without, only same-origin pages."""
    handlers = ConnectGameService(GameServicer(core))
    calls = ConnectCalls(core)
    service = GameServiceASGIApplication(
        handlers, interceptors=[calls], codecs=CODECS, read_max_bytes=MAX_REQUEST_BYTES
    )
    # The same service again for the large requests, with their limits.
    large = GameServiceASGIApplication(
        handlers,
        interceptors=[Uploads(MAX_UPLOADS), calls],
        codecs=CODECS,
        read_max_bytes=MAX_LARGE_REQUEST_BYTES,
    )
    routes: list[BaseRoute] = [
        Route(path, _AsApp(with_headers(large, API_HEADERS)))
        for path in sorted(LARGE_REQUEST_PATHS)
    ]
    routes.append(Mount(service.path, app=with_headers(with_unknown_methods(service), API_HEADERS)))
    for path, mounted in (mounts or {}).items():
        # The path itself (a scraper asks for /metrics exactly) and anything under it. Route takes
        # a plain function for a request handler: an ASGI app that is one goes in a wrapper.
        routes += [Route(path, _AsApp(mounted)), Mount(path, app=mounted)]
    routes.append(Mount("/", app=root or home_page()))
    app: ASGIApp = with_grpc_over_http2_only(Starlette(routes=routes))
    if cors_origins:
        app = CORSMiddleware(
            app,
            allow_origins=list(cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=list(CORS_ALLOW_HEADERS),
            expose_headers=list(CORS_EXPOSE_HEADERS),
            max_age=CORS_MAX_AGE_S,
        )
    return app


# --- the listener ------------------------------------------------------------------------------


def parse_origins(text: str) -> tuple[str, ...]:
    """``--cors-origins``: comma-separated origins (``*``: any); empty: none."""
    return tuple(o.strip().rstrip("/") for o in text.split(",") if o.strip())


def is_off(address: str | None) -> bool:
    """``--http-address`` empty or ``off``: no HTTP listener."""
    return address is None or address.strip().lower() in ("", "off")


class HttpListener:
    """``app`` served by hypercorn on ``address`` (port 0: a free one), on the running loop.

    Hypercorn (pinned) rather than uvicorn: it speaks HTTP/2 without TLS (prior knowledge) as well
    as HTTP/1.1, and ASGI's response trailers, so Connect's bidirectional streams and gRPC clients
    work here too, not only browsers; and it serves on an event loop it is given, with a shutdown
    trigger of ours, installing no signal handlers of its own. The socket is ours: bound (with
    SO_REUSEPORT for the workers of ``serve --workers``) and listening before :meth:`start`
    returns, so the port is known and connections queue from then on."""

    def __init__(
        self,
        app: ASGIApp,
        address: str,
        *,
        reuse_port: bool = False,
        grace_s: float = DEFAULT_GRACE_S,
        tls: ServerTLS | None = None,
        body_timeout_s: float = BODY_TIMEOUT_S,
        body_min_bytes: int = BODY_MIN_BYTES,
        max_connections: int | None = None,
        max_per_address: int = DEFAULT_HTTP_PER_ADDRESS,
    ) -> None:
        self.app = app
        #: How long a request's body has for each ``body_min_bytes`` of it
        #: (service/http_limits.py).
        self.body_timeout_s = body_timeout_s
        self.body_min_bytes = body_min_bytes
        #: The most connections served at once (default: from the process's descriptor limit).
        self.max_connections = connection_cap() if max_connections is None else max_connections
        #: The most connections from one client address at once (0: no limit).
        self.max_per_address = max_per_address
        self.address = address
        self.reuse_port = reuse_port
        self.grace_s = grace_s
        #: The gRPC port's TLS, served here too (HTTP/2 and HTTP/1.1 by ALPN): with TLS on,
        #: no port of the server takes a call, or a bearer token, in the clear.
        if tls is not None and tls.files is None:  # never plaintext while it says https
            raise ValueError("the HTTP listener's TLS is read from files: server_tls() makes it")
        self.tls = tls
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Hypercorn's settings for this listener: its connections are known by them.
        self._config: Config | None = None
        self.port = 0

    def _bind(self) -> socket.socket:
        host = self.address.rpartition(":")[0].strip("[]")
        port = port_of(self.address)
        if port is None:
            raise PortInUse(f"--http-address: HOST:PORT, not {self.address!r}", busy=False)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if self.reuse_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind((host or "0.0.0.0", port))
            sock.listen(socket.SOMAXCONN)
        except OSError as error:
            sock.close()
            raise PortInUse(
                f"cannot listen on {self.address}: {error}", busy=error.errno == errno.EADDRINUSE
            ) from None
        return sock

    async def start(self) -> int:
        """Listen, serve in the background, and return the port."""
        http2.install()
        http_limits.install()
        # The listening socket counts its connections, and closes those past the caps as soon as
        # they are accepted (service/http_limits.py).
        sock = CappedSocket(self._bind(), self.max_connections, self.max_per_address)
        self.port = sock.getsockname()[1]
        config = Config()
        # Hypercorn's read_timeout stays None: it bounds every read of a connection, so it would
        # cut a stream whose client sends nothing (StreamEvents, Play). A request body that
        # stops coming is bounded by BodyTimeout instead.
        config.graceful_timeout = self.grace_s
        config.loglevel = "WARNING"  # not its start-up banner; its errors, yes
        config.include_server_header = False
        # Hypercorn listens again on the socket it is given, with its own backlog (100 by
        # default): connections a busy loop has not yet accepted queue beyond that, up to the
        # kernel's limit, rather than being refused as browsers reconnect at once.
        config.backlog = socket.SOMAXCONN
        if self.tls is not None and self.tls.files is not None:
            cert, key, client_ca = self.tls.files
            config.certfile, config.keyfile = str(cert), str(key)
            if client_ca is not None:  # mutual TLS, as on the gRPC port
                config.ca_certs = str(client_ca)
                config.verify_mode = ssl.CERT_REQUIRED
        self._config = config
        # Hypercorn's serve(), but with our socket object (not one it makes from a descriptor):
        # the socket is the cap.
        sockets = Sockets([sock], [], []) if config.ssl_enabled else Sockets([], [sock], [])
        app = BodyTimeout(
            self.app,
            self.body_timeout_s,
            min_bytes=self.body_min_bytes,
            streaming=STREAMING_REQUEST_PATHS,
        )
        self._task = asyncio.create_task(
            worker_serve(
                wrap_app(app, config.wsgi_max_body_size, "asgi"),  # type: ignore[arg-type]
                config,
                sockets=sockets,
                shutdown_trigger=self._stopping.wait,
            )
        )
        return self.port

    @property
    def url(self) -> str:
        """Where it listens, as a browser reaches it (``https`` with TLS)."""
        host = self.address.rpartition(":")[0]
        return f"{'https' if self.tls is not None else 'http'}://{host}:{self.port}"

    async def stop(self) -> None:
        """Stop listening; open calls get ``grace_s`` to end, then are dropped."""
        self._stopping.set()
        task, self._task = self._task, None
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=self.grace_s + RELEASE_AFTER_S)
        if not done and self._config is not None:
            # Calls waiting to send to clients that no longer read (service/http2.py).
            connections = await http2.cut_all(self._config)
            done, _ = await asyncio.wait({task}, timeout=RELEASE_AFTER_S)
            log.warning(
                "http calls outlived the shutdown grace: their connections were cut",
                grace_s=self.grace_s,
                connections_cut=connections,
                stopped=bool(done),
            )
        if done:
            await task  # its failure, if it failed
        else:
            # Not waited for: the process is stopping. Its outcome is taken when it comes, so
            # that asyncio does not report it as never retrieved.
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
            task.cancel()
