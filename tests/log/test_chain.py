"""The hash chain as the log layer makes it (``chained``) and checks it (``verify_chain``): what
every store appends is what a replay's verifier accepts, in either log format, batch after batch,
and no stored column can change unseen."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from croupier.log import (
    GENESIS_HASH,
    LOG_FORMATS,
    GameRecord,
    NewEvent,
    StoredEvent,
    chained,
    key_of,
    verify_chain,
)

new_events = st.lists(
    st.builds(NewEvent, st.text(min_size=1, max_size=12), st.binary(max_size=40)),
    min_size=1,
    max_size=5,
)
batches = st.lists(
    st.tuples(
        new_events,
        st.text(min_size=1, max_size=12),  # the command id
        st.none() | st.integers(0, 6),  # the seat (none: the service's own batch)
        st.binary(max_size=20),  # the command's bytes
    ),
    min_size=1,
    max_size=4,
)
games = st.builds(
    GameRecord,
    game_id=st.uuids().map(str),
    kind=st.just("gin"),
    seats=st.just(2),
    server_seed=st.binary(min_size=32, max_size=32),
    commitment=st.just("c"),
    created_at_ms=st.just(0),
    log_format=st.sampled_from(LOG_FORMATS),
)


def _appended(
    game: GameRecord, batches: list[tuple[list[NewEvent], str, int | None, bytes]]
) -> list[StoredEvent]:
    """The game's log after each batch is appended where the last one ended, as a store does."""
    log: list[StoredEvent] = []
    for at_ms, (events, command_id, seat, command) in enumerate(batches, 1):
        prev_hash = log[-1].hash if log else GENESIS_HASH
        log += chained(game, len(log), prev_hash, events, command_id, seat, at_ms, command)
    return log


@given(games, batches)
def test_what_a_store_appends_verifies_batch_after_batch(
    game: GameRecord, batches: list[tuple[list[NewEvent], str, int | None, bytes]]
) -> None:
    log = _appended(game, batches)
    assert verify_chain(log, key_of(game)) is None
    assert [e.version for e in log] == list(range(1, len(log) + 1))
    # A batch's command goes with its first event only.
    start = 0
    for events, _, _, command in batches:
        assert [e.command for e in log[start : start + len(events)]] == [command] + [b""] * (
            len(events) - 1
        )
        start += len(events)


@given(games, batches, st.data())
def test_any_stored_column_changed_breaks_the_chain_there(
    game: GameRecord,
    batches: list[tuple[list[NewEvent], str, int | None, bytes]],
    data: st.DataObject,
) -> None:
    log = _appended(game, batches)
    at = data.draw(st.integers(0, len(log) - 1))
    event = log[at]
    column, value = data.draw(
        st.sampled_from(
            [
                ("command_id", event.command_id + "x"),
                ("seat", 7 if event.seat is None else None),
                ("recorded_at_ms", event.recorded_at_ms + 1),
                ("type", event.type + "x"),
                ("payload", event.payload + b"x"),
                ("command", event.command + b"x"),
            ]
        )
    )
    log[at] = dataclasses.replace(event, **{column: value})
    assert verify_chain(log, key_of(game)) == event.version
