"""The deal of a Rummy round from the committed seeds (docs/rules/rummy.md §3.1, docs/shuffle.md)."""

from __future__ import annotations

from croupier.engine.cards import rank
from croupier.engine.rummy.cards import deck
from croupier.engine.rummy.events import Hand, RoundDealt
from croupier.engine.shuffle import Seeds, shuffled

HAND_SIZE = 13


def deal(seats: int, seeds: Seeds) -> RoundDealt:
    """13 cards to each seat from the dealer's left, the upcard, the stock (top first); the dealer
    is the seat of the shuffled deck's last card's rank modulo the seat count."""
    cards = shuffled(deck(), seeds, 1, "deal")
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
    )
