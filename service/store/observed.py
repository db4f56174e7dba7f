"""An event store that times, counts and traces every call of the one it wraps.

:class:`ObservedStore` is an :class:`~croupier.log.EventStore` over another: each call is timed
into ``croupier_store_operation_seconds``, a call that raises is counted in
``croupier_store_errors_total`` (by exception type), and with a tracer each call is a span (a child
of the RPC's span: the application runs store calls in the caller's context). The stores
themselves know nothing of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from opentelemetry import trace

from croupier.log import (
    AlreadyCreated,
    CommandResult,
    CreateRequest,
    EventStore,
    GameRecord,
    Loaded,
    NewEvent,
    PoolStats,
    SeatInPlay,
    Snapshot,
    StoreBusy,
    StoredEvent,
    StoreError,
    UsedTicket,
)
from croupier.log.store import AppendListener, AppendPoll, LoopAppender, LoopListener
from croupier.service.metrics import Metrics

P = ParamSpec("P")
T = TypeVar("T")

#: The span attribute naming the game a store call is about.
GAME_ID_ATTRIBUTE = "croupier.game_id"
#: Calls traced even outside an RPC (a span of their own): the writes, such as the sweeper's
#: time-outs. The sweeper's polls (next_due, every few tens of milliseconds) are not, or they
#: would drown the traces.
WRITES = frozenset(
    {"create_game", "append", "record_rejection", "save_snapshot", "claim_due", "hand_back"}
)


def _system(url: str) -> str:
    """The database's name as OpenTelemetry's ``db.system.name`` spells it."""
    return "postgresql" if url.startswith(("postgresql:", "postgres:")) else "sqlite"


class ObservedStore(EventStore):
    def __init__(
        self, inner: EventStore, metrics: Metrics, tracer: trace.Tracer | None = None
    ) -> None:
        self.inner = inner
        self.url = inner.url
        self.single_writer = inner.single_writer
        self._metrics = metrics
        self._tracer = tracer
        self._system = _system(inner.url)

    def _call(
        self,
        operation: str,
        game_id: str | None,
        fn: Callable[P, T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        with self._span(operation, game_id):
            return self._timed(operation, fn, *args, **kwargs)

    @contextmanager
    def _span(self, operation: str, game_id: str | None) -> Iterator[None]:
        """The call's span, where there is a tracer and the call is traced."""
        if self._tracer is None or (
            operation not in WRITES and not trace.get_current_span().is_recording()
        ):
            yield
            return
        attributes = {"db.system.name": self._system, "db.operation.name": operation}
        if game_id is not None:
            attributes[GAME_ID_ATTRIBUTE] = game_id
        with self._tracer.start_as_current_span(
            f"store {operation}",
            kind=trace.SpanKind.CLIENT,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield
            except StoreError as error:  # an answer (a lost race, an unknown game): no failure
                span.set_attribute("croupier.store.outcome", type(error).__name__)
                raise
            except Exception as error:
                span.record_exception(error)
                span.set_status(trace.Status(trace.StatusCode.ERROR, type(error).__name__))
                raise

    def _timed(self, operation: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        started = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
        except StoreBusy:  # not a call made: it is tried again, and counted once made
            self._metrics.store_busy_call(operation)
            raise
        except Exception as error:
            self._metrics.store_call(operation, time.perf_counter() - started, error)
            raise
        self._metrics.store_call(operation, time.perf_counter() - started, None)
        return result

    def create_game(
        self,
        game: GameRecord,
        events: Sequence[NewEvent],
        recorded_at_ms: int,
        players: Sequence[str] = (),
        next_deadline_ms: int | None = None,
        request: CreateRequest | None = None,
        ticket: UsedTicket | None = None,
    ) -> tuple[StoredEvent, ...]:
        return self._call(
            "create_game",
            game.game_id,
            self.inner.create_game,
            game,
            events,
            recorded_at_ms,
            players,
            next_deadline_ms,
            request,
            ticket,
        )

    def created_by(self, request_id: str) -> AlreadyCreated | None:
        return self._call("created_by", None, self.inner.created_by, request_id)

    def game(self, game_id: str) -> GameRecord:
        return self._call("game", game_id, self.inner.game, game_id)

    def load(
        self, game_id: str, after_version: int = 0, command_id: str = "", snapshot: str = ""
    ) -> Loaded:
        return self._call(
            "load", game_id, self.inner.load, game_id, after_version, command_id, snapshot
        )

    def save_snapshot(self, snapshot: Snapshot) -> None:
        self._call("save_snapshot", snapshot.game_id, self.inner.save_snapshot, snapshot)

    def load_many(self, wanted: Sequence[tuple[str, int]]) -> list[Loaded]:
        return self._call("load_many", None, self.inner.load_many, wanted)

    def append(
        self,
        game_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        command_id: str,
        seat: int | None,
        recorded_at_ms: int,
        *,
        finished: bool = False,
        command: bytes = b"",
        fingerprint: bytes = b"",
        next_deadline_ms: int | None = None,
    ) -> CommandResult:
        return self._call(
            "append",
            game_id,
            self.inner.append,
            game_id,
            expected_version,
            events,
            command_id,
            seat,
            recorded_at_ms,
            finished=finished,
            command=command,
            fingerprint=fingerprint,
            next_deadline_ms=next_deadline_ms,
        )

    def record_rejection(
        self,
        game_id: str,
        command_id: str,
        rejection: bytes,
        version: int,
        fingerprint: bytes = b"",
    ) -> CommandResult:
        return self._call(
            "record_rejection",
            game_id,
            self.inner.record_rejection,
            game_id,
            command_id,
            rejection,
            version,
            fingerprint,
        )

    def result_of(self, game_id: str, command_id: str) -> CommandResult | None:
        return self._call("result_of", game_id, self.inner.result_of, game_id, command_id)

    def claim_due(self, now_ms: int, lease_ms: int, limit: int) -> list[str]:
        return self._call("claim_due", None, self.inner.claim_due, now_ms, lease_ms, limit)

    def hand_back(self, game_id: str, until_ms: int) -> None:
        return self._call("hand_back", game_id, self.inner.hand_back, game_id, until_ms)

    def next_due(self) -> int | None:
        return self._call("next_due", None, self.inner.next_due)

    def read(self, game_id: str, after_version: int = 0) -> list[StoredEvent]:
        return self._call("read", game_id, self.inner.read, game_id, after_version)

    def versions(self, game_ids: Sequence[str]) -> dict[str, int]:
        return self._call("versions", None, self.inner.versions, game_ids)

    def players(self, game_id: str) -> tuple[str, ...]:
        return self._call("players", game_id, self.inner.players, game_id)

    def recent_games(self, player: str, limit: int) -> list[tuple[GameRecord, int]]:
        return self._call("recent_games", None, self.inner.recent_games, player, limit)

    def seats_in_play(self, players: Sequence[str], limit: int) -> list[SeatInPlay]:
        return self._call("seats_in_play", None, self.inner.seats_in_play, players, limit)

    def pool_stats(self) -> PoolStats | None:
        return self.inner.pool_stats()

    def close(self) -> None:
        self.inner.close()

    def without_waiting(self) -> EventStore | None:
        inner = self.inner.without_waiting()
        return None if inner is None else ObservedStore(inner, self._metrics, self._tracer)

    def loop_appender(self) -> LoopAppender | None:
        inner = self.inner.loop_appender()
        return None if inner is None else ObservedLoopAppender(inner, self)

    def listen(self, listener: AppendListener) -> None:
        self.inner.listen(listener)

    def listen_on_loop(self, listener: AppendListener) -> LoopListener | None:
        return self.inner.listen_on_loop(listener)

    def append_poll(self) -> AppendPoll | None:
        return self.inner.append_poll()  # not counted: a PRAGMA a hundred times a second

    def wait_listening(self, timeout: float) -> bool:
        return self.inner.wait_listening(timeout)


class ObservedLoopAppender(LoopAppender):
    """The loop's appends of an observed store, timed and traced as its ``append``: an append
    the loop made is counted; one it left to the store's own append (``None``) is counted there,
    once."""

    def __init__(self, inner: LoopAppender, store: ObservedStore) -> None:
        self.inner = inner
        self._store = store

    async def append(
        self,
        game_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        command_id: str,
        seat: int | None,
        recorded_at_ms: int,
        *,
        finished: bool,
        command: bytes,
        fingerprint: bytes,
        next_deadline_ms: int | None,
    ) -> CommandResult | None:
        metrics = self._store._metrics
        with self._store._span("append", game_id):
            started = time.perf_counter()
            try:
                result = await self.inner.append(
                    game_id,
                    expected_version,
                    events,
                    command_id,
                    seat,
                    recorded_at_ms,
                    finished=finished,
                    command=command,
                    fingerprint=fingerprint,
                    next_deadline_ms=next_deadline_ms,
                )
            except Exception as error:
                metrics.store_call("append", time.perf_counter() - started, error)
                raise
            if result is not None:
                metrics.store_call("append", time.perf_counter() - started, None)
            return result

    async def close(self) -> None:
        await self.inner.close()
