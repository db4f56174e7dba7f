"""The committed-seed shuffle: golden vectors, an independent implementation of docs/shuffle.md,
and the properties a fair shuffle must have."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from croupier.engine.cards import standard_deck
from croupier.engine.shuffle import Seeds, commitment, shuffled

VECTORS = json.loads((Path(__file__).parent / "golden" / "shuffle_vectors.json").read_text())


def _standalone():
    """replays/standalone_verify.py: docs/shuffle.md written again with the standard library only
    (what third parties run), loaded from its file."""
    path = Path(__file__).resolve().parent.parent / "replays" / "standalone_verify.py"
    spec = importlib.util.spec_from_file_location("standalone_verify", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


documented_shuffle = _standalone().shuffle


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: f"{v['server_seed'][:8]}-{v['purpose']}")
def test_golden_vectors(vector: dict) -> None:
    seed = bytes.fromhex(vector["server_seed"])
    seeds = Seeds(seed, tuple(vector["client_seeds"]))
    deck = standard_deck(vector["jokers"])
    assert commitment(seed) == vector["commitment"]
    assert list(shuffled(deck, seeds, vector["round"], vector["purpose"])) == vector["deck"]
    assert (
        documented_shuffle(
            seed, vector["client_seeds"], vector["round"], vector["purpose"], list(deck)
        )
        == vector["deck"]
    )


@given(
    st.binary(min_size=1, max_size=64),
    st.lists(st.text(max_size=8), max_size=3),
    st.integers(1, 50),
    st.sampled_from(["deal", "reshuffle-1"]),
)
def test_engine_matches_the_documented_algorithm(
    seed: bytes, clients: list[str], round_no: int, purpose: str
) -> None:
    deck = standard_deck(2)
    ours = shuffled(deck, Seeds(seed, tuple(clients)), round_no, purpose)
    assert list(ours) == documented_shuffle(seed, clients, round_no, purpose, list(deck))
    assert sorted(ours) == sorted(deck)


def test_every_input_changes_the_deck() -> None:
    base = Seeds(b"a" * 32, ("x",))
    deck = standard_deck()
    reference = shuffled(deck, base, 1, "deal")
    assert shuffled(deck, Seeds(b"b" * 32, ("x",)), 1, "deal") != reference
    assert shuffled(deck, Seeds(b"a" * 32, ("y",)), 1, "deal") != reference
    assert shuffled(deck, Seeds(b"a" * 32, ("x", "")), 1, "deal") != reference
    assert shuffled(deck, base, 2, "deal") != reference
    assert shuffled(deck, base, 1, "reshuffle-1") != reference
    assert shuffled(deck, base, 1, "deal") == reference


def test_first_card_is_roughly_uniform() -> None:
    """A quick sanity check (the chi-square over 10^5 shuffles comes with the replay issue)."""
    counts = Counter(
        shuffled(standard_deck(), Seeds(i.to_bytes(4, "big")), 1, "deal")[0] for i in range(5200)
    )
    assert len(counts) == 52
    chi2 = sum((c - 100) ** 2 / 100 for c in counts.values())
    assert chi2 < 90  # 51 degrees of freedom: p ≈ 0.001


def _chi_square_critical(df: int, z: float = 2.326) -> float:
    """The chi-square value that ``df`` degrees of freedom exceed with probability 1 % (the
    Wilson–Hilferty approximation; z is the normal 99th percentile)."""
    a = 2 / (9 * df)
    return df * (1 - a + z * a**0.5) ** 3


@pytest.mark.slow
@pytest.mark.parametrize("deck_name", ["standard-52", "hanafuda-48"])
def test_card_by_position_is_uniform_over_a_hundred_thousand_shuffles(deck_name: str) -> None:
    """Every card lands in every position equally often: chi-square over card × position passes
    at the 99 % level (10⁵ shuffles, each from its own round of one seed)."""
    from croupier.engine.koikoi.cards import deck as hanafuda_deck

    deck = list(standard_deck()) if deck_name == "standard-52" else list(hanafuda_deck())
    n = len(deck)
    index = {card: i for i, card in enumerate(deck)}
    counts = [[0] * n for _ in range(n)]
    seeds = Seeds(hashlib.sha256(deck_name.encode()).digest(), ("chi-square",))
    shuffles = 100_000
    for round_no in range(shuffles):
        for position, card in enumerate(shuffled(deck, seeds, round_no, "deal")):
            counts[index[card]][position] += 1
    expected = shuffles / n
    chi2 = sum((c - expected) ** 2 / expected for row in counts for c in row)
    df = (n - 1) * (n - 1)
    assert chi2 < _chi_square_critical(df), (chi2, _chi_square_critical(df))
    # And not suspiciously perfect either (a counter, not a shuffle, would be).
    assert chi2 > df * 0.8
