"""OpenTelemetry traces: off by default, on with the standard ``OTEL_*`` environment variables.

Tracing is on when ``OTEL_TRACES_EXPORTER`` names an exporter (``otlp``, ``console``…; ``none``
or unset: off), unless ``OTEL_SDK_DISABLED=true``. The SDK then configures itself from the
environment, as ``opentelemetry-instrument`` would: the exporter and its endpoint
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``…_PROTOCOL``,
``…_HEADERS``), the resource (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``), the sampler
(``OTEL_TRACES_SAMPLER``, ``OTEL_TRACES_SAMPLER_ARG``) and the batching (``OTEL_BSP_*``).

With tracing on, the server gets OpenTelemetry's grpc.aio server interceptor (a SERVER span per
call, joined to the caller's trace by its ``traceparent`` metadata;
``OTEL_PYTHON_GRPC_EXCLUDED_SERVICES`` leaves services out, such as
``grpc.health.v1.Health``), each event-store call is a CLIENT span under it
(:mod:`croupier.service.store.observed`), and log lines carry ``trace_id`` and ``span_id``
(:func:`croupier.service.logs.add_trace_ids`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import grpc
from opentelemetry import trace
from opentelemetry.instrumentation.grpc import aio_server_interceptor, filters

# The SDK's own environment-driven set-up (what `opentelemetry-instrument` runs; the distro
# packages only subclass it). Private by name, so the SDK is pinned exactly in pyproject.toml.
from opentelemetry.sdk._configuration import _OTelSDKConfigurator
from opentelemetry.sdk.trace import TracerProvider

TRACES_EXPORTER_ENV = "OTEL_TRACES_EXPORTER"
SDK_DISABLED_ENV = "OTEL_SDK_DISABLED"
EXCLUDED_SERVICES_ENV = "OTEL_PYTHON_GRPC_EXCLUDED_SERVICES"
#: The instrumentation scope of Croupier's own spans (the store's).
TRACER_NAME = "croupier"


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for traces (an exporter named, the SDK not disabled)."""
    env = os.environ if env is None else env
    if env.get(SDK_DISABLED_ENV, "").strip().lower() == "true":
        return False
    exporters = env.get(TRACES_EXPORTER_ENV, "").strip().lower()
    return bool(exporters) and exporters != "none"


def configure() -> TracerProvider | None:
    """The process's tracer provider, set up from the environment (and made the global one), or
    ``None`` when tracing is off. ``ValueError``/``RuntimeError`` for an exporter that is not
    installed or a protocol that is unknown."""
    if not enabled():
        return None
    _OTelSDKConfigurator().configure()  # type: ignore[no-untyped-call]
    provider = trace.get_tracer_provider()
    return provider if isinstance(provider, TracerProvider) else None


def server_interceptor(provider: TracerProvider) -> grpc.aio.ServerInterceptor:
    """OpenTelemetry's grpc.aio server interceptor, spans from ``provider``; the services named
    in ``OTEL_PYTHON_GRPC_EXCLUDED_SERVICES`` (comma-separated) are left out."""
    excluded = [s.strip() for s in os.environ.get(EXCLUDED_SERVICES_ENV, "").split(",")]
    names = [s for s in excluded if s]
    filter_ = (
        filters.negate(filters.any_of(*(filters.service_name(n) for n in names))) if names else None
    )
    interceptor: grpc.aio.ServerInterceptor = aio_server_interceptor(  # type: ignore[no-untyped-call]
        tracer_provider=provider, filter_=filter_
    )
    return interceptor


def tracer(provider: TracerProvider) -> trace.Tracer:
    return provider.get_tracer(TRACER_NAME)
