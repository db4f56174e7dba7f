"""Turn clocks (docs/rules/common.md §5.1): deadlines that the log makes, time-outs and forced moves.

Every game has the options ``turn_time_ms`` (0: no clock), ``time_bank_ms``, ``max_timeouts`` and
``forfeit_when_away`` in its rule set, and a :class:`Clock` in its state. Nothing here reads a
clock: the time of each batch of events comes from the log (the recorded time, given to
:meth:`Clocked.at` when a batch begins), so a replay folds the same deadlines.

Decisions (where the rules are silent):

* A seat is **on the clock** when it *must* act: whose turn it is (a take, a play, a decision, the
  defender's lay-offs). Optional actions (a battle-Hoola claim, leaving the table) never time out.
  Between rounds each game names the seat that deals the next one, if anyone (Gin, Koi-Koi), so
  that a match between idle players still moves on.
* A seat's turn time starts when the event that put it on the clock was recorded, and starts again
  with each event of its own that leaves it on the clock (a draw that asks for a discard): each step
  of a turn gets ``turn_time_ms``. What a step takes beyond it comes out of the seat's bank.
* The deadline is the first instant at which the turn is over: a command recorded at the deadline
  is too late (the service records the time-out first, so the command meets a newer version and
  is answered ABORTED). Deadline = start + ``turn_time_ms`` + the bank left; for an away seat,
  the start itself (its turns are forced at once).
* A time-out spends the whole bank. After ``max_timeouts`` time-outs in a row the seat is away
  (the ``TurnTimedOut`` event says so). Any command of the seat's own brings it back, with its
  time-outs counted from zero again; its bank is not refilled. When every seat is away, turns
  take their full time again instead of being forced at once: a table of idle players moves at a
  player's pace and whoever comes back finds a turn of its own within one turn time.
* A table nobody attends ends. Gin's and Rummy's forced moves never knock or go out, so a game
  whose every seat is away would be played for ever (Gin's hands washed at the wall, Rummy's
  stock rebuilt again and again), a cost to the service and its store with nobody watching. With
  ``end_when_all_away`` (those games' option, set by their every preset; games recorded before
  it go on as they were), once every seat still in the game has timed out ``2 × max_timeouts``
  times in a row (each away, then left ``max_timeouts`` time-outs of its own to come back), the
  time-out that completes it ends the game, abandoned, at its deadline, instead of its forced
  move: what was scored stands and nobody pays more (each game's page). Hoola's and Koi-Koi's
  forced moves end every round, so their tables end by themselves.
* The studio may end any game still on (:class:`EndGame`, the service's ``EndGame`` call: a game
  stuck with nobody at it, one a restore rolled back, a dispute): it ends at once, abandoned, as
  if nobody attended it (what was scored stands, the round or hand in play is not scored, nobody
  pays more), and the log records that the studio ended it and why (:class:`StudioEndedGame`).
  It is a command like a seat's, so a replay re-applies it; no seat may send it, and no seat's
  legal moves list it.
* A deadline the service could not keep is not held against the seat. With ``outage_grace_ms``
  (every preset sets it; games recorded before it time out whatever the delay), a deadline that
  comes to be recorded more than ``outage_grace_ms`` after it passed (the service was down, or
  its store away: on a running service a time-out is recorded within milliseconds) restarts the
  seat's turn instead (:class:`TurnRestarted`): its turn time starts again at the instant
  recorded, its bank and its time-outs in a row as they were. Before it, a service back from an
  outage recorded every deadline that passed meanwhile, one after another (the next seat's turn
  starting at the last one's deadline, inside the outage too), which could make seats away, or
  forfeit them, that never saw their turn. An away seat's turn still is forced at once: its
  deadline is its turn's start.
* A time-out plays the rest of the seat's turn: its forced move, step after step, until the seat
  is off the clock (a Gin draw and then a discard) or the round is over. Forced moves are decided at the deadline
  (``Context.now_ms`` is the deadline) by the game's own ``decide``, so they are always legal, and
  they are followed by whatever they cause (the end of a round, a reshuffle). Several time-outs may follow one another in one batch (an away seat, a
  service that was down): each is at its own deadline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from croupier.engine.game import Bounds, Context, IllegalCommand, MovesModule
from croupier.engine.shared import replaced

#: The longest turn and the largest bank a rule set may ask for (a day): a game that was accepted
#: must always be able to finish, and times stay far inside 64-bit milliseconds.
MAX_TURN_TIME_MS = 24 * 60 * 60 * 1000
MAX_TIME_BANK_MS = 24 * 60 * 60 * 1000
#: The most time-outs in a row before a seat is away.
MAX_TIMEOUTS_LIMIT = 100
#: A bound on the forced moves one batch may hold (every seat away still ends each round).
MAX_FORCED_IN_A_BATCH = 10_000
#: With ``end_when_all_away``: the game is abandoned once every seat in it has timed out this many
#: times ``max_timeouts`` in a row (away, then as many time-outs again to come back).
ABANDON_AFTER_AWAY_SPELLS = 2


@dataclass(frozen=True)
class TurnTimedOut:
    """The seat on the clock did not act by ``deadline_ms``; its forced move's events follow.
    ``away``: the seat is away after it (its ``max_timeouts``-th time-out in a row, or a later
    one), so its later turns are forced at once until it sends a command."""

    seat: int
    deadline_ms: int
    away: bool = False


@dataclass(frozen=True)
class TurnRestarted:
    """The seat's deadline passed more than ``outage_grace_ms`` before the service could record
    it (``at_ms``, when it did: it was down, or its store away), so its turn time starts again
    then, rather than the seat timing out for a turn it may never have been shown."""

    seat: int
    deadline_ms: int
    at_ms: int


@dataclass(frozen=True)
class ComeBack:
    """The command of an away seat that is back: its turns are its own again. An away seat's
    turns are forced as soon as they start, so it needs a command it may send at any time."""


@dataclass(frozen=True)
class CameBack:
    """``seat``, away, sent :class:`ComeBack` (the clock has already counted it back: any command
    of a seat's own does, as its batch begins)."""

    seat: int


@dataclass(frozen=True)
class EndGame:
    """The studio's command, never a seat's: end the game now, abandoned, saying why (``reason``,
    for people: it is recorded). Every game's command oneof holds it."""

    reason: str


@dataclass(frozen=True)
class StudioEndedGame:
    """The studio ended the game (:class:`EndGame`, ``reason`` its words); the game's own
    ending, abandoned, follows in the same batch."""

    reason: str


#: The rule a refused :class:`EndGame` cites.
R_END = "docs/rules/common.md §5.1"
#: The seat the engine is given with the studio's command, which no seat sends (a replay reads
#: it off an event recorded without a seat).
NO_SEAT = -1


@dataclass(frozen=True)
class Clock:
    """The clocks of a game's seats, as the log has made them."""

    #: When the batch being folded was recorded (while a forced move is folded: its deadline).
    at_ms: int = 0
    #: The seat whose command the batch is (while a forced move is folded: the forced seat).
    actor: int | None = None
    #: Per seat: when its current turn time started.
    since_ms: tuple[int, ...] = ()
    #: Per seat: what is left of its time bank.
    bank_ms: tuple[int, ...] = ()
    #: Per seat: time-outs in a row.
    timeouts: tuple[int, ...] = ()
    away: tuple[bool, ...] = ()
    #: The seats on the clock (that must act) after the last event.
    on_clock: tuple[int, ...] = ()


#: The clocks of a game whose rules are not known yet (every state's default).
NO_CLOCK = Clock()


class ClockRules(Protocol):
    """The clock's options, which every game's rule set has."""

    @property
    def turn_time_ms(self) -> int: ...

    @property
    def time_bank_ms(self) -> int: ...

    @property
    def max_timeouts(self) -> int: ...

    @property
    def forfeit_when_away(self) -> bool: ...

    @property
    def outage_grace_ms(self) -> int: ...


@dataclass(frozen=True)
class SeatClock:
    """One seat on the clock as a client shows it."""

    seat: int
    deadline_ms: int
    bank_ms: int
    away: bool


#: The clock's options' bounds, part of every game's ``BOUNDS`` (docs/rules/common.md).
CLOCK_BOUNDS: Bounds = {
    "turn_time_ms": (0, MAX_TURN_TIME_MS),
    "time_bank_ms": (0, MAX_TIME_BANK_MS),
    "max_timeouts": (1, MAX_TIMEOUTS_LIMIT),
    "outage_grace_ms": (0, MAX_TURN_TIME_MS),
}
#: The presets' ``outage_grace_ms``: a running service records a time-out within milliseconds of
#: its deadline (p99 under 40 ms under load, BENCHMARKS.md), so a second late is an outage.
OUTAGE_GRACE_MS = 1000


def _set(values: tuple[Any, ...], seat: int, value: Any) -> tuple[Any, ...]:
    return values[:seat] + (value,) + values[seat + 1 :]


def started(clock: Clock, rules: ClockRules, seats: int) -> Clock:
    """The clocks when the game's rules are first known: full banks, every turn time from now."""
    return replaced(
        clock,
        since_ms=(clock.at_ms,) * seats,
        bank_ms=(rules.time_bank_ms,) * seats,
        timeouts=(0,) * seats,
        away=(False,) * seats,
    )


def begin_batch(clock: Clock, rules: ClockRules, at_ms: int, actor: int | None) -> Clock:
    """The clock as a batch recorded at ``at_ms`` begins; ``actor``: the seat whose command it is.

    The actor's step ends now: what it took beyond its turn time comes out of its bank, and a
    command of its own brings it back if it was away."""
    bank, timeouts, away = clock.bank_ms, clock.timeouts, clock.away
    if actor is not None and 0 <= actor < len(bank):
        if actor in clock.on_clock:
            over = at_ms - clock.since_ms[actor] - rules.turn_time_ms
            bank = _set(bank, actor, max(0, bank[actor] - max(0, over)))
        timeouts, away = _set(timeouts, actor, 0), _set(away, actor, False)
    return replaced(clock, at_ms=at_ms, actor=actor, bank_ms=bank, timeouts=timeouts, away=away)


def follow(clock: Clock, on_clock: tuple[int, ...]) -> Clock:
    """The clock after an event that leaves ``on_clock`` on the clock: a seat newly on it, or the
    actor still on it, starts its turn time now."""
    if on_clock == clock.on_clock and clock.actor not in on_clock:
        return clock
    since = clock.since_ms
    for seat in on_clock:
        if seat not in clock.on_clock or seat == clock.actor:
            since = _set(since, seat, clock.at_ms)
    return replaced(clock, since_ms=since, on_clock=on_clock)


def timed_out(clock: Clock, event: TurnTimedOut) -> Clock:
    """The clock after a time-out: the forced move that follows is the seat's, at the deadline."""
    seat = event.seat
    return replaced(
        clock,
        at_ms=event.deadline_ms,
        actor=seat,
        bank_ms=_set(clock.bank_ms, seat, 0),
        timeouts=_set(clock.timeouts, seat, clock.timeouts[seat] + 1),
        away=_set(clock.away, seat, event.away),
    )


def restarted(clock: Clock, event: TurnRestarted) -> Clock:
    """The clock after a turn restarted: the seat's turn time starts at ``event.at_ms``."""
    return replaced(clock, since_ms=_set(clock.since_ms, event.seat, event.at_ms))


def deadline(clock: Clock, rules: ClockRules, seat: int) -> int:
    """When the seat's turn is over (the first instant it is late). An away seat's turn is over
    as it starts, unless every seat is away: then turns take their time again, so that a player
    who comes back finds the game where it was, not played through by the service."""
    if clock.away[seat] and not all(clock.away):
        return clock.since_ms[seat]
    return clock.since_ms[seat] + rules.turn_time_ms + clock.bank_ms[seat]


def seats_on_clock(clock: Clock, rules: ClockRules) -> list[SeatClock]:
    """Every seat on the clock with its deadline, its bank and whether it is away."""
    if not rules.turn_time_ms or not clock.since_ms:
        return []
    return [
        SeatClock(seat, deadline(clock, rules, seat), clock.bank_ms[seat], clock.away[seat])
        for seat in clock.on_clock
    ]


def next_deadline(clock: Clock, rules: ClockRules) -> int | None:
    """The earliest deadline on the clock, or ``None``."""
    return min((s.deadline_ms for s in seats_on_clock(clock, rules)), default=None)


class ClockedState(Protocol):
    @property
    def clock(self) -> Clock: ...

    @property
    def rules(self) -> Any: ...

    @property
    def seats(self) -> int: ...


S = TypeVar("S", bound=ClockedState)
E = TypeVar("E")
C = TypeVar("C")


class Clocked(Generic[S, E, C]):
    """A game as the service plays it, on the clock or not: its own moves (``moves_module``), and
    what it adds to be played on the clock: which seats must act (:meth:`on_clock`), how a
    forfeit and an abandoned game end it. The rest is common to every game: the studio's and the
    clock's commands (:class:`EndGame`, :class:`ComeBack`), which no game's moves module sees,
    turn time-outs, and how they join the game's own legal moves and seats to act."""

    #: The game's moves: every check, event and legal move of its own commands, its seats to
    #: act and its forced moves.
    moves_module: MovesModule[S, E, C]

    def on_clock(self, state: S) -> tuple[int, ...]:
        """The seats that must act now (their turn), in seat order."""
        raise NotImplementedError

    def forced_command(self, state: S, seat: int) -> C:
        """The move the rules make for ``seat`` when its time is out (always legal)."""
        return self.moves_module.forced_command(state, seat)

    def forfeit(self, state: S, seat: int, ctx: Context) -> list[E]:
        """The events of ``seat`` forfeiting (``forfeit_when_away``: it has just become away), at
        ``ctx.now_ms``, its deadline: it pays as the loser who pays the most under the game's
        rules, and play goes on without it where the game allows, else the game ends."""
        raise NotImplementedError

    def ends_when_all_away(self, state: S) -> bool:
        """Whether the game ends, abandoned, once nobody attends it (``end_when_all_away``: only
        games whose forced moves may never end them have the option)."""
        return False

    def abandon(self, state: S, ctx: Context, why: str | None = None) -> list[E]:
        """The events of the game ending, abandoned, at ``ctx.now_ms``: what was scored stands,
        the round in play is not scored, nobody pays more. ``why``: how it came to end, for the
        settlement's notes; ``None``, every seat in it was away for long enough (each game's own
        words, which games recorded before :class:`EndGame` hold)."""
        raise NotImplementedError

    def check_end(self, state: S, seat: int) -> None:
        """Refuse :class:`EndGame` from a seat (the studio's command has none: :data:`NO_SEAT`)
        and once the game is over."""
        if seat != NO_SEAT:
            raise IllegalCommand("STUDIO_ONLY", "only the studio ends a game", R_END)
        if self.is_finished(state):
            raise IllegalCommand("GAME_OVER", "the game is already over", R_END)

    @staticmethod
    def end_label(command: EndGame) -> str:
        """:class:`EndGame` in words (a replay's timeline shows the studio's command so)."""
        return "End the game" + (f": {command.reason}" if command.reason else "")

    def ended_by_studio(self, state: S, seat: int, command: EndGame, ctx: Context) -> list[E]:
        """The events of :class:`EndGame` (refused as :meth:`check_end` says):
        :class:`StudioEndedGame` and the game's end, abandoned."""
        self.check_end(state, seat)
        ended = StudioEndedGame(command.reason)
        why = "the studio ended the game" + (f" ({command.reason})" if command.reason else "")
        return [ended, *self.abandon(state, ctx, why)]  # type: ignore[list-item]

    def nobody_attends(self, state: S) -> bool:
        """Whether every seat still in the game has timed out ``ABANDON_AFTER_AWAY_SPELLS ×
        max_timeouts`` times in a row (docs/rules/common.md §5.1)."""
        enough = ABANDON_AFTER_AWAY_SPELLS * state.rules.max_timeouts
        timeouts = state.clock.timeouts
        return all(
            timeouts[seat] >= enough
            for seat in range(len(timeouts))
            if not self.out_of_game(state, seat)
        )

    def came_back_rules(self, state: S, event: CameBack) -> S:
        """The game's own fold of :class:`CameBack` (the clock counted the seat back as its batch
        began: most games have nothing more to note)."""
        return state

    def out_of_game(self, state: S, seat: int) -> bool:
        """Whether ``seat`` has left the game for good (forfeited) though the game goes on."""
        return False

    def away(self, state: S, seat: int) -> bool:
        away = state.clock.away
        return 0 <= seat < len(away) and away[seat]

    def may_come_back(self, state: S, seat: int) -> bool:
        """Whether ``seat`` may send :class:`ComeBack`: it is away, in a game still on."""
        return (
            self.away(state, seat)
            and not self.is_finished(state)
            and not self.out_of_game(state, seat)
        )

    def check_come_back(self, state: S, seat: int) -> None:
        """Refuse :class:`ComeBack` from ``seat`` unless it may come back: ``NOT_AWAY``. A game
        may refuse it in words of its own instead (Rummy refuses it as every move: before the
        deal, once the round is over, from a seat that forfeited), as long as it accepts exactly
        the seats :meth:`may_come_back` names, which the legal moves and the seats to act list."""
        if not self.may_come_back(state, seat):
            raise IllegalCommand(
                "NOT_AWAY", "only an away seat comes back", "docs/rules/common.md §5.1"
            )

    def came_back(self, state: S, seat: int) -> list[CameBack]:
        """The events of ``ComeBack`` from ``seat``; refused as :meth:`check_come_back` says."""
        self.check_come_back(state, seat)
        return [CameBack(seat)]

    def with_come_back(self, state: S, seat: int, legal: list[C]) -> list[C]:
        """``legal`` and, for an away seat, :class:`ComeBack` (listed last)."""
        return [*legal, ComeBack()] if self.may_come_back(state, seat) else legal  # type: ignore[list-item]

    def to_act_seen(self, state: S, viewer: int | None) -> tuple[int, ...]:
        """:meth:`to_act`, which in most games reads public state only: the same for every
        viewer (a game whose list depends on a hand tells each viewer less)."""
        return self.to_act(state)

    def with_away(self, state: S, acting: tuple[int, ...]) -> tuple[int, ...]:
        """``acting`` and every seat that may come back, in seat order."""
        back = [s for s in range(len(state.clock.away)) if self.may_come_back(state, s)]
        return tuple(sorted({*acting, *back})) if back else acting

    def between_rounds(self, state: S) -> bool:
        """Whether a round (a hand) is over and the next not dealt: a time-out that ended the
        round stops there, and dealing the next is a turn of its own."""
        return False

    def due_by_rules(self, state: S, now_ms: int) -> list[E]:
        """Events the game's own rules make due by ``now_ms``, before any turn's time-out
        (battle Hoola's claim window awarding the discard); none in most games."""
        return []

    def rules_deadline(self, state: S) -> int | None:
        """When :meth:`due_by_rules` would next have events; ``None``: never (most games)."""
        return None

    def legal_moves_complete(self, state: S, seat: int) -> bool:
        """Whether :meth:`legal_commands` lists every accepted command: so in most games (each
        game's ``tests/<kind>/test_properties.py`` checks it); a game whose list is compact says
        when it is not (Rummy)."""
        return True

    # Provided by the game (its rules engine).
    def evolve_rules(self, state: S, event: E) -> S:
        """The game's own fold, without the clock."""
        raise NotImplementedError

    def is_finished(self, state: S) -> bool:
        raise NotImplementedError

    # -- common to every game --------------------------------------------------------------------

    def decide(self, state: S, seat: int, command: C, ctx: Context) -> list[E]:
        """A seat's :class:`ComeBack` and the studio's :class:`EndGame` are answered alike in
        every game; every other command is one of the game's own moves."""
        if isinstance(command, ComeBack):
            return self.came_back(state, seat)  # type: ignore[return-value]
        if isinstance(command, EndGame):
            return self.ended_by_studio(state, seat, command, ctx)
        return self.moves_module.decide(state, seat, command, ctx)

    def validate(self, state: S, seat: int, command: C) -> None:
        """Refuse ``command`` as :meth:`decide` would, without making its events."""
        if isinstance(command, ComeBack):
            self.check_come_back(state, seat)
        elif isinstance(command, EndGame):
            self.check_end(state, seat)
        else:
            self.moves_module.validate(state, seat, command)

    def legal_commands(self, state: S, seat: int) -> list[C]:
        """The game's legal moves for ``seat`` and, for an away seat, :class:`ComeBack` (never
        :class:`EndGame`: no seat may send it)."""
        return self.with_come_back(state, seat, self.moves_module.legal_commands(state, seat))

    def to_act(self, state: S) -> tuple[int, ...]:
        """The seats with a move of the game's own, and every seat that may come back."""
        return self.with_away(state, self.moves_module.to_act(state))

    def advance(self, state: S, ctx: Context) -> list[E]:
        """What time has made due by ``ctx.now_ms``: the game's own (:meth:`due_by_rules`), then
        the turn time-outs."""
        events = self.due_by_rules(state, ctx.now_ms)
        for event in events:
            state = self.evolve(state, event)
        return events + self.time_outs(state, ctx)  # type: ignore[operator]

    def next_deadline(self, state: S) -> int | None:
        """The first of :meth:`rules_deadline` and the turn clock's deadline."""
        due = [d for d in (self.rules_deadline(state), self.clock_deadline(state)) if d is not None]
        return min(due, default=None)

    def at(self, state: S, at_ms: int, actor: int | None) -> S:
        """The state as a batch recorded at ``at_ms`` by ``actor`` (``None``: the service) begins.
        Folds of the log call it at the start of each batch."""
        clock = state.clock
        if state.rules.turn_time_ms and clock.since_ms:
            clock = begin_batch(clock, state.rules, at_ms, actor)
        else:
            clock = replaced(clock, at_ms=at_ms, actor=actor)
        return replaced(state, clock=clock)

    def evolve(self, state: S, event: E) -> S:
        if isinstance(event, TurnTimedOut):
            return replaced(state, clock=timed_out(state.clock, event))
        if isinstance(event, TurnRestarted):
            return replaced(state, clock=restarted(state.clock, event))
        if isinstance(event, CameBack):
            return self.came_back_rules(state, event)
        if isinstance(event, StudioEndedGame):
            return state  # the game's own ending follows
        after = self.evolve_rules(state, event)
        if not after.rules.turn_time_ms:
            return after
        clock = after.clock
        if not clock.since_ms:  # the event that set the rules: the clocks start
            clock = started(clock, after.rules, after.seats)
        return replaced(after, clock=follow(clock, self.on_clock(after)))

    def clock_deadline(self, state: S) -> int | None:
        """The earliest turn deadline, or ``None`` (no clock, nobody must act)."""
        return next_deadline(state.clock, state.rules)

    def seat_clocks(self, state: S) -> list[SeatClock]:
        return seats_on_clock(state.clock, state.rules)

    def time_outs(self, state: S, ctx: Context) -> list[E | TurnTimedOut | TurnRestarted]:
        """The time-outs due by ``ctx.now_ms``, each followed by its forced move's events; a
        deadline recorded more than ``outage_grace_ms`` late restarts its seat's turn instead."""
        events: list[E | TurnTimedOut | TurnRestarted] = []
        grace = state.rules.outage_grace_ms
        for _ in range(MAX_FORCED_IN_A_BATCH):
            due = [
                s for s in seats_on_clock(state.clock, state.rules) if s.deadline_ms <= ctx.now_ms
            ]
            if not due or self.is_finished(state):
                break
            late = min(due, key=lambda s: (s.deadline_ms, s.seat))
            if grace and ctx.now_ms - late.deadline_ms > grace and not late.away:
                again = TurnRestarted(late.seat, late.deadline_ms, ctx.now_ms)
                state = self.evolve(state, again)  # type: ignore[arg-type]
                events.append(again)
                continue
            clock = state.clock
            away = (
                clock.away[late.seat] or clock.timeouts[late.seat] + 1 >= state.rules.max_timeouts
            )
            timed = TurnTimedOut(late.seat, late.deadline_ms, away)
            state = self.evolve(state, timed)  # type: ignore[arg-type]
            events.append(timed)
            # Instead of a forced move, the time-out may end the seat's part (a forfeit) or
            # the game (nobody attends it).
            at_deadline = Context(ctx.seeds, late.deadline_ms)
            ending: list[E] | None = None
            if away and state.rules.forfeit_when_away:
                ending = self.forfeit(state, late.seat, at_deadline)
            elif self.ends_when_all_away(state) and self.nobody_attends(state):
                ending = self.abandon(state, at_deadline)
            if ending is not None:
                for event in ending:
                    state = self.evolve(state, event)
                events += ending
                continue
            # The time-out plays the rest of the seat's turn: every step until it is off the clock
            # (or the round is over: what comes next is another turn).
            for step in range(MAX_FORCED_IN_A_BATCH):
                if late.seat not in state.clock.on_clock or self.is_finished(state):
                    break
                if step and self.between_rounds(state):
                    break
                forced = self.decide(
                    state,
                    late.seat,
                    self.forced_command(state, late.seat),
                    Context(ctx.seeds, late.deadline_ms),
                )
                for event in forced:
                    state = self.evolve(state, event)
                events += forced
        return events


def fold_timed(
    game: Any, batches: Sequence[tuple[int, int | None, Sequence[Any]]], state: Any
) -> Any:
    """``state`` after ``batches`` of (recorded time, actor, events), each begun with ``at``."""
    for at_ms, actor, events in batches:
        state = game.at(state, at_ms, actor)
        for event in events:
            state = game.evolve(state, event)
    return state
