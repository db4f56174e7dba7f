"""The embedded default: SQLite in WAL mode; appends take the write lock up front
(BEGIN IMMEDIATE).

A write in WAL mode with ``synchronous=NORMAL`` only appends pages to the WAL file, about 0.1 ms
of work: less than handing it to a thread costs. So the application makes its calls on its event
loop through :meth:`without_waiting`, a view of the store with no busy timeout: a call that meets
another writer's lock raises :class:`StoreBusy` having done nothing, and the application tries it
again soon (``app/runner.py``).

The disk is flushed only at checkpoints, which copy the WAL into the database file. SQLite makes
one after the commit that takes the WAL past 1,000 pages, on the connection that commits: on the
loop's, every few hundred appends, and their fsyncs froze the whole loop (every game, stream and
health check on it) for 2–100 ms, and for 0.5–1.5 s when the disk was busy. So a thread of the
store's makes them, every quarter second (:data:`CHECKPOINT_S`): first without stopping anyone
(PASSIVE: it copies what is there while the loop writes on), then, once the WAL is past
:data:`RESTART_PAGES`, once more with new writes held back (RESTART: the pages written meanwhile,
and the flushes; at 16 games in flight, about once a second, 12 ms at the median, up to 27 ms). Only the second lets the WAL start over: a checkpoint that the loop writes past
leaves it growing (PASSIVE alone grew it by 250 MB a second). While it waits for the write lock,
this process's loop starts no write (its appends meet :class:`HeldBack` and are tried again
every half millisecond, the loop going on with everything else), so that it gets the lock at
once even from a loop that writes without a pause.

A reader that holds an old snapshot (a long read transaction: a backup, a shell left in a
transaction) keeps any checkpoint from copying past it, and the WAL grows until it ends. The
RESTART waits for it only :data:`RESTART_WAIT_MS`, holding every write back meanwhile, and after
each such miss it is tried less often (up to :data:`MAX_RESTART_SKIPS` turns apart). The loop's
own connection never checkpoints: when a long reader let go of a 350 MB WAL, its first commit
copied and flushed all of it, 300 ms on the loop.

Durability is SQLite's with ``synchronous=NORMAL``: a commit is written to the WAL but not
flushed, and the checkpoint flushes it. A crash of the process loses nothing; a power loss or a
crash of the machine can lose the appends of the last quarter second or so (while a long reader
holds an old snapshot, of its whole length: nothing after it can be copied).

The file deleted (or its folder), or another put in its place, while the server runs: the
connections open go on reading and writing the file they opened, which nobody will find again,
and the next start would begin empty. So the store looks at its path every turn of the
checkpointer (and the writes at least every :data:`LOOK_S`): once the path no longer names the
file it opened (:class:`_Watch`), every later call is answered :class:`StoreUnavailable`,
nothing more is written, and an error says what to do. The file is not opened again: the
operator decides (the lost file, still open, can be copied from ``/proc/PID/fd/N`` until the
server stops).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import structlog

from croupier.log import HeldBack, StoreBusy, StoreUnavailable
from croupier.log.store import AppendListener, AppendPoll
from croupier.service.config import DEV_CREDENTIAL_NAME
from croupier.service.store import MIGRATION_WAIT_S, MigrationLockBusy, SchemaNotCurrent
from croupier.service.store.sql import (
    APPLIED_MIGRATIONS,
    APPLIED_MIGRATIONS_TABLE,
    SqlEventStore,
    apply_migrations,
    reachable,
    require_current,
)

log = structlog.get_logger("croupier.store")

# How often the listener looks whether another connection committed (PRAGMA data_version: no I/O).
POLL_S = 0.01
# How long a write waits for another writer's lock (ours: the writer thread; other processes).
# (5 s: a write of another worker holds it ~0.1 ms; past 5 s on top of the loop's own 5 s of
# tries, the store is answered unavailable. At 30 s, each write queued behind the writer thread
# waited its own 30 s: the third was answered after 65 s, and games under load stalled.)
BUSY_TIMEOUT_MS = 5_000
# How long close() waits for the statements under way before it leaves their connections open.
CLOSE_WAIT_S = 5.0
# How often the checkpointer copies the WAL into the database file (see the module's docstring).
CHECKPOINT_S = 0.25
# The WAL's size (pages of 4 KB) past which the checkpointer lets it start over (RESTART), each
# time holding the process's writes back for some ms: past 1,000, four times as many holds put
# 6-7 ms on the commands' p99 at 16 games in flight; past 4,000, none (and less CPU per move).
RESTART_PAGES = 4_000
# How often a checkpoint failure that lasts (a full disk) is logged again.
SAID_AGAIN_S = 60.0
# How long that checkpoint waits for the write under way and the readers on older snapshots
# (new writes wait meanwhile); past it, it is left to a later turn.
RESTART_WAIT_MS = 20
# The most turns left out after such a wait failed: while a long reader lasts, the writes are
# held back 20 ms (and the copy's time) every 17 turns, about 4 s, at most.
MAX_RESTART_SKIPS = 16
# The loop's connection makes no checkpoint: SQLite's own, after a commit past its threshold,
# would copy and flush the whole WAL on the loop (300 ms once a long reader let go of 350 MB).
LOOP_AUTOCHECKPOINT = "wal_autocheckpoint=0"
# How long a write may go without looking whether the path still names the store's file (the
# checkpointer looks every turn; this is for a store without one, and a checkpointer held up).
LOOK_S = 0.25


def _connect(path: Path, timeout_s: float) -> sqlite3.Connection:
    """A connection to the file in autocommit mode (BEGIN is ours to issue), which waits up to
    ``timeout_s`` for a lock; closed by whichever thread (close() closes them all). The file must
    exist (``mode=rw``): a connection opened after it was deleted fails, rather than make an
    empty database in its place."""
    uri = f"{Path(path).absolute().as_uri()}?mode=rw"
    return sqlite3.connect(
        uri, timeout=timeout_s, isolation_level=None, check_same_thread=False, uri=True
    )


def _traces(path: Path) -> list[str]:
    """What a store at ``path`` leaves beside it (its WAL, its lock of migrations, the development
    credential a server writes beside it), of the files there."""
    names = [f"{path.name}-wal", f"{path.name}-shm", f"{path.name}.migrate.lock"]
    found = [name for name in names if (path.parent / name).exists()]
    if path.parent.is_dir() and not _other_stores(path):
        found += sorted(
            child.name for child in path.parent.glob(f"{DEV_CREDENTIAL_NAME}*") if child.is_file()
        )
    return found


def _other_stores(path: Path) -> list[Path]:
    """The other stores of ``path``'s folder (a database file with its lock of migrations): a
    development credential there may be theirs (one a folder), no trace of a store at ``path``."""
    return [
        lock.with_name(lock.name.removesuffix(".migrate.lock"))
        for lock in path.parent.glob("*.migrate.lock")
        if lock.name != f"{path.name}.migrate.lock"
        and lock.with_name(lock.name.removesuffix(".migrate.lock")).is_file()
    ]


class _Watch:
    """Whether the path still names the database file the store opened (its device and inode,
    taken as it was opened: ``os.fstat`` is out of reach through the sqlite3 module). Once it
    does not, the store is lost for good: every call is refused, and an error logged once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        found = os.stat(path)
        self._identity = (found.st_dev, found.st_ino)
        #: Why the store is lost (the answer's message), once found; ``None`` while it is not.
        self.lost: str | None = None
        self._next_look = time.monotonic() + LOOK_S
        self._lock = threading.Lock()

    def check(self) -> None:
        """Before a call: refused once the store is lost; looked at again every :data:`LOOK_S`
        (a clock read otherwise: the hot path)."""
        if self.lost is None and time.monotonic() >= self._next_look:
            self.look()
        if self.lost is not None:
            raise StoreUnavailable(self.lost)

    def look(self) -> bool:
        """Look at the path now: whether the store is lost (found now or before)."""
        self._next_look = time.monotonic() + LOOK_S
        if self.lost is not None:
            return True
        try:
            found = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            what = "deleted"
        except OSError:  # (no permission to look, say): nothing known, the next look will tell
            return False
        else:
            if (found.st_dev, found.st_ino) == self._identity:
                return False
            what = "replaced by another file"
        with self._lock:
            if self.lost is None:
                self.lost = (
                    f"the store's database file was {what} while the server ran: nothing is "
                    "written any more (see the server's log)"
                )
                self._say(what)
        return True

    def _say(self, what: str) -> None:
        """The one error that tells the operator (``docs/operations.md``, "When the database
        goes away")."""
        open_as = self._open_as()
        copy = f"cp {open_as} RESCUED.sqlite3" if open_as else "cp /proc/PID/fd/N RESCUED.sqlite3"
        log.error(
            f"the store's database file was {what} while the server ran: every call is refused"
            " (STORE_UNAVAILABLE) and nothing more is written; restarting as it is would start"
            " with an empty store",
            path=str(self.path),
            open_as=open_as,
            what_to_do=(
                "Before stopping the server, copy the file it still has open (every write it"
                " acknowledged is there, the WAL copied in within a quarter second of this line;"
                f" once the server stops, it is gone for good): `{copy}`, as the server's user"
                " or root. Then stop the server, put the copy at the path (no -wal or -shm"
                " file beside it) and start it again; or restore the last backup"
                " (docs/operations.md, Backups)."
            ),
        )

    def _open_as(self) -> str | None:
        """Where this process's open descriptor of the lost file is, ``/proc/PID/fd/N`` (Linux);
        ``None`` where that cannot be told."""
        pid = os.getpid()
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            return None
        for fd in sorted(fds, key=lambda name: int(name) if name.isdigit() else -1):
            try:
                found = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if (found.st_dev, found.st_ino) == self._identity:
                return f"/proc/{pid}/fd/{fd}"
        return None


#: How often a start waiting for another process's migration tries the lock again.
MIGRATION_LOCK_POLL_S = 0.05


@contextmanager
def migration_lock(path: Path) -> Iterator[None]:
    """An exclusive lock of ``PATH.migrate.lock`` (flock) while the schema is migrated: the
    operating system drops it when its process dies, so a kill during start-up leaves nothing
    behind. :class:`MigrationLockBusy` when another process holds it for more than
    :data:`MIGRATION_WAIT_S`: a blocking flock would wait for ever, and the start with it,
    saying nothing."""
    wait_s = MIGRATION_WAIT_S
    lock_path = f"{path}.migrate.lock"
    with open(lock_path, "a+b") as held:
        give_up_at = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= give_up_at:
                    raise MigrationLockBusy(
                        f"another process has held {lock_path} for over {wait_s:g} s (a "
                        "`croupier serve` or `croupier migrate` of this file still migrating "
                        f"it): find it with `fuser -v {lock_path}`, and start again once it is "
                        "done"
                    ) from None
                time.sleep(MIGRATION_LOCK_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


#: Permissions of a store file this process makes: its owner's only. The ``games`` table holds the
#: server seed of every game in play, from which anyone derives every hand and the stock, so
#: another user of the machine must not read it (SQLite gives its ``-wal`` and ``-shm`` files the
#: database file's permissions).
STORE_FILE_MODE = 0o600


def _private(path: Path) -> None:
    """Make the store's file, when there is none, readable by its owner only; say so when an
    existing one is readable by every user of the machine (its permissions are the operator's:
    a backup user's group may read it)."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, STORE_FILE_MODE))
        return  # an empty file is an empty SQLite database
    except FileExistsError:
        pass
    if path.stat().st_mode & stat.S_IROTH:
        log.warning(
            "the store's database file is readable by every user of this machine, and it holds "
            "the server seeds of the games in play (every hand, the stock): chmod o-r it, and "
            "its -wal and -shm files",
            path=str(path),
        )


class SqliteEventStore(SqlEventStore):
    marker = "?"
    # One write lock for the whole file: writers queue on it, so the application sends them
    # through one writer instead.
    single_writer = True

    def __init__(self, path: str | Path, migrate: bool = True) -> None:
        """``migrate``: bring the schema up to date (a server's start); otherwise (a tool that
        only reads the store) refuse, with :class:`SchemaNotCurrent`, a file that is not a store
        of this release's schema, and leave it as it is."""
        self.path = Path(path)
        if not migrate:
            self._check_current()
        elif not self.path.exists():
            # A first run makes its store (and folder). Traces of an earlier store without its
            # file: it was deleted (or moved), and this one starts empty.
            traces = _traces(self.path)
            if traces:
                log.warning(
                    "the store's database file is missing although a store was here before: "
                    "starting with a new, empty store (restore the last backup to get the "
                    "games back: docs/operations.md, Backups)",
                    path=str(self.path),
                    found_beside=traces,
                )
        self.url = f"sqlite:///{self.path}"
        if migrate:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _private(self.path)
            self.migrations_applied = apply_migrations(
                self.url, "sqlite", migration_lock(self.path)
            )
        # The file as the migrations left it: each connection opened from now on must open it.
        self._watch = _Watch(self.path)
        self._open()
        if migrate:  # a reading tool leaves a copy's journal as it found it
            with self._connection() as conn:
                conn.execute("PRAGMA journal_mode=WAL")

    def _check_current(self) -> None:
        # Read only (mode=ro): no file made where there was none, no journal changed.
        try:
            with contextlib.closing(
                sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=ro", uri=True)
            ) as conn:
                has_table = conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                    (APPLIED_MIGRATIONS_TABLE,),
                ).fetchone()
                recorded = [row[0] for row in conn.execute(APPLIED_MIGRATIONS)] if has_table else []
        except sqlite3.OperationalError:
            # Not the file's fault (none there, a folder it cannot read, a writer's lock held
            # past the wait): open_store says it cannot open it, as for a server.
            raise
        except sqlite3.DatabaseError as error:  # the bytes are not an SQLite database
            raise SchemaNotCurrent(f"{self.path} is not an SQLite store: {error}") from None
        require_current(str(self.path), recorded, "sqlite")

    def _open(self) -> None:
        """No connection yet (one per thread, when first used), no listener, no view."""
        self._local = threading.local()
        # Each connection with the lock its thread holds while it uses it: close() takes each
        # lock before it closes the connection. (The sqlite3 module crashes the process when a
        # connection is closed under another thread's statement.)
        self._connections: list[tuple[sqlite3.Connection, threading.Lock]] = []
        self._lock = threading.Lock()
        self._listeners: list[AppendListener] = []
        self._poller: threading.Thread | None = None
        self._closed = threading.Event()
        self._listening = threading.Event()
        self._at_once: _AtOnce | None = None
        self._checkpointer: threading.Thread | None = None
        self._checkpointing = threading.Event()  # set once the checkpointer has its connection
        # Set while the checkpointer lets the WAL start over: the loop's view starts no write
        # (its appends meet HeldBack and are tried again soon).
        self._holding_back = threading.Event()

    #: PRAGMAs of every connection this store opens (each waits up to BUSY_TIMEOUT_MS for a
    #: lock, as it is connected).
    _pragmas: tuple[str, ...] = (
        "synchronous=NORMAL",
        "foreign_keys=ON",
    )

    def _held(self) -> tuple[sqlite3.Connection, threading.Lock]:
        """This thread's connection (opened when first used) and the lock it holds while it uses
        it; once the store is closed, an error."""
        local = self._local
        conn: sqlite3.Connection | None = getattr(local, "conn", None)
        if conn is None:
            conn = self._connect_watched(BUSY_TIMEOUT_MS / 1000)  # one connection per thread
            for pragma in self._pragmas:
                conn.execute(f"PRAGMA {pragma}")
            in_use = threading.Lock()
            with self._lock:
                if self._closed.is_set():
                    conn.close()
                    raise sqlite3.ProgrammingError("the store is closed")
                self._connections.append((conn, in_use))
            local.conn, local.in_use = conn, in_use
        return conn, local.in_use

    def _connect_watched(self, timeout_s: float) -> sqlite3.Connection:
        """A new connection to the store's file: refused once it is lost, and if the path names
        another file by now (or none: ``mode=rw``), it is found lost (:class:`_Watch`)."""
        self._watch.check()
        try:
            conn = _connect(self.path, timeout_s)
        except sqlite3.OperationalError:
            if self._watch.look():
                raise StoreUnavailable(self._watch.lost or "") from None
            raise
        if self._watch.look():
            conn.close()
            raise StoreUnavailable(self._watch.lost or "")
        return conn

    @property
    def lost(self) -> bool:
        """Whether the store's file was found deleted or replaced (:class:`_Watch`)."""
        return self._watch.lost is not None

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, held until the block ends: the store is not closed under it
        meanwhile (closed while this thread waited, the sqlite3 module's own error follows)."""
        conn, in_use = self._held()
        with in_use:
            if self._closed.is_set():
                raise sqlite3.ProgrammingError("the store is closed")
            yield conn

    def without_waiting(self) -> SqliteEventStore:
        with self._lock:
            if self._at_once is None:
                self._at_once = _AtOnce(self)
                # The loop's view leaves checkpoints to this thread.
                self._checkpointer = threading.Thread(
                    target=self._checkpoint, name="sqlite-checkpoint", daemon=True
                )
                self._checkpointer.start()
                # Its connection opened first, while the file is surely there (see _checkpoint).
                self._checkpointing.wait(CLOSE_WAIT_S)
            return self._at_once

    def _checkpoint(self) -> None:
        """Copy the WAL into the database file every :data:`CHECKPOINT_S`, off the loop, and let
        it start over once it is large (see the module's docstring). A turn that fails is logged
        and the next one tried: the loop's connection makes no checkpoint in its stead."""
        conn: sqlite3.Connection | None = None
        skip = misses = 0
        restarted = -1  # the WAL's pages as the last RESTART left them: nothing written since
        said, said_at = "", 0.0  # the last failure logged, and when
        try:
            # Opened and read at once: a connection opened, or first read, once the file is
            # deleted does not reach it (SQLITE_IOERR_FSTAT), and the lost file is checkpointed.
            with contextlib.suppress(sqlite3.Error, StoreUnavailable):
                conn = self._connect_watched(RESTART_WAIT_MS / 1000)
                conn.execute("PRAGMA schema_version").fetchone()
            self._checkpointing.set()
            while not self._closed.wait(CHECKPOINT_S):
                try:
                    # Lost, the file open is still checkpointed: with nothing written any more,
                    # the WAL is all copied into it (the file to rescue from /proc).
                    lost = self._watch.look()
                    if conn is None:
                        if lost:
                            continue
                        conn = self._connect_watched(RESTART_WAIT_MS / 1000)
                    pages = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
                    # The WAL starts over at the next write after a RESTART: until then it still
                    # counts its pages, all copied (an idle server would RESTART every turn).
                    if pages < RESTART_PAGES or pages == restarted:
                        continue
                    if skip:  # a reader held an old snapshot lately
                        skip -= 1
                        continue
                    self._holding_back.set()  # this process's loop starts no write meanwhile
                    try:
                        busy, left, _ = conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
                    finally:
                        self._holding_back.clear()
                    restarted = -1 if busy else left
                    # A reader still on an old snapshot after the wait: tried again less and
                    # less often while it lasts, since each try holds the writes back.
                    misses = misses + 1 if busy else 0
                    skip = min(2**misses - 1, MAX_RESTART_SKIPS)
                except StoreUnavailable:  # lost as it connected: said once, by _Watch
                    continue
                except sqlite3.Error as error:
                    # Busy: another worker checkpoints; the next turn will. Else said once, and
                    # again every SAID_AGAIN_S while it lasts (a full disk failed every turn:
                    # four lines a second).
                    now = time.monotonic()
                    if not _busy(error) and (str(error) != said or now >= said_at + SAID_AGAIN_S):
                        said, said_at = str(error), now
                        log.warning("checkpoint failed", error=said)
                except Exception:  # a bug: said, and the next turn tried all the same
                    log.exception("checkpoint failed")
        finally:
            if conn is not None:
                conn.close()

    #: Whether a call that meets another writer's lock answers :class:`StoreBusy` at once (the
    #: loop's view) rather than wait for it (up to ``BUSY_TIMEOUT_MS``).
    _answers_busy = False

    @contextmanager
    def _transaction(self, write: bool, game_id: str = "") -> Iterator[Any]:
        # (game_id unused: SQLite's write lock is the whole file's, one not had in time is the
        # store's unavailability, not one game's)
        conn, in_use = self._held()
        # (in_use: the store is not closed under it, as _connection(), inlined: hot path)
        with in_use, _reachable():
            if self._closed.is_set():  # its connection may have been left open (close())
                raise sqlite3.ProgrammingError("the store is closed")
            watch = self._watch
            watch.check()  # the file deleted or replaced: refused (reads too: see _Watch)
            if write and self._answers_busy and self._holding_back.is_set():
                raise HeldBack("a checkpoint is letting the WAL start over")
            cur = conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.OperationalError as error:
                cur.close()
                if self._answers_busy and _busy(error):
                    raise StoreBusy(str(error)) from None
                raise
            try:
                yield cur
            except sqlite3.OperationalError as error:
                cur.execute("ROLLBACK")
                # A read takes its lock at its first statement: busy there, it has done
                # nothing. A write holds the lock from BEGIN IMMEDIATE on: busy past it, the
                # database fails.
                if self._answers_busy and not write and _busy(error):
                    raise StoreBusy(str(error)) from None
                raise
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                if write and watch.lost is not None:  # found lost meanwhile: not acknowledged
                    cur.execute("ROLLBACK")
                    raise StoreUnavailable(watch.lost)
                cur.execute("COMMIT")
            finally:
                cur.close()

    def listen(self, listener: AppendListener) -> None:
        """Hear appends by other processes on the same file (``serve --workers``) and by this
        one's other connections: a poller looks at ``PRAGMA data_version`` every few ms and, when
        another connection committed, reads which games grew (by the events' rowids)."""
        self._listeners.append(listener)
        if self._poller is None:
            self._poller = threading.Thread(target=self._poll, name="sqlite-listen", daemon=True)
            self._poller.start()

    def _poll(self) -> None:
        conn = _connect(self.path, 30)
        try:
            changes = _Changes(conn)
            self._listening.set()
            while not self._closed.wait(POLL_S):
                for game_id, version in changes.since():
                    for listener in self._listeners:
                        listener(game_id, version)
        finally:
            conn.close()

    def wait_listening(self, timeout: float) -> bool:
        return self._listening.wait(timeout)

    def close(self) -> None:
        self._closed.set()
        if self._at_once is not None:
            self._at_once.close()
        for thread in (self._poller, self._checkpointer):
            if thread is not None:
                thread.join(timeout=5)
        with self._lock:
            connections, self._connections = self._connections, []
        deadline = time.monotonic() + CLOSE_WAIT_S
        for conn, in_use in connections:
            # A statement under way ends first; one still running past the deadline keeps its
            # connection (left open: closing it under the statement would crash the process).
            if not in_use.acquire(timeout=max(0.0, deadline - time.monotonic())):
                continue
            try:
                conn.close()
            finally:
                in_use.release()


class _Changes:
    """What other connections appended to the file, by its change counter (``PRAGMA
    data_version``, which moves when another connection commits) and the events' rowids."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        # The counter first: a commit between the two is before the rowid mark, not after it.
        self._seen = self._data_version()
        self._last = self._newest_rowid()

    def _newest_rowid(self) -> int:
        return int(self._conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM events").fetchone()[0])

    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def since(self, own_too: bool = True) -> list[tuple[str, int]]:
        """The games that grew since the last look, each with its newest version. With
        ``own_too`` off, the connection's own commits move the rowid on (they do not move its
        change counter): what it appended itself is not told."""
        # Read before the counter: a commit by another between the two moves the counter, and
        # the next look reads from the rowid before it.
        newest_rowid = None if own_too else self._newest_rowid()
        version = self._data_version()
        if version == self._seen:
            if newest_rowid is not None:
                self._last = newest_rowid
            return []
        rows = self._conn.execute(
            "SELECT rowid, game_id, version FROM events WHERE rowid > ? ORDER BY rowid",
            (self._last,),
        ).fetchall()
        self._seen = version  # only once read: a look that fails is made again in full
        newest: dict[str, int] = {}
        for rowid, game_id, event_version in rows:
            newest[game_id] = max(event_version, newest.get(game_id, 0))
            self._last = rowid
        return list(newest.items())


def _busy(error: sqlite3.Error) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED, whatever the extended code (BUSY_RECOVERY, BUSY_SNAPSHOT…);
    not an error of the sqlite3 module's own, which has no code."""
    return _primary_code(error) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _primary_code(error: sqlite3.Error) -> int:
    """The error's primary result code (the extended code's low byte); 0 for the sqlite3
    module's own errors, which have none."""
    return (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF


#: The database's failures that are not the call's nor a bug's: its lock not had in the time a
#: call may wait, the disk full or failing, the file gone. The call is answered that the store is
#: unavailable, to be tried again.
UNAVAILABLE_CODES = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_CANTOPEN,
    }
)


def _away(error: sqlite3.OperationalError) -> bool:
    """Whether ``error`` is one of :data:`UNAVAILABLE_CODES` (whatever the extended code)."""
    return _primary_code(error) in UNAVAILABLE_CODES


def _reachable() -> AbstractContextManager[None]:
    """The database's failures of :data:`UNAVAILABLE_CODES` as :class:`StoreUnavailable`."""
    return reachable(sqlite3.OperationalError, _away)


class _AtOnce(SqliteEventStore):
    """The store for the event loop (see the module's docstring): its own connection per thread,
    with no busy timeout; a call that meets another writer's lock raises :class:`StoreBusy`
    before it has done anything."""

    _pragmas = (
        "busy_timeout=0",
        "synchronous=NORMAL",
        "foreign_keys=ON",
        LOOP_AUTOCHECKPOINT,
    )
    _answers_busy = True

    def __init__(self, store: SqliteEventStore) -> None:
        # Not SqliteEventStore.__init__: the schema is migrated and the file is in WAL mode.
        self.path, self.url = store.path, store.url
        self._store = store
        self._watch = store._watch
        self._open()
        self._holding_back = store._holding_back

    def without_waiting(self) -> SqliteEventStore:
        return self

    def append_poll(self) -> AppendPoll:
        """On the loop's own connection: its change counter moves only when another connection
        commits (another worker, or this process's writer thread after a busy call), so a look
        is two small reads (the counter, the newest rowid), and the loop's own appends (already
        told) are not read again. A listener thread took the interpreter lock a hundred times a
        second and heard every one of them: about a tenth of the server's CPU."""
        with self._connection() as conn:
            changes = _Changes(conn)
        self._store._listening.set()

        def poll() -> list[tuple[str, int]]:
            try:
                with self._connection():  # the loop's, which ``changes`` reads
                    return changes.since(own_too=False)
            except sqlite3.OperationalError as error:
                if _busy(error):
                    return []  # another writer is checkpointing: the next look will tell
                raise

        return AppendPoll(poll, POLL_S)
