"""The log's records: a game's row, an event to append, a stored event, a command's first answer."""

from __future__ import annotations

from dataclasses import dataclass

#: The command id of a batch that time made due (a tick), followed by the version it was recorded
#: at: such a batch has no seat and no command (docs/event-log.md, "Time").
TICK_PREFIX = "tick:"
#: The command id of a game's opening batch (its creation and first deal): no seat, no command.
#: A client may not take it: a fold tells batches apart by their command ids, and a seat's move
#: under this id right after the deal would fold as part of the deal (its clock never started).
CREATE_COMMAND_ID = "create"
#: What the studio's command ids (EndGame's) are recorded under, followed by the studio's own id.
#: Command ids are unique per game, whoever sends them: under its bare id, a seat that sent a
#: command first under the id the studio would use (the CLI's ``end-<game id>``, or any guessable
#: one) made the studio's EndGame ``COMMAND_ID_REUSED``, and the game could not be ended so. No
#: client id may take the prefix, so a seat's ids and the studio's never meet.
STUDIO_COMMAND_PREFIX = "studio:"

#: The first log format: payloads and commands hashed in the clear (``croupier.log.chain``).
PLAIN_FORMAT = 1
#: Payloads and commands hashed blinded by a key derived from the server seed.
BLINDED_FORMAT = 2
#: The log format of new games (bumped only with a migration path; old games keep theirs).
LOG_FORMAT_VERSION = BLINDED_FORMAT


@dataclass(frozen=True)
class GameRecord:
    """A game's row: who made it, its seeds' commitment, where its log stands."""

    game_id: str
    kind: str
    seats: int
    server_seed: bytes
    commitment: str
    created_at_ms: int
    version: int = 0
    finished: bool = False
    #: How its chain is hashed (``croupier.log.chain``): games keep the format they began with.
    log_format: int = LOG_FORMAT_VERSION


@dataclass(frozen=True)
class CreateRequest:
    """A game's creation as the studio named it: its request id and a hash of what it asked for,
    so that a retry (same id, same request) gets the game the first attempt made, and the same id
    for another request is told apart from a retry."""

    request_id: str
    fingerprint: bytes


@dataclass(frozen=True)
class UsedTicket:
    """A seed ticket a creation uses (docs/shuffle.md, "Seed tickets"): its id (the ticket's
    nonce), which the store's unique key lets make one game, and when it expires, after which
    the store may forget it (an expired ticket is refused before it reaches the store)."""

    ticket_id: str
    expires_at_ms: int


@dataclass(frozen=True)
class NewEvent:
    """An event to append: its type name and its serialized body (deterministic protobuf)."""

    type: str
    payload: bytes


@dataclass(frozen=True)
class StoredEvent:
    """An appended event with every stored column (``docs/event-log.md``)."""

    game_id: str
    version: int
    command_id: str
    seat: int | None
    recorded_at_ms: int
    type: str
    payload: bytes
    prev_hash: str
    hash: str
    command: bytes = b""


@dataclass(frozen=True)
class CommandResult:
    """The first result of a command id: accepted (with its versions) or rejected.

    ``events`` holds what an append just wrote (empty for a duplicate or a rejection), so that the
    caller answers without reading them back.
    """

    command_id: str
    accepted: bool
    first_version: int
    last_version: int
    rejection: bytes | None = None
    duplicate: bool = False
    events: tuple[StoredEvent, ...] = ()
    #: What the id was first used for (the caller's digest of seat and command); empty when
    #: unknown (commands recorded before fingerprints were kept).
    fingerprint: bytes = b""


@dataclass(frozen=True)
class Snapshot:
    """A game folded up to ``version``, as opaque bytes of a ``format`` (a cache, never the
    truth), with the ``seal`` its writer put on it."""

    game_id: str
    format: str
    version: int
    state: bytes
    seal: str


@dataclass(frozen=True)
class PoolStats:
    """A store's pool of connections, as it is now: how many are open, how many of them idle,
    at most how many it opens, and how many calls wait for one."""

    open: int
    idle: int
    max: int
    waiting: int


@dataclass(frozen=True)
class SeatInPlay:
    """A seat a player holds in a game not yet finished: the game, the seat, the player, the
    game's seat count and when its last event was recorded."""

    game_id: str
    seat: int
    player: str
    seats: int
    last_at_ms: int


@dataclass(frozen=True)
class Loaded:
    """One read of a game: its row, its events after a version, (when asked) the first answer
    already given to a command id, and (when asked) its latest snapshot, the events then
    following the snapshot."""

    record: GameRecord
    events: tuple[StoredEvent, ...]
    earlier: CommandResult | None = None
    snapshot: Snapshot | None = None
