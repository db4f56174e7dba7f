"""The `croupier` command as a newcomer runs it: serve (JSON logs), then demo against it."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner

from croupier.app.tokens import mint_studio_token, parse_secret
from croupier.service.cli import main
from croupier.service.logs import serving_addresses
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

CROUPIER = str(Path(sys.executable).parent / "croupier")
SECRETS = (
    "CROUPIER_SECRET",
    "CROUPIER_PREVIOUS_SECRETS",
    "CROUPIER_STUDIO_SECRET",
    "CROUPIER_STUDIO_PREVIOUS_SECRETS",
    "CROUPIER_STUDIO_KEY",
)
#: The environment without any of the secrets (as on a newcomer's machine).
BARE = {k: v for k, v in os.environ.items() if k not in SECRETS}
#: A configured server's: the studio's tools sign with the same studio secret.
CONFIGURED = {
    **BARE,
    "CROUPIER_SECRET": "hex:" + "ab" * 32,
    "CROUPIER_STUDIO_SECRET": "base64:" + "c3R1ZGlvLXNlY3JldC0wMTIzNDU2Nzg5YWJjZGVmMDEyMw==",
}


@pytest.fixture
def served(tmp_path: Path):
    with open(tmp_path / "serve.log", "w+") as log:
        yield from _serve(log, tmp_path, CONFIGURED)


def _serve(log, tmp_path: Path, env: dict[str, str], store: bool = True):
    process = subprocess.Popen(
        [
            CROUPIER,
            "serve",
            "--address",
            "127.0.0.1:0",
            *(("--store", f"sqlite:///{tmp_path / 'data' / 'games.sqlite3'}") if store else ()),
            "--log-format",
            "json",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 30
    address = None
    while time.monotonic() < deadline and address is None:
        log.seek(0)
        address = next(iter(serving_addresses(log.read())), None)
        time.sleep(0.1)
    try:
        assert address, "the server did not say where it listens"
        yield address, tmp_path / "serve.log"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_second_server_on_a_busy_port_fails_clearly(served, tmp_path: Path) -> None:
    """Alone or as a group of workers, the same line (before, the workers' lacked the option)."""
    address, _ = served
    said = []
    for workers in ("1", "2"):
        second = subprocess.run(
            [CROUPIER, "serve", "--address", address, "--store", f"sqlite:///{tmp_path / 'b.db'}"]
            + ["--workers", workers],
            capture_output=True,
            text=True,
            timeout=60,
            env=CONFIGURED,
        )
        assert second.returncode != 0
        assert f"Error: --address: cannot listen on {address}" in second.stderr, second.stderr
        assert "is another server running there?" in second.stderr
        # `make run` takes no options: the line names the variable that moves it too.
        assert "CROUPIER_ADDRESS=HOST:PORT" in second.stderr, second.stderr
        assert not (tmp_path / "b.db").exists(), "a start that cannot listen made a store"
        said.append(second.stderr.strip().splitlines()[-1])
    assert said[0] == said[1], said


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--address", "nonsense"), "cannot listen on 'nonsense': give HOST:PORT"),
        (("--address", "10.255.255.1:50197"), "not an address of this machine"),
        (("--address", "127.0.0.1:0", "--http-address", "x:y"), "--http-address: cannot listen"),
        (("--address", "127.0.0.1:99999"), "a port from 0 to 65535"),
        (("--address", "127.0.0.1:\u00b2"), "a port from 0 to 65535"),
        (("--address", "127.0.0.1:50282", "--http-address", "127.0.0.1:50282"), "each its own"),
    ],
)
def test_an_address_that_cannot_be_listened_on_says_why(
    tmp_path: Path, flags: tuple[str, ...], said: str
) -> None:
    """Not a busy port: the message says what is wrong, and not that another server may be
    there; no store is made."""
    result = CliRunner().invoke(
        main, ["serve", *flags, "--store", f"sqlite:///{tmp_path / 'x.db'}"], env=CONFIGURED
    )
    assert result.exit_code != 0
    assert said in result.output and "another server" not in result.output
    assert not (tmp_path / "x.db").exists()


HTTP_URL = re.compile(r'"http": "(http://127\.0\.0\.1:\d+)"')  # the JSON "serving" line's


def test_serve_answers_json_over_http_and_a_busy_http_port_fails_clearly(
    served, tmp_path: Path
) -> None:
    import urllib.request

    _, log_path = served
    url = HTTP_URL.search(log_path.read_text()).group(1)
    request = urllib.request.Request(
        f"{url}/croupier.v1.GameService/ListPresets",
        data=b'{"kind": "GAME_KIND_KOIKOI"}',
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        presets = json.loads(answer.read())["presets"]
    assert "nintendo" in {p["name"] for p in presets}
    busy = url.removeprefix("http://")
    second = subprocess.run(
        [
            *(CROUPIER, "serve", "--address", "127.0.0.1:0", "--http-address", busy),
            *("--store", f"sqlite:///{tmp_path / 'c.db'}"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=CONFIGURED,
    )
    assert second.returncode != 0
    assert f"cannot listen on {busy}" in second.stderr


def test_a_start_that_fails_on_a_busy_port_leaves_the_running_servers_credential(
    tmp_path: Path,
) -> None:
    """`make run` a second time, from the same directory, while the first still serves: the
    second start fails on the busy port (gRPC's, then HTTP's) before it writes anything, so the
    local tools still hold the credential of the server that answers them (it was replaced)."""
    with open(tmp_path / "serve.log", "w+") as log:
        for address, log_path in _serve(log, tmp_path, BARE, store=False):
            credential = tmp_path / "data" / "dev-studio-credential"
            first = credential.read_text()
            busy_http = HTTP_URL.search(log_path.read_text()).group(1).removeprefix("http://")
            for busy, flags, variable in (
                (address, ("--address", address, "--http-address", "off"), "CROUPIER_ADDRESS"),
                (
                    busy_http,
                    ("--address", "127.0.0.1:0", "--http-address", busy_http),
                    "CROUPIER_HTTP_ADDRESS",
                ),
            ):
                second = subprocess.run(
                    [CROUPIER, "serve", *flags],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    env=BARE,
                    cwd=tmp_path,
                )
                assert second.returncode != 0
                assert f"cannot listen on {busy}" in second.stderr
                # How `make run` moves to another port (another program may hold 8080).
                assert f"{variable}=HOST:PORT, as `make run` takes it" in second.stderr
                assert credential.read_text() == first, f"replaced by a start failing on {busy}"


def _demo(address: str, cwd: Path, *key_file: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CROUPIER, "demo", "--address", address, "--game", "gin", "--seed", "3", *key_file],
        capture_output=True,
        text=True,
        timeout=120,
        env=BARE,
        cwd=cwd,
    )


def test_a_second_development_server_leaves_the_first_ones_credential(tmp_path: Path) -> None:
    """Two servers without a studio secret from one folder (another store, another port): the
    second leaves data/dev-studio-credential to the first, whose tools keep working, and writes
    its own beside it, named by its port, saying so. Once the first is gone, a new one takes the
    usual file again (the lock dies with its process)."""
    credential = tmp_path / "data" / "dev-studio-credential"
    with open(tmp_path / "serve.log", "w+") as log:
        for first_address, _ in _serve(log, tmp_path, BARE, store=False):
            first = credential.read_text()
            with open(tmp_path / "second.log", "w+") as second_log:
                other = tmp_path / "data" / "other.sqlite3"
                second = subprocess.Popen(
                    [CROUPIER, "serve", "--address", "127.0.0.1:0", "--http-address", "off"]
                    + ["--store", f"sqlite:///{other}", "--log-format", "json"],
                    stdout=second_log,
                    stderr=subprocess.STDOUT,
                    env=BARE,
                    text=True,
                    cwd=tmp_path,
                )
                try:
                    deadline, address = time.monotonic() + 30, None
                    while time.monotonic() < deadline and address is None:
                        time.sleep(0.1)
                        second_log.seek(0)
                        address = next(iter(serving_addresses(second_log.read())), None)
                    assert address, "the second server did not say where it listens"
                    port = address.rsplit(":", 1)[1]
                    own = credential.with_name(f"dev-studio-credential-{port}")
                    assert credential.read_text() == first
                    assert own.read_text() != first
                    assert stat.S_IMODE(own.stat().st_mode) == 0o600
                    second_log.seek(0)
                    said = [
                        json.loads(line)
                        for line in second_log.read().splitlines()
                        if line.startswith("{")
                    ]
                    warning = next(line for line in said if "credential_file" in line)
                    assert warning["credential_file"] == str(own)
                    assert f"--studio-key-file {own}" in warning["event"]
                    assert _demo(first_address, tmp_path).returncode == 0
                    assert _demo(address, tmp_path, "--studio-key-file", str(own)).returncode == 0
                    # Without it the tool sends the first server's, and its refusal names the
                    # file the second one wrote.
                    refused = _demo(address, tmp_path)
                    assert refused.returncode != 0 and "UNAUTHENTICATED" in refused.stderr
                    assert f"pass --studio-key-file {own}" in refused.stderr, refused.stderr
                finally:
                    second.terminate()
                    second.wait(timeout=10)
    with open(tmp_path / "again.log", "w+") as log:
        for _ in _serve(log, tmp_path, BARE, store=False):
            assert credential.read_text() != first, "the usual file is the new server's"


def assert_one_card_notation(out: str) -> None:
    """The demo writes every card as the timeline does (``Q♦``, ``10♠``, ``Joker``): the engines'
    move labels name them by code (``3C``, Rummy's ``KH1``) or at length (``Four of clubs``),
    and a Gin knock read "Discard Four of clubs and knock, melding 3C 3D 3S"."""
    assert not re.findall(r"\b(?:[A2-9TJQK][SHDC][12]?|JK\d)\b", out)
    assert not re.findall(
        r"\b(?:Ace|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Jack|Queen|King) of \w+", out
    )
    assert re.search(r"(?:10|[A2-9JQK])[♠♥♦♣]", out)


def test_serve_then_demo_plays_a_whole_game(served) -> None:
    address, log_path = served
    demo = subprocess.run(
        [CROUPIER, "demo", "--address", address, "--seats", "4", "--seed", "5", "--rounds", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        env=CONFIGURED,
    )
    assert demo.returncode == 0, demo.stderr
    assert re.search(r"game [0-9a-f-]+: 2 round\(s\)", demo.stdout)
    for number in (1, 2):
        assert re.search(
            rf"round {number}: (going out|stop|failed stop|stock out|combination)", demo.stdout
        )
    assert "round 2: table closed" in demo.stdout and "net, in stakes: seat 0" in demo.stdout
    assert re.search(r"^  seat \d → seat \d: \d+ stakes?   \(", demo.stdout, re.MULTILINE)
    assert_one_card_notation(demo.stdout)
    # One JSON line per RPC with the game, the seat, the command (and its id), the outcome and
    # the latency.
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    rpcs = [line for line in lines if line.get("event") == "rpc"]
    submits = [line for line in rpcs if line["method"] == "SubmitCommand"]
    assert submits and all(
        {"game_id", "seat", "command", "command_id", "outcome", "latency_ms"} <= set(s)
        for s in submits
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
        env=CONFIGURED,
    )
    assert demo.returncode == 0, demo.stderr
    assert re.search(r"game [0-9a-f-]+: 3 round\(s\)", demo.stdout)
    assert re.search(r"round 3: match (over|drawn)", demo.stdout)
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
        env=CONFIGURED,
    )
    assert gin.returncode == 0, gin.stderr
    assert re.search(r"match over; winner\(s\): seat [01]", gin.stdout)
    assert_one_card_notation(gin.stdout)
    rummy = subprocess.run(
        [CROUPIER, "demo", "--address", address, "--game", "rummy", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        env=CONFIGURED,
    )
    assert rummy.returncode == 0, rummy.stderr
    assert re.search(r"round 1: (went out|stock out)", rummy.stdout)
    assert_one_card_notation(rummy.stdout)
    bad = subprocess.run(
        [CROUPIER, "demo", "--address", address, "--game", "koikoi", "--rounds", "4"],
        capture_output=True,
        text=True,
        timeout=60,
        env=CONFIGURED,
    )
    assert bad.returncode != 0 and "INVALID_ARGUMENT" in bad.stderr and "rounds" in bad.stderr


def test_demo_with_an_idle_seat_shows_its_time_outs_and_forced_moves(served) -> None:
    """One seat never plays: the service's clock plays it, and the demo prints each time-out
    (its deadline, how late it was recorded) and the forced moves as they happen."""
    address, _ = served
    demo = subprocess.run(
        [
            *(CROUPIER, "demo", "--address", address, "--game", "gin"),
            *("--preset", "single-hand", "--seed", "3", "--idle-seat", "1"),
            *("--turn-time-ms", "200"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=CONFIGURED,
    )
    assert demo.returncode == 0, demo.stderr
    lines = demo.stdout.splitlines()
    timed = [i for i, line in enumerate(lines) if line.startswith("  seat 1 timed out: deadline")]
    assert timed and all("ms after it" in lines[i] for i in timed)
    assert re.search(
        r"^    #\d+ card discarded: seat 1; card (?:10|[A2-9JQK])[♠♥♦♣]$", demo.stdout, re.MULTILINE
    )
    assert_one_card_notation(demo.stdout)
    assert "it is away" in demo.stdout  # three time-outs in a row (max_timeouts' default)
    assert not re.search(r"^  seat 1: ", demo.stdout, re.MULTILINE)  # seat 1 never played
    assert re.search(r"match over; winner\(s\): seat [01]", demo.stdout)
    refused = subprocess.run(
        [CROUPIER, "demo", "--address", address, "--game", "gin", "--idle-seat", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        env=CONFIGURED,
    )
    assert refused.returncode != 0 and "--turn-time-ms" in refused.stderr


@pytest.mark.parametrize("command", [["demo"], ["end-game", "some-game", "--reason", "stuck"]])
def test_a_tool_without_a_server_says_so_and_how_to_name_one(command: list[str]) -> None:
    """`make run` on other ports (CROUPIER_ADDRESS, which the tools do not read), then a tool
    without --address: it was told only to start a server, with one running."""
    tool = subprocess.run(
        [CROUPIER, *command, "--address", "127.0.0.1:1", "--connect-timeout", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert tool.returncode != 0 and "no Croupier server at 127.0.0.1:1" in tool.stderr
    assert "start one: make run; for one that listens elsewhere, give --address" in tool.stderr


def test_demo_refuses_an_address_it_cannot_dial() -> None:
    """A host-less address (a server's "every interface") is refused at once, as load refuses
    it (before: only load did, with a check of its own)."""
    result = CliRunner().invoke(main, ["demo", "--address", ":50051"])
    assert result.exit_code == 2 and "--address: HOST:PORT, not ':50051'" in result.output


def _tool(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A local tool (``demo``, ``load``) run from ``where`` with no secret in its environment."""
    return subprocess.run(
        [CROUPIER, *args], capture_output=True, text=True, timeout=60, env=BARE, cwd=where
    )


def test_load_sent_to_no_server_and_without_a_credential_names_the_address_first(
    tmp_path: Path,
) -> None:
    """`load` sent to the wrong port, with no credential where it runs, was told only of the
    credential; its user mended that, to be told next that no server was there (demo and
    end-game look for the server first)."""
    tool = _tool(tmp_path, "load", "--games", "1", "--address", "127.0.0.1:1")
    assert tool.returncode != 0
    said = tool.stderr.strip().removeprefix("Error: ")
    assert said.startswith("no server listens at 127.0.0.1:1 (start one: make run;"), said
    assert "need the studio's credential" in said


def test_a_fresh_machine_serves_and_demos_without_any_secret(tmp_path: Path) -> None:
    """The newcomer's flow: `make run` (serve, default store, no secrets) then `croupier demo`
    in another terminal, from the same directory. Creation is not open: the demo gets in with
    the development credential the server wrote for this user only."""
    with open(tmp_path / "serve.log", "w+") as log:
        for address, log_path in _serve(log, tmp_path, BARE, store=False):
            credential = tmp_path / "data" / "dev-studio-credential"
            assert stat.S_IMODE(credential.stat().st_mode) == 0o600
            assert credential.read_text().startswith("studio.v1.")
            logged = log_path.read_text()
            assert "no CROUPIER_STUDIO_SECRET" in logged and "no CROUPIER_SECRET" in logged
            demo = subprocess.run(
                [CROUPIER, "demo", "--address", address, "--seed", "1"],
                capture_output=True,
                text=True,
                timeout=120,
                env=BARE,
                cwd=tmp_path,
            )
            assert demo.returncode == 0, demo.stderr
            assert re.search(r"game [0-9a-f-]+: 1 round\(s\)", demo.stdout)
            # Elsewhere (no credential file), and with a wrong credential, no game is created.
            elsewhere = tmp_path / "elsewhere"
            elsewhere.mkdir()
            lost = _tool(elsewhere, "demo", "--address", address)
            assert lost.returncode != 0 and "studio's credential" in lost.stderr
            forged = credential.read_text().strip()[:-4] + "0000"
            wrong = _tool(elsewhere, "demo", "--address", address, "--studio-key", forged)
            assert wrong.returncode != 0 and "UNAUTHENTICATED" in wrong.stderr
            assert "--studio-key-file" not in wrong.stderr  # it was given: no hint of the file
            # A credential left in this folder by another server: the refusal says which file
            # the tool read, and how to pass the right one.
            (elsewhere / "data").mkdir()
            (elsewhere / "data" / "dev-studio-credential").write_text(forged + "\n")
            for tool in (["demo"], ["load", "--games", "1", "--quiet"]):
                stale = _tool(elsewhere, *tool, "--address", address)
                said = stale.stderr
                assert stale.returncode != 0 and "UNAUTHENTICATED" in said, said
                assert str(elsewhere / "data" / "dev-studio-credential") in said, said
                assert "--studio-key-file" in said, said
                # A server with a studio secret writes no file: the hint says what it takes.
                assert "give the tool the same CROUPIER_STUDIO_SECRET, or --studio-key" in said


@pytest.mark.parametrize(
    ("setting", "value", "complaint"),
    [
        ("CROUPIER_SECRET", "too-short", "no hex: or base64: prefix"),
        ("CROUPIER_SECRET", "0123456789abcdef0123456789abcdef", "no hex: or base64: prefix"),
        ("CROUPIER_SECRET", "hex:" + "ab" * 16, "only 16 bytes"),
        ("CROUPIER_SECRET", "hex:not-hex", "not valid hex"),
        ("CROUPIER_STUDIO_SECRET", "base64:c2hvcnQ=", "only 5 bytes"),
        ("CROUPIER_PREVIOUS_SECRETS", "hex:" + "cd" * 32 + ",oops", "(entry 2)"),
    ],
)
def test_a_bad_secret_stops_the_start_with_one_line(
    tmp_path: Path, setting: str, value: str, complaint: str
) -> None:
    env = {**CONFIGURED, setting: value}
    refused = subprocess.run(
        [CROUPIER, "serve", "--address", "127.0.0.1:0", "--store", f"sqlite:///{tmp_path / 'a'}"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr  # no traceback, no log
    assert lines[0].startswith(f"Error: {setting}") and complaint in lines[0]
    assert "hex:… or base64:… of at least 32 bytes" in lines[0] and "secrets.token_hex" in lines[0]
    assert not (tmp_path / "a").exists()  # refused before touching the store


def test_token_commands_mint_what_the_server_takes(served, tmp_path: Path) -> None:
    """`croupier token studio` creates games; `croupier token player` recalls that player's."""
    import grpc

    from croupier.service.bots import auth
    from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

    address, _ = served

    def mint(*args: str) -> str:
        done = subprocess.run(
            [CROUPIER, "token", *args], capture_output=True, text=True, timeout=60, env=CONFIGURED
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    studio = mint("studio", "--ttl", "10m")
    player = mint("player", "--player", "zoe", "--ttl", "1h")
    assert studio.startswith("studio.v1.") and player.startswith("player.v1.")
    with grpc.insecure_channel(address) as channel:
        stub = service_pb2_grpc.GameServiceStub(channel)
        created = stub.CreateGame(
            service_pb2.CreateGameRequest(
                kind=common_pb2.GAME_KIND_HOOLA, seats=2, players=["zoe", "yan"]
            ),
            metadata=auth(studio),
        )
        assert created.tokens[0].player == "zoe"
        recent = stub.ListRecentGames(service_pb2.ListRecentGamesRequest(), metadata=auth(player))
        assert recent.player == "zoe"
    secret = mint("secret")
    assert secret.startswith("hex:") and len(bytes.fromhex(secret[4:])) == 32
    unset = subprocess.run(
        [CROUPIER, "token", "studio"], capture_output=True, text=True, timeout=60, env=BARE
    )
    assert unset.returncode != 0 and "CROUPIER_STUDIO_SECRET is not set" in unset.stderr


def test_the_serving_line_names_the_key_ids_tokens_may_name(served) -> None:
    """An UNKNOWN_KEY refusal names the token's key id: the start line names the server's, so an
    operator sees which secret a server holds without working the id out by hand."""
    from croupier.app.tokens import key_id, parse_secret

    _, log_path = served
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    serving = next(line for line in lines if line.get("event") == "serving")
    assert serving["key_ids"] == [key_id(parse_secret(CONFIGURED["CROUPIER_SECRET"]))]
    studio = parse_secret(CONFIGURED["CROUPIER_STUDIO_SECRET"])
    assert serving["studio_key_ids"] == [key_id(studio)]
    assert serving["lobby"] is False  # --lobby not given, CROUPIER_LOBBY unset


def test_a_token_of_a_key_the_server_lacks_is_logged_with_its_key_id(served) -> None:
    """An operator's review: the `rpc` line of an UNKNOWN_KEY refusal said which reason, not which
    key, so a rotation missed on one replica looked like another deployment's tokens. The key id
    is now in the ErrorInfo metadata and, with the metadata, in the line."""
    from croupier.app.tokens import TokenSigner, key_id
    from croupier.service.bots import auth
    from croupier.v1 import service_pb2, service_pb2_grpc

    address, log_path = served
    foreign = b"another deployment's secret, 32 bytes or more"
    token = TokenSigner(foreign).issue("some-game", 0)
    with grpc.insecure_channel(address) as channel:
        stub = service_pb2_grpc.GameServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.GetView(service_pb2.GetViewRequest(game_id="some-game"), metadata=auth(token))
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    deadline = time.monotonic() + 30
    while True:
        lines = [json.loads(x) for x in log_path.read_text().splitlines() if x.startswith("{")]
        refusals = [x for x in lines if x.get("event") == "rpc" and x.get("method") == "GetView"]
        if refusals or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    (line,) = refusals
    assert line["reason"] == "UNKNOWN_KEY"
    assert line["metadata"] == {"key_id": key_id(foreign)}


@pytest.mark.parametrize(
    ("setting", "value", "said"),
    [
        (
            "CROUPIER_WORKERS",
            "abc",
            "--workers (CROUPIER_WORKERS): 'abc' is not a valid integer range",
        ),
        ("CROUPIER_WORKERS", "0", "--workers (CROUPIER_WORKERS): 0 is not in the range 1<=x<=512"),
        ("CROUPIER_COMMAND_RATE", "-1", "--command-rate (CROUPIER_COMMAND_RATE): -1.0 is not in"),
        ("CROUPIER_SHUTDOWN_GRACE", "x", "--shutdown-grace (CROUPIER_SHUTDOWN_GRACE): 'x' is not"),
        ("CROUPIER_LISTENERS", "0", "--listeners (CROUPIER_LISTENERS): 0 is not in the range"),
        ("CROUPIER_LOBBY", "maybe", "--lobby (CROUPIER_LOBBY): 'maybe' is not one of 1/0, true/"),
        ("CROUPIER_TLS_CERT", ".", "--tls-cert (CROUPIER_TLS_CERT): File '.' is a directory"),
    ],
)
def test_a_bad_setting_from_the_environment_is_one_failed_line_naming_it(
    tmp_path: Path, setting: str, value: str, said: str
) -> None:
    """Before, click's usage error in plain text (four lines, exit 2), naming a flag that was
    never passed (``Invalid value for '--workers'``): the variable goes as a bad secret does."""
    env = {**CONFIGURED, "CROUPIER_LOG_FORMAT": "json", setting: value}
    store = tmp_path / "a.db"
    refused = subprocess.run(
        [CROUPIER, "serve", "--address", "127.0.0.1:0", "--store", f"sqlite:///{store}"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert refused.returncode == 1, refused.stderr
    assert refused.stdout == ""
    [line] = refused.stderr.splitlines()
    failed = json.loads(line)
    assert (failed["event"], failed["level"]) == ("failed", "error"), line
    assert failed["error"].startswith(said), failed
    assert not store.exists()


def test_a_bad_setting_from_the_environment_names_it_in_any_format_and_command(
    tmp_path: Path,
) -> None:
    """The console's line, a bad --log-format itself (read first: no JSON to write it in), and
    the other commands' settings; a flag given stays click's usage error about the flag."""

    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CROUPIER, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**CONFIGURED, **env},
            cwd=tmp_path,
        )

    for refused, said in [
        (run("serve", CROUPIER_WORKERS="abc"), "--workers (CROUPIER_WORKERS): 'abc' is not a"),
        (
            run("serve", CROUPIER_LOG_FORMAT="xml", CROUPIER_WORKERS="abc"),
            "--log-format (CROUPIER_LOG_FORMAT): 'xml' is not one of 'json', 'console'",
        ),
        (
            run("replay", "public-key", CROUPIER_REPLAY_KEY_FILE=str(tmp_path)),
            f"KEY_FILE (CROUPIER_REPLAY_KEY_FILE): File '{tmp_path}' is a directory",
        ),
    ]:
        assert refused.returncode == 1, refused.stderr
        [line] = refused.stderr.splitlines()  # no usage lines
        assert line.startswith(f"Error: {said}"), line
    # The JSON line whichever place --log-format has on the command line.
    late = run("serve", "--address", "127.0.0.1:0", "--log-format", "json", CROUPIER_WORKERS="0")
    assert json.loads(late.stderr)["error"].startswith("--workers (CROUPIER_WORKERS): 0 is not")
    flag = run("serve", "--workers", "abc", CROUPIER_WORKERS="2")
    assert flag.returncode == 2 and "Invalid value for '--workers': 'abc'" in flag.stderr


def test_every_option_read_from_the_environment_names_its_variable() -> None:
    """In its help (serve --help named none for --address, --store and --log-format), and as a
    setting whose bad value is said to come from there: every option whose default is read when
    the command runs (a callable: the environment's) is an EnvOption."""
    import click

    from croupier.service.options import EnvArgument, EnvOption

    def commands(group: click.Group, path: str) -> Iterator[tuple[str, click.Command]]:
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                yield from commands(command, f"{path} {name}")
            else:
                yield f"{path} {name}", command

    checked = 0
    for path, command in commands(main, "croupier"):
        for param in command.params:
            if callable(param.default) and not isinstance(param, (EnvOption, EnvArgument)):
                pytest.fail(f"{path} {param.name}: read from the environment, as a plain option")
            if isinstance(param, EnvOption):
                assert param.env in (param.help or ""), f"{path} {param.opts[0]}"
                checked += 1
            elif isinstance(param, EnvArgument):
                assert param.env in (command.help or ""), f"{path} {param.name}"
                checked += 1
    assert checked >= 20
    shown = CliRunner().invoke(main, ["serve", "--help"], terminal_width=200).output
    for name in ("CROUPIER_ADDRESS", "CROUPIER_STORE", "CROUPIER_LOG_FORMAT", "CROUPIER_LOBBY"):
        assert f"Environment: {name}" in shown, name


@pytest.mark.parametrize(
    ("value", "on"),
    [
        *((word, True) for word in ("1", "true", "True", "YES", "yes", "on", " On ")),
        *((word, False) for word in ("0", "false", "FALSE", "no", "off", "")),
    ],
)
def test_the_lobby_takes_the_usual_words_for_on_and_off(
    monkeypatch: pytest.MonkeyPatch, value: str, on: bool
) -> None:
    """Before, only "1" turned it on: "true" or "yes" silently left it off."""
    from croupier.service.cli import serve

    monkeypatch.setenv("CROUPIER_LOBBY", value)
    assert serve.make_context("serve", []).params["lobby"] is on
    assert serve.make_context("serve", ["--no-lobby"]).params["lobby"] is False
    assert serve.make_context("serve", ["--lobby"]).params["lobby"] is True


def test_the_serving_line_says_whether_the_lobby_is_on(tmp_path: Path) -> None:
    with open(tmp_path / "serve.log", "w+") as log:
        running = _serve(log, tmp_path, {**CONFIGURED, "CROUPIER_LOBBY": "yes"})
        _, log_path = next(running)
        running.close()
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    serving = next(line for line in lines if line.get("event") == "serving")
    assert serving["lobby"] is True and serving["http"].startswith("http://"), serving


def test_end_game_ends_a_game_once_and_says_how_it_settled(served) -> None:
    """``croupier end-game``: the studio's EndGame from the command line; run again (an answer
    lost), it answers the same; a seat's token cannot end the game."""
    address, log_path = served
    with grpc.insecure_channel(address) as channel:
        stub = service_pb2_grpc.GameServiceStub(channel)
        studio = mint_studio_token(
            parse_secret(CONFIGURED["CROUPIER_STUDIO_SECRET"]), int(time.time()) + 600
        )
        game = stub.CreateGame(
            service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_GIN, seats=2),
            metadata=(("authorization", f"Bearer {studio}"),),
        )

    def end_game(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                CROUPIER,
                "end-game",
                game.game_id,
                "--reason",
                "a test",
                "--address",
                address,
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=CONFIGURED,
        )

    first, again = end_game(), end_game()
    assert first.returncode == 0, first.stderr
    assert f"game {game.game_id} ended at version" in first.stdout
    assert "abandoned; winner(s): none" in first.stdout and "a test" in first.stdout
    assert again.returncode == 0 and "was already ended by this call" in again.stdout
    other = end_game("--command-id", "another")
    assert other.returncode == 1 and "FAILED_PRECONDITION" in other.stderr
    seat = end_game("--studio-key", game.tokens[0].token)
    assert seat.returncode == 1 and "UNAUTHENTICATED" in seat.stderr
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    ended = [line for line in lines if line.get("event") == "game ended by the studio"]
    assert [line["reason"] for line in ended] == ["a test"]


def test_end_game_run_again_with_another_reason_says_the_game_is_over(served) -> None:
    """An operator runs ``croupier end-game`` again with another ``--reason`` (a teammate's,
    or a reason reworded) under the default command id: the game was ended by the first run, and
    the tool says so rather than name a command id the operator never chose."""
    address, _ = served
    with grpc.insecure_channel(address) as channel:
        studio = mint_studio_token(
            parse_secret(CONFIGURED["CROUPIER_STUDIO_SECRET"]), int(time.time()) + 600
        )
        game = service_pb2_grpc.GameServiceStub(channel).CreateGame(
            service_pb2.CreateGameRequest(kind=common_pb2.GAME_KIND_GIN, seats=2),
            metadata=(("authorization", f"Bearer {studio}"),),
        )

    def end_game(reason: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CROUPIER, "end-game", game.game_id, "--reason", reason, "--address", address],
            capture_output=True,
            text=True,
            timeout=60,
            env=CONFIGURED,
        )

    assert end_game("nobody at the table").returncode == 0
    again = end_game("load test leftover")
    assert again.returncode == 1
    assert "already ended by an earlier end-game" in again.stderr, again.stderr
