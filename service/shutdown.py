"""Graceful shutdown (SIGTERM, SIGINT): what a replica does before it exits, so that its clients
move to another one without losing anything (``docs/operations.md``, "Shutdown").

In order: health checking says ``NOT_SERVING`` for every service at once (load balancers and
readiness probes stop sending calls); with a delay (``--shutdown-delay``), everything else is
served on for that long, so that balancers which poll health see it before the port closes;
then every open stream (``StreamEvents``, ``Play``) ends with
``UNAVAILABLE``, reason ``SERVER_SHUTTING_DOWN`` and the last version it sent (``after_version``),
from which its client resumes on another replica; the server refuses new calls and lets the
unary calls in flight finish within the grace period, then cancels what is left.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click
import grpc
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc

from croupier.service.config import env_default
from croupier.service.options import EnvOption

if TYPE_CHECKING:  # the server builds this servicer; only the type comes back here
    from croupier.service.server import Serving

log = structlog.get_logger("croupier")

#: Seconds the unary calls in flight have to finish once a shutdown begins (``--shutdown-grace``).
DEFAULT_GRACE_S = 10.0
GRACE_ENV = "CROUPIER_SHUTDOWN_GRACE"

#: Seconds health says NOT_SERVING while every call is still served, before the drain
#: (``--shutdown-delay``): none by default; behind a balancer that polls health, its period.
DEFAULT_DELAY_S = 0.0
DELAY_ENV = "CROUPIER_SHUTDOWN_DELAY"

F = TypeVar("F", bound=Callable[..., Any])

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE_UNKNOWN = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN


class Health(health_pb2_grpc.HealthServicer):
    """``grpc.health.v1.Health`` (Check and Watch) for a server that shuts down gracefully.

    It is grpc_health's servicer but for one thing: a ``Watch`` stream ends (OK) once it has
    said ``NOT_SERVING`` at the shutdown. gRPC's client-side health checking holds a Watch open
    on every connection; grpc_health's would hold the server up for the whole grace period."""

    def __init__(self, services: tuple[str, ...]) -> None:
        self._status: dict[str, int] = dict.fromkeys(services, SERVING)
        self._changed = asyncio.Condition()
        self._closing = False

    @property
    def closing(self) -> bool:
        return self._closing

    def status(self, service: str) -> int | None:
        return self._status.get(service)

    async def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> health_pb2.HealthCheckResponse:
        status = self._status.get(request.service)
        if status is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no service {request.service!r}")
        return health_pb2.HealthCheckResponse(status=status)

    async def Watch(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        last: int | None = None
        async with self._changed:
            while True:
                status = self._status.get(request.service, SERVICE_UNKNOWN)
                if status != last:
                    await context.write(health_pb2.HealthCheckResponse(status=status))
                    last = status
                if self._closing:
                    return
                await self._changed.wait()

    async def set(self, service: str, status: int) -> None:
        """Say how ``service`` is (ignored once the shutdown began: it stays NOT_SERVING)."""
        async with self._changed:
            if not self._closing:
                self._status[service] = status
                self._changed.notify_all()

    async def enter_graceful_shutdown(self) -> None:
        """Every service NOT_SERVING for good; the watchers hear it, then their streams end."""
        async with self._changed:
            self._closing = True
            self._status = dict.fromkeys(self._status, NOT_SERVING)
            self._changed.notify_all()


async def not_serving_for(serving: Serving, delay: float) -> None:
    """Health ``NOT_SERVING`` for ``delay`` seconds before the drain, every call (new ones
    included) and stream still served: a balancer that polls health every few seconds takes the
    replica out of its rotation before its port closes, rather than learning of the stop from a
    refused connection (docs/operations.md, "Shutdown")."""
    if delay <= 0:
        return
    log.info("not serving", delay_s=delay)
    await serving.health.enter_graceful_shutdown()
    await asyncio.sleep(delay)


async def shut_down(serving: Serving, grace: float) -> None:
    """Stop ``serving`` gracefully (the module's order); returns once every call is over (the
    last ones cancelled after ``grace`` seconds). The core is left open: close it after."""
    log.info("shutting down", grace_s=grace, streams=serving.core.notifier.streams())
    await serving.health.enter_graceful_shutdown()
    serving.core.drain()
    await serving.stop(grace)
    log.info("shut down")


def _seconds_option(name: str, env: str, default: float, help: str) -> Callable[[F], F]:
    """A ``serve`` option of seconds, also read from ``env``."""
    return click.option(
        name,
        cls=EnvOption,
        env=env,
        type=click.FloatRange(0),
        default=env_default(env, default),
        show_default=f"{default:g}",
        help=f"{help} Environment: {env}.",
    )


#: ``serve --shutdown-grace`` (also ``CROUPIER_SHUTDOWN_GRACE``).
grace_option = _seconds_option(
    "--shutdown-grace",
    GRACE_ENV,
    DEFAULT_GRACE_S,
    "Seconds the calls in flight have to finish after SIGTERM or SIGINT (streams end at once "
    "with UNAVAILABLE SERVER_SHUTTING_DOWN).",
)

#: ``serve --shutdown-delay`` (also ``CROUPIER_SHUTDOWN_DELAY``).
delay_option = _seconds_option(
    "--shutdown-delay",
    DELAY_ENV,
    DEFAULT_DELAY_S,
    "Seconds health says NOT_SERVING after SIGTERM or SIGINT while every call is still served, "
    "before the drain (--shutdown-grace): behind a balancer that polls health, its polling "
    "period, so that it stops sending calls before the port closes.",
)
