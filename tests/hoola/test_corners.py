"""The Hoola rule corners settled after games were first recorded (issue 14), each on a hand-built
position, citing its section of docs/rules/hoola.md; and the gate that keeps games recorded before
them playing as they were."""

from __future__ import annotations

import dataclasses

import pytest
from game_invariants import refused

from croupier.engine.game import MalformedCommand
from croupier.engine.hoola import moves
from croupier.engine.hoola.events import (
    BindSevens,
    Discard,
    Draw,
    LayOff,
    Meld,
    ThankYou,
)
from croupier.engine.hoola.melds import JokerAs, MeldKind
from croupier.engine.hoola.rules import KOREAN, PRESETS, HoolaRules
from croupier.engine.hoola.state import Phase, Turn

from .helpers import GAME, ended, play, position

JOKER = dataclasses.replace(KOREAN, jokers=1)
#: The rule set of a game recorded before the corners: every option added later at its default.
RECORDED_BEFORE = dataclasses.replace(JOKER, named_set_joker_suits=False, binding_ends_hoola=False)


def melding(hand: str, rules: HoolaRules = JOKER, **changes: object):
    return position([hand, "2S 3S", "4C 5D"], rules=rules, phase=Phase.PLAY, **changes)


# --- §1.3 named jokers in sets ----------------------------------------------------------------


def test_a_named_set_joker_is_recorded_as_named() -> None:
    """docs/rules/hoola.md §1.3: in a set the named suit is recorded as named (``7H 7S JK`` named
    7C is the 7C, not the first suit the set lacks)."""
    state = melding("7H 7S JK1 9C")
    _, events = play(state, 0, Meld(("7H", "7S", "JK1"), (JokerAs("JK1", "7C"),)))
    assert events[0].meld.kind is MeldKind.SET
    assert events[0].meld.jokers == (JokerAs("JK1", "7C"),)
    # Unnamed, the first suit the set lacks; both readings are listed.
    _, events = play(state, 0, Meld(("7H", "7S", "JK1")))
    assert events[0].meld.jokers == (JokerAs("JK1", "7D"),)
    readings = {
        c.jokers
        for c in moves.legal_commands(state, 0)
        if isinstance(c, Meld) and set(c.cards) == {"7H", "7S", "JK1"}
    }
    assert readings == {(JokerAs("JK1", "7D"),), (JokerAs("JK1", "7C"),)}


@pytest.mark.parametrize(
    ("cards", "name"),
    [
        ("7H JK1", "7H"),  # repeats the natural card
        ("7H 7S JK1", "7S"),
        ("7H 7S JK1", "8H"),  # another rank
        ("5H 5S JK1", "6S"),
    ],
)
def test_a_set_joker_named_as_a_card_of_the_meld_or_another_rank_is_refused(
    cards: str, name: str
) -> None:
    """docs/rules/hoola.md §1.3: a name that duplicates a natural card of the meld, or contradicts
    it, is refused as malformed (INVALID_ARGUMENT), citing the section."""
    state = melding(f"{cards} 9C")
    command = Meld(tuple(cards.split()), (JokerAs("JK1", name),))
    refused(GAME, state, 0, command, "JOKER_CONTRADICTS", error=MalformedCommand)
    with pytest.raises(MalformedCommand) as info:
        GAME.validate(state, 0, command)
    assert info.value.rule == "docs/rules/hoola.md §1.3"


def test_a_named_set_joker_keeps_its_suit_as_the_set_grows() -> None:
    """docs/rules/hoola.md §1.3: the named card stays what the joker is; a natural card of the
    joker's suit cannot take its place (Hoola has no joker swap), another missing suit can join."""
    state = melding("7H 7S JK1 7C 7D 9C", melded=[True, False, False])
    after, _ = play(state, 0, Meld(("7H", "7S", "JK1"), (JokerAs("JK1", "7C"),)))
    refused(GAME, after, 0, LayOff(1, ("7C",)), "CANNOT_LAY_OFF")
    grown, _events = play(after, 0, LayOff(1, ("7D",)))
    assert grown.melds[0].jokers == (JokerAs("JK1", "7C"),)
    assert set(grown.melds[0].cards) == {"7H", "7S", "7D", "JK1"}


def test_a_thank_you_names_its_set_joker_too() -> None:
    """docs/rules/hoola.md §1.3: the same naming applies to the meld a thank-you makes."""
    state = position(
        ["7S JK1 9C 2D", "2S 3S", "4C 5D"], rules=JOKER, discards="7H", top_discarder=2
    )
    _, events = play(state, 0, ThankYou(("7S", "JK1"), (JokerAs("JK1", "7C"),)))
    assert events[0].meld.jokers == (JokerAs("JK1", "7C"),)
    refused(
        GAME,
        state,
        0,
        ThankYou(("7S", "JK1"), (JokerAs("JK1", "7H"),)),
        "JOKER_CONTRADICTS",
        error=MalformedCommand,
    )


def test_games_recorded_before_keep_the_first_missing_suit() -> None:
    """docs/rules/hoola.md §1.3, "Croupier's decision": a game whose rule set predates
    ``named_set_joker_suits`` replays as it was recorded: the suit is the first the set lacks."""
    state = melding("7H 7S JK1 9C", rules=RECORDED_BEFORE)
    _, events = play(state, 0, Meld(("7H", "7S", "JK1"), (JokerAs("JK1", "7C"),)))
    assert events[0].meld.jokers == (JokerAs("JK1", "7D"),)
    assert all(rules.named_set_joker_suits for rules in PRESETS.values())
    assert not HoolaRules().named_set_joker_suits


# --- §1.3 7-binding ---------------------------------------------------------------------------


def binding_position(rules: HoolaRules):
    """Seat 0 holds two 7s to bind onto seat 1's lone 7, and a run to go out with later."""
    return position(
        ["7S 7D 3H 4H 5H 9C", "2S 3S", "4C 5D"],
        rules=rules,
        phase=Phase.PLAY,
        melds=[(1, "7H")],
        melded=[False, True, True],
        stock="6H KD QD JD",
    )


def bind_then_go_out(rules: HoolaRules):
    """Seat 0 binds 7s and discards; next turn it draws and goes out with a run."""
    state = binding_position(rules)
    state, _ = play(state, 0, BindSevens(1, ("7S", "7D")), Discard("9C"))
    # The others pass their turns by drawing and discarding.
    state, _ = play(state, 1, Draw(), Discard(state.stock[0]))
    state, _ = play(state, 2, Draw(), Discard(state.stock[0]))
    state, events = play(state, 0, Draw(), Meld(("3H", "4H", "5H")), Discard("QD"))
    return ended(events)


def test_going_out_after_seven_binding_is_no_hoola() -> None:
    """docs/rules/hoola.md §1.3: a player who bound 7s in an earlier turn can still go out, but
    that win is no Hoola (cards left the hand before the final turn)."""
    rules = dataclasses.replace(KOREAN, seven_binding=True)
    result = bind_then_go_out(rules)
    assert result.outcome == "GOING_OUT" and result.winners == (0,)
    assert not result.hoola and not result.perfect_hoola
    # A game recorded before the option counted it as a Hoola, and replays so.
    before = bind_then_go_out(dataclasses.replace(rules, binding_ends_hoola=False))
    assert before.hoola


def test_seven_binding_is_a_meld_with_the_option() -> None:
    """docs/rules/hoola.md §1.3, ``seven_binding_is_meld``: binding is the binder's first meld,
    so lay-offs open at once."""
    rules = dataclasses.replace(KOREAN, seven_binding=True)
    state = binding_position(rules)
    after, _ = play(state, 0, BindSevens(1, ("7S", "7D")))
    assert not after.melded[0]
    as_meld = dataclasses.replace(
        state, rules=dataclasses.replace(rules, seven_binding_is_meld=True)
    )
    after, _ = play(as_meld, 0, BindSevens(1, ("7S", "7D")))
    assert after.melded[0]
    # ... so its unmelded penalty is gone and its lay-offs are open.
    with_run = dataclasses.replace(
        after,
        melds=after.melds + (after.melds[0].__class__(2, 1, MeldKind.RUN, ("6C", "7C", "8C")),),
    )
    assert LayOff(2, ("9C",)) in moves.legal_commands(with_run, 0)


# --- §1.5 going out by a discard ----------------------------------------------------------------


def test_go_out_by_discard_keeps_a_card_to_discard() -> None:
    """docs/rules/hoola.md §1.5: with ``go_out_by_discard`` (true in ``international``) the last
    card must be a discard; melding or laying off the whole hand is refused."""
    assert PRESETS["international"].go_out_by_discard
    assert not any(PRESETS[name].go_out_by_discard for name in PRESETS if name != "international")
    rules = dataclasses.replace(KOREAN, go_out_by_discard=True)
    state = position(
        ["5C 6C 7C", "2S 3H", "4C AD"],
        phase=Phase.PLAY,
        melded=[True] * 3,
        this_turn=Turn(start_hand=("5C", "6C"), melded_before=True, drawn="7C"),
        rules=rules,
    )
    refused(GAME, state, 0, Meld(("5C", "6C", "7C")), "GO_OUT_BY_DISCARD")
    # Melding all but one card, then discarding it, goes out.
    state = dataclasses.replace(
        state,
        hands=(("5C", "6C", "7C", "KD"),) + state.hands[1:],
    )
    _after, events = play(state, 0, Meld(("5C", "6C", "7C")), Discard("KD"))
    assert ended(events).outcome == "GOING_OUT"
    # Without the option the whole hand may be melded.
    free = dataclasses.replace(state, rules=KOREAN, hands=(("5C", "6C", "7C"),) + state.hands[1:])
    assert Meld(("5C", "6C", "7C")) in moves.legal_commands(free, 0)


def test_go_out_by_discard_refuses_a_lay_off_of_the_last_card() -> None:
    """docs/rules/hoola.md §1.5: a lay-off of the whole hand is refused the same way."""
    rules = dataclasses.replace(KOREAN, go_out_by_discard=True)
    state = position(
        ["8C", "2S 3H", "4C AD"],
        phase=Phase.PLAY,
        melded=[True] * 3,
        melds=[(1, "5C 6C 7C")],
        rules=rules,
    )
    refused(GAME, state, 0, LayOff(1, ("8C",)), "GO_OUT_BY_DISCARD")
    assert Discard("8C") in moves.legal_commands(state, 0)


# --- §1.6 a loser whose first turn never came -------------------------------------------------


def test_an_unmelded_loser_whose_first_turn_never_came_ranks_by_hand_value() -> None:
    """docs/rules/hoola.md §1.6, Croupier's decision: where the unmelded penalty is waived for a
    loser whose first turn never came, so is its ranking last; it ranks by hand value. Where the
    penalty applies (``pmang``), it ranks last and pays ×``unmelded_multiplier``."""

    def settled(rules: HoolaRules):
        state = position(
            ["4D", "9S TD", "8C QD", "AS"],
            rules=rules,
            phase=Phase.PLAY,
            melded=[True, True, True, False],
            turns_started=(2, 2, 2, 0),
            this_turn=Turn(start_hand=("4D",), melded_before=True, drawn="4D"),
        )
        return ended(play(state, 0, Discard("4D"))[1]).settlement

    waived = settled(KOREAN)  # no penalty before the first turn
    lines = {line.payer: [(f.name, f.value) for f in line.factors] for line in waived.lines}
    # Seat 3 holds an ace (1): the lowest hand, so it ranks first and pays 1.
    assert lines[3] == [("rank", 1)]
    assert lines[1] == [("rank", 2)] and lines[2] == [("rank", 3)]
    kept = settled(PRESETS["pmang"])  # every penalty applies before the first turn
    lines = {line.payer: [(f.name, f.value) for f in line.factors] for line in kept.lines}
    assert lines[3] == [("rank", 3), ("unmelded_multiplier", 2)]
    assert lines[1] == [("rank", 1)] and lines[2] == [("rank", 2)]
