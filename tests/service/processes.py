"""`croupier serve` as a separate process, as an operator runs it: the TLS, shutdown and
replica tests start, signal and kill these."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

CROUPIER = str(Path(sys.executable).parent / "croupier")
SECRET_SETTINGS = (
    "CROUPIER_SECRET",
    "CROUPIER_PREVIOUS_SECRETS",
    "CROUPIER_STUDIO_SECRET",
    "CROUPIER_STUDIO_PREVIOUS_SECRETS",
    "CROUPIER_STUDIO_KEY",
    "CROUPIER_TLS_CERT",
    "CROUPIER_TLS_KEY",
    "CROUPIER_TLS_CLIENT_CA",
    "CROUPIER_SHUTDOWN_GRACE",
)
STUDIO_SECRET_HEX = "cd" * 32
#: Every replica of a deployment takes the same secrets: any one verifies any one's tokens.
ENV = {
    **{k: v for k, v in os.environ.items() if k not in SECRET_SETTINGS},
    "CROUPIER_SECRET": "hex:" + "ab" * 32,
    "CROUPIER_STUDIO_SECRET": "hex:" + STUDIO_SECRET_HEX,
}
STUDIO_SECRET = bytes.fromhex(STUDIO_SECRET_HEX)
START_S = 60.0
# Where the server says it listens: the plain line, or the log line (console or JSON).
LISTENING = re.compile(r"(?:listening on |address=|\"address\": \")(127\.0\.0\.1:\d+)")


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    address: str
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def serve(
    log: Path,
    store: str,
    *args: str,
    address: str = "127.0.0.1:0",
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Served:
    """Start `croupier serve` and return once it said where it listens (its output goes to
    ``log``)."""
    return listening(launch(log, store, *args, address=address, env=env, cwd=cwd), log)


def launch(
    log: Path,
    store: str,
    *args: str,
    address: str = "127.0.0.1:0",
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start `croupier serve` (its output goes to ``log``); :func:`listening` waits for it."""
    command: Sequence[str] = [CROUPIER, "serve", "--address", address, "--store", store, *args]
    with open(log, "wb") as out:
        return subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env or ENV, cwd=cwd or log.parent
        )


def listening(process: subprocess.Popen[bytes], log: Path) -> Served:
    """The server once it said where it listens."""
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        match = LISTENING.search(log.read_text(errors="replace"))
        if match:
            return Served(process, match.group(1), log)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    process.wait()
    raise AssertionError(f"the server did not start: {log.read_text(errors='replace')}")


def stop(served: Served) -> None:
    if served.process.poll() is None:
        served.process.kill()
    served.process.wait(timeout=30)
