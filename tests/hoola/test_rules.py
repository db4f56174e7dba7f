"""One test per rule of docs/rules/hoola.md §1 on hand-built positions, with itemized settlements."""

from __future__ import annotations

import dataclasses

import pytest
from game_invariants import refused
from hypothesis import given, settings
from hypothesis import strategies as st

from croupier.engine.game import Context, IllegalCommand, MalformedCommand
from croupier.engine.hoola import moves
from croupier.engine.hoola.deal import deal
from croupier.engine.hoola.events import (
    BindSevens,
    CardDiscarded,
    CardDrawn,
    ClaimMade,
    CloseTable,
    Combination,
    Declare,
    Discard,
    DiscardTaken,
    Draw,
    LayOff,
    LeaveTable,
    Meld,
    MeldMade,
    NextRound,
    RoundDealt,
    SevensBound,
    StockReshuffled,
    Stop,
    TableClosed,
    ThankYou,
)
from croupier.engine.hoola.melds import JokerAs, MeldKind
from croupier.engine.hoola.rules import (
    KOREAN,
    PRESETS,
    ClaimPriority,
    PaymentMode,
    Penalty,
    TieMode,
    rules_for,
)
from croupier.engine.hoola.state import Phase, Turn, evolve
from croupier.engine.settlement import Settlement

from .helpers import GAME, SEEDS, ended, play, position


def korean(**options: object):
    return dataclasses.replace(KOREAN, **options)


def payments(settlement: Settlement) -> dict[tuple[int, int], int]:
    return {(line.payer, line.payee): line.amount for line in settlement.lines}


def factors(settlement: Settlement, payer: int) -> list[tuple[str, int]]:
    line = next(line for line in settlement.lines if line.payer == payer)
    return [(f.name, f.value) for f in line.factors]


# --- §1.2 a turn ------------------------------------------------------------------------------


def test_only_the_seat_to_act_may_play() -> None:
    state = position(["2C 3C", "4D 5D"])
    refused(GAME, state, 1, Draw(), "NOT_YOUR_TURN")
    assert moves.legal_commands(state, 1) == []


def test_take_first_then_one_take_per_turn() -> None:
    state = position(["5C 6C 7C 9D", "4D 5D"], discards="KS")
    refused(GAME, state, 0, Meld(("5C", "6C", "7C")), "TAKE_FIRST")
    refused(GAME, state, 0, Discard("9D"), "TAKE_FIRST")
    drawn, events = play(state, 0, Draw())
    assert events == [CardDrawn(0, state.stock[0])] and drawn.phase is Phase.PLAY
    refused(GAME, drawn, 0, Draw(), "ALREADY_TOOK")
    refused(GAME, drawn, 0, Stop(), "ALREADY_TOOK")


def test_discard_ends_the_turn() -> None:
    state = position(["5C 9D", "4D 5D", "AS 2H"], discards="KS")
    after, _ = play(state, 0, Draw(), Discard("9D"))
    assert after.turn == 1 and after.phase is Phase.TAKE and after.discard_top == "9D"
    assert after.top_discarder == 0 and after.turns_started[1] == 3


def test_thank_you_takes_the_discard_into_a_new_meld_at_once() -> None:
    state = position(["8H 9H 2C 3D 4S 5S KD", "4D 5D", "AS 2H"], discards="QC 7H", top_discarder=2)
    after, events = play(state, 0, ThankYou(("9H", "8H")))
    assert isinstance(events[0], DiscardTaken) and events[0].discarder == 2
    assert events[0].meld.kind is MeldKind.RUN and events[0].meld.cards == ("7H", "8H", "9H")
    assert after.phase is Phase.PLAY and after.melded[0] and after.discard_top == "QC"
    refused(GAME, state, 0, ThankYou(("2C", "3D")), "THANK_YOU_NOT_MELDABLE")  # not a meld
    refused(GAME, state, 0, ThankYou(("KD",)), "THANK_YOU_NOT_MELDABLE")  # kept, not melded
    refused(GAME, state, 0, ThankYou(("AS",)), "CARD_NOT_IN_HAND")


def test_a_discarded_seven_may_be_taken_alone_unless_the_option_is_off() -> None:
    state = position(["8C 9D 2C 3D 4S 5S KD", "4D 5D", "AS 2H"], discards="7H", top_discarder=2)
    _, events = play(state, 0, ThankYou(()))
    assert events[0].meld.kind is MeldKind.LONE_SEVEN
    off = dataclasses.replace(state, rules=korean(thank_you_lone_seven=False))
    refused(GAME, off, 0, ThankYou(()), "THANK_YOU_LONE_SEVEN_OFF")


def test_lay_off_needs_ones_own_meld_first_even_earlier_this_turn() -> None:
    state = position(
        ["5C 6C 7C 9S 2D", "4D 5D", "AS 2H"],
        discards="KS",
        phase=Phase.PLAY,
        melds=[(1, "9H 9D 9C")],
    )
    refused(GAME, state, 0, LayOff(1, ("9S",)), "LAY_OFF_BEFORE_MELD")
    after, _ = play(state, 0, Meld(("5C", "6C", "7C")))
    after, events = play(after, 0, LayOff(1, ("9S",)))
    assert events[0].meld.cards == ("9C", "9D", "9H", "9S")
    refused(GAME, after, 0, LayOff(7, ("2D",)), "NO_SUCH_MELD")
    refused(GAME, after, 0, LayOff(1, ("2D",)), "CANNOT_LAY_OFF")


def test_malformed_commands_name_the_field() -> None:
    state = position(["5C 6C 7C", "4D 5D"], phase=Phase.PLAY)
    with pytest.raises(MalformedCommand) as info:
        moves.validate(state, 0, Meld(("5C", "XX")))
    assert (info.value.reason, info.value.field) == ("UNKNOWN_CARD", "cards")
    with pytest.raises(MalformedCommand) as info:
        moves.validate(state, 0, Meld(("5C", "5C", "6C")))
    assert info.value.reason == "DUPLICATE_CARD"
    with pytest.raises(MalformedCommand):
        moves.validate(state, 0, Declare(None))


def test_seven_binding_joins_two_sevens_to_a_lone_seven_without_melding() -> None:
    rules = korean(seven_binding=True)
    state = position(
        ["7S 7D 2C 9D", "4D 5D", "AS 2H"], rules=rules, phase=Phase.PLAY, melds=[(1, "7H")]
    )
    assert BindSevens(1, ("7S", "7D")) in moves.legal_commands(state, 0)
    after, events = play(state, 0, BindSevens(1, ("7S", "7D")))
    assert isinstance(events[0], SevensBound) and events[0].meld.kind is MeldKind.SET
    assert after.melds[0].cards == ("7D", "7H", "7S") and after.hands[0] == ("2C", "9D")
    # It is not the seat's first meld: lay-offs stay closed, a Hoola stays possible.
    assert not after.melded[0]
    refused(
        GAME,
        dataclasses.replace(
            after,
            melds=after.melds + (after.melds[0].__class__(2, 1, MeldKind.RUN, ("8C", "9C", "TC")),),
        ),
        0,
        LayOff(2, ("2C",)),
        "LAY_OFF_BEFORE_MELD",
    )
    # The set of 7s now blocks 6/8 lay-offs.
    melded = dataclasses.replace(
        after, melded=(True, False, False), hands=(("8H",), ("4D",), ("AS",))
    )
    refused(GAME, melded, 0, LayOff(1, ("8H",)), "CANNOT_LAY_OFF")


def test_seven_binding_needs_the_option_a_lone_seven_and_two_sevens() -> None:
    state = position(
        ["7S 7D 7C 9D", "4D 5D", "AS 2H"],
        rules=korean(seven_binding=True),
        phase=Phase.PLAY,
        melds=[(1, "7H"), (1, "5C 6C 7C".replace("7C", "4C"))],
    )
    refused(
        GAME,
        dataclasses.replace(state, rules=KOREAN),
        0,
        BindSevens(1, ("7S", "7D")),
        "SEVEN_BINDING_OFF",
    )
    refused(GAME, state, 0, BindSevens(2, ("7S", "7D")), "NOT_SEVEN_BINDING")
    refused(GAME, state, 0, BindSevens(1, ("7S", "9D")), "NOT_SEVEN_BINDING")
    with pytest.raises(MalformedCommand):
        moves.validate(state, 0, BindSevens(1, ("7S",)))


# --- §1.5.1 going out, Hoola, Perfect Hoola, thank-you Hoola ----------------------------------


def plain_win_position(**options: object):
    """Seat 0 melded earlier and holds one card after drawing; four seats (docs/rules/hoola.md §1.6 RANK)."""
    return position(
        ["4D", "2S 3H", "7S 2D", "KS"],
        rules=korean(**options),
        phase=Phase.PLAY,
        melded=[True, True, True, False],
        this_turn=Turn(start_hand=("4D",), melded_before=True, drawn="4D"),
    )


def test_going_out_by_the_last_discard_ranks_the_losers() -> None:
    result = ended(play(plain_win_position(), 0, Discard("4D"))[1])
    s = result.settlement
    assert (result.outcome, result.winners, result.hoola) == ("GOING_OUT", (0,), False)
    assert payments(s) == {(1, 0): 1, (2, 0): 4, (3, 0): 6}
    assert factors(s, 1) == [("rank", 1)]
    assert factors(s, 2) == [("rank", 2), ("seven_multiplier", 2)]  # 7S held: ×2
    assert factors(s, 3) == [("rank", 3), ("unmelded_multiplier", 2)]  # no meld: last, ×2
    assert s.net == (11, -1, -4, -6)
    assert result.hand_values == (0, 5, 18, 13)


def test_flat_payment_mode() -> None:
    s = ended(
        play(plain_win_position(payment_mode=PaymentMode.FLAT), 0, Discard("4D"))[1]
    ).settlement
    assert payments(s) == {(1, 0): 1, (2, 0): 2, (3, 0): 2}


def test_point_difference_payment_mode() -> None:
    s = ended(
        play(plain_win_position(payment_mode=PaymentMode.POINT_DIFFERENCE), 0, Discard("4D"))[1]
    ).settlement
    # Plain face sums (5, 9, 13) minus the winner's 0, then the loser multipliers.
    assert payments(s) == {(1, 0): 5, (2, 0): 18, (3, 0): 26}
    assert factors(s, 2) == [("point_difference", 9), ("seven_multiplier", 2)]


def test_base_stake_multiplies_every_payment() -> None:
    s = ended(play(plain_win_position(base_stake=10), 0, Discard("4D"))[1]).settlement
    assert payments(s) == {(1, 0): 10, (2, 0): 40, (3, 0): 60}


def test_tied_losers_pay_the_higher_amount() -> None:
    state = position(
        ["4D", "2S 3H", "4C AD", "KS"],
        phase=Phase.PLAY,
        melded=[True] * 4,
        this_turn=Turn(start_hand=("4D",), melded_before=True, drawn="4D"),
    )
    s = ended(play(state, 0, Discard("4D"))[1]).settlement
    assert payments(s) == {(1, 0): 2, (2, 0): 2, (3, 0): 3}


def test_going_out_by_melding_the_last_cards_needs_no_discard() -> None:
    state = position(
        ["5C 6C 7C", "2S 3H", "4C AD"],
        phase=Phase.PLAY,
        melded=[True] * 3,
        this_turn=Turn(start_hand=("5C", "6C"), melded_before=True, drawn="7C"),
        rules=korean(rounds=1),
    )
    after, events = play(state, 0, Meld(("5C", "6C", "7C")))
    assert isinstance(events[0], MeldMade) and ended(events).outcome == "GOING_OUT"
    assert after.phase is Phase.TABLE_CLOSED and after.hands[0] == ()  # a one-round table


def hoola_position(hand: str, stock: str, **options: object):
    return position(
        [hand, "2S 3S", "4C 5D"],
        rules=korean(**options),
        stock=stock,
        discards="QH",
        melded=[False, True, True],
    )


def test_hoola_going_out_in_one_turn_with_no_earlier_meld() -> None:
    state = hoola_position("3H 4H 5H 9S 9D 9C KC", "6H 2H")
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
    assert (result.hoola, result.perfect_hoola, result.thank_you_hoola) == (True, False, False)
    assert payments(result.settlement) == {(1, 0): 4, (2, 0): 8}
    assert factors(result.settlement, 2) == [("rank", 2), ("hoola_multiplier", 4)]


def test_perfect_hoola_melds_the_seven_cards_held_and_discards_the_drawn_one() -> None:
    state = hoola_position("3H 4H 5H 9S 9D 9C 6H", "KC 2H", perfect_hoola_multiplier=5)
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
    assert (result.hoola, result.perfect_hoola) == (True, True)
    # The perfect multiplier replaces the Hoola multiplier.
    assert payments(result.settlement) == {(1, 0): 5, (2, 0): 10}
    assert factors(result.settlement, 1) == [("rank", 1), ("perfect_hoola_multiplier", 5)]


def test_melding_the_drawn_card_is_a_hoola_but_not_perfect() -> None:
    state = hoola_position("3H 4H 5H 9S 9D 9C KC", "6H 2H")
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
    assert not result.perfect_hoola


def test_thank_you_hoola_makes_the_discarder_liable() -> None:
    state = position(
        ["8H 9H KC KD KS KH QD", "2S 3S", "4C 5D"],
        discards="7H",
        top_discarder=2,
        melded=[False, True, True],
    )
    result = ended(
        play(state, 0, ThankYou(("8H", "9H")), Meld(("KC", "KD", "KS", "KH")), Discard("QD"))[1]
    )
    assert (result.hoola, result.thank_you_hoola, result.perfect_hoola) == (True, True, False)
    # Seat 2 ranks last as the liable player: own 2 × 4 = 8, plus seat 1's 1 × 4 = 4.
    assert payments(result.settlement) == {(2, 0): 12}
    line = result.settlement.lines[0]
    assert [(f.name, f.value) for f in line.factors] == [
        ("rank", 2),
        ("hoola_multiplier", 4),
        ("thank_you_penalty_multiplier", 4),
    ]
    # The liability is added (seat 1's 4 × 1), the others multiply: 2 × 4 + 4 = 12.
    assert [f.added for f in line.factors] == [False, False, True]


def thank_you_win(rules):
    """Seat 0 melded earlier, takes seat 2's 7H by thank-you and goes out (not a Hoola)."""
    state = position(
        ["8H 9H QD", "2S 3S", "4C 5D"],
        rules=rules,
        discards="7H",
        top_discarder=2,
        melded=[True, True, True],
        this_turn=Turn(start_hand=("8H", "9H", "QD"), melded_before=True),
    )
    return ended(play(state, 0, ThankYou(("8H", "9H")), Discard("QD"))[1])


def test_thank_you_penalty_applies_to_any_win_by_default() -> None:
    assert payments(thank_you_win(KOREAN).settlement) == {(2, 0): 3}


def test_thank_you_penalty_hoola_only_scope() -> None:
    rules = PRESETS["international"]
    assert payments(thank_you_win(rules).settlement) == {(1, 0): 1, (2, 0): 2}


def test_the_first_upcard_has_no_discarder_so_no_thank_you_penalty() -> None:
    state = position(
        ["8H 9H QD", "2S 3S", "4C 5D"],
        discards="7H",
        top_discarder=None,
        melded=[True, True, True],
        this_turn=Turn(start_hand=("8H", "9H", "QD"), melded_before=True),
    )
    result = ended(play(state, 0, ThankYou(("8H", "9H")), Discard("QD"))[1])
    assert payments(result.settlement) == {(1, 0): 1, (2, 0): 2}


# --- §1.5.2 stop ------------------------------------------------------------------------------


def stop_position(stopper: str, one: str, two: str, **options: object):
    return position([stopper, one, two], rules=korean(**options), melded=[True, True, True])


def test_a_stop_wins_when_every_other_hand_is_strictly_higher() -> None:
    result = ended(play(stop_position("AS 2S 3D", "9C 8D", "TC 2H"), 0, Stop())[1])
    assert (result.outcome, result.winners) == ("STOP", (0,))
    assert payments(result.settlement) == {(2, 0): 1, (1, 0): 2}


def test_a_failed_stop_makes_the_stopper_liable() -> None:
    result = ended(
        play(stop_position("AS 2S 3D", "9C 8D", "AC 5H", stop_penalty_multiplier=2), 0, Stop())[1]
    )
    assert (result.outcome, result.winners) == ("FAILED_STOP", (2,))
    # Seat 0 ranks last (2) and pays seat 1's 1 × 2 on top.
    assert payments(result.settlement) == {(0, 2): 4}


@settings(max_examples=25, deadline=None)
@given(multiplier=st.integers(1, 20))
def test_a_liability_reads_as_the_amount_it_adds_not_as_its_multiplier(multiplier: int) -> None:
    """The liable seat's line adds each other loser's payment × the penalty's option, under the
    option's name (the recorded settlement keeps it). What people read (the demo, `croupier
    replay show`, its HTML) once wrote that amount beside the option's name, ``+ stop penalty
    multiplier 4`` at a table of ×2: a right payment read as a wrong one against the rules page
    (docs/rules/hoola.md §1.6). It reads as the penalty it is, its reason giving the multiplier."""
    from croupier.contract.convert import to_proto
    from croupier.replays.timeline import _html_settlement, _settlement_lines
    from croupier.service.bots import describe_settlement
    from croupier.v1 import common_pb2

    state = stop_position("AS 2S 3D", "9C 8D", "AC 5H", stop_penalty_multiplier=multiplier)
    settlement = ended(play(state, 0, Stop())[1]).settlement
    (line,) = settlement.lines
    added = line.factors[-1]
    # The record is unchanged: the option's name, the amount it adds (seat 1's 1 stake × it).
    assert (added.name, added.value, added.added) == ("stop_penalty_multiplier", multiplier, True)
    text = _settlement_lines("hoola", settlement)
    assert f"    + stop penalty {multiplier}: failed stop: pays seat 1's 1 × {multiplier}" in text
    page = _html_settlement("hoola", "", settlement)
    assert f"+ <b>stop penalty</b> {multiplier}: failed stop" in page
    demo = describe_settlement(to_proto(settlement, common_pb2.Settlement))
    assert f"      stop penalty {multiplier}: failed stop: pays seat 1's 1 × {multiplier}" in demo
    for shown in (*text, page, *demo):
        assert "penalty multiplier" not in shown and "penalty_multiplier" not in shown


def test_a_failed_stop_tied_for_the_win_is_shared_remainder_to_the_first_in_turn() -> None:
    state = stop_position("AS 2S 3D", "3C 3H", "AC 5H", base_stake=3)
    result = ended(play(state, 0, Stop())[1])
    assert result.winners == (1, 2)
    assert payments(result.settlement) == {(0, 1): 2, (0, 2): 1}


def test_a_shared_payment_is_shown_as_each_winners_share() -> None:
    """Each line of a shared payment lists the whole payment's factors (docs/rules/common.md,
    "Settlement records"): what people read (the demo, `croupier replay show`, its HTML) says the
    line is a share, or its factors (1 × 3) would not make its amount (2 or 1)."""
    from croupier.contract.convert import to_proto
    from croupier.engine.settlement import share_note
    from croupier.replays.timeline import _html_settlement, _settlement_lines
    from croupier.service.bots import describe_settlement
    from croupier.v1 import common_pb2

    state = stop_position("AS 2S 3D", "3C 3H", "AC 5H", base_stake=3)
    settlement = ended(play(state, 0, Stop())[1]).settlement
    assert [share_note(line.amount, line.factors, 2) for line in settlement.lines] == [
        "its share of 3, split 2 ways"
    ] * 2
    text = _settlement_lines("hoola", settlement)
    assert "  seat 0 pays seat 1: 2 stakes (its share of 3, split 2 ways)" in text
    assert "  seat 0 pays seat 2: 1 stake (its share of 3, split 2 ways)" in text
    assert "<td>2 stakes (its share of 3, split 2 ways)</td>" in _html_settlement(
        "hoola", "", settlement
    )
    demo = describe_settlement(to_proto(settlement, common_pb2.Settlement))
    assert sum(line.endswith(", its share of 3, split 2 ways") for line in demo) == 2
    # A payment with one winner reads as before.
    alone = ended(play(stop_position("AS 2S 3D", "9C 8D", "TC 2H"), 0, Stop())[1]).settlement
    assert not any("share" in line for line in _settlement_lines("hoola", alone))


def test_tie_mode_void_pays_nothing() -> None:
    state = stop_position("AS 2S 3D", "3C 3H", "AC 5H", tie_mode=TieMode.VOID)
    result = ended(play(state, 0, Stop())[1])
    assert result.settlement.lines == () and result.settlement.net == (0, 0, 0)


def test_stop_limit() -> None:
    refused(
        GAME, stop_position("AS 2S 9D", "9C 8D", "TC 2H"), 0, Stop(), "STOP_OVER_LIMIT"
    )  # 12 > 10
    assert Stop() in moves.legal_commands(stop_position("AS 9D", "9C 8D", "TC 2H"), 0)  # 10


def test_sevens_count_in_the_stop_limit() -> None:
    refused(GAME, stop_position("7S", "9C 8D", "TC 2H"), 0, Stop(), "STOP_OVER_LIMIT")  # 7 × 2 = 14


def test_no_stop_on_the_first_turn_unless_the_option_allows() -> None:
    state = dataclasses.replace(stop_position("AS 2S", "9C 8D", "TC 2H"), turns_started=(1, 0, 0))
    refused(GAME, state, 0, Stop(), "FIRST_TURN_STOP")
    allowed = dataclasses.replace(state, rules=korean(first_turn_stop=True))
    assert Stop() in moves.legal_commands(allowed, 0)


def test_no_stops_in_a_two_player_round_unless_two_player_stop() -> None:
    state = position(["AS 2S", "9C 8D"], melded=[True, True])
    refused(GAME, state, 0, Stop(), "NO_STOP_WITH_TWO")
    assert Stop() in moves.legal_commands(
        dataclasses.replace(state, rules=korean(two_player_stop=True)), 0
    )


def test_stop_requires_melds_option() -> None:
    rules = korean(stop_requires_melds=True)
    state = position(["AS 2S", "9C 8D", "TC 2H"], rules=rules, melded=[True, False, False])
    refused(GAME, state, 0, Stop(), "STOP_NEEDS_MELDS")
    assert Stop() in moves.legal_commands(dataclasses.replace(state, melded=(True, False, True)), 0)


# --- §1.5.3 hand combinations -----------------------------------------------------------------


def combination_position(hand: str, **options: object):
    return position([hand, "9C 8D", "TC 2H"], rules=korean(**options), melded=[False, True, True])


def test_four_sevens() -> None:
    state = combination_position("7S 7H 7D 7C 2S 3S 4S", four_sevens_multiplier=7)
    result = ended(play(state, 0, Declare(Combination.FOUR_SEVENS))[1])
    assert (result.outcome, result.winners) == ("COMBINATION", (0,))
    assert payments(result.settlement) == {(2, 0): 7, (1, 0): 14}
    assert factors(result.settlement, 1) == [("rank", 2), ("four_sevens_multiplier", 7)]
    refused(
        GAME,
        combination_position("7S 7H 7D 2C 2S 3S 4S"),
        0,
        Declare(Combination.FOUR_SEVENS),
        "NOT_FOUR_SEVENS",
    )


def test_low_hand_is_the_plain_face_sum() -> None:
    state = combination_position("AS AH AD 2S 2H 3C 4D", low_hand_multiplier=4)  # 14
    result = ended(play(state, 0, Declare(Combination.LOW_HAND))[1])
    assert payments(result.settlement) == {(2, 0): 4, (1, 0): 8}
    refused(
        GAME,
        combination_position("AS AH AD 2S 2H 3C 6D"),
        0,
        Declare(Combination.LOW_HAND),
        "NOT_LOW_HAND",
    )  # 16 > 15
    # A 7 counts 7 here, not doubled: 1+1+1+2+2+7 = 14.
    assert Declare(Combination.LOW_HAND) in moves.legal_commands(
        combination_position("AS AH AD 2S 2H 7C"), 0
    )


def test_high_hand() -> None:
    state = combination_position("KS KH KD QS QH QC JD")  # 86
    assert ended(play(state, 0, Declare(Combination.HIGH_HAND))[1]).winners == (0,)
    refused(
        GAME,
        combination_position("KS KH KD QS QH QC 2D"),
        0,
        Declare(Combination.HIGH_HAND),
        "NOT_HIGH_HAND",
    )  # 77


def test_low_and_high_need_no_meld_and_not_the_first_turn() -> None:
    state = combination_position("AS AH AD 2S 2H 3C 4D")
    refused(
        GAME,
        dataclasses.replace(state, melded=(True, True, True)),
        0,
        Declare(Combination.LOW_HAND),
        "COMBINATION_AFTER_MELD",
    )
    first = dataclasses.replace(state, turns_started=(1, 0, 0))
    refused(GAME, first, 0, Declare(Combination.LOW_HAND), "FIRST_TURN_COMBINATION")
    allowed = dataclasses.replace(first, rules=korean(first_turn_combinations=True))
    assert Declare(Combination.LOW_HAND) in moves.legal_commands(allowed, 0)


def test_straight_flush_only_where_the_rules_have_it() -> None:
    refused(
        GAME,
        combination_position("3S 4S 5S 6S 7S 8S 9S"),
        0,
        Declare(Combination.STRAIGHT_FLUSH),
        "COMBINATION_NOT_IN_RULES",
    )
    hangame = combination_position("3S 4S 5S 6S 7S 8S 9S", straight_flush_multiplier=8)
    result = ended(play(hangame, 0, Declare(Combination.STRAIGHT_FLUSH))[1])
    assert payments(result.settlement) == {(2, 0): 8, (1, 0): 16}
    assert factors(result.settlement, 1) == [("rank", 2), ("straight_flush_multiplier", 8)]
    # Exactly the seven cards in one run of one suit (wrapping where ace_wrap allows it).
    refused(
        GAME,
        combination_position("3S 4S 5S 6S 7S 8S TS", straight_flush_multiplier=8),
        0,
        Declare(Combination.STRAIGHT_FLUSH),
        "NOT_STRAIGHT_FLUSH",
    )
    assert Declare(Combination.STRAIGHT_FLUSH) in moves.legal_commands(
        combination_position("JS QS KS AS 2S 3S 4S", straight_flush_multiplier=8), 0
    )


def test_no_combinations_in_a_two_player_round_by_default() -> None:
    state = position(["7S 7H 7D 7C 2S 3S 4S", "9C 8D"])
    refused(GAME, state, 0, Declare(Combination.FOUR_SEVENS), "NO_COMBINATIONS_WITH_TWO")


# --- §1.5.4 stock out -------------------------------------------------------------------------


def stock_out_position(**options: object):
    return position(
        ["2C 5D", "9C", "3H"],
        rules=korean(**options),
        stock="",
        discards="KS QS",
        phase=Phase.PLAY,
        melded=[True, True, True],
    )


def test_stock_out_ends_the_round_after_the_turn_lowest_hand_wins() -> None:
    result = ended(play(stock_out_position(), 0, Discard("5D"))[1])
    assert (result.outcome, result.winners) == ("STOCK_OUT", (0,))
    assert payments(result.settlement) == {(2, 0): 1, (1, 0): 2}


def test_reshuffle_discards_rebuilds_the_stock_from_the_seed() -> None:
    after, events = play(stock_out_position(reshuffle_discards=True), 0, Discard("5D"))
    assert isinstance(events[-1], StockReshuffled)
    assert sorted(after.stock) == ["KS", "QS"] and after.discards == ("5D",)
    assert after.turn == 1 and after.phase is Phase.TAKE
    again, _ = play(stock_out_position(reshuffle_discards=True), 0, Discard("5D"))
    assert again.stock == after.stock  # deterministic from the seeds


def test_reshuffles_are_bounded() -> None:
    state = dataclasses.replace(
        stock_out_position(reshuffle_discards=True, max_reshuffles=1), reshuffles=1
    )
    assert ended(play(state, 0, Discard("5D"))[1]).outcome == "STOCK_OUT"


# --- §1.6 penalties before the first turn -----------------------------------------------------


def test_korean_waives_every_penalty_for_a_loser_whose_first_turn_never_came() -> None:
    state = dataclasses.replace(
        plain_win_position(),
        hands=(("4D",), ("2S", "3H"), ("7S", "2D"), ("KS", "7C")),
        turns_started=(2, 2, 2, 0),
    )
    s = ended(play(state, 0, Discard("4D"))[1]).settlement
    # Seat 3 (unmelded, a 7) pays its rank only and ranks by hand value: (13 + 7) × 2 = 40.
    assert factors(s, 3) == [("rank", 3)]
    assert payments(s) == {(1, 0): 1, (2, 0): 4, (3, 0): 3}


def test_international_keeps_the_seven_penalty_before_the_first_turn() -> None:
    rules = PRESETS["international"]
    assert rules.penalties_before_first_turn == (Penalty.SEVEN,)
    state = dataclasses.replace(
        plain_win_position(),
        rules=rules,
        hands=(("4D",), ("2S", "3H"), ("7S", "2D"), ("KS", "7C")),
        turns_started=(2, 2, 2, 0),
    )
    s = ended(play(state, 0, Discard("4D"))[1]).settlement
    assert factors(s, 3) == [("rank", 3), ("seven_multiplier", 2)]


# --- rule sets --------------------------------------------------------------------------------


def test_presets_and_overrides() -> None:
    assert rules_for("", {}, 3) == KOREAN
    assert rules_for("korean", {"ace_wrap": False}, 3).ace_wrap is False
    international = rules_for("international", {}, 3)
    assert (international.hoola_multiplier, international.low_hand_max) == (2, 14)


@pytest.mark.parametrize(
    ("preset", "overrides", "seats", "field"),
    [
        ("nope", {}, 3, "preset"),
        ("korean", {}, 6, "seats"),
        ("korean", {}, 1, "seats"),
        ("korean", {"no_such": 1}, 3, "no_such"),
        ("korean", {"hoola_multiplier": 0}, 3, "hoola_multiplier"),
        ("korean", {"jokers": 3}, 3, "jokers"),
        ("korean", {"ace_low_only": True}, 3, "ace_low_only"),
    ],
)
def test_invalid_rule_sets_name_the_option(
    preset: str, overrides: dict, seats: int, field: str
) -> None:
    from croupier.engine.game import InvalidRules

    with pytest.raises(InvalidRules) as info:
        rules_for(preset, overrides, seats)
    assert info.value.field == field


def test_ace_low_only_on_a_wrapping_preset_says_what_to_override() -> None:
    """The korean preset wraps aces: a studio that adds ace_low_only is told to turn ace_wrap off
    too, and the two overrides together are a playable rule set."""
    from croupier.engine.game import InvalidRules

    with pytest.raises(InvalidRules) as info:
        rules_for("korean", {"ace_low_only": True}, 3)
    assert info.value.reason == "INVALID_OPTION" and "ace_wrap to false" in str(info.value)
    assert rules_for("korean", {"ace_low_only": True, "ace_wrap": False}, 3).ace_low_only


def test_nothing_is_legal_after_a_one_round_table() -> None:
    state = stop_position("AS 2S 3D", "9C 8D", "TC 2H", rounds=1)
    after, events = play(state, 0, Stop())
    assert isinstance(events[-1], TableClosed) and after.phase is Phase.TABLE_CLOSED
    assert all(moves.legal_commands(after, s) == [] for s in range(3))
    refused(GAME, after, 0, Draw(), "TABLE_CLOSED")


# --- §1.8 tables ------------------------------------------------------------------------------


def test_between_rounds_any_seat_deals_the_next_round_or_closes() -> None:
    state = stop_position("AS 2S 3D", "9C 8D", "TC 2H", rounds=0)
    over, events = play(state, 0, Stop())
    assert over.phase is Phase.ROUND_OVER and not isinstance(events[-1], TableClosed)
    for seat in range(3):
        assert moves.legal_commands(over, seat) == [NextRound(), CloseTable(), LeaveTable()]
    refused(GAME, over, 1, Draw(), "ROUND_OVER")
    refused(GAME, state, 1, NextRound(), "ROUND_IN_PLAY")
    second, (dealt,) = play(over, 2, NextRound())
    # The winner deals; balances come along in the deal; the deck is the round-2 derivation.
    assert isinstance(dealt, RoundDealt) and (dealt.round, dealt.dealer) == (2, 0)
    assert dealt.balances == over.scores == (3, -2, -1)
    assert dealt.hands == deal(over.rules, 3, SEEDS, 2, 0).hands
    assert (second.phase, second.turn, second.scores) == (Phase.TAKE, 0, (3, -2, -1))
    closed, (event,) = play(over, 1, CloseTable())
    assert closed.phase is Phase.TABLE_CLOSED
    assert payments(event.settlement) == {(1, 0): 2, (2, 0): 1}
    assert event.settlement.net == (3, -2, -1) and event.settlement.outcome == "TABLE_CLOSED"


def test_a_table_of_n_rounds_closes_itself() -> None:
    state = dataclasses.replace(stop_position("AS 2S 3D", "9C 8D", "TC 2H", rounds=2), round=2)
    after, events = play(state, 0, Stop())
    assert isinstance(events[-1], TableClosed) and after.phase is Phase.TABLE_CLOSED


@pytest.mark.parametrize(
    ("streak", "hoola", "multiplier"),
    [
        (0, True, 2),
        (1, True, 4),
        (2, True, 1),
        (3, True, 2),  # Winjoy [2, 4, 1], wrapping
        (0, False, 1),
        (2, False, 1),  # a round without a Hoola resets
    ],
)
def test_the_stake_after_a_hoola_follows_the_cycle(
    streak: int, hoola: bool, multiplier: int
) -> None:
    rules = korean(rounds=0, hoola_table_multiplier=(2, 4, 1))
    if hoola:
        state = hoola_position(
            "3H 4H 5H 9S 9D 9C KC", "6H 2H", rounds=0, hoola_table_multiplier=(2, 4, 1)
        )
        over, _ = play(
            state,
            0,
            Draw(),
            Meld(("3H", "4H", "5H", "6H")),
            Meld(("9S", "9D", "9C")),
            Discard("KC"),
        )
    else:
        over, _ = play(
            stop_position("AS 2S 3D", "9C 8D", "TC 2H", rounds=0, hoola_table_multiplier=(2, 4, 1)),
            0,
            Stop(),
        )
    over = dataclasses.replace(over, hoola_streak=streak, rules=rules)
    nxt, (dealt,) = play(over, 0, NextRound())
    assert dealt.table_multiplier == multiplier and nxt.table_multiplier == multiplier
    assert dealt.hoola_streak == (streak + 1 if hoola else 0)


def test_the_table_multiplier_is_a_named_factor() -> None:
    state = dataclasses.replace(
        stop_position("AS 2S 3D", "9C 8D", "TC 2H"), table_multiplier=4, hoola_streak=2
    )
    s = ended(play(state, 0, Stop())[1]).settlement
    assert payments(s) == {(2, 0): 4, (1, 0): 8}
    assert factors(s, 1) == [("rank", 2), ("table_multiplier", 4)]


# --- jokers (docs/rules/hoola.md §1.3, §1.4, §1.6) -------------------------------------------------------


def test_a_meld_names_its_jokers_and_the_legal_list_offers_every_reading() -> None:
    state = position(["5H 6H JK1 9C", "4D 5D", "AS 2H"], rules=korean(jokers=1), phase=Phase.PLAY)
    legal = moves.legal_commands(state, 0)
    readings = {m.jokers for m in legal if isinstance(m, Meld) and m.cards == ("5H", "6H", "JK1")}
    assert readings == {(JokerAs("JK1", "7H"),), (JokerAs("JK1", "4H"),)}
    _, events = play(state, 0, Meld(("JK1", "5H", "6H"), (JokerAs("JK1", "4H"),)))
    assert events[0].meld.cards == ("JK1", "5H", "6H") and events[0].meld.jokers == (
        JokerAs("JK1", "4H"),
    )
    _, events = play(state, 0, Meld(("JK1", "5H", "6H")))  # unnamed: the high end
    assert events[0].meld.jokers == (JokerAs("JK1", "7H"),)
    # A name that contradicts the meld is malformed (INVALID_ARGUMENT), docs/rules/hoola.md §1.3.
    refused(
        GAME,
        state,
        0,
        Meld(("JK1", "5H", "6H"), (JokerAs("JK1", "9H"),)),
        "JOKER_CONTRADICTS",
        error=MalformedCommand,
    )
    with pytest.raises(MalformedCommand):
        moves.validate(state, 0, Meld(("5H", "6H", "JK1"), (JokerAs("JK2", "7H"),)))


def test_a_joker_laid_off_alone_needs_the_option() -> None:
    state = position(
        ["JK1 9C", "4D 5D", "AS 2H"],
        rules=korean(jokers=1),
        phase=Phase.PLAY,
        melds=[(1, "5H 6H 7H")],
        melded=[True, False, False],
    )
    _, events = play(state, 0, LayOff(1, ("JK1",)))
    assert events[0].meld.jokers == (JokerAs("JK1", "8H"),)
    off = dataclasses.replace(state, rules=korean(jokers=1, joker_lay_off_alone=False))
    refused(GAME, off, 0, LayOff(1, ("JK1",)), "JOKER_LAY_OFF_ALONE_OFF")


def test_jokers_held_multiply_the_losers_payment() -> None:
    rules = korean(jokers=2, joker_value=0)
    state = position(
        ["4D", "2S 3H", "JK1 2D", "KS"],
        rules=rules,
        phase=Phase.PLAY,
        melded=[True, True, True, True],
        this_turn=Turn(start_hand=("4D",), melded_before=True, drawn="4D"),
    )
    s = ended(play(state, 0, Discard("4D"))[1]).settlement
    # Seat 2's hand is (0 + 2) × 3 = 6: second; pays 2 × joker_multiplier 3.
    assert factors(s, 2) == [("rank", 2), ("joker_multiplier", 3)]
    assert payments(s) == {(1, 0): 1, (2, 0): 6, (3, 0): 3}


def test_a_joker_never_stands_in_for_a_seven_in_four_sevens() -> None:
    state = combination_position("7S 7H 7D JK1 2S 3S 4S", jokers=1)
    refused(GAME, state, 0, Declare(Combination.FOUR_SEVENS), "NOT_FOUR_SEVENS")


# --- §1.7 battle Hoola ------------------------------------------------------------------------


def battle_position(**options: object):
    """Seat 0 just discarded 7H; seat 1 is to act; seat 2 could meld the 7H."""
    rules = korean(out_of_turn_thank_you=True, **options)
    return position(
        ["2C 3C", "4D 5D KS", "8H 9H 2S 3S 4S 5S 6S"],
        rules=rules,
        turn=1,
        discards="QC 7H",
        top_discarder=0,
        turns_started=(3, 3, 2),
    )


def test_any_seat_may_claim_a_discard_out_of_turn_and_play_goes_on_from_it() -> None:
    state = battle_position()
    assert ThankYou(("8H", "9H"), ()) in moves.legal_commands(state, 2)
    after, events = play(state, 2, ThankYou(("8H", "9H")))
    assert isinstance(events[0], DiscardTaken) and events[0].discarder == 0
    assert (after.turn, after.phase) == (2, Phase.PLAY)
    # Seat 1 is skipped: its turn never began; seat 2's did.
    assert after.turns_started == (3, 2, 3)
    refused(GAME, after, 1, Draw(), "NOT_YOUR_TURN")


def test_a_claim_that_wins_the_round_makes_the_discarder_liable() -> None:
    state = battle_position()
    state = dataclasses.replace(
        state,
        hands=(("2C", "3C"), ("4D", "5D", "KS"), ("8H", "9H", "2S")),
        melded=(True, True, True),
    )
    result = ended(play(state, 2, ThankYou(("8H", "9H")), Discard("2S"))[1])
    assert result.winners == (2,) and [line.payer for line in result.settlement.lines] == [0]


def test_claims_close_with_the_next_take_and_never_come_from_the_discarder() -> None:
    state = battle_position()
    drawn, _ = play(state, 1, Draw())
    refused(GAME, drawn, 2, ThankYou(("8H", "9H")), "NOT_YOUR_TURN")
    assert moves.legal_commands(drawn, 2) == []
    refused(
        GAME,
        dataclasses.replace(state, hands=(("8H", "9H"), ("4D",), ("2S",))),
        0,
        ThankYou(("8H", "9H")),
        "NOT_YOUR_TURN",
    )
    # The first up-card has no discarder: only the dealer may take it.
    refused(
        GAME,
        dataclasses.replace(state, top_discarder=None),
        2,
        ThankYou(("8H", "9H")),
        "NOT_YOUR_TURN",
    )
    # Without the option a thank-you is the next player's alone.
    refused(
        GAME, dataclasses.replace(state, rules=KOREAN), 2, ThankYou(("8H", "9H")), "NOT_YOUR_TURN"
    )


def test_claims_must_meld_at_once_like_any_thank_you() -> None:
    refused(GAME, battle_position(), 2, ThankYou(("2S", "3S")), "THANK_YOU_NOT_MELDABLE")


def nearest_position():
    """Four seats: seat 0 discarded 7H, seat 1 is to act, seats 2 and 3 can both meld the 7H."""
    rules = korean(
        out_of_turn_thank_you=True,
        claim_priority=ClaimPriority.NEAREST_IN_TURN,
        claim_window_ms=3000,
    )
    return position(
        ["2C 3C", "4D 5D KS", "8H 9H 2S 3S", "7S 7D 4C"],
        rules=rules,
        turn=1,
        discards="QC 7H",
        top_discarder=0,
        turns_started=(3, 3, 2, 2),
    )


def play_at(state, seat, command, now_ms: int):
    events = moves.decide(state, seat, command, Context(SEEDS, now_ms))
    for event in events:
        state = evolve(state, event)
    return state, events


def test_nearest_in_turn_claims_wait_for_the_window_and_the_nearest_wins() -> None:
    state = nearest_position()
    assert GAME.next_deadline(state) is None  # no claim: no timer
    state, events = play_at(state, 3, ThankYou(("7S", "7D")), 1000)  # the farther seat first
    assert isinstance(events[0], ClaimMade) and state.claim_window_end_ms == 4000
    assert GAME.next_deadline(state) == 4000  # the window's close
    state, _ = play_at(state, 2, ThankYou(("8H", "9H")), 1500)
    refused(GAME, state, 3, ThankYou(("7S", "7D")), "NOT_YOUR_TURN")  # one claim each
    with pytest.raises(IllegalCommand) as info:  # the window blocks seat 1
        play_at(state, 1, Draw(), 2000)
    assert info.value.reason == "CLAIM_WINDOW_OPEN"
    assert Draw() not in moves.legal_commands(state, 1)
    # After the window any command records the award first: seat 2 is nearest after seat 0.
    assert [type(e) for e in moves.advance(state, 3999)] == []
    awarded, events = play_at(state, 2, Discard("2S"), 4000)
    assert isinstance(events[0], DiscardTaken) and events[0].seat == 2
    assert events[0].meld.cards == ("7H", "8H", "9H") and isinstance(events[1], CardDiscarded)
    assert awarded.turn == 3 and awarded.claims == ()
    # A refused command records nothing, and the award is the same whenever it is recorded.
    with pytest.raises(IllegalCommand):
        play_at(state, 1, Draw(), 5000)
    assert moves.advance(state, 9000) == moves.advance(state, 4000)


def test_the_next_player_may_still_take_it_at_once_being_nearest() -> None:
    state = dataclasses.replace(
        nearest_position(),
        hands=(("2C", "3C"), ("6H", "8H", "KS"), ("9H", "2S", "3S"), ("7S", "7D", "4C")),
    )
    state, _ = play_at(state, 3, ThankYou(("7S", "7D")), 1000)
    taken, events = play_at(state, 1, ThankYou(("6H", "8H")), 1200)
    assert isinstance(events[0], DiscardTaken) and events[0].seat == 1
    assert taken.claims == () and taken.turn == 1 and taken.phase is Phase.PLAY
