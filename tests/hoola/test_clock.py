"""Hoola on the turn clock (docs/rules/hoola.md "Turn clocks", docs/rules/common.md §5.1): a time-out and its
forced move in every phase, away and back, forfeits, leaving the table, the time bank."""

from __future__ import annotations

import dataclasses
import random

from game_invariants import refused
from hypothesis import given, settings
from hypothesis import strategies as st
from test_clock import play as play_clocked
from test_clock import replayed

from croupier.engine.cards import by_rank
from croupier.engine.clock import Clock, TurnTimedOut, started
from croupier.engine.game import Context, fold
from croupier.engine.hoola.events import (
    CardDiscarded,
    CardDrawn,
    ClaimMade,
    CloseTable,
    Discard,
    DiscardTaken,
    Draw,
    HoolaEvent,
    LeaveTable,
    Meld,
    NextRound,
    Play,
    PlayDeclared,
    RoundDealt,
    RoundEnded,
    SatOut,
    SeatForfeited,
    SeatLeft,
    SitOut,
    Stop,
    TableClosed,
    ThankYou,
)
from croupier.engine.hoola.melds import hand_value
from croupier.engine.hoola.rules import KOREAN, PRESETS, ClaimPriority, rules_for
from croupier.engine.hoola.scoring import table_settlement
from croupier.engine.hoola.state import HoolaState, Phase, Turn
from croupier.engine.settlement import Settlement
from croupier.engine.shuffle import Seeds

from .helpers import GAME, SEEDS, position

TURN_MS = 1_000
START_MS = 10_000


def clocked(state: HoolaState, at_ms: int = START_MS, **options: object) -> HoolaState:
    """``state`` played on a clock of ``TURN_MS`` a turn (and ``options``), every clock started at
    ``at_ms``."""
    rules = dataclasses.replace(state.rules, turn_time_ms=TURN_MS, **options)  # type: ignore[arg-type]
    state = dataclasses.replace(state, rules=rules)
    clock = started(Clock(at_ms=at_ms), rules, state.seats)
    return dataclasses.replace(
        state, clock=dataclasses.replace(clock, on_clock=GAME.on_clock(state))
    )


def sweep(state: HoolaState, now_ms: int) -> tuple[HoolaState, list[HoolaEvent]]:
    """What the service records at ``now_ms`` by time alone (a batch of its own)."""
    state = GAME.at(state, now_ms, None)
    events = GAME.advance(state, Context(SEEDS, now_ms))
    return fold(GAME, events, state), events


def act(
    state: HoolaState, seat: int, command: object, now_ms: int
) -> tuple[HoolaState, list[HoolaEvent]]:
    """``seat``'s command recorded at ``now_ms``."""
    events = GAME.decide(state, seat, command, Context(SEEDS, now_ms))  # type: ignore[arg-type]
    return fold(GAME, events, GAME.at(state, now_ms, seat)), events


def deadline(state: HoolaState, seat: int) -> int:
    (clock,) = [c for c in GAME.seat_clocks(state) if c.seat == seat]
    return clock.deadline_ms


def forced_is_legal(state: HoolaState, seat: int) -> object:
    forced = GAME.forced_command(state, seat)
    assert forced in GAME.legal_commands(state, seat)
    return forced


def payments(settlement: Settlement) -> dict[tuple[int, int], int]:
    return {(line.payer, line.payee): line.amount for line in settlement.lines}


# --- forced moves, phase by phase -------------------------------------------------------------


def test_a_take_times_out_by_drawing_and_the_forced_play_discards_the_card_worth_most() -> None:
    # Seat 0 could stop (hand value 6), or take the lone 7 by thank-you: a forced take does neither.
    state = clocked(position(["AS 2C 3D 4H", "9C 8D TD", "TC 2H QD"], discards="7S"))
    legal = GAME.legal_commands(state, 0)
    assert Stop() in legal and ThankYou(()) in legal
    assert GAME.on_clock(state) == (0,) and forced_is_legal(state, 0) == Draw()
    assert GAME.advance(state, Context(SEEDS, START_MS + TURN_MS - 1)) == []
    after, events = sweep(state, START_MS + TURN_MS)
    timed, drawn, discarded = events
    assert timed == TurnTimedOut(0, START_MS + TURN_MS)
    assert isinstance(drawn, CardDrawn) and isinstance(discarded, CardDiscarded)
    # The time-out played the rest of the turn: the discard is the card whose loss lowers the
    # hand value most (whatever the draw brought).
    hand = state.hands[0] + (drawn.card,)
    worth = {
        c: hand_value(hand, KOREAN) - hand_value([h for h in hand if h != c], KOREAN) for c in hand
    }
    assert worth[discarded.card] == max(worth.values())
    # The next seat is on the clock from the deadline, when the log put it to act.
    assert after.turn == 1 and after.clock.since_ms[1] == START_MS + TURN_MS
    assert deadline(after, 1) == START_MS + 2 * TURN_MS


def test_a_play_times_out_laying_down_nothing_and_discarding_the_card_worth_most() -> None:
    # A set of nines could go down: the forced play lays down nothing. The 7 doubles the hand
    # value, so it is worth more than the king.
    state = clocked(
        position(["9S 9H 9D KS 7D 2C", "9C 8D", "TC 2H"], phase=Phase.PLAY, melded=[True] * 3)
    )
    assert Meld(("9S", "9H", "9D")) in GAME.legal_commands(state, 0)
    assert forced_is_legal(state, 0) == Discard("7D")
    _, events = sweep(state, START_MS + TURN_MS)
    assert events == [TurnTimedOut(0, START_MS + TURN_MS), CardDiscarded(0, "7D")]


def test_equal_cards_the_forced_discard_is_the_last_in_the_hand_as_shown() -> None:
    state = clocked(position(["KH 2C KS KC", "9C 8D", "TC 2H"], phase=Phase.PLAY))
    kings = [c for c in by_rank(state.hands[0]) if c.startswith("K")]
    assert forced_is_legal(state, 0) == Discard(kings[-1])


def sit_out_question(seats: int = 6) -> HoolaState:
    hands = ["AS 2S 3S", "AH 2H 3H", "AD 2D 3D", "AC 2C 3C", "4S 5S 6S", "4H 5H 6H", "4D 5D 6D"]
    return position(
        hands[:seats],
        rules=dataclasses.replace(KOREAN, sit_out=True, max_seats=7),
        phase=Phase.CHOOSING,
        players=(),
        turns_started=[0] * seats,
        this_turn=Turn(),
        discards="9C",
    )


def test_a_pending_sit_out_question_is_answered_sit_out() -> None:
    state = clocked(sit_out_question())
    assert GAME.on_clock(state) == (0,) and forced_is_legal(state, 0) == SitOut()
    after, events = sweep(state, START_MS + TURN_MS)
    assert events == [TurnTimedOut(0, START_MS + TURN_MS), SatOut(0, True, state.hands[0])]
    assert GAME.on_clock(after) == (1,)


def test_a_seat_that_may_not_sit_out_is_made_to_play() -> None:
    # Four of six sat out: the fifth must play (two must play the round).
    state = sit_out_question()
    for seat in range(4):
        state, _ = act(state, seat, SitOut(), 0)
    state = clocked(state)
    refused(GAME, state, 4, SitOut(), "TOO_FEW_PLAYERS")
    assert forced_is_legal(state, 4) == Play()
    _, events = sweep(state, START_MS + TURN_MS)
    assert events == [TurnTimedOut(4, START_MS + TURN_MS), PlayDeclared(4)]


def round_over(seats: int = 3, **options: object) -> HoolaState:
    """Seat 0 won the first round by a stop; the table is open (``rounds`` 0, the default)."""
    hands = ["AS 2S 3D", "9C 8D", "TC 2H", "QC QD", "JC JD"][:seats]
    state = position(hands, rules=dataclasses.replace(KOREAN, **options), melded=[True] * seats)
    over, events = act(state, 0, Stop(), 0)
    assert over.phase is Phase.ROUND_OVER and not isinstance(events[-1], TableClosed)
    return over


def test_between_rounds_the_next_dealer_is_on_the_clock_and_deals() -> None:
    over = clocked(round_over())
    # Any seat may deal; the winner, who deals, is on the clock, so an idle table still moves.
    assert GAME.to_act(over) == (0, 1, 2) and GAME.on_clock(over) == (0,)
    assert forced_is_legal(over, 0) == NextRound()
    after, events = sweep(over, START_MS + TURN_MS)
    assert events[0] == TurnTimedOut(0, START_MS + TURN_MS)
    assert isinstance(events[1], RoundDealt) and (events[1].round, events[1].dealer) == (2, 0)
    # The deal ends the time-out: the new round's first turn is a turn of its own.
    assert len(events) == 2 and after.phase is Phase.TAKE and after.round == 2
    assert after.clock.since_ms[0] == START_MS + TURN_MS


# --- away and back ----------------------------------------------------------------------------


def test_an_away_seat_is_forced_at_once_until_a_command_of_its_own() -> None:
    state = clocked(
        position(["AS 2C 3D KH", "9C 8D TD", "TC 2H QD"], discards="5S"), max_timeouts=1
    )
    state, events = sweep(state, START_MS + TURN_MS)
    assert events[0] == TurnTimedOut(0, START_MS + TURN_MS, away=True)
    # Seats 1 and 2 play their turns; seat 0's next turn is over as it starts.
    now = START_MS + TURN_MS
    for seat in (1, 2):
        now += 100
        state, _ = act(state, seat, Draw(), now)
        state, _ = act(state, seat, Discard(state.hands[seat][0]), now)
    assert state.turn == 0 and deadline(state, 0) == now
    # A command of its own brings it back: a full turn time, time-outs counted from zero.
    back, _ = act(state, 0, Draw(), now)
    assert not back.clock.away[0] and back.clock.timeouts[0] == 0
    assert deadline(back, 0) == now + TURN_MS


def test_an_away_seat_leaves_at_the_end_of_the_round_and_the_table_closes() -> None:
    state = clocked(
        position(["AS 2S 3D", "9C 8D", "TC 2H"], melded=[True] * 3, rules=KOREAN), max_timeouts=1
    )
    state = dataclasses.replace(
        state, clock=dataclasses.replace(state.clock, away=(False, True, False))
    )
    over, _ = act(state, 0, Stop(), START_MS + 50)
    assert GAME.on_clock(over) == (0, 1) and forced_is_legal(over, 1) == LeaveTable()
    closed, events = sweep(over, START_MS + 50)
    assert events[:2] == [TurnTimedOut(1, START_MS + 50, away=True), SeatLeft(1)]
    assert isinstance(events[2], TableClosed) and closed.phase is Phase.TABLE_CLOSED
    assert GAME.final_settlement(events) == table_settlement(over)


# --- the time bank ----------------------------------------------------------------------------


def test_the_bank_is_spent_after_the_turn_time_and_a_time_out_spends_it_all() -> None:
    state = clocked(
        position(["AS 2C 3D KH", "9C 8D TD", "TC 2H QD"], discards="5S"), time_bank_ms=2_500
    )
    assert deadline(state, 0) == START_MS + TURN_MS + 2_500
    # Drawing 700 ms late spends 700 ms of the bank; the discard is a step of its own.
    late = START_MS + TURN_MS + 700
    drawn, _ = act(state, 0, Draw(), late)
    assert drawn.clock.bank_ms[0] == 1_800 and deadline(drawn, 0) == late + TURN_MS + 1_800
    timed, events = sweep(drawn, late + TURN_MS + 1_800)
    assert events[0] == TurnTimedOut(0, late + TURN_MS + 1_800)
    assert (
        timed.clock.bank_ms[0] == 0
        and deadline(timed, 1) == late + TURN_MS + 1_800 + TURN_MS + 2_500
    )


# --- battle claims ----------------------------------------------------------------------------


def test_nobody_is_on_the_clock_while_claims_wait_for_their_window() -> None:
    rules = dataclasses.replace(
        KOREAN, out_of_turn_thank_you=True, claim_priority=ClaimPriority.NEAREST_IN_TURN
    )
    state = clocked(
        position(["AS 2C", "9C 8D", "TC 2H"], rules=rules, discards="7S", turn=1, top_discarder=0)
    )
    # A claim out of turn is never forced; the seat to act is on the clock until one is made.
    assert GAME.on_clock(state) == (1,) and forced_is_legal(state, 1) == Draw()
    claimed, events = act(state, 2, ThankYou(()), START_MS + 100)
    assert isinstance(events[0], ClaimMade) and GAME.on_clock(claimed) == ()
    window_end = START_MS + 100 + rules.claim_window_ms
    assert GAME.next_deadline(claimed) == window_end
    awarded, events = sweep(claimed, window_end)
    assert isinstance(events[0], DiscardTaken) and events[0].seat == 2
    assert GAME.on_clock(awarded) == (2,) and deadline(awarded, 2) == window_end + TURN_MS


# --- forfeits ---------------------------------------------------------------------------------


def test_a_forfeit_at_three_seats_plays_on_and_the_forfeiter_pays_last_and_unmelded() -> None:
    state = clocked(
        position(
            ["KS KH 2C", "3S 4S", "9C"],
            melded=[True, True, True],
            stock="5S 6D 8D JC",
            discards="QD",
        ),
        max_timeouts=1,
        forfeit_when_away=True,
    )
    after, events = sweep(state, START_MS + TURN_MS)
    assert events == [TurnTimedOut(0, START_MS + TURN_MS, away=True), SeatForfeited(0)]
    assert after.players == (1, 2) and after.forfeited == (0,)
    assert (after.turn, after.phase) == (1, Phase.TAKE) and GAME.on_clock(after) == (1,)
    refused(GAME, after, 0, Draw(), "FORFEITED")
    # Seat 1 goes out; seat 0 ranks last among the losers and pays as unmelded though it melded.
    drew, _ = act(after, 1, Draw(), START_MS + TURN_MS + 10)
    over, events = act(drew, 1, Meld(("3S", "4S", "5S")), START_MS + TURN_MS + 20)
    (result,) = [e for e in events if isinstance(e, RoundEnded)]
    assert result.winners == (1,) and payments(result.settlement) == {(2, 1): 1, (0, 1): 4}
    line = next(line for line in result.settlement.lines if line.payer == 0)
    assert [f.name for f in line.factors] == ["rank", "unmelded_multiplier"]
    assert "forfeited" in line.factors[0].reason
    # The table goes on without it: it neither deals nor leaves, and is dealt out of the next round.
    assert over.phase is Phase.ROUND_OVER and GAME.to_act(over) == (1, 2)
    assert GAME.legal_commands(over, 0) == []
    second, _ = act(over, 2, NextRound(), START_MS + 2 * TURN_MS)
    assert second.players == (1, 2) and second.hands[0] == () and second.forfeited == (0,)


def test_a_forfeit_at_two_seats_ends_the_game() -> None:
    state = clocked(
        position(["KS 7H 2C", "3S 4S"], melded=[True, True], discards="QD"),
        max_timeouts=1,
        forfeit_when_away=True,
    )
    closed, events = sweep(state, START_MS + TURN_MS)
    assert events[:2] == [TurnTimedOut(0, START_MS + TURN_MS, away=True), SeatForfeited(0)]
    result, table = events[2:]
    assert isinstance(result, RoundEnded) and isinstance(table, TableClosed)
    assert (result.outcome, result.winners) == ("FORFEIT", (1,))
    # Seat 0 pays the most it could: last (1st of one loser), unmelded, and its 7 doubled.
    assert payments(result.settlement) == {(0, 1): 1 * 2 * 2}
    assert closed.phase is Phase.TABLE_CLOSED
    assert GAME.final_settlement(events) == table.settlement
    assert table.settlement.net == (-4, 4)


def test_a_forfeit_while_seats_choose_leaves_it_out_of_the_round() -> None:
    state = clocked(sit_out_question(), max_timeouts=1, forfeit_when_away=True)
    after, events = sweep(state, START_MS + TURN_MS)
    assert events == [TurnTimedOut(0, START_MS + TURN_MS, away=True), SeatForfeited(0)]
    assert after.phase is Phase.CHOOSING and after.turn == 1 and after.round_forfeits == (0,)


def test_a_forfeited_seat_is_not_asked_in_later_rounds() -> None:
    over = dataclasses.replace(round_over(seats=3), forfeited=(1,))
    dealt, _ = act(over, 0, NextRound(), 0)
    assert dealt.players == (0, 2) and dealt.hands[1] == ()


# --- leaving the table ------------------------------------------------------------------------


def test_an_open_table_is_the_default() -> None:
    assert KOREAN.rounds == 0
    assert all(rules.rounds == 0 for rules in PRESETS.values())
    assert rules_for("korean", {}, 3).rounds == 0


def test_leave_table_closes_an_open_table_with_the_balances_so_far() -> None:
    over = round_over()
    assert LeaveTable() in GAME.legal_commands(over, 2)
    assert GAME.label(over, LeaveTable()).startswith("Leave the table")
    closed, events = act(over, 2, LeaveTable(), 0)
    assert events == [SeatLeft(2), TableClosed(1, table_settlement(over))]
    final = GAME.final_settlement(events)
    assert final is not None and final.net == over.scores and final.outcome == "TABLE_CLOSED"
    assert closed.phase is Phase.TABLE_CLOSED and GAME.legal_commands(closed, 0) == []
    # The older CloseTable still closes it the same way, naming nobody (recorded games hold it).
    _, events = act(over, 2, CloseTable(), 0)
    assert events == [TableClosed(1, table_settlement(over))]


def test_a_close_pays_the_balances_in_seat_order() -> None:
    """docs/rules/hoola.md §1.8's example: each seat down pays the first seat up still owed, in
    seat order (not each pair's debts netted); the winners are the highest balance's seats."""
    over = dataclasses.replace(round_over(4), scores=(-300, 11600, 9100, -20400))
    settlement = table_settlement(over)
    assert [(line.payer, line.payee, line.amount) for line in settlement.lines] == [
        (0, 1, 300),
        (3, 1, 11300),
        (3, 2, 9100),
    ]
    assert settlement.net == over.scores and settlement.winners == (1,)
    tied = table_settlement(dataclasses.replace(over, scores=(0, 5, 5, -10)))
    assert tied.winners == (1, 2)
    assert table_settlement(dataclasses.replace(over, scores=(0,) * 4)).winners == (0, 1, 2, 3)


def test_leaving_waits_for_the_round_to_end() -> None:
    state = position(["AS 2S 3D", "9C 8D", "TC 2H"])
    refused(GAME, state, 1, LeaveTable(), "ROUND_IN_PLAY")


# --- random games at six seats (the sit-out question on the clock) ----------------------------


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), idle=st.integers(0, 5))
def test_clocked_sit_out_games_finish_and_replay(seed: int, idle: int) -> None:
    rules = rules_for("korean", {"sit_out": True, "max_seats": 7, "turn_time_ms": TURN_MS}, 6)
    seeds = Seeds(seed.to_bytes(32, "big"), ())
    state, batches = play_clocked(GAME, rules, 6, seeds, random.Random(seed), {idle})
    assert replayed(GAME, batches) == state
    assert any(isinstance(e, TurnTimedOut) for _, _, events in batches for e in events)


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    seats=st.sampled_from((2, 3, 4, 6, 7)),
    idle=st.sets(st.integers(0, 6), max_size=2),
)
def test_clocked_games_with_forfeits_finish_replay_and_settle_to_zero(
    seed: int, seats: int, idle: set[int]
) -> None:
    overrides = {"turn_time_ms": TURN_MS, "max_timeouts": 1, "forfeit_when_away": True}
    if seats > 5:
        overrides |= {"sit_out": True, "max_seats": 7}
    rules = rules_for("korean", overrides, seats)
    seeds = Seeds(seed.to_bytes(32, "big"), ())
    idle = {s % seats for s in idle}
    state, batches = play_clocked(GAME, rules, seats, seeds, random.Random(seed), idle)
    assert replayed(GAME, batches) == state
    events = [e for _, _, batch in batches for e in batch]
    forfeits = [e.seat for e in events if isinstance(e, SeatForfeited)]
    # Seats that play are slow now and then too (the moves come at random moments).
    assert len(set(forfeits)) == len(forfeits)
    if idle:
        assert forfeits
    assert state.forfeited == tuple(sorted(forfeits))
    gone: set[int] = set()
    for event in events:
        if isinstance(event, SeatForfeited):
            gone.add(event.seat)
        if isinstance(event, RoundEnded):
            # A seat that forfeited wins no round after it, and pays in the round it left.
            assert sum(event.settlement.net) == 0 and not set(event.winners) & gone
    final = GAME.final_settlement(events)
    assert final is not None and sum(final.net) == 0
    # Seats that forfeited send nothing after it; every move they made came before.
    for seat in forfeits:
        out = next(i for i, e in enumerate(events) if e == SeatForfeited(seat))
        assert all(
            getattr(e, "seat", None) != seat
            for e in events[out + 1 :]
            if not isinstance(e, (RoundEnded, SatOut))
        )
