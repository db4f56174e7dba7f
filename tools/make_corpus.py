"""Record the compatibility corpus: a finished game of every kind and preset, played by bots
through the service itself and exported as replay files.

    .venv/bin/python tools/make_corpus.py replays/corpus/log-format-2

Each log format has its folder (the files of log format 1 are ``replays/corpus/*.replay``); games
are recorded in the running service's format, so record into the folder of the current one.

Files already in the corpus are never rewritten: once there, a replay must keep verifying in every
later version (replays/corpus/README.md). Run this to add the games of a new kind, preset or rule.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import grpc

from croupier.app.tokens import KeyRing, TokenSigner, mint_studio_token
from croupier.log import LOG_FORMAT_VERSION
from croupier.replays.format import from_binary
from croupier.service.bots import auth, choose, play_game
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import (
    common_pb2,
    gin_pb2,
    hoola_pb2,
    koikoi_pb2,
    rummy_pb2,
    service_pb2,
    service_pb2_grpc,
)

HOOLA, KOIKOI, GIN, RUMMY = (
    common_pb2.GAME_KIND_HOOLA,
    common_pb2.GAME_KIND_KOIKOI,
    common_pb2.GAME_KIND_GIN,
    common_pb2.GAME_KIND_RUMMY,
)


def hoola(rules: hoola_pb2.HoolaRules) -> service_pb2.Rules:
    return service_pb2.Rules(hoola=rules)


# file name: (kind, seats, preset, overrides)
GAMES: dict[str, tuple[common_pb2.GameKind.ValueType, int, str, service_pb2.Rules | None]] = {
    "hoola-korean": (HOOLA, 4, "korean", None),
    "hoola-international": (HOOLA, 3, "international", None),
    "hoola-winjoy": (HOOLA, 5, "winjoy", hoola(hoola_pb2.HoolaRules(rounds=2))),
    "hoola-pmang": (HOOLA, 4, "pmang", hoola(hoola_pb2.HoolaRules(jokers=2))),
    "hoola-hangame": (
        HOOLA,
        3,
        "hangame",
        hoola(hoola_pb2.HoolaRules(jokers=1, seven_binding=True)),
    ),
    "hoola-korean-sit-out-7": (
        HOOLA,
        7,
        "korean",
        hoola(hoola_pb2.HoolaRules(sit_out=True, max_seats=7)),
    ),
    "hoola-korean-nearest-claims": (
        HOOLA,
        4,
        "korean",
        hoola(
            hoola_pb2.HoolaRules(
                out_of_turn_thank_you=True,
                claim_priority=hoola_pb2.CLAIM_PRIORITY_NEAREST_IN_TURN,
                claim_window_ms=40,
                rounds=3,
            )
        ),
    ),
    "koikoi-nintendo-3": (KOIKOI, 2, "nintendo-3", None),
    "koikoi-nintendo-6": (KOIKOI, 2, "nintendo-6", None),
    "koikoi-nintendo": (
        KOIKOI,
        2,
        "nintendo",
        service_pb2.Rules(koikoi=koikoi_pb2.KoiKoiRules(stake_per_point=2)),
    ),
    "gin-standard": (GIN, 2, "standard", service_pb2.Rules(gin=gin_pb2.GinRules(match_points=40))),
    "gin-single-hand": (GIN, 2, "single-hand", None),
    "gin-big-gin": (GIN, 2, "big-gin", service_pb2.Rules(gin=gin_pb2.GinRules(match_points=30))),
    "rummy-standard": (RUMMY, 4, "standard", None),
    "rummy-open-30": (RUMMY, 2, "open-30", None),
    "rummy-open-51": (
        RUMMY,
        3,
        "open-51",
        service_pb2.Rules(rummy=rummy_pb2.RummyRules(max_reshuffles=2)),
    ),
    # Recorded with the options added for the rule corners of issue 14 (every preset sets them):
    # named set jokers, 7-binding as a meld, going out by a discard; the knocker's melds, named
    # or the knocker-best; the high-ace reading of Rummy runs.
    "hoola-international-corners": (
        HOOLA,
        3,
        "international",
        hoola(hoola_pb2.HoolaRules(jokers=2, seven_binding=True, seven_binding_is_meld=True)),
    ),
    "gin-standard-corners": (
        GIN,
        2,
        "standard",
        service_pb2.Rules(gin=gin_pb2.GinRules(match_points=60)),
    ),
    "rummy-standard-corners": (RUMMY, 2, "standard", None),
    # Recorded with first_dealer_drawn (every preset sets it): the first dealer drawn from the
    # first-dealer shuffle, each seat turning a card (RoundDealt.dealer_draws), rather than read
    # off the deal's last card, the stock's bottom.
    "hoola-korean-first-dealer-drawn": (HOOLA, 5, "korean", hoola(hoola_pb2.HoolaRules(rounds=2))),
    "rummy-standard-first-dealer-drawn": (RUMMY, 3, "standard", None),
}


# Games on the turn clock with idle seats (issue 11): the seats never send a command, so the
# service's sweeper records their time-outs and forced moves (batches ``tick:<version>``), and
# the corpus holds time-outs, away seats, banks and forfeits. The turn time is short so that a
# game records in a moment; file name: (kind, seats, preset, overrides with the clock, idle).
TURN_MS = 100
TIMED: dict[
    str,
    tuple[common_pb2.GameKind.ValueType, int, str, service_pb2.Rules, frozenset[int]],
] = {
    "gin-single-hand-timed": (
        GIN,
        2,
        "single-hand",
        service_pb2.Rules(gin=gin_pb2.GinRules(turn_time_ms=TURN_MS, time_bank_ms=150)),
        frozenset({1}),
    ),
    # Recorded with forced_discard_by_rank (every preset sets it): the idle seat's forced
    # discards let the highest rank go among equals (it never takes the discard at the wall, so
    # the forced knock there is held to by tests/gin/test_forced.py, not by this game). Recorded
    # before forced_lay_off_best: its idle defender's forced lay-offs are the legal-move list's
    # first (one, 6H out of its set of sixes, the option would now play otherwise).
    "gin-standard-timed": (
        GIN,
        2,
        "standard",
        service_pb2.Rules(
            gin=gin_pb2.GinRules(turn_time_ms=TURN_MS, time_bank_ms=150, match_points=25)
        ),
        frozenset({1}),
    ),
    "koikoi-nintendo-3-timed": (
        KOIKOI,
        2,
        "nintendo-3",
        service_pb2.Rules(koikoi=koikoi_pb2.KoiKoiRules(turn_time_ms=TURN_MS)),
        frozenset({0}),
    ),
    "rummy-standard-timed": (
        RUMMY,
        4,
        "standard",
        service_pb2.Rules(rummy=rummy_pb2.RummyRules(turn_time_ms=TURN_MS)),
        frozenset({2}),
    ),
    "hoola-korean-timed": (
        HOOLA,
        3,
        "korean",
        service_pb2.Rules(
            hoola=hoola_pb2.HoolaRules(turn_time_ms=TURN_MS, time_bank_ms=150, rounds=2)
        ),
        frozenset({1}),
    ),
    "hoola-korean-timed-forfeit": (
        HOOLA,
        4,
        "korean",
        service_pb2.Rules(
            hoola=hoola_pb2.HoolaRules(
                turn_time_ms=TURN_MS, max_timeouts=2, forfeit_when_away=True, rounds=2
            )
        ),
        frozenset({3}),
    ),
    # Recorded with forced_play_least (a house rule: the presets keep to the rules' first card):
    # the idle seat's forced plays give away as little as they can (a capture first, the least
    # valuable kind).
    "koikoi-nintendo-3-timed-forced-play-least": (
        KOIKOI,
        2,
        "nintendo-3",
        service_pb2.Rules(
            koikoi=koikoi_pb2.KoiKoiRules(turn_time_ms=TURN_MS, forced_play_least=True)
        ),
        frozenset({1}),
    ),
    "rummy-standard-timed-forfeit": (
        RUMMY,
        4,
        "standard",
        service_pb2.Rules(
            rummy=rummy_pb2.RummyRules(turn_time_ms=TURN_MS, max_timeouts=2, forfeit_when_away=True)
        ),
        frozenset({1}),
    ),
}


# Games nobody plays (docs/rules/common.md §5.1, "A table nobody attends ends"): created on the
# turn clock and left alone, every seat times out until the game ends ABANDONED (Gin and Rummy,
# whose forced moves never end a game); file name: (kind, seats, preset, overrides).
NOBODY: dict[str, tuple[common_pb2.GameKind.ValueType, int, str, service_pb2.Rules]] = {
    "gin-standard-timed-abandoned": (
        GIN,
        2,
        "standard",
        service_pb2.Rules(gin=gin_pb2.GinRules(turn_time_ms=TURN_MS, max_timeouts=2)),
    ),
    "rummy-standard-timed-abandoned": (
        RUMMY,
        3,
        "standard",
        service_pb2.Rules(rummy=rummy_pb2.RummyRules(turn_time_ms=TURN_MS, max_timeouts=1)),
    ),
}
#: How long a game nobody plays may take to end before the recording gives up.
NOBODY_WAIT_S = 60.0


# Games nobody plays through an outage (outage_grace_ms, set by every preset): the service's
# clock jumps OUTAGE_MS as soon as the game is created, as if it had been down that long, so the
# first deadline is recorded late and restarts its seat's turn (TurnRestarted); then every seat
# times out until the game ends ABANDONED. The turn time leaves the jump time to land first.
OUTAGE_TURN_MS = 2_000
OUTAGE_MS = 10_000
OUTAGE: dict[str, tuple[common_pb2.GameKind.ValueType, int, str, service_pb2.Rules]] = {
    "gin-single-hand-timed-outage": (
        GIN,
        2,
        "single-hand",
        service_pb2.Rules(gin=gin_pb2.GinRules(turn_time_ms=OUTAGE_TURN_MS, max_timeouts=1)),
    ),
}


# Games the studio ended (EndGame, docs/rules/common.md §5.1) after some random moves: one of
# each kind, ended in the middle of a round or hand after others were scored (Koi-Koi, Gin,
# Hoola's table) or in its only round (Rummy); file name: (kind, seats, preset, overrides,
# moves before the end).
ENDED: dict[str, tuple[common_pb2.GameKind.ValueType, int, str, service_pb2.Rules, int]] = {
    "hoola-korean-ended-by-studio": (
        HOOLA,
        3,
        "korean",
        hoola(hoola_pb2.HoolaRules(rounds=3)),
        45,
    ),
    "koikoi-nintendo-3-ended-by-studio": (KOIKOI, 2, "nintendo-3", service_pb2.Rules(), 25),
    "gin-standard-ended-by-studio": (GIN, 2, "standard", service_pb2.Rules(), 200),
    "rummy-standard-ended-by-studio": (RUMMY, 3, "standard", service_pb2.Rules(), 9),
}


def _created(
    stub: service_pb2_grpc.GameServiceStub,
    studio: str,
    name: str,
    game: tuple[common_pb2.GameKind.ValueType, int, str, service_pb2.Rules],
) -> service_pb2.CreateGameResponse:
    """``game`` (kind, seats, preset, overrides) created with the file's name as its seed."""
    kind, seats, preset, overrides = game
    return stub.CreateGame(
        service_pb2.CreateGameRequest(
            kind=kind,
            preset=preset,
            seats=seats,
            client_seeds=[f"corpus {name}"],
            overrides=overrides,
        ),
        metadata=auth(studio),
    )


def ended_by_studio(
    stub: service_pb2_grpc.GameServiceStub,
    studio: str,
    name: str,
    game: tuple[common_pb2.GameKind.ValueType, int, str, service_pb2.Rules, int],
) -> str:
    """Create ``game``, play its number of the bots' moves, then end it as the studio; returns
    its id."""
    created = _created(stub, studio, name, game[:4])
    moves = game[4]
    rng = random.Random(name)
    for number in range(moves):
        listed = [
            (
                token,
                stub.ListLegalMoves(
                    service_pb2.ListLegalMovesRequest(game_id=created.game_id),
                    metadata=auth(token.token),
                ),
            )
            for token in created.tokens
        ]
        movers = [(token, answer) for token, answer in listed if answer.moves]
        token, answer = rng.choice(movers)
        done = stub.SubmitCommand(
            service_pb2.SubmitCommandRequest(
                game_id=created.game_id,
                command_id=f"move-{number}",
                expected_version=answer.version,
                command=choose(list(answer.moves), rng).command,
            ),
            metadata=auth(token.token),
        )
        if done.finished:
            raise RuntimeError(f"{name}: the game ended after {number + 1} moves: fewer moves")
    stub.EndGame(
        service_pb2.EndGameRequest(
            game_id=created.game_id, command_id="end", reason=f"corpus {name}"
        ),
        metadata=auth(studio),
    )
    return created.game_id


class MovedClock:
    """The service's clock: real time, plus however far a recording has moved it."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def __call__(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms


def left_alone(
    stub: service_pb2_grpc.GameServiceStub,
    studio: str,
    name: str,
    game: tuple[common_pb2.GameKind.ValueType, int, str, service_pb2.Rules],
    outage: Callable[[], None] = lambda: None,
) -> str:
    """Create ``game`` and wait, sending nothing, until the service's sweeper has ended it;
    returns its id. ``outage`` is called as soon as the game is created."""
    created = _created(stub, studio, name, game)
    outage()
    deadline = time.monotonic() + NOBODY_WAIT_S
    while time.monotonic() < deadline:
        view = stub.GetView(
            service_pb2.GetViewRequest(game_id=created.game_id),
            metadata=auth(created.tokens[0].token),
        )
        if view.finished:
            return created.game_id
        time.sleep(TURN_MS / 1000)
    raise RuntimeError(f"{name}: nobody played it and it did not end in {NOBODY_WAIT_S:g} s")


# Games whose bots also claim discards out of turn (battle Hoola), so that the corpus holds
# claims, claim windows and the awards time makes.
CLAIMING = {"hoola-international", "hoola-winjoy", "hoola-korean-nearest-claims"}


def _export(stub: service_pb2_grpc.GameServiceStub, game_id: str, path: Path) -> Path:
    """Write the finished game's replay to ``path``."""
    data = stub.ExportReplay(service_pb2.ExportReplayRequest(game_id=game_id)).replay
    from_binary(data)  # a whole replay, or fail here
    path.write_bytes(data)
    return path


def make(directory: Path) -> list[Path]:
    """Record every game of :data:`GAMES` not yet in ``directory``; returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as scratch:
        store = open_store(f"sqlite:///{Path(scratch) / 'corpus.sqlite3'}")
        studio = b"corpus-studio-" * 3
        clock = MovedClock()
        server = ServerThread(
            "127.0.0.1:0",
            store,
            TokenSigner(b"corpus-" * 5),
            clock=clock,
            studio_keys=KeyRing(studio),
        )
        port = server.start()
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = service_pb2_grpc.GameServiceStub(channel)
                games = {
                    **{name: (*game, frozenset[int]()) for name, game in GAMES.items()},
                    **TIMED,
                    **{name: (*game, frozenset(range(game[1]))) for name, game in NOBODY.items()},
                    **{name: (*game, frozenset(range(game[1]))) for name, game in OUTAGE.items()},
                }
                for name, ended in ENDED.items():
                    path = directory / f"{name}.replay"
                    if not path.exists():
                        token = mint_studio_token(studio, int(time.time()) + 3600)
                        game_id = ended_by_studio(stub, token, name, ended)
                        written.append(_export(stub, game_id, path))
                for name, (kind, seats, preset, overrides, idle) in games.items():
                    path = directory / f"{name}.replay"
                    if path.exists():
                        continue
                    if name in NOBODY or name in OUTAGE:

                        def down_a_while() -> None:
                            clock.offset_ms += OUTAGE_MS

                        game_id = left_alone(
                            stub,
                            mint_studio_token(studio, int(time.time()) + 3600),
                            name,
                            NOBODY.get(name) or OUTAGE[name],
                            down_a_while if name in OUTAGE else lambda: None,
                        )
                        written.append(_export(stub, game_id, path))
                        continue
                    result = play_game(
                        channel,
                        studio=mint_studio_token(studio, int(time.time()) + 3600),
                        seats=seats,
                        kind=kind,
                        preset=preset,
                        overrides=overrides,
                        rng=random.Random(name),
                        client_seed=f"corpus {name}",
                        claims=name in CLAIMING,
                        idle_seats=idle,
                    )
                    written.append(_export(stub, result.game_id, path))
        finally:
            server.stop(grace=None)
            store.close()
    return written


if __name__ == "__main__":  # pragma: no cover
    default = f"replays/corpus/log-format-{LOG_FORMAT_VERSION}"
    for path in make(Path(sys.argv[1] if len(sys.argv) > 1 else default)):
        print(f"recorded {path}")
