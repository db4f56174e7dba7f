"""Turn clocks in the service (issue 11): the sweeper records time-outs when nobody calls, exactly
once among replicas, with their own deadlines after a restart; a command that comes at the
deadline is too late; views say whose clock runs until when. Tests move the servers' clock
instead of sleeping; where the background sweeper is what is tested, a stream waits for it."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import grpc
import pytest

from croupier.app.sweeper import SweepSettings
from croupier.replays.format import from_binary
from croupier.replays.timeline import render_text, timeline
from croupier.v1 import common_pb2, gin_pb2, hoola_pb2, service_pb2, service_pb2_grpc

from .conftest import Running, server_thread, studio_auth
from .test_grpc import auth, error_of, settle

TURN_MS = 20_000
GIN = common_pb2.GAME_KIND_GIN


def create(server: Running, **clock: int) -> service_pb2.CreateGameResponse:
    rules = gin_pb2.GinRules(turn_time_ms=TURN_MS, **clock)  # type: ignore[arg-type]
    return server.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=GIN,
            seats=2,
            preset="single-hand",
            overrides=service_pb2.Rules(gin=rules),
            client_seeds=["clock"],
        ),
        metadata=studio_auth(),
    )


def view(server: Running, game: service_pb2.CreateGameResponse) -> service_pb2.GetViewResponse:
    return server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )


def timed_out(server: Running, game: service_pb2.CreateGameResponse) -> list[int]:
    """The deadlines of the game's recorded time-outs, in order."""
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    return [
        e.body.gin.turn_timed_out.deadline_ms
        for e in replay.events
        if e.body.gin.HasField("turn_timed_out")
    ]


def test_views_say_whose_clock_runs_until_when(server: Running) -> None:
    game = create(server, time_bank_ms=5_000)
    shown = view(server, game)
    (clock,) = shown.to_act
    assert clock.seat == shown.view.gin.turn and not clock.away
    assert clock.bank_ms == 5_000
    first = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id)).events[0]
    assert clock.deadline_ms == first.recorded_at_ms + TURN_MS + 5_000


def _first_time_out(
    server: Running, **clock: int
) -> tuple[service_pb2.CreateGameResponse, int, service_pb2.GameEvent]:
    """A new game (its rules' ``clock`` settings changed), its first deadline, and the first
    event a stream sees once the clock has passed it (nobody calls: whatever records it is the
    background sweeper)."""
    game = create(server, **clock)
    deadline = view(server, game).to_act[0].deadline_ms
    stream = server.stub.StreamEvents(
        service_pb2.StreamEventsRequest(game_id=game.game_id, after_version=game.version),
        metadata=auth(game.tokens[1].token),
        timeout=30,
    )
    server.clock.advance(TURN_MS + 1)
    first = next(iter(stream)).event
    stream.cancel()
    return game, deadline, first


def test_the_sweeper_records_a_time_out_that_no_one_calls_for(server: Running) -> None:
    """Nobody calls after the deadline: the background sweeper records the time-out and the
    forced move, and a stream watching the game receives them."""
    game, deadline, first = _first_time_out(server)
    assert first.body.gin.turn_timed_out.deadline_ms == deadline
    assert first.command_id == f"tick:{game.version}" and not first.HasField("seat")
    assert timed_out(server, game) == [deadline]


def test_an_away_seat_whose_clock_is_not_running_is_listed_as_away(server: Running) -> None:
    """After its one time-out (``max_timeouts`` 1) the first seat is away and the other seat's
    clock runs: the away seat is still to act (it may come back), flagged away, without a
    deadline; the seat whose clock runs is the one with a deadline."""
    game, _, first = _first_time_out(server, max_timeouts=1)
    idle = first.body.gin.turn_timed_out.seat
    assert first.body.gin.turn_timed_out.away
    entries = {entry.seat: entry for entry in view(server, game).to_act}
    assert set(entries) == {0, 1}
    assert entries[idle].away and entries[idle].deadline_ms == 0
    assert not entries[1 - idle].away and entries[1 - idle].deadline_ms > 0


@contextmanager
def _database_says_nothing_is_due(server: Running, looks: list[str]) -> Iterator[None]:
    """The sweeper's looks in the database answer that nothing is due and its claims claim
    nothing (each look noted in ``looks``)."""
    log = server.thread.core.log

    async def nothing_due() -> int | None:
        looks.append("next_due")
        return None

    async def nothing_claimed(now_ms: int, lease_ms: int, limit: int) -> list[str]:
        looks.append("claim_due")
        return []

    log.next_due = nothing_due  # type: ignore[method-assign]
    log.claim_due = nothing_claimed  # type: ignore[method-assign]
    try:
        yield
    finally:
        del log.next_due, log.claim_due  # the instance's own methods again


def test_a_deadline_this_process_recorded_is_ticked_without_asking_the_database(
    server: Running,
) -> None:
    """The process that recorded a deadline ticks the game when it passes from its own copy:
    with the database's looks answering nothing due and its claims claiming nothing, the
    time-out is still recorded (and seen by a stream) at its deadline."""
    looks: list[str] = []
    with _database_says_nothing_is_due(server, looks):
        game, deadline, first = _first_time_out(server)
    assert first.body.gin.turn_timed_out.deadline_ms == deadline
    assert timed_out(server, game) == [deadline]
    assert looks, "the database was still looked at, and said nothing was due"


def test_a_command_at_the_deadline_is_too_late(server: Running) -> None:
    game = create(server)
    shown = view(server, game)
    seat, deadline = shown.to_act[0].seat, shown.to_act[0].deadline_ms
    server.clock.advance(deadline - server.clock() + 0)
    pass_upcard = service_pb2.Command(gin=gin_pb2.GinCommand(**{"pass": gin_pb2.Pass()}))
    code, info, _ = error_of(
        lambda: server.stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id="late",
                expected_version=shown.version,
                command=pass_upcard,
            ),
            metadata=auth(game.tokens[seat].token),
        )
    )
    assert (code, info.reason) == (grpc.StatusCode.ABORTED, "VERSION_CONFLICT")
    assert timed_out(server, game) == [deadline]


@pytest.fixture
def replica(server: Running) -> Iterator[Running]:
    from croupier.service.store import open_store

    store = open_store(server.store.url)
    thread = server_thread(store, clock=server.clock)
    port = thread.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Running(
            channel,
            service_pb2_grpc.GameServiceStub(channel),
            store,
            f"127.0.0.1:{port}",
            server.clock,
            thread,
        )
    finally:
        channel.close()
        thread.stop(grace=None)
        store.close()


def test_two_replicas_sweeping_record_each_time_out_once(server: Running, replica: Running) -> None:
    games = [create(server) for _ in range(12)]
    for _ in range(3):  # three rounds of deadlines, each swept by both replicas at once
        server.clock.advance(TURN_MS + 1)
        sweeps = [threading.Thread(target=settle, args=(r,)) for r in (server, replica) * 2]
        for sweep in sweeps:
            sweep.start()
        for sweep in sweeps:
            sweep.join()
    for game in games:
        deadlines = timed_out(server, game)
        assert deadlines, "every game timed out"
        assert max(Counter(deadlines).values()) == 1, deadlines  # never one deadline twice
        if view(server, game).finished:
            exported = server.stub.ExportReplay(
                service_pb2.ExportReplayRequest(game_id=game.game_id),
                metadata=auth(game.tokens[0].token),
            )
            verdict = server.stub.VerifyReplay(
                service_pb2.VerifyReplayRequest(replay=exported.replay)
            )
            assert verdict.ok, verdict.divergence


def _down_for(
    server: Running, down_ms: int, **clock: int
) -> tuple[service_pb2.CreateGameResponse, int]:
    """A game created on a server that then goes down for ``down_ms`` (the game's rules'
    ``clock`` settings changed); its first deadline. The other server, ``server``, which did not
    know the game, records what fell due when the time has passed."""
    from croupier.service.store import open_store

    store = open_store(server.store.url)
    down = server_thread(store, clock=server.clock)
    port = down.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = service_pb2_grpc.GameServiceStub(channel)
        other = Running(channel, stub, store, f"127.0.0.1:{port}", server.clock, down)
        game = create(other, **clock)
        first = view(other, game).to_act[0].deadline_ms
    down.stop(grace=None)
    # The game's server is gone; the others do not know the game yet (no reads, no cache).
    server.clock.advance(down_ms)
    settle(server)
    store.close()
    return game, first


def test_without_outage_grace_time_outs_that_fell_due_while_down_keep_their_deadlines(
    server: Running,
) -> None:
    """With ``outage_grace_ms`` 0 (as games recorded before it): the service is down for several
    turns, and when it is back each time-out is recorded with the deadline it had, one after the
    other (the next turn's clock starts at the last one)."""
    game, first = _down_for(server, 3 * TURN_MS + TURN_MS // 2, max_timeouts=100, outage_grace_ms=0)
    deadlines = timed_out(server, game)
    assert deadlines[:3] == [first, first + TURN_MS, first + 2 * TURN_MS]


def test_a_deadline_that_passed_while_down_restarts_the_turn(server: Running) -> None:
    """With the presets' ``outage_grace_ms``: the service is down for several turns; when it is
    back the seat on the clock is not timed out, its turn starts again with its whole turn time
    (TurnRestarted), and the game's replay verifies and says so."""
    down_ms = 3 * TURN_MS + TURN_MS // 2
    game, first = _down_for(server, down_ms)
    assert timed_out(server, game) == []
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    restarts = [e for e in replay.events if e.body.gin.HasField("turn_restarted")]
    (restart,) = restarts
    again = restart.body.gin.turn_restarted
    assert again.deadline_ms == first and again.at_ms == restart.recorded_at_ms
    assert again.at_ms - first > 1000  # the presets' grace
    (clock,) = view(server, game).to_act
    assert (clock.seat, clock.deadline_ms) == (again.seat, again.at_ms + TURN_MS)
    # The seat plays its turn in the time it was given again.
    shown = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id),
        metadata=auth(game.tokens[again.seat].token),
    )
    answered = server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id,
            command_id="after-the-outage",
            expected_version=shown.version,
            command=shown.moves[0].command,
        ),
        metadata=auth(game.tokens[again.seat].token),
    )
    assert answered.version > shown.version
    # Both seats idle from here: the game ends by its time-outs, and its replay, restart and
    # all, verifies and reads as such.
    for _ in range(100):
        if view(server, game).finished:
            break
        server.clock.advance(TURN_MS + 1)
        settle(server)
    exported = server.stub.ExportReplay(
        service_pb2.ExportReplayRequest(game_id=game.game_id),
        metadata=auth(game.tokens[0].token),
    )
    verdict = server.stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=exported.replay))
    assert verdict.ok, verdict.divergence
    shown_text = render_text(timeline(from_binary(exported.replay)))
    assert f"Seat {again.seat}'s deadline" in shown_text
    assert "passed while the service was away" in shown_text and "turn starts again" in shown_text


def test_a_play_stream_pushes_the_state_after_the_time_outs_due(server: Running) -> None:
    """Seat 1 is away (its turns are forced as they begin): after seat 0's own move its pushed
    state is the recorded game after seat 1's forced turn, so the moves it offers are accepted
    (never the game as of now at an older version, which a command would meet as ABORTED)."""
    from .test_play import connect

    game = create(server, max_timeouts=1)
    me = connect(server, game.tokens[0].token)
    me.join(game.game_id)
    state = me.next("state").state
    for _ in range(40):
        if state.finished:
            break
        if not state.legal_moves or state.to_act[0].seat != 0:
            server.clock.advance(TURN_MS + 1)  # seat 1 idles: the clock plays it
            settle(server)
            state = me.next("state").state
            continue
        move = state.legal_moves[0]
        me.send(f"m{state.version}", state.version, move.command)
        answer = me.next("accepted")  # never refused: the state was the recorded one
        assert answer.accepted.version > state.version
        pushed = [r.state for r in me.log if r.WhichOneof("kind") == "state"]
        state = max(pushed, key=lambda s: s.version)
        while state.version < answer.accepted.version:
            state = me.next("state").state
    me.close()
    assert any(d for d in timed_out(server, game))


def test_a_submit_answers_with_the_game_after_the_time_outs_due(server: Running) -> None:
    """As with Play: seat 1 is away, so its turn is forced as it begins. Seat 0's SubmitCommand
    with ``include`` records that time-out before answering, and its legal moves and who is to
    act are as of ``state_version``, after it: played at that version, they are accepted."""
    game = create(server, max_timeouts=1)
    token = game.tokens[0].token
    include = service_pb2.Include(legal_moves=True, to_act=True)
    shown = view(server, game)
    version, to_act = shown.version, list(shown.to_act)
    legal = list(
        server.stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=auth(token)
        ).moves
    )
    moved_on = 0
    for step in range(40):
        if not to_act:
            break
        if to_act[0].seat != 0 or not legal:
            server.clock.advance(TURN_MS + 1)  # seat 1 idles: the clock plays it
            settle(server)
            shown = view(server, game)
            version, to_act = shown.version, list(shown.to_act)
            legal = list(
                server.stub.ListLegalMoves(
                    service_pb2.ListLegalMovesRequest(game_id=game.game_id),
                    metadata=auth(token),
                ).moves
            )
            continue
        answer = server.stub.SubmitCommand(  # never ABORTED: the parts were the recorded game's
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id,
                command_id=f"m{step}",
                expected_version=version,
                command=legal[0].command,
                include=include,
            ),
            metadata=auth(token),
        )
        assert answer.state_version >= answer.version > version
        if answer.state_version > answer.version:
            moved_on += 1
            ticks = server.stub.GetReplay(
                service_pb2.GetReplayRequest(game_id=game.game_id)
            ).events[answer.version : answer.state_version]
            assert ticks and all(e.command_id.startswith("tick:") for e in ticks)
        version, to_act, legal = answer.state_version, list(answer.to_act), list(answer.legal_moves)
    assert moved_on, "seat 1 was away and played for after seat 0's moves"


def test_a_retry_racing_its_first_attempt_answers_with_the_game_after_it(server: Running) -> None:
    """The same command sent four times at once with ``include``: every answer's parts are of
    the game after the command (``state_version`` at or past ``version``), never before it."""
    game = create(server)
    shown = view(server, game)
    seat = shown.to_act[0].seat
    pass_upcard = service_pb2.Command(gin=gin_pb2.GinCommand(**{"pass": gin_pb2.Pass()}))
    request = service_pb2.SubmitCommandRequest(
        game_id=game.game_id,
        command_id="raced",
        expected_version=shown.version,
        command=pass_upcard,
        include=service_pb2.Include(legal_moves=True, to_act=True),
    )
    answers: list[service_pb2.SubmitCommandResponse] = []
    barrier = threading.Barrier(4)

    def send() -> None:
        barrier.wait()
        answers.append(server.stub.SubmitCommand(request, metadata=auth(game.tokens[seat].token)))

    senders = [threading.Thread(target=send) for _ in range(4)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    after = view(server, game)
    assert len(answers) == 4 and len({a.version for a in answers}) == 1
    for answer in answers:
        assert answer.state_version >= answer.version > shown.version
        assert [s.seat for s in answer.to_act] == [s.seat for s in after.to_act]


@pytest.mark.parametrize("recorded_here", [True, False], ids=["armed", "claimed"])
def test_the_background_sweeper_ticks_every_due_game_through_a_narrow_window(
    server: Running, recorded_here: bool
) -> None:
    """With room for two ticks at a time (and claims two by two), seven games falling due at
    once are all timed out by the background sweeper (a finished tick makes room and wakes it),
    each once, with its own deadline: deadlines this process recorded (ticked from its own copy)
    and deadlines it only finds in the database (as another replica's would be: claimed)."""
    core = server.thread.core
    sweeper = core.sweeper
    assert sweeper is not None
    before, sweeper.settings = sweeper.settings, SweepSettings(batch=2, in_flight=2)
    alarm = core.on_deadline
    if not recorded_here:
        core.on_deadline = None  # the sweeper is not told: it must find them in the database
    claims: list[int] = []
    claim_due = core.log.claim_due

    async def counted(now_ms: int, lease_ms: int, limit: int) -> list[str]:
        due = await claim_due(now_ms, lease_ms, limit)
        claims.append(len(due))
        assert limit <= 2
        return due

    core.log.claim_due = counted  # type: ignore[method-assign]
    try:
        _every_due_game_timed_out(server)
    finally:
        sweeper.settings = before  # the server serves the module's other tests
        core.on_deadline = alarm
        del core.log.claim_due
    if not recorded_here:
        assert sum(claims) >= 7 and max(claims) <= 2


def _every_due_game_timed_out(server: Running) -> None:
    games = [create(server) for _ in range(7)]
    deadlines = [view(server, g).to_act[0].deadline_ms for g in games]
    streams = [
        server.stub.StreamEvents(
            service_pb2.StreamEventsRequest(game_id=g.game_id, after_version=g.version),
            metadata=auth(g.tokens[0].token),
            timeout=30,
        )
        for g in games
    ]
    server.clock.advance(TURN_MS + 1)
    for game, stream, deadline in zip(games, streams, deadlines, strict=True):
        first = next(iter(stream)).event  # waits for the background sweeper, no sleep
        stream.cancel()
        assert first.body.gin.turn_timed_out.deadline_ms == deadline
        assert timed_out(server, game) == [deadline]


#: Battle Hoola with a claim window (docs/rules/hoola.md §1.7): claims wait for it to close.
#: The window is long (the clock runs in real time too, and the test moves it past the close).
BATTLE = service_pb2.Rules(
    hoola=hoola_pb2.HoolaRules(
        out_of_turn_thank_you=True,
        claim_priority=hoola_pb2.CLAIM_PRIORITY_NEAREST_IN_TURN,
        claim_window_ms=30_000,
        rounds=1,
    )
)
#: Games and moves tried before a seat out of turn may claim a discard (it comes within a few).
GAMES_TRIED = 20
MOVES_TRIED = 60
#: Moved past a deadline by this much more than it takes (the wall clock may step back).
CLOCK_MARGIN_MS = 100


def _claimed(server: Running) -> tuple[service_pb2.CreateGameResponse, int] | None:
    """A battle Hoola game in which a seat out of turn has just claimed a discard (its window
    open), and that seat; ``None`` if no claim came in the moves tried."""
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=common_pb2.GAME_KIND_HOOLA, seats=4, preset="korean", overrides=BATTLE
        ),
        metadata=studio_auth(),
    )
    seats = [auth(t.token) for t in game.tokens]
    for _ in range(MOVES_TRIED):
        shown = server.stub.GetView(
            service_pb2.GetViewRequest(game_id=game.game_id), metadata=seats[0]
        )
        if shown.finished or not shown.to_act:
            return None
        turn = shown.to_act[0].seat
        for seat in (s for s in range(len(seats)) if s != turn):
            legal = server.stub.ListLegalMoves(
                service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=seats[seat]
            )
            if legal.moves:  # out of turn, only a claim is legal
                server.stub.SubmitCommand(
                    service_pb2.SubmitCommandRequest(
                        game_id=game.game_id,
                        command_id=f"claim-{legal.version}",
                        expected_version=legal.version,
                        command=legal.moves[0].command,
                    ),
                    metadata=seats[seat],
                )
                # The claim opened a window (the nearest seat's, the next player's, takes the
                # card at once: then play on).
                after = server.stub.GetView(
                    service_pb2.GetViewRequest(game_id=game.game_id), metadata=seats[0]
                )
                if after.view.hoola.claim_window_end_ms:
                    return game, seat
                break
        else:
            _play_on(server, game, seats, turn)
    return None


def _play_on(
    server: Running,
    game: service_pb2.CreateGameResponse,
    seats: Sequence[tuple[tuple[str, str], ...]],
    turn: int,
) -> None:
    """The seat to act plays its last legal move: a draw or a discard, rarely a meld."""
    legal = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=seats[turn]
    )
    server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id,
            command_id=f"move-{legal.version}",
            expected_version=legal.version,
            command=legal.moves[-1].command,
        ),
        metadata=seats[turn],
    )


def test_a_command_after_a_claim_window_closed_meets_the_award_first(server: Running) -> None:
    """Time made the award due: a command sent after the window's close, on what the seat read
    then, meets the award recorded first (ABORTED, as after a turn's time-out), rather than being
    decided after an award its seat had not seen (it was refused FAILED_PRECONDITION when the
    award took the turn from it); read again, it is accepted."""
    # The sweeper does not tick the award here (nor hears of it, nor finds it in the database):
    # the command after the close is what meets it.
    with _sweeper_held_off(server):
        _after_the_close(server)


@contextmanager
def _sweeper_held_off(server: Running) -> Iterator[None]:
    """The sweeper records nothing: it neither hears of deadlines nor finds them in the
    database (what time makes due waits for a command, or a read's showing)."""
    core = server.thread.core
    alarm, core.on_deadline = core.on_deadline, None
    try:
        with _database_says_nothing_is_due(server, []):
            yield
    finally:
        core.on_deadline = alarm


def _ended_by_its_deadline(server: Running) -> tuple[service_pb2.CreateGameResponse, int]:
    """A game of two whose seat forfeits when away (``max_timeouts`` 1), and the clock moved past
    its first deadline: its time-out ends it, and nothing has recorded it (the sweeper is held off
    by the caller: it would tick it from its own copy, within its poll). The game, and the
    version recorded before the deadline."""
    rules = gin_pb2.GinRules(turn_time_ms=TURN_MS, max_timeouts=1, forfeit_when_away=True)
    game = server.stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=GIN, seats=2, preset="single-hand", overrides=service_pb2.Rules(gin=rules)
        ),
        metadata=studio_auth(),
    )
    before = view(server, game)
    assert not before.finished and before.to_act
    server.clock.advance(before.to_act[0].deadline_ms - server.clock() + CLOCK_MARGIN_MS)
    return game, before.version


def test_a_read_after_a_deadline_that_ends_the_game_shows_it_finished(server: Running) -> None:
    """A seat that forfeits when away ends a game of two with its time-out: read before anything
    records it, the game shows finished, nobody to act, at the version recorded (the view and who
    acts were already as of now; ``finished`` was not). Finished as the view says, its final
    settlement, its whole replay and its export are there to read, each recorded by the read
    that asks first (before, GAME_NOT_FINISHED until the sweeper came by, which a demo under load
    met)."""
    with _sweeper_held_off(server):
        game, before = _ended_by_its_deadline(server)
        after = view(server, game)
        assert (after.finished, list(after.to_act), after.version) == (True, [], before)
        final = server.stub.GetSettlement(
            service_pb2.GetSettlementRequest(game_id=game.game_id, final=True)
        ).settlement
        assert final.outcome == "FORFEIT" and view(server, game).version > before
        # Each read first in a game of its own.
        game, before = _ended_by_its_deadline(server)
        replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
        assert replay.server_seed and len(replay.events) > before
        game, before = _ended_by_its_deadline(server)
        exported = server.stub.ExportReplay(service_pb2.ExportReplayRequest(game_id=game.game_id))
        assert exported.replay and view(server, game).version > before


def _closed(server: Running) -> tuple[service_pb2.CreateGameResponse, int] | None:
    """A battle Hoola game whose claim window has just closed, its award not yet recorded, and the
    claimant, who is to act; ``None`` if no claim came, or its award ended the game (a claim's meld
    may empty the claimant's hand)."""
    found = _claimed(server)
    if found is None:
        return None
    game, claimant = found
    # The servers' clock is the wall clock moved on by the test: a margin for it stepping back.
    server.clock.advance(BATTLE.hoola.claim_window_ms + CLOCK_MARGIN_MS)
    # Reads show the award as soon as the window has closed: the claimant acts, or all is over.
    shown = server.stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    if shown.finished:
        return None
    hoola = shown.view.hoola
    assert [s.seat for s in shown.to_act] == [claimant], (
        f"at {server.clock()}: window to {hoola.claim_window_end_ms}, turn {hoola.turn}"
    )
    return found


def _after_the_close(server: Running) -> None:
    found = next(filter(None, (_closed(server) for _ in range(GAMES_TRIED))), None)
    assert found is not None, f"no claim out of turn left a move in {GAMES_TRIED} games"
    game, claimant = found
    seats = [auth(t.token) for t in game.tokens]
    legal = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=seats[claimant]
    )
    move = service_pb2.SubmitCommandRequest(
        game_id=game.game_id,
        command_id="after-the-close",
        expected_version=legal.version,
        command=legal.moves[0].command,
    )
    code, info, _ = error_of(lambda: server.stub.SubmitCommand(move, metadata=seats[claimant]))
    assert (code, info.reason) == (grpc.StatusCode.ABORTED, "VERSION_CONFLICT")
    replay = server.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game.game_id))
    award = replay.events[-1]
    assert award.version == legal.version + 1 and award.command_id.startswith("tick:")
    again = server.stub.ListLegalMoves(
        service_pb2.ListLegalMovesRequest(game_id=game.game_id), metadata=seats[claimant]
    )
    assert again.version == award.version and list(again.moves) == list(legal.moves)
    move.command_id, move.expected_version = "read-again", again.version
    answer = server.stub.SubmitCommand(move, metadata=seats[claimant])
    assert answer.version > again.version
