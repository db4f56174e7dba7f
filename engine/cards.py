"""Playing cards as short stable codes.

A card is its code: rank then suit, ``"7S"`` (seven of spades), ``"TH"`` (ten of hearts), ``"AC"``;
jokers are ``"JK1"`` and ``"JK2"``. Codes are what commands carry, what events store and what the
shuffle permutes, so that a replay can be read without a lookup table.
"""

from __future__ import annotations

from collections.abc import Iterable

Card = str

RANKS = "A23456789TJQK"
SUITS = "SHDC"
JOKERS: tuple[Card, ...] = ("JK1", "JK2")

RANK_NAMES = (
    "ace",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "jack",
    "queen",
    "king",
)
SUIT_NAMES = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}


def standard_deck(jokers: int = 0) -> tuple[Card, ...]:
    """The canonical unshuffled order: spades, hearts, diamonds, clubs, each ace to king, then jokers.

    The shuffle permutes this order; golden vectors depend on it, so it never changes.
    """
    return tuple(r + s for s in SUITS for r in RANKS) + JOKERS[:jokers]


def is_joker(card: Card) -> bool:
    return card.startswith("JK")


def rank(card: Card) -> int:
    """1 (ace) to 13 (king); 0 for a joker."""
    try:
        return _RANK_OF[card]  # every meld check asks: a lookup for the codes of the decks
    except (KeyError, TypeError):
        return 0 if is_joker(card) else RANKS.index(card[0]) + 1


def suit(card: Card) -> str:
    """``"S"``, ``"H"``, ``"D"`` or ``"C"``; empty for a joker."""
    try:
        return _SUIT_OF[card]
    except (KeyError, TypeError):
        return "" if is_joker(card) else card[1]


# The codes of one deck and of two (a copy number after the code: "7S1"), and up to four jokers.
_CODES = [r + s + copy for s in SUITS for r in RANKS for copy in ("", "1", "2")]
_RANK_OF = {code: RANKS.index(code[0]) + 1 for code in _CODES} | {f"JK{n}": 0 for n in range(1, 5)}
_SUIT_OF = {code: code[1] for code in _CODES} | {f"JK{n}": "" for n in range(1, 5)}


def is_card(code: str, jokers: int = 0) -> bool:
    """Whether ``code`` names a card of a deck with ``jokers`` jokers."""
    if is_joker(code):
        return code in JOKERS[:jokers]
    return len(code) == 2 and code[0] in RANKS and code[1] in SUITS


def deck_codes(jokers: int = 0) -> frozenset[Card]:
    """Every code :func:`is_card` accepts for a deck with ``jokers`` jokers: a command's cards are
    checked against them at once (every candidate of every legal-move list is checked)."""
    known = _DECK_CODES.get(jokers)
    if known is None:
        known = frozenset(standard_deck(jokers))
        if len(_DECK_CODES) < DECKS_KEPT:
            _DECK_CODES[jokers] = known
    return known


# The decks whose codes are kept: a game has 0, 1 or 2 jokers.
DECKS_KEPT = 8
_DECK_CODES: dict[int, frozenset[Card]] = {}


def name(card: Card) -> str:
    """ "Seven of spades"."""
    if is_joker(card):
        return f"Joker {card[2:]}"
    return f"{RANK_NAMES[rank(card) - 1].capitalize()} of {SUIT_NAMES[suit(card)]}"


_ORDER = {c: i for i, c in enumerate(standard_deck(2))}


def sort_cards(cards: Iterable[Card]) -> tuple[Card, ...]:
    """Cards in the canonical deck order (a stable form for comparing card sets); codes that name
    no card go last, so that a malformed command still has one canonical form."""
    cards = tuple(cards)
    try:
        # Cards of the decks sort by their place alone (each code has its own): legal-move lists
        # sort hands and subsets of them many times over.
        return tuple(sorted(cards, key=_ORDER.__getitem__))
    except (KeyError, TypeError):
        return tuple(sorted(cards, key=lambda c: (_ORDER.get(c, len(_ORDER)), c)))


def by_rank(cards: Iterable[Card]) -> tuple[Card, ...]:
    """Cards sorted by rank, then suit: how a hand is shown to people."""
    return tuple(sorted(cards, key=lambda c: (rank(c) or 99, SUITS.find(suit(c)), c)))
