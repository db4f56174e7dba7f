"""One call per move: SubmitCommand's answer carries what the caller asks for, and a Play stream
per seat plays a whole game with one message per move, exactly once, resumable."""

from __future__ import annotations

import contextlib
import logging
import queue
import random
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
import structlog.contextvars
import structlog.testing

from croupier.service.bots import auth, choose, finish_game
from croupier.v1 import common_pb2, gin_pb2, hoola_pb2, service_pb2, service_pb2_grpc

from .conftest import Running, studio_auth
from .test_grpc import error_of

DRAW = service_pb2.Command(hoola=hoola_pb2.HoolaCommand(draw=hoola_pb2.Draw()))
EVERYTHING = service_pb2.Include(view=True, legal_moves=True, to_act=True)


def new_game(server: Running, seats: int = 3) -> service_pb2.CreateGameResponse:
    # One round (the default table is open until a seat leaves it).
    return server.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=common_pb2.GAME_KIND_HOOLA,
            seats=seats,
            overrides=service_pb2.Rules(hoola=hoola_pb2.HoolaRules(rounds=1)),
        ),
        metadata=studio_auth(),
    )


def test_a_submit_answers_with_what_the_caller_asks_for(server: Running) -> None:
    game = new_game(server)
    view = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    turn = view.view.hoola.turn
    assert [s.seat for s in view.to_act] == [turn]  # every view says who is to act
    assert [s.turn for s in view.to_act] == [True]  # and that the game waits on it
    me = auth(game.tokens[turn].token)
    answer = server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id,
            command_id="draw",
            expected_version=game.version,
            command=DRAW,
            include=EVERYTHING,
        ),
        metadata=me,
    )
    legal = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=me
    )
    seen = server.stub.GetView(service_pb2.GetViewRequest(game_id=game.game_id), metadata=me)
    assert list(answer.legal_moves) == list(legal.moves) and answer.legal_moves
    assert answer.view == seen.view and len(answer.view.hoola.hand) == 8
    assert list(answer.to_act) == list(seen.to_act) and [s.seat for s in answer.to_act] == [turn]
    assert not answer.finished
    # A retry answers the same, with the parts as the game stands.
    again = server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id,
            command_id="draw",
            expected_version=game.version,
            command=DRAW,
            include=EVERYTHING,
        ),
        metadata=me,
    )
    assert again.version == answer.version and list(again.legal_moves) == list(answer.legal_moves)
    # A lean client gets the events only.
    discard = legal.moves[-1].command
    lean = server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id,
            command_id="lean",
            expected_version=answer.version,
            command=discard,
        ),
        metadata=me,
    )
    assert lean.events and not lean.HasField("view") and not lean.legal_moves and not lean.to_act


def test_a_retry_after_the_game_ended_says_finished_as_of_now(server: Running) -> None:
    """SubmitCommandResponse.finished, on a retry, is the game's now (as the include parts are),
    not whether that command ended it: a client told ``finished`` stops, and the events it is
    sent again come complete, as every copy once the game is over."""
    game = new_game(server)
    tokens = [t.token for t in game.tokens]
    turn = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(tokens[0])
    ).view.hoola.turn
    first = server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id, command_id="early", expected_version=game.version, command=DRAW
        ),
        metadata=auth(tokens[turn]),
    )
    assert not first.finished and first.events
    finish_game(server.channel, game.game_id, tokens, random.Random(5))
    again = server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id, command_id="early", expected_version=game.version, command=DRAW
        ),
        metadata=auth(tokens[turn]),
    )
    assert again.already_applied and again.version == first.version
    assert again.finished
    assert [e.version for e in again.events] == [e.version for e in first.events]
    assert all(not e.redacted and e.hash for e in again.events)


class PlayConnection:
    """One seat's Play stream from a synchronous client: ``send`` queues a request; responses
    are read on a thread into ``received``."""

    def __init__(self, stub: service_pb2_grpc.GameServiceStub, token: str) -> None:
        self._outgoing: queue.Queue[service_pb2.PlayRequest | None] = queue.Queue()
        self.call = stub.Play(self._requests(), metadata=auth(token))
        self.received: queue.Queue[service_pb2.PlayResponse | None] = queue.Queue()
        self.sent = 0
        self.error: grpc.RpcError | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _requests(self) -> Iterator[service_pb2.PlayRequest]:
        while (request := self._outgoing.get()) is not None:
            yield request

    def _read(self) -> None:
        try:
            for response in self.call:
                self.received.put(response)
        except grpc.RpcError as error:
            self.error = error
        finally:
            self.received.put(None)

    def join(self, game_id: str, after: int = 0, batched: bool = False) -> None:
        self._outgoing.put(
            service_pb2.PlayRequest(
                join=service_pb2.PlayJoin(
                    game_id=game_id,
                    after_version=after,
                    include=service_pb2.Include(legal_moves=True, to_act=True),
                    batched=batched,
                )
            )
        )

    def request(self, request: service_pb2.PlayRequest) -> None:
        """Send ``request`` as it is (a malformed one, say)."""
        self._outgoing.put(request)

    def send(self, command_id: str, version: int, command: service_pb2.Command) -> None:
        self.sent += 1
        self._outgoing.put(
            service_pb2.PlayRequest(
                command=service_pb2.PlayCommand(
                    command_id=command_id, expected_version=version, command=command
                )
            )
        )

    def next(self, kind: str) -> service_pb2.PlayResponse:
        """The next response of ``kind`` (events and states before it are kept in order)."""
        while True:
            response = self.received.get(timeout=30)
            assert response is not None, "the stream ended"
            self.log.append(response)
            if response.WhichOneof("kind") == kind:
                return response

    log: list[service_pb2.PlayResponse]

    def close(self) -> None:
        self._outgoing.put(None)

    def cancel(self) -> None:
        self.call.cancel()


def connect(server: Running, token: str) -> PlayConnection:
    connection = PlayConnection(server.stub, token)
    connection.log = []
    return connection


def test_a_whole_game_over_play_streams_one_message_per_move(server: Running) -> None:
    game = new_game(server)
    seats = [connect(server, t.token) for t in game.tokens]
    for connection in seats:
        connection.join(game.game_id)
    states = [c.next("state").state for c in seats]
    rng, moves = random.Random(3), 0
    while not states[0].finished:
        # Who is to act comes with the state each seat is pushed; no seat asks for anything.
        assert states[0].to_act, "someone is to act while the game is on"
        seat = states[0].to_act[0].seat
        mine = states[seat]
        move = choose(list(mine.legal_moves), rng)
        seats[seat].send(uuid.uuid4().hex, mine.version, move.command)
        moves += 1
        version = seats[seat].next("accepted").accepted.version
        for i, connection in enumerate(seats):
            # The seat's state may come before or after the answer to its command (both are
            # pushed as they are ready): the newest one read so far counts.
            pushed = [r.state for r in connection.log if r.WhichOneof("kind") == "state"]
            states[i] = max([states[i], *pushed], key=lambda state: state.version)
            while states[i].version < version:
                states[i] = connection.next("state").state
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    for connection in seats:
        # The game is over: every stream ends once its events are out, though no client stopped
        # sending (a client on a results screen does not hold a server's shutdown up).
        while (response := connection.received.get(timeout=30)) is not None:
            connection.log.append(response)
        assert connection.error is None
        events = [r.event.version for r in connection.log if r.WhichOneof("kind") == "event"]
        assert events == [e.version for e in replay.events]
        connection.close()
    # One client message per move: nothing else was sent but the join.
    assert sum(c.sent for c in seats) == moves and moves > 0


def test_batched_play_sends_each_batch_with_its_state_in_one_message(server: Running) -> None:
    """A seat that joins ``batched`` gets the same events, in the same order and bytes, as one
    that does not, each batch in one message with the state after it."""
    game = new_game(server)
    players = [connect(server, t.token) for t in game.tokens]
    watchers = [connect(server, t.token) for t in game.tokens]  # the same seats, unbatched
    for player, watcher in zip(players, watchers, strict=True):
        player.join(game.game_id, batched=True)
        watcher.join(game.game_id)
    states = [p.next("batch").batch.state for p in players]
    rng, moves = random.Random(5), 0
    while not states[0].finished:
        seat = states[0].to_act[0].seat
        move = choose(list(states[seat].legal_moves), rng)
        players[seat].send(uuid.uuid4().hex, states[seat].version, move.command)
        moves += 1
        version = players[seat].next("accepted").accepted.version
        for i, player in enumerate(players):
            pushed = [r.batch.state for r in player.log if r.WhichOneof("kind") == "batch"]
            states[i] = max([states[i], *pushed], key=lambda state: state.version)
            while states[i].version < version:
                states[i] = player.next("batch").batch.state
    for connection in players + watchers:
        connection.close()
    for player, watcher in zip(players, watchers, strict=True):
        for connection in (player, watcher):
            while (response := connection.received.get(timeout=30)) is not None:
                connection.log.append(response)
        kinds = {r.WhichOneof("kind") for r in player.log}
        assert kinds <= {"batch", "accepted"}, kinds
        batches = [r.batch for r in player.log if r.WhichOneof("kind") == "batch"]
        after = 0
        for batch in batches:
            # Each batch's state is as of its last event (the first may bring none).
            assert batch.HasField("state")
            assert batch.state.version == (batch.events[-1].version if batch.events else after)
            after = batch.state.version
        got = [e.SerializeToString() for b in batches for e in b.events]
        expected = [
            r.event.SerializeToString() for r in watcher.log if r.WhichOneof("kind") == "event"
        ]
        assert got == expected and len(got) > moves > 0
        # Fewer messages for the same content: one per batch instead of one per event and state.
        assert len(batches) < len(watcher.log)
        assert batches[-1].state.finished


@contextlib.contextmanager
def info_logs() -> Iterator[list[dict[str, Any]]]:
    """The log lines at info and above while it is open (the tests log warnings only)."""
    before = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    try:
        # With what the call bound (its game, its seat), as the real log has it.
        merged = [structlog.contextvars.merge_contextvars]
        with structlog.testing.capture_logs(processors=merged) as logged:
            yield logged
    finally:
        structlog.configure(**before)


def test_play_applies_a_resent_command_once_and_refuses_clearly(server: Running) -> None:
    game = new_game(server)
    view = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    turn = view.view.hoola.turn
    other = (turn + 1) % 3
    me = connect(server, game.tokens[turn].token)
    me.join(game.game_id)
    me.next("state")
    me.send("once", game.version, DRAW)
    first = me.next("accepted").accepted
    me.send("once", game.version, DRAW)  # a resend after a lost answer
    again = me.next("accepted").accepted
    assert (again.command_id, again.version) == ("once", first.version)
    assert (first.already_applied, again.already_applied) == (False, True)
    with info_logs() as logged:
        me.send("stale", game.version, DRAW)
        stale = me.next("refused").refused
    assert (stale.command_id, stale.status, stale.reason) == (
        "stale",
        "ABORTED",
        "VERSION_CONFLICT",
    )
    # The refusal has its log line (a support agent's record that the command came), with the
    # game, the seat and the command's id.
    [line] = [entry for entry in logged if entry["event"] == "play_refused"]
    assert (line["command"], line["command_id"], line["outcome"], line["reason"]) == (
        "Draw",
        "stale",
        "ABORTED",
        "VERSION_CONFLICT",
    )
    assert (line["game_id"], line["seat"]) == (game.game_id, turn)
    assert stale.metadata["current_version"] == str(first.version)
    them = connect(server, game.tokens[other].token)
    them.join(game.game_id)
    them.next("state")
    them.send("not-mine", first.version, DRAW)
    refused = them.next("refused").refused
    assert (refused.status, refused.reason) == ("FAILED_PRECONDITION", "NOT_YOUR_TURN")
    # The stream stays open after a refusal; the log holds one draw.
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    assert [e.command_id for e in replay.events].count("once") == 1
    me.cancel()
    them.cancel()


def test_play_resumes_after_a_reconnect(server: Running) -> None:
    game = new_game(server)
    view = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    turn = view.view.hoola.turn
    first = connect(server, game.tokens[turn].token)
    first.join(game.game_id)
    first.next("state")
    first.send("draw", game.version, DRAW)
    drawn = first.next("accepted").accepted.version
    first.cancel()  # the phone loses its connection
    again = connect(server, game.tokens[turn].token)
    again.join(game.game_id, after=game.version)
    state = again.next("state").state
    events = [r.event.version for r in again.log if r.WhichOneof("kind") == "event"]
    assert events == list(range(game.version + 1, drawn + 1)) and state.version == drawn
    # The seat is told what it may do next: it drew, so it discards (or melds) now.
    assert state.legal_moves and not any(
        m.command.hoola.HasField("draw") for m in state.legal_moves
    )
    again.cancel()


def test_play_must_join_first(server: Running) -> None:
    game = new_game(server)
    connection = connect(server, game.tokens[0].token)
    connection.send("x", game.version, DRAW)
    assert connection.received.get(timeout=30) is None  # the stream ends with an error
    assert connection.error is not None
    assert connection.error.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]


def test_after_the_join_a_second_join_or_an_empty_message_is_refused_for_what_it_is(
    server: Running,
) -> None:
    """Each is refused INVALID_ARGUMENT with its own reason, and the stream stays open."""
    game = new_game(server)
    turn = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    ).view.hoola.turn
    connection = connect(server, game.tokens[turn].token)
    connection.join(game.game_id)
    connection.next("state")
    connection.join(game.game_id)
    again = connection.next("refused").refused
    assert (again.status, again.reason, again.command_id) == ("INVALID_ARGUMENT", "JOIN_ONCE", "")
    connection.request(service_pb2.PlayRequest())
    empty = connection.next("refused").refused
    assert (empty.status, empty.reason) == ("INVALID_ARGUMENT", "MISSING_FIELD")
    assert "command" in empty.message
    connection.send("draw", game.version, DRAW)  # still open: a command is answered
    assert connection.next("accepted").accepted.command_id == "draw"
    connection.cancel()


def test_a_join_after_a_version_the_game_has_not_reached_is_refused(server: Running) -> None:
    """Versions only grow: a join past the game's version is a client's mistake, answered at once
    rather than with a stream that would wait in silence for events it is never sent."""
    game = new_game(server)
    connection = connect(server, game.tokens[0].token)
    connection.join(game.game_id, after=game.version + 100)
    assert connection.received.get(timeout=30) is None  # the stream ends with an error
    error = connection.error
    assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "join.after_version" in (error.details() or "")  # type: ignore[attr-defined]
    connection.close()
    # At the game's version itself, the seat is up to date: its state comes.
    again = connect(server, game.tokens[0].token)
    again.join(game.game_id, after=game.version)
    assert again.next("state").state.version == game.version
    again.close()
    again.cancel()


@pytest.mark.parametrize(
    ("game_id", "reason"),
    [("", "MISSING_FIELD"), ("g" * 65, "TOO_LONG"), ("a\x00b", "INVALID_CHARACTER")],
)
def test_a_join_refused_for_its_game_id_names_the_field_as_sent(
    server: Running, game_id: str, reason: str
) -> None:
    """The join's fields are named as sent (``join.after_version``, ``join.heartbeat_s``): so is
    its game id, else a client mapping a BadRequest's field to what it sent finds no
    ``game_id`` in its PlayRequest."""
    game = new_game(server)

    def join() -> None:
        request = service_pb2.PlayRequest(join=service_pb2.PlayJoin(game_id=game_id))
        list(server.stub.Play(iter([request]), metadata=auth(game.tokens[0].token)))

    code, info, fields = error_of(join)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert info.reason == reason
    assert fields == ["join.game_id"]


@contextlib.contextmanager
def join_timeout(server: Running, seconds: float) -> Iterator[None]:
    """The server's Play streams wait ``seconds`` for their join, for the block's time."""
    core = server.thread.core
    before = core.join_timeout_s
    core.join_timeout_s = seconds
    try:
        yield
    finally:
        core.join_timeout_s = before


def silent_play(
    server: Running, metadata: tuple[tuple[str, str], ...] = ()
) -> tuple[grpc.StatusCode, str, list[str], float]:
    """A Play call that never sends a message (nor closes its side): the code, reason and fields
    it ended with, and after how many seconds. Its deadline (10 s) fails a stream held longer
    without the service's ErrorInfo."""
    outgoing: queue.Queue[service_pb2.PlayRequest | None] = queue.Queue()
    started = time.monotonic()
    call = server.stub.Play(iter(outgoing.get, None), metadata=metadata, timeout=10)
    try:
        code, info, fields = error_of(lambda: next(call))
    finally:
        outgoing.put(None)
        call.cancel()
    return code, info.reason, fields, time.monotonic() - started


def test_a_play_call_without_a_seat_token_is_refused_at_once_before_any_join(
    server: Running,
) -> None:
    """An anonymous Play is refused UNAUTHENTICATED MISSING_TOKEN as soon as the call opens, as
    its join would be: the service does not hold a stream, and its memory, for a join it would
    refuse (anyone could open thousands). A studio or player token: SEAT_TOKEN_REQUIRED, the
    same."""
    with join_timeout(server, 60.0):  # refused long before a join could be waited for
        code, reason, _, took_s = silent_play(server)
        assert (code, reason) == (grpc.StatusCode.UNAUTHENTICATED, "MISSING_TOKEN")
        assert took_s < 5
        code, reason, _, _ = silent_play(server, studio_auth())
        assert (code, reason) == (grpc.StatusCode.UNAUTHENTICATED, "SEAT_TOKEN_REQUIRED")
    # With a join, the answer is the same.
    game = new_game(server)
    anonymous = server.stub.Play(
        iter([service_pb2.PlayRequest(join=service_pb2.PlayJoin(game_id=game.game_id))]),
        timeout=10,
    )
    code, info, _ = error_of(lambda: next(anonymous))
    assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "MISSING_TOKEN")


def test_a_play_stream_whose_join_does_not_come_in_time_ends_join_timeout(
    server: Running,
) -> None:
    """A seat's Play stream that sends no join within the join time-out ends INVALID_ARGUMENT
    JOIN_TIMEOUT (field ``join``); a join sent at once plays on past that time."""
    game = new_game(server)
    token = game.tokens[0].token
    with join_timeout(server, 0.5):
        code, reason, fields, took_s = silent_play(server, auth(token))
        assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "JOIN_TIMEOUT")
        assert fields == ["join"]
        assert 0.5 <= took_s < 5
        turn = server.stub.GetView(
            service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(token)
        ).view.hoola.turn
        connection = connect(server, game.tokens[turn].token)
        connection.join(game.game_id)
        assert connection.next("state").state.version == game.version
        time.sleep(1.0)  # twice the join time-out: a joined stream has no such limit
        connection.send("draw", game.version, DRAW)
        assert connection.next("accepted").accepted.command_id == "draw"
        connection.cancel()


class Watch:
    """One seat's StreamEvents call, read on a thread into ``received`` (``None`` at its end)."""

    def __init__(
        self,
        stub: service_pb2_grpc.GameServiceStub,
        game_id: str,
        token: str | list[tuple[str, str]],
        include: service_pb2.Include | None,
        batched: bool = False,
    ) -> None:
        request = service_pb2.StreamEventsRequest(game_id=game_id, include=include, batched=batched)
        metadata = auth(token) if isinstance(token, str) else token
        self.call = stub.StreamEvents(request, metadata=metadata)
        self.received: queue.Queue[service_pb2.StreamEventsResponse | None] = queue.Queue()
        self.log: list[service_pb2.StreamEventsResponse] = []
        self.state: service_pb2.PlayState | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for response in self.call:
                self.received.put(response)
        finally:
            self.received.put(None)

    def state_at(self, version: int) -> service_pb2.PlayState:
        """The newest state pushed, once one is at ``version`` or later."""
        while self.state is None or self.state.version < version:
            response = self.received.get(timeout=30)
            assert response is not None, "the stream ended"
            self.log.append(response)
            sent = [response.HasField(f) for f in ("event", "state", "batch")]
            assert sum(sent) == 1, f"one of them per message: {response}"
            if response.HasField("state"):
                self.state = response.state
            elif response.batch.HasField("state"):
                self.state = response.batch.state
        return self.state

    def events(self) -> list[int]:
        """The versions of the events received, one a message or in batches."""
        return [
            e.version
            for r in self.log
            for e in (r.batch.events if r.HasField("batch") else [r.event] * r.HasField("event"))
        ]

    def states(self) -> list[service_pb2.PlayState]:
        return [
            r.batch.state if r.HasField("batch") else r.state
            for r in self.log
            if r.HasField("state") or r.batch.HasField("state")
        ]

    def rest(self) -> list[service_pb2.StreamEventsResponse]:
        """Everything up to the stream's end (it ends once the game is over)."""
        while (response := self.received.get(timeout=30)) is not None:
            self.log.append(response)
        return self.log


@pytest.mark.parametrize("batched", [False, True])
def test_a_browser_plays_a_whole_game_with_one_call_per_move_on_pushed_states(
    server: Running, batched: bool
) -> None:
    """A client that cannot hold Play (a browser): each seat's StreamEvents with ``include`` is
    pushed its state after each batch, so the only call a move takes is its SubmitCommand
    (``batched``: each batch and its state in one message)."""
    game = new_game(server)
    asked = service_pb2.Include(legal_moves=True, to_act=True)
    watches = [Watch(server.stub, game.game_id, t.token, asked, batched) for t in game.tokens]
    # Events only, one a message or batched.
    plain = Watch(server.stub, game.game_id, game.tokens[0].token, None, batched)
    # A spectator (the studio's token: a spectator screen, the studio's backend) is pushed
    # the spectator's copies, view and who is to act.
    looking = service_pb2.Include(view=True, to_act=True)
    spectator = Watch(server.stub, game.game_id, studio_auth(), looking, batched)
    states = [w.state_at(game.version) for w in watches]
    rng, moves, version = random.Random(5), 0, game.version
    while not states[0].finished:
        assert states[0].to_act, "someone is to act while the game is on"
        seat = states[0].to_act[0].seat
        mine = states[seat]
        me = auth(game.tokens[seat].token)
        # What was pushed is what the seat would have been answered had it asked.
        legal = server.stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=me
        )
        assert (legal.version, list(legal.moves)) == (mine.version, list(mine.legal_moves))
        answer = server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id=uuid.uuid4().hex,
                expected_version=mine.version,
                command=choose(list(mine.legal_moves), rng).command,
            ),
            metadata=me,
        )
        moves, version = moves + 1, answer.version
        states = [w.state_at(version) for w in watches]
        assert {s.version for s in states} == {version}  # nobody else moved meanwhile
        assert all(list(s.to_act) == list(states[0].to_act) for s in states)
        seen = spectator.state_at(version)
        assert (seen.version, list(seen.to_act)) == (version, list(states[0].to_act))
        assert not seen.legal_moves and not seen.view.hoola.HasField("seat")
        assert not seen.view.hoola.hand  # nobody's hand
        assert len(seen.view.hoola.hand_counts) == len(game.tokens)
        # What GetView answers the studio's token at that version.
        assert (
            seen.view
            == server.stub.GetView(
                service_pb2.GetViewRequest(game_id=game.game_id), metadata=studio_auth()
            ).view
        )
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    everything = [e.version for e in replay.events]
    for watch in watches:
        watch.rest()
        assert watch.events() == everything
        pushed = watch.states()
        assert pushed[-1].finished and pushed[-1].version == version
        assert len(pushed) >= moves  # a state after each move's batch, at least
        # Batched: a message per batch (its state with it); else a message per event and state.
        assert len(watch.log) == (len(pushed) if batched else len(everything) + len(pushed))
    # The spectator's copies hid every hand while the game was on.
    spectator.rest()
    assert spectator.events() == everything and spectator.states()[-1].finished
    dealt = [
        e
        for r in spectator.log
        for e in (r.batch.events if r.HasField("batch") else [r.event] * r.HasField("event"))
        if e.body.hoola.HasField("round_dealt")
    ]
    assert dealt and all(e.redacted and not e.hash for e in dealt)
    assert all(not h.cards for e in dealt for h in e.body.hoola.round_dealt.hands)
    assert all(not e.body.hoola.round_dealt.stock for e in dealt)
    # Without include, the same stream sends the events only.
    plain.rest()
    assert not plain.states() and plain.events() == everything
    assert all(r.HasField("batch" if batched else "event") for r in plain.log)
    assert moves > 0


def test_to_act_marks_the_seat_the_game_waits_on_from_one_that_may_act_out_of_turn(
    server: Running,
) -> None:
    """Between two Gin hands either seat may deal the next (docs/rules/gin.md): both are listed
    to act, the next dealer marked as the one the game waits on (``turn``), without a turn clock
    too (before: nothing told them apart, and a client that dealt whenever listed met ABORTED
    at most hand boundaries)."""
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_GIN, seats=2),
        metadata=studio_auth(),
    )
    rng = random.Random(7)
    seats = [auth(t.token) for t in game.tokens]
    for number in range(400):
        view = server.stub.GetView(
            service_pb2.GetViewRequest(game_id=game.game_id), metadata=seats[0]
        )
        if view.view.gin.phase == gin_pb2.GIN_PHASE_HAND_OVER:
            break
        [acting] = [s for s in view.to_act if s.turn]  # one seat's turn during a hand
        assert [s.seat for s in view.to_act] == [acting.seat]
        me = seats[acting.seat]
        moves = server.stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=me
        )
        server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id=f"move-{number}",
                expected_version=view.version,
                command=choose(list(moves.moves), rng).command,
            ),
            metadata=me,
        )
    else:
        pytest.fail("no hand ended")
    assert [s.seat for s in view.to_act] == [0, 1]
    dealer = [s.seat for s in view.to_act if s.turn]
    assert len(dealer) == 1 and not any(s.deadline_ms for s in view.to_act)
