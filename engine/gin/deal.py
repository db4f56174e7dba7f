"""The deal of a Gin Rummy hand from the committed seeds (docs/rules/gin.md §4, docs/shuffle.md)."""

from __future__ import annotations

from croupier.engine import shared
from croupier.engine.cards import standard_deck
from croupier.engine.gin.events import DealerDraw, Hand, HandDealt
from croupier.engine.shuffle import Seeds, shuffled

HAND_SIZE = 10


def first_dealer(seeds: Seeds) -> tuple[int, tuple[DealerDraw, ...]]:
    """Each seat turns a card, seat 0 first; the lower rank deals; equal ranks turn again."""
    return shared.drawn_by_rank(seeds, 2)


def deal(
    seeds: Seeds, number: int, dealer: int | None, totals: tuple[int, ...] = (0, 0)
) -> HandDealt:
    """Ten cards to the non-dealer, ten to the dealer, the upcard, the stock (top first)."""
    draws: tuple[DealerDraw, ...] = ()
    if dealer is None:
        dealer, draws = first_dealer(seeds)
    cards = shuffled(standard_deck(), seeds, number, "deal")
    hands = {1 - dealer: cards[:HAND_SIZE], dealer: cards[HAND_SIZE : 2 * HAND_SIZE]}
    stock = cards[2 * HAND_SIZE + 1 :]
    return HandDealt(
        number,
        dealer,
        tuple(Hand(s, hands[s], HAND_SIZE) for s in (0, 1)),
        cards[2 * HAND_SIZE],
        stock,
        len(stock),
        totals,
        draws,
    )
