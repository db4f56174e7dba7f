"""The games the engine plays, by kind name."""

from __future__ import annotations

from typing import Any

from croupier.engine.game import Game
from croupier.engine.gin import GinGame
from croupier.engine.gin.events import GinCommand, GinEvent
from croupier.engine.gin.rules import GinRules
from croupier.engine.gin.state import GinState
from croupier.engine.hoola import HoolaGame
from croupier.engine.hoola.events import HoolaCommand, HoolaEvent
from croupier.engine.hoola.rules import HoolaRules
from croupier.engine.hoola.state import HoolaState
from croupier.engine.koikoi import KoiKoiGame
from croupier.engine.koikoi.events import KoiKoiCommand, KoiKoiEvent
from croupier.engine.koikoi.rules import KoiKoiRules
from croupier.engine.koikoi.state import KoiKoiState
from croupier.engine.rummy import RummyGame
from croupier.engine.rummy.events import RummyCommand, RummyEvent
from croupier.engine.rummy.rules import RummyRules
from croupier.engine.rummy.state import RummyState

# Each game, typed as the protocol it implements: the type checker proves every game is a Game.
HOOLA: Game[HoolaRules, HoolaState, HoolaEvent, HoolaCommand] = HoolaGame()
KOIKOI: Game[KoiKoiRules, KoiKoiState, KoiKoiEvent, KoiKoiCommand] = KoiKoiGame()
GIN: Game[GinRules, GinState, GinEvent, GinCommand] = GinGame()
RUMMY: Game[RummyRules, RummyState, RummyEvent, RummyCommand] = RummyGame()

# By kind, for the service, which handles every game alike (its types come from the kind at run
# time, hence ``Any``).
GAMES: dict[str, Game[Any, Any, Any, Any]] = {
    game.kind: game for game in (HOOLA, KOIKOI, GIN, RUMMY)
}


def game(kind: str) -> Game[Any, Any, Any, Any]:
    """The game of ``kind``; raises ``KeyError`` for a kind the engine does not play."""
    return GAMES[kind]
