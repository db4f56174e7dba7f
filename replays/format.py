"""The replay file (docs/replay-format.md): build one from the event store, write and read it in
its binary (length-delimited protobuf) and JSON forms.

A replay holds a finished game completely: the header (kind, effective rules, engine version,
seats, commitment, client seeds), every stored event with its payload, its command and its chain
hash, and the footer (the revealed seed, the final state's digest, every settlement).
"""

from __future__ import annotations

import hashlib
import json
import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from croupier.contract import convert
from croupier.contract.bindings import BY_NAME, GameBinding
from croupier.engine.game import fold
from croupier.log import GameRecord, StoredEvent
from croupier.v1 import common_pb2, replay_pb2, service_pb2

FORMAT_VERSION = 1


def iso_time(ms: int) -> str:
    """A Unix time in ms as UTC in ISO 8601, to the millisecond: 2026-12-01T03:11:21.123Z (the
    timeline's times, and the verifier's gloss of a moment)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def printable(text: str) -> str:
    """``text`` as one line a terminal shows as it is: what the tools print quotes the file's own
    strings (player ids, the signature's key id, a game id that breaks the chain), which anyone
    who edits a file chooses, and a control character among them (a line break, a carriage
    return, an ANSI escape) could rewrite what the reader sees, a "NOT verified" into a
    "Verified". Such characters are shown escaped, as ``replays/standalone_verify.py`` does."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class ReplayFormatError(ValueError):
    """The file is not a replay (or not a whole one)."""


@dataclass
class Replay:
    header: replay_pb2.ReplayHeader
    events: list[service_pb2.GameEvent] = field(default_factory=list)
    footer: replay_pb2.ReplayFooter = field(default_factory=replay_pb2.ReplayFooter)

    def records(self) -> Iterator[replay_pb2.ReplayRecord]:
        yield replay_pb2.ReplayRecord(header=self.header)
        for event in self.events:
            yield replay_pb2.ReplayRecord(event=event)
        yield replay_pb2.ReplayRecord(footer=self.footer)


# --- building ---------------------------------------------------------------------------------


def complete_event(stored: StoredEvent) -> service_pb2.GameEvent:
    """A stored event with everything: body and payload, command and its bytes, chain hashes."""
    event = service_pb2.GameEvent(
        game_id=stored.game_id,
        version=stored.version,
        command_id=stored.command_id,
        recorded_at_ms=stored.recorded_at_ms,
        body=service_pb2.EventBody.FromString(stored.payload),
        prev_hash=stored.prev_hash,
        hash=stored.hash,
        payload=stored.payload,
        type=stored.type,
        command_payload=stored.command,
    )
    if stored.seat is not None:
        event.seat = stored.seat
    if stored.command:
        event.command.ParseFromString(stored.command)
    return event


def engine_events(binding: GameBinding, events: Sequence[service_pb2.GameEvent]) -> list[Any]:
    """The game's own events (the service's, such as the revealed seed, left out)."""
    return [
        binding.event_from_body(e.body)
        for e in events
        if e.body.WhichOneof("body") == binding.field
    ]


def state_digest(binding: GameBinding, state: Any, seats: int) -> str:
    """sha256 over every seat's view, then the spectator's, each as deterministic protobuf
    prefixed by its length (u32 big-endian)."""
    digest = hashlib.sha256()
    for seat in [*range(seats), None]:
        data = binding.view_to_proto(binding.game.view(state, seat)).SerializeToString(
            deterministic=True
        )
        digest.update(struct.pack(">I", len(data)) + data)
    return digest.hexdigest()


def build(record: GameRecord, stored: Sequence[StoredEvent], players: Sequence[str] = ()) -> Replay:
    """The replay of a finished game from its stored record and events (and the studio's
    player ids, one a seat, when the game was created with them)."""
    if not record.finished:
        raise ReplayFormatError(
            f"game {record.game_id} is not finished: its seed is still secret, so nothing of it "
            "can be checked yet; export its replay once the game is over"
        )
    binding = BY_NAME[record.kind]
    events = [complete_event(s) for s in stored]
    game_events = engine_events(binding, events)
    state = fold(binding.game, game_events)
    first = game_events[0]
    header = replay_pb2.ReplayHeader(
        format_version=FORMAT_VERSION,
        game_id=record.game_id,
        kind=binding.kind,
        rules=binding.rules_to_proto(state.rules),
        engine_version=first.engine_version,
        seats=record.seats,
        commitment=record.commitment,
        client_seeds=list(state.client_seeds),
        created_at_ms=record.created_at_ms,
        log_format=record.log_format,
        players=list(players),
    )
    final = binding.game.final_settlement(game_events)
    footer = replay_pb2.ReplayFooter(
        server_seed=record.server_seed.hex(),
        final_state_digest=state_digest(binding, state, record.seats),
        rounds=[
            convert.to_proto(s, common_pb2.Settlement)
            for s in binding.game.settlements(game_events)
        ],
        last_hash=events[-1].hash if events else "",
    )
    if final is not None:
        footer.settlement.CopyFrom(convert.to_proto(final, common_pb2.Settlement))
    return Replay(header, events, footer)


# --- binary -----------------------------------------------------------------------------------


def varint(n: int) -> bytes:
    """``n`` (not negative) as a protobuf varint: the length before each record of a file."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ReplayFormatError("a record's length is cut off")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7


def to_binary(replay: Replay) -> bytes:
    out = bytearray()
    for record in replay.records():
        data = record.SerializeToString(deterministic=True)
        out += varint(len(data)) + data
    return bytes(out)


def _record(number: int) -> str:
    """The file's record ``number`` (from 1), said as what it holds: the header is the first,
    event k the (k + 1)th, the footer the last."""
    return (
        "record 1 (the header)"
        if number == 1
        else f"record {number} (event {number - 1}, or the footer)"
    )


def from_binary(data: bytes) -> Replay:
    records: list[replay_pb2.ReplayRecord] = []
    pos = 0
    while pos < len(data):
        start = pos
        size, pos = _read_varint(data, pos)
        if pos + size > len(data):
            # Said with where and how much: "the last record is cut off" left a support agent
            # to guess which part of the game the file lost (and a text file read as binary
            # is "cut off" too: its first bytes announce a length it does not have).
            raise ReplayFormatError(
                f"{_record(len(records) + 1)} is cut off: {size} bytes announced, "
                f"{len(data) - pos} left in the file (a file cut short, or not a replay)"
            )
        record = replay_pb2.ReplayRecord()
        try:
            record.ParseFromString(data[pos : pos + size])
        except Exception as error:  # protobuf's DecodeError
            raise ReplayFormatError(
                f"{_record(len(records) + 1)} is not a replay record: {error}"
            ) from None
        # One encoding only: the bytes must be the record's deterministic serialization, its
        # length the shortest varint. Protobuf reads some other bytes as the same message (a
        # varint's bits past the 64th, fields out of order), and a file whose bytes are not
        # the ones it would be written as is not the file that was exported.
        if (
            data[start:pos] != varint(size)
            or record.SerializeToString(deterministic=True) != data[pos : pos + size]
        ):
            raise ReplayFormatError(
                f"{_record(len(records) + 1)} is not written as a replay is written "
                "(its deterministic serialization)"
            )
        records.append(record)
        pos += size
    return _assemble(records)


def _assemble(records: Sequence[replay_pb2.ReplayRecord]) -> Replay:
    """One header, the events, one footer; what is wrong said as what a reader makes of it
    (an empty file, a file cut short after event n, two files joined), not only as the rule."""
    kinds = [r.WhichOneof("record") for r in records]
    if not kinds:
        raise ReplayFormatError("the file is empty (a replay starts with its header)")
    if kinds[0] != "header":
        raise ReplayFormatError(
            f"a replay starts with its header, and record 1 is {kinds[0] or 'empty'}"
        )
    headers, footers = kinds.count("header"), kinds.count("footer")
    if headers != 1 or footers > 1:
        raise ReplayFormatError(
            f"the file holds {headers} headers and {footers} footers, where a replay holds one "
            "of each (several files joined into one?)"
        )
    if kinds[-1] != "footer" and footers:
        at = kinds.index("footer") + 1
        raise ReplayFormatError(
            f"{_record(at)} is the footer, but {len(kinds) - at} more record(s) follow it "
            "(a replay ends with its footer)"
        )
    if kinds[-1] != "footer":
        events = len(kinds) - 1
        raise ReplayFormatError(
            f"the file ends after {f'event {events}' if events else 'its header'} without its "
            "footer: it was cut short (a replay ends with its footer, which holds the revealed "
            "seed and the settlements)"
        )
    return Replay(records[0].header, [r.event for r in records[1:-1]], records[-1].footer)


# --- JSON -------------------------------------------------------------------------------------


def _to_dict(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def to_json(replay: Replay) -> str:
    document = {
        "header": _to_dict(replay.header),
        "events": [_to_dict(e) for e in replay.events],
        "footer": _to_dict(replay.footer),
    }
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


#: The members a JSON replay holds (docs/replay-format.md).
JSON_MEMBERS = ("header", "events", "footer")


#: Deeply nested JSON (``[[[[…``) exhausts the parser's stack (json's or protobuf's): not a
#: replay either.
NESTED_TOO_DEEPLY = "not a JSON replay: nested too deeply"


def from_json(text: str) -> Replay:
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ReplayFormatError(f"not a JSON replay: {_first_line(error)}") from None
    except RecursionError:
        raise ReplayFormatError(NESTED_TOO_DEEPLY) from None
    return _from_document(document)


def _from_document(document: Any) -> Replay:
    """A replay from its JSON document, parsed."""
    # Each part is read by itself, so that a field that is not what it should be is named with
    # its place ("event 8: Failed to parse version field…"), not only by the field's name.
    part = "the header"
    try:
        missing = [m for m in JSON_MEMBERS if not isinstance(document, dict) or m not in document]
        if missing:
            raise ReplayFormatError(
                "not a JSON replay: it has no "
                + ", no ".join(f'"{m}"' for m in missing)
                + ' (a replay is {"header": …, "events": […], "footer": …})'
            )
        header = json_format.ParseDict(document["header"], replay_pb2.ReplayHeader())
        if not isinstance(document["events"], list):
            raise ReplayFormatError('not a JSON replay: its "events" are not a list')
        events: list[service_pb2.GameEvent] = []
        for number, event in enumerate(document["events"], 1):
            part = f"event {number}"
            events.append(json_format.ParseDict(event, service_pb2.GameEvent()))
        part = "the footer"
        footer = json_format.ParseDict(document["footer"], replay_pb2.ReplayFooter())
    except ReplayFormatError:
        raise
    except (ValueError, KeyError, TypeError, json_format.ParseError) as error:
        # protobuf's message goes on to list every field the message has: the first line says it.
        raise ReplayFormatError(f"not a JSON replay: {part}: {_first_line(error)}") from None
    except RecursionError:
        raise ReplayFormatError(NESTED_TOO_DEEPLY) from None
    return Replay(header, events, footer)


# --- files ------------------------------------------------------------------------------------


#: The byte order mark some editors write at the start of a UTF-8 text file: not the JSON's.
BOM = b"\xef\xbb\xbf"


def parse(data: bytes) -> Replay:
    """A replay file's bytes, in either form, told apart by the content: a JSON replay opens
    with ``{`` (after any byte order mark and white space; ``[`` is JSON too, though not a
    replay); a binary one with its header record's length, which may happen to be one of those
    bytes, so text that is not JSON is read as binary before it is refused."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    if data.lstrip()[:1] not in (b"{", b"["):
        return from_binary(data)
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as not_json:
        try:
            return from_binary(data)
        except ReplayFormatError as not_binary:
            raise ReplayFormatError(
                f"neither a JSON replay ({_first_line(not_json)}) nor a binary one ({not_binary})"
            ) from None
    return _from_document(document)


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def load(path: Path | str) -> Replay:
    """A replay from a file in either form (:func:`parse`)."""
    return parse(Path(path).read_bytes())


def dump(replay: Replay, path: Path | str) -> None:
    """Write ``replay``: JSON for a ``.json`` path (``.JSON`` too), else binary."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        path.write_text(to_json(replay), encoding="utf-8")
    else:
        path.write_bytes(to_binary(replay))
