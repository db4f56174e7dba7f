"""How fast one seat may send commands: a token bucket per seat of a game.

A seat's commands cost a write each (a refused one is recorded too), so one client looping on
SubmitCommand or a Play stream could take the store from everyone; a ValidateCommand, the
engine's check of a command each time, draws on the same allowance. The default allowance is far
above what a person or a bot at full speed sends (the load tool measured ~200 moves/s for a whole
server), so only a runaway client meets it; it answers RESOURCE_EXHAUSTED ``RATE_LIMITED`` with
the time to wait.
"""

from __future__ import annotations

from dataclasses import dataclass

from croupier.app.memo import Memo

#: Commands per second a seat may keep up, and how many it may send at once after a pause.
DEFAULT_COMMANDS_PER_S = 200.0
DEFAULT_COMMAND_BURST = 400
#: Seats whose buckets are remembered (least recently used first out: a forgotten seat starts full,
#: which only ever errs towards letting a command through).
BUCKETS = 65536


@dataclass(frozen=True)
class RateLimit:
    """A seat's allowance; ``per_second`` 0 turns the limit off."""

    per_second: float = DEFAULT_COMMANDS_PER_S
    burst: int = DEFAULT_COMMAND_BURST

    def __post_init__(self) -> None:
        if self.per_second < 0 or self.burst < 1:
            raise ValueError("a rate limit needs a rate of 0 or more and a burst of at least 1")


@dataclass(frozen=True)
class _Bucket:
    tokens: float
    at_ms: int


class RateLimiter:
    """Token buckets by key (a game and a seat), refilled from the injected clock's time."""

    def __init__(self, limit: RateLimit, size: int = BUCKETS) -> None:
        self.limit = limit
        self._buckets: Memo[tuple[str, int], _Bucket] = Memo(size)

    def take(self, key: tuple[str, int], now_ms: int) -> int:
        """Spend one token: 0 when there was one, else the milliseconds until there is."""
        per_s, burst = self.limit.per_second, self.limit.burst
        if per_s == 0:
            return 0
        bucket = self._buckets.get(key) or _Bucket(float(burst), now_ms)
        elapsed_s = max(0, now_ms - bucket.at_ms) / 1000
        tokens = min(float(burst), bucket.tokens + elapsed_s * per_s)
        if tokens < 1:
            self._buckets.put(key, _Bucket(tokens, now_ms))
            return max(1, int((1 - tokens) / per_s * 1000 + 0.999))
        self._buckets.put(key, _Bucket(tokens - 1, now_ms))
        return 0
