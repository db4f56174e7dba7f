"""Koi-Koi as a :class:`croupier.engine.game.Game`: the deal, views, redaction and labels."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from croupier.engine import ENGINE_VERSION
from croupier.engine.clock import Clocked, ComeBack, EndGame
from croupier.engine.game import Context, PresetRules, others_hidden
from croupier.engine.koikoi import moves
from croupier.engine.koikoi import rules as rules_module
from croupier.engine.koikoi.cards import Card, name, sort_cards
from croupier.engine.koikoi.deal import deal
from croupier.engine.koikoi.events import (
    ChooseCapture,
    KoiKoi,
    KoiKoiCommand,
    KoiKoiEvent,
    MatchEnded,
    MatchStarted,
    NextRound,
    PlayCard,
    RoundDealt,
    RoundEnded,
    Shobu,
)
from croupier.engine.koikoi.rules import KoiKoiRules
from croupier.engine.koikoi.state import KoiKoiState, Phase, evolve
from croupier.engine.koikoi.yaku import Yaku, yaku
from croupier.engine.settlement import Settlement
from croupier.engine.shuffle import Seeds


@dataclass(frozen=True)
class Pile:
    """A seat's captured cards, open to everyone, with the yaku they score now."""

    seat: int
    cards: tuple[Card, ...]
    yaku: tuple[Yaku, ...]
    points: int


@dataclass(frozen=True)
class KoiKoiView:
    """What one seat sees (mirrors the ``KoiKoiView`` message)."""

    seat: int | None
    hand: tuple[Card, ...]
    field: tuple[Card, ...]
    piles: tuple[Pile, ...]
    hand_counts: tuple[int, ...]
    stock_count: int
    turn: int
    phase: Phase
    round: int
    dealer: int
    totals: tuple[int, ...]
    koi_koi_by: int | None
    turned: Card | None
    last_round: RoundEnded | None
    rules: KoiKoiRules


class KoiKoiGame(Clocked[KoiKoiState, KoiKoiEvent, KoiKoiCommand], PresetRules[KoiKoiRules]):
    """Hanafuda Koi-Koi with Nintendo's rules (docs/rules/koikoi.md §2)."""

    kind = "koikoi"
    rules_module = rules_module
    rules_type = KoiKoiRules
    moves_module = moves

    def start(self, rules: KoiKoiRules, seats: int, seeds: Seeds) -> list[KoiKoiEvent]:
        rules_module.validate(rules, seats)
        started = MatchStarted(rules, seats, seeds.commitment, seeds.client_seeds, ENGINE_VERSION)
        state = evolve(KoiKoiState(), started)
        return [started, *moves.dealt(state, deal(seeds, 1, None))]

    def initial_state(self) -> KoiKoiState:
        return KoiKoiState()

    def evolve_rules(self, state: KoiKoiState, event: KoiKoiEvent) -> KoiKoiState:
        return evolve(state, event)

    def on_clock(self, state: KoiKoiState) -> tuple[int, ...]:
        """The seat to act in a round (a play, a capture to name, a koi-koi decision); between
        rounds the seat that will play second in the next one, to deal it (either seat may, but
        a match between idle players must still end)."""
        match state.phase:
            case Phase.PLAY | Phase.CHOOSE_CAPTURE | Phase.DECIDE:
                return moves.to_act(state)
            case Phase.ROUND_OVER:
                return (moves.moves_the_match_on(state),)
        return ()

    def between_rounds(self, state: KoiKoiState) -> bool:
        return state.phase in (Phase.ROUND_OVER, Phase.MATCH_OVER)

    def forfeit(self, state: KoiKoiState, seat: int, ctx: Context) -> list[KoiKoiEvent]:
        return moves.forfeited(state, seat)

    def abandon(
        self, state: KoiKoiState, ctx: Context, why: str | None = None
    ) -> list[KoiKoiEvent]:
        """Only the studio abandons a Koi-Koi match (its forced moves end every round, so it has
        no ``end_when_all_away``)."""
        return moves.abandoned(state, why or "the match was abandoned")

    def is_finished(self, state: KoiKoiState) -> bool:
        return state.phase is Phase.MATCH_OVER

    def label(self, state: KoiKoiState, command: object) -> str:
        """The move in words: "Play Cherry curtain, capture Cherry poetry ribbon"."""
        match command:
            case PlayCard(card=card, capture=capture):
                taken = (
                    (capture,)
                    if capture
                    else (state.matches(card) if card in state.hands[state.turn] else ())
                )
                return f"Play {name(card)}" + _taking(taken)
            case ChooseCapture(card=card):
                turned = name(state.turned) if state.turned else "the turned card"
                return f"Capture {name(card)} with {turned}"
            case KoiKoi():
                return "Koi-koi: go on"
            case Shobu():
                return "Shobu: end the round and score"
            case NextRound():
                return "Deal the next round"
            case ComeBack():
                return "Come back: play your own turns again"
            case EndGame():
                return self.end_label(command)
        # A recorded command this engine cannot read (a replay tool may ask): shown as it is.
        return repr(command)

    def redact(self, event: KoiKoiEvent, seat: int | None) -> KoiKoiEvent:
        """Hide the other hand and the stock order (docs/rules/common.md §5)."""
        match event:
            case RoundDealt(hands=hands):
                return dataclasses.replace(event, hands=others_hidden(hands, seat), stock=())
        return event

    def view(self, state: KoiKoiState, seat: int | None) -> KoiKoiView:
        piles = []
        for s, cards in enumerate(state.captured):
            found = yaku(cards, state.rules)
            piles.append(Pile(s, sort_cards(cards), found, sum(y.points for y in found)))
        return KoiKoiView(
            seat=seat,
            hand=sort_cards(state.hands[seat]) if seat is not None and state.hands else (),
            field=state.field,
            piles=tuple(piles),
            hand_counts=tuple(len(h) for h in state.hands),
            stock_count=len(state.stock),
            turn=state.turn,
            phase=state.phase,
            round=state.round,
            dealer=state.dealer,
            totals=state.totals,
            koi_koi_by=state.koi_koi_by,
            turned=state.turned,
            last_round=state.result,
            rules=state.rules,
        )

    def settlements(self, events: list[KoiKoiEvent]) -> list[Settlement]:
        """The settlement of every finished round, in order."""
        return [e.settlement for e in events if isinstance(e, RoundEnded)]

    def final_settlement(self, events: list[KoiKoiEvent]) -> Settlement | None:
        """The match's settlement once it is over."""
        return next((e.settlement for e in events if isinstance(e, MatchEnded)), None)


def _taking(taken: tuple[Card, ...]) -> str:
    if not taken:
        return " to the field"
    if len(taken) == 3:
        return ", capture all three: " + ", ".join(name(c) for c in taken)
    return ", capture " + name(taken[0])
