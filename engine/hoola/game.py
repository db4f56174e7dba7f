"""Hoola as a :class:`croupier.engine.game.Game`: the deal, views, redaction and labels."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from croupier.engine import ENGINE_VERSION
from croupier.engine.cards import Card, by_rank
from croupier.engine.clock import Clocked, ComeBack, EndGame
from croupier.engine.game import Context, PresetRules, others_hidden
from croupier.engine.hoola import moves
from croupier.engine.hoola import rules as rules_module
from croupier.engine.hoola.deal import deal
from croupier.engine.hoola.events import (
    BindSevens,
    CardDrawn,
    ClaimMade,
    CloseTable,
    Declare,
    Discard,
    Draw,
    GameStarted,
    HoolaCommand,
    HoolaEvent,
    LayOff,
    LeaveTable,
    Meld,
    NextRound,
    Play,
    PlayBegan,
    RoundDealt,
    RoundEnded,
    SatOut,
    SitOut,
    StockReshuffled,
    Stop,
    TableClosed,
    ThankYou,
)
from croupier.engine.hoola.melds import TableMeld, hand_value
from croupier.engine.hoola.rules import HoolaRules
from croupier.engine.hoola.state import HoolaState, Phase, evolve
from croupier.engine.settlement import Settlement
from croupier.engine.shuffle import Seeds


@dataclass(frozen=True)
class HoolaView:
    """What one seat sees (mirrors the ``HoolaView`` message)."""

    seat: int | None
    hand: tuple[Card, ...]
    melds: tuple[TableMeld, ...]
    discard_top: Card | None
    discard_count: int
    stock_count: int
    hand_counts: tuple[int, ...]
    has_melded: tuple[bool, ...]
    turn: int
    phase: Phase
    round: int
    dealer: int
    hand_value: int
    scores: tuple[int, ...]
    rules: HoolaRules
    last_round: RoundEnded | None
    table_multiplier: int
    claimants: tuple[int, ...]
    claim_window_end_ms: int
    players: tuple[int, ...]
    sat_out: tuple[SatOut, ...]
    forfeited: tuple[int, ...]


class HoolaGame(Clocked[HoolaState, HoolaEvent, HoolaCommand], PresetRules[HoolaRules]):
    """Korean Hoola (docs/rules/hoola.md §1)."""

    kind = "hoola"
    rules_module = rules_module
    rules_type = HoolaRules
    moves_module = moves

    def start(self, rules: HoolaRules, seats: int, seeds: Seeds) -> list[HoolaEvent]:
        rules_module.validate(rules, seats)
        return [
            GameStarted(rules, seats, seeds.commitment, seeds.client_seeds, ENGINE_VERSION),
            deal(rules, seats, seeds, 1),
        ]

    def initial_state(self) -> HoolaState:
        return HoolaState()

    def evolve_rules(self, state: HoolaState, event: HoolaEvent) -> HoolaState:
        return evolve(state, event)

    def due_by_rules(self, state: HoolaState, now_ms: int) -> list[HoolaEvent]:
        """A closed claim window's award (battle Hoola, ``NEAREST_IN_TURN``)."""
        return moves.advance(state, now_ms)

    def rules_deadline(self, state: HoolaState) -> int | None:
        """A claim window's close (battle Hoola, ``NEAREST_IN_TURN``: then the discard is
        awarded)."""
        return moves.next_deadline(state)

    def on_clock(self, state: HoolaState) -> tuple[int, ...]:
        """The seat asked whether it plays, or the seat to act (not while battle claims wait for
        their window); between rounds the next dealer and every away seat (any seat may deal or
        leave, but a table of idle players must still end, and an away seat leaves)."""
        return moves.on_clock(state)

    def out_of_game(self, state: HoolaState, seat: int) -> bool:
        return seat in state.forfeited

    def between_rounds(self, state: HoolaState) -> bool:
        """A round is over, or the next was just dealt and nobody has acted in it: a time-out
        that ends a round stops there, and so does one that deals the next (its first turn is a
        turn of its own, even the dealer's, who plays first)."""
        return state.phase in (Phase.ROUND_OVER, Phase.TABLE_CLOSED) or moves.just_dealt(state)

    def forfeit(self, state: HoolaState, seat: int, ctx: Context) -> list[HoolaEvent]:
        return moves.forfeit(state, seat, ctx)

    def abandon(self, state: HoolaState, ctx: Context, why: str | None = None) -> list[HoolaEvent]:
        """Only the studio abandons a Hoola table (its forced moves end every round, so it has
        no ``end_when_all_away``)."""
        return moves.abandoned(state, why or "the table was abandoned")

    def to_act_seen(self, state: HoolaState, viewer: int | None) -> tuple[int, ...]:
        return self.with_away(state, moves.to_act_seen(state, viewer))

    def is_finished(self, state: HoolaState) -> bool:
        return state.phase is Phase.TABLE_CLOSED

    def label(self, state: HoolaState, command: object) -> str:
        match command:
            case Draw():
                return "Draw from the stock"
            case ThankYou(cards=cards):
                melded = f" with {' '.join(cards)}" if cards else " alone"
                return f"Thank you: take the discard and meld it{melded}"
            case Meld(cards=cards):
                return f"Meld {' '.join(cards)}"
            case LayOff(meld_id=meld_id, cards=cards):
                return f"Lay off {' '.join(cards)} on meld #{meld_id}"
            case Discard(card=card):
                return f"Discard {card}"
            case Stop():
                return "Stop"
            case Declare(combination=combination):
                return (
                    f"Declare {combination.name.lower().replace('_', ' ') if combination else '?'}"
                )
            case BindSevens(meld_id=meld_id, cards=cards):
                return f"Bind {' '.join(cards)} to the lone 7 of meld #{meld_id}"
            case NextRound():
                return "Deal the next round"
            case CloseTable():
                return "Close the table"
            case LeaveTable():
                return "Leave the table (it closes with the balances so far)"
            case Play():
                return "Play this round"
            case SitOut():
                return "Sit this round out"
            case ComeBack():
                return "Come back: play your own turns again"
            case EndGame():
                return self.end_label(command)
        # A recorded command this engine cannot read (a replay tool may ask): shown as it is.
        return repr(command)

    def redact(self, event: HoolaEvent, seat: int | None) -> HoolaEvent:
        """Hide other hands and the stock order (docs/rules/common.md §5)."""
        match event:
            case RoundDealt(hands=hands):
                return dataclasses.replace(event, hands=others_hidden(hands, seat), stock=())
            case CardDrawn(seat=drawer) if drawer != seat:
                return dataclasses.replace(event, card=None)
            case ClaimMade(seat=claimant) if claimant != seat:
                # Others see that a seat claimed, not with which cards: a losing claim keeps them.
                return dataclasses.replace(event, cards=(), jokers=())
            case StockReshuffled() | PlayBegan():
                return dataclasses.replace(event, stock=())
            case SatOut():
                return _sat_out_as_seen(event, seat)
        return event

    def view(self, state: HoolaState, seat: int | None) -> HoolaView:
        hand = by_rank(state.hands[seat]) if seat is not None and state.hands else ()
        return HoolaView(
            seat=seat,
            hand=hand,
            melds=state.melds,
            discard_top=state.discard_top,
            discard_count=len(state.discards),
            stock_count=len(state.stock),
            hand_counts=tuple(len(h) for h in state.hands),
            has_melded=state.melded,
            turn=state.turn,
            phase=state.phase,
            round=state.round,
            dealer=state.dealer,
            hand_value=hand_value(hand, state.rules) if seat is not None else 0,
            scores=state.scores,
            rules=state.rules,
            last_round=state.result,
            table_multiplier=state.table_multiplier,
            claimants=tuple(claim.seat for claim in state.claims),
            claim_window_end_ms=state.claim_window_end_ms,
            players=state.players,
            sat_out=tuple(_sat_out_as_seen(sat, seat) for sat in state.sat_out),
            forfeited=state.forfeited,
        )

    def settlements(self, events: list[HoolaEvent]) -> list[Settlement]:
        """The settlement of every finished round, in order."""
        return [e.settlement for e in events if isinstance(e, RoundEnded)]

    def final_settlement(self, events: list[HoolaEvent]) -> Settlement | None:
        """The table's settlement once it is closed."""
        return next((e.settlement for e in events if isinstance(e, TableClosed)), None)


def _sat_out_as_seen(sat: SatOut, seat: int | None) -> SatOut:
    """A voluntary sitter-out's hand stays hidden from the others; an involuntary one shows its
    brights (they are paid for)."""
    if sat.voluntary and sat.seat != seat:
        return dataclasses.replace(sat, hand=())
    return sat
