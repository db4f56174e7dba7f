"""Finished games of every kind, recorded by the service itself, as replays."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import grpc
import pytest

from croupier.app.tokens import KeyRing, TokenSigner, mint_studio_token
from croupier.log.chain import GENESIS_HASH, PLAIN_FORMAT, chain_hash, chain_key
from croupier.replays.format import Replay, build
from croupier.replays.verify import record_of
from croupier.service.bots import play_game
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, gin_pb2, hoola_pb2, service_pb2

# kind, seats, preset, overrides
GAMES = {
    "hoola": (
        common_pb2.GAME_KIND_HOOLA,
        3,
        "korean",
        service_pb2.Rules(hoola=hoola_pb2.HoolaRules(rounds=2, jokers=1)),
    ),
    "koikoi": (common_pb2.GAME_KIND_KOIKOI, 2, "nintendo-3", None),
    "gin": (
        common_pb2.GAME_KIND_GIN,
        2,
        "standard",
        service_pb2.Rules(gin=gin_pb2.GinRules(match_points=20)),
    ),
    "rummy": (common_pb2.GAME_KIND_RUMMY, 3, "standard", None),
}


@pytest.fixture(scope="session")
def replays(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Replay]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('replays') / 'games.sqlite3'}"
    store = open_store(url)
    studio = b"replay-tests-studio-secret-0123456789"
    server = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(b"replay-tests-secret-0123456789abcdef"),
        studio_keys=KeyRing(studio),
    )
    port = server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            found = {}
            for name, (kind, seats, preset, overrides) in GAMES.items():
                result = play_game(
                    channel,
                    studio=mint_studio_token(studio, int(time.time()) + 3600),
                    seats=seats,
                    kind=kind,
                    preset=preset,
                    overrides=overrides,
                    rng=random.Random(name),
                    client_seed=f"{name} seed",
                )
                found[name] = build(store.game(result.game_id), store.read(result.game_id))
        yield found
    finally:
        server.stop(grace=None)
        store.close()


def remake_chain(replay: Replay) -> None:
    """Make every event's ``prev_hash`` and ``hash``, and the footer's last hash, again as the
    server would (the revealed seed keys the chain): what anyone can do to a file once its game
    is over, so that only the game's own consistency, or the service's record, is left to catch
    an edit."""
    key = chain_key(
        replay.header.log_format or PLAIN_FORMAT,
        bytes.fromhex(replay.footer.server_seed),
        replay.header.game_id,
    )
    prev = GENESIS_HASH
    for event in replay.events:
        event.prev_hash = prev
        event.hash = prev = chain_hash(prev, record_of(event, key))
    replay.footer.last_hash = prev
