"""The standalone verifier: standard library only, and it catches what a third party must catch."""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from croupier.replays.format import to_json

from .conftest import GAMES

STANDALONE = Path(__file__).resolve().parents[2] / "replays" / "standalone_verify.py"


def run(tmp_path: Path, document: dict) -> subprocess.CompletedProcess:
    path = tmp_path / "game.json"
    path.write_text(json.dumps(document))
    # A bare interpreter, isolated from site-packages and the environment: nothing of Croupier.
    return subprocess.run(
        [sys.executable, "-I", "-S", str(STANDALONE), str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )


def test_it_imports_only_the_standard_library() -> None:
    tree = ast.parse(STANDALONE.read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported <= {"__future__", "base64", "hashlib", "hmac", "json", "struct", "sys"}


@pytest.mark.parametrize("name", sorted(GAMES))
def test_every_recorded_game_verifies(replays, tmp_path: Path, name: str) -> None:
    result = run(tmp_path, json.loads(to_json(replays[name])))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verified: chain, commitment and decks" in result.stdout
    deals = int(result.stdout.split("decks: ")[1].split(" ")[0])
    assert deals >= 1


def rechain(replay) -> None:
    """Re-hash the whole chain as a forger with the database could (with the footer's seed)."""
    from croupier.log import GENESIS_HASH, chain_hash, chain_key, record_bytes

    key = chain_key(
        replay.header.log_format, bytes.fromhex(replay.footer.server_seed), replay.header.game_id
    )
    prev = GENESIS_HASH
    for event in replay.events:
        seat = event.seat if event.HasField("seat") else None
        event.prev_hash = prev
        event.hash = chain_hash(
            prev,
            record_bytes(
                event.game_id,
                event.version,
                event.command_id,
                seat,
                event.recorded_at_ms,
                event.type,
                event.payload,
                event.command_payload,
                key,
            ),
        )
        prev = event.hash
    replay.footer.last_hash = prev


def test_a_deck_dealt_from_another_seed_is_caught(replays, tmp_path: Path) -> None:
    """A server that dealt from another seed than it committed to, and forged the header and the
    footer to match, and re-hashed the chain with it, is caught: the game's first event (in the
    chain) holds the real commitment."""
    from croupier.replays.format import from_json
    from croupier.replays.format import to_json as back

    replay = from_json(to_json(replays["gin"]))
    other = bytes(range(32))
    replay.footer.server_seed = other.hex()
    replay.header.commitment = hashlib.sha256(other).hexdigest()
    rechain(replay)
    document = json.loads(back(replay))
    result = run(tmp_path, document)
    assert (
        result.returncode == 1
        and "event 1: the game started with another commitment" in result.stdout
    )


def test_a_tampered_event_or_seed_is_caught(replays, tmp_path: Path) -> None:
    document = json.loads(to_json(replays["koikoi"]))
    document["events"][3]["command_id"] = "forged"
    result = run(tmp_path, document)
    assert result.returncode == 1 and result.stdout.startswith("FAIL event 4: hash")
    document = json.loads(to_json(replays["koikoi"]))
    document["footer"]["server_seed"] = "00" * 32
    assert "does not open the commitment" in run(tmp_path, document).stdout
    assert run(tmp_path, {"nothing": 1}).returncode == 2


def test_a_rigged_deal_is_caught(replays, tmp_path: Path) -> None:
    """Swap two cards inside a deal's hashed bytes and re-hash the chain (as a forger with the
    database could): the chain holds, the deck does not."""
    from croupier.replays.format import from_json
    from croupier.replays.format import to_json as back
    from croupier.v1 import service_pb2

    replay = from_json(to_json(replays["rummy"]))
    deal = replay.events[1]
    body = service_pb2.EventBody.FromString(deal.payload)
    hands = body.rummy.round_dealt.hands
    a, b = hands[0].cards[0], hands[1].cards[0]
    a_code, b_code = a.code, b.code
    a.code, b.code = b_code, a_code
    deal.payload = body.SerializeToString(deterministic=True)
    deal.body.CopyFrom(body)
    rechain(replay)
    result = run(tmp_path, json.loads(back(replay)))
    assert (
        result.returncode == 1
        and "event 2: the deal differs from the committed deck" in result.stdout
    )
