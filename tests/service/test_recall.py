"""Last-game recall: a player's ten latest finished games, and any of them as its seat saw it."""

from __future__ import annotations

import random

import grpc

from croupier.service.bots import auth, play_game
from croupier.v1 import common_pb2, service_pb2

from .conftest import Running
from .test_grpc import error_of


def test_a_player_recalls_the_last_ten_finished_games(server: Running) -> None:
    alice = f"alice-{random.random()}"
    played = []
    for n in range(12):
        seats = [alice, f"bob-{n}"] if n % 2 else [f"bob-{n}", alice]
        result = play_game(server.channel, seats=2, rng=random.Random(n), players=seats)
        played.append((result.game_id, seats.index(alice), result.final))
    unfinished = server.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=common_pb2.GAME_KIND_HOOLA, seats=2, players=[alice, "carol"]
        )
    )
    assert unfinished.tokens[0].player == alice
    token = auth(unfinished.tokens[0].token)
    recent = server.stub.ListRecentGames(
        service_pb2.ListRecentGamesRequest(game_id=unfinished.game_id), metadata=token
    )
    assert recent.player == alice and len(recent.games) == 10
    expected = {game_id: (seat, final) for game_id, seat, final in played}
    assert {g.game_id for g in recent.games} <= set(expected) and unfinished.game_id not in {
        g.game_id for g in recent.games
    }
    times = [g.finished_at_ms for g in recent.games]
    assert times == sorted(times, reverse=True)
    for game in recent.games:
        seat, final = expected[game.game_id]
        assert game.seat == seat and game.settlement == final and game.net == final.net[seat]
        assert game.outcome == final.outcome and game.kind == common_pb2.GAME_KIND_HOOLA
    # Any of them as the player's seat saw it: the other hand hidden, the seed not revealed.
    chosen = recent.games[0]
    seen = server.stub.GetRecentGame(
        service_pb2.GetRecentGameRequest(game_id=unfinished.game_id, recent_game_id=chosen.game_id),
        metadata=token,
    ).replay
    dealt = seen.events[1].body.hoola.round_dealt
    assert len(dealt.hands[chosen.seat].cards) == 7 and not dealt.hands[1 - chosen.seat].cards
    assert not dealt.stock and not seen.server_seed and seen.events[1].redacted
    assert seen.engine_version == "1"


def test_recall_needs_player_ids_and_the_players_own_games(server: Running) -> None:
    code, info, fields = error_of(
        lambda: server.stub.CreateGame(
            service_pb2.CreateGameRequest(
                kind=common_pb2.GAME_KIND_HOOLA, seats=3, players=["a", "b"]
            )
        )
    )
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_PLAYERS",
        ["players"],
    )
    anonymous = server.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_HOOLA, seats=2)
    )
    code, info, _ = error_of(
        lambda: server.stub.ListRecentGames(
            service_pb2.ListRecentGamesRequest(game_id=anonymous.game_id),
            metadata=auth(anonymous.tokens[0].token),
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "NO_PLAYER_IDS")
    mine = server.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=common_pb2.GAME_KIND_HOOLA, seats=2, players=["dave", "erin"]
        )
    )
    other = play_game(server.channel, seats=2, rng=random.Random(1), players=["frank", "grace"])
    code, info, _ = error_of(
        lambda: server.stub.GetRecentGame(
            service_pb2.GetRecentGameRequest(game_id=mine.game_id, recent_game_id=other.game_id),
            metadata=auth(mine.tokens[0].token),
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.NOT_FOUND, "NOT_A_RECENT_GAME")
    code, _, _ = error_of(
        lambda: server.stub.ListRecentGames(
            service_pb2.ListRecentGamesRequest(game_id=mine.game_id)
        )
    )
    assert code == grpc.StatusCode.UNAUTHENTICATED
