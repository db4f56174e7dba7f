"""The live streams, StreamEvents and Play: each seat's (or spectator's) copies of a game's events
as they are recorded, its state after each batch, and on a Play stream the answers to its commands.

A collaborator of the core (:class:`croupier.app.core.Croupier` makes one, :attr:`Croupier.streams`,
and its ``subscribe`` and ``play`` hand the call to it): it is given, not looked up, what it uses of
the core (its fold and its tick, the per-seat presentation, a Play command's application, the
caches, the notifier, the log, the clock, the shutdown), so that its one dependency on the core is
that list. The bound methods are held as attributes: a command's round trip makes no more calls
than when this lived in the core.
"""

from __future__ import annotations

import asyncio
import collections
import functools
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import structlog

from croupier.app import limits
from croupier.app.callers import Caller, at_table, seat_of, seat_token_of, watcher
from croupier.app.errors import (
    JOIN_TIMEOUT,
    SEAT_TOKEN_REQUIRED,
    AppError,
    BadCredentials,
    ShuttingDown,
    TooManyStreams,
    Unavailable,
    invalid,
    store_error,
)
from croupier.app.heartbeats import with_heartbeats
from croupier.contract.bindings import BY_NAME, GameBinding
from croupier.engine.game import GameState
from croupier.log import CommandResult, GameNotFound, GameRecord, StoredEvent
from croupier.v1 import service_pb2

if TYPE_CHECKING:
    from croupier.app.core import FoldCache, Folded, Parts
    from croupier.app.notifier import Notifier
    from croupier.app.recent import RecentEvents
    from croupier.app.runner import AsyncLog

T = TypeVar("T")
#: A live stream's message: StreamEvents' or Play's (each has an event, a state and a batch).
Streamed = TypeVar("Streamed", service_pb2.StreamEventsResponse, service_pb2.PlayResponse)

# How long a Play stream waits for its first message, the join, before it ends (INVALID_ARGUMENT
# JOIN_TIMEOUT): far longer than any client's connect-then-join, even on a slow mobile network,
# and short enough that calls which never join (a few KB of memory each, and nothing else limits
# how many a client opens) do not pile up. Croupier's ``join_timeout_s`` (tests shorten it).
JOIN_TIMEOUT_S = 30.0
# Live streams (StreamEvents and Play) one seat's or player's token may hold open on one process
# at once. A seat needs one or two (a Play stream, a page's StreamEvents; a reconnect whose old
# stream is not yet gone), a player's spectator screens a few; the load tool holds ten on a
# game, spread over its seats. Without a cap, one token held 20,000 (274 MB), and a player's
# token may watch any game. The studio's token (its backend follows all its games) has none.
MAX_STREAMS_PER_TOKEN = 32
# Messages a Play stream holds for its client before it reads no more of the client's: the
# answers to its commands (each refusal too) wait in memory until the client reads them, and a
# client that sent a flood of messages (empty ones, or commands beyond its rate) without reading
# a reply grew the server's memory by hundreds of bytes per message sent, with no bound.
PLAY_OUTBOX_LIMIT = 256


@dataclass(frozen=True)
class Refused:
    """A command a Play stream refused, for the transport to word as its status (and log)."""

    command_id: str
    error: AppError
    #: The command's kind (``Draw``, ``Knock``…) when it could be read.
    command: str = ""


PlayItem = service_pb2.PlayResponse | Refused | None


class _Outbox:
    """A Play stream's messages on their way out, for its one reader (:meth:`Streams.play`):
    what it uses of an :class:`asyncio.Queue`, which costs more for every message of every seat
    (its getters' deque, its count of unfinished tasks, and a look-up of the running loop at
    each wait). A ``get`` cancelled takes nothing from it, as a queue's. :meth:`room` lets the
    stream's request reader wait while the client is not reading its answers."""

    __slots__ = ("_items", "_loop", "_reader", "_room", "limit")

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int = PLAY_OUTBOX_LIMIT) -> None:
        self._items: collections.deque[PlayItem] = collections.deque()
        self._loop = loop
        self._reader: asyncio.Future[None] | None = None
        self._room: asyncio.Future[None] | None = None
        self.limit = limit

    def put_nowait(self, item: PlayItem) -> None:
        self._items.append(item)
        reader = self._reader
        if reader is not None and not reader.done():
            reader.set_result(None)

    def empty(self) -> bool:
        return not self._items

    def get_nowait(self) -> PlayItem:
        item = self._items.popleft()
        self._made_room()
        return item

    async def get(self) -> PlayItem:
        while not self._items:
            self._reader = self._loop.create_future()
            try:
                await self._reader
            finally:
                self._reader = None
        return self.get_nowait()

    def _made_room(self) -> None:
        room = self._room
        if room is not None and not room.done() and len(self._items) < self.limit:
            room.set_result(None)

    async def room(self) -> None:
        """Until fewer than :attr:`limit` messages wait to go out."""
        while len(self._items) >= self.limit:
            self._room = self._loop.create_future()
            try:
                await self._room
            finally:
                self._room = None


def _stream_heartbeat() -> service_pb2.StreamEventsResponse:
    return service_pb2.StreamEventsResponse(heartbeat=service_pb2.Heartbeat())


class Streams:
    """The live streams of one process (one per :class:`croupier.app.core.Croupier`)."""

    def __init__(
        self,
        *,
        cache: FoldCache,
        recent: RecentEvents,
        notifier: Notifier,
        log: AsyncLog,
        clock: Callable[[], int],
        drained: asyncio.Event,
        fold: Callable[[str], Awaitable[tuple[Folded, CommandResult | None]]],
        tick: Callable[[str], Awaitable[int]],
        present: Callable[[GameBinding, StoredEvent, int | None, bool], service_pb2.GameEvent],
        parts: Callable[[Folded, GameState, int, int | None, service_pb2.Include], Parts],
        turn_ran_out: Callable[[Folded, int], bool],
        play_command: Callable[
            [Caller, str, service_pb2.PlayCommand], Awaitable[service_pb2.PlayAccepted]
        ],
        join_timeout_s: float = JOIN_TIMEOUT_S,
    ) -> None:
        # Held under the core's own names: the code reads as it did in the core, and each is one
        # attribute look-up, as it was there.
        self.cache = cache
        self.recent = recent
        self.notifier = notifier
        self.log = log
        self.clock = clock
        # Set when the process is shutting down (the core's ``drain``).
        self._drained = drained
        self._fold = fold
        self.tick = tick
        self._present = present
        self._parts = parts
        self._turn_ran_out = turn_ran_out
        self._play_command = play_command
        #: How long a Play stream waits for its join (:data:`JOIN_TIMEOUT_S`).
        self.join_timeout_s = join_timeout_s
        # The live streams each seat's or player's token holds open (:meth:`_streaming`).
        self._streams: dict[tuple[str, ...], int] = {}
        self.max_streams_per_token = MAX_STREAMS_PER_TOKEN

    @property
    def draining(self) -> bool:
        """The process is shutting down: every stream ends after what it has sent."""
        return self._drained.is_set()

    @contextmanager
    def _streaming(self, caller: Caller) -> Iterator[None]:
        """Around a live stream: counted against its token's :attr:`max_streams_per_token`
        (``TOO_MANY_STREAMS`` past it). A seat's token counts by its game and seat, a player's by
        the player; the studio's backend is not held to it."""
        if caller.identity is not None:
            holder: tuple[str, ...] = (caller.identity.game_id, str(caller.identity.seat))
        elif caller.player is not None:
            holder = ("player", caller.player.player)
        else:
            yield
            return
        held = self._streams.get(holder, 0)
        if held >= self.max_streams_per_token:
            raise TooManyStreams(self.max_streams_per_token)
        self._streams[holder] = held + 1
        try:
            yield
        finally:
            if (left := self._streams[holder] - 1) > 0:
                self._streams[holder] = left
            else:
                del self._streams[holder]

    async def subscribe(
        self,
        caller: Caller,
        game_id: str,
        after_version: int = 0,
        include: service_pb2.Include | None = None,
        batched: bool = False,
        heartbeat_s: int = 0,
    ) -> AsyncGenerator[service_pb2.StreamEventsResponse]:
        """The seat's copies of the game's events after ``after_version`` (a spectator's, for a
        studio or player token), live, until the game ends; with ``include`` asking for any
        part, after each batch the seat's state (as :meth:`play` sends it); ``batched``: each
        batch and its state in one message; ``heartbeat_s``: a heartbeat after each quiet spell
        that long (0: none). Cancelling the iteration drops the stream at once."""
        limits.check_heartbeat(heartbeat_s, "heartbeat_s")
        with self._streaming(caller):
            stream = self._subscribed(caller, game_id, after_version, include, batched)
            async for response in with_heartbeats(stream, heartbeat_s, _stream_heartbeat):
                yield response

    async def _subscribed(
        self,
        caller: Caller,
        game_id: str,
        after_version: int,
        include: service_pb2.Include | None,
        batched: bool,
    ) -> AsyncIterator[service_pb2.StreamEventsResponse]:
        """:meth:`subscribe`, without its heartbeats."""
        seat = watcher(caller, game_id)
        limits.check_version(after_version, "after_version")
        if seat is None and include is not None and include.legal_moves:
            raise BadCredentials(
                SEAT_TOKEN_REQUIRED,
                "legal moves are a seat's: send the seat token (a studio or player token "
                "watches as a spectator: its state has the view and who is to act)",
            )
        # The parts asked for; none (or no include): events only.
        asked = (
            include
            if include is not None and (include.view or include.legal_moves or include.to_act)
            else None
        )
        async for response in self._feed(
            service_pb2.StreamEventsResponse,
            game_id,
            seat,
            after_version,
            "after_version",
            asked,
            batched,
        ):
            yield response

    async def _while_away(self, after: int, read: Callable[[], Awaitable[T]]) -> T:
        """A stream's ``read`` of the store; while the store is unavailable, made again after
        each answer's delay: the stream stays open, and its client is sent nothing more until the
        store is back (as when nobody moves), rather than see it end and join again into the
        same outage. A shutdown meanwhile ends it as every other stream (after ``after``)."""
        while True:
            try:
                return await read()
            except GameNotFound as error:
                raise store_error(error) from None
            except Unavailable as error:
                if self.draining:
                    raise ShuttingDown(after) from None
                await asyncio.sleep(error.retry_after_ms / 1000)
                if self.draining:
                    raise ShuttingDown(after) from None

    async def _batches(
        self, game_id: str, seat: int | None, after_version: int, field: str
    ) -> AsyncIterator[list[service_pb2.GameEvent]]:
        """The game's new events as ``seat`` (``None``: a spectator) may see them, a read at a
        time (the first batch may be empty: the caller is up to date), until the game is over. An ``after_version`` past
        the game's version (``field`` names it) is refused."""
        after, first = after_version, True
        cached = self.cache.get(game_id)
        binding: GameBinding | None = cached.binding if cached is not None else None
        # The game's row as last read (its seats, checked on the first pass: they never change).
        record: GameRecord | None = cached.record if cached is not None else None
        while True:
            wake = self.notifier.waiter(game_id)
            try:
                # What this process holds of the game, unless it heard of a newer version (its
                # own appends, the store's notices, the recheck: :meth:`_recheck`).
                recent = self.recent.get(game_id)
                new = None
                if (
                    recent is not None
                    and binding is not None
                    and recent.version >= self.notifier.latest(game_id)
                    # A client ahead of this process's memory is checked against the store.
                    and not (first and after > recent.version)
                ):
                    new = recent.after(after)
                if new is None:
                    loaded = await self._while_away(
                        after, functools.partial(self.log.load, game_id, after)
                    )
                    binding = BY_NAME[loaded.record.kind]
                    record = loaded.record
                    self.recent.add(game_id, loaded.events, record.version, record.finished)
                    new, version, finished = loaded.events, record.version, record.finished
                elif recent is not None:
                    version, finished = recent.version, recent.finished
                if binding is None or record is None:  # pragma: no cover - the first pass reads
                    raise RuntimeError("a stream's first pass reads the store")
                if first:
                    at_table(record, seat)
                if first and after > version:
                    # Versions only grow: a client cannot have seen this one (a stream would wait
                    # in silence for events it would then never be sent).
                    raise invalid(
                        "OUT_OF_RANGE",
                        f"{field} {after} is past the game's version {version}",
                        field,
                    )
                if new or first:
                    yield [self._present(binding, e, seat, finished) for e in new]
                    after = new[-1].version if new else after
                first = False
                if finished and after >= version:
                    return
                if self.draining:  # after the batch: the client resumes from what it has
                    raise ShuttingDown(after)
                await wake.wait()
            finally:
                self.notifier.release(game_id, wake)

    async def play(
        self, caller: Caller, requests: AsyncIterator[service_pb2.PlayRequest]
    ) -> AsyncIterator[service_pb2.PlayResponse | Refused]:
        """One seat's connection: the first request joins a game (after a version); then every
        event as the seat may see it, after each batch the seat's state as the join asked, and an
        answer to each command (applied exactly once per command id, as by :meth:`submit`). Ends
        when the game is over and every event is out (a command being applied is answered
        first), or when the client hangs up; a client that only stops sending still gets the
        rest of the game. A refusal is yielded as :class:`Refused` for the transport to word.

        A call without a seat token is refused at once, before its join is waited for: a stream
        waiting for a join holds the server's memory, and the join would be refused anyway. The
        join must come within :attr:`join_timeout_s` (``JOIN_TIMEOUT``)."""
        seat_token_of(caller)
        # Counted from here (its token's live streams), the join waited for included.
        with self._streaming(caller):
            first = await self._join_request(requests)
            if first is None:
                return
            if first.WhichOneof("kind") != "join":
                raise invalid(
                    "JOIN_FIRST", "the first message of a Play stream joins a game", "join"
                )
            join = first.join
            # Named as the join's other fields are (join.after_version): the field a client
            # reads off a BadRequest is the one it sent.
            seat = seat_of(caller, join.game_id, field="join.game_id")
            limits.check_version(join.after_version, "join.after_version")
            limits.check_heartbeat(join.heartbeat_s, "join.heartbeat_s")
            out = _Outbox(asyncio.get_running_loop())
            # Held while a command is applied: a shutdown lets it finish and answers it.
            applying = asyncio.Lock()
            commands = asyncio.create_task(
                self._play_commands(caller, join.game_id, requests, out, applying)
            )
            feed = asyncio.create_task(self._play_feed(join, seat, out))
            tasks = [commands, feed]
            try:
                running = len(tasks)
                while running:
                    if join.heartbeat_s:
                        # A queue's get, cancelled, takes nothing from it. asyncio.timeout, not
                        # wait_for: 3.11's wait_for can swallow the stream's own cancellation when
                        # it meets the get's result, and the stream then outlives its client.
                        try:
                            async with asyncio.timeout(join.heartbeat_s):
                                item = await out.get()
                        except TimeoutError:
                            yield service_pb2.PlayResponse(heartbeat=service_pb2.Heartbeat())
                            continue
                    else:
                        item = await out.get()
                    if item is not None:
                        yield item
                        continue
                    running -= 1
                    over = feed.done() and not feed.cancelled() and feed.exception() is None
                    for task in tasks:
                        failure = task.exception() if task.done() and not task.cancelled() else None
                        if isinstance(failure, ShuttingDown) or (over and task is feed):
                            async with applying:  # the command being applied is answered, no other
                                commands.cancel()
                            while not out.empty():
                                if (answer := out.get_nowait()) is not None:
                                    yield answer
                        if failure is not None:
                            raise failure
                    if over:  # the game is over and every event is out
                        return
            finally:
                for task in tasks:
                    task.cancel()

    async def _join_request(
        self, requests: AsyncIterator[service_pb2.PlayRequest]
    ) -> service_pb2.PlayRequest | None:
        """A Play stream's first request (``None``: the client hung up first). A shutdown does not
        wait for it: the stream ends as every other does, and its client joins elsewhere. Nor does
        the stream wait for it longer than :attr:`join_timeout_s` (``JOIN_TIMEOUT``)."""
        if self.draining:
            raise ShuttingDown(0)
        reading = asyncio.ensure_future(anext(aiter(requests), None))
        draining = asyncio.ensure_future(self._drained.wait())
        timed_out = False
        try:
            # asyncio.timeout, not wait_for (which, on 3.11, can swallow the stream's own
            # cancellation): a client that hangs up meanwhile still ends the stream at once.
            async with asyncio.timeout(self.join_timeout_s):
                await asyncio.wait((reading, draining), return_when=asyncio.FIRST_COMPLETED)
        except TimeoutError:
            timed_out = True
        finally:
            draining.cancel()
            if not reading.done():
                reading.cancel()
        if reading.done() and not reading.cancelled():  # it came, even as the time ran out
            return reading.result()
        if timed_out and not self.draining:
            raise invalid(
                JOIN_TIMEOUT,
                f"no join within {self.join_timeout_s:g} s of the call: send the join as the "
                "stream's first message as soon as the call is open",
                "join",
            )
        raise ShuttingDown(0)

    async def _play_commands(
        self,
        caller: Caller,
        game_id: str,
        requests: AsyncIterator[service_pb2.PlayRequest],
        out: _Outbox,
        applying: asyncio.Lock,
    ) -> None:
        try:
            async for request in requests:
                # A message is answered once the client has read enough of the answers before
                # it: one that sends without reading is read no further (PLAY_OUTBOX_LIMIT).
                await out.room()
                kind = request.WhichOneof("kind")
                if kind != "command":
                    out.put_nowait(
                        Refused(
                            "",
                            invalid("JOIN_ONCE", "a Play stream joins once", "join")
                            if kind == "join"
                            else invalid(
                                "MISSING_FIELD",
                                "a Play message after the join carries a command",
                                "command",
                            ),
                        )
                    )
                    continue
                move = request.command
                async with applying:
                    # Each command binds its own kind (:meth:`_command`), read back if refused.
                    structlog.contextvars.unbind_contextvars("command")
                    try:
                        accepted = await self._play_command(caller, game_id, move)
                    except AppError as error:
                        kind_read = structlog.contextvars.get_contextvars().get("command", "")
                        out.put_nowait(Refused(move.command_id, error, str(kind_read)))
                        continue
                    out.put_nowait(service_pb2.PlayResponse(accepted=accepted))
        finally:
            out.put_nowait(None)

    async def _play_feed(
        self,
        join: service_pb2.PlayJoin,
        seat: int,
        out: _Outbox,
    ) -> None:
        """The game's events after ``join.after_version``, live, each batch followed by the
        seat's state (``join.batched``: each batch and its state in one message)."""
        try:
            async for response in self._feed(
                service_pb2.PlayResponse,
                join.game_id,
                seat,
                join.after_version,
                "join.after_version",
                join.include,
                join.batched,
            ):
                out.put_nowait(response)
        finally:
            out.put_nowait(None)

    async def _feed(
        self,
        response: type[Streamed],
        game_id: str,
        seat: int | None,
        after_version: int,
        field: str,
        include: service_pb2.Include | None,
        batched: bool,
    ) -> AsyncIterator[Streamed]:
        """What a live stream (StreamEvents, Play: ``response`` is its message) sends: the game's
        events after ``after_version`` (``field`` names it) as ``seat`` (``None``: a spectator)
        may see them, until the game is over; with ``include``, after each batch the state it
        asks for; ``batched``: each batch and its state in one message.

        A batch whose state is not told (a turn ran out: its time-out is recorded first, and the
        batch that makes brings the state) waits for the next. Should the stream end first (the
        game over, a shutdown, a failure), its events still go out before the end: a shutdown
        names the last version sent, and the client resumes after it."""
        # The events not yet sent (batched: they go with the next state).
        pending: list[service_pb2.GameEvent] = []
        after = after_version
        try:
            async for batch in self._batches(game_id, seat, after_version, field):
                if batched:
                    pending.extend(batch)
                else:
                    for event in batch:
                        yield response(event=event)
                after = batch[-1].version if batch else after
                # Built in place: a message given to another message's constructor is copied,
                # and the legal moves, the view and the events were copied two or three times.
                message = response()
                if include is not None:
                    folded = await self._folded_for_state(game_id, after)
                    if folded is None:
                        continue
                    state = message.batch.state if batched else message.state
                    self._fill_state(state, folded, seat, include)
                elif not (batched and pending):
                    continue
                if batched:
                    message.batch.events.extend(pending)
                    pending = []
                yield message
        except Exception:
            if pending:
                yield response(batch=service_pb2.PlayBatch(events=pending))
            raise
        if pending:
            yield response(batch=service_pb2.PlayBatch(events=pending))

    async def _folded_for_state(self, game_id: str, after: int) -> Folded | None:
        """The game to tell a seat's state from, once the events up to ``after`` are sent: as
        this process last folded it, when that is as new (the usual case: the command came
        through here), else read again. ``None`` when a turn ran out: it is recorded now, and
        the batch it makes brings the state after it (rather than moves a command could only
        meet as ABORTED)."""
        cached = self.cache.get(game_id)
        if cached is not None and cached.version >= after:
            folded = cached
        else:
            folded, _ = await self._while_away(after, functools.partial(self._fold, game_id))
        if self._turn_ran_out(folded, self.clock()):
            await self._while_away(after, functools.partial(self.tick, game_id))
            return None
        return folded

    def _fill_state(
        self,
        state: service_pb2.PlayState,
        folded: Folded,
        seat: int | None,
        include: service_pb2.Include,
    ) -> None:
        """``state`` (empty, in place) filled with the seat's (or a spectator's) state in
        ``folded``: its version, whether the game is over, and the parts ``include`` asks for."""
        parts = self._parts(folded, folded.state, folded.version, seat, include)
        state.version = folded.version
        state.finished = folded.record.finished
        state.legal_moves.extend(parts.legal_moves)
        state.to_act.extend(parts.to_act)
        if parts.view is not None:
            state.view.CopyFrom(parts.view)
