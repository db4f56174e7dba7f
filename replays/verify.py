"""Verifying a replay: the chain, the commitment, every deck and every event, re-derived.

The checks, in order (each names what it found):

1. the format: a header, events numbered 1, 2, … and a footer;
2. the hash chain over every stored event;
3. the revealed seed against the commitment, and the commitment and client seeds the game started
   with;
4. the events again: the game is started from the seeds (re-deriving every deck) and every command
   re-applied at its recorded time; each event the engine produces must equal the recorded one,
   byte for byte;
5. the settlements and the final state's digest.

The first point where the replay and the engine part is reported with the event number, what the
engine expected and what the file holds.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any, NoReturn

from google.protobuf import text_format

from croupier.contract import convert
from croupier.contract.bindings import BINDINGS, GameBinding
from croupier.engine import ENGINE_VERSION
from croupier.engine.game import CommandError, Context
from croupier.engine.shuffle import Seeds
from croupier.log import (
    GENESIS_HASH,
    LOG_FORMATS,
    PLAIN_FORMAT,
    TICK_PREFIX,
    chain_hash,
    chain_key,
    record_bytes,
)
from croupier.replays.format import Replay, state_digest
from croupier.v1 import common_pb2, service_pb2


@dataclass(frozen=True)
class Divergence:
    """Where the file and the engine part: the event number (0: not an event), the check, what
    was expected and what was found."""

    event: int
    check: str
    expected: str
    found: str

    def __str__(self) -> str:
        where = f"event {self.event}" if self.event else "the replay"
        return f"{where}: {self.check}: expected {self.expected}, found {self.found}"


@dataclass
class Report:
    checks: list[str] = field(default_factory=list)
    divergence: Divergence | None = None

    @property
    def ok(self) -> bool:
        return self.divergence is None

    def lines(self) -> list[str]:
        out = [f"ok   {check}" for check in self.checks]
        if self.divergence is not None:
            out.append(f"FAIL {self.divergence}")
        return out


class _Diverged(Exception):
    def __init__(self, divergence: Divergence) -> None:
        self.divergence = divergence


def _fail(event: int, check: str, expected: object, found: object) -> NoReturn:
    raise _Diverged(Divergence(event, check, _short(expected), _short(found)))


def _short(value: object, limit: int = 400) -> str:
    text = str(value).replace("\n", " ").strip()
    return text if len(text) <= limit else text[:limit] + " …"


def verify(replay: Replay) -> Report:
    """Every check of the module's docstring; stops at the first divergence."""
    report = Report()
    try:
        binding = _check_format(replay, report)
        # The seed first: in log format 2 it keys the chain (a wrong one would read as a link).
        seeds = _check_commitment(replay, report)
        _check_chain(replay, report)
        state, game_events = _check_events(replay, binding, seeds, report)
        _check_outcome(replay, binding, state, game_events, report)
    except _Diverged as diverged:
        report.divergence = diverged.divergence
    return report


# The engine versions this verifier re-applies (replays/corpus/README.md): a new version keeps the
# old behaviour for the replays that recorded it.
ENGINE_VERSIONS = (ENGINE_VERSION,)


def _check_format(replay: Replay, report: Report) -> GameBinding:
    header = replay.header
    if header.format_version != 1:
        _fail(0, "format version", 1, header.format_version)
    if header.engine_version not in ENGINE_VERSIONS:
        _fail(0, "engine version", f"one of {', '.join(ENGINE_VERSIONS)}", header.engine_version)
    binding = BINDINGS.get(header.kind)
    if binding is None:
        _fail(0, "game kind", "a kind this engine plays", header.kind)
    for number, event in enumerate(replay.events, 1):
        if event.version != number:
            _fail(number, "event numbering", number, event.version)
        if event.game_id != header.game_id:
            _fail(number, "game id", header.game_id, event.game_id)
        if event.redacted or not event.payload:
            _fail(
                number,
                "completeness",
                "a complete event (a finished game's replay)",
                "a redacted copy",
            )
    report.checks.append(
        f"format: {binding.field} game {header.game_id}, {len(replay.events)} events"
    )
    return binding


def _chain_key(replay: Replay) -> bytes | None:
    """The key the replay's chain blinds its payloads with (none in log format 1)."""
    log_format = replay.header.log_format or PLAIN_FORMAT
    if log_format not in LOG_FORMATS:
        _fail(0, "log format", f"one of {LOG_FORMATS}", log_format)
    try:
        seed = bytes.fromhex(replay.footer.server_seed)
    except ValueError:
        _fail(0, "server seed", "hex", replay.footer.server_seed)
    return chain_key(log_format, seed, replay.header.game_id)


def _check_chain(replay: Replay, report: Report) -> None:
    key = _chain_key(replay)
    prev = GENESIS_HASH
    for event in replay.events:
        if event.prev_hash != prev:
            _fail(event.version, "chain link (prev_hash)", prev, event.prev_hash)
        seat = event.seat if event.HasField("seat") else None
        record = record_bytes(
            event.game_id,
            event.version,
            event.command_id,
            seat,
            event.recorded_at_ms,
            event.type,
            event.payload,
            event.command_payload,
            key,
        )
        computed = chain_hash(prev, record)
        if computed != event.hash:
            _fail(event.version, "chain hash", computed, event.hash)
        if service_pb2.EventBody.FromString(event.payload) != event.body:
            _fail(event.version, "body", "the body the payload holds", "a different body")
        if (
            event.command_payload
            and service_pb2.Command.FromString(event.command_payload) != event.command
        ):
            _fail(event.version, "command", "the command the payload holds", "a different command")
        prev = event.hash
    if replay.footer.last_hash != prev:
        _fail(0, "last hash in the footer", prev, replay.footer.last_hash)
    # The game was created, and dealt, at its first event's (hashed) time.
    if replay.events and replay.header.created_at_ms != replay.events[0].recorded_at_ms:
        _fail(
            0,
            "header created_at_ms",
            f"event 1's recorded time {replay.events[0].recorded_at_ms}",
            replay.header.created_at_ms,
        )
    # The footer's text, not only its bytes: ``bytes.fromhex`` reads "AB" as "ab", and a reader
    # reads the text, which must be the one the game's last (hashed) event reveals.
    last = replay.events[-1] if replay.events else None
    revealed = (
        last.body.seed_revealed.server_seed
        if last is not None and last.body.WhichOneof("body") == "seed_revealed"
        else None
    )
    if revealed != replay.footer.server_seed:
        _fail(0, "revealed seed", f"the SeedRevealed event's {revealed}", replay.footer.server_seed)
    report.checks.append(
        f"hash chain (log format {replay.header.log_format or PLAIN_FORMAT}): "
        f"{len(replay.events)} links, last {prev[:16]}…"
    )


def _check_commitment(replay: Replay, report: Report) -> Seeds:
    header, footer = replay.header, replay.footer
    try:
        seed = bytes.fromhex(footer.server_seed)
    except ValueError:
        _fail(0, "revealed seed", "hex", footer.server_seed)
    digest = hashlib.sha256(seed).hexdigest()
    if digest != header.commitment:
        _fail(0, "commitment", header.commitment, f"sha256(revealed seed) = {digest}")
    seeds = Seeds(seed, tuple(header.client_seeds))
    report.checks.append(f"commitment: sha256(revealed seed) = {header.commitment[:16]}…")
    return seeds


def _with_later_options(
    binding: GameBinding, header_rules: service_pb2.Rules, rules: Any
) -> service_pb2.Rules:
    """The header's rules with the options added after the first games were recorded (the turn
    clock's, marked ``added_later`` in the engine) read as their defaults where a file made before
    them leaves them out."""
    filled = service_pb2.Rules()
    filled.CopyFrom(header_rules)
    inner = getattr(filled, binding.field)
    for option in dataclasses.fields(rules):
        if option.metadata.get("added_later") and not inner.HasField(option.name):
            setattr(inner, option.name, option.default)
    return filled


def _check_events(
    replay: Replay, binding: GameBinding, seeds: Seeds, report: Report
) -> tuple[Any, list[Any]]:
    """Start the game from the seeds, re-apply every command at its time, compare every event.

    Returns the final state and the game's events (equal to the recorded ones, byte for byte)."""
    header = replay.header
    try:
        rules = binding.game.rules_for("", binding.recorded_overrides(header.rules), header.seats)
    except (CommandError, ValueError) as error:
        _fail(0, "rule set", "a rule set this engine plays", error)
    # The header lists every option (a reader reads them there): an option left out that the
    # default preset happens to fill in the same way is still a header that says less.
    if binding.rules_to_proto(rules) != _with_later_options(binding, header.rules, rules):
        _fail(
            0,
            "header rules",
            text_format.MessageToString(binding.rules_to_proto(rules), as_one_line=True),
            text_format.MessageToString(header.rules, as_one_line=True),
        )
    events = replay.events
    game = binding.game
    expected = list(game.start(rules, header.seats, seeds))
    state = game.initial_state()
    position = 0  # index into events of the next engine event to compare
    commands = ticks = 0
    reproduced: list[Any] = []

    def compare(produced: list[Any]) -> None:
        nonlocal position, state
        for event in produced:
            while (
                position < len(events) and events[position].body.WhichOneof("body") != binding.field
            ):
                position += 1  # service events (the revealed seed) are not the engine's
            if position >= len(events):
                _fail(len(events) + 1, "event", _describe(binding, event), "the end of the replay")
            recorded = events[position]
            body = binding.event_to_body(event).SerializeToString(deterministic=True)
            if body != recorded.payload:
                _fail(
                    recorded.version,
                    "event",
                    _describe(binding, event),
                    _describe_body(binding, recorded.body),
                )
            state = game.evolve(state, event)
            reproduced.append(event)
            position += 1

    if events:
        state = game.at(state, events[0].recorded_at_ms, None)
    compare(expected)
    while True:
        while position < len(events) and not events[position].command_payload:
            if events[position].body.WhichOneof("body") == binding.field:
                if events[position].command_id.startswith(TICK_PREFIX):
                    break  # a batch that time made due
                _fail(
                    events[position].version,
                    "event",
                    "an event produced by a command",
                    _describe_body(binding, events[position].body),
                )
            position += 1
        if position >= len(events):
            break
        recorded = events[position]
        if not recorded.command_payload:
            # A tick: what time had made due at its recorded instant, with no command.
            state = game.at(state, recorded.recorded_at_ms, None)
            due = game.advance(state, Context(seeds, recorded.recorded_at_ms))
            if not due:
                _fail(
                    recorded.version,
                    "event",
                    "nothing due by time at its recorded instant",
                    _describe_body(binding, recorded.body),
                )
            ticks += 1
            compare(due)
            continue
        seat = recorded.seat if recorded.HasField("seat") else -1
        command = binding.command_from_proto(recorded.command)
        try:
            # Decided on the state before its batch begins, as the service decided it.
            produced = game.decide(state, seat, command, Context(seeds, recorded.recorded_at_ms))
        except CommandError as error:
            _fail(
                recorded.version,
                "command",
                "a command the engine accepts",
                f"{type(command).__name__} refused: {error.reason} ({error.message})",
            )
        commands += 1
        state = game.at(state, recorded.recorded_at_ms, recorded.seat if seat >= 0 else None)
        compare(produced)
    report.checks.append(
        f"events: every deck re-derived, {commands} commands re-applied"
        + (f" and {ticks} batches due by time re-derived" if ticks else "")
        + f"; {position} events reproduced byte for byte"
    )
    return state, reproduced


def _check_outcome(
    replay: Replay, binding: GameBinding, state: Any, game_events: list[Any], report: Report
) -> None:
    footer = replay.footer
    rounds = [
        convert.to_proto(s, common_pb2.Settlement) for s in binding.game.settlements(game_events)
    ]
    if list(footer.rounds) != rounds:
        number = next(
            (i for i, (a, b) in enumerate(zip(rounds, footer.rounds, strict=False), 1) if a != b),
            min(len(rounds), len(footer.rounds)) + 1,
        )
        _fail(
            0,
            f"settlement of round {number}",
            rounds[number - 1] if number <= len(rounds) else "none",
            footer.rounds[number - 1] if number <= len(footer.rounds) else "none",
        )
    final = binding.game.final_settlement(game_events)
    if final is None or convert.to_proto(final, common_pb2.Settlement) != footer.settlement:
        _fail(0, "final settlement", final, footer.settlement)
    digest = state_digest(binding, state, replay.header.seats)
    if digest != footer.final_state_digest:
        _fail(0, "final state digest", digest, footer.final_state_digest)
    report.checks.append(
        f"settlement: {len(rounds)} round(s) and the final settlement reproduced; "
        f"final state {digest[:16]}…"
    )


def _describe(binding: GameBinding, event: Any) -> str:
    return _describe_body(binding, binding.event_to_body(event))


def _describe_body(binding: GameBinding, body: service_pb2.EventBody) -> str:
    inner = getattr(body, binding.field)
    which = inner.WhichOneof("event")
    return f"{which} {{{text_format.MessageToString(getattr(inner, which), as_one_line=True)}}}"
