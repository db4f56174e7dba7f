"""The standalone verifier's deck checks against the engine's own deals, in process: Koi-Koi's
redeals (too rare to count on in recorded games) and the first dealer, and what a forged deal of
either looks like."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from croupier.contract.bindings import BY_NAME
from croupier.engine.gin import deal as gin_deal
from croupier.engine.koikoi import deal as koikoi_deal
from croupier.engine.shuffle import Seeds

STANDALONE = Path(__file__).resolve().parents[2] / "replays" / "standalone_verify.py"
CLIENT_SEEDS = ("decks",)


@pytest.fixture(scope="module")
def standalone() -> ModuleType:
    spec = importlib.util.spec_from_file_location("standalone_verify", STANDALONE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def decoded(standalone: ModuleType, kind: str, event: Any) -> dict[str, Any]:
    """The engine's event as the standalone verifier reads it: serialized by the contract, then
    decoded by the verifier's own wire decoder."""
    data = BY_NAME[kind].event_to_body(event).SerializeToString(deterministic=True)
    schema = standalone.Schema.parse(standalone.SCHEMA)
    _, body = standalone.only_field(schema.decode(data, "EventBody"), "body")
    return body


def seed_with_redeals(minimum: int) -> tuple[bytes, Any]:
    """A server seed whose first Koi-Koi round is dealt again at least ``minimum`` times."""
    for n in itertools.count():
        seed = n.to_bytes(32, "big")
        dealt = koikoi_deal.deal(Seeds(seed, CLIENT_SEEDS), 1, 0)
        if dealt.redeals >= minimum:
            return seed, dealt
    raise AssertionError("unreachable")


def decks(standalone: ModuleType, kind: str, seed: bytes) -> Any:
    return standalone.Decks(kind, seed, list(CLIENT_SEEDS), 2)


def test_a_redealt_koikoi_round_verifies_and_a_chosen_redeal_does_not(
    standalone: ModuleType,
) -> None:
    seed, dealt = seed_with_redeals(1)
    event = decoded(standalone, "koikoi", dealt)["round_dealt"]
    assert event["redeals"] == dealt.redeals >= 1
    checker = decks(standalone, "koikoi", seed)
    checker.counts["deal"] = 1  # not the game's first deal: no dealer draws to show
    checker.see("round_dealt", event)
    # The same cards claimed as dealt one more time: that redeal's shuffle was never needed.
    forged = dict(event, redeals=dealt.redeals + 1)
    with pytest.raises(standalone.Failed, match="shows no four cards of a month"):
        checker.see("round_dealt", forged)


def test_a_voided_deal_kept_is_caught(standalone: ModuleType) -> None:
    """A deal whose field shows four cards of a month, recorded as if it stood."""
    seed, dealt = seed_with_redeals(1)
    voided = koikoi_deal.shuffled(koikoi_deal.deck(), Seeds(seed, CLIENT_SEEDS), 1, "deal")
    event = decoded(standalone, "koikoi", dealt)["round_dealt"]
    # Seat 0 deals: its hand, the other's, the field, the stock (docs/shuffle.md).
    assert [h.get("seat", 0) for h in event["hands"]] == [0, 1] and event.get("dealer", 0) == 0
    event["hands"][0]["cards"] = [{"code": c} for c in voided[:8]]
    event["hands"][1]["cards"] = [{"code": c} for c in voided[8:16]]
    event["field"] = [{"code": c} for c in voided[16:24]]
    event["stock"] = [{"code": c} for c in voided[24:]]
    event.pop("redeals")
    checker = decks(standalone, "koikoi", seed)
    checker.counts["deal"] = 1
    with pytest.raises(standalone.Failed, match="four cards of a month: the round is dealt again"):
        checker.see("round_dealt", event)


@pytest.mark.parametrize("kind", ["gin", "koikoi"])
def test_the_first_dealer_is_the_seeds(standalone: ModuleType, kind: str) -> None:
    seed = bytes(range(32))
    dealing = gin_deal if kind == "gin" else koikoi_deal
    dealt = dealing.deal(Seeds(seed, CLIENT_SEEDS), 1, None)
    event = decoded(standalone, kind, dealt)[standalone.DEALT[kind]]
    assert event["dealer_draws"]
    decks(standalone, kind, seed).see(standalone.DEALT[kind], event)
    # Another card turned, or the other seat named the dealer: caught.
    turned = dict(event, dealer_draws=[dict(d) for d in event["dealer_draws"]])
    turned["dealer_draws"][0] = dict(turned["dealer_draws"][1], seat=0)
    with pytest.raises(standalone.Failed, match="the first dealer's draws"):
        decks(standalone, kind, seed).see(standalone.DEALT[kind], turned)
    # Without the draws, the first deal does not show how its dealer was chosen.
    with pytest.raises(standalone.Failed, match="does not show how its dealer"):
        decks(standalone, kind, seed).see(standalone.DEALT[kind], dict(event, dealer_draws=[]))
