"""The compatibility corpus (replays/corpus/): every recorded game keeps verifying, with both
verifiers, and the corpus holds every game kind with every preset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from croupier.contract.bindings import BINDINGS
from croupier.log import LOG_FORMATS, PLAIN_FORMAT
from croupier.replays.format import load, to_json
from croupier.replays.verify import verify

CORPUS = Path(__file__).resolve().parents[2] / "replays" / "corpus"
STANDALONE = CORPUS.parent / "standalone_verify.py"
FILES = sorted(CORPUS.rglob("*.replay"))
#: The folder of each log format's games (format 1's files came first, at the top).
FOLDERS = {PLAIN_FORMAT: CORPUS} | {
    n: CORPUS / f"log-format-{n}" for n in LOG_FORMATS if n != PLAIN_FORMAT
}


@pytest.mark.parametrize("log_format", LOG_FORMATS)
def test_the_corpus_holds_every_kind_and_preset_in_every_log_format(log_format: int) -> None:
    files = sorted(FOLDERS[log_format].glob("*.replay"))
    names = {path.stem for path in files}
    for binding in BINDINGS.values():
        for preset in binding.game.presets():
            assert f"{binding.game.kind}-{preset}" in names, (binding.game.kind, preset)
    for path in files:
        assert (load(path).header.log_format or PLAIN_FORMAT) == log_format, path


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_corpus_replay_verifies(path: Path, tmp_path: Path) -> None:
    replay = load(path)
    report = verify(replay)
    assert report.ok, report.lines()
    as_json = tmp_path / f"{path.stem}.json"
    as_json.write_text(to_json(replay))
    result = subprocess.run(
        [sys.executable, "-I", "-S", str(STANDALONE), str(as_json)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout
    assert json.loads(as_json.read_text())["header"]["engine_version"]


def test_an_unknown_engine_version_is_refused() -> None:
    replay = load(FILES[0])
    replay.header.engine_version = "0-unknown"
    assert verify(replay).divergence.check == "engine version"
