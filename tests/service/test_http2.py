"""The HTTP listener's HTTP/2 connections (service/http2.py): late data for a stream whose response
is over does not drop the connection, a response that can never be sent does not keep the server
from stopping, and the load tool plays over the HTTP port losing no stream, the server then
stopping at SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import time
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.events
import h2.settings
import pytest
from click.testing import CliRunner
from hypercorn.asyncio.worker_context import WorkerContext
from hypercorn.config import Config
from hypercorn.events import Closed, Event, Updated
from hypercorn.protocol.h2 import H2Protocol
from hypercorn.typing import ConnectionState
from starlette.types import Receive, Scope, Send

from croupier.app.tokens import mint_studio_token
from croupier.service import http2
from croupier.service.cli import main
from croupier.service.http import HttpListener
from tests.service.processes import STUDIO_SECRET, serve, stop

#: A bug must fail these tests, not hang them.
HANG_S = 30.0


def _protocol(kind: type[H2Protocol], told: list[Event] | None = None) -> H2Protocol:
    """A connection's protocol with no socket behind it: what it sends the connection goes to
    ``told``."""

    async def send(event: Event) -> None:
        if told is not None:
            told.append(event)

    return kind(
        None,  # type: ignore[arg-type]  # no stream is made: no app is called
        Config(),
        WorkerContext(None),
        None,  # type: ignore[arg-type]
        ConnectionState({}),
        False,
        None,
        None,
        send,
    )


def _late_data(stream_id: int) -> h2.events.DataReceived:
    return h2.events.DataReceived(stream_id=stream_id, data=b"", flow_controlled_length=0)


def test_late_data_for_a_finished_stream_is_passed_over() -> None:
    """The end of a request that comes after its response (a client half-closing a Play stream
    the server ended) is passed over; hypercorn's own protocol raised and dropped the connection."""

    async def run() -> None:
        with pytest.raises(KeyError):
            await _protocol(H2Protocol)._handle_events([_late_data(7)])
        mended = _protocol(http2.MendedH2Protocol)
        await mended._handle_events([_late_data(7), _late_data(9)])
        assert mended.streams == {}

    asyncio.run(run())


class _EndsItsResponseWhenCancelled:
    """An ASGI app shaped like connectrpc's handlers: it streams a response and, when cancelled,
    still ends it (a status at the end), which waits for the bytes before it to go out."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.ended = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        self.started.set()
        try:
            await send({"type": "http.response.body", "body": b"x" * 100_000, "more_body": True})
            await asyncio.Event().wait()
        finally:
            try:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            finally:
                self.ended.set()


def test_a_response_a_client_never_reads_does_not_keep_the_listener_from_stopping() -> None:
    """A client that reads nothing (its stream window 0) while the handler, cancelled at the end
    of the grace, waits to send the end of its response: that wait is let go a moment after the
    grace, the handler ends, and the listener with it (before, the handler waited for good)."""

    async def run() -> None:
        app = _EndsItsResponseWhenCancelled()
        listener = HttpListener(app, "127.0.0.1:0", grace_s=0.2)  # type: ignore[arg-type]
        port = await listener.start()
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        client.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0}
        )
        client.initiate_connection()
        client.send_headers(
            1,
            [(":method", "GET"), (":path", "/"), (":scheme", "http"), (":authority", "x")],
            end_stream=True,
        )
        writer.write(client.data_to_send())
        await writer.drain()
        await asyncio.wait_for(app.started.wait(), HANG_S)
        await asyncio.wait_for(listener.stop(), HANG_S)
        assert app.ended.is_set()
        writer.close()

    asyncio.run(run())


def test_a_connection_left_idle_while_the_server_stops_is_closed() -> None:
    """Idle during a shutdown, a connection is closed rather than given an idle timer (hypercorn
    asks its task group, then shutting down, for one: refused, the timer never awaited); idle
    otherwise, it is told so as before."""

    async def run() -> None:
        told: list[Event] = []
        protocol = _protocol(http2.MendedH2Protocol, told)
        await protocol.send(Updated(idle=True))
        await protocol.context.terminated.set()
        await protocol.send(Updated(idle=False))
        await protocol.send(Updated(idle=True))
        assert told == [Updated(idle=True), Updated(idle=False), Closed()]

    asyncio.run(run())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.slow
def test_the_load_tool_plays_over_the_http_port_losing_no_stream(tmp_path: Path) -> None:
    """Bots on Play streams over the HTTP listener (gRPC over HTTP/2), 16 games at once: no
    connection is dropped (before the mend, a dozen seats' streams every second or so), and the
    server stops at SIGTERM (before, a dropped connection's handlers kept it up for good)."""
    http_address = f"127.0.0.1:{_free_port()}"
    log = tmp_path / "serve.log"
    served = serve(log, f"sqlite:///{tmp_path / 'games.sqlite3'}", "--http-address", http_address)
    try:
        out = tmp_path / "report.json"
        result = CliRunner().invoke(
            main,
            [
                *("load", "--address", http_address, "--duration", "3"),
                *("--games-in-flight", "16", "--json", str(out), "--quiet"),
                *("--studio-key", mint_studio_token(STUDIO_SECRET, int(time.time()) + 600)),
            ],
        )
        assert result.exit_code == 0, result.output
        report: dict[str, Any] = json.loads(out.read_text())
        assert report["moves"] > 0 and report["errors"] == {}
        assert report["play_streams_resumed"] == 0
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(timeout=HANG_S) == 0
        assert "Unhandled exception" not in served.output()
    finally:
        stop(served)
