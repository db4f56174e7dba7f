"""One interceptor for every GameService call: who calls, errors as statuses, one log line.

It reads the one ``authorization: Bearer <token>`` metadata entry (:func:`bearer_token`), asks the
core who that is (a seat, the studio, a player) and hands the verified caller to the handler
(:func:`caller`); it turns the application's typed errors into rich gRPC statuses
(:mod:`croupier.service.status`); it logs one line per call with the method, the outcome, the
latency and what the core bound (game, seat, command).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog

from croupier.app.core import ANONYMOUS, Caller, Croupier
from croupier.app.errors import (
    BAD_AUTH_SCHEME,
    DUPLICATE_AUTHORIZATION,
    AppError,
    BadCredentials,
)
from croupier.service.status import code_of, to_status

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
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(name, handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._stream(name, handler.unary_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                self._stream(name, handler.stream_stream),
                request_deserializer=handler.request_deserializer,
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

    def _unary(self, name: str, behaviour: Any) -> Any:
        async def unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            started = time.perf_counter()
            try:
                started = self._begin(context)
                response = await behaviour(request, context)
            except AppError as error:
                await self._fail(name, started, context, error)
            self._finish(name, started, "OK")
            return response

        return unary

    def _stream(self, name: str, behaviour: Any) -> Any:
        async def stream(
            request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            started = time.perf_counter()
            try:
                started = self._begin(context)
                async for response in behaviour(request, context):
                    yield response
            except AppError as error:
                await self._fail(name, started, context, error)
                return
            except asyncio.CancelledError:
                # The client went away: the stream and its wait are dropped at once.
                self._finish(name, started, "CANCELLED")
                raise
            self._finish(name, started, "OK")

        return stream
