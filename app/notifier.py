"""Wakes the live streams of one game when its log grows: in-process, per game.

Appends made by this process notify directly; appends by other processes arrive through the
store's :meth:`~croupier.log.EventStore.listen` (PostgreSQL's LISTEN, on its own thread) and are
handed to the event loop. Only the streams of the game named wake up.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

# How many games' newest heard-of versions are kept before those without streams are forgotten.
LATEST_KEPT = 100_000


class Wake:
    """One stream's wake-up at its game's next append: what it uses of an :class:`asyncio.Event`
    (``set``, ``is_set``, ``wait``), for one waiter. Each stream takes a new one before each read
    of its game (every seat's stream, after every move), so it is kept cheap: no waiters' deque,
    and a future made only when the stream does wait, on the loop it was made for (an Event
    looks the running loop up again at each wait)."""

    __slots__ = ("_future", "_loop", "_set")

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self._loop = loop
        self._set = False
        self._future: asyncio.Future[bool] | None = None

    def set(self) -> None:
        self._set = True
        future = self._future
        if future is not None and not future.done():
            future.set_result(True)

    def is_set(self) -> bool:
        return self._set

    async def wait(self) -> bool:
        """Once set (at once if it is already); by one waiter at a time."""
        if not self._set:
            loop = self._loop or asyncio.get_running_loop()
            self._future = loop.create_future()
            try:
                await self._future
            finally:
                self._future = None
        return True


class Notifier:
    def __init__(self) -> None:
        self._waiting: defaultdict[str, set[Wake]] = defaultdict(set)
        # The newest version heard of per game: this process's appends and, through the store's
        # listener, every other process's.
        self._latest: dict[str, int] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Set while some stream waits on a game: a store's look for other processes' appends is
        #: made often only then (nobody else is woken by it).
        self.watching = asyncio.Event()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the streams run on (other threads' notices are handed to it)."""
        self._loop = loop

    def waiter(self, game_id: str) -> Wake:
        """A wake-up set at the game's next append; register it before reading, so that an append
        between the read and the wait is not missed. Give it back with :meth:`release`."""
        event = Wake(self._loop)
        self._waiting[game_id].add(event)
        self.watching.set()
        return event

    def release(self, game_id: str, event: Wake) -> None:
        waiting = self._waiting.get(game_id)
        if waiting is not None:
            waiting.discard(event)
            if not waiting:
                del self._waiting[game_id]
                if not self._waiting:
                    self.watching.clear()

    def notify(self, game_id: str, version: int = 0) -> None:
        """On the loop's thread: wake the game's streams, unless ``version`` was heard of already
        (the store's listener also hears this process's own appends, after it told of them)."""
        heard = self._latest.get(game_id, 0)
        if version and version <= heard:
            return
        self._latest[game_id] = max(version, heard)
        if len(self._latest) > LATEST_KEPT:  # forget the games nobody watches any more
            self._latest = {g: v for g, v in self._latest.items() if g in self._waiting}
        for event in self._waiting.get(game_id, ()):
            event.set()

    def wake_all(self) -> None:
        """On the loop's thread: wake every stream (to see that the process is shutting down)."""
        for waiting in self._waiting.values():
            for event in waiting:
                event.set()

    def latest(self, game_id: str) -> int:
        """The newest version of the game heard of (0: none)."""
        return self._latest.get(game_id, 0)

    def notify_threadsafe(self, game_id: str, version: int = 0) -> None:
        """From any thread (a store's listener)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.notify, game_id, version)

    def watched(self) -> list[str]:
        """The games some stream waits on."""
        return list(self._waiting)

    def streams(self, game_id: str | None = None) -> int:
        """How many streams wait (on one game, or on all)."""
        if game_id is not None:
            return len(self._waiting.get(game_id, ()))
        return sum(len(w) for w in self._waiting.values())
