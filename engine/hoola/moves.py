"""Hoola moves: validation, legal-move generation and the events a move produces — one code path.

One pass checks a command and builds its events on the way (each check yields what the events
need, so nothing is derived twice): ``validate`` runs it and drops the events; ``decide`` keeps
them and adds what follows by the seeds (a reshuffle, the sit-out shuffle, the next deal).
``legal_commands`` enumerates candidates and keeps exactly those ``validate`` accepts
(python-chess's ``generate_legal_moves`` / ``is_legal`` habit).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

from croupier.engine.cards import (
    SUITS,
    Card,
    by_rank,
    deck_codes,
    is_card,
    is_joker,
    rank,
    sort_cards,
    suit,
)
from croupier.engine.game import (
    CommandError,
    Context,
    IllegalCommand,
    MalformedCommand,
    accepted,
)
from croupier.engine.hoola.deal import HAND_SIZE, deal
from croupier.engine.hoola.events import (
    BindSevens,
    CardDiscarded,
    CardDrawn,
    CardsLaidOff,
    ClaimMade,
    CloseTable,
    Combination,
    CombinationDeclared,
    Declare,
    Discard,
    DiscardTaken,
    Draw,
    Hand,
    HoolaCommand,
    HoolaEvent,
    LayOff,
    LeaveTable,
    Meld,
    MeldMade,
    NextRound,
    Play,
    PlayBegan,
    PlayDeclared,
    RoundDealt,
    RoundEnded,
    SatOut,
    SeatForfeited,
    SeatLeft,
    SevensBound,
    SitOut,
    StockReshuffled,
    Stop,
    StopCalled,
    TableClosed,
    ThankYou,
)
from croupier.engine.hoola.melds import (
    Arranged,
    TableMeld,
    arrange,
    brights,
    extend,
    extensions,
    hand_value,
    meld_rules,
    plain_sum,
)
from croupier.engine.hoola.rules import (
    MAX_PLAYERS,
    ClaimPriority,
    HoolaRules,
    ThankYouPenaltyScope,
)
from croupier.engine.hoola.scoring import (
    HoolaOutcome,
    Liability,
    Outcome,
    abandoned_settlement,
    lowest_hands,
    settle,
    table_settlement,
)
from croupier.engine.hoola.state import HoolaState, Phase, evolve, may_reshuffle
from croupier.engine.meld_solver import (
    SEVEN,
    JokerAs,
    MeldKind,
    MeldRules,
    SortedOut,
    could_meld,
    sorted_out,
)
from croupier.engine.meld_solver import arrangements as solver_arrangements
from croupier.engine.meld_solver import clear_cache as solver_clear_cache
from croupier.engine.settlement import Factor
from croupier.engine.shared import check_cards, check_jokers
from croupier.engine.shuffle import shuffled

R_TURN = "docs/rules/hoola.md §1.2"
R_MELDS = "docs/rules/hoola.md §1.3"
R_OUT = "docs/rules/hoola.md §1.5.1"
R_STOP = "docs/rules/hoola.md §1.5.2"
R_COMBO = "docs/rules/hoola.md §1.5.3"
R_TABLE = "docs/rules/hoola.md §1.8"
R_BATTLE = "docs/rules/hoola.md §1.7"
R_SIT_OUT = "docs/rules/hoola.md §1.9"
R_CLOCK = "docs/rules/common.md §5.1"


# --- validation -------------------------------------------------------------------------------


def _check_cards(cards: tuple[Card, ...], state: HoolaState, field: str = "cards") -> None:
    # Every candidate of every legal-move list comes here: cards all of the deck, none twice, pass
    # at once; any other goes through the card-by-card check for its error.
    try:
        if deck_codes(state.rules.jokers).issuperset(cards) and len(set(cards)) == len(cards):
            return
    except TypeError:  # an unhashable card: the check below names it
        pass
    check_cards(
        cards,
        lambda card: isinstance(card, str) and is_card(card, state.rules.jokers),
        "this deck",
        field,
    )


def _named(jokers: tuple[JokerAs, ...]) -> dict[Card, Card]:
    return {use.joker: use.card for use in jokers}


def _check_well_formed(state: HoolaState, command: HoolaCommand) -> None:
    match command:
        case ThankYou(cards=cards, jokers=jokers):
            _check_cards(cards, state)
            top = state.discard_top
            check_jokers(jokers, cards + ((top,) if top else ()), "jokers")
        case Meld(cards=cards, jokers=jokers):
            _check_cards(cards, state)
            if not cards:
                raise MalformedCommand("EMPTY_MELD", "a meld needs cards", field="cards")
            check_jokers(jokers, cards, "jokers")
        case LayOff(cards=cards, jokers=jokers):
            _check_cards(cards, state)
            if not cards:
                raise MalformedCommand("EMPTY_LAY_OFF", "a lay-off needs cards", field="cards")
            check_jokers(jokers, cards, "jokers")
        case BindSevens(cards=cards):
            _check_cards(cards, state)
            if len(cards) != 2:
                raise MalformedCommand(
                    "BIND_TWO_SEVENS", "7-binding joins exactly two cards", field="cards"
                )
        case Discard(card=card):
            _check_cards((card,), state, field="card")
        case Declare(combination=combination):
            if not isinstance(combination, Combination):
                raise MalformedCommand(
                    "MISSING_COMBINATION", "name the combination", field="combination"
                )
        case Draw() | Stop() | NextRound() | CloseTable() | LeaveTable() | Play() | SitOut():
            pass
        case _:
            raise MalformedCommand(
                "UNKNOWN_COMMAND", f"not a Hoola command: {command!r}", field="command"
            )


def _check_names(jokers: tuple[JokerAs, ...], unnamed: object) -> None:
    """The cards make a meld unnamed (``unnamed`` is not ``None``) but not as the jokers are named:
    the naming contradicts them (a card of the meld named again, or of another rank in a set),
    a malformed command (docs/rules/hoola.md §1.3)."""
    if jokers and unnamed is not None:
        raise MalformedCommand(
            "JOKER_CONTRADICTS",
            "a named joker does not fit the meld: it repeats a card of the meld or contradicts it",
            rule=R_MELDS,
            field="jokers",
        )


def _check_keeps_a_discard(state: HoolaState, seat: int, cards: tuple[Card, ...]) -> None:
    """With ``go_out_by_discard`` the last card must be a discard (docs/rules/hoola.md §1.5): putting down
    the whole hand is refused."""
    if state.rules.go_out_by_discard and len(state.hands[seat]) == len(cards):
        raise IllegalCommand(
            "GO_OUT_BY_DISCARD",
            "keep a card to discard: the last card must be a discard (go_out_by_discard)",
            R_OUT,
        )


def _in_hand(state: HoolaState, seat: int, cards: tuple[Card, ...]) -> None:
    hand = state.hands[seat]
    missing = [c for c in cards if c not in hand]
    if missing:
        raise IllegalCommand("CARD_NOT_IN_HAND", f"{' '.join(missing)} not in your hand", R_TURN)


def claim_open(state: HoolaState, seat: int) -> bool:
    """Battle Hoola (docs/rules/hoola.md §1.7): after a discard, until the next player's take, any seat but
    the discarder may take the discard by thank-you out of turn (once, where claims wait for the
    window to close)."""
    return (
        state.rules.out_of_turn_thank_you
        and state.phase is Phase.TAKE
        and state.top_discarder is not None
        and seat in state.players
        and seat not in (state.turn, state.top_discarder)
        and all(claim.seat != seat for claim in state.claims)
    )


def _nearest_in_turn(state: HoolaState) -> bool:
    return state.rules.claim_priority is ClaimPriority.NEAREST_IN_TURN


def _may_claim(state: HoolaState, seat: int, command: HoolaCommand) -> bool:
    return isinstance(command, ThankYou) and claim_open(state, seat)


def _is_first_turn(state: HoolaState, seat: int) -> bool:
    return state.turns_started[seat] == 1


def validate(state: HoolaState, seat: int, command: HoolaCommand) -> None:
    """Raise :class:`MalformedCommand` or :class:`IllegalCommand` unless ``seat`` may play it now.
    It settles no round: what it costs (``ValidateCommand``, the legal-move list) tells the seat
    nothing of the hands a stop or a declaration would show."""
    _checked_events(state, seat, command, now_ms=0, deciding=False)


def _checked_events(
    state: HoolaState, seat: int, command: HoolaCommand, now_ms: int, deciding: bool = True
) -> list[HoolaEvent]:
    """Every check of :func:`validate`, and on the way the command's own events (a claim is
    recorded at ``now_ms``); :func:`decide` adds what follows by the seeds. ``deciding``: the
    events are kept; a check alone leaves out the end of the round a stop or a declaration
    makes, which is worked out from every hidden hand (whether the stop wins, each hand's
    penalties), so that its cost could tell the seat which."""
    _check_well_formed(state, command)
    if state.phase is Phase.NOT_STARTED:
        raise IllegalCommand("NOT_STARTED", "the round has not been dealt", R_TURN)
    if state.phase is Phase.TABLE_CLOSED:
        raise IllegalCommand("TABLE_CLOSED", "the table is closed", R_TABLE)
    if seat in state.forfeited:
        raise IllegalCommand("FORFEITED", "you forfeited: you are out of the table", R_CLOCK)
    if isinstance(command, (NextRound, CloseTable, LeaveTable)):
        if not 0 <= seat < state.seats:
            raise IllegalCommand("NOT_A_SEAT", f"there is no seat {seat}", R_TABLE)
        if state.phase is not Phase.ROUND_OVER:
            raise IllegalCommand("ROUND_IN_PLAY", "the round is still being played", R_TABLE)
        if isinstance(command, CloseTable):
            return [TableClosed(state.round, table_settlement(state))]
        if isinstance(command, LeaveTable):
            # Leaving closes the table: the balances so far are its final settlement.
            return [SeatLeft(seat), TableClosed(state.round, table_settlement(state))]
        return []  # the next deal comes from the seeds
    if state.phase is Phase.ROUND_OVER:
        raise IllegalCommand(
            "ROUND_OVER", "the round is over: deal the next round or close the table", R_TABLE
        )
    if state.phase is Phase.CHOOSING or isinstance(command, (Play, SitOut)):
        _check_choice(state, seat, command)
        return _chosen(state, seat, command)
    if 0 <= seat < state.seats and seat not in state.players:
        raise IllegalCommand("SITTING_OUT", "you sit this round out", R_SIT_OUT)
    if not 0 <= seat < state.seats or (seat != state.turn and not _may_claim(state, seat, command)):
        raise IllegalCommand("NOT_YOUR_TURN", f"it is seat {state.turn}'s turn", R_TURN)
    taking = isinstance(command, (Draw, ThankYou, Stop, Declare))
    if state.claims and seat == state.turn and isinstance(command, (Draw, Stop, Declare)):
        raise IllegalCommand(
            "CLAIM_WINDOW_OPEN",
            "seats have claimed the discard: you may take it "
            "yourself by thank-you, or wait until the claim window closes at "
            f"{state.claim_window_end_ms} ms",
            R_BATTLE,
        )
    if taking and state.phase is not Phase.TAKE:
        raise IllegalCommand("ALREADY_TOOK", "one take per turn; you have taken a card", R_TURN)
    if not taking and state.phase is not Phase.PLAY:
        raise IllegalCommand("TAKE_FIRST", "take a card first (draw or thank-you)", R_TURN)
    rules = state.rules
    match command:
        case Draw():
            if not state.stock:
                raise IllegalCommand(
                    "STOCK_EMPTY", "the stock is empty", "docs/rules/hoola.md §1.5.4"
                )
            return [CardDrawn(seat, state.stock[0])]
        case ThankYou(cards=cards, jokers=jokers):
            top = state.discard_top
            if top is None:
                raise IllegalCommand("NO_DISCARD", "the discard pile is empty", R_TURN)
            _in_hand(state, seat, cards)
            way = arrange(cards + (top,), rules, _named(jokers))
            if way is None:
                _check_names(jokers, arrange(cards + (top,), rules))
                raise IllegalCommand(
                    "THANK_YOU_NOT_MELDABLE",
                    f"{top} with {' '.join(cards) or 'nothing'} is not a new meld: "
                    "a thank-you card must go into a new meld at once",
                    R_TURN,
                )
            if not cards and not rules.thank_you_lone_seven:
                raise IllegalCommand(
                    "THANK_YOU_LONE_SEVEN_OFF",
                    "a discarded 7 may not be taken alone (thank_you_lone_seven)",
                    R_TURN,
                )
            _check_keeps_a_discard(state, seat, cards)
            if seat != state.turn and _nearest_in_turn(state):
                # A claim waits for its window: the nearest claimant is awarded the card then.
                return [ClaimMade(seat, sort_cards(cards), jokers, now_ms)]
            return [_discard_taken(state, seat, top, way)]
        case Meld(cards=cards, jokers=jokers):
            _in_hand(state, seat, cards)
            way = arrange(cards, rules, _named(jokers))
            if way is None:
                _check_names(jokers, arrange(cards, rules))
                raise IllegalCommand(
                    "NOT_A_MELD", f"{' '.join(cards)} is not a set, a run or a 7 meld", R_MELDS
                )
            _check_keeps_a_discard(state, seat, cards)
            return [
                MeldMade(
                    seat, TableMeld(_next_meld_id(state), seat, way.kind, way.cards, way.jokers)
                )
            ]
        case LayOff(meld_id=meld_id, cards=cards, jokers=jokers):
            _in_hand(state, seat, cards)
            if not state.melded[seat]:
                raise IllegalCommand(
                    "LAY_OFF_BEFORE_MELD", "you may lay off only after your own first meld", R_TURN
                )
            if all(is_joker(c) for c in cards) and not rules.joker_lay_off_alone:
                raise IllegalCommand(
                    "JOKER_LAY_OFF_ALONE_OFF",
                    "a joker may not be laid off alone (joker_lay_off_alone)",
                    R_MELDS,
                )
            meld = _meld(state, meld_id)
            after = extend(meld, cards, rules, _named(jokers))
            if after is None:
                _check_names(jokers, extend(meld, cards, rules))
                raise IllegalCommand(
                    "CANNOT_LAY_OFF",
                    f"{' '.join(cards)} does not extend meld #{meld_id} ({' '.join(meld.cards)})",
                    R_MELDS,
                )
            _check_keeps_a_discard(state, seat, cards)
            return [CardsLaidOff(seat, tuple(c for c in after.cards if c in cards), after)]
        case BindSevens(meld_id=meld_id, cards=cards):
            if not rules.seven_binding:
                raise IllegalCommand(
                    "SEVEN_BINDING_OFF", "7-binding is not in these rules (seven_binding)", R_MELDS
                )
            _in_hand(state, seat, cards)
            meld = _meld(state, meld_id)
            sevens = meld.kind is MeldKind.LONE_SEVEN and all(rank(c) == SEVEN for c in cards)
            # Three 7s of one deck are always a set; the meld solver says so all the same.
            bound = extend(meld, cards, rules) if sevens else None
            if bound is None:
                raise IllegalCommand(
                    "NOT_SEVEN_BINDING",
                    "7-binding joins two 7s from the hand to a lone 7 on the table",
                    R_MELDS,
                )
            _check_keeps_a_discard(state, seat, cards)
            return [SevensBound(seat, tuple(c for c in bound.cards if c in cards), bound)]
        case Discard(card=card):
            _in_hand(state, seat, (card,))
            return [CardDiscarded(seat, card)]
        case Stop():
            value = _check_stop(state, seat)
            # A stop changes nothing on the table: the round ends on the hands as they are.
            if not deciding:
                return [StopCalled(seat, value)]
            return [StopCalled(seat, value), _round_ended(state, _stop_outcome(state, seat, value))]
        case Declare(combination=Combination() as combination):
            _check_declare(state, seat, combination)
            if not deciding:
                return [CombinationDeclared(seat, combination)]
            option = f"{combination.name.lower()}_multiplier"
            factor = Factor(
                option,
                getattr(state.rules, option),
                f"seat {seat} declared {combination.name.lower().replace('_', ' ')}",
            )
            return [
                CombinationDeclared(seat, combination),
                _round_ended(state, Outcome(HoolaOutcome.COMBINATION, (seat,), factor)),
            ]
    raise AssertionError(f"a well-formed command has a case above: {command!r}")


def _chosen(state: HoolaState, seat: int, command: HoolaCommand) -> list[HoolaEvent]:
    """A seat says whether it plays (docs/rules/hoola.md §1.9); when five play, the seats not yet asked sit
    out involuntarily, in turn order."""
    if isinstance(command, SitOut):
        return [_sat_out(state, seat, voluntary=True)]
    events: list[HoolaEvent] = [PlayDeclared(seat)]
    state = evolve(state, events[-1])
    if len(state.players) == MAX_PLAYERS:
        for other in state.unasked:
            events.append(_sat_out(state, other, voluntary=False))
            state = evolve(state, events[-1])
    return events


def _check_choice(state: HoolaState, seat: int, command: HoolaCommand) -> None:
    """The play-or-sit-out round of six or seven seats (docs/rules/hoola.md §1.9)."""
    if state.phase is not Phase.CHOOSING:
        raise IllegalCommand(
            "NOT_CHOOSING",
            "seats choose whether to play only after a deal at six "
            "or seven seats with sit_out, before play begins",
            R_SIT_OUT,
        )
    if seat != state.turn:
        raise IllegalCommand(
            "NOT_YOUR_TURN", f"seat {state.turn} is choosing whether to play", R_SIT_OUT
        )
    if not isinstance(command, (Play, SitOut)):
        raise IllegalCommand(
            "CHOOSE_FIRST",
            "say whether you play this round (Play or SitOut); "
            "play begins once every seat has chosen",
            R_SIT_OUT,
        )
    if isinstance(command, SitOut) and len(state.players) + _still_to_ask(state) - 1 < 2:
        raise IllegalCommand(
            "TOO_FEW_PLAYERS", "at least two must play the round: you cannot sit out", R_SIT_OUT
        )


def _still_to_ask(state: HoolaState) -> int:
    """The seats that have not yet said whether they play, the one asked now included."""
    return len(state.unasked)


def _meld(state: HoolaState, meld_id: int) -> TableMeld:
    for meld in state.melds:
        if meld.id == meld_id:
            return meld
    raise IllegalCommand("NO_SUCH_MELD", f"there is no meld #{meld_id} on the table", R_MELDS)


def _check_stop(state: HoolaState, seat: int) -> int:
    """Whether ``seat`` may stop (docs/rules/hoola.md §1.5.2); its hand value if so."""
    found = _stop_value(state, seat)
    if isinstance(found, IllegalCommand):
        raise found
    return found


def _stop_value(state: HoolaState, seat: int) -> int | IllegalCommand:
    """The hand value ``seat`` may stop with, or the refusal of its stop: what :func:`_check_stop`
    raises, returned so that a legal-move list can leave out a stop that validation would refuse
    (:func:`_stops_and_declarations`) without raising."""
    rules = state.rules
    if not rules.stops_allowed(len(state.players)):
        return IllegalCommand(
            "NO_STOP_WITH_TWO", "no stops in a 2-player round (two_player_stop)", R_STOP
        )
    if _is_first_turn(state, seat) and not rules.first_turn_stop:
        return IllegalCommand(
            "FIRST_TURN_STOP", "no stop on your first turn (first_turn_stop)", R_STOP
        )
    limit = rules.stop_limit(len(state.players))
    value = hand_value(state.hands[seat], rules)
    if limit is not None and value > limit:
        return IllegalCommand(
            "STOP_OVER_LIMIT", f"hand value {value} is over the stop limit {limit}", R_STOP
        )
    if rules.stop_requires_melds and not (
        state.melded[seat] and any(m for s, m in enumerate(state.melded) if s != seat)
    ):
        return IllegalCommand(
            "STOP_NEEDS_MELDS",
            "you and another player must have melded (stop_requires_melds)",
            R_STOP,
        )
    return value


def _check_declare(state: HoolaState, seat: int, combination: Combination) -> None:
    refusal = _declare_refusal(state, seat, combination)
    if refusal is not None:
        raise refusal


def _declare_refusal(
    state: HoolaState, seat: int, combination: Combination
) -> IllegalCommand | None:
    """Why ``seat`` may not declare ``combination`` (docs/rules/hoola.md §1.5.3), or ``None``: what
    :func:`_check_declare` raises, returned so that a legal-move list can leave out a declaration
    that validation would refuse without raising."""
    rules = state.rules
    hand = state.hands[seat]
    if not rules.stops_allowed(len(state.players)):
        return IllegalCommand(
            "NO_COMBINATIONS_WITH_TWO",
            "no hand combinations in a 2-player round (two_player_stop)",
            R_COMBO,
        )
    if combination is Combination.FOUR_SEVENS:
        if sum(1 for c in hand if rank(c) == SEVEN) < len(SUITS):
            return IllegalCommand(
                "NOT_FOUR_SEVENS", "four sevens needs all four 7s in hand", R_COMBO
            )
        return None
    if state.melded[seat]:
        return IllegalCommand(
            "COMBINATION_AFTER_MELD",
            "low, high and straight flush need a hand with no meld made",
            R_COMBO,
        )
    if combination is Combination.STRAIGHT_FLUSH:
        if rules.straight_flush_multiplier == 0:
            return IllegalCommand(
                "COMBINATION_NOT_IN_RULES",
                "straight flush is not a combination in these rules",
                R_COMBO,
            )
        run = arrange(hand, rules)
        if len(hand) != HAND_SIZE or run is None or run.kind is not MeldKind.RUN:
            return IllegalCommand(
                "NOT_STRAIGHT_FLUSH", "the seven cards are not one run of one suit", R_COMBO
            )
        return None
    if _is_first_turn(state, seat) and not rules.first_turn_combinations:
        return IllegalCommand(
            "FIRST_TURN_COMBINATION",
            "no low or high hand on your first turn (first_turn_combinations)",
            R_COMBO,
        )
    total = plain_sum(hand, rules)
    if combination is Combination.LOW_HAND and total > rules.low_hand_max:
        return IllegalCommand(
            "NOT_LOW_HAND", f"face sum {total} is over {rules.low_hand_max}", R_COMBO
        )
    if combination is Combination.HIGH_HAND and total < rules.high_hand_min:
        return IllegalCommand(
            "NOT_HIGH_HAND", f"face sum {total} is under {rules.high_hand_min}", R_COMBO
        )
    return None


# --- legal moves ------------------------------------------------------------------------------

# The hands whose meld candidates are kept (a table's hands over a few turns).
HANDS_KEPT = 1024
# The rank and suit groups of those hands whose meld candidates are kept (a hand has about ten).
GROUPS_KEPT = 8 * HANDS_KEPT


def _subsets(cards: tuple[Card, ...], sizes: range) -> Iterator[tuple[Card, ...]]:
    ordered = sort_cards(cards)  # once, not once per size
    for size in sizes:
        yield from combinations(ordered, size)


def _jokers_of(uses: tuple[JokerAs, ...], cards: tuple[Card, ...]) -> tuple[JokerAs, ...]:
    """The joker namings that concern ``cards`` (a lay-off names only the jokers it brings)."""
    return tuple(use for use in uses if use.joker in cards)


def _meld_commands(hand: tuple[Card, ...], rules: HoolaRules) -> tuple[Meld, ...]:
    """Every new meld of the hand's cards, each reading of each (the solver's, the default first):
    subsets of cards of one rank, or of one suit, with jokers (and close enough in rank for a run:
    the solver is asked only about those), by their size, then their cards in deck order. They
    depend on the hand's cards only, not their order, and a hand is asked about again and again
    (every legal-move list of the turn): they are kept."""
    return _meld_commands_of(sort_cards(hand), meld_rules(rules))


@lru_cache(maxsize=HANDS_KEPT)
def _meld_commands_of(hand: tuple[Card, ...], shape: MeldRules) -> tuple[Meld, ...]:
    found: dict[tuple[Card, ...], tuple[Meld, ...]] = {}
    index = _hand_index(hand)
    for group in index.groups():
        # A subset in two groups (a card alone is in its rank's and its suit's) melds alike.
        found.update(_group_melds(group, shape))
    position = index.position
    ordered = sorted(found, key=lambda cards: (len(cards), [position[c] for c in cards]))
    return tuple(meld for cards in ordered for meld in found[cards])


@lru_cache(maxsize=GROUPS_KEPT)
def _group_melds(
    members: tuple[Card, ...], shape: MeldRules
) -> tuple[tuple[tuple[Card, ...], tuple[Meld, ...]], ...]:
    """The subsets of one rank's or one suit's cards (with the jokers) that make melds, each with
    its readings as commands. A draw or a meld changes one or two of a hand's groups: the others
    were asked about the turn before, so they are kept apart from the hand's, readings and all
    (most subsets, a card alone among them, make none: they are dropped here, once)."""
    found = []
    for cards in _subsets(members, range(1, len(members) + 1)):
        if could_meld(cards, shape):
            ways = solver_arrangements(cards, shape)
            if ways:
                found.append((cards, tuple(Meld(cards, _jokers_of(w.jokers, cards)) for w in ways)))
    return tuple(found)


def _joining_subsets(
    meld: tuple[Card, ...], hand: tuple[Card, ...], shape: MeldRules, smallest: int = 1
) -> list[tuple[Card, ...]]:
    """The subsets of ``hand`` (in deck order) of at least ``smallest`` cards that could join
    ``meld``'s cards in one meld, in the order of their size, then of their cards in ``hand``.
    A meld's natural cards share a rank or a suit: where ``meld`` holds a natural card, only the
    hand's cards of its one rank, or of its one suit, with the jokers, are tried (the subsets
    mixing both, or holding another rank and suit, could make no meld); a joker alone may meld
    with any of the hand's cards."""
    naturals = [c for c in meld if not is_joker(c)]
    if not naturals:
        return list(_joining(meld, hand, shape, smallest))
    index = _hand_index(hand)
    ranks = {rank(c) for c in naturals}
    suits = {suit(c) for c in naturals}
    found: set[tuple[Card, ...]] = set()
    if len(ranks) == 1:
        (one_rank,) = ranks
        same = index.by_rank.get(one_rank, ())
        found.update(_joining(meld, same + index.jokers, shape, smallest))
    if len(suits) == 1:
        (one_suit,) = suits
        same = index.by_suit.get(one_suit, ())
        found.update(_joining(meld, same + index.jokers, shape, smallest))
    position = index.position
    return sorted(found, key=lambda cards: (len(cards), [position[c] for c in cards]))


@dataclass(frozen=True)
class _HandIndex(SortedOut):
    """A hand's cards (in deck order) by rank and by suit, its jokers, and each card's place."""

    position: dict[Card, int]


@lru_cache(maxsize=HANDS_KEPT)
def _hand_index(hand: tuple[Card, ...]) -> _HandIndex:
    """A hand's new melds, and :func:`_joining_subsets` for every table meld and the discard, are
    worked out for one hand in a list, and in every list of a turn: the hand is sorted into ranks
    and suits once (never changed after: the index is shared)."""
    found = sorted_out(hand)
    return _HandIndex(
        found.jokers, found.by_rank, found.by_suit, {card: i for i, card in enumerate(hand)}
    )


@lru_cache(maxsize=GROUPS_KEPT)
def _joining(
    meld: tuple[Card, ...], members: tuple[Card, ...], shape: MeldRules, smallest: int
) -> tuple[tuple[Card, ...], ...]:
    """The subsets of ``members`` (one rank's or one suit's cards of a hand, with its jokers)
    that could join ``meld``. A table meld stays put for many turns, and a discard is asked
    about by every seat, while a hand changes by a card: kept."""
    return tuple(
        cards
        for cards in _subsets(members, range(smallest, len(members) + 1))
        if could_meld(meld + cards, shape)
    )


def clear_cache() -> None:
    """Forget every meld found so far (the solver's and the candidates kept here): the next
    legal-move list is worked out from scratch, as when timing it."""
    solver_clear_cache()
    _meld_commands_of.cache_clear()
    _group_melds.cache_clear()
    _joining.cache_clear()
    _hand_index.cache_clear()
    _thank_yous.cache_clear()


def _thank_you_candidates(state: HoolaState, hand: tuple[Card, ...]) -> Iterator[HoolaCommand]:
    top = state.discard_top
    if top is None:
        return
    yield from _thank_yous(sort_cards(hand), top, meld_rules(state.rules))


@lru_cache(maxsize=HANDS_KEPT)
def _thank_yous(hand: tuple[Card, ...], top: Card, shape: MeldRules) -> tuple[ThankYou, ...]:
    """Every way to take ``top`` into a new meld with cards of ``hand`` (in deck order): kept, as
    every seat that may claim the discard is asked about it until the next take."""
    found = []
    for cards in _joining_subsets((top,), hand, shape, smallest=0):
        for way in solver_arrangements(cards + (top,), shape):
            found.append(ThankYou(cards, _jokers_of(way.jokers, cards + (top,))))
    return tuple(found)


def _stops_and_declarations(state: HoolaState, seat: int) -> Iterator[HoolaCommand]:
    """The stop and the declarations worth checking: those the stop's and the combinations' own
    checks (:func:`_stop_value`, :func:`_declare_refusal`, which validation raises) do not refuse.
    Most take-phase lists have none, and a refusal raised and caught costs more than the check;
    what is left is still checked by :func:`validate` in full."""
    if not isinstance(_stop_value(state, seat), IllegalCommand):
        yield Stop()
    for combination in Combination:
        if _declare_refusal(state, seat, combination) is None:
            yield Declare(combination)


def _candidates(state: HoolaState, seat: int) -> Iterator[HoolaCommand]:
    """Every command worth checking: a superset of the legal ones, in a stable order."""
    hand = state.hands[seat]
    if state.phase is Phase.CHOOSING:
        yield Play()
        yield SitOut()
    elif state.phase is Phase.TAKE and seat != state.turn:
        yield from _thank_you_candidates(state, hand)  # a battle Hoola claim
    elif state.phase is Phase.TAKE:
        yield from _stops_and_declarations(state, seat)
        yield Draw()
        yield from _thank_you_candidates(state, hand)
    elif state.phase is Phase.PLAY:
        shape = meld_rules(state.rules)
        yield from _meld_commands(hand, state.rules)
        sevens = tuple(c for c in hand if rank(c) == SEVEN)
        for meld in state.melds:
            if meld.kind is MeldKind.LONE_SEVEN:
                for pair in _subsets(sevens, range(2, 3)):
                    yield BindSevens(meld.id, pair)
        # Lay-offs come after one's own first meld (validation refuses them before): until then
        # the solver is not asked about them.
        ordered = sort_cards(hand)
        for meld in state.melds if state.melded[seat] else ():
            for cards in _joining_subsets(meld.cards, ordered, shape):
                for after in extensions(meld, cards, state.rules):
                    yield LayOff(meld.id, cards, _jokers_of(after.jokers, cards))
        for card in ordered:
            yield Discard(card)


def legal_commands(state: HoolaState, seat: int) -> list[HoolaCommand]:
    """Every command ``seat`` may submit now: the candidates that :func:`validate` accepts."""
    if state.phase is Phase.ROUND_OVER and seat in state.at_table:
        return [NextRound(), CloseTable(), LeaveTable()]
    if state.phase not in (Phase.CHOOSING, Phase.TAKE, Phase.PLAY) or (
        seat != state.turn and not claim_open(state, seat)
    ):
        return []
    return accepted(_candidates(state, seat), lambda command: validate(state, seat, command))


def to_act(state: HoolaState) -> tuple[int, ...]:
    """The seats with a legal command (:func:`legal_commands` not empty), in seat order, from the
    phase: every seat still at the table after a round; the seat asked whether it plays; the seat to act (in the
    take phase unless claims on the discard leave it only a thank-you it cannot make); and in
    battle Hoola each seat that may still claim the discard and has a meld to take it into."""
    match state.phase:
        case Phase.ROUND_OVER:
            return state.at_table
        case Phase.CHOOSING:
            return (state.turn,)
        case Phase.PLAY:
            return (state.turn,) if state.hands[state.turn] else ()
        case Phase.TAKE:
            return tuple(s for s in range(state.seats) if _may_take(state, s))
    return ()


def to_act_seen(state: HoolaState, viewer: int | None) -> tuple[int, ...]:
    """:func:`to_act` as ``viewer`` (``None``: a spectator) may be told it. In the take phase
    whether a seat has a move can depend on its hand (a claim of the discard needs a meld to
    take it into; a waiting claim leaves the seat to act only a thank-you; without a stock, a
    stop or a declaration), so the other seats are listed as the public state shows them: the
    seat to act and every seat whose claim is still open (docs/rules/hoola.md §1.7); the
    viewer's own seat exactly. Every other phase's list reads public state only."""
    if state.phase is not Phase.TAKE:
        return to_act(state)
    public = {s for s in range(state.seats) if s == state.turn or claim_open(state, s)}
    own = {viewer} if viewer is not None and _may_take(state, viewer) else set()
    return tuple(sorted((public - {viewer}) | own))


def _may_take(state: HoolaState, seat: int) -> bool:
    """Whether ``seat`` has a legal command in the take phase. The seat to act can draw while the
    stock holds cards and no claim waits (a waiting claim leaves it only a thank-you); with no
    stock it may still stop or declare. Else it, or a claimant, needs a thank-you: the first one
    found will do."""
    if seat == state.turn:
        if not state.claims and (
            state.stock
            or any(_accepts(state, seat, c) for c in _stops_and_declarations(state, seat))
        ):
            return True
    elif not claim_open(state, seat):
        return False
    return any(_accepts(state, seat, c) for c in _thank_you_candidates(state, state.hands[seat]))


def _accepts(state: HoolaState, seat: int, command: HoolaCommand) -> bool:
    try:
        validate(state, seat, command)
    except CommandError:
        return False
    return True


def canonical(state: HoolaState, command: HoolaCommand) -> HoolaCommand:
    """One form for commands that mean the same: cards in deck order, every joker named as it
    resolves (a meld may be sent in any order, and an unnamed joker takes its default card)."""
    try:
        _check_well_formed(state, command)
    except MalformedCommand:
        return command  # nothing to resolve: a malformed command is its own form

    def resolved(
        found: Arranged | TableMeld | None, cards: tuple[Card, ...], given: tuple[JokerAs, ...]
    ) -> tuple[JokerAs, ...]:
        if found is None:
            return tuple(sorted(given, key=lambda use: (use.joker, use.card)))
        return _jokers_of(found.jokers, cards)

    match command:
        case ThankYou(cards=cards, jokers=jokers):
            top = state.discard_top
            melded = cards + ((top,) if top else ())
            way = arrange(melded, state.rules, _named(jokers)) if top else None
            return ThankYou(sort_cards(cards), resolved(way, melded, jokers))
        case Meld(cards=cards, jokers=jokers):
            return Meld(
                sort_cards(cards),
                resolved(arrange(cards, state.rules, _named(jokers)), cards, jokers),
            )
        case LayOff(meld_id=meld_id, cards=cards, jokers=jokers):
            meld = next((m for m in state.melds if m.id == meld_id), None)
            after = extend(meld, cards, state.rules, _named(jokers)) if meld else None
            return LayOff(meld_id, sort_cards(cards), resolved(after, cards, jokers))
        case BindSevens(meld_id=meld_id, cards=cards):
            return BindSevens(meld_id, sort_cards(cards))
    return command


# --- events -----------------------------------------------------------------------------------


def decide(state: HoolaState, seat: int, command: HoolaCommand, ctx: Context) -> list[HoolaEvent]:
    """The events ``command`` produces at ``ctx.now_ms``; raises like :func:`validate`.

    What time has made due comes first (:func:`advance`): a command after a claim window closed
    records the window's outcome before its own events.
    """
    events: list[HoolaEvent] = []
    state = _record(events, state, advance(state, ctx.now_ms))
    state = _record(events, state, _checked_events(state, seat, command, ctx.now_ms))
    state = _record(events, state, _by_the_seeds(state, seat, command, ctx))
    _record(events, state, _endings(state, seat))
    return events


def _record(events: list[HoolaEvent], state: HoolaState, new: list[HoolaEvent]) -> HoolaState:
    """Append ``new`` to ``events``; the state after them."""
    for event in new:
        events.append(event)
        state = evolve(state, event)
    return state


def _by_the_seeds(
    state: HoolaState, seat: int, command: HoolaCommand, ctx: Context
) -> list[HoolaEvent]:
    """What follows a checked command by the seeds, on the state after its events: a discard
    that empties the stock reshuffles (or ends the round), the last choice shuffles the sitters-
    out's cards into the stock, and the next round is dealt."""
    match command:
        case Discard(card=card):
            return _after_discard(state, seat, card, ctx)
        case Play() | SitOut() if _still_to_ask(state) == 0:
            return [_play_began(state, ctx)]
        case NextRound():
            return [_next_deal(state, ctx)]
    return []


def _after_discard(state: HoolaState, seat: int, card: Card, ctx: Context) -> list[HoolaEvent]:
    """A discard that empties the hand goes out (a Perfect Hoola when the whole hand went down in
    this turn and the drawn card is the discard); an empty stock is rebuilt or ends the round."""
    if not state.hands[seat]:
        turn = state.this_turn
        perfect = turn.drawn == card and sorted(turn.put_down) == sorted(turn.start_hand)
        return [_round_ended(state, _going_out(state, seat, perfect))]
    return _stock_emptied(state, ctx)


def _stock_emptied(state: HoolaState, ctx: Context) -> list[HoolaEvent]:
    """A turn that drew the last stock card is over: the stock is rebuilt, or the round ends."""
    if state.stock:
        return []
    if may_reshuffle(state):
        n = state.reshuffles + 1
        stock = shuffled(state.discards[:-1], ctx.seeds, state.round, f"reshuffle-{n}")
        return [StockReshuffled(stock, len(stock), n)]
    return [
        _round_ended(
            state,
            Outcome(
                HoolaOutcome.STOCK_OUT,
                lowest_hands(state, state.players),
                notes=("the stock ran out",),
            ),
        )
    ]


def _discard_taken(state: HoolaState, seat: int, top: Card, way: Arranged) -> DiscardTaken:
    """``seat`` takes the top discard into the new meld ``way`` (a thank-you, or a claim)."""
    return DiscardTaken(
        seat,
        top,
        state.top_discarder,
        TableMeld(_next_meld_id(state), seat, way.kind, way.cards, way.jokers),
    )


def _endings(state: HoolaState, seat: int) -> list[HoolaEvent]:
    """What follows ``seat``'s move: going out if its hand is empty, and the table's close when
    the round that just ended was its last."""
    events: list[HoolaEvent] = []
    if state.phase is Phase.PLAY and not state.hands[seat]:
        events.append(_round_ended(state, _going_out(state, seat, perfect=False)))
        state = evolve(state, events[-1])
    if _table_over(state):
        events.append(TableClosed(state.round, table_settlement(state)))
    return events


def _table_over(state: HoolaState) -> bool:
    """A round is over and the table closes by itself: it was the last of ``rounds``, or fewer
    than two seats are left at it (the others forfeited)."""
    return state.phase is Phase.ROUND_OVER and (
        bool(state.rules.rounds and state.round >= state.rules.rounds) or len(state.at_table) < 2
    )


def advance(state: HoolaState, now_ms: int) -> list[HoolaEvent]:
    """The events time has made due at ``now_ms``: a closed claim window awards the discard to the
    nearest claimant in turn order after the discarder (docs/rules/hoola.md §1.7, ``NEAREST_IN_TURN``).

    Only recorded claims decide the winner, so whichever later command records the award, and
    whenever, the log and every replay agree.
    """
    top, discarder = state.discard_top, state.top_discarder
    # Claims are made on a discard, so a claim window always has a discard and its discarder.
    if not state.claims or now_ms < state.claim_window_end_ms or top is None or discarder is None:
        return []
    by_seat = {claim.seat: claim for claim in state.claims}
    claim = by_seat[next(seat for seat in state.in_turn_order(discarder) if seat in by_seat)]
    way = arrange(claim.cards + (top,), state.rules, _named(claim.jokers))
    if way is None:
        raise AssertionError(
            "a claim is a meld when it is made, and nothing it holds moves while its window is open"
        )
    taken = _discard_taken(state, claim.seat, top, way)
    return [taken, *_endings(evolve(state, taken), claim.seat)]


def next_deadline(state: HoolaState) -> int | None:
    """When :func:`advance` next has events: the close of an open claim window, else never."""
    return state.claim_window_end_ms if state.claims else None


def _sat_out(state: HoolaState, seat: int, voluntary: bool) -> SatOut:
    """``seat`` sits out; an involuntary sitter-out shows its brights and is owed for them (§1.9)."""
    hand = state.hands[seat]
    if voluntary:
        return SatOut(seat, True, hand)
    found = brights(hand, state.rules)
    return SatOut(seat, False, hand, found, state.rules.base_stake * len(found))


def _play_began(state: HoolaState, ctx: Context) -> PlayBegan:
    """Every seat has chosen: the sitters-out's cards are shuffled into the stock (§1.9)."""
    sitters = sorted(sat.seat for sat in state.sat_out)
    cards = state.stock + tuple(c for s in sitters for c in state.hands[s])
    stock = shuffled(cards, ctx.seeds, state.round, "sit-out")
    return PlayBegan(state.players, stock, len(stock))


def _next_deal(state: HoolaState, ctx: Context) -> RoundDealt:
    """The table's next round: the winner deals, the stake follows the Hoola streak (§1.8)."""
    assert state.result is not None
    streak = state.hoola_streak + 1 if state.result.hoola else 0
    cycle = state.rules.hoola_table_multiplier
    multiplier = cycle[(streak - 1) % len(cycle)] if streak and cycle else 1
    return deal(
        state.rules,
        state.seats,
        ctx.seeds,
        state.round + 1,
        next_dealer(state),
        multiplier,
        streak,
        state.scores,
    )


def next_dealer(state: HoolaState) -> int:
    """Who deals the next round: the last round's winner (the first of joint winners in turn
    order); if it has since forfeited, the next seat at the table after it."""
    assert state.result is not None
    winner = state.result.winners[0]
    return next(
        s for k in range(state.seats) if (s := (winner + k) % state.seats) in state.at_table
    )


def _next_meld_id(state: HoolaState) -> int:
    return max((m.id for m in state.melds), default=0) + 1


def _going_out(state: HoolaState, seat: int, perfect: bool) -> Outcome:
    """The win by an empty hand, with Hoola, Perfect Hoola and the thank-you penalty (§1.5, §1.6)."""
    rules = state.rules
    turn = state.this_turn
    hoola = not turn.melded_before
    thank_you = turn.thank_you_card is not None
    perfect = perfect and hoola and not thank_you
    notes = []
    factor = None
    if perfect:
        factor = Factor(
            "perfect_hoola_multiplier",
            rules.perfect_hoola_multiplier,
            f"seat {seat} went out with a Perfect Hoola",
        )
        notes.append(f"Perfect Hoola by seat {seat}")
    elif hoola:
        factor = Factor(
            "hoola_multiplier",
            rules.hoola_multiplier,
            f"seat {seat} went out with a {'thank-you ' if thank_you else ''}Hoola",
        )
        notes.append(f"{'Thank-you ' if thank_you else ''}Hoola by seat {seat}")
    liability = None
    if (
        thank_you
        and turn.thank_you_discarder is not None
        and (rules.thank_you_penalty_scope is ThankYouPenaltyScope.ANY_WIN or hoola)
    ):
        liability = Liability(
            turn.thank_you_discarder,
            "thank_you_penalty_multiplier",
            rules.thank_you_penalty_multiplier,
            f"discarded {turn.thank_you_card}, taken by thank-you to go out",
        )
    return Outcome(
        HoolaOutcome.GOING_OUT,
        (seat,),
        factor,
        liability,
        tuple(notes),
        hoola=hoola,
        perfect_hoola=perfect,
        thank_you_hoola=hoola and thank_you,
    )


def _stop_outcome(state: HoolaState, seat: int, value: int) -> Outcome:
    others = [s for s in state.players if s != seat]
    if all(hand_value(state.hands[s], state.rules) > value for s in others):
        return Outcome(
            HoolaOutcome.STOP, (seat,), notes=(f"seat {seat} stopped with {value} and won",)
        )
    liability = Liability(
        seat, "stop_penalty_multiplier", state.rules.stop_penalty_multiplier, "failed stop"
    )
    return Outcome(
        HoolaOutcome.FAILED_STOP,
        lowest_hands(state, others),
        liability=liability,
        notes=(f"seat {seat} stopped with {value} but another hand was as low",),
    )


def _round_ended(state: HoolaState, outcome: Outcome) -> RoundEnded:
    settlement = settle(state, outcome)
    # The hands of the round's players and forfeiters are shown; a sitter-out's never (it holds
    # none once play began; a round a forfeit ends while seats choose keeps it hidden too).
    hands = tuple(
        cards if s in state.players or s in state.round_forfeits else ()
        for s, cards in enumerate(state.hands)
    )
    return RoundEnded(
        round=state.round,
        outcome=outcome.kind.value,
        winners=outcome.winners,
        hands=tuple(Hand(s, cards, len(cards)) for s, cards in enumerate(hands)),
        hand_values=tuple(hand_value(h, state.rules) for h in hands),
        hoola=outcome.hoola,
        perfect_hoola=outcome.perfect_hoola,
        thank_you_hoola=outcome.thank_you_hoola,
        settlement=settlement,
    )


# --- turn clocks (docs/rules/common.md §5.1) -----------------------------------------------------------------


def on_clock(state: HoolaState) -> tuple[int, ...]:
    """The seats that must act now, in seat order: the seat asked whether it plays, the seat to
    act (its take, then its play and discard) — but nobody while battle claims wait for their
    window (time, not a seat, moves the game then) — and between rounds the next dealer, with
    every away seat (its forced move leaves the table). A claim out of turn is optional and never
    on the clock."""
    match state.phase:
        case Phase.CHOOSING | Phase.PLAY:
            return (state.turn,)
        case Phase.TAKE:
            return () if state.claims else (state.turn,)
        case Phase.ROUND_OVER:
            away = state.clock.away
            leaving = {s for s in state.at_table if s < len(away) and away[s]}
            return tuple(sorted(leaving | {next_dealer(state)}))
    return ()


def just_dealt(state: HoolaState) -> bool:
    """Nobody has acted in the round yet: the first seat is asked whether it plays, or the first
    player is to take its first card."""
    if state.phase is Phase.CHOOSING:
        return state.asked == 0 and not state.round_forfeits
    return state.phase is Phase.TAKE and sum(state.turns_started) == 1


def forced_command(state: HoolaState, seat: int) -> HoolaCommand:
    """The move a time-out makes (docs/rules/common.md §5.1): a sit-out question is answered "sit out" (or
    "play" where sitting out is refused: two must play); a take draws from the stock (never a
    thank-you, a stop or a declaration); a play lays down nothing and discards the card worth the
    most in the hand (the discard that leaves the lowest hand value; ties: the last in the hand as
    shown, by rank); between rounds an away seat leaves the table, and the next dealer deals."""
    match state.phase:
        case Phase.CHOOSING:
            return SitOut() if _accepts(state, seat, SitOut()) else Play()
        case Phase.TAKE:
            return Draw()
        case Phase.PLAY:
            hand = state.hands[seat]
            shown = by_rank(hand)
            # min over the reversed order keeps the last of equals.
            card = min(
                reversed(shown),
                key=lambda c: hand_value(tuple(h for h in hand if h != c), state.rules),
            )
            return Discard(card)
        case Phase.ROUND_OVER:
            away = state.clock.away
            return LeaveTable() if seat < len(away) and away[seat] else NextRound()
    raise IllegalCommand("NOT_ON_THE_CLOCK", f"seat {seat} has nothing to do now", R_CLOCK)


def abandoned(state: HoolaState, why: str) -> list[HoolaEvent]:
    """The table ends where it stands (the studio ended it, ``why``): between rounds every round
    dealt was played; in a round's play (or its choosing) that round is not."""
    played = state.round if state.phase is Phase.ROUND_OVER else state.round - 1
    return [TableClosed(played, abandoned_settlement(state, played, why))]


def forfeit(state: HoolaState, seat: int, ctx: Context) -> list[HoolaEvent]:
    """``seat`` forfeits at ``ctx.now_ms`` (``forfeit_when_away``): it is out of the table. In a
    round it was dealt into it pays as the last-ranked, unmelded loser when the round ends; the
    round goes on while two seats can play it (else it ends now, the seats left winning), and
    the table goes on while two seats are at it (else it closes)."""
    events: list[HoolaEvent] = []
    phase = state.phase
    dealt_in = seat in state.players or phase is Phase.CHOOSING
    state = _record(events, state, [SeatForfeited(seat)])
    if phase is Phase.CHOOSING:
        if len(state.players) + len(state.unasked) < 2:
            # One seat is left to play: it does, and wins the round at once.
            declared: list[HoolaEvent] = [PlayDeclared(s) for s in state.unasked]
            state = _record(events, state, declared)
            state = _record(events, state, [_round_ended(state, _forfeit_outcome(state, seat))])
        elif not state.unasked:
            state = _record(events, state, [_play_began(state, ctx)])
    elif phase in (Phase.TAKE, Phase.PLAY) and dealt_in:
        if len(state.players) < 2:
            state = _record(events, state, [_round_ended(state, _forfeit_outcome(state, seat))])
        else:
            # It may have drawn the stock's last card: its turn is over, so the stock is rebuilt
            # or the round ends as a stock-out.
            state = _record(events, state, _stock_emptied(state, ctx))
    if _table_over(state):
        events.append(TableClosed(state.round, table_settlement(state)))
    return events


def _forfeit_outcome(state: HoolaState, seat: int) -> Outcome:
    return Outcome(
        HoolaOutcome.FORFEIT,
        tuple(state.in_turn_order(state.dealer)),
        notes=(f"seat {seat} forfeited: the round ended with one seat left to play",),
    )
