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

from croupier.replays.format import load, to_binary
from croupier.replays.timeline import FORCED, TIME_MADE_DUE, render_html, render_text, timeline
from croupier.service.bots import time_outs

from .conftest import GAMES

CROUPIER = str(Path(sys.executable).parent / "croupier")
#: Games recorded on the turn clock with an idle seat (tools/make_corpus.py's TIMED).
TIMED = sorted(
    (Path(__file__).resolve().parents[2] / "replays" / "corpus").rglob("*-timed*.replay")
)
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


@pytest.mark.parametrize("path", TIMED, ids=lambda p: p.stem)
def test_the_timeline_shows_time_outs_forced_moves_and_away_seats(path: Path) -> None:
    """Each batch that time made due is a step of the service's: which seat timed out, at
    which deadline, how late it was recorded; the moves after it are marked forced; the seat
    becoming away is said once; the seats on the clock are listed with their deadlines."""
    replay = load(path)
    shown = timeline(replay)
    ticks = {e.command_id for e in replay.events if e.command_id.startswith("tick:")}
    made_due = [s for s in shown.steps if s.move == TIME_MADE_DUE]
    assert ticks and len(made_due) == len(ticks)
    assert all(s.seat is None for s in made_due)
    text = render_text(shown)
    timed_out = re.findall(
        r"Seat (\d) timed out: its deadline was \d\d:\d\d:\d\d\.\d{3} UTC, recorded (-?\d+) ms "
        r"after it; the moves below were forced",
        text,
    )
    assert timed_out and all(int(late) >= 0 for _, late in timed_out)
    assert all(
        line.startswith(FORCED) or " timed out: " in line or "forfeit" in line.lower()
        for s in made_due
        for line in s.happened
    )
    assert any(line.startswith(FORCED) for s in made_due for line in s.happened)
    # Said once per seat that became away (a seat that plays may time out once, not be away).
    away = {t.seat for _, t in time_outs(replay.events) if t.away}
    assert sorted(re.findall(r"Seat (\d) is away from now on", text)) == [
        str(s) for s in sorted(away)
    ]
    assert re.search(r"seat \d on the clock until \d\d:\d\d:\d\d\.\d{3} UTC \(bank \d+ ms", text)
    assert ("turn clock", next(v for k, v in shown.facts if k == "turn clock")) in shown.facts
    page = render_html(shown)
    assert "class='ev timeout'" in page and "class='ev forced'" in page
    assert "class='move tick'" in page and "class='clock'" in page
