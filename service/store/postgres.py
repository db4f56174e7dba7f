"""PostgreSQL for several replicas: psycopg 3 with a pool; LISTEN/NOTIFY wakes every replica's
streams."""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
import psycopg.errors
import structlog
from psycopg_pool import ConnectionPool, PoolTimeout

from croupier.app.throttle import Said, Throttle
from croupier.log import (
    GENESIS_HASH,
    CommandResult,
    CreateRequest,
    GameLocked,
    GameRecord,
    NewEvent,
    PoolStats,
    StoredEvent,
    StoreUnavailable,
    UsedTicket,
    VersionConflict,
    chained,
)
from croupier.log.store import AppendListener, LoopAppender, LoopListener
from croupier.service.store import (
    CONNECT_TIMEOUT_S,
    MIGRATION_WAIT_S,
    MigrationLockBusy,
    redacted,
)
from croupier.service.store.sql import (
    APPLIED_MIGRATIONS,
    APPLIED_MIGRATIONS_TABLE,
    COMMAND_INSERT,
    GAME_MOVED,
    Moved,
    SqlEventStore,
    apply_migrations,
    events_insert,
    reachable,
    require_current,
)

log = structlog.get_logger("croupier.store")

#: A statement to run on each new session, and its parameters (``None``: nothing to run).
SessionSettings = tuple[str, tuple[str, ...]] | None


@dataclass
class _Held:
    """A game whose row a call waited for past the lock timeout, until a call on it goes
    through (:meth:`PostgresEventStore._waiting_on`)."""

    #: Its refusals, logged at most every LOCKED_WARNING_EVERY_S.
    refusals: Throttle = field(default_factory=lambda: Throttle(LOCKED_WARNING_EVERY_S))
    #: Whether a call waits for its row now.
    waiting: bool = False


CHANNEL = "croupier_events"
#: Notices of a store's own appends kept until its listener hears them.
OWN_NOTICES_KEPT = 10_000
#: Games whose chain's end a store remembers (the games it appends to now).
HEADS_KEPT = 10_000
#: Connections of a process's appends on its event loop at most (one append's each while its
#: statement is out), beside the pool of its threads: as many as that pool's.
LOOP_CONNECTIONS = 10
#: How long appends on the event loop leave new connections alone after one was refused.
CONNECT_AGAIN_S = 1.0
#: How long a lost LISTEN connection waits before it connects again.
LISTEN_RETRY_S = 1.0
#: ``croupier_append``'s answer when it appended (anything else: it wrote nothing).
APPENDED = "appended"
#: How long a call on a thread waits for a connection of the pool (while the database is down,
#: the pool's tries to connect): past it, the call answers that the store is unavailable rather
#: than hold its thread, and the calls queued behind it, for psycopg_pool's 30 s.
POOL_WAIT_S = 5.0
#: How long the pool tries to replace a lost connection (at 1 s, then at this limit) before it
#: gives up on it: the next call that waits for a connection then asks for one at once. (With
#: psycopg_pool's default, 5 minutes, the tries come 1, 2, 4, 8… s apart: the pool finds the
#: database back up to as long after its return as it was away.)
RECONNECT_FOR_S = 2.0
#: How long a statement of the store waits for a lock (PostgreSQL's ``lock_timeout``, set on
#: every session of the store's), past which the call is answered unavailable (GameLocked: sent
#: again, a command is applied once). Without it, a transaction that holds a game's row and never
#: ends (a replica frozen mid-append: SIGSTOP, a VM paused, a partition PostgreSQL has not
#: noticed) held every call on that game, on every replica, with no error and no end, each one
#: a thread of the pool or one of the loop's connections: in some 20 s every one, for all games.
#: 3 s: far longer than a healthy append holds a row (one round trip, or the general way's four:
#: milliseconds; the longest pause of a healthy process, the collector's hourly thaw, under a
#: second), and well within the deadlines clients give a call (5-10 s; the load tool's 10 s),
#: so that the client is told, and can try again, before it gives up.
LOCK_TIMEOUT_S = 3.0
#: How long a session of the store's may stay idle inside a transaction before PostgreSQL ends it
#: (``idle_in_transaction_session_timeout``), which rolls its transaction back and frees its
#: locks: a replica frozen between the statements of an append no longer holds the game's row
#: until it comes back (or its TCP connection is found dead). The store's transactions send
#: their statements back to back and the LISTEN connections hold none, so a healthy session is
#: never idle in one for more than milliseconds; the frozen replica, once back, finds its
#: connection ended and answers that call unavailable (its client sends it again).
IDLE_IN_TRANSACTION_S = 30.0
#: How often at most a game held past the lock timeout is logged (a warning per game): its calls
#: are refused every few seconds for as long as it is held.
LOCKED_WARNING_EVERY_S = 10.0


# How a connection finds out that the database is gone without a word (its host lost, the
# network cut): TCP keepalives on an idle connection (the LISTEN one waits for notices for
# hours) find a silent peer in 10 + 3 x 5 s, and a statement whose bytes go unacknowledged fails
# after 15 s. Without them the kernel's defaults apply: two hours, and some fifteen minutes,
# with the call, its thread or its append's connection held all the while. (A statement that
# waits for a lock is acknowledged: these never cut it short.)
KEEPALIVE_IDLE_S = 10
KEEPALIVE_INTERVAL_S = 5
KEEPALIVE_COUNT = 3
TCP_USER_TIMEOUT_MS = 15_000


#: A setting named in a connection's ``options`` (``-c name=value``, ``--name=value``).
_OPTION = re.compile(r"(?:-c\s*|--)([A-Za-z0-9_.-]+)=")


def session_settings(
    url: str, lock_timeout_s: float, idle_in_transaction_s: float
) -> SessionSettings:
    """The statement that gives a new session of the store its settings (``lock_timeout``,
    ``idle_in_transaction_session_timeout``), and its parameters: those the URL's ``options``
    (or ``PGOPTIONS``) set are left as they say (the operator's URL decides). Made with a
    statement once per connection rather than in ``options``: PgBouncer refuses a connection whose
    options set what it does not track (a pooler in session mode keeps a session's settings)."""
    given = psycopg.conninfo.conninfo_to_dict(url).get("options") or os.environ.get("PGOPTIONS", "")
    named = {name.replace("-", "_").lower() for name in _OPTION.findall(str(given))}
    wanted = {
        "lock_timeout": f"{round(lock_timeout_s * 1000)}ms",
        "idle_in_transaction_session_timeout": f"{round(idle_in_transaction_s * 1000)}ms",
    }
    left = {name: value for name, value in wanted.items() if name not in named}
    if not left:
        return None
    calls = ", ".join(f"set_config('{name}', %s, false)" for name in left)
    return f"SELECT {calls}", tuple(left.values())


def connection_info(url: str) -> str:
    """``url`` with this store's connection options where it sets none of its own (the
    operator's URL decides): the time a connection may take, and how a lost peer is found."""
    given = psycopg.conninfo.conninfo_to_dict(url)
    options = {
        "connect_timeout": CONNECT_TIMEOUT_S,
        "keepalives": 1,
        "keepalives_idle": KEEPALIVE_IDLE_S,
        "keepalives_interval": KEEPALIVE_INTERVAL_S,
        "keepalives_count": KEEPALIVE_COUNT,
        "tcp_user_timeout": TCP_USER_TIMEOUT_MS,
    }
    return psycopg.conninfo.make_conninfo(
        url, **{name: value for name, value in options.items() if name not in given}
    )


#: The SQLSTATE classes of a database that cannot serve now, whatever the statement: connection
#: exceptions (08), insufficient resources (53: too many connections, disk full), operator
#: intervention (57: shutting down, restarting) and system errors (58: I/O).
UNAVAILABLE_CLASSES = frozenset({"08", "53", "57", "58"})


def _away(error: psycopg.Error) -> bool:
    """Whether ``error`` says the database cannot be reached or serve now: no answer of the
    server's (a connection refused or lost, the pool's wait run out) or one of
    :data:`UNAVAILABLE_CLASSES`; or the session ended for idling in its transaction (25P03,
    :data:`IDLE_IN_TRANSACTION_S`: this process was frozen mid-transaction, which was rolled
    back). Not an answer to the statement itself (a deadlock, a statement timed out): those are
    the call's, not an outage."""
    if isinstance(error, psycopg.errors.IdleInTransactionSessionTimeout):
        return True
    if not isinstance(error, psycopg.OperationalError):
        return False
    return error.sqlstate is None or error.sqlstate[:2] in UNAVAILABLE_CLASSES


def _reachable() -> AbstractContextManager[None]:
    """A database that cannot be reached or serve now (:func:`_away`) as
    :class:`StoreUnavailable`."""
    return reachable(psycopg.Error, _away)


@dataclass(frozen=True)
class Head:
    """Where a game's chain ends: its version, and that event's hash (the genesis hash at 0)."""

    game: GameRecord
    version: int
    hash: str


@dataclass(frozen=True)
class AtHead:
    """A command's events chained on where a store knows the game's chain ends (``head``)."""

    head: Head
    stored: tuple[StoredEvent, ...]
    command_id: str
    recorded_at_ms: int

    def moved(self, fingerprint: bytes, finished: bool) -> Moved:
        return Moved(
            self.head.game.game_id,
            self.command_id,
            self.head.version,
            self.stored[-1].version,
            fingerprint,
            finished,
        )


#: The advisory lock held while migrating (any 64-bit number no other code of ours uses).
MIGRATION_LOCK = 0x63726F7570696572  # "croupier"
MS_PER_S = 1000


@contextmanager
def migration_lock(url: str) -> Iterator[None]:
    """PostgreSQL's session advisory lock on a connection of its own while the schema is
    migrated: the server releases it when that connection ends, a killed process's included.
    :class:`MigrationLockBusy` when another session holds it for more than
    :data:`MIGRATION_WAIT_S`."""
    wait_s = MIGRATION_WAIT_S
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        # At least 1 ms: PostgreSQL reads a lock_timeout of 0 as none (a wait for ever).
        conn.execute(f"SET lock_timeout = '{max(1, round(wait_s * MS_PER_S))}ms'")
        try:
            conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        except psycopg.errors.LockNotAvailable:
            # Not the database being away (psycopg's message, "canceling statement due to lock
            # timeout", read as that): say who to look for.
            raise MigrationLockBusy(
                f"another process has held the schema migration lock for over {wait_s:g} s (a "
                "replica or `croupier migrate` still migrating, or a session keeping "
                f"pg_advisory_lock({MIGRATION_LOCK})): find it with SELECT pid, state, "
                "backend_start, query FROM pg_stat_activity WHERE pid IN (SELECT pid FROM "
                "pg_locks WHERE locktype = 'advisory' AND granted); start again once it is done, "
                "or end it with pg_terminate_backend(pid)"
            ) from None
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


def _check_current(url: str) -> None:
    """:class:`SchemaNotCurrent` unless the database's schema is this release's (read only)."""
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        found = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (APPLIED_MIGRATIONS_TABLE,)
        ).fetchone()
        recorded = (
            [row[0] for row in conn.execute(APPLIED_MIGRATIONS)]
            if found is not None and found[0]
            else []
        )
    require_current(redacted(url), recorded, "postgresql")


class PostgresEventStore(SqlEventStore):
    marker = "%s"
    lock_clause = " FOR UPDATE"
    skip_locked_clause = " FOR UPDATE SKIP LOCKED"

    def __init__(
        self,
        url: str,
        min_size: int = 1,
        max_size: int = 10,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
        idle_in_transaction_s: float = IDLE_IN_TRANSACTION_S,
        migrate: bool = True,
    ) -> None:
        """``lock_timeout_s`` and ``idle_in_transaction_s``: the sessions' ``lock_timeout`` and
        ``idle_in_transaction_session_timeout`` (:data:`LOCK_TIMEOUT_S`,
        :data:`IDLE_IN_TRANSACTION_S`; 0: none). ``migrate``: bring the schema up to date (a
        server's start); otherwise (a tool that only reads the store) refuse, with
        :class:`SchemaNotCurrent`, a database whose schema is not this release's."""
        self.url = url
        # What every connection of the store is made with (the URL and the options it leaves).
        self.conninfo = connection_info(url)
        self.lock_timeout_s = lock_timeout_s
        # Made on each new connection of the pool's and the loop's.
        self.session_settings = session_settings(url, lock_timeout_s, idle_in_transaction_s)
        # The games found held past the lock timeout, until a call on one goes through.
        self._held: OrderedDict[str, _Held] = OrderedDict()
        self._held_lock = threading.Lock()
        #: Why the database refused a listener's last connection, until one is made again.
        self.connect_error = ""
        if migrate:
            self.migrations_applied = apply_migrations(
                _yoyo_url(url), "postgresql", migration_lock(url)
            )
        else:
            _check_current(url)
        self._pool = ConnectionPool(
            self.conninfo,
            min_size=min_size,
            max_size=max_size,
            open=True,
            timeout=POOL_WAIT_S,
            reconnect_timeout=RECONNECT_FOR_S,
            kwargs={"autocommit": False},
            configure=self._configure,
        )
        self._closed = threading.Event()
        self._listeners: list[AppendListener] = []
        self._listener: threading.Thread | None = None
        # Set once the LISTEN connection is up (appends after it are heard).
        self._listening = threading.Event()
        # The notices of this store's own appends, until its listener hears them and passes
        # over them (oldest forgotten first, should the listener be down).
        self._own: OrderedDict[str, None] = OrderedDict()
        self._own_lock = threading.Lock()
        # Where each game's chain ends, as this store last wrote or locked it: an append at that
        # version goes in one round trip (``croupier_append``).
        self._heads: OrderedDict[str, Head] = OrderedDict()
        self._heads_lock = threading.Lock()

    @contextmanager
    def _reachable(self) -> Iterator[None]:
        """:func:`_reachable`, and when no connection was to be had, why the database refused
        the last one tried (the pool says only "couldn't get a connection after 5.00 sec"; a
        database dropped or a password changed showed only in the listener's warnings)."""
        try:
            with _reachable():
                yield
        except StoreUnavailable as error:
            said = self.connect_error
            if not isinstance(error.__cause__, PoolTimeout) or not said:
                raise
            raise StoreUnavailable(f"{error} (the last try to connect said: {said})") from (
                error.__cause__
            )

    def _cannot_connect(self, error: psycopg.Error) -> None:
        """A connection of a listener's or of the loop's appends was refused: what the database
        said is kept for the calls' answers (:meth:`_reachable`) until a listener connects
        again."""
        self.connect_error = (str(error).strip().splitlines() or [type(error).__name__])[0]

    def _connected(self) -> None:
        """A connection was made: a refusal before it is no longer why none is to be had."""
        self.connect_error = ""

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """A new connection of the pool's: the session's settings (outside a transaction, so
        that the pool gets it idle)."""
        if self.session_settings is not None:
            conn.autocommit = True
            conn.execute(*self.session_settings)
            conn.autocommit = False

    def _not_had(self, game_id: str) -> StoreUnavailable:
        """The answer to a call whose statement waited out the lock timeout (nothing written:
        its transaction, or its one statement, was rolled back). For a game's call,
        :class:`GameLocked`, the game marked held (:meth:`_waiting_on`) and logged once per game
        every :data:`LOCKED_WARNING_EVERY_S`; for another (a table locked, by an operator's
        ``LOCK TABLE``, a ``VACUUM FULL``), the store's unavailability."""
        if not game_id:
            return StoreUnavailable(
                "a lock held by another transaction was not had within "
                f"{self.lock_timeout_s:g} s (lock_timeout)"
            )
        with self._held_lock:
            held = self._held.pop(game_id, None) or _Held()
            self._held[game_id] = held
            if len(self._held) > HEADS_KEPT:
                self._held.popitem(last=False)
            said = held.refusals.due()
        return self._refusal(game_id, said)

    def _refusal(self, game_id: str, said: Said | None) -> GameLocked:
        """A call on a held game refused, after its wait or at once: logged when ``said``."""
        if said is not None:
            log.warning(
                "a game is held by another transaction (a replica frozen mid-append, a session "
                "holding its row, or a LOCK TABLE if many games say so?): its calls are answered "
                "unavailable until it is let go (docs/operations.md finds the holder)",
                game_id=game_id,
                lock_timeout_s=self.lock_timeout_s,
                refused_since_last=said.unsaid,
            )
        return GameLocked(game_id, self.lock_timeout_s)

    @contextmanager
    def _waiting_on(self, game_id: str) -> Iterator[None]:
        """Around a call that may wait for a lock, ``game_id``'s row if it names one: a wait past
        the lock timeout is answered by :meth:`_not_had`, whichever way the call was made. Once a
        call on a game has waited it out, one call at a time waits for its row again and the
        others are answered :class:`GameLocked` at once, until a call goes through: each would
        hold a thread of the pool (or a connection of the loop's) for the whole timeout, and
        clients sending again on a game a frozen replica holds (20 of them, say) took every
        thread, so that the other games' calls waited behind them for up to the timeout."""
        # Read without the lock: a mark missed is one more call that waits, as all did before.
        held = self._held.get(game_id) if game_id and self._held else None
        waits = False  # whether this is the call that waits for the held game's row
        if held is not None:
            with self._held_lock:
                refused = held.waiting
                said = held.refusals.due() if refused else None
                held.waiting = True
            if refused:  # another call waits for the row
                raise self._refusal(game_id, said)
            waits = True
        try:
            yield
        except BaseException as error:
            # Refused after its wait (_not_had keeps the mark), or failed otherwise: the next
            # call may wait. Only the waiting call lets go: the others that waited out their
            # timeout meanwhile (those that began before the mark) leave it as it is.
            if waits and held is not None:
                held.waiting = False
            if isinstance(error, psycopg.errors.LockNotAvailable):
                raise self._not_had(game_id) from error  # rolled back: nothing written
            raise
        if game_id and self._held:  # went through: the row is free (even when another marked it)
            with self._held_lock:
                self._held.pop(game_id, None)

    # -- appends in one round trip ----------------------------------------------------------------

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
        stored = super().create_game(
            game, events, recorded_at_ms, players, next_deadline_ms, request, ticket
        )
        if stored:
            self._remember(Head(game, stored[-1].version, stored[-1].hash))
        return stored

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
        """At the version where this store knows the game's chain ends, in one round trip;
        else, or when the database finds anything else there (another replica's append, a
        retry, no such game), the general way, which reads first."""
        at_head = self._at_head(
            game_id, expected_version, events, command_id, seat, recorded_at_ms, command
        )
        if at_head is not None:
            moved = at_head.moved(fingerprint, finished)
            statement, params, notice = self._at_once(at_head, moved, next_deadline_ms)
            outcome = None
            try:
                with self._waiting_on(game_id), self._reachable(), self._pool.connection() as conn:
                    # One statement is its own transaction: no BEGIN, no COMMIT to wait for.
                    conn.autocommit = True
                    try:
                        row = conn.execute(statement, params).fetchone()
                    finally:
                        conn.autocommit = False
                    outcome = row[0] if row else None
            except GameLocked:
                raise  # its wait for the game's row refused (_waiting_on): nothing written
            except StoreUnavailable as error:
                if isinstance(error.__cause__, PoolTimeout):
                    raise  # no connection to be had: the database is down, or every one in use
                # The connection was lost with the statement out: whether it went through is
                # not known. The general way reads the command's answer first, so it answers
                # either way (a dead connection met at its BEGIN is replaced; a database still
                # away is answered unavailable).
                log.warning("an append lost its connection", game_id=game_id)
            finally:
                self._settle(moved, notice, outcome)
            if outcome == APPENDED:
                return self._appended(at_head, moved)
        result = super().append(
            game_id,
            expected_version,
            events,
            command_id,
            seat,
            recorded_at_ms,
            finished=finished,
            command=command,
            fingerprint=fingerprint,
            next_deadline_ms=next_deadline_ms,
        )
        if result.accepted and not result.duplicate and result.events:
            with self._heads_lock:
                read = self._heads.get(game_id)  # as the general way found it
            if read is not None:
                self._remember(Head(read.game, result.last_version, result.events[-1].hash))
        return result

    def loop_appender(self) -> PostgresLoopAppender:
        return PostgresLoopAppender(self)

    def _at_head(
        self,
        game_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        command_id: str,
        seat: int | None,
        recorded_at_ms: int,
        command: bytes,
    ) -> AtHead | None:
        """The events chained on where this store knows the game ends, if that is
        ``expected_version`` (else the general way: ``None``)."""
        with self._heads_lock:
            head = self._heads.get(game_id)
        if head is None or head.version != expected_version or not events:
            return None
        stored = chained(
            head.game, head.version, head.hash, events, command_id, seat, recorded_at_ms, command
        )
        return AtHead(head, tuple(stored), command_id, recorded_at_ms)

    def _at_once(
        self, at_head: AtHead, moved: Moved, next_deadline_ms: int | None
    ) -> tuple[str, tuple[Any, ...], str]:
        """``croupier_append``'s statement and parameters (one statement in a transaction of
        its own), and the notice it sends."""
        stored = at_head.stored
        notice = self._notice(moved.game_id, moved.to_version)
        params = (
            moved.game_id,
            moved.from_version,
            at_head.head.hash,
            GENESIS_HASH,
            moved.command_id,
            stored[0].seat,
            at_head.recorded_at_ms,
            [e.type for e in stored],
            [e.payload for e in stored],
            [e.command for e in stored],
            [e.prev_hash for e in stored],
            [e.hash for e in stored],
            moved.fingerprint,
            moved.finished,
            None if moved.finished else next_deadline_ms,
            CHANNEL,
            notice,
        )
        return f"SELECT croupier_append({', '.join('%s' for _ in params)})", params, notice

    def _settle(self, moved: Moved, notice: str, outcome: str | None) -> None:
        """After ``croupier_append`` answered ``outcome`` (``None``: no answer). When it did not
        append, the game's end is read anew by the general way; and its notice, if already
        heard and passed over, was not this store's: another replica's append at that version,
        made while this one waited for the row, has the same notice. Told here, or this
        process's streams would wait for the recheck."""
        if outcome == APPENDED:
            return
        with self._heads_lock:
            self._heads.pop(moved.game_id, None)
        if not self._heard_own(notice):
            for listener in self._listeners:
                listener(moved.game_id, moved.to_version)

    def _appended(self, at_head: AtHead, moved: Moved) -> CommandResult:
        """The answer of an append ``croupier_append`` made; the game now ends there."""
        stored = at_head.stored
        self._remember(Head(at_head.head.game, moved.to_version, stored[-1].hash))
        return CommandResult(
            moved.command_id,
            True,
            moved.from_version + 1,
            moved.to_version,
            events=stored,
            fingerprint=moved.fingerprint,
        )

    def _before_append(
        self, cur: Any, game_id: str, command_id: str
    ) -> tuple[GameRecord, str, CommandResult | None]:
        # The row locked first, then read: under READ COMMITTED a statement that waited for the
        # lock sees the locked row anew but the rows it joins as they were when it began, and a
        # retry waiting on its first attempt would miss the attempt's answer.
        self._run(cur, "SELECT 1 FROM games WHERE game_id = ? FOR UPDATE", (game_id,))
        game, prev_hash, earlier = super()._before_append(cur, game_id, command_id)
        self._remember(Head(game, game.version, prev_hash))  # locked: the chain ends there
        return game, prev_hash, earlier

    def _remember(self, head: Head) -> None:
        with self._heads_lock:
            self._heads[head.game.game_id] = head
            self._heads.move_to_end(head.game.game_id)
            if len(self._heads) > HEADS_KEPT:
                self._heads.popitem(last=False)

    @contextmanager
    def _transaction(self, write: bool, game_id: str = "") -> Iterator[Any]:
        # A read takes no row's lock (a table's, an operator's LOCK TABLE, may hold it up).
        with self._waiting_on(game_id if write else ""), self._reachable():
            for last_try in (False, True):
                held = ExitStack()
                # No connection within POOL_WAIT_S: the database is away (answered so at once).
                conn = held.enter_context(self._pool.connection())
                try:
                    held.enter_context(conn.transaction())  # BEGIN: its first round trip
                except psycopg.OperationalError:
                    held.close()  # a broken connection goes back to be dropped
                    if last_try:
                        raise
                    # Dead before anything was done: the database restarted (or dropped idle
                    # connections). The pool's others are looked at now, the dead dropped
                    # and replaced, and the call made again on a new one. (psycopg_pool's own
                    # check on every hand-out costs a round trip, and after a restart it waits
                    # 1, 2, 4 s between the dead ones it meets: a call waited out POOL_WAIT_S.)
                    self._pool.check()
                    continue
                with held, conn.cursor() as cur:
                    yield cur
                return

    def _after_append(self, cursor: Any, game_id: str, version: int) -> None:
        cursor.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self._notice(game_id, version)))

    def _notice(self, game_id: str, version: int) -> str:
        """The notice of an append by this store, remembered so that its listener passes over
        it (the payload stays ``GAME VERSION``, which every replica's listener reads)."""
        notice = f"{game_id} {version}"
        with self._own_lock:
            self._own[notice] = None
            if len(self._own) > OWN_NOTICES_KEPT:
                self._own.popitem(last=False)
        return notice

    def _heard_own(self, notice: str) -> bool:
        with self._own_lock:
            return self._own.pop(notice, False) is None

    def _write_append(
        self,
        cur: Any,
        stored: Sequence[StoredEvent],
        moved: Moved,
        recorded_at_ms: int,
        next_deadline_ms: int | None,
    ) -> None:
        """The append's writes and its NOTIFY in one statement (one round trip, where they were
        four and one per event): data-modifying WITH clauses all run, in one snapshot."""
        parts: list[str] = []
        params: list[Any] = []
        if stored:
            insert, values = events_insert(stored)
            parts.append(f"new_events AS ({insert})")
            params += values
        parts.append(f"command AS ({COMMAND_INSERT})")
        params += moved.command_row()
        parts.append(f"moved AS ({GAME_MOVED} RETURNING 1)")
        params += moved.game_update(recorded_at_ms, next_deadline_ms)
        statement = f"WITH {', '.join(parts)} SELECT (SELECT count(*) FROM moved), pg_notify(?, ?)"
        notice = self._notice(moved.game_id, moved.to_version)
        params += (CHANNEL, notice)
        try:
            (updated, _) = self._run(cur, statement, params).fetchone()
        except psycopg.Error:
            # Not sent. (Should the commit fail after it, the notice stays remembered until it
            # is forgotten; another replica's append at that version is then found by the
            # streams' recheck instead.)
            self._heard_own(notice)
            raise
        if updated != 1:  # pragma: no cover - the lock and the keys make this unreachable
            current = self._game(cur, moved.game_id).version
            raise VersionConflict(moved.game_id, moved.from_version, current)

    def listen(self, listener: AppendListener) -> None:
        """One LISTEN connection per process, fanned out to every listener (the application's
        notifier wakes the streams of the game named)."""
        if listener not in self._listeners:
            self._listeners.append(listener)
        if self._listener is None:
            self._listener = threading.Thread(target=self._listen, name="pg-listen", daemon=True)
            self._listener.start()

    def wait_listening(self, timeout: float) -> bool:
        return self._listening.wait(timeout)

    def listen_on_loop(self, listener: AppendListener) -> PostgresLoopListener:
        if listener not in self._listeners:  # once, however many times the application starts
            self._listeners.append(listener)
        return PostgresLoopListener(self)

    def _listen(self) -> None:
        while not self._closed.is_set():
            connected = False
            try:
                with psycopg.connect(self.conninfo, autocommit=True) as conn:
                    connected = True
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    self._connected()
                    while not self._closed.is_set():
                        for note in conn.notifies(timeout=1.0):
                            if (heard := self._heard(note.payload)) is not None:
                                for listener in self._listeners:
                                    listener(*heard)
            except psycopg.Error as error:
                self._listening.clear()
                if not connected:  # a connection lost says nothing of why none is made now
                    self._cannot_connect(error)
                self._closed.wait(1.0)

    def _heard(self, notice: str) -> tuple[str, int] | None:
        """The game and version a notice tells of; ``None`` for this process's own appends: it
        told of them as it appended, and heard from the listener one may come before the
        append's answer reaches the event loop, when the streams would read the store for what
        it holds."""
        if self._heard_own(notice):
            return None
        game_id, _, version = notice.partition(" ")
        try:
            return game_id, int(version or 0)
        except ValueError:  # not a notice of ours (someone's NOTIFY on the channel): passed over
            log.warning("a notice on the appends' channel that is not an append's", notice=notice)
            return None

    def pool_stats(self) -> PoolStats:
        stats = self._pool.get_stats()
        return PoolStats(
            open=stats.get("pool_size", 0),
            idle=stats.get("pool_available", 0),
            max=stats.get("pool_max", 0),
            waiting=stats.get("requests_waiting", 0),
        )

    def close(self) -> None:
        self._closed.set()
        self._pool.close()


class PostgresLoopAppender(LoopAppender):
    """The store's appends at a known end of the chain, made on the event loop over psycopg's
    non-blocking connections: the loop sends the statement and goes on until the answer comes,
    with no thread between: a thread's hand-offs, and its turns at the interpreter lock against
    the loop's, cost the core 0.06–0.09 ms of CPU per move (16 games in flight, in one process
    without gRPC)."""

    def __init__(self, store: PostgresEventStore) -> None:
        self._store = store
        # Each append has a connection to itself while its statement is out: one that waits
        # (for a game's row, held by another replica's transaction; on a network that dropped it)
        # holds up no other game's. Made on the loop as appends need them, up to the most; idle
        # ones wait here, a broken one is dropped. (psycopg_pool's async pool does this too, at
        # about 0.05 ms of CPU per append, half of what the loop saves.)
        self._idle: list[psycopg.AsyncConnection[Any]] = []
        # Room for a connection each: taken before one is had, given back with it, whether it
        # goes back idle or is dropped (so an append waiting for room goes on as soon as there is).
        self._room = asyncio.Semaphore(LOOP_CONNECTIONS)
        # After the database refused a new connection (its limit reached, or it is down), none is
        # tried again before this: meanwhile, with none idle, the store's threads append.
        self._connect_again_at = 0.0
        self._closed = False

    async def _take(self) -> psycopg.AsyncConnection[Any] | None:
        """A connection of the append's own, or ``None``: none to be had now."""
        await self._room.acquire()
        try:
            while self._idle:
                conn = self._idle.pop()
                if not conn.broken and not conn.closed:
                    return conn
                await conn.close()  # broken while idle (the database restarted): made anew
            if time.monotonic() >= self._connect_again_at:
                try:
                    # Only ever one statement, its own transaction: no BEGIN, no COMMIT.
                    conn = await psycopg.AsyncConnection.connect(
                        self._store.conninfo, autocommit=True
                    )
                    try:
                        if (settings := self._store.session_settings) is not None:
                            await conn.execute(*settings)
                    except BaseException:
                        await conn.close()
                        raise
                    # The database takes connections again: what it said to a refused one is
                    # no longer why a call finds none (a pool taken up by load would be logged
                    # with a refusal of hours before, while the listener, connected all along,
                    # never clears it).
                    self._store._connected()
                    return conn
                except psycopg.OperationalError as error:
                    self._connect_again_at = time.monotonic() + CONNECT_AGAIN_S
                    self._store._cannot_connect(error)
                    log.warning(
                        "appends on the event loop could not connect: the store's threads "
                        "make them for a while",
                        error=str(error).strip(),
                        again_in_s=CONNECT_AGAIN_S,
                    )
        except BaseException:
            self._room.release()
            raise
        self._room.release()
        return None

    async def _give_back(self, conn: psycopg.AsyncConnection[Any]) -> None:
        try:
            if conn.broken or conn.closed or self._closed:
                await conn.close()
            else:
                self._idle.append(conn)
        finally:
            self._room.release()

    async def append(
        self,
        game_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        command_id: str,
        seat: int | None,
        recorded_at_ms: int,
        *,
        finished: bool,
        command: bytes,
        fingerprint: bytes,
        next_deadline_ms: int | None,
    ) -> CommandResult | None:
        store = self._store
        at_head = store._at_head(
            game_id, expected_version, events, command_id, seat, recorded_at_ms, command
        )
        if at_head is None:
            return None
        moved = at_head.moved(fingerprint, finished)
        statement, params, notice = store._at_once(at_head, moved, next_deadline_ms)
        outcome = None
        try:
            conn = await self._take()
            if conn is None:
                return None  # nothing sent: the store's own append makes it
            try:
                # Its row held past the lock timeout: GameLocked, nothing written (one
                # statement), told at once (the store's own append would wait it out again).
                with store._waiting_on(game_id):
                    row = await (await conn.execute(statement, params)).fetchone()
            finally:
                await self._give_back(conn)
            outcome = row[0] if row else None
        except psycopg.OperationalError:
            # The connection broke (the database restarted, the network dropped it): whether the
            # statement went through is not known. The store's own append reads the command's
            # result first, so it answers either way; the next append here connects anew.
            log.warning("an append on the event loop lost its connection", game_id=game_id)
            return None
        finally:
            store._settle(moved, notice, outcome)
        return store._appended(at_head, moved) if outcome == APPENDED else None

    async def close(self) -> None:
        self._closed = True  # those still out are closed as they come back
        while self._idle:
            await self._idle.pop().close()


class PostgresLoopListener(LoopListener):
    """The store's LISTEN on the event loop, over psycopg's non-blocking connection: each of the
    process's own appends is also heard (and passed over), and on a thread each one woke it and
    took a turn at the interpreter lock from the loop."""

    def __init__(self, store: PostgresEventStore) -> None:
        self._store = store

    async def run(self, listener: AppendListener) -> None:
        store = self._store
        try:
            while True:
                conn = None
                try:
                    conn = await psycopg.AsyncConnection.connect(store.conninfo, autocommit=True)
                    async with conn:
                        await conn.execute(f"LISTEN {CHANNEL}")
                        store._listening.set()
                        store._connected()
                        async for note in conn.notifies():
                            if (heard := store._heard(note.payload)) is not None:
                                listener(*heard)
                except psycopg.Error as error:
                    store._listening.clear()
                    if conn is None:  # a connection lost says nothing of why none is made now
                        store._cannot_connect(error)
                    log.warning(
                        "listening for other processes' appends: connection lost, again soon",
                        error=str(error).strip(),
                        again_in_s=LISTEN_RETRY_S,
                    )
                    await asyncio.sleep(LISTEN_RETRY_S)
        finally:
            store._listening.clear()


def _yoyo_url(url: str) -> str:
    _, rest = url.split("://", 1)
    return f"postgresql+psycopg://{rest}"
