"""Melds and hand values, RULES.md §1.3 and §1.4, as tables."""

from __future__ import annotations

import dataclasses

import pytest

from croupier.engine.hoola.melds import MeldKind, TableMeld, arrange, extend, hand_value, plain_sum
from croupier.engine.hoola.rules import INTERNATIONAL, KOREAN

NO_WRAP = dataclasses.replace(KOREAN, ace_wrap=False)
LOW_ONLY = dataclasses.replace(KOREAN, ace_wrap=False, ace_low_only=True)

# (cards, rules, expected kind or None, table order)
MELDS = [
    ("5S 5H 5D", KOREAN, MeldKind.SET, None),
    ("5S 5H 5D 5C", KOREAN, MeldKind.SET, None),
    ("5S 5H", KOREAN, None, None),                       # two of a rank: only 7s
    ("7S", KOREAN, MeldKind.LONE_SEVEN, None),            # a lone 7 is a meld
    ("7S 7H", KOREAN, MeldKind.SET, None),                # two 7s are a set
    ("7S 7H 7D 7C", KOREAN, MeldKind.SET, None),
    ("6H 7H", KOREAN, MeldKind.RUN, "6H 7H"),             # a run with a 7 needs two cards
    ("8H 7H", KOREAN, MeldKind.RUN, "7H 8H"),
    ("6H 8H", KOREAN, None, None),
    ("5H 6H", KOREAN, None, None),                        # two cards without a 7
    ("7H 9H", KOREAN, None, None),
    ("6H 7S", KOREAN, None, None),                        # suits differ
    ("3C 4C 5C", KOREAN, MeldKind.RUN, "3C 4C 5C"),
    ("5C 3C 4C", KOREAN, MeldKind.RUN, "3C 4C 5C"),       # any order
    ("3C 4C 6C", KOREAN, None, None),
    ("3C 4D 5C", KOREAN, None, None),
    ("AS 2S 3S", KOREAN, MeldKind.RUN, "AS 2S 3S"),       # ace low
    ("QS KS AS", KOREAN, MeldKind.RUN, "QS KS AS"),       # ace high
    ("KS AS 2S", KOREAN, MeldKind.RUN, "KS AS 2S"),       # wrap (korean default)
    ("QS KS AS 2S 3S", KOREAN, MeldKind.RUN, "QS KS AS 2S 3S"),
    ("KS AS 2S", NO_WRAP, None, None),                    # international: no wrap
    ("KS AS 2S", INTERNATIONAL, None, None),
    ("QS KS AS", NO_WRAP, MeldKind.RUN, "QS KS AS"),
    ("QS KS AS", LOW_ONLY, None, None),                   # ace_low_only
    ("AS 2S 3S", LOW_ONLY, MeldKind.RUN, "AS 2S 3S"),
    ("AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS", KOREAN, MeldKind.RUN, "AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS"),
    ("KS AS", KOREAN, None, None),
    ("", KOREAN, None, None),
]


@pytest.mark.parametrize(("cards", "rules", "kind", "order"), MELDS)
def test_meld_table(cards: str, rules, kind, order) -> None:
    result = arrange(cards.split(), rules)
    if kind is None:
        assert result is None
    else:
        assert result is not None and result[0] is kind
        if order:
            assert " ".join(result[1]) == order


def meld(cards: str, rules=KOREAN) -> TableMeld:
    kind, ordered = arrange(cards.split(), rules)
    return TableMeld(1, 0, kind, ordered)


# (table meld, laid-off cards, resulting kind or None)
LAY_OFFS = [
    ("7H", "7S", MeldKind.SET),          # a lone 7 grows into a set…
    ("7H", "6H", MeldKind.RUN),          # …or a run, one card at a time
    ("7H", "8H", MeldKind.RUN),
    ("7H", "8S", None),
    ("7H", "6H 8H", MeldKind.RUN),
    ("7H 7S", "7D", MeldKind.SET),
    ("7H 7S", "6H", None),               # a set of 7s blocks 6/8 lay-offs
    ("6H 7H", "8H", MeldKind.RUN),
    ("6H 7H", "7S", None),               # the run's kind is fixed
    ("5S 5H 5D", "5C", MeldKind.SET),
    ("5S 5H 5D", "6S", None),
    ("3C 4C 5C", "6C", MeldKind.RUN),
    ("3C 4C 5C", "2C", MeldKind.RUN),
    ("3C 4C 5C", "7C", None),            # a gap
    ("3C 4C 5C", "6C 7C", MeldKind.RUN),
    ("QS KS AS", "2S", MeldKind.RUN),    # wrap
]


@pytest.mark.parametrize(("table", "cards", "kind"), LAY_OFFS)
def test_lay_off_table(table: str, cards: str, kind) -> None:
    result = extend(meld(table), cards.split(), KOREAN)
    assert (result.kind if result else None) is kind


def test_lay_off_through_the_wrap_needs_ace_wrap() -> None:
    assert extend(meld("QS KS AS", NO_WRAP), ["2S"], NO_WRAP) is None


# (hand, rules, value)
HAND_VALUES = [
    ("AS 2H TD JC QS KH", KOREAN, 1 + 2 + 10 + 11 + 12 + 13),
    ("7S 2H", KOREAN, (7 + 2) * 2),                 # ×2 per 7 (seven_hand_multiplier)
    ("7S 7H 2H", KOREAN, (7 + 7 + 2) * 4),
    ("7S 2H", INTERNATIONAL, 9),                    # international: no 7 multiplier
    ("4S 6H 2S 2H 2D 2C", INTERNATIONAL, 10),       # RULES.md's example: four of a kind free
    ("4S 6H 2S 2H 2D 2C", KOREAN, 18),
    ("", KOREAN, 0),
]


@pytest.mark.parametrize(("hand", "rules", "value"), HAND_VALUES)
def test_hand_values(hand: str, rules, value: int) -> None:
    assert hand_value(hand.split(), rules) == value


def test_plain_sum_ignores_every_multiplier() -> None:
    assert plain_sum("7S 7H 2C 2S 2H 2D".split(), INTERNATIONAL) == 22
