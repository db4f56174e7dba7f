"""Who may do what, over gRPC: the studio's credential creates games; the authorization entry is
one ``Bearer`` token; a token of one kind does not stand in for another; keys rotate."""

from __future__ import annotations

import grpc
import pytest

from croupier.app.tokens import KeyRing, TokenSigner, mint_player_token, mint_studio_token
from croupier.log import EventStore
from croupier.service.bots import auth
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

from .conftest import FAR_AHEAD_S, STUDIO_SECRET, Running, studio_auth, studio_token
from .test_grpc import error_of

HOOLA = service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_HOOLA, seats=2)


def unauthenticated(call) -> str:
    code, info, _ = error_of(call)
    assert code == grpc.StatusCode.UNAUTHENTICATED, (code, info.reason)
    return info.reason


def test_create_game_takes_the_studio_credential(server: Running) -> None:
    stub = server.stub
    assert unauthenticated(lambda: stub.CreateGame(HOOLA)) == "STUDIO_CREDENTIAL_REQUIRED"
    forged = studio_token()[:-4] + "0000"
    assert unauthenticated(lambda: stub.CreateGame(HOOLA, metadata=auth(forged))) == (
        "INVALID_TOKEN"
    )
    foreign = mint_studio_token(b"not-the-studio-0123456789abcdef-0123", FAR_AHEAD_S)
    assert unauthenticated(lambda: stub.CreateGame(HOOLA, metadata=auth(foreign))) == (
        "UNKNOWN_KEY"
    )
    expired = studio_token(server.clock() // 1000 - 1)
    assert unauthenticated(lambda: stub.CreateGame(HOOLA, metadata=auth(expired))) == (
        "TOKEN_EXPIRED"
    )
    # A genuine token of another kind is not the studio's.
    game = stub.CreateGame(HOOLA, metadata=studio_auth())
    seat = auth(game.tokens[0].token)
    assert unauthenticated(lambda: stub.CreateGame(HOOLA, metadata=seat)) == (
        "STUDIO_CREDENTIAL_REQUIRED"
    )
    player = auth(mint_player_token(STUDIO_SECRET, "p", FAR_AHEAD_S))
    assert unauthenticated(lambda: stub.CreateGame(HOOLA, metadata=player)) == (
        "STUDIO_CREDENTIAL_REQUIRED"
    )
    # The studio's and the players' tokens do not act as seats; they watch as anyone may.
    view = service_pb2.GetViewRequest(game_id=game.game_id)
    as_seat = service_pb2.GetViewRequest(game_id=game.game_id, seat=0)
    moves = service_pb2.ListLegalMovesRequest(game_id=game.game_id)
    streamed = service_pb2.StreamEventsRequest(
        game_id=game.game_id, include=service_pb2.Include(legal_moves=True)
    )
    seats_view = stub.GetView(view, metadata=seat).view.hoola
    for other in (studio_auth(), player):
        seen = stub.GetView(view, metadata=other)
        assert not seen.view.hoola.HasField("seat") and not seen.view.hoola.hand
        assert seen.view.hoola.hand_counts == seats_view.hand_counts and seats_view.hand
        for refused in (
            lambda o=other: stub.GetView(as_seat, metadata=o),
            lambda o=other: stub.ListLegalMoves(moves, metadata=o),
            lambda o=other: next(iter(stub.StreamEvents(streamed, metadata=o))),
        ):
            assert unauthenticated(refused) == "SEAT_TOKEN_REQUIRED"
        replay = stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id), metadata=other)
        assert not replay.server_seed and replay.events[1].redacted
    # Watching live takes a token of some kind (a stream holds the server's memory), and the
    # refusal says which will do.
    assert unauthenticated(lambda: stub.GetView(view)) == "MISSING_TOKEN"
    with pytest.raises(grpc.RpcError) as refused:
        stub.GetView(view)
    assert "a studio or player token to watch" in refused.value.details()
    anonymous = service_pb2.StreamEventsRequest(game_id=game.game_id)
    assert unauthenticated(lambda: next(iter(stub.StreamEvents(anonymous)))) == "MISSING_TOKEN"


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_in_any_case(server: Running, scheme: str) -> None:
    game = server.stub.CreateGame(HOOLA, metadata=[("authorization", f"{scheme} {studio_token()}")])
    view = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id),
        metadata=[("authorization", f"{scheme}  {game.tokens[0].token} ")],
    )
    assert view.version == game.version


@pytest.mark.parametrize("value", ["Token {}", "{}", "Basic {}", "Bearer", "Bearer ", "Bearer{}"])
def test_another_scheme_or_a_bare_token_is_refused(server: Running, value: str) -> None:
    game = server.stub.CreateGame(HOOLA, metadata=studio_auth())
    metadata = [("authorization", value.format(game.tokens[0].token))]
    assert (
        unauthenticated(
            lambda: server.stub.GetView(
                service_pb2.GetViewRequest(game_id=game.game_id), metadata=metadata
            )
        )
        == "BAD_AUTH_SCHEME"
    )


def test_two_authorization_entries_are_refused(server: Running) -> None:
    game = server.stub.CreateGame(HOOLA, metadata=studio_auth())
    seat = ("authorization", f"Bearer {game.tokens[0].token}")
    for metadata in ([seat, seat], [seat, ("authorization", f"Bearer {game.tokens[1].token}")]):
        assert (
            unauthenticated(
                lambda m=metadata: server.stub.GetView(
                    service_pb2.GetViewRequest(game_id=game.game_id), metadata=m
                )
            )
            == "DUPLICATE_AUTHORIZATION"
        )
    studio = studio_auth()[0]
    assert unauthenticated(lambda: server.stub.CreateGame(HOOLA, metadata=[studio, studio])) == (
        "DUPLICATE_AUTHORIZATION"
    )


OLD = b"old-croupier-secret-0123456789abcdef"
NEW = b"new-croupier-secret-0123456789abcdef"
OLD_STUDIO = b"old-studio-secret-0123456789abcdef"
NEW_STUDIO = b"new-studio-secret-0123456789abcdef"


@pytest.fixture
def store_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'rotation.sqlite3'}"


def _serving(url: str, keys: KeyRing, studio: KeyRing) -> tuple[ServerThread, EventStore]:
    store = open_store(url)
    thread = ServerThread("127.0.0.1:0", store, TokenSigner(keys), studio_keys=studio)
    thread.start()
    return thread, store


def test_keys_rotate_new_signs_old_still_verifies(store_url: str) -> None:
    """A rotation: the new key signs, the old one moves to the previous keys and still verifies
    (seat tokens of games in play, the studio's tokens minted before it switched)."""
    thread, store = _serving(store_url, KeyRing(OLD), KeyRing(OLD_STUDIO))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{thread.port}") as channel:
            stub = service_pb2_grpc.GameServiceStub(channel)
            before = stub.CreateGame(
                HOOLA, metadata=auth(mint_studio_token(OLD_STUDIO, FAR_AHEAD_S))
            )
    finally:
        thread.stop(grace=None)
        store.close()
    rotated = KeyRing.of(NEW, [OLD])
    thread, store = _serving(store_url, rotated, KeyRing.of(NEW_STUDIO, [OLD_STUDIO]))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{thread.port}") as channel:
            stub = service_pb2_grpc.GameServiceStub(channel)
            # The old seat token still plays; the studio's old and new tokens both create.
            view = stub.GetView(
                service_pb2.GetViewRequest(game_id=before.game_id),
                metadata=auth(before.tokens[0].token),
            )
            assert view.version == before.version
            for key in (OLD_STUDIO, NEW_STUDIO):
                after = stub.CreateGame(HOOLA, metadata=auth(mint_studio_token(key, FAR_AHEAD_S)))
            # New seat tokens name the new key.
            assert after.tokens[0].token.split(".")[1] == rotated.kid != KeyRing(OLD).kid
    finally:
        thread.stop(grace=None)
        store.close()
    # The old key dropped: its tokens stop working.
    thread, store = _serving(store_url, KeyRing(NEW), KeyRing(NEW_STUDIO))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{thread.port}") as channel:
            stub = service_pb2_grpc.GameServiceStub(channel)
            old_seat = auth(before.tokens[0].token)
            assert (
                unauthenticated(
                    lambda: stub.GetView(
                        service_pb2.GetViewRequest(game_id=before.game_id), metadata=old_seat
                    )
                )
                == "UNKNOWN_KEY"
            )
            old_studio = auth(mint_studio_token(OLD_STUDIO, FAR_AHEAD_S))
            assert unauthenticated(lambda: stub.CreateGame(HOOLA, metadata=old_studio)) == (
                "UNKNOWN_KEY"
            )
            assert stub.GetView(
                service_pb2.GetViewRequest(game_id=after.game_id),
                metadata=auth(after.tokens[0].token),
            )
    finally:
        thread.stop(grace=None)
        store.close()
