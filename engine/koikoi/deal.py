"""The deal of a Koi-Koi round from the committed seeds (docs/rules/koikoi.md §2.2, docs/shuffle.md)."""

from __future__ import annotations

from collections import Counter

from croupier.engine import shared
from croupier.engine.koikoi.cards import Card, deck, month
from croupier.engine.koikoi.events import DealerDraw, Hand, RoundDealt
from croupier.engine.shuffle import Seeds, shuffled

HAND_SIZE = 8
FIELD_SIZE = 8
# A redeal is needed about once in 230 deals; the bound only guarantees the loop ends.
MAX_REDEALS = 1000


def first_dealer(seeds: Seeds) -> tuple[int, tuple[DealerDraw, ...]]:
    """Each seat turns a card, seat 0 first; the earlier month deals; a tie turns again."""
    return shared.first_dealer(deck(), seeds, month, DealerDraw)


def four_of_a_month(field: tuple[Card, ...]) -> bool:
    """Whether the field shows all four cards of a month: such a deal is redealt (docs/rules/koikoi.md §2.2)."""
    return max(Counter(month(c) for c in field).values()) == 4


def deal(
    seeds: Seeds, round_no: int, dealer: int | None, totals: tuple[int, ...] = (0, 0)
) -> RoundDealt:
    """Deal a round: 8 cards to each hand (the dealer's first), 8 to the field, 24 to the stock;
    redeal while the field shows four cards of one month. ``dealer=None``: decide it first."""
    draws: tuple[DealerDraw, ...] = ()
    if dealer is None:
        dealer, draws = first_dealer(seeds)
    for redeals in range(MAX_REDEALS):
        cards = shuffled(deck(), seeds, round_no, "deal" if redeals == 0 else f"redeal-{redeals}")
        field = cards[2 * HAND_SIZE : 2 * HAND_SIZE + FIELD_SIZE]
        if not four_of_a_month(field):
            break
    else:  # pragma: no cover - astronomically unlikely
        raise AssertionError("no deal without four of a month on the field")
    hands = {dealer: cards[:HAND_SIZE], 1 - dealer: cards[HAND_SIZE : 2 * HAND_SIZE]}
    stock = cards[2 * HAND_SIZE + FIELD_SIZE :]
    return RoundDealt(
        round_no,
        dealer,
        tuple(Hand(s, hands[s], HAND_SIZE) for s in (0, 1)),
        field,
        stock,
        len(stock),
        totals,
        redeals,
        draws,
    )
