"""The event log: what a stored event is, how the chain binds the events, and what a store offers.

This layer knows bytes and records, never a game or a transport: a store holds each event as its
type name and deterministic payload bytes, chained by :mod:`croupier.log.chain`
(``docs/event-log.md``). The service's SQL stores implement :class:`EventStore`; the application
core and the replay tools read through it.
"""

from __future__ import annotations

from croupier.log.chain import (
    BLINDED_FORMAT,
    GENESIS_HASH,
    LOG_FORMAT_VERSION,
    LOG_FORMATS,
    PLAIN_FORMAT,
    chain_hash,
    chain_key,
    chained,
    event_hash,
    key_of,
    record_bytes,
    verify_chain,
)
from croupier.log.records import (
    CREATE_COMMAND_ID,
    STUDIO_COMMAND_PREFIX,
    TICK_PREFIX,
    CommandResult,
    CreateRequest,
    GameRecord,
    Loaded,
    NewEvent,
    PoolStats,
    SeatInPlay,
    Snapshot,
    StoredEvent,
    UsedTicket,
)
from croupier.log.store import (
    AlreadyCreated,
    EventStore,
    GameLocked,
    GameNotFound,
    HeldBack,
    StoreBusy,
    StoreError,
    StoreUnavailable,
    TicketUsed,
    VersionConflict,
)

__all__ = [
    "BLINDED_FORMAT",
    "CREATE_COMMAND_ID",
    "GENESIS_HASH",
    "LOG_FORMATS",
    "LOG_FORMAT_VERSION",
    "PLAIN_FORMAT",
    "STUDIO_COMMAND_PREFIX",
    "TICK_PREFIX",
    "AlreadyCreated",
    "CommandResult",
    "CreateRequest",
    "EventStore",
    "GameLocked",
    "GameNotFound",
    "GameRecord",
    "HeldBack",
    "Loaded",
    "NewEvent",
    "PoolStats",
    "SeatInPlay",
    "Snapshot",
    "StoreBusy",
    "StoreError",
    "StoreUnavailable",
    "StoredEvent",
    "TicketUsed",
    "UsedTicket",
    "VersionConflict",
    "chain_hash",
    "chain_key",
    "chained",
    "event_hash",
    "key_of",
    "record_bytes",
    "verify_chain",
]
