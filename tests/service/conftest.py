"""A real gRPC server on a free port, once per store backend."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest

from croupier.service.auth import TokenSigner
from croupier.service.server import create_server
from croupier.service.store import EventStore, open_store
from croupier.v1 import service_pb2_grpc

SECRET = b"test-secret-0123456789abcdef"


@dataclass
class Running:
    channel: grpc.Channel
    stub: service_pb2_grpc.GameServiceStub
    store: EventStore
    address: str


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
                scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'croupier.sqlite3'}"
    else:
        url = request.getfixturevalue("postgres_url")
    store = open_store(url)
    grpc_server, port, _ = create_server("127.0.0.1:0", store, TokenSigner(SECRET))
    grpc_server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Running(channel, service_pb2_grpc.GameServiceStub(channel), store, f"127.0.0.1:{port}")
    finally:
        channel.close()
        grpc_server.stop(grace=None)
        store.close()
