"""Koi-Koi on the turn clock (docs/rules/koikoi.md, "Turn clocks"): a time-out and its forced move
in every phase, the time bank, away and back, and the forfeit that ends the match."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from croupier.contract.bindings import KOIKOI
from croupier.engine.clock import Clock, TurnTimedOut, fold_timed
from croupier.engine.game import Context, InvalidRules, fold
from croupier.engine.koikoi import KoiKoiGame
from croupier.engine.koikoi.cards import sort_cards
from croupier.engine.koikoi.events import (
    CaptureChosen,
    CardPlayed,
    CardTurned,
    ChooseCapture,
    KoiKoiEvent,
    MatchEnded,
    NextRound,
    PlayCard,
    RoundDealt,
    RoundEnded,
    SeatForfeited,
    Shobu,
    ShobuCalled,
)
from croupier.engine.koikoi.rules import KoiKoiRules, rules_for
from croupier.engine.koikoi.scoring import FORFEIT, least_round_score
from croupier.engine.koikoi.state import KoiKoiState, Phase
from croupier.engine.settlement import Settlement, amount_of
from croupier.engine.shuffle import Seeds

from .helpers import SEEDS, position

GAME = KoiKoiGame()
TURN_MS = 10_000
BANK_MS = 5_000
START_MS = 1_000_000
#: Ten chaff: Kasu, 1 point.
KASU = "1C1 1C2 2C1 2C2 3C1 3C2 4C1 4C2 5C1 5C2"


def clocked(**options: Any) -> KoiKoiRules:
    return rules_for("nintendo", {"turn_time_ms": TURN_MS, "time_bank_ms": BANK_MS, **options}, 2)


def on_the_clock(state: KoiKoiState, at_ms: int = START_MS) -> KoiKoiState:
    """``state`` with its clocks started at ``at_ms``: full banks, the seat to act from now."""
    bank = state.rules.time_bank_ms
    clock = Clock(
        at_ms=at_ms,
        since_ms=(at_ms, at_ms),
        bank_ms=(bank, bank),
        timeouts=(0, 0),
        away=(False, False),
        on_clock=GAME.on_clock(state),
    )
    return dataclasses.replace(state, clock=clock)


def at_deadline(state: KoiKoiState) -> tuple[KoiKoiState, list[Any]]:
    """What the service records when the first deadline is reached, and the state after it."""
    due = GAME.next_deadline(state)
    assert due is not None
    state = GAME.at(state, due, None)
    events = GAME.advance(state, Context(SEEDS, due))
    return fold(GAME, events, state), events


def act(
    state: KoiKoiState, seat: int, command: Any, at_ms: int
) -> tuple[KoiKoiState, list[KoiKoiEvent]]:
    """``seat``'s command recorded at ``at_ms``."""
    events = GAME.decide(state, seat, command, Context(SEEDS, at_ms))
    return fold(GAME, events, GAME.at(state, at_ms, seat)), events


def forced_and_legal(state: KoiKoiState, seat: int) -> Any:
    forced = GAME.forced_command(state, seat)
    assert forced in GAME.legal_commands(state, seat)
    return forced


# --- the forced move in every phase ------------------------------------------------------------


def test_play_the_first_card_in_deck_order_and_take_the_first_capture() -> None:
    # 1B is the hand's first card in deck order (not in the hand's order); it matches 1R and 1C1
    # on the field, and 1R comes first. The turned 12C3 matches nothing.
    state = on_the_clock(
        position(("3R 1B 5A", "4A 6A 7A"), "1C1 1R 2R", "12C3 8A", rules=clocked())
    )
    assert GAME.seat_clocks(state)[0].deadline_ms == START_MS + TURN_MS + BANK_MS
    assert forced_and_legal(state, 0) == PlayCard("1B", "1R")
    deadline = START_MS + TURN_MS + BANK_MS
    after, events = at_deadline(state)
    assert events == [
        TurnTimedOut(0, deadline),
        CardPlayed(0, "1B", ("1R",)),
        CardTurned(0, "12C3", ()),
    ]
    # The turn has passed: seat 1's turn time starts at the deadline, the forced move's time.
    assert after.turn == 1 and after.clock.on_clock == (1,)
    assert after.clock.since_ms[1] == deadline and after.clock.bank_ms == (0, BANK_MS)
    assert after.clock.timeouts == (1, 0)


@pytest.mark.parametrize(
    ("hand", "field", "played"),
    [
        # A card that captures goes before one that would lie on the field for the opponent.
        ("1B 9C1 4A", "4R 2R", "4A"),
        # None captures: the least valuable kind first, a chaff before a ribbon, an animal, a
        # bright; a bright only when nothing else is left.
        ("1B 3R 5A 8C1", "2R 6R", "8C1"),
        ("1B 3R 5A", "2R 6R", "3R"),
        ("1B 3B 5A", "2R 6R", "5A"),
        ("3B 1B", "2R 6R", "1B"),
        # Several capture: the least valuable of them, then the earliest month.
        ("2A 2C1 9C1", "2R 9R", "2C1"),
    ],
)
def test_a_forced_play_gives_away_as_little_as_it_can(hand: str, field: str, played: str) -> None:
    rules = clocked(forced_play_least=True)  # the house rule
    state = on_the_clock(position((hand, "4C1 6A"), field, "12C3", rules=rules))
    assert forced_and_legal(state, 0).card == played
    # The rules' own forced play (docs/rules/koikoi.md, "Forced moves"), which the presets keep to: the hand's first
    # card in deck order.
    spec = on_the_clock(position((hand, "4C1 6A"), field, "12C3", rules=clocked()))
    assert not spec.rules.forced_play_least
    assert forced_and_legal(spec, 0).card == sort_cards(tuple(hand.split()))[0]


def test_a_single_match_is_taken_without_naming_it() -> None:
    state = on_the_clock(position(("9A 2A", "4A 6A"), "2R 3R", "12C3", rules=clocked()))
    assert forced_and_legal(state, 0) == PlayCard("2A")


def test_the_time_out_plays_the_whole_turn_through_the_capture_choice() -> None:
    # 4A joins the field (neither card captures: the animal goes before the bright 1B); the
    # turned 3B matches 3R and 3C1: the same time-out names 3R.
    rules = clocked(forced_play_least=True)
    state = on_the_clock(position(("1B 4A", "5A 6A"), "3C1 3R 2R", "3B 12C3", rules=rules))
    _, events = at_deadline(state)
    assert events[1:] == [
        CardPlayed(0, "4A", ()),
        CardTurned(0, "3B", (), awaiting_choice=True),
        CaptureChosen(0, "3B", ("3R",)),
    ]


def test_a_capture_left_unnamed_times_out_to_the_first_choice() -> None:
    state = position(
        ("4A", "5A 6A"),
        "3C1 3R 2R",
        "12C3",
        rules=clocked(),
        phase=Phase.CHOOSE_CAPTURE,
        turned="3B",
    )
    state = on_the_clock(state)
    assert GAME.on_clock(state) == (0,)
    assert forced_and_legal(state, 0) == ChooseCapture("3R")
    _, events = at_deadline(state)
    assert events[1:] == [CaptureChosen(0, "3B", ("3R",))]


def test_a_koi_koi_decision_times_out_to_shobu() -> None:
    state = position(
        ("4A", "5A 6A"), "2R", "12C3", rules=clocked(), captured=(KASU, ""), phase=Phase.DECIDE
    )
    state = on_the_clock(state)
    assert forced_and_legal(state, 0) == Shobu()
    after, events = at_deadline(state)
    assert events[1] == ShobuCalled(0)
    ended = events[2]
    assert isinstance(ended, RoundEnded)
    assert (ended.outcome, ended.winner, ended.points) == ("SHOBU", 0, 1)
    assert len(events) == 3  # the round is over: dealing the next one is another turn
    assert after.phase is Phase.ROUND_OVER


def test_between_rounds_the_seat_that_plays_second_next_deals() -> None:
    state = position(
        ("4A", "5A 6A"), "2R", "12C3", rules=clocked(), captured=(KASU, ""), phase=Phase.DECIDE
    )
    state, _ = act(on_the_clock(state), 0, Shobu(), START_MS)
    # Seat 0 won, so it deals and leads round 2; seat 1 is on the clock to move the match on.
    assert GAME.on_clock(state) == (1,) and state.clock.on_clock == (1,)
    assert forced_and_legal(state, 1) == NextRound()
    deadline = START_MS + TURN_MS + BANK_MS
    after, events = at_deadline(state)
    assert events[0] == TurnTimedOut(1, deadline)
    dealt = events[1]
    assert isinstance(dealt, RoundDealt) and (dealt.round, dealt.dealer) == (2, 0)
    # Unless a hand yaku ended it at once, the new round's leader has its own whole turn time:
    # the time-out dealt, it did not play the lead too.
    assert len(events) == 2 and after.phase is Phase.PLAY
    (lead,) = GAME.seat_clocks(after)
    assert (lead.seat, lead.deadline_ms) == (0, deadline + TURN_MS + BANK_MS)


def test_after_a_drawn_round_its_dealer_moves_the_match_on() -> None:
    state = position(("", ""), "2R", "", rules=clocked(), dealer=1)
    drawn = RoundEnded(1, "DRAWN", None, (), 0, (), (0, 0), Settlement(1, (), "DRAWN", (), (0, 0)))
    state = fold(GAME, [drawn], on_the_clock(state))
    # The deal passes to seat 0, which leads round 2: seat 1, the last dealer, deals it.
    assert GAME.on_clock(state) == (1,)


# --- the time bank -----------------------------------------------------------------------------


def test_a_late_play_spends_the_bank_and_the_next_turn_has_what_is_left() -> None:
    state = on_the_clock(position(("1B 9A", "4A 6A"), "2R 3R", "12C1 12C2 12C3", rules=clocked()))
    late = START_MS + TURN_MS + 3_000
    state, _ = act(state, 0, PlayCard("1B"), late)
    assert state.clock.bank_ms == (BANK_MS - 3_000, BANK_MS)
    # Seat 1 plays in time: its bank is untouched.
    state, _ = act(state, 1, PlayCard("4A"), late + 1_000)
    assert state.clock.bank_ms == (BANK_MS - 3_000, BANK_MS)
    (clock,) = GAME.seat_clocks(state)
    assert clock.seat == 0 and clock.deadline_ms == late + 1_000 + TURN_MS + BANK_MS - 3_000
    # A millisecond before it nothing is due; at it the turn times out and the bank is empty.
    assert GAME.advance(state, Context(SEEDS, clock.deadline_ms - 1)) == []
    after, events = at_deadline(state)
    assert events[0] == TurnTimedOut(0, clock.deadline_ms)
    assert after.clock.bank_ms == (0, BANK_MS)


# --- away and back -----------------------------------------------------------------------------


def test_away_after_max_timeouts_in_a_row_and_back_with_a_command() -> None:
    hands = ("1B 9A 10A 11A", "4A 6A 7A 8A")
    state = on_the_clock(
        position(
            hands,
            "2R 3R",
            "12C1 12C2 12C3 12B 5C1 5C2 5A 5R",
            rules=clocked(max_timeouts=2, forced_play_least=True),
        )
    )
    state, events = at_deadline(state)
    assert events[0] == TurnTimedOut(0, START_MS + TURN_MS + BANK_MS, away=False)
    now = START_MS + TURN_MS + BANK_MS + 1_000
    state, _ = act(state, 1, GAME.legal_commands(state, 1)[0], now)
    deadline = now + TURN_MS  # seat 0's bank went with its first time-out
    state, events = at_deadline(state)
    assert events[0] == TurnTimedOut(0, deadline, away=True)
    assert state.clock.away == (True, False)
    # Away, seat 0's next turn is over as soon as it starts: forced at once, at seat 1's play.
    now = deadline + 500
    state, _ = act(state, 1, GAME.legal_commands(state, 1)[0], now)
    (clock,) = GAME.seat_clocks(state)
    assert clock.away and clock.deadline_ms == now
    forced = GAME.advance(GAME.at(state, now, None), Context(SEEDS, now))
    assert forced[0] == TurnTimedOut(0, now, away=True)
    # Its third forced play: 9A and 10A went first, the bright 1B is kept (forced_play_least).
    assert isinstance(forced[1], CardPlayed) and forced[1].card == "11A"
    state = fold(GAME, forced, GAME.at(state, now, None))
    # A command of its own brings it back: time-outs from zero, a whole turn time again.
    state, _ = act(state, 1, GAME.legal_commands(state, 1)[0], now + 100)
    state, _ = act(state, 0, GAME.legal_commands(state, 0)[0], now + 200)
    assert state.clock.away == (False, False) and state.clock.timeouts == (0, 0)
    state, _ = act(state, 1, GAME.legal_commands(state, 1)[0], now + 300)
    (clock,) = GAME.seat_clocks(state)
    assert not clock.away and clock.deadline_ms == now + 300 + TURN_MS


# --- forfeit -----------------------------------------------------------------------------------


def forfeiting(totals: tuple[int, int], **options: Any) -> KoiKoiState:
    """Seat 0 to play in round 5 with ``totals``; one time-out makes it away and it forfeits."""
    rules = clocked(**{"max_timeouts": 1, "forfeit_when_away": True, **options})
    return on_the_clock(position(("1B", "4A"), "2R", "12C3", rules=rules, round=5, totals=totals))


def settled(events: list[Any]) -> list[tuple[int, int, int, list[tuple[str, int]]]]:
    (end,) = [e for e in events if isinstance(e, MatchEnded)]
    return [
        (line.payer, line.payee, line.amount, [(f.name, f.value) for f in line.factors])
        for line in end.settlement.lines
    ]


def test_an_away_seat_forfeits_and_loses_by_the_point_difference() -> None:
    state = forfeiting((3, 10), stake_per_point=2)
    deadline = START_MS + TURN_MS + BANK_MS
    after, events = at_deadline(state)
    assert events[:2] == [TurnTimedOut(0, deadline, away=True), SeatForfeited(0, 5)]
    end = events[2]
    assert isinstance(end, MatchEnded) and len(events) == 3  # no forced move, no round's end
    assert (end.rounds, end.totals) == (5, (3, 10))
    settlement = end.settlement
    assert settlement.outcome == FORFEIT and settlement.winners == (1,)
    assert settled(events) == [(0, 1, 14, [("point_difference", 7), ("stake_per_point", 2)])]
    assert settlement.net == (-14, 14)
    assert all(line.amount == amount_of(line.factors) for line in settlement.lines)
    assert "forfeited" in settlement.notes[0]
    assert GAME.is_finished(after) and GAME.next_deadline(after) is None
    assert GAME.final_settlement(events) == settlement


@pytest.mark.parametrize(
    ("totals", "options", "least"),
    [
        ((10, 3), {}, 1),  # the forfeiting seat leads: it still loses, by the least score
        ((0, 0), {}, 1),
        ((4, 4), {"double_from": 1}, 2),  # every score is doubled, the least one too
        ((4, 5), {"double_from": 1}, 2),
    ],
)
def test_a_forfeit_pays_at_least_one_rounds_least_score(
    totals: tuple[int, int], options: dict[str, Any], least: int
) -> None:
    state = forfeiting(totals, **options)
    assert least_round_score(state.rules) == least
    _, events = at_deadline(state)
    assert settled(events) == [(0, 1, least, [("round_minimum", least)])]


def test_before_max_timeouts_a_forfeiting_seat_is_only_forced() -> None:
    state = forfeiting((0, 0), max_timeouts=2)
    _, events = at_deadline(state)
    assert events[0] == TurnTimedOut(0, START_MS + TURN_MS + BANK_MS, away=False)
    assert not any(isinstance(e, (SeatForfeited, MatchEnded)) for e in events)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_an_idle_seat_forfeits_a_random_match(seed: int) -> None:
    """Seat 0 plays at once whenever it may; seat 1 never does: its third time-out in a row
    forfeits the match, whatever the totals, and the recorded batches replay to the same end."""
    rules = rules_for("nintendo-3", {"turn_time_ms": TURN_MS, "forfeit_when_away": True}, 2)
    seeds = Seeds(seed.to_bytes(32, "big"), ())
    now = START_MS
    opening = GAME.start(rules, 2, seeds)
    state = fold(GAME, opening, GAME.at(GAME.initial_state(), now, None))
    batches: list[tuple[int, int | None, list[Any]]] = [(now, None, opening)]
    while not GAME.is_finished(state):
        if 0 in GAME.to_act(state):
            now += 1
            command = GAME.legal_commands(state, 0)[seed % len(GAME.legal_commands(state, 0))]
            state, events = act(state, 0, command, now)
            batches.append((now, 0, events))
        else:
            state, events = at_deadline(state)
            now = events[0].deadline_ms
            batches.append((now, None, events))
    assert fold_timed(GAME, batches, GAME.initial_state()) == state
    forfeits = [e for _, _, events in batches for e in events if isinstance(e, SeatForfeited)]
    assert forfeits == [SeatForfeited(1, state.round)]
    assert state.ended is not None
    lead = state.totals[0] - state.totals[1]
    assert state.ended.settlement.net == (max(lead, 1), -max(lead, 1))


def test_the_forfeit_events_cross_the_contract() -> None:
    _, events = at_deadline(forfeiting((3, 10)))
    for event in events:
        assert KOIKOI.event_from_body(KOIKOI.event_to_body(event)) == event


def test_the_clock_options_are_checked() -> None:
    assert clocked(forfeit_when_away=True).forfeit_when_away
    with pytest.raises(InvalidRules) as info:
        clocked(max_timeouts=0)
    assert info.value.field == "max_timeouts"
