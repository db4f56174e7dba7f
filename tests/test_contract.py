"""The contract in proto/: lint-clean, not broken against main, and the stubs generated from it."""

from __future__ import annotations

import filecmp
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUF = Path(sys.executable).parent / "buf"


def load_codegen():
    spec = importlib.util.spec_from_file_location("codegen", ROOT / "service" / "codegen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_stubs_are_up_to_date(tmp_path: Path) -> None:
    """The installed stubs equal what proto/ generates now (run `make gen` if this fails)."""
    import croupier.v1

    fresh = load_codegen().generate(tmp_path)
    installed = Path(croupier.v1.__file__).parent
    assert fresh, "nothing was generated"
    for path in fresh:
        twin = installed / path.name
        assert twin.exists(), f"{path.name} is missing from the installed stubs: run make gen"
        assert filecmp.cmp(path, twin, shallow=False), f"{path.name} is stale: run make gen"
    assert {p.name for p in fresh} == {p.name for p in installed.iterdir() if p.is_file()}


def test_buf_lint() -> None:
    result = subprocess.run([str(BUF), "lint"], cwd=ROOT / "proto", capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


RELEASED = ROOT / "proto" / "released.binpb"


def _breaking_against(against: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BUF), "breaking", "--against", against],
        cwd=ROOT / "proto",
        capture_output=True,
        text=True,
    )


def test_buf_breaking_against_the_last_release() -> None:
    """Field numbers are forever: the contract must not break the last released one (an image of
    it is kept in proto/released.binpb, rebuilt at each release)."""
    assert RELEASED.exists(), "proto/released.binpb is missing"
    result = _breaking_against(str(RELEASED))
    assert result.returncode == 0, result.stdout + result.stderr


def test_buf_breaking_against_the_merge_base() -> None:
    """On a branch, the contract must not break what main had when the branch left it."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    base, head = git("merge-base", "HEAD", "main"), git("rev-parse", "HEAD")
    if not base or base == head:
        pytest.skip("on main itself (or no main): the last release is the reference")
    if not git("rev-parse", "--verify", "--quiet", f"{base}:proto/buf.yaml"):
        pytest.skip("the merge base has no contract yet")
    result = _breaking_against(f"{ROOT}/.git#ref={base},subdir=proto")
    assert result.returncode == 0, result.stdout + result.stderr


# --- every game's records and messages match, field for field ---------------------------------


def _bindings():
    from croupier.contract.bindings import BINDINGS

    return sorted(BINDINGS.values(), key=lambda b: b.kind)


@pytest.mark.parametrize("binding", _bindings(), ids=lambda b: b.field)
def test_each_game_kind_is_bound_field_for_field(binding) -> None:
    """Rules, commands, events and the view of every game convert by name: each record has the
    message's fields, and every oneof member of the contract has its record."""
    import dataclasses

    from croupier.v1 import service_pb2

    def fields(cls) -> set[str]:
        return {f.name for f in dataclasses.fields(cls)}

    assert fields(binding.rules_cls) == {f.name for f in binding.rules_msg.DESCRIPTOR.fields}
    assert fields(binding.view_cls) == {f.name for f in binding.view_msg.DESCRIPTOR.fields}
    for classes, message, oneof in (
        (binding.commands, binding.command_msg, "move"),
        (binding.events, binding.event_msg, "event"),
    ):
        members = {f.name: f.message_type for f in message.DESCRIPTOR.oneofs_by_name[oneof].fields}
        assert set(classes) == set(members)
        for name, cls in classes.items():
            assert fields(cls) == {f.name for f in members[name].fields}, name
    for wrapper in (
        service_pb2.Rules,
        service_pb2.Command,
        service_pb2.View,
        service_pb2.EventBody,
    ):
        assert binding.field in wrapper.DESCRIPTOR.fields_by_name


@pytest.mark.parametrize("binding", _bindings(), ids=lambda b: b.field)
def test_every_event_and_command_of_random_games_reads_back_as_it_was_written(binding) -> None:
    """Written as the log stores it and read back, an engine event (and a command) is the same
    record: the service folds a game from its log into the state it had live, and presents the
    events it has just decided without reading their bytes back."""
    import random

    from croupier.engine.game import Context, InvalidRules, fold
    from croupier.engine.shuffle import Seeds
    from croupier.v1 import service_pb2

    game, seen = binding.game, 0
    for number in range(6):
        rng = random.Random(number)
        seeds = Seeds(rng.randbytes(32), (f"client-{number}",))
        preset = rng.choice(sorted(game.presets()))
        try:  # more seats where the game has them, else two
            seats = rng.choice((3, 4))
            rules = game.rules_for(preset, {}, seats)
        except InvalidRules:
            seats = 2
            rules = game.rules_for(preset, {}, seats)
        events = game.start(rules, seats, seeds)
        state = fold(game, events)
        for _ in range(400):
            if game.is_finished(state):
                break
            movers = [(s, c) for s in game.to_act(state) for c in game.legal_commands(state, s)]
            seat, command = rng.choice(movers)
            written = binding.command_to_proto(command).SerializeToString(deterministic=True)
            assert binding.command_from_proto(service_pb2.Command.FromString(written)) == command
            new = game.decide(state, seat, command, Context(seeds))
            state = fold(game, new, state)
            events += new
        for event in events:
            body = binding.event_to_body(event).SerializeToString(deterministic=True)
            assert binding.event_from_body(service_pb2.EventBody.FromString(body)) == event
            seen += 1
    assert seen > 200


def test_gin_forced_lay_off_best_crosses_the_contract() -> None:
    """``forced_lay_off_best``, an option added later (GinRules field 15): shown to a client with
    every option, written into a recorded rule set only when set, and read back; a rule set
    recorded before it (the field absent) plays with it off, not with the preset's value."""
    import dataclasses

    from croupier.contract import convert
    from croupier.contract.bindings import BY_NAME
    from croupier.engine.gin.events import MatchStarted
    from croupier.engine.gin.rules import STANDARD
    from croupier.v1 import gin_pb2, service_pb2

    gin = BY_NAME["gin"]
    shown = gin.rules_to_proto(STANDARD).gin
    assert shown.HasField("forced_lay_off_best") and shown.forced_lay_off_best
    assert convert.to_proto(STANDARD, gin_pb2.GinRules).forced_lay_off_best
    before = dataclasses.replace(STANDARD, forced_lay_off_best=False)
    assert not convert.to_proto(before, gin_pb2.GinRules).HasField("forced_lay_off_best")
    for rules in (STANDARD, before):
        event = MatchStarted(rules, 2, "c0ffee", (), "test")
        body = gin.event_to_body(event).SerializeToString(deterministic=True)
        assert gin.event_from_body(service_pb2.EventBody.FromString(body)) == event
    asked = service_pb2.Rules(gin=gin_pb2.GinRules(forced_lay_off_best=False))
    assert gin.overrides(asked) == {"forced_lay_off_best": False}
    assert gin.game.rules_for("standard", gin.overrides(asked), 2) == before
    recorded = service_pb2.Rules(gin=convert.to_proto(before, gin_pb2.GinRules))
    assert gin.game.rules_for("", gin.recorded_overrides(recorded), 2) == before


# --- the include roots of clients in other languages ------------------------------------------


def test_google_rpc_protos_are_generated_from_the_pinned_package(tmp_path: Path) -> None:
    """gen/googleapis/ holds google/rpc/{status,error_details,code}.proto as the pinned
    googleapis-common-protos ships them (`make gen`; never committed)."""
    fresh = load_codegen().copy_google_rpc(tmp_path)
    installed = ROOT / "gen" / "googleapis" / "google" / "rpc"
    assert {p.name for p in fresh} == {"status.proto", "error_details.proto", "code.proto"}
    for path in fresh:
        assert filecmp.cmp(path, installed / path.name, shallow=False), f"{path.name}: make gen"
    tracked = subprocess.run(
        ["git", "ls-files", "gen"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert tracked == "", "generated files are not committed"


def test_buf_generates_a_client_of_the_contract_and_its_error_details(tmp_path: Path) -> None:
    """The README's buf.gen.yaml inputs (proto/ and gen/googleapis/) resolve together: a plugin
    gets our messages and google.rpc's (here mypy-protobuf's, standing for any language's)."""
    readme = (ROOT / "README.md").read_text()
    template = readme.split("```yaml\n", 1)[1].split("```", 1)[0]
    inputs = template.split("inputs:\n", 1)[1].split("plugins:", 1)[0]
    assert "directory: proto" in inputs and "directory: gen/googleapis" in inputs
    plugin = Path(sys.executable).parent / "protoc-gen-mypy"
    ours = tmp_path / "buf.gen.yaml"
    ours.write_text(
        f"version: v2\ninputs:\n{inputs}plugins:\n  - local: {plugin}\n    out: {tmp_path / 'out'}\n"
    )
    result = subprocess.run(
        [str(BUF), "generate", "--template", str(ours)], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "out"
    assert "class ErrorInfo" in (out / "google/rpc/error_details_pb2.pyi").read_text()
    assert "class Status" in (out / "google/rpc/status_pb2.pyi").read_text()
    assert "class GetViewResponse" in (out / "croupier/v1/service_pb2.pyi").read_text()
