"""The presets of docs/rules/hoola.md §1.10, value by value, written here again from the table."""

from __future__ import annotations

import dataclasses

import pytest

from croupier.engine.game import InvalidRules
from croupier.engine.hoola.rules import (
    PRESETS,
    HoolaRules,
    Penalty,
    StopLimit,
    ThankYouPenaltyScope,
    rules_for,
)

NONE = (None, None, None, None)
U, S, J = Penalty.UNMELDED, Penalty.SEVEN, Penalty.JOKER
ANY, HOOLA_ONLY = ThankYouPenaltyScope.ANY_WIN, ThankYouPenaltyScope.HOOLA_ONLY

# option: (korean, international, winjoy, pmang, hangame) — docs/rules/hoola.md §1.10, row by row.
TABLE = {
    "ace_wrap": (True, False, True, True, True),
    "jokers": (0, 0, 0, 0, 0),
    "four_of_a_kind_free": (False, True, False, False, False),
    "seven_hand_multiplier": (2, 1, 2, 2, 2),
    "stop_limit": ((10, 10, 10, 10), (10, 10, 10, 10), NONE, (15, 15, 15, 15), (5, 10, 15, 15)),
    "max_seats": (5, 5, 5, 4, 4),
    "stop_requires_melds": (False, True, False, False, False),
    "first_turn_stop": (False, True, True, False, False),
    "two_player_stop": (False, False, True, True, True),
    "low_hand_max": (15, 14, 15, 15, 15),
    "high_hand_min": (80, 83, 83, 85, 80),
    "first_turn_combinations": (False, True, True, True, True),
    "unmelded_multiplier": (2, 2, 2, 2, 2),
    "seven_multiplier": (2, 2, 2, 2, 2),
    "joker_multiplier": (3, 1, 3, 2, 3),
    "thank_you_penalty_multiplier": (1, 1, 4, 4, 4),
    "thank_you_penalty_scope": (ANY, HOOLA_ONLY, ANY, ANY, ANY),
    "stop_penalty_multiplier": (1, 1, 2, 2, 4),
    "hoola_multiplier": (4, 2, 4, 4, 4),
    "perfect_hoola_multiplier": (4, 2, 4, 5, 5),
    "four_sevens_multiplier": (1, 1, 7, 10, 8),
    "low_hand_multiplier": (1, 1, 7, 8, 4),
    "high_hand_multiplier": (1, 1, 7, 8, 4),
    "penalties_before_first_turn": ((), (S,), (U,), (U, S, J), (U,)),
    "hoola_table_multiplier": ((), (), (2, 4, 1), (2,), (2, 8, 1)),
    "straight_flush_multiplier": (0, 0, 0, 0, 8),
    "out_of_turn_thank_you": (False, True, True, False, False),
    # The options added later (docs/rules/hoola.md §1.10): each preset's own reading.
    "go_out_by_discard": (False, True, False, False, False),
    "seven_binding_is_meld": (False, False, False, False, False),
    "named_set_joker_suits": (True, True, True, True, True),
    "binding_ends_hoola": (True, True, True, True, True),
}
NAMES = ("korean", "international", "winjoy", "pmang", "hangame")


@pytest.mark.parametrize("option", sorted(TABLE))
def test_every_preset_value(option: str) -> None:
    for name, expected in zip(NAMES, TABLE[option], strict=True):
        rules = PRESETS[name]
        if option == "stop_limit":
            got = tuple(rules.stop_limit(players) for players in (2, 3, 4, 5))
        else:
            got = getattr(rules, option)
        assert got == expected, (name, option)


def test_every_preset_plays_by_default_as_listed() -> None:
    for name, rules in PRESETS.items():
        assert rules_for(name, {}, 3) == rules


@pytest.mark.parametrize("name", ["pmang", "hangame"])
def test_pmang_and_hangame_seat_at_most_four(name: str) -> None:
    with pytest.raises(InvalidRules) as info:
        rules_for(name, {}, 5)
    assert info.value.field == "seats"


def test_options_override_one_by_one() -> None:
    rules = rules_for("hangame", {"stop_penalty_multiplier": 3, "ace_wrap": False}, 2)
    assert rules == dataclasses.replace(
        PRESETS["hangame"], stop_penalty_multiplier=3, ace_wrap=False
    )


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"max_seats": 8}, "max_seats"),
        ({"min_seats": 1}, "min_seats"),
        (
            {
                "stop_limits": (
                    dataclasses.replace(PRESETS["korean"].stop_limits[0], max_points=-1),
                )
            },
            "stop_limits",
        ),
        ({"rounds": -1}, "rounds"),
        ({"hoola_table_multiplier": (2, 0)}, "hoola_table_multiplier"),
        # A limit for a number of players no round has, or a number named twice.
        ({"stop_limits": (StopLimit(9, 10),)}, "stop_limits"),
        ({"stop_limits": (StopLimit(1, 10),)}, "stop_limits"),
        ({"stop_limits": (StopLimit(3, 10), StopLimit(3, 20))}, "stop_limits"),
    ],
)
def test_invalid_combinations_name_the_option(overrides: dict, field: str) -> None:
    with pytest.raises(InvalidRules) as info:
        rules_for("korean", overrides, 3)
    assert info.value.field == field


def test_the_page_names_the_options_korean_differs_from_the_defaults_in() -> None:
    """docs/rules/hoola.md §1.10 says how many options `korean` sets otherwise than `HoolaRules()`,
    and names each of them."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs/rules/hoola.md").read_text()
    page = " ".join(page.split())
    differ = {
        f.name
        for f in dataclasses.fields(HoolaRules)
        if getattr(HoolaRules(), f.name) != getattr(PRESETS["korean"], f.name)
    }
    words = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
    said = re.findall(r"the defaults of `HoolaRules`, but for (\w+) options", page)
    assert [words[w] for w in said] == [len(differ)]
    said = re.findall(r"`HoolaRules\(\)` itself differs from `korean` in these (\w+) options", page)
    assert [words[w] for w in said] == [len(differ)]
    presets_set = page.split("The presets set ", 1)[1].split(", so every new table", 1)[0]
    assert set(re.findall(r"`(\w+)`", presets_set)) == differ


def test_the_rule_set_has_one_field_per_option_of_the_contract() -> None:
    from croupier.v1 import hoola_pb2

    assert {f.name for f in dataclasses.fields(HoolaRules)} == {
        f.name for f in hoola_pb2.HoolaRules.DESCRIPTOR.fields
    }


# --- scripted rounds per preset, settlements line by line --------------------------------------

from croupier.engine.hoola.events import Combination, Declare, Discard, Draw, Meld, Stop, ThankYou  # noqa: E402
from croupier.engine.hoola.state import Turn  # noqa: E402

from .helpers import ended, play, position  # noqa: E402


def value(option: str, name: str):
    return TABLE[option][NAMES.index(name)]


def lines(settlement) -> list[tuple[int, int, int, list[tuple[str, int]]]]:
    return [
        (line.payer, line.payee, line.amount, [(f.name, f.value) for f in line.factors])
        for line in settlement.lines
    ]


@pytest.mark.parametrize("name", NAMES)
def test_a_hoola_round(name: str) -> None:
    rules = PRESETS[name]
    state = position(
        ["3H 4H 5H 9S 9D 9C KC", "2S 3S", "4C 5D"],
        rules=rules,
        stock="6H 2H",
        discards="QH",
        melded=[False, True, True],
    )
    result = ended(
        play(
            state,
            0,
            Draw(),
            Meld(("3H", "4H", "5H", "6H")),
            Meld(("9S", "9D", "9C")),
            Discard("KC"),
        )[1]
    )
    hoola = value("hoola_multiplier", name)
    assert lines(result.settlement) == [
        (1, 0, hoola, [("rank", 1), ("hoola_multiplier", hoola)]),
        (2, 0, 2 * hoola, [("rank", 2), ("hoola_multiplier", hoola)]),
    ]


@pytest.mark.parametrize("name", NAMES)
def test_a_failed_stop(name: str) -> None:
    rules = PRESETS[name]
    state = position(["AS 2S 3D", "9C 8D", "AC 5H"], rules=rules, melded=[True, True, True])
    result = ended(play(state, 0, Stop())[1])
    penalty = value("stop_penalty_multiplier", name)
    ((payer, payee, amount, factors),) = lines(result.settlement)
    assert (payer, payee, amount) == (0, 2, 2 + penalty)
    assert factors == [("rank", 2), ("stop_penalty_multiplier", penalty)]


@pytest.mark.parametrize("name", NAMES)
def test_a_thank_you_win(name: str) -> None:
    rules = PRESETS[name]
    state = position(
        ["8H 9H QD", "2S 3S", "4C 5D"],
        rules=rules,
        discards="7H",
        top_discarder=2,
        melded=[True, True, True],
        this_turn=Turn(start_hand=("8H", "9H", "QD"), melded_before=True),
    )
    result = ended(play(state, 0, ThankYou(("8H", "9H")), Discard("QD"))[1])
    penalty = value("thank_you_penalty_multiplier", name)
    if value("thank_you_penalty_scope", name) is ANY:
        assert lines(result.settlement) == [
            (2, 0, 2 + penalty, [("rank", 2), ("thank_you_penalty_multiplier", penalty)])
        ]
    else:  # HOOLA_ONLY: not a Hoola, so no liability
        assert lines(result.settlement) == [(1, 0, 1, [("rank", 1)]), (2, 0, 2, [("rank", 2)])]


@pytest.mark.parametrize("name", NAMES)
def test_four_sevens_with_an_unmelded_loser_before_the_first_turn(name: str) -> None:
    rules = PRESETS[name]
    state = position(
        ["7S 7H 7D 7C 2S 3S 4S", "9C 8D", "TC 2H"],
        rules=rules,
        melded=[False, True, False],
        turns_started=(2, 1, 0),
    )
    result = ended(play(state, 0, Declare(Combination.FOUR_SEVENS))[1])
    sevens = value("four_sevens_multiplier", name)
    unmelded_applies = Penalty.UNMELDED in value("penalties_before_first_turn", name)
    # Seat 2 (12, no meld, its first turn never came) ranks last only if the penalty applies.
    seat2_rank = 2 if unmelded_applies else 1
    seat2 = [("rank", seat2_rank)] + ([("unmelded_multiplier", 2)] if unmelded_applies else [])
    seat1_rank = 1 if unmelded_applies else 2
    got = {payer: (amount, factors) for payer, _, amount, factors in lines(result.settlement)}
    assert got[1] == (
        seat1_rank * sevens,
        [("rank", seat1_rank), ("four_sevens_multiplier", sevens)],
    )
    amount = seat2_rank * (2 if unmelded_applies else 1) * sevens
    assert got[2] == (amount, seat2 + [("four_sevens_multiplier", sevens)])
