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


def test_buf_breaking_against_main() -> None:
    """Field numbers are forever: the contract must not break what main has published."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    has_main = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "main:proto/buf.yaml"],
                              cwd=ROOT, capture_output=True).returncode == 0
    if not has_main:
        pytest.skip("main has no contract yet")
    result = subprocess.run([str(BUF), "breaking", "--against", f"{ROOT}/.git#branch=main,subdir=proto"],
                            cwd=ROOT / "proto", capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
