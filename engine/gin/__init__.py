"""Gin Rummy (docs/rules/gin.md §4)."""

from croupier.engine.gin.game import GinGame

__all__ = ["GinGame"]
