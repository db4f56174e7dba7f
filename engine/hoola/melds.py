"""Hoola melds and hand values (RULES.md §1.3, §1.4).

A meld on the table is a :class:`TableMeld`: a set, a run (cards low to high in table order) or a
lone 7, which is still open. Sevens are special: one 7 is a meld, two 7s are a set, and a run that
holds a 7 needs only two cards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from croupier.engine.cards import Card, is_joker, rank, suit
from croupier.engine.hoola.rules import HoolaRules


class MeldKind(Enum):
    SET = 1
    RUN = 2
    LONE_SEVEN = 3


@dataclass(frozen=True)
class TableMeld:
    id: int
    owner: int
    kind: MeldKind
    cards: tuple[Card, ...]


SEVEN = 7


def _run_order(ranks: Sequence[int], rules: HoolaRules) -> tuple[int, ...] | None:
    """The ranks of one suit arranged low to high as a run, or ``None`` if they are not one.

    Aces are low and high (``A 2 3``, ``Q K A``) unless ``ace_low_only``; with ``ace_wrap`` a run
    may pass through ``K A 2`` (the ranks are read on a circle of 13).
    """
    n = len(ranks)
    present = set(ranks)
    if len(present) != n or n > 13:
        return None
    if rules.ace_wrap:
        # On the circle, n distinct ranks are one arc iff at most one step between neighbours
        # is not +1; the arc starts after that gap.
        ordered = sorted(present)
        gaps = [i for i in range(n) if (ordered[(i + 1) % n] - ordered[i]) % 13 != 1]
        if n == 13:
            return tuple(range(1, 14))
        if len(gaps) != 1:
            return None
        start = (gaps[0] + 1) % n
        return tuple(ordered[start:] + ordered[:start])
    lo = min(ranks)
    if sorted(ranks) == list(range(lo, lo + n)):
        return tuple(range(lo, lo + n))
    if 1 in present and not rules.ace_low_only:
        high = sorted(14 if r == 1 else r for r in ranks)
        if high == list(range(high[0], high[0] + n)):
            return tuple(r if r != 14 else 1 for r in high)
    return None


def arrange(cards: Iterable[Card], rules: HoolaRules) -> tuple[MeldKind, tuple[Card, ...]] | None:
    """The meld these cards make, in table order, or ``None`` (RULES.md §1.3)."""
    cards = tuple(cards)
    n = len(cards)
    if n == 0 or len(set(cards)) != n or any(is_joker(c) for c in cards):
        return None
    ranks = [rank(c) for c in cards]
    if len(set(ranks)) == 1:
        if ranks[0] == SEVEN:
            if n == 1:
                return MeldKind.LONE_SEVEN, cards
            return MeldKind.SET, tuple(sorted(cards))
        if n in (3, 4):
            return MeldKind.SET, tuple(sorted(cards))
        return None
    if len({suit(c) for c in cards}) != 1:
        return None
    if n < 3 and not (n == 2 and SEVEN in ranks):
        return None
    order = _run_order(ranks, rules)
    if order is None:
        return None
    by_rank = {rank(c): c for c in cards}
    return MeldKind.RUN, tuple(by_rank[r] for r in order)


def extend(meld: TableMeld, cards: Iterable[Card], rules: HoolaRules) -> TableMeld | None:
    """``meld`` with ``cards`` laid off on it, or ``None`` if the result is not a meld of its kind.

    A lone 7 may become a set or a run; a set stays a set and a run a run.
    """
    result = arrange(meld.cards + tuple(cards), rules)
    if result is None:
        return None
    kind, ordered = result
    if meld.kind is not MeldKind.LONE_SEVEN and kind is not meld.kind:
        return None
    return TableMeld(meld.id, meld.owner, kind, ordered)


def plain_sum(cards: Iterable[Card], rules: HoolaRules) -> int:
    """Face values added (A = 1 … K = 13, a joker ``joker_value``): no multipliers, no free fours."""
    return sum(rules.joker_value if is_joker(c) else rank(c) for c in cards)


def hand_value(cards: Sequence[Card], rules: HoolaRules) -> int:
    """The hand value of RULES.md §1.4: the face sum (four of a kind free if the rules say so),
    multiplied by ``seven_hand_multiplier`` per 7 and ``joker_hand_multiplier`` per joker held."""
    counts = Counter(rank(c) for c in cards if not is_joker(c))
    total = 0
    for card in cards:
        if is_joker(card):
            total += rules.joker_value
        elif not (rules.four_of_a_kind_free and counts[rank(card)] == 4):
            total += rank(card)
    total *= rules.seven_hand_multiplier ** counts[SEVEN]
    total *= rules.joker_hand_multiplier ** sum(1 for c in cards if is_joker(c))
    return total


def sevens(cards: Iterable[Card]) -> tuple[Card, ...]:
    return tuple(c for c in cards if rank(c) == SEVEN)


def jokers(cards: Iterable[Card]) -> tuple[Card, ...]:
    return tuple(c for c in cards if is_joker(c))
