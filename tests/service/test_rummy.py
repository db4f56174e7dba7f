"""Rummy with jokers over real gRPC, against both stores."""

from __future__ import annotations

import random

import grpc

from croupier.service.bots import auth, play_game
from croupier.v1 import common_pb2, melds_pb2, rummy_pb2, service_pb2

from .conftest import Running, studio_auth, studio_token
from .test_grpc import error_of, verify_chain

RUMMY = common_pb2.GAME_KIND_RUMMY


def test_a_whole_game_is_played_settled_and_chained(server: Running) -> None:
    result = play_game(
        server.channel,
        studio=studio_token(),
        seats=4,
        kind=RUMMY,
        rng=random.Random(7),
        client_seed="r",
    )
    assert result.final is not None and result.final.outcome in ("WENT_OUT", "STOCK_OUT")
    assert sum(result.final.net) == 0
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=result.game_id))
    assert replay.finished and replay.kind == RUMMY and replay.rules.rummy.open_threshold == 40
    verify_chain(replay)
    dealt = replay.events[1].body.rummy.round_dealt
    cards = [c for h in dealt.hands for c in h.cards] + list(dealt.stock) + [dealt.upcard]
    assert len({c.code for c in cards}) == 108
    seven = next(c for c in cards if c.code == "7S2")
    assert (seven.rank, seven.suit, seven.copy, seven.name) == (7, "S", 2, "Seven of spades")
    joker = next(c for c in cards if c.code == "JK4")
    assert (joker.rank, joker.copy) == (0, 0)


def test_errors_and_hidden_draws(server: Running) -> None:
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=RUMMY, seats=2), metadata=studio_auth()
    )
    seat = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    ).view.rummy.turn
    draw = service_pb2.Command(rummy=rummy_pb2.RummyCommand(draw_stock={}))
    version = server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id, command_id="d", expected_version=game.version, command=draw
        ),
        metadata=auth(game.tokens[seat].token),
    ).version
    theirs = server.stub.GetReplay(
        service_pb2.GetReplayRequest(game_id=game.game_id),
        metadata=auth(game.tokens[1 - seat].token),
    )
    assert not theirs.events[-1].body.rummy.card_drawn.card.code
    # A joker named as a card that contradicts the meld: INVALID_ARGUMENT (docs/rules/rummy.md §3.2).
    mine = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[seat].token)
    ).view.rummy
    assert len(mine.hand) == 14 and mine.phase == rummy_pb2.RUMMY_PHASE_PLAY
    bad = rummy_pb2.RummyCommand(
        lay_down=rummy_pb2.LayDown(
            melds=[
                melds_pb2.MeldCards(
                    cards=["5H1", "JK1", "7H1"],
                    jokers=[melds_pb2.NamedJoker(joker="JK1", card="8H")],
                )
            ]
        )
    )
    code, info, fields = error_of(
        lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id="bad",
                expected_version=version,
                command=service_pb2.Command(rummy=bad),
            ),
            metadata=auth(game.tokens[seat].token),
        )
    )
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "JOKER_CONTRADICTS",
        ["command.melds"],
    )
    code, info, _ = error_of(
        lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id="x",
                expected_version=version,
                command=service_pb2.Command(
                    rummy=rummy_pb2.RummyCommand(
                        lay_off=rummy_pb2.RummyLayOff(meld_id=1, cards=[mine.hand[0].code])
                    )
                ),
            ),
            metadata=auth(game.tokens[seat].token),
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "NOT_OPENED")


def test_unset_seats_seat_four_and_the_list_says_whether_it_is_complete(server: Running) -> None:
    """docs/rules/rummy.md §3 (``seats`` 0 means 4) and §3.3 / docs/rules/common.md §5 (a compact
    list says so with ``complete = false``); a rejection for a missing use cites §3.1."""
    game = server.stub.CreateGame(service_pb2.CreateGameRequest(kind=RUMMY), metadata=studio_auth())
    assert len(game.tokens) == 4
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    assert replay.seats == 4
    listed = [
        server.stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game.game_id),
            metadata=auth(token.token),
        )
        for token in game.tokens
    ]
    # Seats not to act have nothing listed, and nothing beyond: complete.
    assert all(r.complete for r in listed if not r.moves)
    to_act = next(r for r in listed if r.moves)
    combinable = {"take_discard", "lay_down", "lay_off", "swap_joker"}
    kinds = {m.command.rummy.WhichOneof("move") for m in to_act.moves}
    assert to_act.complete == (not kinds & combinable)
    seat = next(i for i, r in enumerate(listed) if r.moves)
    code, info, _ = error_of(
        lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id="t",
                expected_version=game.version,
                command=service_pb2.Command(
                    rummy=rummy_pb2.RummyCommand(take_discard=rummy_pb2.TakeDiscard())
                ),
            ),
            metadata=auth(game.tokens[seat].token),
        )
    )
    assert (code, info.reason, info.metadata["rule"]) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "USE_THE_DISCARD",
        "docs/rules/rummy.md §3.1",
    )


def test_a_table_of_three_that_names_no_seat_count_seats_three(server: Running) -> None:
    """docs/rules/rummy.md §3: unset ``seats`` with ``max_seats`` 3 seats three (before: refused,
    "4 seats: this rule set seats 2 to 3", for a count the request never sent)."""
    three = service_pb2.Rules(rummy=rummy_pb2.RummyRules(max_seats=3))
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=RUMMY, preset="open-51", overrides=three),
        metadata=studio_auth(),
    )
    assert len(game.tokens) == 3
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    assert (replay.seats, replay.rules.rummy.max_seats) == (3, 3)
    # A count the studio does send is still held to the rule set.
    code, info, fields = error_of(
        lambda: server.stub.CreateGame(
            service_pb2.CreateGameRequest(kind=RUMMY, seats=4, overrides=three),
            metadata=studio_auth(),
        )
    )
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_SEATS",
        ["seats"],
    )


def test_a_clock_only_option_without_a_clock_is_refused_naming_it(server: Running) -> None:
    """docs/rules/common.md §5.1: ``forfeit_when_away`` without ``turn_time_ms`` would do
    nothing; it is refused with the option and its value (before: accepted, no forfeit)."""
    code, info, fields = error_of(
        lambda: server.stub.CreateGame(
            service_pb2.CreateGameRequest(
                kind=RUMMY,
                seats=3,
                overrides=service_pb2.Rules(rummy=rummy_pb2.RummyRules(forfeit_when_away=True)),
            ),
            metadata=studio_auth(),
        )
    )
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_OPTION",
        ["overrides.rummy.forfeit_when_away"],
    )
