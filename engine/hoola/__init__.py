"""Korean Hoola (훌라), RULES.md §1."""

from croupier.engine.hoola.game import HoolaGame

__all__ = ["HoolaGame"]
