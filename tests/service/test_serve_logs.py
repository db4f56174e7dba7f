"""`croupier serve` in JSON mode writes JSON lines only (a log shipper parses every line), on the
way in, while serving, on the way out and when it fails; the console keeps its readable line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from croupier.service.logs import serving_addresses
from croupier.service.server import SERVICE_NAME

CROUPIER = str(Path(sys.executable).parent / "croupier")
#: No secrets: the start then also logs its warnings (generated keys, the dev credential).
BARE = {k: v for k, v in os.environ.items() if not k.startswith("CROUPIER_")}
START_S = 30
THAWED = "frozen objects handed back to the collector and collected"


def serve(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    store = f"sqlite:///{tmp_path / 'data' / 'croupier.sqlite3'}"
    # A free HTTP port unless the test says: BARE leaves out conftest's CROUPIER_HTTP_ADDRESS, so
    # the server took the default 8080, and two at once (CI's two workers) failed "Address
    # already in use".
    if "--http-address" not in args:
        args = ("--http-address", "127.0.0.1:0", *args)
    with (tmp_path / "out.log").open("wb") as out, (tmp_path / "err.log").open("wb") as err:
        return subprocess.Popen(
            [CROUPIER, "serve", "--address", "127.0.0.1:0", "--store", store, *args],
            stdout=out,
            stderr=err,
            env=env,
            cwd=tmp_path,
        )


def wait_for(process: subprocess.Popen[bytes], log: Path, found: int) -> list[str]:
    """The addresses of the ``serving`` lines, once there are ``found`` of them."""
    deadline = time.monotonic() + START_S
    while True:
        text = log.read_text()
        addresses = serving_addresses(text)
        if len(addresses) >= found:
            return addresses
        assert process.poll() is None, text
        assert time.monotonic() < deadline, text
        time.sleep(0.05)


def thawed_by(log: Path) -> set[object]:
    """The processes (a worker's ``pid``; ``None``: a lone process) that logged a thaw."""
    return {
        json.loads(line).get("pid")
        for line in log.read_text().splitlines()
        if THAWED in line and line.endswith("}")
    }


def json_lines(path: Path) -> list[dict[str, object]]:
    lines = []
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            pytest.fail(f"not a JSON line in {path.name}: {line!r}")
        assert isinstance(entry, dict) and {"event", "level", "timestamp"} <= set(entry), line
        lines.append(entry)
    return lines


@pytest.mark.parametrize("workers", [1, 2])
def test_every_line_of_a_json_run_is_json(tmp_path: Path, workers: int) -> None:
    # The environment alone picks the format; retired settings are said to be ignored, and a
    # thaw is due at any growth of the memory held: the collector's task runs and logs it.
    env = {
        **BARE,
        "CROUPIER_LOG_FORMAT": "json",
        "CROUPIER_GC_THAW_S": "600",
        "CROUPIER_GC_THAW_GROWTH": "1e-9",
    }
    process = serve(tmp_path, "--workers", str(workers), "--gc-thaw", "600", env=env)
    try:
        addresses = wait_for(process, tmp_path / "err.log", workers)
        with grpc.insecure_channel(addresses[0]) as channel:
            answer = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=10
            )
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        deadline = time.monotonic() + START_S
        while len(thawed_by(tmp_path / "err.log")) < workers:
            assert time.monotonic() < deadline, "no thaw logged by each serving process"
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    assert code == 0
    lines = json_lines(tmp_path / "err.log")
    assert json_lines(tmp_path / "out.log") == []
    events = [line["event"] for line in lines]
    assert events.count("serving") == workers
    assert sum("no CROUPIER_SECRET" in str(e) for e in events) == 1
    [retired] = [e for e in events if "no longer read" in str(e)]
    assert "--gc-thaw and CROUPIER_GC_THAW_S" in str(retired)
    assert len(thawed_by(tmp_path / "err.log")) == workers  # each runs the policy it was given


def test_the_serving_line_says_how_many_listeners_share_the_port(tmp_path: Path) -> None:
    """``serve --listeners 4`` says so where it says where it serves (it was not said)."""
    env = {**BARE, "CROUPIER_LOG_FORMAT": "json"}
    process = serve(tmp_path, "--listeners", "4", "--http-address", "off", env=env)
    try:
        wait_for(process, tmp_path / "err.log", 1)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    [serving] = [line for line in json_lines(tmp_path / "err.log") if line["event"] == "serving"]
    assert serving["listeners"] == 4


def test_a_failed_start_is_a_json_line_too(tmp_path: Path) -> None:
    env = {**BARE, "CROUPIER_SECRET": "hex:00"}  # too short: refused before anything else
    process = serve(tmp_path, "--log-format", "json", env=env)
    assert process.wait(timeout=60) == 1
    [line] = json_lines(tmp_path / "err.log")
    assert line["level"] == "error" and "CROUPIER_SECRET" in str(line["error"])


def test_the_console_keeps_its_readable_line(tmp_path: Path) -> None:
    process = serve(tmp_path, "--log-format", "console", env=BARE)
    try:
        deadline = time.monotonic() + START_S
        while "Croupier listening on 127.0.0.1:" not in (
            text := (tmp_path / "err.log").read_text()
        ):
            assert process.poll() is None, text
            assert time.monotonic() < deadline, text
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


LIBRARIES_LOG = """
import logging
from croupier.service import logs
logs.configure({fmt!r})
logging.getLogger("psycopg").warning("error ignored in rollback on %s: %s", "conn-1", "lost")
logging.getLogger("psycopg").info("an info line")
logging.getLogger("psycopg.pool").warning("discarding broken connection: %s", "conn-2")
try:
    raise ZeroDivisionError("division by zero")
except ZeroDivisionError:
    logging.getLogger("asyncio").exception("Task exception was never retrieved")
import threading
def fails():
    raise RuntimeError("a bug in a thread")
thread = threading.Thread(target=fails, name="sqlite-listen")
thread.start()
thread.join()
"""


def test_the_libraries_log_lines_are_written_as_ours(tmp_path: Path) -> None:
    """psycopg and asyncio log through the standard library, and a thread's uncaught exception
    is printed by Python: in a JSON run these are JSON lines with the logger's name (they were
    plain text), and below a warning they are left out. psycopg's pool's warnings (one per
    connection lost or refused, hundreds per outage) are left out too: below an error."""
    err = tmp_path / "err.log"
    with err.open("wb") as out:
        subprocess.run(
            [sys.executable, "-c", LIBRARIES_LOG.format(fmt="json")], stderr=out, check=True
        )
    lines = json_lines(err)
    assert [(line["logger"], line["level"], line["event"]) for line in lines] == [
        ("psycopg", "warning", "error ignored in rollback on conn-1: lost"),
        ("asyncio", "error", "Task exception was never retrieved"),
        ("threading", "error", "thread sqlite-listen failed"),
    ]
    assert "ZeroDivisionError: division by zero" in str(lines[1]["exception"])
    assert "RuntimeError: a bug in a thread" in str(lines[2]["exception"])
    console = subprocess.run(
        [sys.executable, "-c", LIBRARIES_LOG.format(fmt="console")],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    assert "[warning  ] error ignored in rollback on conn-1: lost [psycopg]" in console
    assert "discarding" not in console


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("level", ["info", "warning"])
def test_the_log_level_leaves_out_what_is_below_it(tmp_path: Path, level: str) -> None:
    """Every call's ``rpc`` line is info: a terminal under load scrolled some 14,000 of them by.
    At ``--log-level warning`` (or CROUPIER_LOG_LEVEL) a group of workers writes the warnings
    only; at info, every line."""
    address = f"127.0.0.1:{_free_port()}"
    env = {**BARE, "CROUPIER_LOG_FORMAT": "json", "CROUPIER_LOG_LEVEL": level}
    process = serve(tmp_path, "--address", address, "--workers", "2", env=env)
    try:
        deadline = time.monotonic() + START_S
        answered = False
        while not answered:
            assert process.poll() is None, (tmp_path / "err.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "err.log").read_text()
            try:
                with grpc.insecure_channel(address) as channel:
                    health_pb2_grpc.HealthStub(channel).Check(
                        health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=1
                    )
                    channel.unary_unary("/croupier.v1.GameService/GetView")(b"", timeout=5)
            except grpc.RpcError as error:
                answered = error.code() == grpc.StatusCode.UNAUTHENTICATED
            time.sleep(0.1)
        if level == "info":  # one worker answered; the other may still be starting
            wait_for(process, tmp_path / "err.log", 2)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    lines = json_lines(tmp_path / "err.log")
    levels = {line["level"] for line in lines}
    events = [line["event"] for line in lines]
    assert sum("no CROUPIER_SECRET" in str(e) for e in events) == 1  # a warning: always
    if level == "warning":
        assert levels <= {"warning", "error"} and "rpc" not in events, levels
    else:
        assert "rpc" in events and events.count("serving") == 2
