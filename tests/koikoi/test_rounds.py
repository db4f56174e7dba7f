"""Scripted Koi-Koi turns and rounds: every capture case, the decision, the score, the deal."""

from __future__ import annotations

import dataclasses

import pytest
from game_invariants import refused
from hypothesis import given
from hypothesis import strategies as st

from croupier.engine.game import InvalidRules, fold
from croupier.engine.koikoi import KoiKoiGame, moves
from croupier.engine.koikoi.cards import deck, month
from croupier.engine.koikoi.deal import deal, first_dealer, four_of_a_month
from croupier.engine.koikoi.events import (
    CaptureChosen,
    CardPlayed,
    CardTurned,
    ChooseCapture,
    Hand,
    KoiKoi,
    KoiKoiCalled,
    MatchEnded,
    NextRound,
    PlayCard,
    RoundDealt,
    RoundEnded,
    Shobu,
    ShobuCalled,
    YakuFormed,
)
from croupier.engine.koikoi.rules import NINTENDO, rules_for
from croupier.engine.koikoi.scoring import (
    NO_YAKU,
    KoiKoiOutcome,
    match_settlement,
    round_ended,
    score_factors,
)
from croupier.engine.koikoi.state import Phase
from croupier.engine.settlement import Factor, amount_of
from croupier.engine.shuffle import Seeds, shuffled

from .helpers import SEEDS, play, position

GAME = KoiKoiGame()


def lines(settlement) -> list[tuple[int, int, int, list[tuple[str, int, bool]]]]:
    return [
        (line.payer, line.payee, line.amount, [(f.name, f.value, f.added) for f in line.factors])
        for line in settlement.lines
    ]


# --- step 1: the hand card --------------------------------------------------------------------
# Stock top "12C3" matches nothing on these fields, so step 2 only adds it to the field.

HANDS = ("1B 3B 2A", "4A 5A 6A")


def test_no_match_the_card_joins_the_field() -> None:
    state = position(HANDS, "2R 4R", "12C3")
    assert GAME.label(state, PlayCard("1B")) == "Play Pine crane to the field"
    state, events = play(state, 0, PlayCard("1B"))
    assert events == [CardPlayed(0, "1B", ()), CardTurned(0, "12C3", ())]
    assert state.field == ("2R", "4R", "1B", "12C3") and state.captured[0] == ()
    assert (state.turn, state.phase) == (1, Phase.PLAY)


def test_one_match_captures_it() -> None:
    state = position(HANDS, "1R 4R", "12C3")
    assert GAME.label(state, PlayCard("1B")) == "Play Pine crane, capture Pine poetry ribbon"
    refused(GAME, state, 0, PlayCard("1B", "1R"), "NO_CAPTURE_CHOICE")
    state, events = play(state, 0, PlayCard("1B"))
    assert events[0] == CardPlayed(0, "1B", ("1R",))
    assert sorted(state.captured[0]) == ["1B", "1R"] and state.field == ("4R", "12C3")


def test_two_matches_the_player_names_the_capture() -> None:
    state = position(HANDS, "3R 3C1 4R", "12C3")
    assert [c for c in moves.legal_commands(state, 0) if c.card == "3B"] == [
        PlayCard("3B", "3R"),
        PlayCard("3B", "3C1"),
    ]
    assert (
        GAME.label(state, PlayCard("3B", "3R"))
        == "Play Cherry curtain, capture Cherry poetry ribbon"
    )
    refused(GAME, state, 0, PlayCard("3B"), "CHOOSE_CAPTURE")
    refused(GAME, state, 0, PlayCard("3B", "4R"), "CAPTURE_NOT_MATCHING")
    state, events = play(state, 0, PlayCard("3B", "3C1"))
    assert events[0] == CardPlayed(0, "3B", ("3C1",))
    assert state.field == ("3R", "4R", "12C3")


def test_three_matches_take_all_four() -> None:
    state = position(HANDS, "1R 1C1 1C2 4R", "12C3")
    assert GAME.label(state, PlayCard("1B")).startswith("Play Pine crane, capture all three")
    refused(GAME, state, 0, PlayCard("1B", "1R"), "NO_CAPTURE_CHOICE")
    state, events = play(state, 0, PlayCard("1B"))
    assert events[0] == CardPlayed(0, "1B", ("1R", "1C1", "1C2"))
    assert sorted(state.captured[0]) == sorted(["1B", "1R", "1C1", "1C2"])


# --- step 2: the turned card ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "captured"),
    [("4R 12C1", ()), ("4R 5R", ("5R",)), ("5R 5C1 5C2 4R", ("5R", "5C1", "5C2"))],
)
def test_the_turned_card_captures_like_a_played_one(field: str, captured: tuple) -> None:
    state = position(HANDS, field, "5A 12C3")
    state, events = play(state, 0, PlayCard("2A"))
    assert events[1] == CardTurned(0, "5A", captured)
    assert ("5A" in state.field) == (not captured)


def test_two_matches_for_the_turned_card_wait_for_the_players_choice() -> None:
    state = position(HANDS, "5R 5C1 4R", "5C2 12C3")
    state, events = play(state, 0, PlayCard("2A"))
    assert events == [CardPlayed(0, "2A", ()), CardTurned(0, "5C2", (), awaiting_choice=True)]
    assert (state.phase, state.turn, state.turned) == (Phase.CHOOSE_CAPTURE, 0, "5C2")
    assert moves.legal_commands(state, 0) == [ChooseCapture("5R"), ChooseCapture("5C1")]
    assert moves.legal_commands(state, 1) == []
    assert GAME.label(state, ChooseCapture("5R")) == "Capture Iris red ribbon with Iris chaff 2"
    refused(GAME, state, 0, PlayCard("1B"), "CHOOSE_CAPTURE_FIRST")
    refused(GAME, state, 0, ChooseCapture("4R"), "CAPTURE_NOT_MATCHING")
    refused(GAME, state, 1, ChooseCapture("5R"), "NOT_YOUR_TURN")
    state, events = play(state, 0, ChooseCapture("5R"))
    assert events == [CaptureChosen(0, "5C2", ("5R",))]
    assert sorted(state.captured[0]) == ["5C2", "5R"] and state.turn == 1


def test_malformed_and_out_of_turn_commands() -> None:
    state = position(HANDS, "4R")
    refused(GAME, state, 0, PlayCard("ZZ"), "UNKNOWN_CARD")
    refused(GAME, state, 0, PlayCard("1B", "nope"), "UNKNOWN_CARD")
    refused(GAME, state, 1, PlayCard("4A"), "NOT_YOUR_TURN")
    refused(GAME, state, 0, PlayCard("4A"), "CARD_NOT_IN_HAND")
    refused(GAME, state, 0, KoiKoi(), "PLAY_A_CARD")
    refused(GAME, state, 0, NextRound(), "ROUND_IN_PLAY")


# --- the decision -----------------------------------------------------------------------------

# Seat 0 holds two brights of Sanko; playing the phoenix onto the paulownia chaff forms it.
SANKO = {
    "hands": ("12B 2A 4C1", "4A 6A 7C1"),
    "field": "12C1 4R",
    "stock": "10C1 10C2 11C1 9C1",
    "captured": ("1B 3B", ""),
}


def sanko_formed():
    state = position(SANKO["hands"], SANKO["field"], SANKO["stock"], captured=SANKO["captured"])
    return play(state, 0, PlayCard("12B"))


def test_a_formed_yaku_asks_koi_koi_or_shobu() -> None:
    state, events = sanko_formed()
    assert isinstance(events[-1], YakuFormed) and events[-1].points == 5
    assert (state.phase, state.turn) == (Phase.DECIDE, 0)
    assert moves.legal_commands(state, 0) == [KoiKoi(), Shobu()]
    refused(GAME, state, 0, PlayCard("2A"), "DECIDE_FIRST")
    state, events = play(state, 0, Shobu())
    assert isinstance(events[0], ShobuCalled) and isinstance(events[1], RoundEnded)
    end = events[1]
    assert (end.outcome, end.winner, end.points, end.totals) == ("SHOBU", 0, 5, (5, 0))
    assert lines(end.settlement) == [(1, 0, 5, [("sanko", 5, True)])]
    assert state.phase is Phase.ROUND_OVER


def test_no_decision_without_a_new_or_raised_yaku() -> None:
    state = position(("2A 4C1", "4A 6A"), "2C1", "10C1 10C2", captured=("1B 3B 12B", ""))
    state, events = play(state, 0, PlayCard("2A"))
    assert not any(isinstance(e, YakuFormed) for e in events) and state.turn == 1


def test_after_koi_koi_the_next_yaku_by_either_player_ends_the_round() -> None:
    state, _ = sanko_formed()
    state, events = play(state, 0, KoiKoi())
    assert events == [KoiKoiCalled(0)] and (state.turn, state.phase, state.koi_koi_by) == (
        1,
        Phase.PLAY,
        0,
    )
    # The opponent completes Inoshikacho: the round ends at once, doubled for the koi-koi.
    state = dataclasses.replace(
        state,
        captured=(state.captured[0], ("7A", "10A")),
        turn_start=("7A", "10A"),
        field=state.field + ("6R",),
    )
    state, events = play(state, 1, PlayCard("6A"))
    end = events[-1]
    assert isinstance(events[-2], YakuFormed) and isinstance(end, RoundEnded)
    assert (end.outcome, end.winner, end.points) == ("WON_AFTER_KOI_KOI", 1, 10)
    assert lines(end.settlement) == [
        (0, 1, 10, [("inoshikacho", 5, True), ("koi_koi_multiplier", 2, False)])
    ]


def test_the_caller_who_raises_after_koi_koi_wins_undoubled_by_it() -> None:
    state, _ = sanko_formed()
    state, _ = play(state, 0, KoiKoi())
    state, _ = play(state, 1, PlayCard("7C1"))
    # Seat 0 takes the full moon: Sanko becomes Shiko, 8, doubled only for being 7 or more.
    state = dataclasses.replace(
        state, field=state.field + ("8B",), hands=(("8C1", "4C1"), state.hands[1])
    )
    state, events = play(state, 0, PlayCard("8C1"))
    end = events[-1]
    assert (end.outcome, end.winner, end.points) == ("WON_AFTER_KOI_KOI", 0, 16)
    assert lines(end.settlement) == [(1, 0, 16, [("shiko", 8, True), ("double_from", 2, False)])]


def test_on_the_last_turn_a_yaku_wins_at_once_and_otherwise_the_round_is_drawn() -> None:
    last = position(("", "12B"), "12C1", "10C1", captured=("", "1B 3B"), turn=1)
    state, events = play(last, 1, PlayCard("12B"))
    assert [type(e) for e in events][-2:] == [YakuFormed, RoundEnded]
    assert (events[-1].outcome, events[-1].winner) == ("LAST_TURN_SHOBU", 1)
    state, events = play(dataclasses.replace(last, captured=((), ())), 1, PlayCard("12B"))
    end = events[-1]
    assert (end.outcome, end.winner, end.points, end.settlement.lines) == ("DRAWN", None, 0, ())
    # After a drawn round the dealer alternates; after a won one the winner deals.
    state, events = play(state, 0, NextRound())
    assert isinstance(events[0], RoundDealt) and events[0].dealer == 1 and events[0].round == 2


def test_the_winner_deals_the_next_round() -> None:
    state, _ = sanko_formed()
    state = dataclasses.replace(state, dealer=1)
    state, _ = play(state, 0, Shobu())
    state, events = play(state, 1, NextRound())
    assert events[0].dealer == 0 and events[0].totals == (5, 0)


# --- the round score (docs/rules/koikoi.md §2.6, worked examples) -----------------------------------------

SANKO_TAN = "1B 3B 12B 1R 4R 5R 7R 11R"


@pytest.mark.parametrize(
    ("pile", "koi_koi_by", "points", "factors"),
    [
        (SANKO_TAN, None, 6, [("sanko", 5, True), ("tan", 1, True)]),
        (
            SANKO_TAN + " 6R",
            None,
            14,
            [("sanko", 5, True), ("tan", 2, True), ("double_from", 2, False)],
        ),
        (
            SANKO_TAN + " 6R",
            1,
            28,
            [
                ("sanko", 5, True),
                ("tan", 2, True),
                ("double_from", 2, False),
                ("koi_koi_multiplier", 2, False),
            ],
        ),
        (SANKO_TAN, 0, 6, [("sanko", 5, True), ("tan", 1, True)]),
    ],
)
def test_round_score(pile: str, koi_koi_by: int | None, points: int, factors: list) -> None:
    state = position(("", ""), "", captured=(pile, ""), koi_koi_by=koi_koi_by)
    end = round_ended(state, 0, KoiKoiOutcome.SHOBU)
    assert end.points == points and end.totals == (points, 0)
    assert lines(end.settlement) == [(1, 0, points, factors)]


@pytest.mark.parametrize("double_from", [0, 7])
@pytest.mark.parametrize("koi_koi_multiplier", [2, 5])
def test_a_pile_with_no_yaku_is_worth_0_whatever_the_multipliers(
    double_from: int, koi_koi_multiplier: int
) -> None:
    """docs/rules/koikoi.md §2.6: a round score multiplies the yaku's total, so a pile with no yaku
    scores 0 even when the loser called koi-koi (the settlement's itemized amount must not take
    the first multiplier for the amount)."""
    rules = dataclasses.replace(
        NINTENDO, double_from=double_from, koi_koi_multiplier=koi_koi_multiplier
    )
    state = position(("", ""), "", captured=("1C1 2C1", ""), koi_koi_by=1, rules=rules)
    end = round_ended(state, 0, KoiKoiOutcome.SHOBU, found=())
    assert end.points == 0 and end.totals == (0, 0)
    assert [line.amount for line in end.settlement.lines] in ([], [0])
    factors = score_factors(state, 0, ())
    assert factors[0] == Factor(NO_YAKU, 0, "no yaku in the captured pile", added=True)
    assert ("koi_koi_multiplier", koi_koi_multiplier) in [(f.name, f.value) for f in factors]
    assert amount_of(tuple(factors)) == 0


def test_stake_per_point_multiplies_the_payment_not_the_points() -> None:
    state = position(
        ("", ""),
        "",
        captured=(SANKO_TAN, ""),
        rules=dataclasses.replace(NINTENDO, stake_per_point=10),
    )
    end = round_ended(state, 0, KoiKoiOutcome.SHOBU)
    assert end.points == 6 and end.settlement.lines[0].amount == 60
    assert end.settlement.lines[0].factors[-1].name == "stake_per_point"


# --- the deal ---------------------------------------------------------------------------------


@given(st.binary(min_size=32, max_size=32))
def test_the_first_dealer_turned_the_earlier_month(seed: bytes) -> None:
    seeds = Seeds(seed)
    dealer, draws = first_dealer(seeds)
    pairs = [draws[k : k + 2] for k in range(0, len(draws), 2)]
    assert all(month(a.card) == month(b.card) for a, b in pairs[:-1])
    a, b = pairs[-1]
    assert (a.seat, b.seat) == (0, 1) and month(a.card) != month(b.card)
    assert dealer == (0 if month(a.card) < month(b.card) else 1)
    dealt = deal(seeds, 1, None)
    assert dealt.dealer == dealer and dealt.dealer_draws == draws
    assert [len(h.cards) for h in dealt.hands] == [8, 8] and len(dealt.field) == 8
    assert len(dealt.stock) == 24 and not four_of_a_month(dealt.field)


def test_a_field_with_four_of_a_month_is_redealt_from_the_seed() -> None:
    for n in range(5000):
        seeds = Seeds(b"\x07" * 32, (str(n),))
        dealt = deal(seeds, 3, 0)
        if dealt.redeals:
            break
    else:
        raise AssertionError("no redeal in 5000 deals (about one in 230 needs one)")
    first = shuffled(deck(), seeds, 3, "deal")
    assert four_of_a_month(first[16:24])
    again = shuffled(deck(), seeds, 3, f"redeal-{dealt.redeals}")
    assert dealt.field == again[16:24] and dealt.hands[0].cards == again[:8]


def dealt_with(hands: tuple[str, str], dealer: int = 0) -> list:
    state = fold(GAME, GAME.start(NINTENDO, 2, SEEDS)[:1])
    event = RoundDealt(
        1,
        dealer,
        tuple(Hand(s, tuple(h.split()), 8) for s, h in enumerate(hands)),
        ("9A", "9R", "10A", "10R", "11A", "11R", "12B", "12C1"),
        (),
        0,
        (0, 0),
    )
    return moves.dealt(state, event)


def test_hand_yaku_end_the_round_at_once_the_dealers_first() -> None:
    teshi = "1B 1R 1C1 1C2 2A 3B 4A 5A"
    kuttsuki = "2R 2C1 3R 3C1 4R 4C1 5R 5C1"
    plain = "6A 6R 7A 7R 8A 8B 6C1 7C1"
    events = dealt_with((plain, kuttsuki), dealer=0)
    end = events[1]
    assert (end.outcome, end.winner, end.points) == ("KUTTSUKI", 1, 6)
    assert lines(end.settlement) == [(0, 1, 6, [("kuttsuki", 6, True)])]
    assert end.hands[1].cards == tuple(kuttsuki.split())  # the proof is shown
    events = dealt_with((teshi, kuttsuki), dealer=1)
    assert (events[1].outcome, events[1].winner) == ("KUTTSUKI", 1)
    events = dealt_with((teshi, kuttsuki), dealer=0)
    assert (events[1].outcome, events[1].winner) == ("TESHI", 0)
    assert len(dealt_with((plain, plain.replace("6C1", "9C1")))) == 1


def test_the_match_ends_after_its_last_round_and_settles_the_difference() -> None:
    rules = dataclasses.replace(NINTENDO, rounds=3)
    state, _ = sanko_formed()
    state = dataclasses.replace(state, rules=rules, round=3, totals=(2, 4))
    state, events = play(state, 0, Shobu())
    ended = events[-1]
    assert (
        isinstance(ended, MatchEnded) and ended.totals == (7, 4) and state.phase is Phase.MATCH_OVER
    )
    assert lines(ended.settlement) == [(1, 0, 3, [("point_difference", 3, False)])]
    refused(GAME, state, 0, NextRound(), "MATCH_OVER")
    drawn = dataclasses.replace(state, totals=(4, 4))
    assert match_settlement(drawn).outcome == "MATCH_DRAWN" and match_settlement(drawn).lines == ()


def test_start_deals_round_one() -> None:
    events = GAME.start(NINTENDO, 2, SEEDS)
    state = fold(GAME, events)
    assert state.round == 1 and state.turn == state.dealer
    with pytest.raises(InvalidRules) as info:
        GAME.start(NINTENDO, 3, SEEDS)
    assert info.value.field == "seats"


def test_rounds_outside_its_choices_names_them_and_the_value() -> None:
    with pytest.raises(InvalidRules) as info:
        rules_for("nintendo", {"rounds": 4}, 2)
    assert (info.value.reason, info.value.field) == ("INVALID_OPTION", "rounds")
    assert str(info.value) == "option rounds: 12, 6 or 3, not 4"
