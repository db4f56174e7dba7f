"""Scoring a Gin Rummy hand (docs/rules/gin.md §4) and settling the match, itemized."""

from __future__ import annotations

from enum import StrEnum

from croupier.engine.gin.events import Hand, HandEnded
from croupier.engine.gin.state import GinState, Phase
from croupier.engine.settlement import (
    Factor,
    MatchOutcome,
    Settlement,
    match_abandoned,
    match_forfeited,
    points_won,
)
from croupier.engine.settlement import (
    match_settlement as settle_match,
)


class GinOutcome(StrEnum):
    """How a hand ends (docs/rules/gin.md §4); events hold the string (see :class:`MatchOutcome`)."""

    KNOCK = "KNOCK"
    GIN = "GIN"
    BIG_GIN = "BIG_GIN"
    UNDERCUT = "UNDERCUT"
    NO_SCORE = "NO_SCORE"
    WASH = "WASH"


def hand_ended(
    state: GinState,
    outcome: GinOutcome,
    winner: int | None,
    factors: list[Factor],
    deadwood: tuple[int, ...],
    notes: tuple[str, ...],
) -> HandEnded:
    """The hand's end: ``winner`` scores the factors' amount, paid × ``stake_per_point``."""
    hands = tuple(Hand(s, cards, len(cards)) for s, cards in enumerate(state.hands))
    knocker = state.knock.seat if state.knock else None
    if winner is None:
        settlement = Settlement(state.hand, (), outcome.value, (), (0,) * state.seats, notes)
        return HandEnded(
            state.hand, outcome.value, None, 0, knocker, deadwood, hands, state.totals, settlement
        )
    points, settlement = points_won(
        state.hand, outcome, winner, factors, state.rules.stake_per_point, notes
    )
    totals = tuple(t + (points if s == winner else 0) for s, t in enumerate(state.totals))
    return HandEnded(
        state.hand, outcome.value, winner, points, knocker, deadwood, hands, totals, settlement
    )


def scored(state: GinState, defender_deadwood: int) -> HandEnded:
    """The knock's score: the difference of deadwood, gin and undercut bonuses (docs/rules/gin.md §4)."""
    knock = state.knock
    assert knock is not None
    rules = state.rules
    knocker, defender = knock.seat, state.other(knock.seat)
    deadwood = tuple(knock.deadwood if s == knocker else defender_deadwood for s in range(2))
    counts = (
        f"defender seat {defender} {defender_deadwood}, knocker seat {knocker} {knock.deadwood}"
    )
    if knock.gin:
        bonus = (
            ("big_gin_bonus", rules.big_gin_bonus, "all eleven cards melded")
            if knock.big_gin
            else ("gin_bonus", rules.gin_bonus, "nothing left unmelded")
        )
        factors = [
            Factor("deadwood", defender_deadwood, f"defender seat {defender}'s deadwood"),
            Factor(*bonus, added=True),
        ]
        return hand_ended(
            state,
            GinOutcome.BIG_GIN if knock.big_gin else GinOutcome.GIN,
            knocker,
            factors,
            deadwood,
            (f"seat {knocker} went {'big ' if knock.big_gin else ''}gin",),
        )
    difference = defender_deadwood - knock.deadwood
    if difference > 0:
        factors = [Factor("deadwood_difference", difference, counts)]
        return hand_ended(
            state,
            GinOutcome.KNOCK,
            knocker,
            factors,
            deadwood,
            (f"seat {knocker} knocked and won",),
        )
    if difference < 0:
        factors = [
            Factor("deadwood_difference", -difference, counts),
            Factor(
                "undercut_bonus",
                rules.undercut_bonus,
                "the defender undercut the knock",
                added=True,
            ),
        ]
        return hand_ended(
            state,
            GinOutcome.UNDERCUT,
            defender,
            factors,
            deadwood,
            (f"seat {defender} undercut seat {knocker}'s knock",),
        )
    return hand_ended(
        state,
        GinOutcome.NO_SCORE,
        None,
        [],
        deadwood,
        (f"equal deadwood ({counts}): nobody scores",),
    )


def match_settlement(state: GinState) -> Settlement:
    """The loser pays the difference of the totals × ``stake_per_point``."""
    return settle_match(
        state.hand, state.totals, state.rules.stake_per_point, f"{state.hand} hand(s)"
    )


#: The match settlement's outcome when a seat forfeited it (docs/rules/common.md §5.1).
FORFEIT = MatchOutcome.FORFEIT.value
#: The fewest points a hand that scores is worth: a knock won by one point of deadwood.
LEAST_HAND_POINTS = 1


def abandoned_settlement(state: GinState, why: str | None = None) -> Settlement:
    """Both seats away for long enough (docs/rules/common.md §5.1), or ``why`` (the studio ended
    it): the match ends where it stands (``settlement.match_abandoned``)."""
    # The hand in play is not scored; between hands (its dealer timing out) the last one was.
    played = state.hand if state.phase is Phase.HAND_OVER else state.hand - 1
    return match_abandoned(
        state.hand,
        state.totals,
        state.rules.stake_per_point,
        f"{played} hand(s)",
        why or f"both seats were away and the match was abandoned in hand {state.hand}",
    )


def forfeit_settlement(state: GinState, seat: int) -> Settlement:
    """``seat`` forfeits (docs/rules/common.md §5.1): the match lost by the point difference, at least a
    scoring hand's least (``settlement.match_forfeited``)."""
    return match_forfeited(
        state.hand,
        state.totals,
        seat,
        LEAST_HAND_POINTS,
        state.rules.stake_per_point,
        f"seat {seat} timed out {state.rules.max_timeouts} turn(s) in a row and forfeited the "
        f"match in hand {state.hand}",
    )
