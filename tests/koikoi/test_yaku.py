"""The 48 cards (docs/rules/koikoi.md §2.1) and the yaku scorer (§2.4), as tables restated from the rules."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from croupier.engine.koikoi.cards import CARDS, Kind, Role, deck, kind, month, role
from croupier.engine.koikoi.rules import NINTENDO
from croupier.engine.koikoi.yaku import YakuKind, formed_or_raised, hand_yaku, yaku

# month: (bright, animal, ribbon, chaff) — docs/rules/koikoi.md §2.1 row by row.
TABLE = {
    1: ("crane", None, "poetry", 2),
    2: (None, "bush warbler", "poetry", 2),
    3: ("curtain", None, "poetry", 2),
    4: (None, "cuckoo", "red", 2),
    5: (None, "eight-plank bridge", "red", 2),
    6: (None, "butterflies", "blue", 2),
    7: (None, "boar", "red", 2),
    8: ("full moon", "geese", None, 2),
    9: (None, "sake cup", "blue", 2),
    10: (None, "deer", "blue", 2),
    11: ("rain man", "swallow", "red", 1),
    12: ("phoenix", None, None, 3),
}


def test_the_deck_is_the_table_of_rules_md() -> None:
    assert len(deck()) == len(set(deck())) == 48
    for m, (bright, animal, ribbon, chaff) in TABLE.items():
        cards = [c for c in CARDS if c.month == m]

        def named(k: Kind, cards: list[Any] = cards) -> list[str]:
            return [c.name.removeprefix(c.plant + " ") for c in cards if c.kind is k]

        assert named(Kind.BRIGHT) == ([bright] if bright else [])
        assert named(Kind.ANIMAL) == ([animal] if animal else [])
        assert named(Kind.RIBBON) == ([f"{ribbon} ribbon"] if ribbon else [])
        assert len(named(Kind.CHAFF)) == chaff
    counts = {k: sum(1 for c in CARDS if c.kind is k) for k in Kind}
    assert counts == {Kind.BRIGHT: 5, Kind.ANIMAL: 9, Kind.RIBBON: 10, Kind.CHAFF: 24}
    assert role("11B") is Role.RAIN_MAN and role("9A") is Role.SAKE_CUP
    assert [c.code for c in CARDS if c.role is Role.POETRY_RIBBON] == ["1R", "2R", "3R"]
    assert [c.code for c in CARDS if c.role is Role.BLUE_RIBBON] == ["6R", "9R", "10R"]
    assert CARDS[0].name == "Pine crane" and month("12C3") == 12 and kind("3B") is Kind.BRIGHT


BRIGHTS = ["1B", "3B", "8B", "11B", "12B"]
ANIMALS = ["2A", "4A", "5A", "6A", "7A", "8A", "9A", "10A", "11A"]
RIBBONS = ["1R", "2R", "3R", "4R", "5R", "6R", "7R", "9R", "10R", "11R"]
CHAFF = [c.code for c in CARDS if c.kind is Kind.CHAFF]


def scored(*cards: str, rules=NINTENDO) -> dict[str, int]:
    return {y.kind.name: y.points for y in yaku(cards, rules)}


@pytest.mark.parametrize(
    ("cards", "expected"),
    [
        # Brights: only the highest counts; the rain man spoils three and cheapens four.
        (BRIGHTS, {"GOKO": 10}),
        (["1B", "3B", "8B", "12B"], {"SHIKO": 8}),
        (["1B", "3B", "8B", "11B"], {"AME_SHIKO": 7}),
        (["1B", "3B", "12B"], {"SANKO": 5}),
        (["1B", "3B", "11B"], {}),
        (["1B", "3B"], {}),
        # Viewing sake: the sake cup with the curtain or the full moon, the rain man notwithstanding.
        (["3B", "9A"], {"HANAMI_ZAKE": 5}),
        (["8B", "9A"], {"TSUKIMI_ZAKE": 5}),
        (["3B", "8B", "9A", "11B"], {"HANAMI_ZAKE": 5, "TSUKIMI_ZAKE": 5}),
        (["1B", "3B", "8B", "9A"], {"SANKO": 5, "HANAMI_ZAKE": 5, "TSUKIMI_ZAKE": 5}),
        # Animals: Inoshikacho +1 per further animal, and no Tane beside it.
        (["6A", "7A", "10A"], {"INOSHIKACHO": 5}),
        (["6A", "7A", "10A", "2A"], {"INOSHIKACHO": 6}),
        (["6A", "7A", "10A", "2A", "4A"], {"INOSHIKACHO": 7}),
        (["2A", "4A", "5A", "8A", "11A"], {"TANE": 1}),
        (["2A", "4A", "5A", "8A", "11A", "6A"], {"TANE": 2}),
        (["2A", "4A", "5A", "8A"], {}),
        # Ribbons: Akatan / Aotan +1 per further ribbon, both together replace them, no Tan beside.
        (["1R", "2R", "3R"], {"AKATAN": 5}),
        (["1R", "2R", "3R", "4R", "5R"], {"AKATAN": 7}),
        (["6R", "9R", "10R"], {"AOTAN": 5}),
        (["6R", "9R", "10R", "1R"], {"AOTAN": 6}),
        (["1R", "2R", "3R", "6R", "9R", "10R"], {"AKATAN_AOTAN": 10}),
        (RIBBONS, {"AKATAN_AOTAN": 14}),
        (["1R", "4R", "5R", "7R", "11R"], {"TAN": 1}),
        (["1R", "4R", "5R", "7R", "11R", "6R"], {"TAN": 2}),
        # Chaff: ten, +1 each; the sake cup counts as an animal and as a chaff.
        (CHAFF[:10], {"KASU": 1}),
        (CHAFF[:12], {"KASU": 3}),
        (CHAFF[:9] + ["9A"], {"KASU": 1}),
        (CHAFF[:9], {}),
        (["9A", "2A", "4A", "5A", "8A"] + CHAFF[:9], {"TANE": 1, "KASU": 1}),
        # Kasu, the bright yaku and the viewings add to any others (§2.4's example: Sanko + Tan).
        (["1B", "3B", "12B", "1R", "4R", "5R", "7R", "11R"], {"SANKO": 5, "TAN": 1}),
    ],
)
def test_yaku_table(cards: list[str], expected: dict[str, int]) -> None:
    assert scored(*cards) == expected


def test_the_sake_cup_is_no_chaff_when_the_option_is_off() -> None:
    rules = dataclasses.replace(NINTENDO, sake_cup_as_chaff=False)
    assert scored(*CHAFF[:9], "9A", rules=rules) == {}


VIEWING = {YakuKind.HANAMI_ZAKE, YakuKind.TSUKIMI_ZAKE}


@given(st.sets(st.sampled_from([c.code for c in CARDS])), st.booleans())
def test_without_the_viewing_yaku_a_capture_scores_the_rest_as_it_did(
    captured: set[str], sake_cup_as_chaff: bool
) -> None:
    """The house rule (``viewing_yaku`` off) takes Hanami-zake and Tsukimi-zake away, and
    nothing else: every other yaku of any capture scores as with them (the sake cup still an
    animal, and a chaff with ``sake_cup_as_chaff``)."""
    with_them = dataclasses.replace(NINTENDO, sake_cup_as_chaff=sake_cup_as_chaff)
    without = dataclasses.replace(with_them, viewing_yaku=False)
    full = yaku(captured, with_them)
    assert yaku(captured, without) == tuple(y for y in full if y.kind not in VIEWING)
    if {"9A", "3B"} <= captured:  # the curtain and the sake cup
        assert any(y.kind is YakuKind.HANAMI_ZAKE for y in full)


def test_every_yaku_kind_of_the_table_is_scored_somewhere() -> None:
    # The table above covers every capture yaku; the hand yaku have their own tests.
    assert {k.name for k in YakuKind} - {"TESHI", "KUTTSUKI"} <= {
        name for cards, expected in test_yaku_table.pytestmark[0].args[1] for name in expected
    }


def test_extra_cards_are_itemized() -> None:
    (ino,) = yaku(["6A", "7A", "10A", "2A", "4A"], NINTENDO)
    assert (ino.kind, ino.points, ino.extra, len(ino.cards)) == (YakuKind.INOSHIKACHO, 7, 2, 5)


def test_formed_or_raised() -> None:
    tan = yaku(["1R", "4R", "5R", "7R", "11R"], NINTENDO)
    more = yaku(["1R", "4R", "5R", "7R", "11R", "6R"], NINTENDO)
    assert formed_or_raised((), tan) and formed_or_raised(tan, more)
    assert not formed_or_raised(tan, tan) and not formed_or_raised(more, more)
    # Sanko to Shiko is a new yaku; Akatan to Akatan-Aotan too.
    assert formed_or_raised(
        yaku(["1B", "3B", "12B"], NINTENDO), yaku(["1B", "3B", "8B", "12B"], NINTENDO)
    )


@pytest.mark.parametrize(
    ("hand", "expected"),
    [
        ("1B 1R 1C1 1C2 2A 3B 4A 5A", "TESHI"),
        ("1B 1R 2A 2R 3B 3R 4A 4R", "KUTTSUKI"),
        # Four and four: one hand yaku (docs/rules/koikoi.md §2.4 decision), Teshi.
        ("1B 1R 1C1 1C2 2A 2R 2C1 2C2", "TESHI"),
        ("1B 1R 2A 2R 3B 3R 4A 5A", None),
        ("1B 1R 1C1 2A 2R 2C1 3B 3R", None),
    ],
)
def test_hand_yaku(hand: str, expected: str | None) -> None:
    found = hand_yaku(tuple(hand.split()), NINTENDO)
    assert (found.kind.name if found else None) == expected
    if found:
        assert found.points == 6
