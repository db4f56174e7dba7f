"""The timeline a person reads: every turn, the hands, the table and the settlement, in text and in
one self-contained HTML file opened in headless Chromium (Debian's ``chromium``)."""

from __future__ import annotations

import dataclasses
import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from croupier.engine.koikoi import cards as hanafuda
from croupier.engine.settlement import Factor, Settlement, SettlementLine, net_of, stakes
from croupier.log import PLAIN_FORMAT
from croupier.replays.format import Replay, load, to_binary
from croupier.replays.timeline import (
    CAUTION,
    CLOCK_RULES,
    COMMON_CLOCK_RULES,
    DEALER_SHOWED_A_CARD,
    FINAL_SETTLEMENT,
    FORCED,
    FORFEIT_RULES,
    HASHES_SHOWED_CARDS,
    MOVES_FORCED,
    NOBODY_ATTENDED,
    NOT_LAID_OUT,
    NOT_OVER,
    OPENING_RULES,
    RESTARTED,
    TIME_MADE_DUE,
    UNCHECKED_PLAYER,
    card_name,
    cards_in_words,
    final_and_rounds,
    iso_time,
    offset,
    render_html,
    render_text,
    timeline,
)
from croupier.replays.verify import verify
from croupier.service.bots import time_outs
from croupier.v1 import service_pb2

from .conftest import GAMES, remake_chain

CROUPIER = str(Path(sys.executable).parent / "croupier")
#: Games recorded on the turn clock with an idle seat (tools/make_corpus.py's TIMED).
TIMED = sorted(
    (Path(__file__).resolve().parents[2] / "replays" / "corpus").rglob("*-timed*.replay")
)
CORPUS = Path(__file__).resolve().parents[2] / "replays" / "corpus"
ALL_CORPUS = sorted(CORPUS.rglob("*.replay"))
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
        f"seat {line.payer} pays seat {line.payee}: {stakes(line.amount)}" in text
        for s in shown.settlements
        for line in s.lines
    )
    for line in (item for s in shown.settlements for item in s.lines):
        assert all(cards_in_words(name, factor.reason) in text for factor in line.factors)


#: One corpus game of each kind, for the screenshots.
ONE_OF_EACH = [
    CORPUS / f"{n}.replay" for n in ("hoola-korean", "koikoi-nintendo-3", "gin-standard")
]
ONE_OF_EACH += [CORPUS / "log-format-2" / "rummy-standard-timed.replay"]
#: What reads as a Python repr in a timeline: a bare True/False/None, a [list] or a {'dict'}.
REPRS = re.compile(r"\b(?:True|False|None)\b|\[[^\]]*\]|\{'")


def visible_text(page: str) -> str:
    """The words an HTML page shows: no style sheet, no tags, entities decoded."""
    page = re.sub(r"<style>.*?</style>", "", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.mark.parametrize("path", ALL_CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_timeline_shows_a_python_repr(path: Path) -> None:
    shown = timeline(load(path))
    for form, text in (("text", render_text(shown)), ("HTML", visible_text(render_html(shown)))):
        found = [m.group(0) for m in REPRS.finditer(text)]
        assert not found, f"{form} timeline of {path.name} shows reprs: {found[:5]}"


@pytest.mark.parametrize("path", ALL_CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_page_names_who_made_each_step_as_the_text_does(path: Path) -> None:
    """Each turn's "who" cell says what the text's line does: a seat, the studio, or the service
    (the deal, what time made due), never a bare dash (the page once showed "—" for the deal)."""
    shown = timeline(load(path))
    row = r"<tr class='step' id='step-\d+'><td>\d+</td><td>.*?</td><td>(.*?)</td>"
    cells = re.findall(row, render_html(shown))
    lines = re.findall(r"^#\d+ (.*?): ", render_text(shown), flags=re.M)
    assert [html.unescape(cell) for cell in cells] == lines and lines


@pytest.mark.parametrize("path", ALL_CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_card_reads_alike(path: Path) -> None:
    """French-suited cards as ``Q♦``/``10♠``/``Joker`` in every game (no code such as ``QD``,
    ``KH1``, ``JK2``, no long name such as ``Ten of spades``); Hanafuda cards by their names."""
    replay = load(path)
    text = render_text(timeline(replay))
    steps = text.split("\n\n", 1)[1]  # the turns (the facts hold hex seeds)
    assert not re.findall(r"\b(?:[A2-9TJQK][SHDC][12]?|JK\d)\b", steps)
    assert not re.findall(r"\b(?:Ace|Two|Ten|Jack|Queen|King) of \w+", steps)
    if "koikoi" in path.name:
        assert "Pine crane" in steps or "Pine chaff 1" in steps
    else:
        assert re.search(r"(?:10|[A2-9JQK])[\u2660\u2665\u2666\u2663]", steps)


@pytest.mark.parametrize("path", ALL_CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_timeline_says_what_a_support_agent_needs(path: Path) -> None:
    """The verdict, the rules as a preset and what differs from it, the creation time and each
    step's time, who laid each meld, each round's settlement where the round ends."""
    replay = load(path)
    shown = timeline(replay)
    text = render_text(shown)
    assert shown.verification.verified and text.splitlines()[1].strip().startswith("Verified")
    created = replay.header.created_at_ms
    assert ("created", iso_time(created)) in shown.facts
    assert any(k == "rules" and v.startswith("preset ") for k, v in shown.facts)
    for step in shown.steps:
        assert f"    at {iso_time(step.at_ms)} ({offset(step.at_ms - created)})" in text
    stamps = [e.recorded_at_ms for e in replay.events if e.command_payload or e.version == 1]
    assert sorted(s.at_ms for s in shown.steps if s.move != TIME_MADE_DUE) == sorted(stamps)
    # Each round's settlement at the step that ended the round, in order; the final one last.
    settled = [s for step in shown.steps for _, s in step.settled]
    titles = [title for step in shown.steps for title, _ in step.settled]
    assert [s for s in settled if s is not shown.final or s in shown.settlements] or settled
    assert settled[: len(shown.settlements)] == list(shown.settlements)
    round_word = "hand" if "gin" in path.name else "round"  # Gin's events say hands
    assert titles[: len(shown.settlements)] == [
        f"Settlement of {round_word} {n}" for n in range(1, len(shown.settlements) + 1)
    ]
    if shown.final is not None and shown.final not in shown.settlements:
        assert titles[-1] == FINAL_SETTLEMENT and settled[-1] == shown.final
    # Who laid each meld: every meld on the table names its layer.
    melds = [text for step in shown.steps for label, text in step.table if "meld" in label]
    assert all("(laid by seat " in m for m in melds)
    if "koikoi" in path.name:
        assert any(
            label.startswith("captured by seat ") for s in shown.steps for label, _ in s.table
        )


def test_a_tampered_replay_is_shown_not_verified() -> None:
    replay = load(ONE_OF_EACH[2])
    replay.footer.rounds[0].lines[0].amount += 1
    shown = timeline(replay)
    assert (
        not shown.verification.verified and "settlement of round 1" in shown.verification.divergence
    )
    page = render_html(shown)
    assert "class='badge not-verified'" in page and "NOT verified" in page


def test_a_forged_decoded_copy_is_not_what_the_timeline_shows() -> None:
    """The timeline reads the hashed bytes: a decoded copy changed to another card is not shown
    (and the badge says the file is not verified)."""
    replay = load(ONE_OF_EACH[2])  # Gin: event 5 discards a card
    discarded = replay.events[4].body.gin.card_discarded.card
    real = card_name("gin", discarded.code)
    discarded.code = "AS" if discarded.code != "AS" else "KS"
    shown = timeline(replay)
    assert not shown.verification.verified
    (step,) = [s for s in shown.steps if s.number == 5]
    assert step.happened == (f"Card discarded: seat {replay.events[4].seat}; card {real}",)


def test_the_rules_name_the_nearest_preset_and_what_differs() -> None:
    replay = load(CORPUS / "hoola-korean.replay")
    facts = dict(timeline(replay).facts)
    assert facts["rules"] == "preset korean"
    differs = [v for k, v in timeline(replay).facts if k == "differs from the preset"]
    (rounds,) = [v for v in differs if v.startswith("rounds ")]
    assert (
        rounds
        == f"rounds {replay.header.rules.hoola.rounds} (the preset's now: 0, until a seat leaves)"
    )
    # Recorded before the options added later (docs/rules/hoola.md §1.3), the game played without
    # them: the timeline says so, where today's preset turns them on.
    assert "named set joker suits no (the preset's now: yes)" in differs


def test_card_names() -> None:
    assert [card_name("hoola", c) for c in ("QD", "TS", "AC", "JK1")] == [
        "Q♦",
        "10♠",
        "A♣",
        "Joker",
    ]
    assert [card_name("rummy", c) for c in ("KH1", "KH2", "JK4")] == ["K♥", "K♥", "Joker"]
    assert cards_in_words("gin", "Lay off Ten of spades on 7S 8S 9S") == "Lay off 10♠ on 7♠ 8♠ 9♠"
    assert cards_in_words("gin", "Take the discard") == "Take the discard"


@pytest.mark.parametrize("path", ONE_OF_EACH, ids=lambda p: p.stem)
def test_the_html_timeline_renders_in_chromium(path: Path, tmp_path: Path) -> None:
    """One corpus game of each kind in headless Chromium: its DOM (every step, the badge, each
    settlement's rows where its round ends) and a screenshot saved for a person to look at."""
    browser = chromium()
    shown = timeline(load(path))
    page = tmp_path / f"{path.stem}.html"
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
    assert re.search(r'<span class="badge verified" id="badge">Verified</span>', dom)
    rows = re.findall(r'<tr class="step" id="step-(\d+)">', dom)
    assert [int(r) for r in rows] == [s.number for s in shown.steps]
    lines = re.findall(
        r'<tr class="line"><td>seat (\d+)</td><td>seat (\d+)</td><td>(\d+) stakes?</td>', dom
    )
    expected = [
        (line.payer, line.payee, line.amount)
        for step in shown.steps
        for _, s in step.settled
        for line in s.lines
    ]
    assert expected and [tuple(map(int, line)) for line in lines] == expected
    # The first round's settlement sits right after the step that ended the round.
    first = next(s for s in shown.steps if s.settled)
    assert re.search(
        rf'<tr class="step" id="step-{first.number}">.*?</tr><tr class="settle">', dom, re.S
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"{path.stem}.png"
    shot.unlink(missing_ok=True)
    subprocess.run(
        [browser, *flags, f"--screenshot={shot}", "--window-size=1400,1800", page.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("path", ALL_CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_game_recorded_with_a_since_fixed_weakness_says_so(path: Path) -> None:
    """Before answering "another seat knew my cards", a support agent reads whether the game was
    recorded when that could happen: log format 1's hashes, the dealer from the deal's last
    card. A game recorded without either says neither."""
    replay = load(path)
    cautions = [text for name, text in timeline(replay).facts if name == CAUTION]
    format_1 = (replay.header.log_format or PLAIN_FORMAT) == PLAIN_FORMAT
    options = getattr(replay.header.rules, replay.header.rules.WhichOneof("game") or "", None)
    dealer_from_deal = (
        options is not None
        and "first_dealer_drawn" in options.DESCRIPTOR.fields_by_name
        and not options.first_dealer_drawn
    )
    assert (HASHES_SHOWED_CARDS in cautions) == format_1
    assert (DEALER_SHOWED_A_CARD in cautions) == dealer_from_deal
    assert len(cautions) == format_1 + dealer_from_deal


def test_the_cli_shows_a_replay(replays, tmp_path: Path) -> None:
    path = tmp_path / "gin.replay"
    path.write_bytes(to_binary(replays["gin"]))
    text = subprocess.run([CROUPIER, "replay", "show", str(path)], capture_output=True, text=True)
    assert (
        text.returncode == 0 and "Final settlement" in text.stdout
    ) or "Settlement of hand 1" in text.stdout
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
        line.startswith(FORCED)
        or " timed out: " in line
        or "forfeit" in line.lower()
        or RESTARTED in line  # a deadline recorded after an outage: no move forced
        or NOBODY_ATTENDED in before  # the end of a game nobody attended (the next test)
        for s in made_due
        for before, line in zip(["", *s.happened], s.happened, strict=False)
    )
    assert any(line.startswith(FORCED) for s in made_due for line in s.happened)
    # A deadline recorded after an outage restarted its turn: said once each, no move forced.
    restarts = [e for e in replay.events if e.type == "TurnRestarted"]
    assert text.count(RESTARTED) == len(restarts)
    # Said once per seat that became away (a seat that plays may time out once, not be away).
    away = {t.seat for _, t in time_outs(replay.events) if t.away}
    said = re.findall(r"Seat (\d) is away(?: from now on|, and with this rule set)", text)
    assert sorted(said) == [str(s) for s in sorted(away)]
    # Each forced move and each away seat points to the rules that decide it.
    rules = CLOCK_RULES[shown.kind]
    assert f"the moves below were forced ({rules})" in text
    assert all(
        f"({COMMON_CLOCK_RULES})" in line
        for line in text.splitlines()
        if "away from now on" in line
    )
    assert re.search(r"seat \d on the clock until \d\d:\d\d:\d\d\.\d{3} UTC \(bank \d+ ms", text)
    assert ("turn clock", next(v for k, v in shown.facts if k == "turn clock")) in shown.facts
    page = render_html(shown)
    assert "class='ev timeout'" in page and "class='ev forced'" in page
    assert "class='move tick'" in page and "class='clock'" in page


FORFEIT_FILES = sorted(CORPUS.rglob("*-forfeit.replay"))


@pytest.mark.parametrize("path", FORFEIT_FILES, ids=lambda p: p.stem)
def test_a_forfeit_is_said_as_one_not_as_an_away_seat_whose_moves_are_forced(path: Path) -> None:
    """With ``forfeit_when_away`` the time-out that makes a seat away forfeits it: the timeline
    says so, with the rules that decide it, and marks nothing after it forced (before: "its
    turns are forced as they begin until it sends a command", then "forced: Seat forfeited",
    what a support agent would have told the player)."""
    replay = load(path)
    shown = timeline(replay)
    forfeited = {t.seat for _, t in time_outs(replay.events) if t.away}
    assert forfeited
    text = render_text(shown)
    for seat in forfeited:
        assert (
            f"Seat {seat} is away, and with this rule set (forfeit_when_away) a seat that becomes "
            f"away forfeits: no move is forced, it plays no more ({CLOCK_RULES[shown.kind]})"
        ) in text
        assert f"Seat {seat} is away from now on" not in text
    lines = [line for step in shown.steps for line in step.happened]
    assert any(line.startswith("Seat forfeited") for line in lines), lines
    assert not any(line.startswith(FORCED + "Seat forfeited") for line in lines)


ABANDONED_FILES = sorted(CORPUS.rglob("*-abandoned.replay"))


@pytest.mark.parametrize("path", ABANDONED_FILES, ids=lambda p: p.stem)
def test_a_game_nobody_attended_ends_abandoned_with_no_forced_move(path: Path) -> None:
    """docs/rules/common.md §5.1: the time-out that ends a game nobody attends says so, the end
    that follows is not marked forced, and the settlement has no winner."""
    shown = timeline(load(path))
    last = [s for s in shown.steps if s.move == TIME_MADE_DUE][-1]
    assert NOBODY_ATTENDED in last.happened[-2] and MOVES_FORCED not in last.happened[-2]
    assert not last.happened[-1].startswith(FORCED)
    text = render_text(shown)
    assert text.count(NOBODY_ATTENDED) == 1 and "abandoned: winner(s) none" in text
    clock = next(v for k, v in shown.facts if k == "turn clock")
    assert "a table nobody attends ends, abandoned" in clock
    # Once every seat is away, turns take their whole time (§5.1): not said to be forced at once.
    assert "away as every seat is: its whole turn" in text
    assert "every seat is away: each turn takes its whole time" in text
    before_end = [s for s in shown.steps if s.move == TIME_MADE_DUE][-3:]
    assert not any("forced as they begin" in line for s in before_end for line in s.happened)


def test_the_corpus_holds_games_nobody_attended() -> None:
    assert {p.stem.split("-")[0] for p in ABANDONED_FILES} == {"gin", "rummy"}


def test_a_seats_player_is_said_to_be_unverified_under_the_verified_badge() -> None:
    """Player ids are no part of the hashed log, so a file's are the exporter's word alone: the
    page says so beside each one, under the green badge that covers everything else (before:
    the ids added to a file showed as verified as the rest)."""
    replay = load(CORPUS / "log-format-2" / "gin-standard.replay")
    replay.header.players.extend(["alice", "bob"])
    shown = timeline(replay)
    assert shown.verification.verified
    assert ("seat 0", f"player alice{UNCHECKED_PLAYER}") in shown.facts
    page = render_html(shown)
    assert html.escape(f"player bob{UNCHECKED_PLAYER}") in page


#: What an edited file's strings may hold to rewrite a terminal: go up four lines (to the badge),
#: clear it, print a green verdict, come back.
REWRITES_THE_BADGE = "\x1b[s\x1b[4A\r\x1b[2K  Verified (croupier replay verify)\x1b[u\nok"


def test_what_the_file_says_cannot_rewrite_the_readers_terminal(tmp_path: Path) -> None:
    """Player ids, the signature's key id and the header's game id are anyone's to write in a
    file; printed as they are, a control character among them moved the cursor up and wrote
    "Verified" over "NOT verified". The text timeline and both verifiers show them escaped."""
    replay = load(CORPUS / "log-format-2" / "gin-standard.replay")
    replay.footer.rounds[0].lines[0].amount += 1  # not verified
    replay.header.players.extend(["alice" + REWRITES_THE_BADGE, "bob"])
    replay.footer.signature.key_id = REWRITES_THE_BADGE
    text = render_text(timeline(replay))
    assert "\x1b" not in text and "\r" not in text and "\\x1b[4A" in text
    assert text.splitlines()[1].startswith("  NOT verified")
    assert all(line.isprintable() for line in text.splitlines())
    replay.header.game_id = REWRITES_THE_BADGE  # breaks the chain: quoted in the divergence
    assert all(line.isprintable() for line in verify(replay).lines())
    path = tmp_path / "edited.replay"
    path.write_bytes(to_binary(replay))
    for command in (
        [CROUPIER, "replay", "verify", str(path)],
        [sys.executable, "-I", str(CORPUS.parent / "standalone_verify.py"), str(path)],
    ):
        result = subprocess.run(command, capture_output=True, text=True)
        assert result.returncode == 1 and "FAIL" in result.stdout
        assert all(line.isprintable() for line in result.stdout.splitlines()), command
    replay = load(CORPUS / "log-format-2" / "gin-standard.replay")
    replay.footer.signature.key_id = REWRITES_THE_BADGE  # the signature note of a verified file
    path.write_bytes(to_binary(replay))
    for command in (
        [CROUPIER, "replay", "verify", str(path)],
        [sys.executable, "-I", str(CORPUS.parent / "standalone_verify.py"), str(path)],
    ):
        result = subprocess.run(command, capture_output=True, text=True)
        assert all(line.isprintable() for line in result.stdout.splitlines()), command


@pytest.mark.parametrize(
    ("name", "shown", "not_shown"),
    [
        ("gin-standard", "= deadwood difference", "× deadwood difference"),
        ("hoola-korean", "= rank 3", "× rank 3"),
        ("hoola-korean", "+ stop penalty", "× stop penalty"),
    ],
)
def test_a_payments_first_factor_sets_its_amount_and_the_others_work_on_it(
    name: str, shown: str, not_shown: str
) -> None:
    """Each factor is shown as it works (common.proto, SettlementLine): the first sets the
    amount (=), an added one adds (+), any other multiplies (×); before, the first read as a
    multiplier of nothing ("× deadwood difference 6")."""
    text = render_text(timeline(load(CORPUS / "log-format-2" / f"{name}.replay")))
    assert shown in text and not_shown not in text


@pytest.mark.parametrize("path", ALL_CORPUS, ids=lambda p: p.stem)
def test_the_page_shows_every_deck_the_seeds_made(path: Path) -> None:
    """A player who says the deal was rigged is shown each shuffle the verifier re-derived from
    the revealed seed and the client seeds (docs/shuffle.md): its round, its purpose and its
    cards in order, every one a rearrangement of what was shuffled, the first the deal's."""
    replay = load(path)
    shown = timeline(replay)
    report = verify(replay)
    assert report.ok and report.shuffles
    decks = [(k, v) for k, v in shown.facts if k.startswith("shuffled from the seeds")]
    assert len(decks) == len(report.shuffles)
    for (label, text), shuffle in zip(decks, report.shuffles, strict=True):
        assert sorted(shuffle.result) == sorted(shuffle.given)
        assert label.endswith(f"round {shuffle.round_no}, {shuffle.purpose!r}")
        assert text.startswith(f"{len(shuffle.result)} cards, in the order the shuffle put them: ")
        assert card_name(shown.kind, shuffle.result[0]) in text
    assert {s.purpose for s in report.shuffles} & {"deal", "first-dealer"}


RUMMY_FILES = sorted(CORPUS.rglob("rummy-*.replay"))


@pytest.mark.parametrize("path", RUMMY_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_rummy_opening_is_counted_against_the_threshold(path: Path) -> None:
    """ "My opening was refused but it was over 30": a refused opening is in no log, so the agent
    answers from how the accepted ones were counted. Each opening says what each of its melds was
    worth and the threshold the rule set asks, with the rule; a later lay-down, which the event
    records with an opening of 0, says nothing of an opening (before: "opening 0", read as an
    opening worth nothing)."""
    shown = timeline(load(path))
    threshold = load(path).header.rules.rummy.open_threshold
    laid = [h for s in shown.steps for h in s.happened if h.startswith("Melds laid down")]
    assert not any("opening 0" in h for h in laid)
    openings = [h for h in laid if "; opening " in h]
    assert bool(openings) == bool(laid)  # a seat's first lay-down is its opening
    assert all(h.endswith(f"at least {threshold} needed: {OPENING_RULES})") for h in openings)
    for line in openings:
        found = re.search(r"; opening (\d+) \((?:([\d + ]+), )?at least", line)
        assert found, line
        if found.group(2):  # several melds: their worth adds up to the opening
            assert sum(int(v) for v in found.group(2).split(" + ")) == int(found.group(1))


@pytest.mark.parametrize(
    "name",
    [
        "koikoi-nintendo-3",
        "gin-standard",
        "hoola-korean-timed-forfeit",
        "koikoi-nintendo-3-ended-by-studio",
    ],
)
def test_a_final_settlement_says_it_nets_the_rounds_not_a_payment_on_top(name: str) -> None:
    """ "I lost points I never owed": a match's page lists each round's payment and then the final
    one, which a player added to them. The final settlement says that it is the rounds' netted
    together (with their sums), in the text and on the page."""
    shown = timeline(load(CORPUS / "log-format-2" / f"{name}.replay"))
    assert shown.final is not None and shown.settlements
    relation = final_and_rounds(shown)
    rounds = len(shown.settlements)
    assert relation.startswith(f"in all: the {rounds} ") and "not owed on top of them" in relation
    nets = ", ".join(f"seat {s} {n:+d}" for s, n in enumerate(shown.final.net))
    assert f"netted together ({nets})" in relation
    text = render_text(shown)
    assert text.index(relation) > text.index(FINAL_SETTLEMENT)
    assert f"<p class='relation'>{html.escape(relation)}</p>" in render_html(shown)


def test_a_forfeits_final_settlement_says_it_is_not_the_rounds_netted() -> None:
    """A forfeit pays the match's result (docs/rules/koikoi.md, Forfeit), which need not net the
    rounds: a Koi-Koi seat that won a round 14 to 0 and then forfeited pays the least score, 1
    (seen in a played game). The final settlement then says that it is the game's result and
    what the rounds came to, so the agent tells the player which one is owed."""
    shown = timeline(load(CORPUS / "log-format-2" / "koikoi-nintendo-3.replay"))
    netted = [sum(s.net[seat] for s in shown.settlements) for seat in range(2)]
    loser = 0 if netted[0] > 0 else 1  # the seat ahead forfeits, and pays the least score
    line = SettlementLine(loser, 1 - loser, 1, (Factor("round_minimum", 1, "a forfeit"),), "")
    forfeit = Settlement(3, (1 - loser,), "FORFEIT", (line,), net_of(2, (line,)), ())
    relation = final_and_rounds(dataclasses.replace(shown, final=forfeit))
    assert relation.startswith(f"a forfeit's settlement is the game's result ({FORFEIT_RULES})")
    assert relation.endswith(f"come to seat 0 {netted[0]:+d}, seat 1 {netted[1]:+d}")


def test_a_game_settled_in_one_round_says_nothing_of_rounds() -> None:
    """Rummy's one round is its final settlement: nothing to relate."""
    shown = timeline(load(CORPUS / "log-format-2" / "rummy-standard.replay"))
    assert final_and_rounds(shown) == ""


@pytest.mark.parametrize("path", ALL_CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_an_added_factor_is_never_read_as_a_multiplier(path: Path) -> None:
    """A Hoola liability (stop and thank-you penalties, docs/rules/hoola.md §1.6) adds another
    loser's payment × its option, and its factor bears the option's name: written as recorded,
    ``+ stop penalty multiplier 12`` at a table that plays ×2 read as a wrong payment to a support
    agent holding the rules page. Every added factor reads as the amount it is, in the text and
    the HTML alike; the ones that multiply keep their option's name."""
    t = timeline(load(path))
    text, page = render_text(t), render_html(t)
    assert not re.search(r"\+ [a-z ]*multiplier \d", text)
    assert not re.search(r"\+ <b>[a-z ]*multiplier</b> \d", page)
    if path.name == "hoola-winjoy.replay" and path.parent == CORPUS:
        assert "+ stop penalty 12: failed stop: pays seat 4's 6 × 2" in text
        assert "+ <b>stop penalty</b> 12: failed stop: pays seat 4&#x27;s 6 × 2" in page
        assert "× unmelded multiplier 2: made no meld" in text


CLAIMED = re.compile(
    r"\(out of turn: a battle Hoola claim on seat (\d)'s discard, made while it was seat (\d)'s "
    r"turn to take; docs/rules/hoola\.md §1\.7\)$"
)


@pytest.mark.parametrize("path", ALL_CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_battle_claim_says_it_was_made_out_of_turn(path: Path) -> None:
    """A thank-you sent out of turn (battle Hoola, docs/rules/hoola.md §1.7) read as any
    thank-you: a player whose turn was passed over, or whose own thank-you lost the card, could
    not be shown from the page whose turn it was. Each claim says so, naming the discarder and
    the seat that was to take, neither of them the claimant; a thank-you in one's own turn, and
    every game without claims out of turn, says nothing of the kind."""
    replay = load(path)
    t = timeline(replay)
    claims = [(step, CLAIMED.search(step.move)) for step in t.steps if "out of turn" in step.move]
    battle = getattr(replay.header.rules.hoola, "out_of_turn_thank_you", False)
    assert battle or not claims
    for step, found in claims:
        assert found is not None, step.move
        discarder, turn = (int(g) for g in found.groups())
        assert step.seat not in (discarder, turn) and discarder != turn
    if path.name == "hoola-korean-nearest-claims.replay" and path.parent.name == "log-format-2":
        text = render_text(t)
        assert (
            "#30 seat 2: Thank you: take the discard and meld it with 9♦ 9♣ (out of turn: a "
            "battle Hoola claim on seat 3's discard, made while it was seat 0's turn to take; "
            "docs/rules/hoola.md §1.7)"
        ) in text
        # The claim's moment as a time of day, not Unix ms.
        assert "Claim made: seat 2; cards 9♦, 9♣; at 00:22:40.356 UTC" in text
        assert "at ms" not in text


@pytest.mark.parametrize(
    "path", sorted(CORPUS.rglob("gin-*.replay")), ids=lambda p: f"{p.parent.name}/{p.stem}"
)
def test_a_washed_hand_counts_no_deadwood(path: Path) -> None:
    """A Gin hand washed at the wall is scored on no deadwood (docs/rules/gin.md, "The wall"): its
    event holds 0 for each seat, which read as "deadwood 0, 0", both hands melded to nothing, to a
    player asking why a hand they held deadwood in paid nobody. A scored hand still says both."""
    ended = [
        line
        for step in timeline(load(path)).steps
        for line in step.happened
        if line.startswith("Hand ended")
    ]
    for line in ended:
        assert ("deadwood" in line) == ("outcome wash" not in line), line
    if path.name == "gin-single-hand.replay" and path.parent == CORPUS:
        assert "Hand ended: hand 1; outcome wash; points 0" in ended


def _seated(path: Path, seats: int) -> Replay:
    """The game of ``path`` with its table edited to ``seats`` seats, in the header and in the
    game's first (hashed) event, and its chain remade from the revealed seed: a file no game
    played by the rules reaches, which the engine cannot follow."""
    replay = load(path)
    first = replay.events[0]
    body = service_pb2.EventBody.FromString(first.payload)
    game = getattr(body, body.WhichOneof("body") or "")
    getattr(game, game.WhichOneof("event") or "").seats = seats
    first.payload = body.SerializeToString(deterministic=True)
    first.body.CopyFrom(body)
    replay.header.seats = seats
    remake_chain(replay)
    return replay


@pytest.mark.parametrize(
    ("name", "seats"),
    [("rummy-standard", 0), ("hoola-korean", 1), ("gin-standard-timed", 0)],
)
def test_a_file_the_engine_cannot_follow_is_shown_not_verified_not_a_traceback(
    tmp_path: Path, name: str, seats: int
) -> None:
    """`replay show` stopped with the engine's IndexError or ZeroDivisionError on such a file."""
    replay = _seated(CORPUS / "log-format-2" / f"{name}.replay", seats)
    shown = timeline(replay)
    assert not shown.verification.verified and "rule set" in shown.verification.divergence
    assert shown.steps == () and dict(shown.facts)["turns"] == NOT_LAID_OUT
    path = tmp_path / "edited.replay"
    path.write_bytes(to_binary(replay))
    ran = subprocess.run([CROUPIER, "replay", "show", str(path)], capture_output=True, text=True)
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    assert "NOT verified" in ran.stdout and NOT_LAID_OUT in ran.stdout


@pytest.mark.parametrize("redacted", [True, False], ids=["a-seats-copy", "complete"])
def test_a_game_in_play_is_not_laid_out_and_shows_no_hand(redacted: bool) -> None:
    """A copy of a game still in play (a seat's, its hidden cards left out, as `GetReplay` gives
    it during play; or every event, without the revealed seed): `replay show` failed on the
    former with an IndexError, and laid out every hand of the latter, a game its players were
    still playing."""
    replay = load(CORPUS / "log-format-2" / "hoola-korean.replay")
    del replay.events[-1]
    replay.footer.Clear()
    dealt = replay.events[1].body.hoola.round_dealt
    cards = [card_name("hoola", c.code) for hand in dealt.hands for c in hand.cards]
    if redacted:
        for event in replay.events:
            event.prev_hash = event.hash = ""
        replay.events[1].redacted = True
        replay.events[1].ClearField("payload")
    shown = timeline(replay)
    assert not shown.verification.verified
    assert "can be checked" in shown.verification.divergence
    assert shown.steps == () and dict(shown.facts)["turns"] == NOT_OVER
    text = render_text(shown)
    assert "hand of" not in text and not any(f" {card} " in f" {text} " for card in cards)
    assert "class='badge not-verified'" in render_html(shown)


#: A payment line as the text says it: payer, payee, then the amount with its unit.
PAYMENT = re.compile(r"^ +seat (\d+) pays seat (\d+): (\d+) stakes?(?: \(its share of \d+, .*\))?$")


@pytest.mark.parametrize("path", ALL_CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_payment_says_what_is_paid(path: Path) -> None:
    """ "Seat 0 pays seat 2 2" named no unit, and ran two numbers together. Every payment line
    reads "seat 0 pays seat 2: 2 stakes" (docs/rules/common.md, "Settlement records": every
    game pays in stakes), in the text and the page; each net says it is in stakes; and a game
    that scores points says once a settlement what a point is paid."""
    shown = timeline(load(path))
    text = render_text(shown)
    settled = [s for step in shown.steps for _, s in step.settled]
    paying = [line for line in text.splitlines() if " pays seat " in line and "  seat " in line]
    found = [PAYMENT.match(line) for line in paying]
    assert all(found), [line for line, m in zip(paying, found, strict=True) if not m]
    assert [tuple(map(int, m.groups())) for m in found if m] == [
        (line.payer, line.payee, line.amount) for s in settled for line in s.lines
    ]
    nets = [line.strip() for line in text.splitlines() if line.strip().startswith("net")]
    assert len(nets) == len(settled) and all(n.startswith("net, in stakes: ") for n in nets)
    points = re.findall(
        r"each point is paid as (\d+) stakes? \(the rule set's stake per point\)", text
    )
    assert len(points) == (0 if shown.kind == "hoola" else sum(1 for s in settled if s.lines))
    assert set(points) <= {str(shown.stake_per_point)}
    page = visible_text(render_html(shown))
    cells = re.findall(
        r"<tr class='line'><td>seat \d+</td><td>seat \d+</td><td>([^<]*)</td>", render_html(shown)
    )
    assert len(cells) == sum(len(s.lines) for s in settled)
    assert all(
        re.fullmatch(r"\d+ stakes?(?: \(its share of .*\))?", html.unescape(c)) for c in cells
    )
    assert page.count("net, in stakes: ") == len(settled)


def test_a_stake_is_said_in_the_singular_once() -> None:
    assert [stakes(n) for n in (0, 1, 2, -1)] == ["0 stakes", "1 stake", "2 stakes", "-1 stake"]


#: The per-seat fields of a round's or hand's end, as the text says them.
PER_SEAT = re.compile(r"; (hand values|deadwood) ((?:seat \d+: [^,;]+(?:, |$|(?=;)))+)")


@pytest.mark.parametrize("path", ALL_CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_hand_value_names_its_seat(path: Path) -> None:
    """ "hand values 16, 16, 7" left the agent to count seats to find whose value was whose. Each
    value of a round's end (Hoola's and Rummy's hand values, Gin's deadwood) is said beside its
    seat, every seat in order, with the value the event records; a Hoola seat that held no hand
    in the round says why instead of its recorded 0."""
    replay = load(path)
    shown = timeline(replay)
    ends = [
        h
        for s in shown.steps
        for h in s.happened
        if h.removeprefix(FORCED).startswith(("Round ended", "Hand ended"))
        and ("hand values" in h or "; deadwood" in h)
    ]
    recorded = []
    for stored in replay.events:
        body = getattr(stored.body, stored.body.WhichOneof("body") or "", None)
        which = body.WhichOneof("event") if body is not None and body.DESCRIPTOR.oneofs else None
        if which not in ("round_ended", "hand_ended"):
            continue
        event = getattr(body, which)
        for name in ("hand_values", "deadwood"):
            if name in event.DESCRIPTOR.fields_by_name and event.outcome != "WASH":
                recorded.append(list(getattr(event, name)))
    assert len(ends) == len(recorded)
    if path.stem in ("hoola-korean", "rummy-standard", "gin-standard"):
        assert ends  # a game with hands scored: the test is not vacuous
    for line, values in zip(ends, recorded, strict=True):
        found = PER_SEAT.search(line)
        assert found, line
        said = re.findall(r"seat (\d+): ([^,;]+)", found.group(2))
        assert [int(seat) for seat, _ in said] == list(range(len(values))), line
        for (_, value), number in zip(said, values, strict=True):
            assert value == str(number) or (number == 0 and not value.isdigit()), line
    if path.name == "hoola-korean-sit-out-7.replay" and path.parent == CORPUS:
        assert any("seat 3: sat out, seat 4: sat out" in line for line in ends)
    if path.name == "hoola-korean-timed-forfeit.replay":
        assert any("seat 3: out of the table (forfeited before this round)" in e for e in ends)


@pytest.mark.parametrize(
    "path", sorted(CORPUS.rglob("hoola-*.replay")), ids=lambda p: f"{p.parent.name}/{p.stem}"
)
def test_a_hoola_deal_says_nothing_of_stakes_nothing_raised(path: Path) -> None:
    """Every deal read "table multiplier 1; hoola streak 0": the engine's names for a stake
    nothing had raised. A deal says its stakes only where Hoola rounds before it raised them."""
    text = render_text(timeline(load(path)))
    assert "table multiplier" not in text and "hoola streak" not in text
    assert "stakes are ×" not in text  # no corpus game follows a Hoola round


def test_a_deal_after_hoola_rounds_says_its_stakes_in_words() -> None:
    """A round after Hoola rounds (docs/rules/hoola.md §1.8) says what they did to its stakes,
    and a payment that the table's stakes raised names the factor in words."""
    from croupier.engine.hoola.events import RoundDealt
    from croupier.replays.timeline import _describe, _settlement_lines

    dealt = RoundDealt(3, 1, (), "5S", (), 30, table_multiplier=4, hoola_streak=2)
    said = _describe("hoola", dealt)
    assert said == (
        "Round dealt: round 3; dealer 1; upcard 5♠; stock count 30; after 2 Hoola rounds in a "
        "row, this round's stakes are ×4 (docs/rules/hoola.md §1.8)"
    )
    after_one = _describe("hoola", RoundDealt(2, 0, (), "5S", (), 30, 1, 1))
    assert after_one.endswith(
        "after 1 Hoola round in a row, this round's stakes are ×1 (docs/rules/hoola.md §1.8)"
    )
    raised = Factor(
        "table_multiplier", 4, "round after 2 Hoola round(s) in a row (hoola_table_multiplier)"
    )
    line = SettlementLine(0, 1, 8, (Factor("rank", 2, "2nd among the losers"), raised), "")
    settled = _settlement_lines("hoola", Settlement(3, (1,), "STOP", (line,), net_of(2, (line,))))
    assert (
        "    × stakes raised after Hoola rounds 4: round after 2 Hoola round(s) in a row (hoola_table_multiplier)"
        in settled
    )


@pytest.mark.parametrize(
    "path", sorted(CORPUS.rglob("hoola-*.replay")), ids=lambda p: f"{p.parent.name}/{p.stem}"
)
def test_a_table_close_says_how_it_pays(path: Path) -> None:
    """A table's close read "+ table balance 2": what is a table balance, and who pays it to
    whom. Its lines read "= balance paid at the table's close 2" (the payment is that balance:
    no "+", which read as added to something unsaid), each with the two balances, and
    the settlement says once how the close pays them (docs/rules/hoola.md §1.8)."""
    shown = timeline(load(path))
    text = render_text(shown)
    assert "table balance" not in text
    closes = [
        s
        for step in shown.steps
        for _, s in step.settled
        if any(f.name == "table_balance" for line in s.lines for f in line.factors)
    ]
    rule = "at the table's close each seat that is down over its rounds pays what it is down to "
    assert text.count(rule) == len(closes)
    assert text.count("= balance paid at the table's close ") == sum(len(s.lines) for s in closes)
    if path.name == "hoola-korean.replay" and path.parent == CORPUS:
        assert (
            "= balance paid at the table's close 2: seat 0 is -2 over 1 round(s), seat 2 +7" in text
        )


@pytest.mark.parametrize("path", sorted(CORPUS.rglob("*.replay")), ids=lambda p: p.stem)
def test_the_demo_says_each_factor_as_the_timeline_does(path: Path) -> None:
    """`croupier demo` printed a payment's factors by their recorded names and signs
    (``table_balance 2``, ``+`` before a table's close's only factor) where the timeline says
    them in words: every payment of every game of the corpus reads the same in both."""
    from croupier.contract.convert import to_proto
    from croupier.service.bots import describe_settlement
    from croupier.v1 import common_pb2

    shown = timeline(load(path))
    text = render_text(shown)
    settlements = [s for step in shown.steps for _, s in step.settled]
    for settlement in settlements:
        demo = describe_settlement(to_proto(settlement, common_pb2.Settlement))
        payments = [line for line in demo if " → seat " in line]
        assert len(payments) == len(settlement.lines)
        for said in payments:
            factors = said.split("(", 1)[1].split(")")[0]
            assert "_" not in factors and factors.startswith("= "), said
            for factor in re.split(r" (?=[+×] )", factors):  # "= a 1 × b 2 + c 3"
                assert f"    {factor}: " in text, (factor, said)


#: The draw for the first dealer as the text says it.
DRAWN = re.compile(
    r"^First dealer drawn: (.*); seat (\d) drew (the lowest rank \(ace low\)|the lower rank "
    r"\(ace low\)|the earlier month), so seat (\d) deals first \((docs/rules/[^)]*)\)$"
)


@pytest.mark.parametrize("path", ALL_CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_first_dealer_draw_says_who_won_it_and_why(path: Path) -> None:
    """The cards turned for the first deal were listed bare, "dealer draws (Dealer draw: seat 0;
    card 8♠), …". The page says each seat's card, the seats tied that turned again, and which
    seat drew the card the game's rule makes the dealer, with the rule: the deal's own dealer,
    and the lowest (earliest) of the last cards turned."""
    replay = load(path)
    shown = timeline(replay)
    text = render_text(shown)
    assert "Dealer draw" not in text and "dealer draws" not in text
    lines = [h for s in shown.steps for h in s.happened if h.startswith("First dealer drawn")]
    drawn = [e for e in replay.events if _draws(e)]
    assert len(lines) == len(drawn)
    for line, event in zip(lines, drawn, strict=True):
        found = DRAWN.match(line)
        assert found, line
        turned, seat, _, dealer, rules = found.groups()
        deal = _dealt(event)
        assert int(seat) == int(dealer) == deal.dealer
        assert rules in (
            "docs/rules/hoola.md §1.1",
            "docs/rules/rummy.md §3",
            'docs/rules/gin.md, "Deal and first dealer"',
            "docs/rules/koikoi.md §2.2",
        )
        cards = [(d.seat, card_name(shown.kind, d.card.code)) for d in deal.dealer_draws]
        assert re.findall(r"seat (\d) turned ([^,;(]+?)(?: \(month \d+\))?(?=,|;|$)", turned) == [
            (str(s), c) for s, c in cards
        ]
        assert ("so they turned again" in turned) == (len(cards) > len(deal.hands))
        # The rule, applied here apart: the last turn (the seats in order, from the end) has the
        # dealer's card strictly lowest (Koi-Koi: the earliest month).
        last = [deal.dealer_draws[-1]]
        for draw in reversed(deal.dealer_draws[:-1]):
            if draw.seat >= last[0].seat:
                break
            last.insert(0, draw)
        order = (
            hanafuda.month if shown.kind == "koikoi" else (lambda c: "A23456789TJQK".index(c[0]))
        )
        mine = [order(d.card.code) for d in last if d.seat == deal.dealer]
        others = [order(d.card.code) for d in last if d.seat != deal.dealer]
        assert len(mine) == 1 and others and all(mine[0] < o for o in others), line
    if path.name == "gin-standard-corners.replay":
        assert any("seat 0 and seat 1 drew the same rank, so they turned again" in h for h in lines)


def _dealt(stored: Any) -> Any:
    """The deal a stored event holds (its oneof member), or None."""
    body = getattr(stored.body, stored.body.WhichOneof("body") or "", None)
    which = body.WhichOneof("event") if body is not None and body.DESCRIPTOR.oneofs else None
    return getattr(body, which) if which in ("round_dealt", "hand_dealt") else None


def _draws(stored: Any) -> bool:
    deal = _dealt(stored)
    return deal is not None and len(deal.dealer_draws) > 0


def test_a_draw_that_does_not_make_the_dealer_says_so() -> None:
    """A file that is not verified may name a dealer the cards turned do not make: the page says
    so rather than that the named seat won the draw."""
    from croupier.engine.shared import DealerDraw
    from croupier.replays.timeline import first_dealer_drawn

    class Dealt:
        dealer = 1
        dealer_draws = (DealerDraw(0, "AS"), DealerDraw(1, "KH"))

    said = first_dealer_drawn("gin", Dealt())
    assert "seat 1 drew" not in said
    assert said.endswith(
        "the file names seat 1 the first dealer, which these cards do not make "
        '(docs/rules/gin.md, "Deal and first dealer")'
    )
    Dealt.dealer = 0
    assert "; seat 0 drew the lower rank (ace low), so seat 0 deals first" in first_dealer_drawn(
        "gin", Dealt()
    )
