"""Koi-Koi moves: validation, legal-move generation and the events a move produces — one code path.

One pass checks a command and builds its events on the way; ``validate`` runs it and drops the
events, ``decide`` keeps them and deals the next round from the seeds. ``legal_commands`` keeps
the candidates ``validate`` accepts.
"""

from __future__ import annotations

from collections.abc import Iterator

from croupier.engine.game import Context, IllegalCommand, MalformedCommand, accepted
from croupier.engine.koikoi.cards import Card, is_card, kind, name, sort_cards
from croupier.engine.koikoi.deal import deal
from croupier.engine.koikoi.events import (
    CaptureChosen,
    CardPlayed,
    CardTurned,
    ChooseCapture,
    KoiKoi,
    KoiKoiCalled,
    KoiKoiCommand,
    KoiKoiEvent,
    MatchEnded,
    NextRound,
    PlayCard,
    SeatForfeited,
    Shobu,
    ShobuCalled,
    YakuFormed,
)
from croupier.engine.koikoi.scoring import (
    KoiKoiOutcome,
    abandoned_settlement,
    forfeit_settlement,
    match_settlement,
    round_ended,
)
from croupier.engine.koikoi.state import KoiKoiState, Phase, evolve
from croupier.engine.koikoi.yaku import formed_or_raised, hand_yaku, yaku

R_TURN = "docs/rules/koikoi.md §2.3"
R_DECIDE = "docs/rules/koikoi.md §2.5"
R_MATCH = "docs/rules/koikoi.md §2.7"


# --- validation -------------------------------------------------------------------------------


def _check_well_formed(command: KoiKoiCommand) -> None:
    match command:
        case PlayCard(card=card, capture=capture):
            if not is_card(card):
                raise MalformedCommand(
                    "UNKNOWN_CARD", f"{card!r} is not a Hanafuda card", field="card"
                )
            if capture and not is_card(capture):
                raise MalformedCommand(
                    "UNKNOWN_CARD", f"{capture!r} is not a Hanafuda card", field="capture"
                )
        case ChooseCapture(card=card):
            if not is_card(card):
                raise MalformedCommand(
                    "UNKNOWN_CARD", f"{card!r} is not a Hanafuda card", field="card"
                )
        case KoiKoi() | Shobu() | NextRound():
            pass
        case _:
            raise MalformedCommand(
                "UNKNOWN_COMMAND", f"not a Koi-Koi command: {command!r}", field="command"
            )


_PHASE_OF = {
    PlayCard: Phase.PLAY,
    ChooseCapture: Phase.CHOOSE_CAPTURE,
    KoiKoi: Phase.DECIDE,
    Shobu: Phase.DECIDE,
}
_WAITING_FOR = {
    Phase.PLAY: ("PLAY_A_CARD", "play a card from your hand"),
    Phase.CHOOSE_CAPTURE: (
        "CHOOSE_CAPTURE_FIRST",
        "name the field card the turned card takes (ChooseCapture)",
    ),
    Phase.DECIDE: ("DECIDE_FIRST", "you formed a yaku: say koi-koi or shobu"),
}


def validate(state: KoiKoiState, seat: int, command: KoiKoiCommand) -> None:
    """Raise :class:`MalformedCommand` or :class:`IllegalCommand` unless ``seat`` may play it now.
    It turns no stock card: what it costs (``ValidateCommand``, the legal-move list) tells the
    seat nothing of the hidden card it would turn."""
    _checked_events(state, seat, command, deciding=False)


def _checked_events(
    state: KoiKoiState, seat: int, command: KoiKoiCommand, deciding: bool = True
) -> list[KoiKoiEvent]:
    """Every check of :func:`validate`, and on the way the command's own events. ``deciding``:
    the events are kept (:func:`decide`). A check alone stops at the played card: the turned
    card's events come from the hidden stock's top, and their work (none when it matches two
    field cards and waits on a choice, a capture and the yaku after it otherwise) took 11 or
    25 µs a check, which a seat timing a few hundred checks of each of its plays told apart
    over the network: the month of the card it was about to turn."""
    _check_well_formed(command)
    if state.phase is Phase.NOT_STARTED:
        raise IllegalCommand("NOT_STARTED", "the round has not been dealt", R_TURN)
    if state.phase is Phase.MATCH_OVER:
        raise IllegalCommand("MATCH_OVER", "the match is over", R_MATCH)
    if not 0 <= seat < state.seats:
        raise IllegalCommand("NOT_A_SEAT", f"there is no seat {seat}", R_TURN)
    if isinstance(command, NextRound):
        if state.phase is not Phase.ROUND_OVER:
            raise IllegalCommand("ROUND_IN_PLAY", "the round is still being played", R_MATCH)
        return []  # the next deal comes from the seeds
    if state.phase is Phase.ROUND_OVER:
        raise IllegalCommand("ROUND_OVER", "the round is over: deal the next round", R_MATCH)
    if seat != state.turn:
        raise IllegalCommand("NOT_YOUR_TURN", f"it is seat {state.turn}'s turn", R_TURN)
    if _PHASE_OF[type(command)] is not state.phase:
        reason, message = _WAITING_FOR[state.phase]
        raise IllegalCommand(reason, message, R_DECIDE if state.phase is Phase.DECIDE else R_TURN)
    events: list[KoiKoiEvent] = []
    start = state.turn_start

    def emit(event: KoiKoiEvent) -> None:
        nonlocal state
        events.append(event)
        state = evolve(state, event)

    match command:
        case PlayCard(card=card, capture=capture):
            if card not in state.hands[seat]:
                raise IllegalCommand(
                    "CARD_NOT_IN_HAND", f"{name(card)} is not in your hand", R_TURN
                )
            matches = state.matches(card)
            _check_capture(matches, capture, card)
            emit(CardPlayed(seat, card, _captures(matches, capture)))
            if not deciding:
                return events
            turned = state.stock[0]
            matches = state.matches(turned)
            if len(matches) == 2:
                emit(CardTurned(seat, turned, (), awaiting_choice=True))
                return events
            emit(CardTurned(seat, turned, matches))
        case ChooseCapture(card=card):
            waiting = state.turned
            if waiting is None:
                raise AssertionError("a capture is chosen only for a turned card")
            _check_capture(state.matches(waiting), card, waiting)
            emit(CaptureChosen(seat, waiting, (card,)))
        case KoiKoi():
            return [KoiKoiCalled(seat)]
        case Shobu():
            emit(ShobuCalled(seat))
            emit(round_ended(state, seat, KoiKoiOutcome.SHOBU))
            return events + _match_end(state)
    return events + _end_of_turn(state, seat, start)


def _check_capture(matches: tuple[Card, ...], capture: Card, card: Card) -> None:
    """A capture is named exactly when two field cards match (docs/rules/koikoi.md §2.3)."""
    if len(matches) == 2:
        if not capture:
            raise IllegalCommand(
                "CHOOSE_CAPTURE",
                f"{name(card)} matches {name(matches[0])} and "
                f"{name(matches[1])}: name the one to capture",
                R_TURN,
            )
        if capture not in matches:
            raise IllegalCommand(
                "CAPTURE_NOT_MATCHING",
                f"{name(capture)} is not a field card of {name(card)}'s month",
                R_TURN,
            )
    elif capture:
        raise IllegalCommand(
            "NO_CAPTURE_CHOICE",
            f"{name(card)} matches {len(matches)} field card(s): there is no capture to choose",
            R_TURN,
        )


# --- legal moves ------------------------------------------------------------------------------


def _candidates(state: KoiKoiState, seat: int) -> Iterator[KoiKoiCommand]:
    if state.phase is Phase.ROUND_OVER:
        yield NextRound()
    elif state.phase is Phase.PLAY:
        for card in sort_cards(state.hands[seat]):
            yield PlayCard(card)
            for capture in sort_cards(state.matches(card)):
                yield PlayCard(card, capture)
    elif state.phase is Phase.CHOOSE_CAPTURE and state.turned is not None:
        for capture in sort_cards(state.matches(state.turned)):
            yield ChooseCapture(capture)
    elif state.phase is Phase.DECIDE:
        yield KoiKoi()
        yield Shobu()


def legal_commands(state: KoiKoiState, seat: int) -> list[KoiKoiCommand]:
    """Every command ``seat`` may submit now: the candidates that :func:`validate` accepts.

    A card played from the hand is refused only by the capture rule (:func:`_check_capture`):
    what follows it (the turned card, the yaku) never refuses a play. So the plays of the seat to
    act are checked by that rule alone instead of playing out each one's turn.
    """
    if state.phase is Phase.PLAY and seat == state.turn and 0 <= seat < state.seats:
        return [
            play
            for play in _candidates(state, seat)
            if isinstance(play, PlayCard) and _captures_as_the_rule_says(state, play)
        ]
    return accepted(_candidates(state, seat), lambda command: validate(state, seat, command))


def _captures_as_the_rule_says(state: KoiKoiState, play: PlayCard) -> bool:
    try:
        _check_capture(state.matches(play.card), play.capture, play.card)
    except IllegalCommand:
        return False
    return True


def to_act(state: KoiKoiState) -> tuple[int, ...]:
    """The seats with a legal command (:func:`legal_commands` not empty), from the phase: any seat
    may deal the next round; otherwise only the seat to act, while it has a card to play or a
    capture to name."""
    turn = state.turn
    match state.phase:
        case Phase.ROUND_OVER:
            return tuple(range(state.seats))
        case Phase.PLAY if state.hands[turn]:
            return (turn,)
        case Phase.CHOOSE_CAPTURE if state.turned is not None and state.matches(state.turned):
            return (turn,)
        case Phase.DECIDE:
            return (turn,)
    return ()


# --- events -----------------------------------------------------------------------------------


def _captures(matches: tuple[Card, ...], chosen: Card) -> tuple[Card, ...]:
    """What a card takes: its one match, the named one of two, or all three."""
    if len(matches) == 2:
        return (chosen,)
    return matches


def decide(
    state: KoiKoiState, seat: int, command: KoiKoiCommand, ctx: Context
) -> list[KoiKoiEvent]:
    """The events ``command`` produces; raises like :func:`validate`."""
    events = _checked_events(state, seat, command)
    if isinstance(command, NextRound):
        events += next_round(_folded(state, events), ctx)
    return events


def _folded(state: KoiKoiState, events: list[KoiKoiEvent]) -> KoiKoiState:
    for event in events:
        state = evolve(state, event)
    return state


def _end_of_turn(state: KoiKoiState, seat: int, start: tuple[Card, ...]) -> list[KoiKoiEvent]:
    """After both steps (docs/rules/koikoi.md §2.5): a formed or raised yaku asks for the decision, or ends
    the round when a koi-koi was called or this was the last turn; else the turn has passed."""
    events: list[KoiKoiEvent] = []
    now = yaku(state.captured[seat], state.rules)
    if formed_or_raised(yaku(start, state.rules), now):
        events.append(YakuFormed(seat, now, sum(y.points for y in now)))
        state = evolve(state, events[-1])
        if state.koi_koi_by is not None:
            events.append(round_ended(state, seat, KoiKoiOutcome.WON_AFTER_KOI_KOI))
        elif state.last_turn:
            events.append(round_ended(state, seat, KoiKoiOutcome.LAST_TURN_SHOBU))
        else:
            return events
    elif state.last_turn:
        events.append(round_ended(state, None, KoiKoiOutcome.DRAWN))
    else:
        return events
    return events + _match_end(evolve(state, events[-1]))


def _match_end(state: KoiKoiState) -> list[KoiKoiEvent]:
    """The match ends by itself after its last round."""
    if state.phase is Phase.ROUND_OVER and state.round >= state.rules.rounds:
        return [MatchEnded(state.round, state.totals, match_settlement(state))]
    return []


def next_dealer(state: KoiKoiState) -> int:
    """Who deals (and leads) the next round: the last round's winner; after a drawn round the
    deal passes to the other seat (docs/rules/koikoi.md §2.2)."""
    assert state.result is not None
    winner = state.result.winner
    return winner if winner is not None else state.other(state.dealer)


def next_round(state: KoiKoiState, ctx: Context) -> list[KoiKoiEvent]:
    """Deal the next round. A hand yaku ends the new round at once (docs/rules/koikoi.md §2.2, §2.4)."""
    return dealt(state, deal(ctx.seeds, state.round + 1, next_dealer(state), state.totals))


def dealt(state: KoiKoiState, event: KoiKoiEvent) -> list[KoiKoiEvent]:
    """A deal and, when a hand holds Teshi or Kuttsuki, the round's end (the dealer's first)."""
    events: list[KoiKoiEvent] = [event]
    state = evolve(state, event)
    for seat in (state.dealer, state.other(state.dealer)):
        found = hand_yaku(state.hands[seat], state.rules)
        if found is not None:
            events.append(round_ended(state, seat, KoiKoiOutcome(found.kind.name), (found,)))
            return events + _match_end(evolve(state, events[-1]))
    return events


# --- the turn clock ---------------------------------------------------------------------------


def moves_the_match_on(state: KoiKoiState) -> int:
    """Between rounds, the seat on the clock to deal the next round: the one that will play
    second in it (the last round's loser; after a drawn round, its dealer). Not the next dealer,
    who leads the new round: a time-out that deals it would go on to force that seat's first
    play too, where the lead deserves a turn time of its own."""
    return state.other(next_dealer(state))


def _first_capture(matches: tuple[Card, ...]) -> Card:
    """The first capture choice (in deck order) when there is one to make: two matches."""
    return sort_cards(matches)[0] if len(matches) == 2 else ""


def forced_play(state: KoiKoiState, seat: int) -> Card:
    """The card a time-out plays (docs/rules/koikoi.md, "Forced moves"): with
    ``forced_play_least``, the one that gives away the least (a capture first, then the least
    valuable kind, then the earliest month); in games recorded before it, the first in deck
    order."""
    in_order = sort_cards(state.hands[seat])
    if not state.rules.forced_play_least:
        return in_order[0]
    # Kind's values run from bright (1) to chaff (4): the highest is the least valuable.
    return min(in_order, key=lambda c: (not state.matches(c), -kind(c).value))


def forced_command(state: KoiKoiState, seat: int) -> KoiKoiCommand:
    """The move a time-out makes (docs/rules/common.md §5.1): play :func:`forced_play` and take
    the first capture choice in deck order, the most valuable (also for the turned card); a
    formed or raised yaku is cashed (shobu, never koi-koi); between rounds, deal the next one.
    Always one of :func:`legal_commands` for the seat on the clock."""
    match state.phase:
        case Phase.PLAY if state.hands[seat]:
            card = forced_play(state, seat)
            return PlayCard(card, _first_capture(state.matches(card)))
        case Phase.CHOOSE_CAPTURE if state.turned is not None:
            return ChooseCapture(_first_capture(state.matches(state.turned)))
        case Phase.DECIDE:
            return Shobu()
        case Phase.ROUND_OVER:
            return NextRound()
    raise IllegalCommand("NOT_ON_THE_CLOCK", f"seat {seat} has nothing to do now", R_TURN)


def abandoned(state: KoiKoiState, why: str) -> list[KoiKoiEvent]:
    """The match ends where it stands (the studio ended it, ``why``): the rounds scored stand,
    the round in play is not scored: the match ended after the rounds played."""
    played = state.round if state.phase is Phase.ROUND_OVER else state.round - 1
    return [MatchEnded(played, state.totals, abandoned_settlement(state, played, why))]


def forfeited(state: KoiKoiState, seat: int) -> list[KoiKoiEvent]:
    """``seat`` is away and forfeits (``forfeit_when_away``): Koi-Koi is for two, so the match
    ends here, settled against it; the round in play is not scored."""
    return [
        SeatForfeited(seat, state.round),
        MatchEnded(state.round, state.totals, forfeit_settlement(state, seat)),
    ]
