"""Snapshots: a long game is read back after a restart from its latest snapshot, and only a
snapshot this service sealed, of this engine's code, is ever used."""

from __future__ import annotations

import dataclasses
import random

import pytest

from croupier.app import snapshots
from croupier.app.tokens import KeyRing, TokenSigner
from croupier.service.bots import auth, play_game
from croupier.service.store import open_store
from croupier.v1 import common_pb2, service_pb2

from .conftest import SECRET, Running, fresh_server, studio_token


@pytest.fixture
def long_game(server: Running) -> tuple[str, str, service_pb2.GetViewResponse]:
    """A finished Koi-Koi match (hundreds of events), its seat-0 token and seat 0's last view."""
    result = play_game(
        server.channel,
        studio=studio_token(),
        seats=2,
        kind=common_pb2.GAME_KIND_KOIKOI,
        rng=random.Random(4),
        client_seed="long",
    )
    token = result.tokens[0]
    view = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=result.game_id), metadata=auth(token)
    )
    assert result.version > snapshots.SNAPSHOT_EVERY
    return result.game_id, token, view


def read_after_restart(
    url: str, game_id: str, token: str, secret: bytes = SECRET
) -> service_pb2.GetViewResponse:
    store = open_store(url)
    try:
        with fresh_server(store, secret) as stub:
            return stub.GetView(service_pb2.GetViewRequest(game_id=game_id), metadata=auth(token))
    finally:
        store.close()
    raise AssertionError("unreachable")


def test_a_long_game_is_snapshotted_and_read_back_from_it(server: Running, long_game) -> None:
    game_id, token, view = long_game
    latest = server.store.load(game_id, 0, snapshot=snapshots.FORMAT).snapshot
    assert latest is not None and latest.version >= snapshots.SNAPSHOT_EVERY
    again = read_after_restart(server.store.url, game_id, token)
    assert again == view
    # What the snapshot holds is what folding the log gives.
    thawed = snapshots.thaw(TokenSigner(SECRET), latest)
    assert thawed is not None and thawed.version == latest.version


def test_a_snapshot_that_is_not_ours_is_ignored(server: Running, long_game) -> None:
    game_id, token, view = long_game
    latest = server.store.load(game_id, 0, snapshot=snapshots.FORMAT).snapshot
    assert latest is not None
    # Another secret cannot verify the seal: it folds the log, with the same result.
    other = TokenSigner(b"another-secret-0123456789abcdef-0123")
    assert snapshots.thaw(other, latest) is None
    # A tampered snapshot (even re-saved as newer) is not unpickled.
    forged = dataclasses.replace(latest, version=latest.version + 1, state=latest.state + b"x")
    server.store.save_snapshot(forged)
    assert snapshots.thaw(TokenSigner(SECRET), forged) is None
    assert read_after_restart(server.store.url, game_id, token) == view
    # Another format (other engine code) is never read.
    assert snapshots.thaw(TokenSigner(SECRET), dataclasses.replace(latest, format="x")) is None


def test_a_rotated_key_still_opens_the_snapshots_sealed_before(server: Running, long_game) -> None:
    """CROUPIER_SECRET rotated (the old key among the previous ones): the snapshots it sealed
    still open, and new seals are the new key's."""
    game_id, _, _ = long_game
    latest = server.store.load(game_id, 0, snapshot=snapshots.FORMAT).snapshot
    assert latest is not None
    rotated = TokenSigner(KeyRing.of(b"the-next-croupier-secret-0123456789", [SECRET]))
    thawed = snapshots.thaw(rotated, latest)
    assert thawed is not None and thawed.version == latest.version
    resealed = snapshots.freeze(rotated, game_id, thawed.version, thawed.state, thawed.last_at_ms)
    assert resealed.seal != latest.seal and snapshots.thaw(rotated, resealed) is not None
    # The old key dropped: those snapshots are not opened (the log is folded instead).
    assert snapshots.thaw(TokenSigner(b"the-next-croupier-secret-0123456789"), latest) is None
