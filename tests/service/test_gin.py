"""Gin Rummy over real gRPC, against both stores: the same contract, store and replay log."""

from __future__ import annotations

import random

import grpc

from croupier.service.bots import auth, play_game
from croupier.v1 import common_pb2, gin_pb2, service_pb2

from .conftest import Running, studio_auth, studio_token
from .test_grpc import error_of, verify_chain

GIN = common_pb2.GAME_KIND_GIN


def test_a_whole_match_is_played_settled_and_chained(server: Running) -> None:
    overrides = service_pb2.Rules(gin=gin_pb2.GinRules(match_points=30, stake_per_point=2))
    result = play_game(
        server.channel,
        studio=studio_token(),
        seats=2,
        kind=GIN,
        rng=random.Random(5),
        client_seed="gin",
        overrides=overrides,
    )
    assert result.final.outcome == "MATCH_OVER" and result.rounds
    assert list(result.final.net) == [sum(r.net[s] for r in result.rounds) for s in (0, 1)]
    assert all(line.amount % 2 == 0 for r in result.rounds for line in r.lines)
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=result.game_id))
    assert replay.finished and replay.kind == GIN and replay.rules.gin.match_points == 30
    verify_chain(replay)
    bodies = [e.body.gin for e in replay.events[:-1]]
    assert bodies[0].HasField("match_started") and bodies[-1].HasField("match_ended")
    dealt = bodies[1].hand_dealt
    cards = [c.code for h in dealt.hands for c in h.cards] + [c.code for c in dealt.stock]
    assert len(set(cards + [dealt.upcard.code])) == 52
    assert any(b.HasField("knocked") for b in bodies)


def test_the_stock_draw_is_hidden_from_the_other_seat(server: Running) -> None:
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=GIN, seats=2), metadata=studio_auth()
    )
    view = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    ).view.gin
    first = view.turn
    assert view.phase == gin_pb2.GIN_PHASE_FIRST_UPCARD and len(view.hand) == 10
    version = game.version
    for seat, move in ((first, "pass"), (1 - first, "pass"), (first, "draw_stock")):
        command = service_pb2.Command(gin=gin_pb2.GinCommand(**{move: {}}))
        version = server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id=f"{seat}-{move}-{version}",
                expected_version=version,
                command=command,
            ),
            metadata=auth(game.tokens[seat].token),
        ).version
    mine = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[first].token)
    ).view.gin
    assert len(mine.hand) == 11 and mine.phase == gin_pb2.GIN_PHASE_DISCARD
    theirs = server.stub.GetReplay(
        service_pb2.GetReplayRequest(game_id=game.game_id),
        metadata=auth(game.tokens[1 - first].token),
    )
    drawn = theirs.events[-1].body.gin.card_drawn
    assert drawn.seat == first and not drawn.from_discard and not drawn.card.code
    dealt = theirs.events[1].body.gin.hand_dealt
    assert not dealt.hands[first].cards and dealt.hands[first].count == 10 and not dealt.stock
    legal = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id),
        metadata=auth(game.tokens[first].token),
    )
    assert {m.label.split(" ")[0] for m in legal.moves} <= {"Discard"}
    code, info, _ = error_of(
        lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id="early-knock",
                expected_version=version,
                command=service_pb2.Command(gin=gin_pb2.GinCommand(knock=gin_pb2.Knock(card="ZZ"))),
            ),
            metadata=auth(game.tokens[first].token),
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_CARD")
