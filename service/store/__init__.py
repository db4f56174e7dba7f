"""Event stores: :func:`open_store` picks the implementation from a URL."""

from __future__ import annotations

from urllib.parse import unquote_plus

from croupier.log import EventStore

# Where the store is configured, for the messages that ask to fix it.
WHERE = "--store or CROUPIER_STORE"
# A PostgreSQL that does not answer fails the start after this long (the server's default is to
# wait for as long as the network does).
CONNECT_TIMEOUT_S = 10
# How long a start (or `croupier migrate`) waits for another process migrating the same store
# (a replica starting at the same time) before it fails, saying so: a migration takes seconds.
MIGRATION_WAIT_S = 60.0


class StoreOpenError(ValueError):
    """The store cannot be opened; the message says what is wrong and how to fix it, in a line."""


class SchemaNotCurrent(StoreOpenError):
    """A tool that only reads a store was given one whose schema is not this release's (or no
    store at all): it does not migrate it (servers of the older release may still use it)."""


class MigrationLockBusy(StoreOpenError):
    """Another process held the store's migration lock for longer than a start waits: a
    migration still running elsewhere, or a process (or a session) that keeps the lock."""


def open_store(url: str, migrate: bool = True) -> EventStore:
    """``sqlite:///PATH`` (the default kind) or ``postgresql://…``; :class:`StoreOpenError` when the
    URL is not one of those or its database cannot be opened or reached. ``migrate``: bring its
    schema up to date (a server's start); False for a tool that only reads it, which is refused
    (:class:`SchemaNotCurrent`) a store whose schema is not this release's."""
    if url.startswith("sqlite:///"):
        import sqlite3

        from croupier.service.store.sqlite import SqliteEventStore

        path = url.removeprefix("sqlite:///")
        try:
            return SqliteEventStore(path, migrate=migrate)
        except (sqlite3.Error, OSError) as error:
            raise StoreOpenError(
                f"cannot open the SQLite store {path}: {_first_line(error)} (check the path and "
                f"its folder's permissions in {WHERE})"
            ) from None
    if url.startswith(("postgresql://", "postgres://")):
        import psycopg

        from croupier.service.store.postgres import PostgresEventStore

        try:
            return PostgresEventStore(url, migrate=migrate)
        except psycopg.Error as error:
            raise StoreOpenError(
                f"cannot use PostgreSQL at {redacted(url)}: {_first_line(error)} (check that it "
                f"runs and is reachable, and the host, port, user and database in {WHERE})"
            ) from None
    scheme = url.split("://", 1)[0] if "://" in url else url[:20]
    raise StoreOpenError(
        f"unsupported store URL scheme {scheme!r}: use sqlite:///PATH or "
        f"postgresql://USER:PASSWORD@HOST:PORT/DATABASE in {WHERE}"
    )


#: libpq's connection parameters that hold secrets, which a PostgreSQL URL may carry in its query.
SECRET_PARAMETERS = frozenset({"password", "sslpassword"})
MASK = "***"


def redacted(url: str) -> str:
    """A store URL fit for a log line or a message: its password masked, in its user part
    (``user:password@host``) and in its query (libpq's ``?password=`` and ``?sslpassword=``)."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    where, question, query = rest.partition("?")
    user, at, host = where.rpartition("@")
    if at and ":" in user:
        where = f"{user.split(':', 1)[0]}:{MASK}@{host}"
    pairs = [
        f"{pair.split('=', 1)[0]}={MASK}"
        if unquote_plus(pair.split("=", 1)[0]).lower() in SECRET_PARAMETERS
        else pair
        for pair in query.split("&")
    ]
    return f"{scheme}://{where}{question}{'&'.join(pairs)}"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
