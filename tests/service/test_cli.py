"""The `croupier` command as a newcomer runs it: serve (JSON logs), then demo against it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

CROUPIER = str(Path(sys.executable).parent / "croupier")


@pytest.fixture
def served(tmp_path: Path):
    env = {**os.environ, "CROUPIER_SECRET": "cli-test-secret-0123456789"}
    with open(tmp_path / "serve.log", "w+") as log:
        yield from _serve(log, tmp_path, env)


def _serve(log, tmp_path: Path, env: dict[str, str]):
    process = subprocess.Popen(
        [
            CROUPIER,
            "serve",
            "--address",
            "127.0.0.1:0",
            "--store",
            f"sqlite:///{tmp_path / 'data' / 'games.sqlite3'}",
            "--log-format",
            "json",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
    )
    deadline = time.monotonic() + 30
    address = None
    while time.monotonic() < deadline and address is None:
        log.seek(0)
        match = re.search(r"listening on (127\.0\.0\.1:\d+)", log.read())
        address = match.group(1) if match else None
        time.sleep(0.1)
    try:
        assert address, "the server did not say where it listens"
        yield address, tmp_path / "serve.log"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_second_server_on_a_busy_port_fails_clearly(served, tmp_path: Path) -> None:
    address, _ = served
    second = subprocess.run(
        [CROUPIER, "serve", "--address", address, "--store", f"sqlite:///{tmp_path / 'b.db'}"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CROUPIER_SECRET": "cli-test-secret-0123456789"},
    )
    assert second.returncode != 0
    assert f"cannot listen on {address}" in second.stderr


def test_serve_then_demo_plays_a_whole_game(served) -> None:
    address, log_path = served
    demo = subprocess.run(
        [CROUPIER, "demo", "--address", address, "--seats", "4", "--seed", "5", "--rounds", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr
    assert re.search(r"game [0-9a-f-]+: 2 round\(s\)", demo.stdout)
    for number in (1, 2):
        assert re.search(
            rf"round {number}: (GOING_OUT|STOP|FAILED_STOP|STOCK_OUT|COMBINATION)", demo.stdout
        )
    assert "round 2: TABLE_CLOSED" in demo.stdout and "net: seat 0" in demo.stdout
    # One JSON line per RPC with the game, the seat, the command, the outcome and the latency.
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    rpcs = [line for line in lines if line.get("event") == "rpc"]
    submits = [line for line in rpcs if line["method"] == "SubmitCommand"]
    assert submits and all(
        {"game_id", "seat", "command", "outcome", "latency_ms"} <= set(s) for s in submits
    )
    assert any(line["method"] == "CreateGame" for line in rpcs)
    assert any("data" in line.get("store", "") for line in lines)


def test_demo_plays_koi_koi_and_gin_and_explains_refusals(served) -> None:
    address, _ = served
    demo = subprocess.run(
        [
            CROUPIER,
            "demo",
            "--address",
            address,
            "--game",
            "koikoi",
            "--rounds",
            "3",
            "--seed",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr
    assert re.search(r"game [0-9a-f-]+: 3 round\(s\)", demo.stdout)
    assert re.search(r"round 3: MATCH_(OVER|DRAWN)", demo.stdout)
    gin = subprocess.run(
        [
            CROUPIER,
            "demo",
            "--address",
            address,
            "--game",
            "gin",
            "--preset",
            "single-hand",
            "--seed",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gin.returncode == 0, gin.stderr
    assert re.search(r"MATCH_OVER; winner\(s\): seat [01]", gin.stdout)
    rummy = subprocess.run(
        [CROUPIER, "demo", "--address", address, "--game", "rummy", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rummy.returncode == 0, rummy.stderr
    assert re.search(r"round 1: (WENT_OUT|STOCK_OUT)", rummy.stdout)
    bad = subprocess.run(
        [CROUPIER, "demo", "--address", address, "--game", "koikoi", "--rounds", "4"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and "INVALID_ARGUMENT" in bad.stderr and "rounds" in bad.stderr


def test_demo_without_a_server_says_so() -> None:
    demo = subprocess.run(
        [CROUPIER, "demo", "--address", "127.0.0.1:1", "--connect-timeout", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert demo.returncode != 0 and "no Croupier server" in demo.stderr


def test_a_short_secret_is_refused_clearly(tmp_path: Path) -> None:
    refused = subprocess.run(
        [
            CROUPIER,
            "serve",
            "--address",
            "127.0.0.1:0",
            "--store",
            f"sqlite:///{tmp_path / 'a.db'}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CROUPIER_SECRET": "too-short"},
    )
    assert refused.returncode != 0
    assert "CROUPIER_SECRET: the token secret needs at least 16 bytes" in refused.stderr
