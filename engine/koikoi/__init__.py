"""Hanafuda Koi-Koi (docs/rules/koikoi.md §2)."""

from croupier.engine.koikoi.game import KoiKoiGame

__all__ = ["KoiKoiGame"]
