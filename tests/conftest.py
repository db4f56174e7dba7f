"""Shared fixtures: hypothesis profiles and the PostgreSQL switch."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "default", deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=60,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
    # No shrinking in CI: an example is a whole game, and shrinking one can outlast the run's
    # time (minutes, reported as nothing but a time-out). The failing example is reported as
    # found, with its blob to reproduce it (and shrink it) locally.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target],
)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "default")

# The servers the tests spawn (`croupier serve`) listen for HTTP on a free port, never on the
# default 8080 that a developer's `make run` (or another run of the tests) may hold.
os.environ.setdefault("CROUPIER_HTTP_ADDRESS", "127.0.0.1:0")

# The servers under test log to stderr, warnings only (the CLI tests read a real server's logs).
from croupier.service import logs  # noqa: E402

logs.configure("console", "WARNING")

POSTGRES_URL = os.environ.get("CROUPIER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(POSTGRES_URL, connect_timeout=3):
            return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A database of this test run's own on the test server (dropped at the end), so that no
    run meets another's games: games left on a turn clock would otherwise be swept, by every
    later run's servers, for ever. Where the test role may not create databases, the test
    database itself. Skips without a server, except in CI, where PostgreSQL must be there."""
    if not postgres_available():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but PostgreSQL is not reachable at {POSTGRES_URL}")
        pytest.skip(f"needs PostgreSQL at {POSTGRES_URL} (set CROUPIER_TEST_POSTGRES); skipped")
    import psycopg

    name = f"croupier_test_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error:
        yield POSTGRES_URL
        return
    base, _, _ = POSTGRES_URL.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
