"""The hash chain over a game's stored events (``docs/event-log.md``).

``hash = sha256(prev_hash ‖ record)`` where ``record`` is the length-prefixed encoding of every
stored column (:func:`record_bytes`). The first event's ``prev_hash`` is :data:`GENESIS_HASH`.
Verify against the stored bytes, never a re-serialization of a message.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence

from croupier.log.records import StoredEvent

#: The version of the stored record and its chain encoding (bumped only with a migration path).
LOG_FORMAT_VERSION = 1

GENESIS_HASH = "0" * 64


def _field(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def record_bytes(
    game_id: str,
    version: int,
    command_id: str,
    seat: int | None,
    recorded_at_ms: int,
    type_: str,
    payload: bytes,
    command: bytes = b"",
) -> bytes:
    """The bytes a chain hash covers: every stored column, length-prefixed, in this order."""
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


def event_hash(prev_hash: str, event: StoredEvent) -> str:
    """The hash ``event`` must carry after ``prev_hash``."""
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
        ),
    )


def verify_chain(events: Sequence[StoredEvent]) -> int | None:
    """The version of the first event whose hash does not follow, or ``None`` if the chain holds."""
    prev = GENESIS_HASH
    for expected_version, event in enumerate(events, 1):
        if (
            event.version != expected_version
            or event.prev_hash != prev
            or event_hash(prev, event) != event.hash
        ):
            return expected_version
        prev = event.hash
    return None
