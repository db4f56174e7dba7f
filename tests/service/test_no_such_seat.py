"""A seat token Croupier signed for a seat its game does not have (seat 2 of a two-seat game,
or any huge number) acts as no seat: every call that acts or watches as a seat refuses it,
PERMISSION_DENIED ``NO_SUCH_SEAT``, before it reads the game for the seat (never INTERNAL, never
served as a seat)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator

import grpc
import pytest

from croupier.app.tokens import MAX_NUMBER_DIGITS, TokenSigner
from croupier.service.bots import auth, play_game
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

from .conftest import SECRET, Running, fresh_server, studio_auth, studio_token
from .test_grpc import error_of

KINDS = {
    "gin": common_pb2.GAME_KIND_GIN,
    "koikoi": common_pb2.GAME_KIND_KOIKOI,
    "hoola": common_pb2.GAME_KIND_HOOLA,
    "rummy": common_pb2.GAME_KIND_RUMMY,
}
SEATS = 2
#: Just past the last seat, further past it, and the largest number a token holds (20 digits:
#: app/tokens.MAX_NUMBER_DIGITS; longer is a malformed token, tests/app/test_tokens.py).
MISSING_SEATS = [SEATS, 5, 10**MAX_NUMBER_DIGITS - 1]
#: Each call's deadline: a stream that served the seat would otherwise wait for the game's end.
WAIT_S = 10


def a_legal_command(
    stub: service_pb2_grpc.GameServiceStub, game: service_pb2.CreateGameResponse
) -> service_pb2.Command:
    """A well-formed command of the game: a move a real seat may make now."""
    to_act = stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    ).to_act
    for seat in [a.seat for a in to_act] + list(range(SEATS)):
        moves = stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game.game_id),
            metadata=auth(game.tokens[seat].token),
        ).moves
        if moves:
            return moves[0].command
    raise AssertionError("nobody may move in a new game")


def calls(
    stub: service_pb2_grpc.GameServiceStub,
    game_id: str,
    seat: int,
    token: tuple[tuple[str, str], ...],
    command: service_pb2.Command,
    version: int,
) -> dict[str, Callable[[], object]]:
    """Every call that acts or watches as a seat, with ``token``; commands sent at ``version``
    (the game's: decided on the game as a server holds it, when it does)."""
    join = service_pb2.PlayRequest(join=service_pb2.PlayJoin(game_id=game_id))
    move = service_pb2.PlayRequest(
        command=service_pb2.PlayCommand(
            command_id=uuid.uuid4().hex, expected_version=version, command=command
        )
    )
    everything = service_pb2.Include(view=True, legal_moves=True, to_act=True)

    def play(requests: list[service_pb2.PlayRequest]) -> None:
        responses = []
        try:
            for response in stub.Play(iter(requests), metadata=token, timeout=WAIT_S):
                responses.append(response)
        finally:
            # Nothing is served to the seat: at most its command is refused, the same way.
            for response in responses:
                assert response.WhichOneof("kind") == "refused", response
                assert response.refused.reason == "NO_SUCH_SEAT", response

    named: dict[str, Callable[[], object]] = {}
    if seat < 2**32:  # a request's seat is a uint32: the token's seat, named in the request too
        named["GetView(seat)"] = lambda: stub.GetView(
            service_pb2.GetViewRequest(game_id=game_id, seat=seat), metadata=token, timeout=WAIT_S
        )
        named["ListLegalMoves(seat)"] = lambda: stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game_id, seat=seat),
            metadata=token,
            timeout=WAIT_S,
        )
    return named | {
        "GetView": lambda: stub.GetView(
            service_pb2.GetViewRequest(game_id=game_id), metadata=token, timeout=WAIT_S
        ),
        "ListLegalMoves": lambda: stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game_id), metadata=token, timeout=WAIT_S
        ),
        "ValidateCommand": lambda: stub.ValidateCommand(
            service_pb2.ValidateCommandRequest(game_id=game_id, command=command),
            metadata=token,
            timeout=WAIT_S,
        ),
        "SubmitCommand": lambda: stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game_id,
                command_id=uuid.uuid4().hex,
                expected_version=version,
                command=command,
                include=everything,
            ),
            metadata=token,
            timeout=WAIT_S,
        ),
        "Play": lambda: play([join]),
        "Play(command)": lambda: play([join, move]),
        "StreamEvents": lambda: list(
            stub.StreamEvents(
                service_pb2.StreamEventsRequest(game_id=game_id), metadata=token, timeout=WAIT_S
            )
        ),
        "StreamEvents(include)": lambda: list(
            stub.StreamEvents(
                service_pb2.StreamEventsRequest(
                    game_id=game_id, include=everything, batched=True, heartbeat_s=1
                ),
                metadata=token,
                timeout=WAIT_S,
            )
        ),
        "GetSettlement": lambda: stub.GetSettlement(
            service_pb2.GetSettlementRequest(game_id=game_id), metadata=token, timeout=WAIT_S
        ),
        "GetSettlement(final)": lambda: stub.GetSettlement(
            service_pb2.GetSettlementRequest(game_id=game_id, final=True),
            metadata=token,
            timeout=WAIT_S,
        ),
        "GetReplay": lambda: stub.GetReplay(
            service_pb2.GetReplayRequest(game_id=game_id), metadata=token, timeout=WAIT_S
        ),
        "ExportReplay": lambda: stub.ExportReplay(
            service_pb2.ExportReplayRequest(game_id=game_id), metadata=token, timeout=WAIT_S
        ),
    }


def assert_no_such_seat(
    stub: service_pb2_grpc.GameServiceStub,
    game: service_pb2.CreateGameResponse,
    command: service_pb2.Command,
) -> None:
    signer = TokenSigner(SECRET)
    for seat in MISSING_SEATS:
        token = auth(signer.issue(game.game_id, seat))
        for name, call in calls(stub, game.game_id, seat, token, command, game.version).items():
            code, info, _ = error_of(call)
            assert (code, info.reason) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "NO_SUCH_SEAT",
            ), f"{name}, seat {seat}: {code} {info.reason}"
            assert info.metadata["seats"] == str(SEATS), name
    # Nothing was recorded for the seat that is not there.
    version = stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    ).version
    assert version == game.version


@pytest.fixture
def fresh(server: Running) -> Iterator[service_pb2_grpc.GameServiceStub]:
    """Another server on the same store, that has read no game yet (as after a restart)."""
    with fresh_server(server.store, clock=server.clock) as stub:
        yield stub


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_seat_the_game_does_not_have_is_refused(
    server: Running, fresh: service_pb2_grpc.GameServiceStub, kind: str
) -> None:
    request = service_pb2.CreateGameRequest(kind=KINDS[kind], seats=SEATS)
    # Read by a server that holds the game (it created it and has folded it) …
    held = server.stub.CreateGame(request, metadata=studio_auth())
    command = a_legal_command(server.stub, held)
    assert_no_such_seat(server.stub, held, command)
    # … and by one that has never read it (every call reads it from the store).
    cold = server.stub.CreateGame(request, metadata=studio_auth())
    assert_no_such_seat(fresh, cold, a_legal_command(server.stub, cold))
    # The last real seat is served as ever.
    last = fresh.GetView(
        service_pb2.GetViewRequest(game_id=cold.game_id),
        metadata=auth(TokenSigner(SECRET).issue(cold.game_id, SEATS - 1)),
    )
    assert last.version == cold.version


def test_a_seat_the_game_does_not_have_is_refused_over_a_finished_game(server: Running) -> None:
    """Settlements, replays and exports of a finished game, as of a game in play."""
    game = play_game(
        server.channel, studio=studio_token(), seats=SEATS, rng=random.Random(5), max_rounds=1
    )
    signer = TokenSigner(SECRET)
    for seat in MISSING_SEATS:
        token = auth(signer.issue(game.game_id, seat))
        for name, call in {
            "GetSettlement(final)": lambda t=token: server.stub.GetSettlement(
                service_pb2.GetSettlementRequest(game_id=game.game_id, final=True), metadata=t
            ),
            "GetReplay": lambda t=token: server.stub.GetReplay(
                service_pb2.GetReplayRequest(game_id=game.game_id), metadata=t
            ),
            "ExportReplay": lambda t=token: server.stub.ExportReplay(
                service_pb2.ExportReplayRequest(game_id=game.game_id), metadata=t
            ),
            "StreamEvents": lambda t=token: list(
                server.stub.StreamEvents(
                    service_pb2.StreamEventsRequest(game_id=game.game_id), metadata=t
                )
            ),
        }.items():
            code, info, _ = error_of(call)
            assert (code, info.reason) == (grpc.StatusCode.PERMISSION_DENIED, "NO_SUCH_SEAT"), (
                name,
                seat,
            )
