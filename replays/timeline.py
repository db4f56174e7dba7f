"""A replay as a person reads it: every turn with the seat, the move in words, what happened, the
cards each seat held after it and the table, then every settlement with each factor explained.

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
from typing import Any

from croupier.contract.bindings import BINDINGS
from croupier.engine.clock import TurnTimedOut
from croupier.engine.koikoi import cards as hanafuda
from croupier.engine.settlement import Settlement
from croupier.replays.format import Replay

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
}


#: What a batch that no command made (what time made due) is called in the timeline.
TIME_MADE_DUE = "What time made due"
#: The prefix of an event a time-out forced.
FORCED = "forced: "


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


@dataclass(frozen=True)
class Timeline:
    title: str
    facts: tuple[tuple[str, str], ...]
    steps: tuple[Step, ...]
    settlements: tuple[Settlement, ...]
    final: Settlement | None


def card_name(kind: str, code: str) -> str:
    if kind == "koikoi":
        return hanafuda.name(code)
    return code


def _words(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name).lower().capitalize()


def _value(kind: str, value: Any) -> str:
    if isinstance(value, str):
        return card_name(kind, value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_value(kind, v) for v in value) + "]"
    names = (
        {f.name for f in dataclasses.fields(value)} if dataclasses.is_dataclass(value) else set()
    )
    if {"joker", "card"} <= names:  # a joker and what it stands for
        return f"{value.joker} = {value.card}"
    if {"kind", "cards"} <= names and "points" not in names:  # a meld on the table
        jokers = (
            f" ({', '.join(_value(kind, j) for j in value.jokers)})"
            if getattr(value, "jokers", ())
            else ""
        )
        number = f"#{value.id} " if hasattr(value, "id") else ""
        cards = " ".join(card_name(kind, c) for c in value.cards)
        return f"{number}{value.kind.name.lower()} {cards}{jokers}"
    if {"kind", "points", "cards"} <= names:  # a yaku
        return f"{_words(value.kind.name.title().replace('_', ''))} {value.points}"
    if dataclasses.is_dataclass(value):
        return _describe(kind, value)
    if hasattr(value, "name") and hasattr(value, "value"):  # an enum member
        name: str = value.name
        return name.lower()
    return str(value)


def _describe(kind: str, event: Any) -> str:
    """An event in words: its kind, then its fields (the long ones left out)."""
    parts = [
        f"{f.name.replace('_', ' ')} {_value(kind, getattr(event, f.name))}"
        for f in dataclasses.fields(event)
        if f.name not in _QUIET and getattr(event, f.name) not in (None, (), "")
    ]
    return f"{_words(type(event).__name__)}" + (f": {'; '.join(parts)}" if parts else "")


def clock_time(ms: int) -> str:
    """A Unix time in ms as the time of day (UTC) to the millisecond."""
    return time.strftime("%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}"


def _timed_out(event: TurnTimedOut, recorded_at_ms: int, was_away: bool) -> str:
    """A time-out in words; ``was_away``: the seat was away already (its turn was forced as it
    began), else whether this time-out made it away."""
    late = recorded_at_ms - event.deadline_ms
    line = (
        f"Seat {event.seat} timed out: its deadline was {clock_time(event.deadline_ms)} UTC, "
        f"recorded {late} ms after it; the moves below were forced"
    )
    if was_away:
        line += " (the seat is away: its turns are forced as they begin)"
    elif event.away:
        line += (
            f". Seat {event.seat} is away from now on: its turns are forced as they begin "
            "until it sends a command"
        )
    return line


def _clocks(game: Any, state: Any) -> tuple[str, ...]:
    """The seats on the clock, each with its deadline, bank and whether it is away."""
    return tuple(
        f"seat {c.seat} on the clock until {clock_time(c.deadline_ms)} UTC (bank {c.bank_ms} ms"
        + (", away: forced at once)" if c.away else ")")
        for c in game.seat_clocks(state)
    )


def _away(state: Any, seat: int | None) -> bool:
    clock = getattr(state, "clock", None)
    away: tuple[bool, ...] = getattr(clock, "away", ())
    return seat is not None and 0 <= seat < len(away) and away[seat]


def _table(kind: str, state: Any) -> tuple[tuple[str, str], ...]:
    """What lies on the table, by name, as far as the state of each game holds it."""
    rows: list[tuple[str, str]] = []
    for attr, label in (
        ("field", "field"),
        ("melds", "melds"),
        ("table", "knocker's melds"),
        ("discards", "discard pile (top last)"),
    ):
        value = getattr(state, attr, None)
        if not value:
            continue
        if attr in ("melds", "table"):
            text = " | ".join(" ".join(card_name(kind, c) for c in m.cards) for m in value)
        else:
            text = " ".join(
                card_name(kind, c) for c in (value[-8:] if attr == "discards" else value)
            )
        rows.append((label, text))
    stock = getattr(state, "stock", ())
    rows.append(("stock", f"{len(stock)} cards"))
    return tuple(rows)


def timeline(replay: Replay) -> Timeline:
    header = replay.header
    binding = BINDINGS[header.kind]
    game = binding.game
    kind = game.kind
    state = game.initial_state()
    steps: list[Step] = []
    current: dict[str, Any] | None = None
    game_events = []

    def close() -> None:
        if current is not None:
            steps.append(
                Step(
                    current["number"],
                    current["seat"],
                    current["move"],
                    tuple(current["happened"]),
                    tuple(tuple(card_name(kind, c) for c in h) for h in state.hands),
                    _table(kind, state),
                    _clocks(game, state),
                )
            )

    for stored in replay.events:
        if stored.body.WhichOneof("body") != binding.field:
            continue
        event = binding.event_from_body(stored.body)
        if current is None or stored.command_id != current["command_id"]:
            # A new batch: the deal, a command, or what time made due (no command).
            close()
            seat = stored.seat if stored.HasField("seat") else None
            if stored.command_payload:
                move = game.label(state, binding.command_from_proto(stored.command))
            else:
                move = "The game is created and dealt" if current is None else TIME_MADE_DUE
            was_away = _away(state, seat)
            # Every fold calls ``at`` as a batch begins: turn clocks run on recorded times.
            state = game.at(state, stored.recorded_at_ms, seat if stored.command_payload else None)
            happened = []
            if was_away and not _away(state, seat):
                happened.append(f"Seat {seat} came back (a command of its own)")
            current = {
                "number": stored.version,
                "seat": seat,
                "move": move,
                "happened": happened,
                "command_id": stored.command_id,
                "forced": False,
            }
        if isinstance(event, TurnTimedOut):
            was_away = _away(state, event.seat)
            current["happened"].append(_timed_out(event, stored.recorded_at_ms, was_away))
            current["forced"] = True
        else:
            prefix = FORCED if current["forced"] else ""
            current["happened"].append(prefix + _describe(kind, event))
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
                + (" (an away seat forfeits)" if rules.forfeit_when_away else ""),
            ),
        )
        if turn_ms
        else ()
    )
    facts = (
        ("game", header.game_id),
        ("seats", str(header.seats)),
        ("engine version", header.engine_version),
        ("commitment", header.commitment),
        ("server seed", replay.footer.server_seed),
        ("client seeds", ", ".join(header.client_seeds) or "none"),
        *clock_fact,
    )
    return Timeline(
        f"{kind} — game {header.game_id}",
        facts,
        tuple(steps),
        tuple(game.settlements(game_events)),
        game.final_settlement(game_events),
    )


# --- text -------------------------------------------------------------------------------------


def _settlement_lines(settlement: Settlement) -> list[str]:
    out = [f"{settlement.outcome}: winner(s) {', '.join(map(str, settlement.winners)) or 'none'}"]
    out += [f"  note: {note}" for note in settlement.notes]
    for line in settlement.lines:
        out.append(f"  seat {line.payer} pays seat {line.payee} {line.amount}")
        for factor in line.factors:
            sign = "+" if factor.added else "×"
            out.append(f"    {sign} {factor.name} {factor.value}: {factor.reason}")
    out.append("  net: " + ", ".join(f"seat {s} {n:+d}" for s, n in enumerate(settlement.net)))
    return out


def render_text(t: Timeline) -> str:
    out = [t.title] + [f"  {k}: {v}" for k, v in t.facts] + [""]
    for step in t.steps:
        who = f"seat {step.seat}" if step.seat is not None else "the service"
        out.append(f"#{step.number} {who}: {step.move}")
        out += [f"    {line}" for line in step.happened]
        out += [f"    hand of seat {s}: {' '.join(h) or '—'}" for s, h in enumerate(step.hands)]
        out += [f"    {label}: {text}" for label, text in step.table]
        out += [f"    {line}" for line in step.clocks]
    for number, settlement in enumerate(t.settlements, 1):
        out += ["", f"Settlement of round {number}"] + _settlement_lines(settlement)
    if t.final is not None and (not t.settlements or t.final != t.settlements[-1]):
        out += ["", "Final settlement"] + _settlement_lines(t.final)
    return "\n".join(out) + "\n"


# --- HTML -------------------------------------------------------------------------------------

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; width: 100%; }
td, th { border: 1px solid #ccc; padding: 4px 6px; vertical-align: top; text-align: left; }
th { background: #f3f3f3; } .move { font-weight: 600; } .ev { color: #555; }
.hand { font-family: ui-monospace, monospace; } .factor { color: #444; }
.timeout { color: #a40000; font-weight: 600; } .forced { color: #8a5a00; }
.came-back { color: #1a6a1a; font-weight: 600; } .clock { color: #335; font-size: 0.9em; }
.move.tick { color: #8a5a00; }
"""


def _html_settlement(title: str, settlement: Settlement) -> str:
    e = html.escape
    rows = []
    for line in settlement.lines:
        factors = "".join(
            f"<li class='factor'>{'+' if f.added else '×'} <b>{e(f.name)}</b> {f.value}: "
            f"{e(f.reason)}</li>"
            for f in line.factors
        )
        rows.append(
            f"<tr class='line'><td>seat {line.payer}</td><td>seat {line.payee}</td>"
            f"<td>{line.amount}</td><td><ul>{factors}</ul></td></tr>"
        )
    notes = "".join(f"<li>{e(n)}</li>" for n in settlement.notes)
    net = ", ".join(f"seat {s} {n:+d}" for s, n in enumerate(settlement.net))
    return (
        f"<section class='settlement'><h2>{e(title)}: {e(settlement.outcome)}</h2>"
        f"<ul>{notes}</ul><table><tr><th>payer</th><th>payee</th><th>amount</th>"
        f"<th>why</th></tr>{''.join(rows)}</table><p>net: {e(net)}</p></section>"
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
    steps = []
    for step in t.steps:
        who = f"seat {step.seat}" if step.seat is not None else "—"
        happened = "".join(f"<div class='{_css(h)}'>{e(h)}</div>" for h in step.happened)
        hands = "".join(
            f"<div class='hand'>seat {s}: {e(' '.join(h) or '—')}</div>"
            for s, h in enumerate(step.hands)
        )
        table = "".join(f"<div>{e(label)}: {e(text)}</div>" for label, text in step.table)
        table += "".join(f"<div class='clock'>{e(line)}</div>" for line in step.clocks)
        tick = " tick" if step.move == TIME_MADE_DUE else ""
        steps.append(
            f"<tr class='step' id='step-{step.number}'><td>{step.number}</td><td>{who}</td>"
            f"<td><div class='move{tick}'>{e(step.move)}</div>{happened}</td>"
            f"<td>{hands}</td><td>{table}</td></tr>"
        )
    settlements = [_html_settlement(f"Round {n}", s) for n, s in enumerate(t.settlements, 1)]
    if t.final is not None and (not t.settlements or t.final != t.settlements[-1]):
        settlements.append(_html_settlement("Final settlement", t.final))
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(t.title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{e(t.title)}</h1><table>{facts}</table>"
        f"<h2>Turns</h2><table><tr><th>#</th><th>seat</th><th>move</th>"
        f"<th>hands after it</th><th>table</th></tr>{''.join(steps)}</table>"
        f"{''.join(settlements)}</body></html>\n"
    )
