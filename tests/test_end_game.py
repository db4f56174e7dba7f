"""The studio ends a game (``EndGame``, docs/rules/common.md §5.1), on random games of every kind
stopped at a random point: the game is over at once, abandoned; what was scored stands and the
round in play is not scored; no seat may send the command nor is offered it; and a fold of the
recorded batches (what a replay does) reaches the same state."""

from __future__ import annotations

import random
from typing import Any

import pytest
from game_invariants import refused
from hypothesis import given, settings
from hypothesis import strategies as st
from test_clock import replayed, started

from croupier.engine.clock import NO_SEAT, EndGame, StudioEndedGame
from croupier.engine.game import Context
from croupier.engine.gin import GinGame
from croupier.engine.hoola import HoolaGame
from croupier.engine.koikoi import KoiKoiGame
from croupier.engine.rummy import RummyGame
from croupier.engine.shuffle import Seeds

#: (game, preset, seats, rule changes): multi-round tables and matches, so that an end can come
#: between rounds and after some were scored.
CASES: list[tuple[Any, str, int, dict[str, Any]]] = [
    (HoolaGame(), "korean", 3, {"rounds": 4}),
    (HoolaGame(), "korean", 6, {"rounds": 2, "sit_out": True, "max_seats": 7}),
    (KoiKoiGame(), "nintendo-3", 2, {}),
    (GinGame(), "standard", 2, {"match_points": 60}),
    (RummyGame(), "standard", 3, {}),
    (RummyGame(), "standard", 3, {"turn_time_ms": 1_000, "forfeit_when_away": True}),
    (GinGame(), "single-hand", 2, {"turn_time_ms": 1_000}),
]
#: The most batches a test game is played before the studio may end it (random games of Gin
#: can go on for thousands: the hands wash).
MAX_BATCHES = 600
#: How often a seat's move checks that it could not end the game (listing moves is slow).
CHECK_REFUSED = 0.1
NOW_STEP_MS = 700


#: What a game's settlement note says stands, once the studio ended it.
STANDS = {
    "hoola": "nobody",  # "… played stand, … nobody wins the table" or "nobody pays"
    "koikoi": ": the rounds scored stand (seat 0 ",
    "gin": ": the hands scored stand (seat 0 ",
    "rummy": ": nobody",  # "nobody pays" or "nobody else pays"
}


def standing(game: Any, state: Any) -> tuple[int, ...]:
    """Each seat's net as the game stands, scored rounds only: Hoola's running balances; the
    matches' totals, the lower paying the difference × ``stake_per_point`` (nobody, if equal);
    Rummy's forfeits, paid as they happened."""
    match game.kind:
        case "hoola":
            return tuple(state.scores)
        case "koikoi" | "gin":
            a, b = state.totals
            stake = state.rules.stake_per_point
            return ((a - b) * stake, (b - a) * stake)
        case "rummy":
            net = [0] * state.seats
            for forfeit in state.forfeits:
                for line in forfeit.lines:
                    net[line.payer] -= line.amount
                    net[line.payee] += line.amount
            return tuple(net)
    raise AssertionError(game.kind)


def played(
    game: Any,
    rules: Any,
    seats: int,
    seeds: Seeds,
    rng: random.Random,
    idle: int | None,
    most: int = MAX_BATCHES,
) -> tuple[list[Any], list[tuple[int, int | None, list[Any]]], int]:
    """A random game to its end, or ``most`` batches into it (``idle``: a seat that never
    moves, which times out, if the game has a clock): every state it passed through, the
    batches (time, seat, events) as the log holds them, and the time of the last."""
    now, state, batches = started(game, rules, seats, seeds)
    states = [state]
    for _ in range(most):
        if game.is_finished(state):
            break
        now += rng.choice((0, NOW_STEP_MS))
        deadline = game.next_deadline(state)
        movers = [s for s in game.to_act(state) if s != idle]
        if not movers and deadline is not None:
            now = max(now, deadline)
        if deadline is not None and deadline <= now:
            state = game.at(state, now, None)
            due = game.advance(state, Context(seeds, now))
            seat = None
        else:
            seat = rng.choice(movers)
            if rng.random() < CHECK_REFUSED:
                # No seat may end the game, nor is it offered.
                refused(game, state, seat, EndGame("mine"), "STUDIO_ONLY")
            command = rng.choice(game.legal_commands(state, seat))
            due = game.decide(state, seat, command, Context(seeds, now))
            state = game.at(state, now, seat)
        for event in due:
            state = game.evolve(state, event)
        batches.append((now, seat, due))
        states.append(state)
    return states, batches, now


@settings(max_examples=30, deadline=None)
@given(
    case=st.sampled_from(CASES),
    seed=st.integers(0, 2**32 - 1),
    at=st.floats(0, 1),
    idle=st.none() | st.integers(0, 6),
    reason=st.sampled_from(("", "stuck: every player left", "voided after a restore")),
)
def test_the_studio_ends_a_game_where_it_stands(
    case: tuple[Any, str, int, dict[str, Any]],
    seed: int,
    at: float,
    idle: int | None,
    reason: str,
) -> None:
    game, preset, seats, changes = case
    rules = game.rules_for(preset, changes, seats)
    seeds = Seeds(seed.to_bytes(32, "big"), ())
    idle = None if idle is None or not rules.turn_time_ms else idle % seats
    states, batches, now = played(game, rules, seats, seeds, random.Random(seed), idle)
    if game.is_finished(states[-1]):
        refused(game, states[-1], NO_SEAT, EndGame(reason), "GAME_OVER")
        states.pop()
    # The studio ends it at a random point before its end.
    index = int(at * (len(states) - 1))
    state, batches = states[index], batches[: index + 1]
    now = batches[-1][0] + NOW_STEP_MS
    expected = standing(game, state)
    game.validate(state, NO_SEAT, EndGame(reason))  # the studio's: no seat
    events = game.decide(state, NO_SEAT, EndGame(reason), Context(seeds, now))
    assert events[0] == StudioEndedGame(reason)
    state = game.at(state, now, None)
    for event in events:
        state = game.evolve(state, event)
    batches.append((now, None, events))
    assert game.is_finished(state)
    assert not game.to_act(state) and game.next_deadline(state) is None
    assert all(game.legal_commands(state, s) == [] for s in range(seats))
    assert replayed(game, batches) == state
    settlement = game.final_settlement([e for _, _, batch in batches for e in batch])
    assert settlement is not None and settlement.outcome == "ABANDONED"
    assert settlement.winners == ()
    assert tuple(settlement.net) == expected, (settlement, expected)
    # The notes say who ended it, why, and what stands, in the game's own words.
    assert settlement.notes[0].startswith("the studio ended the game")
    assert STANDS[game.kind] in settlement.notes[0], settlement.notes[0]
    if reason:
        assert any(reason in note for note in settlement.notes)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].kind}-{c[1]}")
def test_a_game_just_created_ends_with_nobody_paying(
    case: tuple[Any, str, int, dict[str, Any]],
) -> None:
    game, preset, seats, changes = case
    rules = game.rules_for(preset, changes, seats)
    seeds = Seeds(bytes(range(32)), ())
    now, state, _ = started(game, rules, seats, seeds)
    events = game.decide(state, NO_SEAT, EndGame("test"), Context(seeds, now))
    for event in events:
        state = game.evolve(state, event)
    settlement = game.final_settlement(events)
    assert game.is_finished(state)
    assert settlement is not None and not any(settlement.net) and not settlement.lines
