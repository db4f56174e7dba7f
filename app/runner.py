"""The event store seen from the event loop.

Where the store can work without waiting (:meth:`EventStore.without_waiting`: SQLite, whose
append is about 0.1 ms of work), the calls whose work is bounded by one game or one command are
made on the loop itself; scans and whole logs still go to a thread. Handed to a thread, an
append cost more than its work: the hand-over, then every turn the thread takes at the
interpreter lock, which it waits for while the loop's thread holds it. Under load the store's
thread took 0.28 ms of CPU per append against 0.08 ms for the append itself, and moves/s rose by
a quarter once the appends were made on the loop.

Elsewhere (PostgreSQL, over the network) the common append, at the version where the store knows
the game's chain ends, is sent from the loop over a non-blocking connection
(:meth:`EventStore.loop_appender`), and the loop goes on until the answer comes; the same thread
hand-offs made a PostgreSQL move cost the core 0.06–0.09 ms more CPU. The other calls run on a worker thread
(psycopg's blocking driver, the SQL they share with SQLite). Reads share a pool;
writes go through one writer where the database has one write lock for the whole file (SQLite),
so that threads do not queue on its lock. An SQLite call made on the loop that meets that lock
held (by another process on the file) is tried again on the loop, soon and often, and only after
a while goes to the threads to wait there.
The turn clock's work (the sweeper's claims and looks, and every tick's append: time-outs and
claim awards, whoever records them) goes before the commands waiting in either queue: a time-out
is late by however long it waits there, and under load the commands' appends make a queue (a
command waits for its own append anyway; a deadline is not to be waited on).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import itertools
import queue
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from enum import IntEnum
from typing import Any, ParamSpec, TypeVar

import structlog

from croupier.app.errors import Unavailable, log_failure
from croupier.log import (
    AlreadyCreated,
    CommandResult,
    CreateRequest,
    EventStore,
    GameLocked,
    GameNotFound,
    GameRecord,
    HeldBack,
    Loaded,
    NewEvent,
    SeatInPlay,
    Snapshot,
    StoreBusy,
    StoredEvent,
    StoreUnavailable,
    TicketUsed,
    UsedTicket,
    VersionConflict,
)
from croupier.log.store import AppendListener, AppendPoll

P = ParamSpec("P")
T = TypeVar("T")

READERS = 8
# A call on the loop that met another writer's lock is tried again after this, then twice as
# long each time up to the most, for so long before it waits on a thread instead.
BUSY_RETRY_FIRST_S = 0.0005
BUSY_RETRY_MAX_S = 0.005
BUSY_RETRY_FOR_S = 5.0
# A call that found the store unavailable (its database restarts, fails over, is down) is
# answered so, with this delay before the client tries again.
UNAVAILABLE_RETRY_MS = 1000
# While it is, one call in this long tries the store; the others are answered at once.
PROBE_S = 0.5
# After a failed look for other processes' appends, the next waits this long.
POLL_FAILED_WAIT_S = 1.0
#: How often the loop looks for other processes' appends while no stream of this process waits
#: on a game (else at the store's own pace, ``AppendPoll.every_s``): their news then wakes
#: nobody and is only a hint (a tick on an older copy meets a version conflict and reads again),
#: and looking every 10 ms was half of an idle server's CPU (2.5 % of a core).
IDLE_POLL_S = 0.25
# How long closing waits for the store's threads to finish the work under way (one call each).
CLOSE_JOIN_S = 10.0

log = structlog.get_logger("croupier.app")


def _told(late: Callable[[T], None] | None, done: asyncio.Future[T | None]) -> None:
    """An append whose caller had gone, now done (on a thread, or sent from the loop): what it
    made to ``late``. ``None`` made nothing (the loop left it to the store's own append, and
    nobody waits to make it now); nor did a failure, which is logged, as nobody else hears it."""
    if done.cancelled():
        return
    if (error := done.exception()) is not None:
        log.warning("an append whose caller had gone failed", error=repr(error))
        return
    if late is not None and (made := done.result()) is not None:
        late(made)


class Rank(IntEnum):
    """Which work a pool's threads take first (the lower first; in order of arrival within)."""

    CLOCK = 0  # the sweeper's claims and looks, and every tick's append (time-outs, awards)
    CALL = 1  # everything else
    STOP = 2  # a thread's last item: after the work already queued


#: The database's answers that are not failures (no such game, a version moved on, a request id
#: taken, a seed ticket used): it was reached, so an outage is over.
ANSWERS = (GameNotFound, VersionConflict, AlreadyCreated, TicketUsed)


#: What a client is told of an outage (the log has the database's own words).
CANNOT_BE_REACHED = "its database cannot be reached now"


class Outage:
    """Whether the store was found unavailable by a pool's last calls. While it is, a call is
    let through to try the store once every :data:`PROBE_S` and the others are answered at once:
    each would wait out the database (PostgreSQL's pool wait, SQLite's lock), and under load
    they queued for the pool's threads behind each other, answered after 15–26 s or never
    refused at all. The first call that succeeds ends it."""

    def __init__(self) -> None:
        #: When the store was last found unavailable (``None``: it was not, or it is back).
        self.since: float | None = None
        self.error = ""
        self._next_probe = 0.0
        self._probing = False
        self._said = False  # whether this outage was logged

    def admit(self) -> bool:
        """Let a call try the store, or answer it at once that the store is unavailable: whether
        it is the one call trying it meanwhile (the probe, whose end is told: :meth:`probed`).
        One at a time: each may wait out the database, and SQLite's writes queue for one thread."""
        if self.since is None:
            return False
        now = time.monotonic()
        if self._probing or now < self._next_probe:
            raise Unavailable(
                f"still, since {now - self.since:.1f} s", UNAVAILABLE_RETRY_MS, self.error
            )
        self._probing, self._next_probe = True, now + PROBE_S
        return True

    def probed(self) -> None:
        """The probe's work is done, whatever came of it."""
        self._probing = False

    def mark(self, error: StoreUnavailable) -> None:
        """A call found the store unavailable; said from the store's thread as it happens, so
        that the work queued behind it, which the thread takes next, is answered at once (told
        on the loop, the thread had already begun the next one's wait)."""
        if self.since is None:
            # The next call may try the store at once: one call's failure may be its own
            # connection's (killed by the database, the rest of the pool sound), and calls are
            # refused only while that try is under way, then one try each PROBE_S.
            self.since = time.monotonic()
            self._next_probe = self.since
        self.error = str(error).splitlines()[0] if str(error) else ""

    def failed(self, error: StoreUnavailable) -> Unavailable:
        """A call found the store unavailable: the answer to give. It says no more than that:
        what the database or its driver said (its host, its port, its name, the user refused) is
        the operator's, in the log, not every client's."""
        self.mark(error)
        if not self._said:
            self._said = True
            log.warning("the store is unavailable: calls answered so", error=self.error)
        return Unavailable(CANNOT_BE_REACHED, UNAVAILABLE_RETRY_MS, self.error)

    def locked(self, error: GameLocked) -> Unavailable:
        """A call's game was held by another transaction for longer than the store waits for it
        (a replica frozen mid-append): that call is answered unavailable, to be sent again, but
        the store is not: the database answered (an outage, if any, is over), and the other
        games' calls go on. Marked as an outage, every call would be refused while one at a time
        tried the store, and that try could be the locked game's, waiting out the lock again."""
        self.back()
        return Unavailable(str(error), UNAVAILABLE_RETRY_MS)

    def back(self) -> None:
        """A call went through: the store is back."""
        if self.since is not None:
            log.info("the store is back", after_s=round(time.monotonic() - self.since, 3))
            self.since, self._said = None, False

    @contextmanager
    def answering(self) -> Iterator[None]:
        """Around a call of the store: what came of it told (unavailable: the answer to give;
        done, or answered by the database: the store is back)."""
        try:
            yield
        except GameLocked as error:
            raise self.locked(error) from error
        except StoreUnavailable as error:
            raise self.failed(error) from error
        except ANSWERS:
            self.back()
            raise
        self.back()


class Pool:
    """Worker threads that take queued work by :class:`Rank`, then in order of arrival."""

    def __init__(self, workers: int, name: str) -> None:
        #: Whether its calls found the store unavailable lately.
        self.outage = Outage()
        self._queue: queue.PriorityQueue[
            tuple[int, int, Future[object] | None, Callable[[], object] | None]
        ] = queue.PriorityQueue()
        self._order = itertools.count()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{n}", daemon=True)
            for n in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, rank: Rank, fn: Callable[[], T]) -> Future[T]:
        if self._closed:
            raise RuntimeError("the store's workers are shut down")
        future: Future[T] = Future()
        self._queue.put((rank, next(self._order), future, fn))  # type: ignore[arg-type]
        return future

    def _work(self) -> None:
        while True:
            _, _, future, fn = self._queue.get()
            if future is None or fn is None:
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as error:  # handed to the caller, as an executor does
                future.set_exception(error)

    def shutdown(self, cancel_futures: bool = True) -> None:
        """Stop the threads once the work under way is done; queued work is cancelled, and work
        submitted from now on is refused."""
        self._closed = True
        if cancel_futures:
            while True:
                try:
                    _, _, future, _ = self._queue.get_nowait()
                except queue.Empty:
                    break
                if future is not None:
                    future.cancel()
        for _ in self._threads:
            self._queue.put((Rank.STOP, next(self._order), None, None))

    def join(self, deadline: float) -> bool:
        """After :meth:`shutdown`, wait until ``deadline`` (``time.monotonic()``) for the threads
        to end: whether they all did."""
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self._threads)


class AsyncLog:
    def __init__(self, store: EventStore, readers: int = READERS) -> None:
        self.store = store
        self._reads = Pool(readers, "log-read")
        self._writes = Pool(1, "log-write") if store.single_writer else self._reads
        self._at_once = store.without_waiting()
        self._on_loop = store.loop_appender()
        self._polling: asyncio.Task[None] | None = None

    async def _call(
        self,
        pool: Pool,
        rank: Rank,
        operation: Callable[[EventStore], Callable[P, T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """``operation`` of the store: on the loop when the store can do it without waiting
        (tried again while another writer holds the lock), else on ``pool``'s threads. For
        calls whose work is bounded (one game, one command): a scan goes :meth:`_on_thread`."""
        return await self._call_told(pool, rank, None, operation, *args, **kwargs)

    async def _call_told(
        self,
        pool: Pool,
        rank: Rank,
        late: Callable[[T], None] | None,
        operation: Callable[[EventStore], Callable[P, T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """:meth:`_call`, and if the caller goes (cancelled) while a thread does the work, its
        result is handed to ``late`` once done. On the loop the work is done at once, before
        anything could cancel the caller."""
        if self._at_once is None:
            return await self._on_thread_told(pool, rank, late, operation, *args, **kwargs)
        probe = pool.outage.admit()
        handed = False
        try:
            # Another process holds the file's write lock (a worker of the group): tried again
            # on the loop, soon and often (a write holds it ~0.1 ms). SQLite's own busy handler,
            # on a thread, sleeps up to 100 ms between tries and is not fair: with two workers,
            # commands waited seconds. After a while, the thread's longer wait.
            delay, deadline = BUSY_RETRY_FIRST_S, time.monotonic() + BUSY_RETRY_FOR_S
            while True:
                try:
                    with pool.outage.answering():
                        return operation(self._at_once)(*args, **kwargs)
                except HeldBack:
                    # By this process's own checkpoint, which lets go in some ms: tried again
                    # as soon each time, not at longer and longer waits.
                    wait = BUSY_RETRY_FIRST_S
                except StoreBusy:
                    wait, delay = delay, min(delay * 2, BUSY_RETRY_MAX_S)
                if time.monotonic() >= deadline:
                    break
                await asyncio.sleep(wait)
                if pool.outage.since is not None and not probe:
                    # Another call found the store unavailable meanwhile: told at once.
                    raise pool.outage.failed(StoreUnavailable(pool.outage.error))
            handed = True
            return await self._thread_work(pool, rank, late, probe, operation, *args, **kwargs)
        finally:
            if probe and not handed:
                pool.outage.probed()

    async def _on_thread(
        self,
        pool: Pool,
        rank: Rank,
        operation: Callable[[EventStore], Callable[P, T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """``operation`` of the store on ``pool``'s threads, taken there by ``rank``; where the
        database runs a statement, the loop goes on (sqlite3 lets go of the interpreter lock)."""
        return await self._on_thread_told(pool, rank, None, operation, *args, **kwargs)

    async def _on_thread_told(
        self,
        pool: Pool,
        rank: Rank,
        late: Callable[[T], None] | None,
        operation: Callable[[EventStore], Callable[P, T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        probe = pool.outage.admit()
        return await self._thread_work(pool, rank, late, probe, operation, *args, **kwargs)

    async def _thread_work(
        self,
        pool: Pool,
        rank: Rank,
        late: Callable[[T], None] | None,
        probe: bool,
        operation: Callable[[EventStore], Callable[P, T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """``operation`` on ``pool``'s threads, the call admitted (``probe``: as the one call
        trying the store while it is unavailable, :class:`Outage`)."""
        # In the caller's context (as asyncio.to_thread does): the store's work belongs to the
        # call that asked for it (its trace span, its log context).
        context = contextvars.copy_context()
        call = functools.partial(context.run, operation(self.store), *args, **kwargs)
        outage = pool.outage

        def run() -> T:
            # Found unavailable while this waited its turn: told so at once, rather than wait
            # out the database after the call before it did (the probe tries it).
            if outage.since is not None and not probe:
                raise StoreUnavailable(outage.error)
            try:
                return call()
            except GameLocked:
                raise  # one game's, not the store's (:meth:`Outage.locked`)
            except StoreUnavailable as error:
                outage.mark(error)
                raise

        try:
            work = pool.submit(rank, run)
        except BaseException:
            if probe:
                outage.probed()
            raise
        if probe:  # told when the thread is done, even if the caller has gone
            loop = asyncio.get_running_loop()
            work.add_done_callback(lambda _: loop.call_soon_threadsafe(outage.probed))
        waited = asyncio.wrap_future(work)
        try:
            with outage.answering():
                return await (waited if late is None else asyncio.shield(waited))
        except asyncio.CancelledError:
            if late is not None:
                # The caller has gone; the thread goes on (its statement cannot be taken
                # back), and what it did is told all the same.
                waited.add_done_callback(functools.partial(_told, late))
            raise

    async def create_game(
        self,
        game: GameRecord,
        events: Sequence[NewEvent],
        recorded_at_ms: int,
        players: Sequence[str],
        next_deadline_ms: int | None = None,
        request: CreateRequest | None = None,
        ticket: UsedTicket | None = None,
    ) -> tuple[StoredEvent, ...]:
        return await self._call(
            self._writes,
            Rank.CALL,
            lambda store: store.create_game,
            game,
            events,
            recorded_at_ms,
            players,
            next_deadline_ms,
            request,
            ticket,
        )

    async def load(
        self, game_id: str, after_version: int = 0, command_id: str = "", snapshot: str = ""
    ) -> Loaded:
        return await self._call(
            self._reads,
            Rank.CALL,
            lambda store: store.load,
            game_id,
            after_version,
            command_id,
            snapshot,
        )

    async def save_snapshot(self, snapshot: Snapshot) -> None:
        await self._call(self._writes, Rank.CALL, lambda store: store.save_snapshot, snapshot)

    async def load_many(self, wanted: Sequence[tuple[str, int]]) -> list[Loaded]:
        # Many games at once (the sweeper's): on a thread.
        return await self._on_thread(self._reads, Rank.CALL, lambda store: store.load_many, wanted)

    async def read(self, game_id: str, after_version: int = 0) -> list[StoredEvent]:
        # A whole log, as long as the game (replays, exports): on a thread.
        return await self._on_thread(
            self._reads, Rank.CALL, lambda store: store.read, game_id, after_version
        )

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
        command: bytes = b"",
        fingerprint: bytes = b"",
        next_deadline_ms: int | None = None,
        rank: Rank = Rank.CALL,
        late: Callable[[CommandResult], None] | None = None,
    ) -> CommandResult:
        """With ``late``: told of an append made after its caller had gone."""
        if self._on_loop is not None:
            try:
                made = await self._made_on_loop(
                    late,
                    self._on_loop.append(
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
                    ),
                )
            except GameLocked as error:
                # Its row held past the store's lock timeout: nothing written. Made again on a
                # thread, it would wait out the lock once more before the client is told.
                raise self._writes.outage.locked(error) from error
            if made is not None:
                return made
        return await self._call_told(
            self._writes,
            rank,
            late,
            lambda store: store.append,
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

    @staticmethod
    async def _made_on_loop(
        late: Callable[[T], None] | None, work: Coroutine[Any, Any, T | None]
    ) -> T | None:
        """``work``, a statement sent from the loop: should its caller go meanwhile, it is seen
        through all the same (a statement sent cannot be taken back, and its connection is left
        as it should be), and what it made is handed to ``late``."""
        task = asyncio.ensure_future(work)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(functools.partial(_told, late))
            raise

    async def record_rejection(
        self,
        game_id: str,
        command_id: str,
        rejection: bytes,
        version: int,
        fingerprint: bytes = b"",
    ) -> CommandResult:
        return await self._call(
            self._writes,
            Rank.CALL,
            lambda store: store.record_rejection,
            game_id,
            command_id,
            rejection,
            version,
            fingerprint,
        )

    async def claim_due(self, now_ms: int, lease_ms: int, limit: int) -> list[str]:
        return await self._call(
            self._writes, Rank.CLOCK, lambda store: store.claim_due, now_ms, lease_ms, limit
        )

    async def hand_back(self, game_id: str, until_ms: int) -> None:
        await self._call(self._writes, Rank.CLOCK, lambda store: store.hand_back, game_id, until_ms)

    async def next_due(self) -> int | None:
        # A scan of every game on a clock (every replica's), every few tens of ms: on a thread.
        return await self._on_thread(self._reads, Rank.CLOCK, lambda store: store.next_due)

    async def versions(self, game_ids: Sequence[str]) -> dict[str, int]:
        # Every game this process streams (thousands): on a thread.
        return await self._on_thread(self._reads, Rank.CALL, lambda store: store.versions, game_ids)

    async def created_by(self, request_id: str) -> AlreadyCreated | None:
        return await self._call(self._reads, Rank.CALL, lambda store: store.created_by, request_id)

    async def result_of(self, game_id: str, command_id: str) -> CommandResult | None:
        return await self._call(
            self._reads, Rank.CALL, lambda store: store.result_of, game_id, command_id
        )

    async def players(self, game_id: str) -> tuple[str, ...]:
        return await self._call(self._reads, Rank.CALL, lambda store: store.players, game_id)

    async def recent_games(self, player: str, limit: int) -> list[tuple[GameRecord, int]]:
        # A player's every finished game, sorted: on a thread.
        return await self._on_thread(
            self._reads, Rank.CALL, lambda store: store.recent_games, player, limit
        )

    async def seats_in_play(self, players: Sequence[str], limit: int) -> list[SeatInPlay]:
        # A search over every unfinished game: on a thread.
        return await self._on_thread(
            self._reads, Rank.CALL, lambda store: store.seats_in_play, players, limit
        )

    def listen(
        self,
        on_loop: AppendListener,
        from_thread: AppendListener,
        watching: asyncio.Event | None = None,
    ) -> None:
        """Hear other processes' appends: where the store offers a poll the loop can make
        (:meth:`EventStore.append_poll`: SQLite) or a listener on the loop
        (:meth:`EventStore.listen_on_loop`: PostgreSQL), by a task on the loop that calls
        ``on_loop``; else through the store's listener, which calls ``from_thread`` from its own
        thread. A poll is made at the store's pace while ``watching`` is set (some stream
        waits), else every ``IDLE_POLL_S`` and at once when it is set."""
        if self._polling is not None:
            return
        poll = self._at_once.append_poll() if self._at_once is not None else None
        if poll is not None:
            self._polling = asyncio.get_running_loop().create_task(
                self._poll(poll, on_loop, watching)
            )
        elif (heard := self.store.listen_on_loop(from_thread)) is not None:
            self._polling = asyncio.get_running_loop().create_task(heard.run(on_loop))
        else:
            self.store.listen(from_thread)

    async def _poll(
        self, poll: AppendPoll, listener: AppendListener, watching: asyncio.Event | None
    ) -> None:
        while True:
            if watching is None or watching.is_set():
                await asyncio.sleep(poll.every_s)
            else:  # nobody to wake: look rarely, and at once when a stream begins to wait
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(watching.wait(), IDLE_POLL_S)
            try:
                grown = poll.poll()
            except Exception as error:  # unreadable for now: the streams' recheck remains
                log_failure(log, "looking for other processes' appends failed", error)
                await asyncio.sleep(POLL_FAILED_WAIT_S)
                continue
            for game_id, version in grown:
                listener(game_id, version)

    async def aclose(self) -> None:
        """:meth:`close`, and first the loop's own connections: its listener's (closed as its
        task ends) and its appends'."""
        if self._polling is not None:
            self._polling.cancel()
            await asyncio.gather(self._polling, return_exceptions=True)
            self._polling = None
        if self._on_loop is not None:
            await self._on_loop.close()
        self.close()
        # Returns once the threads' work under way is done, so that the store may be closed
        # next: SQLite's driver crashes the process when a connection is closed under a
        # thread's statement (the sweeper's look at the next deadline, a read).
        pools = {self._reads, self._writes}

        def join() -> bool:  # every pool, one deadline for all
            deadline = time.monotonic() + CLOSE_JOIN_S
            ended = [pool.join(deadline) for pool in pools]
            return all(ended)  # each pool waited for, even after one did not end

        if not await asyncio.to_thread(join):
            log.warning(
                "the store's threads were still at work when it closed", waited_s=CLOSE_JOIN_S
            )

    def close(self) -> None:
        """Stop the workers (the store itself is closed by whoever opened it); the loop's
        appends' connections are closed by :meth:`aclose`."""
        if self._polling is not None:
            self._polling.cancel()
            self._polling = None
        self._reads.shutdown()
        if self._writes is not self._reads:
            self._writes.shutdown()
