"""The gRPC server (grpc.aio): the game service, health checking and reflection on one port.

:func:`create_server` builds it on the running event loop. :class:`ServerThread` runs one on an
event loop of its own thread, for callers that are not async (the tests, the corpus tool).
"""

from __future__ import annotations

import asyncio
import errno
import socket
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.sdk.trace import TracerProvider

from croupier.app.core import Clock, Croupier, SeedSource, fresh_seed, now_ms
from croupier.app.ratelimit import RateLimit
from croupier.app.tokens import KeyRing, TokenSigner
from croupier.log import EventStore
from croupier.replays.signing import ReplayKeys
from croupier.service import reflection, tracing
from croupier.service.config import MAX_PORT, port_of
from croupier.service.grpc_api import GameServicer
from croupier.service.interceptor import CallInterceptor
from croupier.service.metrics import metrics
from croupier.service.shutdown import Health
from croupier.service.store.observed import ObservedStore
from croupier.v1 import service_pb2, service_pb2_grpc

if TYPE_CHECKING:
    from croupier.service.http import HttpListener

T = TypeVar("T")

SERVICE_NAME = service_pb2.DESCRIPTOR.services_by_name["GameService"].full_name
HEALTH_NAME = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
# A burst of new calls (thousands of clients reconnecting their streams at once) waits for the
# event loop to take it, rather than being cancelled past gRPC core's pending-call limits.
PENDING = [
    ("grpc.server.max_pending_requests", 1 << 16),
    ("grpc.server.max_pending_requests_hard_limit", 1 << 16),
]


@dataclass(frozen=True)
class ConnectionLimits:
    """What one client connection may hold, and how dead or idle ones are found and closed.

    Keepalive pings (every ``keepalive_time_ms``, answered within ``keepalive_timeout_ms``) find a
    peer that vanished without closing (a phone that lost its network), whose streams would
    otherwise be held forever. A connection without a call for ``max_idle_ms`` is closed (GOAWAY;
    clients reconnect by themselves). A client may ping no more often than
    ``min_ping_interval_ms`` without data: beyond it, gRPC closes the connection
    (``too_many_pings``). Streams beyond ``max_streams`` on one connection wait for a free slot
    (HTTP/2 flow control; the client's deadline, if any, is what ends the wait). The load tool
    holds its 10,000 streams over 4 connections (``--channels``): 2,500 each and the games' own.
    """

    keepalive_time_ms: int = 60_000
    keepalive_timeout_ms: int = 20_000
    max_idle_ms: int = 300_000
    min_ping_interval_ms: int = 10_000
    max_ping_strikes: int = 2
    max_streams: int = 8192

    def options(self) -> list[tuple[str, int]]:
        return [
            ("grpc.keepalive_time_ms", self.keepalive_time_ms),
            ("grpc.keepalive_timeout_ms", self.keepalive_timeout_ms),
            # The server's own pings keep going on a connection with streams but no data (a
            # stream waiting for a move): 0 is "no limit" to the pings it sends.
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_ping_interval_without_data_ms", self.min_ping_interval_ms),
            ("grpc.http2.min_recv_ping_interval_without_data_ms", self.min_ping_interval_ms),
            ("grpc.http2.max_ping_strikes", self.max_ping_strikes),
            ("grpc.max_connection_idle_ms", self.max_idle_ms),
            ("grpc.max_concurrent_streams", self.max_streams),
        ]


class PortInUse(RuntimeError):
    """The address cannot be listened on: taken (``busy``: another server may be there), or
    not one this machine can listen on (a malformed address, a host that is not this one)."""

    def __init__(self, message: str, busy: bool = True) -> None:
        super().__init__(message)
        self.busy = busy

    def hint(self) -> str:
        """The message, with the likely cause when the address was taken."""
        return f"{self} (is another server running there?)" if self.busy else str(self)


@dataclass
class Serving:
    #: The process's gRPC servers on the port (``listeners``): the same services on one core.
    servers: tuple[grpc.aio.Server, ...]
    port: int
    core: Croupier
    #: Health checking, which says NOT_SERVING from the start of a shutdown (service/shutdown.py).
    health: Health

    async def start(self) -> None:
        for server in self.servers:
            await server.start()

    async def stop(self, grace: float | None) -> None:
        """Stop every listener (the same grace for all); returns once every call is over."""
        await asyncio.gather(*(server.stop(grace) for server in self.servers))


def claim(address: str) -> str:
    """``address`` with its port (port 0: a free one), once a bind of every address its host
    names shows the port free there: the listeners share the port (SO_REUSEPORT), and must not
    share it with a server already on it. (The bind is as gRPC binds, SO_REUSEADDR: a port whose
    last server's connections linger in TIME_WAIT is free; one a server listens on is not.)"""
    host = address.rpartition(":")[0]
    name = host.strip("[]")
    port = port_of(address)
    if port is None:
        raise PortInUse(
            f"cannot listen on {address!r}: give HOST:PORT, a port from 0 to {MAX_PORT}",
            busy=False,
        )
    try:
        found = [(family, where[0]) for family, *_, where in socket.getaddrinfo(name or None, port)]
    except OSError as error:  # a host name that does not resolve
        raise PortInUse(f"cannot listen on {address}: {error}", busy=False) from None
    if name == "localhost":  # gRPC binds both loopbacks, whatever the resolver says
        found += [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")]
    bound = False
    for family, ip in dict.fromkeys(found):
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((ip, port))
            except OSError as error:
                if error.errno == errno.EADDRNOTAVAIL:
                    continue  # not an address of this machine (no IPv6): gRPC skips it too
                raise PortInUse(
                    f"cannot listen on {address}: {error}", busy=error.errno == errno.EADDRINUSE
                ) from None
            bound = True
            # Port 0: the first address picks a free port, the others must have it too.
            port = port or probe.getsockname()[1]
    if not bound:
        raise PortInUse(f"cannot listen on {address}: not an address of this machine", busy=False)
    return f"{host}:{port}"


async def create_server(
    address: str,
    store: EventStore,
    signer: TokenSigner,
    clock: Clock = now_ms,
    seed_source: SeedSource = fresh_seed,
    reuse_port: bool = False,
    rate_limit: RateLimit | None = None,
    limits: ConnectionLimits | None = None,
    *,
    studio_keys: KeyRing,
    credentials: grpc.ServerCredentials | None = None,
    tracer_provider: TracerProvider | None = None,
    listeners: int = 1,
    replay_keys: ReplayKeys | None = None,
) -> Serving:
    """A server bound to ``address`` (port 0 picks a free one), not yet started: ``listeners``
    gRPC servers on the port, one core behind them (``config.DEFAULT_LISTENERS`` says why). With
    ``reuse_port`` it shares the port with the other workers of ``serve --workers`` (SO_REUSEPORT);
    without, a busy port fails. ``studio_keys`` verify the studio's credentials (CreateGame) and
    its player tokens (recall). With ``credentials`` (service/tls.py) it serves TLS only. It
    counts into the process's Prometheus metrics (:mod:`croupier.service.metrics`); with a
    ``tracer_provider``, it traces calls and store calls (:mod:`croupier.service.tracing`)."""
    counted = metrics()
    tracer = tracing.tracer(tracer_provider) if tracer_provider is not None else None
    core = Croupier(
        ObservedStore(store, counted, tracer),
        signer,
        clock,
        seed_source,
        rate_limit=rate_limit,
        studio_keys=studio_keys,
        observer=counted,
        replay_keys=replay_keys,
    )
    await core.start()
    if address.startswith("unix:"):
        listeners = 1  # a socket file: one listener (port sharing is for TCP ports)
    shared = reuse_port or listeners > 1
    try:
        if not reuse_port and not address.startswith("unix:"):
            # Every address the host names must be free, even for one listener: gRPC binds those
            # it can and serves there (localhost: on [::1] alone, beside another server holding
            # 127.0.0.1, whose IPv4 clients it would then never see).
            address = claim(address)
    except PortInUse:
        await core.close()
        raise
    # The tracing interceptor first: its span is current while ours logs and counts the call.
    traced = [tracing.server_interceptor(tracer_provider)] if tracer_provider is not None else []
    interceptors = [*traced, CallInterceptor(core, f"/{SERVICE_NAME}/", counted)]
    servicer = GameServicer(core)
    health_servicer = Health(("", SERVICE_NAME))
    servers: list[grpc.aio.Server] = []
    port, why = 0, ""
    for _ in range(max(1, listeners)):
        server = grpc.aio.server(
            interceptors=interceptors,
            # Port sharing only for the listeners of one process and the workers of one group: a
            # second server on a busy port must fail, not share it silently (tokens would then
            # fail at random, each with its secret).
            options=[
                *PENDING,
                *(limits or ConnectionLimits()).options(),
                ("grpc.so_reuseport", 1 if shared else 0),
            ],
        )
        service_pb2_grpc.add_GameServiceServicer_to_server(servicer, server)
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        # Reflection v1 and v1alpha (service/reflection.py).
        reflection.enable_server_reflection((SERVICE_NAME, HEALTH_NAME), server)
        # The first binds the address (port 0: a free port), the others the port it got.
        at = address if not servers else f"{address.rpartition(':')[0]}:{port}"
        try:
            bound = (
                server.add_insecure_port(at)
                if credentials is None
                else server.add_secure_port(at, credentials)
            )
        except RuntimeError as error:
            bound, why = 0, f": {error}"
        if bound == 0 or (servers and bound != port):
            port = 0
            break
        port = bound
        servers.append(server)
    if port == 0:
        for bound_server in servers:  # the listeners bound before one could not be
            await bound_server.stop(None)
        await core.close()  # its sweeper and workers go with the server that never was
        raise PortInUse(f"cannot listen on {address}{why}")
    return Serving(tuple(servers), port, core, health_servicer)


class ServerThread:
    """A server on its own thread and event loop; ``start`` returns once it listens."""

    def __init__(
        self,
        address: str,
        store: EventStore,
        signer: TokenSigner,
        clock: Clock = now_ms,
        seed_source: SeedSource = fresh_seed,
        rate_limit: RateLimit | None = None,
        limits: ConnectionLimits | None = None,
        *,
        studio_keys: KeyRing,
        http_address: str | None = None,
        cors_origins: Sequence[str] = (),
        tracer_provider: TracerProvider | None = None,
        listeners: int = 1,
        replay_keys: ReplayKeys | None = None,
    ) -> None:
        self._args = (address, store, signer, clock, seed_source)
        self._replay_keys = replay_keys
        self._listeners = listeners
        self._limits = (rate_limit, limits)
        self._studio_keys = studio_keys
        # The HTTP listener (service/http.py) on the same loop and core, when asked for.
        self._http_args = (http_address, tuple(cors_origins))
        self._http: HttpListener | None = None
        self._tracer_provider = tracer_provider
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="grpc-aio", daemon=True)
        self._serving: Serving | None = None

    @property
    def serving(self) -> Serving:
        if self._serving is None:
            raise RuntimeError("start the server first")
        return self._serving

    @property
    def port(self) -> int:
        return self.serving.port

    @property
    def core(self) -> Croupier:
        return self.serving.core

    @property
    def http_port(self) -> int:
        """The HTTP listener's port (started with ``http_address``)."""
        if self._http is None:
            raise RuntimeError("start the server with an http_address first")
        return self._http.port

    def call(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` (a use case of :attr:`core`) on the server's loop and wait for it."""
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def start(self) -> int:
        self._thread.start()
        self._serving = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        return self._serving.port

    async def _start(self) -> Serving:
        rate_limit, limits = self._limits
        serving = await create_server(
            *self._args,
            rate_limit=rate_limit,
            limits=limits,
            studio_keys=self._studio_keys,
            tracer_provider=self._tracer_provider,
            listeners=self._listeners,
            replay_keys=self._replay_keys,
        )
        try:
            await serving.start()
            http_address, cors_origins = self._http_args
            if http_address is not None:
                from croupier.service.http import HttpListener, create_http_app
                from croupier.service.metrics import asgi_app

                app = create_http_app(
                    serving.core, cors_origins=cors_origins, mounts={"/metrics": asgi_app()}
                )
                self._http = HttpListener(app, http_address, grace_s=0.1)
                await self._http.start()
        except BaseException:
            await serving.stop(None)
            await serving.core.close()
            raise
        return serving

    def stop(self, grace: float | None = None) -> None:
        serving = self._serving
        try:
            if self._http is not None:
                asyncio.run_coroutine_threadsafe(self._http.stop(), self._loop).result()
            if serving is not None:
                try:
                    asyncio.run_coroutine_threadsafe(serving.stop(grace), self._loop).result()
                finally:
                    asyncio.run_coroutine_threadsafe(serving.core.close(), self._loop).result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()
