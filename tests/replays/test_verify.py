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

from croupier.engine import cards
from croupier.engine.koikoi import cards as hanafuda
from croupier.engine.rummy import cards as rummy_cards
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
from croupier.replays.verify import Divergence, first_difference, french_card_name, verify
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
    # Not a replay, apart from a failed check's 1, in every command (show and convert said 1).
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


@pytest.mark.parametrize(
    ("name", "kind"),
    [("hoola-korean", "hoola"), ("gin-standard", "gin"), ("rummy-standard", "rummy")],
)
def test_a_divergence_names_the_french_suited_cards_it_compares(name: str, kind: str) -> None:
    """As Hanafuda cards are: a doctored discard (the chain remade) read "expected 'KH', found
    'TD'", codes a support agent had to decode by docs/rules/. Each code is followed by the card
    in words; Rummy's by its copy too, as two copies of a card may be what differs."""
    replay = load(CORPUS / "log-format-2" / f"{name}.replay")
    event = next(
        e for e in replay.events if getattr(e.body, kind).WhichOneof("event") == "card_discarded"
    )
    body = service_pb2.EventBody.FromString(event.payload)
    card = getattr(body, kind).card_discarded.card
    real = card.code
    card.code = ("TD" if real[:2] != "TD" else "5S") + real[2:]  # Rummy keeps its copy digit
    event.payload = body.SerializeToString(deterministic=True)
    event.body.CopyFrom(body)
    remake_chain(replay)
    report = verify(replay)
    assert report.divergence is not None and report.divergence.field.endswith("card.code")
    assert report.divergence.expected == repr(real)  # the value itself is kept as it was
    said = str(report.divergence)
    for code in (real, card.code):
        words = cards.name(code[:2]).lower() + (f", copy {code[2]}" if kind == "rummy" else "")
        assert f"{code!r} ({words})" in said


def test_every_french_suited_code_has_a_name_of_its_own() -> None:
    """Every card of the three French-suited decks (one deck and its jokers; Rummy's two copies
    and four jokers) is named, and no two codes share a name: a divergence between two copies
    of a card, or two jokers, reads as two cards."""
    codes = set(cards.standard_deck(2)) | set(rummy_cards.deck())
    names = {code: french_card_name(code) for code in codes}
    assert all(names.values())
    assert len(set(names.values())) == len(codes)
    assert names["TD"] == "ten of diamonds" and names["KH1"] == "king of hearts, copy 1"
    assert french_card_name("11B") == "" and french_card_name("TDX") == ""


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


# --- what a support agent is told of a file that is not a whole replay --------------------------


def _records(data: bytes) -> list[bytes]:
    """A binary replay's records, each with its length before it, as the file holds them."""
    records, pos = [], 0
    while pos < len(data):
        start, size, shift = pos, 0, 0
        while True:
            byte = data[pos]
            size |= (byte & 0x7F) << shift
            pos += 1
            shift += 7
            if not byte & 0x80:
                break
        records.append(data[start : pos + size])
        pos += size
    return records


def _rejection(data: bytes) -> str:
    with pytest.raises(ReplayFormatError) as refused:
        parse(data)
    return str(refused.value)


def test_a_file_cut_short_says_where_it_stops() -> None:
    """Before, each of these said "the last record is cut off" or "a replay ends with its footer
    (one header, one footer)": nothing of which part of the game the file lost."""
    data = (CORPUS / "gin-standard.replay").read_bytes()
    records = _records(data)
    events = len(records) - 2
    assert b"".join(records) == data
    # Cut inside a record: which one, and what is missing of it.
    middle = sum(len(r) for r in records[:10]) + len(records[10]) // 2
    said = _rejection(data[:middle])
    length = next(i for i, byte in enumerate(records[10]) if not byte & 0x80) + 1
    announced, left = len(records[10]) - length, len(records[10]) // 2 - length
    assert said == (
        f"record 11 (event 10, or the footer) is cut off: {announced} bytes announced, {left} "
        "left in the file (a file cut short, or not a replay)"
    )
    # Cut between records: after which event the footer is missing.
    assert _rejection(b"".join(records[:-1])).startswith(
        f"the file ends after event {events} without its footer: it was cut short"
    )
    assert _rejection(records[0]).startswith("the file ends after its header without its footer")
    assert _rejection(b"") == "the file is empty (a replay starts with its header)"


def test_two_files_joined_into_one_are_said_to_be() -> None:
    data = (CORPUS / "gin-standard.replay").read_bytes()
    other = (CORPUS / "hoola-korean.replay").read_bytes()
    assert "2 headers and 2 footers" in _rejection(data + other)
    records = _records(data)
    footer_first = b"".join([*records[:-1][:5], records[-1], *records[5:-1]])
    assert _rejection(footer_first).startswith("record 6 (event 5, or the footer) is the footer")


def test_a_json_field_it_cannot_read_is_named_with_its_event() -> None:
    document = json.loads(to_json(load(CORPUS / "gin-standard.replay")))
    document["events"][7]["version"] = "abc"
    with pytest.raises(ReplayFormatError, match=r"^not a JSON replay: event 8: "):
        from_json(json.dumps(document))
    document = json.loads(to_json(load(CORPUS / "gin-standard.replay")))
    document["events"] = {"1": document["events"][0]}
    with pytest.raises(ReplayFormatError, match='its "events" are not a list'):
        from_json(json.dumps(document))


@pytest.mark.parametrize("how", ["cut", "empty", "joined"])
def test_the_cli_says_a_broken_file_in_one_line_with_status_2(tmp_path: Path, how: str) -> None:
    data = (CORPUS / "gin-standard.replay").read_bytes()
    path = tmp_path / "broken.replay"
    path.write_bytes({"cut": data[: len(data) // 2], "empty": b"", "joined": data + data}[how])
    ran = subprocess.run([CROUPIER, "replay", "verify", str(path)], capture_output=True, text=True)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    said = {"cut": "is cut off: ", "empty": "the file is empty", "joined": "2 headers"}[how]
    assert said in ran.stderr and len(ran.stderr.strip().splitlines()) == 1, ran.stderr


def test_a_file_that_stops_before_the_games_end_says_so_not_none() -> None:
    """Its last events dropped and its chain remade: it said "expected the SeedRevealed event's
    None", a program's word for nothing."""
    replay = load(CORPUS / "log-format-2" / "hoola-korean.replay")
    del replay.events[-1]
    remake_chain(replay)
    report = verify(replay)
    assert report.divergence is not None
    assert report.divergence.event == replay.events[-1].version
    said = str(report.divergence)
    assert "None" not in said
    assert f"found {replay.events[-1].type}: the file stops before the game's end" in said


def _in_play(replay: Replay, redacted: bool) -> Replay:
    """``replay`` as a file made before its game was over: without the revealed seed and the
    game's end, and, ``redacted``, as a seat's copy (the deal's payload and hashes left out, as
    the service sends a seat the events it may not fully see)."""
    copy_ = tampered(replay)
    del copy_.events[-1]
    copy_.footer.Clear()
    if redacted:
        for event in copy_.events:
            event.prev_hash = event.hash = ""
        deal = copy_.events[1]
        deal.redacted = True
        deal.ClearField("payload")
        deal.ClearField("command")
        deal.ClearField("command_payload")
    return copy_


@pytest.mark.parametrize("redacted", [True, False], ids=["a-seats-copy", "complete"])
def test_a_file_of_a_game_in_play_says_nothing_can_be_checked_yet(redacted: bool) -> None:
    replay = _in_play(load(CORPUS / "log-format-2" / "gin-standard.replay"), redacted)
    report = verify(replay)
    assert report.divergence is not None
    said = str(report.divergence)
    if redacted:
        assert report.divergence.event == 2 and report.divergence.check == "completeness"
        assert "a seat's or a spectator's copy" in said
    else:  # not "sha256(revealed seed) = e3b0c442…", the hash of no seed
        assert report.divergence.check == "revealed seed" and "sha256" not in said
        assert "the game was not over when this file was made" in said
    assert "neither its chain, nor its decks, nor its moves can be checked" in said


def test_a_seed_taken_out_of_a_finished_games_footer_is_an_edit_not_a_game_in_play() -> None:
    replay = load(CORPUS / "log-format-2" / "gin-standard.replay")
    replay.footer.server_seed = ""
    report = verify(replay)
    assert report.divergence is not None
    assert "the game's last event reveals it: the footer was edited" in str(report.divergence)


def test_the_whole_commitment_is_said_to_compare_with_the_one_the_player_saw() -> None:
    replay = load(CORPUS / "log-format-2" / "rummy-standard.replay")
    report = verify(replay)
    assert report.ok, report.lines()
    assert f"commitment: sha256(revealed seed) = {replay.header.commitment}" in report.checks
    assert any("each one legal under the game's rules" in check for check in report.checks)


def test_a_rigged_deal_says_which_side_is_the_seeds() -> None:
    """Two cards swapped between two hands of the deal, the chain remade: the verdict said
    "expected '5S', found '2D'" and left the reader to guess which was the game's own."""
    replay = load(CORPUS / "log-format-2" / "hoola-korean.replay")
    deal = replay.events[1]
    body = service_pb2.EventBody.FromString(deal.payload)
    hands = body.hoola.round_dealt.hands
    first, second = hands[0].cards[0].code, hands[1].cards[0].code
    hands[0].cards[0].code, hands[1].cards[0].code = second, first
    deal.payload = body.SerializeToString(deterministic=True)
    deal.body.CopyFrom(body)
    remake_chain(replay)
    report = verify(replay)
    assert report.divergence is not None and report.divergence.event == 2
    assert str(report.divergence).endswith(
        f"expected {first!r} ({cards.name(first).lower()}), found {second!r} "
        f"({cards.name(second).lower()}) (expected: what the committed seeds and the rules "
        "make here; found: the file's)"
    )
