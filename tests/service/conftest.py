"""A real gRPC server on a free port, once per store backend."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest

from croupier.app.core import now_ms
from croupier.app.tokens import TokenSigner
from croupier.log import EventStore
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import service_pb2_grpc

SECRET = b"test-secret-0123456789abcdef"


class TestClock:
    """The servers' clock: real time plus however far a test has moved it (tests move time
    instead of sleeping)."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def __call__(self) -> int:
        return now_ms() + self.offset_ms

    def advance(self, ms: int) -> None:
        self.offset_ms += ms


@dataclass
class Running:
    channel: grpc.Channel
    stub: service_pb2_grpc.GameServiceStub
    store: EventStore
    address: str
    clock: TestClock
    thread: ServerThread


@pytest.fixture(
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], scope="module"
)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Running]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'croupier.sqlite3'}"
    else:
        url = request.getfixturevalue("postgres_url")
    store = open_store(url)
    clock = TestClock()
    grpc_server = ServerThread("127.0.0.1:0", store, TokenSigner(SECRET), clock=clock)
    port = grpc_server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Running(
            channel,
            service_pb2_grpc.GameServiceStub(channel),
            store,
            f"127.0.0.1:{port}",
            clock,
            grpc_server,
        )
    finally:
        channel.close()
        grpc_server.stop(grace=None)
        store.close()
