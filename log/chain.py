"""The hash chain over a game's stored events (``docs/event-log.md``).

``hash = sha256(prev_hash ‖ record)`` where ``record`` is the length-prefixed encoding of every
stored column (:func:`record_bytes`). The first event's ``prev_hash`` is :data:`GENESIS_HASH`.
Verify against the stored bytes, never a re-serialization of a message.

Two formats, named by the game's ``log_format``:

1. The record holds the payload and the command themselves. A seat that is shown a later event's
   ``prev_hash`` can hash a redacted event with each unseen card and find the one that matches, so
   this format is kept only to verify games recorded under it.
2. (Games created since.) The record holds the payload and the command *blinded*: an HMAC of each
   under a key derived from the game's secret server seed (:func:`chain_key`). Before the seed is
   revealed the hashes commit to the log (they can be pinned and compared later) but say nothing
   about any field; once it is revealed, anyone recomputes the key and verifies the whole chain.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import struct
from collections.abc import Sequence

from croupier.log.records import (
    BLINDED_FORMAT,
    LOG_FORMAT_VERSION,
    PLAIN_FORMAT,
    GameRecord,
    NewEvent,
    StoredEvent,
)

__all__ = [
    "BLINDED_FORMAT",
    "GENESIS_HASH",
    "LOG_FORMATS",
    "LOG_FORMAT_VERSION",
    "PLAIN_FORMAT",
    "blind",
    "chain_hash",
    "chain_key",
    "chained",
    "event_hash",
    "key_of",
    "record_bytes",
    "verify_chain",
]

LOG_FORMATS = (PLAIN_FORMAT, BLINDED_FORMAT)

GENESIS_HASH = "0" * 64

#: What the key derivation and the blinding bind to, so that no other use of the seed collides.
_KEY_LABEL = b"croupier/log/v2/key:"
_PAYLOAD = b"payload"
_COMMAND = b"command"
#: Chain keys remembered (one per game, the games in play): only a cache of a derivation.
_KEYS_KEPT = 4096


def _field(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def chain_key(log_format: int, server_seed: bytes, game_id: str) -> bytes | None:
    """The key that blinds a game's payloads and commands (format 2), else ``None``.

    ``HMAC-SHA256(server_seed, "croupier/log/v2/key:" ‖ game_id)``: as secret as the seed until
    the seed is revealed, then anyone's to recompute.
    """
    if log_format == PLAIN_FORMAT:
        return None
    if log_format != BLINDED_FORMAT:
        raise ValueError(f"unknown log format {log_format}")
    return _derived_key(server_seed, game_id)


@functools.lru_cache(maxsize=_KEYS_KEPT)
def _derived_key(server_seed: bytes, game_id: str) -> bytes:
    """:func:`chain_key`'s HMAC, remembered for the games in play: every append chains its events
    under the game's key, and the key is the same for the whole game."""
    return hmac.digest(server_seed, _KEY_LABEL + game_id.encode(), "sha256")


def key_of(record: GameRecord) -> bytes | None:
    """The chain key of a game's row."""
    return chain_key(record.log_format, record.server_seed, record.game_id)


def blind(key: bytes, version: int, label: bytes, data: bytes) -> bytes:
    """``HMAC-SHA256(key, u64be(version) ‖ label ‖ data)``: a field as the format-2 record holds it."""
    # The one-shot form: the same HMAC, without building an HMAC object (twice per event stored).
    return hmac.digest(key, struct.pack(">Q", version) + label + data, "sha256")


def record_bytes(
    game_id: str,
    version: int,
    command_id: str,
    seat: int | None,
    recorded_at_ms: int,
    type_: str,
    payload: bytes,
    command: bytes = b"",
    key: bytes | None = None,
) -> bytes:
    """The bytes a chain hash covers: every stored column, length-prefixed, in this order; the
    payload and the command blinded under ``key`` when there is one (format 2)."""
    if key is not None:
        payload = blind(key, version, _PAYLOAD, payload)
        command = blind(key, version, _COMMAND, command)
    return (
        _field(game_id.encode())
        + struct.pack(">Q", version)
        + _field(command_id.encode())
        + struct.pack(">i", -1 if seat is None else seat)
        + struct.pack(">q", recorded_at_ms)
        + _field(type_.encode())
        + _field(payload)
        + _field(command)
    )


def chain_hash(prev_hash: str, record: bytes) -> str:
    return hashlib.sha256(bytes.fromhex(prev_hash) + record).hexdigest()


def event_hash(prev_hash: str, event: StoredEvent, key: bytes | None = None) -> str:
    """The hash ``event`` must carry after ``prev_hash`` (``key``: the game's chain key)."""
    return chain_hash(
        prev_hash,
        record_bytes(
            event.game_id,
            event.version,
            event.command_id,
            event.seat,
            event.recorded_at_ms,
            event.type,
            event.payload,
            event.command,
            key,
        ),
    )


def chained(
    game: GameRecord,
    version: int,
    prev_hash: str,
    events: Sequence[NewEvent],
    command_id: str,
    seat: int | None,
    recorded_at_ms: int,
    command: bytes = b"",
) -> list[StoredEvent]:
    """``events`` as a store keeps them after ``version`` of ``game`` (whose chain ends at
    ``prev_hash``), each hashed onto the one before under the game's format: every store
    appends through this, so that what it writes is what :func:`verify_chain` checks. The
    command's bytes go with its first event."""
    stored: list[StoredEvent] = []
    game_id, key = game.game_id, key_of(game)
    for i, event in enumerate(events):
        version += 1
        first = command if i == 0 else b""
        # Hashed from its columns, then made once (not made unhashed and copied with the hash).
        record = record_bytes(
            game_id,
            version,
            command_id,
            seat,
            recorded_at_ms,
            event.type,
            event.payload,
            first,
            key,
        )
        hashed = chain_hash(prev_hash, record)
        stored.append(
            StoredEvent(
                game_id,
                version,
                command_id,
                seat,
                recorded_at_ms,
                event.type,
                event.payload,
                prev_hash,
                hashed,
                first,
            )
        )
        prev_hash = hashed
    return stored


def verify_chain(events: Sequence[StoredEvent], key: bytes | None = None) -> int | None:
    """The version of the first event whose hash does not follow, or ``None`` if the chain holds."""
    prev = GENESIS_HASH
    for expected_version, event in enumerate(events, 1):
        if (
            event.version != expected_version
            or event.prev_hash != prev
            or event_hash(prev, event, key) != event.hash
        ):
            return expected_version
        prev = event.hash
    return None
