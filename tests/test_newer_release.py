"""A game recorded by a newer release of the service (a rolling upgrade: old replicas beside new
ones on one store) is not played on by an old one: its record holds a rule option, an event kind
or a field the old release does not know, which protobuf keeps aside and the conversions drop, so
the old replica refereed it by its own rules and the game's record failed verification for good
(an operator's review: four of four such games). Now a replica answers such a game
``UNAVAILABLE`` ``GAME_FROM_NEWER_RELEASE`` and does nothing to it."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from croupier.app.callers import Caller
from croupier.app.core import Croupier
from croupier.app.errors import GAME_FROM_NEWER_RELEASE, NewerRelease
from croupier.app.sweeper import HAND_BACK_MS, Sweeper
from croupier.app.tokens import KeyRing, SeatIdentity, StudioIdentity, TokenSigner
from croupier.contract.bindings import from_newer_release
from croupier.log import EventStore
from croupier.replays.format import load
from croupier.service.store import open_store
from croupier.v1 import common_pb2, gin_pb2, hoola_pb2, service_pb2

CORPUS = Path(__file__).resolve().parent.parent / "replays" / "corpus"
SECRET = b"newer-release-secret-0123456789abcdef"
STUDIO_KEYS = KeyRing(b"newer-release-studio-0123456789abcdef")
#: A field number no message of the contract uses, as a newer release's new option would be.
NEW_FIELD = 999


def _with_new_field(message_bytes: bytes) -> bytes:
    """``message_bytes`` with a varint field this release does not know appended."""
    tag = NEW_FIELD << 3  # wire type 0: a varint
    varint = bytes([(tag & 0x7F) | 0x80, tag >> 7])
    return message_bytes + varint + b"\x01"


def _gin_started() -> service_pb2.EventBody:
    return service_pb2.EventBody(
        gin=gin_pb2.GinEvent(
            match_started=gin_pb2.GinMatchStarted(rules=gin_pb2.GinRules(knock_card=10), seats=2)
        )
    )


def test_every_record_of_this_release_reads_as_its_own() -> None:
    """The corpus's games (every kind, preset and log format recorded so far): none is taken for
    a newer release's, whole or not, or every game would be refused."""
    files = sorted(CORPUS.rglob("*.replay"))
    assert files
    for path in files:
        for event in load(str(path)).events:
            body = service_pb2.EventBody.FromString(event.payload)
            assert not from_newer_release(body, whole=True), (path.name, event.version)
            assert not from_newer_release(body, whole=False), (path.name, event.version)


def test_a_rule_option_an_event_kind_or_a_field_of_a_newer_release_is_found() -> None:
    # A new rule option: only in the first event, checked whole.
    body = _gin_started()
    rules = body.gin.match_started.rules
    rules.MergeFromString(_with_new_field(b""))
    assert from_newer_release(body, whole=True)
    # A new kind of event: the game's event message has a field this release does not know.
    new_kind = service_pb2.EventBody()
    new_kind.gin.MergeFromString(_with_new_field(b""))
    assert from_newer_release(new_kind, whole=False)
    # A new field of a known event.
    new_field = service_pb2.EventBody(gin=gin_pb2.GinEvent(card_laid_off=gin_pb2.CardLaidOff()))
    new_field.gin.card_laid_off.MergeFromString(_with_new_field(b""))
    assert from_newer_release(new_field, whole=False)
    assert not from_newer_release(_gin_started(), whole=True)


#: The turn time of the games on a clock here (ms).
TURN_MS = 10_000


def _new_gin_option(body: service_pb2.EventBody) -> None:
    body.gin.match_started.rules.MergeFromString(_with_new_field(b""))


def _new_hoola_tie_mode(body: service_pb2.EventBody) -> None:
    """A choice a newer contract added to an enum: proto3 keeps it as a bare number, with no
    unknown field for the check to see."""
    body.hoola.game_started.rules.tie_mode = NEW_ENUM_VALUE  # type: ignore[assignment]


#: A number no enum of the contract names, as a newer release's new choice would be.
NEW_ENUM_VALUE = 99


async def _newer_game(
    store: EventStore,
    path: Path,
    now: list[int],
    newer: Callable[[service_pb2.EventBody], None] = _new_gin_option,
) -> str:
    """A game on a turn clock, as a newer release would have recorded it: the first event's
    rules with an option (by default, Gin's) or an option's choice this release does not know,
    written by ``newer``."""
    core = Croupier(store, TokenSigner(SECRET), studio_keys=STUDIO_KEYS, clock=lambda: now[0])
    await core.start(sweep=False)
    studio = Caller(studio=StudioIdentity(STUDIO_KEYS.kid, int(time.time()) + 3600))
    if newer is _new_gin_option:
        kind, preset, seats = common_pb2.GAME_KIND_GIN, "standard", 2
        clocked = service_pb2.Rules(gin=gin_pb2.GinRules(turn_time_ms=TURN_MS))
    else:
        kind, preset, seats = common_pb2.GAME_KIND_HOOLA, "korean", 3
        clocked = service_pb2.Rules(hoola=hoola_pb2.HoolaRules(turn_time_ms=TURN_MS))
    created = await core.create_game(studio, kind, preset, seats, clocked, [], [])
    seat = Caller(SeatIdentity(created.game_id, 0))
    assert (await core.view(seat, created.game_id)).version == created.version
    await core.close()
    with sqlite3.connect(path) as db:
        (payload,) = db.execute(
            "SELECT payload FROM events WHERE game_id = ? AND version = 1", (created.game_id,)
        ).fetchone()
        body = service_pb2.EventBody.FromString(payload)
        newer(body)
        db.execute(
            "UPDATE events SET payload = ? WHERE game_id = ? AND version = 1",
            (body.SerializeToString(), created.game_id),
        )
    return created.game_id


@pytest.mark.parametrize("newer", [_new_gin_option, _new_hoola_tie_mode])
def test_a_replica_does_not_serve_or_tick_a_game_a_newer_release_made(
    tmp_path: Path, newer: Callable[[service_pb2.EventBody], None]
) -> None:
    path = tmp_path / "games.sqlite3"
    store = open_store(f"sqlite:///{path}")

    async def scenario() -> None:
        now = [int(time.time() * 1000)]
        game_id = await _newer_game(store, path, now, newer)
        created = store.game(game_id)
        seat = Caller(SeatIdentity(game_id, 0))
        fresh = Croupier(store, TokenSigner(SECRET), studio_keys=STUDIO_KEYS, use_snapshots=False)
        await fresh.start(sweep=False)
        with pytest.raises(NewerRelease) as refused:
            await fresh.view(seat, game_id)
        assert refused.value.reason == GAME_FROM_NEWER_RELEASE
        assert refused.value.retry_after_ms > 0
        # Nor does its clock play the game on: the tick refuses it, recording nothing.
        with pytest.raises(NewerRelease):
            await fresh.tick(game_id)
        assert store.game(game_id).version == created.version

    try:
        asyncio.run(scenario())
    finally:
        store.close()


def test_a_tick_refused_as_a_newer_release_is_a_warning_not_a_bug() -> None:
    """An old replica's sweeper meets such games through a whole rolling upgrade: each failed
    tick was logged as an error with a traceback (what log_failure keeps for bugs)."""
    from structlog.testing import capture_logs

    from croupier.app.core import log
    from croupier.app.errors import log_failure

    with capture_logs() as logs:
        log_failure(log, "tick failed", NewerRelease("g", 1000), game_id="g")
    (line,) = logs
    assert line["log_level"] == "warning" and "exc_info" not in line
    assert line["reason"] == GAME_FROM_NEWER_RELEASE


def test_a_sweeper_gives_a_newer_release_s_game_back_to_the_newer_replicas(tmp_path: Path) -> None:
    """An old replica's sweeper claims the due game, finds it a newer release's and gives its
    claim back after a moment (HAND_BACK_MS), so that a newer replica records its time-out in
    time: it held the whole lease (5 s), and the newer replica then recorded a TurnRestarted, as
    after an outage. Said once a while, not at every claim."""
    path = tmp_path / "games.sqlite3"
    store = open_store(f"sqlite:///{path}")

    async def scenario() -> None:
        now = [int(time.time() * 1000)]
        game_id = await _newer_game(store, path, now)
        old = Croupier(store, TokenSigner(SECRET), studio_keys=STUDIO_KEYS, clock=lambda: now[0])
        await old.start(sweep=False)
        sweeper = Sweeper(old)
        with capture_logs() as logged:
            for _ in range(2):
                now[0] += TURN_MS + 1
                assert await sweeper.sweep() == 1  # claimed, then given back
                (lease,) = (
                    sqlite3.connect(path)
                    .execute("SELECT sweep_lease_ms FROM games WHERE game_id = ?", (game_id,))
                    .fetchone()
                )
                assert lease == now[0] + HAND_BACK_MS  # not the whole lease
        said = [line for line in logged if "newer release" in line["event"]]
        assert [line["log_level"] for line in said] == ["warning"]  # once, and no traceback
        assert not [line for line in logged if line["log_level"] == "error"]
        await old.close()

    try:
        asyncio.run(scenario())
    finally:
        store.close()
