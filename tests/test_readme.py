"""The README stays true: its client snippet runs against a real server."""

from __future__ import annotations

import contextlib
import io
import re
import time
from pathlib import Path

import pytest

from croupier.app.tokens import KeyRing, TokenSigner, mint_studio_token
from croupier.service.server import ServerThread
from croupier.service.store import open_store

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_quick_start_is_the_two_commands() -> None:
    block = README.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == [
        "make run",
        "make test",
    ]
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert "\nmake test\n" in ci


def test_the_client_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snippet = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    store = open_store(f"sqlite:///{tmp_path / 'readme.sqlite3'}")
    studio = b"readme-studio-secret-0123456789abcdef"
    # The snippet reads the studio credential from the environment, as the README says.
    monkeypatch.setenv("CROUPIER_STUDIO_KEY", mint_studio_token(studio, int(time.time()) + 600))
    server = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(b"readme-secret-0123456789abcdef-0123"),
        studio_keys=KeyRing(studio),
    )
    port = server.start()
    out = io.StringIO()
    namespace: dict[str, object] = {}
    try:
        with contextlib.redirect_stdout(out):
            code = compile(
                snippet.replace("127.0.0.1:50051", f"127.0.0.1:{port}"), "README", "exec"
            )
            exec(code, namespace)
    finally:
        server.stop(grace=None)
        store.close()
    printed = out.getvalue().splitlines()
    assert printed[0].startswith("commitment ") and len(printed[0].split()[1]) == 64
    assert "Draw from the stock" in printed[1]
    # What the snippet's comment says the first turn lists (korean: no stop on a first turn).
    comment = re.search(r"print\(\[m\.label for m in moves\.moves\]\)  # (\[.*?\])", snippet)
    assert comment is not None and printed[1].startswith(comment.group(1).rstrip("]"))
    assert printed[2].split()[0] == "3"
    # The draw's answer carried the seat's next moves (discards, melds…) and who is to act: the
    # same seat.
    labels, to_act = printed[3].rsplit(" [", 1)
    assert labels.startswith("['") and to_act == f"{namespace['seat']}]"


def test_the_curl_commands_run(tmp_path: Path) -> None:
    """The README's curl commands, verbatim but for the port, against a real HTTP listener, with
    the development credential where `make run` writes it (data/dev-studio-credential)."""
    import json
    import os
    import shutil
    import subprocess

    if shutil.which("curl") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("curl is missing (apt-get install curl)")
        pytest.skip("curl is missing (apt-get install curl)")
    section = README.split("## Over HTTP", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    assert block.count("curl -s http://127.0.0.1:8080/") == 2
    store = open_store(f"sqlite:///{tmp_path / 'readme.sqlite3'}")
    studio = b"readme-studio-secret-0123456789abcdef"
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "dev-studio-credential").write_text(
        mint_studio_token(studio, int(time.time()) + 600) + "\n"
    )
    server = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(b"readme-secret-0123456789abcdef-0123"),
        studio_keys=KeyRing(studio),
        http_address="127.0.0.1:0",
    )
    server.start()
    try:
        script = block.replace("127.0.0.1:8080", f"127.0.0.1:{server.http_port}")
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        decoder = json.JSONDecoder()
        answers, rest = [], done.stdout.strip()
        while rest:
            answer, end = decoder.raw_decode(rest)
            answers.append(answer)
            rest = rest[end:].strip()
        presets, game = answers
        assert {p["name"] for p in presets["presets"]} >= {"standard", "single-hand", "big-gin"}
        assert len(game["tokens"]) == 2 and len(game["commitment"]) == 64
        assert game["gameId"] and game["version"] == "2"  # int64 and uint64 are strings in JSON
        # The streaming example on that game (cut after 3 s: the stream stays open while the
        # game goes on): its events, then the seat's state, each in its frame.
        streaming = section.split("```sh\n")[2].split("```", 1)[0]
        assert streaming.count("curl -sN http://127.0.0.1:8080/") == 1
        script = streaming.replace("127.0.0.1:8080", f"127.0.0.1:{server.http_port}")
        script = script.replace("curl -sN", "curl -sN --max-time 3")
        seat = next(t for t in game["tokens"] if t.get("seat", 0) == 0)["token"]
        streamed = subprocess.run(
            ["bash", "-uo", "pipefail", "-c", script],
            cwd=tmp_path,
            capture_output=True,
            timeout=60,
            env={**os.environ, "GAME": game["gameId"], "SEAT": seat},
        )
    finally:
        server.stop(grace=None)
        store.close()
    assert streamed.returncode == 28, streamed.stderr  # curl's: the time was up, as meant
    frames, rest_bytes = [], streamed.stdout
    while rest_bytes:
        flags, size = rest_bytes[0], int.from_bytes(rest_bytes[1:5], "big")
        frames.append((flags, json.loads(rest_bytes[5 : 5 + size])))
        rest_bytes = rest_bytes[5 + size :]
    events = [m["event"] for flags, m in frames if flags == 0 and "event" in m]
    states = [m["state"] for flags, m in frames if flags == 0 and "state" in m]
    assert [int(e["version"]) for e in events] == [1, 2]
    # Whoever deals, someone is to act (seat 0's entry is {}: defaults are left out of JSON).
    assert states and states[0]["version"] == "2" and states[0]["toAct"]


def _backend_section() -> str:
    return README.split("## A studio's backend\n", 1)[1].split("\n## ", 1)[0]


def test_the_backend_stubs_command_makes_importable_stubs(tmp_path: Path) -> None:
    """The section's grpcio-tools command, run as written (the clone's path put in), makes stubs
    that a project of its own imports, without this checkout's package."""
    import shlex
    import subprocess
    import sys

    section = " ".join(_backend_section().split())
    command = re.search(r"`(python -m grpc_tools\.protoc [^`]*)`", section).group(1)
    root = Path(__file__).resolve().parent.parent
    argv = shlex.split(command.replace("/path/to/croupier", str(root)))
    argv = [sys.executable, *argv[1:]]
    import glob

    argv = [a for arg in argv for a in (sorted(glob.glob(arg)) if "*" in arg else [arg])]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # A fresh interpreter that finds these stubs first (-I: no checkout on the path, -S: no
    # site-packages' croupier), with the libraries the section names on the path.
    import google.protobuf
    import grpc

    libs = {str(Path(m.__file__).resolve().parents[2]) for m in (grpc, google.protobuf)}
    probe = (
        "import sys; sys.path[:0] = [sys.argv[1], *sys.argv[2:]];"
        "from croupier.v1 import service_pb2, service_pb2_grpc;"
        "assert service_pb2.__file__.startswith(sys.argv[1]), service_pb2.__file__;"
        "service_pb2_grpc.GameServiceStub"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe, str(tmp_path), *libs],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_the_backend_credits_the_final_settlement_once(tmp_path: Path) -> None:
    """The section's `credit`, on a Hoola table of two rounds played by bots: the wallet gets the
    final settlement, which the rounds' settlements add up to (crediting both would pay twice)."""
    import random
    import threading

    import grpc

    from croupier.service import bots
    from croupier.v1 import common_pb2, hoola_pb2, service_pb2, service_pb2_grpc

    snippet = re.search(r"```python\n(.*?)```", _backend_section(), re.S).group(1)
    namespace: dict[str, object] = {"service_pb2": service_pb2}
    exec(compile(snippet, "README", "exec"), namespace)
    store = open_store(f"sqlite:///{tmp_path / 'readme.sqlite3'}")
    studio_secret = b"readme-studio-secret-0123456789abcdef"
    studio = mint_studio_token(studio_secret, int(time.time()) + 600)
    server = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(b"readme-secret-0123456789abcdef-0123"),
        studio_keys=KeyRing(studio_secret),
    )
    port = server.start()
    players = ["ana", "ben", "cy"]
    wallet: dict[str, int] = {}
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = service_pb2_grpc.GameServiceStub(channel)
            game = stub.CreateGame(
                service_pb2.CreateGameRequest(
                    kind=common_pb2.GAME_KIND_HOOLA,
                    seats=3,
                    players=players,
                    overrides=service_pb2.Rules(hoola=hoola_pb2.HoolaRules(rounds=2)),
                    request_id="readme-backend",
                ),
                metadata=[("authorization", f"Bearer {studio}")],
            )
            credited: list[common_pb2.Settlement] = []
            credit = namespace["credit"]
            paid: set[str] = set()  # the wallet's record of the games it credited

            def follow() -> None:
                credited.append(
                    credit(  # type: ignore[operator]
                        stub,
                        [("authorization", f"Bearer {studio}")],
                        game.game_id,
                        players,
                        wallet,
                        paid,
                    )
                )

            watcher = threading.Thread(target=follow)
            watcher.start()
            result = bots.finish_game(
                channel, game.game_id, [t.token for t in game.tokens], rng=random.Random(7)
            )
            watcher.join(60)
            # The backend restarts and follows the game again: the stream ends at once (the
            # game is over), and the wallet is not paid twice.
            follow()
    finally:
        server.stop(grace=None)
        store.close()
    assert len(credited) == 2 and credited[0] == credited[1] == result.final
    assert result.final is not None and len(result.rounds) == 2
    assert wallet == {p: result.final.net[seat] for seat, p in enumerate(players)}
    assert sum(wallet.values()) == 0
    rounds = [sum(r.net[seat] for r in result.rounds) for seat in range(3)]
    assert rounds == list(result.final.net)


def test_the_settings_table_has_every_serve_option() -> None:
    """`Running it`'s table lists every option of `croupier serve`, each with its environment
    variable and its default on the same row (what `serve --help` shows)."""
    import click

    from croupier.service.cli import serve

    section = README.split("## Running it", 1)[1].split("\n## ", 1)[0]
    table = section.split("| setting | flag | environment | default |", 1)[1].split("\n\n", 1)[0]
    # setting | flag | environment | default
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in table.splitlines()
        if line.startswith("| ")
    ]
    for option in serve.params:
        if not isinstance(option, click.Option) or option.hidden:
            continue
        flag = next(o for o in option.opts if o.startswith("--"))
        row = [r for r in rows if f"`{flag}`" in r[1]]
        assert len(row) == 1, f"{flag} is not in the README's settings table"
        env = getattr(option, "env", None)
        assert env and f"`{env}`" in row[0][2], (flag, env)
        # The default it gives is the one `serve --help` shows (a word such as `off` or `none`
        # where the option has no value by default), backticks and the row's notes aside.
        if isinstance(option.show_default, str):
            default = row[0][3].replace("`", "")
            assert default.startswith(option.show_default), (flag, option.show_default, default)


def _json_names(kinds: frozenset[int]) -> set[str]:
    """The JSON names of the contract's fields of these protobuf types, in every message of every
    file of the contract (the service's and the replay file's, and every file they import)."""
    from google.protobuf.descriptor import Descriptor, FileDescriptor

    from croupier.v1 import replay_pb2, service_pb2

    files: dict[str, FileDescriptor] = {}
    names: set[str] = set()

    def read(file: FileDescriptor) -> None:
        if file.name in files or file.package != service_pb2.DESCRIPTOR.package:
            return
        files[file.name] = file
        for imported in file.dependencies:
            read(imported)
        for message in file.message_types_by_name.values():
            walk(message)

    def walk(message: Descriptor) -> None:
        names.update(f.json_name for f in message.fields if f.type in kinds)
        for nested in message.nested_types:
            walk(nested)

    read(service_pb2.DESCRIPTOR)
    read(replay_pb2.DESCRIPTOR)
    return names


def _convention(title: str) -> set[str]:
    """The names a bullet of "Conventions that matter outside Python" quotes."""
    section = README.split("Conventions that matter outside Python:", 1)[1]
    bullet = section.split(f"- **{title}**", 1)[1].split("\n- **", 1)[0]
    return set(re.findall(r"`([A-Za-z]+)`", bullet))


def test_every_64_bit_field_is_named_where_json_strings_are_said() -> None:
    """A JSON reader meets each 64-bit field as a string: the money a wallet credits (a
    settlement's `net`) among them, which the list once left out (a Java client read it as a
    number and failed)."""
    from google.protobuf.descriptor import FieldDescriptor

    sixty_four = frozenset(
        {
            FieldDescriptor.TYPE_INT64,
            FieldDescriptor.TYPE_UINT64,
            FieldDescriptor.TYPE_SINT64,
            FieldDescriptor.TYPE_FIXED64,
            FieldDescriptor.TYPE_SFIXED64,
        }
    )
    named = _convention("64-bit integers.")
    assert _json_names(sixty_four) - named == set()
    assert _json_names(frozenset({FieldDescriptor.TYPE_BYTES})) - _convention("Bytes") == set()
