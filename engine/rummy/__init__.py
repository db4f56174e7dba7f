"""Rummy with jokers, the 108-card table game (docs/rules/rummy.md §3)."""

from croupier.engine.rummy.game import RummyGame

__all__ = ["RummyGame"]
