"""The Gin Rummy position and the fold that builds it from events (``evolve``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from croupier.engine.cards import Card
from croupier.engine.clock import NO_CLOCK, Clock
from croupier.engine.gin.events import (
    CardDiscarded,
    CardDrawn,
    CardLaidOff,
    GinEvent,
    HandDealt,
    HandEnded,
    Knocked,
    LayOffsEnded,
    MatchEnded,
    MatchStarted,
    SeatForfeited,
    UpcardPassed,
)
from croupier.engine.gin.rules import GinRules
from croupier.engine.meld_solver import Meld
from croupier.engine.shared import replace_at, replaced, without


class Phase(Enum):
    NOT_STARTED = 0
    # The non-dealer, then the dealer, may take the first upcard or pass.
    FIRST_UPCARD = 1
    # The seat to act draws (from the stock, or the discard pile's top).
    DRAW = 2
    # The seat to act holds eleven cards: it discards, or knocks.
    DISCARD = 3
    # A seat knocked (not gin): the defender lays off onto its melds, then ends.
    LAY_OFF = 4
    HAND_OVER = 5
    MATCH_OVER = 6


@dataclass(frozen=True)
class GinState:
    rules: GinRules = GinRules()
    seats: int = 2
    commitment: str = ""
    client_seeds: tuple[str, ...] = ()
    hand: int = 0
    dealer: int = 0
    turn: int = 0
    phase: Phase = Phase.NOT_STARTED
    hands: tuple[tuple[Card, ...], ...] = ((), ())
    stock: tuple[Card, ...] = ()
    discards: tuple[Card, ...] = ()
    # First-upcard passes so far; both passed: the non-dealer's first draw is from the stock.
    passes: int = 0
    upcard_refused: bool = False
    # The card taken from the discard pile this turn: it may not be discarded again at once.
    taken: Card | None = None
    knock: Knocked | None = None
    # The knocker's melds with the defender's lay-offs.
    table: tuple[Meld, ...] = ()
    totals: tuple[int, ...] = (0, 0)
    result: HandEnded | None = None
    ended: MatchEnded | None = None
    clock: Clock = NO_CLOCK

    def other(self, seat: int) -> int:
        return 1 - seat

    @property
    def non_dealer(self) -> int:
        return 1 - self.dealer

    @property
    def discard_top(self) -> Card | None:
        return self.discards[-1] if self.discards else None


def evolve(state: GinState, event: GinEvent) -> GinState:
    """The state after ``event``. Pure; never fails on an event ``decide`` produced."""
    match event:
        case MatchStarted(rules=rules, seats=seats, commitment=commitment, client_seeds=seeds):
            return replaced(
                state, rules=rules, seats=seats, commitment=commitment, client_seeds=seeds
            )
        case HandDealt(
            hand=number, dealer=dealer, hands=hands, upcard=upcard, stock=stock, totals=totals
        ):
            return replaced(
                state,
                hand=number,
                dealer=dealer,
                turn=1 - dealer,
                phase=Phase.FIRST_UPCARD,
                hands=tuple(h.cards for h in hands),
                stock=stock,
                discards=(upcard,),
                passes=0,
                upcard_refused=False,
                taken=None,
                knock=None,
                table=(),
                totals=totals,
                result=None,
            )
        case UpcardPassed(seat=seat):
            passes = state.passes + 1
            if passes == 2:  # both passed: the non-dealer draws from the stock
                return replaced(
                    state,
                    passes=passes,
                    turn=state.non_dealer,
                    phase=Phase.DRAW,
                    upcard_refused=True,
                )
            return replaced(state, passes=passes, turn=state.other(seat))
        case CardDrawn(seat=seat, card=card, from_discard=from_discard):
            if from_discard:
                taken = state.discards[-1]
                state = replaced(state, discards=state.discards[:-1], taken=taken)
            else:
                taken = card if card is not None else state.stock[0]
                state = replaced(state, stock=state.stock[1:], taken=None)
            return replaced(
                state,
                hands=replace_at(state.hands, seat, state.hands[seat] + (taken,)),
                phase=Phase.DISCARD,
                upcard_refused=False,
            )
        case CardDiscarded(seat=seat, card=card):
            return replaced(
                state,
                hands=replace_at(state.hands, seat, without(state.hands[seat], (card,))),
                discards=state.discards + (card,),
                turn=state.other(seat),
                phase=Phase.DRAW,
                taken=None,
            )
        case Knocked(seat=seat, card=card, melds=melds):
            held = (
                replace_at(state.hands, seat, without(state.hands[seat], (card,)))
                if card
                else state.hands
            )
            discards = state.discards + (card,) if card else state.discards
            return replaced(
                state,
                hands=held,
                discards=discards,
                knock=event,
                table=melds,
                turn=state.other(seat),
                phase=Phase.LAY_OFF,
                taken=None,
            )
        case CardLaidOff(seat=seat, card=card, meld=index, after=after):
            return replaced(
                state,
                hands=replace_at(state.hands, seat, without(state.hands[seat], (card,))),
                table=replace_at(state.table, index, after),
            )
        case LayOffsEnded():
            return state
        case SeatForfeited():
            return state  # the match's end follows at once
        case HandEnded(totals=totals):
            return replaced(state, phase=Phase.HAND_OVER, result=event, totals=totals)
        case MatchEnded():
            return replaced(state, phase=Phase.MATCH_OVER, ended=event)
    raise TypeError(f"not a Gin Rummy event: {event!r}")
