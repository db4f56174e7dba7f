"""The service's hot paths, measured by `make bench`; figures are recorded, never asserted.

The first read of a long game after a restart (a seat's view): from its snapshot, and from the
whole log; each of those benchmarks' ``extra_info`` holds the game's event count, so a figure per
event is mean ÷ events. A whole game played through the core's ``Play`` path with no transport:
its ``extra_info`` holds the game's moves, so the core's own time per move is mean ÷ moves (what
a move costs the server beside gRPC's share, which ``croupier load --baseline`` measures).
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

from croupier.app.callers import Caller
from croupier.app.core import Croupier, FoldCache, Refused
from croupier.app.tokens import (
    KeyRing,
    SeatIdentity,
    StudioIdentity,
    TokenSigner,
    mint_studio_token,
)
from croupier.log import EventStore
from croupier.service.bots import choose, play_game
from croupier.service.load import INCLUDE, game_request
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, service_pb2

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


#: The whole game's seeds, the same every round: each round plays the same game.
GAME_SEED = bytes(range(32))
BOT_SEED = 7


async def _seat_plays(
    core: Croupier, game_id: str, seat: int, rng: random.Random, done: asyncio.Event
) -> int:
    """One seat's ``Play`` stream as the load tool's bots use it (batched, legal moves and who is
    to act after each batch): a move whenever the seat is the first to act. Its moves."""
    commands: asyncio.Queue[service_pb2.PlayRequest | None] = asyncio.Queue()
    join = service_pb2.PlayJoin(game_id=game_id, include=INCLUDE, batched=True)
    commands.put_nowait(service_pb2.PlayRequest(join=join))

    async def requests() -> Any:
        while (request := await commands.get()) is not None:
            yield request

    moves, sent = 0, -1
    async for response in core.play(Caller(SeatIdentity(game_id, seat)), requests()):
        if isinstance(response, Refused):
            raise AssertionError(f"seat {seat} refused: {response.error}")
        if response.WhichOneof("kind") == "accepted":
            moves += 1
            continue
        state = response.batch.state
        if state.finished:
            commands.put_nowait(None)
            continue
        acting = state.to_act and state.to_act[0].seat == seat
        if acting and state.legal_moves and state.version > sent:
            sent = state.version
            move = choose(list(state.legal_moves), rng).command
            command = service_pb2.PlayCommand(
                command_id=f"{seat}-{state.version}", expected_version=state.version, command=move
            )
            commands.put_nowait(service_pb2.PlayRequest(command=command))
    done.set()
    return moves


def test_a_hoola_game_through_the_core_per_move(benchmark, tmp_path: Path) -> None:
    """A 3-seat Hoola game (the load tool's default) from CreateGame to its settlement, each seat
    on its own ``Play`` stream of the core, on SQLite: the server's work for a move beside the
    transport. The same game every round (fixed seeds)."""
    store = open_store(f"sqlite:///{tmp_path / 'games.sqlite3'}")
    loop = asyncio.new_event_loop()
    core = Croupier(
        store, TokenSigner(SECRET), seed_source=lambda: GAME_SEED, studio_keys=STUDIO_KEYS
    )
    loop.run_until_complete(core.start(sweep=False))
    studio = Caller(studio=StudioIdentity(STUDIO_KEYS.kid, int(time.time()) + 3600))
    request = game_request("hoola", None, "", None)

    async def one_game() -> int:
        created = await core.create_game(
            studio, request.kind, request.preset, request.seats, request.overrides, ["bench"], []
        )
        rng, done = random.Random(BOT_SEED), asyncio.Event()
        seats = [_seat_plays(core, created.game_id, t.seat, rng, done) for t in created.tokens]
        return sum(await asyncio.gather(*seats))

    try:
        moves = loop.run_until_complete(one_game())  # warm: the threads, connections, caches
        assert moves > 0
        benchmark.extra_info["moves"] = moves
        played = benchmark.pedantic(
            lambda: loop.run_until_complete(one_game()), rounds=15, warmup_rounds=1
        )
        assert played == moves  # the same game every round
    finally:
        loop.run_until_complete(core.close())
        loop.close()
        store.close()
