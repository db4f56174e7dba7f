"""Heartbeats on a live stream: a message after each quiet spell, so that a client can tell a
stream with nothing to say from a connection gone silent (a proxy or a network that stalls
without closing it; HTTP/1.1 has no pings of its own, and gRPC's keepalive is the transport's,
out of an application's sight). A client asks for them (``heartbeat_s``); one that does not pays
nothing."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

T = TypeVar("T")


async def with_heartbeats(
    source: AsyncIterator[T], every_s: float, beat: Callable[[], T]
) -> AsyncIterator[T]:
    """``source``'s items, and ``beat()`` after each ``every_s`` seconds in which it yielded
    none (0: ``source`` as it is). The next item is awaited in a task of its own across the
    beats, so a beat never cancels the work of making it; closing the stream cancels that task
    and closes ``source`` at once."""
    if not every_s:
        async for item in source:
            yield item
        return
    pending: asyncio.Future[T] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(source))
            done, _ = await asyncio.wait({pending}, timeout=every_s)
            if not done:
                yield beat()
                continue
            try:
                item = pending.result()
            except StopAsyncIteration:
                return
            pending = None
            yield item
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
