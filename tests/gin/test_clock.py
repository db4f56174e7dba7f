"""Gin Rummy's forfeit (docs/rules/gin.md, "Turn clocks"): an away seat with
``forfeit_when_away`` loses the match by the current point difference, at least one point."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from croupier.contract.bindings import GIN
from croupier.engine.clock import Clock, TurnTimedOut
from croupier.engine.game import Context, fold
from croupier.engine.gin import GinGame
from croupier.engine.gin.events import CardDrawn, MatchEnded, SeatForfeited
from croupier.engine.gin.rules import GinRules, rules_for
from croupier.engine.gin.scoring import FORFEIT, abandoned_settlement
from croupier.engine.gin.state import GinState, Phase
from croupier.engine.settlement import amount_of

from .helpers import SEEDS, position

GAME = GinGame()
TURN_MS = 10_000
START_MS = 1_000_000
HANDS = ("2C 3D 4H 5S 6C 7D 8H 9S TC JD", "2D 3H 4S 5C 6D 7H 8S 9C TD JH")


def clocked(**options: Any) -> GinRules:
    return rules_for("standard", {"turn_time_ms": TURN_MS, "forfeit_when_away": True, **options}, 2)


def forfeiting(totals: tuple[int, int], **options: Any) -> GinState:
    """Seat 0 to draw in hand 4 with ``totals``, its clock started now."""
    state = position(HANDS, "KS", rules=clocked(**options), hand=4, totals=totals)
    clock = Clock(
        at_ms=START_MS,
        since_ms=(START_MS, START_MS),
        bank_ms=(0, 0),
        timeouts=(0, 0),
        away=(False, False),
        on_clock=GAME.on_clock(state),
    )
    return dataclasses.replace(state, clock=clock)


def at_deadline(state: GinState) -> tuple[GinState, list[Any]]:
    due = GAME.next_deadline(state)
    assert due is not None
    state = GAME.at(state, due, None)
    events = GAME.advance(state, Context(SEEDS, due))
    return fold(GAME, events, state), events


def test_forfeit_when_away_is_accepted() -> None:
    assert clocked().forfeit_when_away


@pytest.mark.parametrize(
    ("totals", "stake", "factors", "amount"),
    [
        ((12, 80), 1, [("point_difference", 68)], 68),
        ((12, 80), 3, [("point_difference", 68), ("stake_per_point", 3)], 204),
        # The forfeiting seat leads or is level: it still loses, by a scoring hand's least.
        ((90, 10), 1, [("round_minimum", 1)], 1),
        ((0, 0), 2, [("round_minimum", 1), ("stake_per_point", 2)], 2),
    ],
)
def test_an_away_seat_forfeits_and_loses_the_match(
    totals: tuple[int, int], stake: int, factors: list[tuple[str, int]], amount: int
) -> None:
    state = forfeiting(totals, max_timeouts=1, stake_per_point=stake)
    after, events = at_deadline(state)
    deadline = START_MS + TURN_MS
    assert events[:2] == [TurnTimedOut(0, deadline, away=True), SeatForfeited(0, 4)]
    end = events[2]
    assert isinstance(end, MatchEnded) and len(events) == 3  # no forced draw, no hand's end
    assert (end.hands, end.totals) == (4, totals)
    settlement = end.settlement
    assert settlement.outcome == FORFEIT and settlement.winners == (1,)
    (line,) = settlement.lines
    assert (line.payer, line.payee, line.amount) == (0, 1, amount)
    assert [(f.name, f.value) for f in line.factors] == factors
    assert line.amount == amount_of(line.factors) and settlement.net == (-amount, amount)
    assert after.phase is Phase.MATCH_OVER and GAME.next_deadline(after) is None
    assert GAME.final_settlement(events) == settlement
    for event in events:
        assert GIN.event_from_body(GIN.event_to_body(event)) == event


def test_until_it_is_away_a_seat_is_forced_not_forfeited() -> None:
    state = forfeiting((0, 0), max_timeouts=2)
    after, events = at_deadline(state)
    assert events[0] == TurnTimedOut(0, START_MS + TURN_MS, away=False)
    assert isinstance(events[1], CardDrawn)
    assert not any(isinstance(e, (SeatForfeited, MatchEnded)) for e in events)
    # Seat 1 times out next, once: nobody is away, so nobody forfeits.
    after, events = at_deadline(after)
    assert events[0].seat == 1 and not events[0].away
    assert not GAME.is_finished(after)


@pytest.mark.parametrize(
    ("phase", "played"), [(Phase.DRAW, 3), (Phase.DISCARD, 3), (Phase.HAND_OVER, 4)]
)
def test_an_abandoned_match_pays_the_hands_scored_and_has_no_winner(
    phase: Phase, played: int
) -> None:
    """docs/rules/gin.md, "Nobody left": the hands scored stand (the lower total pays the
    difference), the hand in play is not counted, and nobody wins the match."""
    state = dataclasses.replace(forfeiting((15, 35), stake_per_point=2), phase=phase)
    settlement = abandoned_settlement(state)
    assert settlement.outcome == "ABANDONED" and settlement.winners == ()
    [line] = settlement.lines
    assert (line.payer, line.payee, line.amount) == (0, 1, 40)
    assert f"over {played} hand(s)" in line.factors[0].reason
    assert settlement.net == (-40, 40) and f"over {played} hand(s)" in settlement.notes[0]
