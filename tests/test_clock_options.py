"""An option set while the option it needs is off is refused when a game is created, naming the
option and its value: the clock-only ones without a turn clock (docs/rules/common.md §5.1), and
Hoola's claim and reshuffle options without claims out of turn or reshuffles. Before,
``forfeit_when_away``, a time bank, ``max_timeouts`` or Koi-Koi's ``forced_play_least`` were
accepted with ``turn_time_ms`` 0 and did nothing, so a studio that asked for a forfeit launched a
table that had none."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from croupier.engine.game import CLOCK_ONLY_OPTIONS, InvalidRules
from croupier.engine.hoola.rules import NEEDS as HOOLA_NEEDS_OF
from croupier.engine.hoola.rules import ClaimPriority
from croupier.engine.registry import GAMES

#: A seat count each game's default preset seats.
SEATS = {"hoola": 3, "koikoi": 2, "gin": 2, "rummy": 4}
#: A value of each clock-only option other than its default (each inside its bounds).
SET = {
    "time_bank_ms": 5_000,
    "max_timeouts": 1,
    "forfeit_when_away": True,
    "forced_play_least": True,
}

CASES = [
    (kind, preset, option)
    for kind, game in sorted(GAMES.items())
    for preset in sorted(game.presets())
    for option in CLOCK_ONLY_OPTIONS
    if hasattr(game.presets()[preset], option)
]


@pytest.mark.parametrize(("kind", "preset", "option"), CASES)
def test_a_clock_only_option_without_a_clock_is_refused_naming_it(
    kind: str, preset: str, option: str
) -> None:
    game = GAMES[kind]
    with pytest.raises(InvalidRules) as refused:
        game.new_game_rules(preset, {option: SET[option]}, SEATS[kind])
    assert (refused.value.reason, refused.value.field) == ("INVALID_OPTION", option)
    shown = str(SET[option]).lower() if isinstance(SET[option], bool) else str(SET[option])
    assert f"option {option}: {shown} " in refused.value.message
    assert "turn_time_ms" in refused.value.message
    # With a clock it is what it says.
    rules = game.new_game_rules(preset, {option: SET[option], "turn_time_ms": 1_000}, SEATS[kind])
    assert getattr(rules, option) == SET[option]
    # A recorded rule set is read back as it was played (a replay never meets this check).
    assert (
        getattr(game.rules_for(preset, {option: SET[option]}, SEATS[kind]), option) == SET[option]
    )


@pytest.mark.parametrize("kind", sorted(GAMES))
def test_every_preset_as_it_is_and_its_defaults_sent_again_are_accepted(kind: str) -> None:
    """The presets set no clock, and no clock-only option: each is a new game as it stands,
    and so is one that sends every clock-only option at its default."""
    game = GAMES[kind]
    for preset, rules in game.presets().items():
        assert game.new_game_rules(preset, {}, SEATS[kind]) == rules
        defaults: dict[str, Any] = {
            option: getattr(type(rules)(), option)
            for option in CLOCK_ONLY_OPTIONS
            if hasattr(rules, option)
        }
        assert game.new_game_rules(preset, defaults, SEATS[kind]) == rules


@given(
    kind=st.sampled_from(sorted(GAMES)),
    turn_time_ms=st.integers(0, 3),
    chosen=st.sets(st.sampled_from(CLOCK_ONLY_OPTIONS)),
)
def test_refused_exactly_when_a_clock_only_option_is_set_without_a_clock(
    kind: str, turn_time_ms: int, chosen: set[str]
) -> None:
    game = GAMES[kind]
    base = game.presets()[game.default_preset]
    options = {o: SET[o] for o in chosen if hasattr(base, o)}
    overrides = {"turn_time_ms": turn_time_ms, **options}
    if turn_time_ms == 0 and options:
        with pytest.raises(InvalidRules) as refused:
            game.new_game_rules("", overrides, SEATS[kind])
        assert refused.value.field in options
    else:
        game.new_game_rules("", overrides, SEATS[kind])


#: Hoola's options that need another on (engine/hoola/rules.py, NEEDS), each with a value other
#: than its default.
HOOLA_NEEDS = {
    "claim_priority": ClaimPriority.NEAREST_IN_TURN,
    "claim_window_ms": 5_000,
    "max_reshuffles": 5,
}


@pytest.mark.parametrize("option", sorted(HOOLA_NEEDS))
def test_a_hoola_option_without_the_option_it_needs_is_refused_naming_both(option: str) -> None:
    """Battle Hoola's claim rules without claims out of turn, or a bound on the reshuffles
    without reshuffling, were accepted and did nothing."""
    hoola = GAMES["hoola"]
    needed = HOOLA_NEEDS_OF[option]
    value = HOOLA_NEEDS[option]
    for preset, rules in sorted(hoola.presets().items()):
        overrides: dict[str, Any] = {option: value}
        if getattr(rules, needed):
            assert getattr(hoola.new_game_rules(preset, overrides, 3), option) == value
            continue
        with pytest.raises(InvalidRules) as refused:
            hoola.new_game_rules(preset, overrides, 3)
        assert (refused.value.reason, refused.value.field) == ("INVALID_OPTION", option)
        shown = value.name if isinstance(value, ClaimPriority) else str(value)
        assert f"option {option}: {shown} does nothing without {needed}" in refused.value.message
        # With the option it needs, it is what it says; a recorded rule set reads back as it was.
        made = hoola.new_game_rules(preset, {**overrides, needed: True}, 3)
        assert getattr(made, option) == value
        assert getattr(hoola.rules_for(preset, overrides, 3), option) == value
