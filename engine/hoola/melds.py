"""Hoola melds and hand values (docs/rules/hoola.md §1.3, §1.4).

A meld on the table is a :class:`TableMeld`: a set, a run (cards low to high in table order) or a
lone 7, which is still open. Sevens are special: one 7 is a meld, two 7s are a set, and a run that
holds a 7 needs only two cards. Jokers stand for any card (docs/rules/hoola.md §1.3 decisions): a new meld
needs two natural cards, except a natural 7 with one joker; where a joker could be several cards,
the client names one, else it extends a run at its high end, else its low end, else makes a set.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from itertools import combinations

from croupier.engine import meld_solver as solver
from croupier.engine.cards import Card, is_joker, rank, sort_cards
from croupier.engine.hoola.rules import HoolaRules
from croupier.engine.meld_solver import SEVEN, JokerAs, Meld, MeldKind, MeldRules


@dataclass(frozen=True)
class TableMeld:
    id: int
    owner: int
    kind: MeldKind
    cards: tuple[Card, ...]
    jokers: tuple[JokerAs, ...] = ()


# One way some cards make a meld: its kind, the cards in table order, what each joker is.
Arranged = Meld


def meld_rules(rules: HoolaRules) -> MeldRules:
    """Hoola's melds for the solver (docs/rules/hoola.md §1.3 and its decisions): runs with ``ace_wrap`` or
    ``ace_low_only`` as the rules say and jokers side by side allowed; sevens special (a lone 7,
    two-card melds holding a 7); a set's jokers named by rank only, or (``named_set_joker_suits``)
    by card, each way to give them the suits the set lacks a reading; two naturals in a new meld."""
    # Every meld check asks, always with a game's one rule set: hashing its forty options for the
    # memo each time costs more than the check, so the answers are kept by identity. Several: a
    # server interleaves many games' moves, each game with a rule set of its own, and one kept
    # answer was lost at almost every move. The entry holds the rule set, so its id is not reused
    # while kept.
    known = _by_identity.get(id(rules))
    if known is not None and known[0] is rules:
        return known[1]
    found = _meld_rules(rules)
    if len(_by_identity) >= RULE_SETS_KEPT:
        _by_identity.clear()
    _by_identity[id(rules)] = (rules, found)
    return found


#: Rule sets whose melds are kept by identity (the games in play; past it, all are let go).
RULE_SETS_KEPT = 1024
_by_identity: dict[int, tuple[HoolaRules, MeldRules]] = {}


@lru_cache(maxsize=64)
def _meld_rules(rules: HoolaRules) -> MeldRules:
    return MeldRules(
        ace_high=not rules.ace_low_only,
        ace_wrap=rules.ace_wrap,
        adjacent_jokers=True,
        lone_seven=True,
        two_card_sevens=True,
        set_joker_rank_only=not rules.named_set_joker_suits,
        every_set_reading=rules.named_set_joker_suits,
    )


def arrangements(
    cards: Iterable[Card], rules: HoolaRules, named: dict[Card, Card] | None = None
) -> list[Arranged]:
    """Every way the cards make a meld (docs/rules/hoola.md §1.3), the default one first.

    Unnamed, a joker extends a run at its high end where that is legal, else its low end, else it
    makes a set. ``named`` fixes what jokers stand for; a joker named a card that fits nowhere
    leaves no arrangement.
    """
    return solver.arrangements(cards, meld_rules(rules), named)


def arrange(
    cards: Iterable[Card], rules: HoolaRules, named: dict[Card, Card] | None = None
) -> Arranged | None:
    """The default arrangement of the cards as a meld, or ``None`` if they make none."""
    return solver.arrange(cards, meld_rules(rules), named)


def extensions(
    meld: TableMeld, cards: Iterable[Card], rules: HoolaRules, named: dict[Card, Card] | None = None
) -> list[TableMeld]:
    """Every way ``meld`` can take ``cards`` (a lay-off), the default first.

    A run's jokers keep the cards they stand for; so do a set's with ``named_set_joker_suits``
    (without it they stand for its rank only). A lone 7 may become a set or a run; a set stays a
    set and a run a run.
    """
    keeps = meld.kind is MeldKind.RUN or (meld.kind is MeldKind.SET and rules.named_set_joker_suits)
    fixed = {j.joker: j.card for j in meld.jokers} if keeps else {}
    out = []
    for a in arrangements(meld.cards + tuple(cards), rules, {**fixed, **(named or {})}):
        if meld.kind is MeldKind.LONE_SEVEN or a.kind is meld.kind:
            out.append(TableMeld(meld.id, meld.owner, a.kind, a.cards, a.jokers))
    return out


def extend(
    meld: TableMeld, cards: Iterable[Card], rules: HoolaRules, named: dict[Card, Card] | None = None
) -> TableMeld | None:
    """``meld`` with ``cards`` laid off on it (the default reading), or ``None``."""
    found = extensions(meld, cards, rules, named)
    return found[0] if found else None


def plain_sum(cards: Iterable[Card], rules: HoolaRules) -> int:
    """Face values added (A = 1 … K = 13, a joker ``joker_value``): no multipliers, no free fours."""
    # Checked by every take-phase legal-move list (low and high hands): a joker's rank is 0.
    ranks = [rank(c) for c in cards]
    return sum(ranks) + rules.joker_value * ranks.count(0)


def hand_value(cards: Sequence[Card], rules: HoolaRules) -> int:
    """The hand value of docs/rules/hoola.md §1.4: the face sum (four of a kind free if the rules say so),
    multiplied by ``seven_hand_multiplier`` per 7 and ``joker_hand_multiplier`` per joker held."""
    # A stop is checked against it in every take-phase legal-move list: one pass over the ranks
    # (a joker's is 0), no counter of them.
    ranks = [rank(c) for c in cards]
    held_jokers = ranks.count(0)
    total = sum(ranks) + rules.joker_value * held_jokers
    if rules.four_of_a_kind_free:
        total -= sum(
            FOUR_OF_A_KIND * r for r in set(ranks) if r and ranks.count(r) == FOUR_OF_A_KIND
        )
    total *= power(rules.seven_hand_multiplier, ranks.count(SEVEN))
    total *= power(rules.joker_hand_multiplier, held_jokers)
    return total


# The cards of a rank that a hand holds all of (one deck): free with ``four_of_a_kind_free``.
FOUR_OF_A_KIND = 4


def power(base: int, exponent: int) -> int:
    """``base`` to a non-negative ``exponent`` (``int ** int`` is not an ``int`` to the type checker:
    a negative exponent would make a float)."""
    return math.prod([base] * exponent)


def sevens(cards: Iterable[Card]) -> tuple[Card, ...]:
    return tuple(c for c in cards if rank(c) == SEVEN)


def jokers(cards: Iterable[Card]) -> tuple[Card, ...]:
    return tuple(c for c in cards if is_joker(c))


class BrightKind(Enum):
    SEVEN = 1
    SET = 2
    RUN = 3
    JOKER = 4


@dataclass(frozen=True)
class Bright:
    """One "bright" of a sit-out hand (docs/rules/hoola.md §1.9): a 7, a set, a run or a joker."""

    kind: BrightKind
    cards: tuple[Card, ...]


def brights(hand: Iterable[Card], rules: HoolaRules) -> tuple[Bright, ...]:
    """The brights of ``hand`` in the arrangement with the most of them (docs/rules/hoola.md §1.9).

    Each card counts in one bright at most. Sets and runs are melds of three or more cards (a
    7 alone already pays one, so shorter melds with a 7 never pay more). Of arrangements that pay
    as much, the one showing more cards in its brights is shown.
    """
    return _most_brights(sort_cards(tuple(hand)), rules)


def _pays(found: tuple[Bright, ...]) -> tuple[int, int]:
    """Most brights first; of as many, the one that shows more cards (a set of four, not three)."""
    return len(found), sum(len(b.cards) for b in found)


@lru_cache(maxsize=4096)
def _most_brights(cards: tuple[Card, ...], rules: HoolaRules) -> tuple[Bright, ...]:
    if not cards:
        return ()
    first, rest = cards[0], cards[1:]
    alone: tuple[Bright, ...] = ()
    if is_joker(first):
        alone = (Bright(BrightKind.JOKER, (first,)),)
    elif rank(first) == SEVEN:
        alone = (Bright(BrightKind.SEVEN, (first,)),)
    best = alone + _most_brights(rest, rules)
    for size in range(2, len(rest) + 1):
        for others in combinations(rest, size):
            way = arrange((first,) + others, rules)
            if way is None or way.kind is MeldKind.LONE_SEVEN:
                continue
            kind = BrightKind.SET if way.kind is MeldKind.SET else BrightKind.RUN
            found = (Bright(kind, way.cards),) + _most_brights(
                tuple(c for c in rest if c not in others), rules
            )
            if _pays(found) > _pays(best):
                best = found
    return best
