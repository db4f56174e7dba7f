"""The Koi-Koi position and the fold that builds it from events (``evolve``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from croupier.engine.clock import NO_CLOCK, Clock
from croupier.engine.koikoi.cards import Card, month
from croupier.engine.koikoi.events import (
    CaptureChosen,
    CardPlayed,
    CardTurned,
    KoiKoiCalled,
    KoiKoiEvent,
    MatchEnded,
    MatchStarted,
    RoundDealt,
    RoundEnded,
    SeatForfeited,
    ShobuCalled,
    YakuFormed,
)
from croupier.engine.koikoi.rules import KoiKoiRules
from croupier.engine.shared import replace_at, replaced


class Phase(Enum):
    NOT_STARTED = 0
    # The seat to act plays a card from its hand.
    PLAY = 1
    # The turned stock card matches two field cards: the seat to act names one.
    CHOOSE_CAPTURE = 2
    # The turn formed or raised a yaku: the seat to act says koi-koi or shobu.
    DECIDE = 3
    ROUND_OVER = 4
    MATCH_OVER = 5


@dataclass(frozen=True)
class KoiKoiState:
    rules: KoiKoiRules = KoiKoiRules()
    seats: int = 2
    commitment: str = ""
    client_seeds: tuple[str, ...] = ()
    round: int = 0
    dealer: int = 0
    turn: int = 0
    phase: Phase = Phase.NOT_STARTED
    hands: tuple[tuple[Card, ...], ...] = ()
    field: tuple[Card, ...] = ()
    stock: tuple[Card, ...] = ()
    captured: tuple[tuple[Card, ...], ...] = ((), ())
    # The seat to act's captures when its turn began (to tell a formed or raised yaku).
    turn_start: tuple[Card, ...] = ()
    # The turned card waiting for its capture to be named.
    turned: Card | None = None
    koi_koi_by: int | None = None
    totals: tuple[int, ...] = (0, 0)
    result: RoundEnded | None = None
    ended: MatchEnded | None = None
    clock: Clock = NO_CLOCK

    def other(self, seat: int) -> int:
        return 1 - seat

    def matches(self, card: Card) -> tuple[Card, ...]:
        """The field cards of ``card``'s month."""
        return tuple(c for c in self.field if month(c) == month(card))

    @property
    def last_turn(self) -> bool:
        """Whether both hands are empty: the turn just played was the round's last."""
        return not any(self.hands)


def _take(state: KoiKoiState, seat: int, card: Card, captured: tuple[Card, ...]) -> KoiKoiState:
    """``card`` takes ``captured`` from the field into ``seat``'s pile, or joins the field."""
    if not captured:
        return replaced(state, field=state.field + (card,))
    field = tuple(c for c in state.field if c not in captured)
    pile = state.captured[seat] + (card,) + captured
    return replaced(state, field=field, captured=replace_at(state.captured, seat, pile))


def _pass_turn(state: KoiKoiState, seat: int) -> KoiKoiState:
    nxt = state.other(seat)
    return replaced(state, turn=nxt, phase=Phase.PLAY, turned=None, turn_start=state.captured[nxt])


def evolve(state: KoiKoiState, event: KoiKoiEvent) -> KoiKoiState:
    """The state after ``event``. Pure; never fails on an event ``decide`` produced."""
    match event:
        case MatchStarted(rules=rules, seats=seats, commitment=commitment, client_seeds=seeds):
            return replaced(
                state, rules=rules, seats=seats, commitment=commitment, client_seeds=seeds
            )
        case RoundDealt(
            round=round_no, dealer=dealer, hands=hands, field=field, stock=stock, totals=totals
        ):
            return replaced(
                state,
                round=round_no,
                dealer=dealer,
                turn=dealer,
                phase=Phase.PLAY,
                hands=tuple(h.cards for h in hands),
                field=field,
                stock=stock,
                captured=((), ()),
                turn_start=(),
                turned=None,
                koi_koi_by=None,
                totals=totals,
                result=None,
            )
        case CardPlayed(seat=seat, card=card, captured=captured):
            state = replaced(
                state,
                hands=replace_at(
                    state.hands, seat, tuple(c for c in state.hands[seat] if c != card)
                ),
            )
            return _take(state, seat, card, captured)
        case CardTurned(seat=seat, card=card, captured=captured, awaiting_choice=waiting):
            state = replaced(state, stock=state.stock[1:])
            if waiting:
                return replaced(state, phase=Phase.CHOOSE_CAPTURE, turned=card)
            return _pass_turn(_take(state, seat, card, captured), seat)
        case CaptureChosen(seat=seat, card=card, captured=captured):
            return _pass_turn(_take(state, seat, card, captured), seat)
        case YakuFormed(seat=seat):
            # The turn formed or raised a yaku: the seat keeps the turn to decide.
            return replaced(state, turn=seat, phase=Phase.DECIDE)
        case KoiKoiCalled(seat=seat):
            return _pass_turn(replaced(state, koi_koi_by=seat), seat)
        case ShobuCalled() | SeatForfeited():
            return state  # the match's end follows at once
        case RoundEnded(totals=totals):
            return replaced(state, phase=Phase.ROUND_OVER, result=event, totals=totals, turned=None)
        case MatchEnded():
            return replaced(state, phase=Phase.MATCH_OVER, ended=event)
    raise TypeError(f"not a Koi-Koi event: {event!r}")
