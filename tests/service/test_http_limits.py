"""What one client may hold of the HTTP listener (service/http_limits.py): a request whose body
stops coming is answered 408 and its connection closed after the body timeout, while a stream
whose client sends nothing (StreamEvents over HTTP/1.1, Play over HTTP/2) outlives it;
connections past the cap are closed as soon as they are accepted; and asyncio's flood of
``socket.accept() out of system resource`` lines (descriptors gone) is one line every so often."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from pyqwest import Client, HTTPTransport, HTTPVersion
from structlog.testing import capture_logs

from croupier.service import logs
from croupier.service.bots import auth
from croupier.service.http import HttpListener, create_http_app
from croupier.service.http_limits import MAX_HTTP_CONNECTIONS, connection_cap
from croupier.v1 import service_pb2
from croupier.v1.service_connect import GameServiceClient

from .conftest import studio_token
from .test_http import GIN, TIMEOUT_MS, Served, _serve, bearer

#: The body timeout of these tests' listeners (seconds): the production one is 30.
BODY_TIMEOUT_S = 1.0
#: How long the streams' clients stay silent: well past the body timeout.
SILENT_S = 3 * BODY_TIMEOUT_S
#: A bug must fail these tests, not hang them.
HANG_S = 20.0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with _serve(tmp_path_factory.mktemp("limits")) as running:
        yield running


@contextlib.contextmanager
def listener(served: Served, **kwargs: float | int) -> Iterator[int]:
    """A second HTTP listener of the same server, with these settings; its port."""
    http = HttpListener(
        create_http_app(served.thread.core),
        "127.0.0.1:0",
        grace_s=0.1,
        **kwargs,  # type: ignore[arg-type]
    )
    port = served.thread.call(http.start())
    try:
        yield port
    finally:
        served.thread.call(http.stop())


def _read_until_closed(sock: socket.socket) -> bytes:
    sock.settimeout(HANG_S)
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    return got


def test_a_request_body_that_stops_coming_is_answered_408_and_its_connection_closed(
    served: Served,
) -> None:
    """The chaos test's client: a million bytes announced, one sent, then nothing. Before, its
    connection was held for ever (hypercorn's idle timeout only runs between requests)."""
    with listener(served, body_timeout_s=BODY_TIMEOUT_S) as port:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(
                b"POST /croupier.v1.GameService/ListPresets HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"
            )
            began = time.monotonic()
            answer = _read_until_closed(sock)
            took = time.monotonic() - began
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert b"connection: close" in answer.lower()
        assert BODY_TIMEOUT_S * 0.9 <= took < BODY_TIMEOUT_S + 3

        # A body that comes, however slowly, is read: each wait is bounded, not the whole body.
        body = json.dumps({"kind": "GAME_KIND_GIN"}).encode()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(
                b"POST /croupier.v1.GameService/ListPresets HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nConnection: close\r\n"
                b"Content-Length: %d\r\n\r\n" % len(body)
            )
            for byte in body[:4]:
                time.sleep(BODY_TIMEOUT_S / 2)
                sock.sendall(bytes([byte]))
            sock.sendall(body[4:])
            answer = _read_until_closed(sock)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


def _move(served: Served, game_id: str, tokens: list[str]) -> int:
    """One move by a seat to act, over gRPC; the game's new version."""
    view = served.stub.GetView(
        service_pb2.GetViewRequest(game_id=game_id), metadata=auth(tokens[0])
    )
    seat = view.to_act[0].seat
    moves = served.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game_id), metadata=auth(tokens[seat])
    )
    reply = served.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game_id,
            command_id=f"move-{view.version}",
            expected_version=view.version,
            command=moves.moves[0].command,
        ),
        metadata=auth(tokens[seat]),
    )
    return int(reply.version)


def test_a_stream_whose_client_sends_nothing_outlives_the_body_timeout(served: Served) -> None:
    """StreamEvents over Connect and HTTP/1.1, as a browser holds it: the request is whole, the
    client then sends nothing while the response streams. (Hypercorn's own read_timeout would
    have cut it: it bounds every read of the connection.)"""
    game = served.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=auth(studio_token())
    )
    tokens = [t.token for t in game.tokens]
    message = json.dumps({"gameId": game.game_id, "afterVersion": 0}).encode()
    envelope = b"\x00" + len(message).to_bytes(4, "big") + message
    with (
        listener(served, body_timeout_s=BODY_TIMEOUT_S) as port,
        socket.create_connection(("127.0.0.1", port)) as sock,
    ):
        sock.settimeout(HANG_S)
        sock.sendall(
            b"POST /croupier.v1.GameService/StreamEvents HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/connect+json\r\nConnect-Protocol-Version: 1\r\n"
            b"Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s"
            % (tokens[1].encode(), len(envelope), envelope)
        )
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 "), first[:300]
        time.sleep(SILENT_S)
        sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            sock.recv(65536)  # what came before the silence (the rest of the deal)
        sock.settimeout(HANG_S)
        version = _move(served, game.game_id, tokens)
        later = b""
        while not re.search(rb'"version":\s*"%d"' % version, later):
            chunk = sock.recv(65536)
            assert chunk, "the stream was closed"
            later += chunk


def test_a_play_stream_whose_client_is_silent_outlives_the_body_timeout(served: Served) -> None:
    """Play over HTTP/2: its request body is the client's commands, silent between moves."""
    game = served.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=auth(studio_token())
    )
    view = served.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    seat = view.to_act[0].seat

    async def play(url: str) -> service_pb2.PlayResponse:
        outgoing: asyncio.Queue[service_pb2.PlayRequest | None] = asyncio.Queue()

        async def requests() -> AsyncIterator[service_pb2.PlayRequest]:
            while (request := await outgoing.get()) is not None:
                yield request

        await outgoing.put(
            service_pb2.PlayRequest(
                join=service_pb2.PlayJoin(
                    game_id=game.game_id, include=service_pb2.Include(legal_moves=True)
                )
            )
        )
        async with (
            HTTPTransport(http_version=HTTPVersion.HTTP2) as transport,
            GameServiceClient(url, http_client=Client(transport), timeout_ms=TIMEOUT_MS) as http,
        ):
            async for answer in http.play(requests(), headers=bearer(game.tokens[seat].token)):
                if answer.HasField("state") and answer.state.legal_moves:
                    await asyncio.sleep(SILENT_S)
                    move = service_pb2.PlayCommand(
                        command_id="after-a-silence",
                        expected_version=answer.state.version,
                        command=answer.state.legal_moves[0].command,
                    )
                    await outgoing.put(service_pb2.PlayRequest(command=move))
                if answer.HasField("accepted"):
                    await outgoing.put(None)
                    return answer
        raise AssertionError("the stream ended without the move accepted")

    with listener(served, body_timeout_s=BODY_TIMEOUT_S) as port:
        accepted = asyncio.run(play(f"http://127.0.0.1:{port}"))
    assert accepted.accepted.command_id == "after-a-silence"


def test_connections_past_the_cap_are_closed_at_once(served: Served) -> None:
    with listener(served, max_connections=3) as port:
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:
            time.sleep(0.3)  # accepted and counted
            with capture_logs() as logged:
                for _ in range(3):
                    with socket.create_connection(("127.0.0.1", port)) as refused:
                        refused.settimeout(HANG_S)
                        began = time.monotonic()
                        with contextlib.suppress(ConnectionResetError):
                            assert refused.recv(1) == b""
                        assert time.monotonic() - began < 2
            # One warning for the three (the first: the others are counted in the next).
            said = [line for line in logged if line["event"].startswith("http connections refused")]
            assert [(line["refused"], line["since_s"]) for line in said] == [(1, None)], logged
        finally:
            for sock in held:
                sock.close()
        time.sleep(0.3)  # their places given back at once (not after the keep-alive timeout)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert _read_until_closed(sock).startswith(b"HTTP/1.1 200 ")


def test_the_cap_is_a_share_of_the_descriptor_limit() -> None:
    assert connection_cap(1024) == 768
    assert connection_cap(20_000) == 15_000
    assert connection_cap(1_000_000) == MAX_HTTP_CONNECTIONS
    assert connection_cap(1) == 1
    assert 1 <= connection_cap() <= MAX_HTTP_CONNECTIONS


# --- the log -----------------------------------------------------------------------------------

ACCEPT_FAILED = "socket.accept() out of system resource"


def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, None)


def test_repeats_are_let_through_once_every_so_often_with_a_count() -> None:
    now = [0.0]
    repeats = logs.Repeats(ACCEPT_FAILED, 10.0, clock=lambda: now[0])
    first = _record(f"{ACCEPT_FAILED}\nexception: OSError(24, 'Too many open files')")
    assert repeats.filter(first)
    assert first.getMessage().startswith(ACCEPT_FAILED + "\n")
    for _ in range(4096):
        now[0] += 0.001
        assert not repeats.filter(_record(f"{ACCEPT_FAILED}\nexception: ..."))
    assert repeats.filter(_record("something else")), "other lines are not touched"
    now[0] = 10.0
    later = _record(f"{ACCEPT_FAILED}\nexception: OSError(24, 'Too many open files')")
    assert repeats.filter(later)
    assert later.getMessage() == (
        f"{ACCEPT_FAILED} (4096 more like it since the last one, not logged)\n"
        "exception: OSError(24, 'Too many open files')"
    )
    now[0] = 25.0
    quiet = _record(ACCEPT_FAILED)
    assert repeats.filter(quiet) and quiet.getMessage() == ACCEPT_FAILED


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_asyncio_accept_failures_are_not_a_flood_in_the_log() -> None:
    """What asyncio does at each failed accept once the descriptors are gone, a thousand times:
    one line (it wrote them all, a traceback each). The filter is the one logs.configure put on
    asyncio's logger (tests/conftest.py configures the logs)."""
    kept = _Kept()
    asyncio_log = logging.getLogger("asyncio")
    asyncio_log.addHandler(kept)
    loop = asyncio.new_event_loop()
    try:
        time.sleep(logs.REPEAT_EVERY_S if _accept_failure_logged_lately() else 0)
        for _ in range(1000):
            loop.call_exception_handler(
                {"message": ACCEPT_FAILED, "exception": OSError(24, "Too many open files")}
            )
    finally:
        loop.close()
        asyncio_log.removeHandler(kept)
    failed = [r for r in kept.records if r.getMessage().startswith(ACCEPT_FAILED)]
    assert len(failed) == 1 and failed[0].exc_info is not None


def _accept_failure_logged_lately() -> bool:
    """Whether the configured filter let one through less than its interval ago (this test run
    again in the same process)."""
    filtering = [f for f in logging.getLogger("asyncio").filters if isinstance(f, logs.Repeats)]
    assert filtering, "logs.configure puts the filter on asyncio's logger"
    last = filtering[0].throttle.last
    return last is not None and time.monotonic() - last < logs.REPEAT_EVERY_S


def test_the_soft_descriptor_limit_is_raised_to_the_hard_one() -> None:
    """In a process of its own (the limit is the process's): the common soft default, 1024,
    would cap the HTTP listener at 768 connections on a machine that allows far more."""
    script = (
        "import resource\n"
        "from croupier.service.http_limits import raise_descriptor_limit\n"
        "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "print(hard, raise_descriptor_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
        "print(raise_descriptor_limit())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    hard = first.split(" ", 1)[0]
    assert first == f"{hard} (256, {hard}) {hard}", first
    assert second == "None"  # already at the hard limit
