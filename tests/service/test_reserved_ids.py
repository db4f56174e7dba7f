"""The opening batch's command id, ``create``, is the service's: a fold tells batches apart by
their ids, so a seat's first move under it folded as part of the deal, with its turn clock never
charged and the next seat's clock started at the deal. Another replica (or a restart) then timed
that seat out early, and the game's replay failed verification."""

from __future__ import annotations

import contextlib
from pathlib import Path

import grpc
import pytest

from croupier.app import core
from croupier.log import CREATE_COMMAND_ID, STUDIO_COMMAND_PREFIX
from croupier.replays.format import from_binary
from croupier.replays.timeline import timeline
from croupier.service.bots import auth
from croupier.service.store import open_store
from croupier.v1 import common_pb2, gin_pb2, service_pb2, service_pb2_grpc

from .conftest import Running, fresh_server, studio_auth
from .conftest import TestClock as Clock

#: The first seat's turn time and bank: it takes TOOK_MS, well into its bank.
TURN_MS = 2_000
BANK_MS = 6_000
TOOK_MS = 5_000
#: What the calls of a test may take on a loaded machine.
SLACK_MS = 1_000
PASS = service_pb2.Command(gin=gin_pb2.GinCommand(**{"pass": gin_pb2.Pass()}))


def _clocked_gin(stub: service_pb2_grpc.GameServiceStub) -> service_pb2.CreateGameResponse:
    return stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=common_pb2.GAME_KIND_GIN,
            preset="single-hand",
            seats=2,
            overrides=service_pb2.Rules(
                gin=gin_pb2.GinRules(turn_time_ms=TURN_MS, time_bank_ms=BANK_MS)
            ),
        ),
        metadata=studio_auth(),
    )


def _pass_under_the_opening_id(
    stub: service_pb2_grpc.GameServiceStub, game: service_pb2.CreateGameResponse
) -> int:
    """The seat to act passes, under the opening batch's command id; returns that seat."""
    view = stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    turn = view.to_act[0].seat
    stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id,
            command_id=CREATE_COMMAND_ID,
            expected_version=view.version,
            command=PASS,
        ),
        metadata=auth(game.tokens[turn].token),
    )
    return int(turn)


def _deadlines(
    stub: service_pb2_grpc.GameServiceStub, game_id: str, token: str
) -> list[tuple[int, int]]:
    view = stub.GetView(service_pb2.GetViewRequest(game_id=game_id), metadata=auth(token))
    return [(seat.seat, seat.deadline_ms) for seat in view.to_act]


def test_a_client_may_not_take_the_opening_batch_s_id(server: Running) -> None:
    game = _clocked_gin(server.stub)
    with pytest.raises(grpc.RpcError) as raised:
        _pass_under_the_opening_id(server.stub, game)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "RESERVED_COMMAND_ID" in str(raised.value.trailing_metadata())


def test_a_move_recorded_under_the_opening_id_folds_at_its_own_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A game an earlier release recorded (it let a seat take the id) folds on another replica
    as on the one that decided the move: the next seat's turn began at the move, not the deal."""
    monkeypatch.setattr(core, "_check_command_id", lambda command_id: None)
    url = f"sqlite:///{tmp_path / 'croupier.sqlite3'}"
    clock = Clock()
    first, second = open_store(url), open_store(url)
    try:
        with fresh_server(first, clock=clock) as live:
            game = _clocked_gin(live)
            tokens = [t.token for t in game.tokens]
            clock.advance(TOOK_MS)
            turn = _pass_under_the_opening_id(live, game)
            decided = _deadlines(live, game.game_id, tokens[0])
            with fresh_server(second, clock=clock) as replica:
                assert _deadlines(replica, game.game_id, tokens[0]) == decided
                # Ended there, its replay verifies, and its timeline shows the move as a step
                # of its own after the deal's.
                replica.EndGame(
                    service_pb2.EndGameRequest(
                        game_id=game.game_id, command_id="end", reason="a test"
                    ),
                    metadata=studio_auth(),
                )
                exported = replica.ExportReplay(
                    service_pb2.ExportReplayRequest(game_id=game.game_id)
                ).replay
                verified = replica.VerifyReplay(service_pb2.VerifyReplayRequest(replay=exported))
                assert verified.ok, verified.divergence
            steps = timeline(from_binary(exported)).steps
            assert [step.seat for step in steps[:2]] == [None, turn]
            # The other seat's turn (and bank) runs from the move, not from the deal.
            ((other, deadline),) = decided
            assert other != turn
            assert deadline >= clock() + TURN_MS + BANK_MS - SLACK_MS
    finally:
        first.close()
        second.close()


def test_a_seat_cannot_take_the_studio_s_end_game_id_first(server: Running) -> None:
    """Command ids were one namespace per game, the studio's and the seats': a seat that sent
    anything under the id the studio would end the game with (the CLI's default is
    ``end-<game id>``) made the studio's EndGame COMMAND_ID_REUSED, and the CLI then said the game
    was over while it played on. The studio's ids are its own now."""
    game = _clocked_gin(server.stub)
    end_id = f"end-{game.game_id}"
    view = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    for seat in (0, 1):  # the seat to act's move is recorded, the other's refusal is
        with contextlib.suppress(grpc.RpcError):
            server.stub.SubmitCommand(
                service_pb2.SubmitCommandRequest(
                    game_id=game.game_id,
                    command_id=end_id,
                    expected_version=view.version,
                    command=PASS,
                ),
                metadata=auth(game.tokens[seat].token),
            )
    request = service_pb2.EndGameRequest(game_id=game.game_id, command_id=end_id, reason="stuck")
    ended = server.stub.EndGame(request, metadata=studio_auth())
    assert not ended.already_applied
    again = server.stub.EndGame(request, metadata=studio_auth())  # a retry: answered the same
    assert again.already_applied and again.version == ended.version
    final = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    assert final.finished


def test_a_client_may_not_take_the_studio_s_namespace(server: Running) -> None:
    game = _clocked_gin(server.stub)
    with pytest.raises(grpc.RpcError) as raised:
        server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id=f"{STUDIO_COMMAND_PREFIX}end",
                expected_version=game.version,
                command=PASS,
            ),
            metadata=auth(game.tokens[1].token),
        )
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "RESERVED_COMMAND_ID" in str(raised.value.trailing_metadata())
