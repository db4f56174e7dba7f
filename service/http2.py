"""Hypercorn's HTTP/2 protocol with three of its faults mended, for the HTTP listener (service/http.py).

All are open upstream in the release we pin (hypercorn 0.18.0, the newest); the first two hit the
``Play`` stream over HTTP/2, whose client keeps sending while the server's response ends:

* **Data for a stream whose response is over.** A gRPC or Connect client half-closes its request
  (an empty DATA frame that ends it) when it is done sending, which for ``Play`` is often after
  the server ended the stream (the game over, a refusal). Hypercorn forgets a stream as soon as
  its response is over, and then looked the late frame's stream up, raising ``KeyError``: the
  connection was dropped with every stream on it (the load tool over the HTTP port lost a
  connection of a dozen seats every second or so). Hypercorn already passes over a late
  end-of-request for the same reason (``StreamEnded``); late data is passed over the same way,
  its bytes acknowledged so that the connection's flow-control window stays whole.
* **A response that can never be sent.** A handler that ends its response waits until the bytes
  before the end have gone out. When the connection closes first (or, at a shutdown, the client
  stops reading), hypercorn forgot the stream without letting that wait go, so the handler waited
  for ever, its connection's task with it, and the server's shutdown never ended (the process
  outlived SIGTERM). When the connection closes, every such wait is let go (the bytes go
  nowhere: the client is gone); for a shutdown whose grace is over, :func:`cut_all` drops a
  listener's connections still open, which lets go of their waits too (those of a client that
  stopped reading included, whose handlers wait for the socket itself).
* **A connection left idle during a shutdown** was given a new idle timer in a task group that
  was shutting down: refused (``RuntimeError``), the timer's coroutine never awaited. It is
  closed instead, as hypercorn's HTTP/1.1 protocol does.

:func:`install` puts :class:`MendedH2Protocol` where hypercorn makes its HTTP/2 connections
(``hypercorn.protocol.H2Protocol``). It checks the hypercorn version it was written against, so
that an upgrade has to look again (delete this module if the new release has the fixes).
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from importlib.metadata import version
from typing import Any, ClassVar

import h2.events
import h2.exceptions
import hypercorn.protocol
from hypercorn.config import Config
from hypercorn.events import Closed, Event, Updated
from hypercorn.protocol.h2 import H2Protocol

#: The hypercorn release these mends were written for and checked against.
MENDED_VERSION = "0.18.0"


class MendedH2Protocol(H2Protocol):
    """Hypercorn's HTTP/2 connection, minus the faults this module's docstring names."""

    #: Every connection still open, for :func:`cut_all` (weak: a closed one just goes).
    live: ClassVar[weakref.WeakSet[MendedH2Protocol]] = weakref.WeakSet()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        MendedH2Protocol.live.add(self)
        self._connection_send = self.send
        self.send = self._send_or_close

    async def _send_or_close(self, event: Event) -> None:
        """To the connection; but a connection left idle once the server is stopping is closed,
        as hypercorn's HTTP/1.1 does, rather than given an idle timer in its task group, which
        is shutting down (the timer was refused with RuntimeError and left never awaited)."""
        if isinstance(event, Updated) and event.idle and self.context.terminated.is_set():
            event = Closed()
        await self._connection_send(event)

    async def handle(self, event: Event) -> None:
        await super().handle(event)
        if isinstance(event, Closed):
            await self.release()

    async def release(self) -> None:
        """Let go of every response still waiting for its bytes to go out (the connection is
        gone): their handlers go on and end."""
        self.closed = True
        for buffer in list(self.stream_buffers.values()):
            await buffer.close()
        await self.has_data.set()  # the sending task sees ``closed`` and ends

    async def cut(self) -> None:
        """End the connection at once, unsent bytes dropped, and let go of its responses (the
        shutdown's grace is over). A client that stopped reading leaves a handler waiting for
        the socket to drain: only dropping the socket wakes it."""
        # The connection's sender is hypercorn's TCPServer.protocol_send: its writer's socket.
        server = getattr(self._connection_send, "__self__", None)
        writer = getattr(server, "writer", None)
        if isinstance(writer, asyncio.StreamWriter):
            writer.transport.abort()
        await self.release()

    async def _handle_events(self, events: list[h2.events.Event]) -> None:
        # One at a time: an event may end a stream that a later one in the same batch names.
        for event in events:
            if isinstance(event, h2.events.DataReceived) and event.stream_id not in self.streams:
                self._acknowledge_late(event)
            else:
                await super()._handle_events([event])
        await self._flush()

    def _acknowledge_late(self, event: h2.events.DataReceived) -> None:
        """Data for a stream whose response is over: nothing reads it, but it counted against
        the connection's window, which is given back."""
        with contextlib.suppress(h2.exceptions.ProtocolError):  # the connection is ending
            self.connection.acknowledge_received_data(
                event.flow_controlled_length or 0, event.stream_id
            )


def install() -> None:
    """Make hypercorn's new HTTP/2 connections :class:`MendedH2Protocol` (once is enough; again
    is harmless)."""
    found = version("hypercorn")
    if found != MENDED_VERSION:
        raise RuntimeError(
            f"service/http2.py mends hypercorn {MENDED_VERSION}, not {found}: check whether "
            "the new release fixes late data and unsendable responses, then update or drop it"
        )
    hypercorn.protocol.H2Protocol = MendedH2Protocol  # type: ignore[attr-defined]


async def cut_all(config: Config) -> int:
    """End every live HTTP/2 connection of the listener served with ``config`` (:meth:`cut`);
    how many there were."""
    connections = [c for c in list(MendedH2Protocol.live) if c.config is config]
    for connection in connections:
        await connection.cut()
    return len(connections)
