"""deploy/Dockerfile and .dockerignore: linted (hadolint), pinned base images, no anonymous
volume, a health check that follows CROUPIER_ADDRESS, and a build context of sources only.
Docker itself is not needed (nor run): these read the files."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
MAKEFILE = ROOT / "Makefile"
HADOLINT = Path(sys.executable).parent / "hadolint"
#: What the build context must never carry (the issue: a 137 MB .venv and the data).
LOCAL = [
    ".venv/bin/python",
    "data/croupier.sqlite3",
    "data/dev-studio-credential",
    "gen/croupier/v1/service_pb2.py",
    "build/typecheck/croupier",
    "node_modules/x/index.js",
    "tools/node_modules/x/index.js",
    ".git/HEAD",
    "tests/service/test_cli.py",
    "service/__pycache__/cli.cpython-311.pyc",
    "croupier.egg-info/PKG-INFO",
    "replays/corpus/README.md",
    "x.sqlite3.migrate.lock",
]


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def test_hadolint_passes() -> None:
    lint = subprocess.run(
        [str(HADOLINT), str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_base_images_are_pinned_to_an_exact_version() -> None:
    args = dict(
        rest.split("=", 1) for word, rest in instructions() if word == "ARG" and "=" in rest
    )
    images = [rest.split()[0] for word, rest in instructions() if word == "FROM"]
    assert len(images) == 2
    for image in images:
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
        # python:3.11.14-slim-bookworm: the Python patch release and the Debian release.
        assert re.fullmatch(r"python:3\.11\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?", image), image


def pins(words: str) -> dict[str, str]:
    """The ``NAME==VERSION`` words among ``words``, as {name: version}."""
    return dict(word.split("==", 1) for word in words.split() if "==" in word)


def test_the_build_installs_what_codegen_runs_as_make_does() -> None:
    """The image generates the stubs as ``make gen`` does, with the same tools: protoc's plugins
    (protoc-gen-connectrpc among them) and the google/rpc protos codegen.py copies. Without one,
    the build stopped at ``codegen.py gen`` (``protoc-gen-connectrpc: program not found``), and
    no test here runs the build to see it."""
    [build] = [rest for word, rest in instructions() if word == "RUN" and "codegen.py gen" in rest]
    image = pins(build.partition("codegen.py")[0])
    makefile = re.sub(r"\\\n", " ", MAKEFILE.read_text())
    [recipe] = re.findall(r"^\$\(GEN_STAMP\):.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    make = pins(recipe.partition("codegen.py")[0])
    assert "protoc-gen-connectrpc" in make
    assert image == make
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pinned = pins(" ".join(project["dependencies"] + project["optional-dependencies"]["dev"]))
    assert {name: pinned.get(name) for name in image} == image


def test_no_anonymous_volume() -> None:
    assert "VOLUME" not in {word for word, _ in instructions()}


def test_the_health_check_follows_croupier_address() -> None:
    [check] = [rest for word, rest in instructions() if word == "HEALTHCHECK"]
    assert "croupier.service.healthcheck" in check
    assert not re.search(r":\d{2,5}\b", check)  # no port of its own


def dockerignore() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def pattern(glob: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go's filepath.Match, plus ``**``) as a regular expression."""
    out = ""
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif glob.startswith("**", i):
            out, i = out + ".*", i + 2
        elif glob[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif glob[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(glob[i]), i + 1
    return re.compile(out)


def ignored(path: str) -> bool:
    """As Docker decides: the last pattern that matches the path, or one of its parent folders,
    wins; ``!`` lets back in."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    result = False
    for line in dockerignore():
        keep = line.startswith("!")
        regex = pattern(line.removeprefix("!").strip("/"))
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            result = not keep
    return result


def test_the_context_holds_what_the_build_copies_and_nothing_local() -> None:
    sources = [
        src
        for word, rest in instructions()
        if word == "COPY" and "--from" not in rest
        for src in rest.split()[:-1]
    ]
    assert "service" in sources and "pyproject.toml" in sources
    tracked = subprocess.run(
        ["git", "ls-files", *sources], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    needed = [p for p in tracked if not p.startswith("replays/corpus/")]
    assert len(needed) > 50
    assert [p for p in needed if ignored(p)] == []
    assert [p for p in LOCAL if not ignored(p)] == []
