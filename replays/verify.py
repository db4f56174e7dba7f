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
engine expected and what the file holds; where both are messages of one type, the first field that
differs (its path, e.g. ``game_started.client_seeds[0]``) and each one's value there.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

from google.protobuf import text_format
from google.protobuf.message import Message

from croupier.contract import convert
from croupier.contract.bindings import BINDINGS, GameBinding
from croupier.engine import ENGINE_VERSION
from croupier.engine.cards import RANK_NAMES, RANKS, SUIT_NAMES
from croupier.engine.game import CommandError, Context
from croupier.engine.koikoi import cards as hanafuda
from croupier.engine.shuffle import Seeds, Shuffle
from croupier.log import (
    GENESIS_HASH,
    LOG_FORMATS,
    PLAIN_FORMAT,
    TICK_PREFIX,
    chain_hash,
    chain_key,
    record_bytes,
)
from croupier.replays.format import Replay, iso_time, printable, state_digest
from croupier.v1 import common_pb2, replay_pb2, service_pb2


@dataclass(frozen=True)
class Divergence:
    """Where the file and the engine part: the event number (0: not an event), the check, what
    was expected and what was found."""

    event: int
    check: str
    expected: str
    found: str
    #: The first field that differs (``game_started.rules.jokers``, ``net[0]``), when the two
    #: are messages of one type: ``expected`` and ``found`` are then their values there.
    field: str = ""

    def __str__(self) -> str:
        where = f"event {self.event}" if self.event else "the replay"
        at = f", at {self.field}" if self.field else ""
        meaning = f" ({MEANINGS[self.check]})" if self.check in MEANINGS else ""
        expected, found = (_glossed(self.field, v) for v in (self.expected, self.found))
        return f"{where}: {self.check}{at}: expected {expected}, found {found}{meaning}"


#: The fields that hold a moment (Unix ms), which a support agent reads as a UTC time.
_MOMENTS = ("recorded_at_ms", "created_at_ms", "deadline_ms", "at_ms")


#: The fields that hold a card's code: an event's card (``card.code``), a command's (``card``,
#: ``cards[2]``, a named ``joker``, Koi-Koi's ``capture``).
_CARD_FIELDS = ("code", "card", "cards", "joker", "capture")
#: The games whose cards are French-suited (a code such as ``TD``; Rummy's carry their deck copy,
#: ``KH1``), by the part of a field's path that names the game.
_FRENCH_SUITED = ("hoola", "gin", "rummy")


def _glossed(field: str, value: str) -> str:
    """A divergence's value with what a support agent reads beside it: a moment as its UTC time,
    a card's code as its name (``'11B' (Willow rain man)``, ``'TD' (ten of diamonds)``). The
    value itself stays first, as the file holds it; before, "expected '11B', found '3B'",
    "expected 'KH', found 'TD'" and "expected 1796634216015" had to be looked up."""
    name = field.rsplit(".", 1)[-1]
    if name in _MOMENTS and value.isdigit():
        return f"{value} ({iso_time(int(value))})"
    code = value.strip("'")
    if re.sub(r"\[\d+\]$", "", name) not in _CARD_FIELDS:
        return value
    game = set(field.split("."))
    if "koikoi" in game and hanafuda.is_card(code):
        return f"{value} ({hanafuda.name(code)})"
    if game & set(_FRENCH_SUITED):
        named = french_card_name(code)
        return f"{value} ({named})" if named else value
    return value


#: A French-suited card's code: rank and suit, and in Rummy the deck's copy (``KH1``); a joker.
_FRENCH_CODE = re.compile(r"([A2-9TJQK])([SHDC])([12]?)|JK([1-4])")


def french_card_name(code: str) -> str:
    """A French-suited card's code in words (``TD``: ten of diamonds; ``KH1``: king of hearts,
    copy 1, as Rummy's two decks tell their cards apart; ``JK2``: joker 2); empty for anything
    else. The copy and the joker's number are said: a divergence may be between two copies."""
    found = _FRENCH_CODE.fullmatch(code)
    if found is None:
        return ""
    rank_code, suit_code, copy, joker = found.groups()
    if joker:
        return f"joker {joker}"
    named = f"{RANK_NAMES[RANKS.index(rank_code)]} of {SUIT_NAMES[suit_code]}"
    return f"{named}, copy {copy}" if copy else named


#: What the chain's failures mean, in a support agent's words (two hashes say nothing by
#: themselves): said after the hashes.
MEANINGS = {
    "chain hash": "this event's bytes are not those recorded: it was changed after the game",
    "chain link (prev_hash)": (
        "this event does not follow the one before it: an event was dropped, added or moved"
    ),
    # The verdict on a rigged deal or a changed move or score reads "expected '5S', found '5H'":
    # which side is the game's own was left to the reader.
    "event": "expected: what the committed seeds and the rules make here; found: the file's",
}


@dataclass
class Report:
    checks: list[str] = field(default_factory=list)
    divergence: Divergence | None = None
    #: Every shuffle the game's seeds made, as the verifier re-derived them, in the order made.
    shuffles: list[Shuffle] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.divergence is None

    def lines(self) -> list[str]:
        out = [f"ok   {check}" for check in self.checks]
        if self.divergence is not None:
            out.append(f"FAIL {self.divergence}")
        return [printable(line) for line in out]


class _Diverged(Exception):
    def __init__(self, divergence: Divergence) -> None:
        self.divergence = divergence


def _fail(event: int, check: str, expected: object, found: object) -> NoReturn:
    raise _Diverged(Divergence(event, check, _short(expected), _short(found)))


def _fail_at(event: int, check: str, expected: Message, found: Message) -> NoReturn:
    """Fail ``check`` at :func:`_divergence_at`."""
    raise _Diverged(_divergence_at(event, check, expected, found))


def _divergence_at(
    event: int, check: str, expected: Message, found: Message, part: str = ""
) -> Divergence:
    """``check`` failed, named at the first field where two messages of one type differ (under
    ``part``: ``header.seats``), with each one's value there (else, were they equal field by
    field, both whole)."""
    difference = first_difference(expected, found, part)
    if difference is None:
        return Divergence(event, check, _short(_text(expected)), _short(_text(found)))
    path, want, got = difference
    return Divergence(event, check, _short(want), _short(got), path)


def _text(value: object) -> str:
    """A message as one line of protobuf text (its fields by name); anything else as ``str``."""
    if isinstance(value, Message):
        return text_format.MessageToString(value, as_one_line=True) or "(empty)"
    return repr(value) if isinstance(value, str) else str(value)


def first_difference(a: Message, b: Message, path: str = "") -> tuple[str, str, str] | None:
    """The first field, in field-number order and depth first, where messages ``a`` and ``b``
    of one type differ: its path (``rules.hoola.jokers``, ``lines[1].amount``; a oneof set to
    different members names the member ``a`` holds) and each one's value there, as text;
    ``None`` when they are equal."""
    for oneof in a.DESCRIPTOR.oneofs:
        held, other = a.WhichOneof(oneof.name), b.WhichOneof(oneof.name)
        if held != other:  # one kind of event for another, say: both said whole
            name = f"{path}.{oneof.name}" if path else oneof.name
            return name, _member(a, held), _member(b, other)
    for descriptor in a.DESCRIPTOR.fields:
        name = f"{path}.{descriptor.name}" if path else descriptor.name
        x, y = getattr(a, descriptor.name), getattr(b, descriptor.name)
        if descriptor.is_repeated:
            if (
                descriptor.message_type is not None
                and descriptor.message_type.GetOptions().map_entry
            ):
                for key in sorted(set(x) | set(y), key=str):
                    if key not in x or key not in y or x[key] != y[key]:
                        return (
                            f"{name}[{key!r}]",
                            _text(x[key]) if key in x else "nothing",
                            _text(y[key]) if key in y else "nothing",
                        )
                continue
            for index, (u, v) in enumerate(zip(x, y, strict=False)):
                if u != v:
                    if isinstance(u, Message):
                        return first_difference(u, v, f"{name}[{index}]")
                    return f"{name}[{index}]", _text(u), _text(v)
            if len(x) != len(y):
                return name, _items(len(x)), _items(len(y))
            continue
        present = descriptor.has_presence and (
            a.HasField(descriptor.name),
            b.HasField(descriptor.name),
        )
        if present and present[0] != present[1]:
            return name, _text(x) if present[0] else "unset", _text(y) if present[1] else "unset"
        if x != y:
            if isinstance(x, Message):
                return first_difference(x, y, name)
            return name, _text(x), _text(y)
    return None


def _member(message: Message, name: str | None) -> str:
    """A oneof's member, said with its name: ``hand_dealt {dealer: 1 …}``; ``unset``."""
    return "unset" if name is None else f"{name} {{{_text(getattr(message, name))}}}"


def _items(count: int) -> str:
    return f"{count} item" + ("" if count == 1 else "s")


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
        _check_header(replay, binding)
        state, game_events = _check_events(replay, binding, seeds, report)
        _check_outcome(replay, binding, state, game_events, report)
    except _Diverged as diverged:
        report.divergence = diverged.divergence
    return report


#: What a file is checked against by :func:`against_record`, in the words of a failure.
RECORD = "the service's record"


def against_record(replay: Replay, recorded: Replay) -> Divergence | None:
    """Where a replay file differs from the service's own record of its game (``recorded``,
    built from the store: :func:`croupier.replays.format.build`); ``None`` where it is that
    record, byte for byte.

    :func:`verify` finds a file consistent with its seeds and rules, which proves the deal and
    the play fair but not that the file is the one the service recorded: once a game is over its
    revealed seed keys the chain, so anyone can change what no rule decides (a move's recorded
    time, the player ids) and make the chain again. The record settles that.

    A file that names no players is compared without them (:func:`players_left_out`): the
    service leaves them out of every file it exports to anyone but the studio, so a player's own
    export is the record with its player ids left out, not a file that differs from it."""
    if players_left_out(replay, recorded):
        recorded = _without_players(recorded)
    for number, (mine, theirs) in enumerate(zip(replay.events, recorded.events, strict=False), 1):
        if mine != theirs:
            return _divergence_at(number, RECORD, theirs, mine)
    if len(replay.events) != len(recorded.events):
        return Divergence(
            min(len(replay.events), len(recorded.events)) + 1,
            RECORD,
            _items(len(recorded.events)) + " in all",
            _items(len(replay.events)) + " in all",
        )
    for part, mine_part, theirs_part in (
        ("header", replay.header, recorded.header),
        ("footer", _unsigned(replay.footer), _unsigned(recorded.footer)),
    ):
        if mine_part != theirs_part:
            return _divergence_at(0, RECORD, theirs_part, mine_part, part)
    return None


def players_left_out(replay: Replay, recorded: Replay) -> bool:
    """Whether ``replay`` names no players where the service's record of its game does: the
    file as ``ExportReplay`` gives it to a seat, a spectator or anyone (the studio's player ids
    are the studio's alone to read). Such a file says nothing of who sat where, so it cannot be
    wrong about it; the record's ids answer that."""
    return not replay.header.players and bool(recorded.header.players)


def _without_players(replay: Replay) -> Replay:
    """``replay`` with its header's player ids left out, as the service exports it to anyone
    but the studio."""
    header = replay_pb2.ReplayHeader()
    header.CopyFrom(replay.header)
    header.ClearField("players")
    return dataclasses.replace(replay, header=header)


def _unsigned(footer: replay_pb2.ReplayFooter) -> replay_pb2.ReplayFooter:
    """The footer without its signature: the exporter's word on the record, not part of it (and
    checked by itself: :mod:`croupier.replays.signing`)."""
    copy = replay_pb2.ReplayFooter()
    copy.CopyFrom(footer)
    copy.ClearField("signature")
    return copy


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
                REDACTED_COPY if event.redacted else "no payload (the hashed bytes)",
            )
    report.checks.append(
        f"format: {binding.field} game {header.game_id}, {len(replay.events)} events"
    )
    return binding


#: What a redacted event says of its file: a seat's or a spectator's copy of the events (a
#: game in play as ``GetReplay`` or a stream shows it), which a support agent was sent as "the
#: replay". Its hidden cards are left out and its seed is still secret, so it says what cannot
#: be checked, and how to get what can.
REDACTED_COPY = (
    "a redacted copy: a seat's or a spectator's copy of the events, its hidden cards left out, "
    "as a game still in play is shown; until the game is over and its seed revealed, neither "
    "its chain, nor its decks, nor its moves can be checked: export its replay once it is over"
)

#: What an unrevealed seed says of its file: the game was not over when the file was made.
NOT_REVEALED = (
    "none: the game was not over when this file was made, so its seed is still secret and "
    "neither its chain, nor its decks, nor its moves can be checked yet"
)


def ends_revealed(replay: Replay) -> bool:
    """Whether the file's last event is the game's end, which reveals its seed (SeedRevealed)."""
    return bool(replay.events) and replay.events[-1].body.WhichOneof("body") == "seed_revealed"


def in_play(replay: Replay) -> bool:
    """Whether the file is of a game that was not over when it was made: a seat's or a
    spectator's copy of the events (redacted), or no seed revealed anywhere in it."""
    return any(event.redacted for event in replay.events) or not (
        replay.footer.server_seed or ends_revealed(replay)
    )


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


def record_of(
    event: service_pb2.GameEvent, key: bytes | None, payload: bytes | None = None
) -> bytes:
    """The bytes of ``event`` its chain hash covers (:func:`croupier.log.chain.record_bytes`,
    blinded with ``key`` in log format 2), with ``payload`` in place of its own where given."""
    return record_bytes(
        event.game_id,
        event.version,
        event.command_id,
        event.seat if event.HasField("seat") else None,
        event.recorded_at_ms,
        event.type,
        event.payload if payload is None else payload,
        event.command_payload,
        key,
    )


def _check_chain(replay: Replay, report: Report) -> None:
    key = _chain_key(replay)
    prev = GENESIS_HASH
    for event in replay.events:
        if event.prev_hash != prev:
            _fail(event.version, "chain link (prev_hash)", prev, event.prev_hash)
        computed = chain_hash(prev, record_of(event, key))
        if computed != event.hash:
            _fail(event.version, "chain hash", computed, event.hash)
        # The decoded copies a reader reads must be what the hashed bytes hold.
        held = service_pb2.EventBody.FromString(event.payload)
        if held != event.body:
            _fail_at(event.version, "body (against its hashed payload)", held, event.body)
        named = event_type(held)
        if event.type != named:
            _fail(event.version, "type (against its hashed payload)", named, event.type)
        if event.command_payload:
            sent = service_pb2.Command.FromString(event.command_payload)
            if sent != event.command:
                _fail_at(event.version, "command (against its hashed payload)", sent, event.command)
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
    if revealed is None:
        # A file whose last events were dropped (its chain remade): the game's end is missing.
        _fail(
            last.version if last is not None else 0,
            "revealed seed",
            "a SeedRevealed event last (the game's end)",
            f"{last.type if last is not None else 'no event'}: the file stops before the "
            "game's end",
        )
    if revealed != replay.footer.server_seed:
        _fail(0, "revealed seed", f"the SeedRevealed event's {revealed}", replay.footer.server_seed)
    report.checks.append(
        f"hash chain (log format {replay.header.log_format or PLAIN_FORMAT}): "
        f"{len(replay.events)} links, last {prev[:16]}…"
    )


def event_type(body: service_pb2.EventBody) -> str:
    """The type an event is stored under: its class's name (app/core.py), whose snake case is
    its field in its oneof (contract/convert.py): ``RoundDealt`` for ``hoola.round_dealt``,
    ``SeedRevealed`` for the service's ``seed_revealed``."""
    which = body.WhichOneof("body")
    if which is None:
        return ""
    inner = getattr(body, which)
    event = inner.WhichOneof("event") if inner.DESCRIPTOR.oneofs_by_name.get("event") else None
    return "".join(word.title() for word in (event or which).split("_"))


#: What the header is checked against, in the words of a failure.
AGAINST_FIRST_EVENT = "against the game's first event (hashed)"


def _check_header(replay: Replay, binding: GameBinding) -> None:
    """The header says what the game's first event (hashed, so authentic once the chain is)
    says: the kind, seats, commitment, client seeds, engine version and rules. Checked here, so
    that an edited header is named as such (``header rules, at jokers``) rather than as the first
    event the engine, starting from the header, makes otherwise."""
    header = replay.header
    first = replay.events[0].body if replay.events else None
    held = first.WhichOneof("body") if first is not None else None
    if first is None or held != binding.field:
        _fail(0, f"header kind, {AGAINST_FIRST_EVENT}", held or "no event", binding.field)
    game_event = getattr(first, binding.field)
    started = getattr(game_event, game_event.WhichOneof("event") or "")
    for name in ("seats", "commitment", "client_seeds", "engine_version"):
        said, holds = getattr(header, name), getattr(started, name)
        if said != holds:
            _fail(0, f"header {name}, {AGAINST_FIRST_EVENT}", _text(holds), _text(said))
    recorded = service_pb2.Rules()
    getattr(recorded, binding.field).CopyFrom(started.rules)
    held_rules = _with_later_options(binding, recorded, binding.rules_cls)
    said_rules = _with_later_options(binding, header.rules, binding.rules_cls)
    if said_rules != held_rules:
        _fail_at(0, f"header rules, {AGAINST_FIRST_EVENT}", held_rules, said_rules)


def _check_commitment(replay: Replay, report: Report) -> Seeds:
    header, footer = replay.header, replay.footer
    if not footer.server_seed:
        # Not "sha256(revealed seed) = e3b0c442…", the hash of nothing, as it once said.
        _fail(
            0,
            "revealed seed",
            "the server seed, revealed at the game's end",
            "none, though the game's last event reveals it: the footer was edited"
            if ends_revealed(replay)
            else NOT_REVEALED,
        )
    try:
        seed = bytes.fromhex(footer.server_seed)
    except ValueError:
        _fail(0, "revealed seed", "hex", footer.server_seed)
    digest = hashlib.sha256(seed).hexdigest()
    if digest != header.commitment:
        _fail(0, "commitment", header.commitment, f"sha256(revealed seed) = {digest}")
    seeds = Seeds(seed, tuple(header.client_seeds), on_shuffle=report.shuffles.append)
    # Whole: a support agent compares it with the commitment the player was shown at the start.
    report.checks.append(f"commitment: sha256(revealed seed) = {header.commitment}")
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
    read = _with_later_options(binding, header.rules, rules)
    if binding.rules_to_proto(rules) != read:
        _fail_at(0, "header rules", binding.rules_to_proto(rules), read)
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
            made = binding.event_to_body(event)
            if made.SerializeToString(deterministic=True) != recorded.payload:
                # Both bodies whole (``body`` names the game or the service's event): where
                # they differ within the game's event, that field.
                _fail_at(recorded.version, "event", made, recorded.body)
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
        f"events: every deck re-derived, {commands} commands re-applied (each one legal "
        "under the game's rules)"
        + (
            f" and {ticks} batches due by time re-derived (time-outs and the moves they forced, "
            "claim awards)"
            if ticks
            else ""
        )
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
        check = f"settlement of round {number}"
        if number <= min(len(rounds), len(footer.rounds)):
            _fail_at(0, check, rounds[number - 1], footer.rounds[number - 1])
        _fail(
            0,
            check,
            _settled(rounds[number - 1]) if number <= len(rounds) else "none",
            _settled(footer.rounds[number - 1]) if number <= len(footer.rounds) else "none",
        )
    final = binding.game.final_settlement(game_events)
    if final is None:
        _fail(0, "final settlement", "the game's final settlement", "a game not over")
    if convert.to_proto(final, common_pb2.Settlement) != footer.settlement:
        _fail_at(
            0, "final settlement", convert.to_proto(final, common_pb2.Settlement), footer.settlement
        )
    digest = state_digest(binding, state, replay.header.seats)
    if digest != footer.final_state_digest:
        _fail(0, "final state digest", digest, footer.final_state_digest)
    report.checks.append(
        f"settlement: {len(rounds)} round(s) and the final settlement reproduced; "
        f"final state {digest[:16]}…"
    )


def _settled(settlement: common_pb2.Settlement) -> str:
    """A round's settlement in a line: which round, how it ended, each seat's net."""
    nets = ", ".join(f"seat {seat} {net:+d}" for seat, net in enumerate(settlement.net))
    return f"round {settlement.round}, {settlement.outcome}, net {nets or 'none'}"


def _describe(binding: GameBinding, event: Any) -> str:
    return _describe_body(binding, binding.event_to_body(event))


def _describe_body(binding: GameBinding, body: service_pb2.EventBody) -> str:
    inner = getattr(body, binding.field)
    which = inner.WhichOneof("event")
    return f"{which} {{{text_format.MessageToString(getattr(inner, which), as_one_line=True)}}}"
