"""What one client may hold of the HTTP listener (service/http_limits.py, service/http.py): a
request whose body stops coming, or comes slower than its pace, is answered 408 and its
connection closed after the body timeout, while a stream whose client sends nothing
(StreamEvents over HTTP/1.1, Play over HTTP/2) outlives it; connections past the cap, or past
one client address's, are closed as soon as they are accepted; a call's request is at most
64 KiB, and only a few replay files come at once; and asyncio's flood of ``socket.accept() out
of system resource`` lines (descriptors gone) is one line every so often."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import json
import logging
import re
import select
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyqwest import Client, HTTPTransport, HTTPVersion
from structlog.testing import capture_logs

from croupier.app.limits import MAX_REPLAY_BYTES
from croupier.service import http_limits, logs
from croupier.service.bots import auth
from croupier.service.http import (
    MAX_LARGE_REQUEST_BYTES,
    MAX_REQUEST_BYTES,
    MAX_UPLOADS,
    HttpListener,
    create_http_app,
)
from croupier.service.http_limits import (
    IPV6_CLIENT_PREFIX,
    MAX_HTTP_CONNECTIONS,
    client_of,
    connection_cap,
)
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


def _send_headers(sock: socket.socket, path: str, length: int, content_type: str) -> None:
    sock.sendall(
        b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nConnection: close\r\n"
        b"Content-Length: %d\r\n\r\n" % (path.encode(), content_type.encode(), length)
    )


def test_a_body_trickled_in_is_cut_however_often_its_bytes_come(served: Served) -> None:
    """The security review's client: a byte every quarter of the timeout, never a silence long
    enough to be cut. Before, each wait was bounded but not the whole: the review held 15,000
    connections so, a byte every 20 s each, and the listener refused every browser."""
    body = b" " * 40 + json.dumps({"kind": "GAME_KIND_GIN"}).encode()
    with (
        listener(served, body_timeout_s=BODY_TIMEOUT_S) as port,
        socket.create_connection(("127.0.0.1", port)) as sock,
    ):
        _send_headers(sock, "/croupier.v1.GameService/ListPresets", len(body), "application/json")
        began = time.monotonic()
        for byte in body:  # sixteen times the timeout, were it all sent
            if select.select([sock], [], [], BODY_TIMEOUT_S / 4)[0]:
                break  # answered: sent no more
            sock.sendall(bytes([byte]))
        took = time.monotonic() - began
        answer = _read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert took < BODY_TIMEOUT_S + 2


def test_a_body_that_keeps_the_pace_is_read_however_long_it_takes(served: Served) -> None:
    """Each ``body_min_bytes`` within the timeout: a body that takes longer than the timeout in
    all is read. Each piece comes a quarter of the timeout after the last, so that a loaded
    machine's late wake-up (three quarters of it, 1.5 s) does not read as a client too slow."""
    body = json.dumps({"kind": "GAME_KIND_GIN"}).encode()
    pace, timeout_s = 4, 2 * BODY_TIMEOUT_S
    with (
        listener(served, body_timeout_s=timeout_s, body_min_bytes=pace) as port,
        socket.create_connection(("127.0.0.1", port)) as sock,
    ):
        _send_headers(sock, "/croupier.v1.GameService/ListPresets", len(body), "application/json")
        began = time.monotonic()
        for at in range(0, len(body), pace):
            time.sleep(timeout_s / 4)
            sock.sendall(body[at : at + pace])
        answer = _read_until_closed(sock)
        took = time.monotonic() - began
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert took > 1.5 * timeout_s


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


def test_one_client_address_holds_at_most_its_share_and_others_are_served(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted by address (loopback is not counted in production: here, each loopback address
    is a client, 127.0.0.1 and 127.0.0.2). Before, one address took every connection."""
    monkeypatch.setattr(http_limits, "client_of", lambda address: address[0])
    with listener(served, max_per_address=2) as port:
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        try:
            time.sleep(0.3)  # accepted and counted
            with (
                capture_logs() as logged,
                socket.create_connection(("127.0.0.1", port)) as refused,
            ):
                refused.settimeout(HANG_S)
                began = time.monotonic()
                with contextlib.suppress(ConnectionResetError):
                    assert refused.recv(1) == b""
                assert time.monotonic() - began < 2
            said = [line for line in logged if "one client address" in line["event"]]
            assert [(line["client"], line["max_per_address"]) for line in said] == [
                ("127.0.0.1", 2)
            ], logged
            # Another address is served meanwhile.
            with socket.create_connection(
                ("127.0.0.1", port), source_address=("127.0.0.2", 0)
            ) as other:
                other.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                assert _read_until_closed(other).startswith(b"HTTP/1.1 200 ")
        finally:
            for sock in held:
                sock.close()
        # Their places given back once the listener has seen them closed (asked until then: a
        # loaded machine's event loop may see it late).
        assert _served_before(port, time.monotonic() + HANG_S), "the places were never given back"


def _served_before(port: int, deadline: float) -> bool:
    """Whether a request of a new connection is answered before ``deadline`` (one refused at
    once is made again)."""
    while time.monotonic() < deadline:
        with (
            contextlib.suppress(ConnectionError),
            socket.create_connection(("127.0.0.1", port)) as sock,
        ):
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            if _read_until_closed(sock).startswith(b"HTTP/1.1 200 "):
                return True
        time.sleep(0.05)
    return False


@given(st.ip_addresses(v=4))
def test_an_ipv4_address_is_its_own_client_also_mapped_into_ipv6(ip: ipaddress.IPv4Address) -> None:
    expected = None if ip.is_loopback else str(ip)
    assert client_of((str(ip), 443)) == expected
    assert client_of((f"::ffff:{ip}", 443, 0, 0)) == expected


@given(st.ip_addresses(v=6), st.integers(0, 2 ** (128 - IPV6_CLIENT_PREFIX) - 1))
def test_every_ipv6_address_of_one_prefix_is_one_client(
    ip: ipaddress.IPv6Address, host_bits: int
) -> None:
    """A host may take any address of its /64: counted one by one, it would never be capped."""
    if ip.is_loopback or ip.ipv4_mapped is not None:
        return
    prefix = int(ip) >> (128 - IPV6_CLIENT_PREFIX) << (128 - IPV6_CLIENT_PREFIX)
    neighbour = ipaddress.IPv6Address(prefix | host_bits)
    assert client_of((str(ip), 443, 0, 0)) == client_of((f"{neighbour}%eth0", 443, 0, 2))
    elsewhere = ipaddress.IPv6Address(int(ip) ^ (1 << (128 - IPV6_CLIENT_PREFIX)))
    if elsewhere.ipv4_mapped is None and not elsewhere.is_loopback:
        assert client_of((str(elsewhere), 443, 0, 0)) != client_of((str(ip), 443, 0, 0))


def test_this_machine_and_what_is_no_ip_address_are_not_counted() -> None:
    for address in (("127.0.0.1", 1), ("127.9.9.9", 1), ("::1", 1, 0, 0), ("::ffff:127.0.0.1", 1)):
        assert client_of(address) is None
    assert client_of("/run/croupier.sock") is None
    assert client_of(("not an address", 1)) is None
    assert client_of(()) is None


def _status_and_body(answer: bytes) -> tuple[int, dict[str, object]]:
    """An HTTP/1.1 answer's status and JSON body (sent whole or in chunks)."""
    head, _, body = answer.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        whole = b""
        while (size := int(body.partition(b"\r\n")[0], 16)) > 0:
            chunk_start = body.index(b"\r\n") + 2
            whole += body[chunk_start : chunk_start + size]
            body = body[chunk_start + size + 2 :]
        body = whole
    return int(head.split(b" ", 2)[1]), json.loads(body) if body.strip() else {}


def test_a_call_s_request_over_64_kib_is_refused_but_a_replay_file_is_read(
    served: Served,
) -> None:
    """Before, every call took 4 MiB, and an HTTP/2 connection of 100 such requests coming held
    400 MB of the process."""
    padded = b'{"kind": "GAME_KIND_GIN"' + b" " * MAX_REQUEST_BYTES + b"}"
    with listener(served) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        _send_headers(sock, "/croupier.v1.GameService/ListPresets", len(padded), "application/json")
        sock.sendall(padded)
        status, answer = _status_and_body(_read_until_closed(sock))
    assert (status, answer["code"]) == (429, "resource_exhausted"), answer

    not_a_replay = b"\x0a" + b"\x00" * (MAX_LARGE_REQUEST_BYTES // 4)
    with listener(served) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        _send_headers(
            sock, "/croupier.v1.GameService/VerifyReplay", len(not_a_replay), "application/proto"
        )
        sock.sendall(not_a_replay)
        answer = _read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:300]  # read, and found no replay


def _verify_replay_answer(port: int, body: bytes) -> tuple[int, dict[str, object]]:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        _send_headers(sock, "/croupier.v1.GameService/VerifyReplay", len(body), "application/json")
        sock.sendall(body)
        return _status_and_body(_read_until_closed(sock))


def test_a_replay_file_of_the_largest_size_is_read_in_json(served: Served) -> None:
    """The contract takes a file of up to 3 MiB, binary or JSON, and JSON sends its bytes in
    base64 (4 MiB for 3 MiB). Before, the runtime refused such a request past 4 MiB in all,
    RESOURCE_EXHAUSTED without reading it: a file within 20 bytes of 3 MiB was never verified,
    and one past it was not told TOO_LONG."""
    with listener(served) as port:
        for size, reason in (
            (MAX_REPLAY_BYTES, "NOT_A_REPLAY"),
            (MAX_REPLAY_BYTES + 1, "TOO_LONG"),
        ):
            replay = base64.b64encode(b"\x0a" + b"\x00" * (size - 1)).decode()
            # As a JSON writer may space it out.
            body = json.dumps({"replay": replay}, indent=2).encode()
            status, answer = _verify_replay_answer(port, body)
            details = {d["type"]: d.get("debug", {}) for d in answer.get("details", ())}  # type: ignore[union-attr]
            assert (status, details.get("google.rpc.ErrorInfo", {}).get("reason")) == (
                400,
                reason,
            ), (size, answer)


def test_only_a_few_replay_files_come_at_once_and_the_next_is_told_to_wait(
    served: Served,
) -> None:
    """MAX_UPLOADS files coming (each may hold 4 MiB, at the slowest pace the listener takes):
    the next is refused before its body is read, RESOURCE_EXHAUSTED TOO_MANY_UPLOADS with a
    RetryInfo, and taken once one of them has gone. Before, it was read like the others."""
    with listener(served) as port:
        coming = []
        try:
            for _ in range(MAX_UPLOADS):
                sock = socket.create_connection(("127.0.0.1", port))
                _send_headers(
                    sock, "/croupier.v1.GameService/VerifyReplay", 1_000_000, "application/proto"
                )
                sock.sendall(b"\x0a")
                coming.append(sock)
            # Asked until the listener has started reading them all (a loaded machine's event
            # loop may be late to): one that comes before is read, and answered at once.
            deadline = time.monotonic() + HANG_S
            while (refused := _verify_replay_answer(port, b"{}"))[0] != 429:
                assert time.monotonic() < deadline, f"never refused: {refused}"
                time.sleep(0.05)
            answer = refused[1]
            assert answer["code"] == "resource_exhausted", answer
            details = {d["type"]: d.get("debug", {}) for d in answer["details"]}  # type: ignore[union-attr]
            assert details["google.rpc.ErrorInfo"]["reason"] == "TOO_MANY_UPLOADS"
            assert details["google.rpc.RetryInfo"] == {"retryDelay": "1s"}
        finally:
            coming.pop().close()
        deadline = time.monotonic() + HANG_S
        while (taken := _verify_replay_answer(port, b'{"replay": "eA=="}'))[0] == 429:
            assert time.monotonic() < deadline, "the place of the one that went was never freed"
            time.sleep(0.1)
        assert taken[0] == 400 and taken[1]["code"] == "invalid_argument", taken
        for sock in coming:
            sock.close()


def test_the_cap_is_a_share_of_the_descriptor_limit() -> None:
    assert connection_cap(1024) == 768
    assert connection_cap(20_000) == 15_000
    assert connection_cap(1_000_000) == MAX_HTTP_CONNECTIONS
    assert connection_cap(1) == 1
    assert 1 <= connection_cap() <= MAX_HTTP_CONNECTIONS


# --- the log -----------------------------------------------------------------------------------

ACCEPT_FAILED = "socket.accept() out of system resource"
SEND_FAILED = "socket.send() raised exception."


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


@pytest.mark.parametrize("said", [ACCEPT_FAILED, SEND_FAILED])
def test_asyncio_accept_and_send_failures_are_not_a_flood_in_the_log(said: str) -> None:
    """What asyncio does at each failed accept once the descriptors are gone, or at each write to
    a connection its client dropped, a thousand times: one line (it wrote them all, the accepts
    a traceback each). The filters are the ones logs.configure put on asyncio's logger
    (tests/conftest.py configures the logs)."""
    kept = _Kept()
    asyncio_log = logging.getLogger("asyncio")
    asyncio_log.addHandler(kept)
    loop = asyncio.new_event_loop()
    try:
        time.sleep(logs.REPEAT_EVERY_S if _logged_lately(said) else 0)
        for _ in range(1000):
            if said == ACCEPT_FAILED:
                loop.call_exception_handler(
                    {"message": ACCEPT_FAILED, "exception": OSError(24, "Too many open files")}
                )
            else:
                asyncio_log.warning(SEND_FAILED)  # as asyncio's selector transport says it
    finally:
        loop.close()
        asyncio_log.removeHandler(kept)
    failed = [r for r in kept.records if r.getMessage().startswith(said)]
    assert len(failed) == 1
    assert failed[0].exc_info is not None or said == SEND_FAILED


def _logged_lately(said: str) -> bool:
    """Whether the configured filter of ``said`` let one through less than its interval ago
    (this test run again in the same process)."""
    filtering = [
        f
        for f in logging.getLogger("asyncio").filters
        if isinstance(f, logs.Repeats) and f.prefix == said
    ]
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
