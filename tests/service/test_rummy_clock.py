"""Rummy on the turn clock through the service: time-outs recorded by a tick, an away seat coming
back with ComeBack, a forfeit, and the replays of both games verifying byte for byte."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from croupier.app.core import now_ms
from croupier.app.tokens import TokenSigner
from croupier.service.bots import auth
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, rummy_pb2, service_pb2, service_pb2_grpc

from .conftest import SECRET, STUDIO_KEYS, studio_auth

TURN_MS = 1_000
#: Far enough for a table of forced turns to play a whole round.
A_DAY_MS = 24 * 60 * 60 * 1000


class MovedClock:
    """Real time plus however far the test has moved it."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def __call__(self) -> int:
        return now_ms() + self.offset_ms


@dataclass
class Service:
    stub: service_pb2_grpc.GameServiceStub
    thread: ServerThread
    clock: MovedClock

    def tick(self, game_id: str) -> int:
        return int(self.thread.call(self.thread.core.tick(game_id)))


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    store = open_store(f"sqlite:///{Path(tmp_path_factory.mktemp('rummy')) / 'games.sqlite3'}")
    clock = MovedClock()
    thread = ServerThread("127.0.0.1:0", store, TokenSigner(SECRET), clock, studio_keys=STUDIO_KEYS)
    port = thread.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Service(service_pb2_grpc.GameServiceStub(channel), thread, clock)
    finally:
        channel.close()
        thread.stop(grace=None)
        store.close()


def create(service: Service, seats: int, **options: object) -> service_pb2.CreateGameResponse:
    rules = rummy_pb2.RummyRules(turn_time_ms=TURN_MS, max_reshuffles=1, **options)  # type: ignore[arg-type]
    return service.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=common_pb2.GAME_KIND_RUMMY,
            seats=seats,
            overrides=service_pb2.Rules(rummy=rules),
            client_seeds=["clock"],
        ),
        metadata=studio_auth(),
    )


def view(
    service: Service, game: service_pb2.CreateGameResponse, seat: int
) -> service_pb2.GetViewResponse:
    return service.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[seat].token)
    )


def events_of(service: Service, game: service_pb2.CreateGameResponse) -> list[str]:
    replay = service.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    return [e.body.rummy.WhichOneof("event") or "" for e in replay.events]


def verified(service: Service, game: service_pb2.CreateGameResponse) -> bool:
    exported = service.stub.ExportReplay(
        service_pb2.ExportReplayRequest(game_id=game.game_id)
    ).replay
    verdict = service.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=exported))
    assert verdict.ok, verdict.divergence
    return verdict.ok


# The games below let a day pass and tick once: time plays them out in one batch, as a service
# down for a day would without ``outage_grace_ms`` (with it, the first deadline restarts instead).
def test_an_away_seat_comes_back_and_the_replay_verifies(service: Service) -> None:
    game = create(service, 2, max_timeouts=1, outage_grace_ms=0)
    first = view(service, game, 0).view.rummy.turn
    service.clock.offset_ms += TURN_MS + 100
    version = service.tick(game.game_id)
    # Its one time-out made it away; off its turn, it comes back.
    now = view(service, game, first)
    assert now.view.rummy.turn != first
    moves = service.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id),
        metadata=auth(game.tokens[first].token),
    )
    assert [m.command.rummy.WhichOneof("move") for m in moves.moves] == ["come_back"]
    service.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id,
            command_id=uuid.uuid4().hex,
            expected_version=version,
            command=service_pb2.Command(
                rummy=rummy_pb2.RummyCommand(come_back=common_pb2.ComeBack())
            ),
        ),
        metadata=auth(game.tokens[first].token),
    )
    # Nobody plays any more: time plays the round out.
    service.clock.offset_ms += A_DAY_MS
    service.tick(game.game_id)
    assert view(service, game, 0).finished
    names = events_of(service, game)
    assert "came_back" in names and "turn_timed_out" in names
    assert verified(service, game)


def test_a_forfeit_through_the_service_settles_and_the_replay_verifies(service: Service) -> None:
    game = create(
        service, 3, max_timeouts=1, forfeit_when_away=True, stake_per_point=2, outage_grace_ms=0
    )
    service.clock.offset_ms += A_DAY_MS
    service.tick(game.game_id)
    assert view(service, game, 0).finished
    names = events_of(service, game)
    # Nobody plays: the first two seats to time out forfeit, and the last one in play wins.
    assert names.count("seat_forfeited") == 2 and names.count("round_ended") == 1
    assert names.index("round_ended") > max(i for i, n in enumerate(names) if n == "seat_forfeited")
    settlement = service.stub.GetSettlement(service_pb2.GetSettlementRequest(game_id=game.game_id))
    assert settlement.settlement.outcome == "FORFEIT" and sum(settlement.settlement.net) == 0
    assert verified(service, game)
