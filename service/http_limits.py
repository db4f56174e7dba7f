"""What the HTTP listener (service/http.py) bounds that hypercorn 0.18 has no setting for: how long
a request's body may fall silent, and how many connections one process holds at once.

Found by a chaos test: one client sent the headers of a request with ``Content-Length: 1000000``
and one byte of its body, then nothing, on connection after connection. Each was held for ever
(hypercorn's idle timeout only runs between requests), each a file descriptor, until the process
ran out of them: its gRPC port then accepted no one either.

* **A silent request body** (:class:`BodyTimeout`, around the application): while a request's
  body is still coming, each wait for its next bytes is bounded (``BODY_TIMEOUT_S``); past that
  the request is answered ``408`` with ``Connection: close`` and, over HTTP/1.1, its connection
  closed. Hypercorn's own ``read_timeout`` is not used: it bounds every read of the connection,
  also while a response streams to a client that has nothing to send (``StreamEvents``, whose
  browser sends nothing for as long as it watches a game), so it would cut every stream quieter
  than it. The requests whose body *is* a stream (``Play``'s commands, over HTTP/2) are not
  bounded: their client is silent between moves.
* **Connections at once** (:class:`CappedSocket`, the listening socket): past
  ``max_connections``, a new connection is closed as soon as it is accepted, with one warning a
  minute at most (with the count), not a line each. And a connection whose client has gone is
  closed at once (:class:`PromptTCPServer`), not after hypercorn's keep-alive timeout.

:func:`install` puts :class:`PromptTCPServer` where hypercorn makes its connections; like
service/http2.py, it checks the hypercorn version it was written against.
"""

from __future__ import annotations

import asyncio
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

#: How long a request's body may send nothing before the request is answered 408 and its
#: connection closed (seconds, between two reads of the body, not for the whole body). A slow
#: mobile network (GPRS, a train in a tunnel) sends a request of a few kilobytes in a few
#: seconds and stalls for ten or so; an exported replay of several megabytes comes in chunks all
#: along. Half a minute is well past both, and a client that sends nothing holds its connection
#: no longer than that.
BODY_TIMEOUT_S = 30.0
#: The most HTTP connections one process serves at once, however many descriptors it may open:
#: twice the 10,000 browsers' streams the load tool holds (some 60 KiB of memory each).
MAX_HTTP_CONNECTIONS = 20_000
#: The share of the process's descriptor limit (the soft ``RLIMIT_NOFILE``, ``ulimit -n``) the
#: HTTP listener may hold: the rest is the gRPC port's connections (which nothing of ours caps:
#: a gRPC client multiplexes its calls on one), the store's files or PostgreSQL connections, the
#: log. With 20,000 descriptors: 15,000.
HTTP_SHARE_OF_DESCRIPTORS = 0.75
#: At most one warning this often while connections are refused at the cap (seconds).
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


# --- a silent request body ---------------------------------------------------------------------


class BodyTimeout:
    """``app`` with each wait for more of a request's body bounded by ``timeout_s``; the paths in
    ``streaming`` (requests whose body is a stream of messages) are not bounded.

    Past the timeout, the application is told that the client went away (``http.disconnect``:
    it stops as it would then), what it still sends is dropped, and the request is answered
    ``408`` with ``Connection: close``, which over HTTP/1.1 closes the connection (over HTTP/2,
    the stream ends and an idle connection is closed by hypercorn's keep-alive timeout). Once the
    body is whole, the application's reads (a streaming response watching for a disconnect) wait
    as long as it likes."""

    def __init__(self, app: ASGIApp, timeout_s: float, *, streaming: Collection[str] = ()) -> None:
        self.app = app
        self.timeout_s = timeout_s
        self.streaming = frozenset(streaming)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.streaming:
            await self.app(scope, receive, send)
            return
        body_done = False
        timed_out = False
        started = False

        async def bounded_receive() -> Message:
            nonlocal body_done, timed_out
            if body_done or timed_out:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.timeout_s)
            except TimeoutError:
                timed_out = True
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
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
                    "body": f"The request's body sent nothing for {self.timeout_s:g} s.\n".encode(),
                }
            )


# --- connections at once -----------------------------------------------------------------------


class CappedSocket(socket.socket):
    """A listening socket whose ``accept`` closes at once the connections past
    ``max_connections`` (nothing read or written: the descriptor let go before the event loop
    makes a transport of it), and counts the others until they are closed.

    Counted at the accept, not in hypercorn's connection handler: asyncio accepts up to the
    backlog (4096) connections a turn of the loop and makes each a transport, a task and a TLS
    handshake before any handler runs, so a cap there let a burst past it (a process held to
    2,000 descriptors, with a cap of 1,000, ran out of them)."""

    def __init__(self, listening: socket.socket, max_connections: int) -> None:
        family, kind, proto = listening.family, listening.type, listening.proto
        super().__init__(family, kind, proto, fileno=listening.detach())
        self.max_connections = max_connections
        #: Connections accepted and not yet closed.
        self.open_connections = 0
        # Connections closed at the cap: a warning at most every REFUSED_LOG_EVERY_S, which counts
        # them (a flood of connections must not flood the log).
        self._refusals = Throttle(REFUSED_LOG_EVERY_S)

    def accept(self) -> tuple[socket.socket, Any]:
        while True:
            # BlockingIOError once none is waiting (the loop's cue to stop), EMFILE if the
            # process has no descriptor left (asyncio's to pause accepting a while).
            fd, address = self._accept()  # type: ignore[attr-defined]
            if self.open_connections < self.max_connections:
                break
            os.close(fd)
            self._refused()
        self.open_connections += 1
        connection = _Connection(self, self.family, self.type, self.proto, fileno=fd)
        if socket.getdefaulttimeout() is None and self.gettimeout():
            connection.setblocking(True)  # as socket.accept does
        return connection, address

    def _refused(self) -> None:
        if (said := self._refusals.due()) is not None:
            log.warning(
                "http connections refused: the listener serves as many as it may",
                max_connections=self.max_connections,
                refused=said.unsaid + 1,  # this one too
                since_s=None if said.since_s is None else round(said.since_s),
            )


class _Connection(socket.socket):
    """An accepted connection, given back to its listener's count when it is closed."""

    def __init__(self, listener: CappedSocket, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listener: CappedSocket | None = listener

    def close(self) -> None:
        if self._listener is not None:
            self._listener.open_connections -= 1
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
