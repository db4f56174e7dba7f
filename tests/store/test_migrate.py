"""`croupier migrate`: the schema brought up to date on its own (a deployment's init step), once,
however many replicas run it at the same time."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from croupier.service.cli import main
from croupier.service.store import SchemaNotCurrent, StoreOpenError, open_store
from croupier.service.store.sql import migrations_path

CROUPIER = str(Path(sys.executable).parent / "croupier")
#: How many replicas start at once in the race below (the Deployment's 3, and one more).
RACERS = 4


def all_migrations(dialect: str) -> list[str]:
    return sorted(p.stem for p in Path(migrations_path(dialect)).glob("*.sql"))


def migrate(store: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [CROUPIER, "migrate", "--store", store],
        env={**os.environ, "CROUPIER_LOG_FORMAT": "json"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def applied(process: subprocess.Popen[str]) -> list[str]:
    """The migrations a finished ``migrate`` says it applied (its one JSON line)."""
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert out == ""
    [line] = [json.loads(text) for text in err.splitlines()]
    assert line["event"] == "migrated" and line["level"] == "info"
    return list(line["applied"])


def test_migrate_applies_each_migration_once(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'croupier.sqlite3'}"
    assert applied(migrate(store)) == all_migrations("sqlite")
    assert applied(migrate(store)) == []
    opened = open_store(store)  # a server's start then has nothing left to do either
    try:
        assert opened.migrations_applied == ()  # type: ignore[attr-defined]
    finally:
        opened.close()


def test_migrate_fails_clearly_on_a_bad_store() -> None:
    process = migrate("mysql://nowhere/croupier")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1
    [line] = [json.loads(text) for text in err.splitlines()]
    assert line["level"] == "error" and "unsupported store URL scheme" in line["error"]


@pytest.fixture
def empty_postgres(postgres_url: str) -> Iterator[str]:
    """A database of its own, without any table (the session's is migrated already)."""
    import psycopg

    name = f"croupier_migrate_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as error:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"the test role may not create a database: {error}")
    base, _, _ = postgres_url.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.postgres
def test_replicas_migrating_at_once_apply_each_migration_once(empty_postgres: str) -> None:
    racing = [migrate(empty_postgres) for _ in range(RACERS)]
    results = [applied(process) for process in racing]
    every = [migration for result in results for migration in result]
    assert sorted(every) == all_migrations("postgresql")  # all of them, none twice
    assert sum(1 for result in results if result) == 1  # one replica did it; the others waited


def _older_release_store(store: str) -> str:
    """A store as the release before the newest migration made it (every migration but that
    one applied): what a store an older release serves looks like to this one. That id."""
    from yoyo import get_backend, read_migrations

    from croupier.service.store.postgres import _yoyo_url

    postgres = store.startswith("postgresql")
    dialect = "postgresql" if postgres else "sqlite"
    newest = all_migrations(dialect)[-1]
    every = read_migrations(migrations_path(dialect))
    backend = get_backend(_yoyo_url(store) if postgres else store)
    try:
        with backend.lock():
            backend.apply_migrations(
                backend.to_apply(every.__class__([m for m in every if m.id != newest]))
            )
    finally:
        backend.connection.close()
    return newest


def _reading_is_refused(store: str, run: Callable[[str], list[tuple[object, ...]]]) -> None:
    """A tool that only reads (``replay export``, ``verify --against-store``) is refused an
    older release's store, and leaves it as it was: migrating it under the servers of that
    release (a support agent's newer tool against production) would stop them."""
    newest = _older_release_store(store)
    with pytest.raises(SchemaNotCurrent, match=f"lacks this release's migrations {newest}:"):
        open_store(store, migrate=False)
    exported = CliRunner().invoke(main, ["replay", "export", "any-game", "out", "--store", store])
    assert exported.exit_code == 1, exported.output
    assert f"lacks this release's migrations {newest}" in exported.output
    assert "older release's tool" in exported.output
    assert run(f"SELECT 1 FROM _yoyo_migration WHERE migration_id = '{newest}'") == []
    open_store(store).close()  # a server's start (or `croupier migrate`) still brings it up
    opened = open_store(store, migrate=False)  # and then the tool reads it
    opened.close()


def test_a_reading_tool_leaves_an_older_sqlite_store_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "croupier.sqlite3"

    def run(sql: str) -> list[tuple[object, ...]]:
        with contextlib.closing(sqlite3.connect(path)) as conn, conn:
            return conn.execute(sql).fetchall()

    _reading_is_refused(f"sqlite:///{path}", run)


@pytest.mark.postgres
def test_a_reading_tool_leaves_an_older_postgresql_store_as_it_is(empty_postgres: str) -> None:
    import psycopg

    def run(sql: str) -> list[tuple[object, ...]]:
        with psycopg.connect(empty_postgres, autocommit=True) as conn:
            cursor = conn.execute(sql)
            return cursor.fetchall() if cursor.description else []

    _reading_is_refused(empty_postgres, run)


def test_a_reading_tool_does_not_make_a_store_of_another_database(tmp_path: Path) -> None:
    """An SQLite file that is not a store (another program's database, a text file) is named
    so, and not made into one."""
    other = tmp_path / "other.sqlite3"
    with contextlib.closing(sqlite3.connect(other)) as conn, conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    text = tmp_path / "notes.txt"
    text.write_text("not a database, but long enough to be read as one's header" * 20)
    before = {path: path.read_bytes() for path in (other, text)}
    with pytest.raises(SchemaNotCurrent, match="holds no Croupier store"):
        open_store(f"sqlite:///{other}", migrate=False)
    with pytest.raises(SchemaNotCurrent, match="is not an SQLite store"):
        open_store(f"sqlite:///{text}", migrate=False)
    assert {path: path.read_bytes() for path in (other, text)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "other.sqlite3"]


@pytest.mark.postgres
def test_a_reading_tool_does_not_make_a_store_of_an_empty_database(empty_postgres: str) -> None:
    import psycopg

    with pytest.raises(SchemaNotCurrent, match="holds no Croupier store"):
        open_store(empty_postgres, migrate=False)
    with psycopg.connect(empty_postgres) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
    assert tables == (0,)


def test_a_reading_tool_that_cannot_open_a_store_does_not_call_it_no_store(
    tmp_path: Path,
) -> None:
    """Only bytes that are not an SQLite database are "not an SQLite store": a file SQLite
    cannot open (no such folder, a lock held past the wait) is said so, as to a server, and a
    support agent does not go looking for another file."""
    missing = tmp_path / "no-such-folder" / "croupier.sqlite3"
    with pytest.raises(StoreOpenError) as raised:
        open_store(f"sqlite:///{missing}", migrate=False)
    assert not isinstance(raised.value, SchemaNotCurrent)
    assert "cannot open the SQLite store" in str(raised.value)
    assert "unable to open database file" in str(raised.value)
    assert not missing.parent.exists()


#: A migration id no release of this repository has: a newer release's.
NEWER_MIGRATION = "9999.a_newer_release"


def _newer_is_said(store: str, run: Callable[[str], object]) -> None:
    """A store a newer release migrated (a rollback): migrating it with this release applies
    nothing and says which migrations it does not know, as a warning; it still works."""
    assert applied(migrate(store)) == all_migrations(store.split(":", 1)[0])
    run(
        "INSERT INTO _yoyo_migration (migration_hash, migration_id, applied_at_utc) "
        f"VALUES ('{uuid.uuid4().hex}', '{NEWER_MIGRATION}', CURRENT_TIMESTAMP)"
    )
    process = migrate(store)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0 and out == "", err
    lines = [json.loads(text) for text in err.splitlines()]
    [warned] = [line for line in lines if line["level"] == "warning"]
    assert warned["newer"] == [NEWER_MIGRATION] and "newer release" in warned["event"]
    [done] = [line for line in lines if line["event"] == "migrated"]
    assert done["applied"] == []


def test_a_store_a_newer_release_migrated_is_said_so_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "croupier.sqlite3"

    def run(sql: str) -> None:
        with contextlib.closing(sqlite3.connect(path)) as conn, conn:
            conn.execute(sql)

    _newer_is_said(f"sqlite:///{path}", run)


@pytest.mark.postgres
def test_a_store_a_newer_release_migrated_is_said_so_postgresql(empty_postgres: str) -> None:
    import psycopg

    def run(sql: str) -> None:
        with psycopg.connect(empty_postgres, autocommit=True) as conn:
            conn.execute(sql)

    _newer_is_said(empty_postgres, run)
