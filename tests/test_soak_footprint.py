"""What a process keeps of games once they are over and their streams gone (the operator's soak
test, docs/operations.md "Memory and disk over time"): nothing per game, seat or stream but
entries of caches within their bounds. Games are played to the end with every seat's stream
open; half the streams are closed, the others dropped as a client that vanishes drops them."""

from __future__ import annotations

import asyncio
import gc
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

from croupier.app.callers import Caller
from croupier.app.core import Croupier
from croupier.app.recent import RecentEvents
from croupier.app.tokens import KeyRing, SeatIdentity, StudioIdentity, TokenSigner
from croupier.service.store import open_store
from croupier.v1 import common_pb2, hoola_pb2, service_pb2

SECRET = b"soak-footprint-secret-0123456789abcdef"
STUDIO_KEYS = KeyRing(b"soak-footprint-studio-0123456789abcdef")
GAMES = 6
SEATS = 2
# Small bounds, so that a handful of games passes them.
RECENT_GAMES, RECENT_PER_GAME, RECENT_EVENTS = 4, 16, 40
# Short games: a table of one round of Hoola.
ONE_ROUND = service_pb2.Rules(hoola=hoola_pb2.HoolaRules(rounds=1))
# Loop turns given to the streams dropped to be finalized (their closing is scheduled).
SETTLE_TURNS = 20


async def _play_to_the_end(core: Croupier, seats: list[Caller], game_id: str) -> None:
    """Each time, the first legal move of the first seat that has one."""
    while not (await core.view(seats[0], game_id)).finished:
        for seat in seats:
            legal = await core.legal_moves(seat, game_id)
            if legal.moves:
                await core.submit(
                    seat, game_id, uuid.uuid4().hex, legal.version, legal.moves[0].command
                )
                break


def test_nothing_of_finished_games_or_their_streams_stays(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'games.sqlite3'}")

    async def scenario() -> None:
        core = Croupier(store, TokenSigner(SECRET), studio_keys=STUDIO_KEYS)
        core.recent = RecentEvents(RECENT_GAMES, RECENT_PER_GAME, RECENT_EVENTS)
        await core.start(sweep=False)
        studio = Caller(studio=StudioIdentity(STUDIO_KEYS.kid, int(time.time()) + 3600))
        include = service_pb2.Include(view=True)
        for n in range(GAMES):
            created = await core.create_game(
                studio, common_pb2.GAME_KIND_HOOLA, "", SEATS, ONE_ROUND, [], []
            )
            game_id = created.game_id
            seats = [Caller(SeatIdentity(game_id, s)) for s in range(SEATS)]
            streams: list[AsyncIterator[object]] = [
                core.subscribe(seat, game_id, include=include) for seat in seats
            ]
            for stream in streams:
                await anext(aiter(stream))  # open, counted, waiting on the game
            assert core.notifier.streams(game_id) == SEATS
            await _play_to_the_end(core, seats, game_id)
            if n % 2:
                for stream in streams:
                    await stream.aclose()  # type: ignore[attr-defined]
            del streams, stream  # the others are dropped: a client that vanished
        gc.collect()
        for _ in range(SETTLE_TURNS):
            await asyncio.sleep(0)
        assert core.notifier.streams() == 0 and core.notifier.watched() == []
        assert core.streams._streams == {}  # no token holds a stream
        assert core._ticks == {} and not core._background
        # Every memory of recent events the process holds, the streams' included (they read
        # and fill the one they were given: a core whose memory was replaced after it was made
        # kept streaming into the old one, past these bounds).
        for recent in (core.recent, core.streams.recent):
            assert len(recent) <= RECENT_GAMES and recent.events <= RECENT_EVENTS
        await core.close()

    try:
        asyncio.run(scenario())
    finally:
        store.close()
