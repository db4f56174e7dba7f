"""Building Gin Rummy positions by hand and playing commands on them."""

from __future__ import annotations

import dataclasses

from game_invariants import play_commands

from croupier.engine.cards import standard_deck
from croupier.engine.gin import GinGame
from croupier.engine.gin.events import GinCommand, GinEvent
from croupier.engine.gin.rules import STANDARD, GinRules
from croupier.engine.gin.state import GinState, Phase
from croupier.engine.shuffle import Seeds

GAME = GinGame()
SEEDS = Seeds(b"\x03" * 32, ("test",))


def position(
    hands: tuple[str, str],
    discards: str,
    stock: str | None = None,
    *,
    rules: GinRules = STANDARD,
    turn: int = 0,
    dealer: int = 1,
    phase: Phase = Phase.DRAW,
    **changes: object,
) -> GinState:
    """A position from card strings; the stock defaults to every card not placed, in deck order."""
    split = tuple(tuple(h.split()) for h in hands)
    pile = tuple(discards.split())
    placed = {c for h in split for c in h} | set(pile)
    rest = tuple(c for c in standard_deck() if c not in placed)
    state = GinState(
        rules=rules,
        hand=1,
        dealer=dealer,
        turn=turn,
        phase=phase,
        hands=split,
        stock=tuple(stock.split()) if stock is not None else rest,
        discards=pile,
    )
    return dataclasses.replace(state, **changes)  # type: ignore[arg-type]


def play(state: GinState, seat: int, *commands: GinCommand) -> tuple[GinState, list[GinEvent]]:
    """Apply commands in turn; returns the final state and every event."""
    return play_commands(GAME, SEEDS, state, seat, commands)
