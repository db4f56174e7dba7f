"""Building Rummy positions by hand and playing commands on them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from game_invariants import play_commands

from croupier.engine.meld_solver import RUMMY, arrange
from croupier.engine.rummy import RummyGame
from croupier.engine.rummy.cards import deck
from croupier.engine.rummy.events import RummyCommand, RummyEvent, TableMeld
from croupier.engine.rummy.rules import STANDARD, RummyRules
from croupier.engine.rummy.state import Phase, RummyState
from croupier.engine.shuffle import Seeds

GAME = RummyGame()
SEEDS = Seeds(b"\x04" * 32, ("test",))


def position(
    hands: Sequence[str],
    discards: str = "",
    stock: str | None = None,
    *,
    rules: RummyRules = STANDARD,
    turn: int = 0,
    phase: Phase = Phase.PLAY,
    melds: Sequence[tuple[int, str]] = (),
    opened: Sequence[bool] | None = None,
    **changes: object,
) -> RummyState:
    """A position from card strings; ``melds`` are ``(owner, "cards")``; the stock defaults to
    every card not placed, in deck order."""
    split = tuple(tuple(h.split()) for h in hands)
    table = []
    for i, (owner, cards) in enumerate(melds, 1):
        found = arrange(cards.split(), RUMMY)
        assert found is not None, cards
        table.append(TableMeld(i, owner, found.kind, found.cards, found.jokers))
    pile = tuple(discards.split())
    placed = {c for h in split for c in h} | set(pile) | {c for m in table for c in m.cards}
    rest = tuple(c for c in deck() if c not in placed)
    n = len(split)
    state = RummyState(
        rules=rules,
        seats=n,
        turn=turn,
        phase=phase,
        hands=split,
        stock=tuple(stock.split()) if stock is not None else rest,
        discards=pile,
        melds=tuple(table),
        opened=tuple(opened) if opened else (False,) * n,
    )
    return dataclasses.replace(state, **changes)  # type: ignore[arg-type]


def play(
    state: RummyState, seat: int, *commands: RummyCommand
) -> tuple[RummyState, list[RummyEvent]]:
    """Apply commands in turn; returns the final state and every event."""
    return play_commands(GAME, SEEDS, state, seat, commands)
