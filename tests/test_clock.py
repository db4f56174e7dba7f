"""Turn clocks on random games (engine/clock.py, docs/rules/common.md §5.1): seats that play,
seats that are idle, time passing between batches. Forced moves are legal moves, deadlines are
exact, idle tables still finish, and a fold of the recorded batches (what a replay does) reaches
the same state and re-derives every time-out."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
from game_invariants import assert_next_deadline_is_exact, refused
from hoola.helpers import CLOCKED as HOOLA_CLOCKED
from hypothesis import given, settings
from hypothesis import strategies as st

from croupier.engine.clock import (
    ABANDON_AFTER_AWAY_SPELLS,
    NO_SEAT,
    OUTAGE_GRACE_MS,
    CameBack,
    Clocked,
    ComeBack,
    EndGame,
    TurnRestarted,
    TurnTimedOut,
)
from croupier.engine.game import CommandError, Context
from croupier.engine.gin import GinGame
from croupier.engine.hoola import HoolaGame
from croupier.engine.koikoi import KoiKoiGame
from croupier.engine.rummy import RummyGame
from croupier.engine.shuffle import Seeds

TURN_MS = 1_000
BANK_MS = 2_500
MAX_BATCHES = 3_000
#: How often a step checks the forced move against the legal list (generating it is slow).
CHECK_FORCED = 0.2

#: (game, preset, seats, rule changes) of the games that have turn clocks.
CLOCKED: list[tuple[Any, str, int, dict[str, Any]]] = [
    (GinGame(), "single-hand", 2, {}),
    (KoiKoiGame(), "nintendo-3", 2, {}),
    (RummyGame(), "standard", 3, {"max_reshuffles": 1}),
    *HOOLA_CLOCKED,
]


def _rules(game: Any, preset: str, seats: int, changes: dict[str, Any], **clock: Any) -> Any:
    return game.rules_for(preset, {**changes, **clock}, seats)


def started(
    game: Any, rules: Any, seats: int, seeds: Seeds
) -> tuple[int, Any, list[tuple[int, int | None, list[Any]]]]:
    """The time, the state and the log's first batch of a game just created."""
    now = 1_000_000
    state = game.at(game.initial_state(), now, None)
    opening = game.start(rules, seats, seeds)
    for event in opening:
        state = game.evolve(state, event)
    return now, state, [(now, None, opening)]


def play(
    game: Any, rules: Any, seats: int, seeds: Seeds, rng: random.Random, idle: set[int]
) -> tuple[Any, list[tuple[int, int | None, list[Any]]]]:
    """Play to the end: active seats move at random moments, idle seats never; what time makes
    due is recorded as batches of its own. Returns the state and the batches (time, seat,
    events) as a log would hold them."""
    now, state, batches = started(game, rules, seats, seeds)
    for _ in range(MAX_BATCHES):
        if game.is_finished(state):
            return state, batches
        assert_next_deadline_is_exact(game, state, seeds)
        for clock in game.seat_clocks(state):
            assert clock.bank_ms >= 0 and clock.deadline_ms >= state.clock.since_ms[clock.seat]
            # The forced move is one of the seat's legal moves.
            if rng.random() < CHECK_FORCED:
                forced = game.forced_command(state, clock.seat)
                assert forced in game.legal_commands(state, clock.seat)
        now += rng.choice((0, 10, 300, 900, 1_800, 4_000))
        due_at = game.next_deadline(state)
        if due_at is not None and due_at <= now:
            # The sweeper records what is due, at this instant, as a batch of its own.
            state = game.at(state, now, None)
            due = game.advance(state, Context(seeds, now))
            assert due and due[0].deadline_ms == due_at
            # Recorded late by more than the grace (an outage), a deadline restarts the turn.
            late = now - due_at > rules.outage_grace_ms > 0 and due[0].seat not in away_seats(state)
            assert isinstance(due[0], TurnRestarted if late else TurnTimedOut), (due[0], now)
            for event in due:
                state = game.evolve(state, event)
            assert game.advance(state, Context(seeds, now)) == []
            batches.append((now, None, due))
            continue
        movers = [s for s in game.to_act(state) if s not in idle]
        if not movers:
            assert due_at is not None, "a seat must act, or a seat that plays may"
            now = max(now, due_at)  # only time moves idle seats
            continue
        assert_come_back_is_listed_where_accepted(game, state)
        seat = rng.choice(movers)
        command = rng.choice(game.legal_commands(state, seat))
        events = game.decide(state, seat, command, Context(seeds, now))
        state = game.at(state, now, seat)
        for event in events:
            state = game.evolve(state, event)
        batches.append((now, seat, events))
    raise AssertionError(f"the game did not end in {MAX_BATCHES} batches")


def come_back_accepted(game: Any, state: Any, seat: int) -> bool:
    try:
        game.validate(state, seat, ComeBack())
    except CommandError:
        return False
    return True


def assert_come_back_is_listed_where_accepted(game: Any, state: Any) -> None:
    """:class:`ComeBack` is accepted from exactly the seats whose legal moves list it, and they
    are among the seats to act: where a game refuses it in its own words (Rummy), its refusals
    and the clock's listing still agree. A seat that is not away is refused (no need to list its
    moves, which is slow)."""
    for seat in range(state.seats):
        if not game.away(state, seat):
            assert not come_back_accepted(game, state, seat)
            continue
        listed = ComeBack() in game.legal_commands(state, seat)
        assert come_back_accepted(game, state, seat) == listed, (seat, state.phase)
        assert not listed or seat in game.to_act(state)


def away_seats(state: Any) -> set[int]:
    return {seat for seat, away in enumerate(state.clock.away) if away}


def replayed(game: Any, batches: list[tuple[int, int | None, list[Any]]]) -> Any:
    state = game.initial_state()
    for at_ms, seat, events in batches:
        state = game.at(state, at_ms, seat)
        for event in events:
            state = game.evolve(state, event)
    return state


@settings(max_examples=12, deadline=None)
@given(
    case=st.sampled_from(CLOCKED),
    seed=st.integers(0, 2**32 - 1),
    idle=st.sets(st.integers(0, 6), max_size=1),
    bank=st.sampled_from((0, BANK_MS)),
)
def test_clocked_random_games_finish_and_replay(
    case: tuple[Any, str, int, dict[str, Any]], seed: int, idle: set[int], bank: int
) -> None:
    game, preset, seats, changes = case
    rules = _rules(game, preset, seats, changes, turn_time_ms=TURN_MS, time_bank_ms=bank)
    seeds = Seeds(seed.to_bytes(32, "big"), ())
    rng = random.Random(seed)
    # At least one seat plays: a table of idle players alone is the next tests' (it ends
    # abandoned, or by its forced moves).
    idle = {s % seats for s in idle}
    state, batches = play(game, rules, seats, seeds, rng, idle)
    assert replayed(game, batches) == state
    timed = [e for _, _, events in batches for e in events if isinstance(e, TurnTimedOut)]
    # Each time-out is at or before the instant that recorded it; a seat is away exactly from
    # its max_timeouts-th time-out in a row (a batch of its own starts its count again).
    in_a_row = [0] * seats
    for at_ms, actor, events in batches:
        if actor is not None:
            in_a_row[actor] = 0
        for e in events:
            if isinstance(e, TurnTimedOut):
                assert e.deadline_ms <= at_ms
                in_a_row[e.seat] += 1
                assert e.away == (in_a_row[e.seat] >= rules.max_timeouts), (e, in_a_row)
    if idle:
        assert timed, "idle seats time out"


@pytest.mark.parametrize("case", CLOCKED, ids=lambda c: f"{c[0].kind}-{c[1]}")
@settings(max_examples=8, deadline=None)
@given(late=st.integers(0, 3 * OUTAGE_GRACE_MS))
def test_a_deadline_recorded_after_an_outage_restarts_the_turn(
    case: tuple[Any, str, int, dict[str, Any]], late: int
) -> None:
    """docs/rules/common.md §5.1: a deadline recorded more than ``outage_grace_ms`` late (the
    service was down) restarts the seat's turn, with its bank and its time-outs in a row kept;
    within the grace it times out; a rule set without the option (a game recorded before it)
    times out however late."""
    game, preset, seats, changes = case
    rules = _rules(game, preset, seats, changes, turn_time_ms=TURN_MS, time_bank_ms=BANK_MS)
    assert rules.outage_grace_ms == OUTAGE_GRACE_MS  # every preset sets it
    seeds = Seeds(bytes(32), ())
    state = game.at(game.initial_state(), 5_000, None)
    for event in game.start(rules, seats, seeds):
        state = game.evolve(state, event)
    (clock,) = game.seat_clocks(state)
    back = clock.deadline_ms + late  # when the service records it
    due = game.advance(game.at(state, back, None), Context(seeds, back))
    if late > OUTAGE_GRACE_MS:
        assert due == [TurnRestarted(clock.seat, clock.deadline_ms, back)]
        after = game.at(state, back, None)
        for event in due:
            after = game.evolve(after, event)
        (again,) = game.seat_clocks(after)
        # A whole turn from the instant recorded; the bank and the count as they were.
        assert (again.seat, again.deadline_ms) == (clock.seat, back + TURN_MS + BANK_MS)
        assert after.clock.timeouts == state.clock.timeouts and not again.away
        assert game.advance(after, Context(seeds, back)) == []
        assert game.legal_commands(after, clock.seat) == game.legal_commands(state, clock.seat)
    else:
        assert due[0] == TurnTimedOut(clock.seat, clock.deadline_ms, away=False)
    before_the_option = dataclasses.replace(rules, outage_grace_ms=0)
    old = game.at(game.initial_state(), 5_000, None)
    for event in game.start(before_the_option, seats, seeds):
        old = game.evolve(old, event)
    assert game.advance(game.at(old, back, None), Context(seeds, back))[0] == TurnTimedOut(
        clock.seat, clock.deadline_ms, away=False
    )


def test_an_away_seats_turn_is_forced_at_once_even_after_an_outage() -> None:
    """An away seat's turn is over as it starts: an outage gives it no turn to restart."""
    game, preset, seats, changes = CLOCKED[0]
    rules = _rules(game, preset, seats, changes, turn_time_ms=TURN_MS, max_timeouts=1)
    seeds = Seeds(bytes(32), ())
    now, state, _ = started(game, rules, seats, seeds)
    # Time out the seat once: with max_timeouts 1 it is away.
    now = game.next_deadline(state)
    state = game.at(state, now, None)
    for event in game.advance(state, Context(seeds, now)):
        state = game.evolve(state, event)
    away = away_seats(state)
    assert away
    # Its next turn, whenever it comes, is forced at once, however late the service records it.
    for _ in range(MAX_BATCHES):
        due_at = game.next_deadline(state)
        clocks = {c.seat: c for c in game.seat_clocks(state)}
        if due_at is None or game.is_finished(state):
            break
        seat = min(clocks, key=lambda s: (clocks[s].deadline_ms, s))
        if seat in away:
            back = due_at + 5 * OUTAGE_GRACE_MS
            due = game.advance(game.at(state, back, None), Context(seeds, back))
            assert isinstance(due[0], TurnTimedOut) and due[0].seat == seat
            return
        state = game.at(state, due_at, None)
        for event in game.advance(state, Context(seeds, due_at)):
            state = game.evolve(state, event)
    raise AssertionError("the away seat was never on the clock again")


@pytest.mark.parametrize("case", CLOCKED, ids=lambda c: f"{c[0].kind}-{c[1]}")
def test_a_turn_times_out_at_its_deadline_and_the_bank_is_spent_first(
    case: tuple[Any, str, int, dict[str, Any]],
) -> None:
    game, preset, seats, changes = case
    rules = _rules(game, preset, seats, changes, turn_time_ms=TURN_MS, time_bank_ms=BANK_MS)
    seeds = Seeds(bytes(32), ())
    start = 5_000
    state = game.at(game.initial_state(), start, None)
    for event in game.start(rules, seats, seeds):
        state = game.evolve(state, event)
    (clock,) = game.seat_clocks(state)
    assert clock.deadline_ms == start + TURN_MS + BANK_MS and not clock.away
    # A millisecond before the deadline nothing is due; at it the turn is over.
    assert game.advance(state, Context(seeds, clock.deadline_ms - 1)) == []
    due = game.advance(state, Context(seeds, clock.deadline_ms))
    assert due[0] == TurnTimedOut(clock.seat, clock.deadline_ms, away=False)
    after = state
    for event in due:
        after = game.evolve(after, event)
    assert after.clock.bank_ms[clock.seat] == 0 and after.clock.timeouts[clock.seat] == 1
    # A seat that acts late spends its bank by what it took beyond the turn time.
    command = game.legal_commands(state, clock.seat)[0]
    late = start + TURN_MS + 700
    moved = game.at(state, late, clock.seat)
    for event in game.decide(state, clock.seat, command, Context(seeds, late)):
        moved = game.evolve(moved, event)
    assert moved.clock.bank_ms[clock.seat] == BANK_MS - 700


@pytest.mark.parametrize("case", CLOCKED, ids=lambda c: f"{c[0].kind}-{c[1]}")
def test_away_after_max_timeouts_and_back_with_a_command(
    case: tuple[Any, str, int, dict[str, Any]],
) -> None:
    game, preset, seats, changes = case
    rules = _rules(game, preset, seats, changes, turn_time_ms=TURN_MS, max_timeouts=2)
    seeds = Seeds(bytes(range(32)), ())
    now = 0
    state = game.at(game.initial_state(), now, None)
    for event in game.start(rules, seats, seeds):
        state = game.evolve(state, event)
    away: set[int] = set()
    for _ in range(200):
        if game.is_finished(state) or away:
            break
        now = game.next_deadline(state)
        state = game.at(state, now, None)
        for event in game.advance(state, Context(seeds, now)):
            if isinstance(event, TurnTimedOut) and event.away:
                away.add(event.seat)
            state = game.evolve(state, event)
    assert away, "two time-outs in a row make a seat away"
    (seat,) = away
    assert state.clock.timeouts[seat] >= 2 and state.clock.away[seat]
    clocks = {c.seat: c for c in game.seat_clocks(state)}
    if seat in clocks:  # an away seat's turn is over as soon as it starts
        assert clocks[seat].away and clocks[seat].deadline_ms == state.clock.since_ms[seat]
    if game.is_finished(state) or getattr(state, "forfeited", ()):
        return  # nobody left to come back to
    # An away seat may come back at any time (its turns are forced as they start, so it needs a
    # move of its own): ComeBack is among its legal moves and it is among the seats to act.
    assert ComeBack() in game.legal_commands(state, seat) and seat in game.to_act(state)
    others = [s for s in range(seats) if s != seat and not state.clock.away[s]]
    for other in others:  # a seat that is not away has nothing to come back from
        assert ComeBack() not in game.legal_commands(state, other)
        with pytest.raises(CommandError):
            game.validate(state, other, ComeBack())
    # Decided on the state before its batch begins (as the service and a replay do), it brings
    # the seat back with its time-outs counted from zero; any command of its own would.
    events = game.decide(state, seat, ComeBack(), Context(seeds, now))
    assert events == [CameBack(seat)]
    back = game.at(state, now, seat)
    for event in events:
        back = game.evolve(back, event)
    assert not back.clock.away[seat] and back.clock.timeouts[seat] == 0
    assert ComeBack() not in game.legal_commands(back, seat)
    assert dataclasses.replace(back.clock) == back.clock


R_CLOCK = "docs/rules/common.md §5.1"
#: The clock's refusal of a come-back from a seat that is not away, or out of the game, or once
#: the game is over: in every game but Rummy.
CLOCK_NOT_AWAY = ("NOT_AWAY", "only an away seat comes back", R_CLOCK)
#: Rummy's own refusals (its moves refuse every command so).
RUMMY_NOT_AWAY = ("NOT_AWAY", "you are not away: play your turns", R_CLOCK)
RUMMY_FORFEITED = ("FORFEITED", "you forfeited this game (away)", R_CLOCK)
RUMMY_ROUND_OVER = ("ROUND_OVER", "the round is over", "docs/rules/rummy.md §3.1")


def _refused_as(game: Any, state: Any, seat: int, refusal: tuple[str, str, str]) -> None:
    """``ComeBack`` from ``seat`` is refused with exactly ``refusal`` (reason, message, rule),
    by ``validate`` and ``decide`` alike, and not listed."""
    refused(game, state, seat, ComeBack(), refusal[0])
    with pytest.raises(CommandError) as info:
        game.decide(state, seat, ComeBack(), Context(Seeds(bytes(32), ())))
    assert (info.value.reason, info.value.message, info.value.rule) == refusal


@pytest.mark.parametrize("forfeit", [False, True], ids=["forced", "forfeit"])
@pytest.mark.parametrize("case", CLOCKED, ids=lambda c: f"{c[0].kind}-{c[1]}")
def test_come_back_is_refused_in_each_game_s_words(
    case: tuple[Any, str, int, dict[str, Any]], forfeit: bool
) -> None:
    """The clock refuses a come-back ``NOT_AWAY`` in every game but Rummy, whose moves refuse
    every command of a seat that forfeited (``FORFEITED``) and every command once its one round
    is over (``ROUND_OVER``), a come-back too, and say ``NOT_AWAY`` in their own words."""
    game, preset, seats, changes = case
    rules = _rules(
        game,
        preset,
        seats,
        changes,
        turn_time_ms=TURN_MS,
        max_timeouts=1,
        forfeit_when_away=forfeit,
    )
    seeds = Seeds(bytes(range(32)), ())
    now = 0
    state = game.at(game.initial_state(), now, None)
    for event in game.start(rules, seats, seeds):
        state = game.evolve(state, event)
    rummy = game.kind == "rummy"
    awake = next(s for s in range(seats) if s not in game.on_clock(state))
    _refused_as(game, state, awake, RUMMY_NOT_AWAY if rummy else CLOCK_NOT_AWAY)
    now = game.next_deadline(state)
    state = game.at(state, now, None)
    for event in game.advance(state, Context(seeds, now)):
        state = game.evolve(state, event)
    (away,) = away_seats(state)
    if not game.is_finished(state):
        # No seat, and a seat past the table, are never away: refused as a seat that is not
        # (Rummy read the away flags unchecked: a forged replay's seatless come-back brought the
        # last seat back, and a seat past the table raised IndexError).
        for stranger in (NO_SEAT, seats):
            for attempt in (
                lambda at=stranger: game.validate(state, at, ComeBack()),
                lambda at=stranger: game.decide(state, at, ComeBack(), Context(seeds, now)),
            ):
                with pytest.raises(CommandError) as info:
                    attempt()
                expected = RUMMY_NOT_AWAY if rummy else CLOCK_NOT_AWAY
                assert (info.value.reason, info.value.message, info.value.rule) == expected
    if forfeit and not game.is_finished(state):  # a seat that forfeited is out for good
        _refused_as(game, state, away, RUMMY_FORFEITED if rummy else CLOCK_NOT_AWAY)
    if not game.is_finished(state):
        ended = game.decide(state, NO_SEAT, EndGame("closing"), Context(seeds, now))
        state = game.at(state, now, None)
        for event in ended:
            state = game.evolve(state, event)
    # Once the game is over an away seat has nothing to come back to.
    assert game.is_finished(state) and state.clock.away[away]
    _refused_as(game, state, away, RUMMY_ROUND_OVER if rummy else CLOCK_NOT_AWAY)


def test_the_games_leave_the_shared_plumbing_to_the_clock() -> None:
    """How the studio's and the clock's commands (EndGame, ComeBack) are routed, and how time's
    events, come-backs and forced moves join a game's own moves, is written once
    (``Clocked``, engine/clock.py); each game's adapter says only what differs (its moves module,
    who is on the clock, how a forfeit and an abandoned game end it, views and labels)."""
    shared = {
        "decide",
        "validate",
        "legal_commands",
        "to_act",
        "advance",
        "next_deadline",
        "forced_command",
        "came_back",
    }
    for game in (HoolaGame, KoiKoiGame, GinGame, RummyGame):
        assert issubclass(game, Clocked)
        assert not shared & vars(game).keys(), (game.kind, shared & vars(game).keys())


#: The games whose forced moves never end them (they never knock, meld or go out), with the
#: rule changes that leave them no other way to end: Rummy's stock rebuilt without limit.
#: Games whose forced moves never end them: Gin, and Rummy without a cap on its reshuffles (as
#: its presets had until 2026-12-06; with their cap of 3 an idle game ends STOCK_OUT).
NEVER_ENDING: list[tuple[Any, str, int, dict[str, Any]]] = [
    (GinGame(), "standard", 2, {}),
    (GinGame(), "single-hand", 2, {}),
    (RummyGame(), "standard", 2, {"max_reshuffles": 0}),
    (RummyGame(), "open-30", 4, {"max_reshuffles": 0}),
]
#: Time-outs after which a table nobody attends is taken to play on for ever.
FOR_EVER = 600


def left_alone(
    game: Any, rules: Any, seats: int, seeds: Seeds, back: tuple[int, int] | None = None
) -> tuple[Any, list[tuple[int, int | None, list[Any]]]]:
    """A game whose seats never send a command but ``back`` (once that many time-outs are past
    and that seat is away, it comes back, once), played by time alone, one batch per time-out,
    until it ends or has timed out ``FOR_EVER`` times."""
    now, state, batches = started(game, rules, seats, seeds)
    for timeouts in range(FOR_EVER):
        if game.is_finished(state):
            break
        if back is not None and timeouts >= back[0] and game.away(state, back[1]):
            seat, back = back[1], None
            events = game.decide(state, seat, ComeBack(), Context(seeds, now))
            state = game.at(state, now, seat)
            for event in events:
                state = game.evolve(state, event)
            batches.append((now, seat, events))
        now = game.next_deadline(state)
        assert now is not None, "an idle table is always on the clock"
        state = game.at(state, now, None)
        due = game.advance(state, Context(seeds, now))
        for event in due:
            state = game.evolve(state, event)
        batches.append((now, None, due))
    return state, batches


@settings(max_examples=16, deadline=None)
@given(
    case=st.sampled_from(NEVER_ENDING),
    seed=st.integers(0, 2**32 - 1),
    max_timeouts=st.integers(1, 3),
    back=st.none() | st.tuples(st.integers(0, 12), st.integers(0, 3)),
)
def test_a_table_nobody_attends_ends_abandoned(
    case: tuple[Any, str, int, dict[str, Any]],
    seed: int,
    max_timeouts: int,
    back: tuple[int, int] | None,
) -> None:
    """docs/rules/common.md §5.1: once every seat has timed out twice ``max_timeouts`` times in a
    row, the time-out that completes it ends the game, abandoned; not one time-out sooner, and a
    seat that came back meanwhile counts from zero again."""
    game, preset, seats, changes = case
    rules = _rules(game, preset, seats, changes, turn_time_ms=TURN_MS, max_timeouts=max_timeouts)
    assert rules.end_when_all_away, "every preset ends a table nobody attends"
    if back is not None:
        back = (back[0], back[1] % seats)
    seeds = Seeds(seed.to_bytes(32, "big"), ())
    state, batches = left_alone(game, rules, seats, seeds, back)
    assert game.is_finished(state), f"still on after {FOR_EVER} time-outs"
    assert replayed(game, batches) == state
    # Count each seat's time-outs in a row from the log, as a replay's reader would.
    enough = ABANDON_AFTER_AWAY_SPELLS * max_timeouts
    in_a_row = [0] * seats
    ended_at = None
    for at_ms, actor, events in batches:
        if actor is not None:
            in_a_row[actor] = 0
        for index, event in enumerate(events):
            if isinstance(event, TurnTimedOut):
                assert ended_at is None, "nothing after the end"
                in_a_row[event.seat] += 1
                if min(in_a_row) >= enough:
                    # The end follows this time-out at once, at its deadline, no forced move.
                    ended_at = event.deadline_ms
                    assert len(events) == index + 2 and at_ms >= ended_at
    assert ended_at is not None, "it ended the first time every seat had timed out enough"
    settlement = game.final_settlement([e for _, _, events in batches for e in events])
    assert settlement is not None and settlement.outcome == "ABANDONED"
    assert settlement.winners == () and sum(settlement.net) == 0
    assert not game.to_act(state) and game.next_deadline(state) is None


@pytest.mark.parametrize("case", NEVER_ENDING, ids=lambda c: f"{c[0].kind}-{c[1]}")
def test_a_game_recorded_before_the_option_is_left_to_play_on(
    case: tuple[Any, str, int, dict[str, Any]],
) -> None:
    """Games recorded before ``end_when_all_away`` (the field unset: false) replay as they were
    played: a table of idle players goes on."""
    game, preset, seats, changes = case
    rules = dataclasses.replace(
        _rules(game, preset, seats, changes, turn_time_ms=TURN_MS, max_timeouts=1),
        end_when_all_away=False,
    )
    state, _ = left_alone(game, rules, seats, Seeds(bytes(range(32)), ()))
    assert not game.is_finished(state)
    # Far past the time-outs that end a game with the option.
    assert min(state.clock.timeouts) > 10 * ABANDON_AFTER_AWAY_SPELLS * rules.max_timeouts
