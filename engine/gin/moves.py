"""Gin Rummy moves: validation, legal-move generation and the events a move produces — one code
path. One pass checks a command and builds its events on the way; ``validate`` runs it and drops
the events, ``decide`` keeps them and adds the next deal and the match's end. ``legal_commands``
keeps the candidates ``validate`` accepts."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from croupier.engine.cards import Card, is_card, name, rank, sort_cards
from croupier.engine.game import Context, IllegalCommand, MalformedCommand, accepted
from croupier.engine.gin.deal import deal
from croupier.engine.gin.events import (
    CardDiscarded,
    CardDrawn,
    CardLaidOff,
    Discard,
    DrawDiscard,
    DrawStock,
    EndLayOffs,
    GinCommand,
    GinEvent,
    HandDealt,
    Knock,
    Knocked,
    KnockMeld,
    LayOff,
    LayOffsEnded,
    MatchEnded,
    NextHand,
    Pass,
    SeatForfeited,
    UpcardPassed,
)
from croupier.engine.gin.scoring import (
    GinOutcome,
    abandoned_settlement,
    forfeit_settlement,
    hand_ended,
    match_settlement,
    scored,
)
from croupier.engine.gin.state import GinState, Phase, evolve
from croupier.engine.meld_solver import (
    GIN,
    Meld,
    best_melds,
    deadwood,
    deadwood_count,
    extend,
    least_arrangements,
    meld_sets,
)

R_GIN = "docs/rules/gin.md §4"
WALL = 2


def _check_well_formed(command: GinCommand) -> None:
    match command:
        case Discard(card=card) | LayOff(card=card):
            if not is_card(card):
                raise MalformedCommand("UNKNOWN_CARD", f"{card!r} is not a card", field="card")
        case Knock(card=card, melds=melds):
            if card and not is_card(card):
                raise MalformedCommand("UNKNOWN_CARD", f"{card!r} is not a card", field="card")
            named = [c for meld in melds for c in meld.cards]
            if any(not is_card(c) for c in named):
                raise MalformedCommand("UNKNOWN_CARD", "a named meld holds no card", field="melds")
            if len(set(named)) != len(named):
                raise MalformedCommand("DUPLICATE_CARD", "a card is named twice", field="melds")
        case DrawStock() | DrawDiscard() | Pass() | EndLayOffs() | NextHand():
            pass
        case _:
            raise MalformedCommand(
                "UNKNOWN_COMMAND", f"not a Gin Rummy command: {command!r}", field="command"
            )


_PHASES = {
    DrawStock: (Phase.DRAW,),
    DrawDiscard: (Phase.FIRST_UPCARD, Phase.DRAW),
    Pass: (Phase.FIRST_UPCARD, Phase.DRAW),
    Discard: (Phase.DISCARD,),
    Knock: (Phase.DISCARD,),
    LayOff: (Phase.LAY_OFF,),
    EndLayOffs: (Phase.LAY_OFF,),
}
_WAITING = {
    Phase.FIRST_UPCARD: ("TAKE_OR_PASS", "take the first upcard or pass"),
    Phase.DRAW: ("DRAW_FIRST", "draw from the stock or the discard pile first"),
    Phase.DISCARD: ("DISCARD_FIRST", "discard, or knock"),
    Phase.LAY_OFF: ("LAY_OFF_OR_END", "lay off onto the knocker's melds, or end your lay-offs"),
}


def at_the_wall(state: GinState) -> bool:
    """Two cards left in the stock at the start of a turn (docs/rules/gin.md §4's wall rule)."""
    return state.phase is Phase.DRAW and len(state.stock) <= WALL


def _can_knock_after_taking(state: GinState, seat: int) -> bool:
    top = state.discard_top
    if top is None:
        return False
    hand = state.hands[seat] + (top,)
    return any(
        deadwood(tuple(c for c in hand if c != out), GIN) <= state.rules.knock_card
        for out in hand
        if out != top
    )


def validate(state: GinState, seat: int, command: GinCommand) -> None:
    """Raise :class:`MalformedCommand` or :class:`IllegalCommand` unless ``seat`` may play it now.
    It reads nothing of the other hand: what it costs (``ValidateCommand``, the legal-move list
    worked out after each draw) tells the seat nothing hidden."""
    _checked_events(state, seat, command, deciding=False)


def _checked_events(
    state: GinState, seat: int, command: GinCommand, deciding: bool = True
) -> list[GinEvent]:
    """Every check of :func:`validate`, and on the way the command's own events. ``deciding``:
    the events are kept (:func:`decide`); a check alone (``False``) leaves out the events of a
    knock that depend on the defender's hand (:func:`_knock`), as it drops them anyway."""
    _check_well_formed(command)
    if state.phase is Phase.NOT_STARTED:
        raise IllegalCommand("NOT_STARTED", "the hand has not been dealt", R_GIN)
    if state.phase is Phase.MATCH_OVER:
        raise IllegalCommand("MATCH_OVER", "the match is over", R_GIN)
    if not 0 <= seat < state.seats:
        raise IllegalCommand("NOT_A_SEAT", f"there is no seat {seat}", R_GIN)
    if isinstance(command, NextHand):
        if state.phase is not Phase.HAND_OVER:
            raise IllegalCommand("HAND_IN_PLAY", "the hand is still being played", R_GIN)
        return []  # the next deal comes from the seeds
    if state.phase is Phase.HAND_OVER:
        raise IllegalCommand("HAND_OVER", "the hand is over: deal the next hand", R_GIN)
    if seat != state.turn:
        raise IllegalCommand("NOT_YOUR_TURN", f"it is seat {state.turn}'s turn", R_GIN)
    if state.phase not in _PHASES[type(command)]:
        raise IllegalCommand(*_WAITING[state.phase], R_GIN)
    hand = state.hands[seat]
    match command:
        case DrawStock():
            if at_the_wall(state):
                raise IllegalCommand(
                    "WALL",
                    "two cards are left in the stock: take the discard to "
                    "knock with it, or pass (a wash)",
                    R_GIN,
                )
            return [CardDrawn(seat, state.stock[0], from_discard=False)]
        case DrawDiscard():
            if state.upcard_refused:
                raise IllegalCommand(
                    "UPCARD_REFUSED", "both passed the upcard: draw from the stock", R_GIN
                )
            if at_the_wall(state) and not _can_knock_after_taking(state, seat):
                raise IllegalCommand(
                    "WALL", "at the wall the discard may be taken only to knock with it", R_GIN
                )
            return [CardDrawn(seat, state.discard_top, from_discard=True)]
        case Pass():
            if state.phase is Phase.FIRST_UPCARD:
                return [UpcardPassed(seat)]
            if not at_the_wall(state):
                raise IllegalCommand(
                    "MUST_DRAW", "draw a card (passing is for the first upcard and the wall)", R_GIN
                )
            return [
                hand_ended(
                    state,
                    GinOutcome.WASH,
                    None,
                    [],
                    (0, 0),
                    ("two cards were left in the stock: the hand is a wash",),
                )
            ]
        case Discard(card=card):
            _check_discard(state, hand, card)
            if len(state.stock) <= WALL and state.taken is not None:
                raise IllegalCommand("WALL_KNOCK", "a discard taken at the wall must knock", R_GIN)
            return [CardDiscarded(seat, card)]
        case Knock(card=card, melds=named):
            return _knock(state, seat, hand, card, named, deciding)
        case LayOff(card=card, meld=index):
            if card not in hand:
                raise IllegalCommand("CARD_NOT_IN_HAND", f"{name(card)} is not in your hand", R_GIN)
            if not 0 <= index < len(state.table):
                raise IllegalCommand("NO_SUCH_MELD", f"the knocker has no meld {index}", R_GIN)
            after = extend(state.table[index], (card,), GIN)
            if after is None:
                raise IllegalCommand(
                    "CANNOT_LAY_OFF",
                    f"{name(card)} does not extend meld {' '.join(state.table[index].cards)}",
                    R_GIN,
                )
            return [CardLaidOff(seat, card, index, after)]
        case EndLayOffs():
            return _shown_and_scored(state)
    raise AssertionError(f"a well-formed command has a case above: {command!r}")


def _knock(
    state: GinState,
    seat: int,
    hand: tuple[Card, ...],
    card: Card,
    named: tuple[KnockMeld, ...] = (),
    deciding: bool = True,
) -> list[GinEvent]:
    """A knock with ``card`` discarded, or big gin with no discard (docs/rules/gin.md §4): the knocker's
    melds (``named``, or the engine's choice) are shown; gin leaves the defender no lay-off, so
    the hand is scored at once. Not ``deciding`` (a check alone), the melds are the first
    arrangement and a gin is not scored: both are worked out from the defender's hidden hand,
    the longer the more of its cards lay off on the knocker's melds (0.5 ms with none, 3 ms with
    five), which a seat timing its own ``ValidateCommand`` or legal-move list read off before it
    knocked."""
    if card:
        _check_discard(state, hand, card)
    elif not state.rules.big_gin_bonus:
        raise IllegalCommand(
            "NO_BIG_GIN",
            "big gin is not in these rules (big_gin_bonus); knock with a discard",
            R_GIN,
        )
    kept = tuple(c for c in hand if c != card)
    # The melds named hold cards of the hand kept, before anything is counted: a card that is
    # not there is said so, not met as deadwood over the knock card (the same words whoever
    # holds it, or the stock: nothing is told of where it is).
    for meld in named:
        for held in meld.cards:
            if held not in kept:
                raise IllegalCommand(
                    "CARD_NOT_IN_HAND", f"{name(held)} is not in your hand to meld", R_GIN
                )
    # The least deadwood first (remembered, cheap): most knocks a legal-move list tries are
    # refused by it, before every arrangement that reaches it is worked out.
    melds, left = best_melds(kept, GIN)
    count = deadwood_count(left)
    if not card and count != 0:
        raise IllegalCommand("NOT_BIG_GIN", "big gin needs all eleven cards melded", R_GIN)
    if count > state.rules.knock_card:
        raise IllegalCommand(
            "DEADWOOD_TOO_HIGH",
            f"deadwood {count} is over the knock card {state.rules.knock_card}",
            R_GIN,
        )
    ways = least_arrangements(kept, GIN)  # the first is best_melds' choice
    if named:
        wanted = meld_sets(m.cards for m in named)
        chosen = next((way for way in ways if meld_sets(way[0]) == wanted), None)
        if chosen is None:
            raise IllegalCommand(
                "NOT_LEAST_DEADWOOD_MELDS",
                f"the melds named are not an arrangement of your hand that leaves the least "
                f"deadwood ({count}): name every meld of one of them, or none",
                R_GIN,
            )
        melds, left = chosen
    elif deciding and state.rules.knocker_best_melds and len(ways) > 1:
        defender = state.hands[state.other(seat)]
        # Python's max keeps the first of equals: the fixed order decides ties.
        melds, left = max(ways, key=lambda way: defender_least(defender, way[0]))
    gin = not left
    knocked = Knocked(seat, card, melds, left, count, gin, gin and not card)
    if not gin or not deciding:
        return [knocked]
    return [knocked, *_shown_and_scored(evolve(state, knocked))]


def defender_least(hand: tuple[Card, ...], melds: tuple[Meld, ...]) -> int:
    """The least deadwood the defender can reach against the knocker's ``melds``: laying off its
    cards one at a time (each onto a meld as extended so far), then melding the rest."""
    return _defender_least(tuple(sorted(hand)), melds)


@lru_cache(maxsize=4096)
def _defender_least(hand: tuple[Card, ...], table: tuple[Meld, ...]) -> int:
    least = deadwood(hand, GIN)
    for card in hand:
        rest = tuple(c for c in hand if c != card)
        for index, meld in enumerate(table):
            after = extend(meld, (card,), GIN)
            if after is not None:
                grown = table[:index] + (after,) + table[index + 1 :]
                least = min(least, _defender_least(rest, grown))
    return least


def _shown_and_scored(state: GinState) -> list[GinEvent]:
    """The defender (the seat to act after the knock) shows its melds; the hand is scored."""
    shown = _defender_shows(state)
    return [shown, scored(evolve(state, shown), shown.deadwood)]


def _check_discard(state: GinState, hand: tuple[Card, ...], card: Card) -> None:
    if card not in hand:
        raise IllegalCommand("CARD_NOT_IN_HAND", f"{name(card)} is not in your hand", R_GIN)
    if card == state.taken:
        raise IllegalCommand(
            "DISCARD_JUST_TAKEN",
            "the card taken from the discard pile may not be discarded in the same turn",
            R_GIN,
        )


def _candidates(state: GinState, seat: int) -> Iterator[GinCommand]:
    hand = sort_cards(state.hands[seat]) if state.hands else ()
    if state.phase is Phase.HAND_OVER:
        yield NextHand()
    elif state.phase in (Phase.FIRST_UPCARD, Phase.DRAW):
        yield DrawStock()
        yield DrawDiscard()
        yield Pass()
    elif state.phase is Phase.DISCARD:
        for card in hand:
            yield Discard(card)
        for card in hand:
            yield Knock(card)
            yield from _named_knocks(hand, card, state.rules.knock_card)
        yield Knock()
        yield from _named_knocks(hand, "", 0)
    elif state.phase is Phase.LAY_OFF:
        for card in hand:
            for index in range(len(state.table)):
                yield LayOff(card, index)
        yield EndLayOffs()


def _named_knocks(hand: tuple[Card, ...], card: Card, most: int) -> Iterator[Knock]:
    """The knock discarding ``card`` naming each arrangement that leaves the least deadwood
    (docs/rules/gin.md §4), in the solver's order, melds in table order; only where the knock may leave
    that deadwood (at most ``most``: the knock card, or 0 for big gin)."""
    kept = tuple(c for c in hand if c != card)
    if deadwood(kept, GIN) > most:
        return
    for melds, _ in least_arrangements(kept, GIN):
        yield Knock(card, tuple(KnockMeld(m.cards) for m in melds))


def legal_commands(state: GinState, seat: int) -> list[GinCommand]:
    return accepted(_candidates(state, seat), lambda command: validate(state, seat, command))


def to_act(state: GinState) -> tuple[int, ...]:
    """The seats with a legal command (:func:`legal_commands` not empty), from the phase: either
    seat may deal the next hand; otherwise the seat to act, which can always draw or pass, end
    its lay-offs, or discard a card other than the one it just took."""
    match state.phase:
        case Phase.HAND_OVER:
            return tuple(range(state.seats))
        case Phase.FIRST_UPCARD | Phase.DRAW | Phase.LAY_OFF:
            return (state.turn,)
        case Phase.DISCARD if any(c != state.taken for c in state.hands[state.turn]):
            return (state.turn,)
    return ()


def decide(state: GinState, seat: int, command: GinCommand, ctx: Context) -> list[GinEvent]:
    """The events ``command`` produces; raises like :func:`validate`."""
    events = _checked_events(state, seat, command)
    for event in events:
        state = evolve(state, event)
    if isinstance(command, NextHand):
        events.append(_next_deal(state, ctx))
        state = evolve(state, events[-1])
    if state.phase is Phase.HAND_OVER and max(state.totals) >= state.rules.match_points:
        events.append(MatchEnded(state.hand, state.totals, match_settlement(state)))
    return events


def next_dealer(state: GinState) -> int:
    """Who deals the next hand: the last hand's winner; after a hand nobody won, the dealer."""
    winner = state.result.winner if state.result is not None else None
    return state.dealer if winner is None else winner


def _next_deal(state: GinState, ctx: Context) -> HandDealt:
    return deal(ctx.seeds, state.hand + 1, next_dealer(state), state.totals)


def _defender_shows(state: GinState) -> LayOffsEnded:
    defender = state.turn
    melds, left = best_melds(state.hands[defender], GIN)
    return LayOffsEnded(defender, melds, left, deadwood_count(left))


def forced_command(state: GinState, seat: int) -> GinCommand:
    """The move a time-out makes (docs/rules/common.md §5.1): pass the first upcard; draw from the
    stock (at the wall: pass, a wash); discard the card that leaves the least deadwood (ties: the
    highest rank, :func:`forced_discard`), never knock (unless the discard taken at the wall
    must knock: with that discard); lay off, one card at a time, the defender-best set of cards
    (each time the legal-move list's first lay-off after which the defender can still reach the
    least deadwood it can reach now, :func:`defender_least`), then end; between hands, deal the
    next one. Games recorded before ``forced_lay_off_best`` laid off the legal-move list's first
    lay-off, again and again, then ended."""
    match state.phase:
        case Phase.FIRST_UPCARD:
            return Pass()
        case Phase.DRAW:
            return Pass() if at_the_wall(state) else DrawStock()
        case Phase.DISCARD:
            hand = state.hands[seat]
            by_rank = state.rules.forced_discard_by_rank
            if len(state.stock) <= WALL and state.taken is not None:
                # The discard taken at the wall was taken to knock: the knock is the only move,
                # unnamed, discarding as a forced discard does (games recorded before the
                # option: the first knock of the legal-move list).
                knocks = [c for c in legal_commands(state, seat) if isinstance(c, Knock)]
                if not by_rank:
                    return knocks[0]
                # A knock that discards: big gin (all eleven melded, no discard) is no forced
                # move's to choose, and a knock with a discard is always there beside it.
                cards = [k.card for k in knocks if k.card and not k.melds]
                return Knock(forced_discard(hand, cards))
            choices = [c for c in sort_cards(hand) if c != state.taken]
            if not by_rank:
                # Games recorded before the option: ties went to the last card in the deck's
                # order, suits first.
                return Discard(min(reversed(choices), key=lambda c: _deadwood_without(hand, c)))
            return Discard(forced_discard(hand, choices))
        case Phase.LAY_OFF:
            lay_offs = [c for c in legal_commands(state, seat) if isinstance(c, LayOff)]
            if not state.rules.forced_lay_off_best:
                # Games recorded before the option: the legal-move list's first lay-off, even
                # one that breaks the defender's own meld.
                return lay_offs[0] if lay_offs else EndLayOffs()
            return _best_lay_off(state, seat, lay_offs)
        case Phase.HAND_OVER:
            return NextHand()
    raise IllegalCommand("NOT_ON_THE_CLOCK", f"seat {seat} has nothing to do now", R_GIN)


def _best_lay_off(state: GinState, seat: int, lay_offs: list[LayOff]) -> GinCommand:
    """The forced lay-off (``forced_lay_off_best``): the first of ``lay_offs`` (in the legal-move
    list's order) after which the defender can still reach the least deadwood it can reach now;
    none such, the end of the lay-offs. Played to the end, they leave the defender
    :func:`defender_least` of its hand against the knocker's melds as the phase began."""
    hand = state.hands[seat]
    least = defender_least(hand, state.table)
    for command in lay_offs:
        after = extend(state.table[command.meld], (command.card,), GIN)
        if after is None:  # a legal lay-off extends its meld
            continue
        rest = tuple(c for c in hand if c != command.card)
        grown = state.table[: command.meld] + (after,) + state.table[command.meld + 1 :]
        if defender_least(rest, grown) == least:
            return command
    return EndLayOffs()


def forced_discard(hand: tuple[Card, ...], choices: list[Card]) -> Card:
    """The card of ``choices`` a forced discard lets go (docs/rules/gin.md, "Forced moves"): the
    one that leaves the least deadwood in ``hand``; among equals the highest rank, then the last
    in the deck's order (spades, hearts, diamonds, clubs)."""
    return min(reversed(sort_cards(choices)), key=lambda c: (_deadwood_without(hand, c), -rank(c)))


def _deadwood_without(hand: tuple[Card, ...], card: Card) -> int:
    """The least deadwood ``hand`` leaves once ``card`` is let go."""
    return deadwood(tuple(h for h in hand if h != card), GIN)


def abandoned(state: GinState, why: str | None = None) -> list[GinEvent]:
    """Both seats are away for long enough (``end_when_all_away``), or the studio ended the match
    (``why``): it ends where it stands; the hand in play is not scored."""
    return [MatchEnded(state.hand, state.totals, abandoned_settlement(state, why))]


def forfeited(state: GinState, seat: int) -> list[GinEvent]:
    """``seat`` is away and forfeits (``forfeit_when_away``): Gin Rummy is for two, so the match
    ends here, settled against it; the hand in play is not scored."""
    return [
        SeatForfeited(seat, state.hand),
        MatchEnded(state.hand, state.totals, forfeit_settlement(state, seat)),
    ]
