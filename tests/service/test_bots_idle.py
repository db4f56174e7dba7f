"""Bots with idle seats (issue 11, the tools): seats that never send a command, played by the
service's clock. Each game finishes, every idle seat's turns were timed out and forced, and the
replay verifies. Nothing here is timed: the clock runs in real time and only outcomes count."""

from __future__ import annotations

import random

import pytest

from croupier.service.bots import (
    MovesRanOut,
    clock_rules,
    finish_game,
    play_game,
    time_outs,
)
from croupier.v1 import common_pb2, service_pb2

from .conftest import Running, studio_token
from .test_grpc import auth

# Short enough that a game with idle seats finishes in a moment, long enough that a bot's own
# turn on a busy machine is rarely timed out (it would be harmless: the bots look again).
TURN_MS = 150

KINDS = {
    "gin": (common_pb2.GAME_KIND_GIN, 2, "single-hand", (1,)),
    "koikoi": (common_pb2.GAME_KIND_KOIKOI, 2, "nintendo-3", (0,)),
    "rummy": (common_pb2.GAME_KIND_RUMMY, 4, "standard", (2,)),
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_idle_seats_are_played_by_the_clock_and_the_game_finishes(
    server: Running, name: str
) -> None:
    kind, seats, preset, idle = KINDS[name]
    waited: list[list[service_pb2.GameEvent]] = []
    result = play_game(
        server.channel,
        studio=studio_token(),
        kind=kind,
        seats=seats,
        preset=preset,
        overrides=clock_rules(kind, None, TURN_MS),
        rng=random.Random(name),
        idle_seats=idle,
        on_tick=waited.append,
    )
    view = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=result.game_id), metadata=auth(result.tokens[0])
    )
    assert view.finished
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=result.game_id))
    timed = time_outs(replay.events)
    assert {t.seat for _, t in timed} >= set(idle)  # every idle seat was played by the clock
    assert all(e.command_id.startswith("tick:") and not e.HasField("seat") for e, _ in timed)
    # Never a command from an idle seat: its moves are all forced.
    assert not [e for e in replay.events if e.command_payload and e.seat in idle]
    assert waited and all(batch[0].command_id.startswith("tick:") for batch in waited)
    exported = server.stub.ExportReplay(
        service_pb2.ExportReplayRequest(game_id=result.game_id), metadata=auth(result.tokens[0])
    )
    verdict = server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=exported.replay))
    assert verdict.ok, verdict.divergence


def test_a_game_needs_a_seat_that_plays(server: Running) -> None:
    """Refused before any game is created: `croupier demo` with every seat idle once created one
    first, which the service's clock then played to its end for nobody."""
    kind = common_pb2.GAME_KIND_GIN
    created: list[service_pb2.CreateGameResponse] = []
    with pytest.raises(ValueError, match="at least one seat"):
        play_game(
            server.channel,
            studio=studio_token(),
            kind=kind,
            seats=2,
            overrides=clock_rules(kind, None, TURN_MS),
            idle_seats=(0, 1),
            on_created=created.append,
        )
    assert not created


def test_an_unset_seat_count_is_left_to_the_service_and_played(server: Running) -> None:
    """``seats`` 0 is the game's default (Rummy: 4), known once the game is made: the check for
    a seat that plays waits for it (before, no seat of none played, and the game was refused)."""
    result = play_game(
        server.channel,
        studio=studio_token(),
        kind=common_pb2.GAME_KIND_RUMMY,
        seats=0,
        rng=random.Random(0),
    )
    assert len(result.tokens) == 4 and result.final is not None


def test_bots_out_of_moves_say_so_and_leave_the_game_as_it_was(server: Running) -> None:
    """A game still going when the bots reach their most moves is reported as such, not met as
    GetSettlement's "not over yet"; the game is untouched and plays on."""
    created: list[service_pb2.CreateGameResponse] = []
    with pytest.raises(MovesRanOut, match="still going after 5 moves"):
        play_game(
            server.channel,
            studio=studio_token(),
            kind=common_pb2.GAME_KIND_GIN,
            seats=2,
            rng=random.Random(3),
            max_moves=5,
            on_created=created.append,
        )
    game_id, tokens = created[0].game_id, [t.token for t in created[0].tokens]
    view = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game_id), metadata=auth(tokens[0])
    )
    assert not view.finished
    assert finish_game(server.channel, game_id, tokens, random.Random(3)).final.net
