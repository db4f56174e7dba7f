"""Python's garbage collector, set for a server that holds many long-lived streams (``serve``).

Each open stream is about 100 objects the collector tracks (gRPC's coroutines, futures, contexts
and scopes, and ours). With 10,000 streams open, a full collection walks a million objects and
stops the event loop for about 0.6 s; under load CPython 3.11 runs one every 10 to 20 s (when
the objects that survived a younger collection since the last full one reach a quarter of those
that survived it). Every call in flight waits out the pause.

Most survivors of a full collection live long: the open streams, the cached games, the modules.
After each full collection they are frozen (:func:`gc.freeze`), so that the next full
collections walk only what is new since. A frozen object is still freed as soon as nothing
refers to it (reference counting frees nearly everything here); only garbage cycles that reach a
frozen object wait (newer objects in such a cycle too), for the thaw: at the first full
collection ``thaw_s`` after the last thaw, the frozen objects go back to the collector, and the
full collection after that walks them all once (one long pause per thaw).

Measured with ``croupier load --streams 10000 --games-in-flight 4`` (BENCHMARKS.md): full
collections of 350-585 ms became 36-63 ms, and the slowest move 717 ms became 51 ms; the
server's memory over six rounds of 10,000 streams opened and closed was the same as without
freezing. Written for CPython 3.11's generational collector (the image's; 3.12 and 3.13 collect
the same way). A collector that seldom reports full collections (3.14's incremental one) would
seldom freeze: harmless, but then the policy does little.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger("croupier.collector")

#: How often the frozen objects go back to the collector (0: never freeze; CPython's own way).
DEFAULT_THAW_S = 600.0
THAW_ENV = "CROUPIER_GC_THAW_S"
#: CPython's oldest generation: a collection of it is a full collection.
OLDEST = 2
#: Pauses kept until they are reported (a collection is rarely under a few per second).
PAUSES_KEPT = 10_000
#: How often the pauses kept are handed to the metrics.
REPORT_EVERY_S = 1.0

#: Told of each collection: its generation and how long it stopped the process, in seconds.
PauseObserver = Callable[[int, float], None]


class Collector:
    """The process's collector policy (:meth:`install` once, in the serving process)."""

    def __init__(
        self,
        thaw_s: float = DEFAULT_THAW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.thaw_s = thaw_s
        self._clock = clock
        # Each collection's (generation, seconds), until :meth:`report` hands them on. Not
        # observed from the callback itself: a collection starts at any allocation, perhaps one
        # made while a metric's (non-reentrant) lock is held.
        self._pauses: deque[tuple[int, float]] = deque(maxlen=PAUSES_KEPT)
        self._started = 0.0
        self._thawed_at = 0.0
        #: Full collections seen, and how many of them froze their survivors.
        self.full = 0
        self.frozen = 0

    @property
    def freezing(self) -> bool:
        return self.thaw_s > 0

    def install(self) -> None:
        """From now on: each collection is timed, and (unless ``thaw_s`` is 0) the survivors of
        each full collection are frozen. What start-up made (modules, classes) is frozen now."""
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
        generation: int = info["generation"]
        self._pauses.append((generation, time.perf_counter() - self._started))
        if generation != OLDEST or not self.freezing:
            return
        self.full += 1
        now = self._clock()
        if now - self._thawed_at >= self.thaw_s:
            # Handed back: the next full collection walks every object once, and frees the
            # garbage cycles among those frozen since the last thaw.
            gc.unfreeze()
            self._thawed_at = now
        else:
            gc.freeze()
            self.frozen += 1

    def pauses(self) -> list[tuple[int, float]]:
        """The collections since the last call: (generation, seconds the process stopped)."""
        taken: list[tuple[int, float]] = []
        while self._pauses:
            taken.append(self._pauses.popleft())
        return taken

    async def report(self, observe: PauseObserver, every_s: float = REPORT_EVERY_S) -> None:
        """Hand each collection's pause to ``observe``, every ``every_s``, until cancelled."""
        while True:
            await asyncio.sleep(every_s)
            try:
                for generation, seconds in self.pauses():
                    observe(generation, seconds)
            except Exception:  # a metric that fails must not end the reports
                log.exception("garbage-collection pauses not reported")
