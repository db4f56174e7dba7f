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
    """An ASGI app shaped like connectrpc's gRPC handlers: it streams ``size`` bytes and, when
    cancelled, still ends its response with trailers (a status), which waits for the bytes
    before them to go out."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.started = asyncio.Event()
        self.ended = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [], "trailers": True})
        self.started.set()
        try:
            await send({"type": "http.response.body", "body": b"x" * self.size, "more_body": True})
            await asyncio.Event().wait()
        finally:
            try:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                await send({"type": "http.response.trailers", "headers": [(b"grpc-status", b"0")]})
            finally:
                self.ended.set()


async def _answer(scope: Scope, receive: Receive, send: Send) -> None:
    """An ASGI app that answers at once."""
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


class _Client:
    """An HTTP/2 client (prior knowledge) on one connection, with the stream window it says."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, window: int):
        self.reader, self.writer = reader, writer
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.h2.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window}
        )
        self.h2.initiate_connection()
        if window:
            self.h2.increment_flow_control_window(2**30)  # the connection's too

    @classmethod
    async def connect(cls, port: int, window: int = 65_535) -> _Client:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, window)

    async def request(self, stream_id: int) -> None:
        self.h2.send_headers(
            stream_id,
            [(":method", "GET"), (":path", "/"), (":scheme", "http"), (":authority", "x")]
            + [("te", "trailers")],
            end_stream=True,
        )
        self.writer.write(self.h2.data_to_send())
        await self.writer.drain()

    async def answered(self, stream_id: int) -> bool:
        """Whether the response on ``stream_id`` comes whole (the connection still serves)."""
        while data := await self.reader.read(65_536):
            for event in self.h2.receive_data(data):
                if isinstance(event, h2.events.StreamEnded) and event.stream_id == stream_id:
                    return True
            self.writer.write(self.h2.data_to_send())
        return False


@pytest.mark.parametrize(
    ("window", "size"),
    [(0, 100_000), (2**31 - 1, 64 * 2**20)],
    ids=["reads-no-stream-data", "reads-nothing-off-the-socket"],
)
def test_a_response_a_client_never_reads_does_not_keep_the_listener_from_stopping(
    window: int, size: int
) -> None:
    """A client that reads nothing (its stream window 0, or nothing off the socket, so that
    the handler waits for the socket itself) while the handler, cancelled at the end of the
    grace, waits to send the end of its response: the connection is cut a moment after the
    grace, the handler ends, and the listener with it (before, the handler waited for good).
    Another listener of the process is not touched: its connection still answers."""

    async def run() -> None:
        app = _EndsItsResponseWhenCancelled(size)
        stuck = HttpListener(app, "127.0.0.1:0", grace_s=0.2)  # type: ignore[arg-type]
        other = HttpListener(_answer, "127.0.0.1:0", grace_s=0.2)  # type: ignore[arg-type]
        neighbour = await _Client.connect(await other.start())
        await neighbour.request(1)
        assert await asyncio.wait_for(neighbour.answered(1), HANG_S)
        silent = await _Client.connect(await stuck.start(), window)
        await silent.request(1)
        await asyncio.wait_for(app.started.wait(), HANG_S)
        await asyncio.sleep(0.2)  # the response has filled what it may
        await asyncio.wait_for(stuck.stop(), HANG_S)
        assert app.ended.is_set()
        await neighbour.request(3)
        assert await asyncio.wait_for(neighbour.answered(3), HANG_S)
        await other.stop()
        for client in (silent, neighbour):
            client.writer.close()

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


def test_connections_a_busy_listener_has_not_accepted_yet_queue_rather_than_wait() -> None:
    """Three hundred clients connect while the listener's event loop is busy: the kernel
    completes every handshake and queues the connections (4,096 deep) until the loop accepts
    them. With hypercorn's own backlog of 100, connections past it had their handshake dropped
    and waited for the client's retry, a second later (a browser reconnect storm)."""
    loop = asyncio.new_event_loop()
    listener = HttpListener(_answer, "127.0.0.1:0", grace_s=0.2)  # type: ignore[arg-type]
    port = loop.run_until_complete(listener.start())
    loop.run_until_complete(asyncio.sleep(0.1))  # hypercorn is serving
    clients: list[socket.socket] = []
    connected = 0
    try:
        for _ in range(300):  # the loop is not running: nothing is accepted meanwhile
            client = socket.socket()
            clients.append(client)
            client.settimeout(0.9)  # under the client's first retry of a dropped handshake
            try:
                client.connect(("127.0.0.1", port))
            except TimeoutError:
                break  # its handshake was dropped: the queue is full
            connected += 1
    finally:
        for client in clients:
            client.close()
        loop.run_until_complete(listener.stop())
        loop.close()
    assert connected == 300


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
