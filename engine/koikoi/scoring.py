"""The round score (docs/rules/koikoi.md §2.6) and the match settlement (§2.7), itemized."""

from __future__ import annotations

from enum import StrEnum

from croupier.engine.koikoi.cards import name
from croupier.engine.koikoi.events import Hand, RoundEnded
from croupier.engine.koikoi.rules import KoiKoiRules
from croupier.engine.koikoi.state import KoiKoiState
from croupier.engine.koikoi.yaku import Yaku, YakuKind, yaku
from croupier.engine.settlement import (
    Factor,
    MatchOutcome,
    Settlement,
    amount_of,
    match_abandoned,
    match_forfeited,
    points_won,
)
from croupier.engine.settlement import (
    match_settlement as settle_match,
)

#: The factor that starts a pile with no yaku at 0 points (:func:`score_factors`).
NO_YAKU = "no_yaku"


def describe(found: Yaku) -> str:
    title = found.kind.name.replace("_", "-").title()
    extra = f" (+{found.extra} for further cards)" if found.extra else ""
    return f"{title}: {', '.join(name(c) for c in found.cards)}{extra}"


def score_factors(state: KoiKoiState, winner: int, found: tuple[Yaku, ...]) -> list[Factor]:
    """The winner's points, factor by factor: each yaku added, then the doublings of §2.6.

    A pile with no yaku is worth 0 whatever the multipliers (docs/rules/koikoi.md §2.6): the
    itemized amount (``amount_of``) lets the first multiplier set the amount when nothing was added
    before it, so such a pile starts from an explicit 0 that every multiplier then keeps at 0."""
    rules = state.rules
    factors = [Factor(y.kind.name.lower(), y.points, describe(y), added=True) for y in found]
    if not factors:
        factors.append(Factor(NO_YAKU, 0, "no yaku in the captured pile", added=True))
    base = sum(y.points for y in found)
    if rules.double_from and base >= rules.double_from:
        factors.append(Factor("double_from", 2, f"{base} points is {rules.double_from} or more"))
    loser = state.other(winner)
    if state.koi_koi_by == loser:
        factors.append(
            Factor("koi_koi_multiplier", rules.koi_koi_multiplier, f"seat {loser} called koi-koi")
        )
    return factors


class KoiKoiOutcome(StrEnum):
    """How a round ends (docs/rules/koikoi.md §2.5, §2.4's hand yaku); events hold the string (see
    :class:`MatchOutcome`)."""

    SHOBU = "SHOBU"
    WON_AFTER_KOI_KOI = "WON_AFTER_KOI_KOI"
    LAST_TURN_SHOBU = "LAST_TURN_SHOBU"
    DRAWN = "DRAWN"
    TESHI = YakuKind.TESHI.name
    KUTTSUKI = YakuKind.KUTTSUKI.name


def round_ended(
    state: KoiKoiState,
    winner: int | None,
    outcome: KoiKoiOutcome,
    found: tuple[Yaku, ...] | None = None,
) -> RoundEnded:
    """The round's end: the winner's score and what the loser pays for it."""
    hands = tuple(Hand(s, cards, len(cards)) for s, cards in enumerate(state.hands))
    if winner is None:
        settlement = Settlement(
            state.round,
            (),
            outcome.value,
            (),
            (0,) * state.seats,
            ("both hands ran out with no winner: nobody scores",),
        )
        return RoundEnded(state.round, outcome.value, None, (), 0, hands, state.totals, settlement)
    if found is None:
        found = yaku(state.captured[winner], state.rules)
    factors = score_factors(state, winner, found)
    notes = (f"seat {winner} won the round with {amount_of(tuple(factors))} point(s)",)
    points, settlement = points_won(
        state.round, outcome, winner, factors, state.rules.stake_per_point, notes
    )
    totals = tuple(t + (points if s == winner else 0) for s, t in enumerate(state.totals))
    return RoundEnded(state.round, outcome.value, winner, found, points, hands, totals, settlement)


def match_settlement(state: KoiKoiState) -> Settlement:
    """The loser pays the difference of the totals × ``stake_per_point``; equal totals draw."""
    return settle_match(
        state.round, state.totals, state.rules.stake_per_point, f"{state.round} round(s)"
    )


#: The match settlement's outcome when a seat forfeited it (docs/rules/common.md §5.1).
FORFEIT = MatchOutcome.FORFEIT.value
#: The fewest points any yaku is worth (Kasu, Tan and Tane at their minimum).
LEAST_YAKU_POINTS = 1


def least_round_score(rules: KoiKoiRules) -> int:
    """The fewest points a won round scores under ``rules``: the least yaku (a hand yaku if it is
    worth less), doubled when ``double_from`` reaches down to it. The koi-koi multiplier needs the
    loser's own call, so it is no part of the least score."""
    least = min(LEAST_YAKU_POINTS, rules.hand_yaku_points)
    if rules.double_from and least >= rules.double_from:
        least *= 2
    return least


def abandoned_settlement(state: KoiKoiState, played: int, why: str) -> Settlement:
    """The match ends where it stands (``why``: the studio ended it; docs/rules/common.md §5.1)
    after ``played`` rounds: the rounds scored stand (``settlement.match_abandoned``), the round
    in play is not scored."""
    return match_abandoned(
        state.round,
        state.totals,
        state.rules.stake_per_point,
        f"{played} round(s)",
        why,
        "the rounds scored",
    )


def forfeit_settlement(state: KoiKoiState, seat: int) -> Settlement:
    """``seat`` forfeits (docs/rules/common.md §5.1): the match lost by the point difference, at least a won
    round's least score (``settlement.match_forfeited``)."""
    return match_forfeited(
        state.round,
        state.totals,
        seat,
        least_round_score(state.rules),
        state.rules.stake_per_point,
        f"seat {seat} timed out {state.rules.max_timeouts} turn(s) in a row and forfeited the "
        f"match in round {state.round}",
    )
