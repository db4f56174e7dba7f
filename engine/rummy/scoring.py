"""Rummy values: a meld's worth toward the opening (RULES.md §3.3) and the settlement (§3.4)."""

from __future__ import annotations

from enum import StrEnum

from croupier.engine.cards import is_joker, rank
from croupier.engine.meld_solver import Meld, MeldKind
from croupier.engine.rummy.cards import opening_value, penalty
from croupier.engine.rummy.events import Hand, RoundEnded
from croupier.engine.rummy.state import RummyState
from croupier.engine.settlement import Factor, Settlement, SettlementLine, net_of


def _stands_for(meld: Meld) -> list[str]:
    """The card each place of the meld stands for (a joker: the card it is)."""
    named = meld.named()
    return [named[c] if is_joker(c) else c for c in meld.cards]


def meld_value(meld: Meld) -> int:
    """A meld's worth toward the opening: a joker counts as its card; J/Q/K 10; an ace 11, but 1
    at the low end of ``A 2 3 …`` (a 13-card run counts it 11)."""
    cards = _stands_for(meld)
    if meld.kind is MeldKind.SET:
        return sum(11 if rank(c) == 1 else min(rank(c), 10) for c in cards)
    values = [rank(c) for c in cards]
    if values[-1] == 1 and len(values) > 1:
        values[-1] = 14  # the ace above a king
    if len(values) == 13:
        return sum(11 if v == 1 else opening_value(v) for v in values)
    return sum(opening_value(v) for v in values)


def hand_value(cards: tuple[str, ...]) -> int:
    return sum(penalty(c) for c in cards)


class RummyOutcome(StrEnum):
    """How a round ends (RULES.md §3.4); events hold the string (see :class:`MatchOutcome`)."""

    WENT_OUT = "WENT_OUT"
    STOCK_OUT = "STOCK_OUT"


def round_ended(state: RummyState, outcome: RummyOutcome, winner: int | None) -> RoundEnded:
    """Each opponent pays its hand's value × ``stake_per_point`` to the seat that went out."""
    hands = tuple(Hand(s, cards, len(cards)) for s, cards in enumerate(state.hands))
    values = tuple(hand_value(cards) for cards in state.hands)
    if winner is None:
        settlement = Settlement(
            1,
            (),
            outcome.value,
            (),
            (0,) * state.seats,
            ("the stock ran out and could not be rebuilt: nobody pays",),
        )
        return RoundEnded(outcome.value, None, hands, values, settlement)
    lines = []
    stake = state.rules.stake_per_point
    for seat in range(state.seats):
        if seat == winner or values[seat] == 0:
            continue
        factors = [
            Factor("hand_value", values[seat], "left in hand: " + " ".join(state.hands[seat]))
        ]
        if stake != 1:
            factors.append(Factor("stake_per_point", stake, "stakes per point"))
        lines.append(
            SettlementLine(
                seat,
                winner,
                values[seat] * stake,
                tuple(factors),
                f"seat {seat} pays seat {winner} {values[seat] * stake}",
            )
        )
    settlement = Settlement(
        1,
        (winner,),
        outcome.value,
        tuple(lines),
        net_of(state.seats, tuple(lines)),
        (f"seat {winner} went out and scores {sum(values)}",),
    )
    return RoundEnded(outcome.value, winner, hands, values, settlement)
