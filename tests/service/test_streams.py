"""Live streams: woken per game by the notifier, dropped at once when cancelled, woken on every
replica (PostgreSQL's LISTEN); a second server on a busy port fails clearly."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from croupier.app import core as app_core
from croupier.app.tokens import TokenSigner
from croupier.log import EventStore
from croupier.service.bots import auth
from croupier.service.server import PortInUse, ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, hoola_pb2, service_pb2, service_pb2_grpc

from .conftest import SECRET, STUDIO_KEYS, Running, server_thread, studio_auth
from .test_grpc import error_of

DRAW = service_pb2.Command(hoola=hoola_pb2.HoolaCommand(draw=hoola_pb2.Draw()))


def eventually(condition: Callable[[], bool], within_s: float = 10.0) -> bool:
    """Whether ``condition`` holds within a bound (a bound on waiting, not a speed target)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def reader(call: grpc.Future, versions: list[int]) -> threading.Thread:
    """A thread reading a stream's event versions into ``versions`` until it ends or is
    cancelled."""

    def read() -> None:
        try:
            for item in call:
                versions.append(item.event.version)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:  # type: ignore[attr-defined]
                raise

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def new_game(stub: service_pb2_grpc.GameServiceStub) -> service_pb2.CreateGameResponse:
    return stub.CreateGame(
        service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_HOOLA, seats=3),
        metadata=studio_auth(),
    )


@dataclass
class Replicas:
    """Two servers on one store (PostgreSQL: replicas; SQLite: the workers of one port)."""

    stores: list[EventStore]
    servers: list[ServerThread]
    stubs: list[service_pb2_grpc.GameServiceStub]


@contextlib.contextmanager
def replicas(url: str, deaf: bool = False) -> Iterator[Replicas]:
    """Two servers, each with its own store on ``url``; with ``deaf``, the second hears nothing
    of the first's appends (its listener is off, as while it reconnects)."""
    stores = [open_store(url), open_store(url)]
    if deaf:
        stores[1].listen = lambda listener: None  # type: ignore[method-assign]
        stores[1].listen_on_loop = lambda listener: None  # type: ignore[method-assign]
    servers = [server_thread(s) for s in stores]
    ports = [s.start() for s in servers]
    channels = [grpc.insecure_channel(f"127.0.0.1:{p}") for p in ports]
    try:
        yield Replicas(stores, servers, [service_pb2_grpc.GameServiceStub(c) for c in channels])
    finally:
        for channel in channels:
            channel.close()
        for running in servers:
            running.stop(grace=None)
        for store in stores:
            store.close()


def first_turn(stub: service_pb2_grpc.GameServiceStub, game: service_pb2.CreateGameResponse) -> int:
    view = stub.GetView(
        service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    return view.view.hoola.turn


def test_a_cancelled_stream_is_dropped_at_once(server: Running) -> None:
    game = new_game(server.stub)
    notifier = server.thread.core.notifier
    call = server.stub.StreamEvents(
        service_pb2.StreamEventsRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
    )
    seen: list[int] = []
    thread = reader(call, seen)
    # The opening events, then it waits for more.
    assert eventually(lambda: seen == [1, 2] and notifier.streams(game.game_id) == 1)
    call.cancel()
    # Its waiter is released with the cancelled task, not at the next recheck.
    assert eventually(
        lambda: notifier.streams(game.game_id) == 0, within_s=app_core.STREAM_RECHECK_S / 2
    )
    thread.join(5)
    assert not thread.is_alive()


def test_a_command_reaches_the_streams_on_its_game(server: Running) -> None:
    one, other = new_game(server.stub), new_game(server.stub)
    notifier = server.thread.core.notifier
    calls = [
        server.stub.StreamEvents(
            service_pb2.StreamEventsRequest(game_id=g.game_id), metadata=auth(g.tokens[0].token)
        )
        for g in (one, other)
    ]
    got: dict[str, list[int]] = {one.game_id: [], other.game_id: []}
    for call, game in zip(calls, (one, other), strict=True):
        reader(call, got[game.game_id])
    assert eventually(
        lambda: (
            got[one.game_id] == got[other.game_id] == [1, 2]
            and notifier.streams(one.game_id) == notifier.streams(other.game_id) == 1
        )
    )
    turn = first_turn(server.stub, one)
    server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=one.game_id,
            command_id=uuid.uuid4().hex,
            expected_version=one.version,
            command=DRAW,
        ),
        metadata=auth(one.tokens[turn].token),
    )
    assert eventually(lambda: got[one.game_id][-1:] == [3])
    assert got[other.game_id] == [1, 2]
    for call in calls:
        call.cancel()


def test_a_command_on_one_replica_reaches_a_stream_on_another(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two servers on one store (PostgreSQL: replicas; SQLite: the workers of one port): the
    stream on B wakes by the store's notice (LISTEN, or the file poller), not by its recheck."""
    monkeypatch.setattr(app_core, "STREAM_RECHECK_S", 3600.0)
    with replicas(server.store.url) as two:
        a, b = two.stubs
        stores = two.stores
        game = new_game(a)
        call = b.StreamEvents(
            service_pb2.StreamEventsRequest(game_id=game.game_id),
            metadata=auth(game.tokens[0].token),
        )
        seen: list[int] = []
        reader(call, seen)
        assert eventually(lambda: seen == [1, 2])
        assert stores[1].wait_listening(10)
        turn = first_turn(a, game)
        a.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id, command_id="on-a", expected_version=game.version, command=DRAW
            ),
            metadata=auth(game.tokens[turn].token),
        )
        assert eventually(lambda: seen == [1, 2, 3]), seen
        call.cancel()


def test_an_append_nobody_told_of_is_found_by_one_read_for_every_stream(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B hears nothing of A's appends (its listener is off, as while it reconnects): its streams
    see them at B's recheck, which reads the versions of every game it streams in one read, and
    no stream reads its game until there is something new in it."""
    monkeypatch.setattr(app_core, "STREAM_RECHECK_S", 0.2)
    with replicas(server.store.url, deaf=True) as two:
        a, b = two.stubs
        games = [new_game(a), new_game(a)]
        seen: list[list[int]] = []
        calls = []
        for index in range(20):
            game = games[index % 2]
            calls.append(
                b.StreamEvents(
                    service_pb2.StreamEventsRequest(game_id=game.game_id),
                    metadata=auth(game.tokens[index % 3].token),
                )
            )
            seen.append([])
            reader(calls[-1], seen[-1])
        assert eventually(lambda: all(versions == [1, 2] for versions in seen))
        log = two.servers[1].core.log
        reads = {"versions": 0, "load": 0}
        streamed = {game.game_id for game in games}

        def counted(name: str) -> Callable[..., object]:
            original = getattr(log, name)

            async def call(*args: object, **kwargs: object) -> object:
                # The streamed games' loads: B's sweeper may load a game on a turn clock that
                # an earlier test left in the shared database.
                if name != "load" or args[0] in streamed:
                    reads[name] += 1
                return await original(*args, **kwargs)

            return call

        for name in reads:
            monkeypatch.setattr(log, name, counted(name))
        assert eventually(lambda: reads["versions"] >= 3)
        assert reads["load"] == 0  # idle streams read nothing
        played = games[0]
        a.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=played.game_id,
                command_id="on-a",
                expected_version=played.version,
                command=DRAW,
            ),
            metadata=auth(played.tokens[first_turn(a, played)].token),
        )
        assert eventually(lambda: all(v == [1, 2, 3] for v in seen[::2])), seen
        assert all(versions == [1, 2] for versions in seen[1::2])
        for call in calls:
            call.cancel()


def test_a_stream_after_a_version_the_game_has_not_reached_is_refused(server: Running) -> None:
    game = new_game(server.stub)
    stream = server.stub.StreamEvents(
        service_pb2.StreamEventsRequest(game_id=game.game_id, after_version=game.version + 50),
        metadata=auth(game.tokens[0].token),
        timeout=30,
    )
    code, info, fields = error_of(lambda: next(iter(stream)))
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "OUT_OF_RANGE",
        ["after_version"],
    )


def test_a_command_refused_on_a_replicas_older_copy_is_aborted_and_its_id_kept_free(
    server: Running,
) -> None:
    """B holds the game as it was before A's append. A command sent to B at that version, which
    the rules refuse there, is answered ABORTED with the game's version (as one process answers
    it), not refused for good: its command id is not spent, and the same command at the new
    version, where it is legal, is applied."""
    with replicas(server.store.url) as two:
        a, b = two.stubs
        game = new_game(a)
        turn = first_turn(a, game)
        seat = auth(game.tokens[turn].token)
        held = b.GetView(service_pb2.GetViewRequest(game_id=game.game_id), metadata=seat)
        assert held.version == game.version  # B's copy
        a.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=game.game_id, command_id="draw", expected_version=game.version, command=DRAW
            ),
            metadata=seat,
        )
        # At B's version the seat has not drawn yet, so a discard is against the rules there.
        discard = service_pb2.Command(
            hoola=hoola_pb2.HoolaCommand(
                discard=hoola_pb2.Discard(card=held.view.hoola.hand[0].code)
            )
        )

        def send(version: int) -> service_pb2.SubmitCommandResponse:
            return b.SubmitCommand(
                service_pb2.SubmitCommandRequest(
                    game_id=game.game_id,
                    command_id="discard",
                    expected_version=version,
                    command=discard,
                ),
                metadata=seat,
            )

        code, info, _ = error_of(lambda: send(game.version))
        assert (code, info.reason) == (grpc.StatusCode.ABORTED, "VERSION_CONFLICT")
        assert info.metadata["current_version"] == str(game.version + 1)
        assert two.stores[0].result_of(game.game_id, "discard") is None
        # The client reads the game again and resends the same command: now it is legal.
        assert send(game.version + 1).version == game.version + 2


@pytest.mark.parametrize("where", ["thread", "loop"])
def test_an_append_whose_caller_has_gone_still_reaches_the_streams(
    server: Running, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A command's caller gives up (its deadline) while its append runs on a thread, or on the
    event loop (PostgreSQL's appends at a known end of the chain): the append is made all the
    same, and the process tells its streams, as nothing else would (the store's listener passes
    over the process's own appends; the recheck is an hour away)."""
    monkeypatch.setattr(app_core, "STREAM_RECHECK_S", 3600.0)
    store = open_store(server.store.url)
    monkeypatch.setattr(store, "without_waiting", lambda: None)  # no call made at once
    if where == "loop":
        appender = store.loop_appender()
        if appender is None:
            store.close()
            pytest.skip("this store makes no appends on the event loop")
        made = appender.append

        async def slow_on_loop(*args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(0.5)  # the caller's deadline passes meanwhile
            return await made(*args, **kwargs)

        monkeypatch.setattr(appender, "append", slow_on_loop)
        monkeypatch.setattr(store, "loop_appender", lambda: appender)
    else:
        monkeypatch.setattr(store, "loop_appender", lambda: None)  # every append on a thread
        append = store.append

        def slow(*args: Any, **kwargs: Any) -> Any:
            time.sleep(0.5)  # the caller's deadline passes meanwhile
            return append(*args, **kwargs)

        monkeypatch.setattr(store, "append", slow)
    running = server_thread(store)
    port = running.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub = service_pb2_grpc.GameServiceStub(channel)
        game = new_game(stub)
        call = stub.StreamEvents(
            service_pb2.StreamEventsRequest(game_id=game.game_id),
            metadata=auth(game.tokens[0].token),
        )
        seen: list[int] = []
        reader(call, seen)
        assert eventually(lambda: seen == [1, 2])
        with pytest.raises(grpc.RpcError) as gone:
            stub.SubmitCommand(
                service_pb2.SubmitCommandRequest(
                    game_id=game.game_id,
                    command_id=uuid.uuid4().hex,
                    expected_version=game.version,
                    command=DRAW,
                ),
                metadata=auth(game.tokens[first_turn(stub, game)].token),
                timeout=0.2,
            )
        assert gone.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
        assert eventually(lambda: seen == [1, 2, 3], within_s=5), seen
        assert store.game(game.game_id).version == 3
        call.cancel()
    finally:
        channel.close()
        running.stop(grace=None)
        store.close()


def test_a_second_server_on_a_busy_port_fails_clearly(server: Running) -> None:
    store = open_store(server.store.url)
    try:
        with pytest.raises(PortInUse, match="cannot listen on"):
            ServerThread(
                server.address, store, TokenSigner(SECRET), studio_keys=STUDIO_KEYS
            ).start()
    finally:
        store.close()


# --- heartbeats ----------------------------------------------------------------------------------


def test_a_stream_asked_for_heartbeats_sends_them_while_quiet_and_its_events_between(
    server: Running,
) -> None:
    """``heartbeat_s``: a quiet stream sends heartbeats (a client that hears nothing for twice
    as long knows the connection went silent); the events still come, in order, among them; a
    cancelled stream is still dropped at once."""
    game = new_game(server.stub)
    notifier = server.thread.core.notifier
    call = server.stub.StreamEvents(
        service_pb2.StreamEventsRequest(game_id=game.game_id, heartbeat_s=1),
        metadata=auth(game.tokens[0].token),
    )
    kinds: list[str] = []

    def read() -> None:
        with contextlib.suppress(grpc.RpcError):
            for item in call:
                kinds.append(
                    "heartbeat" if item.HasField("heartbeat") else f"event {item.event.version}"
                )

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    assert eventually(lambda: kinds[:2] == ["event 1", "event 2"] and "heartbeat" in kinds)
    turn = first_turn(server.stub, game)
    server.stub.SubmitCommand(
        service_pb2.SubmitCommandRequest(
            game_id=game.game_id,
            command_id=uuid.uuid4().hex,
            expected_version=game.version,
            command=DRAW,
        ),
        metadata=auth(game.tokens[turn].token),
    )
    assert eventually(lambda: "event 3" in kinds and kinds[-1] == "heartbeat")
    events = [k for k in kinds if k != "heartbeat"]
    assert events == ["event 1", "event 2", "event 3"]
    call.cancel()
    assert eventually(
        lambda: notifier.streams(game.game_id) == 0, within_s=app_core.STREAM_RECHECK_S / 2
    )
    thread.join(5)
    assert not thread.is_alive()


def test_a_play_stream_asked_for_heartbeats_sends_them_while_quiet(server: Running) -> None:
    game = new_game(server.stub)
    turn = first_turn(server.stub, game)
    idle = (turn + 1) % 3  # not this seat's turn: nothing to say but heartbeats
    requests = [
        service_pb2.PlayRequest(
            join=service_pb2.PlayJoin(game_id=game.game_id, after_version=2, heartbeat_s=1)
        )
    ]
    stop = threading.Event()

    def sent() -> Iterator[service_pb2.PlayRequest]:
        yield from requests
        stop.wait(30)

    call = server.stub.Play(sent(), metadata=auth(game.tokens[idle].token))
    kinds = []
    for response in call:
        kinds.append(response.WhichOneof("kind"))
        if kinds.count("heartbeat") == 2:
            break
    stop.set()
    call.cancel()
    assert kinds[0] == "state" and kinds[-2:] == ["heartbeat", "heartbeat"]


@pytest.mark.parametrize("rpc", ["StreamEvents", "Play"])
def test_a_heartbeat_rarer_than_five_minutes_is_refused(server: Running, rpc: str) -> None:
    game = new_game(server.stub)
    token = auth(game.tokens[0].token)
    if rpc == "StreamEvents":
        request = service_pb2.StreamEventsRequest(game_id=game.game_id, heartbeat_s=301)
        code, info, fields = error_of(
            lambda: list(server.stub.StreamEvents(request, metadata=token))
        )
        named = "heartbeat_s"
    else:
        join = service_pb2.PlayJoin(game_id=game.game_id, heartbeat_s=301)
        code, info, fields = error_of(
            lambda: list(
                server.stub.Play(iter([service_pb2.PlayRequest(join=join)]), metadata=token)
            )
        )
        named = "join.heartbeat_s"
    assert (code, info.reason, fields) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "OUT_OF_RANGE",
        [named],
    )


def test_a_stream_with_heartbeats_is_refused_as_one_without(server: Running) -> None:
    """The refusal of a stream's first read comes through the heartbeats' task unchanged."""
    game, other = new_game(server.stub), new_game(server.stub)
    for heartbeat_s in (0, 1):
        request = service_pb2.StreamEventsRequest(game_id=game.game_id, heartbeat_s=heartbeat_s)
        code, info, _ = error_of(
            lambda request=request: list(
                server.stub.StreamEvents(request, metadata=auth(other.tokens[0].token))
            )
        )
        assert (code, info.reason) == (grpc.StatusCode.PERMISSION_DENIED, "TOKEN_FOR_OTHER_GAME")
