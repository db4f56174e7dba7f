"""The timeline a person reads: every turn, the hands, the table and the settlement, in text and in
one self-contained HTML file opened in headless Chromium (Debian's ``chromium``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from croupier.replays.format import to_binary
from croupier.replays.timeline import render_html, render_text, timeline

from .conftest import GAMES

CROUPIER = str(Path(sys.executable).parent / "croupier")
SCREENSHOTS = Path(os.environ.get("CROUPIER_SCREENSHOTS", "/tmp/croupier-screenshots"))


def chromium() -> str:
    """The browser; skips without one, except in CI, where `make test` installs it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "CI=true but chromium is not installed (make test installs Debian's chromium)"
            )
        pytest.skip("needs Debian's chromium (apt-get install chromium; make test does it)")
    return found


@pytest.mark.parametrize("name", sorted(GAMES))
def test_the_text_timeline_has_every_turn_and_the_settlement(replays, name: str) -> None:
    shown = timeline(replays[name])
    text = render_text(shown)
    commands = sum(1 for e in replays[name].events if e.command_payload)
    assert len(shown.steps) == commands + 1  # the deal, then one step per command
    for step in shown.steps:
        assert f"#{step.number} " in text
        assert len(step.hands) == replays[name].header.seats
    assert shown.settlements and all(
        f"seat {line.payer} pays seat {line.payee} {line.amount}" in text
        for s in shown.settlements
        for line in s.lines
    )
    for line in (item for s in shown.settlements for item in s.lines):
        assert all(factor.reason in text for factor in line.factors)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_the_html_timeline_renders_in_chromium(replays, name: str, tmp_path: Path) -> None:
    browser = chromium()
    shown = timeline(replays[name])
    page = tmp_path / f"{name}.html"
    page.write_text(render_html(shown), encoding="utf-8")
    assert "http" not in page.read_text().replace("http-equiv", "")  # self-contained: no network
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    rows = re.findall(r'<tr class="step" id="step-(\d+)">', dom)
    assert [int(r) for r in rows] == [s.number for s in shown.steps]
    lines = re.findall(
        r'<tr class="line"><td>seat (\d+)</td><td>seat (\d+)</td><td>(\d+)</td>', dom
    )
    expected = [
        (line.payer, line.payee, line.amount) for s in shown.settlements for line in s.lines
    ]
    if shown.final is not None and shown.final != shown.settlements[-1]:
        expected += [(line.payer, line.payee, line.amount) for line in shown.final.lines]
    assert [tuple(map(int, line)) for line in lines] == expected
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"{name}.png"
    subprocess.run(
        [browser, *flags, f"--screenshot={shot}", "--window-size=1280,1600", page.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_cli_shows_a_replay(replays, tmp_path: Path) -> None:
    path = tmp_path / "gin.replay"
    path.write_bytes(to_binary(replays["gin"]))
    text = subprocess.run([CROUPIER, "replay", "show", str(path)], capture_output=True, text=True)
    assert (
        text.returncode == 0 and "Final settlement" in text.stdout
    ) or "Settlement of round 1" in text.stdout
    out = tmp_path / "gin.html"
    written = subprocess.run(
        [CROUPIER, "replay", "show", str(path), "--html", str(out)], capture_output=True, text=True
    )
    assert written.returncode == 0 and out.read_text().startswith("<!doctype html>")
