"""Rummy moves: validation, legal-move generation and the events a move produces — one code path.

``validate`` holds every check; ``legal_commands`` lists the atomic steps (see the rule set's
decisions) and keeps those ``validate`` accepts; ``decide`` validates, then builds the events.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache, lru_cache
from itertools import combinations

from croupier.engine.cards import Card, is_joker, rank, suit
from croupier.engine.game import Context, IllegalCommand, MalformedCommand, accepted
from croupier.engine.meld_solver import (
    HIGH_ACE,
    LARGEST_SET,
    RUMMY,
    RUMMY_RECORDED_BEFORE,
    SUIT_LENGTH,
    JokerAs,
    Meld,
    MeldKind,
    MeldRules,
    arrange,
    arrangements,
    could_meld,
    extend,
    extensions,
    meld_groups,
    swap,
)
from croupier.engine.meld_solver import (
    clear_cache as solver_clear_cache,
)
from croupier.engine.rummy.cards import is_card, penalty, sort_cards
from croupier.engine.rummy.events import (
    CardDiscarded,
    CardDrawn,
    CardsLaidOff,
    Discard,
    DiscardTaken,
    DrawStock,
    JokerSwapped,
    LayDown,
    LayOff,
    LayOffCards,
    MeldCards,
    MeldsLaidDown,
    RummyCommand,
    RummyEvent,
    StockReshuffled,
    SwapJoker,
    TableMeld,
    TakeDiscard,
)
from croupier.engine.rummy.rules import RummyRules
from croupier.engine.rummy.scoring import RummyOutcome, forfeited, meld_value, round_ended
from croupier.engine.rummy.state import Phase, RummyState, evolve
from croupier.engine.shared import check_cards, check_jokers
from croupier.engine.shuffle import shuffled


def shape(rules: RummyRules) -> MeldRules:
    """The meld rules of a game (docs/rules/rummy.md §3.2): with ``ace_high_when_ambiguous`` as the rules
    read; without it (games recorded before the option) as those games did."""
    return RUMMY if rules.ace_high_when_ambiguous else RUMMY_RECORDED_BEFORE


R_TURN = "docs/rules/rummy.md §3.1"
R_MELDS = "docs/rules/rummy.md §3.2"
R_OPEN = "docs/rules/rummy.md §3.3"
R_CLOCK = "docs/rules/common.md §5.1"
#: Seats a round needs to go on: when a forfeit leaves fewer, the last seat in play wins.
MIN_SEATS_IN_PLAY = 2


# --- well-formedness ----------------------------------------------------------------------------


def _check_cards(cards: tuple[Card, ...], field: str) -> None:
    check_cards(cards, is_card, "the 108", field)


def _check_specs(melds: tuple[MeldCards, ...], lay_off: LayOffCards | None) -> None:
    for spec in melds:
        _check_cards(spec.cards, "melds")
        check_jokers(spec.jokers, spec.cards, "melds")
        if (
            spec.jokers
            and arrange(spec.cards, RUMMY) is not None
            and arrange(spec.cards, RUMMY, _named(spec.jokers)) is None
        ):
            raise MalformedCommand(
                "JOKER_CONTRADICTS",
                f"a named joker does not fit the meld {' '.join(spec.cards)}",
                field="melds",
            )
    if lay_off is not None:
        _check_cards(lay_off.cards, "lay_off")
        check_jokers(lay_off.jokers, lay_off.cards, "lay_off")
        if not lay_off.cards:
            raise MalformedCommand("EMPTY_LAY_OFF", "a lay-off needs cards", field="lay_off")
    named = [c for spec in melds for c in spec.cards] + list(lay_off.cards if lay_off else ())
    if len(set(named)) != len(named):
        raise MalformedCommand("DUPLICATE_CARD", "a card is named twice", field="melds")


def _check_well_formed(command: RummyCommand) -> None:
    match command:
        case TakeDiscard(melds=melds, lay_off=lay_off):
            _check_specs(melds, lay_off)
            if bool(melds) == (lay_off is not None):
                raise MalformedCommand(
                    "USE_THE_DISCARD",
                    "name the melds or the lay-off that use the taken card (one of them)",
                    rule=R_TURN,
                    field="melds",
                )
        case LayDown(melds=melds):
            _check_specs(melds, None)
            if not melds:
                raise MalformedCommand(
                    "EMPTY_LAY_DOWN", "lay down at least one meld", field="melds"
                )
        case LayOff(cards=cards, jokers=jokers):
            _check_cards(cards, "cards")
            check_jokers(jokers, cards, "jokers")
            if not cards:
                raise MalformedCommand("EMPTY_LAY_OFF", "a lay-off needs cards", field="cards")
        case SwapJoker(card=card, melds=melds, lay_off=lay_off):
            _check_cards((card,), "card")
            _check_specs(melds, lay_off)
            if bool(melds) == (lay_off is not None):
                raise MalformedCommand(
                    "USE_THE_JOKER",
                    "name the meld or the lay-off where the joker goes (one of them)",
                    rule=R_OPEN,
                    field="melds",
                )
        case Discard(card=card):
            _check_cards((card,), "card")
        case DrawStock():
            pass
        case _:
            raise MalformedCommand(
                "UNKNOWN_COMMAND", f"not a Rummy command: {command!r}", field="command"
            )


# --- melds from commands ----------------------------------------------------------------------


def _named(jokers: tuple[JokerAs, ...]) -> dict[Card, Card]:
    return {use.joker: use.card for use in jokers}


def _meld(
    cards: tuple[Card, ...], jokers: tuple[JokerAs, ...], field: str, rules: MeldRules
) -> Meld:
    """The meld the cards make, reading jokers as named (docs/rules/rummy.md §3.2)."""
    if arrange(cards, rules) is None:
        raise IllegalCommand("NOT_A_MELD", f"{' '.join(cards)} is not a set or a run", R_MELDS)
    found = arrange(cards, rules, _named(jokers))
    if found is None:
        raise MalformedCommand(
            "JOKER_CONTRADICTS",
            f"a named joker does not fit the meld {' '.join(cards)}",
            field=field,
        )
    return found


def _laid_off(
    meld: TableMeld,
    cards: tuple[Card, ...],
    jokers: tuple[JokerAs, ...],
    field: str,
    rules: MeldRules,
) -> TableMeld:
    base = Meld(meld.kind, meld.cards, meld.jokers)
    if extend(base, cards, rules) is None:
        raise IllegalCommand(
            "CANNOT_LAY_OFF",
            f"{' '.join(cards)} does not extend meld #{meld.id} ({' '.join(meld.cards)})",
            R_MELDS,
        )
    after = extend(base, cards, rules, _named(jokers))
    if after is None:
        raise MalformedCommand(
            "JOKER_CONTRADICTS", "a named joker does not fit the meld", field=field
        )
    return TableMeld(meld.id, meld.owner, after.kind, after.cards, after.jokers)


def _in(cards: tuple[Card, ...], available: tuple[Card, ...]) -> None:
    missing = [c for c in cards if c not in available]
    if missing:
        raise IllegalCommand("CARD_NOT_IN_HAND", f"{' '.join(missing)} not in your hand", R_TURN)


def _new_melds(
    state: RummyState, seat: int, specs: tuple[MeldCards, ...], available: tuple[Card, ...]
) -> list[Meld]:
    """The melds a lay-down makes, checked against the hand and, for a first lay-down, the opening
    threshold."""
    melds = []
    for spec in specs:
        _in(spec.cards, available)
        melds.append(_meld(spec.cards, spec.jokers, "melds", shape(state.rules)))
    if not state.opened[seat]:
        total = sum(meld_value(m) for m in melds)
        if total < state.rules.open_threshold:
            raise IllegalCommand(
                "OPENING_TOO_LOW",
                f"an opening needs {state.rules.open_threshold}; these melds are worth {total}",
                R_OPEN,
            )
    return melds


def _table_meld(state: RummyState, meld_id: int) -> TableMeld:
    meld = state.meld(meld_id)
    if meld is None:
        raise IllegalCommand("NO_SUCH_MELD", f"there is no meld #{meld_id} on the table", R_MELDS)
    return meld


def _require_opened(state: RummyState, seat: int, what: str) -> None:
    if not state.opened[seat]:
        raise IllegalCommand("NOT_OPENED", f"{what} only after your opening", R_OPEN)


# --- validation -------------------------------------------------------------------------------

_PHASE = {
    DrawStock: Phase.TAKE,
    TakeDiscard: Phase.TAKE,
    LayDown: Phase.PLAY,
    LayOff: Phase.PLAY,
    SwapJoker: Phase.PLAY,
    Discard: Phase.PLAY,
}


def validate(state: RummyState, seat: int, command: RummyCommand) -> None:
    """Raise :class:`MalformedCommand` or :class:`IllegalCommand` unless ``seat`` may play it now."""
    _checked_effects(state, seat, command)


def _check_in_play(state: RummyState, seat: int) -> None:
    """Refuse any command of ``seat`` (a come-back too) while no round is played, or once the
    seat forfeited."""
    if state.phase is Phase.NOT_STARTED:
        raise IllegalCommand("NOT_STARTED", "the round has not been dealt", R_TURN)
    if state.phase is Phase.ROUND_OVER:
        raise IllegalCommand("ROUND_OVER", "the round is over", R_TURN)
    if 0 <= seat < state.seats and not state.in_play(seat):
        raise IllegalCommand("FORFEITED", "you forfeited this game (away)", R_CLOCK)


def check_come_back(state: RummyState, seat: int) -> None:
    """Refuse ``ComeBack`` as every command is (:func:`_check_in_play`), then unless ``seat`` is
    away. Decided, as every command, on the state before its batch begins (the service and a
    replay alike), so the clock has not yet counted the seat back. It accepts exactly the seats
    :meth:`croupier.engine.clock.Clocked.may_come_back` lists: away, in play, the round on."""
    _check_in_play(state, seat)
    if not state.is_away(seat):
        raise IllegalCommand("NOT_AWAY", "you are not away: play your turns", R_CLOCK)


def _checked_effects(state: RummyState, seat: int, command: RummyCommand) -> list[RummyEvent]:
    """Every check of :func:`validate`, then the command's own events."""
    _check_well_formed(command)
    _check_in_play(state, seat)
    if not 0 <= seat < state.seats or seat != state.turn:
        raise IllegalCommand("NOT_YOUR_TURN", f"it is seat {state.turn}'s turn", R_TURN)
    if _PHASE[type(command)] is not state.phase:
        if state.phase is Phase.TAKE:
            raise IllegalCommand(
                "TAKE_FIRST", "take a card first (draw, or take the discard)", R_TURN
            )
        raise IllegalCommand("ALREADY_TOOK", "one take per turn", R_TURN)
    return _effects(state, seat, command)


def _effects(state: RummyState, seat: int, command: RummyCommand) -> list[RummyEvent]:
    """The events of a command, checking the rules of the move itself on the way."""
    hand = state.hands[seat]
    match command:
        case DrawStock():
            return [CardDrawn(seat, state.stock[0])]
        case TakeDiscard(melds=specs, lay_off=lay_off):
            top = state.discard_top
            if top is None:
                raise IllegalCommand("NO_DISCARD", "the discard pile is empty", R_TURN)
            used = [c for s in specs for c in s.cards] + list(lay_off.cards if lay_off else ())
            if top not in used:
                raise IllegalCommand(
                    "DISCARD_NOT_USED",
                    f"the taken {top} must go into the melds or the lay-off named",
                    R_TURN,
                )
            taken = DiscardTaken(seat, top)
            return [taken] + _plays(evolve(state, taken), seat, specs, lay_off)
        case LayDown(melds=specs):
            return _plays(state, seat, specs, None)
        case LayOff(meld_id=meld_id, cards=cards, jokers=jokers):
            return _plays(state, seat, (), LayOffCards(meld_id, cards, jokers))
        case SwapJoker(meld_id=meld_id, card=card, melds=specs, lay_off=lay_off):
            _require_opened(state, seat, "swap a joker")
            _in((card,), hand)
            meld = _table_meld(state, meld_id)
            swapped = swap(Meld(meld.kind, meld.cards, meld.jokers), card, RUMMY)
            if swapped is None:
                raise IllegalCommand(
                    "NOT_THE_JOKERS_CARD",
                    f"{card} is not the card a joker of meld #{meld_id} stands for",
                    R_OPEN,
                )
            after, joker = swapped
            used = [c for s in specs for c in s.cards] + list(lay_off.cards if lay_off else ())
            if joker not in used:
                raise IllegalCommand(
                    "JOKER_NOT_PLAYED",
                    f"the joker {joker} must be played at once: "
                    "name the meld or the lay-off it goes to",
                    R_OPEN,
                )
            event = JokerSwapped(
                seat,
                card,
                joker,
                TableMeld(meld.id, meld.owner, after.kind, after.cards, after.jokers),
            )
            return [event] + _plays(evolve(state, event), seat, specs, lay_off)
        case Discard(card=card):
            _in((card,), hand)
            return [CardDiscarded(seat, card)]
    raise AssertionError(command)


def _plays(
    state: RummyState, seat: int, specs: tuple[MeldCards, ...], lay_off: LayOffCards | None
) -> list[RummyEvent]:
    """New melds, or a lay-off, from the hand (docs/rules/rummy.md §3.3)."""
    hand = state.hands[seat]
    if specs:
        melds = _new_melds(state, seat, specs, hand)
        first = state.next_meld_id()
        placed = tuple(
            TableMeld(first + i, seat, m.kind, m.cards, m.jokers) for i, m in enumerate(melds)
        )
        opening = 0 if state.opened[seat] else sum(meld_value(m) for m in melds)
        return [MeldsLaidDown(seat, placed, opening)]
    assert lay_off is not None
    _require_opened(state, seat, "lay off")
    _in(lay_off.cards, hand)
    after = _laid_off(
        _table_meld(state, lay_off.meld_id),
        lay_off.cards,
        lay_off.jokers,
        "lay_off",
        shape(state.rules),
    )
    return [CardsLaidOff(seat, tuple(c for c in after.cards if c in lay_off.cards), after)]


# --- legal moves ------------------------------------------------------------------------------


def _spec(meld: Meld) -> MeldCards:
    return MeldCards(sort_cards(meld.cards), meld.jokers)


# The groups whose melds are kept: a hand's groups over many turns (a draw changes one or two).
GROUPS_KEPT = 8192


@lru_cache(maxsize=1024)
def meld_options(cards: tuple[Card, ...], must: Card = "") -> tuple[MeldCards, ...]:
    """Every meld (every reading) the cards can make, holding ``must`` if given."""
    found: dict[MeldCards, None] = {}
    for group in meld_groups(cards):
        if must and must not in group:
            continue
        for spec in _group_melds(group):
            if not must or must in spec.cards:
                found[spec] = None
    return tuple(found)


def clear_cache() -> None:
    """Forget every meld found so far (the solver's and the ones kept here): the next legal-move
    list is worked out from scratch, as when timing it."""
    solver_clear_cache()
    meld_options.cache_clear()
    _group_melds.cache_clear()


@lru_cache(maxsize=GROUPS_KEPT)
def _group_melds(group: tuple[Card, ...]) -> tuple[MeldCards, ...]:
    """Every meld (every reading) of three cards or more of one group (``meld_groups``), by
    size, then in the order of the group's cards."""
    found: dict[MeldCards, None] = {}
    for size in range(3, len(group) + 1):
        for combo in combinations(group, size):
            if could_meld(combo, RUMMY):
                for way in arrangements(combo, RUMMY):
                    found[_spec(way)] = None
    return tuple(found)


def best_opening(cards: tuple[Card, ...], must: Card = "") -> tuple[MeldCards, ...]:
    """The disjoint melds of most opening value among ``cards`` (holding ``must`` if given)."""
    options = [
        (spec, meld_value(meld))
        for spec in meld_options(sort_cards(cards))
        if (meld := arrange(spec.cards, RUMMY, _named(spec.jokers))) is not None
    ]

    @cache
    def best(left: frozenset[Card]) -> tuple[int, tuple[MeldCards, ...]]:
        top: tuple[int, tuple[MeldCards, ...]] = (0, ())
        for spec, value in options:
            if set(spec.cards) <= left:
                rest = best(left - set(spec.cards))
                if value + rest[0] > top[0]:
                    top = (value + rest[0], (spec,) + rest[1])
        return top

    if not must:
        return best(frozenset(cards))[1]
    top: tuple[int, tuple[MeldCards, ...]] = (0, ())
    for spec, value in options:
        if must in spec.cards:
            rest = best(frozenset(cards) - set(spec.cards))
            if value + rest[0] > top[0]:
                top = (value + rest[0], (spec,) + rest[1])
    return top[1]


def _lay_off_options(state: RummyState, cards: tuple[Card, ...]) -> Iterator[LayOffCards]:
    for meld in state.melds:
        base = Meld(meld.kind, meld.cards, meld.jokers)
        for card in cards:
            for way in extensions(base, (card,), RUMMY):
                yield LayOffCards(meld.id, (card,), tuple(j for j in way.jokers if j.joker == card))


def _discard_lay_offs(
    state: RummyState, hand: tuple[Card, ...], top: Card
) -> Iterator[LayOffCards]:
    """The discard taken and laid off on each table meld with the fewest hand cards it needs
    there (docs/rules/rummy.md §3.3), in every way: alone where it fits, else with the cards that
    close the gap to it (a run 5H 6H 7H takes a discarded 9H with the 8H, or with a joker). Unlike
    a lay-off from the hand, the taken card cannot wait for the cards between it and the meld: a
    list that offered it alone only left such a take out, and said it was complete.

    Only the sizes and cards that can close a gap are tried (:func:`_gap_fillers`): every subset
    of the hand's cards of the meld's suit, tried on every meld, made a discard that fits nowhere
    cost some two thousand checks, at every turn of a seat that has opened."""
    rules = shape(state.rules)
    for meld in state.melds:
        base = Meld(meld.kind, meld.cards, meld.jokers)
        sizes, kin = _gap_fillers(meld, hand, top, rules)
        for size in sizes:
            found = False
            for more in combinations(kin, size):
                cards = (top, *more)
                if not could_meld(meld.cards + cards, rules):
                    continue
                for way in extensions(base, cards, rules):
                    found = True
                    yield LayOffCards(
                        meld.id, cards, tuple(j for j in way.jokers if j.joker in cards)
                    )
            if found:
                break


def _gap_fillers(
    meld: TableMeld, hand: tuple[Card, ...], top: Card, rules: MeldRules
) -> tuple[tuple[int, ...], tuple[Card, ...]]:
    """How many hand cards the discard ``top`` may need to reach ``meld`` (the sizes to try,
    fewest first), and which hand cards may be among them (in hand order).

    A lay-off with the fewest cards holds none the meld could do without: a hand card at an end
    of the longer meld could be left out, the rest still a meld. So a set takes the discard alone
    (it has at least three cards, and a set at most four); a run takes a joker discard next to it,
    or past a natural card next to its own joker (two jokers may not stand side by side: one
    card); and a natural discard of its suit with the cards between the run's ends and the
    discard, one for each rank there (a natural of that rank, or a joker): as many as the ranks
    between, on either side where an ace reads low or high."""
    kin = _kin(meld, hand)
    length = len(meld.cards)
    if meld.kind is not MeldKind.RUN:
        return tuple(range(LARGEST_SET - length)), kin
    room = SUIT_LENGTH - length - 1  # the most cards a run may still take besides the discard
    if room < 0:
        return (), kin
    if rules.ace_wrap:  # not Rummy's: every size, as the rule's own search would
        return tuple(range(len(kin) + 1)), kin
    if is_joker(top):
        return tuple(range(min(1, room) + 1)), kin
    first = meld.cards[0]  # a run's cards lie low to high, a joker as the card it stands for
    named = {j.joker: j.card for j in meld.jokers}
    low = rank(named[first]) if is_joker(first) else rank(first)
    high = low + length - 1
    suits = {suit(c) for c in meld.cards if not is_joker(c)}
    if suits != {suit(top)}:
        return (), kin
    values = (rank(top), HIGH_ACE) if rank(top) == 1 and rules.ace_high else (rank(top),)
    between: set[int] = set()
    sizes: set[int] = set()
    for value in values:
        gap = range(high + 1, value) if value > high else range(value + 1, low)
        if low <= value <= high or len(gap) > room:
            continue
        sizes.add(len(gap))
        between.update(gap)
    # No ace lies between: an ace ends a run.
    return tuple(sorted(sizes)), tuple(c for c in kin if is_joker(c) or rank(c) in between)


def _kin(meld: TableMeld, hand: tuple[Card, ...]) -> tuple[Card, ...]:
    """The hand cards that could join ``meld``: jokers, and the natural cards of its suit (a
    run) or of its rank (a set)."""
    natural = next(c for c in meld.cards if not is_joker(c))
    if meld.kind is MeldKind.RUN:
        return tuple(c for c in hand if is_joker(c) or suit(c) == suit(natural))
    return tuple(c for c in hand if is_joker(c) or rank(c) == rank(natural))


def _candidates(state: RummyState, seat: int) -> Iterator[RummyCommand]:
    hand = sort_cards(state.hands[seat])
    opened = state.opened[seat]
    if state.phase is Phase.TAKE:
        yield DrawStock()
        top = state.discard_top
        if top is None:
            return
        pool = sort_cards(hand + (top,))
        if opened:
            for spec in meld_options(pool, top):
                yield TakeDiscard((spec,))
            for lay_off in _discard_lay_offs(state, hand, top):
                yield TakeDiscard(lay_off=lay_off)
        else:
            for spec in meld_options(pool, top):
                yield TakeDiscard((spec,))
            opening = best_opening(pool, top)
            if len(opening) > 1:
                yield TakeDiscard(opening)
    elif state.phase is Phase.PLAY:
        for spec in meld_options(hand):
            yield LayDown((spec,))
        if not opened:
            opening = best_opening(hand)
            if len(opening) > 1:
                yield LayDown(opening)
            for card in hand:
                yield Discard(card)
            return
        for lay_off in _lay_off_options(state, hand):
            yield LayOff(lay_off.meld_id, lay_off.cards, lay_off.jokers)
        for meld in state.melds:
            for card in hand:
                found = swap(Meld(meld.kind, meld.cards, meld.jokers), card, RUMMY)
                if found is None:
                    continue
                yield from _joker_plays(state, seat, meld.id, card)
        for card in hand:
            yield Discard(card)


def _joker_plays(state: RummyState, seat: int, meld_id: int, card: Card) -> Iterator[SwapJoker]:
    """A swap with each place the joker can go: a lay-off, or a new meld with two hand cards."""
    meld = state.meld(meld_id)
    assert meld is not None
    swapped = swap(Meld(meld.kind, meld.cards, meld.jokers), card, RUMMY)
    assert swapped is not None
    after, joker = swapped
    after_state = evolve(
        state,
        JokerSwapped(
            seat, card, joker, TableMeld(meld.id, meld.owner, after.kind, after.cards, after.jokers)
        ),
    )
    for lay_off in _lay_off_options(after_state, (joker,)):
        yield SwapJoker(meld_id, card, lay_off=lay_off)
    rest = tuple(c for c in after_state.hands[seat] if c != joker)
    for pair in combinations(sort_cards(rest), 2):
        for way in arrangements(pair + (joker,), RUMMY):
            yield SwapJoker(meld_id, card, (_spec(way),))


def legal_commands(state: RummyState, seat: int) -> list[RummyCommand]:
    """The atomic moves ``seat`` may make now, each one accepted by :func:`validate`."""
    if state.phase not in (Phase.TAKE, Phase.PLAY) or seat != state.turn:
        return []
    return accepted(_candidates(state, seat), lambda command: validate(state, seat, command))


#: The listed steps that may be combined into accepted commands beyond the list.
_COMBINABLE = (TakeDiscard, LayDown, LayOff, SwapJoker)


def legal_moves_complete(state: RummyState, seat: int) -> bool:
    """Whether :func:`legal_commands` holds every command :func:`validate` accepts (docs/rules/
    rummy.md §3.3, docs/rules/common.md §5). The list is compact: a compound command (several
    melds in one lay-down, several cards in one lay-off, a taken discard or a swapped joker played
    with more cards) is accepted without being listed. Each compound holds a listed step (a meld
    holds a meld of the list, a lay-off onto a run a card that fits an end alone), so where the
    list offers nothing but drawing and discarding it is complete; otherwise compound commands
    may exist beyond it, and it says so."""
    return not any(isinstance(c, _COMBINABLE) for c in legal_commands(state, seat))


def to_act(state: RummyState) -> tuple[int, ...]:
    """The seats with a legal command (:func:`legal_commands` not empty): the seat to act, which
    can always draw (an emptied stock is rebuilt or ends the round at once) or discard."""
    turn = state.turn
    if (state.phase is Phase.TAKE and state.stock) or (
        state.phase is Phase.PLAY and state.hands[turn]
    ):
        return (turn,)
    return ()


def canonical(state: RummyState, command: RummyCommand) -> RummyCommand:
    """One form for commands that mean the same: cards in deck order, every joker named as it
    resolves (a meld may be sent in any order, an unnamed joker takes its default card)."""

    rules = shape(state.rules)

    def meld(spec: MeldCards) -> MeldCards:
        found = arrange(spec.cards, rules, _named(spec.jokers))
        return _spec(found) if found is not None else MeldCards(sort_cards(spec.cards), spec.jokers)

    def lay_off(spec: LayOffCards | None, table: RummyState) -> LayOffCards | None:
        if spec is None:
            return None
        target = table.meld(spec.meld_id)
        found = (
            extend(
                Meld(target.kind, target.cards, target.jokers),
                spec.cards,
                rules,
                _named(spec.jokers),
            )
            if target
            else None
        )
        jokers = tuple(j for j in found.jokers if j.joker in spec.cards) if found else spec.jokers
        return LayOffCards(spec.meld_id, sort_cards(spec.cards), jokers)

    try:
        _check_well_formed(command)
    except MalformedCommand:
        return command
    match command:
        case TakeDiscard(melds=specs, lay_off=spec):
            return TakeDiscard(tuple(meld(m) for m in specs), lay_off(spec, state))
        case LayDown(melds=specs):
            return LayDown(tuple(meld(m) for m in specs))
        case LayOff(meld_id=meld_id, cards=cards, jokers=jokers):
            found = lay_off(LayOffCards(meld_id, cards, jokers), state)
            assert found is not None
            return LayOff(found.meld_id, found.cards, found.jokers)
        case SwapJoker(meld_id=meld_id, card=card, melds=specs, lay_off=spec):
            try:
                swapped = _effects(state, state.turn, SwapJoker(meld_id, card, specs, spec))[0]
                after = evolve(state, swapped)
            except (IllegalCommand, MalformedCommand):
                after = state
            return SwapJoker(meld_id, card, tuple(meld(m) for m in specs), lay_off(spec, after))
    return command


# --- events -----------------------------------------------------------------------------------


def decide(state: RummyState, seat: int, command: RummyCommand, ctx: Context) -> list[RummyEvent]:
    """The events ``command`` produces; raises like :func:`validate`."""
    events = _checked_effects(state, seat, command)
    for event in events:
        state = evolve(state, event)
    if not state.hands[seat]:
        return events + [round_ended(state, RummyOutcome.WENT_OUT, seat)]
    if isinstance(command, Discard):
        return events + _turn_ended(state, ctx)
    return events


def _turn_ended(state: RummyState, ctx: Context) -> list[RummyEvent]:
    """A turn is over: an empty stock is rebuilt from the discards under the top (docs/rules/rummy.md §3.1),
    or, when it cannot be, the round ends with nobody going out."""
    if state.stock:
        return []
    limit = state.rules.max_reshuffles
    if len(state.discards) >= 2 and (limit == 0 or state.reshuffles < limit):
        n = state.reshuffles + 1
        stock = shuffled(state.discards[:-1], ctx.seeds, 1, f"reshuffle-{n}")
        return [StockReshuffled(stock, len(stock), n)]
    return [round_ended(state, RummyOutcome.STOCK_OUT, None)]


# --- the turn clock (docs/rules/common.md §5.1) -------------------------------------------------------------


def costliest(hand: tuple[Card, ...]) -> Card:
    """The card a forced discard throws: the highest penalty (a joker, then an ace, then the tens
    and faces); ties go to the higher rank (K, Q, J, 10), then to the card later in deck order
    (the second copy before the first; clubs, diamonds, hearts, spades)."""
    later_first = reversed(sort_cards(hand))
    return max(later_first, key=lambda card: (penalty(card), rank(card)))


def forced_command(state: RummyState, seat: int) -> RummyCommand:
    """The move a time-out makes: draw from the stock (never take the discard, which would have
    to be melded at once); then discard the costliest card (never open, lay off or swap)."""
    if seat == state.turn and state.in_play(seat):
        if state.phase is Phase.TAKE:
            return DrawStock()
        if state.phase is Phase.PLAY:
            return Discard(costliest(state.hands[seat]))
    raise IllegalCommand("NOT_ON_THE_CLOCK", f"seat {seat} has nothing to do now", R_CLOCK)


def abandoned(state: RummyState, why: str | None = None) -> list[RummyEvent]:
    """Every seat in play is away for long enough (``end_when_all_away``), or the studio ended
    the game (``why``): the round ends with no winner; nobody pays but the forfeits already
    paid."""
    return [round_ended(state, RummyOutcome.ABANDONED, None, why)]


def forfeit(state: RummyState, seat: int, ctx: Context) -> list[RummyEvent]:
    """``seat`` forfeits (it is away, with ``forfeit_when_away``): it pays its hand to every seat
    in play and leaves the round. With two seats or more still in play the round goes on (the
    forfeit ends the seat's turn, so an empty stock is dealt with as after a discard); the last
    seat in play wins the round."""
    events: list[RummyEvent] = [forfeited(state, seat)]
    state = evolve(state, events[0])
    playing = state.seats_in_play()
    if len(playing) < MIN_SEATS_IN_PLAY:
        return events + [round_ended(state, RummyOutcome.FORFEIT, playing[0])]
    return events + _turn_ended(state, ctx)
