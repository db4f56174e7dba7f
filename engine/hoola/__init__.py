"""Korean Hoola (훌라), docs/rules/hoola.md §1."""

from croupier.engine.hoola.game import HoolaGame

__all__ = ["HoolaGame"]
