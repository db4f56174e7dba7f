"""A real gRPC server on a free port, once per store backend."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
import pytest

from croupier.app.core import Clock, SeedSource, fresh_seed, now_ms
from croupier.app.tokens import KeyRing, TokenSigner, mint_player_token, mint_studio_token
from croupier.log import EventStore
from croupier.service.bots import auth
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import service_pb2_grpc

SECRET = b"test-secret-0123456789abcdef-0123456789"
STUDIO_SECRET = b"test-studio-secret-0123456789abcdef"
STUDIO_KEYS = KeyRing(STUDIO_SECRET)
# Tokens good until 2096: past any test run, however far a test moves its server's clock.
FAR_AHEAD_S = 4_000_000_000


def studio_token(expires_at_s: int = FAR_AHEAD_S) -> str:
    """The studio credential the test servers take (CreateGame)."""
    return mint_studio_token(STUDIO_SECRET, expires_at_s)


def studio_auth() -> tuple[tuple[str, str], ...]:
    """CreateGame's metadata on the test servers."""
    return auth(studio_token())


def player_auth(player: str, expires_at_s: int = FAR_AHEAD_S) -> tuple[tuple[str, str], ...]:
    """A studio-signed player token for recall, as metadata."""
    return auth(mint_player_token(STUDIO_SECRET, player, expires_at_s))


def server_thread(
    store: EventStore,
    secret: bytes = SECRET,
    clock: Clock = now_ms,
    seed_source: SeedSource = fresh_seed,
) -> ServerThread:
    """A server (not started) with the test secrets."""
    return ServerThread(
        "127.0.0.1:0", store, TokenSigner(secret), clock, seed_source, studio_keys=STUDIO_KEYS
    )


@contextmanager
def fresh_server(
    store: EventStore, secret: bytes = SECRET, clock: Clock = now_ms
) -> Iterator[service_pb2_grpc.GameServiceStub]:
    """Another server on ``store``, which has read no game yet (another replica, or the same
    after a restart): a client of it, for as long as the context lasts."""
    thread = server_thread(store, secret, clock)
    port = thread.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield service_pb2_grpc.GameServiceStub(channel)
    finally:
        channel.close()
        thread.stop(grace=None)


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


@contextmanager
def running(url: str, seed_source: SeedSource = fresh_seed) -> Iterator[Running]:
    """A server on the store at ``url``, dealing with ``seed_source``'s seeds, for as long as the
    context lasts."""
    store = open_store(url)
    clock = TestClock()
    grpc_server = server_thread(store, clock=clock, seed_source=seed_source)
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


def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The store a ``server``-like fixture's parameter names: a new SQLite file, or the test
    run's PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('store') / 'croupier.sqlite3'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


#: A module's server on each store (PostgreSQL's skips without a server).
STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=STORES, scope="module")
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Running]:
    with running(store_url(request, tmp_path_factory)) as served:
        yield served
