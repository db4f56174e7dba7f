"""The shared meld solver (docs/rules/rummy.md §3.2, §4): every legal and illegal example of §3.2, joker
placement, lay-offs, swaps and least-deadwood arrangements (where greedy melding is wrong)."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from croupier.engine import meld_solver
from croupier.engine.cards import standard_deck
from croupier.engine.meld_solver import (
    GIN,
    RUMMY,
    MeldKind,
    MeldRules,
    arrange,
    arrangements,
    best_melds,
    candidate_melds,
    could_meld,
    deadwood,
    deadwood_value,
    extend,
    swap,
)


def placed(cards: str, **named: str):
    meld = arrange(cards.split(), RUMMY, named or None)
    if meld is None:
        return None
    return meld.kind.name, " ".join(meld.cards), {j.joker: j.card for j in meld.jokers}


@pytest.mark.parametrize(
    ("cards", "legal"),
    [
        # Every meld has at least two natural cards.
        ("JK1 JK2 JK3", False),
        ("7S1 JK1 JK2", False),
        ("5H1 JK1 JK2", False),
        # Sets: one rank, natural suits all different, 3 or 4 cards, 1 joker in 3, 2 in 4.
        ("7S1 7H1 7D1", True),
        ("7S1 7S2 7D1", False),
        ("7S1 7H1 7D1 7C1", True),
        ("7S1 7H1 7D1 7C1 7S2", False),
        ("7S1 7H1 JK1", True),
        ("7S1 7H1 JK1 JK2", True),
        ("7S1 7H1 7D1 JK1 JK2", False),
        ("7S1 7H1", False),
        # Runs: three or more of a suit in sequence, jokers never side by side, no wrap.
        ("5H1 6H1 7H1", True),
        ("5H1 JK1 7H1 JK2 9H1", True),
        ("5H1 JK1 JK2 8H1", False),
        ("5H1 6H1 7S1", False),
        ("AH1 2H1 3H1", True),
        ("QH1 KH1 AH1", True),
        ("KH1 AH1 2H1", False),
        ("AH1 2H1 3H1 4H1 5H1 6H1 7H1 8H1 9H1 TH1 JH1 QH1 KH1", True),
        # The same ace at both ends: never.
        ("AH1 2H1 3H1 4H1 5H1 6H1 7H1 8H1 9H1 TH1 JH1 QH1 KH1 AH2", False),
        ("5H1 6H1", False),
    ],
)
def test_meld_validity_table(cards: str, legal: bool) -> None:
    assert (arrange(cards.split(), RUMMY) is not None) == legal


@pytest.mark.parametrize(
    ("cards", "named", "expected"),
    [
        # A joker between naturals is fixed by them.
        ("7H1 JK1 5H1", {}, ("RUN", "5H1 JK1 7H1", {"JK1": "6H"})),
        # At an open end: the high end where it is a card, else the low end; or the client's choice.
        ("5H1 6H1 JK1", {}, ("RUN", "5H1 6H1 JK1", {"JK1": "7H"})),
        ("QH1 KH1 JK1", {}, ("RUN", "QH1 KH1 JK1", {"JK1": "AH"})),
        ("KH1 AH1 JK1", {}, ("RUN", "JK1 KH1 AH1", {"JK1": "QH"})),
        ("5H1 6H1 JK1", {"JK1": "4H"}, ("RUN", "JK1 5H1 6H1", {"JK1": "4H"})),
        # A named card that contradicts the meld leaves no reading.
        ("5H1 JK1 7H1", {"JK1": "8H"}, None),
        # In a set a joker is the rank, in a suit the set lacks.
        ("7S1 7H1 JK1", {}, ("SET", "7H1 7S1 JK1", {"JK1": "7D"})),
        ("7S1 7H1 JK1", {"JK1": "7C"}, ("SET", "7H1 7S1 JK1", {"JK1": "7C"})),
        ("7S1 7H1 JK1", {"JK1": "7S"}, None),
        ("7S1 7H1 JK1", {"JK1": "8D"}, None),
    ],
)
def test_joker_placement(cards: str, named: dict, expected) -> None:
    assert placed(cards, **named) == expected


def test_lay_offs_keep_run_jokers_where_they_stand_and_sets_at_four() -> None:
    run = arrange(["5H1", "JK1", "7H1"], RUMMY)
    longer = extend(run, ("8H1",), RUMMY)
    assert longer.cards == ("5H1", "JK1", "7H1", "8H1") and longer.named() == {"JK1": "6H"}
    assert extend(run, ("6H2",), RUMMY) is None  # the joker keeps its place
    a_set = arrange(["7S1", "7H1", "7D1"], RUMMY)
    full = extend(a_set, ("7C2",), RUMMY)
    assert full.kind is MeldKind.SET and extend(full, ("JK1",), RUMMY) is None


def test_joker_swaps() -> None:
    run = arrange(["5H1", "JK1", "7H1"], RUMMY)
    after, joker = swap(run, "6H2", RUMMY)
    assert joker == "JK1" and after.cards == ("5H1", "6H2", "7H1") and after.jokers == ()
    assert swap(run, "6S1", RUMMY) is None and swap(run, "JK2", RUMMY) is None
    a_set = arrange(["7S1", "7H1", "JK1"], RUMMY)
    assert swap(a_set, "7D2", RUMMY)[1] == "JK1"
    assert swap(a_set, "7C1", RUMMY)[1] == "JK1"  # any suit the set lacks
    assert swap(a_set, "7S2", RUMMY) is None  # a suit it holds


# --- least deadwood (Gin) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hand", "least", "melds"),
    [
        # Greedy would take the set of 7s and leave 8 9 of spades: 37, not 34.
        ("7S 7H 7D 8S 9S 2C 3C 4C KD KH", 34, ["2C 3C 4C", "7S 8S 9S"]),
        # Greedy would take all four 5s and leave 6 7 of clubs: 13, not 0.
        ("5S 5H 5D 5C 6C 7C", 0, ["5C 6C 7C", "5D 5H 5S"]),
        ("AS 2S 3S 4S 5S 5H 5D 9C TC JC", 0, ["5D 5H 5S", "9C TC JC", "AS 2S 3S 4S"]),
        # Gin has no ace-high runs.
        ("QH KH AH 2C 4D", 27, []),
        ("KS KH KD", 0, ["KD KH KS"]),
    ],
)
def test_least_deadwood(hand: str, least: int, melds: list[str]) -> None:
    found, left = best_melds(hand.split(), GIN)
    assert deadwood(hand.split(), GIN) == least == sum(map(deadwood_value, left))
    assert sorted(" ".join(sorted(m.cards)) for m in found) == sorted(
        " ".join(sorted(m.split())) for m in melds
    )


def brute_force(hand: list[str]) -> int:
    """The least deadwood over every set of disjoint candidate melds (an independent oracle)."""
    candidates = candidate_melds(hand, GIN)
    best = sum(map(deadwood_value, hand))
    for k in range(1, 5):
        for chosen in combinations(candidates, k):
            used = [c for m in chosen for c in m]
            if len(used) == len(set(used)):
                best = min(best, sum(deadwood_value(c) for c in hand if c not in used))
    return best


@given(st.lists(st.sampled_from(standard_deck()), min_size=0, max_size=11, unique=True))
def test_best_melds_partition_the_hand_and_leave_the_least(hand: list[str]) -> None:
    melds, left = best_melds(hand, GIN)
    used = [c for m in melds for c in m.cards]
    assert sorted(used + list(left)) == sorted(hand)
    assert all(arrange(m.cards, GIN) is not None for m in melds)
    assert sum(map(deadwood_value, left)) == brute_force(hand)


@given(st.lists(st.sampled_from(standard_deck()), min_size=0, max_size=11, unique=True))
def test_best_melds_choose_the_first_least_arrangement(hand: list[str]) -> None:
    """Of arrangements that tie, the chosen one is the first in the solver's fixed order (a
    recorded knock's melds depend on it): the search that filters each sub-hand's melds from the
    hand's picks what the enumeration of every least arrangement, which looks for the melds of
    each sub-hand itself, lists first."""
    cards = tuple(sorted(set(hand)))
    melds, left = meld_solver._best(cards, GIN)
    least = meld_solver._all_least(cards, GIN, sum(map(deadwood_value, left)))
    assert least[0] == (melds, left)


SHAPES = [
    RUMMY,
    GIN,
    MeldRules(ace_high=False, adjacent_jokers=True, lone_seven=True, two_card_sevens=True),
    MeldRules(ace_wrap=True, adjacent_jokers=True, lone_seven=True, two_card_sevens=True),
]


@given(
    st.lists(st.sampled_from(standard_deck(2)), min_size=1, max_size=7, unique=True),
    st.sampled_from(SHAPES),
)
def test_could_meld_is_false_only_for_cards_that_make_no_meld(cards: list[str], rules) -> None:
    """Legal-move generation skips the cards ``could_meld`` rules out: they must make no meld."""
    if not could_meld(cards, rules):
        assert arrangements(cards, rules) == []


@pytest.mark.parametrize("rules", SHAPES)
def test_could_meld_keeps_every_run_of_one_suit(rules) -> None:
    """Every stretch of a suit, with a joker or two in it, passes the quick test."""
    suit = [r + "H" for r in "A23456789TJQK"]
    for size in range(2, 6):
        for cards in combinations(suit + ["JK1", "JK2"], size):
            if arrangements(cards, rules):
                assert could_meld(cards, rules), cards
