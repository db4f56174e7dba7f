"""The core's side of a graceful shutdown (Croupier.drain), in process: a Play stream whose
command is being applied answers it, then ends UNAVAILABLE SERVER_SHUTTING_DOWN after the last
event it sent; a stream opened during the drain ends after its first batch."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from croupier.service.bots import auth
from croupier.service.store.sqlite import SqliteEventStore
from croupier.v1 import common_pb2, hoola_pb2, service_pb2, service_pb2_grpc

from .conftest import server_thread, studio_auth

WAIT_S = 30.0
DRAW = service_pb2.Command(hoola=hoola_pb2.HoolaCommand(draw=hoola_pb2.Draw()))


class HeldStore(SqliteEventStore):
    """Appends wait while ``held`` is clear: a command stays in flight until the test lets go."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.released = threading.Event()
        self.released.set()
        self.waiting = threading.Event()

    def without_waiting(self) -> None:
        return None  # every append on the writer thread: a held one must not hold the loop

    def append(self, *args: Any, **kwargs: Any) -> Any:
        if not self.released.is_set():
            self.waiting.set()
            assert self.released.wait(WAIT_S)
        return super().append(*args, **kwargs)


def _until(done: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _reason(error: grpc.RpcError) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    info = error_details_pb2.ErrorInfo()
    for detail in status.details if status is not None else ():
        if detail.Is(info.DESCRIPTOR):
            detail.Unpack(info)
    return error.code(), info.reason, dict(info.metadata)


async def _drain(core: Any) -> None:
    core.drain()


def test_a_drain_answers_the_play_command_in_flight_then_ends_the_stream(tmp_path: Path) -> None:
    store = HeldStore(tmp_path / "games.sqlite3")
    server = server_thread(store)
    port = server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub = service_pb2_grpc.GameServiceStub(channel)
        game = stub.CreateGame(
            service_pb2.CreateGameRequest(
                kind=common_pb2.GAME_KIND_HOOLA,
                seats=3,
                overrides=service_pb2.Rules(hoola=hoola_pb2.HoolaRules(rounds=1)),
            ),
            metadata=studio_auth(),
        )
        view = stub.GetView(
            service_pb2.GetViewRequest(game_id=game.game_id), metadata=auth(game.tokens[0].token)
        )
        turn = view.view.hoola.turn
        sends: queue.Queue[service_pb2.PlayRequest | None] = queue.Queue()
        sends.put(service_pb2.PlayRequest(join=service_pb2.PlayJoin(game_id=game.game_id)))
        call = stub.Play(iter(sends.get, None), metadata=auth(game.tokens[turn].token))
        got: list[service_pb2.PlayResponse] = []
        ended: list[grpc.RpcError] = []

        def read() -> None:
            try:
                for response in call:
                    got.append(response)
            except grpc.RpcError as error:
                ended.append(error)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        _until(lambda: any(r.HasField("state") for r in got), "the joined state")
        last_event = max(r.event.version for r in got if r.HasField("event"))
        store.released.clear()
        sends.put(
            service_pb2.PlayRequest(
                command=service_pb2.PlayCommand(
                    command_id="held", expected_version=view.version, command=DRAW
                )
            )
        )
        assert store.waiting.wait(WAIT_S)  # the command is being applied
        server.call(_drain(server.core))
        # A stream opened now gets what there is, then the same end.
        late = list[service_pb2.StreamEventsResponse]()
        try:
            for response in stub.StreamEvents(
                service_pb2.StreamEventsRequest(game_id=game.game_id, after_version=2),
                metadata=auth(game.tokens[0].token),
                timeout=WAIT_S,
            ):
                late.append(response)
        except grpc.RpcError as error:
            code, reason, metadata = _reason(error)
        assert [r.event.version for r in late] == list(range(3, view.version + 1))
        assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "SERVER_SHUTTING_DOWN")
        assert metadata == {"after_version": str(view.version)}
        assert not ended and reader.is_alive()  # the Play stream waits for its command
        store.released.set()
        reader.join(WAIT_S)
        accepted = [r.accepted for r in got if r.HasField("accepted")]
        assert [a.command_id for a in accepted] == ["held"] and accepted[0].version > last_event
        assert len(ended) == 1
        code, reason, metadata = _reason(ended[0])
        assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "SERVER_SHUTTING_DOWN")
        assert metadata == {"after_version": str(last_event)}
        assert last_event == view.version
        sends.put(None)
    finally:
        store.released.set()
        channel.close()
        server.stop(grace=None)
        store.close()


def test_a_drain_ends_a_play_stream_that_has_not_joined(tmp_path: Path) -> None:
    """A Play stream whose client has not sent its join yet does not hold the shutdown up: it
    ends at once, as every other stream does."""
    server = server_thread(SqliteEventStore(tmp_path / "games.sqlite3"))
    port = server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    core = server.core
    waiting = threading.Event()
    join_request = core.streams._join_request

    async def joining(requests: Any) -> Any:
        waiting.set()  # the server has the stream and waits for its first message
        return await join_request(requests)

    core.streams._join_request = joining
    sends: queue.Queue[service_pb2.PlayRequest | None] = queue.Queue()
    try:
        stub = service_pb2_grpc.GameServiceStub(channel)
        game = stub.CreateGame(
            service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_HOOLA, seats=3),
            metadata=studio_auth(),
        )
        token = game.tokens[0].token
        call = stub.Play(iter(sends.get, None), metadata=auth(token), timeout=WAIT_S)
        ended: list[grpc.RpcError] = []

        def read() -> None:
            try:
                for _ in call:
                    pass
            except grpc.RpcError as error:
                ended.append(error)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert waiting.wait(WAIT_S)
        server.call(_drain(core))
        reader.join(WAIT_S)
        assert len(ended) == 1
        code, reason, metadata = _reason(ended[0])
        assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "SERVER_SHUTTING_DOWN")
        assert metadata == {"after_version": "0"}  # it had joined nothing: it joins anew
    finally:
        sends.put(None)
        channel.close()
        server.stop(grace=None)
