"""What every game offers the service: the decider protocol and its errors.

A game is a rule set plus pure functions over an immutable state (the functional event-sourcing
"decider"): ``start`` deals from the seeds, ``decide`` turns a command into events or refuses it,
``evolve`` folds one event into the state. Legal moves and validation share one code path:
``legal_commands`` enumerates candidates and keeps those that ``decide`` accepts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from croupier.engine.settlement import Settlement
from croupier.engine.shuffle import Seeds

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from croupier.engine.clock import SeatClock


class CommandError(Exception):
    """A refused command. ``reason`` is a stable UPPER_SNAKE code; ``rule`` cites a section of the rules pages
    (``docs/rules/hoola.md §1.2``)."""

    def __init__(self, reason: str, message: str, rule: str = "", field: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.rule = rule
        self.field = field


class MalformedCommand(CommandError):
    """The command cannot mean anything (unknown card, missing field): INVALID_ARGUMENT."""


class IllegalCommand(CommandError):
    """The command is well formed but the rules forbid it now: FAILED_PRECONDITION."""


class InvalidRules(CommandError):
    """A rule set or seat count that cannot be played: INVALID_ARGUMENT."""


@dataclass(frozen=True)
class Context:
    """What a decision may depend on besides the state: the seeds and the command's time."""

    seeds: Seeds
    now_ms: int = 0


S = TypeVar("S")
E = TypeVar("E")
C = TypeVar("C")
R = TypeVar("R")
# A rule set: a frozen dataclass of options.
RulesT = TypeVar("RulesT", bound="DataclassInstance")


class GameState(Protocol):
    """What the application core reads of a game's state itself (all else it asks the game):
    every game's state, a frozen dataclass, has these fields. A type only, checked by mypy
    (``croupier.contract.bindings`` names every game's state as one), never at run time."""

    @property
    def rules(self) -> object: ...

    @property
    def client_seeds(self) -> tuple[str, ...]: ...


class Game(Protocol, Generic[R, S, E, C]):
    """One game kind. Implementations are stateless; everything lives in ``S``."""

    kind: str

    @property
    def default_preset(self) -> str:
        """The preset a game gets when it names none."""

    def presets(self) -> dict[str, R]: ...

    def preset_description(self, name: str) -> str: ...

    def rules_for(self, preset: str, overrides: dict[str, Any], seats: int) -> R:
        """The effective rule set; raises :class:`InvalidRules` naming the option at fault."""

    def new_game_rules(self, preset: str, overrides: dict[str, Any], seats: int) -> R:
        """:meth:`rules_for` a game about to be created: an option that only games recorded
        before it may turn off (``KEPT_BY_NEW_GAMES``) is refused off, and an option set while
        the option it needs is off (``options_need_others``: the clock-only ones without a turn
        clock) is refused too (INVALID_OPTION). A replay's recorded rules are read back with
        :meth:`rules_for`, never this."""

    def start(self, rules: R, seats: int, seeds: Seeds) -> list[E]:
        """The opening events: the effective rules, then the first deal."""

    def initial_state(self) -> S: ...

    def evolve(self, state: S, event: E) -> S:
        """Fold one event; never fails on a recorded event."""

    def decide(self, state: S, seat: int, command: C, ctx: Context) -> list[E]:
        """The events a command produces; raises :class:`CommandError`."""

    def at(self, state: S, at_ms: int, actor: int | None) -> S:
        """The state as a batch of events recorded at ``at_ms`` begins (``actor``: the seat whose
        command it is; ``None`` for the opening events and what time made due). Every fold of
        the log calls it at the start of each batch: turn clocks run on recorded times
        (:mod:`croupier.engine.clock`)."""

    def advance(self, state: S, ctx: Context) -> list[E]:
        """Events that time has made due by ``ctx.now_ms``: a claim window's award, turn
        time-outs with their forced moves (the seeds are for what those deal). Reads apply them
        to show the game as of now; the service records them as a batch of their own."""

    def next_deadline(self, state: S) -> int | None:
        """The earliest time (ms) at which :meth:`advance` would produce events (a claim window
        closing, a turn's deadline); ``None`` when nothing is due by time alone. A service arms
        its timer with it."""

    def seat_clocks(self, state: S) -> list[SeatClock]:
        """The seats on the clock (that must act), with their deadlines, banks and away flags;
        empty without a turn clock."""

    def on_clock(self, state: S) -> tuple[int, ...]:
        """The seats the game waits on now (their turn), in seat order: those a turn clock runs
        for, whether or not the game has one; the other seats :meth:`to_act` lists may act out
        of turn."""

    def away(self, state: S, seat: int) -> bool:
        """Whether ``seat`` is away (it timed out too often: its turns are played for it until
        it comes back); never without a turn clock."""

    def validate(self, state: S, seat: int, command: C) -> None:
        """Raise :class:`CommandError` unless ``decide`` would accept the command."""

    def legal_commands(self, state: S, seat: int) -> list[C]:
        """Every command ``decide`` accepts from ``seat`` now, in a stable order."""

    def legal_moves_complete(self, state: S, seat: int) -> bool:
        """Whether :meth:`legal_commands` holds every accepted command (up to the order of cards
        and the naming of jokers); ``False`` where the list is compact and accepted compound
        commands may lie beyond it (docs/rules/common.md §5, Rummy)."""
        ...

    def to_act(self, state: S) -> tuple[int, ...]:
        """The seats with at least one legal command now, in seat order: exactly the seats whose
        :meth:`legal_commands` is not empty, read from the phase (whose turn, who may claim or
        call the next round) rather than by generating moves."""

    def to_act_seen(self, state: S, viewer: int | None) -> tuple[int, ...]:
        """:meth:`to_act` as ``viewer`` (``None``: a spectator) may be told it: its own seat
        exactly; the others as the public state shows them, a superset of :meth:`to_act` that no
        hidden card decides (whether another seat could claim a discard depends on its hand,
        and nobody is told that)."""
        ...

    def label(self, state: S, command: C) -> str:
        """The command in words for people, as it would play in ``state``."""
        ...

    def redact(self, event: E, seat: int | None) -> E:
        """The event as ``seat`` may see it (``None``: a spectator)."""

    def view(self, state: S, seat: int | None) -> Any:
        """What ``seat`` sees (``None``: a spectator): never another hand or the stock order."""

    def is_finished(self, state: S) -> bool: ...

    def settlements(self, events: list[E]) -> list[Settlement]:
        """The itemized settlement of every finished round, in order."""

    def final_settlement(self, events: list[E]) -> Settlement | None:
        """The settlement of the whole game (the table, the match) once it is over, else ``None``."""


def fold(game: Game[Any, S, E, Any], events: Sequence[E], state: S | None = None) -> S:
    """The state after ``events``."""
    current = game.initial_state() if state is None else state
    for event in events:
        current = game.evolve(current, event)
    return current


#: An option's least and greatest value (both included).
Bounds = Mapping[str, tuple[int, int]]

# Every stake, multiplier and bonus is bounded so that an accepted game can always finish: its
# amounts (a stake × every multiplier × the hand's value, summed over a table's rounds) stay far
# inside the recorded events' and settlements' integers (uint32 points, int64 amounts). Shared by
# the games' tables of bounds (``BOUNDS`` next to each rule set).
MAX_STAKE = 10_000
MAX_MULTIPLIER = 20


def check_bounds(rules: Any, bounds: Bounds) -> None:
    """Refuse an option outside its bounds (an option holding a tuple: each of its values),
    naming it: INVALID_ARGUMENT ``OUT_OF_RANGE``."""
    for option, (lowest, highest) in bounds.items():
        value = getattr(rules, option)
        for item in value if isinstance(value, tuple) else (value,):
            if not lowest <= item <= highest:
                raise InvalidRules(
                    "OUT_OF_RANGE",
                    f"option {option}: {lowest} to {highest}, not {item}",
                    field=option,
                )


def rules_from_preset(
    game_name: str,
    presets: dict[str, RulesT],
    default: str,
    preset: str,
    overrides: dict[str, Any],
    seats: int,
    validate: Callable[[RulesT, int], None],
) -> RulesT:
    """A game's effective rule set: ``preset`` (empty: ``default``) with ``overrides`` applied,
    then validated for ``seats``; raises :class:`InvalidRules` naming the preset or the option."""
    preset = preset or default
    if preset not in presets:
        raise InvalidRules(
            "UNKNOWN_PRESET",
            f"unknown {game_name} preset {preset!r}; known: {', '.join(presets)}",
            field="preset",
        )
    base = presets[preset]
    names = {f.name for f in dataclasses.fields(base)}
    for key in overrides:
        if key not in names:
            raise InvalidRules("UNKNOWN_OPTION", f"unknown {game_name} option {key!r}", field=key)
    rules = dataclasses.replace(base, **overrides)
    validate(rules, seats)
    return rules


def kept_by_new_games(rules: Any, options: dict[str, str]) -> None:
    """Refuse a new game's rule set that turns off one of ``options`` (name → why): options
    added later whose old value only games recorded before them may keep (their replays read it
    back), as a new game must not (``first_dealer_drawn``: the old rule leaked a hidden card).
    Checked where a new game's rules are made, never where recorded ones are read."""
    for option, why in options.items():
        if not getattr(rules, option):
            raise InvalidRules(
                "INVALID_OPTION",
                f"option {option}: a new game keeps it on; off is how games recorded before it "
                f"were played ({why})",
                field=option,
            )


#: Options that only a turn clock reads (docs/rules/common.md §5.1), in any game that has them.
#: Without a clock (``turn_time_ms`` 0) a value other than the option's default is accepted by the
#: rule set and then does nothing: a studio that asked for a forfeit or a time bank would launch
#: a table that has neither. ``outage_grace_ms`` and ``end_when_all_away`` are not among them:
#: every preset sets those whether or not the studio adds a clock.
CLOCK_ONLY_OPTIONS = ("time_bank_ms", "max_timeouts", "forfeit_when_away", "forced_play_least")
#: The option that turns the turn clock on.
CLOCK = "turn_time_ms"


def options_need_others(rules: Any, needs: Mapping[str, str]) -> None:
    """Refuse a new game's rule set that sets an option away from its default while the option
    it needs is off (``needs``: option → the one it needs; the clock-only options need
    :data:`CLOCK` in every game), naming the option and its value: INVALID_ARGUMENT
    ``INVALID_OPTION``. Such an option would be accepted and then do nothing. Checked where a new
    game's rules are made, never where recorded ones are read (a game recorded with such a rule
    set replays as it was played)."""
    defaults = {f.name: f.default for f in dataclasses.fields(rules)}
    every = {**dict.fromkeys(CLOCK_ONLY_OPTIONS, CLOCK), **needs}
    for option, needed in every.items():
        if option not in defaults or getattr(rules, option) == defaults[option]:
            continue
        if getattr(rules, needed):
            continue
        value = getattr(rules, option)
        shown = value.name if isinstance(value, Enum) else value
        shown = str(shown).lower() if isinstance(value, bool) else shown
        without = (
            "without a turn clock (turn_time_ms 0)"
            if needed == CLOCK
            else f"without {needed} (off)"
        )
        raise InvalidRules(
            "INVALID_OPTION",
            f"option {option}: {shown} does nothing {without}; set {needed} too, or leave "
            f"{option} out",
            field=option,
        )


def accepted(candidates: Iterable[C], validate: Callable[[C], None]) -> list[C]:
    """The candidates ``validate`` accepts, in order and once each: how every game's legal-move
    list comes from its one validation path."""
    legal: dict[C, None] = {}
    for command in candidates:
        try:
            validate(command)
        except CommandError:
            continue
        legal[command] = None
    return list(legal)


R_co = TypeVar("R_co", covariant=True)


class RulesModule(Protocol[R_co]):
    """What a game's rules module offers: its presets, their descriptions, the default one, and
    the effective rule set of a preset with overrides."""

    @property
    def DEFAULT_PRESET(self) -> str: ...

    @property
    def PRESETS(self) -> Mapping[str, R_co]: ...

    @property
    def PRESET_DESCRIPTIONS(self) -> Mapping[str, str]: ...

    def rules_for(self, preset: str, overrides: dict[str, Any], seats: int) -> R_co: ...


S_contra = TypeVar("S_contra", contravariant=True)


class MovesModule(Protocol[S_contra, E, C]):
    """What a game's moves module offers: its commands' checks and events, and the legal-move
    list that keeps the candidates those checks accept (one code path); the seats with a move;
    each seat's forced move. The studio's and the clock's commands (``EndGame``, ``ComeBack``)
    never reach it: :class:`croupier.engine.clock.Clocked` answers them alike in every game."""

    def decide(self, state: S_contra, seat: int, command: C, ctx: Context, /) -> list[E]: ...

    def validate(self, state: S_contra, seat: int, command: C, /) -> None: ...

    def legal_commands(self, state: S_contra, seat: int, /) -> list[C]: ...

    def to_act(self, state: S_contra, /) -> tuple[int, ...]: ...

    def forced_command(self, state: S_contra, seat: int, /) -> C: ...


class PresetRules(Generic[R]):
    """A game's named presets and rule sets, read from its rules module (``PRESETS``,
    ``PRESET_DESCRIPTIONS``, ``DEFAULT_PRESET``, ``rules_for``)."""

    rules_module: RulesModule[R]

    @property
    def default_preset(self) -> str:
        return self.rules_module.DEFAULT_PRESET

    def presets(self) -> dict[str, R]:
        return dict(self.rules_module.PRESETS)

    def preset_description(self, name: str) -> str:
        return self.rules_module.PRESET_DESCRIPTIONS.get(name, "")

    def rules_for(self, preset: str, overrides: dict[str, Any], seats: int) -> R:
        return self.rules_module.rules_for(preset, overrides, seats)

    def new_game_rules(self, preset: str, overrides: dict[str, Any], seats: int) -> R:
        rules = self.rules_for(preset, overrides, seats)
        kept_by_new_games(rules, getattr(self.rules_module, "KEPT_BY_NEW_GAMES", {}))
        options_need_others(rules, getattr(self.rules_module, "NEEDS", {}))
        return rules


def others_hidden(hands: Sequence[Any], seat: int | None) -> tuple[Any, ...]:
    """A deal's hands as ``seat`` sees them: its own whole, the others' cards hidden (their count
    stays). Every game's ``Hand`` record has ``seat``, ``cards`` and ``count``."""
    return tuple(h if h.seat == seat else dataclasses.replace(h, cards=()) for h in hands)
