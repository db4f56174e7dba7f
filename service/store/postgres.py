"""PostgreSQL for several replicas: psycopg 3 with a pool; LISTEN/NOTIFY wakes every replica's
streams."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from croupier.log import StoredEvent, VersionConflict
from croupier.log.store import AppendListener
from croupier.service.store import CONNECT_TIMEOUT_S
from croupier.service.store.sql import (
    COMMAND_INSERT,
    GAME_MOVED,
    Moved,
    SqlEventStore,
    apply_migrations,
    events_insert,
)

CHANNEL = "croupier_events"
#: Notices of a store's own appends kept until its listener hears them.
OWN_NOTICES_KEPT = 10_000
#: The advisory lock held while migrating (any 64-bit number no other code of ours uses).
MIGRATION_LOCK = 0x63726F7570696572  # "croupier"
#: How long a start waits for another replica's migration before it fails with that reason.
MIGRATION_WAIT = "60s"


@contextmanager
def migration_lock(url: str) -> Iterator[None]:
    """PostgreSQL's session advisory lock on a connection of its own while the schema is
    migrated: the server releases it when that connection ends, a killed process's included."""
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        conn.execute(f"SET lock_timeout = '{MIGRATION_WAIT}'")
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


class PostgresEventStore(SqlEventStore):
    marker = "%s"
    lock_clause = " FOR UPDATE"
    lock_game_clause = " FOR UPDATE OF g"
    skip_locked_clause = " FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self.migrations_applied = apply_migrations(
            _yoyo_url(url), "postgresql", migration_lock(url)
        )
        self._pool = ConnectionPool(
            url, min_size=min_size, max_size=max_size, open=True, kwargs={"autocommit": False}
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

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

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
        self._listeners.append(listener)
        if self._listener is None:
            self._listener = threading.Thread(target=self._listen, name="pg-listen", daemon=True)
            self._listener.start()

    def wait_listening(self, timeout: float) -> bool:
        return self._listening.wait(timeout)

    def _listen(self) -> None:
        while not self._closed.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    while not self._closed.is_set():
                        for note in conn.notifies(timeout=1.0):
                            if self._heard_own(note.payload):
                                # This process told of it as it appended; heard from here it
                                # may come before the append's answer reaches the event loop,
                                # and the streams would read the store for what it holds.
                                continue
                            game_id, _, version = note.payload.partition(" ")
                            for listener in self._listeners:
                                listener(game_id, int(version or 0))
            except psycopg.Error:
                self._listening.clear()
                self._closed.wait(1.0)

    def close(self) -> None:
        self._closed.set()
        self._pool.close()


def _yoyo_url(url: str) -> str:
    _, rest = url.split("://", 1)
    return f"postgresql+psycopg://{rest}"
