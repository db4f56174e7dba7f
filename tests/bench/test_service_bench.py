"""The service's hot paths, measured by `make bench`; figures are recorded, never asserted.

The first read of a long game after a restart (a seat's view): from its snapshot, and from the
whole log. Each
benchmark's ``extra_info`` holds the game's event count, so a figure per event is mean ÷ events.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from croupier.app.core import Caller, Croupier, FoldCache
from croupier.app.tokens import KeyRing, SeatIdentity, TokenSigner, mint_studio_token
from croupier.log import EventStore
from croupier.service.bots import play_game
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2

SECRET = b"bench-secret-0123456789abcdef-0123"
STUDIO_SECRET = b"bench-studio-secret-0123456789abcdef"
STUDIO_KEYS = KeyRing(STUDIO_SECRET)


@pytest.fixture(scope="module")
def long_match(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EventStore, str, int]]:
    """A whole 12-round Koi-Koi match recorded by the service: (store, game id, events)."""
    path: Path = tmp_path_factory.mktemp("bench") / "games.sqlite3"
    store = open_store(f"sqlite:///{path}")
    thread = ServerThread("127.0.0.1:0", store, TokenSigner(SECRET), studio_keys=STUDIO_KEYS)
    port = thread.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        result = play_game(
            channel,
            studio=mint_studio_token(STUDIO_SECRET, int(time.time()) + 3600),
            seats=2,
            kind=common_pb2.GAME_KIND_KOIKOI,
            rng=random.Random(1),
            client_seed="bench",
            max_moves=6000,
        )
    thread.stop(grace=None)
    yield store, result.game_id, result.version
    store.close()


def _first_reads(
    store: EventStore, game_id: str, use_snapshots: bool
) -> Iterator[Callable[[], Any]]:
    """A started core (its worker threads and connections up, as in a running server) and a
    read of the game with nothing of it in memory, as after a restart."""
    loop = asyncio.new_event_loop()
    core = Croupier(
        store, TokenSigner(SECRET), use_snapshots=use_snapshots, studio_keys=STUDIO_KEYS
    )
    loop.run_until_complete(core.start())
    seat = Caller(SeatIdentity(game_id, 0))

    async def read() -> None:
        core.cache = FoldCache()
        await core.view(seat, game_id)

    loop.run_until_complete(read())  # warm up the threads and their connections
    yield lambda: loop.run_until_complete(read())
    loop.run_until_complete(core.close())
    loop.close()


def test_first_read_after_a_restart_from_a_snapshot(benchmark, long_match) -> None:
    store, game_id, events = long_match
    benchmark.extra_info["events"] = events
    for read in _first_reads(store, game_id, use_snapshots=True):
        benchmark(read)


def test_first_read_after_a_restart_folding_the_whole_log(benchmark, long_match) -> None:
    store, game_id, events = long_match
    benchmark.extra_info["events"] = events
    for read in _first_reads(store, game_id, use_snapshots=False):
        benchmark(read)
