"""Gin Rummy as a :class:`croupier.engine.game.Game`: the deal, views, redaction and labels."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from croupier.engine import ENGINE_VERSION
from croupier.engine.cards import Card, by_rank, name
from croupier.engine.clock import Clocked, ComeBack, EndGame
from croupier.engine.game import Context, PresetRules, others_hidden
from croupier.engine.gin import moves
from croupier.engine.gin import rules as rules_module
from croupier.engine.gin.deal import deal
from croupier.engine.gin.events import (
    CardDrawn,
    Discard,
    DrawDiscard,
    DrawStock,
    EndLayOffs,
    GinCommand,
    GinEvent,
    HandDealt,
    HandEnded,
    Knock,
    LayOff,
    MatchEnded,
    MatchStarted,
    NextHand,
    Pass,
)
from croupier.engine.gin.rules import GinRules
from croupier.engine.gin.state import GinState, Phase, evolve
from croupier.engine.meld_solver import GIN, Meld, best_melds, deadwood_count
from croupier.engine.settlement import Settlement
from croupier.engine.shuffle import Seeds


@dataclass(frozen=True)
class GinView:
    """What one seat sees (mirrors the ``GinView`` message)."""

    seat: int | None
    hand: tuple[Card, ...]
    melds: tuple[Meld, ...]
    deadwood: int
    discard_top: Card | None
    discard_count: int
    stock_count: int
    hand_counts: tuple[int, ...]
    turn: int
    phase: Phase
    hand_number: int
    dealer: int
    totals: tuple[int, ...]
    table: tuple[Meld, ...]
    knocker: int | None
    last_hand: HandEnded | None
    rules: GinRules


class GinGame(Clocked[GinState, GinEvent, GinCommand], PresetRules[GinRules]):
    """Gin Rummy (docs/rules/gin.md §4)."""

    kind = "gin"
    rules_module = rules_module
    rules_type = GinRules
    moves_module = moves

    def start(self, rules: GinRules, seats: int, seeds: Seeds) -> list[GinEvent]:
        rules_module.validate(rules, seats)
        return [
            MatchStarted(rules, seats, seeds.commitment, seeds.client_seeds, ENGINE_VERSION),
            deal(seeds, 1, None),
        ]

    def initial_state(self) -> GinState:
        return GinState()

    def evolve_rules(self, state: GinState, event: GinEvent) -> GinState:
        return evolve(state, event)

    def on_clock(self, state: GinState) -> tuple[int, ...]:
        """The seat to act in a hand (taking or passing the upcard, drawing, discarding, laying
        off); between hands the seat that deals the next one (either seat may deal it, but a
        match between idle players must still end)."""
        if state.phase in (Phase.FIRST_UPCARD, Phase.DRAW, Phase.DISCARD, Phase.LAY_OFF):
            return (state.turn,)
        if state.phase is Phase.HAND_OVER:
            return (moves.next_dealer(state),)
        return ()

    def between_rounds(self, state: GinState) -> bool:
        return state.phase in (Phase.HAND_OVER, Phase.MATCH_OVER)

    def forfeit(self, state: GinState, seat: int, ctx: Context) -> list[GinEvent]:
        return moves.forfeited(state, seat)

    def ends_when_all_away(self, state: GinState) -> bool:
        return state.rules.end_when_all_away

    def abandon(self, state: GinState, ctx: Context, why: str | None = None) -> list[GinEvent]:
        return moves.abandoned(state, why)

    def is_finished(self, state: GinState) -> bool:
        return state.phase is Phase.MATCH_OVER

    def label(self, state: GinState, command: object) -> str:
        match command:
            case DrawStock():
                return "Draw from the stock"
            case DrawDiscard():
                top = name(state.discard_top) if state.discard_top else "the discard"
                return f"Take {top}" + (
                    " (the upcard)" if state.phase is Phase.FIRST_UPCARD else ""
                )
            case Pass():
                return (
                    "Pass the upcard"
                    if state.phase is Phase.FIRST_UPCARD
                    else "Pass: the hand is a wash"
                )
            case Discard(card=card):
                return f"Discard {name(card)}"
            case Knock(card=card, melds=melds):
                what = f"Discard {name(card)} and knock" if card else "Knock with big gin"
                if melds:
                    return what + ", melding " + " · ".join(" ".join(m.cards) for m in melds)
                if not card:
                    return what  # every card melded: nothing to lay off onto
                # Offered beside the same knock naming each arrangement: say what this one shows
                # (docs/rules/gin.md, "The knocker's melds"), or the two read as the same move.
                return what + (
                    " (the melds leaving the defender least to lay off)"
                    if state.rules.knocker_best_melds
                    else " (the first melds found)"
                )
            case LayOff(card=card, meld=index):
                meld = state.table[index].cards if index < len(state.table) else ()
                return f"Lay off {name(card)} on {' '.join(meld)}"
            case EndLayOffs():
                return "End lay-offs and score"
            case NextHand():
                return "Deal the next hand"
            case ComeBack():
                return "Come back: play your own turns again"
            case EndGame():
                return self.end_label(command)
        # A recorded command this engine cannot read (a replay tool may ask): shown as it is.
        return repr(command)

    def redact(self, event: GinEvent, seat: int | None) -> GinEvent:
        """Hide the other hand, the stock order and the card drawn from the stock (docs/rules/common.md §5)."""
        match event:
            case HandDealt(hands=hands):
                return dataclasses.replace(event, hands=others_hidden(hands, seat), stock=())
            case CardDrawn(seat=drawer, from_discard=False) if drawer != seat:
                return dataclasses.replace(event, card=None)
        return event

    def view(self, state: GinState, seat: int | None) -> GinView:
        hand = by_rank(state.hands[seat]) if seat is not None else ()
        melds, left = best_melds(hand, GIN) if hand else ((), ())
        return GinView(
            seat=seat,
            hand=hand,
            melds=melds,
            deadwood=deadwood_count(left),
            discard_top=state.discard_top,
            discard_count=len(state.discards),
            stock_count=len(state.stock),
            hand_counts=tuple(len(h) for h in state.hands),
            turn=state.turn,
            phase=state.phase,
            hand_number=state.hand,
            dealer=state.dealer,
            totals=state.totals,
            table=state.table,
            knocker=state.knock.seat if state.knock else None,
            last_hand=state.result,
            rules=state.rules,
        )

    def settlements(self, events: list[GinEvent]) -> list[Settlement]:
        return [e.settlement for e in events if isinstance(e, HandEnded)]

    def final_settlement(self, events: list[GinEvent]) -> Settlement | None:
        return next((e.settlement for e in events if isinstance(e, MatchEnded)), None)
