"""Hoola commands (what a seat asks for) and events (what happened), as immutable records.

Events are named in the past tense and carry everything a fold needs: the deal records the deck it
dealt, so folding a log never re-derives a shuffle (a replay verifier re-derives and compares).
Each record mirrors the protobuf message of the same name in ``proto/croupier/v1/hoola.proto``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from croupier.engine.cards import Card
from croupier.engine.clock import (
    CameBack,
    ComeBack,
    EndGame,
    StudioEndedGame,
    TurnRestarted,
    TurnTimedOut,
)
from croupier.engine.hoola.melds import Bright, TableMeld
from croupier.engine.hoola.rules import HoolaRules
from croupier.engine.meld_solver import JokerAs
from croupier.engine.settlement import Settlement
from croupier.engine.shared import DealerDraw as DealerDraw


class Combination(Enum):
    FOUR_SEVENS = 1
    LOW_HAND = 2
    HIGH_HAND = 3
    STRAIGHT_FLUSH = 4


# --- commands ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Draw:
    """Take the top card of the stock."""


@dataclass(frozen=True)
class ThankYou:
    """Take the top discard and meld it at once with ``cards`` from the hand (docs/rules/hoola.md §1.2).

    ``jokers`` names what jokers stand for where they could stand for several cards.
    """

    cards: tuple[Card, ...] = ()
    jokers: tuple[JokerAs, ...] = ()


@dataclass(frozen=True)
class Meld:
    cards: tuple[Card, ...] = ()
    jokers: tuple[JokerAs, ...] = ()


@dataclass(frozen=True)
class LayOff:
    meld_id: int = 0
    cards: tuple[Card, ...] = ()
    jokers: tuple[JokerAs, ...] = ()


@dataclass(frozen=True)
class Discard:
    card: Card = ""


@dataclass(frozen=True)
class Stop:
    """Stop the round at the start of one's turn (docs/rules/hoola.md §1.5.2)."""


@dataclass(frozen=True)
class Declare:
    combination: Combination | None = None


@dataclass(frozen=True)
class BindSevens:
    """Join two 7s from the hand to a lone 7 on the table (7-binding, docs/rules/hoola.md §1.3)."""

    meld_id: int = 0
    cards: tuple[Card, ...] = ()


@dataclass(frozen=True)
class NextRound:
    """Deal the table's next round (any seat, once a round is over; docs/rules/hoola.md §1.8)."""


@dataclass(frozen=True)
class CloseTable:
    """Close the table and settle it (any seat, once a round is over; docs/rules/hoola.md §1.8)."""


@dataclass(frozen=True)
class LeaveTable:
    """Leave the table (any seat, once a round is over; docs/rules/hoola.md §1.8, §5.1): the table closes,
    settling the balances so far. :class:`CloseTable`, the older command, closes it the same way
    without naming a seat that left; both stay (recorded games hold ``CloseTable``)."""


@dataclass(frozen=True)
class Play:
    """Play this round (the play-or-sit-out round of six or seven seats, docs/rules/hoola.md §1.9)."""


@dataclass(frozen=True)
class SitOut:
    """Sit this round out voluntarily (paid nothing; docs/rules/hoola.md §1.9)."""


HoolaCommand = (
    ComeBack
    | EndGame
    | Draw
    | ThankYou
    | Meld
    | LayOff
    | Discard
    | Stop
    | Declare
    | BindSevens
    | NextRound
    | CloseTable
    | Play
    | SitOut
    | LeaveTable
)


# --- events -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hand:
    seat: int
    cards: tuple[Card, ...]
    count: int


@dataclass(frozen=True)
class GameStarted:
    rules: HoolaRules
    seats: int
    commitment: str
    client_seeds: tuple[str, ...]
    engine_version: str


@dataclass(frozen=True)
class RoundDealt:
    """A round's deal, with everything the table carries into it (so each round replays alone)."""

    round: int
    dealer: int
    hands: tuple[Hand, ...]
    upcard: Card
    stock: tuple[Card, ...]
    stock_count: int
    table_multiplier: int = 1
    hoola_streak: int = 0
    balances: tuple[int, ...] = ()
    # The first round's, with ``first_dealer_drawn``: how its dealer was drawn.
    dealer_draws: tuple[DealerDraw, ...] = ()


@dataclass(frozen=True)
class PlayDeclared:
    """A seat said it plays this round (docs/rules/hoola.md §1.9)."""

    seat: int


@dataclass(frozen=True)
class SatOut:
    """A seat sits this round out: by choice (``voluntary``), or because five already play.

    An involuntary sitter-out's hand is revealed with its brights, and each playing seat owes it
    ``compensation`` (``base_stake`` per bright), paid in the round's settlement. A voluntary
    sitter-out's hand is hidden from the other seats.
    """

    seat: int
    voluntary: bool
    hand: tuple[Card, ...]
    brights: tuple[Bright, ...] = ()
    compensation: int = 0


@dataclass(frozen=True)
class PlayBegan:
    """Every seat has chosen: the sitters-out's cards were shuffled into the stock, and the
    ``players`` play the round from the first of them after the dealer."""

    players: tuple[int, ...]
    stock: tuple[Card, ...]
    stock_count: int


@dataclass(frozen=True)
class CardDrawn:
    seat: int
    card: Card | None


@dataclass(frozen=True)
class ClaimMade:
    """An out-of-turn thank-you claim, recorded while the claim window is open (battle Hoola,
    ``NEAREST_IN_TURN``): the nearest claimant after the discarder wins when it closes."""

    seat: int
    cards: tuple[Card, ...]
    jokers: tuple[JokerAs, ...]
    at_ms: int


@dataclass(frozen=True)
class DiscardTaken:
    seat: int
    card: Card
    discarder: int | None
    meld: TableMeld


@dataclass(frozen=True)
class MeldMade:
    seat: int
    meld: TableMeld


@dataclass(frozen=True)
class CardsLaidOff:
    seat: int
    cards: tuple[Card, ...]
    meld: TableMeld


@dataclass(frozen=True)
class SevensBound:
    """A seat joined two 7s to a lone 7: a set of three 7s (not the seat's own meld)."""

    seat: int
    cards: tuple[Card, ...]
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
class StopCalled:
    seat: int
    hand_value: int


@dataclass(frozen=True)
class CombinationDeclared:
    seat: int
    combination: Combination


@dataclass(frozen=True)
class RoundEnded:
    round: int
    outcome: str
    winners: tuple[int, ...]
    hands: tuple[Hand, ...]
    hand_values: tuple[int, ...]
    hoola: bool
    perfect_hoola: bool
    thank_you_hoola: bool
    settlement: Settlement


@dataclass(frozen=True)
class TableClosed:
    """The table is over: its rounds and the settlement of the running balances."""

    rounds: int
    settlement: Settlement


@dataclass(frozen=True)
class SeatLeft:
    """A seat left the table between rounds (its ``LeaveTable``, or away at a round's end): the
    :class:`TableClosed` that follows settles the balances so far."""

    seat: int


@dataclass(frozen=True)
class SeatForfeited:
    """An away seat forfeited (``forfeit_when_away``, docs/rules/common.md §5.1): it is out of the table. If it
    was dealt into the round being played, it pays that round's settlement as its last-ranked,
    unmelded loser; play goes on without it while two seats can still play."""

    seat: int


HoolaEvent = (
    TurnTimedOut
    | TurnRestarted
    | CameBack
    | StudioEndedGame
    | GameStarted
    | RoundDealt
    | CardDrawn
    | DiscardTaken
    | MeldMade
    | CardsLaidOff
    | CardDiscarded
    | StockReshuffled
    | StopCalled
    | CombinationDeclared
    | RoundEnded
    | TableClosed
    | SevensBound
    | ClaimMade
    | PlayDeclared
    | SatOut
    | PlayBegan
    | SeatLeft
    | SeatForfeited
)
