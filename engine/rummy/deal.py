"""The deal of a Rummy round from the committed seeds (docs/rules/rummy.md §3.1, docs/shuffle.md)."""

from __future__ import annotations

from croupier.engine.cards import rank
from croupier.engine.rummy.cards import deck
from croupier.engine.rummy.events import DealerDraw, Hand, RoundDealt
from croupier.engine.rummy.rules import RummyRules
from croupier.engine.shared import drawn_by_rank
from croupier.engine.shuffle import Seeds, shuffled

HAND_SIZE = 13


def deal(rules: RummyRules, seats: int, seeds: Seeds) -> RoundDealt:
    """13 cards to each seat from the dealer's left, the upcard, the stock (top first). The dealer
    is drawn from a shuffle of its own (``first_dealer_drawn``: each seat turns a card, the
    lowest rank deals); in games recorded before it, the seat of the shuffled deck's last card's
    rank modulo the seat count."""
    cards = shuffled(deck(), seeds, 1, "deal")
    draws: tuple[DealerDraw, ...] = ()
    if rules.first_dealer_drawn:
        dealer, draws = drawn_by_rank(seeds, seats)
    else:
        dealer = rank(cards[-1]) % seats
    hands = {}
    for k in range(seats):
        seat = (dealer + 1 + k) % seats
        hands[seat] = cards[k * HAND_SIZE : (k + 1) * HAND_SIZE]
    rest = cards[seats * HAND_SIZE :]
    return RoundDealt(
        dealer,
        tuple(Hand(s, hands[s], HAND_SIZE) for s in range(seats)),
        rest[0],
        rest[1:],
        len(rest) - 1,
        draws,
    )
