"""No request breaks a game or the server (issue 13, items 7–10): unexpected errors are INTERNAL
with an id in the logs, every input is bounded, every accepted game can finish."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import structlog
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from croupier.app.tokens import TokenSigner
from croupier.service.bots import auth
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

from .conftest import SECRET

HOOLA = common_pb2.GAME_KIND_HOOLA


class Local:
    """A server of the test's own (the test may break its core)."""

    def __init__(self, path: Path) -> None:
        self.store = open_store(f"sqlite:///{path / 'croupier.sqlite3'}")
        self.thread = ServerThread("127.0.0.1:0", self.store, TokenSigner(SECRET))
        port = self.thread.start()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = service_pb2_grpc.GameServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()
        self.thread.stop(grace=None)
        self.store.close()


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    server = Local(tmp_path)
    try:
        yield server
    finally:
        server.close()


def details(error: grpc.RpcError) -> tuple[error_details_pb2.ErrorInfo, list[str]]:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    info = error_details_pb2.ErrorInfo()
    fields: list[str] = []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            detail.Unpack(info)
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields += [v.field for v in bad.field_violations]
    return info, fields


def assert_internal_logged(error: grpc.RpcError, logs: list[dict[str, Any]]) -> None:
    """INTERNAL, with an error id that a log line with the traceback names."""
    assert error.code() == grpc.StatusCode.INTERNAL, error
    info, _ = details(error)
    assert info.reason == "INTERNAL_ERROR"
    error_id = info.metadata["error_id"]
    assert error_id in (error.details() or "")
    logged = [e for e in logs if e.get("error_id") == error_id and e.get("exc_info")]
    assert logged, f"no log line with the traceback of {error_id}"


def test_an_unexpected_error_is_internal_with_a_logged_id_in_every_kind_of_call(
    local: Local,
) -> None:
    game = local.stub.CreateGame(service_pb2.CreateGameRequest(kind=HOOLA, seats=2))
    me = auth(game.tokens[0].token)
    core = local.thread.core

    async def broken(*_: object, **__: object) -> Any:
        raise ZeroDivisionError("a bug")

    async def broken_stream(*_: object, **__: object) -> Any:
        raise ZeroDivisionError("a bug")
        yield  # pragma: no cover - an async generator

    core.view = broken  # type: ignore[method-assign]
    core.subscribe = broken_stream  # type: ignore[method-assign]
    core.play = broken_stream  # type: ignore[method-assign]
    join = service_pb2.PlayRequest(join=service_pb2.PlayJoin(game_id=game.game_id))
    calls = [
        lambda: local.stub.GetView(service_pb2.GetViewRequest(game_id=game.game_id), metadata=me),
        lambda: list(
            local.stub.StreamEvents(
                service_pb2.StreamEventsRequest(game_id=game.game_id), metadata=me
            )
        ),
        lambda: list(local.stub.Play(iter([join]), metadata=me)),
    ]
    for call in calls:
        with structlog.testing.capture_logs() as logs, pytest.raises(grpc.RpcError) as failed:
            call()
        assert_internal_logged(failed.value, logs)  # type: ignore[arg-type]
