"""The event store seen from the event loop: each blocking call runs on a worker thread.

Reads share a pool; writes go through one writer where the database has one write lock for the
whole file (SQLite), so that threads do not queue on its lock.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from croupier.log import (
    CommandResult,
    EventStore,
    GameRecord,
    Loaded,
    NewEvent,
    Snapshot,
    StoredEvent,
)

P = ParamSpec("P")
T = TypeVar("T")

READERS = 8


class AsyncLog:
    def __init__(self, store: EventStore, readers: int = READERS) -> None:
        self.store = store
        self._reads = ThreadPoolExecutor(readers, thread_name_prefix="log-read")
        self._writes = (
            ThreadPoolExecutor(1, thread_name_prefix="log-write")
            if store.single_writer
            else self._reads
        )

    async def _on(
        self, pool: ThreadPoolExecutor, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        loop = asyncio.get_running_loop()
        # In the caller's context (as asyncio.to_thread does): the store's work belongs to the
        # call that asked for it (its trace span, its log context).
        context = contextvars.copy_context()
        return await loop.run_in_executor(pool, functools.partial(context.run, fn, *args, **kwargs))

    async def create_game(
        self,
        game: GameRecord,
        events: Sequence[NewEvent],
        recorded_at_ms: int,
        players: Sequence[str],
        next_deadline_ms: int | None = None,
    ) -> tuple[StoredEvent, ...]:
        return await self._on(
            self._writes,
            self.store.create_game,
            game,
            events,
            recorded_at_ms,
            players,
            next_deadline_ms,
        )

    async def load(
        self, game_id: str, after_version: int = 0, command_id: str = "", snapshot: str = ""
    ) -> Loaded:
        return await self._on(
            self._reads, self.store.load, game_id, after_version, command_id, snapshot
        )

    async def save_snapshot(self, snapshot: Snapshot) -> None:
        await self._on(self._writes, self.store.save_snapshot, snapshot)

    async def load_many(self, wanted: Sequence[tuple[str, int]]) -> list[Loaded]:
        return await self._on(self._reads, self.store.load_many, wanted)

    async def read(self, game_id: str, after_version: int = 0) -> list[StoredEvent]:
        return await self._on(self._reads, self.store.read, game_id, after_version)

    async def append(
        self,
        game_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        command_id: str,
        seat: int | None,
        recorded_at_ms: int,
        finished: bool,
        command: bytes,
        fingerprint: bytes = b"",
        next_deadline_ms: int | None = None,
    ) -> CommandResult:
        return await self._on(
            self._writes,
            self.store.append,
            game_id,
            expected_version,
            events,
            command_id,
            seat,
            recorded_at_ms,
            finished,
            command,
            fingerprint,
            next_deadline_ms,
        )

    async def record_rejection(
        self,
        game_id: str,
        command_id: str,
        rejection: bytes,
        version: int,
        fingerprint: bytes = b"",
    ) -> CommandResult:
        return await self._on(
            self._writes,
            self.store.record_rejection,
            game_id,
            command_id,
            rejection,
            version,
            fingerprint,
        )

    async def claim_due(self, now_ms: int, lease_ms: int, limit: int) -> list[str]:
        return await self._on(self._writes, self.store.claim_due, now_ms, lease_ms, limit)

    async def next_due(self) -> int | None:
        return await self._on(self._reads, self.store.next_due)

    async def result_of(self, game_id: str, command_id: str) -> CommandResult | None:
        return await self._on(self._reads, self.store.result_of, game_id, command_id)

    async def players(self, game_id: str) -> tuple[str, ...]:
        return await self._on(self._reads, self.store.players, game_id)

    async def recent_games(self, player: str, limit: int) -> list[tuple[GameRecord, int]]:
        return await self._on(self._reads, self.store.recent_games, player, limit)

    def close(self) -> None:
        """Stop the workers (the store itself is closed by whoever opened it)."""
        self._reads.shutdown(wait=False, cancel_futures=True)
        if self._writes is not self._reads:
            self._writes.shutdown(wait=False, cancel_futures=True)
