"""Seed tickets over real gRPC, on both stores: the server commits to its seed (CommitSeed)
before the players choose theirs; the game made with the ticket starts with that commitment,
reveals the seed behind it and verifies as any game does; a ticket makes one game, on any
replica, however many creations race with it."""

from __future__ import annotations

import hashlib
import random
import threading
import uuid
from pathlib import Path

import grpc
from click.testing import CliRunner

from croupier.app.seedtickets import TICKET_TTL_MS
from croupier.app.tokens import TokenSigner
from croupier.service.bots import auth, finish_game
from croupier.service.cli import main
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

from .conftest import SECRET, Running, fresh_server, player_auth, studio_auth, studio_token
from .test_grpc import error_of

GIN = common_pb2.GAME_KIND_GIN


def commit(stub: service_pb2_grpc.GameServiceStub) -> service_pb2.CommitSeedResponse:
    return stub.CommitSeed(service_pb2.CommitSeedRequest(), metadata=studio_auth())


def create(
    stub: service_pb2_grpc.GameServiceStub, ticket: str, seeds: tuple[str, ...] = ("mine",), **kw
) -> service_pb2.CreateGameResponse:
    return stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=GIN, seats=2, seed_ticket=ticket, client_seeds=seeds, **kw
        ),
        metadata=studio_auth(),
    )


def test_a_ticket_game_starts_with_its_commitment_and_verifies(
    server: Running, tmp_path: Path
) -> None:
    """Ticket → the player's seed → CreateGame → GameStarted.commitment is the ticket's → the
    game played out → SeedRevealed hashes to it → ``replay verify`` passes, unchanged."""
    ticket = commit(server.stub)
    assert len(ticket.commitment) == 64 and int(ticket.commitment, 16) >= 0
    assert 0 < ticket.expires_at_ms - server.clock() <= TICKET_TTL_MS
    game = create(server.stub, ticket.ticket, ("chosen after the commitment",))
    assert game.commitment == ticket.commitment
    seat = auth(game.tokens[0].token)
    first = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id), metadata=seat)
    assert first.events[0].body.gin.match_started.commitment == ticket.commitment
    assert list(first.events[0].body.gin.match_started.client_seeds) == [
        "chosen after the commitment"
    ]
    finish_game(server.channel, game.game_id, [t.token for t in game.tokens], random.Random(7))
    replay = server.stub.GetReplay(
        service_pb2.GetReplayRequest(game_id=game.game_id), metadata=seat
    )
    revealed = [
        e.body.seed_revealed.server_seed for e in replay.events if e.body.HasField("seed_revealed")
    ]
    assert len(revealed) == 1
    assert hashlib.sha256(bytes.fromhex(revealed[0])).hexdigest() == ticket.commitment
    # The seed is in no clear text of the ticket.
    assert revealed[0] not in ticket.ticket
    exported = server.stub.ExportReplay(
        service_pb2.ExportReplayRequest(game_id=game.game_id), metadata=seat
    ).replay
    path = tmp_path / "ticket.replay"
    path.write_bytes(exported)
    verified = CliRunner().invoke(main, ["replay", "verify", str(path)])
    assert verified.exit_code == 0, verified.output


def test_a_ticket_makes_one_game_and_a_retry_is_answered_with_it(server: Running) -> None:
    ticket = commit(server.stub).ticket
    request_id = f"req-{uuid.uuid4()}"
    game = create(server.stub, ticket, request_id=request_id)
    # The same request again (a lost answer): the same game, not a refusal.
    again = create(server.stub, ticket, request_id=request_id)
    assert (again.game_id, again.commitment) == (game.game_id, game.commitment)
    # Another request with the ticket: refused, with or without a request id.
    for extra in ({"request_id": f"req-{uuid.uuid4()}"}, {}):
        code, info, fields = error_of(
            lambda extra=extra: create(server.stub, ticket, ("other",), **extra)
        )
        assert (code, info.reason, fields) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "SEED_TICKET_USED",
            ["seed_ticket"],
        )
    # The request id with another ticket is another request.
    code, info, _ = error_of(
        lambda: create(server.stub, commit(server.stub).ticket, request_id=request_id)
    )
    assert (code, info.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_ID_REUSED")


def test_an_expired_ticket_is_refused_but_its_games_retry_is_answered(server: Running) -> None:
    used, unused = commit(server.stub).ticket, commit(server.stub).ticket
    request_id = f"req-{uuid.uuid4()}"
    game = create(server.stub, used, request_id=request_id)
    server.clock.advance(TICKET_TTL_MS)
    try:
        # Expiry is judged first (docs/errors.md): the used ticket in a new request is expired too.
        for ticket in (unused, used):
            code, info, fields = error_of(lambda ticket=ticket: create(server.stub, ticket))
            assert (code, info.reason, fields) == (
                grpc.StatusCode.FAILED_PRECONDITION,
                "SEED_TICKET_EXPIRED",
                ["seed_ticket"],
            )
        assert create(server.stub, used, request_id=request_id).game_id == game.game_id
    finally:
        server.clock.advance(-TICKET_TTL_MS)


def test_tickets_not_issued_by_the_service_are_not_found(server: Running) -> None:
    ticket = commit(server.stub).ticket
    prefix, kid, nonce, expires, mac = ticket.split(".")
    flipped = "0" if mac[0] != "0" else "1"
    forged = [
        f"{prefix}.{kid}.{nonce}.{expires}.{flipped}{mac[1:]}",  # another MAC
        f"{prefix}.{kid}.{nonce}.{int(expires) + 1}.{mac}",  # a later expiry
        f"{prefix}.{kid}.{'0' * len(nonce)}.{expires}.{mac}",  # another nonce
        "garbage",
        ticket + "." + mac,
        "x" * 10_000,
    ]
    for bad in forged:
        code, info, fields = error_of(lambda bad=bad: create(server.stub, bad))
        assert (code, info.reason, fields) == (
            grpc.StatusCode.NOT_FOUND,
            "SEED_TICKET_NOT_FOUND",
            ["seed_ticket"],
        )
    # Another deployment's ticket (another CROUPIER_SECRET): not ours either.
    with fresh_server(server.store, secret=SECRET[::-1]) as elsewhere:
        theirs = commit(elsewhere).ticket
    code, info, _ = error_of(lambda: create(server.stub, theirs))
    assert (code, info.reason) == (grpc.StatusCode.NOT_FOUND, "SEED_TICKET_NOT_FOUND")
    # The forged attempts used nothing up: the genuine ticket still makes its game.
    assert create(server.stub, ticket).commitment


def test_only_the_studio_commits_seeds(server: Running) -> None:
    game = create(server.stub, commit(server.stub).ticket)
    for metadata in ((), auth(game.tokens[0].token), player_auth("ana")):
        code, info, _ = error_of(
            lambda metadata=metadata: server.stub.CommitSeed(
                service_pb2.CommitSeedRequest(), metadata=metadata
            )
        )
        assert code == grpc.StatusCode.UNAUTHENTICATED
        assert info.reason == "STUDIO_CREDENTIAL_REQUIRED"
    # An expired studio token too.
    code, info, _ = error_of(
        lambda: server.stub.CommitSeed(
            service_pb2.CommitSeedRequest(),
            metadata=auth(studio_token(server.clock() // 1000 - 1)),
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_EXPIRED")


def test_creations_racing_with_one_ticket_on_two_replicas_make_one_game(server: Running) -> None:
    """Eight CreateGames with one ticket and eight request ids, on two servers of one store:
    one game; every other is FAILED_PRECONDITION SEED_TICKET_USED."""
    ticket = commit(server.stub).ticket
    attempts = 8
    barrier = threading.Barrier(attempts)
    made: list[str] = []
    refused: list[str] = []
    with fresh_server(server.store) as replica:
        stubs = (server.stub, replica)

        def attempt(i: int) -> None:
            barrier.wait()
            try:
                made.append(
                    create(
                        stubs[i % 2], ticket, (str(i),), request_id=f"req-{uuid.uuid4()}"
                    ).game_id
                )
            except grpc.RpcError as error:
                refused.append(f"{error.code().name}")

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(attempts)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(made) == 1
    assert refused == ["FAILED_PRECONDITION"] * (attempts - 1)


def test_a_ticket_is_good_on_every_replica(server: Running) -> None:
    """Stateless: a ticket one server issued is read by another with the same secret."""
    ticket = commit(server.stub)
    with fresh_server(server.store, secret=SECRET) as replica:
        game = create(replica, ticket.ticket)
    assert game.commitment == ticket.commitment
    assert TokenSigner(SECRET).ring.kid in ticket.ticket
