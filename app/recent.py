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
            kept = _joined(known, kept, version)
        self._games.put(game_id, Recent(kept[-self._per_game :], version, finished))


def _joined(known: Recent, new: tuple[StoredEvent, ...], version: int) -> tuple[StoredEvent, ...]:
    """``new`` (the game being at ``version``) with the ``known`` events before it when the two
    ranges meet, else ``new`` alone. The usual news is the batch just after the known events: it
    goes on the end as it is, which is what the merge makes of it, without the merge's sort of
    every event kept on every append."""
    if new and known.events[-1].version < new[0].version == known.version + 1:
        return known.events + new
    return _merged(known, new, version)


def _merged(known: Recent, new: tuple[StoredEvent, ...], version: int) -> tuple[StoredEvent, ...]:
    """:func:`_joined` for any two ranges: merged by version (``new``'s copy wins) when they
    meet or overlap, else ``new`` alone."""
    new_first = new[0].version if new else version + 1
    if new_first <= known.version + 1 and (not new or new[-1].version >= known.first - 1):
        by_version = {e.version: e for e in known.events}
        by_version.update((e.version, e) for e in new)
        return tuple(by_version[v] for v in sorted(by_version))
    return new
