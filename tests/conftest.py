"""Shared fixtures: hypothesis profiles and the PostgreSQL switch."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

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
)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "default")

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
def postgres_url() -> str:
    """The test database; skips without a server, except in CI, where PostgreSQL must be there."""
    if not postgres_available():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but PostgreSQL is not reachable at {POSTGRES_URL}")
        pytest.skip(f"needs PostgreSQL at {POSTGRES_URL} (set CROUPIER_TEST_POSTGRES); skipped")
    return POSTGRES_URL
