"""Koi-Koi commands (what a seat asks for) and events (what happened), as immutable records.

Each record mirrors the protobuf message of the same name in ``proto/croupier/v1/koikoi.proto``.
Events carry everything the fold needs (the deal records its deck), and each round's first event
carries what the match hands on to it (dealer, totals), so each round replays on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from croupier.engine.clock import (
    CameBack,
    ComeBack,
    EndGame,
    StudioEndedGame,
    TurnRestarted,
    TurnTimedOut,
)
from croupier.engine.koikoi.cards import Card
from croupier.engine.koikoi.rules import KoiKoiRules
from croupier.engine.koikoi.yaku import Yaku
from croupier.engine.settlement import Settlement

# --- commands ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlayCard:
    """Play ``card`` from the hand (step 1 of a turn). ``capture`` names the field card it takes
    when two field cards share its month; otherwise it is empty."""

    card: Card = ""
    capture: Card = ""


@dataclass(frozen=True)
class ChooseCapture:
    """Name the field card the turned stock card takes, when two share its month (step 2)."""

    card: Card = ""


@dataclass(frozen=True)
class KoiKoi:
    """Go on after forming or raising a yaku (koi-koi, docs/rules/koikoi.md §2.5)."""


@dataclass(frozen=True)
class Shobu:
    """End the round and score (shobu, docs/rules/koikoi.md §2.5)."""


@dataclass(frozen=True)
class NextRound:
    """Deal the match's next round (either seat, between rounds)."""


KoiKoiCommand = PlayCard | ChooseCapture | KoiKoi | Shobu | NextRound | ComeBack | EndGame


# --- events -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hand:
    seat: int
    cards: tuple[Card, ...]
    count: int


@dataclass(frozen=True)
class DealerDraw:
    """A card turned to decide the first dealer (the earlier month deals)."""

    seat: int
    card: Card


@dataclass(frozen=True)
class MatchStarted:
    rules: KoiKoiRules
    seats: int
    commitment: str
    client_seeds: tuple[str, ...]
    engine_version: str


@dataclass(frozen=True)
class RoundDealt:
    """A round's deal, with what the match carries into it (dealer, totals, round number)."""

    round: int
    dealer: int
    hands: tuple[Hand, ...]
    field: tuple[Card, ...]
    stock: tuple[Card, ...]
    stock_count: int
    totals: tuple[int, ...]
    redeals: int = 0
    dealer_draws: tuple[DealerDraw, ...] = ()


@dataclass(frozen=True)
class CardPlayed:
    """A seat played a card from its hand and took ``captured`` from the field with it (none:
    the card stays on the field)."""

    seat: int
    card: Card
    captured: tuple[Card, ...]


@dataclass(frozen=True)
class CardTurned:
    """The seat turned the stock's top card and took ``captured`` with it; ``awaiting_choice``:
    two field cards match and the seat names one next."""

    seat: int
    card: Card
    captured: tuple[Card, ...]
    awaiting_choice: bool = False


@dataclass(frozen=True)
class CaptureChosen:
    """The turned card took the field card the seat named."""

    seat: int
    card: Card
    captured: tuple[Card, ...]


@dataclass(frozen=True)
class YakuFormed:
    """The turn formed or raised a yaku: the seat's yaku now, and their points."""

    seat: int
    yaku: tuple[Yaku, ...]
    points: int


@dataclass(frozen=True)
class KoiKoiCalled:
    seat: int


@dataclass(frozen=True)
class ShobuCalled:
    seat: int


@dataclass(frozen=True)
class RoundEnded:
    """The round is over: its winner (none when drawn), the winning yaku, the score and its
    itemized settlement, every remaining hand, and the match totals after it."""

    round: int
    outcome: str
    winner: int | None
    yaku: tuple[Yaku, ...]
    points: int
    hands: tuple[Hand, ...]
    totals: tuple[int, ...]
    settlement: Settlement


@dataclass(frozen=True)
class SeatForfeited:
    """``seat`` was away (``max_timeouts`` time-outs in a row) with ``forfeit_when_away`` set: it
    forfeits the match during ``round``, which is not played out. The match's end follows, with a
    settlement against it."""

    seat: int
    round: int


@dataclass(frozen=True)
class MatchEnded:
    """The match is over: the totals and the settlement of their difference (docs/rules/koikoi.md §2.7), or
    after a forfeit the settlement against the seat that forfeited (outcome ``FORFEIT``)."""

    rounds: int
    totals: tuple[int, ...]
    settlement: Settlement


KoiKoiEvent = (
    TurnTimedOut
    | TurnRestarted
    | CameBack
    | StudioEndedGame
    | MatchStarted
    | RoundDealt
    | CardPlayed
    | CardTurned
    | CaptureChosen
    | YakuFormed
    | KoiKoiCalled
    | ShobuCalled
    | RoundEnded
    | SeatForfeited
    | MatchEnded
)
