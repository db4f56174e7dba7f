"""Gin Rummy (RULES.md §4)."""

from croupier.engine.gin.game import GinGame

__all__ = ["GinGame"]
