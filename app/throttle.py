"""One way of saying a thing that can happen many times a second at most once a while, which the
sweeper, the HTTP listener, the PostgreSQL store and the log filters share."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Said:
    """A repeated thing that is to be said now (:meth:`Throttle.due`)."""

    #: How many times it happened since it was last said, and was not said.
    unsaid: int
    #: How long ago it was last said (seconds; ``None``: never).
    since_s: float | None


class Throttle:
    """A thing that can happen many times a second (a refusal, a failure) said at most once every
    ``every_s`` seconds, the times between counted and told with the next: a flood of the same
    fault must not flood the log, nor hide how big it was. Not locked: its caller's lock, or its
    one thread, serves."""

    def __init__(self, every_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self._clock = clock
        self._last: float | None = None
        self._unsaid = 0

    @property
    def last(self) -> float | None:
        """When it was last said (by the clock; ``None``: never)."""
        return self._last

    def due(self) -> Said | None:
        """It happened: what to say of it now, or ``None`` (counted, to be told next time)."""
        now = self._clock()
        last = self._last
        if last is not None and now - last < self.every_s:
            self._unsaid += 1
            return None
        said = Said(self._unsaid, None if last is None else now - last)
        self._last, self._unsaid = now, 0
        return said
