"""A replay as a person reads it (a support agent settling a dispute, docs/timeline.md): the full
verifier's verdict, the rules as the nearest preset and what differs, then every turn with its
time, the seat, the move in words, what happened, the cards each seat held after it and the table
(who laid each meld, Koi-Koi's captured piles), and each round's settlement, every factor
explained, where the round ends.

``timeline`` builds the steps from a replay by folding its events; ``render_text`` and
``render_html`` lay them out (the HTML is one self-contained file: no scripts, no network).

A step is one batch of the log: the deal, a seat's command, or what time made due (a batch the
service recorded with no command, ``tick:<version>``). On a turn clock each time-out says which
seat timed out, at which deadline and how late it was recorded; the moves after it are marked
forced; a seat becoming away and coming back is said; and after each step the seats on the
clock are listed with their deadlines.
"""

from __future__ import annotations

import dataclasses
import html
import re
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from google.protobuf.message import DecodeError, Message

from croupier.contract.bindings import BINDINGS
from croupier.engine.cards import RANK_NAMES, RANKS, rank
from croupier.engine.clock import TurnRestarted, TurnTimedOut
from croupier.engine.game import CommandError
from croupier.engine.koikoi import cards as hanafuda
from croupier.engine.meld_solver import Meld
from croupier.engine.rummy.scoring import meld_value
from croupier.engine.settlement import (
    MatchOutcome,
    Settlement,
    factor_sign,
    factor_words,
    share_note,
    stakes,
)
from croupier.engine.shuffle import Shuffle
from croupier.log import PLAIN_FORMAT
from croupier.replays.format import Replay, iso_time, printable
from croupier.replays.verify import Report, in_play, verify
from croupier.v1 import service_pb2

M = TypeVar("M", bound=Message)

# Fields of events too long or too secret-looking to repeat in a step (they are shown otherwise).
_QUIET = {
    "rules",
    "stock",
    "hands",
    "settlement",
    "commitment",
    "client_seeds",
    "engine_version",
    "balances",
    "totals",
    "lines",  # a forfeit's settlement lines: the round's settlement repeats them
}


#: What a batch that no command made (what time made due) is called in the timeline.
TIME_MADE_DUE = "What time made due"
#: The prefix of an event a time-out forced.
FORCED = "forced: "
#: How a time-out's line ends, and how it ends instead when it ended a game nobody attended
#: (docs/rules/common.md §5.1): no move was forced then.
MOVES_FORCED = "; the moves below were forced"
NOBODY_ATTENDED = (
    "; every seat had now timed out twice as often in a row as makes a seat away, so the game "
    "ended there, abandoned, with no forced move (docs/rules/common.md §5.1)"
)
#: The settlement outcome of a game nobody attended.
ABANDONED = "ABANDONED"
#: Said of each seat's player id: no hashed event holds it, so the verdict does not cover it
#: (a support agent matching a complaint to a seat must know it is the exporter's word alone).
UNCHECKED_PLAYER = " (the exporting service's word: not in the hashed log, not verified)"
#: Where each game's rules say what a time-out forces (a forfeit and an away seat included).
CLOCK_RULES = {
    "hoola": "docs/rules/hoola.md §1.11",
    "koikoi": "docs/rules/koikoi.md, Turn clocks",
    "gin": "docs/rules/gin.md, Turn clocks",
    "rummy": "docs/rules/rummy.md §3.5",
}
#: Where turn clocks are defined for every game.
COMMON_CLOCK_RULES = "docs/rules/common.md §5.1"
#: What the studio's end of a game did, and the rule that says so: a player who lost the round in
#: play to it asks why, and the support agent answers from this line.
STUDIO_ENDED = (
    "The studio ended the game (EndGame): it ends abandoned, what was scored stands, the round in "
    f"play is not scored, nobody pays more and nobody wins ({COMMON_CLOCK_RULES}, "
    '"The studio may end a game")'
)


@dataclass(frozen=True)
class Step:
    """One batch of the log (the deal, a command, what time made due) and what it did."""

    number: int
    seat: int | None
    move: str
    happened: tuple[str, ...]
    hands: tuple[tuple[str, ...], ...]
    table: tuple[tuple[str, str], ...]
    #: The seats on the clock after the step, each with its deadline (a turn clock only).
    clocks: tuple[str, ...] = ()
    #: When the step was recorded (Unix ms).
    at_ms: int = 0
    #: The settlements the step's events record, each titled (a round's, or the final one).
    settled: tuple[tuple[str, Settlement], ...] = ()
    #: The step is the studio's command (EndGame), which no seat sends.
    studio: bool = False


@dataclass(frozen=True)
class Verification:
    """The full verifier's verdict (``croupier.replays.verify``): its checks and any divergence."""

    verified: bool
    checks: tuple[str, ...]
    divergence: str = ""


#: What a timeline built without the verifier says.
NOT_CHECKED = Verification(False, (), "not checked")


@dataclass(frozen=True)
class Timeline:
    title: str
    facts: tuple[tuple[str, str], ...]
    steps: tuple[Step, ...]
    settlements: tuple[Settlement, ...]
    final: Settlement | None
    #: When the game was created (Unix ms): the times are shown from it.
    created_at_ms: int = 0
    #: The studio's player id at each seat (none when the game was created without them).
    players: tuple[str, ...] = ()
    verification: Verification = NOT_CHECKED
    #: The game's kind (``hoola``, ``koikoi``, ``gin``, ``rummy``).
    kind: str = ""
    #: What a point is paid in stakes, in a game that scores points (Koi-Koi, Rummy, Gin); 0 in
    #: one that pays stakes as it scores (Hoola).
    stake_per_point: int = 0

    @property
    def separator(self) -> str:
        """Between the cards of a hand: Hanafuda's names are several words."""
        return ", " if self.kind == "koikoi" else " "


#: How the French-suited games' cards read (Hoola, Rummy, Gin alike): rank then suit symbol.
SUIT_SYMBOLS = {"S": "\u2660", "H": "\u2665", "D": "\u2666", "C": "\u2663"}
RANK_SHOWN = {"T": "10"}
JOKER = "Joker"
# A card's code: rank and suit, with Rummy's deck copy ("KH1") after it; or a joker ("JK2").
_CODE = re.compile(r"\b(?:([A2-9TJQK])([SHDC])[12]?|JK\d)\b")
# A card as the engines' move labels name it at length ("King of diamonds", "Joker 1").
_LONG = re.compile(
    r"\b(Ace|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Jack|Queen|King) of "
    r"(spades|hearts|diamonds|clubs)\b|\bJoker \d\b"
)
_LONG_RANKS = {name: RANKS[i] for i, name in enumerate(RANK_NAMES)}


def _short(rank: str, suit: str) -> str:
    return RANK_SHOWN.get(rank, rank) + SUIT_SYMBOLS[suit]


def card_name(kind: str, code: str) -> str:
    """A card as every timeline shows it: ``Q♦``, ``10♠``, ``Joker`` (Rummy's two decks' copies
    read alike: which copy lies where changes nothing a reader settles), and Hanafuda cards by
    their names. Text that is not a card code is returned as it is."""
    if kind == "koikoi":
        return hanafuda.name(code)
    found = _CODE.fullmatch(code)
    if found is None:
        return code
    return JOKER if found.group(1) is None else _short(found.group(1), found.group(2))


def cards_in_words(kind: str, text: str) -> str:
    """``text`` (a move as the engine labels it) with every card in it named as
    :func:`card_name` names it, whether the label wrote its code or its long name."""
    if kind == "koikoi":
        return text

    def long(found: re.Match[str]) -> str:
        if found.group(1) is None:
            return JOKER
        return _short(_LONG_RANKS[found.group(1).lower()], found.group(2)[0].upper())

    return _CODE.sub(lambda m: card_name(kind, m.group(0)), _LONG.sub(long, text))


def _words(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name).lower().capitalize()


def _enum(value: Enum) -> str:
    return value.name.lower().replace("_", " ")


def _value(kind: str, value: Any) -> str:
    """A field's value in words: no Python reprs (a flag is said by its name where it is set,
    lists are comma-separated, enums are words)."""
    if isinstance(value, str):
        named = card_name(kind, value)
        return named if named != value else cards_in_words(kind, value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return ", ".join(_value(kind, v) for v in value) if value else "none"
    names = (
        {f.name for f in dataclasses.fields(value)} if dataclasses.is_dataclass(value) else set()
    )
    if {"joker", "card"} <= names:  # a joker and what it stands for
        return f"{card_name(kind, value.joker)} as {card_name(kind, value.card)}"
    if {"kind", "cards"} <= names and "points" not in names:  # a meld on the table
        jokers = (
            f" ({', '.join(_value(kind, j) for j in value.jokers)})"
            if getattr(value, "jokers", ())
            else ""
        )
        number = f"#{value.id} " if hasattr(value, "id") else ""
        cards = " ".join(card_name(kind, c) for c in value.cards)
        return f"{number}{_enum(value.kind)} {cards}{jokers}"
    if {"kind", "points", "cards"} <= names:  # a yaku
        return f"{_words(value.kind.name.title().replace('_', ''))} {value.points}"
    if dataclasses.is_dataclass(value):
        return f"({_describe(kind, value)})"
    if isinstance(value, Enum):
        return _enum(value)
    if value is None:
        return "none"
    return str(value)


#: Fields that name seats by number: said as "seat 2" (a bare "winners 2" reads as a count).
_SEAT_FIELDS = ("winner", "winners", "knocker", "players", "forfeited")
#: Fields that hold a moment (Unix ms): a battle Hoola claim's ``at_ms``.
_MOMENT_FIELDS = ("at_ms",)
#: Fields whose 0 means "none" rather than a number: left out, as an unset field is. Rummy's
#: ``opening`` is 0 on every lay-down after a seat's opening, and "opening 0" read as an opening
#: worth nothing (a support agent answering "my opening was refused" took it for one).
_ZERO_IS_NONE = ("opening",)


#: Fields that hold one number per seat, in seat order: each said beside its seat ("hand values
#: seat 0: 16, seat 1: 16, seat 2: 7"). Bare ("hand values 16, 16, 7") a support agent settling
#: "I was scored wrong" had to count the seats to find whose value was whose.
_PER_SEAT_FIELDS = ("hand_values", "deadwood")
#: Fields said apart from the event's line, in words of their own: a Hoola round's stakes
#: (:func:`_round_stakes`) and the draw for the first dealer (:func:`first_dealer_drawn`).
_SAID_APART = ("table_multiplier", "hoola_streak", "dealer_draws")


#: Fields an outcome leaves uncounted, left out where it is that outcome. A Gin hand that washes
#: at the wall (docs/rules/gin.md, "The wall") is scored on no deadwood, and its event's
#: ``deadwood 0, 0`` read as if both hands had been melded to nothing.
_UNCOUNTED = {"WASH": ("deadwood",)}


def _describe(kind: str, event: Any, absent: dict[int, str] | None = None) -> str:
    """An event in words: its kind, then its fields (the long ones left out; a flag by its name
    where it is set). ``absent``: the seats a per-seat field has no value for, each with why
    (a Hoola seat that sat the round out holds no hand, and its "0" is no hand value)."""
    parts = []
    uncounted = _UNCOUNTED.get(getattr(event, "outcome", None) or "", ())
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name in _QUIET or value is None or value is False or value in ((), ""):
            continue
        if (f.name in _ZERO_IS_NONE and value == 0) or f.name in uncounted:
            continue
        if f.name in _SAID_APART:
            continue
        label = f.name.replace("_", " ")
        if value is True:
            parts.append(label)
        elif f.name in _PER_SEAT_FIELDS and isinstance(value, tuple):
            parts.append(f"{label} {_by_seat(value, absent or {})}")
        elif f.name in _SEAT_FIELDS:
            seats = value if isinstance(value, tuple) else (value,)
            parts.append(f"{label} {', '.join(f'seat {s}' for s in seats)}")
        elif f.name == "outcome" and isinstance(value, str):
            parts.append(f"{label} {_outcome(value)}")
        elif f.name in _MOMENT_FIELDS:
            # A battle claim's time says whether it came inside the claim window ("I claimed
            # in time"): read as the steps' times are, not as a count of ms since 1970.
            parts.append(f"at {clock_time(value)} UTC")
        else:
            parts.append(f"{label} {_value(kind, value)}")
    raised = _round_stakes(event)
    if raised:
        parts.append(raised)
    return f"{_words(type(event).__name__)}" + (f": {'; '.join(parts)}" if parts else "")


def _by_seat(values: tuple[Any, ...], absent: dict[int, str]) -> str:
    """One value a seat, each beside its seat: ``seat 0: 16, seat 1: 16, seat 2: sat out``."""
    return ", ".join(f"seat {s}: {absent.get(s, v)}" for s, v in enumerate(values))


#: Where a Hoola table raises its stakes after Hoola rounds (``hoola_table_multiplier``).
TABLE_STAKES_RULES = "docs/rules/hoola.md §1.8"


def _round_stakes(event: Any) -> str:
    """A Hoola round's stakes, where the Hoolas before it changed them, in a player's words
    (``after 2 Hoola rounds in a row, this round's stakes are ×4``); empty where nothing did.
    Said as the deal records it, "table multiplier 1; hoola streak 0" was jargon on every deal,
    for a stake nothing had raised."""
    multiplier = getattr(event, "table_multiplier", 1)
    streak = getattr(event, "hoola_streak", 0)
    if multiplier == 1 and streak == 0:
        return ""
    after = f"after {streak} Hoola round{'' if streak == 1 else 's'} in a row, " if streak else ""
    return f"{after}this round's stakes are ×{multiplier} ({TABLE_STAKES_RULES})"


#: How each game decides its first dealer from the cards turned (docs/rules/): what the seat that
#: deals drew, what seats that turn again drew, and where the rule is.
_FIRST_DEALER_RULES = {
    "hoola": ("the lowest rank (ace low)", "tied for the lowest rank", "docs/rules/hoola.md §1.1"),
    "rummy": ("the lowest rank (ace low)", "tied for the lowest rank", "docs/rules/rummy.md §3"),
    "gin": (
        "the lower rank (ace low)",
        "drew the same rank",
        'docs/rules/gin.md, "Deal and first dealer"',
    ),
    "koikoi": ("the earlier month", "drew the same month", "docs/rules/koikoi.md §2.2"),
}


def _draw_order(kind: str, card: str) -> int:
    """What decides the draw for the first dealer: a card's month (Koi-Koi), else its rank (ace
    1)."""
    return hanafuda.month(card) if kind == "koikoi" else rank(card)


def _turned(kind: str, card: str) -> str:
    """A card turned for the first deal, with what the draw compares where its name does not say
    it (a Hanafuda card's month)."""
    named = card_name(kind, card)
    return f"{named} (month {hanafuda.month(card)})" if kind == "koikoi" else named


def first_dealer_drawn(kind: str, event: Any) -> str:
    """Who won the draw for the first dealer and why, from the cards the deal records as turned:
    each seat's card, each turn again of the seats tied at the lowest, and the seat that drew the
    card the game's rule makes the dealer. Empty for a deal with no draw. Listed bare ("dealer
    draws (Dealer draw: seat 0; card 8♠), …") the cards left the agent to know the rule and
    apply it; a draw that does not make the dealer the file names (a file that is not verified)
    says so."""
    draws = tuple(getattr(event, "dealer_draws", ()))
    if not draws or kind not in _FIRST_DEALER_RULES:
        return ""
    wins, tie, rules = _FIRST_DEALER_RULES[kind]
    turns: list[str] = []
    contenders = list(range(max(d.seat for d in draws) + 1))
    position, drawn = 0, None
    while position < len(draws):
        cards = draws[position : position + len(contenders)]
        position += len(cards)
        said = ", ".join(f"seat {d.seat} turned {_turned(kind, d.card)}" for d in cards)
        if turns:
            tied = " and ".join(f"seat {s}" for s in contenders)
            said = f"{tied} {tie}, so they turned again: {said}"
        turns.append(said)
        lowest = min(_draw_order(kind, d.card) for d in cards)
        contenders = [d.seat for d in cards if _draw_order(kind, d.card) == lowest]
        if len(contenders) == 1:
            drawn = contenders[0]
            break
    dealer = event.dealer
    if drawn == dealer and position == len(draws):
        why = f"seat {dealer} drew {wins}, so seat {dealer} deals first"
    else:
        why = f"the file names seat {dealer} the first dealer, which these cards do not make"
    return f"First dealer drawn: {'; '.join(turns)}; {why} ({rules})"


def offset(ms: int) -> str:
    """A duration in ms as +H:MM:SS.mmm (negative durations signed)."""
    sign, ms = ("-", -ms) if ms < 0 else ("+", ms)
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{sign}{hours}:{minutes:02d}:{seconds:02d}.{millis:03d}"


def clock_time(ms: int) -> str:
    """A Unix time in ms as the time of day (UTC) to the millisecond."""
    return time.strftime("%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}"


def _outcome_of(event: Any) -> str | None:
    """The outcome of the settlement ``event`` carries, if it carries one."""
    settlement = getattr(event, "settlement", None)
    return settlement.outcome if isinstance(settlement, Settlement) else None


#: Where battle Hoola's claims out of turn are ruled.
CLAIM_RULES = "docs/rules/hoola.md §1.7"


def _out_of_turn(state: Any, seat: int | None, command: Any) -> str:
    """What a Hoola thank-you sent by a seat whose turn it was not is: a battle Hoola claim on
    the top discard, made while another seat was to take. Its label reads as any thank-you, and
    a player whose turn was passed over ("it was my turn", "my thank-you was ignored") is
    answered from whose turn it was and whose discard was claimed. Empty for any other command
    (every game but Hoola has no claim)."""
    if type(command).__name__ != "ThankYou" or seat is None or seat == getattr(state, "turn", seat):
        return ""
    discarder = getattr(state, "top_discarder", None)
    whose = f" on seat {discarder}'s discard" if discarder is not None else ""
    return (
        f" (out of turn: a battle Hoola claim{whose}, made while it was seat {state.turn}'s "
        f"turn to take; {CLAIM_RULES})"
    )


#: Where Rummy's opening threshold and the cards' values toward it are.
OPENING_RULES = "docs/rules/rummy.md §3.3"


def _opening(event: Any, state: Any) -> str:
    """What a Rummy opening is worth against the rule set's threshold, meld by meld: a player whose
    opening was refused ("it was over 30") is answered from how accepted ones were counted (an
    ace at a run's low end counts 1, a joker as the card it stands for), and the refused one is
    in no log. Empty for any other event (a later lay-down is no opening)."""
    if type(event).__name__ != "MeldsLaidDown" or not getattr(event, "opening", 0):
        return ""
    values = [meld_value(Meld(m.kind, m.cards, m.jokers)) for m in event.melds]
    worth = " + ".join(str(v) for v in values) + ", " if len(values) > 1 else ""
    return f" ({worth}at least {state.rules.open_threshold} needed: {OPENING_RULES})"


#: What a turn restarted after an outage says happened to its deadline.
RESTARTED = "passed while the service was away"


def _restarted(event: TurnRestarted) -> str:
    """A turn restarted after an outage, in words."""
    return (
        f"Seat {event.seat}'s deadline, {clock_time(event.deadline_ms)} UTC, {RESTARTED} "
        f"(it was recorded {event.at_ms - event.deadline_ms} ms after it, more "
        "than the rule set's outage grace): the seat's turn starts again now, with its whole "
        f"turn time ({COMMON_CLOCK_RULES})"
    )


def _timed_out(
    event: TurnTimedOut,
    recorded_at_ms: int,
    was_away: bool,
    everyone_away: bool = False,
    forfeited: bool = False,
    kind: str = "",
) -> str:
    """A time-out in words; ``was_away``: the seat was away already (its turn was forced as it
    began, unless ``everyone_away``: then turns take their whole time), else whether this
    time-out made it away; ``forfeited``: it made the seat away and, by the rule set's
    ``forfeit_when_away``, forfeited it instead of forcing a move. Each says where ``kind``'s
    rules decide it."""
    rules = CLOCK_RULES.get(kind, COMMON_CLOCK_RULES)
    late = recorded_at_ms - event.deadline_ms
    line = (
        f"Seat {event.seat} timed out: its deadline was {clock_time(event.deadline_ms)} UTC, "
        f"recorded {late} ms after it"
    )
    if forfeited:
        return line + (
            f". Seat {event.seat} is away, and with this rule set (forfeit_when_away) a seat that "
            f"becomes away forfeits: no move is forced, it plays no more ({rules})"
        )
    line += f"{MOVES_FORCED} ({rules})"
    if was_away and everyone_away:
        line += " (every seat is away: each turn takes its whole time, for whoever comes back)"
    elif was_away:
        line += " (the seat is away: its turns are forced as they begin)"
    elif event.away:
        line += (
            f". Seat {event.seat} is away from now on: its turns are forced as they begin "
            f"until it sends a command ({COMMON_CLOCK_RULES})"
        )
    return line


def _clocks(game: Any, state: Any) -> tuple[str, ...]:
    """The seats on the clock, each with its deadline, bank and whether it is away."""
    return tuple(
        f"seat {c.seat} on the clock until {clock_time(c.deadline_ms)} UTC (bank {c.bank_ms} ms"
        + (_away_clock(c.deadline_ms == state.clock.since_ms[c.seat]) if c.away else ")")
        for c in game.seat_clocks(state)
    )


def _away_clock(at_once: bool) -> str:
    """An away seat's clock: forced as its turn begins, or (every seat away) its whole turn."""
    return ", away: forced at once)" if at_once else ", away as every seat is: its whole turn)"


def _away(state: Any, seat: int | None) -> bool:
    clock = getattr(state, "clock", None)
    away: tuple[bool, ...] = getattr(clock, "away", ())
    return seat is not None and 0 <= seat < len(away) and away[seat]


def _out_of_round(state: Any) -> dict[int, str]:
    """The seats of a Hoola round whose hand its end does not show, each with why
    (docs/rules/hoola.md §1.9, common.md §5.1): a seat that sat the round out, one out of the
    table since an earlier round's forfeit, one a forfeit's end of the round found still to
    choose. The round's end records a hand value of 0 for them, which is no hand value (a seat
    that went out holds 0 too). None in the other games, whose every seat plays each round."""
    players = getattr(state, "players", None)
    if not players:
        return {}
    sat_out = {sat.seat for sat in getattr(state, "sat_out", ())}
    forfeited = set(getattr(state, "forfeited", ()))
    shown = set(players) | set(getattr(state, "round_forfeits", ()))

    def why(seat: int) -> str:
        if seat in sat_out:
            return "sat out"
        if seat in forfeited:
            return "out of the table (forfeited before this round)"
        return "no hand shown (the round ended before it chose to play)"

    return {seat: why(seat) for seat in range(state.seats) if seat not in shown}


@dataclass
class _Melds:
    """Who laid what on the table: each meld's layer, and the cards others added to it (a lay-off,
    Hoola's 7-binding, Rummy's joker swap), as the events say."""

    #: Added cards by meld (its id; Gin's knocker's melds by index): (seat, verb, cards).
    added: dict[int, list[tuple[int, str, tuple[str, ...]]]] = dataclasses.field(
        default_factory=dict
    )
    #: Gin: the seat whose melds lie on the table (the knocker).
    knocker: int | None = None

    def see(self, event: Any) -> None:
        name = type(event).__name__
        if name == "Knocked":
            self.knocker = event.seat
            self.added.clear()
        elif name in ("RoundDealt", "HandDealt"):
            self.added.clear()
        elif name == "CardLaidOff" and isinstance(event.meld, int):  # Gin: by index
            self.added.setdefault(event.meld, []).append((event.seat, "laid off", (event.card,)))
        elif name in ("CardsLaidOff", "SevensBound", "JokerSwapped"):
            verb = {"CardsLaidOff": "laid off", "SevensBound": "bound"}.get(name, "swapped in")
            cards = (event.card,) if name == "JokerSwapped" else event.cards
            self.added.setdefault(event.meld.id, []).append((event.seat, verb, cards))

    def describe(self, kind: str, key: int, meld: Any, owner: int | None) -> str:
        cards = " ".join(card_name(kind, c) for c in meld.cards)
        jokers = getattr(meld, "jokers", ())
        if jokers:  # which card each joker stands for (two jokers read alike)
            cards += " (" + ", ".join(_value(kind, j) for j in jokers) + ")"
        what = f"#{meld.id} {_enum(meld.kind)} " if hasattr(meld, "id") else ""
        by = f" (laid by seat {owner}" if owner is not None else " ("
        extra = "".join(
            f"; {' '.join(card_name(kind, c) for c in added)} {verb} by seat {seat}"
            for seat, verb, added in self.added.get(key, [])
        )
        return f"{what}{cards}{by}{extra})".replace(" ()", "").replace("(; ", "(")


#: The discard pile's top cards shown (the count of the others is said before them).
DISCARDS_SHOWN = 8


def _table(kind: str, state: Any, melds: _Melds) -> tuple[tuple[str, str], ...]:
    """What lies on the table, by name, as far as the state of each game holds it: each meld
    with who laid it and who added to it, Koi-Koi's captured piles, the discards, the stock."""
    rows: list[tuple[str, str]] = []
    field = getattr(state, "field", ())
    if field:
        rows.append(("field", ", ".join(card_name(kind, c) for c in field)))
    for meld in getattr(state, "melds", ()):
        rows.append(("meld", melds.describe(kind, meld.id, meld, meld.owner)))
    for index, meld in enumerate(getattr(state, "table", ())):
        rows.append(("knocker's meld", melds.describe(kind, index, meld, melds.knocker)))
    for seat, pile in enumerate(getattr(state, "captured", ())):
        if pile:
            rows.append((f"captured by seat {seat}", ", ".join(card_name(kind, c) for c in pile)))
    discards = getattr(state, "discards", ())
    if discards:
        below = len(discards) - DISCARDS_SHOWN
        rows.append(
            (
                "discard pile (top last)",
                (f"({below} more below) " if below > 0 else "")
                + " ".join(card_name(kind, c) for c in discards[-DISCARDS_SHOWN:]),
            )
        )
    stock = getattr(state, "stock", ())
    rows.append(("stock", f"{len(stock)} cards"))
    return tuple(rows)


#: The events whose settlement is the game's final one (the others' are a round's).
_FINAL_EVENTS = ("TableClosed", "MatchEnded")


#: A fact of the header that tells a weakness of how the game was recorded, fixed since: what a
#: support agent reads before answering "another seat knew my cards".
CAUTION = "caution"
HASHES_SHOWED_CARDS = (
    "recorded in log format 1: each seat was shown hashes of events it could not see, and could "
    "find a hidden card (a card drawn by another seat, say) by hashing each card it had not seen "
    "until one matched (docs/event-log.md). A complaint that another seat knew a card may be "
    "founded; games since are recorded in format 2, whose hashes nobody can compute before the "
    "game ends"
)
DEALER_SHOWED_A_CARD = (
    "the first dealer was chosen by the last card of the deal's shuffled deck, which is the "
    "stock's bottom card: every seat, seeing who dealt, learnt something of that hidden card "
    "(docs/shuffle.md). Games since draw for the first dealer from a shuffle of its own"
)


#: What a game calls its rounds, where it is not "round" (Gin's are hands, as its events say).
_ROUND_WORDS = {"gin": "hand"}


def _settled(kind: str, event: Any, rounds: int) -> tuple[str, Settlement] | None:
    """A settlement an event records, titled: a round's, or the game's final one."""
    settlement = getattr(event, "settlement", None)
    if not isinstance(settlement, Settlement):
        return None
    if type(event).__name__ in _FINAL_EVENTS:
        return (FINAL_SETTLEMENT, settlement)
    return (f"Settlement of {_ROUND_WORDS.get(kind, 'round')} {rounds}", settlement)


#: The title of the game's final settlement.
FINAL_SETTLEMENT = "Final settlement"


#: What an option's 0 means, where it is not a number of something (Hoola's ``rounds``: the
#: only game whose rounds may be 0).
_ZERO_MEANS = {
    "rounds": "until a seat leaves",
    "turn_time_ms": "no clock",
    "time_bank_ms": "no bank",
}


def _option(name: str, value: Any) -> str:
    """A rule option's value in words."""
    if value == 0 and not isinstance(value, bool) and name in _ZERO_MEANS:
        return f"0, {_ZERO_MEANS[name]}"
    return _value("", value)


def rules_in_words(game: Any, rules: Any, seats: int) -> tuple[str, tuple[str, ...]]:
    """The preset the rules are closest to (the fewest options differ; the default preset first
    on a tie), and each option that differs from it: ``rounds 2 (the preset's now: 0, until a
    seat leaves)``. A replay holds the effective rules, not the preset named at creation, so the
    nearest one is named; and the preset as this release has it, so an option added since the
    game was recorded reads 0 or off in the game, as it played (a support agent took one for the
    studio's override)."""
    candidates: list[tuple[str, Any]] = []
    for name, preset_rules in game.presets().items():
        try:
            candidates.append((name, game.rules_for(name, {}, seats)))
        except (CommandError, ValueError):  # a preset not for this many seats: as written
            candidates.append((name, preset_rules))
    default = game.default_preset

    def differences(preset: Any) -> list[str]:
        return [
            f"{f.name.replace('_', ' ')} {_option(f.name, getattr(rules, f.name))} "
            f"(the preset's now: {_option(f.name, getattr(preset, f.name))})"
            for f in dataclasses.fields(rules)
            if getattr(rules, f.name) != getattr(preset, f.name)
        ]

    name, preset = min(candidates, key=lambda c: (len(differences(c[1])), c[0] != default))
    return name, tuple(differences(preset))


def _hashed(data: bytes, kind: type[M], copy: M) -> M:
    """The message the hashed bytes hold; the decoded copy where they do not parse (a file that
    is not verified, which the badge says)."""
    if not data:  # no hashed bytes (not a replay's complete event): the copy is all there is
        return copy
    try:
        return kind.FromString(data)
    except DecodeError:
        return copy


#: What the page says of a file without a signature: only that, since the page cannot tell a file
#: its exporter never signed from one whose signature was removed.
UNSIGNED = (
    "none: the file carries no signature (its exporter had no replay key, or the signature was "
    "removed); `croupier replay verify FILE --against-store URL` checks it against the record"
)


def _signature(replay: Replay) -> str:
    """Whose signature the file carries (docs/replay-format.md, "Signed files"). The page
    checks none: it has no keys, and a signature is only worth the key it is checked with."""
    if not replay.footer.HasField("signature"):
        # Not "the exporter had no key": anyone can take a signature out of a file, and a file
        # edited after it was signed is most easily passed off that way.
        return UNSIGNED
    return (
        f"by key {replay.footer.signature.key_id}, not checked here: `croupier replay verify FILE "
        "--public-key ed25519:…` checks it against the service's published key (and with it the "
        "player ids)"
    )


#: What the page says in place of the turns of a file the engine cannot follow.
NOT_LAID_OUT = (
    "not laid out: this file's events are no game the rules could reach (the badge above says "
    "where the file fails), so they cannot be followed turn by turn; read nothing of it as "
    "evidence"
)
#: What it says in place of the turns of a game that was not over when its file was made (a
#: seat's or a spectator's copy of a game in play, or a file without the revealed seed).
NOT_OVER = (
    "not laid out: the game was not over when this file was made (its seed is still secret; a "
    "seat's or a spectator's copy also leaves the hidden cards out), so nothing in it can be "
    "checked yet and no hand is shown; a game has a timeline once it is over: export its replay "
    'then (docs/timeline.md, "A game still going")'
)


def timeline(replay: Replay) -> Timeline:
    """The game turn by turn, under the full verifier's verdict; for a file that is not verified
    and cannot be followed (:data:`NOT_LAID_OUT`, :data:`NOT_OVER`), the verdict and the
    header's facts only."""
    report = verify(replay)
    if in_play(replay):
        # A game still in play: folded, a copy without the hidden cards shows hands and a stock
        # that were never dealt, or fails; and a complete copy would show every hand of a game
        # its players are still playing. Neither is for a page attached to a ticket.
        return _not_laid_out(replay, report, NOT_OVER)
    try:
        return _laid_out(replay, report)
    except Exception:
        # The engine folds games its rules reached. A file that is not verified may hold events
        # none reaches, its chain remade after the edit (a card no hand holds, a seat the table
        # lacks, a table of no seats): its page says so under the red badge, where `replay show`
        # once stopped with a traceback. A verified file is a game the rules reached, so a
        # failure there is a bug: raised.
        if report.ok:
            raise
        return _not_laid_out(replay, report, NOT_LAID_OUT)


def _verification(report: Report) -> Verification:
    return Verification(
        report.ok,
        tuple(report.checks),
        str(report.divergence) if report.divergence is not None else "",
    )


def _not_laid_out(replay: Replay, report: Report, why: str) -> Timeline:
    """The page of a file whose turns cannot be laid out: its verdict, what its header says
    (each fact under the red badge, as on any page of a file that is not verified), and why."""
    header = replay.header
    binding = BINDINGS.get(header.kind)
    kind = binding.game.kind if binding is not None else ""
    facts = (
        ("game", header.game_id),
        ("created", iso_time(header.created_at_ms)),
        ("seats", str(header.seats)),
        ("commitment", header.commitment),
        ("client seeds", ", ".join(header.client_seeds) or "none"),
        ("signature", _signature(replay)),
        ("turns", why),
    )
    return Timeline(
        f"{_KIND_NAMES.get(kind, 'A game')} — game {header.game_id}",
        facts,
        (),
        (),
        None,
        header.created_at_ms,
        (),
        _verification(report),
        kind,
    )


def _laid_out(replay: Replay, report: Report) -> Timeline:
    header = replay.header
    binding = BINDINGS[header.kind]
    game = binding.game
    kind = game.kind
    state = game.initial_state()
    steps: list[Step] = []
    current: dict[str, Any] | None = None
    game_events = []
    melds = _Melds()
    rounds = 0
    players = tuple(header.players)

    def close() -> None:
        if current is not None:
            steps.append(
                Step(
                    current["number"],
                    current["seat"],
                    current["move"],
                    tuple(current["happened"]),
                    tuple(tuple(card_name(kind, c) for c in h) for h in state.hands),
                    _table(kind, state, melds),
                    _clocks(game, state),
                    current["at"],
                    tuple(current["settled"]),
                    current["studio"],
                )
            )

    for stored in replay.events:
        # What the chain covers (the hashed bytes), not the decoded copy beside them: in a file
        # that is not verified the two may differ, and the badge speaks of the hashed bytes.
        body = _hashed(stored.payload, service_pb2.EventBody, stored.body)
        if body.WhichOneof("body") != binding.field:
            continue
        event = binding.event_from_body(body)
        if (
            current is None
            or stored.command_id != current["command_id"]
            or stored.command_payload  # a command's batch, whatever its id (a seat once could
            # take the deal's id, "create")
        ):
            # A new batch: the deal, a command, or what time made due (no command).
            close()
            seat = stored.seat if stored.HasField("seat") else None
            if stored.command_payload:
                command = binding.command_from_proto(
                    _hashed(stored.command_payload, service_pb2.Command, stored.command)
                )
                move = cards_in_words(kind, game.label(state, command)) + _out_of_turn(
                    state, seat, command
                )
            else:
                move = "The game is created and dealt" if current is None else TIME_MADE_DUE
            was_away = _away(state, seat)
            # Every fold calls ``at`` as a batch begins: turn clocks run on recorded times.
            state = game.at(state, stored.recorded_at_ms, seat if stored.command_payload else None)
            happened = []
            if was_away and not _away(state, seat):
                happened.append(f"Seat {seat} came back (a command of its own)")
            studio = seat is None and bool(stored.command_payload)
            if studio:
                happened.append(STUDIO_ENDED)
            current = {
                "number": stored.version,
                "seat": seat,
                "move": move,
                "happened": happened,
                "command_id": stored.command_id,
                "forced": False,
                "at": stored.recorded_at_ms,
                "settled": [],
                "studio": studio,
            }
        if isinstance(event, TurnTimedOut):
            was_away = _away(state, event.seat)
            everyone_away = all(getattr(getattr(state, "clock", None), "away", ()) or (False,))
            forfeited = (
                event.away
                and not was_away
                and bool(getattr(getattr(state, "rules", None), "forfeit_when_away", False))
            )
            current["happened"].append(
                _timed_out(event, stored.recorded_at_ms, was_away, everyone_away, forfeited, kind)
            )
            # A forfeit forces no move: the events after it are the forfeit's.
            current["forced"] = not forfeited
        elif isinstance(event, TurnRestarted):
            current["happened"].append(_restarted(event))
        elif current["forced"] and _outcome_of(event) == ABANDONED:
            # The time-out ended the game instead of forcing a move: its line says so.
            timed_out = current["happened"][-1]
            cut = timed_out.find(MOVES_FORCED)
            if cut >= 0:
                current["happened"][-1] = timed_out[:cut] + NOBODY_ATTENDED
            current["happened"].append(_describe(kind, event))
        else:
            prefix = FORCED if current["forced"] else ""
            current["happened"].append(
                prefix + _describe(kind, event, _out_of_round(state)) + _opening(event, state)
            )
            drawn = first_dealer_drawn(kind, event)
            if drawn:
                current["happened"].append(drawn)
        if isinstance(getattr(event, "settlement", None), Settlement) and (
            type(event).__name__ not in _FINAL_EVENTS
        ):
            rounds += 1  # a round's settlement (the final one is titled as such)
        settled = _settled(kind, event, rounds)
        if settled is not None:
            current["settled"].append(settled)
        melds.see(event)
        state = game.evolve(state, event)
        game_events.append(event)
    close()
    rules: Any = getattr(state, "rules", None)
    turn_ms = getattr(rules, "turn_time_ms", 0)
    clock_fact = (
        (
            (
                "turn clock",
                f"{turn_ms} ms a turn, a bank of {rules.time_bank_ms} ms, away after "
                f"{rules.max_timeouts} time-outs in a row"
                + (" (an away seat forfeits)" if rules.forfeit_when_away else "")
                + (
                    f"; a deadline recorded over {rules.outage_grace_ms} ms late (an outage) "
                    "restarts the turn"
                    if getattr(rules, "outage_grace_ms", 0)
                    else ""
                )
                + (
                    "; a table nobody attends ends, abandoned"
                    if getattr(rules, "end_when_all_away", False)
                    else ""
                ),
            ),
        )
        if turn_ms
        else ()
    )
    preset, differences = (
        rules_in_words(game, rules, header.seats) if rules is not None else ("none", ())
    )
    cautions: list[tuple[str, str]] = []
    if (header.log_format or PLAIN_FORMAT) == PLAIN_FORMAT:
        cautions.append((CAUTION, HASHES_SHOWED_CARDS))
    if getattr(rules, "first_dealer_drawn", True) is False:
        cautions.append((CAUTION, DEALER_SHOWED_A_CARD))
    facts = (
        ("game", header.game_id),
        ("created", iso_time(header.created_at_ms)),
        ("seats", str(header.seats)),
        *((f"seat {s}", f"player {p}{UNCHECKED_PLAYER}") for s, p in enumerate(players)),
        ("rules", f"preset {preset}" + ("" if differences else ", as it is")),
        *(("differs from the preset", d) for d in differences),
        *clock_fact,
        *cautions,
        ("engine version", header.engine_version),
        ("commitment", header.commitment),
        ("server seed", replay.footer.server_seed),
        ("client seeds", ", ".join(header.client_seeds) or "none"),
        ("signature", _signature(replay)),
        *(_shuffled(kind, shuffle) for shuffle in report.shuffles),
    )
    return Timeline(
        f"{_KIND_NAMES.get(kind, kind)} — game {header.game_id}",
        facts,
        tuple(steps),
        tuple(game.settlements(game_events)),
        game.final_settlement(game_events),
        header.created_at_ms,
        players,
        _verification(report),
        kind,
        getattr(rules, "stake_per_point", 0),
    )


def _shuffled(kind: str, shuffle: Shuffle) -> tuple[str, str]:
    """A shuffle the verifier re-derived from the seeds, as a fact: which (its round and
    purpose, as docs/shuffle.md names them) and the cards in the order it put them."""
    cards = (", " if kind == "koikoi" else " ").join(card_name(kind, c) for c in shuffle.result)
    return (
        f"shuffled from the seeds: round {shuffle.round_no}, {shuffle.purpose!r}",
        f"{len(shuffle.result)} cards, in the order the shuffle put them: {cards}",
    )


#: Each game's name as a reader knows it.
_KIND_NAMES = {"hoola": "Hoola", "koikoi": "Koi-Koi", "gin": "Gin Rummy", "rummy": "Rummy"}


# --- text -------------------------------------------------------------------------------------


def _outcome(name: str) -> str:
    """An outcome's name (``STOCK_OUT``) in words."""
    return name.lower().replace("_", " ")


#: What a settlement with such a factor says once, before its lines, where the factor's own reason
#: ("seat 0 is -2 over 1 round(s), seat 2 +7") does not say how it is paid.
_FACTOR_RULES = {
    "table_balance": (
        "at the table's close each seat that is down over its rounds pays what it is down to the "
        "seats that are up, in seat order, each seat up paid in full before the next "
        f"({TABLE_STAKES_RULES})"
    ),
}


def _settlement_notes(settlement: Settlement, stake_per_point: int) -> list[str]:
    """What the page says of a settlement beyond its record: how a points game's points become
    stakes (the line's factors show the rate only where it is not 1), and how a factor that its
    reason does not explain is paid."""
    out = []
    if stake_per_point and settlement.lines:
        out.append(
            f"each point is paid as {stakes(stake_per_point)} (the rule set's stake per point)"
        )
    named = {f.name for line in settlement.lines for f in line.factors}
    out += [rule for name, rule in _FACTOR_RULES.items() if name in named]
    return out


def _net(settlement: Settlement) -> str:
    return "net, in stakes: " + ", ".join(f"seat {s} {n:+d}" for s, n in enumerate(settlement.net))


def _settlement_lines(kind: str, settlement: Settlement, stake_per_point: int = 0) -> list[str]:

    def words(text: str) -> str:  # the engine's notes and reasons name cards by their codes
        return cards_in_words(kind, text)

    winners = ", ".join(f"seat {w}" for w in settlement.winners) or "none"
    out = [f"{_outcome(settlement.outcome)}: winner(s) {winners}"]
    out += [f"  note: {words(note)}" for note in settlement.notes]
    out += [f"  {note}" for note in _settlement_notes(settlement, stake_per_point)]
    for line in settlement.lines:
        share = share_note(line.amount, line.factors, len(settlement.winners))
        paid = f"  seat {line.payer} pays seat {line.payee}: {stakes(line.amount)}"
        out.append(f"{paid} ({share})" if share else paid)
        for index, factor in enumerate(line.factors):
            sign = factor_sign(index, factor)
            out.append(f"    {sign} {factor_words(factor)} {factor.value}: {words(factor.reason)}")
    out.append(f"  {_net(settlement)}")
    return out


#: Where a forfeit's settlement is said to be the game's result, apart from its rounds.
FORFEIT_RULES = f"{COMMON_CLOCK_RULES}, Forfeit"


def final_and_rounds(t: Timeline) -> str:
    """How the final settlement stands to the rounds' settlements above it, for a game that
    settles both (Hoola's table, the matches of Koi-Koi and Gin): a player who added the final
    payment to the rounds' ones complained of paying twice ("I lost points I never owed"). The
    sums are the settlements' own (their ``net``), so the line says what the file holds; empty
    where nothing is settled apart (Rummy's one round is its final settlement; a game ended before
    its first round was scored)."""
    final = t.final
    if final is None or not t.settlements or final in t.settlements:
        return ""
    netted = tuple(sum(s.net[seat] for s in t.settlements) for seat in range(len(final.net)))
    nets = ", ".join(f"seat {s} {n:+d}" for s, n in enumerate(netted))
    rounds = f"{len(t.settlements)} {_ROUND_WORDS.get(t.kind, 'round')} settlement(s) above"
    if netted == tuple(final.net):
        return f"in all: the {rounds} netted together ({nets}), not owed on top of them"
    why = (
        f"a forfeit's settlement is the game's result ({FORFEIT_RULES})"
        if final.outcome == MatchOutcome.FORFEIT
        else "the game's own result"
    )
    return f"{why}: not the {rounds} netted together, which come to {nets}"


def verdict(t: Timeline) -> str:
    """The badge's words."""
    if t.verification.verified:
        return "Verified"
    return f"NOT verified: {t.verification.divergence}"


def _who(t: Timeline, seat: int) -> str:
    return f"seat {seat}" + (f" ({t.players[seat]})" if seat < len(t.players) else "")


def _nobodys(step: Step) -> str:
    """Who made a step no seat made: the studio's command, else the service (the deal, what
    time made due)."""
    return "the studio" if step.studio else "the service"


def render_text(t: Timeline) -> str:
    out = [t.title, f"  {verdict(t)} (croupier replay verify)"]
    out += [f"  {k}: {v}" for k, v in t.facts] + [""]
    for step in t.steps:
        who = _who(t, step.seat) if step.seat is not None else _nobodys(step)
        out.append(f"#{step.number} {who}: {step.move}")
        out.append(f"    at {iso_time(step.at_ms)} ({offset(step.at_ms - t.created_at_ms)})")
        out += [f"    {line}" for line in step.happened]
        out += [
            f"    hand of {_who(t, s)}: {t.separator.join(h) or '—'}"
            for s, h in enumerate(step.hands)
        ]
        out += [f"    {label}: {text}" for label, text in step.table]
        out += [f"    {line}" for line in step.clocks]
        for title, settlement in step.settled:
            out += [f"    {title}"] + [
                f"    {line}" for line in _settlement_lines(t.kind, settlement, t.stake_per_point)
            ]
            relation = final_and_rounds(t) if title == FINAL_SETTLEMENT else ""
            if relation:
                out.append(f"      {relation}")
    # Each line may quote the file's own strings (the player ids, the signature's key id).
    return "\n".join(printable(line) for line in out) + "\n"


# --- HTML -------------------------------------------------------------------------------------

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; } h3 { font-size: 1em; }
table { border-collapse: collapse; width: 100%; }
td, th { border: 1px solid #ccc; padding: 4px 6px; vertical-align: top; text-align: left; }
th { background: #f3f3f3; } .move { font-weight: 600; } .ev { color: #555; }
.hand { font-family: ui-monospace, monospace; } .factor { color: #444; }
.timeout { color: #a40000; font-weight: 600; } .forced { color: #8a5a00; }
.came-back { color: #1a6a1a; font-weight: 600; } .clock { color: #335; font-size: 0.9em; }
.move.tick { color: #8a5a00; } .time { white-space: nowrap; font-size: 0.9em; }
.offset { color: #666; } .badge { display: inline-block; padding: 4px 10px; border-radius: 4px;
  font-weight: 700; color: #fff; } .badge.verified { background: #1a7a1a; }
.badge.not-verified { background: #b00020; } .divergence { color: #b00020; }
.facts th { width: 14em; } .settle > td { background: #f6f9ff; }
.settlement table { width: auto; } .red { color: #c00; }
th.narrow { width: 3em; } th.when { width: 11em; } th.hands { width: 30%; }
th.tablecol { width: 24%; }
"""


def _html_cards(text: str) -> str:
    """Escaped, with hearts and diamonds in red."""
    escaped = html.escape(text)
    return re.sub(r"(\S*[\u2665\u2666])", r"<span class='red'>\1</span>", escaped)


def _html_settlement(
    kind: str, title: str, settlement: Settlement, relation: str = "", stake_per_point: int = 0
) -> str:
    """A settlement's section; ``relation``: how a final settlement stands to the rounds'."""
    e = html.escape
    rows = []
    for line in settlement.lines:
        factors = "".join(
            f"<li class='factor'>{factor_sign(i, f)} <b>{e(factor_words(f))}</b> "
            f"{f.value}: "
            f"{_html_cards(cards_in_words(kind, f.reason))}</li>"
            for i, f in enumerate(line.factors)
        )
        share = share_note(line.amount, line.factors, len(settlement.winners))
        rows.append(
            f"<tr class='line'><td>seat {line.payer}</td><td>seat {line.payee}</td>"
            f"<td>{stakes(line.amount)}{f' ({e(share)})' if share else ''}</td>"
            f"<td><ul>{factors}</ul></td></tr>"
        )
    notes = "".join(f"<li>{_html_cards(cards_in_words(kind, n))}</li>" for n in settlement.notes)
    notes += "".join(
        f"<li class='how'>{e(n)}</li>" for n in _settlement_notes(settlement, stake_per_point)
    )
    winners = ", ".join(f"seat {w}" for w in settlement.winners) or "none"
    return (
        f"<section class='settlement'><h3>{e(title)}: {e(_outcome(settlement.outcome))}, winner(s) "
        f"{e(winners)}</h3><ul>{notes}</ul><table><tr><th>payer</th><th>payee</th>"
        f"<th>amount</th><th>why</th></tr>{''.join(rows)}</table><p>{e(_net(settlement))}</p>"
        + (f"<p class='relation'>{e(relation)}</p>" if relation else "")
        + "</section>"
    )


def _css(line: str) -> str:
    """The class of a line of what happened: a time-out, a forced move, a return, an event."""
    if line.startswith("Seat ") and " timed out: " in line:
        return "ev timeout"
    if line.startswith(FORCED):
        return "ev forced"
    if line.startswith("Seat ") and " came back" in line:
        return "ev came-back"
    return "ev"


def render_html(t: Timeline) -> str:
    e = html.escape
    facts = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in t.facts)
    badge_class = "verified" if t.verification.verified else "not-verified"
    badge = f"<p><span class='badge {badge_class}' id='badge'>{e(verdict(t))}</span>"
    if t.verification.verified:
        badge += (
            " <span>chain, seeds, every deck, every event re-applied and every settlement "
            "re-derived by croupier replay verify</span>"
        )
    else:
        badge += f" <span class='divergence'>{e(t.verification.divergence)}</span>"
    badge += "</p>"
    steps = []
    for step in t.steps:
        who = e(_who(t, step.seat) if step.seat is not None else _nobodys(step))
        happened = "".join(f"<div class='{_css(h)}'>{_html_cards(h)}</div>" for h in step.happened)
        hands = "".join(
            f"<div class='hand'>{e(_who(t, s))}: {_html_cards(t.separator.join(h) or '—')}</div>"
            for s, h in enumerate(step.hands)
        )
        table = "".join(f"<div>{e(label)}: {_html_cards(text)}</div>" for label, text in step.table)
        table += "".join(f"<div class='clock'>{e(line)}</div>" for line in step.clocks)
        tick = " tick" if step.move == TIME_MADE_DUE else ""
        when = (
            f"<div class='time'>{e(iso_time(step.at_ms))}</div>"
            f"<div class='time offset'>{e(offset(step.at_ms - t.created_at_ms))}</div>"
        )
        steps.append(
            f"<tr class='step' id='step-{step.number}'><td>{step.number}</td><td>{when}</td>"
            f"<td>{who}</td><td><div class='move{tick}'>{_html_cards(step.move)}</div>"
            f"{happened}</td><td>{hands}</td><td>{table}</td></tr>"
        )
        if step.settled:
            settled = "".join(
                _html_settlement(
                    t.kind,
                    title,
                    s,
                    final_and_rounds(t) if title == FINAL_SETTLEMENT else "",
                    t.stake_per_point,
                )
                for title, s in step.settled
            )
            steps.append(f"<tr class='settle'><td colspan='6'>{settled}</td></tr>")
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(t.title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{e(t.title)}</h1>{badge}"
        f"<table class='facts'>{facts}</table>"
        f"<h2>Turns</h2><table><tr><th class='narrow'>#</th><th class='when'>time (UTC, from the "
        f"start)</th><th class='narrow'>seat</th><th>move</th><th class='hands'>hands after it"
        f"</th><th class='tablecol'>table</th></tr>{''.join(steps)}</table>"
        f"</body></html>\n"
    )
