"""The event store: one interface, one SQL implementation, two databases (SQLite, PostgreSQL).

The database decides every race: the unique keys (game id, version) and (game id, command id) make
appends optimistic and commands idempotent; no Python lock is trusted across processes.

Each stored event is chained: ``hash = sha256(prev_hash ‖ record)`` where ``record`` is the
length-prefixed encoding of the stored columns (:func:`record_bytes`, documented in
``docs/event-log.md``). The first event's ``prev_hash`` is 64 zeros.
"""

from __future__ import annotations

import hashlib
import struct
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any

GENESIS_HASH = "0" * 64


class StoreError(Exception):
    """Base of the store's errors."""


class GameNotFound(StoreError):
    def __init__(self, game_id: str) -> None:
        super().__init__(f"no game {game_id!r}")
        self.game_id = game_id


class VersionConflict(StoreError):
    """The game moved on: the expected version is not the current one (→ ABORTED)."""

    def __init__(self, game_id: str, expected: int, current: int) -> None:
        super().__init__(f"game {game_id} is at version {current}, not {expected}")
        self.game_id = game_id
        self.expected = expected
        self.current = current


@dataclass(frozen=True)
class GameRecord:
    game_id: str
    kind: str
    seats: int
    server_seed: bytes
    commitment: str
    created_at_ms: int
    version: int = 0
    finished: bool = False


@dataclass(frozen=True)
class NewEvent:
    """An event to append: its type name and its serialized body (deterministic protobuf)."""

    type: str
    payload: bytes


@dataclass(frozen=True)
class StoredEvent:
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
    """The first result of a command id: accepted (with its versions) or rejected."""

    command_id: str
    accepted: bool
    first_version: int
    last_version: int
    rejection: bytes | None = None
    duplicate: bool = False


def _field(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def record_bytes(game_id: str, version: int, command_id: str, seat: int | None,
                 recorded_at_ms: int, type_: str, payload: bytes, command: bytes = b"") -> bytes:
    """The bytes a chain hash covers: every stored column, length-prefixed, in this order."""
    return (_field(game_id.encode()) + struct.pack(">Q", version) + _field(command_id.encode())
            + struct.pack(">i", -1 if seat is None else seat) + struct.pack(">q", recorded_at_ms)
            + _field(type_.encode()) + _field(payload) + _field(command))


def chain_hash(prev_hash: str, record: bytes) -> str:
    return hashlib.sha256(bytes.fromhex(prev_hash) + record).hexdigest()


def verify_chain(events: Sequence[StoredEvent]) -> int | None:
    """The version of the first event whose hash does not follow, or ``None`` if the chain holds."""
    prev = GENESIS_HASH
    for expected_version, event in enumerate(events, 1):
        record = record_bytes(event.game_id, event.version, event.command_id, event.seat,
                              event.recorded_at_ms, event.type, event.payload, event.command)
        if (event.version != expected_version or event.prev_hash != prev
                or chain_hash(prev, record) != event.hash):
            return expected_version
        prev = event.hash
    return None


class EventStore(ABC):
    """What the service needs of a database. Subclasses differ only in connections and dialect."""

    url: str

    @abstractmethod
    def create_game(self, game: GameRecord, events: Sequence[NewEvent], recorded_at_ms: int,
                    players: Sequence[str] = ()) -> int:
        """Store a new game with its opening events (and who sits where, if known); returns the
        version."""

    @abstractmethod
    def game(self, game_id: str) -> GameRecord:
        """The game's record; raises :class:`GameNotFound`."""

    @abstractmethod
    def append(self, game_id: str, expected_version: int, events: Sequence[NewEvent],
               command_id: str, seat: int | None, recorded_at_ms: int,
               finished: bool = False, command: bytes = b"") -> CommandResult:
        """Append atomically if the game is at ``expected_version`` (else :class:`VersionConflict`).

        A command id seen before returns its first result (``duplicate=True``) and writes nothing.
        """

    @abstractmethod
    def record_rejection(self, game_id: str, command_id: str, rejection: bytes,
                         version: int) -> CommandResult:
        """Remember that a command was refused, so that a retry gets the same answer."""

    @abstractmethod
    def result_of(self, game_id: str, command_id: str) -> CommandResult | None: ...

    @abstractmethod
    def read(self, game_id: str, after_version: int = 0) -> list[StoredEvent]: ...

    @abstractmethod
    def players(self, game_id: str) -> tuple[str, ...]:
        """The player id at each seat, or ``()`` when the game was created without them."""

    @abstractmethod
    def recent_games(self, player: str, limit: int) -> list[tuple[str, int]]:
        """The player's last ``limit`` finished games, the latest first, as (game id, seat)."""

    @abstractmethod
    def close(self) -> None: ...

    # -- waiting for new events (live streams) --------------------------------------------------

    def __init__(self) -> None:
        self._changed = threading.Condition()

    def notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, game_id: str, after_version: int, timeout: float,
                 poll: float = 0.5) -> bool:
        """Block until the game is past ``after_version`` or ``timeout`` passes.

        Appends in this process wake waiters at once; a periodic look at the database catches
        appends by other processes (PostgreSQL stores also wake on NOTIFY).
        """
        deadline = time.monotonic() + timeout
        while True:
            if self.game(game_id).version > after_version:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._changed:
                self._changed.wait(min(poll, remaining))


def migrations_path(dialect: str) -> str:
    return str(resources.files("croupier.service.store") / "migrations" / dialect)


def apply_migrations(yoyo_url: str, dialect: str) -> None:
    """Bring the schema up to date with yoyo (idempotent; concurrent starters take yoyo's lock)."""
    from yoyo import get_backend, read_migrations

    backend = get_backend(yoyo_url)
    migrations = read_migrations(migrations_path(dialect))
    with backend.lock():
        backend.apply_migrations(backend.to_apply(migrations))


class SqlEventStore(EventStore):
    """The store's logic in SQL both databases speak; subclasses give connections and dialect."""

    #: The parameter marker of the driver ("?" or "%s").
    marker = "?"
    #: Appended to the game row's SELECT in an append, to lock it where the database can.
    lock_clause = ""

    @abstractmethod
    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:
        """A cursor inside a transaction (an immediate/locking one when ``write``)."""

    def _after_append(self, cursor: Any, game_id: str) -> None:
        """Hook inside the append's transaction (PostgreSQL sends NOTIFY here)."""

    def _q(self, sql: str) -> str:
        return sql.replace("?", self.marker)

    def _run(self, cursor: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        cursor.execute(self._q(sql), tuple(params))
        return cursor

    def create_game(self, game: GameRecord, events: Sequence[NewEvent], recorded_at_ms: int,
                    players: Sequence[str] = ()) -> int:
        with self._transaction(write=True) as cur:
            self._run(cur, "INSERT INTO games (game_id, kind, seats, server_seed, commitment, "
                      "created_at_ms, version, finished) VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
                      (game.game_id, game.kind, game.seats, game.server_seed, game.commitment,
                       game.created_at_ms, False))
            for seat, player in enumerate(players):
                self._run(cur, "INSERT INTO game_players (game_id, seat, player) VALUES (?, ?, ?)",
                          (game.game_id, seat, player))
            version = self._insert_events(cur, game.game_id, 0, GENESIS_HASH, events, "create",
                                          None, recorded_at_ms)
            self._run(cur, "UPDATE games SET version = ? WHERE game_id = ?", (version, game.game_id))
            self._after_append(cur, game.game_id)
        self.notify()
        return version

    def game(self, game_id: str) -> GameRecord:
        with self._transaction(write=False) as cur:
            return self._game(cur, game_id)

    def _game(self, cur: Any, game_id: str, lock: bool = False) -> GameRecord:
        row = self._run(cur, "SELECT game_id, kind, seats, server_seed, commitment, created_at_ms, "
                        "version, finished FROM games WHERE game_id = ?"
                        + (self.lock_clause if lock else ""), (game_id,)).fetchone()
        if row is None:
            raise GameNotFound(game_id)
        return GameRecord(row[0], row[1], row[2], bytes(row[3]), row[4], row[5], row[6],
                          bool(row[7]))

    def _insert_events(self, cur: Any, game_id: str, version: int, prev_hash: str,
                       events: Sequence[NewEvent], command_id: str, seat: int | None,
                       recorded_at_ms: int, command: bytes = b"") -> int:
        for i, event in enumerate(events):
            version += 1
            carried = command if i == 0 else b""
            digest = chain_hash(prev_hash, record_bytes(game_id, version, command_id, seat,
                                                        recorded_at_ms, event.type, event.payload,
                                                        carried))
            self._run(cur, "INSERT INTO events (game_id, version, command_id, seat, recorded_at_ms, "
                      "type, payload, command, prev_hash, hash) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (game_id, version, command_id, seat, recorded_at_ms, event.type,
                       event.payload, carried, prev_hash, digest))
            prev_hash = digest
        return version

    def append(self, game_id: str, expected_version: int, events: Sequence[NewEvent],
               command_id: str, seat: int | None, recorded_at_ms: int,
               finished: bool = False, command: bytes = b"") -> CommandResult:
        with self._transaction(write=True) as cur:
            game = self._game(cur, game_id, lock=True)
            earlier = self._result(cur, game_id, command_id)
            if earlier is not None:
                return earlier
            if game.version != expected_version:
                raise VersionConflict(game_id, expected_version, game.version)
            row = self._run(cur, "SELECT hash FROM events WHERE game_id = ? AND version = ?",
                            (game_id, game.version)).fetchone()
            prev_hash = row[0] if row else GENESIS_HASH
            version = self._insert_events(cur, game_id, game.version, prev_hash, events,
                                          command_id, seat, recorded_at_ms, command)
            self._run(cur, "INSERT INTO commands (game_id, command_id, accepted, first_version, "
                      "last_version, rejection) VALUES (?, ?, ?, ?, ?, NULL)",
                      (game_id, command_id, True, game.version + 1, version))
            updated = self._run(cur, "UPDATE games SET version = ?, finished = ?, finished_at_ms = ? "
                                "WHERE game_id = ? AND version = ?",
                                (version, finished, recorded_at_ms if finished else None, game_id,
                                 game.version)).rowcount
            if updated != 1:  # pragma: no cover - the lock and the keys make this unreachable
                raise VersionConflict(game_id, expected_version, self._game(cur, game_id).version)
            self._after_append(cur, game_id)
        self.notify()
        return CommandResult(command_id, True, game.version + 1, version)

    def record_rejection(self, game_id: str, command_id: str, rejection: bytes,
                         version: int) -> CommandResult:
        with self._transaction(write=True) as cur:
            self._game(cur, game_id)
            self._run(cur, "INSERT INTO commands (game_id, command_id, accepted, first_version, "
                      "last_version, rejection) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                      (game_id, command_id, False, version, version, rejection))
            result = self._result(cur, game_id, command_id)
        assert result is not None
        return result

    def result_of(self, game_id: str, command_id: str) -> CommandResult | None:
        with self._transaction(write=False) as cur:
            return self._result(cur, game_id, command_id)

    def _result(self, cur: Any, game_id: str, command_id: str) -> CommandResult | None:
        row = self._run(cur, "SELECT accepted, first_version, last_version, rejection FROM commands "
                        "WHERE game_id = ? AND command_id = ?", (game_id, command_id)).fetchone()
        if row is None:
            return None
        return CommandResult(command_id, bool(row[0]), row[1], row[2],
                             None if row[3] is None else bytes(row[3]), duplicate=True)

    def read(self, game_id: str, after_version: int = 0) -> list[StoredEvent]:
        with self._transaction(write=False) as cur:
            self._game(cur, game_id)
            rows = self._run(cur, "SELECT game_id, version, command_id, seat, recorded_at_ms, type, "
                             "payload, prev_hash, hash, command FROM events "
                             "WHERE game_id = ? AND version > ? ORDER BY version",
                             (game_id, after_version)).fetchall()
        return [StoredEvent(r[0], r[1], r[2], r[3], r[4], r[5], bytes(r[6]), r[7], r[8], bytes(r[9]))
                for r in rows]

    def players(self, game_id: str) -> tuple[str, ...]:
        with self._transaction(write=False) as cur:
            rows = self._run(cur, "SELECT player FROM game_players WHERE game_id = ? ORDER BY seat",
                             (game_id,)).fetchall()
        return tuple(r[0] for r in rows)

    def recent_games(self, player: str, limit: int) -> list[tuple[str, int]]:
        with self._transaction(write=False) as cur:
            rows = self._run(cur, "SELECT p.game_id, p.seat FROM game_players p "
                             "JOIN games g ON g.game_id = p.game_id "
                             "WHERE p.player = ? AND g.finished "
                             "ORDER BY g.finished_at_ms DESC, p.game_id LIMIT ?",
                             (player, limit)).fetchall()
        return [(r[0], r[1]) for r in rows]
