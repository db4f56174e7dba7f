"""`croupier migrate`: the schema brought up to date on its own (a deployment's init step), once,
however many replicas run it at the same time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from croupier.service.store import open_store
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
