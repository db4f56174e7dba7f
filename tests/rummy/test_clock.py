"""Rummy on the turn clock (docs/rules/common.md §5.1, docs/rules/rummy.md §3.5): time-outs and forced moves in
each step of a turn, the time bank, away and back, and forfeits with two and three seats."""

from __future__ import annotations

import dataclasses
import random

import pytest
from game_invariants import assert_to_act_is_exact, refused
from test_clock import play as play_on_the_clock
from test_clock import replayed

from croupier.contract.bindings import RUMMY
from croupier.engine.clock import Clock, TurnRestarted, TurnTimedOut, follow, started
from croupier.engine.game import Context, InvalidRules, fold
from croupier.engine.rummy.events import (
    CameBack,
    CardDiscarded,
    CardDrawn,
    CardsLaidOff,
    ComeBack,
    Discard,
    DrawStock,
    Hand,
    LayOff,
    RoundEnded,
    RummyEvent,
    SeatForfeited,
    StockReshuffled,
    TakeDiscard,
)
from croupier.engine.rummy.moves import costliest
from croupier.engine.rummy.rules import STANDARD, RummyRules, rules_for
from croupier.engine.rummy.scoring import hand_value
from croupier.engine.rummy.state import Phase, RummyState
from croupier.engine.settlement import Settlement, amount_of
from croupier.engine.shuffle import Seeds

from .helpers import GAME, SEEDS, position

TURN_MS = 10_000
BANK_MS = 30_000
#: When the positions below put their seat to act.
T0 = 1_000_000

#: A hand that could open (three kings and three queens: 60) and meld the upcard 7D1 with its two
#: sevens; its costliest card is the joker.
OPENER = "KS1 KH1 KD1 QS1 QH1 QD1 7S1 7H1 2C1 3C1 JK1 AS1 5D1"
OTHER = "2S2 3S2 4H2 6D2 8C2 9C2 TD2 4C2 5H2 6S2 8D2 9H2 TC2"


def clocked_rules(**options: object) -> RummyRules:
    return dataclasses.replace(STANDARD, turn_time_ms=TURN_MS, **options)  # type: ignore[arg-type]


def clocked(state: RummyState, at_ms: int = T0) -> RummyState:
    """``state`` with the clocks started at ``at_ms``: full banks, the seat to act on the clock."""
    clock = started(Clock(at_ms=at_ms), state.rules, state.seats)
    return dataclasses.replace(state, clock=follow(clock, GAME.on_clock(state)))


def time_passes(state: RummyState, now: int) -> tuple[RummyState, list[RummyEvent]]:
    """What the service records at ``now`` without a command: the time-outs due, each followed by
    its forced move's events."""
    state = GAME.at(state, now, None)
    events = GAME.advance(state, Context(SEEDS, now))
    return fold(GAME, events, state), events


def acts(
    state: RummyState, seat: int, command: object, now: int
) -> tuple[RummyState, list[RummyEvent]]:
    """``seat``'s command recorded at ``now``."""
    events = GAME.decide(state, seat, command, Context(SEEDS, now))  # type: ignore[arg-type]
    return fold(GAME, events, GAME.at(state, now, seat)), events


def deadline(state: RummyState, seat: int) -> int:
    clocks = {c.seat: c.deadline_ms for c in GAME.seat_clocks(state)}
    return clocks[seat]


def assert_forced_is_legal(state: RummyState, seat: int) -> None:
    assert GAME.forced_command(state, seat) in GAME.legal_commands(state, seat)


def test_the_rules_take_a_turn_clock() -> None:
    rules = rules_for("standard", {"turn_time_ms": 30_000, "time_bank_ms": 60_000}, 3)
    assert (rules.turn_time_ms, rules.time_bank_ms, rules.max_timeouts) == (30_000, 60_000, 3)
    with pytest.raises(InvalidRules):
        rules_for("standard", {"max_timeouts": 0, "turn_time_ms": 30_000}, 3)


# --- forced moves -------------------------------------------------------------------------------


def test_a_time_out_in_the_take_step_draws_and_discards_the_costliest_card() -> None:
    state = clocked(
        position([OPENER, OTHER], "7D1", "4C1 9D2 8H2", rules=clocked_rules(), phase=Phase.TAKE)
    )
    assert GAME.on_clock(state) == (0,)
    # It could take the 7 into a meld, or open: a forced move does neither.
    assert any(isinstance(c, TakeDiscard) for c in GAME.legal_commands(state, 0))
    assert_forced_is_legal(state, 0)
    assert GAME.forced_command(state, 0) == DrawStock()
    due = T0 + TURN_MS
    assert time_passes(state, due - 1)[1] == []
    after, events = time_passes(state, due)
    assert events == [TurnTimedOut(0, due), CardDrawn(0, "4C1"), CardDiscarded(0, "JK1")]
    # The play step in between is forced the same way, and legal too.
    drawn = fold(GAME, events[:2], GAME.at(state, due, None))
    assert GAME.forced_command(drawn, 0) == Discard("JK1")
    assert_forced_is_legal(drawn, 0)
    assert after.opened == (False, False) and after.discard_top == "JK1"
    # The next seat's turn time starts at the deadline, when the forced move was played.
    assert (after.turn, after.phase, after.clock.since_ms[1]) == (1, Phase.TAKE, due)
    assert deadline(after, 1) == due + TURN_MS


def test_a_time_out_in_the_play_step_discards_without_laying_down() -> None:
    state = clocked(
        position([OPENER, OTHER], "7D1", "4C1 9D2 8H2", rules=clocked_rules(), phase=Phase.TAKE)
    )
    drawn, _ = acts(state, 0, DrawStock(), T0 + 2_000)
    # Its own draw leaves it on the clock: the play step has a turn time of its own.
    assert deadline(drawn, 0) == T0 + 2_000 + TURN_MS
    assert_forced_is_legal(drawn, 0)
    after, events = time_passes(drawn, T0 + 2_000 + TURN_MS)
    assert events == [TurnTimedOut(0, T0 + 2_000 + TURN_MS), CardDiscarded(0, "JK1")]
    assert after.opened[0] is False and not after.melds and after.turn == 1


@pytest.mark.parametrize(
    ("hand", "thrown"),
    [
        ("AS1 JK2 KC1", "JK2"),  # a joker costs 20
        ("JK1 JK3", "JK3"),  # of two jokers, the later
        ("AS1 KC2", "AS1"),  # an ace 11 over a king 10
        ("TS1 JH1 QD1 KC1", "KC1"),  # the tens and faces: the higher rank
        ("KC1 KS2", "KS2"),  # one rank: the second copy
        ("KS1 KC1 KH1", "KC1"),  # one copy: clubs, diamonds, hearts, spades
        ("2S1 9D1 3H2", "9D1"),
    ],
)
def test_the_forced_discard_is_the_costliest_card(hand: str, thrown: str) -> None:
    assert costliest(tuple(hand.split())) == thrown


def test_a_forced_discard_of_the_last_card_goes_out() -> None:
    state = clocked(
        position(
            ["9S1", "KS2 QS2"],
            "2D1",
            "3D1 4D1",
            rules=clocked_rules(),
            melds=[(0, "TS1 JS1 QS1")],
            opened=[True, False],
        )
    )
    assert_forced_is_legal(state, 0)
    after, events = time_passes(state, T0 + TURN_MS)
    assert events[:2] == [TurnTimedOut(0, T0 + TURN_MS), CardDiscarded(0, "9S1")]
    end = events[2]
    assert isinstance(end, RoundEnded) and (end.outcome, end.winner) == ("WENT_OUT", 0)
    assert end.settlement.net == (20, -20)
    # The game is its one round: nobody is on the clock after it, nobody deals a next one.
    assert GAME.is_finished(after) and GAME.between_rounds(after)
    assert GAME.seat_clocks(after) == [] and GAME.next_deadline(after) is None


def test_a_forced_draw_of_the_last_card_rebuilds_the_stock() -> None:
    state = clocked(
        position(
            ["5C1 9S1 KD1", OTHER], "2S1 3H1 5D1", "4C1", rules=clocked_rules(), phase=Phase.TAKE
        )
    )
    after, events = time_passes(state, T0 + TURN_MS)
    assert events[:3] == [
        TurnTimedOut(0, T0 + TURN_MS),
        CardDrawn(0, "4C1"),
        CardDiscarded(0, "KD1"),
    ]
    assert isinstance(events[3], StockReshuffled) and sorted(after.stock) == ["2S1", "3H1", "5D1"]
    assert after.discards == ("KD1",) and GAME.on_clock(after) == (1,)


def test_a_forced_draw_of_the_last_card_may_end_the_round_when_the_stock_cannot_be_rebuilt() -> (
    None
):
    state = clocked(
        position(
            ["5C1 9S1 KD1", OTHER],
            "2S1 3H1 5D1",
            "4C1",
            rules=clocked_rules(max_reshuffles=1),
            phase=Phase.TAKE,
            reshuffles=1,
        )
    )
    after, events = time_passes(state, T0 + TURN_MS)
    end = events[-1]
    assert isinstance(end, RoundEnded) and end.outcome == "STOCK_OUT"
    assert end.settlement.lines == () and GAME.is_finished(after)


def test_nothing_is_on_the_clock_before_the_deal() -> None:
    assert GAME.on_clock(RummyState(rules=clocked_rules())) == ()


# --- the time bank --------------------------------------------------------------------------------


def test_the_bank_is_spent_after_the_turn_time_and_a_time_out_spends_the_rest() -> None:
    state = clocked(
        position(
            [OPENER, OTHER],
            "7D1",
            "4C1 9D2 8H2",
            rules=clocked_rules(time_bank_ms=BANK_MS),
            phase=Phase.TAKE,
        )
    )
    assert deadline(state, 0) == T0 + TURN_MS + BANK_MS
    # Drawing 4 s after its turn time: 4 s out of the bank; the play step has its own turn time.
    drew_at = T0 + TURN_MS + 4_000
    drawn, _ = acts(state, 0, DrawStock(), drew_at)
    assert drawn.clock.bank_ms == (BANK_MS - 4_000, BANK_MS)
    assert deadline(drawn, 0) == drew_at + TURN_MS + BANK_MS - 4_000
    # A discard within the turn time costs the bank nothing.
    played, _ = acts(drawn, 0, Discard("2C1"), drew_at + TURN_MS)
    assert played.clock.bank_ms == (BANK_MS - 4_000, BANK_MS)
    # Seat 1 lets both run out: at the deadline it times out and its bank is gone for the game.
    due = drew_at + TURN_MS + TURN_MS + BANK_MS
    assert deadline(played, 1) == due
    assert time_passes(played, due - 1)[1] == []
    after, events = time_passes(played, due)
    assert events[0] == TurnTimedOut(1, due) and after.clock.bank_ms == (BANK_MS - 4_000, 0)
    assert after.clock.timeouts == (0, 1)
    # Seat 0's turn: turn time and what is left of its bank.
    assert deadline(after, 0) == due + TURN_MS + BANK_MS - 4_000


# --- away and back --------------------------------------------------------------------------------


def test_a_seat_is_away_after_max_timeouts_in_a_row_and_comes_back() -> None:
    state = clocked(
        position(
            [OPENER, OTHER],
            "7D1",
            "4C1 9D2 8H2 5S1 6S1 7C1 8C1",
            rules=clocked_rules(max_timeouts=2),
            phase=Phase.TAKE,
        )
    )
    refused(GAME, state, 0, ComeBack(), "NOT_AWAY")
    now = T0 + TURN_MS
    state, events = time_passes(state, now)
    assert events[0] == TurnTimedOut(0, now, away=False)

    def seat_1_plays(state: RummyState, at: int) -> RummyState:
        state, _ = acts(state, 1, DrawStock(), at)
        state, _ = acts(state, 1, Discard(costliest(state.hands[1])), at)
        return state

    now += 1_000
    state = seat_1_plays(state, now)
    now += TURN_MS
    state, events = time_passes(state, now)
    assert events[0] == TurnTimedOut(0, now, away=True)
    assert state.clock.away == (True, False) and state.clock.timeouts == (2, 0)
    # Away: its next turn is forced as soon as it starts.
    now += 1_000
    state = seat_1_plays(state, now)
    assert deadline(state, 0) == now
    state, events = time_passes(state, now)
    assert events[0] == TurnTimedOut(0, now, away=True) and state.turn == 1
    # Off its turn it may come back, and nothing else.
    assert GAME.to_act(state) == (0, 1) and GAME.legal_commands(state, 0) == [ComeBack()]
    assert GAME.label(state, ComeBack())
    assert_to_act_is_exact(GAME, state)
    now += 500
    # The service and a replay both decide a command on the state before its batch begins:
    # once the batch has begun, the clock has counted the seat back, and there is nothing to
    # come back from (as in every game).
    begun = GAME.at(state, now, 0)
    assert not begun.clock.away[0] and ComeBack() not in GAME.legal_commands(begun, 0)
    assert GAME.to_act(GAME.at(state, now, None)) == (0, 1)
    state, events = acts(state, 0, ComeBack(), now)
    assert events == [CameBack(0)]
    assert state.clock.away == (False, False) and state.clock.timeouts == (0, 0)
    assert GAME.to_act(state) == (1,)
    assert_to_act_is_exact(GAME, state)
    # Its next turn is its own again, with the full turn time.
    now += 1_000
    state = seat_1_plays(state, now)
    assert deadline(state, 0) == now + TURN_MS


def test_when_every_seat_is_away_turns_take_their_time() -> None:
    state = clocked(
        position(
            [OPENER, OTHER],
            "7D1",
            "4C1 9D2 8H2 5S1",
            rules=clocked_rules(max_timeouts=1),
            phase=Phase.TAKE,
        )
    )
    state, _ = time_passes(state, T0 + TURN_MS)  # seat 0 away
    state, events = time_passes(state, T0 + 2 * TURN_MS)  # seat 1 away too
    assert events[0] == TurnTimedOut(1, T0 + 2 * TURN_MS, away=True)
    assert state.clock.away == (True, True) and deadline(state, 0) == T0 + 3 * TURN_MS
    # Whoever comes back first finds its turn waiting (a command of its own brings it back).
    state, _ = acts(state, 0, DrawStock(), T0 + 2 * TURN_MS + 500)
    assert state.clock.away == (False, True)


# --- forfeits -------------------------------------------------------------------------------------


def test_a_forfeit_with_two_seats_ends_the_game_and_pays_the_hand() -> None:
    rules = clocked_rules(max_timeouts=1, forfeit_when_away=True, stake_per_point=2)
    state = clocked(position([OPENER, OTHER], "7D1", "4C1 9D2", rules=rules, phase=Phase.TAKE))
    due = T0 + TURN_MS
    after, events = time_passes(state, due)
    owed = hand_value(tuple(OPENER.split()))
    assert owed == 10 * 6 + 7 * 2 + 2 + 3 + 20 + 11 + 5
    timed, forfeit, end = events
    assert timed == TurnTimedOut(0, due, away=True)
    assert isinstance(forfeit, SeatForfeited) and isinstance(end, RoundEnded)
    assert (forfeit.seat, forfeit.hand, forfeit.hand_value) == (
        0,
        Hand(0, tuple(OPENER.split()), 13),
        owed,
    )
    (line,) = forfeit.lines
    assert (
        (line.payer, line.payee, line.amount) == (0, 1, owed * 2) == (0, 1, amount_of(line.factors))
    )
    assert (end.outcome, end.winner) == ("FORFEIT", 1)
    assert end.settlement.lines == (line,) and end.settlement.net == (-owed * 2, owed * 2)
    assert end.settlement.winners == (1,)
    assert GAME.final_settlement(events) == end.settlement
    assert GAME.is_finished(after) and GAME.next_deadline(after) is None


def three_seats(**options: object) -> RummyState:
    """Seat 0 to take; seat 1 has opened and can go out with a lay-off and a discard."""
    rules = clocked_rules(max_timeouts=1, forfeit_when_away=True, **options)
    return clocked(
        position(
            [OPENER, "9S1", "KC2 QC2"],
            "7D1",
            "2D1 3D1 4D1 5D2",
            rules=rules,
            phase=Phase.TAKE,
            melds=[(1, "TS1 JS1 QS1")],
            opened=[False, True, False],
        )
    )


def test_a_forfeit_with_three_seats_pays_each_seat_in_play_and_the_round_goes_on() -> None:
    state = three_seats()
    due = T0 + TURN_MS
    after, events = time_passes(state, due)
    owed = hand_value(tuple(OPENER.split()))
    timed, forfeit = events
    assert timed == TurnTimedOut(0, due, away=True) and isinstance(forfeit, SeatForfeited)
    assert [(ln.payer, ln.payee, ln.amount) for ln in forfeit.lines] == [(0, 1, owed), (0, 2, owed)]
    # Out of play: its turns are skipped, its commands refused, the next seat is on the clock.
    assert (after.turn, after.phase) == (1, Phase.TAKE) and not GAME.is_finished(after)
    assert GAME.to_act(after) == (1,) and GAME.on_clock(after) == (1,)
    assert deadline(after, 1) == due + TURN_MS
    refused(GAME, after, 0, DrawStock(), "FORFEITED")
    refused(GAME, after, 0, ComeBack(), "FORFEITED")
    assert GAME.view(after, 2).forfeited == (0,)
    assert_to_act_is_exact(GAME, after)
    # Seat 1 draws, lays off its 9 and goes out with its last discard.
    now = due + 1_000
    after, _ = acts(after, 1, DrawStock(), now)
    after, _ = acts(after, 1, LayOff(1, ("9S1",)), now)
    after, events = acts(after, 1, Discard("2D1"), now)
    end = events[-1]
    assert isinstance(end, RoundEnded) and (end.outcome, end.winner) == ("WENT_OUT", 1)
    # The forfeit's lines, then seat 2's hand to the winner; seat 0 pays nothing more.
    assert end.settlement.lines[:2] == forfeit.lines
    assert [(ln.payer, ln.payee, ln.amount) for ln in end.settlement.lines[2:]] == [(2, 1, 20)]
    assert end.settlement.net == (-2 * owed, owed + 20, owed - 20)
    assert any("forfeited" in note for note in end.settlement.notes)


def test_the_turn_after_a_forfeit_skips_the_forfeited_seat() -> None:
    state, _ = time_passes(three_seats(), T0 + TURN_MS)
    state, _ = acts(state, 1, DrawStock(), T0 + TURN_MS + 1)
    state, _ = acts(state, 1, Discard("2D1"), T0 + TURN_MS + 1)
    assert state.turn == 2
    state, _ = acts(state, 2, DrawStock(), T0 + TURN_MS + 2)
    state, _ = acts(state, 2, Discard("KC2"), T0 + TURN_MS + 2)
    assert state.turn == 1 and GAME.on_clock(state) == (1,)


def test_when_one_seat_is_left_in_play_it_wins_by_forfeit() -> None:
    # Seat 0 forfeits at its deadline, seat 1 at its own a turn time later: one batch holds both
    # (recorded a turn time late: an outage, held against the seats without outage_grace_ms).
    state = three_seats(stake_per_point=3, outage_grace_ms=0)
    after, events = time_passes(state, T0 + 2 * TURN_MS)
    forfeits = [e for e in events if isinstance(e, SeatForfeited)]
    assert [f.seat for f in forfeits] == [0, 1]
    # The second pays only the seat still in play.
    assert [(ln.payer, ln.payee) for ln in forfeits[1].lines] == [(1, 2)]
    assert forfeits[1].lines[0].amount == 9 * 3
    end = events[-1]
    assert isinstance(end, RoundEnded) and (end.outcome, end.winner) == ("FORFEIT", 2)
    owed = hand_value(tuple(OPENER.split())) * 3
    assert end.settlement.net == (-2 * owed, owed - 27, owed + 27)
    assert GAME.is_finished(after)


def test_a_forfeit_that_leaves_the_stock_empty_rebuilds_it() -> None:
    # Seat 0 drew the last card itself and then let its play step run out.
    rules = clocked_rules(max_timeouts=1, forfeit_when_away=True)
    state = clocked(
        position([OPENER, OTHER, "KC2 QC2"], "2S1 3H1 5D1", "4C1", rules=rules, phase=Phase.TAKE)
    )
    state, _ = acts(state, 0, DrawStock(), T0 + 1)
    assert state.stock == ()
    after, events = time_passes(state, T0 + 1 + TURN_MS)
    assert isinstance(events[1], SeatForfeited) and isinstance(events[2], StockReshuffled)
    assert sorted(after.stock) == ["2S1", "3H1"] and GAME.to_act(after) == (1,)


def test_forfeits_at_an_idle_seat_in_random_games() -> None:
    """Random games where seat 0 never plays and forfeits: they finish, replay, and settle to
    zero with the forfeit paying every seat that was in play."""
    game = GAME
    for seed in range(6):
        seats = 2 + seed % 3
        rules = rules_for(
            "standard",
            {"turn_time_ms": 1_000, "max_timeouts": 2, "forfeit_when_away": True},
            seats,
        )
        seeds = Seeds(seed.to_bytes(32, "big"), ())
        state, batches = play_on_the_clock(game, rules, seats, seeds, random.Random(seed), {0})
        assert replayed(game, batches) == state
        events = [e for _, _, batch in batches for e in batch]
        settlement = game.final_settlement(events)
        assert isinstance(settlement, Settlement) and sum(settlement.net) == 0
        forfeits = [e for e in events if isinstance(e, SeatForfeited)]
        if any(f.seat == 0 for f in forfeits):
            (first,) = [f for f in forfeits if f.seat == 0]
            # Every seat still in play: not one that had forfeited before it.
            gone = {f.seat for f in forfeits[: forfeits.index(first)]}
            assert {ln.payee for ln in first.lines} == set(range(1, seats)) - gone
            assert set(first.lines) <= set(settlement.lines)


# --- the contract ---------------------------------------------------------------------------------


def test_the_new_commands_and_events_cross_the_contract() -> None:
    # Two deadlines recorded a turn time late: forfeits without outage_grace_ms, else a restart.
    state, events = time_passes(three_seats(outage_grace_ms=0), T0 + 2 * TURN_MS)
    _, restarted = time_passes(three_seats(), T0 + 2 * TURN_MS)
    assert [type(e) for e in restarted] == [TurnRestarted]
    for event in [*events, *restarted, CameBack(2)]:
        assert RUMMY.event_from_body(RUMMY.event_to_body(event)) == event
    assert RUMMY.command_from_proto(RUMMY.command_to_proto(ComeBack())) == ComeBack()
    assert list(RUMMY.view_to_proto(GAME.view(state, 2)).rummy.forfeited) == [0, 1]


def test_a_forfeited_hand_is_shown_to_every_seat() -> None:
    _, events = time_passes(three_seats(), T0 + TURN_MS)
    forfeit = events[1]
    assert isinstance(forfeit, SeatForfeited)
    for seat in (None, 0, 1, 2):
        assert GAME.redact(forfeit, seat) == forfeit


def test_lay_offs_are_never_forced() -> None:
    # An opened seat with a card that fits a table meld still just discards.
    state = clocked(
        position(
            ["9S1 KD2", OTHER],
            "2D1",
            "3D1 4D1",
            rules=clocked_rules(),
            melds=[(0, "TS1 JS1 QS1")],
            opened=[True, False],
        )
    )
    assert any(isinstance(c, LayOff) for c in GAME.legal_commands(state, 0))
    _, events = time_passes(state, T0 + TURN_MS)
    assert not any(isinstance(e, CardsLaidOff) for e in events)
    assert events[1] == CardDiscarded(0, "KD2")
