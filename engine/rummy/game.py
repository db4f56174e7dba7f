"""Rummy with jokers as a :class:`croupier.engine.game.Game`: the deal, views, redaction, labels."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from croupier.engine import ENGINE_VERSION
from croupier.engine.cards import Card, by_rank
from croupier.engine.clock import Clocked, EndGame
from croupier.engine.game import Context, PresetRules, others_hidden
from croupier.engine.meld_solver import RUMMY, arrange
from croupier.engine.rummy import moves
from croupier.engine.rummy import rules as rules_module
from croupier.engine.rummy.deal import deal
from croupier.engine.rummy.events import (
    CardDrawn,
    ComeBack,
    Discard,
    DrawStock,
    GameStarted,
    LayDown,
    LayOff,
    LayOffCards,
    MeldCards,
    RoundDealt,
    RoundEnded,
    RummyCommand,
    RummyEvent,
    StockReshuffled,
    SwapJoker,
    TableMeld,
    TakeDiscard,
)
from croupier.engine.rummy.rules import RummyRules
from croupier.engine.rummy.scoring import hand_value
from croupier.engine.rummy.state import Phase, RummyState, evolve
from croupier.engine.settlement import Settlement
from croupier.engine.shuffle import Seeds


@dataclass(frozen=True)
class RummyView:
    """What one seat sees (mirrors the ``RummyView`` message)."""

    seat: int | None
    hand: tuple[Card, ...]
    melds: tuple[TableMeld, ...]
    discard_top: Card | None
    discard_count: int
    stock_count: int
    hand_counts: tuple[int, ...]
    opened: tuple[bool, ...]
    turn: int
    phase: Phase
    dealer: int
    hand_value: int
    result: RoundEnded | None
    rules: RummyRules
    #: The seats that forfeited (out of play), in order.
    forfeited: tuple[int, ...]


def _melds(specs: tuple[MeldCards, ...]) -> str:
    """Melds in words, each in table order (a run low to high)."""

    def shown(spec: MeldCards) -> str:
        found = arrange(spec.cards, RUMMY, {j.joker: j.card for j in spec.jokers})
        return " ".join(found.cards if found else spec.cards)

    return " and ".join(shown(s) for s in specs)


def _helped(state: RummyState, lay_off: LayOffCards) -> str:
    """The hand cards a taken discard is laid off with, in words (docs/rules/rummy.md §3.3: it
    may need them to reach the meld); empty when it goes alone."""
    helpers = [c for c in lay_off.cards if c != state.discard_top]
    return f" with {' '.join(helpers)}" if helpers else ""


class RummyGame(Clocked[RummyState, RummyEvent, RummyCommand], PresetRules[RummyRules]):
    """Rummy with jokers, 108 cards (docs/rules/rummy.md §3)."""

    kind = "rummy"
    rules_module = rules_module
    rules_type = RummyRules
    moves_module = moves

    def start(self, rules: RummyRules, seats: int, seeds: Seeds) -> list[RummyEvent]:
        rules_module.validate(rules, seats)
        return [
            GameStarted(rules, seats, seeds.commitment, seeds.client_seeds, ENGINE_VERSION),
            deal(rules, seats, seeds),
        ]

    def initial_state(self) -> RummyState:
        return RummyState()

    def evolve_rules(self, state: RummyState, event: RummyEvent) -> RummyState:
        return evolve(state, event)

    def on_clock(self, state: RummyState) -> tuple[int, ...]:
        """The seat to act, while it takes a card and while it plays and discards. Nothing is on
        the clock once the round is over: a game is one round, and no seat has a next one to
        deal."""
        if state.phase in (Phase.TAKE, Phase.PLAY):
            return (state.turn,)
        return ()

    def between_rounds(self, state: RummyState) -> bool:
        return state.phase is Phase.ROUND_OVER

    def forfeit(self, state: RummyState, seat: int, ctx: Context) -> list[RummyEvent]:
        return moves.forfeit(state, seat, ctx)

    def ends_when_all_away(self, state: RummyState) -> bool:
        return state.rules.end_when_all_away

    def abandon(self, state: RummyState, ctx: Context, why: str | None = None) -> list[RummyEvent]:
        return moves.abandoned(state, why)

    def out_of_game(self, state: RummyState, seat: int) -> bool:
        return not state.in_play(seat)

    def check_come_back(self, state: RummyState, seat: int) -> None:
        """Refused as every Rummy move is (before the deal, once the round is over, from a seat
        that forfeited), then unless the seat is away."""
        moves.check_come_back(state, seat)

    def legal_moves_complete(self, state: RummyState, seat: int) -> bool:
        return moves.legal_moves_complete(state, seat)

    def is_finished(self, state: RummyState) -> bool:
        return state.phase is Phase.ROUND_OVER

    def label(self, state: RummyState, command: object) -> str:
        match command:
            case DrawStock():
                return "Draw from the stock"
            case TakeDiscard(melds=melds, lay_off=lay_off):
                where = (
                    f"meld {_melds(melds)}"
                    if melds
                    else f"lay it off{_helped(state, lay_off)} on meld #{lay_off.meld_id}"
                    if lay_off
                    else "?"
                )
                return f"Take {state.discard_top} and {where}"
            case LayDown(melds=melds):
                verb = "Lay down" if state.opened[state.turn] else "Open with"
                return f"{verb} {_melds(melds)}"
            case LayOff(meld_id=meld_id, cards=cards):
                return f"Lay off {' '.join(cards)} on meld #{meld_id}"
            case SwapJoker(meld_id=meld_id, card=card, melds=melds, lay_off=lay_off):
                where = (
                    f"meld it with {_melds(melds)}"
                    if melds
                    else f"lay it off on meld #{lay_off.meld_id}"
                    if lay_off
                    else "?"
                )
                return f"Swap {card} for the joker of meld #{meld_id} and {where}"
            case Discard(card=card):
                return f"Discard {card}"
            case ComeBack():
                return "I'm back: play my own turns again"
            case EndGame():
                return self.end_label(command)
        # A recorded command this engine cannot read (a replay tool may ask): shown as it is.
        return repr(command)

    def redact(self, event: RummyEvent, seat: int | None) -> RummyEvent:
        """Hide other hands, the stock order and cards drawn by others (docs/rules/common.md §5). A forfeit's
        hand is shown to every seat: it is out of play, and what it pays must be checkable."""
        match event:
            case RoundDealt(hands=hands):
                return dataclasses.replace(event, hands=others_hidden(hands, seat), stock=())
            case CardDrawn(seat=drawer) if drawer != seat:
                return dataclasses.replace(event, card=None)
            case StockReshuffled():
                return dataclasses.replace(event, stock=())
        return event

    def view(self, state: RummyState, seat: int | None) -> RummyView:
        hand = by_rank(state.hands[seat]) if seat is not None and state.hands else ()
        return RummyView(
            seat=seat,
            hand=hand,
            melds=state.melds,
            discard_top=state.discard_top,
            discard_count=len(state.discards),
            stock_count=len(state.stock),
            hand_counts=tuple(len(h) for h in state.hands),
            opened=state.opened,
            turn=state.turn,
            phase=state.phase,
            dealer=state.dealer,
            hand_value=hand_value(hand),
            result=state.result,
            rules=state.rules,
            forfeited=tuple(f.seat for f in state.forfeits),
        )

    def settlements(self, events: list[RummyEvent]) -> list[Settlement]:
        return [e.settlement for e in events if isinstance(e, RoundEnded)]

    def final_settlement(self, events: list[RummyEvent]) -> Settlement | None:
        return next((e.settlement for e in events if isinstance(e, RoundEnded)), None)
