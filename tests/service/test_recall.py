"""Last-game recall: a player's ten latest finished games, and any of them as its seat saw it.

Recall acts for the player a studio-signed player token names, never for a seat: a seat token
says which seat, not who sits there (issue 13, item 4).
"""

from __future__ import annotations

import base64
import random

import grpc
import pytest

from croupier.app.tokens import mint_player_token
from croupier.service.bots import auth, play_game
from croupier.v1 import common_pb2, service_pb2

from .conftest import STUDIO_SECRET, Running, player_auth, studio_auth, studio_token
from .test_grpc import error_of


def unique(name: str) -> str:
    """A player id of this test only (the module's server keeps every test's games)."""
    return f"{name}-{random.random()}"


def test_a_player_recalls_the_last_ten_finished_games(server: Running) -> None:
    alice = unique("alice")
    played = []
    for n in range(12):
        seats = [alice, f"bob-{n}"] if n % 2 else [f"bob-{n}", alice]
        result = play_game(
            server.channel, studio=studio_token(), seats=2, rng=random.Random(n), players=seats
        )
        played.append((result.game_id, seats.index(alice), result.final))
    unfinished = server.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=common_pb2.GAME_KIND_HOOLA, seats=2, players=[alice, "carol"]
        ),
        metadata=studio_auth(),
    )
    assert unfinished.tokens[0].player == alice
    token = player_auth(alice)
    recent = server.stub.ListRecentGames(service_pb2.ListRecentGamesRequest(), metadata=token)
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
        service_pb2.GetRecentGameRequest(recent_game_id=chosen.game_id), metadata=token
    ).replay
    dealt = seen.events[1].body.hoola.round_dealt
    assert len(dealt.hands[chosen.seat].cards) == 7 and not dealt.hands[1 - chosen.seat].cards
    assert not dealt.stock and not seen.server_seed and seen.events[1].redacted
    assert seen.engine_version == "1"


@pytest.mark.parametrize("players", [["a", "b"], ["a", "b", ""], ["a", "b", "a"]])
def test_players_must_be_named_one_per_seat(server: Running, players: list[str]) -> None:
    """One id a seat, each at one seat only (a player at two seats was recalled at one of them,
    with that seat's result as the whole of theirs)."""
    code, info, fields = error_of(
        lambda: server.stub.CreateGame(
            service_pb2.CreateGameRequest(
                kind=common_pb2.GAME_KIND_HOOLA, seats=3, players=players
            ),
            metadata=studio_auth(),
        )
    )
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_PLAYERS",
        ["players"],
    )


def test_the_old_attack_no_longer_reads_a_victims_history(server: Running) -> None:
    """Before: anyone created a game naming the victim's player id, and that game's seat token
    listed and opened the victim's games. Now creation takes the studio's credential, and recall
    a player token the studio signed."""
    victim = unique("victim")
    theirs = play_game(
        server.channel,
        studio=studio_token(),
        seats=2,
        rng=random.Random(3),
        players=[victim, unique("friend")],
    )
    # 1. Naming the victim in a new game, without the studio's credential: refused.
    naming = service_pb2.CreateGameRequest(
        kind=common_pb2.GAME_KIND_HOOLA, seats=2, players=[victim, unique("attacker")]
    )
    code, info, _ = error_of(lambda: server.stub.CreateGame(naming))
    assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "STUDIO_CREDENTIAL_REQUIRED")
    # 2. Even at a table the studio seated them at together, a seat token does not open recall:
    # not the victim's seat's, nor the attacker's own.
    shared = server.stub.CreateGame(naming, metadata=studio_auth())
    for seat_token in shared.tokens:
        code, info, _ = error_of(
            lambda t=seat_token: server.stub.ListRecentGames(
                service_pb2.ListRecentGamesRequest(game_id=shared.game_id), metadata=auth(t.token)
            )
        )
        assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "PLAYER_TOKEN_REQUIRED")
        code, info, _ = error_of(
            lambda t=seat_token: server.stub.GetRecentGame(
                service_pb2.GetRecentGameRequest(
                    game_id=shared.game_id, recent_game_id=theirs.game_id
                ),
                metadata=auth(t.token),
            )
        )
        assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "PLAYER_TOKEN_REQUIRED")
    # 3. Nor does no token at all.
    code, info, _ = error_of(
        lambda: server.stub.ListRecentGames(service_pb2.ListRecentGamesRequest())
    )
    assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "PLAYER_TOKEN_REQUIRED")


def test_a_player_token_recalls_its_own_players_games_only(server: Running) -> None:
    mine, other = unique("mine"), unique("other")
    my_game = play_game(
        server.channel,
        studio=studio_token(),
        seats=2,
        rng=random.Random(5),
        players=[mine, unique("x")],
    )
    their_game = play_game(
        server.channel,
        studio=studio_token(),
        seats=2,
        rng=random.Random(6),
        players=[unique("y"), other],
    )
    me = player_auth(mine)
    # The request's deprecated game_id and seat are ignored: the token says who.
    listed = server.stub.ListRecentGames(
        service_pb2.ListRecentGamesRequest(game_id=their_game.game_id, seat=1), metadata=me
    )
    assert listed.player == mine and [g.game_id for g in listed.games] == [my_game.game_id]
    code, info, _ = error_of(
        lambda: server.stub.GetRecentGame(
            service_pb2.GetRecentGameRequest(recent_game_id=their_game.game_id), metadata=me
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.NOT_FOUND, "NOT_A_RECENT_GAME")
    # A player with no games has none.
    empty = server.stub.ListRecentGames(
        service_pb2.ListRecentGamesRequest(), metadata=player_auth(unique("nobody"))
    )
    assert not empty.games


def test_player_tokens_expire_and_cannot_be_forged(server: Running) -> None:
    player = unique("p")
    now_s = server.clock() // 1000
    code, info, _ = error_of(
        lambda: server.stub.ListRecentGames(
            service_pb2.ListRecentGamesRequest(), metadata=player_auth(player, now_s - 1)
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_EXPIRED")
    # Good for a minute: the server's clock moved past it, refused.
    minute = player_auth(player, now_s + 60)
    assert server.stub.ListRecentGames(service_pb2.ListRecentGamesRequest(), metadata=minute)
    server.clock.advance(61_000)
    code, info, _ = error_of(
        lambda: server.stub.ListRecentGames(service_pb2.ListRecentGamesRequest(), metadata=minute)
    )
    assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_EXPIRED")
    # Signed by someone else (another studio, an attacker's own key): not one of our keys.
    foreign = mint_player_token(b"someone-else-entirely-0123456789ab", player, 4_000_000_000)
    code, info, _ = error_of(
        lambda: server.stub.ListRecentGames(
            service_pb2.ListRecentGamesRequest(), metadata=auth(foreign)
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "UNKNOWN_KEY")
    # Our key id, another player put in: the signature no longer matches.
    parts = mint_player_token(STUDIO_SECRET, player, 4_000_000_000).split(".")
    parts[3] = base64.urlsafe_b64encode(unique("victim").encode()).decode().rstrip("=")
    code, info, _ = error_of(
        lambda: server.stub.ListRecentGames(
            service_pb2.ListRecentGamesRequest(), metadata=auth(".".join(parts))
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "INVALID_TOKEN")


def test_the_replay_names_the_players_and_the_timeline_shows_them(server: Running) -> None:
    """The studio's player ids travel in the replay's header (the service's word, not hashed:
    both verifiers still verify the file) and the timeline names each seat's player."""
    from croupier.replays.format import from_binary
    from croupier.replays.timeline import render_text, timeline
    from croupier.replays.verify import verify

    seats = [unique("dana"), unique("eve")]
    result = play_game(
        server.channel, studio=studio_token(), seats=2, rng=random.Random(5), players=seats
    )
    exported = server.stub.ExportReplay(
        service_pb2.ExportReplayRequest(game_id=result.game_id), metadata=studio_auth()
    )
    replay = from_binary(exported.replay)
    assert list(replay.header.players) == seats and verify(replay).ok
    text = render_text(timeline(replay))
    assert all(f"seat {s}: player {p}" in text for s, p in enumerate(seats))
    # Anyone else who knows the game's id exports it without them (a studio's account ids are
    # not its players' or spectators' to read), and it verifies all the same.
    for metadata in ((), auth(result.tokens[0])):
        bare = from_binary(
            server.stub.ExportReplay(
                service_pb2.ExportReplayRequest(game_id=result.game_id), metadata=metadata
            ).replay
        )
        assert not bare.header.players and verify(bare).ok


def test_recall_with_another_credential_says_which_was_sent(server: Running) -> None:
    """PLAYER_TOKEN_REQUIRED names what came instead: before, a studio's backend calling with
    its own credential was told it had sent a seat token."""
    game = play_game(server.channel, studio=studio_token(), seats=2, rng=random.Random(3))
    for metadata, said in (
        (studio_auth(), "came with the studio's credential"),
        (auth(game.tokens[0]), "came with a seat token"),
        ((), "came with none"),
    ):
        with pytest.raises(grpc.RpcError) as refused:
            server.stub.ListRecentGames(service_pb2.ListRecentGamesRequest(), metadata=metadata)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert said in refused.value.details(), refused.value.details()
