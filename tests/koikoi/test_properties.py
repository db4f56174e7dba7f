"""Random Koi-Koi matches with random legal play: the invariants of docs/rules/koikoi.md §2 and §5 at every step."""

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

from croupier.engine.game import CommandError, Context, fold
from croupier.engine.koikoi import KoiKoiGame
from croupier.engine.koikoi.cards import deck
from croupier.engine.koikoi.events import (
    ChooseCapture,
    KoiKoi,
    KoiKoiCommand,
    MatchEnded,
    NextRound,
    PlayCard,
    RoundEnded,
    Shobu,
)
from croupier.engine.koikoi.rules import PRESETS, rules_for
from croupier.engine.koikoi.state import KoiKoiState, Phase
from croupier.engine.settlement import amount_of
from croupier.engine.shuffle import Seeds

GAME = KoiKoiGame()
KNOWN = frozenset(deck())
MAX_STEPS = 1000


@st.composite
def matches(draw: st.DrawFn) -> tuple[Any, Seeds, random.Random]:
    preset = draw(st.sampled_from(sorted(PRESETS)))
    overrides = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "stake_per_point": st.integers(1, 5),
                "double_from": st.sampled_from((0, 5, 7)),
                "koi_koi_multiplier": st.integers(1, 3),
                "sake_cup_as_chaff": st.booleans(),
                "viewing_yaku": st.booleans(),
            },
        )
    )
    rules = rules_for(preset, overrides, 2)
    seeds = Seeds(
        draw(st.binary(min_size=32, max_size=32)), tuple(draw(st.lists(st.text(), max_size=2)))
    )
    return rules, seeds, random.Random(draw(st.integers(0, 2**32)))


def all_cards(state: KoiKoiState) -> list[str]:
    return (
        [c for h in state.hands for c in h]
        + list(state.field)
        + list(state.stock)
        + [c for p in state.captured for c in p]
        + ([state.turned] if state.turned else [])
    )


def cards_in(value: Any) -> set[str]:
    return shared_cards_in(value, KNOWN)


def hidden_from(state: KoiKoiState, seat: int | None) -> set[str]:
    return {c for s, h in enumerate(state.hands) if s != seat for c in h} | set(state.stock)


def syntactic_commands(
    rng: random.Random, state: KoiKoiState, seat: int
) -> Iterator[KoiKoiCommand]:
    pool = list(state.hands[seat]) * 3 + list(state.field) * 2 + list(deck()) + ["", "13Z"]
    yield KoiKoi()
    yield Shobu()
    yield NextRound()
    for _ in range(10):
        yield PlayCard(rng.choice(pool), rng.choice(pool + [""] * 20))
        yield ChooseCapture(rng.choice(pool))
    # Every play of a held card, capturing nothing or any field card, and every capture choice:
    # a move left out of the list is found whichever it is.
    for card in state.hands[seat] if state.hands else ():
        for capture in ("", *state.field):
            yield PlayCard(card, capture)
    for card in state.field:
        yield ChooseCapture(card)


def accepted(state: KoiKoiState, seat: int, command: KoiKoiCommand) -> bool:
    try:
        GAME.decide(state, seat, command, Context(Seeds(b"\x00" * 32)))
    except CommandError:
        return False
    return True


#: The share of steps at which the cards hidden from each viewer are dealt again (a check that
#: nothing it is shown changes).
UNSEEN_SHARE = 0.25


def check_step(state: KoiKoiState, seat: int, rng: random.Random) -> None:
    cards = all_cards(state)
    assert len(cards) == 48 and set(cards) == set(deck())
    for who in (0, 1):
        legal = GAME.legal_commands(state, who)
        assert len(set(legal)) == len(legal)
        assert all(GAME.label(state, c) for c in legal)
        # Listed ⇒ accepted, for the whole list; accepted ⇒ listed, for every command below.
        assert all(accepted(state, who, c) for c in legal), (who, legal)
        for command in syntactic_commands(rng, state, who):
            assert accepted(state, who, command) == (command in legal), (who, command)
        view = GAME.view(state, who)
        assert Counter(view.hand) == Counter(state.hands[who])
        assert not cards_in(dataclasses.replace(view, hand=(), last_round=None)) & hidden_from(
            state, who
        )
    spectator = GAME.view(state, None)
    assert not cards_in(dataclasses.replace(spectator, last_round=None)) & hidden_from(state, None)
    # Hidden information: the cards a viewer cannot know, dealt again, change nothing it is shown.
    if rng.random() < UNSEEN_SHARE:
        for viewer in (0, 1, None):
            assert_unseen_cards_change_nothing(GAME, state, viewer, hidden_from(state, viewer), rng)


def play_random_match(
    rules: Any, seeds: Seeds, rng: random.Random
) -> tuple[KoiKoiState, list, list]:
    events = GAME.start(rules, 2, seeds)
    state = fold(GAME, events)
    commands = []
    for _ in range(MAX_STEPS):
        assert_next_deadline_is_exact(GAME, state)
        assert_to_act_is_exact(GAME, state)
        if GAME.is_finished(state):
            return state, events, commands
        seat = state.turn if state.phase is not Phase.ROUND_OVER else rng.randrange(2)
        if rng.random() < 0.2:
            check_step(state, seat, rng)
        legal = GAME.legal_commands(state, seat)
        assert legal, "the seat to act always has a move"
        command = rng.choice(legal)
        new = GAME.decide(state, seat, command, Context(seeds))
        commands.append((seat, command))
        for event in new:
            state = GAME.evolve(state, event)
            if not isinstance(event, (RoundEnded, MatchEnded)):
                for viewer in (0, 1, None):
                    leaked = cards_in(GAME.redact(event, viewer)) & hidden_from(state, viewer)
                    assert not leaked, f"{event} shows seat {viewer} hidden {leaked}"
        events += new
    raise AssertionError(f"the match did not end in {MAX_STEPS} steps")


@given(matches())
def test_random_matches_keep_every_invariant(match: tuple[Any, Seeds, random.Random]) -> None:
    rules, seeds, rng = match
    state, events, commands = play_random_match(rules, seeds, rng)
    assert state.phase is Phase.MATCH_OVER and fold(GAME, events) == state
    rounds = [e for e in events if isinstance(e, RoundEnded)]
    assert len(rounds) == rules.rounds
    totals = [0, 0]
    for end in rounds:
        settlement = end.settlement
        assert sum(settlement.net) == 0
        for line in settlement.lines:
            assert line.payee == end.winner and line.amount == amount_of(line.factors)
            assert line.amount == end.points * rules.stake_per_point
        if end.winner is not None:
            totals[end.winner] += end.points
        assert end.totals == tuple(totals)
    final = state.ended.settlement
    assert final.net == tuple(map(sum, zip(*(r.settlement.net for r in rounds), strict=True)))
    assert all(line.amount == amount_of(line.factors) for line in final.lines)
    # A replay re-applies every command to a fresh deal and reproduces every event.
    assert_replay_reproduces(GAME, rules, 2, seeds, commands, events)
