"""OpenTelemetry traces (issue 15): off unless the OTEL_* environment asks; a call makes a SERVER
span (joined to the caller's trace) with a CLIENT span per store call under it; the call's log
line carries its trace and span ids. Spans go to the SDK's in-memory exporter."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import structlog
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from croupier.app.tokens import TokenSigner
from croupier.service import logs, tracing
from croupier.service.bots import auth
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

from .conftest import SECRET, STUDIO_KEYS, studio_auth

VIEW = "/croupier.v1.GameService/GetView"
#: A caller's trace (W3C trace context): the server's span joins it.
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture
def traced(
    tmp_path: Path,
) -> Iterator[tuple[service_pb2_grpc.GameServiceStub, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = open_store(f"sqlite:///{tmp_path / 'croupier.sqlite3'}")
    thread = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(SECRET),
        studio_keys=STUDIO_KEYS,
        tracer_provider=provider,
    )
    port = thread.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield service_pb2_grpc.GameServiceStub(channel), exporter
    finally:
        channel.close()
        thread.stop(grace=None)
        store.close()
        provider.shutdown()


def test_a_call_is_a_server_span_with_its_store_calls_under_it(
    traced: tuple[service_pb2_grpc.GameServiceStub, InMemorySpanExporter],
) -> None:
    stub, exporter = traced
    game = stub.CreateGame(
        service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_GIN, seats=2),
        metadata=studio_auth(),
    )
    exporter.clear()
    entries: list[structlog.typing.EventDict] = []
    saved = structlog.get_config()

    def capture(_: object, __: str, event: structlog.typing.EventDict) -> str:
        entries.append(dict(event))
        return ""

    # The service's processors up to the renderer: contextvars, then the trace ids.
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, logs.add_trace_ids, capture],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
    )
    try:
        # A view reads the store (the events since this process's fold), as the caller's child.
        stub.GetView(
            service_pb2.GetViewRequest(game_id=game.game_id),
            metadata=(
                *auth(game.tokens[0].token),
                ("traceparent", f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"),
            ),
        )
    finally:
        structlog.configure(**saved)
    spans = exporter.get_finished_spans()
    (server,) = [s for s in spans if s.name == VIEW]
    assert server.kind == trace.SpanKind.SERVER
    assert server.attributes is not None and server.attributes["rpc.method"] == "GetView"
    # Joined to the caller's trace, as the caller's span's child.
    assert trace.format_trace_id(server.context.trace_id) == CALLER_TRACE
    assert server.parent is not None and trace.format_span_id(server.parent.span_id) == CALLER_SPAN
    store_spans = [s for s in spans if s.name.startswith("store ")]
    assert store_spans, [s.name for s in spans]
    for span in store_spans:
        assert span.kind == trace.SpanKind.CLIENT
        assert span.parent is not None and span.parent.span_id == server.context.span_id
        assert span.context.trace_id == server.context.trace_id
        assert span.attributes is not None and span.attributes["db.system.name"] == "sqlite"
    assert {s.name for s in store_spans} >= {"store load"}
    (line,) = [e for e in entries if e.get("event") == "rpc" and e.get("method") == "GetView"]
    assert line["trace_id"] == CALLER_TRACE
    assert line["span_id"] == trace.format_span_id(server.context.span_id)


def test_a_command_traces_its_append(
    traced: tuple[service_pb2_grpc.GameServiceStub, InMemorySpanExporter],
) -> None:
    stub, exporter = traced
    game = stub.CreateGame(
        service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_GIN, seats=2),
        metadata=studio_auth(),
    )
    (created,) = [s for s in exporter.get_finished_spans() if s.name.endswith("/CreateGame")]
    (write,) = [s for s in exporter.get_finished_spans() if s.name == "store create_game"]
    assert write.parent is not None and write.parent.span_id == created.context.span_id
    assert write.attributes is not None
    assert write.attributes["croupier.game_id"] == game.game_id


def test_a_log_line_outside_a_span_has_no_trace_ids() -> None:
    assert logs.add_trace_ids(None, "info", {"event": "x"}) == {"event": "x"}
    provider = TracerProvider()
    with provider.get_tracer("test").start_as_current_span("work") as span:
        line = logs.add_trace_ids(None, "info", {"event": "x"})
    assert line["trace_id"] == trace.format_trace_id(span.get_span_context().trace_id)
    assert line["span_id"] == trace.format_span_id(span.get_span_context().span_id)


@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({}, False),
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "console,otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_traces_are_off_unless_an_exporter_is_named(env: dict[str, str], on: bool) -> None:
    assert tracing.enabled(env) is on
