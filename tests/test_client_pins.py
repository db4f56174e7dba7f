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


def _package() -> dict[str, dict[str, str]]:
    package: dict[str, dict[str, str]] = json.loads((CLIENT / "package.json").read_text())
    return package


def _npm_pins() -> dict[str, str]:
    package = _package()
    return {**package.get("dependencies", {}), **package.get("devDependencies", {})}


#: An exact version, and a caret range from one.
EXACT = r"\d+\.\d+\.\d+"
CARET = rf"\^{EXACT}"


def test_the_client_and_the_service_pin_one_buf() -> None:
    assert _npm_pins()["@bufbuild/buf"] == _python_pins()["buf-bin"]


def test_every_client_tool_is_pinned_exactly() -> None:
    """The tools that build and test the client (devDependencies): an exact version, as the
    lockfile has it; a range would let `npm install` move them. Its runtime packages, which a
    studio's page shares with it (@bufbuild/protobuf's descriptors, connect's types), are caret
    ranges from the version the lockfile pins and the client is tested with: an exact pin made
    npm nest a second copy under the client in a studio's project, and strict tsc then refused
    createClient(GameService, …) (the web review). The lockfile pins both."""
    package = _package()
    tools = package.get("devDependencies", {})
    assert tools and not {name: v for name, v in tools.items() if not re.fullmatch(EXACT, v)}
    shared = package.get("dependencies", {})
    assert shared and not {name: v for name, v in shared.items() if not re.fullmatch(CARET, v)}


def test_the_lockfile_agrees_with_the_pins() -> None:
    """The lockfile holds each package at its pin: the exact version, or a caret range's own."""
    lock = json.loads((CLIENT / "package-lock.json").read_text())
    for name, version in _npm_pins().items():
        locked = lock["packages"][f"node_modules/{name}"]["version"]
        assert locked == version.removeprefix("^"), name
