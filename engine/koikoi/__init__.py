"""Hanafuda Koi-Koi (RULES.md §2)."""

from croupier.engine.koikoi.game import KoiKoiGame

__all__ = ["KoiKoiGame"]
