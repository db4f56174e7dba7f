"""What the HTTP listener (service/http.py) bounds that hypercorn 0.18 has no setting for: how fast
a request's body must come, and how many connections one process, and one client address, hold
at once.

Found by a chaos test: one client sent the headers of a request with ``Content-Length: 1000000``
and one byte of its body, then nothing, on connection after connection. Each was held for ever
(hypercorn's idle timeout only runs between requests), each a file descriptor, until the process
ran out of them: its gRPC port then accepted no one either. Then by a security review: one
process on one machine sent such a body a byte every 20 s, on 15,000 connections (under a
kilobyte a second in all), held every connection the listener would take for as long as it
liked, and every browser was refused.

* **A body that comes too slowly** (:class:`BodyTimeout`, around the application): while a
  request's body is still coming, each ``BODY_MIN_BYTES`` of it (or the rest of it, when less)
  must come within ``BODY_TIMEOUT_S`` of the last ``BODY_MIN_BYTES`` (or of the request's
  start); past that the request is answered ``408`` with ``Connection: close`` and, over
  HTTP/1.1, its connection closed. A body sent a byte at a time, however often, is cut after
  ``BODY_TIMEOUT_S``. Hypercorn's own ``read_timeout`` is not used: it bounds every read of the
  connection, also while a response streams to a client that has nothing to send
  (``StreamEvents``, whose browser sends nothing for as long as it watches a game), so it would
  cut every stream quieter than it. The requests whose body *is* a stream (``Play``'s commands,
  over HTTP/2) are not bounded: their client is silent between moves.
* **Connections at once** (:class:`CappedSocket`, the listening socket): past
  ``max_connections``, or past ``max_per_address`` from one client address (:func:`client_of`:
  an IPv4 address, an IPv6 /64; connections from this machine are not counted), a new
  connection is closed as soon as it is accepted, with one warning a minute at most (with the
  count), not a line each. And a connection whose client has gone is closed at once
  (:class:`PromptTCPServer`), not after hypercorn's keep-alive timeout.

:func:`install` puts :class:`PromptTCPServer` where hypercorn makes its connections; like
service/http2.py, it checks the hypercorn version it was written against.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import resource
import socket
from collections.abc import Collection
from importlib.metadata import version
from pathlib import Path
from typing import Any

import hypercorn.asyncio.run
import structlog
from hypercorn.asyncio.tcp_server import TCPServer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from croupier.app.throttle import Throttle

#: How long a request's body has for each ``BODY_MIN_BYTES`` of it (or for its rest, when less)
#: before the request is answered 408 and its connection closed (seconds). A slow mobile network
#: (GPRS, a train in a tunnel) sends a request of a few kilobytes in a few seconds and stalls
#: for ten or so; an exported replay of several megabytes comes in chunks all along. Half a
#: minute is well past both, and a client that sends nothing holds its connection no longer.
BODY_TIMEOUT_S = 30.0
#: What a request's body must bring every ``BODY_TIMEOUT_S`` while it comes (bytes): some 550
#: bytes a second, a tenth of what GPRS carries. A call's body is a few hundred bytes (a command
#: at most 16 KiB): all of it has ``BODY_TIMEOUT_S``; only a replay file takes longer. Without a
#: pace, only a silence was bounded, and a body trickled in a byte every 29 s held its connection
#: for ever: now a client pays this rate on every connection it holds.
BODY_MIN_BYTES = 16 * 1024
#: The most HTTP connections one process serves at once, however many descriptors it may open:
#: twice the 10,000 browsers' streams the load tool holds (some 60 KiB of memory each).
MAX_HTTP_CONNECTIONS = 20_000
#: The share of the process's descriptor limit (the soft ``RLIMIT_NOFILE``, ``ulimit -n``) the
#: HTTP listener may hold: the rest is the gRPC port's connections (which nothing of ours caps:
#: a gRPC client multiplexes its calls on one), the store's files or PostgreSQL connections, the
#: log. With 20,000 descriptors: 15,000.
HTTP_SHARE_OF_DESCRIPTORS = 0.75
#: The IPv6 prefix that is one client (bits): a host gets a /64 of its own and may use any
#: address in it, so counting its addresses one by one would count nothing.
IPV6_CLIENT_PREFIX = 64
#: At most one warning this often while connections are refused at a cap (seconds).
REFUSED_LOG_EVERY_S = 60.0

#: The hypercorn release :class:`PromptTCPServer` was written for and checked against.
CHECKED_VERSION = "0.18.0"

log = structlog.get_logger("croupier.http")


def raise_descriptor_limit() -> tuple[int, int] | None:
    """Raise the process's soft descriptor limit to its hard one, as Go programs do at start: the
    soft limit's common default, 1024, is a guard for programs that use ``select``, and a server
    of thousands of connections does not. ``(before, after)`` when it was raised, else ``None``
    (already there, or the system refused)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft >= hard:
        return None
    # An unlimited hard limit is not a soft one Linux takes: the kernel's ceiling is nr_open.
    target = hard if hard != resource.RLIM_INFINITY else _kernel_ceiling(soft)
    if target <= soft:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        return None
    return soft, target


def _kernel_ceiling(soft: int) -> int:
    try:
        return int(Path("/proc/sys/fs/nr_open").read_text())
    except (OSError, ValueError):
        return soft


def connection_cap(descriptors: int | None = None) -> int:
    """The most HTTP connections at once for a process that may open ``descriptors`` files (by
    default its soft ``RLIMIT_NOFILE``): ``HTTP_SHARE_OF_DESCRIPTORS`` of them, at most
    ``MAX_HTTP_CONNECTIONS``."""
    if descriptors is None:
        descriptors = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if descriptors == resource.RLIM_INFINITY or descriptors < 0:
        return MAX_HTTP_CONNECTIONS
    return max(1, min(MAX_HTTP_CONNECTIONS, int(descriptors * HTTP_SHARE_OF_DESCRIPTORS)))


def client_of(address: object) -> str | None:
    """The client a connection from peer ``address`` (a socket's ``(host, port, ...)``) counts
    against under ``max_per_address``: its IPv4 address (an IPv4 address mapped into IPv6 is
    the same client), or its IPv6 ``/IPV6_CLIENT_PREFIX`` network. ``None``, not counted: this
    machine's loopback (a proxy in front on the same machine, the load tool, the health check
    of a container), and what is not an IP address (a Unix socket's)."""
    host = address[0] if isinstance(address, tuple) and address else address
    if not isinstance(host, str):
        return None
    try:
        ip = ipaddress.ip_address(host.partition("%")[0])  # an IPv6 scope (fe80::1%eth0) left off
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, IPV6_CLIENT_PREFIX), strict=False))
    return str(ip)


# --- a body that comes too slowly --------------------------------------------------------------


class BodyTimeout:
    """``app`` with a request's body held to a pace while it comes: each ``min_bytes`` of it, or
    its rest when less, within ``timeout_s`` of the last ``min_bytes`` (the first, of the
    request's start); the paths in ``streaming`` (requests whose body is a stream of messages)
    are not bounded.

    Past the time, the application is told that the client went away (``http.disconnect``: it
    stops as it would then), what it still sends is dropped, and the request is answered
    ``408`` with ``Connection: close``, which over HTTP/1.1 closes the connection (over HTTP/2,
    the stream ends and an idle connection is closed by hypercorn's keep-alive timeout). Once the
    body is whole, the application's reads (a streaming response watching for a disconnect) wait
    as long as it likes."""

    def __init__(
        self,
        app: ASGIApp,
        timeout_s: float,
        *,
        min_bytes: int = BODY_MIN_BYTES,
        streaming: Collection[str] = (),
    ) -> None:
        self.app = app
        self.timeout_s = timeout_s
        self.min_bytes = min_bytes
        self.streaming = frozenset(streaming)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.streaming:
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        body_done = False
        timed_out = False
        started = False
        # The time by which the body's next min_bytes (or its rest) must have come, and what has
        # come of them so far.
        due = loop.time() + self.timeout_s
        come = 0

        async def bounded_receive() -> Message:
            nonlocal body_done, timed_out, due, come
            if body_done or timed_out:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(0.0, due - loop.time()))
            except TimeoutError:
                timed_out = True
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            come += len(message.get("body", b""))
            if come >= self.min_bytes:  # on time: the next ones have as long again
                due, come = loop.time() + self.timeout_s, 0
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if timed_out and not started:
                return  # its answer to a request the client stopped sending: ours instead
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, bounded_receive, guarded_send)
        except Exception:
            if not timed_out:
                raise
            # What the application made of the client's "disconnect" (starlette's ClientDisconnect):
            # ours, not a fault to log.
        if timed_out and not started:
            await send(
                {
                    "type": "http.response.start",
                    "status": 408,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"connection", b"close"),
                    ],
                }
            )
            await send(
                {
                    "type": "http.response.body",
                    "body": (
                        f"The request's body came slower than {self.min_bytes} bytes in "
                        f"{self.timeout_s:g} s.\n"
                    ).encode(),
                }
            )


# --- connections at once -----------------------------------------------------------------------


class CappedSocket(socket.socket):
    """A listening socket whose ``accept`` closes at once the connections past
    ``max_connections``, and those past ``max_per_address`` from one client (:func:`client_of`;
    0: no limit), nothing read or written: the descriptor let go before the event loop makes a
    transport of it. It counts the others until they are closed.

    Counted at the accept, not in hypercorn's connection handler: asyncio accepts up to the
    backlog (4096) connections a turn of the loop and makes each a transport, a task and a TLS
    handshake before any handler runs, so a cap there let a burst past it (a process held to
    2,000 descriptors, with a cap of 1,000, ran out of them)."""

    def __init__(
        self, listening: socket.socket, max_connections: int, max_per_address: int = 0
    ) -> None:
        family, kind, proto = listening.family, listening.type, listening.proto
        super().__init__(family, kind, proto, fileno=listening.detach())
        self.max_connections = max_connections
        self.max_per_address = max_per_address
        #: Connections accepted and not yet closed.
        self.open_connections = 0
        #: Of them, each counted client's (:func:`client_of`), while it has any.
        self.by_client: dict[str, int] = {}
        # Connections closed at a cap: a warning at most every REFUSED_LOG_EVERY_S for each cap,
        # which counts them (a flood of connections must not flood the log).
        self._refusals = Throttle(REFUSED_LOG_EVERY_S)
        self._refusals_by_client = Throttle(REFUSED_LOG_EVERY_S)

    def accept(self) -> tuple[socket.socket, Any]:
        while True:
            # BlockingIOError once none is waiting (the loop's cue to stop), EMFILE if the
            # process has no descriptor left (asyncio's to pause accepting a while).
            fd, address = self._accept()  # type: ignore[attr-defined]
            client = client_of(address) if self.max_per_address else None
            if self.open_connections >= self.max_connections:
                self._refused()
            elif client is not None and self.by_client.get(client, 0) >= self.max_per_address:
                self._refused_client(client)
            else:
                break
            os.close(fd)
        self.open_connections += 1
        if client is not None:
            self.by_client[client] = self.by_client.get(client, 0) + 1
        connection = _Connection(self, client, self.family, self.type, self.proto, fileno=fd)
        if socket.getdefaulttimeout() is None and self.gettimeout():
            connection.setblocking(True)  # as socket.accept does
        return connection, address

    def release(self, client: str | None) -> None:
        """A connection it accepted (from ``client``) is closed: its places are free."""
        self.open_connections -= 1
        if client is not None:
            left = self.by_client.pop(client) - 1
            if left:
                self.by_client[client] = left

    def _refused(self) -> None:
        if (said := self._refusals.due()) is not None:
            log.warning(
                "http connections refused: the listener serves as many as it may",
                max_connections=self.max_connections,
                refused=said.unsaid + 1,  # this one too
                since_s=None if said.since_s is None else round(said.since_s),
            )

    def _refused_client(self, client: str) -> None:
        if (said := self._refusals_by_client.due()) is not None:
            log.warning(
                "http connections refused: one client address holds as many as it may",
                client=client,  # this one's; others may have been refused since the last line
                max_per_address=self.max_per_address,
                refused=said.unsaid + 1,
                since_s=None if said.since_s is None else round(said.since_s),
            )


class _Connection(socket.socket):
    """An accepted connection, given back to its listener's counts when it is closed."""

    def __init__(
        self, listener: CappedSocket, client: str | None, *args: Any, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._listener: CappedSocket | None = listener
        self._client = client

    def close(self) -> None:
        if self._listener is not None:
            self._listener.release(self._client)
            self._listener = None
        super().close()


class PromptTCPServer(TCPServer):
    """Hypercorn's connection, closed as soon as its client is gone."""

    async def _read_data(self) -> None:
        await super()._read_data()
        # The client closed (or its read failed): hypercorn still waited for its keep-alive
        # timer (5 s) before closing the connection, its descriptor and its place under the cap
        # held that long for nothing.
        await self.idle_task.stop()


def install() -> None:
    """Make hypercorn's new connections :class:`PromptTCPServer` (once is enough; again is
    harmless)."""
    found = version("hypercorn")
    if found != CHECKED_VERSION:
        raise RuntimeError(
            f"service/http_limits.py was written for hypercorn {CHECKED_VERSION}, not {found}: "
            "check that hypercorn.asyncio.run still makes its connections as TCPServer(...) and "
            "whether the new release caps connections itself, then update this module"
        )
    hypercorn.asyncio.run.TCPServer = PromptTCPServer  # type: ignore[attr-defined]
