"""The Rummy position and the fold that builds it from events (``evolve``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from croupier.engine.cards import Card
from croupier.engine.clock import NO_CLOCK, Clock
from croupier.engine.rummy.events import (
    CameBack,
    CardDiscarded,
    CardDrawn,
    CardsLaidOff,
    DiscardTaken,
    GameStarted,
    JokerSwapped,
    MeldsLaidDown,
    RoundDealt,
    RoundEnded,
    RummyEvent,
    SeatForfeited,
    StockReshuffled,
    TableMeld,
)
from croupier.engine.rummy.rules import RummyRules
from croupier.engine.shared import placed, replace_at, replaced, without


class Phase(Enum):
    NOT_STARTED = 0
    # The seat to act takes a card: from the stock, or the discard into a meld at once.
    TAKE = 1
    # The seat to act lays down, lays off, swaps jokers, then discards.
    PLAY = 2
    ROUND_OVER = 3


@dataclass(frozen=True)
class RummyState:
    rules: RummyRules = RummyRules()
    seats: int = 0
    commitment: str = ""
    client_seeds: tuple[str, ...] = ()
    dealer: int = 0
    turn: int = 0
    phase: Phase = Phase.NOT_STARTED
    hands: tuple[tuple[Card, ...], ...] = ()
    stock: tuple[Card, ...] = ()
    discards: tuple[Card, ...] = ()
    melds: tuple[TableMeld, ...] = ()
    opened: tuple[bool, ...] = ()
    reshuffles: int = 0
    result: RoundEnded | None = None
    clock: Clock = NO_CLOCK
    # The forfeits so far (docs/rules/common.md §5.1), in order: those seats are out of play.
    forfeits: tuple[SeatForfeited, ...] = ()

    @property
    def discard_top(self) -> Card | None:
        return self.discards[-1] if self.discards else None

    def meld(self, meld_id: int) -> TableMeld | None:
        return next((m for m in self.melds if m.id == meld_id), None)

    def next_meld_id(self) -> int:
        return max((m.id for m in self.melds), default=0) + 1

    def in_play(self, seat: int) -> bool:
        """Whether ``seat`` still plays the round (it has not forfeited)."""
        return all(f.seat != seat for f in self.forfeits)

    def is_away(self, seat: int) -> bool:
        """Whether ``seat``'s turns are forced (docs/rules/common.md §5.1; only with a turn clock).
        No seat, or one past the table (a forged replay's), is never away."""
        return 0 <= seat < len(self.clock.away) and self.clock.away[seat]

    def seats_in_play(self) -> tuple[int, ...]:
        return tuple(s for s in range(self.seats) if self.in_play(s))

    def next_in_play(self, seat: int) -> int:
        """The seat to play after ``seat``: the next one to its left that has not forfeited."""
        for step in range(1, self.seats + 1):
            after = (seat + step) % self.seats
            if self.in_play(after):
                return after
        return seat


def evolve(state: RummyState, event: RummyEvent) -> RummyState:
    """The state after ``event``. Pure; never fails on an event ``decide`` produced."""
    match event:
        case GameStarted(rules=rules, seats=seats, commitment=commitment, client_seeds=seeds):
            return replaced(
                state,
                rules=rules,
                seats=seats,
                commitment=commitment,
                client_seeds=seeds,
                opened=(False,) * seats,
            )
        case RoundDealt(dealer=dealer, hands=hands, upcard=upcard, stock=stock):
            return replaced(
                state,
                dealer=dealer,
                turn=(dealer + 1) % state.seats,
                phase=Phase.TAKE,
                hands=tuple(h.cards for h in hands),
                stock=stock,
                discards=(upcard,),
            )
        case CardDrawn(seat=seat, card=card):
            drawn = card if card is not None else state.stock[0]
            return replaced(
                state,
                stock=state.stock[1:],
                phase=Phase.PLAY,
                hands=replace_at(state.hands, seat, state.hands[seat] + (drawn,)),
            )
        case DiscardTaken(seat=seat, card=card):
            return replaced(
                state,
                discards=state.discards[:-1],
                phase=Phase.PLAY,
                hands=replace_at(state.hands, seat, state.hands[seat] + (card,)),
            )
        case MeldsLaidDown(seat=seat, melds=melds):
            table = state.melds
            for meld in melds:
                table = placed(table, meld)
            used = tuple(c for m in melds for c in m.cards)
            return replaced(
                state,
                melds=table,
                opened=replace_at(state.opened, seat, True),
                hands=replace_at(state.hands, seat, without(state.hands[seat], used)),
            )
        case CardsLaidOff(seat=seat, cards=cards, meld=meld):
            return replaced(
                state,
                melds=placed(state.melds, meld),
                hands=replace_at(state.hands, seat, without(state.hands[seat], cards)),
            )
        case JokerSwapped(seat=seat, card=card, joker=joker, meld=meld):
            hand = without(state.hands[seat], (card,)) + (joker,)
            return replaced(
                state, melds=placed(state.melds, meld), hands=replace_at(state.hands, seat, hand)
            )
        case CardDiscarded(seat=seat, card=card):
            state = replaced(
                state,
                discards=state.discards + (card,),
                hands=replace_at(state.hands, seat, without(state.hands[seat], (card,))),
            )
            return replaced(state, turn=state.next_in_play(seat), phase=Phase.TAKE)
        case StockReshuffled(stock=stock, reshuffle=reshuffle):
            return replaced(state, stock=stock, discards=state.discards[-1:], reshuffles=reshuffle)
        case CameBack():
            return state  # the clock brings the seat back as its command's batch begins
        case SeatForfeited(seat=seat):
            # The hand stays where it is, face up and out of play; a forfeit in the seat's own
            # turn ends that turn, and the next seat in play takes a card.
            state = replaced(state, forfeits=state.forfeits + (event,))
            if seat == state.turn and state.phase in (Phase.TAKE, Phase.PLAY):
                state = replaced(state, turn=state.next_in_play(seat), phase=Phase.TAKE)
            return state
        case RoundEnded():
            return replaced(state, phase=Phase.ROUND_OVER, result=event)
    raise TypeError(f"not a Rummy event: {event!r}")
