"""Scripted Gin Rummy hands: the first upcard, every way a hand ends, the wall, the match."""

from __future__ import annotations

import dataclasses

import pytest
from game_invariants import refused
from hypothesis import given
from hypothesis import strategies as st

from croupier.engine.cards import rank
from croupier.engine.game import CommandError, InvalidRules, MalformedCommand, fold
from croupier.engine.gin import GinGame, moves
from croupier.engine.gin.deal import deal, first_dealer
from croupier.engine.gin.events import (
    CardDrawn,
    Discard,
    DrawDiscard,
    DrawStock,
    EndLayOffs,
    HandEnded,
    Knock,
    Knocked,
    KnockMeld,
    LayOff,
    LayOffsEnded,
    MatchEnded,
    NextHand,
    Pass,
    UpcardPassed,
)
from croupier.engine.gin.rules import STANDARD, rules_for
from croupier.engine.gin.state import Phase
from croupier.engine.meld_solver import Meld
from croupier.engine.shuffle import Seeds

from .helpers import play, position

GAME = GinGame()


def lines(settlement) -> list[tuple[int, int, int, list[tuple[str, int, bool]]]]:
    return [
        (line.payer, line.payee, line.amount, [(f.name, f.value, f.added) for f in line.factors])
        for line in settlement.lines
    ]


# --- the first upcard -------------------------------------------------------------------------


def first_upcard():
    return position(
        ("AS 2S 3S 4H 5H 6H 9C 9D KS QD", "7C 7D 7H 2C 3C 4C TS JS QH KD"),
        "5S",
        dealer=1,
        turn=0,
        phase=Phase.FIRST_UPCARD,
    )


def test_the_non_dealer_then_the_dealer_may_take_the_upcard() -> None:
    state = first_upcard()
    assert moves.legal_commands(state, 0) == [DrawDiscard(), Pass()]
    refused(GAME, state, 0, DrawStock(), "TAKE_OR_PASS")
    refused(GAME, state, 1, Pass(), "NOT_YOUR_TURN")
    taken, events = play(state, 0, DrawDiscard())
    assert events == [CardDrawn(0, "5S", from_discard=True)] and taken.phase is Phase.DISCARD
    # The card taken from the pile may not go straight back.
    refused(GAME, taken, 0, Discard("5S"), "DISCARD_JUST_TAKEN")
    passed, events = play(state, 0, Pass())
    assert events == [UpcardPassed(0)] and (passed.turn, passed.phase) == (1, Phase.FIRST_UPCARD)
    both, _ = play(passed, 1, Pass())
    assert (both.turn, both.phase) == (0, Phase.DRAW)
    refused(GAME, both, 0, DrawDiscard(), "UPCARD_REFUSED")
    assert moves.legal_commands(both, 0) == [DrawStock()]
    after, _ = play(both, 0, DrawStock(), Discard("KS"))
    assert DrawDiscard() in moves.legal_commands(after, 1)


# --- knocking and scoring ---------------------------------------------------------------------

KNOCKER = "AS 2S 3S 4H 5H 6H 9C 9D 9H 2D KS"  # eleven cards: discard KS, deadwood 2D = 2
DEFENDER = "7C 7D 7S 3D 4D TS JS QS 7H 8H"  # 7H 8H lay off on 4H 5H 6H


def knock_position(knocker: str = KNOCKER, defender: str = DEFENDER, **options):
    rules = dataclasses.replace(STANDARD, **options)
    return position(
        (knocker, defender), "5C", "8C 9S TC JC QC", rules=rules, turn=0, phase=Phase.DISCARD
    )


def test_knock_shows_the_melds_and_the_defender_lays_off() -> None:
    state = knock_position()
    refused(GAME, state, 0, Knock("9C"), "DEADWOOD_TOO_HIGH")
    state, events = play(state, 0, Knock("KS"))
    (knocked,) = events
    assert isinstance(knocked, Knocked) and (knocked.deadwood, knocked.gin) == (2, False)
    assert knocked.deadwood_cards == ("2D",)
    assert (state.phase, state.turn) == (Phase.LAY_OFF, 1)
    run = next(i for i, m in enumerate(state.table) if m.cards[0] == "4H")
    refused(GAME, state, 1, LayOff("8H", run), "CANNOT_LAY_OFF")  # not before the 7H
    refused(GAME, state, 1, LayOff("3D", run), "CANNOT_LAY_OFF")
    refused(GAME, state, 0, EndLayOffs(), "NOT_YOUR_TURN")
    assert GAME.label(state, LayOff("7H", run)) == "Lay off Seven of hearts on 4H 5H 6H"
    state, _ = play(state, 1, LayOff("7H", run), LayOff("8H", run))
    assert state.table[run].cards == ("4H", "5H", "6H", "7H", "8H")
    refused(GAME, state, 1, LayOff("7H", run), "CARD_NOT_IN_HAND")
    state, events = play(state, 1, EndLayOffs())
    shown, end = events
    assert isinstance(shown, LayOffsEnded) and isinstance(end, HandEnded)
    assert (shown.deadwood, shown.deadwood_cards) == (7, ("3D", "4D"))
    assert (end.outcome, end.winner, end.points, end.deadwood, end.totals) == (
        "KNOCK",
        0,
        5,
        (2, 7),
        (5, 0),
    )
    assert lines(end.settlement) == [(1, 0, 5, [("deadwood_difference", 5, False)])]


def test_gin_scores_the_bonus_and_allows_no_lay_offs() -> None:
    state = knock_position("AS 2S 3S 4H 5H 6H 9C 9D 9H 9S KS")
    state, events = play(state, 0, Knock("KS"))
    knocked, shown, end = events
    assert knocked.gin and not knocked.big_gin and state.phase is Phase.HAND_OVER
    # The defender's best: the four 7s and the spade run; 8H 3D 4D left.
    assert shown.deadwood == 15 and end.outcome == "GIN" and end.points == 40
    assert lines(end.settlement) == [(1, 0, 40, [("deadwood", 15, False), ("gin_bonus", 25, True)])]


def test_undercut_and_even_counts() -> None:
    knocker = "AS 2S 3S 4H 5H 6H 9C 9D 9H 2D 8D"
    state = knock_position(knocker, "7C 7D 7S TS JS QS 2C 3C 4C AD")
    state, _ = play(
        state,
        0,
        Knock("8D"),
    )
    state, events = play(state, 1, EndLayOffs())
    end = events[-1]
    assert (end.outcome, end.winner, end.points, end.deadwood) == ("UNDERCUT", 1, 26, (2, 1))
    assert lines(end.settlement) == [
        (0, 1, 26, [("deadwood_difference", 1, False), ("undercut_bonus", 25, True)])
    ]
    even = knock_position(knocker, "7C 7D 7S TS JS QS 3C 4C 5C 2H")
    even, _ = play(even, 0, Knock("8D"))
    even, events = play(even, 1, EndLayOffs())
    end = events[-1]
    assert (end.outcome, end.winner, end.settlement.lines, end.totals) == (
        "NO_SCORE",
        None,
        (),
        (0, 0),
    )


def test_big_gin_needs_the_option_and_eleven_melded_cards() -> None:
    melded = "AS 2S 3S 4H 5H 6H 9C 9D 9H 9S 7H"
    defender = "7C 7D 7S 3D 4D TS JS QS KD 8H"
    plain = knock_position(melded, defender)
    refused(GAME, plain, 0, Knock(), "NO_BIG_GIN")
    big = rules_for("big-gin", {}, 2)
    refused(GAME, knock_position(KNOCKER, defender, big_gin_bonus=31), 0, Knock(), "NOT_BIG_GIN")
    state, events = play(dataclasses.replace(plain, rules=big), 0, Knock())
    knocked, shown, end = events
    assert knocked.big_gin and knocked.card == "" and end.outcome == "BIG_GIN"
    assert lines(end.settlement) == [
        (
            1,
            0,
            shown.deadwood + 31,
            [("deadwood", shown.deadwood, False), ("big_gin_bonus", 31, True)],
        )
    ]
    assert GAME.label(state, Knock()) == "Knock with big gin"


# --- the wall ---------------------------------------------------------------------------------


def test_at_the_wall_take_the_discard_only_to_knock_or_pass_for_a_wash() -> None:
    hand = "AS 2S 3S 4H 5H 6H 9C 9D 2D KS"
    state = position((hand, DEFENDER), "9H", "8C 9S", turn=0, phase=Phase.DRAW)
    refused(GAME, state, 0, DrawStock(), "WALL")
    assert moves.legal_commands(state, 0) == [DrawDiscard(), Pass()]
    taken, _ = play(state, 0, DrawDiscard())
    refused(GAME, taken, 0, Discard("KS"), "WALL_KNOCK")
    assert moves.legal_commands(taken, 0) and all(
        isinstance(c, Knock) for c in moves.legal_commands(taken, 0)
    )
    # With a useless discard the only way on is the wash.
    useless = dataclasses.replace(state, discards=("QC",))
    refused(GAME, useless, 0, DrawDiscard(), "WALL")
    assert GAME.label(useless, Pass()) == "Pass: the hand is a wash"
    state, events = play(useless, 0, Pass())
    assert (events[-1].outcome, events[-1].winner) == (
        "WASH",
        None,
    ) and state.phase is Phase.HAND_OVER
    # Before the wall, a seat must draw.
    refused(GAME, dataclasses.replace(useless, stock=("8C", "9S", "TC")), 0, Pass(), "MUST_DRAW")


# --- the match --------------------------------------------------------------------------------


def test_the_winner_deals_next_and_the_match_ends_at_match_points() -> None:
    state = knock_position(match_points=15)
    state = dataclasses.replace(state, totals=(10, 3))
    state, _ = play(state, 0, Knock("KS"))
    state, events = play(state, 1, EndLayOffs())
    ended = events[-1]
    # No lay-offs: the defender keeps four 7s and the spade run, 3D 4D 8H left (15 − 2 = 13).
    assert isinstance(ended, MatchEnded) and ended.totals == (10 + 13, 3)
    assert lines(ended.settlement) == [(1, 0, 20, [("point_difference", 20, False)])]
    refused(GAME, state, 0, NextHand(), "MATCH_OVER")
    # Below match_points the next hand is dealt by the winner.
    state = knock_position()
    state, _ = play(state, 0, Knock("KS"))
    state, _ = play(state, 1, EndLayOffs())
    state, events = play(state, 1, NextHand())
    assert events[0].dealer == 0 and events[0].hand == 2 and state.turn == 1


def test_after_a_wash_the_same_dealer_deals_again() -> None:
    state = position(("AS 2S 3S 4H 5H 6H 9C 9D 2D KS", DEFENDER), "QC", "8C 9S", turn=0, dealer=1)
    state, _ = play(state, 0, Pass())
    state, events = play(state, 0, NextHand())
    assert events[0].dealer == 1


@given(st.binary(min_size=32, max_size=32))
def test_the_deal_and_the_first_dealer(seed: bytes) -> None:
    seeds = Seeds(seed)
    dealer, draws = first_dealer(seeds)
    pairs = [draws[k : k + 2] for k in range(0, len(draws), 2)]
    assert all(rank(a.card) == rank(b.card) for a, b in pairs[:-1])
    a, b = pairs[-1]
    assert dealer == (0 if rank(a.card) < rank(b.card) else 1)
    dealt = deal(seeds, 1, None)
    assert dealt.dealer == dealer and [len(h.cards) for h in dealt.hands] == [10, 10]
    assert dealt.stock_count == 31
    state = fold(GAME, GAME.start(STANDARD, 2, seeds))
    assert state.turn == 1 - dealer and state.phase is Phase.FIRST_UPCARD


def test_rule_sets_are_validated() -> None:
    for overrides, field in [
        ({"knock_card": 11}, "knock_card"),
        ({"match_points": 0}, "match_points"),
        ({"nope": 1}, "nope"),
    ]:
        with pytest.raises(InvalidRules) as info:
            rules_for("standard", overrides, 2)
        assert info.value.field == field
    with pytest.raises(InvalidRules) as info:
        rules_for("standard", {}, 3)
    assert info.value.field == "seats"


# --- the knocker's melds (docs/rules/gin.md §4) -------------------------------------------------

# Three arrangements leave the least deadwood (6S, 6): 2-4C, 5-7C and three 7s; 2-6C and four 7s;
# 2-7C and three 7s. The defender's 8C lays off on the runs ending in 7C, not on 2-6C.
CHOOSER = "2C 3C 4C 5C 6C 7C 7D 7H 7S 6S KD"
LAYER = "AH JC 6H 6D 5D TH 9S 8C 4S 9D"
SPLIT = (("2C", "3C", "4C"), ("5C", "6C", "7C"), ("7D", "7H", "7S"))
FOURS = (("2C", "3C", "4C", "5C", "6C"), ("7C", "7D", "7H", "7S"))


def meld_cards(knocked: Knocked) -> tuple[tuple[str, ...], ...]:
    return tuple(m.cards for m in knocked.melds)


def test_unnamed_the_knock_leaves_the_defender_the_least_to_lay_off() -> None:
    """docs/rules/gin.md §4: of the arrangements that leave the least deadwood, an unnamed knock
    takes the one that leaves the defender the least to lay off (here the four 7s: the 8C has no
    run to go to). Games recorded before ``knocker_best_melds`` took the first in a fixed order."""
    state = knock_position(CHOOSER, LAYER)
    after, (knocked,) = play(state, 0, Knock("KD"))
    assert meld_cards(knocked) == FOURS and knocked.deadwood == 6
    refused(GAME, after, 1, LayOff("8C", 0), "CANNOT_LAY_OFF")
    assert not any(isinstance(c, LayOff) for c in moves.legal_commands(after, 1))
    old = knock_position(CHOOSER, LAYER, knocker_best_melds=False)
    _, (first,) = play(old, 0, Knock("KD"))
    assert meld_cards(first) == SPLIT
    assert (
        STANDARD.knocker_best_melds
        and not dataclasses.replace(STANDARD, knocker_best_melds=False).knocker_best_melds
    )


def test_checking_a_knock_reads_nothing_of_the_defenders_hand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/rules/common.md §5: a check is shown to its seat, and so is what it costs. The
    defender-best melds (``knocker_best_melds``) and a gin's scoring work through the defender's
    hidden hand, the longer the more of its cards lay off (0.5 ms with none, 3 ms with five), so
    ValidateCommand and the legal-move list, which the knocker can time before it knocks, must
    not work them out; applying the knock still does."""
    state = knock_position(CHOOSER, LAYER)
    gin = knock_position("2C 3C 4C 5C 7D 7H 7S JS QS KS KD", LAYER)
    read: list[tuple[str, ...]] = []
    choose = moves.defender_least

    def watched(hand: tuple[str, ...], melds: tuple[Meld, ...]) -> int:
        read.append(hand)
        return choose(hand, melds)

    def shown(_: object) -> None:
        pytest.fail("a check worked out the defender's melds")

    monkeypatch.setattr(moves, "defender_least", watched)
    monkeypatch.setattr(moves, "_defender_shows", shown)
    GAME.validate(state, 0, Knock("KD"))
    GAME.validate(gin, 0, Knock("KD"))
    listed = GAME.legal_commands(state, 0)
    assert Knock("KD") in listed and Knock("KD", tuple(KnockMeld(m) for m in FOURS)) in listed
    assert Knock("KD") in GAME.legal_commands(gin, 0)
    assert read == []
    monkeypatch.undo()
    monkeypatch.setattr(moves, "defender_least", watched)
    _, (knocked,) = play(state, 0, Knock("KD"))
    assert meld_cards(knocked) == FOURS and read
    _, (gin_knocked, shown_melds, _ended) = play(gin, 0, Knock("KD"))
    assert isinstance(gin_knocked, Knocked) and gin_knocked.gin
    assert isinstance(shown_melds, LayOffsEnded)


def test_a_knock_may_name_its_melds() -> None:
    """docs/rules/gin.md §4: the knock may name one of the least-deadwood arrangements, in any
    order; named otherwise it is refused, naming the rule. Every named arrangement is listed."""
    state = knock_position(CHOOSER, LAYER)
    named = Knock("KD", (KnockMeld(("7S", "7H", "7D")), KnockMeld(SPLIT[1]), KnockMeld(SPLIT[0])))
    after, (knocked,) = play(state, 0, named)
    assert meld_cards(knocked) == SPLIT and knocked.deadwood_cards == ("6S",)
    run = meld_cards(knocked).index(SPLIT[1])
    laid, _ = play(after, 1, LayOff("8C", run))
    assert laid.table[run].cards == ("5C", "6C", "7C", "8C")
    listed = [c for c in moves.legal_commands(state, 0) if isinstance(c, Knock) and c.card == "KD"]
    assert Knock("KD") in listed
    assert {tuple(m.cards for m in c.melds) for c in listed if c.melds} == {
        SPLIT,
        FOURS,
        (("2C", "3C", "4C", "5C", "6C", "7C"), ("7D", "7H", "7S")),
    }
    assert GAME.label(state, named).startswith("Discard King of diamonds and knock, melding 7S 7H")
    # The unnamed knock, offered beside them, says which melds it shows (a QA review: the two
    # read as the same move).
    unnamed = GAME.label(state, Knock("KD"))
    assert unnamed.startswith("Discard King of diamonds and knock (") and "melding" not in unnamed
    assert unnamed.endswith(
        "(the melds leaving the defender least to lay off)"
        if state.rules.knocker_best_melds
        else "(the first melds found)"
    )
    # Not an arrangement of the least deadwood (5C 6C 6S left: 17), or not every meld of one.
    for melds in (
        (("2C", "3C", "4C"), ("7C", "7D", "7H", "7S")),
        (FOURS[0],),
    ):
        bad = Knock("KD", tuple(KnockMeld(m) for m in melds))
        refused(GAME, state, 0, bad, "NOT_LEAST_DEADWOOD_MELDS")
        with pytest.raises(CommandError) as info:
            GAME.validate(state, 0, bad)
        assert info.value.rule == "docs/rules/gin.md §4"
    # A meld of cards the hand does not keep (the discard itself, a card held elsewhere): said
    # so, before any count (it was DEADWOOD_TOO_HIGH, the reviewer's "misleading reason").
    for stray in (("6S", "KD", "AH"), ("AH", "2H", "3H")):
        melds = (("2C", "3C", "4C"), ("5C", "6C", "7C"), ("7D", "7H", "7S"), stray)
        refused(GAME, state, 0, Knock("KD", tuple(KnockMeld(m) for m in melds)), "CARD_NOT_IN_HAND")
    twice = Knock("KD", (KnockMeld(("2C", "3C", "4C")), KnockMeld(("2C", "3C", "4C"))))
    refused(GAME, state, 0, twice, "DUPLICATE_CARD", error=MalformedCommand)
