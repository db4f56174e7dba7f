"""The sweeper: what falls due by time alone is recorded even when no client calls.

Turn time-outs (and a battle-Hoola claim window's close) are facts of the log, but someone has to
write them down when nobody sends a command. Every process runs a sweeper; the database, not a
leader, decides which one records what:

* each game's row holds its next deadline, rewritten by every append (``games.next_deadline_ms``,
  derived from the log: a restart or another replica finds it there, nothing lives only in
  memory);
* a sweep claims the games that are due with a short lease (PostgreSQL ``FOR UPDATE SKIP
  LOCKED``, SQLite's single writer), so two replicas do not tick one game at once;
* the tick itself is an optimistic append under the id ``tick:<version>``: even if two processes
  tick one game (a lapsed lease), one batch is written, and a client's command that races it
  meets the version check.

A deadline this process recorded itself is ticked when it passes without a look at the database
or a claim, if the process's copy of the game is as new as anything it heard of and shows it due:
that process wrote the game's last batch, and a replica racing it at the same deadline meets the
tick's id (one batch is written). The database is still looked at every ``poll_ms``, for the
deadlines other replicas recorded (and a replica that died left).

The background sweeper does not wait for the games it claimed to be ticked before it looks again:
a tick waits for the store (a fold, an append behind the commands' appends), and deadlines that
fall due meanwhile are claimed and ticked at once rather than after the slowest tick of the batch
before (under load, a serial sweep made every time-out wait for the sweep before it).

A time-out is recorded with its own deadline (``TurnTimedOut.deadline_ms``) whenever the sweep
notices it: after a restart, overdue deadlines are recorded as they fell due.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from croupier.app.errors import NewerRelease, RetryLater, log_failure
from croupier.app.throttle import Throttle

if TYPE_CHECKING:
    from croupier.app.core import Croupier

log = structlog.get_logger("croupier.sweeper")


#: How long a game a newer release recorded stays claimed once this process finds it so (ms):
#: long enough that this process does not claim it again and again meanwhile, short enough that
#: a newer replica records its time-out well within outage_grace_ms (with the whole lease, 5 s,
#: it recorded a TurnRestarted for an outage there never was).
HAND_BACK_MS = 250
#: How often at most the sweeper says it leaves such games to the newer replicas (seconds).
NEWER_SAID_EVERY_S = 60.0
#: The shortest wait between two looks at the database.
MIN_WAIT_MS = 2
#: How long stopping waits for the ticks under way.
STOP_WAIT_S = 5.0
#: Deadlines this process recorded, kept to tick their games directly (beyond: the database's
#: look finds them).
ARMED_KEPT = 100_000


@dataclass(frozen=True)
class SweepSettings:
    #: The longest a sweeper sleeps without looking at the database (deadlines other replicas
    #: record are seen within it; this process's own wake it at once).
    poll_ms: int = 40
    #: How long a claimed game is this sweeper's alone (a crashed sweeper's claims lapse).
    lease_ms: int = 5_000
    #: Games claimed per look at the database.
    batch: int = 64
    #: Ticks in flight at once; beyond it, due games wait for the next look (their claims are
    #: only taken when there is room to tick them).
    in_flight: int = 256


class Sweeper:
    """Records due time-outs for ``core`` in the background (:meth:`start`), or once
    (:meth:`sweep`, for tests that drive the clock)."""

    def __init__(self, core: Croupier, settings: SweepSettings | None = None) -> None:
        self.core = core
        self.settings = settings or SweepSettings()
        # Games of a newer release met by this sweeper: said at most every NEWER_SAID_EVERY_S.
        self._newer_said = Throttle(NEWER_SAID_EVERY_S)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # The deadlines this process recorded, soonest first, with their games.
        self._armed: list[tuple[int, str]] = []
        self._armed_at: Counter[int] = Counter()  # how many of them fall due at each instant
        self._last_look = 0
        self._ticking: dict[str, asyncio.Task[None]] = {}
        # Games claimed while a tick of theirs was under way: ticked again once it ends.
        self._claimed_again: set[str] = set()
        self._was_full = False
        # Held from a claim until its games' ticks are started (so :meth:`sweep` finds every
        # claimed game either unclaimed or among the ticks under way).
        self._claims = asyncio.Lock()

    def armed(self, deadline_ms: int, game_id: str) -> None:
        """A deadline this process just recorded: when it passes, the game is ticked directly
        (if it is still due then: later batches move most deadlines)."""
        if len(self._armed) >= ARMED_KEPT:
            return
        soonest = self._armed[0][0] if self._armed else None
        heapq.heappush(self._armed, (deadline_ms, game_id))
        self._armed_at[deadline_ms] += 1
        if soonest is None or deadline_ms < soonest:
            self._wake.set()

    async def sweep(self) -> int:
        """Tick every game due now, and wait for the ticks under way (the background sweeper's
        too: a game it claimed is not claimed again here); returns how many this call claimed."""
        now = self.core.clock()
        swept = 0
        while True:
            claimed = await self._claim(now, self.settings.batch)
            swept += claimed
            if claimed < self.settings.batch:
                await asyncio.gather(*self._ticking.values(), return_exceptions=True)
                return swept

    async def _tick(self, game_id: str) -> None:
        """Tick a game, and again where the tick that ended may have begun on the game as it was
        before what is due now (a command moved it on meanwhile) and so recorded nothing: a
        claim this sweeper holds keeps every other sweeper off the game until its lease lapses
        (5 s: the turn then restarted, as after an outage)."""
        looked_again = False
        while await self._tick_once(game_id):
            if game_id in self._claimed_again:  # claimed while the tick was under way
                self._claimed_again.discard(game_id)
            elif not looked_again and self.core.due_here(game_id, self.core.clock()):
                # Still due here: the tick joined one that another call had begun (Croupier.tick
                # shares a game's tick under way). Once: a tick that leaves its game due again
                # at once (a deadline due as it is recorded) must not spin here.
                looked_again = True
            else:
                return

    async def _tick_once(self, game_id: str) -> bool:
        """One tick of ``game_id``; ``False`` if it is a newer release's game (handed back)."""
        # One broken game must not stop the others' clocks; the core logs a tick's failure.
        try:
            await self.core.tick(game_id)
        except NewerRelease as refused:
            await self._leave_to_newer(game_id, refused)
            return False
        except Exception:  # logged by the core (Croupier._forget_tick)
            pass
        return True

    async def _leave_to_newer(self, game_id: str, refused: NewerRelease) -> None:
        """A game a newer release recorded (a rolling upgrade): this release does not play on it,
        so its claim is given back after a moment, for a newer replica's sweeper to take."""
        with contextlib.suppress(Exception):  # else the claim lapses, as a crashed sweeper's
            await self.core.log.hand_back(game_id, self.core.clock() + HAND_BACK_MS)
        if (said := self._newer_said.due()) is not None:
            log.warning(
                "a game a newer release recorded is left to the newer replicas' clocks",
                game_id=game_id,
                reason=refused.reason,
                more_since_last=said.unsaid,
            )

    async def _claim(self, now: int, limit: int) -> int:
        """Claim up to ``limit`` games due by ``now`` and start ticking them (the claims'
        games are among the ticks under way before anyone else may claim); returns how many."""
        async with self._claims:
            due = await self.core.log.claim_due(now, self.settings.lease_ms, limit)
            self._started(due)
        return len(due)

    async def _start_due(self) -> None:
        """Claim the games due now (as many as there is room to tick) and start ticking them;
        returns without waiting for the ticks."""
        settings = self.settings
        while (room := min(settings.batch, settings.in_flight - len(self._ticking))) > 0:
            if await self._claim(self.core.clock(), room) < room:
                return
        self._was_full = True

    def _started(self, due: list[str]) -> None:
        """Start ticking the games just claimed."""
        for game_id in due:
            if game_id in self._ticking:
                # A tick of it is under way (from this process's copy, unclaimed, or from an
                # earlier claim): never two at once; this claim's is made once that one ends.
                self._claimed_again.add(game_id)
                continue
            task = asyncio.get_running_loop().create_task(
                self._tick(game_id), name=f"tick {game_id}"
            )
            self._ticking[game_id] = task
            task.add_done_callback(functools.partial(self._ticked, game_id))

    def _ticked(self, game_id: str, _: asyncio.Task[None]) -> None:
        self._ticking.pop(game_id, None)
        self._claimed_again.discard(game_id)
        if self._was_full:  # due games were left for want of room: look again now
            self._was_full = False
            self._last_look = 0
            self._wake.set()

    def _tick_armed(self, now: int) -> None:
        """Start ticking the games whose recorded deadlines have passed, where this process's
        copy shows them due (the others moved on, or another process wrote them last: the
        database's look decides those)."""
        while self._armed and self._armed[0][0] <= now:
            if len(self._ticking) >= self.settings.in_flight:
                self._was_full = True  # the rest wait for room: a finished tick wakes us
                return
            deadline, game_id = heapq.heappop(self._armed)
            self._armed_at[deadline] -= 1
            if not self._armed_at[deadline]:
                del self._armed_at[deadline]
            if game_id not in self._ticking and self.core.due_here(game_id, now):
                self._started([game_id])

    async def _run(self) -> None:
        while True:
            upcoming: int | None = None
            try:
                self._tick_armed(self.core.clock())
                # The database: for what other processes recorded. A read first: a claim
                # writes, and most looks find nothing due.
                if self.core.clock() - self._last_look >= self.settings.poll_ms:
                    self._last_look = self.core.clock()
                    upcoming = await self.core.log.next_due()
                    if upcoming is not None and upcoming <= self.core.clock():
                        await self._start_due()
                        upcoming = await self.core.log.next_due()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the store is away: try again a little later
                log_failure(log, "sweep failed", error)
                upcoming = None
                if isinstance(error, RetryLater):
                    # Looked at again after the delay it asks, not at the next poll (every
                    # 40 ms: refused at once while the store is away, 25 lines a second).
                    self._last_look = (
                        self.core.clock() + error.retry_after_ms - self.settings.poll_ms
                    )
            now = self.core.clock()
            wait_ms = self.settings.poll_ms - (now - self._last_look)
            if self._was_full:  # due games wait for room: a finished tick wakes the sweeper
                upcoming = None
            if upcoming is not None and upcoming not in self._armed_at:
                # Due in the database, not by this process's hand: look again then (still due
                # right after a claim: another replica is claiming it, SKIP LOCKED; a moment's
                # wait, not a spin).
                self._last_look = min(self._last_look, upcoming - self.settings.poll_ms)
                wait_ms = min(wait_ms, upcoming - now)
            if self._armed and not self._was_full:
                wait_ms = min(wait_ms, self._armed[0][0] - now)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(MIN_WAIT_MS, wait_ms) / 1000)

    def start(self) -> None:
        self.core.on_deadline = self.armed
        self._task = asyncio.get_running_loop().create_task(self._run(), name="sweeper")

    async def stop(self) -> None:
        self.core.on_deadline = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        # The ticks under way finish (each is one append), for a while: a store that does not
        # answer must not hold the shutdown; an unfinished claim only lapses.
        ticking = list(self._ticking.values())
        if ticking:
            _, late = await asyncio.wait(ticking, timeout=STOP_WAIT_S)
            for task in late:
                task.cancel()
