"""One interceptor for every GameService call: who calls, errors as statuses, one log line.

It reads the one ``authorization: Bearer <token>`` metadata entry (:func:`bearer_token`), asks the
core who that is (a seat, the studio, a player) and hands the verified caller to the handler
(:func:`caller`); it turns the application's typed errors into rich gRPC statuses
(:mod:`croupier.service.status`); it logs one line per call with the method, the outcome, the
latency and what the core bound (game, seat, command), and counts it in the RPC metrics
(:mod:`croupier.service.metrics`: started, handled by status code, latency, open streams). Anything else a handler raises is a bug:
it is logged with its traceback under a fresh error id and answered ``INTERNAL`` with that id
(never gRPC's bare ``UNKNOWN``), on unary and streaming calls alike.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog
from google.protobuf.message import DecodeError

from croupier.app.core import ANONYMOUS, Caller, Croupier
from croupier.app.errors import (
    BAD_AUTH_SCHEME,
    DUPLICATE_AUTHORIZATION,
    AppError,
    BadCredentials,
    invalid,
)
from croupier.service.metrics import BIDI_STREAM, SERVER_STREAM, UNARY, Metrics
from croupier.service.status import code_of, internal_status, to_status

log = structlog.get_logger("croupier.rpc")

_CALLER: contextvars.ContextVar[Caller] = contextvars.ContextVar("caller", default=ANONYMOUS)
AUTHORIZATION = "authorization"  # gRPC metadata keys arrive lower-case
BEARER = "bearer"  # the scheme, compared case-insensitively (RFC 9110 §11.1)


def caller() -> Caller:
    """The current call's verified caller (set by the interceptor)."""
    return _CALLER.get()


def bearer_token(metadata: Any) -> str | None:
    """The token of the call's one ``authorization: Bearer <token>`` entry; ``None`` without one.

    Anything else is refused rather than guessed at: another scheme or a bare token (a client
    that meant something else), an empty token, and two entries (a proxy and a client that
    disagree about who calls)."""
    values = [value for key, value in metadata or () if key == AUTHORIZATION]
    if not values:
        return None
    if len(values) > 1:
        raise BadCredentials(DUPLICATE_AUTHORIZATION, "send one 'authorization' entry, not several")
    scheme, _, token = str(values[0]).strip().partition(" ")
    token = token.strip()
    if scheme.lower() != BEARER or not token:
        raise BadCredentials(BAD_AUTH_SCHEME, "send the token as 'authorization: Bearer <token>'")
    return token


def _decoder(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any]:
    """The request message of ``data``, or ``MALFORMED_REQUEST`` (INVALID_ARGUMENT)."""

    def decode(data: bytes) -> Any:
        if deserializer is None:  # pragma: no cover - every method of ours has a message type
            return data
        try:
            return deserializer(data)
        except DecodeError as error:
            raise invalid(
                "MALFORMED_REQUEST", f"the request is not its message type: {error}", ""
            ) from None

    return decode


async def _decoded(requests: AsyncIterator[bytes], decode: Callable[[bytes], Any]) -> Any:
    """A request stream's messages, each parsed as it arrives."""
    async for data in requests:
        yield decode(data)


class CallInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, core: Croupier, prefix: str, metrics: Metrics | None = None) -> None:
        self._core = core
        self._prefix = prefix
        #: The service's full name, as the RPC metrics label it (``grpc_service``).
        self._service = prefix.strip("/")
        self._metrics = metrics

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or not method.startswith(self._prefix):
            return handler
        name = method.rsplit("/", 1)[-1]
        # Requests arrive as bytes and are parsed here, inside the error handling: bytes that are
        # not the request message are the client's mistake (INVALID_ARGUMENT), where gRPC's own
        # parsing answers UNKNOWN.
        decode = _decoder(handler.request_deserializer)
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(name, handler.unary_unary, decode),
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._stream(name, handler.unary_stream, decode, SERVER_STREAM),
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                self._stream(name, handler.stream_stream, decode, BIDI_STREAM),
                response_serializer=handler.response_serializer,
            )
        return handler  # pragma: no cover - the service has no client-streaming-only methods

    def _begin(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        structlog.contextvars.clear_contextvars()
        _CALLER.set(self._core.authenticate(bearer_token(context.invocation_metadata())))

    def _start(self, name: str, kind: str) -> float:
        if self._metrics is not None:
            self._metrics.rpc_start(self._service, name, kind)
        return time.perf_counter()

    def _finish(self, name: str, kind: str, started: float, outcome: str) -> None:
        seconds = time.perf_counter() - started
        if self._metrics is not None:
            self._metrics.rpc_end(self._service, name, kind, outcome, seconds)
        log.info("rpc", method=name, outcome=outcome, latency_ms=round(seconds * 1000, 2))
        structlog.contextvars.clear_contextvars()

    async def _fail(
        self,
        name: str,
        kind: str,
        started: float,
        context: grpc.aio.ServicerContext[Any, Any],
        error: AppError,
    ) -> None:
        structlog.contextvars.bind_contextvars(reason=error.reason)
        self._finish(name, kind, started, code_of(error).name)
        status = to_status(error)
        await context.abort(status.code, status.details, status.trailing_metadata)

    async def _crash(
        self,
        name: str,
        kind: str,
        started: float,
        context: grpc.aio.ServicerContext[Any, Any],
        error: Exception,
    ) -> None:
        """An unexpected exception: logged with its traceback under a fresh id, answered
        ``INTERNAL`` with that id (the client can report it; nothing else of it leaves)."""
        error_id = uuid.uuid4().hex
        structlog.contextvars.bind_contextvars(reason="INTERNAL_ERROR", error_id=error_id)
        log.error("rpc failed unexpectedly", method=name, error_id=error_id, exc_info=error)
        self._finish(name, kind, started, grpc.StatusCode.INTERNAL.name)
        status = internal_status(error_id)
        await context.abort(status.code, status.details, status.trailing_metadata)

    def _aborted(
        self, name: str, kind: str, started: float, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """The handler set a status itself (context.abort): counted with that status."""
        code = context.code()
        self._finish(name, kind, started, code.name if code is not None else "UNKNOWN")

    def _unary(self, name: str, behaviour: Any, decode: Callable[[bytes], Any]) -> Any:
        async def unary(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            started = self._start(name, UNARY)
            try:
                self._begin(context)
                response = await behaviour(decode(request), context)
            except AppError as error:
                await self._fail(name, UNARY, started, context, error)
            except grpc.aio.AbortError:
                self._aborted(name, UNARY, started, context)
                raise  # a status the handler set itself
            except Exception as error:  # every bug becomes INTERNAL with an id
                await self._crash(name, UNARY, started, context, error)
            self._finish(name, UNARY, started, "OK")
            return response

        return unary

    def _stream(self, name: str, behaviour: Any, decode: Callable[[bytes], Any], kind: str) -> Any:
        async def stream(
            request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            started = self._start(name, kind)
            finished = False  # counted and logged: the stream is no longer open
            try:
                self._begin(context)
                parsed = _decoded(request, decode) if kind == BIDI_STREAM else decode(request)
                async for response in behaviour(parsed, context):
                    yield response
                finished = True
                self._finish(name, kind, started, "OK")
            except AppError as error:
                finished = True
                await self._fail(name, kind, started, context, error)
                return
            except grpc.aio.AbortError:
                finished = True
                self._aborted(name, kind, started, context)
                raise
            except Exception as error:  # every bug becomes INTERNAL with an id
                finished = True
                await self._crash(name, kind, started, context, error)
                return
            except asyncio.CancelledError:
                # The client went away: the stream and its wait are dropped at once.
                finished = True
                self._finish(name, kind, started, "CANCELLED")
                raise
            finally:
                if not finished:  # closed from outside (GeneratorExit): gone all the same
                    finished = True
                    self._finish(name, kind, started, "CANCELLED")

        return stream
