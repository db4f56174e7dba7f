"""A stream that ends for a shutdown has sent every event up to the version it says to resume
after. StreamEvents and Play share one feed (``Streams._feed``): a batched StreamEvents, whose
events wait to go out with the state after them, ended SERVER_SHUTTING_DOWN naming the version of
events it had never sent when the state it waited for was a turn's time-out (recorded first, its
batch to bring the state) and the drain came meanwhile: its client resumed after them, and never
saw them. Play always sent them first; now both do, through the same code."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from croupier.app.callers import Caller
from croupier.app.core import Croupier
from croupier.app.errors import ShuttingDown
from croupier.app.tokens import KeyRing, SeatIdentity, StudioIdentity, TokenSigner
from croupier.service.store import open_store
from croupier.v1 import common_pb2, gin_pb2, service_pb2

SECRET = b"drain-batched-secret-0123456789abcdef-01"
STUDIO_KEYS = KeyRing(b"drain-batched-studio-0123456789abcdef-01")
TURN_MS = 1000
START_MS = 1_700_000_000_000
WAIT_S = 10.0


@pytest.mark.parametrize("call", ["StreamEvents", "Play"])
@pytest.mark.parametrize("batched", [True, False])
def test_a_stream_ended_by_a_drain_has_sent_every_event_it_says_it_has(
    tmp_path: Path, call: str, batched: bool
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'games.sqlite3'}")
    now = [START_MS]

    async def scenario() -> None:
        core = Croupier(store, TokenSigner(SECRET), clock=lambda: now[0], studio_keys=STUDIO_KEYS)
        await core.start(sweep=False)
        studio = Caller(studio=StudioIdentity(STUDIO_KEYS.kid, int(time.time()) + 3600))
        rules = service_pb2.Rules(gin=gin_pb2.GinRules(turn_time_ms=TURN_MS))
        created = await core.create_game(
            studio, common_pb2.GAME_KIND_GIN, "standard", 2, rules, [], []
        )
        game_id = created.game_id
        seat = Caller(SeatIdentity(game_id, 0))
        include = service_pb2.Include(view=True)

        async def join() -> AsyncIterator[service_pb2.PlayRequest]:
            yield service_pb2.PlayRequest(
                join=service_pb2.PlayJoin(game_id=game_id, include=include, batched=batched)
            )
            await asyncio.Event().wait()  # the client sends nothing more

        stream: AsyncIterator[Any] = (
            core.subscribe(seat, game_id, include=include, batched=batched)
            if call == "StreamEvents"
            else core.play(seat, join())
        )
        sent: list[int] = []  # the versions of the events the client was sent

        async def read() -> Any:
            async with asyncio.timeout(WAIT_S):
                response = await anext(aiter(stream))
            if response.HasField("event"):
                sent.append(response.event.version)
            sent.extend(e.version for e in response.batch.events)
            return response

        try:
            # The stream's first batch and the state after it: the client is up to date.
            response = await read()  # batched: the events and their state in one message
            while not batched and not response.HasField("state"):
                response = await read()
            assert sent == list(range(1, created.version + 1))
            # The stream waits for news. The seat to act moves; its next turn runs out before
            # the stream has sent the state after the move, and the process starts shutting
            # down meanwhile.
            waiting = asyncio.create_task(read())
            await asyncio.sleep(0.05)
            assert not waiting.done()
            view = await core.view(seat, game_id)
            actor = Caller(SeatIdentity(game_id, view.to_act[0].seat))
            moves = await core.legal_moves(actor, game_id)
            moved = await core.submit(
                actor, game_id, "first", created.version, moves.moves[0].command
            )
            now[0] += 10 * TURN_MS
            core.drain()

            async def to_the_end() -> None:
                await waiting
                while True:
                    await read()

            with pytest.raises(ShuttingDown) as ended:
                await to_the_end()
            resume_after = ended.value.after_version
            assert resume_after >= moved.version
            # Every event up to where the client is told to resume was sent to it, once each.
            assert sent == list(range(1, resume_after + 1))
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
            await core.close()

    try:
        asyncio.run(scenario())
    finally:
        store.close()
