"""The store's logic in SQL both databases speak; subclasses give connections and the dialect."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

import structlog

from croupier.log import (
    CREATE_COMMAND_ID,
    GENESIS_HASH,
    AlreadyCreated,
    CommandResult,
    CreateRequest,
    EventStore,
    GameNotFound,
    GameRecord,
    Loaded,
    NewEvent,
    SeatInPlay,
    Snapshot,
    StoredEvent,
    StoreUnavailable,
    TicketUsed,
    UsedTicket,
    VersionConflict,
    chained,
)

#: A used seed ticket's record is kept this long after the ticket expires: the replicas' clocks
#: may disagree (a replica whose clock is behind still takes a ticket another thinks expired),
#: and no two disagree by an hour.
TICKET_KEPT_AFTER_EXPIRY_MS = 60 * 60 * 1000
#: Records of expired tickets a ticketed creation forgets: more than the one it adds, so that
#: they never pile up, and few enough to cost nothing.
TICKETS_FORGOTTEN_PER_CREATION = 8
# Game ids per statement in :meth:`SqlEventStore.versions` (far below any database's limit on a
# statement's parameters: 32,766 in SQLite's default build).
VERSIONS_PER_STATEMENT = 500
_GAME_COLUMNS = (
    "game_id, kind, seats, server_seed, commitment, created_at_ms, version, finished, log_format"
)
_EVENT_COLUMNS = (
    "game_id, version, command_id, seat, recorded_at_ms, type, payload, prev_hash, hash, command"
)
_EVENT_WIDTH = len(_EVENT_COLUMNS.split(","))


def migrations_path(dialect: str) -> str:
    return str(resources.files("croupier.service.store") / "migrations" / dialect)


def apply_migrations(
    yoyo_url: str, dialect: str, exclusive: AbstractContextManager[object]
) -> tuple[str, ...]:
    """Bring the schema up to date with yoyo (idempotent), holding ``exclusive``: a lock the
    database or the operating system releases when its holder dies (PostgreSQL's advisory lock,
    a file lock for SQLite). Returns the ids of the migrations this call applied (none when the
    schema was up to date, or another process applied them while this one waited for the lock).

    Not yoyo's own lock: that is a row in ``yoyo_lock`` that a process killed while migrating
    leaves behind, and every later start then waited 10 s and failed. Holding ours, yoyo is told
    it holds its lock already, so it neither reads nor writes that table (a stale row there is
    ignored)."""
    from yoyo import get_backend, read_migrations

    with exclusive:
        backend = get_backend(yoyo_url)
        try:
            backend._is_locked = True  # yoyo's lock(): "already held", see above
            ours = read_migrations(migrations_path(dialect))
            migrations = backend.to_apply(ours)
            backend.apply_migrations(migrations)
            _warn_if_newer(backend, {migration.id for migration in ours})
            return tuple(migration.id for migration in migrations)
        finally:
            backend.connection.close()


def _warn_if_newer(backend: Any, ours: Collection[str]) -> None:
    """Say so when the store has migrations this release does not know: a newer release migrated
    it (a rollback, or this replica not yet upgraded). It serves on (migrations only add, as a
    rolling upgrade needs), but an operator rolling back should know the schema stays newer,
    and games a newer release recorded are left to it (NEWER_RELEASE)."""
    cursor = backend.execute(APPLIED_MIGRATIONS)
    newer = sorted({row[0] for row in cursor.fetchall()} - set(ours))
    if newer:
        structlog.get_logger("croupier.store").warning(
            "the store has migrations this release does not know: a newer release applied "
            "them (a rollback, or this server not yet upgraded); it serves on, the schema "
            "stays as the newer release left it",
            newer=newer,
        )


#: yoyo's record of the migrations a database has had (``migration_id`` names each).
APPLIED_MIGRATIONS_TABLE = "_yoyo_migration"
APPLIED_MIGRATIONS = f"SELECT migration_id FROM {APPLIED_MIGRATIONS_TABLE}"


def require_current(store: str, recorded: Collection[str], dialect: str) -> None:
    """:class:`SchemaNotCurrent` unless a tool that only reads a store can read this one with this
    release: ``recorded`` holds the ids :data:`APPLIED_MIGRATIONS_TABLE` lists (none where there
    is no such table). Read without writing: yoyo's own check makes its tables first, and
    migrating a store under servers of an older release stops them."""
    from yoyo import read_migrations

    from croupier.service.store import SchemaNotCurrent

    ours = [migration.id for migration in read_migrations(migrations_path(dialect))]
    missing = [migration_id for migration_id in ours if migration_id not in recorded]
    if not missing:
        return
    if len(missing) == len(ours):
        raise SchemaNotCurrent(
            f"{store} holds no Croupier store (no migration of its schema applied)"
        )
    raise SchemaNotCurrent(
        f"{store}'s schema lacks this release's migrations {', '.join(missing)}: an older "
        "release serves it. This tool reads a store without changing it: run the older "
        "release's tool, or this one once `croupier migrate` has brought the store up to date "
        "(after every server is upgraded)"
    )


def _of(table: str, columns: str) -> str:
    return ", ".join(f"{table}.{column.strip()}" for column in columns.split(","))


_GAME_WIDTH = len(_GAME_COLUMNS.split(","))
_GAME_COLUMNS_OF_G = _of("g", _GAME_COLUMNS)
_RESULT_COLUMNS = "accepted, first_version, last_version, rejection, fingerprint"
_RESULT_COLUMNS_OF_C = _of("c", _RESULT_COLUMNS)
COMMAND_INSERT = (
    "INSERT INTO commands (game_id, command_id, accepted, first_version, last_version, "
    "rejection, fingerprint) VALUES (?, ?, ?, ?, ?, NULL, ?)"
)
GAME_MOVED = (
    "UPDATE games SET version = ?, finished = ?, finished_at_ms = ?, next_deadline_ms = ?, "
    "sweep_lease_ms = 0 WHERE game_id = ? AND version = ?"
)


@dataclass(frozen=True)
class Moved:
    """An accepted command's move of its game, from one version to another."""

    game_id: str
    command_id: str
    from_version: int
    to_version: int
    fingerprint: bytes
    finished: bool

    def command_row(self) -> tuple[Any, ...]:
        """``COMMAND_INSERT``'s parameters: the command's result, kept for its retries."""
        first = self.from_version + 1
        return (self.game_id, self.command_id, True, first, self.to_version, self.fingerprint)

    def game_update(self, recorded_at_ms: int, next_deadline_ms: int | None) -> tuple[Any, ...]:
        """``GAME_MOVED``'s parameters (a finished game has nothing more due)."""
        return (
            self.to_version,
            self.finished,
            recorded_at_ms if self.finished else None,
            None if self.finished else next_deadline_ms,
            self.game_id,
            self.from_version,
        )


def events_insert(stored: Sequence[StoredEvent]) -> tuple[str, list[Any]]:
    """One INSERT of all ``stored`` (rather than a statement, and a round trip, each)."""
    row = "(" + ", ".join("?" for _ in range(_EVENT_WIDTH)) + ")"
    params: list[Any] = []
    for e in stored:
        params += (
            e.game_id,
            e.version,
            e.command_id,
            e.seat,
            e.recorded_at_ms,
            e.type,
            e.payload,
            e.prev_hash,
            e.hash,
            e.command,
        )
    values = ", ".join(row for _ in stored)
    return f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES {values}", params


def _result_row(command_id: str, row: Sequence[Any]) -> CommandResult:
    """A command's earlier result from ``_RESULT_COLUMNS``."""
    return CommandResult(
        command_id,
        bool(row[0]),
        row[1],
        row[2],
        None if row[3] is None else bytes(row[3]),
        duplicate=True,
        fingerprint=b"" if row[4] is None else bytes(row[4]),
    )


E = TypeVar("E", bound=Exception)


@contextmanager
def reachable(driver_error: type[E], away: Callable[[E], bool]) -> Iterator[None]:
    """The driver's ``driver_error`` that say the database cannot be reached or serve now
    (``away``, the dialect's judgement) as :class:`StoreUnavailable`: its callers answer that the
    store is unavailable, to be tried again, rather than fail as on a bug."""
    try:
        yield
    except driver_error as error:
        if not away(error):
            raise
        raise StoreUnavailable(str(error).strip() or type(error).__name__) from error


class _RequestTaken(Exception):
    """Inside a creation's transaction: its request id made a game before (rolls it back)."""


class _TicketTaken(Exception):
    """Inside a creation's transaction: its seed ticket made a game before (rolls it back)."""


def _game_row(row: Sequence[Any]) -> GameRecord:
    return GameRecord(
        row[0], row[1], row[2], bytes(row[3]), row[4], row[5], row[6], bool(row[7]), row[8]
    )


def _event_row(r: Sequence[Any]) -> StoredEvent:
    return StoredEvent(r[0], r[1], r[2], r[3], r[4], r[5], bytes(r[6]), r[7], r[8], bytes(r[9]))


class SqlEventStore(EventStore):
    """One implementation of the recorder contract for every SQL database we run on."""

    #: The parameter marker of the driver ("?" or "%s").
    marker = "?"
    #: Appended to the game row's SELECT in an append, to lock it where the database can.
    lock_clause = ""
    #: The migrations this store applied when it opened (``croupier migrate`` reports them).
    migrations_applied: tuple[str, ...] = ()

    @abstractmethod
    def _transaction(self, write: bool, game_id: str = "") -> AbstractContextManager[Any]:
        """A cursor inside a transaction (an immediate/locking one when ``write``); ``game_id``:
        the game whose row (or creation) it locks, named should the lock not be had in time
        (:class:`GameLocked`)."""

    def _after_append(self, cursor: Any, game_id: str, version: int) -> None:
        """Hook inside the append's transaction (PostgreSQL sends NOTIFY here)."""

    def _before_append(
        self, cur: Any, game_id: str, command_id: str
    ) -> tuple[GameRecord, str, CommandResult | None]:
        """In one statement, the game's row, the hash its chain goes on from, and the command's
        earlier result if it was seen before. Made where no other writer can move the game on
        meanwhile (SQLite: BEGIN IMMEDIATE; PostgreSQL locks the row first)."""
        row = self._run(
            cur,
            f"SELECT {_GAME_COLUMNS_OF_G}, e.hash, c.command_id, {_RESULT_COLUMNS_OF_C} "
            "FROM games g "
            "LEFT JOIN events e ON e.game_id = g.game_id AND e.version = g.version "
            "LEFT JOIN commands c ON c.game_id = g.game_id AND c.command_id = ? "
            "WHERE g.game_id = ?",
            (command_id, game_id),
        ).fetchone()
        if row is None:
            raise GameNotFound(game_id)
        game = _game_row(row[:_GAME_WIDTH])
        prev_hash = row[_GAME_WIDTH] or GENESIS_HASH
        seen = row[_GAME_WIDTH + 1] is not None
        earlier = _result_row(command_id, row[_GAME_WIDTH + 2 :]) if seen else None
        return game, prev_hash, earlier

    def _write_append(
        self,
        cur: Any,
        stored: Sequence[StoredEvent],
        moved: Moved,
        recorded_at_ms: int,
        next_deadline_ms: int | None,
    ) -> None:
        """The append's writes: its events, the command's result, the game's new version (from
        the one it had: the row is locked), then :meth:`_after_append`."""
        if stored:
            self._run(cur, *events_insert(stored))
        self._run(cur, COMMAND_INSERT, moved.command_row())
        updated = self._run(
            cur, GAME_MOVED, moved.game_update(recorded_at_ms, next_deadline_ms)
        ).rowcount
        if updated != 1:  # pragma: no cover - the lock and the keys make this unreachable
            current = self._game(cur, moved.game_id).version
            raise VersionConflict(moved.game_id, moved.from_version, current)
        self._after_append(cur, moved.game_id, moved.to_version)

    def _q(self, sql: str) -> str:
        return sql.replace("?", self.marker)

    def _run(self, cursor: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        cursor.execute(self._q(sql), tuple(params))
        return cursor

    def create_game(
        self,
        game: GameRecord,
        events: Sequence[NewEvent],
        recorded_at_ms: int,
        players: Sequence[str] = (),
        next_deadline_ms: int | None = None,
        request: CreateRequest | None = None,
        ticket: UsedTicket | None = None,
    ) -> tuple[StoredEvent, ...]:
        try:
            return self._create_game(
                game, events, recorded_at_ms, players, next_deadline_ms, request, ticket
            )
        except _RequestTaken:
            # Rolled back; read what the request's first attempt made (committed: another
            # attempt's insert waits for the first to end before it is refused).
            assert request is not None
            made = self.created_by(request.request_id)
            assert made is not None
            raise made from None
        except _TicketTaken:
            assert ticket is not None
            raise TicketUsed(ticket.ticket_id) from None

    def created_by(self, request_id: str) -> AlreadyCreated | None:
        with self._transaction(write=False) as cur:
            row = self._run(
                cur,
                "SELECT r.game_id, r.version, g.commitment, r.fingerprint "
                "FROM create_requests r JOIN games g ON g.game_id = r.game_id "
                "WHERE r.request_id = ?",
                (request_id,),
            ).fetchone()
        if row is None:
            return None
        return AlreadyCreated(request_id, row[0], row[1], row[2], bytes(row[3]))

    def _create_game(
        self,
        game: GameRecord,
        events: Sequence[NewEvent],
        recorded_at_ms: int,
        players: Sequence[str],
        next_deadline_ms: int | None,
        request: CreateRequest | None,
        ticket: UsedTicket | None = None,
    ) -> tuple[StoredEvent, ...]:
        with self._transaction(write=True, game_id=game.game_id) as cur:
            self._run(
                cur,
                "INSERT INTO games (game_id, kind, seats, server_seed, commitment, "
                "created_at_ms, version, finished, log_format) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)",
                (
                    game.game_id,
                    game.kind,
                    game.seats,
                    game.server_seed,
                    game.commitment,
                    game.created_at_ms,
                    False,
                    game.log_format,
                ),
            )
            for seat, player in enumerate(players):
                self._run(
                    cur,
                    "INSERT INTO game_players (game_id, seat, player) VALUES (?, ?, ?)",
                    (game.game_id, seat, player),
                )
            stored = chained(game, 0, GENESIS_HASH, events, CREATE_COMMAND_ID, None, recorded_at_ms)
            if stored:
                self._run(cur, *events_insert(stored))
            version = stored[-1].version if stored else 0
            if request is not None:
                # The unique key decides between attempts made at once; the loser's insert
                # waits for the winner's transaction and then does nothing.
                taken = self._run(
                    cur,
                    "INSERT INTO create_requests (request_id, game_id, version, fingerprint) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING",
                    (request.request_id, game.game_id, version, request.fingerprint),
                )
                if taken.rowcount == 0:
                    raise _RequestTaken
            if ticket is not None:
                self._use_ticket(cur, ticket, game.game_id, recorded_at_ms)
            self._run(
                cur,
                "UPDATE games SET version = ?, next_deadline_ms = ? WHERE game_id = ?",
                (version, next_deadline_ms, game.game_id),
            )
            self._after_append(cur, game.game_id, version)
        return tuple(stored)

    def _use_ticket(self, cur: Any, ticket: UsedTicket, game_id: str, now_ms: int) -> None:
        """Record a seed ticket as used by the game being created, in its transaction; raise
        :class:`_TicketTaken` if another game used it. Forgets a few long-expired tickets on the
        way (rows another creation is forgetting are skipped, not waited for)."""
        self._run(
            cur,
            "DELETE FROM seed_tickets WHERE ticket_id IN (SELECT ticket_id FROM seed_tickets "
            f"WHERE expires_at_ms < ? LIMIT ?{self.skip_locked_clause})",
            (now_ms - TICKET_KEPT_AFTER_EXPIRY_MS, TICKETS_FORGOTTEN_PER_CREATION),
        )
        # The unique key decides between creations made at once with one ticket: the loser's
        # insert waits for the winner's transaction and then does nothing.
        taken = self._run(
            cur,
            "INSERT INTO seed_tickets (ticket_id, game_id, expires_at_ms) VALUES (?, ?, ?) "
            "ON CONFLICT (ticket_id) DO NOTHING",
            (ticket.ticket_id, game_id, ticket.expires_at_ms),
        )
        if taken.rowcount == 0:
            raise _TicketTaken

    def game(self, game_id: str) -> GameRecord:
        with self._transaction(write=False) as cur:
            return self._game(cur, game_id)

    def _game(self, cur: Any, game_id: str, lock: bool = False) -> GameRecord:
        row = self._run(
            cur,
            f"SELECT {_GAME_COLUMNS} FROM games WHERE game_id = ?"
            + (self.lock_clause if lock else ""),
            (game_id,),
        ).fetchone()
        if row is None:
            raise GameNotFound(game_id)
        return _game_row(row)

    def load(
        self, game_id: str, after_version: int = 0, command_id: str = "", snapshot: str = ""
    ) -> Loaded:
        with self._transaction(write=False) as cur:
            record = self._game(cur, game_id)
            earlier = self._result(cur, game_id, command_id) if command_id else None
            latest = self._snapshot(cur, game_id, snapshot, after_version) if snapshot else None
            events = self._events(cur, game_id, latest.version if latest else after_version)
        return Loaded(record, tuple(events), earlier, latest)

    def _snapshot(self, cur: Any, game_id: str, format: str, after: int) -> Snapshot | None:
        row = self._run(
            cur,
            "SELECT version, state, seal FROM snapshots "
            "WHERE game_id = ? AND format = ? AND version > ?",
            (game_id, format, after),
        ).fetchone()
        return None if row is None else Snapshot(game_id, format, row[0], bytes(row[1]), row[2])

    def save_snapshot(self, snapshot: Snapshot) -> None:
        with self._transaction(write=True, game_id=snapshot.game_id) as cur:
            self._run(
                cur,
                "INSERT INTO snapshots (game_id, format, version, state, seal) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (game_id, format) DO UPDATE SET "
                "version = excluded.version, state = excluded.state, seal = excluded.seal "
                "WHERE snapshots.version <= excluded.version",
                (
                    snapshot.game_id,
                    snapshot.format,
                    snapshot.version,
                    snapshot.state,
                    snapshot.seal,
                ),
            )

    def load_many(self, wanted: Sequence[tuple[str, int]]) -> list[Loaded]:
        if not wanted:
            return []
        marks = ", ".join("?" for _ in wanted)
        ids = [game_id for game_id, _ in wanted]
        newer = " OR ".join("(game_id = ? AND version > ?)" for _ in wanted)
        with self._transaction(write=False) as cur:
            records = {
                row[0]: _game_row(row)
                for row in self._run(
                    cur, f"SELECT {_GAME_COLUMNS} FROM games WHERE game_id IN ({marks})", ids
                ).fetchall()
            }
            rows = self._run(
                cur,
                f"SELECT {_EVENT_COLUMNS} FROM events WHERE {newer} ORDER BY game_id, version",
                [value for pair in wanted for value in pair],
            ).fetchall()
        events: dict[str, list[StoredEvent]] = {}
        for row in rows:
            event = _event_row(row)
            events.setdefault(event.game_id, []).append(event)
        return [
            Loaded(records[game_id], tuple(events.get(game_id, ())))
            for game_id in ids
            if game_id in records
        ]

    def append(
        self,
        game_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        command_id: str,
        seat: int | None,
        recorded_at_ms: int,
        *,
        finished: bool = False,
        command: bytes = b"",
        fingerprint: bytes = b"",
        next_deadline_ms: int | None = None,
    ) -> CommandResult:
        with self._transaction(write=True, game_id=game_id) as cur:
            game, prev_hash, earlier = self._before_append(cur, game_id, command_id)
            if earlier is not None:
                return earlier
            if game.version != expected_version:
                raise VersionConflict(game_id, expected_version, game.version)
            stored = chained(
                game, game.version, prev_hash, events, command_id, seat, recorded_at_ms, command
            )
            version = stored[-1].version if stored else game.version
            self._write_append(
                cur,
                stored,
                Moved(game_id, command_id, game.version, version, fingerprint, finished),
                recorded_at_ms,
                next_deadline_ms,
            )
        return CommandResult(
            command_id,
            True,
            game.version + 1,
            version,
            events=tuple(stored),
            fingerprint=fingerprint,
        )

    def record_rejection(
        self,
        game_id: str,
        command_id: str,
        rejection: bytes,
        version: int,
        fingerprint: bytes = b"",
    ) -> CommandResult:
        with self._transaction(write=True, game_id=game_id) as cur:
            # Locked, so that no append comes between the version's check and the write.
            record = self._game(cur, game_id, lock=True)
            earlier = self._result(cur, game_id, command_id)
            if earlier is not None:
                return earlier
            if record.version != version:
                # Refused on a state that is no longer the game's (a replica's copy, behind
                # another replica's append): the refusal might not stand now, so it is not kept.
                raise VersionConflict(game_id, version, record.version)
            self._run(
                cur,
                "INSERT INTO commands (game_id, command_id, accepted, first_version, "
                "last_version, rejection, fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (game_id, command_id, False, version, version, rejection, fingerprint),
            )
            result = self._result(cur, game_id, command_id)
        if result is None:  # pragma: no cover - the row was just written or already there
            raise GameNotFound(game_id)
        return result

    #: Appended to the SELECT of due games, to skip rows another replica is claiming.
    skip_locked_clause = ""

    def claim_due(self, now_ms: int, lease_ms: int, limit: int) -> list[str]:
        with self._transaction(write=True) as cur:
            rows = self._run(
                cur,
                "UPDATE games SET sweep_lease_ms = ? WHERE game_id IN ("
                "SELECT game_id FROM games WHERE next_deadline_ms IS NOT NULL "
                "AND next_deadline_ms <= ? AND sweep_lease_ms <= ? "
                f"ORDER BY next_deadline_ms LIMIT ?{self.skip_locked_clause}) RETURNING game_id",
                (now_ms + lease_ms, now_ms, now_ms, limit),
            ).fetchall()
        return [row[0] for row in rows]

    def hand_back(self, game_id: str, until_ms: int) -> None:
        with self._transaction(write=True) as cur:
            self._run(
                cur,
                "UPDATE games SET sweep_lease_ms = ? WHERE game_id = ? AND sweep_lease_ms > ?",
                (until_ms, game_id, until_ms),
            )

    def next_due(self) -> int | None:
        with self._transaction(write=False) as cur:
            row = self._run(
                cur,
                # A claimed game is due again only once its lease lapses.
                "SELECT MIN(CASE WHEN sweep_lease_ms > next_deadline_ms THEN sweep_lease_ms "
                "ELSE next_deadline_ms END) FROM games WHERE next_deadline_ms IS NOT NULL",
            ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def result_of(self, game_id: str, command_id: str) -> CommandResult | None:
        with self._transaction(write=False) as cur:
            return self._result(cur, game_id, command_id)

    def _result(self, cur: Any, game_id: str, command_id: str) -> CommandResult | None:
        row = self._run(
            cur,
            f"SELECT {_RESULT_COLUMNS} FROM commands WHERE game_id = ? AND command_id = ?",
            (game_id, command_id),
        ).fetchone()
        return None if row is None else _result_row(command_id, row)

    def _events(self, cur: Any, game_id: str, after_version: int) -> list[StoredEvent]:
        rows = self._run(
            cur,
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE game_id = ? AND version > ? "
            "ORDER BY version",
            (game_id, after_version),
        ).fetchall()
        return [_event_row(r) for r in rows]

    def read(self, game_id: str, after_version: int = 0) -> list[StoredEvent]:
        with self._transaction(write=False) as cur:
            self._game(cur, game_id)
            return self._events(cur, game_id, after_version)

    def versions(self, game_ids: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        with self._transaction(write=False) as cur:
            for start in range(0, len(game_ids), VERSIONS_PER_STATEMENT):
                chunk = game_ids[start : start + VERSIONS_PER_STATEMENT]
                marks = ", ".join("?" for _ in chunk)
                rows = self._run(
                    cur, f"SELECT game_id, version FROM games WHERE game_id IN ({marks})", chunk
                ).fetchall()
                found.update((row[0], row[1]) for row in rows)
        return found

    def players(self, game_id: str) -> tuple[str, ...]:
        with self._transaction(write=False) as cur:
            rows = self._run(
                cur,
                "SELECT player FROM game_players WHERE game_id = ? ORDER BY seat",
                (game_id,),
            ).fetchall()
        return tuple(r[0] for r in rows)

    def recent_games(self, player: str, limit: int) -> list[tuple[GameRecord, int]]:
        columns = ", ".join(f"g.{c.strip()}" for c in _GAME_COLUMNS.split(","))
        with self._transaction(write=False) as cur:
            rows = self._run(
                cur,
                f"SELECT {columns}, p.seat FROM game_players p "
                "JOIN games g ON g.game_id = p.game_id "
                "WHERE p.player = ? AND g.finished "
                "ORDER BY g.finished_at_ms DESC, p.game_id LIMIT ?",
                (player, limit),
            ).fetchall()
        return [(_game_row(r), r[-1]) for r in rows]

    def seats_in_play(self, players: Sequence[str], limit: int) -> list[SeatInPlay]:
        if not players:
            return []
        marks = ", ".join("?" * len(players))
        with self._transaction(write=False) as cur:
            rows = self._run(
                cur,
                # The game's last event is the one at its version.
                "SELECT p.game_id, p.seat, p.player, g.seats, e.recorded_at_ms FROM game_players p "
                "JOIN games g ON g.game_id = p.game_id "
                "JOIN events e ON e.game_id = g.game_id AND e.version = g.version "
                f"WHERE p.player IN ({marks}) AND NOT g.finished "
                "ORDER BY e.recorded_at_ms DESC, p.game_id, p.seat LIMIT ?",
                (*players, limit),
            ).fetchall()
        return [SeatInPlay(*row) for row in rows]
