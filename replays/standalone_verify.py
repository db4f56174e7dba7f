#!/usr/bin/env python3
"""Check a Croupier replay without Croupier: python3 standalone_verify.py GAME.replay (or GAME.json)

One file, Python's standard library only, so that a player or an auditor can run it without
installing anything. It reads either form of a replay (docs/replay-format.md) — the binary form
(length-delimited ReplayRecord messages, what ExportReplay gives) or the JSON form — telling them
apart by their content, and checks that the whole file is consistent:

1. the hash chain over every event's stored bytes (in log format 1 the record holds the payload and
   the command; in format 2 each blinded by HMAC-SHA256 under a key derived from the revealed
   server seed, docs/event-log.md), and that the revealed seed is the one the chain's last event
   (SeedRevealed) holds and opens the commitment;
2. that every decoded copy a reader reads equals the hashed bytes: each event's ``body`` and
   ``command`` are compared, field by field, with this file's own decoding of ``payload`` and
   ``command_payload`` (and its ``type`` with the event the payload is); and the header (kind, seats, rules, commitment, client seeds, engine
   version) with what the game's first hashed event holds;
3. that every deck is the one the committed seeds derive (docs/shuffle.md), card by card: each
   deal and redeal, each rebuilt stock (Hoola's and Rummy's ``reshuffle-N``) and Hoola's sit-out
   stock (``sit-out``), all read from the hashed bytes;
4. that the footer's settlements are those the hashed events record.

It does not re-play the rules — whether each move was legal, whether each settlement pays what the
rules say, the final state's digest: that is ``croupier replay verify``. Nor does it check the
header's ``players`` (the studio's player ids), which no hashed event holds; the header's
``created_at_ms`` is event 1's recorded time. Exit status 0: all checks
hold; 1: a check failed (the first failure is printed); 2: the file is not a replay.

Consistent is not authentic: once a game is over its revealed seed keys the chain, so an edited file
can be made whole again. Only the service's signature, checked with --public-key, says the file is
the one the service recorded; without it the last line says "verified, not authenticated".
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import hmac
import json
import struct
import sys
from typing import NamedTuple

GENESIS = "0" * 64
#: The replay layout this file reads (ReplayHeader.format_version).
FORMAT_VERSION = 1
#: Exit statuses.
OK, CHECK_FAILED, NOT_A_REPLAY = 0, 1, 2

# --- the shuffle (docs/shuffle.md) ----------------------------------------------------------------


def shuffle(
    server_seed: bytes, client_seeds: list[str], round_no: int, purpose: str, cards: list[str]
) -> list[str]:
    """HMAC-SHA256 stream over the seeds, unbiased indexes, Fisher–Yates from the end."""
    digest = hashlib.sha256(
        b"".join(struct.pack(">I", len(s.encode())) + s.encode() for s in client_seeds)
    ).digest()
    prefix = (
        b"croupier/shuffle/v1\x00"
        + purpose.encode()
        + b"\x00"
        + struct.pack(">I", round_no)
        + digest
    )
    words: list[int] = []
    counter = 0

    def word() -> int:
        nonlocal counter
        if not words:
            block = hmac.new(
                server_seed, prefix + struct.pack(">I", counter), hashlib.sha256
            ).digest()
            words.extend(struct.unpack(">8I", block))
            counter += 1
        return words.pop(0)

    out = list(cards)
    for i in range(len(out) - 1, 0, -1):
        n = i + 1
        limit = 2**32 - 2**32 % n
        w = word()
        while w >= limit:
            w = word()
        j = w % n
        out[i], out[j] = out[j], out[i]
    return out


# --- the decks (docs/shuffle.md, "Inputs") ----------------------------------------------------

RANKS, SUITS = "A23456789TJQK", "SHDC"


def standard_deck(jokers: int = 0) -> list[str]:
    return [r + s for s in SUITS for r in RANKS] + ["JK1", "JK2"][:jokers]


def rummy_deck() -> list[str]:
    return [r + s + str(copy) for copy in (1, 2) for s in SUITS for r in RANKS] + [
        "JK1",
        "JK2",
        "JK3",
        "JK4",
    ]


# month: the kinds in deck order (B bright, A animal, R ribbon) and the number of chaff
HANAFUDA = {
    1: ("BR", 2),
    2: ("AR", 2),
    3: ("BR", 2),
    4: ("AR", 2),
    5: ("AR", 2),
    6: ("AR", 2),
    7: ("AR", 2),
    8: ("BA", 2),
    9: ("AR", 2),
    10: ("AR", 2),
    11: ("BAR", 1),
    12: ("B", 3),
}


def hanafuda_deck() -> list[str]:
    return [
        f"{m}{k}"
        for m, (kinds, chaff) in HANAFUDA.items()
        for k in list(kinds) + [f"C{n}" for n in range(1, chaff + 1)]
    ]


def canonical_deck(game: str, cards: list[str]) -> list[str]:
    if game == "koikoi":
        return hanafuda_deck()
    if game == "rummy":
        return rummy_deck()
    return standard_deck(sum(1 for c in cards if c.startswith("JK")))


# --- failures ---------------------------------------------------------------------------------


class NotAReplay(Exception):
    """The file is not a replay this verifier reads (exit status 2)."""


class Failed(Exception):
    """A check failed (exit status 1)."""


class WireError(ValueError):
    """Bytes that are not the protobuf message the schema says."""


# --- protobuf's wire format, read against the schema table below ----------------------------------

#: Wire types (protobuf's encoding guide): varint, 64-bit, length-delimited, 32-bit.
VARINT, I64, LEN, I32 = 0, 1, 2, 5
#: A varint is at most ten bytes (64 bits, seven a byte).
MAX_VARINT_BYTES = 10


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    value = 0
    for shift in range(0, 7 * MAX_VARINT_BYTES, 7):
        if pos >= len(data):
            raise WireError("a varint is cut off")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            # One encoding only, the shortest: a longer one (a last byte of 0, or bits past
            # the 64th) reads as the same number in protobuf, in bytes that are not the file's.
            if (byte == 0 and shift) or value >= 1 << 64:
                raise WireError("a varint not in its shortest form")
            return value, pos
    raise WireError("a varint longer than ten bytes")


def wire_fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """A message's fields as (number, wire type, value): ints for varints, bytes for the rest."""
    out: list[tuple[int, int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        value: int | bytes
        if wire == VARINT:
            value, pos = read_varint(data, pos)
        else:
            if wire == LEN:
                size, pos = read_varint(data, pos)
            elif wire in (I64, I32):
                size = 8 if wire == I64 else 4
            else:
                raise WireError(f"field {number}: wire type {wire}")
            if pos + size > len(data):
                raise WireError(f"field {number} is cut off")
            value, pos = data[pos : pos + size], pos + size
        out.append((number, wire, value))
    return out


#: A decoded message: protobuf's JSON mapping in Python values, keyed by the .proto field names,
#: holding only what is set (proto3 omits a default unless the field has presence): ints for
#: integers and enums (by number), bool, str, bytes, lists for repeated fields, dicts for messages.
Message = dict[str, object]

#: The integer types and their ranges; enums are int32.
INTEGERS = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}
#: What an unset scalar reads as (proto3).
DEFAULTS: dict[str, object] = {"string": "", "bytes": b"", "bool": False} | dict.fromkeys(
    INTEGERS, 0
)


# Plain classes and NamedTuples, not dataclasses: this file is also loaded by path, outside
# sys.modules (tests/test_shuffle.py), where dataclasses cannot resolve its annotations.
class Field(NamedTuple):
    number: int
    name: str
    #: A scalar type (``string``, ``uint32``…), or the name of a message or an enum in the table.
    kind: str
    repeated: bool
    #: Set even when it holds the default: a oneof's member, or proto3's ``optional``.
    presence: bool
    oneof: bool


def json_name(name: str) -> str:
    """A field's name in protobuf's JSON mapping: ``server_seed`` → ``serverSeed``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class Schema:
    """The table of the messages a replay holds (``SCHEMA``): numbers, names and types."""

    def __init__(self) -> None:
        self.messages: dict[str, dict[int, Field]] = {}
        self.enums: dict[str, dict[int, str]] = {}
        self.names: dict[str, dict[str, Field]] = {}

    @classmethod
    def parse(cls, text: str) -> Schema:
        schema = cls()
        for declaration in text.replace("\n  ", " ").splitlines():
            what, name, *words = declaration.split()
            if what == "enum":
                schema.enums[name] = {int(words[i]): words[i + 1] for i in range(0, len(words), 2)}
                continue
            fields: dict[int, Field] = {}
            for i in range(0, len(words), 3):
                number, field_name, kind = int(words[i]), words[i + 1], words[i + 2]
                flag = kind[-1] if kind[-1] in "*|?" else ""
                fields[number] = Field(
                    number,
                    field_name,
                    kind.rstrip("*|?"),
                    repeated=flag == "*",
                    presence=flag in ("|", "?"),
                    oneof=flag == "|",
                )
            schema.messages[name] = fields
            # A field by its .proto name or its JSON name (lowerCamelCase): protobuf's JSON
            # mapping reads both, and `croupier replay verify` does.
            schema.names[name] = {f.name: f for f in fields.values()} | {
                json_name(f.name): f for f in fields.values()
            }
        return schema

    def is_message(self, kind: str) -> bool:
        return kind in self.messages

    def is_unset(self, spec: Field, value: object) -> bool:
        """Whether a decoded value is what proto3 leaves out: an empty repeated field, or a scalar
        without presence holding its default (0 for an enum)."""
        if spec.repeated:
            return value == []
        if spec.presence or self.is_message(spec.kind):
            return False
        return value == DEFAULTS.get(spec.kind, 0) and type(value) is type(
            DEFAULTS.get(spec.kind, 0)
        )

    # --- from the wire ----------------------------------------------------------------------

    def decode(self, data: bytes, type_name: str) -> Message:
        """``data`` as a ``type_name`` message; :class:`WireError` names the field at fault."""
        spec = self.messages[type_name]
        out: Message = {}
        last = 0
        for number, wire, raw in wire_fields(data):
            found = spec.get(number)
            if found is None:
                raise WireError(f"{type_name} has no field {number} (in this verifier's schema)")
            if number < last:
                # Deterministic serialization writes the fields in the order of their numbers.
                raise WireError(f"{found.name}: out of its place (after field {last})")
            last = number
            try:
                values = self._wire_values(found, wire, raw)
            except WireError as error:
                raise WireError(f"{found.name}: {error}") from None
            if found.repeated:
                listed = out.setdefault(found.name, [])
                assert isinstance(listed, list)
                listed.extend(values)
            elif found.name in out:
                # Deterministic serialization writes a field once; twice, protobuf would merge.
                raise WireError(f"{found.name}: set twice")
            else:
                out[found.name] = values[0]
        chosen = [f.name for f in spec.values() if f.oneof and f.name in out]
        if len(chosen) > 1:
            raise WireError(f"{type_name}: {' and '.join(chosen)} are one oneof's")
        return {
            name: value
            for name, value in out.items()
            if not self.is_unset(self.names[type_name][name], value)
        }

    def _wire_values(self, spec: Field, wire: int, raw: int | bytes) -> list[object]:
        kind = spec.kind
        if isinstance(raw, int):
            if wire != VARINT or not (kind in INTEGERS or kind == "bool" or kind in self.enums):
                raise WireError(f"a varint where a {kind} belongs")
            return [self._integer(kind, raw)]
        if wire != LEN:
            raise WireError(f"wire type {wire} where a {kind} belongs")
        if kind == "bytes":
            return [raw]
        if kind == "string":
            try:
                return [raw.decode("utf-8")]
            except UnicodeDecodeError:
                raise WireError("a string that is not UTF-8") from None
        if self.is_message(kind):
            try:
                return [self.decode(raw, kind)]
            except RecursionError:
                raise WireError("nested too deeply") from None
        if spec.repeated:  # a packed repeated varint field
            values, pos = [], 0
            while pos < len(raw):
                value, pos = read_varint(raw, pos)
                values.append(self._integer(kind, value))
            return values
        raise WireError(f"bytes where a {kind} belongs")

    def _integer(self, kind: str, value: int) -> object:
        if kind == "bool":
            if value > 1:
                raise WireError(f"{value} for a bool")
            return value == 1
        if kind in self.enums or kind in ("int32", "int64"):
            # Negative numbers are written as 64-bit two's complement (int32 and enums too).
            value = value - 2**64 if value >= 2**63 else value
        low, high = INTEGERS.get(kind, INTEGERS["int32"])
        if not low <= value <= high:
            raise WireError(f"{value} is out of a {kind}'s range")
        return value

    # --- from JSON ----------------------------------------------------------------------------

    def from_json(self, value: object, type_name: str, where: str) -> Message:
        """A JSON object in protobuf's JSON mapping (fields by their .proto or JSON names) as a ``type_name``
        message; :class:`NotAReplay` when it is not one."""
        if not isinstance(value, dict):
            raise NotAReplay(f"{where}: not a JSON object")
        out: Message = {}
        given: set[str] = set()
        for key, item in value.items():
            spec = self.names[type_name].get(key)
            if spec is None:
                raise NotAReplay(f"{where}: {type_name} has no field {key!r}")
            if spec.name in given:  # by both its names
                raise NotAReplay(f"{where}: {type_name}'s {spec.name} is given twice")
            given.add(spec.name)
            key = spec.name
            at = f"{where}.{key}"
            if item is None:  # JSON's null: the field's default
                continue
            if spec.repeated:
                if not isinstance(item, list):
                    raise NotAReplay(f"{at}: not a JSON array")
                converted: object = [
                    self._json_value(spec.kind, x, f"{at}[{i}]") for i, x in enumerate(item)
                ]
            else:
                converted = self._json_value(spec.kind, item, at)
            if not self.is_unset(spec, converted):
                out[key] = converted
        chosen = [f.name for f in self.messages[type_name].values() if f.oneof and f.name in out]
        if len(chosen) > 1:
            raise NotAReplay(f"{where}: {' and '.join(chosen)} are one oneof's")
        return out

    def _json_value(self, kind: str, value: object, where: str) -> object:
        if self.is_message(kind):
            return self.from_json(value, kind, where)
        if kind in self.enums:
            if isinstance(value, str):
                numbers = {name: n for n, name in self.enums[kind].items()}
                if value not in numbers:
                    raise NotAReplay(f"{where}: {value!r} is not a {kind}")
                return numbers[value]
            kind = "int32"
        if kind == "string" and isinstance(value, str):
            return value
        if kind == "bool" and isinstance(value, bool):
            return value
        if kind == "bytes" and isinstance(value, str):
            try:
                return base64.b64decode(value, validate=True)
            except binascii.Error:
                try:
                    return base64.urlsafe_b64decode(value)
                except binascii.Error:
                    raise NotAReplay(f"{where}: not base64") from None
        if kind in INTEGERS and not isinstance(value, bool) and isinstance(value, (int, str)):
            # protobuf's JSON writes 64-bit integers as strings (and reads either).
            try:
                number = int(value)
            except ValueError:
                raise NotAReplay(f"{where}: {value!r} is not an integer") from None
            low, high = INTEGERS[kind]
            if not low <= number <= high:
                raise NotAReplay(f"{where}: {number} is out of a {kind}'s range")
            return number
        raise NotAReplay(f"{where}: {json.dumps(value)[:40]} is not a {kind}")


ABSENT = object()


def difference(claimed: object, actual: object, path: str) -> tuple[str, object, object] | None:
    """The first place where two decoded values differ: (path, claimed, actual); None if equal."""
    if isinstance(claimed, dict) and isinstance(actual, dict):
        for key in [*actual, *(k for k in claimed if k not in actual)]:
            found = difference(claimed.get(key, ABSENT), actual.get(key, ABSENT), f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(claimed, list) and isinstance(actual, list):
        for i, (a, b) in enumerate(zip(claimed, actual, strict=False)):
            found = difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(claimed) != len(actual):
            return f"{path} (its length)", len(claimed), len(actual)
        return None
    if type(claimed) is not type(actual) or claimed != actual:
        return path, claimed, actual
    return None


def shown(value: object) -> str:
    """A decoded value in a line of output, kept short."""
    if value is ABSENT:
        return "nothing"
    if isinstance(value, dict):
        return "a message"
    if isinstance(value, list):
        return f"{len(value)} items"
    if isinstance(value, bytes):
        text = base64.b64encode(value).decode()
        return f"{len(value)} bytes ({text[:24]}{'…' if len(text) > 24 else ''})"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "…"


#: Characters shown before the first difference of two long strings.
BEFORE_DIFFERENCE = 20


def shown_apart(a: object, b: object) -> tuple[str, str]:
    """Two values that differ, each kept short as :func:`shown` keeps one, but two long strings
    from a little before where they first differ (a seed changed in its 60th character reads
    as two different texts, not as two equal beginnings)."""
    if not (isinstance(a, str) and isinstance(b, str)):
        return shown(a), shown(b)
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    first = min(len(a), len(b)) if first is None else first
    start = max(0, first - BEFORE_DIFFERENCE)
    if not start:
        return shown(a), shown(b)

    def window(text: str) -> str:
        part = json.dumps(text[start:], ensure_ascii=False)[1:]  # the quoted tail, no opening quote
        return '"…' + (part if len(part) <= 56 else part[:55] + "…")

    return window(a), window(b)


def must_equal(claimed: object, actual: object, what: str, source: str) -> None:
    """:class:`Failed` unless the copy a reader reads (``what``) equals the authentic value."""
    found = difference(claimed, actual, what)
    if found is not None:
        path, a, b = found
        said, held = shown_apart(a, b)
        raise Failed(f"{path} reads {said}, but {source} holds {held}")


# --- the schema: the messages a replay holds ------------------------------------------------------
# Generated from the .proto files' descriptors, never edited by hand: a test checks it equals them
# (tests/replays/test_standalone_schema.py, which rewrites it: python -m
# tests.replays.test_standalone_schema). Each declaration: "message NAME" then "NUMBER NAME TYPE"
# per field, TYPE ending in "*" when repeated, "|" for a oneof's member, "?" for proto3's optional;
# or "enum NAME" then "NUMBER NAME" per value. A line that starts with two spaces goes on.
SCHEMA = """\
message BindSevens 1 meld_id uint32 2 cards string*
message Bright 1 kind BrightKind 2 cards Card*
message CameBack 1 seat uint32
message CaptureChosen 1 seat uint32 2 card HanafudaCard 3 captured HanafudaCard*
message Card 1 code string 2 rank uint32 3 suit string 4 name string 5 copy uint32
message CardDiscarded 1 seat uint32 2 card Card
message CardDrawn 1 seat uint32 2 card Card
message CardLaidOff 1 seat uint32 2 card Card 3 meld uint32 4 after PlacedMeld
message CardPlayed 1 seat uint32 2 card HanafudaCard 3 captured HanafudaCard*
message CardTurned 1 seat uint32 2 card HanafudaCard 3 captured HanafudaCard* 4 awaiting_choice
  bool
message CardsLaidOff 1 seat uint32 2 cards Card* 3 meld TableMeld
message ChooseCapture 1 card string
message ClaimMade 1 seat uint32 2 cards Card* 3 jokers JokerCard* 4 at_ms int64
message CloseTable
message CombinationDeclared 1 seat uint32 2 combination Combination
message ComeBack
message Command 1 hoola HoolaCommand| 2 koikoi KoiKoiCommand| 3 gin GinCommand| 4 rummy
  RummyCommand|
message DealerDraw 1 seat uint32 2 card HanafudaCard
message Declare 1 combination Combination
message Discard 1 card string
message DiscardTaken 1 seat uint32 2 card Card 3 discarder uint32? 4 meld TableMeld
message Draw
message DrawDiscard
message DrawStock
message EndGame 1 reason string
message EndLayOffs
message EventBody 1 hoola HoolaEvent| 2 seed_revealed SeedRevealed| 3 koikoi KoiKoiEvent| 4 gin
  GinEvent| 5 rummy RummyEvent|
message Factor 1 name string 2 value int64 3 reason string 4 added bool
message FirstDealerDraw 1 seat uint32 2 card Card
message GameEvent 1 game_id string 2 version uint64 3 seat uint32? 4 command_id string 5
  recorded_at_ms int64 6 body EventBody 7 prev_hash string 8 hash string 9 redacted bool 10
  payload bytes 11 type string 12 command Command 13 command_payload bytes
message GameStarted 1 rules HoolaRules 2 seats uint32 3 commitment string 4 client_seeds string*
  5 engine_version string
message GinCardDiscarded 1 seat uint32 2 card Card
message GinCardDrawn 1 seat uint32 2 card Card 3 from_discard bool
message GinCommand 1 draw_stock DrawStock| 2 draw_discard DrawDiscard| 3 pass Pass| 4 discard
  GinDiscard| 5 knock Knock| 6 lay_off GinLayOff| 7 end_lay_offs EndLayOffs| 8 next_hand
  NextHand| 9 come_back ComeBack| 10 end_game EndGame|
message GinDealerDraw 1 seat uint32 2 card Card
message GinDiscard 1 card string
message GinEvent 1 match_started GinMatchStarted| 2 hand_dealt HandDealt| 3 upcard_passed
  UpcardPassed| 4 card_drawn GinCardDrawn| 5 card_discarded GinCardDiscarded| 6 knocked Knocked|
  7 card_laid_off CardLaidOff| 8 lay_offs_ended LayOffsEnded| 9 hand_ended HandEnded| 10
  match_ended GinMatchEnded| 11 turn_timed_out TurnTimedOut| 12 seat_forfeited GinSeatForfeited|
  13 came_back CameBack| 14 turn_restarted TurnRestarted| 15 studio_ended_game StudioEndedGame|
message GinHand 1 seat uint32 2 cards Card* 3 count uint32
message GinLayOff 1 card string 2 meld uint32
message GinMatchEnded 1 hands uint32 2 totals uint32* 3 settlement Settlement
message GinMatchStarted 1 rules GinRules 2 seats uint32 3 commitment string 4 client_seeds
  string* 5 engine_version string
message GinRules 1 knock_card uint32? 2 gin_bonus uint32? 3 undercut_bonus uint32? 4
  big_gin_bonus uint32? 5 match_points uint32? 6 stake_per_point uint32? 7 turn_time_ms uint32?
  8 time_bank_ms uint32? 9 max_timeouts uint32? 10 forfeit_when_away bool? 11 knocker_best_melds
  bool? 12 end_when_all_away bool? 13 forced_discard_by_rank bool? 14 outage_grace_ms uint32? 15
  forced_lay_off_best bool?
message GinSeatForfeited 1 seat uint32 2 hand uint32
message HanafudaCard 1 code string 2 month uint32 3 kind HanafudaKind 4 role HanafudaRole 5 name
  string 6 plant string
message Hand 1 seat uint32 2 cards Card* 3 count uint32
message HandDealt 1 hand uint32 2 dealer uint32 3 hands GinHand* 4 upcard Card 5 stock Card* 6
  stock_count uint32 7 totals uint32* 8 dealer_draws GinDealerDraw*
message HandEnded 1 hand uint32 2 outcome string 3 winner uint32? 4 points uint32 5 knocker
  uint32? 6 deadwood uint32* 7 hands GinHand* 8 totals uint32* 9 settlement Settlement
message HoolaCommand 1 draw Draw| 2 thank_you ThankYou| 3 meld Meld| 4 lay_off LayOff| 5 discard
  Discard| 6 stop Stop| 7 declare Declare| 8 next_round NextRound| 9 close_table CloseTable| 10
  bind_sevens BindSevens| 11 play Play| 12 sit_out SitOut| 13 leave_table LeaveTable| 14
  come_back ComeBack| 15 end_game EndGame|
message HoolaEvent 1 game_started GameStarted| 2 round_dealt RoundDealt| 3 card_drawn CardDrawn|
  4 discard_taken DiscardTaken| 5 meld_made MeldMade| 6 cards_laid_off CardsLaidOff| 7
  card_discarded CardDiscarded| 8 stock_reshuffled StockReshuffled| 9 stop_called StopCalled| 10
  combination_declared CombinationDeclared| 11 round_ended RoundEnded| 12 table_closed
  TableClosed| 13 sevens_bound SevensBound| 14 claim_made ClaimMade| 15 play_declared
  PlayDeclared| 16 sat_out SatOut| 17 play_began PlayBegan| 18 turn_timed_out TurnTimedOut| 19
  seat_left SeatLeft| 20 seat_forfeited SeatForfeited| 21 came_back CameBack| 22 turn_restarted
  TurnRestarted| 23 studio_ended_game StudioEndedGame|
message HoolaRules 1 jokers uint32? 2 ace_wrap bool? 3 ace_low_only bool? 4 joker_lay_off_alone
  bool? 5 seven_binding bool? 6 thank_you_lone_seven bool? 7 four_of_a_kind_free bool? 8
  seven_hand_multiplier uint32? 9 joker_hand_multiplier uint32? 10 joker_value uint32? 11
  stop_limits StopLimits 12 stop_requires_melds bool? 13 first_turn_stop bool? 14
  two_player_stop bool? 15 low_hand_max uint32? 16 high_hand_min uint32? 17
  straight_flush_multiplier uint32? 18 first_turn_combinations bool? 19 reshuffle_discards bool?
  20 payment_mode PaymentMode? 21 base_stake uint32? 22 unmelded_multiplier uint32? 23
  seven_multiplier uint32? 24 joker_multiplier uint32? 25 penalties_before_first_turn Penalties
  26 hoola_multiplier uint32? 27 perfect_hoola_multiplier uint32? 28 four_sevens_multiplier
  uint32? 29 low_hand_multiplier uint32? 30 high_hand_multiplier uint32? 31
  stop_penalty_multiplier uint32? 32 thank_you_penalty_multiplier uint32? 33
  thank_you_penalty_scope ThankYouPenaltyScope? 34 tie_mode TieMode? 35 out_of_turn_thank_you
  bool? 36 claim_priority ClaimPriority? 37 claim_window_ms uint32? 38 hoola_table_multiplier
  Multipliers 39 sit_out bool? 40 max_seats uint32? 41 min_seats uint32? 42 max_reshuffles
  uint32? 43 rounds uint32? 44 turn_time_ms uint32? 45 time_bank_ms uint32? 46 max_timeouts
  uint32? 47 forfeit_when_away bool? 48 go_out_by_discard bool? 49 seven_binding_is_meld bool?
  50 named_set_joker_suits bool? 51 binding_ends_hoola bool? 52 first_dealer_drawn bool? 53
  outage_grace_ms uint32?
message JokerAs 1 joker string 2 card string
message JokerCard 1 joker Card 2 card Card
message JokerSwapped 1 seat uint32 2 card Card 3 joker Card 4 meld RummyTableMeld
message Knock 1 card string 2 melds KnockMeld*
message KnockMeld 1 cards string*
message Knocked 1 seat uint32 2 card Card 3 melds PlacedMeld* 4 deadwood_cards Card* 5 deadwood
  uint32 6 gin bool 7 big_gin bool
message KoiKoi
message KoiKoiCalled 1 seat uint32
message KoiKoiCommand 1 play_card PlayCard| 2 choose_capture ChooseCapture| 3 koi_koi KoiKoi| 4
  shobu Shobu| 5 next_round KoiKoiNextRound| 6 come_back ComeBack| 7 end_game EndGame|
message KoiKoiEvent 1 match_started MatchStarted| 2 round_dealt KoiKoiRoundDealt| 3 card_played
  CardPlayed| 4 card_turned CardTurned| 5 capture_chosen CaptureChosen| 6 yaku_formed
  YakuFormed| 7 koi_koi_called KoiKoiCalled| 8 shobu_called ShobuCalled| 9 round_ended
  KoiKoiRoundEnded| 10 match_ended MatchEnded| 11 turn_timed_out TurnTimedOut| 12 seat_forfeited
  KoiKoiSeatForfeited| 13 came_back CameBack| 14 turn_restarted TurnRestarted| 15
  studio_ended_game StudioEndedGame|
message KoiKoiHand 1 seat uint32 2 cards HanafudaCard* 3 count uint32
message KoiKoiNextRound
message KoiKoiRoundDealt 1 round uint32 2 dealer uint32 3 hands KoiKoiHand* 4 field
  HanafudaCard* 5 stock HanafudaCard* 6 stock_count uint32 7 totals uint32* 8 redeals uint32 9
  dealer_draws DealerDraw*
message KoiKoiRoundEnded 1 round uint32 2 outcome string 3 winner uint32? 4 yaku Yaku* 5 points
  uint32 6 hands KoiKoiHand* 7 totals uint32* 8 settlement Settlement
message KoiKoiRules 1 rounds uint32? 2 stake_per_point uint32? 3 double_from uint32? 4
  koi_koi_multiplier uint32? 5 hand_yaku_points uint32? 6 sake_cup_as_chaff bool? 7 turn_time_ms
  uint32? 8 time_bank_ms uint32? 9 max_timeouts uint32? 10 forfeit_when_away bool? 11
  outage_grace_ms uint32? 12 forced_play_least bool? 13 viewing_yaku bool?
message KoiKoiSeatForfeited 1 seat uint32 2 round uint32
message LayDown 1 melds MeldCards*
message LayOff 1 meld_id uint32 2 cards string* 3 jokers JokerAs*
message LayOffCards 1 meld_id uint32 2 cards string* 3 jokers NamedJoker*
message LayOffsEnded 1 seat uint32 2 melds PlacedMeld* 3 deadwood_cards Card* 4 deadwood uint32
message LeaveTable
message MatchEnded 1 rounds uint32 2 totals uint32* 3 settlement Settlement
message MatchStarted 1 rules KoiKoiRules 2 seats uint32 3 commitment string 4 client_seeds
  string* 5 engine_version string
message Meld 1 cards string* 2 jokers JokerAs*
message MeldCards 1 cards string* 2 jokers NamedJoker*
message MeldJoker 1 joker Card 2 card Card
message MeldMade 1 seat uint32 2 meld TableMeld
message MeldsLaidDown 1 seat uint32 2 melds RummyTableMeld* 3 opening uint32
message Multipliers 1 values uint32*
message NamedJoker 1 joker string 2 card string
message NextHand
message NextRound
message Pass
message Penalties 1 values Penalty*
message PlacedMeld 1 kind MeldShape 2 cards Card* 3 jokers MeldJoker*
message Play
message PlayBegan 1 players uint32* 2 stock Card* 3 stock_count uint32
message PlayCard 1 card string 2 capture string
message PlayDeclared 1 seat uint32
message ReplayFooter 1 server_seed string 2 final_state_digest string 3 rounds Settlement* 4
  settlement Settlement 5 last_hash string 6 signature ReplaySignature
message ReplayHeader 1 format_version uint32 2 game_id string 3 kind GameKind 4 rules Rules 5
  engine_version string 6 seats uint32 7 commitment string 8 client_seeds string* 9
  created_at_ms int64 10 log_format uint32 11 players string*
message ReplayRecord 1 header ReplayHeader| 2 event GameEvent| 3 footer ReplayFooter|
message ReplaySignature 1 algorithm string 2 key_id string 3 signature bytes
message RoundDealt 1 round uint32 2 dealer uint32 3 hands Hand* 4 upcard Card 5 stock Card* 6
  stock_count uint32 7 table_multiplier uint32 8 hoola_streak uint32 9 balances int64* 10
  dealer_draws FirstDealerDraw*
message RoundEnded 1 round uint32 2 outcome string 3 winners uint32* 4 hands Hand* 5 hand_values
  uint32* 6 hoola bool 7 perfect_hoola bool 8 thank_you_hoola bool 9 settlement Settlement
message Rules 1 hoola HoolaRules| 2 koikoi KoiKoiRules| 3 gin GinRules| 4 rummy RummyRules|
message RummyCardDiscarded 1 seat uint32 2 card Card
message RummyCardDrawn 1 seat uint32 2 card Card
message RummyCardsLaidOff 1 seat uint32 2 cards Card* 3 meld RummyTableMeld
message RummyCommand 1 draw_stock RummyDrawStock| 2 take_discard TakeDiscard| 3 lay_down
  LayDown| 4 lay_off RummyLayOff| 5 swap_joker SwapJoker| 6 discard RummyDiscard| 7 come_back
  ComeBack| 8 end_game EndGame|
message RummyDealt 1 dealer uint32 2 hands RummyHand* 3 upcard Card 4 stock Card* 5 stock_count
  uint32 6 dealer_draws FirstDealerDraw*
message RummyDiscard 1 card string
message RummyDiscardTaken 1 seat uint32 2 card Card
message RummyDrawStock
message RummyEvent 1 game_started RummyStarted| 2 round_dealt RummyDealt| 3 card_drawn
  RummyCardDrawn| 4 discard_taken RummyDiscardTaken| 5 melds_laid_down MeldsLaidDown| 6
  cards_laid_off RummyCardsLaidOff| 7 joker_swapped JokerSwapped| 8 card_discarded
  RummyCardDiscarded| 9 stock_reshuffled RummyStockReshuffled| 10 round_ended RummyRoundEnded|
  11 turn_timed_out TurnTimedOut| 12 seat_forfeited RummySeatForfeited| 13 came_back CameBack|
  14 turn_restarted TurnRestarted| 15 studio_ended_game StudioEndedGame|
message RummyHand 1 seat uint32 2 cards Card* 3 count uint32
message RummyLayOff 1 meld_id uint32 2 cards string* 3 jokers NamedJoker*
message RummyRoundEnded 1 outcome string 2 winner uint32? 3 hands RummyHand* 4 hand_values
  uint32* 5 settlement Settlement
message RummyRules 1 open_threshold uint32? 2 stake_per_point uint32? 3 max_reshuffles uint32? 4
  min_seats uint32? 5 max_seats uint32? 6 turn_time_ms uint32? 7 time_bank_ms uint32? 8
  max_timeouts uint32? 9 forfeit_when_away bool? 10 ace_high_when_ambiguous bool? 11
  end_when_all_away bool? 12 first_dealer_drawn bool? 13 outage_grace_ms uint32?
message RummySeatForfeited 1 seat uint32 2 hand RummyHand 3 hand_value uint32 4 lines
  SettlementLine*
message RummyStarted 1 rules RummyRules 2 seats uint32 3 commitment string 4 client_seeds
  string* 5 engine_version string
message RummyStockReshuffled 1 stock Card* 2 stock_count uint32 3 reshuffle uint32
message RummyTableMeld 1 id uint32 2 owner uint32 3 kind MeldShape 4 cards Card* 5 jokers
  MeldJoker*
message SatOut 1 seat uint32 2 voluntary bool 3 hand Card* 4 brights Bright* 5 compensation
  uint32
message SeatForfeited 1 seat uint32
message SeatLeft 1 seat uint32
message SeedRevealed 1 server_seed string
message Settlement 1 round uint32 2 winners uint32* 3 outcome string 4 lines SettlementLine* 5
  net int64* 6 notes string*
message SettlementLine 1 payer uint32 2 payee uint32 3 amount int64 4 factors Factor* 5 summary
  string
message SevensBound 1 seat uint32 2 cards Card* 3 meld TableMeld
message Shobu
message ShobuCalled 1 seat uint32
message SitOut
message StockReshuffled 1 stock Card* 2 stock_count uint32 3 reshuffle uint32
message Stop
message StopCalled 1 seat uint32 2 hand_value uint32
message StopLimit 1 players uint32 2 max_points uint32?
message StopLimits 1 values StopLimit*
message StudioEndedGame 1 reason string
message SwapJoker 1 meld_id uint32 2 card string 3 melds MeldCards* 4 lay_off LayOffCards
message TableClosed 1 rounds uint32 2 settlement Settlement
message TableMeld 1 id uint32 2 owner uint32 3 kind MeldKind 4 cards Card* 5 jokers JokerCard*
message TakeDiscard 1 melds MeldCards* 2 lay_off LayOffCards
message ThankYou 1 cards string* 2 jokers JokerAs*
message TurnRestarted 1 seat uint32 2 deadline_ms int64 3 at_ms int64
message TurnTimedOut 1 seat uint32 2 deadline_ms int64 3 away bool
message UpcardPassed 1 seat uint32
message Yaku 1 kind YakuKind 2 points uint32 3 cards HanafudaCard* 4 extra uint32
message YakuFormed 1 seat uint32 2 yaku Yaku* 3 points uint32
enum BrightKind 0 BRIGHT_KIND_UNSPECIFIED 1 BRIGHT_KIND_SEVEN 2 BRIGHT_KIND_SET 3
  BRIGHT_KIND_RUN 4 BRIGHT_KIND_JOKER
enum ClaimPriority 0 CLAIM_PRIORITY_UNSPECIFIED 1 CLAIM_PRIORITY_FIRST_COME 2
  CLAIM_PRIORITY_NEAREST_IN_TURN
enum Combination 0 COMBINATION_UNSPECIFIED 1 COMBINATION_FOUR_SEVENS 2 COMBINATION_LOW_HAND 3
  COMBINATION_HIGH_HAND 4 COMBINATION_STRAIGHT_FLUSH
enum GameKind 0 GAME_KIND_UNSPECIFIED 1 GAME_KIND_HOOLA 2 GAME_KIND_KOIKOI 3 GAME_KIND_GIN 4
  GAME_KIND_RUMMY
enum HanafudaKind 0 HANAFUDA_KIND_UNSPECIFIED 1 HANAFUDA_KIND_BRIGHT 2 HANAFUDA_KIND_ANIMAL 3
  HANAFUDA_KIND_RIBBON 4 HANAFUDA_KIND_CHAFF
enum HanafudaRole 0 HANAFUDA_ROLE_UNSPECIFIED 1 HANAFUDA_ROLE_ORDINARY 2 HANAFUDA_ROLE_RAIN_MAN
  3 HANAFUDA_ROLE_SAKE_CUP 4 HANAFUDA_ROLE_POETRY_RIBBON 5 HANAFUDA_ROLE_BLUE_RIBBON 6
  HANAFUDA_ROLE_PLAIN_RIBBON 7 HANAFUDA_ROLE_CURTAIN 8 HANAFUDA_ROLE_FULL_MOON 9
  HANAFUDA_ROLE_BOAR 10 HANAFUDA_ROLE_DEER 11 HANAFUDA_ROLE_BUTTERFLIES
enum MeldKind 0 MELD_KIND_UNSPECIFIED 1 MELD_KIND_SET 2 MELD_KIND_RUN 3 MELD_KIND_LONE_SEVEN
enum MeldShape 0 MELD_SHAPE_UNSPECIFIED 1 MELD_SHAPE_SET 2 MELD_SHAPE_RUN
enum PaymentMode 0 PAYMENT_MODE_UNSPECIFIED 1 PAYMENT_MODE_RANK 2 PAYMENT_MODE_FLAT 3
  PAYMENT_MODE_POINT_DIFFERENCE
enum Penalty 0 PENALTY_UNSPECIFIED 1 PENALTY_UNMELDED 2 PENALTY_SEVEN 3 PENALTY_JOKER
enum ThankYouPenaltyScope 0 THANK_YOU_PENALTY_SCOPE_UNSPECIFIED 1
  THANK_YOU_PENALTY_SCOPE_ANY_WIN 2 THANK_YOU_PENALTY_SCOPE_HOOLA_ONLY
enum TieMode 0 TIE_MODE_UNSPECIFIED 1 TIE_MODE_SHARED 2 TIE_MODE_VOID
enum YakuKind 0 YAKU_KIND_UNSPECIFIED 1 YAKU_KIND_GOKO 2 YAKU_KIND_SHIKO 3 YAKU_KIND_AME_SHIKO 4
  YAKU_KIND_SANKO 5 YAKU_KIND_HANAMI_ZAKE 6 YAKU_KIND_TSUKIMI_ZAKE 7 YAKU_KIND_INOSHIKACHO 8
  YAKU_KIND_AKATAN 9 YAKU_KIND_AOTAN 10 YAKU_KIND_AKATAN_AOTAN 11 YAKU_KIND_TANE 12
  YAKU_KIND_TAN 13 YAKU_KIND_KASU 14 YAKU_KIND_TESHI 15 YAKU_KIND_KUTTSUKI
"""


# --- the two forms of a file ----------------------------------------------------------------------


class Replay(NamedTuple):
    """A replay file's parts, each decoded against the schema (whichever form it came in)."""

    header: Message
    events: list[Message]
    footer: Message
    form: str


def read_binary(data: bytes, schema: Schema) -> Replay:
    """Length-delimited ReplayRecord messages: one header, the events, one footer."""
    records: list[Message] = []
    pos = 0
    while pos < len(data):
        number = len(records) + 1
        try:
            size, pos = read_varint(data, pos)
        except WireError as error:
            raise NotAReplay(f"record {number}: its length: {error}") from None
        if pos + size > len(data):
            raise NotAReplay(f"record {number} is cut off ({size} bytes announced)")
        try:
            record = schema.decode(data[pos : pos + size], "ReplayRecord")
        except WireError as error:
            raise NotAReplay(f"record {number} is not a replay record: {error}") from None
        if len(record) != 1:
            raise NotAReplay(f"record {number} is empty")
        records.append(record)
        pos += size
    kinds = [next(iter(r)) for r in records]
    if not kinds or kinds[0] != "header":
        raise NotAReplay("a replay starts with its header")
    if kinds[-1] != "footer" or kinds.count("header") != 1 or kinds.count("footer") != 1:
        raise NotAReplay("a replay ends with its footer (one header, one footer)")
    return Replay(
        _message(records[0], "header"),
        [_message(r, "event") for r in records[1:-1]],
        _message(records[-1], "footer"),
        "binary",
    )


def read_json(document: object, schema: Schema) -> Replay:
    """{"header": …, "events": […], "footer": …} in protobuf's JSON mapping."""
    if not isinstance(document, dict) or set(document) != {"header", "events", "footer"}:
        raise NotAReplay('not {"header": …, "events": […], "footer": …}')
    if not isinstance(document["events"], list):
        raise NotAReplay("events: not a JSON array")
    return Replay(
        schema.from_json(document["header"], "ReplayHeader", "header"),
        [
            schema.from_json(e, "GameEvent", f"event {i}")
            for i, e in enumerate(document["events"], 1)
        ],
        schema.from_json(document["footer"], "ReplayFooter", "footer"),
        "JSON",
    )


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object whose names are all different: with a name twice, a person reading the text
    may read the one a program does not (json keeps the last)."""
    names = [name for name, _ in pairs]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"a JSON object names {name!r} twice")
    return dict(pairs)


#: The byte order mark some editors write at the start of a UTF-8 text file: not the JSON's.
BOM = b"\xef\xbb\xbf"


def read(data: bytes, schema: Schema) -> Replay:
    """Either form, told apart by the content: a JSON replay is an object, so it opens with "{"
    (after any byte order mark and white space; "[" is JSON too, but not a replay); a binary one
    opens with its header record's length. That length may happen to be the byte "{" or "[", so
    a file that opens with one and is not JSON is read as binary."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    if data.lstrip()[:1] not in (b"{", b"["):
        return read_binary(data, schema)
    try:
        document = json.loads(data.decode("utf-8"), object_pairs_hook=_object)
    except (UnicodeDecodeError, ValueError, RecursionError) as not_json:
        try:
            return read_binary(data, schema)
        except NotAReplay as not_binary:
            if isinstance(not_json, UnicodeDecodeError):
                # Either may be what was meant: a binary file may open with the byte "{" too.
                raise NotAReplay(f"neither JSON ({not_json}) nor binary ({not_binary})") from None
            # Text that opens like JSON: what is wrong with it as JSON is what helps.
            raise NotAReplay(f"not JSON: {not_json}") from None
    return read_json(document, schema)


# --- reading decoded messages ---------------------------------------------------------------------


def _message(message: Message, name: str) -> Message:
    value = message.get(name, {})
    if not isinstance(value, dict):
        raise TypeError(f"{name}: not a message")
    return value


def _messages(message: Message, name: str) -> list[Message]:
    value = message.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise TypeError(f"{name}: not repeated messages")
    return value


def _int(message: Message, name: str) -> int:
    value = message.get(name, 0)
    if not isinstance(value, int):
        raise TypeError(f"{name}: not an integer")
    return value


def _text(message: Message, name: str) -> str:
    value = message.get(name, "")
    if not isinstance(value, str):
        raise TypeError(f"{name}: not a string")
    return value


def _bytes(message: Message, name: str) -> bytes:
    value = message.get(name, b"")
    if not isinstance(value, bytes):
        raise TypeError(f"{name}: not bytes")
    return value


def _texts(message: Message, name: str) -> list[str]:
    value = message.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{name}: not repeated strings")
    return value


def only_field(message: Message, what: str) -> tuple[str, Message]:
    """The one member set of a message that is a oneof of messages (EventBody, a game's event)."""
    if len(message) != 1:
        raise Failed(f"{what}: {len(message)} fields set where one belongs")
    name = next(iter(message))
    return name, _message(message, name)


# --- the chain (docs/event-log.md) ----------------------------------------------------------------

#: Log formats: 1 hashes payloads in the clear, 2 blinded by a seed-derived key.
PLAIN_FORMAT, BLINDED_FORMAT = 1, 2


def chain_key(log_format: int, server_seed: bytes, game_id: str) -> bytes | None:
    """Format 2's blinding key: HMAC-SHA256(server_seed, "croupier/log/v2/key:" ‖ game_id)."""
    if log_format == PLAIN_FORMAT:
        return None
    if log_format != BLINDED_FORMAT:
        raise Failed(f"header: unknown log format {log_format}")
    return hmac.new(
        server_seed, b"croupier/log/v2/key:" + game_id.encode(), hashlib.sha256
    ).digest()


def record_bytes(game_id: str, event: Message, key: bytes | None = None) -> bytes:
    """Every stored column, length-prefixed, in order (payload and command blinded under ``key``
    in format 2)."""

    def part(data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + data

    version = _int(event, "version")
    payload, command = _bytes(event, "payload"), _bytes(event, "command_payload")
    if key is not None:
        at = struct.pack(">Q", version)
        payload = hmac.new(key, at + b"payload" + payload, hashlib.sha256).digest()
        command = hmac.new(key, at + b"command" + command, hashlib.sha256).digest()
    seat = event.get("seat")
    return (
        part(game_id.encode())
        + struct.pack(">Q", version)
        + part(_text(event, "command_id").encode())
        + struct.pack(">i", -1 if seat is None else _int(event, "seat"))
        + struct.pack(">q", _int(event, "recorded_at_ms"))
        + part(_text(event, "type").encode())
        + part(payload)
        + part(command)
    )


# --- what each game's events are called -----------------------------------------------------------

#: Per game (its field in EventBody): the first event, the deal, the events that end a round
#: (each carries that round's settlement) and the one whose settlement is the game's.
STARTED = {"hoola": "game_started", "koikoi": "match_started", "gin": "match_started"}
STARTED["rummy"] = "game_started"
DEALT = {"hoola": "round_dealt", "koikoi": "round_dealt", "gin": "hand_dealt"}
DEALT["rummy"] = "round_dealt"
ROUND_ENDED = {"hoola": "round_ended", "koikoi": "round_ended", "gin": "hand_ended"}
ROUND_ENDED["rummy"] = "round_ended"
FINAL = {"hoola": "table_closed", "koikoi": "match_ended", "gin": "match_ended"}
FINAL["rummy"] = "round_ended"  # Rummy is one round: its settlement is the game's
SEED_REVEALED = "seed_revealed"
#: Rule options added after games were first recorded (the engine's ``ADDED_LATER``): a game's
#: first event holds one only when it differs from its default, so an absent one reads as this
#: default, while a replay's header shows every option. A test checks this against the engine.
_CLOCK_OPTIONS: dict[str, object] = {
    "turn_time_ms": 0,
    "time_bank_ms": 0,
    "max_timeouts": 3,
    "forfeit_when_away": False,
    "outage_grace_ms": 0,
}
ADDED_LATER: dict[str, dict[str, object]] = {
    "hoola": _CLOCK_OPTIONS
    | {
        "go_out_by_discard": False,
        "seven_binding_is_meld": False,
        "named_set_joker_suits": False,
        "binding_ends_hoola": False,
        "first_dealer_drawn": False,
    },
    "koikoi": _CLOCK_OPTIONS | {"forced_play_least": False, "viewing_yaku": True},
    "gin": _CLOCK_OPTIONS
    | {
        "knocker_best_melds": False,
        "end_when_all_away": False,
        "forced_discard_by_rank": False,
        "forced_lay_off_best": False,
    },
    "rummy": _CLOCK_OPTIONS
    | {"ace_high_when_ambiguous": False, "end_when_all_away": False, "first_dealer_drawn": False},
}
#: Rummy deals and rebuilds its stock with round 1 (docs/shuffle.md, "Rummy's deal").
RUMMY_ROUND = 1


def codes(cards: list[Message]) -> list[str]:
    return [_text(c, "code") for c in cards]


def hands_by_seat(deal: Message) -> dict[int, list[str]]:
    return {_int(h, "seat"): codes(_messages(h, "cards")) for h in _messages(deal, "hands")}


def dealt_order(game: str, deal: Message, seats: int) -> tuple[str, int, list[str]]:
    """A recorded deal as the shuffled deck it claims to be: (purpose, round, cards in order)."""
    hands = hands_by_seat(deal)
    dealer = _int(deal, "dealer")
    try:
        if game == "rummy":
            order = [c for k in range(seats) for c in hands[(dealer + 1 + k) % seats]]
            rest = codes([_message(deal, "upcard"), *_messages(deal, "stock")])
            return "deal", RUMMY_ROUND, order + rest
        if game == "hoola":
            order = [c for k in range(seats) for c in hands[(dealer + k) % seats]]
            rest = codes([_message(deal, "upcard"), *_messages(deal, "stock")])
            return "deal", _int(deal, "round"), order + rest
        if game == "gin":
            order = hands[1 - dealer] + hands[dealer]
            rest = codes([_message(deal, "upcard"), *_messages(deal, "stock")])
            return "deal", _int(deal, "hand"), order + rest
        order = hands[dealer] + hands[1 - dealer] + codes(_messages(deal, "field"))
        redeals = _int(deal, "redeals")
        purpose = "deal" if redeals == 0 else f"redeal-{redeals}"
        return purpose, _int(deal, "round"), order + codes(_messages(deal, "stock"))
    except KeyError as seat:
        raise Failed(f"the deal holds no hand for seat {seat}") from None


def first_difference(derived: list[str], recorded: list[str]) -> str:
    at = next(
        i for i, (a, b) in enumerate(zip(derived + [""], recorded + [""], strict=False)) if a != b
    )
    return (
        f"card {at + 1}: derived {derived[at] if at < len(derived) else 'nothing'}, "
        f"recorded {recorded[at] if at < len(recorded) else 'nothing'}"
    )


#: The games whose stock is rebuilt from the discards (and Hoola's sit-out shuffle).
REBUILT = ("hoola", "rummy")
PURPOSES = ("deal", "first-dealer", "reshuffle", "sit-out")
#: Koi-Koi's deal: eight cards to each hand, then eight to the field (docs/shuffle.md).
KOIKOI_HAND, KOIKOI_FIELD = 8, 8
#: Cards of one month on the field that make a Koi-Koi deal void.
MONTH_CARDS = 4


def card_rank(card: str) -> int:
    """1 (ace) to 13 (king); 0 for a joker."""
    return 0 if card.startswith("JK") else RANKS.index(card[0]) + 1


def month(card: str) -> int:
    """A Hanafuda card's month: the number its code starts with (``11R``, ``12C3``)."""
    return int(card[:2] if card[:2].isdigit() else card[0])


def four_of_a_month(cards: list[str]) -> bool:
    """Whether a Koi-Koi deal's field (cards 16 to 23) holds all four cards of a month."""
    months = [month(c) for c in cards[2 * KOIKOI_HAND : 2 * KOIKOI_HAND + KOIKOI_FIELD]]
    return any(months.count(m) == MONTH_CARDS for m in set(months))


class Table:
    """What the deck checks follow from event to event in a round: its number, the hands as
    dealt, the stock, the discard pile (bottom first), how many times the stock was rebuilt and
    who sits the round out."""

    def __init__(
        self,
        round_no: int = 0,
        hands: dict[int, list[str]] | None = None,
        stock: list[str] | None = None,
        discards: list[str] | None = None,
    ) -> None:
        self.round_no = round_no
        self.hands = hands or {}
        self.stock = stock or []
        self.discards = discards or []
        self.reshuffles = 0
        self.sitters: list[int] = []


class Decks:
    """The deck checks, event by event (docs/shuffle.md): deals, rebuilt stocks, sit-outs."""

    def __init__(
        self, game: str, seed: bytes, client_seeds: list[str], seats: int, drawn: bool = False
    ) -> None:
        self.game, self.seed, self.client_seeds, self.seats = game, seed, client_seeds, seats
        #: Hoola's and Rummy's ``first_dealer_drawn``: the first dealer is drawn, not read.
        self.drawn = drawn
        self.table = Table()
        self.counts = dict.fromkeys(PURPOSES, 0)

    def derive(self, round_no: int, purpose: str, cards: list[str], recorded: list[str]) -> None:
        derived = shuffle(self.seed, self.client_seeds, round_no, purpose, cards)
        if derived != recorded:
            raise Failed(
                f"the {purpose} shuffle (round {round_no}) differs from the committed seeds' "
                f"at {first_difference(derived, recorded)}"
            )

    def redeals(self, round_no: int, redeals: int, deck: list[str], recorded: list[str]) -> None:
        """A Koi-Koi round is dealt again while the field shows four cards of a month
        (docs/shuffle.md): each shuffle before the recorded one must show them, the recorded one
        must not — else the server could have picked the redeal it liked."""
        for k in range(redeals):
            purpose = "deal" if k == 0 else f"redeal-{k}"
            cards = shuffle(self.seed, self.client_seeds, round_no, purpose, deck)
            if not four_of_a_month(cards):
                raise Failed(
                    f"dealt again {redeals} time(s), but the {purpose} shuffle (round {round_no}) "
                    "shows no four cards of a month in the field: it stood"
                )
        if four_of_a_month(recorded):
            raise Failed("the field shows four cards of a month: the round is dealt again")

    def dealer(self, event: Message, recorded: list[str]) -> None:
        """The first dealer, chosen by the seeds (docs/shuffle.md): the cards the seats turn from
        the ``first-dealer`` shuffle (``dealer_draws``), in Gin and Koi-Koi, and in Hoola and
        Rummy with ``first_dealer_drawn``; in Hoola's and Rummy's games recorded before it, the
        rank of the deck's last card modulo the seats."""
        dealer = _int(event, "dealer")
        if self.game == "hoola" and self.counts["deal"]:
            return  # later rounds: the winner deals (a rule, not the seeds)
        if self.game in REBUILT and not self.drawn:
            by_rank = card_rank(recorded[-1]) % self.seats
            if dealer != by_rank:
                raise Failed(
                    f"seat {dealer} deals, but the deck's last card, {recorded[-1]}, makes seat "
                    f"{by_rank} the dealer"
                )
            return
        draws = [
            (_int(d, "seat"), _text(_message(d, "card"), "code"))
            for d in _messages(event, "dealer_draws")
        ]
        if not draws:
            if not self.counts["deal"]:
                raise Failed("the first deal does not show how its dealer was chosen")
            return  # later deals: the rules name the dealer
        order = month if self.game == "koikoi" else card_rank
        # Hoola's and Rummy's draw is from a standard deck without jokers, as Gin's.
        deck = canonical_deck("koikoi" if self.game == "koikoi" else "gin", [])
        turned = shuffle(self.seed, self.client_seeds, 1, "first-dealer", deck)
        # Each seat still drawing turns the next card, in seat order; the lowest deals, and the
        # seats tied at the lowest turn again.
        expected: list[tuple[int, str]] = []
        chosen = -1  # a deck that runs out on a tie chooses nobody: no recorded dealer matches
        drawing, at = list(range(self.seats)), 0
        while at + len(drawing) <= len(turned):
            cards = turned[at : at + len(drawing)]
            at += len(drawing)
            expected += list(zip(drawing, cards, strict=True))
            lowest = min(order(card) for card in cards)
            drawing = [s for s, card in zip(drawing, cards, strict=True) if order(card) == lowest]
            if len(drawing) == 1:
                chosen = drawing[0]
                break
        if draws != expected or dealer != chosen:
            raise Failed(
                f"the first dealer's draws {draws} and dealer {dealer} are not the first-dealer "
                f"shuffle's: {expected}, dealer {chosen}"
            )
        self.counts["first-dealer"] += 1

    def see(self, name: str, event: Message) -> None:
        table = self.table
        if name == DEALT[self.game]:
            purpose, round_no, recorded = dealt_order(self.game, event, self.seats)
            deck = canonical_deck(self.game, recorded)
            if self.game == "koikoi":
                self.redeals(round_no, _int(event, "redeals"), deck, recorded)
            self.derive(round_no, purpose, deck, recorded)
            self.dealer(event, recorded)
            self.counts["deal"] += 1
            if self.game in REBUILT:
                self.table = Table(
                    round_no,
                    hands_by_seat(event),
                    codes(_messages(event, "stock")),
                    codes([_message(event, "upcard")]),
                )
        elif self.game not in REBUILT:
            return
        elif name == "card_discarded":
            table.discards.append(_text(_message(event, "card"), "code"))
        elif name == "discard_taken":
            taken = _text(_message(event, "card"), "code")
            top = table.discards[-1] if table.discards else "nothing"
            if taken != top:
                raise Failed(f"{taken} is taken from the discards, whose top is {top}")
            table.discards.pop()
        elif name == "sat_out":
            table.sitters.append(_int(event, "seat"))
        elif name == "play_began":
            # docs/shuffle.md: the stock (top first), then the sitters-out's hands in seat order,
            # each as dealt (nothing is drawn before play begins).
            cards = table.stock + [c for s in sorted(table.sitters) for c in table.hands[s]]
            recorded = codes(_messages(event, "stock"))
            self.derive(table.round_no, "sit-out", cards, recorded)
            table.stock = recorded
            self.counts["sit-out"] += 1
        elif name == "stock_reshuffled":
            number = _int(event, "reshuffle")
            if number != table.reshuffles + 1:
                raise Failed(f"reshuffle {number} follows reshuffle {table.reshuffles}")
            # The discards under the top card, bottom of the pile first.
            recorded = codes(_messages(event, "stock"))
            self.derive(table.round_no, f"reshuffle-{number}", table.discards[:-1], recorded)
            table.discards, table.stock, table.reshuffles = table.discards[-1:], recorded, number
            self.counts["reshuffle"] += 1


# --- the checks -----------------------------------------------------------------------------------


def verify(replay: Replay, schema: Schema) -> list[str]:
    """The checks of this file's docstring, in order; what held, or :class:`Failed`."""
    header, events, footer = replay.header, replay.events, replay.footer
    if _int(header, "format_version") != FORMAT_VERSION:
        raise NotAReplay(
            f"header: format version {_int(header, 'format_version')}; "
            f"this verifier reads {FORMAT_VERSION}"
        )
    game_id = _text(header, "game_id")
    log_format = _int(header, "log_format") or PLAIN_FORMAT
    if not _text(footer, "server_seed"):
        # Not "does not open the header's commitment", as the hash of nothing once was.
        raise Failed(
            "footer: no server seed revealed: a file of a game not over (its seed is still "
            "secret, so nothing in it can be checked yet), or a footer edited"
        )
    try:
        seed = bytes.fromhex(_text(footer, "server_seed"))
    except ValueError:
        raise Failed("footer: the server seed is not hex") from None
    # The seed first: in format 2 it keys the chain, so a wrong one would show as a broken link.
    if hashlib.sha256(seed).hexdigest() != _text(header, "commitment"):
        raise Failed("the revealed server seed does not open the header's commitment")
    key = chain_key(log_format, seed, game_id)
    done = []

    # 1. The chain, and each event's decoded copies against its hashed bytes.
    bodies: list[Message] = []
    prev = GENESIS
    for number, event in enumerate(events, 1):
        try:
            body = check_event(number, event, game_id, prev, key, schema)
        except Failed as failure:
            raise Failed(f"event {number}: {failure}") from None
        bodies.append(body)
        prev = _text(event, "hash")
    if _text(footer, "last_hash") != prev:
        raise Failed(f"footer: last hash {_text(footer, 'last_hash')}, the chain ends at {prev}")
    done.append(f"hash chain (log format {log_format}): {len(events)} events")
    done.append(
        f"decoded copies: every body, command and type equals its hashed bytes ({replay.form})"
    )

    # 2. The header against the game's first event, and the seed against its last.
    if not bodies:
        raise Failed("the replay holds no events")
    game, first_event = only_field(bodies[0], "event 1")
    if game not in STARTED:
        raise Failed(f"event 1 is {game}, not a game's start")
    name, started = only_field(first_event, f"event 1: {game}")
    if name != STARTED[game]:
        raise Failed(f"event 1 is {game}.{name}, not a game's start")
    source = "the game's first event (hashed)"
    kinds = {value: number for number, value in schema.enums["GameKind"].items()}
    must_equal(_int(header, "kind"), kinds[f"GAME_KIND_{game.upper()}"], "header.kind", source)
    # The game was created, and dealt, at its first event's (hashed) time.
    must_equal(
        header.get("created_at_ms", ABSENT),
        events[0].get("recorded_at_ms", ABSENT),
        "header.created_at_ms",
        "event 1's recorded_at_ms (hashed)",
    )
    for field_name in ("seats", "commitment", "client_seeds", "engine_version"):
        must_equal(
            header.get(field_name, ABSENT),
            started.get(field_name, ABSENT),
            "header." + field_name,
            source,
        )
    # The options added later read as their defaults where absent, on both sides.
    rules = {game: ADDED_LATER[game] | _message(started, "rules")}
    header_rules = _message(header, "rules")
    if game in header_rules:
        header_rules = {game: ADDED_LATER[game] | _message(header_rules, game)}
    must_equal(header_rules, rules, "header.rules", source)
    last, revealed = only_field(bodies[-1], f"event {len(bodies)}")
    if last != SEED_REVEALED:
        raise Failed(f"event {len(bodies)} is not SeedRevealed: the game did not end")
    must_equal(
        _text(footer, "server_seed"),
        _text(revealed, "server_seed"),
        "footer.server_seed",
        f"event {len(bodies)} (SeedRevealed, hashed)",
    )
    for number, body in enumerate(bodies[1:-1], 2):
        if only_field(body, f"event {number}")[0] != game:
            raise Failed(f"event {number} is not a {game} event")
    done.append(
        "header: game id, kind, seats, rules, commitment, client seeds, engine version, "
        "creation time and log format are the hashed game's"
    )
    done.append("commitment: sha256(server seed) matches the commitment the game started with")

    # 3. Every deck against the seeds the game started with.
    decks = Decks(
        game,
        seed,
        _texts(started, "client_seeds"),
        _int(started, "seats"),
        drawn=bool(rules[game].get("first_dealer_drawn")),
    )
    for number, body in enumerate(bodies[1:-1], 2):
        name, event = only_field(_message(body, game), f"event {number}: {game}")
        try:
            decks.see(name, event)
        except Failed as failure:
            raise Failed(f"event {number}: {failure}") from None
    done.append(
        f"decks: {decks.counts['deal']} deal(s), {decks.counts['first-dealer']} first-dealer "
        f"draw(s), {decks.counts['reshuffle']} reshuffle(s) and {decks.counts['sit-out']} sit-out "
        "shuffle(s) are the committed seeds'"
    )

    # 4. The footer's settlements are the events'.
    ended = [_message(body, game) for body in bodies[1:-1]]
    rounds = [_message(e, ROUND_ENDED[game]) for e in ended if ROUND_ENDED[game] in e]
    finals = [_message(e, FINAL[game]) for e in ended if FINAL[game] in e]
    source = "the list of the round-ending events (hashed)"
    must_equal(
        _messages(footer, "rounds"),
        [_message(r, "settlement") for r in rounds],
        "footer.rounds",
        source,
    )
    must_equal(
        footer.get("settlement", ABSENT),
        finals[0].get("settlement", ABSENT) if finals else ABSENT,
        "footer.settlement",
        f"the {FINAL[game]} event (hashed)",
    )
    done.append(f"settlements: the footer's {len(rounds)} round(s) and final are the events'")
    return done


def check_event(
    number: int, event: Message, game_id: str, prev: str, key: bytes | None, schema: Schema
) -> Message:
    """One event: its place in the chain, its hash, and its decoded copies against its hashed
    bytes; returns the decoded payload (an EventBody)."""
    if event.get("redacted"):
        raise Failed("redacted: a replay holds complete events")
    if _int(event, "version") != number:
        raise Failed(f"numbered {_int(event, 'version')}")
    if _text(event, "game_id") != game_id:
        raise Failed(f"game id {_text(event, 'game_id')!r}, the header's is {game_id!r}")
    if _text(event, "prev_hash") != prev:
        raise Failed(
            f"prev_hash {_text(event, 'prev_hash')} does not follow {prev} (this event does not "
            "follow the one before it: an event was dropped, added or moved)"
        )
    computed = hashlib.sha256(bytes.fromhex(prev) + record_bytes(game_id, event, key)).hexdigest()
    if computed != _text(event, "hash"):
        raise Failed(
            f"hash {_text(event, 'hash')}, computed {computed} (this event's bytes are not those "
            "recorded: it was changed after the game)"
        )
    try:
        body = schema.decode(_bytes(event, "payload"), "EventBody")
    except WireError as error:
        raise Failed(f"the hashed payload is not an EventBody: {error}") from None
    must_equal(event.get("body", ABSENT), body, "body", "the hashed payload")
    # The stored type names the event: its class, whose snake-case name is its field in the
    # game's oneof (app/core.py, contract/convert.py), e.g. "RoundDealt" for round_dealt.
    game, inner = only_field(body, "the hashed payload")
    name = game if game == SEED_REVEALED else only_field(inner, f"the hashed payload's {game}")[0]
    named = "".join(word.title() for word in name.split("_"))
    if _text(event, "type") != named:
        raise Failed(f"type reads {_text(event, 'type')!r}, but the hashed payload is a {named}")
    command_bytes = _bytes(event, "command_payload")
    try:
        command: object = schema.decode(command_bytes, "Command") if command_bytes else ABSENT
    except WireError as error:
        raise Failed(f"the hashed command is not a Command: {error}") from None
    must_equal(event.get("command", ABSENT), command, "command", "the hashed command_payload")
    return body


# --- the signature (docs/replay-format.md, "Signed files") ----------------------------------------

#: What a replay signature covers opens with this.
SIGNATURE_DOMAIN = b"croupier/replay/v1/signature\x00"
PUBLIC_KEY_PREFIX = "ed25519:"
#: A key id is this many bytes of sha256 over the raw 32-byte public key, in hex.
KEY_ID_BYTES = 8


def signed_bytes(replay: Replay) -> bytes:
    """The domain, then the game id, the last hash and each player id, each as its UTF-8 length
    (u32 big-endian) and its UTF-8."""
    parts = [
        _text(replay.header, "game_id"),
        _text(replay.footer, "last_hash"),
        *_texts(replay.header, "players"),
    ]
    return SIGNATURE_DOMAIN + b"".join(
        struct.pack(">I", len(part.encode("utf-8"))) + part.encode("utf-8") for part in parts
    )


def check_signature(replay: Replay, public_keys: list[str]) -> str:
    """The signature against the keys given (``ed25519:`` and 64 hex digits), as a line; with
    keys given, :class:`Failed` unless it holds for one of them. Ed25519 is not in Python's
    standard library: checking needs the ``cryptography`` package (:func:`main` says so)."""
    signature = replay.footer.get("signature")
    if not isinstance(signature, dict):
        if public_keys:
            raise Failed("signature: the file is not signed, and --public-key asks for one")
        return "signature: none (the file is not signed)"
    named = _text(signature, "key_id")
    if not public_keys:
        return f"signature: by key {named}, not checked (give --public-key)"
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    by_id = {}
    for text in public_keys:
        raw = bytes.fromhex(text.strip().removeprefix(PUBLIC_KEY_PREFIX))
        by_id[hashlib.sha256(raw).digest()[:KEY_ID_BYTES].hex()] = raw
    if named not in by_id or _text(signature, "algorithm") != "ed25519":
        raise Failed(f"signature: by key {named}, which is not one of the keys given")
    try:
        Ed25519PublicKey.from_public_bytes(by_id[named]).verify(
            _bytes(signature, "signature"), signed_bytes(replay)
        )
    except InvalidSignature:
        raise Failed(
            f"signature: does NOT hold for key {named}: the file was changed after it was signed"
        ) from None
    return f"signature: valid, by key {named} (so the header's player ids are the service's too)"


# --- the command line -----------------------------------------------------------------------------


#: What a verified file passed, on the last line.
CHECKED = "chain, seed, header, decoded copies, decks and footer settlements"
#: The last line of a file verified without a key to check its signature with.
NOT_AUTHENTICATED = (
    f"not authenticated: {CHECKED} hold, but no signature was checked, and a file edited after "
    "the game and remade from its revealed seed holds too (--public-key checks the service's)"
)

#: A line of output is kept to this many characters: a forged file may hold long strings.
MAX_LINE = 300


def one_line(text: str) -> str:
    """``text`` as one printable line: a message may quote the file's own strings, which may hold
    line breaks or control characters meant to mislead the reader of the output."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    # The help is this file's docstring: what is checked, what is not, the exit statuses.
    parser = argparse.ArgumentParser(
        prog="standalone_verify.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", help="a replay, binary (.replay) or JSON (.json)")
    parser.add_argument(
        "--public-key",
        action="append",
        default=[],
        metavar="KEY",
        help="fail unless the file is signed by this key (ed25519:…, the service's replay key, "
        "as `croupier replay public-key` prints it); repeatable. Needs the cryptography package "
        "(pip install cryptography): Ed25519 is not in the standard library",
    )
    arguments = parser.parse_args(argv)
    path, public_keys = arguments.file, arguments.public_key
    for text in public_keys:
        raw = text.strip().removeprefix(PUBLIC_KEY_PREFIX)
        if (
            not text.strip().startswith(PUBLIC_KEY_PREFIX)
            or len(raw) != 64
            or not all(c in "0123456789abcdefABCDEF" for c in raw)
        ):
            parser.error(f"--public-key {one_line(text)!r}: not 'ed25519:' and 64 hex digits")
    if public_keys:
        try:
            import cryptography  # noqa: F401  (only to tell it is there)
        except ImportError:
            parser.error("--public-key needs the cryptography package: pip install cryptography")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        schema = Schema.parse(SCHEMA)
        replay = read(data, schema)
        checks = verify(replay, schema)
        signature = check_signature(replay, public_keys)
    except Failed as failure:
        print(f"FAIL {one_line(str(failure))}")
        return CHECK_FAILED
    except NotAReplay as error:
        print(f"not a replay: {one_line(str(error))}")
        return NOT_A_REPLAY
    except OSError as error:
        print(f"not a replay: {one_line(path)}: {error.strerror}")
        return NOT_A_REPLAY
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as error:
        # A file this verifier cannot make sense of (say, fields of the wrong types where the
        # checks read them): one line, never a traceback or the file's bytes.
        print(f"not a replay: {type(error).__name__}: {one_line(str(error))}")
        return NOT_A_REPLAY
    for line in checks:
        print(f"ok   {one_line(line)}")
    # Checked only against a key given; otherwise what the file says, as a note.
    print(f"{'ok  ' if public_keys else 'note'} {one_line(signature)}")
    print(
        "not checked here: the moves against the rules, what each settlement pays, the final "
        "state digest (croupier replay verify re-plays the game)"
        + ("" if public_keys else "; the header's player ids (a signature covers them)")
    )
    # Without a key the file is consistent only: one edited and remade from its revealed seed is
    # too. The last line says so, as `croupier replay verify`'s does, so that nobody who reads
    # only the verdict (a support agent, a script) takes it for the service's record.
    print(f"verified: {CHECKED}" if public_keys else f"verified, {NOT_AUTHENTICATED}")
    return OK


if __name__ == "__main__":
    sys.exit(main())
