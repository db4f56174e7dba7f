"""The service over real gRPC, against both stores: whole games, retries, races, every error."""

from __future__ import annotations

import functools
import hashlib
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from croupier.contract import convert
from croupier.engine import game as engine_game
from croupier.engine.hoola.rules import HoolaRules
from croupier.log import GENESIS_HASH, LOG_FORMAT_VERSION, chain_hash, chain_key
from croupier.replays.verify import record_of
from croupier.service.bots import auth, clock_rules, finish_game, play_game
from croupier.v1 import common_pb2, hoola_pb2, service_pb2, service_pb2_grpc

from .conftest import Running, studio_auth, studio_token

HOOLA = common_pb2.GAME_KIND_HOOLA


def create(server: Running, seats: int = 3, **kwargs) -> service_pb2.CreateGameResponse:
    return server.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=HOOLA, seats=seats, **kwargs), metadata=studio_auth()
    )


def hoola_command(**move) -> service_pb2.Command:
    return service_pb2.Command(hoola=hoola_pb2.HoolaCommand(**move))


DRAW = hoola_command(draw=hoola_pb2.Draw())


def submit(
    server: Running,
    game: service_pb2.CreateGameResponse,
    seat: int,
    command: service_pb2.Command,
    version: int,
    command_id: str | None = None,
):
    return server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id,
            command_id=command_id or uuid.uuid4().hex,
            expected_version=version,
            command=command,
        ),
        metadata=auth(game.tokens[seat].token),
    )


#: Claim windows in these tests: long enough that real time never closes one while a test is
#: still looking at it (tests move the servers' clock past it instead).
CLAIM_WINDOW_MS = 60_000


def settle(server: Running) -> None:
    """Record what time has made due now (the sweeper would within its poll; a test that moved
    the clock does not wait for it)."""
    sweeper = server.thread.core.sweeper
    assert sweeper is not None
    server.thread.call(sweeper.sweep())


def view(server: Running, game, seat: int) -> service_pb2.GetViewResponse:
    return server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[seat].token)
    )


def error_of(call) -> tuple[grpc.StatusCode, error_details_pb2.ErrorInfo, list[str]]:
    """Run ``call``; return its status code, ErrorInfo and BadRequest fields."""
    with pytest.raises(grpc.RpcError) as info:
        call()
    status = rpc_status.from_call(info.value)
    assert status is not None, "every error carries google.rpc details"
    error_info = error_details_pb2.ErrorInfo()
    fields: list[str] = []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            detail.Unpack(error_info)
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields += [v.field for v in bad.field_violations]
    assert error_info.reason and error_info.domain == "croupier.v1"
    return info.value.code(), error_info, fields


def verify_chain(replay: service_pb2.GetReplayResponse) -> None:
    """The replay's chain holds, in its log format (blinded by the revealed seed in format 2)."""
    assert replay.log_format == LOG_FORMAT_VERSION
    key = chain_key(replay.log_format, bytes.fromhex(replay.server_seed), replay.game_id)
    prev = GENESIS_HASH
    for event in replay.events:
        assert event.prev_hash == prev and chain_hash(prev, record_of(event, key)) == event.hash
        assert service_pb2.EventBody.FromString(event.payload) == event.body
        prev = event.hash


# --- whole games ------------------------------------------------------------------------------


@pytest.mark.parametrize("seats", [2, 5])
def test_whole_games_by_a_scripted_client(server: Running, seats: int) -> None:
    result = play_game(
        server.channel,
        studio=studio_token(),
        seats=seats,
        rng=random.Random(seats),
        client_seed="abc",
    )
    assert result.settlement.outcome in {
        "GOING_OUT",
        "STOP",
        "FAILED_STOP",
        "STOCK_OUT",
        "COMBINATION",
    }
    assert sum(result.settlement.net) == 0 and len(result.settlement.net) == seats
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=result.game_id))
    assert replay.finished and replay.seats == seats
    # The revealed seed opens the commitment; the log is one unbroken chain.
    assert hashlib.sha256(bytes.fromhex(replay.server_seed)).hexdigest() == replay.commitment
    assert replay.events[-1].body.WhichOneof("body") == "seed_revealed"
    assert not any(e.redacted for e in replay.events)
    verify_chain(replay)
    assert list(replay.client_seeds) == ["abc"]
    # Every command is in the log, on the first event it produced.
    commands = [e for e in replay.events if e.HasField("command")]
    assert len(commands) == result.moves
    assert all(service_pb2.Command.FromString(e.command_payload) == e.command for e in commands)
    # The same rules (the event leaves out options added later while they hold their defaults,
    # as games recorded before them did).
    recorded = replay.events[0].body.hoola.game_started.rules
    assert convert.from_proto(recorded, HoolaRules) == convert.from_proto(
        replay.rules.hoola, HoolaRules
    )


def test_a_game_is_served_by_any_process_on_the_same_store(server: Running) -> None:
    from croupier.service.store import open_store

    from .conftest import server_thread

    game = create(server)
    other_store = open_store(server.store.url)
    other = server_thread(other_store, clock=server.clock)
    port = other.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = type(server.stub)(channel)
            turn = view(server, game, 0).view.hoola.turn
            moved = stub.SubmitCommand(
                service_pb2.SubmitCommandRequest(
                    game_id=game.game_id,
                    command_id="x",
                    expected_version=game.version,
                    command=DRAW,
                ),
                metadata=auth(game.tokens[turn].token),
            )
        assert view(server, game, turn).version == moved.version
        assert len(view(server, game, turn).view.hoola.hand) == 8
    finally:
        other.stop(grace=None)
        other_store.close()


# --- idempotency and races --------------------------------------------------------------------


def test_a_retried_command_is_applied_once(server: Running) -> None:
    game = create(server)
    turn = view(server, game, 0).view.hoola.turn
    first = submit(server, game, turn, DRAW, game.version, command_id="retry-me")
    again = submit(server, game, turn, DRAW, game.version, command_id="retry-me")
    # The first answer again, saying so (already_applied): nothing was applied the second time.
    assert (first.already_applied, again.already_applied) == (False, True)
    again.already_applied = False
    assert first == again and first.version == game.version + 1
    assert view(server, game, turn).version == first.version
    assert len(view(server, game, turn).view.hoola.hand) == 8


def test_a_rejected_command_id_keeps_its_answer(server: Running) -> None:
    game = create(server)
    turn = view(server, game, 0).view.hoola.turn
    other = (turn + 1) % 3
    code, info, _ = error_of(lambda: submit(server, game, other, DRAW, game.version, "same-id"))
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN")
    moved = submit(server, game, turn, DRAW, game.version)
    moved = submit(
        server,
        game,
        turn,
        hoola_command(
            discard=hoola_pb2.Discard(card=view(server, game, turn).view.hoola.hand[0].code)
        ),
        moved.version,
    )
    # Now it is `other`'s turn and a draw would pass, but the id was answered already.
    assert view(server, game, 0).view.hoola.turn == other
    code, info, _ = error_of(lambda: submit(server, game, other, DRAW, moved.version, "same-id"))
    assert info.reason == "NOT_YOUR_TURN"
    assert submit(server, game, other, DRAW, moved.version, "fresh-id").version == moved.version + 1


def test_a_command_id_reused_for_another_command_or_seat_is_refused(server: Running) -> None:
    game = create(server)
    turn = view(server, game, 0).view.hoola.turn
    other = (turn + 1) % 3
    drawn = submit(server, game, turn, DRAW, game.version, command_id="once")
    hand = view(server, game, turn).view.hoola.hand
    discard = hoola_command(discard=hoola_pb2.Discard(card=hand[0].code))
    # Another command under the id: refused, not answered with the draw's events.
    code, info, fields = error_of(
        lambda: submit(server, game, turn, discard, drawn.version, "once")
    )
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "COMMAND_ID_REUSED",
        ["command_id"],
    )
    # The same command from another seat: refused too (a seat never gets another's answer).
    code, info, _ = error_of(lambda: submit(server, game, other, DRAW, game.version, "once"))
    assert (code, info.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "COMMAND_ID_REUSED")
    # A refused command's id likewise, and the true retry still gets its first answer.
    error_of(lambda: submit(server, game, other, DRAW, drawn.version, "refused"))
    code, info, _ = error_of(lambda: submit(server, game, other, discard, drawn.version, "refused"))
    assert info.reason == "COMMAND_ID_REUSED"
    again = submit(server, game, turn, DRAW, game.version, command_id="once")
    assert again.already_applied and not drawn.already_applied
    again.already_applied = False
    assert again == drawn
    assert view(server, game, 0).version == drawn.version


def test_a_retried_create_game_answers_with_the_game_it_made(server: Running) -> None:
    """A studio that resends CreateGame (its answer was lost) gets the game the first attempt
    made, as first answered, even once that game has gone on; never a second game."""
    asked = {
        "request_id": f"table-{uuid.uuid4()}",
        "client_seeds": ["theirs"],
        "players": ["ann", "bo", "cy"],
        "preset": "hangame",
        "overrides": service_pb2.Rules(hoola=hoola_pb2.HoolaRules(hoola_multiplier=3)),
    }
    first = create(server, **asked)
    turn = view(server, game=first, seat=0).view.hoola.turn
    drawn = submit(server, first, turn, DRAW, first.version)
    again = create(server, **asked)
    assert again == first  # the game, its tokens, commitment, rules and first version
    assert view(server, again, turn).version == drawn.version  # one game: it went on
    # Another request id, or none, makes another game.
    assert (
        create(server, **{**asked, "request_id": f"table-{uuid.uuid4()}"}).game_id != first.game_id
    )
    assert create(server, **{**asked, "request_id": ""}).game_id != first.game_id


def test_a_request_id_reused_for_another_request_is_refused(server: Running) -> None:
    """The same id with anything of the request changed is a studio's bug: refused, naming the
    field, rather than answered with a game made for another request."""
    asked = {
        "request_id": f"table-{uuid.uuid4()}",
        "client_seeds": ["x"],
        "players": ["a", "b", "c"],
    }
    first = create(server, **asked)
    for changed in [
        {"seats": 2, "players": ["a", "b"]},
        {"preset": "hangame"},
        {"client_seeds": ["y"]},
        {"players": ["a", "b", "d"]},
        {"overrides": service_pb2.Rules(hoola=hoola_pb2.HoolaRules(hoola_multiplier=3))},
    ]:
        code, info, fields = error_of(lambda c=changed: create(server, **{**asked, **c}))
        assert (code, info.reason, fields, dict(info.metadata)) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "REQUEST_ID_REUSED",
            ["request_id"],
            # The game the id made: a studio that lost the first answer still finds it.
            {"game_id": first.game_id},
        ), changed
    assert create(server, **asked) == first


def test_a_retry_of_a_game_made_with_options_refused_since_is_answered_with_it(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release that refuses an option set without the one it needs (a claim window without
    battle Hoola) for new games still answers the retry of a creation an older release made
    with it: the game, as first answered, not INVALID_OPTION without the game's id (the studio
    could not find it). Any other request with those options stays refused."""
    asked = {
        "request_id": f"table-{uuid.uuid4()}",
        "client_seeds": ["theirs"],
        "players": ["ann", "bo", "cy"],
        "overrides": service_pb2.Rules(hoola=hoola_pb2.HoolaRules(claim_window_ms=1500)),
    }
    with monkeypatch.context() as older:  # the older release: no option needs another
        older.setattr(engine_game, "options_need_others", lambda rules, needs: None)
        first = create(server, **asked)
    assert create(server, **asked) == first
    others = [
        {**asked, "request_id": f"table-{uuid.uuid4()}"},  # another id: a new game
        {**asked, "client_seeds": ["mine"]},  # the id, for another request
        {**asked, "request_id": ""},  # no id
    ]
    for other in others:
        code, info, fields = error_of(lambda o=other: create(server, **o))
        assert (code, info.reason, fields) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_OPTION",
            ["overrides.hoola.claim_window_ms"],
        ), other


def test_a_retry_may_spell_the_same_game_another_way(server: Running) -> None:
    """The request id stands for the game asked for, as resolved: a default sent or left out,
    an empty overrides message, the preset's own value as an override, are the same game."""
    hoola = {"request_id": f"table-{uuid.uuid4()}", "preset": "hangame"}
    first = create(server, **hoola)
    same = [
        {"overrides": service_pb2.Rules(hoola=hoola_pb2.HoolaRules())},
        {"overrides": service_pb2.Rules(hoola=first.rules.hoola)},  # every rule as it is
    ]
    for spelled in same:
        assert create(server, **{**hoola, **spelled}) == first, spelled
    rummy_id = f"table-{uuid.uuid4()}"

    def rummy(seats: int) -> service_pb2.CreateGameResponse:
        return server.stub.CreateGame(
            service_pb2.CreateGameRequest(
                kind=common_pb2.GAME_KIND_RUMMY, seats=seats, request_id=rummy_id
            ),
            metadata=studio_auth(),
        )

    unset = rummy(0)  # Rummy's default seat count (4)
    assert len(unset.tokens) == 4 and rummy(4) == unset


def at_once(attempts: list[Callable[[], object]]) -> list[object]:
    """Make ``attempts`` in threads released together: each one's answer, or its status's name."""
    answers: list[object] = []
    barrier = threading.Barrier(len(attempts))

    def run(attempt: Callable[[], object]) -> None:
        barrier.wait()
        try:
            answers.append(attempt())
        except grpc.RpcError as error:
            answers.append(error.code().name)

    threads = [threading.Thread(target=run, args=(attempt,)) for attempt in attempts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


@pytest.fixture(scope="module")
def replica(server: Running) -> Iterator[Running]:
    """A second process on the server's store (a replica behind the same load balancer)."""
    from croupier.app.tokens import TokenSigner
    from croupier.service.server import ServerThread
    from croupier.service.store import open_store

    from .conftest import SECRET, STUDIO_KEYS

    store = open_store(server.store.url)
    other = ServerThread(
        "127.0.0.1:0", store, TokenSigner(SECRET), clock=server.clock, studio_keys=STUDIO_KEYS
    )
    port = other.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = service_pb2_grpc.GameServiceStub(channel)
    try:
        yield Running(channel, stub, store, f"127.0.0.1:{port}", server.clock, other)
    finally:
        channel.close()
        other.stop(grace=None)
        store.close()


@pytest.mark.parametrize("trial", range(33))
def test_concurrent_retries_of_one_command_all_get_its_first_answer(
    server: Running, replica: Running, trial: int
) -> None:
    """A client that resends a command while its first attempt is in flight (a mobile network,
    the retry reaching another replica) gets the first answer every time, never ABORTED."""
    game = create(server, client_seeds=[f"retries-{trial}"])
    turn = view(server, game, 0).view.hoola.turn
    # The replica has not read the game yet: it reads it while the other appends.
    answers = at_once(
        [
            functools.partial(submit, via, game, turn, DRAW, game.version, f"retry-{trial}")
            for via in [server, replica] * 2
        ]
    )
    assert all(isinstance(a, service_pb2.SubmitCommandResponse) for a in answers), answers
    # One attempt applied it; every other was answered with its first answer, saying so.
    assert sorted(a.already_applied for a in answers) == [False, True, True, True]
    for answer in answers:
        answer.already_applied = False
    assert all(a == answers[0] for a in answers)
    assert view(server, game, turn).version == game.version + 1


def test_concurrent_attempts_of_one_create_game_make_one_game(
    server: Running, replica: Running
) -> None:
    """A studio's resent CreateGame that reaches another replica while the first attempt is in
    flight: every attempt is answered with the one game."""
    request_id = f"table-{uuid.uuid4()}"
    answers = at_once(
        [
            functools.partial(create, via, request_id=request_id, players=["a", "b", "c"])
            for via in [server, replica] * 2
        ]
    )
    assert all(isinstance(a, service_pb2.CreateGameResponse) for a in answers), answers
    assert all(a == answers[0] for a in answers)


def test_two_concurrent_commands_at_one_version_one_is_aborted(server: Running) -> None:
    game = create(server)
    turn = view(server, game, 0).view.hoola.turn
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def attempt() -> None:
        barrier.wait()
        try:
            submit(server, game, turn, DRAW, game.version)
            outcomes.append("OK")
        except grpc.RpcError as error:
            outcomes.append(error.code().name)

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ABORTED", "OK"]
    assert view(server, game, turn).version == game.version + 1


# --- errors -----------------------------------------------------------------------------------


def test_version_conflict_is_aborted_with_the_current_version(server: Running) -> None:
    game = create(server)
    turn = view(server, game, 0).view.hoola.turn
    code, info, _ = error_of(lambda: submit(server, game, turn, DRAW, game.version + 5))
    assert (code, info.reason) == (grpc.StatusCode.ABORTED, "VERSION_CONFLICT")
    assert info.metadata["current_version"] == str(game.version)


def test_illegal_moves_are_failed_precondition_naming_the_rule(server: Running) -> None:
    game = create(server)
    turn = view(server, game, 0).view.hoola.turn
    hand = view(server, game, turn).view.hoola.hand
    code, info, _ = error_of(
        lambda: submit(
            server,
            game,
            turn,
            hoola_command(discard=hoola_pb2.Discard(card=hand[0].code)),
            game.version,
        )
    )
    assert (code, info.reason, info.metadata["rule"]) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "TAKE_FIRST",
        "docs/rules/hoola.md §1.2",
    )


def test_malformed_requests_are_invalid_argument_with_the_field(server: Running) -> None:
    game = create(server)
    turn = view(server, game, 0).view.hoola.turn
    code, info, fields = error_of(
        lambda: submit(
            server, game, turn, hoola_command(meld=hoola_pb2.Meld(cards=["ZZ"])), game.version
        )
    )
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "UNKNOWN_CARD",
        ["command.cards"],
    )
    code, info, fields = error_of(
        lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id, expected_version=game.version, command=DRAW
            ),
            metadata=auth(game.tokens[turn].token),
        )
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["command_id"])
    code, info, fields = error_of(
        lambda: submit(server, game, turn, service_pb2.Command(), game.version)
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["command"])
    code, info, fields = error_of(lambda: create(server, seats=9))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["seats"])
    code, info, fields = error_of(lambda: create(server, preset="nope"))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["preset"])
    code, info, fields = error_of(
        lambda: create(
            server, overrides=service_pb2.Rules(hoola=hoola_pb2.HoolaRules(hoola_multiplier=0))
        )
    )
    assert (code, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        ["overrides.hoola.hoola_multiplier"],
    )
    code, info, fields = error_of(
        lambda: server.stub.CreateGame(
            service_pb2.CreateGameRequest(seats=3), metadata=studio_auth()
        )
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["kind"])
    # None of it wrote anything.
    assert view(server, game, turn).version == game.version


def test_unknown_game_is_not_found(server: Running) -> None:
    game = create(server)
    from croupier.app.tokens import TokenSigner

    from .conftest import SECRET

    token = TokenSigner(SECRET).issue("no-such-game", 0)
    code, info, _ = error_of(
        lambda: server.stub.GetView(
            service_pb2.GetViewRequest(game_id="no-such-game"), metadata=auth(token)
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND")
    del game


def test_missing_or_forged_tokens_are_unauthenticated(server: Running) -> None:
    game = create(server)
    code, info, _ = error_of(
        lambda: server.stub.GetView(service_pb2.GetViewRequest(game_id=game.game_id))
    )
    assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "MISSING_TOKEN")
    forged = game.tokens[0].token[:-4] + "0000"
    code, info, _ = error_of(
        lambda: server.stub.GetView(
            service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(forged)
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "INVALID_TOKEN")
    # Changing the seat in a token breaks its signature.
    parts = game.tokens[0].token.split(".")
    parts[2] = "1"
    code, info, _ = error_of(
        lambda: server.stub.GetView(
            service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(".".join(parts))
        )
    )
    assert code == grpc.StatusCode.UNAUTHENTICATED


def test_acting_for_another_seat_or_game_is_permission_denied(server: Running) -> None:
    game, other = create(server), create(server)
    code, info, _ = error_of(
        lambda: server.stub.GetView(
            service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(other.tokens[0].token)
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.PERMISSION_DENIED, "TOKEN_FOR_OTHER_GAME")
    turn = view(server, game, 0).view.hoola.turn
    code, info, _ = error_of(
        lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id="c",
                expected_version=game.version,
                command=DRAW,
                seat=turn,
            ),
            metadata=auth(game.tokens[(turn + 1) % 3].token),
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.PERMISSION_DENIED, "SEAT_MISMATCH")
    assert view(server, game, 0).version == game.version


# --- validation, legal moves, views -----------------------------------------------------------


def test_validate_writes_nothing_and_agrees_with_legal_moves(server: Running) -> None:
    game = create(server)
    turn = view(server, game, 0).view.hoola.turn
    legal = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id),
        metadata=auth(game.tokens[turn].token),
    )
    assert legal.moves and all(m.label for m in legal.moves)
    for move in legal.moves:
        answer = server.stub.ValidateCommand(
            service_pb2.ValidateCommandRequest(game_id=game.game_id, command=move.command),
            metadata=auth(game.tokens[turn].token),
        )
        assert answer.accepted, move.label
    answer = server.stub.ValidateCommand(
        service_pb2.ValidateCommandRequest(game_id=game.game_id, command=DRAW),
        metadata=auth(game.tokens[(turn + 1) % 3].token),
    )
    assert not answer.accepted and answer.rejection.reason == "NOT_YOUR_TURN"
    assert answer.rejection.rule == "docs/rules/hoola.md §1.2" and answer.rejection.message
    assert view(server, game, 0).version == game.version
    other = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id),
        metadata=auth(game.tokens[(turn + 1) % 3].token),
    )
    assert list(other.moves) == []


def test_views_show_only_ones_own_hand(server: Running) -> None:
    game = create(server, seats=4)
    hands = [view(server, game, s).view.hoola for s in range(4)]
    codes = [{c.code for c in h.hand} for h in hands]
    assert all(len(c) == 7 for c in codes)
    assert len(set().union(*codes)) == 28  # four different hands
    for seat, hand in enumerate(hands):
        assert list(hand.hand_counts) == [7, 7, 7, 7] and hand.stock_count == 52 - 29
        assert hand.seat == seat and hand.rules.stop_limits.values


def test_presets_list_every_option(server: Running) -> None:
    presets = server.stub.ListPresets(service_pb2.ListPresetsRequest(kind=HOOLA)).presets
    assert {p.name for p in presets} == {"korean", "international", "winjoy", "pmang", "hangame"}
    hangame = next(p for p in presets if p.name == "hangame").rules.hoola
    assert [(limit.players, limit.max_points) for limit in hangame.stop_limits.values] == [
        (2, 5),
        (3, 10),
        (4, 15),
        (5, 15),
    ]
    winjoy = next(p for p in presets if p.name == "winjoy").rules.hoola
    assert all(not limit.HasField("max_points") for limit in winjoy.stop_limits.values)
    assert list(winjoy.hoola_table_multiplier.values) == [2, 4, 1]
    korean = next(p for p in presets if p.name == "korean")
    assert korean.is_default and korean.rules.hoola.hoola_multiplier == 4
    # The effective rule set has every option set, so a client sees every value.
    for field in hoola_pb2.HoolaRules.DESCRIPTOR.fields:
        assert korean.rules.hoola.HasField(field.name), field.name


def test_overrides_are_recorded_in_the_first_event(server: Running) -> None:
    game = create(
        server,
        overrides=service_pb2.Rules(
            hoola=hoola_pb2.HoolaRules(ace_wrap=False, payment_mode=hoola_pb2.PAYMENT_MODE_FLAT)
        ),
    )
    assert (
        not game.rules.hoola.ace_wrap
        and game.rules.hoola.payment_mode == hoola_pb2.PAYMENT_MODE_FLAT
    )
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    recorded = replay.events[0].body.hoola.game_started.rules
    assert convert.from_proto(recorded, HoolaRules) == convert.from_proto(
        game.rules.hoola, HoolaRules
    )
    assert not recorded.ace_wrap and recorded.payment_mode == hoola_pb2.PAYMENT_MODE_FLAT
    assert replay.events[0].body.hoola.game_started.commitment == game.commitment


# --- streams and replays: nothing hidden leaks ------------------------------------------------


def cards_in(message) -> set[str]:
    found: set[str] = set()
    for field, value in message.ListFields():
        if field.message_type is common_pb2.Card.DESCRIPTOR:
            found |= {v.code for v in (value if field.is_repeated else [value])}
        elif field.message_type is not None:
            for item in value if field.is_repeated else [value]:
                found |= cards_in(item)
    return found


def test_streams_are_live_resumable_and_redacted(server: Running) -> None:
    # One round (the default table is open until a seat leaves it).
    game = create(
        server, seats=3, overrides=service_pb2.Rules(hoola=hoola_pb2.HoolaRules(rounds=1))
    )
    streams = {
        s: server.stub.StreamEvents(
            service_pb2.StreamEventsRequest(game_id=game.game_id),
            metadata=auth(game.tokens[s].token),
        )
        for s in range(3)
    }
    received: dict[int, list] = {s: [] for s in range(3)}

    def read(seat: int) -> None:
        for item in streams[seat]:
            received[seat].append(item.event)

    readers = [threading.Thread(target=read, args=(s,)) for s in range(3)]
    for r in readers:
        r.start()
    # Play the game through the API while the streams are open (they end with the game).
    tokens = [t.token for t in game.tokens]
    rng = random.Random(7)
    from croupier.service.bots import choose

    while not view(server, game, 0).finished:
        seat = view(server, game, 0).view.hoola.turn
        legal = server.stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=auth(tokens[seat])
        )
        submit(server, game, seat, choose(list(legal.moves), rng).command, legal.version)
    for r in readers:
        r.join(timeout=30)
        assert not r.is_alive()
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    assert all(
        [e.version for e in received[s]] == [e.version for e in replay.events] for s in range(3)
    )
    # What a seat may have seen before the end: its own cards and the public ones.
    bodies = [e.body.hoola for e in replay.events]
    dealt = bodies[1].round_dealt
    # The cards turned to draw for the deal are of a deck of their own, shown to all.
    public = {dealt.upcard.code} | {d.card.code for d in dealt.dealer_draws}
    for b in bodies:
        kind = b.WhichOneof("event")
        if kind in ("card_discarded", "discard_taken", "meld_made", "cards_laid_off"):
            public |= cards_in(b)
    for seat in range(3):
        own = {c.code for c in dealt.hands[seat].cards} | {
            b.card_drawn.card.code
            for b in bodies
            if b.WhichOneof("event") == "card_drawn" and b.card_drawn.seat == seat
        }
        for event in received[seat]:
            if event.body.hoola.WhichOneof("event") == "round_ended":
                break
            assert cards_in(event.body) <= own | public, event
    resumed = server.stub.StreamEvents(
        service_pb2.StreamEventsRequest(game_id=game.game_id, after_version=3),
        metadata=auth(tokens[0]),
    )
    assert [e.event.version for e in resumed] == [e.version for e in replay.events[3:]]


def test_replay_is_redacted_until_the_game_ends(server: Running) -> None:
    game = create(server)
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    assert not replay.finished and replay.server_seed == ""
    dealt = replay.events[1]
    assert dealt.redacted and not dealt.payload and not dealt.hash
    assert all(not h.cards for h in dealt.body.hoola.round_dealt.hands)
    assert not dealt.body.hoola.round_dealt.stock
    mine = server.stub.GetReplay(
        service_pb2.GetReplayRequest(game_id=game.game_id), metadata=auth(game.tokens[1].token)
    )
    hands = mine.events[1].body.hoola.round_dealt.hands
    assert [len(h.cards) for h in hands] == [0, 7, 0]


def test_settlement_before_the_end_is_failed_precondition(server: Running) -> None:
    game = create(server)
    code, info, _ = error_of(
        lambda: server.stub.GetSettlement(service_pb2.GetSettlementRequest(game_id=game.game_id))
    )
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "ROUND_NOT_FINISHED")


def test_a_match_nobody_attended_is_settled_once_and_says_where(server: Running) -> None:
    """A Gin match left alone on the clock ends ABANDONED before any hand ends (docs/rules/
    common.md §5.1): its only settlement is the final one, and asking for the last round's says
    so rather than that nothing has finished."""
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=common_pb2.GAME_KIND_GIN,
            seats=2,
            overrides=clock_rules(common_pb2.GAME_KIND_GIN, None, 50, max_timeouts=1),
        ),
        metadata=studio_auth(),
    )
    seat = auth(game.tokens[0].token)
    deadline = time.monotonic() + 30
    while not server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=seat
    ).finished:
        assert time.monotonic() < deadline, "nobody played it: it ends"
        time.sleep(0.05)
    final = server.stub.GetSettlement(
        service_pb2.GetSettlementRequest(game_id=game.game_id, final=True), metadata=seat
    )
    assert final.settlement.outcome == "ABANDONED" and not final.settlement.winners
    with pytest.raises(grpc.RpcError) as refused:
        server.stub.GetSettlement(
            service_pb2.GetSettlementRequest(game_id=game.game_id), metadata=seat
        )
    code, info, _ = error_of(lambda: (_ for _ in ()).throw(refused.value))
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "ROUND_NOT_FINISHED")
    said = refused.value.details()
    assert "ended before any round did" in said and "final" in said
    # The bots (demo, the idle-seat tests) finish such a game with its final settlement (before:
    # they asked for the last round's, and failed on that refusal).
    result = finish_game(server.channel, game.game_id, [t.token for t in game.tokens])
    assert result.settlement == result.final == final.settlement and not result.rounds
    assert "abandoned; winner(s): none" in result.describe()


# --- health and reflection --------------------------------------------------------------------


def test_health_and_reflection(server: Running) -> None:
    health = health_pb2_grpc.HealthStub(server.channel)
    for name in ("", "croupier.v1.GameService"):
        assert (
            health.Check(health_pb2.HealthCheckRequest(service=name)).status
            == health_pb2.HealthCheckResponse.SERVING
        )
    stub = reflection_pb2_grpc.ServerReflectionStub(server.channel)
    answers = stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
    )
    names = {s.name for answer in answers for s in answer.list_services_response.service}
    assert {"croupier.v1.GameService", "grpc.health.v1.Health"} <= names


# --- tables -----------------------------------------------------------------------------------


def test_a_table_of_three_rounds_settles_each_round_and_the_table(server: Running) -> None:
    result = play_game(
        server.channel,
        studio=studio_token(),
        seats=3,
        rng=random.Random(11),
        overrides=service_pb2.Rules(
            hoola=hoola_pb2.HoolaRules(
                rounds=3, hoola_table_multiplier=hoola_pb2.Multipliers(values=[2, 4])
            )
        ),
    )
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=result.game_id))
    bodies = [e.body.hoola for e in replay.events if e.body.HasField("hoola")]
    deals = [b.round_dealt for b in bodies if b.HasField("round_dealt")]
    ends = [b.round_ended for b in bodies if b.HasField("round_ended")]
    assert [d.round for d in deals] == [1, 2, 3] and len(ends) == 3
    # Each later round is dealt by the previous winner and carries the running balances.
    for previous, dealt in zip(ends, deals[1:], strict=False):  # the last end deals nothing
        assert dealt.dealer == previous.winners[0]
    balances = [0, 0, 0]
    for end, dealt in zip(ends, deals[1:], strict=False):
        balances = [b + n for b, n in zip(balances, end.settlement.net, strict=True)]
        assert list(dealt.balances) == balances
    token = auth(result.tokens[0])
    for number, end in enumerate(ends, 1):
        got = server.stub.GetSettlement(
            service_pb2.GetSettlementRequest(game_id=result.game_id, round=number), metadata=token
        ).settlement
        assert got == end.settlement
    final = server.stub.GetSettlement(
        service_pb2.GetSettlementRequest(game_id=result.game_id, final=True), metadata=token
    ).settlement
    assert final.outcome == "TABLE_CLOSED"
    assert list(final.net) == [sum(e.settlement.net[s] for e in ends) for s in range(3)]
    assert bodies[-1].HasField("table_closed")


def test_the_final_settlement_waits_for_the_end(server: Running) -> None:
    game = create(server)
    code, info, _ = error_of(
        lambda: server.stub.GetSettlement(
            service_pb2.GetSettlementRequest(game_id=game.game_id, final=True)
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "GAME_NOT_FINISHED")


@pytest.mark.parametrize("preset", ["korean", "international", "winjoy", "pmang", "hangame"])
def test_every_preset_plays_through_with_jokers_and_seven_binding(
    server: Running, preset: str
) -> None:
    overrides = service_pb2.Rules(
        hoola=hoola_pb2.HoolaRules(jokers=2, seven_binding=True, rounds=2)
    )
    result = play_game(
        server.channel,
        studio=studio_token(),
        seats=4,
        preset=preset,
        rng=random.Random(preset),
        overrides=overrides,
    )
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=result.game_id))
    started = replay.events[0].body.hoola.game_started
    assert started.rules.jokers == 2 and started.rules.seven_binding
    deal = replay.events[1].body.hoola.round_dealt
    dealt = (
        {c.code for h in deal.hands for c in h.cards}
        | {c.code for c in deal.stock}
        | {deal.upcard.code}
    )
    assert len(dealt) == 54 and {"JK1", "JK2"} <= dealt
    assert len(result.rounds) == 2 and result.final.outcome == "TABLE_CLOSED"
    verify_chain(replay)


# --- battle Hoola: concurrent claims ----------------------------------------------------------


def discard_a_seven(server: Running, game, tokens: list[str]) -> tuple[int, int]:
    """Play draws and discards until the seat to act discards a 7; returns (discarder, version)."""
    for _ in range(40):
        v = view(server, game, 0)
        seat = v.view.hoola.turn
        drawn = submit(server, game, seat, DRAW, v.version)
        hand = [c.code for c in view(server, game, seat).view.hoola.hand]
        sevens = [c for c in hand if c[0] == "7"]
        card = sevens[0] if sevens else max(hand, key=lambda c: "A23456789TJQK".index(c[0]))
        done = submit(
            server, game, seat, hoola_command(discard=hoola_pb2.Discard(card=card)), drawn.version
        )
        if sevens:
            return seat, done.version
    raise AssertionError("no 7 came up")


@pytest.mark.parametrize("trial", range(3))
def test_concurrent_claims_have_exactly_one_winner(server: Running, trial: int) -> None:
    game = create(
        server,
        seats=5,
        overrides=service_pb2.Rules(hoola=hoola_pb2.HoolaRules(out_of_turn_thank_you=True)),
        client_seeds=[f"claims-{trial}"],
    )
    tokens = [t.token for t in game.tokens]
    discarder, version = discard_a_seven(server, game, tokens)
    claimers = [s for s in range(5) if s != discarder]
    outcomes: dict[int, str] = {}
    barrier = threading.Barrier(len(claimers))
    claim = hoola_command(thank_you=hoola_pb2.ThankYou())  # a discarded 7 may be melded alone

    def attempt(seat: int) -> None:
        barrier.wait()
        try:
            submit(server, game, seat, claim, version)
            outcomes[seat] = "OK"
        except grpc.RpcError as error:
            outcomes[seat] = error.code().name

    threads = [threading.Thread(target=attempt, args=(s,)) for s in claimers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [s for s, outcome in outcomes.items() if outcome == "OK"]
    assert len(winners) == 1, outcomes
    assert all(outcome == "ABORTED" for s, outcome in outcomes.items() if s not in winners)
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    taken = [e for e in replay.events[version:] if e.body.hoola.HasField("discard_taken")]
    assert len(taken) == 1 and taken[0].seat == winners[0]
    # The losers, re-reading, find the card gone: their claim is now refused by the rules.
    loser = next(s for s in claimers if s not in winners)
    answer = server.stub.ValidateCommand(
        service_pb2.ValidateCommandRequest(game_id=game.game_id, command=claim),
        metadata=auth(tokens[loser]),
    )
    assert not answer.accepted
    assert view(server, game, 0).view.hoola.turn == winners[0]


def test_nearest_in_turn_claims_are_decided_when_the_window_closes(server: Running) -> None:

    game = create(
        server,
        seats=4,
        client_seeds=["nearest"],
        overrides=service_pb2.Rules(
            hoola=hoola_pb2.HoolaRules(
                out_of_turn_thank_you=True,
                claim_window_ms=CLAIM_WINDOW_MS,
                claim_priority=hoola_pb2.CLAIM_PRIORITY_NEAREST_IN_TURN,
                rounds=1,
            )
        ),
    )
    tokens = [t.token for t in game.tokens]
    discarder, version = discard_a_seven(server, game, tokens)
    nxt, near, far = [(discarder + k) % 4 for k in (1, 2, 3)]
    claim = hoola_command(thank_you=hoola_pb2.ThankYou())
    first = submit(server, game, far, claim, version)  # the farther seat first
    second = submit(server, game, near, claim, first.version)
    assert first.events[0].body.hoola.HasField("claim_made")
    # The claim's time is the event's recorded time: a replay re-decides at exactly that instant.
    assert first.events[0].body.hoola.claim_made.at_ms == first.events[0].recorded_at_ms
    waiting = view(server, game, nxt).view.hoola
    assert sorted(waiting.claimants) == sorted([far, near]) and waiting.claim_window_end_ms > 0
    code, info, _ = error_of(lambda: submit(server, game, nxt, DRAW, second.version))
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "CLAIM_WINDOW_OPEN")
    stream = server.stub.StreamEvents(
        service_pb2.StreamEventsRequest(game_id=game.game_id, after_version=second.version),
        metadata=auth(tokens[near]),
        timeout=30,
    )
    server.clock.advance(CLAIM_WINDOW_MS + 100)
    # Once the window has closed, reads show the award, and the sweeper records it (a batch of
    # its own, with no command) whether or not anyone calls: the stream waits for it.
    assert view(server, game, nxt).view.hoola.turn == near
    settle(server)
    recorded = next(iter(stream)).event
    stream.cancel()
    assert recorded.version == second.version + 1
    awarded = view(server, game, near)
    assert awarded.version > second.version
    tick = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id)).events[
        second.version
    ]
    assert tick.command_id == f"tick:{second.version}" and not tick.HasField("seat")
    assert tick.body.hoola.discard_taken.seat == near
    hand = awarded.view.hoola.hand
    done = submit(
        server,
        game,
        near,
        hoola_command(discard=hoola_pb2.Discard(card=hand[0].code)),
        awarded.version,
    )
    assert done.events[0].body.hoola.WhichOneof("event") == "card_discarded"
    # Before the end, another seat's copy of a claim does not show the claimant's cards.
    replay = server.stub.GetReplay(
        service_pb2.GetReplayRequest(game_id=game.game_id), metadata=auth(tokens[nxt])
    )
    claims = [e.body.hoola.claim_made for e in replay.events if e.body.hoola.HasField("claim_made")]
    assert len(claims) == 2 and all(not c.cards for c in claims)
    # Played to the end, the replay re-decides the claims and the award at their recorded times.
    from croupier.service.bots import choose

    rng = random.Random(5)
    while not view(server, game, 0).finished:
        seat = view(server, game, 0).view.hoola.turn
        legal = server.stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=auth(tokens[seat])
        )
        if not legal.moves:  # another claim window is open: let time close it
            server.clock.advance(CLAIM_WINDOW_MS + 50)
            settle(server)
            continue
        submit(server, game, seat, choose(list(legal.moves), rng).command, legal.version)
    exported = server.stub.ExportReplay(
        service_pb2.ExportReplayRequest(game_id=game.game_id)
    ).replay
    verdict = server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=exported))
    assert verdict.ok, verdict.divergence


def test_time_made_due_is_recorded_without_a_command(server: Running) -> None:
    """A tick records a closed claim window's award as a batch of its own, at most once, and the
    replay re-derives it at its recorded time."""
    game = create(
        server,
        seats=4,
        client_seeds=["tick"],
        overrides=service_pb2.Rules(
            hoola=hoola_pb2.HoolaRules(
                out_of_turn_thank_you=True,
                claim_window_ms=CLAIM_WINDOW_MS,
                claim_priority=hoola_pb2.CLAIM_PRIORITY_NEAREST_IN_TURN,
                rounds=1,
            )
        ),
    )
    tokens = [t.token for t in game.tokens]
    discarder, version = discard_a_seven(server, game, tokens)
    far = (discarder + 3) % 4
    claimed = submit(server, game, far, hoola_command(thank_you=hoola_pb2.ThankYou()), version)
    core = server.thread.core
    assert server.thread.call(core.tick(game.game_id)) == claimed.version  # the window is open
    server.clock.advance(CLAIM_WINDOW_MS + 100)
    ticked = server.thread.call(core.tick(game.game_id))
    assert ticked > claimed.version
    replay = server.stub.GetReplay(
        service_pb2.GetReplayRequest(game_id=game.game_id), metadata=auth(tokens[far])
    )
    batch = [e for e in replay.events if e.version > claimed.version]
    assert batch and all(
        e.command_id == f"tick:{claimed.version}"
        and not e.HasField("seat")
        and not e.command_payload
        for e in batch
    )
    assert batch[0].body.hoola.HasField("discard_taken")
    assert batch[0].body.hoola.discard_taken.seat == far
    assert server.thread.call(core.tick(game.game_id)) == ticked  # nothing more is due
    # A client may not take the service's command ids.
    code, info, fields = error_of(
        lambda: submit(server, game, far, DRAW, ticked, command_id=f"tick:{ticked}")
    )
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "RESERVED_COMMAND_ID",
        ["command_id"],
    )
    # Played to the end, the replay re-derives the ticked batch at its recorded time.
    from croupier.service.bots import choose

    rng = random.Random(11)
    while not view(server, game, 0).finished:
        seat = view(server, game, 0).view.hoola.turn
        legal = server.stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=auth(tokens[seat])
        )
        if not legal.moves:  # another claim window is open: let time close it, and tick
            server.clock.advance(CLAIM_WINDOW_MS + 50)
            server.thread.call(core.tick(game.game_id))
            continue
        submit(server, game, seat, choose(list(legal.moves), rng).command, legal.version)
    exported = server.stub.ExportReplay(
        service_pb2.ExportReplayRequest(game_id=game.game_id)
    ).replay
    verdict = server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=exported))
    assert verdict.ok, verdict.divergence


# --- six or seven seats: the play-or-sit-out round --------------------------------------------


def test_seven_seats_choose_and_the_involuntary_sitters_out_are_paid(server: Running) -> None:
    game = create(
        server,
        seats=7,
        client_seeds=["sit-out"],
        overrides=service_pb2.Rules(
            hoola=hoola_pb2.HoolaRules(sit_out=True, max_seats=7, rounds=1)
        ),
    )
    first = view(server, game, 0).view.hoola
    assert first.phase == hoola_pb2.HOOLA_PHASE_CHOOSING and first.turn == first.dealer
    version = game.version
    for k in range(6):  # the dealer sits out; the next five play and the last seat sits out
        seat = (first.dealer + k) % 7
        legal = server.stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game.game_id),
            metadata=auth(game.tokens[seat].token),
        )
        assert [m.label for m in legal.moves] == ["Play this round", "Sit this round out"]
        choice = legal.moves[1 if k == 0 else 0].command
        version = submit(server, game, seat, choice, version).version
    last = (first.dealer + 6) % 7
    seen = view(server, game, (first.dealer + 1) % 7).view.hoola
    assert seen.phase == hoola_pb2.HOOLA_PHASE_TAKE and seen.turn == (first.dealer + 1) % 7
    assert len(seen.players) == 5 and first.dealer not in seen.players and last not in seen.players
    voluntary, involuntary = seen.sat_out
    assert (voluntary.seat, voluntary.voluntary, len(voluntary.hand)) == (first.dealer, True, 0)
    assert (involuntary.seat, involuntary.voluntary, len(involuntary.hand)) == (last, False, 7)
    assert involuntary.compensation == len(involuntary.brights)
    assert seen.hand_counts[first.dealer] == seen.hand_counts[last] == 0
    assert seen.stock_count == 52 - 7 * 7 - 1 + 14
    # A sitter-out has nothing to do this round.
    code, info, _ = error_of(lambda: submit(server, game, last, DRAW, version))
    assert (code, info.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "SITTING_OUT")
    # The seats' copies hide the new stock; the revealed hand is public.
    mine = server.stub.GetReplay(
        service_pb2.GetReplayRequest(game_id=game.game_id), metadata=auth(game.tokens[last].token)
    )
    bodies = [e.body.hoola for e in mine.events]
    began = next(b.play_began for b in bodies if b.HasField("play_began"))
    assert not began.stock and began.stock_count == 16 and list(began.players) == list(seen.players)
    # Played to the end, the round's settlement pays the involuntary sitter-out its brights.
    tokens = [t.token for t in game.tokens]
    rng = random.Random(3)
    from croupier.service.bots import choose

    while not view(server, game, 0).finished:
        seat = view(server, game, 0).view.hoola.turn
        legal = server.stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=auth(tokens[seat])
        )
        submit(server, game, seat, choose(list(legal.moves), rng).command, legal.version)
    settlement = server.stub.GetSettlement(
        service_pb2.GetSettlementRequest(game_id=game.game_id, round=1), metadata=auth(tokens[0])
    ).settlement
    paid = [line for line in settlement.lines if line.payee == last]
    assert settlement.net[last] == 5 * involuntary.compensation
    assert sorted(line.payer for line in paid) == (sorted(seen.players) if paid else [])
    assert all(
        line.amount == involuntary.compensation and line.factors[0].name == "brights"
        for line in paid
    )
    assert not [line for line in settlement.lines if first.dealer in (line.payer, line.payee)]
    assert sum(settlement.net) == 0
