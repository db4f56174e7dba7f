"""The container's HEALTHCHECK (``python -m croupier.service.healthcheck``) follows
CROUPIER_ADDRESS and says SERVING only for a server that is."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from croupier.service.healthcheck import SERVICE, local_target, serving
from croupier.service.server import SERVICE_NAME

from .conftest import Running


@pytest.mark.parametrize(
    ("address", "target"),
    [
        ("0.0.0.0:50051", "127.0.0.1:50051"),
        ("[::]:7000", "[::1]:7000"),
        (":8080", "127.0.0.1:8080"),
        ("127.0.0.1:1", "127.0.0.1:1"),
        ("croupier.internal:50051", "croupier.internal:50051"),
    ],
)
def test_a_wildcard_address_is_checked_on_loopback(address: str, target: str) -> None:
    assert local_target(address) == target


@pytest.mark.parametrize("address", ["50051", "host:", "host:port"])
def test_an_address_without_a_port_is_refused(address: str) -> None:
    with pytest.raises(ValueError, match="HOST:PORT"):
        local_target(address)


def test_it_asks_for_the_service_the_server_registers() -> None:
    assert SERVICE == SERVICE_NAME


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def check(address: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "croupier.service.healthcheck"],
        env={**os.environ, "CROUPIER_ADDRESS": address},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_the_command_follows_croupier_address(server: Running) -> None:
    port = server.address.rpartition(":")[2]
    assert serving(server.address)
    assert check(f"0.0.0.0:{port}").returncode == 0
    nobody = check(f"0.0.0.0:{free_port()}")
    assert nobody.returncode == 1 and "not SERVING" in nobody.stderr
    assert "no answer (UNAVAILABLE: " in nobody.stderr  # not a server's answer
    assert check("nowhere").returncode == 1
