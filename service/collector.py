"""Python's garbage collector, set for a server whose objects die by reference counting.

Nearly every object this server makes is freed by reference counting the moment nothing refers
to it; garbage cycles are rare (measured: some twenty objects a second at 256 tables in play,
most of them gRPC's per-call objects and context-variable tokens). But CPython's generational
collector walks every object that outlives one collection again at the next, older, one, and in
a server with many open streams most young objects outlive one: each waiting stream's futures,
coroutines and iterator steps are made anew at each move and live until the next (a second or
more at players' pace). Measured with ``croupier load --think-ms 1000 --games-in-flight 256``
(BENCHMARKS.md): middle collections walked some 48,000 such objects every 2.5 s, 30-45 ms each,
and full ones 50-95 ms, every call in flight waiting them out: a command's p99 of 23-48 ms, max
100-230 ms, against 8 ms with the collector off. A collection's time is its objects' references
followed over a heap of 200 MB, cache misses rather than work; fewer collections of the same
objects are the remedy, not other thresholds.

So the survivors of every collection are frozen (:func:`gc.freeze`): a collection walks only
what was made since the one before, and an object that lives on is walked once. A frozen object
is still freed as soon as nothing refers to it; only a garbage cycle that outlives its first
collection waits, for a thaw: the frozen objects go back to the collector and one full
collection walks them all, freeing those cycles and freezing what survives (one long pause:
0.2-0.3 s at 256 tables, about 0.6 s with 10,000 streams open). A thaw comes when the memory
blocks the process holds (:func:`sys.getallocatedblocks`, live objects and frozen cycles alike,
not memory freed and kept for reuse) have doubled (``thaw_growth`` 1, the default) since just
after the last one, checked each second on the event loop (:meth:`Collector.maintain`): so
frozen cycles hold at most as much again as the process held then, and a process whose memory
holds steady, as under a steady load, is not stopped for them. A starting process thaws once
or twice as its caches and streams fill; a thaw that freed next to nothing of what the memory
grew by (:data:`LIVE_GROWTH_SHARE`) found that growth alive, and the next waits for more of it
(the pause grows with the heap: with 10,000 streams opening, thaws of 0.2, 0.4 and 0.9 s that
freed 401, 0 and 0 objects). And at least once an hour
(:data:`THAW_AT_LEAST_EVERY_S`): a cycle that holds little memory may hold a socket or a file.
Tried and dropped: a thaw every 15 s (each stopped every call in flight for 0.2-0.3 s, to free
a few hundred objects); the process's peak memory as the measure (memory a thaw frees stays in
the process, so each thaw raised the next one's threshold: a reviewer's process making cycles
grew to 4 GB in 20 s); a thaw at half as much again (a third thaw while 384 tables started: p99
151 ms in its 30 s). The same runs with this policy: a command's p99 9-13 ms, max 20-40 ms (but
for a thaw), the process's memory the same.

Written for CPython 3.11's generational collector (the image's; 3.12 and 3.13 collect the same
way). Freezing also sets the collector's counts to zero, so with this policy no middle or full
collection starts on its own: each young collection freezes first. Were that to change, they
would walk only what is new, which is the point of it.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger("croupier.collector")

#: The growth of the memory blocks held since just after the last thaw that makes the next one
#: (0: never freeze; CPython's own way).
DEFAULT_THAW_GROWTH = 1.0
#: A thaw that freed fewer objects than this share of the memory blocks the process had grown
#: by since the one before found the growth alive (streams opening, caches filling), not frozen
#: garbage: it stopped the process for nothing, so the next waits for twice as much growth and
#: one more (1 → 3 → 7 → 15: the memory doubled, then four times, ...). One that freed more
#: goes back to ``thaw_growth``. Measured opening 10,000 Connect streams: thaws of 0.21, 0.40
#: and 0.94 s, freeing 401, 0 and 0 objects.
LIVE_GROWTH_SHARE = 0.01
#: The most growth a thaw waits for after thaws that freed nothing (the hourly one still comes).
MAX_THAW_GROWTH = 15.0
#: The longest between two thaws, whatever the memory: a garbage cycle may hold a socket or a file.
THAW_AT_LEAST_EVERY_S = 3600.0
THAW_ENV = "CROUPIER_GC_THAW_GROWTH"
#: The setting of a thaw on a clock (seconds), before 2026-12-02: no longer read.
RETIRED_THAW_ENV = "CROUPIER_GC_THAW_S"
#: CPython's oldest generation: a collection of it is a full collection.
OLDEST = 2
#: Pauses kept until they are reported (under load, some twenty young collections a second).
PAUSES_KEPT = 10_000
#: How often the pauses kept are handed to the metrics, and a thaw's need checked.
REPORT_EVERY_S = 1.0


def memory_blocks() -> float:
    """The memory blocks the process's objects hold now (frozen garbage included; memory freed
    and kept for reuse not): a count, not bytes, and cheap (tens of microseconds)."""
    return float(sys.getallocatedblocks())


#: Told of each collection: its generation and how long it stopped the process, in seconds.
PauseObserver = Callable[[int, float], None]


class Collector:
    """The process's collector policy (:meth:`install` once, in the serving process, and
    :meth:`maintain` on its event loop for the thaws)."""

    def __init__(
        self,
        thaw_growth: float = DEFAULT_THAW_GROWTH,
        memory: Callable[[], float] = memory_blocks,
        clock: Callable[[], float] = time.monotonic,
        thaw_every_s: float = THAW_AT_LEAST_EVERY_S,
    ) -> None:
        self.thaw_growth = thaw_growth
        #: The growth the next thaw waits for: ``thaw_growth``, or more after thaws that found
        #: the growth alive (``LIVE_GROWTH_SHARE``).
        self.growth = thaw_growth
        self.thaw_every_s = thaw_every_s
        self._memory = memory
        self._clock = clock
        # Each collection's (generation, seconds), until :meth:`pauses` hands them on. Not
        # observed from the callback itself: a collection starts at any allocation, perhaps one
        # made while a metric's (non-reentrant) lock is held.
        self._pauses: deque[tuple[int, float]] = deque(maxlen=PAUSES_KEPT)
        self._started = 0.0
        # The memory held just after the last thaw (or the install), and when that was.
        self._held_after_thaw = 0.0
        self._thawed_at = 0.0
        #: Collections whose survivors were frozen, and thaws made.
        self.frozen = 0
        self.thaws = 0

    @property
    def freezing(self) -> bool:
        return self.thaw_growth > 0

    def install(self) -> None:
        """From now on: each collection is timed, and (unless ``thaw_growth`` is 0) what survives
        it is frozen. What start-up made (modules, classes) is frozen now."""
        self._held_after_thaw = self._memory()
        self._thawed_at = self._clock()
        if self.freezing:
            gc.freeze()
        gc.callbacks.append(self._collected)

    def uninstall(self) -> None:
        """The collector as CPython runs it: nothing frozen, no callback."""
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)
        gc.unfreeze()

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        self._pauses.append((info["generation"], time.perf_counter() - self._started))
        if self.freezing:
            gc.freeze()
            self.frozen += 1

    @property
    def thaw_due(self) -> bool:
        if not self.freezing:
            return False
        grown = self._memory() >= self._held_after_thaw * (1 + self.growth)
        return grown or self._clock() - self._thawed_at >= self.thaw_every_s

    def thaw(self) -> int:
        """Hand every frozen object back and collect them all once (freeing the garbage cycles
        frozen since the last thaw; the survivors are frozen again). Returns the objects freed.
        The next thaw waits for more growth if this one found the growth alive."""
        grown = self._memory() - self._held_after_thaw
        gc.unfreeze()
        self.thaws += 1
        freed = gc.collect()
        alive = grown > 0 and freed < LIVE_GROWTH_SHARE * grown
        self.growth = min(2 * self.growth + 1, MAX_THAW_GROWTH) if alive else self.thaw_growth
        self._held_after_thaw = self._memory()
        self._thawed_at = self._clock()
        return freed

    def pauses(self) -> list[tuple[int, float]]:
        """The collections since the last call: (generation, seconds the process stopped)."""
        taken: list[tuple[int, float]] = []
        while self._pauses:
            taken.append(self._pauses.popleft())
        return taken

    async def maintain(
        self,
        observe: PauseObserver | None = None,
        every_s: float = REPORT_EVERY_S,
        announce: bool = True,
    ) -> None:
        """Every ``every_s`` until cancelled: hand each collection's pause to ``observe``, and
        thaw when a thaw is due (on the event loop, so that it stops the process between calls'
        steps, as any collection does), logging it if ``announce``."""
        while True:
            await asyncio.sleep(every_s)
            if self.thaw_due:
                started = time.perf_counter()
                freed = self.thaw()
                if announce:
                    log.info(
                        "frozen objects handed back to the collector and collected",
                        freed=freed,
                        seconds=round(time.perf_counter() - started, 3),
                        # What the next thaw's growth is measured from, and that growth.
                        memory_blocks=int(self._held_after_thaw),
                        next_growth=self.growth,
                    )
            if observe is None:
                continue
            try:
                for generation, seconds in self.pauses():
                    observe(generation, seconds)
            except Exception:  # a metric that fails must not end the reports
                log.exception("garbage-collection pauses not reported")
