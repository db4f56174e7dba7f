"""Seed tickets (croupier.app.seedtickets) and the core's CreateGame with them: what a ticket
says and hides, which tickets are refused and how, and that any interleaving of creations makes
one game per ticket."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from croupier.app.callers import Caller
from croupier.app.core import Croupier
from croupier.app.errors import AppError, NotFound, NotNow
from croupier.app.seedtickets import (
    SEED_TICKET_EXPIRED,
    SEED_TICKET_NOT_FOUND,
    SEED_TICKET_USED,
    TICKET_TTL_MS,
    issue,
    read,
)
from croupier.app.tokens import KeyRing, StudioIdentity, TokenSigner
from croupier.log import EventStore
from croupier.service.store import open_store
from croupier.v1 import common_pb2

OLD = b"seed-ticket-old-key-0123456789abcdef-0"
NEW = b"seed-ticket-new-key-0123456789abcdef-1"
STUDIO_KEYS = KeyRing(b"seed-ticket-studio-0123456789abcdef-01")
NOW_MS = 1_800_000_000_000
NONCE = bytes(range(32))


def test_a_ticket_read_back_is_the_one_issued_and_hides_its_seed() -> None:
    ring = KeyRing(NEW)
    issued = issue(ring, NONCE, NOW_MS)
    assert issued.expires_at_ms == NOW_MS + TICKET_TTL_MS
    assert read(ring, issued.ticket, NOW_MS) == issued
    assert issued.commitment == hashlib.sha256(issued.server_seed).hexdigest()
    assert len(issued.server_seed) == 32
    # Neither the seed nor anything the nonce alone would give is in the clear text.
    assert issued.server_seed.hex() not in issued.ticket
    assert hashlib.sha256(NONCE).hexdigest() not in issued.ticket
    # Another key, another seed from the same nonce: the seed is the secret's to derive.
    assert issue(KeyRing(OLD), NONCE, NOW_MS).server_seed != issued.server_seed


def test_a_ticket_outlives_a_key_rotation_not_a_key_dropped() -> None:
    issued = issue(KeyRing(OLD), NONCE, NOW_MS)
    assert read(KeyRing(NEW, (OLD,)), issued.ticket, NOW_MS).server_seed == issued.server_seed
    with pytest.raises(NotFound) as dropped:
        read(KeyRing(NEW), issued.ticket, NOW_MS)
    assert dropped.value.reason == SEED_TICKET_NOT_FOUND


def test_a_ticket_expires() -> None:
    ring = KeyRing(NEW)
    issued = issue(ring, NONCE, NOW_MS)
    assert read(ring, issued.ticket, issued.expires_at_ms - 1) == issued
    with pytest.raises(NotNow) as expired:
        read(ring, issued.ticket, issued.expires_at_ms)
    assert expired.value.reason == SEED_TICKET_EXPIRED
    assert expired.value.field == "seed_ticket"


@given(st.text(max_size=300))
def test_no_other_text_is_a_ticket(text: str) -> None:
    ring = KeyRing(NEW)
    genuine = issue(ring, NONCE, NOW_MS).ticket
    if text == genuine:
        return
    with pytest.raises(NotFound) as refused:
        read(ring, text, NOW_MS)
    assert refused.value.reason == SEED_TICKET_NOT_FOUND
    assert issue(ring, NONCE, NOW_MS).server_seed.hex() not in refused.value.message


@given(st.integers(0, 4), st.integers(0, 63), st.sampled_from("0123456789abcdef."))
def test_a_ticket_changed_anywhere_is_refused(part: int, at: int, char: str) -> None:
    ring = KeyRing(NEW)
    parts = issue(ring, NONCE, NOW_MS).ticket.split(".")
    original = ".".join(parts)
    word = parts[part]
    at %= len(word)
    parts[part] = word[:at] + char + word[at + 1 :]
    changed = ".".join(parts)
    if changed == original:
        return
    with pytest.raises(NotFound):
        read(ring, changed, NOW_MS)


# --- the core ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EventStore]:
    opened = open_store(f"sqlite:///{tmp_path_factory.mktemp('tickets') / 'games.sqlite3'}")
    yield opened
    opened.close()


STUDIO = Caller(studio=StudioIdentity(STUDIO_KEYS.kid, int(time.time()) + 3600))
#: An attempt: which ticket, and which of that ticket's request ids (None: none).
ATTEMPTS = st.lists(
    st.tuples(st.integers(0, 2), st.none() | st.integers(0, 2)), min_size=1, max_size=12
)


@settings(max_examples=25, deadline=None)
@given(ATTEMPTS, st.integers(1, 4))
def test_any_interleaving_of_creations_makes_one_game_per_ticket(
    store: EventStore, attempts: list[tuple[int, int | None]], at_once: int
) -> None:
    """Creations with a few tickets, some with request ids sent again, run ``at_once`` at a time
    in any order: each ticket tried makes exactly one game, with its commitment; a creation is
    answered with that game only as the winning request's retry; every other creation is
    FAILED_PRECONDITION SEED_TICKET_USED."""
    run = uuid.uuid4().hex

    async def scenario() -> list[tuple[int, str | None, object]]:
        core = Croupier(store, TokenSigner(NEW), studio_keys=STUDIO_KEYS)
        await core.start(sweep=False)
        try:
            tickets = [await core.commit_seed(STUDIO) for _ in range(3)]

            async def attempt(ticket: int, slot: int | None) -> tuple[int, str | None, object]:
                request_id = "" if slot is None else f"{run}-{ticket}-{slot}"
                try:
                    made = await core.create_game(
                        STUDIO,
                        common_pb2.GAME_KIND_GIN,
                        "",
                        2,
                        None,
                        [f"seed {ticket} {slot}"] if slot is not None else [f"seed {ticket}"],
                        [],
                        request_id,
                        tickets[ticket].ticket,
                    )
                except AppError as error:
                    return ticket, request_id or None, error
                assert made.commitment == tickets[ticket].commitment
                return ticket, request_id or None, made.game_id

            results: list[tuple[int, str | None, object]] = []
            for start in range(0, len(attempts), at_once):
                batch = attempts[start : start + at_once]
                results += await asyncio.gather(*(attempt(t, s) for t, s in batch))
            return results
        finally:
            await core.close()

    results = asyncio.run(scenario())
    for ticket in {t for t, _ in attempts}:
        mine = [(request_id, outcome) for t, request_id, outcome in results if t == ticket]
        games = {outcome for _, outcome in mine if isinstance(outcome, str)}
        assert len(games) == 1, mine  # one game, and always some game
        winners = {request_id for request_id, outcome in mine if isinstance(outcome, str)}
        assert len(winners) == 1  # the first creation, and retries of its request id only
        if None in winners:
            assert sum(isinstance(outcome, str) for _, outcome in mine) == 1
        for _, outcome in mine:
            if not isinstance(outcome, str):
                assert isinstance(outcome, NotNow) and outcome.reason == SEED_TICKET_USED


def test_an_unknown_ticket_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'games.sqlite3'}")

    async def scenario() -> None:
        core = Croupier(store, TokenSigner(NEW), studio_keys=STUDIO_KEYS)
        await core.start(sweep=False)
        try:
            theirs = issue(KeyRing(OLD), NONCE, core.clock()).ticket
            with pytest.raises(NotFound) as refused:
                await core.create_game(
                    STUDIO, common_pb2.GAME_KIND_GIN, "", 2, None, [], [], "", theirs
                )
            assert refused.value.reason == SEED_TICKET_NOT_FOUND
        finally:
            await core.close()

    try:
        asyncio.run(scenario())
    finally:
        store.close()
    with contextlib.closing(sqlite3.connect(tmp_path / "games.sqlite3")) as db:
        assert db.execute("SELECT count(*) FROM games").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM seed_tickets").fetchone() == (0,)
