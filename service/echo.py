"""A bare grpc.aio echo server: the floor that ``croupier load --baseline`` measures against.

One generic handler with identity (bytes) serializers and one unary method that answers with its
request, so a call costs what gRPC itself costs and nothing else. Run it as its own process so that
its CPU time is measured like the game server's::

    python -m croupier.service.echo --address 127.0.0.1:0    # prints the port it listens on
"""

from __future__ import annotations

import argparse
import asyncio
import signal

import grpc

SERVICE = "croupier.bench.Echo"
METHOD = f"/{SERVICE}/Echo"


async def _echo(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
    return request


def handler() -> grpc.GenericRpcHandler:
    """The echo service: no request deserializer and no response serializer, so bytes in, bytes
    out."""
    return grpc.method_handlers_generic_handler(
        SERVICE, {"Echo": grpc.unary_unary_rpc_method_handler(_echo)}
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
