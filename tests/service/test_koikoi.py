"""Koi-Koi over real gRPC, against both stores: the same contract, store and replay log as Hoola."""

from __future__ import annotations

import random

import grpc

from croupier.service.bots import auth, choose, play_game
from croupier.v1 import common_pb2, koikoi_pb2, service_pb2

from .conftest import Running, studio_auth, studio_token
from .test_grpc import cards_in, error_of, verify_chain

KOIKOI = common_pb2.GAME_KIND_KOIKOI


def create(server: Running, **kwargs) -> service_pb2.CreateGameResponse:
    kwargs.setdefault("seats", 2)
    return server.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=KOIKOI, **kwargs), metadata=studio_auth()
    )


def create_in_play(server: Running, **kwargs) -> service_pb2.CreateGameResponse:
    """A new match whose first round is in play: a dealt hand yaku (Teshi, Kuttsuki) ends a round
    at once, so such deals are passed over."""
    for _ in range(50):
        game = create(server, **kwargs)
        if view(server, game, 0).phase == koikoi_pb2.KOI_KOI_PHASE_PLAY:
            return game
    raise AssertionError("fifty deals in a row held a hand yaku")


def view(server: Running, game, seat: int) -> koikoi_pb2.KoiKoiView:
    return server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[seat].token)
    ).view.koikoi


def test_a_whole_match_is_played_settled_and_chained(server: Running) -> None:
    result = play_game(
        server.channel,
        studio=studio_token(),
        seats=2,
        kind=KOIKOI,
        preset="nintendo-3",
        rng=random.Random(4),
        client_seed="hanafuda",
    )
    assert len(result.rounds) == 3 and result.final.outcome in ("MATCH_OVER", "MATCH_DRAWN")
    assert list(result.final.net) == [sum(r.net[s] for r in result.rounds) for s in (0, 1)]
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=result.game_id))
    assert replay.finished and replay.kind == KOIKOI and replay.rules.koikoi.rounds == 3
    verify_chain(replay)
    bodies = [e.body.koikoi for e in replay.events[:-1]]
    assert bodies[0].HasField("match_started") and bodies[-1].HasField("match_ended")
    dealt = bodies[1].round_dealt
    everything = [c for h in dealt.hands for c in h.cards] + list(dealt.field) + list(dealt.stock)
    assert len({c.code for c in everything}) == 48
    crane = next(c for c in everything if c.code == "1B")
    assert (crane.month, crane.kind, crane.name, crane.plant) == (
        1,
        koikoi_pb2.HANAFUDA_KIND_BRIGHT,
        "Pine crane",
        "Pine",
    )


def test_moves_are_labelled_and_views_hide_the_other_hand(server: Running) -> None:
    game = create_in_play(server, client_seeds=["labels"])
    first = view(server, game, 0)
    seat = first.turn
    mine, theirs = view(server, game, seat), view(server, game, 1 - seat)
    assert len(mine.hand) == 8 and len(theirs.hand) == 8 and list(mine.hand_counts) == [8, 8]
    assert not {c.code for c in mine.hand} & {c.code for c in theirs.hand}
    assert (
        len(mine.field) == 8
        and mine.stock_count == 24
        and mine.phase == koikoi_pb2.KOI_KOI_PHASE_PLAY
    )
    legal = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id),
        metadata=auth(game.tokens[seat].token),
    )
    assert legal.moves and all(m.label.startswith("Play ") for m in legal.moves)
    assert {m.command.koikoi.play_card.card for m in legal.moves} == {c.code for c in mine.hand}
    # The other seat has nothing to do, and its copy of the deal hides this hand and the stock.
    other = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id),
        metadata=auth(game.tokens[1 - seat].token),
    )
    assert not other.moves
    replay = server.stub.GetReplay(
        service_pb2.GetReplayRequest(game_id=game.game_id),
        metadata=auth(game.tokens[1 - seat].token),
    )
    assert not cards_in(replay.events[1].body) & {c.code for c in mine.hand}
    move = choose(list(legal.moves), random.Random(1))
    server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id,
            command_id="first",
            expected_version=legal.version,
            command=move.command,
        ),
        metadata=auth(game.tokens[seat].token),
    )
    assert view(server, game, seat).hand_counts[seat] == 7


def test_bad_requests_get_clear_errors(server: Running) -> None:
    code, info, fields = error_of(lambda: create(server, seats=3))
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_SEATS",
        ["seats"],
    )
    code, info, fields = error_of(
        lambda: create(server, overrides=service_pb2.Rules(koikoi=koikoi_pb2.KoiKoiRules(rounds=5)))
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["overrides.koikoi.rounds"])
    game = create_in_play(server)
    seat = view(server, game, 0).turn
    code, info, _ = error_of(
        lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id="x",
                expected_version=game.version,
                command=service_pb2.Command(
                    koikoi=koikoi_pb2.KoiKoiCommand(shobu=koikoi_pb2.Shobu())
                ),
            ),
            metadata=auth(game.tokens[seat].token),
        )
    )
    assert (code, info.reason, info.metadata["rule"]) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "PLAY_A_CARD",
        "docs/rules/koikoi.md §2.3",
    )
    # A Hoola command to a Koi-Koi game is malformed.
    code, info, fields = error_of(
        lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id="y",
                expected_version=game.version,
                command=service_pb2.Command(hoola={"draw": {}}),
            ),
            metadata=auth(game.tokens[seat].token),
        )
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["command"])


def test_presets_list_every_option(server: Running) -> None:
    presets = server.stub.ListPresets(service_pb2.ListPresetsRequest(kind=KOIKOI)).presets
    assert {p.name: p.rules.koikoi.rounds for p in presets} == {
        "nintendo": 12,
        "nintendo-6": 6,
        "nintendo-3": 3,
    }
    default = next(p for p in presets if p.is_default)
    for field in koikoi_pb2.KoiKoiRules.DESCRIPTOR.fields:
        assert default.rules.koikoi.HasField(field.name), field.name
