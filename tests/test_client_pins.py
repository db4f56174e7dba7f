"""The TypeScript client builds with npm's packages only (clients/typescript/scripts/generate.mjs),
so its tools are pinned twice: in pyproject.toml for the service and in the client's package.json.
The two must name the same buf, or the service's `buf lint`/`buf breaking` and the client's
`buf generate` read the contract with different versions."""

from __future__ import annotations

import itertools
import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "clients" / "typescript"


def _python_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins: dict[str, str] = {}
    extras = project.get("optional-dependencies", {}).values()
    for requirement in [*project["dependencies"], *itertools.chain.from_iterable(extras)]:
        found = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^;\s]+)", requirement.strip())
        if found:
            pins[found[1].lower()] = found[2]
    return pins


def _npm_pins() -> dict[str, str]:
    package = json.loads((CLIENT / "package.json").read_text())
    return {**package.get("dependencies", {}), **package.get("devDependencies", {})}


def test_the_client_and_the_service_pin_one_buf() -> None:
    assert _npm_pins()["@bufbuild/buf"] == _python_pins()["buf-bin"]


def test_every_client_tool_is_pinned_exactly() -> None:
    """An exact version, as the lockfile has it: a range would let `npm install` move it."""
    loose = {name: v for name, v in _npm_pins().items() if not re.fullmatch(r"\d+\.\d+\.\d+", v)}
    assert not loose


def test_the_lockfile_agrees_with_the_pins() -> None:
    lock = json.loads((CLIENT / "package-lock.json").read_text())
    for name, version in _npm_pins().items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, name
