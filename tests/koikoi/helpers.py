"""Building Koi-Koi positions by hand and playing commands on them."""

from __future__ import annotations

import dataclasses

from game_invariants import play_commands

from croupier.engine.koikoi import KoiKoiGame
from croupier.engine.koikoi.cards import deck
from croupier.engine.koikoi.events import KoiKoiCommand, KoiKoiEvent
from croupier.engine.koikoi.rules import NINTENDO, KoiKoiRules
from croupier.engine.koikoi.state import KoiKoiState, Phase
from croupier.engine.shuffle import Seeds

GAME = KoiKoiGame()
SEEDS = Seeds(b"\x02" * 32, ("test",))


def position(
    hands: tuple[str, str],
    field: str,
    stock: str = "",
    *,
    rules: KoiKoiRules = NINTENDO,
    captured: tuple[str, str] = ("", ""),
    turn: int = 0,
    dealer: int = 0,
    phase: Phase = Phase.PLAY,
    **changes: object,
) -> KoiKoiState:
    """A position from card strings; the stock defaults to every card not placed, in deck order."""
    split = tuple(tuple(h.split()) for h in hands)
    piles = tuple(tuple(p.split()) for p in captured)
    placed = {c for h in split + piles for c in h} | set(field.split())
    rest = tuple(c for c in deck() if c not in placed)
    state = KoiKoiState(
        rules=rules,
        round=1,
        dealer=dealer,
        turn=turn,
        phase=phase,
        hands=split,
        field=tuple(field.split()),
        stock=tuple(stock.split()) if stock else rest,
        captured=piles,
        turn_start=piles[turn],
    )
    return dataclasses.replace(state, **changes)  # type: ignore[arg-type]


def play(
    state: KoiKoiState, seat: int, *commands: KoiKoiCommand
) -> tuple[KoiKoiState, list[KoiKoiEvent]]:
    """Apply commands in turn; returns the final state and every event."""
    return play_commands(GAME, SEEDS, state, seat, commands)
