"""Random Rummy games with random legal play: the invariants of docs/rules/rummy.md §3 and §5 at every step."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Iterator
from itertools import combinations
from typing import Any

from game_invariants import (
    assert_next_deadline_is_exact,
    assert_replay_reproduces,
    assert_to_act_is_exact,
    assert_unseen_cards_change_nothing,
)
from game_invariants import (
    cards_in as shared_cards_in,
)
from hypothesis import given
from hypothesis import strategies as st

from croupier.engine.game import CommandError, Context, fold
from croupier.engine.meld_solver import RUMMY, arrangements
from croupier.engine.rummy import RummyGame, moves
from croupier.engine.rummy.cards import deck, sort_cards
from croupier.engine.rummy.events import (
    CardDrawn,
    Discard,
    DrawStock,
    LayDown,
    LayOff,
    LayOffCards,
    MeldCards,
    RoundEnded,
    RummyCommand,
    SwapJoker,
    TakeDiscard,
)
from croupier.engine.rummy.rules import PRESETS, rules_for
from croupier.engine.rummy.state import Phase, RummyState
from croupier.engine.settlement import amount_of
from croupier.engine.shuffle import Seeds

GAME = RummyGame()
KNOWN = frozenset(deck())
MAX_STEPS = 3000


@st.composite
def games(draw: st.DrawFn) -> tuple[Any, int, Seeds, random.Random]:
    preset = draw(st.sampled_from(sorted(PRESETS)))
    seats = draw(st.integers(2, 4))
    overrides = draw(
        st.fixed_dictionaries(
            {"max_reshuffles": st.integers(1, 2)}, optional={"stake_per_point": st.integers(1, 3)}
        )
    )
    rules = rules_for(preset, overrides, seats)
    seeds = Seeds(
        draw(st.binary(min_size=32, max_size=32)), tuple(draw(st.lists(st.text(), max_size=2)))
    )
    return rules, seats, seeds, random.Random(draw(st.integers(0, 2**32)))


def cards_in(value: Any) -> set[str]:
    return shared_cards_in(value, KNOWN)


def hidden_from(state: RummyState, seat: int | None, seen: set[str]) -> set[str]:
    return (
        {c for s, h in enumerate(state.hands) if s != seat for c in h} | set(state.stock)
    ) - seen


def unnamed(command: RummyCommand) -> RummyCommand:
    """The same command with no joker named: the engine's default reading."""

    def meld(spec: MeldCards) -> MeldCards:
        return MeldCards(spec.cards[::-1], ())

    match command:
        case TakeDiscard(melds=specs, lay_off=lay_off):
            return TakeDiscard(
                tuple(meld(s) for s in specs),
                LayOffCards(lay_off.meld_id, lay_off.cards) if lay_off else None,
            )
        case LayDown(melds=specs):
            return LayDown(tuple(meld(s) for s in specs))
        case LayOff(meld_id=meld_id, cards=cards):
            return LayOff(meld_id, cards)
    return command


def atomic(command: RummyCommand) -> bool:
    """Commands the legal-move list covers exactly: one meld, one card laid off, a joker swap
    played in one place, a draw, a discard."""
    match command:
        case TakeDiscard(melds=specs, lay_off=lay_off):
            return len(specs) == 1 or (lay_off is not None and len(lay_off.cards) == 1)
        case LayDown(melds=specs):
            return len(specs) == 1
        case LayOff(cards=cards):
            return len(cards) == 1
        case SwapJoker(melds=specs, lay_off=lay_off):
            return (len(specs) == 1 and len(specs[0].cards) == 3) or (
                lay_off is not None and len(lay_off.cards) == 1
            )
    return True


def syntactic_commands(
    rng: random.Random, state: RummyState, seat: int, legal: list[RummyCommand]
) -> Iterator[RummyCommand]:
    hand = list(state.hands[seat]) or ["2C1"]
    pool = hand * 3 + list(deck())[:20] + ["ZZ1", "JK9"]
    yield DrawStock()
    for _ in range(6):
        yield Discard(rng.choice(pool))
        yield LayDown((MeldCards(tuple(rng.sample(hand, min(len(hand), rng.randint(1, 4))))),))
        ids = [m.id for m in state.melds] + [99]
        yield LayOff(rng.choice(ids), (rng.choice(pool),))
        if state.discard_top:
            yield TakeDiscard(lay_off=LayOffCards(rng.choice(ids), (state.discard_top,)))
            yield TakeDiscard(
                (MeldCards((state.discard_top,) + tuple(rng.sample(hand, min(2, len(hand))))),)
            )
    for command in rng.sample(legal, min(6, len(legal))):
        yield unnamed(command)


def compound_takes(state: RummyState, seat: int) -> Iterator[RummyCommand]:
    """Takes of the discard with hand cards beside it: laid off on a table meld with one or two of
    them, which the list offers only where the discard needs them (docs/rules/rummy.md §3.3)."""
    top = state.discard_top
    if state.phase is not Phase.TAKE or top is None:
        return
    hand = state.hands[seat]
    for meld in state.melds:
        for size in (1, 2):
            for more in combinations(hand, size):
                yield TakeDiscard(lay_off=LayOffCards(meld.id, (top, *more)))


def accepted(state: RummyState, seat: int, command: RummyCommand) -> bool:
    try:
        GAME.decide(state, seat, command, Context(Seeds(b"\x00" * 32)))
    except CommandError:
        return False
    return True


def validates(state: RummyState, seat: int, command: RummyCommand) -> bool:
    try:
        GAME.validate(state, seat, command)
    except CommandError:
        return False
    return True


# The meld sizes tried exhaustively (every subset of the hand that size, every arrangement).
SMALL_MELDS = range(3, 5)


def every_small_meld(state: RummyState, seat: int) -> Iterator[RummyCommand]:
    """Every lay-down of one meld of three or four hand cards, and every take of the discard into
    such a meld, in every arrangement the solver finds: the generator must skip none it accepts."""
    hand, top = state.hands[seat], state.discard_top
    for size in SMALL_MELDS:
        for cards in combinations(hand, size):
            for way in arrangements(cards, RUMMY):
                yield LayDown((MeldCards(sort_cards(way.cards), way.jokers),))
        for cards in combinations(hand, size - 1) if top else ():
            for way in arrangements(cards + (top,), RUMMY):
                yield TakeDiscard((MeldCards(sort_cards(way.cards), way.jokers),))


#: The share of steps at which the cards hidden from each viewer are dealt again (a check that
#: nothing it is shown changes).
UNSEEN_SHARE = 0.25


def check_step(state: RummyState, rng: random.Random, seen: set[str]) -> None:
    everything = (
        [c for h in state.hands for c in h]
        + list(state.stock)
        + list(state.discards)
        + [c for m in state.melds for c in m.cards]
    )
    assert sorted(everything) == sorted(deck())
    for who in {state.turn, (state.turn + 1) % state.seats}:
        legal = GAME.legal_commands(state, who)
        canon = {moves.canonical(state, c) for c in legal}
        assert len(canon) == len(legal) and all(GAME.label(state, c) for c in legal)
        for command in legal:
            assert accepted(state, who, command), command
        for command in syntactic_commands(rng, state, who, legal):
            if atomic(command):
                assert accepted(state, who, command) == (
                    moves.canonical(state, command) in canon
                ), (who, command)
        if GAME.legal_moves_complete(state, who):
            # A complete list holds every command accepted, compounds included: none of these.
            for command in compound_takes(state, who):
                assert not validates(state, who, command), (who, command)
        if who == state.turn and rng.random() < 0.3:
            for command in every_small_meld(state, who):
                assert validates(state, who, command) == (
                    moves.canonical(state, command) in canon
                ), (who, command)
        view = GAME.view(state, who)
        assert Counter(view.hand) == Counter(state.hands[who])
        assert not cards_in(dataclasses.replace(view, hand=(), result=None)) & hidden_from(
            state, who, seen
        )
    # Hidden information: the cards a viewer cannot know, dealt again, change nothing it is shown.
    if rng.random() < UNSEEN_SHARE:
        for viewer in [*range(state.seats), None]:
            hidden = hidden_from(state, viewer, seen)
            assert_unseen_cards_change_nothing(GAME, state, viewer, hidden, rng)


def play_random_game(
    rules: Any, seats: int, seeds: Seeds, rng: random.Random
) -> tuple[RummyState, list, list]:
    events = GAME.start(rules, seats, seeds)
    state = fold(GAME, events)
    seen = set(state.discards)
    commands = []
    for _ in range(MAX_STEPS):
        assert_next_deadline_is_exact(GAME, state)
        assert_to_act_is_exact(GAME, state)
        if GAME.is_finished(state):
            return state, events, commands
        if rng.random() < 0.1:
            check_step(state, rng, seen)
        legal = GAME.legal_commands(state, state.turn)
        assert legal, "the seat to act always has a move"
        plays = [c for c in legal if not isinstance(c, (Discard, DrawStock))]
        command = rng.choice(plays if plays and rng.random() < 0.85 else legal)
        seat = state.turn
        new = GAME.decide(state, seat, command, Context(seeds))
        commands.append((seat, command))
        for event in new:
            state = GAME.evolve(state, event)
            if not isinstance(event, RoundEnded):
                for viewer in (*range(seats), None):
                    leaked = cards_in(GAME.redact(event, viewer)) & hidden_from(state, viewer, seen)
                    if isinstance(event, CardDrawn) and event.seat == viewer:
                        continue
                    assert not leaked, f"{event} shows seat {viewer} hidden {leaked}"
            seen |= set(state.discards) | {c for m in state.melds for c in m.cards}
        events += new
    raise AssertionError(f"the game did not end in {MAX_STEPS} steps")


@given(games())
def test_random_games_keep_every_invariant(game: tuple[Any, int, Seeds, random.Random]) -> None:
    rules, seats, seeds, rng = game
    state, events, commands = play_random_game(rules, seats, seeds, rng)
    assert state.phase is Phase.ROUND_OVER and fold(GAME, events) == state
    end = state.result
    assert sum(end.settlement.net) == 0
    for line in end.settlement.lines:
        assert line.payee == end.winner and line.amount == amount_of(line.factors)
        assert line.amount == end.hand_values[line.payer] * rules.stake_per_point
    # A replay re-applies every command to a fresh deal and reproduces every event.
    assert_replay_reproduces(GAME, rules, seats, seeds, commands, events)
