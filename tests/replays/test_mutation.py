"""Mutation tests: every class of a replay's bytes, altered, and both verifiers must reject it.

The classes (docs/replay-format.md): the hashed bytes (each event's ``payload`` and
``command_payload``, and the event's other chained fields), the decoded copies a person reads
(``body``, ``command``, ``type``), the header and the footer (the revealed seed, the settlements,
the last hash, the final state's digest). Hypothesis picks the corpus file, the class, the place in
it and the alteration, in the JSON form and in the binary form; and it flips single bits anywhere
in a binary file. ``croupier.replays.verify`` (the engine re-plays the game) and
``replays/standalone_verify.py`` (standard library only, run in-process here for speed, through
its ``main``) must both reject every mutant, and both accept each original.

Two fields are left out on purpose, each for a documented reason:
- the footer's ``final_state_digest`` is checked by the full verifier only (the standalone one
  does not re-play the rules, so it cannot compute the final state; docs/replay-format.md);
- the header's ``players`` (the studio's player ids) are no part of any hashed event: they are
  the exporting service's word, shown as such (docs/replay-format.md).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import importlib.util
import io
import json
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from croupier.replays.format import ReplayFormatError, from_json, load, parse, to_binary
from croupier.replays.format import to_json as replay_to_json
from croupier.replays.verify import verify

from .conftest import remake_chain

REPLAYS = Path(__file__).resolve().parents[2] / "replays"
CORPUS = sorted((REPLAYS / "corpus").rglob("*.replay"))
#: Fields either verifier is not asked to check (see the module's docstring).
FULL_ONLY = {("footer", "final_state_digest")}
UNCHECKED = {("header", "players")}
OK = 0

#: Each example re-verifies a whole game twice; the classes are many, so each draws moderately.
MUTATIONS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: The whole module takes over a minute on a quiet machine (make test still runs it).
pytestmark = pytest.mark.slow


@cache
def standalone() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "standalone_verify", REPLAYS / "standalone_verify.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def binary(index: int) -> bytes:
    return CORPUS[index].read_bytes()


@cache
def document(index: int) -> str:
    return replay_to_json(load(CORPUS[index]))


def full_accepts(data: bytes) -> bool:
    try:
        replay = parse(data)
    except ReplayFormatError:
        return False
    return verify(replay).ok


def standalone_accepts(data: bytes) -> bool:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "game.replay"
        path.write_bytes(data)
        with contextlib.redirect_stdout(io.StringIO()):
            status: int = standalone().main([str(path)])
    return status == OK


def rejected_by_both(data: bytes, full_only: bool = False) -> None:
    assert not full_accepts(data), "croupier.replays.verify accepted a mutant"
    if not full_only:
        assert not standalone_accepts(data), "standalone_verify.py accepted a mutant"


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_both_verifiers_accept_every_original_in_both_forms(path: Path) -> None:
    index = CORPUS.index(path)
    for data in (binary(index), document(index).encode()):
        assert full_accepts(data) and standalone_accepts(data)


# --- the JSON form, field by field -----------------------------------------------------------

#: Where each class lives in the JSON document: a part, and for events the fields of the class.
HASHED = ("payload", "command_payload")
DECODED = ("body", "command", "type")
CHAINED = ("version", "game_id", "seat", "command_id", "recorded_at_ms", "prev_hash", "hash")
CLASSES = ("hashed", "decoded", "chained", "header", "footer")


def leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every scalar's path in a JSON value (lists and objects walked)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            yield from leaves(item, (*path, position))
    else:
        yield path


def places(doc: dict[str, Any], kind: str) -> list[tuple[Any, ...]]:
    """The paths of a class's scalars in ``doc`` (the left-out fields excepted)."""
    if kind in ("header", "footer"):
        return [
            (kind, *p)
            for p in leaves(doc[kind])
            if (kind, p[0]) not in UNCHECKED and (kind, p[0]) not in FULL_ONLY
        ]
    names = {"hashed": HASHED, "decoded": DECODED, "chained": CHAINED}[kind]
    return [
        ("events", number, name, *p)
        for number, event in enumerate(doc["events"])
        for name in names
        if name in event
        for p in leaves(event[name])
    ]


def altered(value: Any, data: st.DataObject, is_bytes: bool) -> Any:
    """``value`` changed: a bit of base64 bytes flipped, a character replaced, a number moved,
    a flag turned."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + data.draw(st.sampled_from([-1, 1, 7]))
    assert isinstance(value, str)
    if is_bytes:
        raw = bytearray(base64.b64decode(value))
        at = data.draw(st.integers(0, len(raw) - 1), label="byte")
        raw[at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
        return base64.b64encode(bytes(raw)).decode()
    if value.lstrip("-").isdigit():  # a 64-bit integer, written as a string
        return str(int(value) + data.draw(st.sampled_from([-1, 1, 1000])))
    at = data.draw(st.integers(0, max(len(value) - 1, 0)), label="character")
    other = data.draw(
        st.sampled_from("0aAfF7zZ_ ").filter(lambda c: value[at : at + 1] != c), label="with"
    )
    return value[:at] + other + value[at + 1 :]


def mutant(data: st.DataObject, kind: str) -> tuple[dict[str, Any], tuple[Any, ...], bool]:
    """A corpus document with one scalar of class ``kind`` altered (or removed)."""
    index = data.draw(st.integers(0, len(CORPUS) - 1), label="corpus file")
    doc = copy.deepcopy(json.loads(document(index)))
    path = data.draw(st.sampled_from(places(doc, kind)), label="where")
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    is_bytes = path[2:3] in (("payload",), ("command_payload",)) and len(path) == 3
    if data.draw(st.booleans(), label="remove it") and isinstance(parent, dict):
        # An option added after the first games were recorded, absent, reads as its default
        # (docs/replay-format.md): removing one that holds its default says the same thing.
        later = standalone().ADDED_LATER
        assume(
            not (
                path[:2] == ("header", "rules")
                and len(path) == 4
                and later[path[2]].get(path[3], object()) == parent[path[3]]
            )
        )
        del parent[path[-1]]
    else:
        parent[path[-1]] = altered(parent[path[-1]], data, is_bytes)
    return doc, path, (path[0], path[1]) in FULL_ONLY


@pytest.mark.parametrize("kind", CLASSES)
@MUTATIONS
@given(data=st.data())
def test_an_altered_field_is_rejected_in_the_json_form(kind: str, data: st.DataObject) -> None:
    doc, _, full_only = mutant(data, kind)
    rejected_by_both(json.dumps(doc).encode(), full_only)


@pytest.mark.parametrize("kind", CLASSES)
@MUTATIONS
@given(data=st.data())
def test_an_altered_field_is_rejected_in_the_binary_form(kind: str, data: st.DataObject) -> None:
    doc, _, full_only = mutant(data, kind)
    try:
        # The same alteration, written in the binary form (when it still reads as a replay).
        mutated = to_binary(from_json(json.dumps(doc)))
    except ReplayFormatError:
        return  # not representable: the JSON test covers it
    rejected_by_both(mutated, full_only)


def test_the_final_state_digest_is_checked_by_the_full_verifier() -> None:
    doc = json.loads(document(0))
    digest = doc["footer"]["final_state_digest"]
    doc["footer"]["final_state_digest"] = ("0" if digest[0] != "0" else "1") + digest[1:]
    assert not full_accepts(json.dumps(doc).encode())


# --- the binary form, bit by bit -------------------------------------------------------------


@MUTATIONS
@given(data=st.data())
def test_a_flipped_bit_anywhere_in_a_binary_file_is_rejected(data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(CORPUS) - 1), label="corpus file")
    original = binary(index)
    at = data.draw(st.integers(0, len(original) - 1), label="byte")
    mutated = bytearray(original)
    mutated[at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
    digest = load(CORPUS[index]).footer.final_state_digest.encode()
    start = original.rfind(digest)
    rejected_by_both(bytes(mutated), full_only=start <= at < start + len(digest))


@pytest.mark.parametrize("part", ["header", "events", "footer"])
@MUTATIONS
@given(data=st.data())
def test_a_flipped_bit_in_each_part_of_a_binary_file_is_rejected(
    part: str, data: st.DataObject
) -> None:
    """As above, with the bit drawn inside one part (so the small header and footer are hit as
    often as the events)."""
    index = data.draw(st.integers(0, len(CORPUS) - 1), label="corpus file")
    original = binary(index)
    replay = load(CORPUS[index])
    records = [r.SerializeToString(deterministic=True) for r in replay.records()]
    # Record boundaries: each record follows its length's varint.
    spans, pos = [], 0
    for record in records:
        pos = original.index(record, pos)
        spans.append((pos, pos + len(record)))
        pos += len(record)
    first, last = {"header": (0, 0), "events": (1, len(spans) - 2), "footer": (-1, -1)}[part]
    low, high = spans[first][0], spans[last][1]
    at = data.draw(st.integers(low, high - 1), label="byte")
    mutated = bytearray(original)
    mutated[at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
    digest = replay.footer.final_state_digest.encode()
    start = original.rfind(digest)
    rejected_by_both(bytes(mutated), full_only=start <= at < start + len(digest))


# --- a forger's edits: the chain computed again from the revealed seed -----------------------


def rechained(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with every event's ``prev_hash`` and ``hash``, and the footer's last hash, made
    again as the server would (the revealed seed keys the chain): what anyone can do once a
    game is over, so that only the game's own consistency is left to catch an edit."""
    replay = from_json(json.dumps(doc))
    remake_chain(replay)
    return dict(json.loads(replay_to_json(replay)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_type_that_is_not_its_payloads_is_rejected_even_with_the_chain_made_again(
    data: st.DataObject,
) -> None:
    """The stored ``type`` is what a reader of the JSON reads an event as: both verifiers check
    it against the hashed payload, not only through the chain (which a forger can remake)."""
    index = data.draw(st.integers(0, len(CORPUS) - 1), label="corpus file")
    doc = json.loads(document(index))
    types = sorted({event["type"] for event in doc["events"]})
    number = data.draw(st.integers(0, len(doc["events"]) - 1), label="event")
    doc["events"][number]["type"] = data.draw(
        st.sampled_from([t for t in types if t != doc["events"][number]["type"]]), label="as"
    )
    forged = rechained(doc)
    report = verify(from_json(json.dumps(forged)))
    assert report.divergence is not None
    assert report.divergence.check == "type (against its hashed payload)"
    assert report.divergence.event == number + 1
    assert not standalone_accepts(json.dumps(forged).encode())
