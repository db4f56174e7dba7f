"""The deal vectors the TypeScript client's check of the deal is held to
(tests/golden/deal_vectors.json, clients/typescript/test/dealcheck.test.ts) are what
tools/make_deal_vectors.py makes from the compatibility corpus and the engine now: were a deal's
layout, a seat's redacted copy or an option's recorded default to change, the file would no
longer say what the service deals and sends (make it again with the tool, and the client's check
must still agree)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "deal_vectors.json"


def _tool() -> ModuleType:
    path = ROOT / "tools" / "make_deal_vectors.py"
    spec = importlib.util.spec_from_file_location("make_deal_vectors", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _deals(copy: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for event in copy:
        body = event["body"]
        for game in ("hoola", "koikoi", "gin", "rummy"):
            for name in ("roundDealt", "handDealt"):
                if name in body.get(game, {}):
                    found.append(body[game][name])
    return found


def test_the_committed_vectors_are_what_the_tool_makes() -> None:
    tool = _tool()
    assert GOLDEN.read_text(encoding="utf-8") == tool.dumps(tool.vectors()), (
        "tests/golden/deal_vectors.json is stale: "
        ".venv/bin/python tools/make_deal_vectors.py tests/golden/deal_vectors.json"
    )


def test_the_vectors_hold_every_kind_and_every_way_a_first_dealer_is_chosen() -> None:
    games = json.loads(GOLDEN.read_text(encoding="utf-8"))["games"]
    assert {g["kind"] for g in games} == {"hoola", "koikoi", "gin", "rummy"}
    firsts = {
        (g["kind"], bool(_deals(g["copies"]["complete"])[0].get("dealerDraws"))) for g in games
    }
    # Drawn in every kind; read off the deck's last card in Hoola and Rummy games recorded before.
    assert firsts >= {(k, True) for k in ("hoola", "koikoi", "gin", "rummy")}
    assert firsts >= {("hoola", False), ("rummy", False)}
    complete = [d for g in games for d in _deals(g["copies"]["complete"])]
    assert any(d.get("redeals") for d in complete), "a Koi-Koi round dealt again"
    assert any(len(d["hands"]) == 7 for d in complete), "seven seats"
    assert any(c["code"].startswith("JK") for d in complete for h in d["hands"] for c in h["cards"])
    for game in games:
        # Each seat's copy shows its own hand alone; the complete copy every hand.
        assert set(game["copies"]) == {"complete", "spectator"} | {
            f"seat {s}" for s in range(game["seats"])
        }
        for seat in range(game["seats"]):
            for deal in _deals(game["copies"][f"seat {seat}"]):
                shown = [h.get("seat", 0) for h in deal["hands"] if h.get("cards")]
                assert shown == [seat] and "stock" not in deal
        assert all(h.get("cards") for d in _deals(game["copies"]["complete"]) for h in d["hands"])
