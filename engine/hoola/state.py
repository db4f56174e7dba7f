"""The Hoola position and the fold that builds it from events (``evolve``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from croupier.engine.cards import Card
from croupier.engine.clock import NO_CLOCK, Clock
from croupier.engine.hoola.events import (
    CardDiscarded,
    CardDrawn,
    CardsLaidOff,
    ClaimMade,
    CombinationDeclared,
    DiscardTaken,
    GameStarted,
    HoolaEvent,
    MeldMade,
    PlayBegan,
    PlayDeclared,
    RoundDealt,
    RoundEnded,
    SatOut,
    SeatForfeited,
    SeatLeft,
    SevensBound,
    StockReshuffled,
    StopCalled,
    TableClosed,
)
from croupier.engine.hoola.melds import TableMeld
from croupier.engine.hoola.rules import HoolaRules
from croupier.engine.shared import placed, replace_at, replaced, without


class Phase(Enum):
    NOT_STARTED = 0
    TAKE = 1
    PLAY = 2
    ROUND_OVER = 3
    TABLE_CLOSED = 4
    # Six or seven seats (docs/rules/hoola.md §1.9): the seat to act says whether it plays this round.
    CHOOSING = 5


@dataclass(frozen=True)
class Turn:
    """What the seat to act has done this turn (Hoola, perfect Hoola and thank-you need it)."""

    start_hand: tuple[Card, ...] = ()
    melded_before: bool = False
    drawn: Card | None = None
    thank_you_card: Card | None = None
    thank_you_discarder: int | None = None
    put_down: tuple[Card, ...] = ()


@dataclass(frozen=True)
class HoolaState:
    rules: HoolaRules = HoolaRules()
    seats: int = 0
    commitment: str = ""
    client_seeds: tuple[str, ...] = ()
    round: int = 0
    dealer: int = 0
    turn: int = 0
    phase: Phase = Phase.NOT_STARTED
    hands: tuple[tuple[Card, ...], ...] = ()
    stock: tuple[Card, ...] = ()
    discards: tuple[Card, ...] = ()
    # Who discarded the top of the pile (``None`` for the first up-card).
    top_discarder: int | None = None
    melds: tuple[TableMeld, ...] = ()
    melded: tuple[bool, ...] = ()
    # Who has bound 7s this round (``seven_binding``): with ``binding_ends_hoola`` no Hoola after.
    bound: tuple[bool, ...] = ()
    turns_started: tuple[int, ...] = ()
    this_turn: Turn = Turn()
    reshuffles: int = 0
    result: RoundEnded | None = None
    scores: tuple[int, ...] = ()
    table_multiplier: int = 1
    hoola_streak: int = 0
    closed: TableClosed | None = None
    # Battle Hoola, NEAREST_IN_TURN: the claims on the top discard and when their window closes.
    claims: tuple[ClaimMade, ...] = ()
    claim_window_end_ms: int = 0
    # The seats playing this round, in seat order (all of them but where some sit out, §1.9;
    # while seats are choosing, those that said they play), and the sitters-out.
    players: tuple[int, ...] = ()
    sat_out: tuple[SatOut, ...] = ()
    # Seats out of the table for good (forfeited, docs/rules/common.md §5.1), and those of them that were
    # dealt into this round (they pay its settlement as losers).
    forfeited: tuple[int, ...] = ()
    round_forfeits: tuple[int, ...] = ()
    clock: Clock = NO_CLOCK

    @property
    def discard_top(self) -> Card | None:
        return self.discards[-1] if self.discards else None

    def hoola_spent(self, seat: int) -> bool:
        """Whether ``seat`` can no longer go out with a Hoola this round (docs/rules/hoola.md §1.5): it has
        melded, or (``binding_ends_hoola``) it has bound 7s, so cards left its hand before."""
        return self.melded[seat] or (self.rules.binding_ends_hoola and self.bound[seat])

    def next_seat(self, seat: int) -> int:
        """The next player after ``seat`` in turn order (sitters-out are passed over)."""
        return next(
            s for k in range(1, self.seats + 1) if (s := (seat + k) % self.seats) in self.players
        )

    def in_turn_order(self, start: int) -> list[int]:
        """The players in turn order from ``start`` (included if it plays)."""
        return [s for k in range(self.seats) if (s := (start + k) % self.seats) in self.players]

    def next_seat_asked(self, seat: int) -> int:
        """The seat asked after ``seat`` whether it plays (every seat still at the table, in turn
        order)."""
        return next(
            (
                s
                for k in range(1, self.seats)
                if (s := (seat + k) % self.seats) not in self.forfeited
            ),
            seat,
        )

    @property
    def asked(self) -> int:
        """How many seats have said whether they play (docs/rules/hoola.md §1.9)."""
        return len(self.players) + len(self.sat_out)

    @property
    def unasked(self) -> list[int]:
        """The seats still to say whether they play, in asking order from the one asked now."""
        answered = set(self.players) | {sat.seat for sat in self.sat_out} | set(self.forfeited)
        return [s for k in range(self.seats) if (s := (self.turn + k) % self.seats) not in answered]

    @property
    def at_table(self) -> tuple[int, ...]:
        """The seats still at the table (all but those that forfeited)."""
        return tuple(s for s in range(self.seats) if s not in self.forfeited)


def _put_down(state: HoolaState, seat: int, cards: tuple[Card, ...]) -> HoolaState:
    turn = replaced(state.this_turn, put_down=state.this_turn.put_down + cards)
    return replaced(
        state,
        hands=replace_at(state.hands, seat, without(state.hands[seat], cards)),
        this_turn=turn,
    )


def evolve(state: HoolaState, event: HoolaEvent) -> HoolaState:
    """The state after ``event``. Pure; never fails on an event ``decide`` produced."""
    match event:
        case GameStarted(rules=rules, seats=seats, commitment=commitment, client_seeds=seeds):
            return replaced(
                state,
                rules=rules,
                seats=seats,
                commitment=commitment,
                client_seeds=seeds,
                scores=(0,) * seats,
            )
        case RoundDealt(
            round=round_no,
            dealer=dealer,
            hands=hands,
            upcard=upcard,
            stock=stock,
            table_multiplier=multiplier,
            hoola_streak=streak,
            balances=balances,
        ):
            n = state.seats
            state = replaced(
                state,
                round=round_no,
                dealer=dealer,
                turn=dealer,
                phase=Phase.CHOOSING,
                table_multiplier=multiplier,
                hoola_streak=streak,
                scores=balances or (0,) * n,
                hands=tuple(h.cards for h in hands),
                stock=stock,
                discards=(upcard,),
                top_discarder=None,
                melds=(),
                melded=(False,) * n,
                bound=(False,) * n,
                turns_started=(0,) * n,
                this_turn=Turn(),
                reshuffles=0,
                result=None,
                players=(),
                sat_out=(),
                round_forfeits=(),
            )
            # A seat that forfeited is dealt its cards (the deal stays one function of the seeds)
            # but takes no part: they are set aside unseen.
            if state.rules.chooses_players(len(state.at_table)):
                return state
            return _play_begins(state, state.at_table, stock)
        case PlayDeclared(seat=seat):
            return replaced(
                state,
                players=tuple(sorted(state.players + (seat,))),
                turn=state.next_seat_asked(seat),
            )
        case SatOut():
            return replaced(
                state, sat_out=state.sat_out + (event,), turn=state.next_seat_asked(event.seat)
            )
        case PlayBegan(players=players, stock=stock):
            return _play_begins(state, players, stock)
        case CardDrawn(seat=seat, card=card):
            drawn = card if card is not None else state.stock[0]
            return replaced(
                state,
                stock=state.stock[1:],
                phase=Phase.PLAY,
                hands=replace_at(state.hands, seat, state.hands[seat] + (drawn,)),
                this_turn=replaced(state.this_turn, drawn=drawn),
            )
        case ClaimMade(at_ms=at_ms):
            end = state.claim_window_end_ms if state.claims else at_ms + state.rules.claim_window_ms
            return replaced(state, claims=state.claims + (event,), claim_window_end_ms=end)
        case DiscardTaken(seat=seat, card=card, discarder=discarder, meld=meld):
            state = replaced(state, claims=(), claim_window_end_ms=0)
            if seat != state.turn:
                # An out-of-turn claim (battle Hoola): play goes on from the claimant; the seats in
                # between are skipped, and the skipped next player's turn never began.
                started = replace_at(
                    state.turns_started, state.turn, state.turns_started[state.turn] - 1
                )
                state = replaced(
                    state,
                    turn=seat,
                    turns_started=replace_at(started, seat, started[seat] + 1),
                    this_turn=Turn(
                        start_hand=state.hands[seat], melded_before=state.hoola_spent(seat)
                    ),
                )
            turn = replaced(state.this_turn, thank_you_card=card, thank_you_discarder=discarder)
            state = replaced(
                state,
                discards=state.discards[:-1],
                phase=Phase.PLAY,
                this_turn=turn,
                melds=placed(state.melds, meld),
                melded=replace_at(state.melded, seat, True),
            )
            return _put_down(state, seat, tuple(c for c in meld.cards if c != card))
        case MeldMade(seat=seat, meld=meld):
            state = replaced(
                state, melds=placed(state.melds, meld), melded=replace_at(state.melded, seat, True)
            )
            return _put_down(state, seat, meld.cards)
        case CardsLaidOff(seat=seat, cards=cards, meld=meld):
            return _put_down(replaced(state, melds=placed(state.melds, meld)), seat, cards)
        case SevensBound(seat=seat, cards=cards, meld=meld):
            state = replaced(
                state,
                melds=placed(state.melds, meld),
                bound=replace_at(state.bound, seat, True),
                # With seven_binding_is_meld the binding is the binder's meld (docs/rules/hoola.md §1.3).
                melded=replace_at(
                    state.melded, seat, state.melded[seat] or state.rules.seven_binding_is_meld
                ),
            )
            return _put_down(state, seat, cards)
        case CardDiscarded(seat=seat, card=card):
            state = replaced(
                state,
                hands=replace_at(state.hands, seat, without(state.hands[seat], (card,))),
                discards=state.discards + (card,),
                top_discarder=seat,
                claims=(),
                claim_window_end_ms=0,
            )
            if not state.hands[seat] or (not state.stock and not may_reshuffle(state)):
                return state  # the round ends with the next event
            return _next_turn(state, seat)
        case StockReshuffled(stock=stock, reshuffle=reshuffle):
            return replaced(state, stock=stock, discards=state.discards[-1:], reshuffles=reshuffle)
        case StopCalled() | CombinationDeclared():
            return state
        case RoundEnded(settlement=settlement):
            scores = tuple(a + b for a, b in zip(state.scores, settlement.net, strict=False))
            return replaced(state, phase=Phase.ROUND_OVER, result=event, scores=scores)
        case TableClosed():
            return replaced(state, phase=Phase.TABLE_CLOSED, closed=event)
        case SeatLeft():
            return state  # the table's close follows
        case SeatForfeited(seat=seat):
            return _forfeited(state, seat)
    raise TypeError(f"not a Hoola event: {event!r}")


def _play_begins(
    state: HoolaState, players: tuple[int, ...], stock: tuple[Card, ...]
) -> HoolaState:
    """The round's play starts with the first player from the dealer; sitters-out hold nothing."""
    state = replaced(
        state,
        players=players,
        stock=stock,
        phase=Phase.TAKE,
        hands=tuple(
            h if s in players or s in state.round_forfeits else ()
            for s, h in enumerate(state.hands)
        ),
    )
    first = state.in_turn_order(state.dealer)[0]
    return replaced(
        state,
        turn=first,
        turns_started=replace_at(state.turns_started, first, 1),
        this_turn=Turn(start_hand=state.hands[first]),
    )


def _forfeited(state: HoolaState, seat: int) -> HoolaState:
    """``seat`` is out of the table. In a round being played (or chosen) it is out of the round
    too, keeping its hand for the settlement; if it was to act, the next seat does."""
    state = replaced(state, forfeited=tuple(sorted(state.forfeited + (seat,))))
    if state.phase is Phase.CHOOSING:
        state = replaced(state, round_forfeits=state.round_forfeits + (seat,))
        return replaced(state, turn=state.next_seat_asked(seat)) if seat == state.turn else state
    if state.phase not in (Phase.TAKE, Phase.PLAY) or seat not in state.players:
        return state
    was_turn = seat == state.turn
    state = replaced(
        state,
        players=tuple(s for s in state.players if s != seat),
        round_forfeits=state.round_forfeits + (seat,),
    )
    if not was_turn or len(state.players) < 2:
        return state  # fewer than two left: the round's end follows
    return _next_turn(state, seat)


def may_reshuffle(state: HoolaState) -> bool:
    """Whether an empty stock is rebuilt from the discards (docs/rules/hoola.md §1.5.4, ``reshuffle_discards``)."""
    return (
        state.rules.reshuffle_discards
        and state.reshuffles < state.rules.max_reshuffles
        and len(state.discards) >= 2
    )


def _next_turn(state: HoolaState, seat: int) -> HoolaState:
    """The turn passes from ``seat`` to the next seat in play, which begins it by taking."""
    nxt = state.next_seat(seat)
    return replaced(
        state,
        turn=nxt,
        phase=Phase.TAKE,
        turns_started=replace_at(state.turns_started, nxt, state.turns_started[nxt] + 1),
        this_turn=Turn(start_hand=state.hands[nxt], melded_before=state.hoola_spent(nxt)),
    )
