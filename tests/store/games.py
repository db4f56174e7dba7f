"""What the store tests share: a game to append to."""

from __future__ import annotations

import uuid

from croupier.log import EventStore, GameRecord, NewEvent


def new_game(store: EventStore) -> str:
    """A 2-seat game of one event (version 1) in ``store``: its id."""
    game_id = str(uuid.uuid4())
    store.create_game(
        GameRecord(game_id, "hoola", 2, b"s" * 32, "c" * 64, 1), [NewEvent("E", b"e")], 1
    )
    return game_id
