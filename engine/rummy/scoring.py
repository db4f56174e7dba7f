"""Rummy values: a meld's worth toward the opening (docs/rules/rummy.md §3.3) and the settlement (§3.4)."""

from __future__ import annotations

from enum import StrEnum

from croupier.engine.cards import is_joker, rank
from croupier.engine.meld_solver import Meld, MeldKind
from croupier.engine.rummy.cards import opening_value, penalty
from croupier.engine.rummy.events import Hand, RoundEnded, SeatForfeited
from croupier.engine.rummy.state import RummyState
from croupier.engine.settlement import Factor, Settlement, SettlementLine, amount_of, net_of


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
    """How a round ends (docs/rules/rummy.md §3.4); events hold the string (see :class:`MatchOutcome`)."""

    WENT_OUT = "WENT_OUT"
    STOCK_OUT = "STOCK_OUT"
    # Every seat but the winner forfeited (docs/rules/common.md §5.1).
    FORFEIT = "FORFEIT"
    # Every seat in play was away for long enough: nobody attended the round (§5.1).
    ABANDONED = "ABANDONED"


#: Why a round with no winner ended, for its settlement's notes.
NO_WINNER_BECAUSE = {
    RummyOutcome.STOCK_OUT: "the stock ran out and could not be rebuilt",
    RummyOutcome.ABANDONED: "every seat in play was away and the round was abandoned",
}


def _hand_factors(state: RummyState, seat: int, reason: str) -> tuple[Factor, ...]:
    """A hand's cost: its value, × ``stake_per_point`` when that is not 1."""
    value = hand_value(state.hands[seat])
    factors = [Factor("hand_value", value, reason + " ".join(state.hands[seat]))]
    if state.rules.stake_per_point != 1:
        factors.append(Factor("stake_per_point", state.rules.stake_per_point, "stakes per point"))
    return tuple(factors)


def forfeited(state: RummyState, seat: int) -> SeatForfeited:
    """``seat`` forfeits: it pays its hand to every other seat in play, as if each had gone out
    (docs/rules/common.md §5.1): with more than one other seat in play, more than it would owe to whichever
    of them went out now."""
    cards = state.hands[seat]
    value = hand_value(cards)
    factors = _hand_factors(state, seat, "forfeited with in hand: ")
    amount = amount_of(factors)
    lines = tuple(
        SettlementLine(
            seat,
            payee,
            amount,
            factors,
            f"seat {seat} forfeits and pays seat {payee} {amount}, as if seat {payee} went out",
        )
        for payee in state.seats_in_play()
        if payee != seat and amount
    )
    return SeatForfeited(seat, Hand(seat, cards, len(cards)), value, lines)


def round_ended(
    state: RummyState, outcome: RummyOutcome, winner: int | None, why: str | None = None
) -> RoundEnded:
    """Each opponent still in play pays its hand's value × ``stake_per_point`` to the seat that
    went out (or the last seat in play); the forfeits' payments stand whatever the outcome.
    ``why``: how a round with no winner came to end, where the outcome's own words do not say
    (the studio ended it)."""
    hands = tuple(Hand(s, cards, len(cards)) for s, cards in enumerate(state.hands))
    values = tuple(hand_value(cards) for cards in state.hands)
    paid = tuple(line for forfeit in state.forfeits for line in forfeit.lines)
    forfeit_notes = tuple(
        f"seat {f.seat} forfeited and paid its hand of {f.hand_value} to each seat in play"
        for f in state.forfeits
    )
    if winner is None:
        nobody = "nobody else pays" if paid else "nobody pays"
        settlement = Settlement(
            1,
            (),
            outcome.value,
            paid,
            net_of(state.seats, paid),
            (f"{why or NO_WINNER_BECAUSE[outcome]}: {nobody}",) + forfeit_notes,
        )
        return RoundEnded(outcome.value, None, hands, values, settlement)
    losers = [s for s in state.seats_in_play() if s != winner and values[s]]
    lines = list(paid)
    for seat in losers:
        factors = _hand_factors(state, seat, "left in hand: ")
        amount = amount_of(factors)
        lines.append(
            SettlementLine(
                seat, winner, amount, factors, f"seat {seat} pays seat {winner} {amount}"
            )
        )
    if outcome is RummyOutcome.FORFEIT:
        won = f"seat {winner} is the last seat in play: every other seat forfeited"
    else:
        won = f"seat {winner} went out and scores {sum(values[s] for s in losers)}"
    settlement = Settlement(
        1,
        (winner,),
        outcome.value,
        tuple(lines),
        net_of(state.seats, tuple(lines)),
        (won,) + forfeit_notes,
    )
    return RoundEnded(outcome.value, winner, hands, values, settlement)
