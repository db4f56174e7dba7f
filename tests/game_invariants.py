"""Checks every game's tests share: refusals, card visibility, deadlines and replaying a log."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Collection, Sequence
from typing import Any

import pytest

from croupier.engine.game import CommandError, Context, fold
from croupier.engine.shuffle import Seeds


def refused(
    game: Any,
    state: Any,
    seat: int,
    command: Any,
    reason: str,
    error: type[CommandError] = CommandError,
) -> None:
    """``game`` refuses ``command`` from ``seat`` for ``reason`` (raising ``error``, any
    :class:`CommandError` unless named), and its legal-move list does not offer it."""
    with pytest.raises(error) as info:
        game.validate(state, seat, command)
    assert info.value.reason == reason, info.value.message
    assert command not in game.legal_commands(state, seat)


def cards_in(value: Any, known: Collection[str]) -> set[str]:
    """Every card code of ``known`` anywhere inside an event, a view or a command."""
    if isinstance(value, str):
        return {value} if value in known else set()
    if isinstance(value, tuple):
        return set().union(*(cards_in(v, known) for v in value)) if value else set()
    if dataclasses.is_dataclass(value):
        return set().union(
            *(cards_in(getattr(value, f.name), known) for f in dataclasses.fields(value))
        )
    return set()


def play_commands(
    game: Any, seeds: Seeds, state: Any, seat: int, commands: Sequence[Any]
) -> tuple[Any, list[Any]]:
    """Decide and apply ``commands`` for ``seat`` in turn; the final state and every event."""
    events: list[Any] = []
    for command in commands:
        new = game.decide(state, seat, command, Context(seeds))
        state = fold(game, new, state)
        events += new
    return state, events


# Seeds for what a forced move might deal when a test only asks whether something is due.
NO_SEEDS = Seeds(bytes(32), ())

# A time no game reaches: "never" for a timer.
FAR_FUTURE_MS = 2**62


def assert_next_deadline_is_exact(game: Any, state: Any, seeds: Seeds = NO_SEEDS) -> None:
    """``next_deadline`` is the first moment ``advance`` has events: nothing a millisecond
    before, something at it; and with no deadline, nothing however late. So too for the state as
    a batch of the service's begins then (how the service reads a game as of now, and skips the
    reading before the deadline)."""
    deadline = game.next_deadline(state)
    if deadline is None:
        assert game.advance(state, Context(seeds, FAR_FUTURE_MS)) == []
        later = game.at(state, FAR_FUTURE_MS, None)
        assert game.advance(later, Context(seeds, FAR_FUTURE_MS)) == []
    else:
        assert game.advance(state, Context(seeds, deadline - 1)) == []
        before = game.at(state, deadline - 1, None)
        assert game.advance(before, Context(seeds, deadline - 1)) == []
        assert game.advance(state, Context(seeds, deadline)) != []


def assert_to_act_is_exact(game: Any, state: Any) -> None:
    """``to_act``, read from the phase, names exactly the seats with a legal command (its slow
    definition), in seat order; the seats whose turn it is (``on_clock``) are among them."""
    slow = tuple(seat for seat in range(state.seats) if game.legal_commands(state, seat))
    assert game.to_act(state) == slow, (state.phase, slow)
    # The seats the game waits on (SeatToAct.turn) are among them: each has a move.
    assert set(game.on_clock(state)) <= set(slow), (state.phase, game.on_clock(state), slow)


def assert_replay_reproduces(
    game: Any,
    rules: Any,
    seats: int,
    seeds: Seeds,
    commands: Sequence[tuple[int, Any]],
    events: list[Any],
) -> None:
    """Re-deal from the seeds, re-apply every command, and require exactly the recorded events."""
    again = game.start(rules, seats, seeds)
    state = fold(game, again)
    for seat, command in commands:
        new = game.decide(state, seat, command, Context(seeds))
        again += new
        state = fold(game, new, state)
    assert again == events


def scrambled(state: Any, viewer: int | None, hidden: set[str], rng: random.Random) -> Any:
    """``state`` with the cards of ``hidden`` (those ``viewer``, ``None`` for a spectator,
    cannot know) dealt again at random among the places they lie (other seats' hands, the
    stock), each place keeping its count: a state the viewer cannot tell from this one."""
    pool = [c for s, h in enumerate(state.hands) if s != viewer for c in h if c in hidden]
    pool += [c for c in state.stock if c in hidden]
    rng.shuffle(pool)
    cards = iter(pool)
    hands = tuple(
        h if s == viewer else tuple(next(cards) if c in hidden else c for c in h)
        for s, h in enumerate(state.hands)
    )
    stock = tuple(next(cards) if c in hidden else c for c in state.stock)
    return dataclasses.replace(state, hands=hands, stock=stock)


def assert_unseen_cards_change_nothing(
    game: Any, state: Any, viewer: int | None, hidden: set[str], rng: random.Random
) -> None:
    """Hidden information stays hidden: with the cards ``viewer`` cannot know dealt again at
    random, it sees the same view, is told the same of who else may act (its own seat told
    exactly), and may make the same moves."""
    other = scrambled(state, viewer, hidden, rng)
    assert game.view(other, viewer) == game.view(state, viewer), viewer
    exact, seen = set(game.to_act(state)), set(game.to_act_seen(state, viewer))
    assert seen >= exact - {viewer} and (viewer in seen) == (viewer in exact), viewer
    assert set(game.to_act_seen(other, viewer)) - {viewer} == seen - {viewer}, viewer
    if viewer is not None:
        assert game.legal_commands(other, viewer) == game.legal_commands(state, viewer), viewer
