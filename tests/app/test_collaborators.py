"""The core's collaborators (the live streams, the replay use cases) share its caches and keys: one
replaced on the core after it was made (as tests and benchmarks do) is the one they use, not the
old one."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from croupier.app.callers import Caller
from croupier.app.core import Croupier, FoldCache
from croupier.app.recent import RecentEvents
from croupier.app.tokens import KeyRing, SeatIdentity, StudioIdentity, TokenSigner
from croupier.replays.signing import ReplayKeys
from croupier.service.store import open_store
from croupier.v1 import common_pb2

SECRET = b"collaborators-secret-0123456789abcdef"
STUDIO_KEYS = KeyRing(b"collaborators-studio-0123456789abcdef")
SEATS = 2
STUDIO_TOKEN_TTL_S = 3600
#: Moves made before the stream resumes: many more than the memory holds.
MOVES = 12


def test_a_cache_or_memory_replaced_on_the_core_is_the_one_its_streams_use(
    tmp_path: Path,
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'games.sqlite3'}")

    async def scenario() -> None:
        core = Croupier(store, TokenSigner(SECRET), studio_keys=STUDIO_KEYS)
        replaced_recent, replaced_cache = RecentEvents(), FoldCache()
        core.recent, core.cache = replaced_recent, replaced_cache
        await core.start(sweep=False)
        studio = Caller(
            studio=StudioIdentity(STUDIO_KEYS.kid, int(time.time()) + STUDIO_TOKEN_TTL_S)
        )
        created = await core.create_game(
            studio, common_pb2.GAME_KIND_GIN, "standard", SEATS, None, [], []
        )
        stream = core.subscribe(Caller(SeatIdentity(created.game_id, 0)), created.game_id)
        first = await anext(aiter(stream))
        assert first.event.version >= 1
        await stream.aclose()
        assert core.recent is replaced_recent and core.cache is replaced_cache
        assert core.streams.recent is replaced_recent, "the streams read the replaced memory"
        assert core.streams.cache is replaced_cache, "the streams read the replaced cache"
        keys = ReplayKeys()
        core.replay_keys = keys
        assert core.replay_keys is keys and core.replays.replay_keys is keys
        held = replaced_recent.get(created.game_id)
        assert held is not None and held.version == created.version
        await core.close()

    try:
        asyncio.run(scenario())
    finally:
        store.close()


def test_a_stream_resuming_from_before_the_memory_gets_every_event_from_the_store(
    tmp_path: Path,
) -> None:
    """With a memory of recent events far smaller than a game (its history dropped for another
    game's), a stream from version 0 still gets every event the store holds, once each, in order."""
    store = open_store(f"sqlite:///{tmp_path / 'games.sqlite3'}")

    async def scenario() -> None:
        core = Croupier(store, TokenSigner(SECRET), studio_keys=STUDIO_KEYS)
        core.recent = RecentEvents(games=1, per_game=2, events=2)
        await core.start(sweep=False)
        studio = Caller(
            studio=StudioIdentity(STUDIO_KEYS.kid, int(time.time()) + STUDIO_TOKEN_TTL_S)
        )
        game_id = (
            await core.create_game(
                studio, common_pb2.GAME_KIND_GIN, "standard", SEATS, None, [], []
            )
        ).game_id
        seats = [Caller(SeatIdentity(game_id, s)) for s in range(SEATS)]
        for _ in range(MOVES):
            for seat in seats:
                legal = await core.legal_moves(seat, game_id)
                if legal.moves:
                    await core.submit(
                        seat, game_id, f"m{legal.version}", legal.version, legal.moves[0].command
                    )
                    break
        # Another game: this one's history leaves the memory.
        await core.create_game(studio, common_pb2.GAME_KIND_GIN, "standard", SEATS, None, [], [])
        assert core.recent.get(game_id) is None
        stored = [e.version for e in store.read(game_id)]
        assert len(stored) > MOVES
        stream = core.subscribe(seats[0], game_id, after_version=0)
        streamed: list[int] = []
        while len(streamed) < len(stored):
            streamed.append((await anext(aiter(stream))).event.version)
        await stream.aclose()
        assert streamed == stored
        await core.close()

    try:
        asyncio.run(scenario())
    finally:
        store.close()
