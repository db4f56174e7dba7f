"""A bare grpc.aio echo server: the floors that ``croupier load --baseline`` measures against.

One generic handler with identity (bytes) serializers, so that a call costs what gRPC itself costs
and nothing else:

* ``Echo``, unary: answers with its request.
* ``Table``, a bidirectional stream shaped like a seat's ``Play`` stream, with no game behind it:
  the first message names a table (any bytes) and is answered once; each later message is
  answered on its own stream and sent to every stream at the table (the seat's own included),
  as a command's answer and each seat's batch are. What a move costs the transport.

Run it as its own process so that its CPU time is measured like the game server's::

    python -m croupier.service.echo --address 127.0.0.1:0    # prints the port it listens on
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import AsyncIterator

import grpc

SERVICE = "croupier.bench.Echo"
METHOD = f"/{SERVICE}/Echo"
TABLE_METHOD = f"/{SERVICE}/Table"
#: The sizes of a Play move's messages, bytes (a Hoola game of three seats, `include` legal moves
#: and who is to act, batched): the answer to the command, and each seat's batch (the mean).
ANSWER = b"a" * 38
BATCH = b"b" * 420


async def _echo(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
    return request


class Tables:
    """The streams at each table, each an outbox its stream's handler sends from (as a Play
    stream's events and answers come from the tasks that make them)."""

    def __init__(self) -> None:
        self.seats: dict[bytes, list[asyncio.Queue[bytes | None]]] = {}

    async def table(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> AsyncIterator[bytes]:
        name = await anext(aiter(requests), None)
        if name is None:
            return
        outbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        seats = self.seats.setdefault(name, [])
        seats.append(outbox)

        async def commands() -> None:
            try:
                async for _ in requests:
                    outbox.put_nowait(ANSWER)
                    for seat in seats:
                        seat.put_nowait(BATCH)
            finally:
                outbox.put_nowait(None)

        reading = asyncio.create_task(commands())
        try:
            yield ANSWER  # seated
            while (message := await outbox.get()) is not None:
                yield message
        finally:
            reading.cancel()
            seats.remove(outbox)
            if not seats:
                del self.seats[name]


def handler() -> grpc.GenericRpcHandler:
    """The echo service: no request deserializer and no response serializer, so bytes in, bytes
    out."""
    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Echo": grpc.unary_unary_rpc_method_handler(_echo),
            "Table": grpc.stream_stream_rpc_method_handler(Tables().table),
        },
    )


async def serve(address: str) -> None:
    """Listen on ``address``, print the port on stdout, serve until SIGTERM or SIGINT."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((handler(),))
    port = server.add_insecure_port(address)
    if port == 0:
        raise SystemExit(f"cannot listen on {address}")
    await server.start()
    print(port, flush=True)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    await stopping.wait()
    await server.stop(grace=1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--address", default="127.0.0.1:0", help="HOST:PORT (port 0: a free one)")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.address))


if __name__ == "__main__":  # pragma: no cover
    main()
