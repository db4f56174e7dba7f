"""The tools' channels (``demo``, ``load``) find a connection a mobile network dropped without a
word: a carrier's NAT that forgot the mapping passes nothing either way and closes nothing, so
only the client's keepalive pings can tell. A proxy between client and server blackholes the
connections through it, as such a NAT does; no root or netem needed."""

from __future__ import annotations

import contextlib
import socket
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from croupier.service.bots import auth
from croupier.service.tls import (
    CLIENT_KEEPALIVE_TIME_MS,
    CLIENT_KEEPALIVE_TIMEOUT_MS,
    channel,
)
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

from .conftest import running, studio_auth

MS_PER_S = 1000
#: How long the test waits for the stream to fail once its link is blackholed: the pings find it
#: within CLIENT_KEEPALIVE_TIME_MS + CLIENT_KEEPALIVE_TIMEOUT_MS of its last byte (a bound on the
#: wait, not a speed target: without pings the stream never fails at all).
FOUND_WITHIN_S = 3 * (CLIENT_KEEPALIVE_TIME_MS + CLIENT_KEEPALIVE_TIMEOUT_MS) / MS_PER_S
CHUNK = 65536


class BlackholeProxy:
    """A TCP proxy to ``target``; ``blackhole()`` makes the connections open now pass nothing
    more, either way, for good, without closing them."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        #: One per connection: set, it passes nothing more.
        self.links: list[threading.Event] = []
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                upstream = socket.create_connection(self.target)
                self.sockets += [client, upstream]
                dead = threading.Event()
                self.links.append(dead)
                for source, sink in ((client, upstream), (upstream, client)):
                    threading.Thread(
                        target=self._pipe, args=(source, sink, dead), daemon=True
                    ).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket, dead: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(CHUNK):
                if not dead.is_set():
                    sink.sendall(data)

    def blackhole(self) -> None:
        """The connections open now pass nothing more; later ones pass."""
        for dead in self.links:
            dead.set()

    def close(self) -> None:
        self.listener.close()
        for sock in self.sockets:
            sock.close()


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[service_pb2_grpc.GameServiceStub, BlackholeProxy]]:
    with running(f"sqlite:///{tmp_path / 'croupier.sqlite3'}") as served:
        host, port = served.address.rsplit(":", 1)
        proxy = BlackholeProxy((host, int(port)))
        try:
            yield served.stub, proxy
        finally:
            proxy.close()


def test_a_stream_on_a_connection_a_nat_forgot_fails_unavailable_so_the_bots_join_again(
    proxied: tuple[service_pb2_grpc.GameServiceStub, BlackholeProxy],
) -> None:
    direct, proxy = proxied
    game = direct.CreateGame(
        service_pb2.CreateGameRequest(
            kind=common_pb2.GAME_KIND_GIN,
            preset="standard",
            seats=2,
            request_id=str(uuid.uuid4()),
        ),
        metadata=studio_auth(),
    )
    # The channel demo opens (load's aio_channel takes the same options): a seat's stream that
    # waits for the other seat's move, sending nothing, as a bot's Play stream does.
    with (
        channel(proxy.address, None) as through,
        ThreadPoolExecutor(max_workers=1) as pool,
    ):
        stub = service_pb2_grpc.GameServiceStub(through)
        stream = stub.StreamEvents(
            service_pb2.StreamEventsRequest(game_id=game.game_id),
            metadata=auth(game.tokens[0].token),
        )
        first = next(stream)
        assert first.event.version >= 1, "the stream is open and carried the deal"
        proxy.blackhole()

        def rest() -> grpc.StatusCode:
            try:
                for _ in stream:
                    pass
            except grpc.RpcError as error:
                code: grpc.StatusCode = error.code()
                return code
            return grpc.StatusCode.OK

        ended: Future[grpc.StatusCode] = pool.submit(rest)
        try:
            code = ended.result(timeout=FOUND_WITHIN_S)
        except TimeoutError:
            code = None
        finally:
            stream.cancel()
        assert code == grpc.StatusCode.UNAVAILABLE, (
            "the dead connection was found by the client's keepalive"
        )
        # A new connection is made for the next call: the bots' resume works.
        view = stub.GetView(
            service_pb2.GetViewRequest(game_id=game.game_id),
            metadata=auth(game.tokens[0].token),
            timeout=FOUND_WITHIN_S,
        )
        assert view.version >= 1
