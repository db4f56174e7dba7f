"""A replicated deployment, proven here: three `croupier serve` processes on one PostgreSQL
database (the same secrets), bots playing through a client-side round-robin while the test kills
(SIGKILL, and once SIGTERM) and restarts replicas. Every acknowledged command survives, streams
move to a live replica and resume from their version (no gap, no duplicate), and no chain forks.

The bots use gRPC's own client-side balancing: a ``round_robin`` policy over an ``ipv4:`` list
of the replicas, with a retry policy for UNAVAILABLE and CANCELLED (a call that met a dying
replica is sent again; SubmitCommand is safe to retry, its command id applies it once). gRPC's
client ends some calls caught by a replica's death CANCELLED rather than UNAVAILABLE (no replica
logged those calls at all; grpc/grpc#41785 reports the same of calls not yet handed to a handler
at shutdown), so a client that did not cancel a call itself treats CANCELLED as UNAVAILABLE. The streams use a
channel per replica, picking in turn: on UNAVAILABLE they resume on the next one after the last
version they got.
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from croupier.app.tokens import mint_studio_token
from croupier.service.bots import auth, clock_rules, finish_game, play_game
from croupier.v1 import common_pb2, hoola_pb2, service_pb2, service_pb2_grpc
from tests.service.processes import STUDIO_SECRET, Served, launch, listening, serve, stop
from tests.service.test_grpc import verify_chain

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

REPLICAS = 3
BOTS = 3
#: Commands acknowledged between two steps of the chaos: the service goes on meanwhile.
PROGRESS = 25
WAIT_S = 60.0
FAR_AHEAD_S = 4_000_000_000
#: Reconnect to a restarted replica within half a second (gRPC's default backoff grows to 2 min).
RECONNECT = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 500),
]
ROUND_ROBIN = json.dumps(
    {
        "loadBalancingConfig": [{"round_robin": {}}],
        "methodConfig": [
            {
                "name": [{"service": "croupier.v1.GameService"}],
                "retryPolicy": {
                    "maxAttempts": 5,
                    "initialBackoff": "0.1s",
                    "maxBackoff": "1s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE", "CANCELLED"],
                },
            }
        ],
    }
)
KINDS = [common_pb2.GAME_KIND_HOOLA, common_pb2.GAME_KIND_GIN, common_pb2.GAME_KIND_RUMMY]
SEATS = {common_pb2.GAME_KIND_HOOLA: 3, common_pb2.GAME_KIND_GIN: 2, common_pb2.GAME_KIND_RUMMY: 3}


def _until(done: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _rules(kind: common_pb2.GameKind.ValueType) -> service_pb2.Rules:
    one_round = service_pb2.Rules(hoola=hoola_pb2.HoolaRules(rounds=1))
    return clock_rules(kind, one_round if kind == common_pb2.GAME_KIND_HOOLA else None, 0)


class Acks(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Every SubmitCommand the service acknowledged: (game, command id, version after it)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: list[tuple[str, str, int]] = []

    def __len__(self) -> int:
        with self.lock:
            return len(self.acked)

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        outcome = continuation(details, request)
        if details.method.endswith("/SubmitCommand") and outcome.exception() is None:
            with self.lock:
                self.acked.append((request.game_id, request.command_id, outcome.result().version))
        return outcome


@dataclass
class Follower:
    """One seat's StreamEvents of a game from version 0 to its end, over the replicas in turn."""

    game_id: str
    token: str
    replica: int
    versions: list[int] = field(default_factory=list)
    #: How each stream before the last ended: its replica, code, reason, the after_version its
    #: status said, and the last version it had sent.
    breaks: list[tuple[int, grpc.StatusCode, str, str, int]] = field(default_factory=list)
    failure: str = ""
    done: threading.Event = field(default_factory=threading.Event)

    def run(self, stubs: list[service_pb2_grpc.GameServiceStub]) -> None:
        try:
            while len(self.breaks) < 50:
                after = self.versions[-1] if self.versions else 0
                stream = stubs[self.replica].StreamEvents(
                    service_pb2.StreamEventsRequest(game_id=self.game_id, after_version=after),
                    metadata=auth(self.token),
                    timeout=WAIT_S,
                )
                try:
                    for response in stream:
                        self.versions.append(response.event.version)
                    return  # the game is over and every event is out
                except grpc.RpcError as error:
                    if error.code() != grpc.StatusCode.UNAVAILABLE:
                        self.failure = f"{error.code()}: {error.details()}"
                        return
                    reason, metadata = _reason(error)
                    last = self.versions[-1] if self.versions else 0
                    self.breaks.append((self.replica, error.code(), reason, metadata, last))
                    self.replica = (self.replica + 1) % len(stubs)  # the next one, in turn
            self.failure = "too many breaks"
        finally:
            self.done.set()


def _reason(error: grpc.RpcError) -> tuple[str, str]:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    info = error_details_pb2.ErrorInfo()
    for detail in status.details if status is not None else ():
        if detail.Is(info.DESCRIPTOR):
            detail.Unpack(info)
    return info.reason, info.metadata.get("after_version", "")


def test_replicas_on_one_database_survive_kills_and_restarts(
    postgres_url: str, tmp_path: Path
) -> None:
    starts = [0] * REPLICAS
    grace = ("--shutdown-grace", "5")

    def start(index: int, address: str = "127.0.0.1:0") -> Served:
        starts[index] += 1
        log = tmp_path / f"replica-{index}-{starts[index]}.log"
        return serve(log, postgres_url, *grace, address=address)

    # The first three start together (the schema is migrated once, under its lock).
    logs = [tmp_path / f"replica-{i}-0.log" for i in range(REPLICAS)]
    launched = [launch(log, postgres_url, *grace) for log in logs]
    replicas = [listening(process, log) for process, log in zip(launched, logs, strict=True)]
    addresses = [r.address for r in replicas]
    balanced = grpc.intercept_channel(
        grpc.insecure_channel(
            "ipv4:" + ",".join(addresses),
            options=[("grpc.service_config", ROUND_ROBIN), *RECONNECT],
        ),
        acks := Acks(),
    )
    grpc.channel_ready_future(balanced).result(timeout=WAIT_S)
    stubs = [
        service_pb2_grpc.GameServiceStub(grpc.insecure_channel(a, options=RECONNECT))
        for a in addresses
    ]
    studio = mint_studio_token(STUDIO_SECRET, FAR_AHEAD_S)
    followers: list[Follower] = []
    threads: list[threading.Thread] = []
    failures: list[BaseException] = []
    turn = iter(range(1_000_000))

    def follow(game_id: str, token: str, replica: int) -> Follower:
        follower = Follower(game_id, token, replica)
        followers.append(follower)
        thread = threading.Thread(target=follower.run, args=(stubs,), daemon=True)
        threads.append(thread)
        thread.start()
        return follower

    def background(work: Callable[[], object]) -> threading.Thread:
        def run() -> None:
            try:
                work()
            except BaseException as error:  # reported by the main thread
                failures.append(error)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    calm = threading.Event()

    def bot(number: int) -> None:
        rng = random.Random(number)
        while not calm.is_set():
            kind = KINDS[next(turn) % len(KINDS)]
            play_game(
                balanced,
                studio=studio,
                seats=SEATS[kind],
                kind=kind,
                overrides=_rules(kind),
                rng=rng,
                on_created=watch,
            )

    def watch(created: service_pb2.CreateGameResponse) -> None:
        follow(created.game_id, created.tokens[0].token, next(turn) % REPLICAS)

    def progress(what: str) -> None:
        """Wait for ``PROGRESS`` more acknowledged commands (a bot's failure ends the wait)."""
        floor = len(acks) + PROGRESS
        _until(lambda: len(acks) >= floor or bool(failures), what)
        assert not failures, failures

    bots = [background(lambda n=n: bot(n)) for n in range(BOTS)]
    sentinels: list[tuple[Follower, int, int]] = []
    try:
        for victim, signum in ((0, signal.SIGKILL), (1, signal.SIGTERM), (2, signal.SIGKILL)):
            progress("the bots' progress")
            # A stream surely on the victim: a new game's, watched there, played after the kill.
            created = service_pb2_grpc.GameServiceStub(balanced).CreateGame(
                service_pb2.CreateGameRequest(
                    kind=common_pb2.GAME_KIND_HOOLA, seats=3, overrides=_rules(KINDS[0])
                ),
                metadata=auth(studio),
            )
            sentinel = follow(created.game_id, created.tokens[0].token, victim)
            _until(lambda s=sentinel: bool(s.versions), "the sentinel's first events")
            replicas[victim].process.send_signal(signum)
            graceful = signum == signal.SIGTERM
            assert replicas[victim].process.wait(timeout=WAIT_S) == (0 if graceful else -signum)
            sentinels.append((sentinel, victim, signum))
            tokens = [t.token for t in created.tokens]
            background(lambda g=created.game_id, t=tokens: finish_game(balanced, g, t))
            progress("progress without a replica")  # the service goes on without the victim
            replicas[victim] = start(victim, addresses[victim])
        calm.set()
        for thread in bots:
            thread.join(timeout=WAIT_S)
        for follower in followers:
            assert follower.done.wait(WAIT_S), f"the stream of {follower.game_id} never ended"
        assert not failures, failures
        # Every game read back (from the replicas in turn) and held against what clients saw.
        reader = service_pb2_grpc.GameServiceStub(balanced)
        replays = {
            f.game_id: reader.GetReplay(service_pb2.GetReplayRequest(game_id=f.game_id))
            for f in followers
        }
    finally:
        calm.set()
        for replica in replicas:
            stop(replica)
    check_games(replays, acks, followers, sentinels)


def check_games(
    replays: dict[str, service_pb2.GetReplayResponse],
    acks: Acks,
    followers: list[Follower],
    sentinels: list[tuple[Follower, int, int]],
) -> None:
    assert len(replays) >= BOTS + 3 and len(acks.acked) >= 6 * PROGRESS
    for game_id, replay in replays.items():
        verify_chain(replay)  # one chain: every event links to the one before, no fork
        versions = [e.version for e in replay.events]
        assert versions == list(range(1, len(versions) + 1)), game_id
    # Every acknowledged command is in its game's log, ending at the version it was told.
    for game_id, command_id, version in acks.acked:
        recorded = [e.version for e in replays[game_id].events if e.command_id == command_id]
        assert recorded and recorded[-1] == version, (game_id, command_id, version)
        assert recorded == list(range(recorded[0], version + 1))
    # Every stream saw its game's whole log, once, in order, whichever replicas it went through.
    for follower in followers:
        assert not follower.failure, follower.failure
        replay = replays[follower.game_id]
        assert follower.versions == [e.version for e in replay.events], follower.game_id
    for sentinel, victim, signum in sentinels:
        assert sentinel.breaks, "the victim's stream did not move"
        replica, code, reason, after, last = sentinel.breaks[0]
        assert replica == victim and code == grpc.StatusCode.UNAVAILABLE and last > 0
        if signum == signal.SIGTERM:  # a graceful end says where to resume
            assert (reason, after) == ("SERVER_SHUTTING_DOWN", str(last))
        assert sentinel.versions[-1] == replays[sentinel.game_id].events[-1].version
