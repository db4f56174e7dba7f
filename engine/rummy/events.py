"""Rummy commands (what a seat asks for) and events (what happened), as immutable records.

Each record mirrors the protobuf message of the same name in ``proto/croupier/v1/rummy.proto``
(prefixed ``Rummy`` there where another game uses the plain name).
"""

from __future__ import annotations

from dataclasses import dataclass

from croupier.engine.cards import Card
from croupier.engine.clock import CameBack as CameBack
from croupier.engine.clock import ComeBack as ComeBack
from croupier.engine.clock import EndGame as EndGame
from croupier.engine.clock import StudioEndedGame as StudioEndedGame
from croupier.engine.clock import TurnRestarted, TurnTimedOut
from croupier.engine.meld_solver import JokerAs, MeldKind
from croupier.engine.rummy.rules import RummyRules
from croupier.engine.settlement import Settlement, SettlementLine
from croupier.engine.shared import DealerDraw as DealerDraw


@dataclass(frozen=True)
class MeldCards:
    """Cards to lay down as one meld, in any order; ``jokers`` names what jokers stand for where
    they could stand for several cards."""

    cards: tuple[Card, ...] = ()
    jokers: tuple[JokerAs, ...] = ()


@dataclass(frozen=True)
class LayOffCards:
    """Cards to add to the table meld ``meld_id``."""

    meld_id: int = 0
    cards: tuple[Card, ...] = ()
    jokers: tuple[JokerAs, ...] = ()


# --- commands ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DrawStock:
    """Take the stock's top card."""


@dataclass(frozen=True)
class TakeDiscard:
    """Take the discard pile's top card and use it at once (docs/rules/rummy.md §3.1): in new ``melds`` (for
    a player who has not opened: the whole opening), or in ``lay_off``."""

    melds: tuple[MeldCards, ...] = ()
    lay_off: LayOffCards | None = None


@dataclass(frozen=True)
class LayDown:
    """Lay down new melds (a player's first lay-down is its opening, docs/rules/rummy.md §3.3)."""

    melds: tuple[MeldCards, ...] = ()


@dataclass(frozen=True)
class LayOff:
    meld_id: int = 0
    cards: tuple[Card, ...] = ()
    jokers: tuple[JokerAs, ...] = ()


@dataclass(frozen=True)
class SwapJoker:
    """Give ``card`` for the joker it is in table meld ``meld_id`` and play the joker at once: in
    new ``melds`` with cards from the hand, or in ``lay_off`` (docs/rules/rummy.md §3.3)."""

    meld_id: int = 0
    card: Card = ""
    melds: tuple[MeldCards, ...] = ()
    lay_off: LayOffCards | None = None


@dataclass(frozen=True)
class Discard:
    card: Card = ""


RummyCommand = DrawStock | TakeDiscard | LayDown | LayOff | SwapJoker | Discard | ComeBack | EndGame


# --- events -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hand:
    seat: int
    cards: tuple[Card, ...]
    count: int


@dataclass(frozen=True)
class TableMeld:
    id: int
    owner: int
    kind: MeldKind
    cards: tuple[Card, ...]
    jokers: tuple[JokerAs, ...] = ()


@dataclass(frozen=True)
class GameStarted:
    rules: RummyRules
    seats: int
    commitment: str
    client_seeds: tuple[str, ...]
    engine_version: str


@dataclass(frozen=True)
class RoundDealt:
    dealer: int
    hands: tuple[Hand, ...]
    upcard: Card
    stock: tuple[Card, ...]
    stock_count: int
    # With ``first_dealer_drawn``: how the dealer was drawn.
    dealer_draws: tuple[DealerDraw, ...] = ()


@dataclass(frozen=True)
class CardDrawn:
    seat: int
    card: Card | None


@dataclass(frozen=True)
class DiscardTaken:
    seat: int
    card: Card


@dataclass(frozen=True)
class MeldsLaidDown:
    """New melds on the table; ``opening`` is the total of a first lay-down (0 otherwise)."""

    seat: int
    melds: tuple[TableMeld, ...]
    opening: int = 0


@dataclass(frozen=True)
class CardsLaidOff:
    seat: int
    cards: tuple[Card, ...]
    meld: TableMeld


@dataclass(frozen=True)
class JokerSwapped:
    """``card`` from the hand replaced ``joker`` in a table meld; the joker went to the hand (and
    is played by the events that follow in the same command)."""

    seat: int
    card: Card
    joker: Card
    meld: TableMeld


@dataclass(frozen=True)
class CardDiscarded:
    seat: int
    card: Card


@dataclass(frozen=True)
class StockReshuffled:
    stock: tuple[Card, ...]
    stock_count: int
    reshuffle: int


@dataclass(frozen=True)
class SeatForfeited:
    """``seat`` became away with ``forfeit_when_away`` set and forfeits (docs/rules/common.md §5.1): its
    ``hand`` is laid face up and out of play, and it pays ``hand_value`` × ``stake_per_point`` to
    every seat still in play (``lines``), as if each had gone out. Its turns are skipped from now
    on; the round's settlement repeats these lines."""

    seat: int
    hand: Hand
    hand_value: int
    lines: tuple[SettlementLine, ...]


@dataclass(frozen=True)
class RoundEnded:
    """The round is over: "WENT_OUT" (``winner`` emptied its hand), "STOCK_OUT" (no winner) or
    "FORFEIT" (``winner`` is the last seat in play: every other seat forfeited), every hand left,
    what each costs, and the itemized settlement (a forfeit's lines included)."""

    outcome: str
    winner: int | None
    hands: tuple[Hand, ...]
    hand_values: tuple[int, ...]
    settlement: Settlement


RummyEvent = (
    TurnTimedOut
    | TurnRestarted
    | GameStarted
    | RoundDealt
    | CardDrawn
    | DiscardTaken
    | MeldsLaidDown
    | CardsLaidOff
    | JokerSwapped
    | CardDiscarded
    | StockReshuffled
    | CameBack
    | StudioEndedGame
    | SeatForfeited
    | RoundEnded
)
