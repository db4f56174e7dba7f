"""One interceptor for every GameService call on gRPC: who calls, errors as statuses, one log line.

What it does around a call is :class:`croupier.service.calls.Call`'s, shared with the HTTP
listener: it reads the one ``authorization: Bearer <token>`` metadata entry
(:func:`bearer_token`), asks the core who that is (a seat, the studio, a player) and hands the
verified caller to the handler (:func:`caller`); it turns the application's typed errors into rich
gRPC statuses (:mod:`croupier.service.status`); it logs one line per call with the method, the
outcome, the latency and what the core bound (game, seat, command), and counts it in the RPC metrics
(:mod:`croupier.service.metrics`: started, handled by status code, latency, open streams). Anything
else a handler raises
is a bug: it is logged with its traceback under a fresh error id and answered ``INTERNAL`` with
that id (never gRPC's bare ``UNKNOWN``), on unary and streaming calls alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from grpc_status import rpc_status

from croupier.app.core import Croupier
from croupier.app.errors import AppError, invalid
from croupier.service.calls import Call, bearer_token, caller
from croupier.service.metrics import BIDI_STREAM, SERVER_STREAM, UNARY, Metrics

__all__ = ["CallInterceptor", "bearer_token", "caller"]


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

    def _call(self, name: str, kind: str) -> Call:
        return Call(self._core, name, metrics=self._metrics, service=self._service, kind=kind)

    @staticmethod
    def _aborted(call: Call, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        """The handler set a status itself (context.abort): the call ends with that status."""
        code = context.code()
        call.ended(code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN")

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

    @staticmethod
    async def _abort(
        context: grpc.aio.ServicerContext[Any, Any], status: status_pb2.Status
    ) -> None:
        answer = rpc_status.to_status(status)
        await context.abort(answer.code, answer.details, answer.trailing_metadata)

    def _unary(self, name: str, behaviour: Any, decode: Callable[[bytes], Any]) -> Any:
        async def unary(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            call = self._call(name, UNARY)
            try:
                call.begin(context.invocation_metadata())
                response = await behaviour(decode(request), context)
            except AppError as error:
                await self._abort(context, call.failed(error))
            except grpc.aio.AbortError:
                self._aborted(call, context)
                raise  # a status the handler set itself
            except asyncio.CancelledError:
                # The client went away, or its deadline passed: the call's line says so.
                call.cancelled()
                raise
            except Exception as error:  # every bug becomes INTERNAL with an id
                await self._abort(context, call.crashed(error))
            call.ok()
            return response

        return unary

    def _stream(self, name: str, behaviour: Any, decode: Callable[[bytes], Any], kind: str) -> Any:
        async def stream(
            request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            call = self._call(name, kind)
            try:
                call.begin(context.invocation_metadata())
                parsed = _decoded(request, decode) if kind == BIDI_STREAM else decode(request)
                async for response in behaviour(parsed, context):
                    yield response
                call.ok()
            except AppError as error:
                await self._abort(context, call.failed(error))
                return
            except grpc.aio.AbortError:
                self._aborted(call, context)
                raise
            except Exception as error:  # every bug becomes INTERNAL with an id
                await self._abort(context, call.crashed(error))
                return
            finally:
                # The client went away (a cancelled task, or the generator closed from outside): the
                # stream and its wait are dropped at once.
                if call.open:
                    call.cancelled()

        return stream
