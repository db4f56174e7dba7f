"""The 108 cards of Rummy with jokers: two standard decks and four jokers (docs/rules/rummy.md §3).

The two copies of a card keep apart by a copy digit: ``"7S1"``, ``"7S2"``; jokers are ``"JK1"`` …
``"JK4"``. Rank and suit read as in :mod:`croupier.engine.cards` (the first two characters).
"""

from __future__ import annotations

from collections.abc import Iterable

from croupier.engine.cards import RANKS, SUITS, Card, is_joker, rank

JOKERS: tuple[Card, ...] = ("JK1", "JK2", "JK3", "JK4")


def deck() -> tuple[Card, ...]:
    """The canonical unshuffled order: copy 1 then copy 2 of the standard deck, then the jokers."""
    return tuple(r + s + str(copy) for copy in (1, 2) for s in SUITS for r in RANKS) + JOKERS


_ORDER = {c: i for i, c in enumerate(deck())}


def is_card(code: object) -> bool:
    return isinstance(code, str) and code in _ORDER


def sort_cards(cards: Iterable[Card]) -> tuple[Card, ...]:
    """In deck order; unknown codes last (a malformed command still has one canonical form)."""
    return tuple(sorted(cards, key=lambda c: (_ORDER.get(c, len(_ORDER)), c)))


def penalty(card: Card) -> int:
    """What a card left in hand costs its holder (docs/rules/rummy.md §3.4): joker 20, ace 11, J/Q/K 10."""
    if is_joker(card):
        return 20
    r = rank(card)
    return 11 if r == 1 else min(r, 10)


def opening_value(rank_value: int) -> int:
    """A card's value toward the opening (docs/rules/rummy.md §3.3) by its place's rank value: 2–10 face,
    J/Q/K 10, an ace 11 (14: a high ace) — a low ace (1) counts 1."""
    if rank_value == 1:
        return 1
    if rank_value == 14:
        return 11
    return min(rank_value, 10)


__all__ = ["JOKERS", "RANKS", "SUITS", "deck", "is_card", "opening_value", "penalty", "sort_cards"]
