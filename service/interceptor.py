"""One interceptor for every GameService call: who calls, errors as statuses, one log line.

It reads the one ``authorization: Bearer <token>`` metadata entry (:func:`bearer_token`), asks the
core who that is (a seat, the studio, a player) and hands the verified caller to the handler
(:func:`caller`); it turns the application's typed errors into rich gRPC statuses
(:mod:`croupier.service.status`); it logs one line per call with the method, the outcome, the
latency and what the core bound (game, seat, command). Anything else a handler raises is a bug:
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
    def __init__(self, core: Croupier, prefix: str) -> None:
        self._core = core
        self._prefix = prefix

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
                self._stream(name, handler.unary_stream, decode, streaming=False),
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                self._stream(name, handler.stream_stream, decode, streaming=True),
                response_serializer=handler.response_serializer,
            )
        return handler  # pragma: no cover - the service has no client-streaming-only methods

    def _begin(self, context: grpc.aio.ServicerContext[Any, Any]) -> float:
        structlog.contextvars.clear_contextvars()
        _CALLER.set(self._core.authenticate(bearer_token(context.invocation_metadata())))
        return time.perf_counter()

    @staticmethod
    def _finish(name: str, started: float, outcome: str) -> None:
        log.info(
            "rpc",
            method=name,
            outcome=outcome,
            latency_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        structlog.contextvars.clear_contextvars()

    @staticmethod
    async def _fail(
        name: str, started: float, context: grpc.aio.ServicerContext[Any, Any], error: AppError
    ) -> None:
        structlog.contextvars.bind_contextvars(reason=error.reason)
        CallInterceptor._finish(name, started, code_of(error).name)
        status = to_status(error)
        await context.abort(status.code, status.details, status.trailing_metadata)

    @staticmethod
    async def _crash(
        name: str, started: float, context: grpc.aio.ServicerContext[Any, Any], error: Exception
    ) -> None:
        """An unexpected exception: logged with its traceback under a fresh id, answered
        ``INTERNAL`` with that id (the client can report it; nothing else of it leaves)."""
        error_id = uuid.uuid4().hex
        structlog.contextvars.bind_contextvars(reason="INTERNAL_ERROR", error_id=error_id)
        log.error("rpc failed unexpectedly", method=name, error_id=error_id, exc_info=error)
        CallInterceptor._finish(name, started, grpc.StatusCode.INTERNAL.name)
        status = internal_status(error_id)
        await context.abort(status.code, status.details, status.trailing_metadata)

    def _unary(self, name: str, behaviour: Any, decode: Callable[[bytes], Any]) -> Any:
        async def unary(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            started = time.perf_counter()
            try:
                started = self._begin(context)
                response = await behaviour(decode(request), context)
            except AppError as error:
                await self._fail(name, started, context, error)
            except grpc.aio.AbortError:
                raise  # a status the handler set itself
            except Exception as error:  # every bug becomes INTERNAL with an id
                await self._crash(name, started, context, error)
            self._finish(name, started, "OK")
            return response

        return unary

    def _stream(
        self, name: str, behaviour: Any, decode: Callable[[bytes], Any], streaming: bool
    ) -> Any:
        async def stream(
            request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            started = time.perf_counter()
            try:
                started = self._begin(context)
                parsed = _decoded(request, decode) if streaming else decode(request)
                async for response in behaviour(parsed, context):
                    yield response
            except AppError as error:
                await self._fail(name, started, context, error)
                return
            except grpc.aio.AbortError:
                raise
            except Exception as error:  # every bug becomes INTERNAL with an id
                await self._crash(name, started, context, error)
                return
            except asyncio.CancelledError:
                # The client went away: the stream and its wait are dropped at once.
                self._finish(name, started, "CANCELLED")
                raise
            self._finish(name, started, "OK")

        return stream
