"""A Play stream reads its client's messages only as fast as the client reads the answers: each
message is answered (a refusal too: an empty message, a command beyond the seat's rate), and the
answers wait in the server's memory until the client reads them. A client that sent a flood of
tiny messages and read nothing grew the server's memory by hundreds of bytes per message, with
no bound; now at most ``PLAY_OUTBOX_LIMIT`` answers wait, and the stream reads no further."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

from croupier.app.callers import Caller
from croupier.app.core import PLAY_OUTBOX_LIMIT, Croupier, Refused
from croupier.app.tokens import KeyRing, SeatIdentity, StudioIdentity, TokenSigner
from croupier.service.store import open_store
from croupier.v1 import common_pb2, service_pb2

SECRET = b"backpressure-secret-0123456789abcdef-01"
STUDIO_KEYS = KeyRing(b"backpressure-studio-0123456789abcdef-01")
#: Messages the client sends after its join, far more than the stream may hold answers for.
FLOOD = 4 * PLAY_OUTBOX_LIMIT


def test_a_play_stream_reads_no_further_while_its_client_reads_nothing(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'games.sqlite3'}")
    sent = 0

    async def flood(game_id: str) -> AsyncIterator[service_pb2.PlayRequest]:
        nonlocal sent
        yield service_pb2.PlayRequest(join=service_pb2.PlayJoin(game_id=game_id))
        for _ in range(FLOOD):
            sent += 1
            yield service_pb2.PlayRequest()  # no command: refused MISSING_FIELD, each answered
        await asyncio.Event().wait()

    async def scenario() -> None:
        core = Croupier(store, TokenSigner(SECRET), studio_keys=STUDIO_KEYS)
        await core.start(sweep=False)
        studio = Caller(studio=StudioIdentity(STUDIO_KEYS.kid, int(time.time()) + 3600))
        created = await core.create_game(
            studio, common_pb2.GAME_KIND_GIN, "standard", 2, None, [], []
        )
        stream = core.play(Caller(SeatIdentity(created.game_id, 0)), flood(created.game_id))
        try:
            # The stream's first message (the client's join is served); then it reads nothing.
            refused = int(isinstance(await anext(aiter(stream)), Refused))
            for _ in range(50):
                await asyncio.sleep(0.01)
            assert sent <= PLAY_OUTBOX_LIMIT + 2, f"{sent} of {FLOOD} messages read"
            # Once the client reads, the rest are read and answered, each in turn.
            while refused < FLOOD:
                item = await anext(aiter(stream))
                if isinstance(item, Refused):
                    assert item.error.reason == "MISSING_FIELD"
                    refused += 1
            assert sent == FLOOD
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
            await core.close()

    try:
        asyncio.run(scenario())
    finally:
        store.close()
