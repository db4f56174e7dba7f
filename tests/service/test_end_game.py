"""EndGame over gRPC, on both stores: the studio ends a game still on; its streams hear the end,
the settlement is ABANDONED with the reason, the replay verifies, a retry is answered the same,
and nobody else may end a game."""

from __future__ import annotations

import random
import uuid

import grpc
import pytest

from croupier.app import core
from croupier.app.errors import StaleVersion
from croupier.replays.format import from_binary
from croupier.replays.timeline import render_text, timeline
from croupier.service.bots import auth, choose
from croupier.v1 import common_pb2, gin_pb2, service_pb2

from .conftest import Running, studio_auth
from .test_grpc import error_of

KINDS = [
    (common_pb2.GAME_KIND_HOOLA, "korean", 3),
    (common_pb2.GAME_KIND_KOIKOI, "nintendo-3", 2),
    (common_pb2.GAME_KIND_GIN, "standard", 2),
    (common_pb2.GAME_KIND_RUMMY, "standard", 3),
]
#: Random moves before the studio ends the game: some games finish a round meanwhile.
MOVES = 40


def started(
    server: Running, kind: common_pb2.GameKind.ValueType, preset: str, seats: int, moves: int
) -> tuple[service_pb2.CreateGameResponse, int]:
    """A game still on after ``moves`` of the bots' moves (fewer, in a new game, if those
    ended it: the deal is random); its version."""
    while True:
        game = server.stub.CreateGame(
            service_pb2.CreateGameRequest(kind=kind, preset=preset, seats=seats),
            metadata=studio_auth(),
        )
        version, finished = play(server, game, moves)
        if not finished:
            return game, version
        moves //= 2


def play(server: Running, game: service_pb2.CreateGameResponse, moves: int) -> tuple[int, bool]:
    """``moves`` of the bots' moves (fewer if the game ends); the version, and whether it ended."""
    rng, version = random.Random(moves), game.version
    for _ in range(moves):
        listed = [
            (
                token,
                server.stub.ListLegalMoves(
                    service_pb2.ListLegalMovesRequest(game_id=game.game_id),
                    metadata=auth(token.token),
                ),
            )
            for token in game.tokens
        ]
        token, answer = rng.choice([(t, a) for t, a in listed if a.moves])
        done = server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id=uuid.uuid4().hex,
                expected_version=answer.version,
                command=choose(list(answer.moves), rng).command,
            ),
            metadata=auth(token.token),
        )
        version = done.version
        if done.finished:
            return version, True
    return version, False


def end(server: Running, game_id: str, command_id: str = "end-1", reason: str = "stuck", **kw):
    return server.stub.EndGame(
        service_pb2.EndGameRequest(game_id=game_id, command_id=command_id, reason=reason, **kw),
        metadata=studio_auth(),
    )


@pytest.mark.parametrize(("kind", "preset", "seats"), KINDS)
def test_the_studio_ends_a_game_and_its_replay_verifies(
    server: Running, kind: common_pb2.GameKind.ValueType, preset: str, seats: int
) -> None:
    game, version = started(server, kind, preset, seats, MOVES)
    stream = server.stub.StreamEvents(
        service_pb2.StreamEventsRequest(game_id=game.game_id, after_version=version),
        metadata=auth(game.tokens[0].token),
    )
    ended = end(server, game.game_id, reason="every player left")
    assert ended.version > version and not ended.already_applied
    assert ended.settlement.outcome == "ABANDONED" and not ended.settlement.winners
    assert any("every player left" in note for note in ended.settlement.notes)
    assert sum(ended.settlement.net) == 0
    # The seat's stream hears the end: the studio's event (no seat), the game's end, the seed.
    heard = [answer.event for answer in stream if answer.HasField("event")]
    assert [e.version for e in heard] == list(range(version + 1, ended.version + 1))
    assert not heard[0].HasField("seat")
    game_event = getattr(heard[0].body, heard[0].body.WhichOneof("body"))
    assert game_event.studio_ended_game.reason == "every player left"
    assert heard[-1].body.HasField("seed_revealed")
    # The final settlement is the game's; the replay re-applies the studio's command.
    final = server.stub.GetSettlement(
        service_pb2.GetSettlementRequest(game_id=game.game_id, final=True)
    )
    assert final.settlement == ended.settlement
    exported = server.stub.ExportReplay(service_pb2.ExportReplayRequest(game_id=game.game_id))
    assert from_binary(exported.replay).events[version].command_payload
    verified = server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=exported.replay))
    assert verified.ok, verified.divergence
    # The timeline's studio step says what the end did and cites the rule, for support to answer
    # a player who lost the round in play to it.
    text = render_text(timeline(from_binary(exported.replay)))
    step = text.split(f"#{version + 1} the studio: ")[1].split("\n#")[0]
    assert "every player left" in step and "the round in play is not scored" in step, step
    assert 'docs/rules/common.md §5.1, "The studio may end a game"' in step, step
    # A retry is answered as the first time; another end of a game over is GAME_OVER.
    again = end(server, game.game_id, reason="every player left")
    assert again.already_applied and again.version == ended.version
    assert again.settlement == ended.settlement
    code, info, _ = error_of(lambda: end(server, game.game_id, command_id="end-2"))
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "GAME_OVER")
    # So is an end naming a version the game has left: looking again would find it over.
    code, info, _ = error_of(
        lambda: end(server, game.game_id, command_id="end-3", expected_version=version)
    )
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "GAME_OVER")


def test_only_the_studio_ends_a_game(server: Running) -> None:
    game, version = started(server, common_pb2.GAME_KIND_GIN, "standard", 2, 0)
    request = service_pb2.EndGameRequest(game_id=game.game_id, command_id="e", reason="mine")
    code, info, _ = error_of(
        lambda: server.stub.EndGame(request, metadata=auth(game.tokens[0].token))
    )
    assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "STUDIO_CREDENTIAL_REQUIRED")
    # Nor may a seat send the command as a move: refused, and not offered.
    command = service_pb2.Command(gin=gin_pb2.GinCommand(end_game=common_pb2.EndGame(reason="x")))
    code, info, _ = error_of(
        lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id="mine",
                expected_version=version,
                command=command,
            ),
            metadata=auth(game.tokens[0].token),
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "STUDIO_ONLY")
    for token in game.tokens:
        moves = server.stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=auth(token.token)
        ).moves
        assert all(m.command.gin.WhichOneof("move") != "end_game" for m in moves)
    view = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=studio_auth()
    )
    assert view.version == version, "nothing was recorded"


def test_bad_end_requests_are_refused_and_record_nothing(server: Running) -> None:
    game, version = started(server, common_pb2.GAME_KIND_HOOLA, "korean", 3, 2)
    for blank in ("", "   "):
        code, info, fields = error_of(lambda: end(server, game.game_id, reason=blank))  # noqa: B023
        assert (code, info.reason, fields) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "MISSING_FIELD",
            ["reason"],
        )
    code, info, fields = error_of(lambda: end(server, game.game_id, reason="x" * 257))
    assert (code, info.reason, fields) == (grpc.StatusCode.INVALID_ARGUMENT, "TOO_LONG", ["reason"])
    code, info, _ = error_of(lambda: end(server, "no-such-game"))
    assert (code, info.reason) == (grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND")
    # With the version the studio saw: a game that moved on since is not ended.
    code, info, _ = error_of(lambda: end(server, game.game_id, expected_version=version - 1))
    assert (code, info.reason) == (grpc.StatusCode.ABORTED, "VERSION_CONFLICT")
    view = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=studio_auth()
    )
    assert view.version == version and not view.finished
    assert end(server, game.game_id, expected_version=version).version > version


def test_without_a_version_the_end_is_tried_again_while_moves_land_first(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a table whose seats move every few milliseconds, a handful of tries in a row can each
    meet a move recorded first: without an expected version the studio asked for the game as it
    stands, so the end keeps trying (app/core.py END_TRYING_S), not a fixed few times."""
    game, version = started(server, common_pb2.GAME_KIND_GIN, "standard", 2, 4)
    core = server.thread.core
    decide, lost = core._decide, []

    async def moved_first(folded, *args):  # a seat's move lands first, eight times in a row
        if len(lost) < 8:
            lost.append(folded.version)
            raise StaleVersion("VERSION_CONFLICT", "a move landed first")
        return await decide(folded, *args)

    monkeypatch.setattr(core, "_decide", moved_first)
    ended = end(server, game.game_id)
    assert len(lost) == 8 and ended.version > version and not ended.already_applied
    # With the version the studio saw, a conflict is the studio's to look at again.
    lost.clear()
    other, _ = started(server, common_pb2.GAME_KIND_GIN, "standard", 2, 0)
    code, info, _ = error_of(lambda: end(server, other.game_id, expected_version=other.version))
    assert (code, info.reason) == (grpc.StatusCode.ABORTED, "VERSION_CONFLICT") and len(lost) == 1


def test_a_retry_of_an_end_recorded_under_its_bare_id_is_answered_as_the_first_time(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Releases before the studio's namespace recorded EndGame under its bare id. The studio's
    retry of such an end after an upgrade (``croupier end-game`` run again after a lost answer)
    gets the first answer, as before the upgrade, not GAME_OVER; a seat's command under a bare
    id is no studio's end, as the namespace promises."""
    game, version = started(server, common_pb2.GAME_KIND_GIN, "standard", 2, 4)
    with monkeypatch.context() as older:  # the older release: no prefix, none reserved
        older.setattr(core, "STUDIO_COMMAND_PREFIX", "")
        older.setattr(core, "_check_command_id", lambda command_id: None)
        ended = end(server, game.game_id, command_id=f"end-{game.game_id}")
    assert ended.version > version and not ended.already_applied
    again = end(server, game.game_id, command_id=f"end-{game.game_id}")
    assert again.already_applied and again.version == ended.version
    assert again.settlement == ended.settlement
    # Another command under that id is not that end's retry: the game is over.
    code, info, _ = error_of(
        lambda: end(server, game.game_id, command_id=f"end-{game.game_id}", reason="other")
    )
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "GAME_OVER")
