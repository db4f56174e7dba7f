"""The Java example (examples/java: the HTTP JSON API with the JDK alone) as a studio runs it:
compiled with javac and run against a real server's HTTP listener, it meets every refusal it
shows and plays one game of each kind to its settlement. Without a JDK it skips, saying so."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from croupier.app.ratelimit import RateLimit
from croupier.app.tokens import TokenSigner
from croupier.service.server import ServerThread
from croupier.service.store import open_store

from .conftest import SECRET, STUDIO_KEYS, STUDIO_SECRET

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "java"
KINDS = ("hoola", "koikoi", "gin", "rummy")
#: A seat's allowance small enough that the example's ten quick commands meet RATE_LIMITED, and
#: its games wait some moves out, as a client on a busy server would.
RATE_LIMIT = RateLimit(per_second=20, burst=5)
#: javac, then four whole games on a loaded machine (the test asserts no speed; some 15 s
#: here), within pytest's 300 s.
COMPILE_TIMEOUT_S = 60
#: The JDK the example is written for: compiled against its API on any later javac, and held
#: free of warnings on that one only (a later javac adds lint checks the example cannot foresee).
JAVA_RELEASE = 17
RUN_TIMEOUT_S = 200
#: Each refusal the example shows: (what, Connect code, reason).
REFUSALS = (
    ("a forged token", "unauthenticated", "INVALID_TOKEN"),
    ("an expired studio token", "unauthenticated", "TOKEN_EXPIRED"),
    ("StreamEvents with an expired studio token", "unauthenticated", "TOKEN_EXPIRED"),
    ("a seat token creating a game", "unauthenticated", "STUDIO_CREDENTIAL_REQUIRED"),
    ("a request id sent for another game", "invalid_argument", "REQUEST_ID_REUSED"),
    ("a move out of turn", "failed_precondition", "NOT_YOUR_TURN"),
    ("a stale version", "aborted", "VERSION_CONFLICT"),
    ("a command id used for another command", "invalid_argument", "COMMAND_ID_REUSED"),
    ("too many commands", "resource_exhausted", "RATE_LIMITED"),
)


def _major_version(javac: str) -> int | None:
    """javac's major version (``javac 17.0.15`` → 17), or None when it does not say."""
    printed = subprocess.run([javac, "-version"], capture_output=True, text=True, check=False)
    found = re.search(r"javac (\d+)", printed.stdout + printed.stderr)
    return int(found.group(1)) if found else None


@pytest.fixture
def jdk() -> tuple[str, str]:
    """javac and java, or the test skips (before its server starts), saying why."""
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.skip(
            "no JDK (javac and java, 17 or later) on PATH: the Java example (examples/java) is"
            " not compiled nor run (apt-get install openjdk-17-jdk-headless)"
        )
    major = _major_version(javac)
    if major is not None and major < JAVA_RELEASE:
        pytest.skip(
            f"javac {major} is older than the example's JDK {JAVA_RELEASE}: the Java example "
            "(examples/java) is not compiled nor run (apt-get install openjdk-17-jdk-headless)"
        )
    return javac, java


@pytest.fixture
def http_url(tmp_path: Path) -> Iterator[str]:
    store = open_store(f"sqlite:///{tmp_path / 'java.sqlite3'}")
    server = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(SECRET),
        rate_limit=RATE_LIMIT,
        studio_keys=STUDIO_KEYS,
        http_address="127.0.0.1:0",
    )
    server.start()
    try:
        yield f"http://127.0.0.1:{server.http_port}"
    finally:
        server.stop(grace=None)
        store.close()


def test_the_java_example_plays_every_kind_and_meets_every_refusal(
    jdk: tuple[str, str], tmp_path: Path, http_url: str
) -> None:
    javac, java = jdk
    classes = tmp_path / "classes"
    warnings_fail = ["-Werror"] if _major_version(javac) == JAVA_RELEASE else []
    compiled = subprocess.run(
        [
            *(javac, "--release", str(JAVA_RELEASE), "-Xlint:all", *warnings_fail),
            *("-d", str(classes), *map(str, EXAMPLE.glob("*.java"))),
        ],
        capture_output=True,
        text=True,
        timeout=COMPILE_TIMEOUT_S,
    )
    assert compiled.returncode == 0, compiled.stderr
    replays = tmp_path / "replays"
    # The studio's secret, as a backend holds it: the example mints its tokens (and an expired
    # one) as docs/credentials.md says.
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CROUPIER_")},
        "CROUPIER_STUDIO_SECRET": "hex:" + STUDIO_SECRET.hex(),
    }
    ran = subprocess.run(
        [java, "-cp", str(classes), "Play", "--http", http_url, "--replays", str(replays)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=env,
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    out = ran.stdout
    for what, code, reason in REFUSALS:
        assert re.search(rf"^  {re.escape(what)}: {code} {reason}\b", out, re.M), (what, out)
    assert "VERSION_CONFLICT {" in out and "current_version=2" in out
    assert re.search(r"RATE_LIMITED \{retry_after_ms=\d+\} retry in \d+ ms", out), out
    assert "the same command id sent again: alreadyApplied" in out
    assert "ValidateCommand of an unknown card: INVALID_ARGUMENT UNKNOWN_CARD" in out
    for kind in KINDS:
        over = re.search(rf"^{kind}: game \S+ over after (\d+) moves", out, re.M)
        assert over and int(over.group(1)) > 0, (kind, out)
        assert (replays / f"{kind}.replay.json").stat().st_size > 0
    nets = [
        [int(n) for n in m.group(1).split()]
        for m in re.finditer(r"^  net per seat: (.*)$", out, re.M)
    ]
    assert len(nets) == len(KINDS) and all(sum(net) == 0 for net in nets), out
    assert out.count("verified (SIGNATURE_VERDICT_UNSIGNED)") == len(KINDS)
