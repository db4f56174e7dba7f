"""The newest events kept per game: ranges merge when they meet, newer news wins, and a reader
is told when the memory does not reach back far enough."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from croupier.app.recent import (
    EVENTS,
    EVENTS_PER_GAME,
    GAMES,
    Recent,
    RecentEvents,
    _joined,
    _merged,
)
from croupier.log import StoredEvent


def event(version: int) -> StoredEvent:
    return StoredEvent("g", version, "c", None, 0, "E", bytes([version % 256]), "", "")


def test_appends_extend_and_a_read_reaching_back_fills_the_history() -> None:
    recent = RecentEvents(per_game=100)
    recent.add("g", [event(3), event(4)], 4, False)
    known = recent.get("g")
    assert known is not None and known.after(2) == (event(3), event(4)) and known.after(1) is None
    recent.add("g", [event(5)], 5, False)
    recent.add("g", [event(v) for v in range(1, 6)], 5, False)  # a stream's first read
    known = recent.get("g")
    assert known is not None and [e.version for e in known.after(0) or ()] == [1, 2, 3, 4, 5]
    recent.add("g", [event(2)], 2, False)  # older news changes nothing
    assert recent.get("g") == known
    assert known.after(5) == () and known.after(9) == ()


@given(st.lists(st.tuples(st.integers(1, 40), st.integers(0, 6)), max_size=30))
def test_what_is_kept_is_always_a_true_contiguous_tail(batches: list[tuple[int, int]]) -> None:
    """Whatever order the batches come in, the memory holds contiguous events ending at the
    newest version it was told of, each the event of its version."""
    recent = RecentEvents(per_game=8)
    newest = 0
    for start, size in batches:
        events = [event(v) for v in range(start, start + size)]
        version = start + size - 1 if size else start
        recent.add("g", events, version, False)
        newest = max(newest, version)
        known = recent.get("g")
        assert known is not None and known.version == newest
        versions = [e.version for e in known.events]
        assert versions == list(range(known.first, known.first + len(versions)))
        assert all(e == event(e.version) for e in known.events)
        assert not versions or versions[-1] == known.version


@given(
    st.integers(1, 30),
    st.integers(1, 10),
    st.integers(0, 2),
    st.booleans(),
    st.integers(1, 45),
    st.integers(0, 6),
    st.integers(0, 2),
)
def test_the_next_batch_is_joined_as_the_general_merge_joins_it(
    known_first: int,
    known_size: int,
    known_past: int,
    follows: bool,
    start: int,
    size: int,
    past: int,
) -> None:
    """The short way for a batch straight after the known events (the usual append) gives what
    the merge by version gives, for any contiguous ranges (``follows`` makes the batch the next
    one, which random starts would seldom hit)."""
    known_events = tuple(event(v) for v in range(known_first, known_first + known_size))
    known = Recent(known_events, known_events[-1].version + known_past, False)
    if follows:
        start = known.version + 1
    new = tuple(event(v) for v in range(start, start + size))
    version = max(known.version, new[-1].version + past if new else start + past)
    assert _joined(known, new, version) == _merged(known, new, version)


def test_long_games_keep_at_most_the_events_bound_in_all() -> None:
    """The soak test's finding: 4,096 games of 256 events each (long games: a Gin match, a table
    of Hoola rounds) held a million events, some 400 MB. Now at most ``EVENTS`` in all, the
    newest game's whole tail among them."""
    tail = tuple(event(v) for v in range(1, EVENTS_PER_GAME + 1))  # shared: only counts matter
    recent = RecentEvents()
    for n in range(GAMES):
        recent.add(f"game-{n}", tail, EVENTS_PER_GAME, False)
    assert recent.events <= EVENTS < GAMES * EVENTS_PER_GAME
    assert recent.events == sum(len(r.events) for r in recent._games.values())
    assert len(recent) == EVENTS // EVENTS_PER_GAME
    newest = recent.get(f"game-{GAMES - 1}")
    assert newest is not None and newest.after(0) == tail
    assert recent.get("game-0") is None  # the least recently moved went first


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(1, 40), st.integers(0, 6), st.booleans()),
        max_size=60,
    )
)
def test_the_bounds_hold_after_any_batches(
    batches: list[tuple[int, int, int, bool]],
) -> None:
    """Over any batches of any games, read or not in between: the count of events kept is their
    sum, within the bounds of games and events; the game just told of is kept, at its newest."""
    games, per_game, most = 4, 8, 20
    recent = RecentEvents(games=games, per_game=per_game, events=most)
    for game, start, size, read in batches:
        game_id = f"g{game}"
        if read:
            recent.get(f"g{(game + 1) % 6}")  # a read makes a game the most recently used
        version = start + size - 1 if size else start
        recent.add(game_id, [event(v) for v in range(start, start + size)], version, False)
        kept = list(recent._games.values())
        assert recent.events == sum(len(r.events) for r in kept)
        assert len(kept) <= games and recent.events <= most
        assert recent._games.get(game_id) is not None
