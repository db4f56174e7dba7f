"""Event stores: :func:`open_store` picks the implementation from a URL."""

from __future__ import annotations

from croupier.log import EventStore


def open_store(url: str) -> EventStore:
    """``sqlite:///PATH`` (the default kind) or ``postgresql://…``."""
    if url.startswith("sqlite:///"):
        from croupier.service.store.sqlite import SqliteEventStore

        return SqliteEventStore(url.removeprefix("sqlite:///"))
    if url.startswith(("postgresql://", "postgres://")):
        from croupier.service.store.postgres import PostgresEventStore

        return PostgresEventStore(url)
    raise ValueError(f"unsupported store URL {url!r}: use sqlite:///PATH or postgresql://…")
