"""The newest stored events of each game this process has seen, so that the streams of a game
share one read of each new batch (usually none: the batch was appended here).

Only a cache: a stream reads the store when the memory does not reach back far enough, and when
it heard of a newer version than the memory holds (another replica's append, told by the store's
listener or found by the process's recheck).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from croupier.app.memo import Memo
from croupier.log import StoredEvent

#: Events kept per game, and games kept.
EVENTS_PER_GAME = 256
GAMES = 4096


@dataclass(frozen=True)
class Recent:
    """A game's newest events: versions ``first`` to ``version`` (``first`` > ``version`` when
    none), and whether the game is over."""

    events: tuple[StoredEvent, ...]
    version: int
    finished: bool

    @property
    def first(self) -> int:
        return self.events[0].version if self.events else self.version + 1

    def after(self, version: int) -> tuple[StoredEvent, ...] | None:
        """The events after ``version``, or ``None`` if the memory does not reach back to it."""
        if version >= self.version:
            return ()
        if version + 1 < self.first:
            return None
        return self.events[version + 1 - self.first :]


class RecentEvents:
    def __init__(self, games: int = GAMES, per_game: int = EVENTS_PER_GAME) -> None:
        self._games: Memo[str, Recent] = Memo(games)
        self._per_game = per_game

    def get(self, game_id: str) -> Recent | None:
        return self._games.get(game_id)

    def add(
        self, game_id: str, events: Sequence[StoredEvent], version: int, finished: bool
    ) -> None:
        """Events just stored or read (contiguous; the game being at ``version``): merged with
        what is known when the two ranges meet, else the newer wins."""
        known = self._games.get(game_id)
        if known is not None and version < known.version:
            return  # older news
        kept = tuple(events)
        if known is not None and known.events:
            new_first = kept[0].version if kept else version + 1
            if new_first <= known.version + 1 and (not kept or kept[-1].version >= known.first - 1):
                by_version = {e.version: e for e in known.events}
                by_version.update((e.version, e) for e in kept)
                kept = tuple(by_version[v] for v in sorted(by_version))
        self._games.put(game_id, Recent(kept[-self._per_game :], version, finished))
