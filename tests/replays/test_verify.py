"""Replay files: both forms convert exactly, every game verifies, and every kind of tampering is
caught at the right place (the issue's tampering list)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from croupier.engine.koikoi import cards as hanafuda
from croupier.replays.format import (
    Replay,
    ReplayFormatError,
    from_binary,
    from_json,
    load,
    parse,
    to_binary,
    to_json,
)
from croupier.replays.verify import Divergence, first_difference, verify
from croupier.v1 import service_pb2

from .conftest import GAMES, remake_chain

CROUPIER = str(Path(sys.executable).parent / "croupier")


def tampered(replay: Replay) -> Replay:
    return copy.deepcopy(replay)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_every_game_verifies(replays, name: str) -> None:
    report = verify(replays[name])
    assert report.ok, report.lines()
    assert len(report.checks) == 5 and "byte for byte" in report.checks[3]


@pytest.mark.parametrize("name", sorted(GAMES))
def test_binary_and_json_convert_exactly(replays, name: str) -> None:
    binary = to_binary(replays[name])
    text = to_json(from_binary(binary))
    assert to_binary(from_json(text)) == binary
    assert to_json(from_json(text)) == text
    assert '"header"' in text and '"footer"' in text and replays[name].header.game_id in text


def test_a_flipped_byte_in_an_event_is_found_at_that_event(replays) -> None:
    replay = tampered(replays["hoola"])
    event = replay.events[4]
    payload = bytearray(event.payload)
    payload[len(payload) // 2] ^= 0x01
    event.payload = bytes(payload)
    report = verify(replay)
    assert not report.ok and report.divergence.event == 5
    assert report.divergence.check == "chain hash"


def test_reordered_events_are_found(replays) -> None:
    replay = tampered(replays["koikoi"])
    replay.events[6], replay.events[7] = replay.events[7], replay.events[6]
    report = verify(replay)
    assert (report.divergence.event, report.divergence.check) == (7, "event numbering")
    # Renumbered to hide the swap, the chain breaks at the same place.
    replay.events[6].version, replay.events[7].version = 7, 8
    report = verify(replay)
    assert (report.divergence.event, report.divergence.check) == (7, "chain link (prev_hash)")


def test_a_dropped_last_event_is_found(replays) -> None:
    replay = tampered(replays["gin"])
    replay.events.pop()
    report = verify(replay)
    assert (report.divergence.event, report.divergence.check) == (0, "last hash in the footer")


def test_a_changed_seed_or_client_seed_is_found(replays) -> None:
    replay = tampered(replays["rummy"])
    replay.footer.server_seed = "00" * 32
    assert verify(replay).divergence.check == "commitment"
    replay = tampered(replays["rummy"])
    replay.header.client_seeds[0] = "another seed"
    report = verify(replay)
    # The game's first event recorded the real client seeds: the header is named as what was
    # edited (before: event 1, as the engine started from the header's seeds made it otherwise).
    real = list(replays["rummy"].header.client_seeds)
    assert (report.divergence.event, report.divergence.check) == (
        0,
        "header client_seeds, against the game's first event (hashed)",
    )
    assert (report.divergence.expected, report.divergence.found) == (
        str(real),
        str(["another seed", *real[1:]]),
    )


def test_a_changed_settlement_is_found(replays) -> None:
    replay = tampered(replays["hoola"])
    replay.footer.settlement.notes.append("forged")
    assert verify(replay).divergence.check == "final settlement"
    replay = tampered(replays["rummy"])
    replay.footer.rounds[0].net[0] += 1
    divergence = verify(replay).divergence
    assert (divergence.check, divergence.field) == ("settlement of round 1", "net[0]")
    assert int(divergence.found) == int(divergence.expected) + 1
    replay = tampered(replays["gin"])
    replay.footer.settlement.lines[0].amount += 1
    divergence = verify(replay).divergence
    assert (divergence.check, divergence.field) == ("final settlement", "lines[0].amount")
    assert str(divergence).startswith("the replay: final settlement, at lines[0].amount: expected")
    replay = tampered(replays["koikoi"])
    replay.footer.final_state_digest = "ab" * 32
    assert verify(replay).divergence.check == "final state digest"


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_any_flipped_byte_of_any_event_is_found(replays, data) -> None:
    name = data.draw(st.sampled_from(sorted(GAMES)))
    replay = tampered(replays[name])
    index = data.draw(st.integers(0, len(replay.events) - 1))
    event = replay.events[index]
    payload = bytearray(event.payload)
    payload[data.draw(st.integers(0, len(payload) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    event.payload = bytes(payload)
    report = verify(replay)
    assert not report.ok and report.divergence.event == index + 1


def test_the_cli_verifies_and_converts(replays, tmp_path: Path) -> None:
    good = tmp_path / "game.replay"
    good.write_bytes(to_binary(replays["gin"]))
    ok = subprocess.run([CROUPIER, "replay", "verify", str(good)], capture_output=True, text=True)
    # The corpus's files are not signed: consistent, not authenticated (test_signing has both).
    last = ok.stdout.strip().splitlines()[-1]
    assert ok.returncode == 0 and last.startswith("verified, not authenticated"), ok.stdout
    as_json = tmp_path / "game.json"
    converted = subprocess.run(
        [CROUPIER, "replay", "convert", str(good), str(as_json)], capture_output=True, text=True
    )
    assert converted.returncode == 0 and to_binary(load(as_json)) == good.read_bytes()
    # The extension in capitals is JSON too (it was written binary).
    shouted = tmp_path / "GAME.JSON"
    subprocess.run([CROUPIER, "replay", "convert", str(good), str(shouted)], check=True)
    assert shouted.read_text(encoding="utf-8") == as_json.read_text(encoding="utf-8")
    bad = tampered(replays["gin"])
    bad.footer.server_seed = "11" * 32
    broken = tmp_path / "broken.json"
    broken.write_text(to_json(bad))
    failed = subprocess.run(
        [CROUPIER, "replay", "verify", str(broken)], capture_output=True, text=True
    )
    assert failed.returncode == 1 and "FAIL the replay: commitment" in failed.stdout
    garbage = tmp_path / "garbage.replay"
    garbage.write_bytes(b"\x05abc")
    rejected = subprocess.run(
        [CROUPIER, "replay", "verify", str(garbage)], capture_output=True, text=True
    )
    # Not a replay: 2, as the standalone verifier says it, apart from a failed check's 1.
    assert rejected.returncode == 2 and "cut off" in rejected.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b'{"header": "\xff\xfe"}', "neither a JSON replay"),  # not UTF-8
        (b"[1, 2]", "not a JSON replay"),
        (b"{not json", "neither a JSON replay"),
    ],
    ids=["not-utf-8", "an-array", "broken-json"],
)
@pytest.mark.parametrize("command", ["verify", "show", "convert"])
def test_text_that_is_not_a_replay_is_one_line_in_every_replay_command(
    tmp_path: Path, content: bytes, said: str, command: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    out = [str(tmp_path / "out.replay")] if command == "convert" else []
    ran = subprocess.run(
        [CROUPIER, "replay", command, str(path), *out], capture_output=True, text=True
    )
    assert ran.returncode != 0 and "Traceback" not in ran.stderr, ran.stderr
    assert said in ran.stderr and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    if command == "verify":  # not a replay, apart from a failed check's 1
        assert ran.returncode == 2


@pytest.mark.parametrize("form", ["json", "binary"])
def test_a_replay_saved_with_a_byte_order_mark_still_reads(replays, form: str) -> None:
    """Editors on some systems write a UTF-8 text file with a byte order mark first."""
    replay = replays["gin"]
    data = to_json(replay).encode() if form == "json" else to_binary(replay)
    assert parse(b"\xef\xbb\xbf" + data) == parse(data) == replay
    assert verify(parse(b"\xef\xbb\xbf" + data)).ok


def _leaves(message: Message, path: str = "") -> list[tuple[str, Message, str]]:
    """Every set scalar field under ``message`` (repeated ones by index): its path, the message
    holding it and its name."""
    found = []
    for descriptor, value in message.ListFields():
        name = f"{path}.{descriptor.name}" if path else descriptor.name
        if descriptor.is_repeated:
            for index, item in enumerate(value):
                if isinstance(item, Message):
                    found += _leaves(item, f"{name}[{index}]")
        elif isinstance(value, Message):
            found += _leaves(value, name)
        elif isinstance(value, (int, str)) and not isinstance(value, bool):
            found.append((name, message, descriptor.name))
    return found


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_the_first_difference_of_two_events_is_the_field_changed(replays, data) -> None:
    """Any one scalar field of any decoded event changed: the verifier's difference names that
    field's path and both values (what a support agent reads in the FAIL line)."""
    name = data.draw(st.sampled_from(sorted(GAMES)))
    event = data.draw(st.sampled_from([e for e in replays[name].events if _leaves(e.body)]))
    changed = copy.deepcopy(event.body)
    leaves = _leaves(changed)
    path, holder, field = data.draw(st.sampled_from(leaves))
    before = getattr(holder, field)
    setattr(holder, field, before + 1 if isinstance(before, int) else before + "x")
    found = first_difference(event.body, changed)
    assert found is not None and found[0] == path, (found, path)
    assert found[1] != found[2]
    assert first_difference(event.body, copy.deepcopy(event.body)) is None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{}", 'it has no "header", no "events", no "footer"'),
        ('{"header": {}, "events": []}', 'it has no "footer"'),
    ],
)
def test_a_json_document_that_is_not_a_replay_says_what_it_lacks(text: str, said: str) -> None:
    """Before: "not a JSON replay: 'header'" (a Python KeyError's words)."""
    with pytest.raises(ReplayFormatError) as refused:
        from_json(text)
    assert str(refused.value).startswith(f"not a JSON replay: {said}")


def test_what_the_verifier_says_reads_in_one_line_for_a_person(replays) -> None:
    """A support agent reads these (the red badge repeats them): no protobuf text dump, no list
    of the message's every field."""
    replay = tampered(replays["hoola"])
    del replay.footer.rounds[-1]
    divergence = verify(replay).divergence
    assert divergence is not None and divergence.check.startswith("settlement of round")
    assert divergence.found == "none" and ", net seat 0 " in divergence.expected
    assert "factors" not in divergence.expected
    document = json.loads(to_json(replays["hoola"]))
    document["header"]["bogusField"] = 1
    with pytest.raises(ReplayFormatError) as refused:
        from_json(json.dumps(document))
    assert "bogusField" in str(refused.value) and "\n" not in str(refused.value)
    assert "Available Fields" not in str(refused.value)
    replay = tampered(replays["hoola"])
    replay.events[2].ClearField("payload")
    divergence = verify(replay).divergence
    assert divergence is not None and divergence.found == "no payload (the hashed bytes)"


CORPUS = Path(__file__).resolve().parents[2] / "replays" / "corpus"


def test_a_divergence_names_the_hanafuda_cards_it_compares() -> None:
    """A support agent reads the verdict of a doctored Koi-Koi file (a capture changed, the chain
    remade from the revealed seed) with the cards by name beside their codes: before, "expected
    '11B', found '3B'" had to be looked up in docs/rules/koikoi.md §2.1."""
    replay = load(CORPUS / "log-format-2" / "koikoi-nintendo-3.replay")
    event = next(
        e
        for e in replay.events
        if e.body.koikoi.WhichOneof("event") == "card_played" and e.body.koikoi.card_played.captured
    )
    body = service_pb2.EventBody.FromString(event.payload)
    captured = body.koikoi.card_played.captured[0]
    real = captured.code
    captured.code = "3B" if real != "3B" else "8B"
    event.payload = body.SerializeToString(deterministic=True)
    event.body.CopyFrom(body)
    remake_chain(replay)
    report = verify(replay)
    assert report.divergence is not None and report.divergence.event == event.version
    assert report.divergence.field.endswith("captured[0].code")
    assert report.divergence.expected == repr(real)  # the value itself is kept as it was
    said = str(report.divergence)
    assert f"expected {real!r} ({hanafuda.name(real)}), " in said
    assert f"found {captured.code!r} ({hanafuda.name(captured.code)})" in said


def test_a_divergence_reads_a_moment_as_its_utc_time() -> None:
    """A recorded time that differs from the service's record (`--against-store`) is read as a
    UTC time beside its Unix ms, as the timeline shows times."""
    said = str(
        Divergence(19, "the service's record", "1796634216015", "1796634221015", "recorded_at_ms")
    )
    assert said == (
        "event 19: the service's record, at recorded_at_ms: expected 1796634216015 "
        "(2026-12-07T09:03:36.015Z), found 1796634221015 (2026-12-07T09:03:41.015Z)"
    )
