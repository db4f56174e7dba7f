"""What a seat's checks cost tells it nothing hidden (docs/rules/common.md §5).

A seat times what it is answered: ``ValidateCommand``, and the legal-move list (ListLegalMoves,
the ``include`` of its own move's answer). Both run the engine's check of each command, on the
game's whole state, other hands and the stock included; a check that worked out what the command
would then do with those cards (the stock card a Koi-Koi play turns, the knocker's melds chosen
against the defender's hand, a stop's outcome) took a time that depended on them: a Koi-Koi seat
timing a few hundred checks of each of its plays told apart, over the network, the plays after
which the stock's hidden top card would wait on a choice.

So, for random games of every kind and for positions where those outcomes hang on a hidden card,
the engine lines a check runs are counted, and must be the same whatever the cards the seat cannot
see (the other hands and the stock, shuffled among themselves): a count of work that does not
depend on them is a time that does not either, measured without a clock's noise.
"""

from __future__ import annotations

import dataclasses
import random
import sys
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import Any

from gin.helpers import position as gin_position
from hoola.helpers import position as hoola_position
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from croupier.engine.game import CommandError, Context
from croupier.engine.gin.events import Knock
from croupier.engine.gin.rules import STANDARD as GIN_STANDARD
from croupier.engine.gin.state import Phase as GinPhase
from croupier.engine.hoola.events import Stop
from croupier.engine.hoola.rules import KOREAN
from croupier.engine.registry import GAMES
from croupier.engine.shuffle import Seeds

#: The engine's source files, whose lines are counted.
ENGINE = "/engine/"
#: (kind, preset, seats, rule changes): every kind, Hoola with jokers and battle claims too.
CASES: list[tuple[str, str, int, dict[str, Any]]] = [
    ("hoola", "korean", 3, {}),
    ("hoola", "winjoy", 4, {"jokers": 2}),
    ("koikoi", "nintendo-3", 2, {}),
    ("gin", "standard", 2, {}),
    ("rummy", "standard", 3, {}),
]
#: Moves of a random game whose states are checked, and legal commands checked per seat.
MOVES = 40
CHECKED_PER_SEAT = 12
#: Shufflings of the hidden cards each check is compared across.
SHUFFLINGS = 2


def _clear_memos() -> None:
    """Forget what the engine's memoized helpers remember: a second check would else find the
    first one's work done, and count less for that alone."""
    for name, module in list(sys.modules.items()):
        if name.startswith("croupier.engine"):
            for value in vars(module).values():
                clear = getattr(value, "cache_clear", None)
                if callable(clear):
                    clear()


def work(check: Callable[[Any], object], state: Any) -> Counter[tuple[str, int]]:
    """The engine lines ``check`` runs on ``state``, each with how many times (a refusal is a
    result too)."""
    lines: Counter[tuple[str, int]] = Counter()

    def tracer(frame: FrameType, event: str, _: object) -> Any:
        if ENGINE not in frame.f_code.co_filename:
            return None
        if event == "line":
            lines[frame.f_code.co_filename, frame.f_lineno] += 1
        return tracer

    _clear_memos()
    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        check(state)
    except CommandError:
        pass
    finally:
        sys.settrace(before)
    return lines


def hidden_shuffled(state: Any, seat: int, rng: random.Random) -> Any:
    """``state`` with the cards ``seat`` cannot see (the other hands and the stock) dealt among
    those places again, each keeping its count; a battle-Hoola claim's cards stay in its hand."""
    claimed = {card for claim in getattr(state, "claims", ()) for card in claim.cards}
    hands = [list(hand) for hand in state.hands]
    stock = list(state.stock)
    places = [
        (hand, i)
        for other, hand in enumerate(hands)
        if other != seat
        for i, card in enumerate(hand)
        if card not in claimed
    ] + [(stock, i) for i in range(len(stock))]
    cards = [place[i] for place, i in places]
    rng.shuffle(cards)
    for (place, i), card in zip(places, cards, strict=True):
        place[i] = card
    return dataclasses.replace(
        state, hands=tuple(tuple(hand) for hand in hands), stock=tuple(stock)
    )


def assert_checks_cost_the_same(game: Any, state: Any, seat: int, rng: random.Random) -> None:
    """``seat``'s legal-move list and its checks of its legal commands run the same lines
    whatever the hidden cards."""
    commands = game.legal_commands(state, seat)[:CHECKED_PER_SEAT]
    checks: list[tuple[str, Callable[[Any], object]]] = [
        ("legal moves", lambda s: game.legal_commands(s, seat))
    ] + [
        (f"check {command}", lambda s, command=command: game.validate(s, seat, command))
        for command in commands
    ]
    for _ in range(SHUFFLINGS):
        other = hidden_shuffled(state, seat, rng)
        for what, check in checks:
            assert work(check, state) == work(check, other), (
                f"seat {seat}'s {what} costs more or less by the hidden cards"
            )


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=st.sampled_from(CASES), seed=st.integers(0, 2**32 - 1))
def test_no_check_costs_more_or_less_by_a_hidden_card(
    case: tuple[str, str, int, dict[str, Any]], seed: int
) -> None:
    kind, preset, seats, changes = case
    game = GAMES[kind]
    rng = random.Random(seed)
    seeds = Seeds(rng.randbytes(32), (str(seed),))
    state = game.initial_state()
    for event in game.start(game.new_game_rules(preset, changes, seats), seats, seeds):
        state = game.evolve(state, event)
    for _ in range(MOVES):
        if game.is_finished(state):
            break
        for seat in game.to_act(state):
            assert_checks_cost_the_same(game, state, seat, rng)
        moves = [(s, c) for s in game.to_act(state) for c in game.legal_commands(state, s)]
        if not moves:
            break
        seat, command = rng.choice(moves)
        for event in game.decide(state, seat, command, Context(seeds)):
            state = game.evolve(state, event)


def test_a_knock_costs_the_same_whatever_the_defender_could_lay_off() -> None:
    """Gin (docs/rules/gin.md §4): the knock's melds are chosen against the defender's hand (the
    arrangement leaving it the least to lay off), and a gin scores it: the more of its cards lay
    off, the longer that took (0.5 ms with none, 3 ms with five). The knocker checks its knock,
    or reads its legal moves, before it knocks: neither may make that choice."""
    knocker = "2C 3C 4C 5C 6C 7C 7D 7H 7S 6S KD"  # three arrangements leave 6S
    rest = "AH JC 6H 6D 5D TH 9S 8C 4S 9D"
    gin = "2C 3C 4C 5C 7D 7H 7S JS QS KS KD"
    rng = random.Random(1)
    for hand in (knocker, gin):
        state = gin_position((hand, rest), "QD", rules=GIN_STANDARD, turn=0, phase=GinPhase.DISCARD)
        assert Knock("KD") in GAMES["gin"].legal_commands(state, 0)
        assert_checks_cost_the_same(GAMES["gin"], state, 0, rng)


def test_a_stop_costs_the_same_whether_it_would_win_or_fail() -> None:
    """Hoola (docs/rules/hoola.md §1.5.2): a stop wins when every other hand is higher; the round
    it ends is settled from every hand. A check of the stop must not settle it."""
    state = hoola_position(
        ["AS 2S 3D", "9C 8D KH QH 5C", "AC 2H"], rules=KOREAN, melded=[True, True, True]
    )
    assert Stop() in GAMES["hoola"].legal_commands(state, 0)
    rng = random.Random(2)
    assert_checks_cost_the_same(GAMES["hoola"], state, 0, rng)
