"""The games the engine plays, by kind name."""

from __future__ import annotations

from typing import Any

from croupier.engine.hoola import HoolaGame

GAMES: dict[str, Any] = {HoolaGame.kind: HoolaGame()}


def game(kind: str) -> Any:
    return GAMES[kind]
