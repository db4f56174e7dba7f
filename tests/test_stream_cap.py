"""A seat's or a player's token holds at most ``max_streams_per_token`` live streams on a process
(StreamEvents and Play together): one token once held 20,000 (274 MB of the server's memory),
and a player's token may watch any game. The next is refused ``RESOURCE_EXHAUSTED``
``TOO_MANY_STREAMS`` until one ends; the studio's backend is not held to it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from croupier.app.callers import Caller
from croupier.app.core import MAX_STREAMS_PER_TOKEN, Croupier
from croupier.app.errors import TOO_MANY_STREAMS, TooManyStreams
from croupier.app.tokens import (
    KeyRing,
    PlayerIdentity,
    SeatIdentity,
    StudioIdentity,
    TokenSigner,
)
from croupier.service.store import open_store
from croupier.v1 import common_pb2, service_pb2

SECRET = b"stream-cap-secret-0123456789abcdef-01"
STUDIO_KEYS = KeyRing(b"stream-cap-studio-0123456789abcdef-01")
CAP = 3


async def _opened(stream: AsyncIterator[object]) -> None:
    """The stream's first message: it is open and counted."""
    await anext(aiter(stream))


async def _join(game_id: str) -> AsyncIterator[service_pb2.PlayRequest]:
    yield service_pb2.PlayRequest(join=service_pb2.PlayJoin(game_id=game_id))
    await asyncio.Event().wait()  # a seat that sends nothing more


def test_a_token_holds_at_most_its_share_of_live_streams(tmp_path: Path) -> None:
    assert MAX_STREAMS_PER_TOKEN >= 10  # the load tool holds ten on a game, over its seats
    store = open_store(f"sqlite:///{tmp_path / 'games.sqlite3'}")

    async def scenario() -> None:
        core = Croupier(store, TokenSigner(SECRET), studio_keys=STUDIO_KEYS)
        core.max_streams_per_token = CAP
        await core.start(sweep=False)
        expires = int(time.time()) + 3600
        studio = Caller(studio=StudioIdentity(STUDIO_KEYS.kid, expires))
        created = await core.create_game(
            studio, common_pb2.GAME_KIND_GIN, "standard", 2, None, [], []
        )
        game_id = created.game_id
        seat = Caller(SeatIdentity(game_id, 0))
        state = service_pb2.Include(view=True)
        # StreamEvents and Play count together.
        streams = [core.subscribe(seat, game_id, include=state) for _ in range(CAP - 1)]
        streams.append(core.play(seat, _join(game_id)))
        for stream in streams:
            await _opened(stream)
        with pytest.raises(TooManyStreams) as refused:
            await _opened(core.subscribe(seat, game_id, include=state))
        assert refused.value.reason == TOO_MANY_STREAMS
        assert refused.value.metadata["max_streams"] == str(CAP)
        # Another seat of the game, the studio and a player are counted apart (the studio not
        # at all).
        await _opened(core.subscribe(Caller(SeatIdentity(game_id, 1)), game_id, include=state))
        for _ in range(CAP + 1):
            await _opened(core.subscribe(studio, game_id, include=state))
        player = Caller(player=PlayerIdentity("alice", expires))
        watching = [core.subscribe(player, game_id, include=state) for _ in range(CAP)]
        for stream in watching:
            await _opened(stream)
        with pytest.raises(TooManyStreams):
            await _opened(core.subscribe(player, game_id, include=state))
        # A stream that ends gives its place back at once.
        await streams[-1].aclose()  # type: ignore[attr-defined]
        await _opened(core.subscribe(seat, game_id, include=state))

    try:
        asyncio.run(scenario())
    finally:
        store.close()
