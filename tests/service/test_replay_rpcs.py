"""ExportReplay and VerifyReplay over gRPC, against both stores."""

from __future__ import annotations

import random

import grpc

from croupier.replays.format import from_binary, to_binary, to_json
from croupier.service.bots import play_game
from croupier.v1 import common_pb2, service_pb2

from .conftest import Running, studio_auth, studio_token
from .test_grpc import error_of


def test_a_finished_game_exports_and_verifies(server: Running) -> None:
    result = play_game(
        server.channel,
        studio=studio_token(),
        seats=2,
        kind=common_pb2.GAME_KIND_KOIKOI,
        preset="nintendo-3",
        rng=random.Random(9),
    )
    exported = server.stub.ExportReplay(
        service_pb2.ExportReplayRequest(game_id=result.game_id)
    ).replay
    replay = from_binary(exported)
    assert replay.header.game_id == result.game_id and len(replay.events) == result.version
    answer = server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=exported))
    assert answer.ok and len(answer.checks) == 5 and not answer.HasField("divergence")
    # The JSON form verifies the same; a forged seed does not.
    assert server.stub.VerifyReplay(
        service_pb2.VerifyReplayRequest(replay=to_json(replay).encode())
    ).ok
    replay.footer.server_seed = "22" * 32
    answer = server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=to_binary(replay)))
    assert not answer.ok and (answer.divergence.event, answer.divergence.check) == (0, "commitment")


def test_unfinished_games_and_garbage_are_refused(server: Running) -> None:
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_GIN, seats=2),
        metadata=studio_auth(),
    )
    code, info, _ = error_of(
        lambda: server.stub.ExportReplay(service_pb2.ExportReplayRequest(game_id=game.game_id))
    )
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "GAME_NOT_FINISHED")
    code, info, _ = error_of(
        lambda: server.stub.ExportReplay(service_pb2.ExportReplayRequest(game_id="no-such-game"))
    )
    assert code == grpc.StatusCode.NOT_FOUND
    code, info, fields = error_of(
        lambda: server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=b"\x09nonsense"))
    )
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "NOT_A_REPLAY",
        ["replay"],
    )


def test_a_replay_exports_in_either_form(server: Running) -> None:
    """ExportReplay's format: binary by default (and when asked), the JSON form when asked; both
    hold the same replay and verify."""
    result = play_game(
        server.channel,
        studio=studio_token(),
        seats=2,
        kind=common_pb2.GAME_KIND_GIN,
        preset="single-hand",
        rng=random.Random(4),
    )

    def export(form: service_pb2.ReplayFormat.ValueType) -> bytes:
        request = service_pb2.ExportReplayRequest(game_id=result.game_id, format=form)
        return server.stub.ExportReplay(request).replay

    binary = export(service_pb2.REPLAY_FORMAT_UNSPECIFIED)
    assert export(service_pb2.REPLAY_FORMAT_BINARY) == binary
    as_json = export(service_pb2.REPLAY_FORMAT_JSON)
    assert as_json.decode("utf-8") == to_json(from_binary(binary))
    assert server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=as_json)).ok
    # A format this contract does not have (a newer contract's, a stray or negative number) is
    # refused, not answered in binary as if it were asked for.
    for unknown in (3, 99, -1):
        code, info, fields = error_of(lambda: export(unknown))  # noqa: B023 - called at once
        assert (code, info.reason, fields) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "UNKNOWN_REPLAY_FORMAT",
            ["format"],
        )
