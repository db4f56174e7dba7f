"""Several gRPC servers in one process share its port (``serve --listeners``): each takes new
calls in a queue of its own, and the kernel deals connections between them. They serve the same
core, fail on a port another server holds, and all go at a stop."""

from __future__ import annotations

import socket
from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner

from croupier.app.tokens import TokenSigner
from croupier.service.cli import main
from croupier.service.server import PortInUse, ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

from .conftest import SECRET, STUDIO_KEYS, studio_auth

LISTENERS = 3
# Connections (each its own: a local subchannel pool), dealt between the listeners by the kernel.
CONNECTIONS = 24


def _thread(url: str, address: str = "127.0.0.1:0", listeners: int = LISTENERS) -> ServerThread:
    return ServerThread(
        address, open_store(url), TokenSigner(SECRET), studio_keys=STUDIO_KEYS, listeners=listeners
    )


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _refused_with_any_listeners(tmp_path: Path, address: str) -> None:
    """A server on ``address``, with one listener or several, fails: the port is busy."""
    for listeners in (1, LISTENERS):
        other = _thread(f"sqlite:///{tmp_path / 'other.sqlite3'}", address, listeners)
        with pytest.raises(PortInUse, match="cannot listen on"):
            other.start()


def test_listeners_share_one_port_and_serve_one_core(tmp_path) -> None:
    server = _thread(f"sqlite:///{tmp_path / 'games.sqlite3'}")
    port = server.start()
    try:
        assert len(server.serving.servers) == LISTENERS
        channels = [
            grpc.insecure_channel(
                f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)]
            )
            for _ in range(CONNECTIONS)
        ]
        stubs = [service_pb2_grpc.GameServiceStub(c) for c in channels]
        game = stubs[0].CreateGame(
            service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_HOOLA, seats=3),
            metadata=studio_auth(),
        )
        # Every connection, whichever listener took it, sees the game the first one created.
        seat = (("authorization", f"Bearer {game.tokens[0].token}"),)
        for stub in stubs:
            view = stub.GetView(service_pb2.GetViewRequest(game_id=game.game_id), metadata=seat)
            assert view.version == game.version
        for channel in channels:
            channel.close()
        # Another server on the port fails, with one listener or several.
        _refused_with_any_listeners(tmp_path, f"127.0.0.1:{port}")
    finally:
        server.stop(grace=None)
    assert _free(port)  # every listener is gone


def test_listeners_do_not_share_a_port_another_server_holds(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'games.sqlite3'}"
    alone = _thread(url, listeners=1)
    port = alone.start()
    try:
        with pytest.raises(PortInUse, match="cannot listen on"):
            _thread(url, f"127.0.0.1:{port}").start()
    finally:
        alone.stop(grace=None)


def test_a_host_name_whose_addresses_are_partly_taken_is_a_busy_port(tmp_path) -> None:
    """localhost names 127.0.0.1 and ::1: with another server on the first, a server on
    localhost:PORT fails rather than serve on ::1 alone (one listener or several)."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        _refused_with_any_listeners(tmp_path, f"localhost:{port}")
    finally:
        holder.close()


def test_listeners_come_back_on_their_port_after_a_restart(tmp_path) -> None:
    """A restart on the same port finds it free though the last server's connections linger
    (TIME_WAIT on the server's side, which closed them); a server listening there is another
    matter (above)."""
    url = f"sqlite:///{tmp_path / 'games.sqlite3'}"
    first = _thread(url)
    port = first.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    service_pb2_grpc.GameServiceStub(channel).CreateGame(
        service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_HOOLA, seats=3),
        metadata=studio_auth(),
    )
    first.stop(grace=None)  # the server closes the connection first: TIME_WAIT is its side's
    channel.close()
    again = _thread(url, f"127.0.0.1:{port}")
    try:
        assert again.start() == port
    finally:
        again.stop(grace=None)


def test_listeners_check_every_address_their_host_names(tmp_path) -> None:
    """``localhost`` is 127.0.0.1 and ::1: a server listening on either keeps the port."""
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    holder = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    try:
        holder.bind(("::1", 0))
    except OSError:
        holder.close()
        pytest.skip("no ::1 on this machine")
    holder.listen()
    try:
        port = holder.getsockname()[1]
        with pytest.raises(PortInUse, match="cannot listen on"):
            _thread(f"sqlite:///{tmp_path / 'games.sqlite3'}", f"localhost:{port}").start()
    finally:
        holder.close()


def test_a_socket_file_has_one_listener(tmp_path) -> None:
    server = _thread(f"sqlite:///{tmp_path / 'games.sqlite3'}", f"unix:{tmp_path / 'g.sock'}")
    server.start()
    try:
        assert len(server.serving.servers) == 1
    finally:
        server.stop(grace=None)


@pytest.mark.parametrize(
    ("variable", "kind"),
    [
        ("CROUPIER_LISTENERS", "integer"),
        ("CROUPIER_WORKERS", "integer"),
        ("CROUPIER_COMMAND_BURST", "integer"),
        ("CROUPIER_COMMAND_RATE", "float"),
        ("CROUPIER_GC_THAW_GROWTH", "float"),
        ("CROUPIER_SHUTDOWN_GRACE", "float"),
    ],
)
def test_a_bad_number_in_the_environment_is_one_line(variable: str, kind: str) -> None:
    # The option is converted before anything starts: the bad value stops the command at once,
    # in one line naming the variable (exit 1, as a bad secret), not click's usage error.
    result = CliRunner().invoke(main, ["serve", "--address", "127.0.0.1:0"], env={variable: "abc"})
    assert result.exit_code == 1 and f"is not a valid {kind} range" in result.output
    assert f"({variable})" in result.output and "Usage:" not in result.output
    assert "Traceback" not in result.output
