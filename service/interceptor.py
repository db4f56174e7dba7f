"""One interceptor for every GameService call: who calls, errors as statuses, one log line.

It reads the ``authorization: Bearer <token>`` metadata and hands the verified caller to the
handler (:func:`caller`); it turns the application's typed errors into rich gRPC statuses
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

from croupier.app.core import ANONYMOUS, Caller, Croupier
from croupier.app.errors import AppError
from croupier.service.status import code_of, internal_status, to_status

log = structlog.get_logger("croupier.rpc")

_CALLER: contextvars.ContextVar[Caller] = contextvars.ContextVar("caller", default=ANONYMOUS)
BEARER = "Bearer "


def caller() -> Caller:
    """The current call's verified caller (set by the interceptor)."""
    return _CALLER.get()


def bearer_token(metadata: Any) -> str | None:
    for key, value in metadata or ():
        if key == "authorization":
            return str(value).removeprefix(BEARER).strip()
    return None


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

    def _unary(self, name: str, behaviour: Any) -> Any:
        async def unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            started = time.perf_counter()
            try:
                started = self._begin(context)
                response = await behaviour(request, context)
            except AppError as error:
                await self._fail(name, started, context, error)
            except grpc.aio.AbortError:
                raise  # a status the handler set itself
            except Exception as error:  # every bug becomes INTERNAL with an id
                await self._crash(name, started, context, error)
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
