"""Random games with random legal play: the invariants of docs/rules/hoola.md §1 and §5 at every step."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Iterator
from itertools import combinations
from typing import Any

from game_invariants import (
    assert_next_deadline_is_exact,
    assert_to_act_is_exact,
    assert_unseen_cards_change_nothing,
)
from hypothesis import given
from hypothesis import strategies as st

from croupier.engine.cards import JOKERS, RANKS, SUITS, Card, standard_deck
from croupier.engine.game import CommandError, Context, fold
from croupier.engine.hoola import HoolaGame
from croupier.engine.hoola.events import (
    BindSevens,
    CloseTable,
    Combination,
    Declare,
    Discard,
    Draw,
    HoolaCommand,
    LayOff,
    LeaveTable,
    Meld,
    NextRound,
    Play,
    PlayBegan,
    RoundEnded,
    SatOut,
    SitOut,
    Stop,
    TableClosed,
    ThankYou,
)
from croupier.engine.hoola.melds import JokerAs, arrangements, extensions
from croupier.engine.hoola.moves import canonical
from croupier.engine.hoola.rules import (
    MAX_SEATS_WITH_SIT_OUT,
    PRESETS,
    ClaimPriority,
    PaymentMode,
    TieMode,
    rules_for,
)
from croupier.engine.hoola.state import HoolaState, Phase
from croupier.engine.settlement import net_of
from croupier.engine.shuffle import Seeds

GAME = HoolaGame()
MAX_STEPS = 1500
#: The deck with both jokers and the plain one, in their order, and every card code in a set:
#: made once, not at each of the millions of looks a run makes (made anew at each, they were a
#: third of the test's time).
DECK_AND_JOKERS = standard_deck(2)
DECK = standard_deck()
EVERY_CARD = frozenset(DECK_AND_JOKERS)


@st.composite
def games(draw: st.DrawFn) -> tuple[Any, int, Seeds, random.Random]:
    preset = draw(st.sampled_from(sorted(PRESETS)))
    sit_out = draw(st.booleans())
    seats = draw(st.integers(2, MAX_SEATS_WITH_SIT_OUT if sit_out else PRESETS[preset].max_seats))
    overrides = draw(
        st.fixed_dictionaries(
            {"sit_out": st.just(sit_out)},
            optional={
                "ace_wrap": st.booleans(),
                "reshuffle_discards": st.booleans(),
                "first_turn_stop": st.booleans(),
                "two_player_stop": st.booleans(),
                "stop_requires_melds": st.booleans(),
                "first_turn_combinations": st.booleans(),
                "four_of_a_kind_free": st.booleans(),
                "thank_you_lone_seven": st.booleans(),
                "payment_mode": st.sampled_from(list(PaymentMode)),
                "tie_mode": st.sampled_from(list(TieMode)),
                "rounds": st.integers(0, 3),
                "seven_binding": st.booleans(),
                "out_of_turn_thank_you": st.booleans(),
                "claim_priority": st.sampled_from(list(ClaimPriority)),
                "claim_window_ms": st.sampled_from((1, 1000, 3000)),
                "jokers": st.integers(0, 2),
                "joker_lay_off_alone": st.booleans(),
                "hoola_table_multiplier": st.lists(st.integers(1, 8), max_size=3).map(tuple),
                # The options added later (docs/rules/hoola.md §1.3, §1.5), either way.
                "go_out_by_discard": st.booleans(),
                "seven_binding_is_meld": st.booleans(),
                "named_set_joker_suits": st.booleans(),
                "binding_ends_hoola": st.booleans(),
            },
        )
    )
    if overrides.get("ace_wrap") is not False:
        overrides["ace_low_only"] = False
    if sit_out:
        overrides["max_seats"] = MAX_SEATS_WITH_SIT_OUT
    rules = rules_for(preset, overrides, seats)
    seeds = Seeds(
        draw(st.binary(min_size=32, max_size=32)), tuple(draw(st.lists(st.text(), max_size=2)))
    )
    return rules, seats, seeds, random.Random(draw(st.integers(0, 2**32)))


def random_cards(rng: random.Random, state: HoolaState, seat: int, k: int) -> tuple[Card, ...]:
    """Cards a client might name: mostly its own, sometimes anyone's, now and then no card at all."""
    pool = list(state.hands[seat]) * 3 + list(DECK_AND_JOKERS) + ["ZZ", "1X"]
    return tuple(rng.choice(pool) for _ in range(k))


def random_namings(rng: random.Random, cards: tuple[Card, ...]) -> tuple[JokerAs, ...]:
    """What a client might say its jokers stand for: often nothing, sometimes any card."""
    named = []
    for joker in [c for c in cards if c in JOKERS] + ([JOKERS[1]] if rng.random() < 0.05 else []):
        if rng.random() < 0.5:
            named.append(JokerAs(joker, rng.choice(DECK)))
    return tuple(named)


def syntactic_commands(rng: random.Random, state: HoolaState, seat: int) -> Iterator[HoolaCommand]:
    """Commands of every kind with random arguments: what validation must sort out."""
    yield Draw()
    yield Stop()
    yield NextRound()
    yield CloseTable()
    yield LeaveTable()
    yield Play()
    yield SitOut()
    for combination in Combination:
        yield Declare(combination)
    for _ in range(12):
        cards = random_cards(rng, state, seat, rng.randint(0, 4))
        yield ThankYou(cards, random_namings(rng, cards + (state.discard_top or "",)))
        cards = random_cards(rng, state, seat, rng.randint(0, 5))
        yield Meld(cards, random_namings(rng, cards))
        meld_id = rng.randint(0, len(state.melds) + 1)
        cards = random_cards(rng, state, seat, rng.randint(0, 3))
        yield LayOff(meld_id, cards, random_namings(rng, cards))
        yield Discard(rng.choice(random_cards(rng, state, seat, 1) + ("",)))
        yield BindSevens(meld_id, random_cards(rng, state, seat, rng.choice((1, 2, 2, 3))))


def accepted(state: HoolaState, seat: int, command: HoolaCommand) -> bool:
    try:
        GAME.decide(state, seat, command, Context(Seeds(b"\x00" * 32)))
    except CommandError:
        return False
    return True


def validates(state: HoolaState, seat: int, command: HoolaCommand) -> bool:
    try:
        GAME.validate(state, seat, command)
    except CommandError:
        return False
    return True


# Lay-offs of up to this many cards at once are tried exhaustively.
MOST_LAID_OFF = 3


def every_meld_command(state: HoolaState, seat: int) -> Iterator[HoolaCommand]:
    """Every meld and thank-you of every subset of ``seat``'s hand, and every lay-off of up to
    three of its cards, in every arrangement the solver finds."""
    hand, top, rules = state.hands[seat], state.discard_top, state.rules
    for size in range(len(hand) + 1):
        for cards in combinations(hand, size):
            for way in arrangements(cards, rules) if cards else ():
                yield Meld(cards, tuple(j for j in way.jokers if j.joker in cards))
            taken = cards + ((top,) if top else ())
            for way in arrangements(taken, rules) if top else ():
                yield ThankYou(cards, tuple(j for j in way.jokers if j.joker in taken))
            for meld in state.melds if 0 < size <= MOST_LAID_OFF else ():
                for after in extensions(meld, cards, rules):
                    yield LayOff(meld.id, cards, tuple(j for j in after.jokers if j.joker in cards))


def all_cards(state: HoolaState) -> list[Card]:
    return (
        [c for h in state.hands for c in h]
        + list(state.stock)
        + list(state.discards)
        + [c for m in state.melds for c in m.cards]
    )


def cards_in(value: Any) -> set[str]:
    """Every card code anywhere inside an event or view."""
    if isinstance(value, JokerAs):
        return {value.joker}  # what a joker stands for is a label, not a card someone holds
    if isinstance(value, str):
        return {value} if value in EVERY_CARD else set()
    if isinstance(value, tuple):
        return set().union(*(cards_in(v) for v in value)) if value else set()
    if dataclasses.is_dataclass(value):
        return set().union(*(cards_in(getattr(value, f.name)) for f in dataclasses.fields(value)))
    return set()


def hidden_from(state: HoolaState, seat: int) -> set[str]:
    """Other seats' hands and the stock, but for the hands sitters-out revealed (involuntary ones
    to all, one's own to oneself): those cards are known, in the stock in an unknown order."""
    revealed = {
        c for sat in state.sat_out if not sat.voluntary or sat.seat == seat for c in sat.hand
    }
    return (
        {c for s, h in enumerate(state.hands) if s != seat for c in h} | set(state.stock)
    ) - revealed


#: The share of steps at which the cards hidden from each viewer are dealt again (a check that
#: nothing it is shown changes).
UNSEEN_SHARE = 0.25


def play_random_game(
    rules: Any, seats: int, seeds: Seeds, rng: random.Random, check: bool = True
) -> tuple[HoolaState, list[Any]]:
    events = GAME.start(rules, seats, seeds)
    state = fold(GAME, events)
    now = 0
    for _ in range(MAX_STEPS):
        # Time passes between commands; what it makes due (a closed claim window) comes first.
        now += rng.choice((0, 200, 1000, 4000))
        assert_next_deadline_is_exact(GAME, state, seeds)
        assert_to_act_is_exact(GAME, state)
        due = GAME.advance(state, Context(seeds, now))
        if due:
            assert GAME.advance(fold(GAME, due, state), Context(seeds, now)) == []
            state, events = fold(GAME, due, state), events + due
        if GAME.is_finished(state):
            return state, events
        seat = state.turn if state.phase is not Phase.ROUND_OVER else rng.randrange(seats)
        if state.phase is Phase.TAKE and rng.random() < 0.3:
            # Someone else may claim the discard out of turn (battle Hoola).
            claimants = [s for s in range(seats) if s != seat and GAME.legal_commands(state, s)]
            seat = rng.choice(claimants) if claimants else seat
        legal = GAME.legal_commands(state, seat)
        if not legal and state.claims:
            continue  # the seat to act waits for the claim window to close
        assert legal, "a seat to act always has a legal move"
        if check:
            check_step(state, seat, legal, rng)
        command = rng.choice(legal)
        new = GAME.decide(state, seat, command, Context(seeds, now))
        for event in new:
            before = state
            state = GAME.evolve(state, event)
            if check and not isinstance(event, (RoundEnded, TableClosed)):
                for viewer in range(seats):
                    leaked = cards_in(GAME.redact(event, viewer)) & hidden_from(state, viewer)
                    assert not leaked, f"{event} shows seat {viewer} hidden {leaked}"
            del before
        events += new
    raise AssertionError(f"the game did not end in {MAX_STEPS} steps")


def check_step(state: HoolaState, seat: int, legal: list[HoolaCommand], rng: random.Random) -> None:
    # 52 cards, each once.
    cards = all_cards(state)
    assert len(cards) == 52 + state.rules.jokers and len(set(cards)) == len(cards)
    # The legal list has no duplicates, and each of its commands is accepted (the whole list).
    canon = [canonical(state, c) for c in legal]
    assert len(set(canon)) == len(canon)
    assert all(accepted(state, seat, command) for command in legal), (seat, legal)
    # Legal moves = the commands validation accepts, over random syntactic commands of any seat.
    for who in {seat, (seat + 1) % state.seats}:
        legal_set = {canonical(state, c) for c in GAME.legal_commands(state, who)}
        for command in syntactic_commands(rng, state, who):
            assert accepted(state, who, command) == (canonical(state, command) in legal_set), (
                who,
                command,
            )
    # Exhaustively, now and then: every meld, thank-you and lay-off the hand can make (every
    # subset, every arrangement) is listed exactly when validation accepts it — the generator
    # skips no subset the solver would meld.
    if state.phase in (Phase.TAKE, Phase.PLAY) and rng.random() < 0.2:
        legal_set = {canonical(state, c) for c in legal}
        for command in every_meld_command(state, seat):
            assert validates(state, seat, command) == (canonical(state, command) in legal_set), (
                seat,
                command,
            )
    # Hidden information: the cards a viewer cannot know, dealt again, change nothing it is shown.
    if rng.random() < UNSEEN_SHARE:
        for viewer in [*range(state.seats), None]:
            hidden = hidden_from(state, -1 if viewer is None else viewer)
            assert_unseen_cards_change_nothing(GAME, state, viewer, hidden, rng)
    # Views show one's own hand and nothing hidden from the viewer (the last finished round's
    # result is public: its hands were revealed when it ended).
    for viewer in range(state.seats):
        view = GAME.view(state, viewer)
        assert Counter(view.hand) == Counter(state.hands[viewer])
        assert view.last_round == state.result
        shown = cards_in(dataclasses.replace(view, hand=(), last_round=None))
        assert not shown & hidden_from(state, viewer)
    spectator = GAME.view(state, None)
    assert not spectator.hand
    assert not cards_in(dataclasses.replace(spectator, last_round=None)) & hidden_from(state, -1)


@given(games())
def test_random_games_keep_every_invariant(game: tuple[Any, int, Seeds, random.Random]) -> None:
    rules, seats, seeds, rng = game
    state, events = play_random_game(rules, seats, seeds, rng)
    # The game ended; folding its log reproduces the state exactly.
    assert state.phase is Phase.TABLE_CLOSED
    assert fold(GAME, events) == state
    rounds = [e for e in events if isinstance(e, RoundEnded)]
    assert rules.rounds == 0 or len(rounds) <= rules.rounds  # a seat may close the table early
    for settlement in [r.settlement for r in rounds]:
        assert sum(settlement.net) == 0
        assert all(line.amount > 0 for line in settlement.lines)
        # Only involuntary sitters-out are paid by winners too (docs/rules/hoola.md §1.9).
        play = [line for line in settlement.lines if line.factors[0].name != "brights"]
        assert all(line.payer not in settlement.winners for line in play)
        play_net = net_of(seats, tuple(play))
        assert all(play_net[w] >= 0 for w in settlement.winners)
    # Six or seven seats: two to five play; seats sit out involuntarily only beside five players,
    # and are owed base_stake per bright.
    for began in (e for e in events if isinstance(e, PlayBegan)):
        assert 2 <= len(began.players) <= 5 and len(began.stock) == began.stock_count
    for sat in (e for e in events if isinstance(e, SatOut)):
        assert sat.compensation == (0 if sat.voluntary else rules.base_stake * len(sat.brights))
    # The table's settlement pays exactly the running balances.
    table = state.closed.settlement
    assert table.net == tuple(map(sum, zip(*(r.settlement.net for r in rounds), strict=True)))
    # The table's winners are the seats ahead at its close, every seat tied at the top.
    ahead = max(table.net)
    assert table.winners == tuple(seat for seat, net in enumerate(table.net) if net == ahead)


@given(st.binary(min_size=32, max_size=32), st.integers(2, 7))
def test_the_deal_gives_seven_each_one_upcard_and_the_rest_as_stock(
    seed: bytes, seats: int
) -> None:
    rules = rules_for("korean", {"sit_out": True, "max_seats": 7} if seats > 5 else {}, seats)
    state = fold(GAME, GAME.start(rules, seats, Seeds(seed)))
    assert [len(h) for h in state.hands] == [7] * seats
    assert len(state.discards) == 1 and len(state.stock) == 52 - 7 * seats - 1
    # Six or seven seats first choose, from the dealer on, whether they play (docs/rules/hoola.md §1.9).
    assert state.turn == state.dealer
    assert state.phase is (Phase.CHOOSING if seats > 5 else Phase.TAKE)


def test_card_codes_cover_the_deck() -> None:
    assert len(standard_deck()) == 52 == len({r + s for r in RANKS for s in SUITS})
