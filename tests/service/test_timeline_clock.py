"""The replay timeline of a game on the turn clock, recorded through the service: a seat times
out (the test moves the servers' clock, and a sweep records it), becomes away, comes back with a
command of its own, and the game is played to its end; the timeline says all of it."""

from __future__ import annotations

import random
import uuid

from croupier.replays.format import from_binary
from croupier.replays.timeline import FORCED, TIME_MADE_DUE, render_text, timeline
from croupier.service.bots import auth, finish_game
from croupier.v1 import common_pb2, rummy_pb2, service_pb2

from .conftest import Running, studio_auth
from .test_grpc import settle

TURN_MS = 20_000


def test_the_timeline_shows_a_time_out_an_away_seat_and_its_return(server: Running) -> None:
    rules = rummy_pb2.RummyRules(turn_time_ms=TURN_MS, max_timeouts=1)
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=common_pb2.GAME_KIND_RUMMY,
            seats=2,
            preset="open-30",
            overrides=service_pb2.Rules(rummy=rules),
            client_seeds=["timeline"],
        ),
        metadata=studio_auth(),
    )
    tokens = [t.token for t in game.tokens]
    late = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(tokens[0])
    ).to_act[0]
    server.clock.advance(TURN_MS + 1)
    settle(server)  # the time-out, recorded by a sweep: the seat is away (max_timeouts 1)
    legal = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=auth(tokens[late.seat])
    )
    (back,) = [m for m in legal.moves if m.command.rummy.WhichOneof("move") == "come_back"]
    server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id,
            command_id=uuid.uuid4().hex,
            expected_version=legal.version,
            command=back.command,
        ),
        metadata=auth(tokens[late.seat]),
    )
    finish_game(server.channel, game.game_id, tokens, random.Random(7))
    exported = server.stub.ExportReplay(
        service_pb2.ExportReplayRequest(game_id=game.game_id), metadata=auth(tokens[0])
    )
    shown = timeline(from_binary(exported.replay))
    text = render_text(shown)
    (due,) = [s for s in shown.steps if s.move == TIME_MADE_DUE]
    assert due.seat is None and due.happened[0].startswith(
        f"Seat {late.seat} timed out: its deadline was "
    )
    assert f"Seat {late.seat} is away from now on" in due.happened[0]
    assert due.happened[1:] and all(line.startswith(FORCED) for line in due.happened[1:])
    assert f"Seat {late.seat} came back (a command of its own)" in text
    assert f"the service: {TIME_MADE_DUE}" in text
