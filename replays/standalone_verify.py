#!/usr/bin/env python3
"""Check a Croupier replay without Croupier: python3 standalone_verify.py GAME.json

One file, Python's standard library only (hashlib, hmac, json, base64, struct), so that a player or
an auditor can run it without installing anything. It checks, from the JSON form of a replay
(docs/replay-format.md):

1. the hash chain over every event's stored bytes (in log format 1 the record holds the payload and
   the command; in format 2 each blinded by HMAC-SHA256 under a key derived from the revealed
   server seed, docs/event-log.md);
2. that the revealed server seed opens the commitment published when the game was created;
3. that every deal in the log is the deck the committed seeds derive (docs/shuffle.md), card by
   card — read from the hashed bytes themselves, not from their decoded copies.

It does not re-play the rules (that is ``croupier replay verify``). Exit status 0: all checks hold;
1: a check failed (the first failure is printed); 2: the file is not a replay.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import struct
import sys

GENESIS = "0" * 64

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


def rank(card: str) -> int:
    return 0 if card.startswith("JK") else RANKS.index(card[0]) + 1


# --- protobuf wire format, just enough to read the deals from the hashed bytes ------------------


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """A message's (field number, value) pairs: ints for varints, bytes for the other wire types."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        out.append((number, value))
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7


def as_bytes(number: int, value: int | bytes) -> bytes:
    """A length-delimited field's value (a message, a string, bytes); a varint there is an error."""
    if isinstance(value, int):
        raise TypeError(f"field {number}: a varint where a length-delimited value belongs")
    return value


def int_field(data: bytes, number: int) -> int:
    """The first value of a varint field; 0 (protobuf's default) when it is absent."""
    value = next((v for n, v in fields(data) if n == number), 0)
    if not isinstance(value, int):
        raise TypeError(f"field {number}: bytes where a varint belongs")
    return value


def bytes_field(data: bytes, number: int) -> bytes | None:
    """The first value of a length-delimited field (message, string, bytes); None when absent."""
    return next((as_bytes(n, v) for n, v in fields(data) if n == number), None)


def bytes_fields(data: bytes, number: int) -> list[bytes]:
    """Every value of a repeated length-delimited field, in order."""
    return [as_bytes(n, v) for n, v in fields(data) if n == number]


def string_field(data: bytes, number: int) -> str:
    """A string field's value; "" when it is absent."""
    return (bytes_field(data, number) or b"").decode()


def card_code(card_message: bytes) -> str:
    return string_field(card_message, 1)  # Card.code / HanafudaCard.code is field 1


def card_field(message: bytes, number: int) -> str:
    """The code of the card a message holds in field ``number``, which must be there."""
    card = bytes_field(message, number)
    if card is None:
        raise ValueError(f"no card in field {number}")
    return card_code(card)


def hand_cards(hand_message: bytes) -> tuple[int, list[str]]:
    """(seat, cards) of a Hand message: seat is field 1, cards field 2 in every game."""
    return int_field(hand_message, 1), [card_code(c) for c in bytes_fields(hand_message, 2)]


# EventBody: field of each game's event, and in it the deal event's field number.
GAMES = {1: "hoola", 3: "koikoi", 4: "gin", 5: "rummy"}
DEAL_FIELD = {"hoola": 2, "koikoi": 2, "gin": 2, "rummy": 2}


def dealt_order(game: str, deal: bytes, seats: int) -> tuple[str, int, list[str]]:
    """The recorded deal as the shuffled deck it claims to be: (purpose, round, cards in order)."""
    if game == "rummy":
        dealer = int_field(deal, 1)
        hands = dict(hand_cards(h) for h in bytes_fields(deal, 2))
        order = [c for k in range(seats) for c in hands[(dealer + 1 + k) % seats]]
        rest = [card_field(deal, 3)] + [card_code(c) for c in bytes_fields(deal, 4)]
        return "deal", 1, order + rest
    number, dealer = int_field(deal, 1), int_field(deal, 2)
    hands = dict(hand_cards(h) for h in bytes_fields(deal, 3))
    if game == "hoola":
        order = [c for k in range(seats) for c in hands[(dealer + k) % seats]]
        rest = [card_field(deal, 4)] + [card_code(c) for c in bytes_fields(deal, 5)]
        return "deal", number, order + rest
    if game == "gin":
        order = hands[1 - dealer] + hands[dealer]
        rest = [card_field(deal, 4)] + [card_code(c) for c in bytes_fields(deal, 5)]
        return "deal", number, order + rest
    redeals = int_field(deal, 8)
    order = hands[dealer] + hands[1 - dealer] + [card_code(c) for c in bytes_fields(deal, 4)]
    order += [card_code(c) for c in bytes_fields(deal, 5)]
    return ("deal" if redeals == 0 else f"redeal-{redeals}"), number, order


def canonical_deck(game: str, cards: list[str]) -> list[str]:
    if game == "koikoi":
        return hanafuda_deck()
    if game == "rummy":
        return rummy_deck()
    return standard_deck(sum(1 for c in cards if c.startswith("JK")))


# --- the checks -----------------------------------------------------------------------------------


class Failed(Exception):
    pass


def _object(value: object, what: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise TypeError(f"{what}: not a JSON object")
    return value


def _list(value: object, what: str) -> list[object]:
    if not isinstance(value, list):
        raise TypeError(f"{what}: not a JSON array")
    return value


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what}: not a string")
    return value


def _integer(value: object, what: str) -> int:
    """A JSON number, or a string holding one (protobuf's JSON writes 64-bit ints as strings)."""
    if not isinstance(value, (int, float, str)):
        raise TypeError(f"{what}: not a number")
    return int(value)


#: Log formats (docs/event-log.md): 1 hashes payloads in the clear, 2 blinded by a seed-derived key.
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


def record_bytes(game_id: str, event: dict[str, object], key: bytes | None = None) -> bytes:
    """docs/event-log.md: every stored column, length-prefixed, in order (payload and command
    blinded under ``key`` in format 2)."""

    def part(data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + data

    version = _integer(event["version"], "version")
    payload = base64.b64decode(_text(event.get("payload", ""), "payload"))
    command = base64.b64decode(_text(event.get("command_payload", ""), "command_payload"))
    if key is not None:
        at = struct.pack(">Q", version)
        payload = hmac.new(key, at + b"payload" + payload, hashlib.sha256).digest()
        command = hmac.new(key, at + b"command" + command, hashlib.sha256).digest()
    seat = event.get("seat")
    return (
        part(game_id.encode())
        + struct.pack(">Q", version)
        + part(_text(event.get("command_id", ""), "command_id").encode())
        + struct.pack(">i", -1 if seat is None else _integer(seat, "seat"))
        + struct.pack(">q", _integer(event.get("recorded_at_ms", 0), "recorded_at_ms"))
        + part(_text(event.get("type", ""), "type").encode())
        + part(payload)
        + part(command)
    )


def verify(replay: dict[str, object]) -> list[str]:
    """The checks of this file's docstring; returns what held, raises :class:`Failed`."""
    header = _object(replay["header"], "header")
    events = _list(replay["events"], "events")
    footer = _object(replay["footer"], "footer")
    game_id = _text(header["game_id"], "game_id")
    log_format = _integer(header.get("log_format", PLAIN_FORMAT), "log_format") or PLAIN_FORMAT
    seed = bytes.fromhex(_text(footer["server_seed"], "server_seed"))
    # The seed first: in format 2 it keys the chain, so a wrong one would show as a broken link.
    if hashlib.sha256(seed).hexdigest() != header["commitment"]:
        raise Failed("the revealed server seed does not open the commitment")
    key = chain_key(log_format, seed, game_id)
    done = []
    prev = GENESIS
    for number, item in enumerate(events, 1):
        event = _object(item, f"event {number}")
        if _integer(event["version"], "version") != number:
            raise Failed(f"event {number}: numbered {event['version']}")
        if event.get("prev_hash", "") != prev:
            raise Failed(
                f"event {number}: prev_hash {event.get('prev_hash')} does not follow {prev}"
            )
        record = record_bytes(game_id, event, key)
        computed = hashlib.sha256(bytes.fromhex(prev) + record).hexdigest()
        if computed != event.get("hash"):
            raise Failed(f"event {number}: hash {event.get('hash')}, computed {computed}")
        prev = computed
    if footer.get("last_hash", "") != prev:
        raise Failed(f"footer: last hash {footer.get('last_hash')}, the chain ends at {prev}")
    done.append(f"hash chain (log format {log_format}): {len(events)} events")

    # The commitment and the client seeds the header names are those the game started with: its
    # first event (field 1 of every game's event) holds them as fields 3 and 4.
    started: list[tuple[int, int | bytes]] = []
    if events:
        opening = _object(events[0], "event 1")
        started = fields(base64.b64decode(_text(opening.get("payload", ""), "payload")))
    first = (bytes_field(as_bytes(*started[0]), 1) or b"") if started else b""
    if string_field(first, 3) != header["commitment"]:
        raise Failed("event 1: the game started with another commitment than the header's")
    # Equal to the header's list once checked: the seeds the decks derive from.
    client_seeds = [s.decode() for s in bytes_fields(first, 4)]
    if client_seeds != header.get("client_seeds", []):
        raise Failed("event 1: the game started with other client seeds than the header's")
    done.append("commitment: sha256(server seed) matches the commitment the game started with")

    seats = _integer(header["seats"], "seats")
    deals = 0
    for number, item in enumerate(events, 1):
        event = _object(item, f"event {number}")
        body = base64.b64decode(_text(event.get("payload", ""), "payload"))
        for game_field, inner in fields(body):
            game = GAMES.get(game_field)
            if game is None:
                continue
            deal = bytes_field(as_bytes(game_field, inner), DEAL_FIELD[game])
            if deal is None:
                continue
            purpose, round_no, recorded = dealt_order(game, deal, seats)
            derived = shuffle(seed, client_seeds, round_no, purpose, canonical_deck(game, recorded))
            if derived != recorded:
                at = next(
                    i
                    for i, (a, b) in enumerate(
                        zip(derived, recorded + [""] * len(derived), strict=False)
                    )
                    if a != b
                )
                found = recorded[at] if at < len(recorded) else "nothing"
                raise Failed(
                    f"event {number}: the deal differs from the committed deck at card {at + 1}: "
                    f"derived {derived[at]}, recorded {found}"
                )
            deals += 1
    done.append(f"decks: {deals} deal(s) are the committed seeds' decks")
    return done


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.splitlines()[0])
        return 2
    try:
        with open(argv[1], encoding="utf-8") as handle:
            replay = _object(json.load(handle), "the replay")
        checks = verify(replay)
    except Failed as failure:
        print(f"FAIL {failure}")
        return 1
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        print(f"not a JSON replay: {error!r}")
        return 2
    for line in checks:
        print(f"ok   {line}")
    print("verified: chain, commitment and decks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
