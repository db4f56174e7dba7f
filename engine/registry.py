"""The games the engine plays, by kind name."""

from __future__ import annotations

from typing import Any

from croupier.engine.gin import GinGame
from croupier.engine.hoola import HoolaGame
from croupier.engine.koikoi import KoiKoiGame
from croupier.engine.rummy import RummyGame

GAMES: dict[str, Any] = {game.kind: game for game in (HoolaGame(), KoiKoiGame(), GinGame(),
                                                       RummyGame())}


def game(kind: str) -> Any:
    return GAMES[kind]
