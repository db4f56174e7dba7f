"""Every numeric option of every game, one step outside its bounds on either side, is refused
as OUT_OF_RANGE naming the option (docs/rules/*.md, "Bounds"; README, "Limits"): a studio's
client matches one reason whichever side a value misses (before: a value below some options'
least answered INVALID_OPTION, one above their greatest OUT_OF_RANGE)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from croupier.engine.game import Bounds, InvalidRules
from croupier.engine.registry import GAMES

#: A seat count each game's default preset seats.
SEATS = {"hoola": 3, "koikoi": 2, "gin": 2, "rummy": 4}


def bounds_of(kind: str) -> Bounds:
    bounds: Bounds = importlib.import_module(f"croupier.engine.{kind}.rules").BOUNDS
    return bounds


CASES = [(kind, option) for kind in sorted(GAMES) for option in sorted(bounds_of(kind))]


@pytest.mark.parametrize(("kind", "option"), CASES, ids=[f"{k}-{o}" for k, o in CASES])
@given(below=st.booleans(), beyond=st.integers(1, 1_000))
def test_an_option_outside_its_bounds_is_out_of_range(
    kind: str, option: str, below: bool, beyond: int
) -> None:
    lowest, highest = bounds_of(kind)[option]
    value = lowest - beyond if below else highest + beyond
    game = GAMES[kind]
    default = game.rules_for("", {}, SEATS[kind])
    given_value: Any = (value,) if isinstance(getattr(default, option), tuple) else value
    with pytest.raises(InvalidRules) as refused:
        game.rules_for("", {option: given_value}, SEATS[kind])
    assert (refused.value.reason, refused.value.field) == ("OUT_OF_RANGE", option)


@pytest.mark.parametrize(("kind", "option"), CASES, ids=[f"{k}-{o}" for k, o in CASES])
def test_an_option_at_its_bounds_is_not_refused_for_its_range(kind: str, option: str) -> None:
    """Each end of a range is inside it: anything refused there is for another reason (the
    options together, say), never OUT_OF_RANGE naming this option."""
    game = GAMES[kind]
    default = game.rules_for("", {}, SEATS[kind])
    for value in bounds_of(kind)[option]:
        given_value: Any = (value,) if isinstance(getattr(default, option), tuple) else value
        refusal = None
        try:
            game.rules_for("", {option: given_value}, SEATS[kind])
        except InvalidRules as refused:
            refusal = (refused.reason, refused.field)
        assert refusal != ("OUT_OF_RANGE", option), (value, refusal)
