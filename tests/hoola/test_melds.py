"""Melds and hand values, docs/rules/hoola.md §1.3 and §1.4, as tables."""

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
    ("5S 5H", KOREAN, None, None),  # two of a rank: only 7s
    ("7S", KOREAN, MeldKind.LONE_SEVEN, None),  # a lone 7 is a meld
    ("7S 7H", KOREAN, MeldKind.SET, None),  # two 7s are a set
    ("7S 7H 7D 7C", KOREAN, MeldKind.SET, None),
    ("6H 7H", KOREAN, MeldKind.RUN, "6H 7H"),  # a run with a 7 needs two cards
    ("8H 7H", KOREAN, MeldKind.RUN, "7H 8H"),
    ("6H 8H", KOREAN, None, None),
    ("5H 6H", KOREAN, None, None),  # two cards without a 7
    ("7H 9H", KOREAN, None, None),
    ("6H 7S", KOREAN, None, None),  # suits differ
    ("3C 4C 5C", KOREAN, MeldKind.RUN, "3C 4C 5C"),
    ("5C 3C 4C", KOREAN, MeldKind.RUN, "3C 4C 5C"),  # any order
    ("3C 4C 6C", KOREAN, None, None),
    ("3C 4D 5C", KOREAN, None, None),
    ("AS 2S 3S", KOREAN, MeldKind.RUN, "AS 2S 3S"),  # ace low
    ("QS KS AS", KOREAN, MeldKind.RUN, "QS KS AS"),  # ace high
    ("KS AS 2S", KOREAN, MeldKind.RUN, "KS AS 2S"),  # wrap (korean default)
    ("QS KS AS 2S 3S", KOREAN, MeldKind.RUN, "QS KS AS 2S 3S"),
    ("KS AS 2S", NO_WRAP, None, None),  # international: no wrap
    ("KS AS 2S", INTERNATIONAL, None, None),
    ("QS KS AS", NO_WRAP, MeldKind.RUN, "QS KS AS"),
    ("QS KS AS", LOW_ONLY, None, None),  # ace_low_only
    ("AS 2S 3S", LOW_ONLY, MeldKind.RUN, "AS 2S 3S"),
    (
        "AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS",
        KOREAN,
        MeldKind.RUN,
        "AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS",
    ),
    ("KS AS", KOREAN, None, None),
    ("", KOREAN, None, None),
]


@pytest.mark.parametrize(("cards", "rules", "kind", "order"), MELDS)
def test_meld_table(cards: str, rules, kind, order) -> None:
    result = arrange(cards.split(), rules)
    if kind is None:
        assert result is None
    else:
        assert result is not None and result.kind is kind
        if order:
            assert " ".join(result.cards) == order


def meld(cards: str, rules=KOREAN) -> TableMeld:
    way = arrange(cards.split(), rules)
    return TableMeld(1, 0, way.kind, way.cards, way.jokers)


# (table meld, laid-off cards, resulting kind or None)
LAY_OFFS = [
    ("7H", "7S", MeldKind.SET),  # a lone 7 grows into a set…
    ("7H", "6H", MeldKind.RUN),  # …or a run, one card at a time
    ("7H", "8H", MeldKind.RUN),
    ("7H", "8S", None),
    ("7H", "6H 8H", MeldKind.RUN),
    ("7H 7S", "7D", MeldKind.SET),
    ("7H 7S", "6H", None),  # a set of 7s blocks 6/8 lay-offs
    ("6H 7H", "8H", MeldKind.RUN),
    ("6H 7H", "7S", None),  # the run's kind is fixed
    ("5S 5H 5D", "5C", MeldKind.SET),
    ("5S 5H 5D", "6S", None),
    ("3C 4C 5C", "6C", MeldKind.RUN),
    ("3C 4C 5C", "2C", MeldKind.RUN),
    ("3C 4C 5C", "7C", None),  # a gap
    ("3C 4C 5C", "6C 7C", MeldKind.RUN),
    ("QS KS AS", "2S", MeldKind.RUN),  # wrap
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
    ("7S 2H", KOREAN, (7 + 2) * 2),  # ×2 per 7 (seven_hand_multiplier)
    ("7S 7H 2H", KOREAN, (7 + 7 + 2) * 4),
    ("7S 2H", INTERNATIONAL, 9),  # international: no 7 multiplier
    ("4S 6H 2S 2H 2D 2C", INTERNATIONAL, 10),  # the rules' example: four of a kind free
    ("4S 6H 2S 2H 2D 2C", KOREAN, 18),
    ("", KOREAN, 0),
]


@pytest.mark.parametrize(("hand", "rules", "value"), HAND_VALUES)
def test_hand_values(hand: str, rules, value: int) -> None:
    assert hand_value(hand.split(), rules) == value


def test_plain_sum_ignores_every_multiplier() -> None:
    assert plain_sum(["7S", "7H", "2C", "2S", "2H", "2D"], INTERNATIONAL) == 22


# --- jokers (docs/rules/hoola.md §1.3 decisions) ---------------------------------------------------------

JOKERS = dataclasses.replace(KOREAN, jokers=2)
JOKERS_NO_WRAP = dataclasses.replace(JOKERS, ace_wrap=False)

# (cards, named, rules, kind or None, table order, what each joker stands for)
JOKER_MELDS = [
    ("5H 6H JK1", {}, JOKERS, MeldKind.RUN, "5H 6H JK1", {"JK1": "7H"}),  # high end first
    ("5H 6H JK1", {"JK1": "4H"}, JOKERS, MeldKind.RUN, "JK1 5H 6H", {"JK1": "4H"}),
    ("5H JK1 7H", {}, JOKERS, MeldKind.RUN, "5H JK1 7H", {"JK1": "6H"}),  # fixed by naturals
    ("QH KH JK1", {}, JOKERS_NO_WRAP, MeldKind.RUN, "QH KH JK1", {"JK1": "AH"}),
    ("KH AH JK1", {}, JOKERS_NO_WRAP, MeldKind.RUN, "JK1 KH AH", {"JK1": "QH"}),  # else low end
    ("7H JK1", {}, JOKERS, MeldKind.RUN, "7H JK1", {"JK1": "8H"}),  # natural 7 + joker
    ("7H JK1", {"JK1": "6H"}, JOKERS, MeldKind.RUN, "JK1 7H", {"JK1": "6H"}),
    ("7H JK1", {"JK1": "7S"}, JOKERS, MeldKind.SET, "7H JK1", {"JK1": "7S"}),  # named: a set
    ("5S 5H JK1", {}, JOKERS, MeldKind.SET, "5H 5S JK1", {"JK1": "5D"}),  # else a set
    ("5H 6H JK1 JK2", {}, JOKERS, MeldKind.RUN, "5H 6H JK1 JK2", {"JK1": "7H", "JK2": "8H"}),
    ("5H JK1 JK2 8H", {}, JOKERS, MeldKind.RUN, "5H JK1 JK2 8H", {"JK1": "6H", "JK2": "7H"}),
    ("KS JK1 2S", {}, JOKERS, MeldKind.RUN, "KS JK1 2S", {"JK1": "AS"}),  # through K A 2
    ("5H JK1", {}, JOKERS, None, None, None),  # one natural, not a 7
    ("JK1", {}, JOKERS, None, None, None),  # a joker alone
    ("JK1 JK2", {}, JOKERS, None, None, None),
    ("7H JK1 JK2", {}, JOKERS, None, None, None),  # one natural with two jokers
    ("5H 6H JK1", {"JK1": "9H"}, JOKERS, None, None, None),  # the named card does not fit
    ("5S 5H JK1", {"JK1": "6S"}, JOKERS, None, None, None),
    ("5S 5H 5D 5C JK1", {}, JOKERS, None, None, None),  # a set has four cards at most
]


@pytest.mark.parametrize(("cards", "named", "rules", "kind", "order", "uses"), JOKER_MELDS)
def test_joker_meld_table(cards: str, named: dict, rules, kind, order, uses) -> None:
    result = arrange(cards.split(), rules, named)
    if kind is None:
        assert result is None
        return
    assert result is not None and result.kind is kind
    assert " ".join(result.cards) == order
    assert {j.joker: j.card for j in result.jokers} == uses


def test_laid_off_jokers_keep_a_runs_cards_and_lone_sevens_grow_either_way() -> None:
    run = meld("5H 6H JK1", JOKERS)
    grown = extend(run, ["8H"], JOKERS)
    assert grown is not None and grown.cards == ("5H", "6H", "JK1", "8H")
    assert extend(run, ["7H"], JOKERS) is None  # the joker is the 7H: no swap in Hoola
    lone = meld("7H", JOKERS)
    assert extend(lone, ["JK2"], JOKERS).jokers[0].card == "8H"
    assert extend(lone, ["JK2"], JOKERS, {"JK2": "7C"}).kind is MeldKind.SET


def test_jokers_in_hand_values() -> None:
    rules = dataclasses.replace(JOKERS, joker_value=5)
    assert hand_value(["JK1", "2S"], rules) == (5 + 2) * 3  # ×joker_hand_multiplier
    assert hand_value(["JK1", "JK2", "7S"], rules) == (5 + 5 + 7) * 2 * 9
    assert plain_sum(["JK1", "2S"], rules) == 7
