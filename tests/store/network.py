"""A network of a test's own between the store and PostgreSQL, which the test can cut silently:
a network namespace joined to this host by a veth pair, a relay at each end (the store connects
to the namespace's address; PostgreSQL listens on loopback only), and dropping every
packet this host sends over the pair while it is cut (the namespace's end is taken down: its
peer drops what it is sent), as a lost host or a partition does: no reset, no refusal, nothing
acknowledged. Needs root and iproute2."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: A TCP relay (listen address and port, target address and port), run as a process.
RELAY = """
import asyncio, sys
listen_host, listen_port, to_host, to_port = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()
async def relay(reader, writer):
    try:
        to_reader, to_writer = await asyncio.open_connection(to_host, to_port)
    except OSError:
        writer.close()
        return
    await asyncio.gather(pipe(reader, to_writer), pipe(to_reader, writer))
async def main():
    server = await asyncio.start_server(relay, listen_host, listen_port)
    print("ready", flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


def available() -> str | None:
    """Why such a network cannot be made here (``None``: it can)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if shutil.which("ip") is None:
        return "needs ip (iproute2)"
    return None


def _run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


@dataclass
class Path:
    """The way to PostgreSQL through the namespace: connect to ``host``:``port``."""

    host: str
    port: int
    namespace: str
    device: str  # the namespace's end of the veth pair

    def cut(self) -> None:
        _run("ip", "netns", "exec", self.namespace, "ip", "link", "set", self.device, "down")

    def mend(self) -> None:
        _run("ip", "netns", "exec", self.namespace, "ip", "link", "set", self.device, "up")


def _relay(
    prefix: list[str], listen: tuple[str, int], to: tuple[str, int]
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*prefix, sys.executable, "-c", RELAY, listen[0], str(listen[1]), to[0], str(to[1])],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


@contextmanager
def path_to(postgres_host: str, postgres_port: int) -> Iterator[Path]:
    tag = f"{random.randrange(16**4):04x}"
    namespace, here, there = f"croupier-{tag}", f"crh{tag}", f"crn{tag}"
    subnet = f"10.253.{random.randrange(256)}"
    inside = ["ip", "netns", "exec", namespace]
    relays: list[subprocess.Popen[str]] = []
    _run("ip", "netns", "add", namespace)
    try:
        _run("ip", "link", "add", here, "type", "veth", "peer", "name", there)
        _run("ip", "link", "set", there, "netns", namespace)
        _run("ip", "addr", "add", f"{subnet}.1/30", "dev", here)
        _run("ip", "link", "set", here, "up")
        _run(*inside, "ip", "addr", "add", f"{subnet}.2/30", "dev", there)
        _run(*inside, "ip", "link", "set", there, "up")
        with socket.socket() as probe:  # a free port on this host's end
            probe.bind((f"{subnet}.1", 0))
            port = probe.getsockname()[1]
        relays.append(_relay([], (f"{subnet}.1", port), (postgres_host, postgres_port)))
        relays.append(_relay(inside, (f"{subnet}.2", 5432), (f"{subnet}.1", port)))
        yield Path(f"{subnet}.2", 5432, namespace, there)
    finally:
        for relay in relays:
            relay.kill()
            relay.wait(timeout=10)
        subprocess.run(["ip", "link", "del", here], capture_output=True)
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
