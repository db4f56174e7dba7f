"""Random Gin Rummy matches with random legal play: the invariants of docs/rules/gin.md §4 and §5 at every step."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Iterator
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

from croupier.engine.cards import standard_deck
from croupier.engine.game import CommandError, Context, fold
from croupier.engine.gin import GinGame
from croupier.engine.gin.events import (
    Discard,
    DrawDiscard,
    DrawStock,
    EndLayOffs,
    GinCommand,
    HandEnded,
    Knock,
    Knocked,
    KnockMeld,
    LayOff,
    LayOffsEnded,
    MatchEnded,
    NextHand,
    Pass,
)
from croupier.engine.gin.rules import PRESETS, rules_for
from croupier.engine.gin.state import GinState, Phase
from croupier.engine.meld_solver import GIN, deadwood, least_arrangements, meld_sets
from croupier.engine.settlement import amount_of
from croupier.engine.shuffle import Seeds

GAME = GinGame()
KNOWN = frozenset(standard_deck())
MAX_STEPS = 4000


@st.composite
def matches(draw: st.DrawFn) -> tuple[Any, Seeds, random.Random]:
    preset = draw(st.sampled_from(sorted(PRESETS)))
    overrides = draw(
        st.fixed_dictionaries(
            {"match_points": st.integers(1, 40)},
            optional={
                "knock_card": st.integers(0, 10),
                "stake_per_point": st.integers(1, 3),
                "big_gin_bonus": st.sampled_from((0, 31)),
            },
        )
    )
    rules = rules_for(preset, overrides, 2)
    seeds = Seeds(
        draw(st.binary(min_size=32, max_size=32)), tuple(draw(st.lists(st.text(), max_size=2)))
    )
    return rules, seeds, random.Random(draw(st.integers(0, 2**32)))


def cards_in(value: Any) -> set[str]:
    return shared_cards_in(value, KNOWN)


def hidden_from(state: GinState, seat: int | None, seen: set[str] = frozenset()) -> set[str]:
    """The other hand and the stock, but for cards that lay face up before (a discard taken back
    into a hand is known to both)."""
    return (
        {c for s, h in enumerate(state.hands) if s != seat for c in h} | set(state.stock)
    ) - seen


def syntactic_commands(rng: random.Random, state: GinState, seat: int) -> Iterator[GinCommand]:
    pool = list(state.hands[seat]) * 3 + list(standard_deck()) + ["", "1Z", "JK1"]
    yield from (DrawStock(), DrawDiscard(), Pass(), EndLayOffs(), NextHand(), Knock())
    # Every lay-off of a held card onto every meld on the table: a lay-off left out of the list
    # is found whichever card and meld it is (random ones missed one in ten such omissions).
    for card in state.hands[seat] if state.hands else ():
        for meld in range(len(state.table)):
            yield LayOff(card, meld)
    for _ in range(8):
        yield Discard(rng.choice(pool))
        yield Knock(rng.choice(pool))
        yield LayOff(rng.choice(pool), rng.randrange(-1, len(state.table) + 2))
        yield from named_knocks(rng, state, seat, rng.choice(pool))


def named_knocks(rng: random.Random, state: GinState, seat: int, card: str) -> Iterator[Knock]:
    """Knocks naming melds (docs/rules/gin.md §4): each least-deadwood arrangement of the kept
    cards, its melds and cards shuffled, some with a meld left out; and random groups of cards."""
    kept = tuple(c for c in state.hands[seat] if c != card) if state.hands else ()
    if kept and deadwood(kept, GIN) <= 10:
        for melds, _ in least_arrangements(kept, GIN):
            named = [KnockMeld(tuple(rng.sample(m.cards, len(m.cards)))) for m in melds]
            rng.shuffle(named)
            yield Knock(card, tuple(named))
            if len(named) > 1:
                yield Knock(card, tuple(named[1:]))
    cards = rng.sample(list(kept) or list(standard_deck()), min(len(kept) or 3, 3))
    yield Knock(card, (KnockMeld(tuple(cards)),))


def same_move(command: GinCommand) -> object:
    """A command up to the order of a named knock's melds and their cards."""
    if isinstance(command, Knock) and command.melds:
        return (command.card, meld_sets(m.cards for m in command.melds))
    return command


def accepted(state: GinState, seat: int, command: GinCommand) -> bool:
    try:
        GAME.decide(state, seat, command, Context(Seeds(b"\x00" * 32)))
    except CommandError:
        return False
    return True


#: The share of steps at which the cards hidden from each viewer are dealt again (a check that
#: nothing it is shown changes).
UNSEEN_SHARE = 0.25


def check_step(state: GinState, rng: random.Random, seen: set[str]) -> None:
    # 52 cards, each once: in the hands (a knocker keeps its melded cards), the stock, the discards,
    # and the defender's cards laid off on the knocker's melds.
    held = [c for h in state.hands for c in h] + list(state.stock) + list(state.discards)
    laid_off = [
        c
        for m in state.table
        for c in m.cards
        if state.knock and c not in state.hands[state.knock.seat]
    ]
    assert sorted(held + laid_off) == sorted(standard_deck())
    for who in (0, 1):
        legal = GAME.legal_commands(state, who)
        assert len(set(legal)) == len(legal) and all(GAME.label(state, c) for c in legal)
        listed = {same_move(c) for c in legal}
        # Listed ⇒ accepted, for the whole list; accepted ⇒ listed, for every command below.
        assert all(accepted(state, who, c) for c in legal), (who, legal)
        for command in syntactic_commands(rng, state, who):
            if isinstance(command, LayOff) and command.meld < 0:
                continue  # a negative index cannot be sent (the contract's field is unsigned)
            assert accepted(state, who, command) == (same_move(command) in listed), (who, command)
        view = GAME.view(state, who)
        assert Counter(view.hand) == Counter(state.hands[who])
        shown = cards_in(dataclasses.replace(view, hand=(), melds=(), last_hand=None))
        assert not shown & hidden_from(state, who, seen)
    # Hidden information: the cards a viewer cannot know, dealt again, change nothing it is shown.
    if rng.random() < UNSEEN_SHARE:
        for viewer in (0, 1, None):
            hidden = hidden_from(state, viewer, seen)
            assert_unseen_cards_change_nothing(GAME, state, viewer, hidden, rng)


def _pick(state: GinState, seat: int, legal: list[GinCommand], rng: random.Random) -> GinCommand:
    """Random legal play that mostly plays to knock, so that hands end in every way."""
    knocks = [c for c in legal if isinstance(c, Knock)]
    if knocks and rng.random() < 0.8:
        return rng.choice(knocks)
    discards = [c for c in legal if isinstance(c, Discard)]
    if discards and rng.random() < 0.8:
        return min(
            discards,
            key=lambda c: (
                deadwood(tuple(x for x in state.hands[seat] if x != c.card), GIN),
                rng.random(),
            ),
        )
    return rng.choice(legal)


def play_random_match(rules: Any, seeds: Seeds, rng: random.Random) -> tuple[GinState, list, list]:
    events = GAME.start(rules, 2, seeds)
    state = fold(GAME, events)
    commands = []
    seen = set(state.discards)
    for _ in range(MAX_STEPS):
        assert_next_deadline_is_exact(GAME, state)
        assert_to_act_is_exact(GAME, state)
        if GAME.is_finished(state):
            return state, events, commands
        seat = state.turn if state.phase is not Phase.HAND_OVER else rng.randrange(2)
        # Every step of the rare phases (lay-offs), a tenth of the others.
        if state.phase is Phase.LAY_OFF or rng.random() < 0.1:
            check_step(state, rng, seen)
        legal = GAME.legal_commands(state, seat)
        assert legal, "the seat to act always has a move"
        command = _pick(state, seat, legal, rng)
        new = GAME.decide(state, seat, command, Context(seeds))
        commands.append((seat, command))
        for event in new:
            state = GAME.evolve(state, event)
            if isinstance(event, HandEnded):
                seen = set()  # a new hand: nothing of it is known yet
            elif isinstance(event, (Knocked, LayOffsEnded)):
                seen |= cards_in(event)  # a knock shows the knocker's hand, then the defender's
            elif not isinstance(event, MatchEnded):
                for viewer in (0, 1, None):
                    leaked = cards_in(GAME.redact(event, viewer)) & hidden_from(state, viewer, seen)
                    assert not leaked, f"{event} shows seat {viewer} hidden {leaked}"
            seen |= set(state.discards) | {c for m in state.table for c in m.cards}
        events += new
    raise AssertionError(f"the match did not end in {MAX_STEPS} steps")


@given(matches())
def test_random_matches_keep_every_invariant(match: tuple[Any, Seeds, random.Random]) -> None:
    rules, seeds, rng = match
    state, events, commands = play_random_match(rules, seeds, rng)
    assert state.phase is Phase.MATCH_OVER and fold(GAME, events) == state
    hands = [e for e in events if isinstance(e, HandEnded)]
    totals = [0, 0]
    for end in hands:
        for line in end.settlement.lines:
            assert line.payee == end.winner and line.amount == amount_of(line.factors)
            assert line.amount == end.points * rules.stake_per_point
        if end.winner is not None:
            totals[end.winner] += end.points
        assert end.totals == tuple(totals)
    assert max(totals) >= rules.match_points > max(hands[-2].totals if len(hands) > 1 else (0, 0))
    final = state.ended.settlement
    assert final.net == tuple(map(sum, zip(*(h.settlement.net for h in hands), strict=True)))
    # A replay re-applies every command to a fresh deal and reproduces every event.
    assert_replay_reproduces(GAME, rules, 2, seeds, commands, events)
