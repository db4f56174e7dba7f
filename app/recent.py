"""The newest stored events of each game this process has seen, so that the streams of a game
share one read of each new batch (usually none: the batch was appended here).

Only a cache: a stream reads the store when the memory does not reach back far enough, and when
it heard of a newer version than the memory holds (another replica's append, told by the store's
listener or found by the process's recheck).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from croupier.log import StoredEvent

#: Events kept per game, and games kept.
EVENTS_PER_GAME = 256
GAMES = 4096
#: Events kept over all the games: what bounds the memory whatever the games' lengths. A kept
#: event is some 400 bytes (measured in a soak: 65,536 of them, ~27 MB); before this bound, a
#: process that had seen 4,096 long games (a Gin match, a table of Hoola rounds: 256 events each
#: and more) held a million of them, some 400 MB (docs/operations.md, "Memory and disk over
#: time"). The newest batch of every game in play is
#: kept whatever the bound (it is the one its streams read next): only the history of the games
#: least recently moved goes, read back from the store by a stream that resumes that far back.
EVENTS = 65_536


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
    """At most ``games`` games, ``per_game`` events each and ``events`` in all; the games least
    recently read or told of go first."""

    def __init__(
        self, games: int = GAMES, per_game: int = EVENTS_PER_GAME, events: int = EVENTS
    ) -> None:
        self._games: OrderedDict[str, Recent] = OrderedDict()
        self._max_games = games
        self._per_game = per_game
        self._max_events = events
        self._events = 0

    def __len__(self) -> int:
        """Games kept."""
        return len(self._games)

    @property
    def events(self) -> int:
        """Events kept, over every game."""
        return self._events

    def get(self, game_id: str) -> Recent | None:
        recent = self._games.get(game_id)
        if recent is not None:
            self._games.move_to_end(game_id)
        return recent

    def add(
        self, game_id: str, events: Sequence[StoredEvent], version: int, finished: bool
    ) -> None:
        """Events just stored or read (contiguous; the game being at ``version``): merged with
        what is known when the two ranges meet, else the newer wins."""
        known = self.get(game_id)
        if known is not None and version < known.version:
            return  # older news
        kept = tuple(events)
        if known is not None and known.events:
            kept = _joined(known, kept, version)
        recent = Recent(kept[-self._per_game :], version, finished)
        self._games[game_id] = recent
        self._events += len(recent.events) - (len(known.events) if known is not None else 0)
        # The least recently used go; never the game just told of (its batch is the news).
        while len(self._games) > 1 and (
            len(self._games) > self._max_games or self._events > self._max_events
        ):
            _, dropped = self._games.popitem(last=False)
            self._events -= len(dropped.events)


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
