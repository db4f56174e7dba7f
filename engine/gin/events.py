"""Gin Rummy commands (what a seat asks for) and events (what happened), as immutable records.

Each record mirrors the protobuf message of the same name in ``proto/croupier/v1/gin.proto``
(prefixed ``Gin`` there where another game uses the plain name).
"""

from __future__ import annotations

from dataclasses import dataclass

from croupier.engine.cards import Card
from croupier.engine.clock import (
    CameBack,
    ComeBack,
    EndGame,
    StudioEndedGame,
    TurnRestarted,
    TurnTimedOut,
)
from croupier.engine.gin.rules import GinRules
from croupier.engine.meld_solver import Meld
from croupier.engine.settlement import Settlement
from croupier.engine.shared import DealerDraw as DealerDraw

# --- commands ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DrawStock:
    """Take the stock's top card."""


@dataclass(frozen=True)
class DrawDiscard:
    """Take the discard pile's top card (the first upcard too)."""


@dataclass(frozen=True)
class Pass:
    """Refuse the first upcard; at the wall, end the hand as a wash."""


@dataclass(frozen=True)
class Discard:
    card: Card = ""


@dataclass(frozen=True)
class KnockMeld:
    """One meld a knock names: its cards, in any order."""

    cards: tuple[Card, ...] = ()


@dataclass(frozen=True)
class Knock:
    """Discard ``card`` and knock (gin when nothing is left unmelded); ``card`` empty: big gin,
    all eleven cards melded. ``melds`` optionally names the knocker's melds, one of the
    arrangements of its hand that leave the least deadwood (docs/rules/gin.md §4); unnamed, the engine
    chooses."""

    card: Card = ""
    melds: tuple[KnockMeld, ...] = ()


@dataclass(frozen=True)
class LayOff:
    """The defender adds ``card`` to the knocker's meld number ``meld`` (0-based)."""

    card: Card = ""
    meld: int = 0


@dataclass(frozen=True)
class EndLayOffs:
    """The defender has laid off all it will: score the hand."""


@dataclass(frozen=True)
class NextHand:
    """Deal the match's next hand (either seat, between hands)."""


GinCommand = (
    DrawStock
    | DrawDiscard
    | Pass
    | Discard
    | Knock
    | LayOff
    | EndLayOffs
    | NextHand
    | ComeBack
    | EndGame
)


# --- events -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hand:
    seat: int
    cards: tuple[Card, ...]
    count: int


@dataclass(frozen=True)
class MatchStarted:
    rules: GinRules
    seats: int
    commitment: str
    client_seeds: tuple[str, ...]
    engine_version: str


@dataclass(frozen=True)
class HandDealt:
    """A hand's deal, with what the match carries into it."""

    hand: int
    dealer: int
    hands: tuple[Hand, ...]
    upcard: Card
    stock: tuple[Card, ...]
    stock_count: int
    totals: tuple[int, ...]
    dealer_draws: tuple[DealerDraw, ...] = ()


@dataclass(frozen=True)
class UpcardPassed:
    seat: int


@dataclass(frozen=True)
class CardDrawn:
    """A seat took a card: the discard's top (public) or the stock's (hidden from the other)."""

    seat: int
    card: Card | None
    from_discard: bool


@dataclass(frozen=True)
class CardDiscarded:
    seat: int
    card: Card


@dataclass(frozen=True)
class Knocked:
    """A seat knocked: its discard, its melds and its deadwood, all shown."""

    seat: int
    card: Card
    melds: tuple[Meld, ...]
    deadwood_cards: tuple[Card, ...]
    deadwood: int
    gin: bool
    big_gin: bool


@dataclass(frozen=True)
class CardLaidOff:
    seat: int
    card: Card
    meld: int
    after: Meld


@dataclass(frozen=True)
class LayOffsEnded:
    """The defender's hand, shown: its melds and its deadwood after its lay-offs."""

    seat: int
    melds: tuple[Meld, ...]
    deadwood_cards: tuple[Card, ...]
    deadwood: int


@dataclass(frozen=True)
class HandEnded:
    """The hand is over: "KNOCK", "GIN", "BIG_GIN", "UNDERCUT", "NO_SCORE" or "WASH"; the
    winner (none for a wash or an even count), its points, both deadwood counts and the totals."""

    hand: int
    outcome: str
    winner: int | None
    points: int
    knocker: int | None
    deadwood: tuple[int, ...]
    hands: tuple[Hand, ...]
    totals: tuple[int, ...]
    settlement: Settlement


@dataclass(frozen=True)
class SeatForfeited:
    """``seat`` was away (``max_timeouts`` time-outs in a row) with ``forfeit_when_away`` set: it
    forfeits the match during ``hand``, which is not played out. The match's end follows, with a
    settlement against it."""

    seat: int
    hand: int


@dataclass(frozen=True)
class MatchEnded:
    """The match is over: a seat reached ``match_points`` and the settlement pays the difference,
    or after a forfeit the settlement is against the seat that forfeited (outcome ``FORFEIT``)."""

    hands: int
    totals: tuple[int, ...]
    settlement: Settlement


GinEvent = (
    TurnTimedOut
    | TurnRestarted
    | CameBack
    | StudioEndedGame
    | MatchStarted
    | HandDealt
    | UpcardPassed
    | CardDrawn
    | CardDiscarded
    | Knocked
    | CardLaidOff
    | LayOffsEnded
    | HandEnded
    | SeatForfeited
    | MatchEnded
)
