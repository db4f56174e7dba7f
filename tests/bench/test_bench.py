"""Hot paths, measured by `make bench` (pytest-benchmark); figures are recorded, never asserted."""

from __future__ import annotations

import random
import time
import uuid

import pytest

from croupier.engine.game import Context, fold
from croupier.engine.hoola import HoolaGame
from croupier.engine.hoola.rules import rules_for
from croupier.engine.hoola.scoring import HoolaOutcome, Outcome, settle
from croupier.engine.hoola.state import Phase
from croupier.engine.shuffle import Seeds
from croupier.log import GameRecord, NewEvent, StoreBusy
from croupier.service.store import open_store

GAME = HoolaGame()
SEEDS = Seeds(b"\x07" * 32)


def recorded_game(seats: int = 4, seed: int = 1):
    rules = rules_for("korean", {}, seats)
    events = GAME.start(rules, seats, SEEDS)
    state = fold(GAME, events)
    states = [state]
    rng = random.Random(seed)
    while not GAME.is_finished(state):
        command = rng.choice(GAME.legal_commands(state, state.turn))
        new = GAME.decide(state, state.turn, command, Context(SEEDS))
        for event in new:
            state = GAME.evolve(state, event)
        events += new
        states.append(state)
    return events, states


EVENTS, STATES = recorded_game()
MIDGAME = [s for s in STATES if s.phase is Phase.PLAY][len(STATES) // 4]


def test_legal_moves_take_phase(benchmark) -> None:
    state = next(s for s in STATES[5:] if s.phase is Phase.TAKE)
    benchmark(GAME.legal_commands, state, state.turn)


def test_legal_moves_play_phase(benchmark) -> None:
    benchmark(GAME.legal_commands, MIDGAME, MIDGAME.turn)


# The meld solver keeps its answers; "cold" times a legal-move list with none kept (a server asks
# again after every move, when most of a hand's subsets were asked about the move before).
def test_legal_moves_take_phase_cold(benchmark) -> None:
    from croupier.engine.hoola.moves import clear_cache

    state = next(s for s in STATES[5:] if s.phase is Phase.TAKE)
    benchmark(lambda: (clear_cache(), GAME.legal_commands(state, state.turn)))


def test_legal_moves_play_phase_cold(benchmark) -> None:
    from croupier.engine.hoola.moves import clear_cache

    benchmark(lambda: (clear_cache(), GAME.legal_commands(MIDGAME, MIDGAME.turn)))


def _over_a_game(game, states, clear) -> None:
    """Every acting seat's legal moves at each state of a recorded game, in order, from nothing
    kept: what a server works out as a game is played (a hand changes by a card or a meld from
    one list to the next, so some of what the last list found is kept for the next)."""
    clear()
    for state in states:
        for seat in game.to_act(state):
            game.legal_commands(state, seat)


def test_legal_moves_over_a_game(benchmark) -> None:
    from croupier.engine.hoola.moves import clear_cache

    benchmark.extra_info["states"] = len(STATES)  # the figure per state: mean ÷ states
    benchmark(_over_a_game, GAME, STATES, clear_cache)


def test_to_act_take_phase(benchmark) -> None:
    state = next(s for s in STATES[5:] if s.phase is Phase.TAKE)
    benchmark(GAME.to_act, state)


def test_validate_and_apply(benchmark) -> None:
    command = GAME.legal_commands(MIDGAME, MIDGAME.turn)[-1]

    def step():
        state = MIDGAME
        for event in GAME.decide(state, state.turn, command, Context(SEEDS)):
            state = GAME.evolve(state, event)
        return state

    benchmark(step)


def test_settlement(benchmark) -> None:
    state = STATES[-1]
    benchmark(settle, state, Outcome(HoolaOutcome.STOCK_OUT, (0,)))


def test_fold_a_whole_game(benchmark) -> None:
    benchmark.extra_info["events"] = len(EVENTS)
    benchmark(fold, GAME, EVENTS)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request, tmp_path):
    url = (
        f"sqlite:///{tmp_path / 'bench.sqlite3'}"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    store = open_store(url)
    yield store
    store.close()


def test_store_append(benchmark, store) -> None:
    game_id = str(uuid.uuid4())
    store.create_game(
        GameRecord(game_id, "hoola", 4, b"s" * 32, "c", 0), [NewEvent("E", b"x" * 200)], 0
    )
    version = [1]

    def append():
        store.append(game_id, version[0], [NewEvent("E", b"y" * 200)], uuid.uuid4().hex, 0, 0)
        version[0] += 1

    benchmark(append)


# What a loop does between its appends (the rest of a move) in the benchmark below.
LOOP_WORK_S = 0.0005


def test_store_append_on_the_loop(benchmark, tmp_path) -> None:
    """SQLite appends as the server's event loop makes them (the store's view without waiting,
    16 games in turn, other work between appends, each tried again while a checkpoint holds
    writes back): how long each holds the loop. Its max and mean show whether checkpoints (and
    their fsyncs) are made on the loop (service/store/sqlite.py)."""
    store = open_store(f"sqlite:///{tmp_path / 'bench.sqlite3'}")
    at_once = store.without_waiting()
    games = []
    for _ in range(16):
        game_id = str(uuid.uuid4())
        store.create_game(
            GameRecord(game_id, "hoola", 3, b"s" * 32, "c", 0), [NewEvent("E", b"x" * 200)], 0
        )
        games.append([game_id, 1])
    turn = iter(range(1 << 30))

    def append():
        game = games[next(turn) % len(games)]
        events = [NewEvent("E", random.randbytes(250)), NewEvent("F", random.randbytes(120))]
        while True:
            try:
                at_once.append(game[0], game[1], events, uuid.uuid4().hex, 0, 0)
                break
            except StoreBusy:
                time.sleep(LOOP_WORK_S)
        game[1] += len(events)

    try:
        benchmark.pedantic(
            append, setup=lambda: time.sleep(LOOP_WORK_S), rounds=4000, warmup_rounds=100
        )
    finally:
        store.close()


def test_store_read_a_game(benchmark, store) -> None:
    game_id = str(uuid.uuid4())
    store.create_game(
        GameRecord(game_id, "hoola", 4, b"s" * 32, "c", 0),
        [NewEvent("E", b"x" * 200) for _ in range(80)],
        0,
    )
    benchmark.extra_info["events"] = 80
    benchmark(store.read, game_id)


# --- Koi-Koi ----------------------------------------------------------------------------------

from croupier.engine.koikoi import KoiKoiGame  # noqa: E402
from croupier.engine.koikoi.rules import rules_for as koikoi_rules  # noqa: E402
from croupier.engine.koikoi.state import Phase as KoiKoiPhase  # noqa: E402
from croupier.engine.koikoi.yaku import yaku  # noqa: E402

KOIKOI = KoiKoiGame()


def recorded_match(seed: int = 1):
    rules = koikoi_rules("nintendo", {}, 2)
    events = KOIKOI.start(rules, 2, SEEDS)
    state = fold(KOIKOI, events)
    states = [state]
    rng = random.Random(seed)
    while not KOIKOI.is_finished(state):
        seat = state.turn if state.phase is not KoiKoiPhase.ROUND_OVER else 0
        new = KOIKOI.decide(
            state, seat, rng.choice(KOIKOI.legal_commands(state, seat)), Context(SEEDS)
        )
        state = fold(KOIKOI, new, state)
        events += new
        states.append(state)
    return events, states


KK_EVENTS, KK_STATES = recorded_match()


def test_koikoi_legal_moves(benchmark) -> None:
    state = next(s for s in KK_STATES[3:] if s.phase is KoiKoiPhase.PLAY)
    benchmark(KOIKOI.legal_commands, state, state.turn)


def test_koikoi_yaku_of_a_full_pile(benchmark) -> None:
    pile = max((c for s in KK_STATES for c in s.captured), key=len)
    benchmark(yaku, pile, KK_STATES[0].rules)


def test_koikoi_fold_a_whole_match(benchmark) -> None:
    benchmark(fold, KOIKOI, KK_EVENTS)


# --- Gin Rummy and Rummy with jokers ----------------------------------------------------------

from croupier.engine.gin.rules import STANDARD as GIN_STANDARD  # noqa: E402
from croupier.engine.meld_solver import GIN as GIN_MELDS  # noqa: E402
from croupier.engine.meld_solver import best_melds  # noqa: E402
from croupier.engine.rummy import RummyGame  # noqa: E402
from croupier.engine.rummy.rules import rules_for as rummy_rules  # noqa: E402
from croupier.engine.rummy.state import Phase as RummyPhase  # noqa: E402

RUMMY = RummyGame()


def test_gin_least_deadwood_of_eleven_cards(benchmark) -> None:
    hand = ("AS", "2S", "3S", "4S", "5S", "5H", "5D", "9C", "TC", "JC", "QC")
    from croupier.engine.meld_solver import clear_cache

    benchmark(lambda: (clear_cache(), best_melds(hand, GIN_MELDS)))


def test_gin_legal_moves_discard_phase(benchmark) -> None:
    from croupier.engine.gin.moves import legal_commands
    from croupier.engine.gin.state import GinState
    from croupier.engine.gin.state import Phase as GinPhase

    state = GinState(
        rules=GIN_STANDARD,
        hand=1,
        turn=0,
        phase=GinPhase.DISCARD,
        hands=(
            ("AS", "2S", "3S", "4H", "5H", "6H", "9C", "9D", "9H", "2D", "KS"),
            ("7C", "7D", "7S", "3D", "4D", "TS", "JS", "QS", "7H", "8H"),
        ),
        stock=("8C", "9S", "TC"),
        discards=("5C",),
    )
    benchmark(legal_commands, state, 0)


def recorded_rummy(seed: int = 1):
    rules = rummy_rules("standard", {}, 4)
    events = RUMMY.start(rules, 4, SEEDS)
    state = fold(RUMMY, events)
    states = [state]
    rng = random.Random(seed)
    while not RUMMY.is_finished(state):
        legal = RUMMY.legal_commands(state, state.turn)
        new = RUMMY.decide(state, state.turn, rng.choice(legal), Context(SEEDS))
        state = fold(RUMMY, new, state)
        events += new
        states.append(state)
    return events, states


RUMMY_EVENTS, RUMMY_STATES = recorded_rummy()


def test_rummy_legal_moves_play_phase(benchmark) -> None:
    from croupier.engine.rummy.moves import clear_cache

    state = max(
        (s for s in RUMMY_STATES if s.phase is RummyPhase.PLAY), key=lambda s: len(s.hands[s.turn])
    )
    # Cold: nothing the meld solver or the legal moves found before is kept.
    benchmark(lambda: (clear_cache(), RUMMY.legal_commands(state, state.turn)))


def test_rummy_legal_moves_play_phase_warm(benchmark) -> None:
    state = max(
        (s for s in RUMMY_STATES if s.phase is RummyPhase.PLAY), key=lambda s: len(s.hands[s.turn])
    )
    benchmark(RUMMY.legal_commands, state, state.turn)


def test_rummy_legal_moves_over_a_game(benchmark) -> None:
    from croupier.engine.rummy.moves import clear_cache

    benchmark.extra_info["states"] = len(RUMMY_STATES)  # the figure per state: mean ÷ states
    benchmark(_over_a_game, RUMMY, RUMMY_STATES, clear_cache)


def test_rummy_fold_a_whole_game(benchmark) -> None:
    benchmark(fold, RUMMY, RUMMY_EVENTS)
