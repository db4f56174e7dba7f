"""The application core: every use case of the service, with no transport in it.

A command: check the caller's seat → load the game (one read: its row, the events since the cached
fold and the command id's first answer) → ``decide`` → append at the expected version (one write)
→ answer with the caller's copies of the events. Nothing is kept between calls that the log does
not hold: the cache of folded states is only a cache, and any process on the same store serves any
game. Transports (gRPC today) parse a request, call one method here and format the answer; errors
are the typed ones of :mod:`croupier.app.errors`.

This module holds creation, commands, the fold, time-outs and each seat's copy of a game. Two
collaborators hold the rest, each given only what it uses of the core, and are called through this
class's methods of the same names: the live streams (``subscribe``, ``play``) in
:mod:`croupier.app.streams`, and the replay use cases (``replay``, ``export_replay``,
``verify_replay``) in :mod:`croupier.app.replaying`. A game's state is typed
:class:`croupier.engine.game.GameState`: what the core reads of it itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import random
import secrets
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from croupier.app import limits, seedtickets, snapshots
from croupier.app.callers import (
    ANONYMOUS,
    Caller,
    at_table,
    player_of,
    seat_of,
    seat_or_spectator,
    studio_of,
    watcher,
)
from croupier.app.errors import (
    AppError,
    BadCredentials,
    BadRequest,
    NewerRelease,
    NotFound,
    NotNow,
    RateLimited,
    StaleVersion,
    from_rejection,
    invalid,
    log_failure,
    require,
    store_error,
)
from croupier.app.memo import Memo
from croupier.app.notifier import Notifier
from croupier.app.observer import (
    ACCEPTED,
    DUPLICATE,
    FROM_CACHE,
    FROM_LOG,
    FROM_SNAPSHOT,
    UNKNOWN_KIND,
    Observer,
    Unobserved,
    outcome_of,
)
from croupier.app.ratelimit import RateLimit, RateLimiter
from croupier.app.recent import RecentEvents
from croupier.app.replaying import Replays
from croupier.app.runner import AsyncLog, Rank
from croupier.app.streams import JOIN_TIMEOUT_S as JOIN_TIMEOUT_S
from croupier.app.streams import MAX_STREAMS_PER_TOKEN as MAX_STREAMS_PER_TOKEN
from croupier.app.streams import PLAY_OUTBOX_LIMIT as PLAY_OUTBOX_LIMIT
from croupier.app.streams import Refused as Refused
from croupier.app.streams import Streams

if TYPE_CHECKING:
    from croupier.app.sweeper import Sweeper
from croupier.app.tokens import (
    PLAYER_PREFIX,
    STUDIO_PREFIX,
    AuthError,
    KeyRing,
    TokenSigner,
    verify_player_token,
    verify_studio_token,
)
from croupier.contract import convert
from croupier.contract.bindings import (
    BINDINGS,
    BY_NAME,
    GameBinding,
    from_newer_release,
    holds_unknown,
)
from croupier.contract.rejections import rejection
from croupier.engine import ENGINE_VERSION
from croupier.engine.clock import NO_SEAT, TurnRestarted, TurnTimedOut
from croupier.engine.game import CommandError, Context, GameState, InvalidRules
from croupier.engine.settlement import Settlement
from croupier.engine.shared import replaced
from croupier.engine.shuffle import Seeds
from croupier.log import (
    CREATE_COMMAND_ID,
    STUDIO_COMMAND_PREFIX,
    TICK_PREFIX,
    AlreadyCreated,
    CommandResult,
    CreateRequest,
    EventStore,
    GameNotFound,
    GameRecord,
    Loaded,
    NewEvent,
    StoredEvent,
    TicketUsed,
    VersionConflict,
)
from croupier.replays.format import complete_event
from croupier.replays.signing import ReplayKeys, SignatureCheck
from croupier.replays.verify import Report
from croupier.v1 import common_pb2, service_pb2

log = structlog.get_logger("croupier.app")

#: Milliseconds since the epoch, now. Injected so that tests move time instead of sleeping.
Clock = Callable[[], int]
#: 32 fresh secret bytes: a game's server seed.
SeedSource = Callable[[], bytes]

# How many finished games a player's recall lists.
RECENT_GAMES = 10
# This often the process reads the versions of every game it streams (one read for them all):
# an append it was not told of (a notice lost while its listener reconnected) is seen by then.
STREAM_RECHECK_S = 5.0
TICK = TICK_PREFIX
# How long closing waits for background writes.
CLOSE_WAIT_S = 5.0
# A game recorded by a newer release (a rolling upgrade): asked again after this long, by when
# the client may reach a newer replica (or this one, upgraded).
NEWER_RELEASE_RETRY_MS = 1000
# Events as each seat may see them, remembered (by game, version, seat and whether it is over).
PRESENTED_MEMO_SIZE = 16384
# Events decoded, and complete as seats who may see all of them get them (by game and version):
# every seat's copy is worked out from one decoding, within moments of the others.
DECODED_MEMO_SIZE = 4096
# Seats' legal moves remembered (by game, version and seat).
MOVES_MEMO_SIZE = 8192
# Views remembered (by game, version and seat or spectator): every spectator of a game, and each
# stream of one seat, is pushed the same view after a move.
VIEWS_MEMO_SIZE = 4096
# The seats to act remembered (by game, version and seat or spectator: a seat is told less of
# the others than of itself where a hand decides it).
TO_ACT_MEMO_SIZE = 8192
# Folded games kept in memory (most recently used first out last).
CACHE_SIZE = 2048
#: How long the studio's EndGame without an expected version keeps trying while moves land
#: first (each try reads the game again: on a table whose seats move every few milliseconds a
#: handful of tries in a row can lose), and the most it pauses between tries (a random share of
#: it, so as not to meet the next move in step).
END_TRYING_S = 2.0
END_PAUSE_S = 0.02


def _fingerprint(seat: int, command: bytes) -> bytes:
    """What a command id is used for: the acting seat and the command's deterministic bytes."""
    return hashlib.sha256(b"%d:" % seat + command).digest()


def _request_fingerprint(
    kind: common_pb2.GameKind.ValueType,
    rules: service_pb2.Rules,
    seats: int,
    client_seeds: Sequence[str],
    players: Sequence[str],
    seed_ticket: str = "",
) -> bytes:
    """What a CreateGame request id is used for: the game it asks for, as resolved (the kind,
    the seat count and every rule after the preset and the overrides, the seeds, the players,
    the seed ticket), so that a retry matches its first attempt however it spells the same game
    (a default seat count sent or left out, an empty overrides message), and no other game does.
    Without a ticket, the same bytes as before tickets (an empty field is not serialized)."""
    asked = service_pb2.CreateGameRequest(
        kind=kind,
        seats=seats,
        overrides=rules,
        client_seeds=client_seeds,
        players=players,
        seed_ticket=seed_ticket,
    )
    return hashlib.sha256(asked.SerializeToString(deterministic=True)).digest()


def _check_command_id(command_id: str) -> None:
    """A client's command id: given, not too long, not one of the service's own (ticks, the
    opening batch's, the studio's namespace)."""
    require(command_id, "command_id")
    limits.check_text(command_id, "command_id", limits.MAX_COMMAND_ID)
    for prefix in (TICK, STUDIO_COMMAND_PREFIX):
        if command_id.startswith(prefix):
            raise invalid(
                "RESERVED_COMMAND_ID",
                f"command ids starting {prefix!r} are the service's",
                "command_id",
            )
    if command_id == CREATE_COMMAND_ID:
        # A fold tells batches apart by their ids: a seat's first move under the deal's id would
        # fold as part of the deal, its turn clock never charged and the next seat's started at
        # the deal (another replica, or a restart, would time that seat out early).
        raise invalid(
            "RESERVED_COMMAND_ID",
            f"the command id {CREATE_COMMAND_ID!r} is the service's (a game's opening events)",
            "command_id",
        )


def _accepted(answer: CommandResult, fingerprint: bytes) -> None:
    """Refuse what a command's answer says was not accepted: its refusal, or, for a retry of
    another command (or from another seat) under its id, ``COMMAND_ID_REUSED``. A retry repeats
    its command; the same id for another is a client's bug, which the first answer would hide."""
    if answer.duplicate and answer.fingerprint and answer.fingerprint != fingerprint:
        raise invalid(
            "COMMAND_ID_REUSED",
            "this command id was already used for another command in this game",
            "command_id",
        )
    if not answer.accepted:
        raise from_rejection(common_pb2.Rejection.FromString(answer.rejection or b""))


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def fresh_seed() -> bytes:
    return secrets.token_bytes(32)


@dataclass(frozen=True)
class Parts:
    """The parts of a game an answer carries for one seat, as asked (``Include``)."""

    view: service_pb2.View | None
    legal_moves: list[service_pb2.LegalMove]
    to_act: list[service_pb2.SeatToAct]


@dataclass(frozen=True)
class Applied:
    """A seat's command answered (accepted now, or a retry given its first answer), with the game
    to answer it from: ``state`` at ``state_version`` (a retry's: the game as it stands now)."""

    seat: int
    answer: CommandResult
    folded: Folded
    finished: bool
    state: GameState
    state_version: int


@dataclass(frozen=True)
class Folded:
    """A game folded up to ``version``: its engine state and its own events so far."""

    record: GameRecord
    binding: GameBinding
    state: GameState
    version: int
    #: The game's own events so far; ``None`` when it was read from a snapshot (which holds the
    #: state only): :meth:`Croupier._with_events` reads them when a use case needs them.
    events: tuple[Any, ...] | None
    #: When the last event was recorded (a finished game: when it ended).
    last_at_ms: int
    #: The version of its latest snapshot in the store (0: none known).
    snapshot_version: int = 0

    @property
    def seeds(self) -> Seeds:
        return Seeds(self.record.server_seed, self.state.client_seeds)

    # What the state says of time, worked out once per fold (states are immutable): every seat's
    # stream asks after each move whether a turn ran out and whether anything is due.

    @functools.cached_property
    def deadline(self) -> int | None:
        """When time next makes something due in the game (``None``: nothing will)."""
        return self.binding.game.next_deadline(self.state)

    @functools.cached_property
    def turn_deadline(self) -> int | None:
        """When the first seat's turn time (and bank) runs out (``None``: none is on the clock)."""
        clocks = self.binding.game.seat_clocks(self.state)
        return min((c.deadline_ms for c in clocks), default=None)


class FoldCache:
    """Folded games by id (LRU; states are immutable). Only this process's memory: a miss or an
    older entry is completed from the log."""

    def __init__(self, size: int = CACHE_SIZE, observer: Observer | None = None) -> None:
        self._items: Memo[str, Folded] = Memo(size)
        self._observer = observer or Unobserved()

    def get(self, game_id: str) -> Folded | None:
        folded = self._items.get(game_id)
        self._observer.cache_lookup(folded is not None)
        return folded

    def peek(self, game_id: str) -> Folded | None:
        """The game if it is held, neither counted as a lookup nor made the most recent."""
        return self._items.peek(game_id)

    def put(self, folded: Folded) -> None:
        """Keep ``folded`` unless a newer fold of the game is kept already."""
        old = self._items.peek(folded.record.game_id)
        if old is None or old.version <= folded.version:
            self._items.put(folded.record.game_id, folded)
            self._observer.cache_size(len(self._items))


def _new_events(binding: GameBinding, events: Sequence[Any]) -> list[NewEvent]:
    """Engine events as log records: the type name and the deterministic body bytes."""
    return [
        NewEvent(type(e).__name__, binding.event_to_body(e).SerializeToString(deterministic=True))
        for e in events
    ]


def _decode(binding: GameBinding, stored: StoredEvent) -> Any | None:
    """The engine event a stored event holds (``None`` for the service's own, the seed); a game a
    newer release recorded is not played on by this one (:class:`NewerRelease`)."""
    body = service_pb2.EventBody.FromString(stored.payload)
    if from_newer_release(body, whole=stored.version == 1):  # the first holds the rules
        raise NewerRelease(stored.game_id, NEWER_RELEASE_RETRY_MS)
    if body.WhichOneof("body") != binding.field:
        return None
    try:
        return binding.event_from_body(body)
    except convert.UnknownEnumValue:
        # A value a newer contract added to an enum (a new outcome, a new rule option's choice):
        # kept by protobuf as a bare number, which no check of unknown fields sees.
        raise NewerRelease(stored.game_id, NEWER_RELEASE_RETRY_MS) from None


def _settlement(settlement: Settlement) -> common_pb2.Settlement:
    message = common_pb2.Settlement()
    convert.fill(message, settlement)
    return message


def _binding(kind: common_pb2.GameKind.ValueType) -> GameBinding:
    binding = BINDINGS.get(kind)
    if binding is None:
        raise invalid("UNKNOWN_GAME_KIND", "kind must name a game kind", "kind")
    return binding


class Croupier:
    """The service's use cases. One per process; every method is safe to call concurrently."""

    def __init__(
        self,
        store: EventStore,
        signer: TokenSigner,
        clock: Clock = now_ms,
        seed_source: SeedSource = fresh_seed,
        use_snapshots: bool = True,
        rate_limit: RateLimit | None = None,
        *,
        studio_keys: KeyRing,
        observer: Observer | None = None,
        replay_keys: ReplayKeys | None = None,
        join_timeout_s: float = JOIN_TIMEOUT_S,
    ) -> None:
        self.store = store
        # Behind :attr:`replay_keys`, which the replay use cases share (set through it).
        self._replay_keys = replay_keys or ReplayKeys()
        #: Told of commands, folds, the cache and time-outs (the service's metrics).
        self.observer: Observer = observer or Unobserved()
        #: Each seat's allowance of commands (a token bucket per seat).
        self.rate = RateLimiter(rate_limit or RateLimit())
        #: The studio's keys: they verify studio tokens (CreateGame) and player tokens (recall).
        self.studio_keys = studio_keys
        #: Called with each deadline this process records and its game (the sweeper's alarm).
        self.on_deadline: Callable[[int, str], None] | None = None
        self.sweeper: Sweeper | None = None
        #: Whether games are read from and saved as snapshots (off: always folded from the log).
        self.use_snapshots = use_snapshots
        self.log = AsyncLog(store)
        self.signer = signer
        self.clock = clock
        self.seed_source = seed_source
        # Behind :attr:`cache` and :attr:`recent`, which the streams share (set through them).
        self._cache = FoldCache(observer=self.observer)
        self._recent = RecentEvents()
        self.presented: Memo[tuple[str, int, int | None, bool], service_pb2.GameEvent] = Memo(
            PRESENTED_MEMO_SIZE
        )
        self.decoded: Memo[tuple[str, int], tuple[Any | None, service_pb2.GameEvent]] = Memo(
            DECODED_MEMO_SIZE
        )
        self.moves_memo: Memo[tuple[str, int | None, int], list[service_pb2.LegalMove]] = Memo(
            MOVES_MEMO_SIZE
        )
        self.to_act_memo: Memo[tuple[str, int, int | None], list[service_pb2.SeatToAct]] = Memo(
            TO_ACT_MEMO_SIZE
        )
        # Only ever copied into answers (CopyFrom), never changed.
        self.views_memo: Memo[tuple[str, int, int | None], service_pb2.View] = Memo(VIEWS_MEMO_SIZE)
        self.notifier = Notifier()
        self._listening = False
        self._background: set[asyncio.Task[None]] = set()
        # The ticks under way, per game: whoever else asks for one meanwhile (the sweeper, each
        # seat's Play stream, a command that found a turn run out) waits for it.
        self._ticks: dict[str, asyncio.Future[int]] = {}
        self._rechecking: asyncio.Task[None] | None = None
        # Set when the process is shutting down (:meth:`drain`).
        self._drained = asyncio.Event()
        #: The live streams, StreamEvents and Play (:mod:`croupier.app.streams`), given what they
        #: use of the core: they hold these very objects. :attr:`cache` and :attr:`recent` (which
        #: tests and benchmarks replace) hand a new one to the streams too; the clock, the
        #: notifier and the log are never replaced (the streams would keep the old ones).
        self.streams = Streams(
            cache=self._cache,
            recent=self._recent,
            notifier=self.notifier,
            log=self.log,
            clock=clock,
            drained=self._drained,
            fold=self._fold,
            tick=self.tick,
            present=self._present,
            parts=self._parts,
            turn_ran_out=self._turn_ran_out,
            play_command=self._play_command,
            join_timeout_s=join_timeout_s,
        )
        #: GetReplay, ExportReplay and VerifyReplay (:mod:`croupier.app.replaying`).
        self.replays = Replays(
            log=self.log,
            fold_as_ended=self._fold_as_ended,
            replay=self._replay,
            replay_keys=self._replay_keys,
        )

    # What the core shares with its collaborators: replaced here, replaced for both (a stream
    # holding the old memory would read one nobody writes, and keep what it read beyond the new
    # one's bounds; an export holding the old keys would sign with them).

    @property
    def cache(self) -> FoldCache:
        """The folded games held in memory (:class:`FoldCache`)."""
        return self._cache

    @cache.setter
    def cache(self, cache: FoldCache) -> None:
        self._cache = self.streams.cache = cache

    @property
    def replay_keys(self) -> ReplayKeys:
        """Sign exported replays, and vouch for the files they signed (docs/replay-format.md)."""
        return self._replay_keys

    @replay_keys.setter
    def replay_keys(self, keys: ReplayKeys) -> None:
        self._replay_keys = self.replays.replay_keys = keys

    @property
    def recent(self) -> RecentEvents:
        """The newest events of the games this process has seen (:mod:`croupier.app.recent`)."""
        return self._recent

    @recent.setter
    def recent(self, recent: RecentEvents) -> None:
        self._recent = self.streams.recent = recent

    # The streams' settings, on the core as before (tests and the servers set them here).

    @property
    def join_timeout_s(self) -> float:
        """How long a Play stream waits for its join (:data:`JOIN_TIMEOUT_S`)."""
        return self.streams.join_timeout_s

    @join_timeout_s.setter
    def join_timeout_s(self, seconds: float) -> None:
        self.streams.join_timeout_s = seconds

    @property
    def max_streams_per_token(self) -> int:
        """Live streams one token may hold open at once (:data:`MAX_STREAMS_PER_TOKEN`)."""
        return self.streams.max_streams_per_token

    @max_streams_per_token.setter
    def max_streams_per_token(self, most: int) -> None:
        self.streams.max_streams_per_token = most

    async def start(self, sweep: bool = True) -> None:
        """Bind to the running loop and hear other processes' appends; with ``sweep``, record
        what falls due by time in the background (:mod:`croupier.app.sweeper`)."""
        self.notifier.bind(asyncio.get_running_loop())
        if not self._listening:
            self.log.listen(
                self.notifier.notify, self.notifier.notify_threadsafe, self.notifier.watching
            )
            self._listening = True
        if self._rechecking is None:
            self._rechecking = asyncio.create_task(self._recheck())
        if sweep and self.sweeper is None:
            from croupier.app.sweeper import Sweeper  # it drives this core

            self.sweeper = Sweeper(self)
            self.sweeper.start()

    @property
    def draining(self) -> bool:
        """The process is shutting down (:meth:`drain`): streams end, their clients go elsewhere."""
        return self._drained.is_set()

    def drain(self) -> None:
        """The process is shutting down: every stream, open or to come, ends after what it has
        sent with :class:`ShuttingDown` (the version it reached), from which its client resumes
        on another replica. A Play stream's command being applied is answered first. Unary
        calls are not affected (the server lets them finish)."""
        self._drained.set()
        self.notifier.wake_all()

    async def close(self) -> None:
        """Stop sweeping, finish the background writes (snapshots), then stop the store's
        workers."""
        if self.sweeper is not None:
            await self.sweeper.stop()
            self.sweeper = None
        if self._rechecking is not None:
            self._rechecking.cancel()
            await asyncio.gather(self._rechecking, return_exceptions=True)
            self._rechecking = None
        pending: list[asyncio.Future[Any]] = [*self._background, *self._ticks.values()]
        if pending:
            await asyncio.wait(pending, timeout=CLOSE_WAIT_S)
        await self.log.aclose()  # its look for other processes' appends too: start() looks again
        self._listening = False

    async def _recheck(self) -> None:
        """Every ``STREAM_RECHECK_S``, the versions of the games this process streams, in one
        read: the streams of a game that moved on without this process hearing of it wake and
        read it. One read for the process, not one per stream: 10,000 idle streams each re-reading
        their game every 5 s made 2,000 reads a second, over a quarter of the server's CPU."""
        while True:
            await asyncio.sleep(STREAM_RECHECK_S)
            watched = self.notifier.watched()
            if not watched:
                continue
            try:
                versions = await self.log.versions(watched)
            except Exception as error:  # the store is down: the streams wait, the next look retries
                log_failure(log, "streams' recheck failed", error, games=len(watched))
                continue
            for game_id, version in versions.items():
                if version > self.notifier.latest(game_id):  # news: the game's streams wake
                    self.notifier.notify(game_id, version)

    # -- who calls --------------------------------------------------------------------------------

    def authenticate(self, token: str | None) -> Caller:
        """The caller a bearer token names (none: anonymous); a token that is not ours, or no
        longer good, fails. Its prefix says its kind (``croupier.app.tokens``)."""
        if not token:
            return ANONYMOUS
        now_s = self.clock() // 1000
        try:
            if token.startswith(STUDIO_PREFIX):
                return Caller(studio=verify_studio_token(self.studio_keys, token, now_s))
            if token.startswith(PLAYER_PREFIX):
                return Caller(player=verify_player_token(self.studio_keys, token, now_s))
            return Caller(self.signer.verify(token))
        except AuthError as error:
            raise BadCredentials(error.reason, str(error), error.metadata) from None

    # -- the log ----------------------------------------------------------------------------------

    async def _fold(
        self, game_id: str, command_id: str = "", seat: int | None = None
    ) -> tuple[Folded, CommandResult | None]:
        """The game as its log stands (one read), and the command id's first answer if any.
        ``seat``: the seat the call acts or watches as (``None``: none), refused if the game does
        not have it (:func:`croupier.app.callers.at_table`)."""
        cached = self.cache.get(game_id)
        try:
            # The events after the fold held in memory; if none is (a restart, another replica's
            # game), from the game's latest snapshot.
            loaded = await self.log.load(
                game_id,
                cached.version if cached is not None else 0,
                command_id,
                snapshots.FORMAT if cached is None and self.use_snapshots else "",
            )
            at_table(loaded.record, seat)
            if cached is not None:
                return self._folded(cached, loaded, FROM_CACHE), loaded.earlier
            thawed = (
                snapshots.thaw(self.signer, loaded.snapshot)
                if loaded.snapshot is not None
                else None
            )
            if loaded.snapshot is not None and thawed is None:  # not ours: fold the whole log
                loaded = await self.log.load(game_id, 0, command_id)
        except GameNotFound as error:
            raise store_error(error) from None
        base = None
        if thawed is not None:
            base = Folded(
                loaded.record,
                BY_NAME[loaded.record.kind],
                thawed.state,
                thawed.version,
                None,
                thawed.last_at_ms,
                thawed.version,
            )
        return self._folded(
            base, loaded, FROM_LOG if base is None else FROM_SNAPSHOT
        ), loaded.earlier

    async def _fold_many(self, game_ids: Sequence[str]) -> list[Folded]:
        """Several games as their logs stand, in one read (unknown ones left out)."""
        cached = {g: self.cache.get(g) for g in game_ids}
        wanted = [(g, c.version if c else 0) for g, c in cached.items()]
        return [
            self._folded(cached[loaded.record.game_id], loaded, FROM_CACHE)
            for loaded in await self.log.load_many(wanted)
        ]

    def _folded(self, cached: Folded | None, loaded: Loaded, start: str) -> Folded:
        """``cached`` (if any; it came from ``start``) with the newly read events folded in; the
        result is cached."""
        record = loaded.record
        binding = BY_NAME[record.kind]
        snapshot_version = 0
        self.observer.fold(
            record.kind, start if cached is not None else FROM_LOG, len(loaded.events)
        )
        if cached is not None and cached.version <= record.version:
            state = cached.state
            events = None if cached.events is None else list(cached.events)
            version, last_at_ms = cached.version, cached.last_at_ms
            snapshot_version = cached.snapshot_version
        else:
            state, events, version, last_at_ms = binding.game.initial_state(), [], 0, 0
        batch = None
        for stored in loaded.events:
            # A batch begins (its id changes, or its first event carries its command: a seat's
            # move recorded under the deal's id before that id was reserved): the clocks run on
            # its recorded time.
            if stored.command_id != batch or stored.command:
                state = binding.game.at(state, stored.recorded_at_ms, stored.seat)
                batch = stored.command_id
            event = _decode(binding, stored)
            if event is not None:
                state = binding.game.evolve(state, event)
                if events is not None:
                    events.append(event)
            version, last_at_ms = stored.version, stored.recorded_at_ms
        folded = Folded(
            record,
            binding,
            state,
            version,
            None if events is None else tuple(events),
            last_at_ms,
            snapshot_version,
        )
        folded = self._maybe_snapshot(folded)
        self.cache.put(folded)
        return folded

    def _maybe_snapshot(self, folded: Folded) -> Folded:
        """Write a snapshot in the background once the game has grown enough since its last."""
        if (
            not self.use_snapshots
            or folded.version - folded.snapshot_version < snapshots.SNAPSHOT_EVERY
        ):
            return folded
        snapshot = snapshots.freeze(
            self.signer,
            folded.record.game_id,
            folded.version,
            folded.state,
            folded.last_at_ms,
        )
        task = asyncio.get_running_loop().create_task(self.log.save_snapshot(snapshot))
        self._background.add(task)
        task.add_done_callback(self._finished_in_background)
        return dataclasses.replace(folded, snapshot_version=folded.version)

    async def _with_events(self, folded: Folded) -> Folded:
        """``folded`` with its own events, read from the log if it came from a snapshot."""
        if folded.events is not None:
            return folded
        stored = await self.log.read(folded.record.game_id)
        events = tuple(
            e
            for e in (_decode(folded.binding, s) for s in stored[: folded.version])
            if e is not None
        )
        complete = dataclasses.replace(folded, events=events)
        self.cache.put(complete)
        return complete

    def _finished_in_background(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("snapshot not saved", error=repr(task.exception()))

    def _as_of_now(self, folded: Folded) -> GameState:
        """The state as of now: what time has made due (a closed claim window) applied."""
        return self._advanced(folded, folded.state)

    def _advanced(self, folded: Folded, state: GameState) -> GameState:
        """``state`` with what time has made due by now applied (not recorded)."""
        game = folded.binding.game
        timed, due = self._due(folded, state, self.clock())
        if not due:
            return state
        for event in due:
            timed = game.evolve(timed, event)
        return timed

    @staticmethod
    def _due(folded: Folded, state: GameState, now: int) -> tuple[GameState, list[Any]]:
        """What time has made due after ``state`` by ``now``: the events, and the state they
        follow (what time makes due is a batch of its own, the service's, at ``now``)."""
        game = folded.binding.game
        deadline = folded.deadline if state is folded.state else game.next_deadline(state)
        if deadline is None or now < deadline:
            # Nothing falls due before the game's next deadline (each engine's is exact: a
            # property test checks it), so the usual read folds nothing.
            return state, []
        timed = game.at(state, now, None)
        return timed, game.advance(timed, Context(folded.seeds, now))

    @staticmethod
    def _deadline_passed(folded: Folded, now: int) -> bool:
        """Whether the game's next deadline (a turn's time-out, a claim window's close) has
        passed by ``now``: what :meth:`tick` records is due."""
        return folded.deadline is not None and folded.deadline <= now

    @staticmethod
    def _turn_ran_out(folded: Folded, now: int) -> bool:
        """Whether a seat's turn time (and bank) ran out by ``now``: its time-out is due."""
        deadline = folded.turn_deadline
        return deadline is not None and deadline <= now

    def _present(
        self, binding: GameBinding, stored: StoredEvent, seat: int | None, finished: bool
    ) -> service_pb2.GameEvent:
        """A stored event as ``seat`` may see it: complete once the game is over. Worked out once
        per event and seat, however many streams watch (the copies are only ever serialized)."""
        return self.presented.get_or_make(
            (stored.game_id, stored.version, seat, finished),
            lambda: self._presented(binding, stored, seat, finished),
        )

    def _presented(
        self, binding: GameBinding, stored: StoredEvent, seat: int | None, finished: bool
    ) -> service_pb2.GameEvent:
        engine_event, complete = self.decoded.get_or_make(
            (stored.game_id, stored.version),
            lambda: (_decode(binding, stored), complete_event(stored)),
        )  # the complete copy is shared: only ever serialized
        if not finished and engine_event is not None:
            shown = binding.game.redact(engine_event, seat)
            if shown != engine_event:
                # A redacted copy carries no payload or hashes: they would give the hidden away.
                event = service_pb2.GameEvent(
                    game_id=stored.game_id,
                    version=stored.version,
                    command_id=stored.command_id,
                    recorded_at_ms=stored.recorded_at_ms,
                    body=binding.event_to_body(shown),
                    redacted=True,
                )
                if stored.seat is not None:
                    event.seat = stored.seat
                # No command copy either: the command may name what its event hides (a
                # battle-Hoola claim names the cards it claims with).
                return event
        return complete

    def _command(self, folded: Folded, command: service_pb2.Command) -> Any:
        if not command.WhichOneof("game"):
            raise invalid("MISSING_FIELD", "command is required", "command")
        try:
            engine_command = folded.binding.command_from_proto(command)
        except ValueError as error:
            raise invalid("MALFORMED_COMMAND", str(error), "command") from None
        structlog.contextvars.bind_contextvars(command=type(engine_command).__name__)
        return engine_command

    # -- use cases --------------------------------------------------------------------------------

    async def create_game(
        self,
        caller: Caller,
        kind: common_pb2.GameKind.ValueType,
        preset: str,
        seats: int,
        overrides: service_pb2.Rules | None,
        client_seeds: Sequence[str],
        players: Sequence[str],
        request_id: str = "",
        seed_ticket: str = "",
    ) -> service_pb2.CreateGameResponse:
        """A new game, dealt. Only the studio creates games: the player ids it names are what
        recall trusts, so nobody else may put a player id on a seat. With a ``request_id`` that
        made a game before, that game again (a retry after a lost answer), as first answered.
        With a ``seed_ticket`` (:meth:`commit_seed`), the server seed is the ticket's, and the
        ticket is used up in the transaction that stores the game."""
        studio_of(caller)
        binding = _binding(kind)
        limits.check_text(request_id, "request_id", limits.MAX_REQUEST_ID)
        # An unset seat count (0) is the game's default where it has one (Rummy: 4, or the rule
        # set's max_seats when fewer, worked out below once the overrides are read).
        unset = not seats
        seats = seats or binding.default_seats
        if overrides is not None and holds_unknown(overrides):
            # A newer contract's option, or a misspelt one sent as JSON (service/http.py): the
            # game would be played by other rules than the studio asked for, stakes included.
            raise invalid(
                "UNKNOWN_OPTION",
                "the overrides hold a rule option this server does not know (a newer "
                "contract's): it would play by other rules than asked",
                "overrides",
            )
        try:
            changes = binding.overrides(overrides) if overrides is not None else {}
            if unset and binding.unset_seats is not None:
                seats = binding.unset_seats(preset, changes)
            rules = binding.game.new_game_rules(preset, changes, seats)
        except InvalidRules as error:
            field = (
                error.field
                if error.field in ("preset", "seats")
                else f"overrides.{binding.field}.{error.field}"
            )
            made = (
                await self._made_before_refused(
                    binding, preset, changes, seats, client_seeds, players, request_id, seed_ticket
                )
                if request_id
                else None
            )
            if made is not None:
                return made
            raise invalid(error.reason, error.message, field) from None
        except ValueError as error:
            raise invalid("INVALID_OPTION", str(error), "overrides") from None
        if len(client_seeds) > limits.MAX_CLIENT_SEEDS:
            raise invalid(
                "TOO_MANY",
                f"at most {limits.MAX_CLIENT_SEEDS} client seeds",
                "client_seeds",
            )
        for index, client_seed in enumerate(client_seeds):
            limits.check_text(client_seed, f"client_seeds[{index}]", limits.MAX_CLIENT_SEED)
        for index, player in enumerate(players):
            limits.check_text(player, f"players[{index}]", limits.MAX_PLAYER_ID)
        players = tuple(players)
        # Each player once: recall finds a player's seat in a game by the id (a player at two
        # seats would be listed at one, with that seat's result only).
        if players and (len(players) != seats or not all(players) or len(set(players)) < seats):
            raise invalid(
                "INVALID_PLAYERS",
                f"name one player per seat ({seats}), each at one seat only, or none",
                "players",
            )
        resolved = binding.rules_to_proto(rules)
        request = (
            CreateRequest(
                request_id,
                _request_fingerprint(kind, resolved, seats, client_seeds, players, seed_ticket),
            )
            if request_id
            else None
        )
        ticket = None
        if seed_ticket:
            try:
                ticket = seedtickets.read(self.signer.ring, seed_ticket, self.clock())
            except AppError:
                # A retry whose ticket has expired since its first attempt made the game.
                first = await self.log.created_by(request_id) if request is not None else None
                if first is None or request is None or first.fingerprint != request.fingerprint:
                    raise
                return self._made_before(
                    first, request, binding.game.kind, resolved, seats, players
                )
        server_seed = ticket.server_seed if ticket is not None else self.seed_source()
        seeds = Seeds(server_seed, tuple(client_seeds))
        game_id = str(uuid.uuid4())
        events = binding.game.start(rules, seats, seeds)
        record = GameRecord(
            game_id, binding.game.kind, seats, server_seed, seeds.commitment, self.clock()
        )
        # This process holds the new game: its first reads and streams need no store read.
        state = binding.game.at(binding.game.initial_state(), record.created_at_ms, None)
        for event in events:
            state = binding.game.evolve(state, event)
        due = binding.game.next_deadline(state)
        try:
            stored = await self.log.create_game(
                record,
                _new_events(binding, events),
                record.created_at_ms,
                players,
                due,
                request,
                ticket.used if ticket is not None else None,
            )
        except AlreadyCreated as made:
            return self._made_before(made, request, binding.game.kind, resolved, seats, players)
        except TicketUsed:
            raise seedtickets.used_again() from None
        version = stored[-1].version if stored else 0
        self._armed(due, record.game_id)
        created = dataclasses.replace(record, version=version)
        self.cache.put(
            Folded(created, binding, state, version, tuple(events), record.created_at_ms)
        )
        self.recent.add(game_id, stored, version, False)
        self.notifier.notify(game_id, version)
        structlog.contextvars.bind_contextvars(game_id=game_id, kind=binding.game.kind, seats=seats)
        return self._created(game_id, seeds.commitment, resolved, version, seats, players)

    async def _made_before_refused(
        self,
        binding: GameBinding,
        preset: str,
        changes: dict[str, Any],
        seats: int,
        client_seeds: Sequence[str],
        players: Sequence[str],
        request_id: str,
        seed_ticket: str = "",
    ) -> service_pb2.CreateGameResponse | None:
        """A retry of a creation whose options this release refuses for new games (an option
        that needs another, made a refusal after its first attempt). An older release may have
        made its game: the retry is answered with it, as first answered, rather than refused
        without the game's id. None for a request those rules refuse even as recorded games
        read them, or that made no game, or another one: it is refused as it would have been."""
        try:
            rules = binding.game.rules_for(preset, changes, seats)
        except (InvalidRules, ValueError):
            return None
        resolved = binding.rules_to_proto(rules)
        request = CreateRequest(
            request_id,
            _request_fingerprint(
                binding.kind, resolved, seats, client_seeds, tuple(players), seed_ticket
            ),
        )
        made = await self.log.created_by(request_id)
        if made is None or made.fingerprint != request.fingerprint:
            return None
        return self._made_before(made, request, binding.game.kind, resolved, seats, tuple(players))

    async def commit_seed(self, caller: Caller) -> service_pb2.CommitSeedResponse:
        """A seed ticket: the server commits to a seed before the players choose theirs
        (:mod:`croupier.app.seedtickets`). The studio's, as creating games is."""
        studio_of(caller)
        issued = seedtickets.issue(self.signer.ring, self.seed_source(), self.clock())
        return service_pb2.CommitSeedResponse(
            ticket=issued.ticket, commitment=issued.commitment, expires_at_ms=issued.expires_at_ms
        )

    def _made_before(
        self,
        made: AlreadyCreated,
        request: CreateRequest | None,
        kind: str,
        rules: service_pb2.Rules,
        seats: int,
        players: tuple[str, ...],
    ) -> service_pb2.CreateGameResponse:
        """A request id's retry: the game its first attempt made, answered as then (the rules,
        seats and players are this request's, the same as the first's: the fingerprints
        match). The tokens are signed again, with the signing key of now: the same after a
        key rotation only in what they grant."""
        if request is None or made.fingerprint != request.fingerprint:
            # A retry repeats its request; the same id for another one is a client's bug, and
            # answering it with another request's game would hide it. The game it made is named
            # (only the studio creates games, so only the studio reads it): a studio whose first
            # answer was lost, and that cannot send its first request again as it was (a preset
            # that gained an option, a record that kept too little), still finds its game.
            raise BadRequest(
                "REQUEST_ID_REUSED",
                f"this request id already created game '{made.game_id}' for another request",
                {"game_id": made.game_id},
                field="request_id",
            )
        structlog.contextvars.bind_contextvars(
            game_id=made.game_id, kind=kind, seats=seats, duplicate=True
        )
        return self._created(made.game_id, made.commitment, rules, made.version, seats, players)

    def _created(
        self,
        game_id: str,
        commitment: str,
        rules: service_pb2.Rules,
        version: int,
        seats: int,
        players: tuple[str, ...],
    ) -> service_pb2.CreateGameResponse:
        return service_pb2.CreateGameResponse(
            game_id=game_id,
            commitment=commitment,
            rules=rules,
            version=version,
            tokens=[
                service_pb2.SeatToken(
                    seat=s,
                    token=self.signer.issue(game_id, s),
                    player=players[s] if players else "",
                )
                for s in range(seats)
            ],
        )

    async def submit(
        self,
        caller: Caller,
        game_id: str,
        command_id: str,
        expected_version: int,
        command: service_pb2.Command,
        seat: int | None = None,
        include: service_pb2.Include | None = None,
    ) -> service_pb2.SubmitCommandResponse:
        """Apply a seat's command (exactly once per command id) and answer with its events."""
        # On the call's rpc log line: a client's record of what it sent ("my move was recorded
        # wrong") is matched by its id to the events (GameEvent.command_id) or to the refusal.
        structlog.contextvars.bind_contextvars(command_id=command_id)  # clipped when logged
        came = time.perf_counter()
        try:
            applied = await self._apply(
                caller, game_id, command_id, expected_version, command, seat
            )
            response = await self._answer(applied, include)
        except AppError as error:
            self._refused(game_id, error, came)
            raise
        self._counted(applied, came)
        return response

    async def end_game(
        self,
        caller: Caller,
        game_id: str,
        command_id: str,
        reason: str,
        expected_version: int | None = None,
    ) -> service_pb2.EndGameResponse:
        """The studio ends a game still on, abandoned (docs/rules/common.md §5.1): the studio's
        command, recorded without a seat, exactly once per command id. Without an
        ``expected_version`` it ends the game as it stands when the call is decided: a move
        recorded meanwhile is no reason to refuse it, so a conflict is tried again (for
        :data:`END_TRYING_S`)."""
        studio_of(caller)
        require(game_id, "game_id")
        limits.check_text(game_id, "game_id", limits.MAX_GAME_ID)
        structlog.contextvars.bind_contextvars(game_id=game_id, command_id=command_id)
        _check_command_id(command_id)
        require(reason.strip(), "reason")  # blank says no more than empty
        limits.check_text(reason, "reason", limits.MAX_END_REASON)
        if expected_version is not None:
            limits.check_version(expected_version, "expected_version")
        came = time.perf_counter()
        try:
            # Recorded in the studio's own namespace: a seat cannot take the id first.
            kind, earlier = await self._studio_ends(
                game_id, f"{STUDIO_COMMAND_PREFIX}{command_id}", reason, expected_version
            )
        except AppError as error:
            self._refused(game_id, error, came)
            raise
        outcome = DUPLICATE if earlier.duplicate else ACCEPTED
        self.observer.command(kind, outcome, time.perf_counter() - came)
        if not earlier.duplicate:
            log.info("game ended by the studio", game_id=game_id, reason=reason)
        return service_pb2.EndGameResponse(
            version=earlier.last_version,
            already_applied=earlier.duplicate,
            settlement=await self.settlement(caller, game_id, final=True),
        )

    async def _studio_ends(
        self, game_id: str, command_id: str, reason: str, expected_version: int | None
    ) -> tuple[str, CommandResult]:
        """:meth:`end_game`'s command decided and recorded, or its first answer: the game's kind
        and the answer, accepted (a refusal is raised)."""
        trying_until = time.monotonic() + END_TRYING_S
        while True:
            folded, earlier = await self._fold(game_id, command_id)
            command = service_pb2.Command()
            getattr(command, folded.binding.field).end_game.reason = reason
            payload = command.SerializeToString(deterministic=True)
            fingerprint = _fingerprint(NO_SEAT, payload)
            if earlier is None and folded.record.finished:
                earlier = await self._studio_ended_before(game_id, command_id, fingerprint)
            if earlier is not None:
                break
            # A game already over refuses the end as GAME_OVER, whatever version it names: a
            # stale version's VERSION_CONFLICT would send the studio to look again for nothing.
            version = (
                folded.version
                if expected_version is None or folded.record.finished
                else expected_version
            )
            try:
                earlier, _, _ = await self._decide(
                    folded, None, command_id, version, command, payload, fingerprint
                )
                break
            except StaleVersion:
                if expected_version is not None or time.monotonic() >= trying_until:
                    raise
                await asyncio.sleep(random.uniform(0, END_PAUSE_S))
        assert earlier is not None
        _accepted(earlier, fingerprint)
        return folded.record.kind, earlier

    async def _studio_ended_before(
        self, game_id: str, command_id: str, fingerprint: bytes
    ) -> CommandResult | None:
        """The first answer to this EndGame as a release before the studio's namespace recorded
        it, under its bare id (``command_id`` without :data:`STUDIO_COMMAND_PREFIX`), or None:
        a retry across the upgrade is answered as the first time, not ``GAME_OVER``. Only the
        studio's very command matches its fingerprint (no seat's under that id does: a seat's
        fingerprint holds its seat); every EndGame was recorded with one."""
        bare = await self.log.result_of(game_id, command_id.removeprefix(STUDIO_COMMAND_PREFIX))
        return bare if bare is not None and bare.fingerprint == fingerprint else None

    async def _play_command(
        self, caller: Caller, game_id: str, move: service_pb2.PlayCommand
    ) -> service_pb2.PlayAccepted:
        """A Play stream's command applied as :meth:`submit` applies it, answered with the version
        after it alone: the stream's feed sends the events and the state, so the seat's copies of
        the events that :meth:`submit` answers with would be built for nothing on every move."""
        came = time.perf_counter()
        try:
            applied = await self._apply(
                caller, game_id, move.command_id, move.expected_version, move.command, None
            )
        except AppError as error:
            self._refused(game_id, error, came)
            raise
        self._counted(applied, came)
        return service_pb2.PlayAccepted(
            command_id=move.command_id,
            version=applied.answer.last_version,
            already_applied=applied.answer.duplicate,
        )

    def _refused(self, game_id: str, error: AppError, came: float) -> None:
        """Count a command refused (it came at ``came``, ``time.perf_counter``'s): under the
        game's kind if this process holds it (a refusal may come before any read)."""
        held = self.cache.peek(game_id)
        kind = held.record.kind if held else UNKNOWN_KIND
        self.observer.command(kind, outcome_of(error), time.perf_counter() - came)

    def _counted(self, applied: Applied, came: float) -> None:
        """Count a command answered (it came at ``came``): accepted now, or a retry given its
        first answer."""
        outcome = DUPLICATE if applied.answer.duplicate else ACCEPTED
        self.observer.command(applied.folded.record.kind, outcome, time.perf_counter() - came)

    async def _apply(
        self,
        caller: Caller,
        game_id: str,
        command_id: str,
        expected_version: int,
        command: service_pb2.Command,
        seat: int | None,
    ) -> Applied:
        """The command's first answer, accepted (a refusal is raised), with the game to answer
        it from."""
        acting = seat_of(caller, game_id, seat)
        self._take_allowance(game_id, acting)
        _check_command_id(command_id)
        limits.check_version(expected_version, "expected_version")
        payload = command.SerializeToString(deterministic=True)
        limits.check_command_size(len(payload))
        fingerprint = _fingerprint(acting, payload)
        cached = self.cache.get(game_id)
        if cached is not None and cached.version == expected_version:
            # The caller saw what this process holds: decide on it. The append checks the
            # version and the command id in one transaction, so nothing is read first.
            at_table(cached.record, acting)
            folded, earlier = cached, None
        else:
            folded, earlier = await self._fold(game_id, command_id, acting)
        finished, state, state_version = folded.record.finished, folded.state, folded.version
        if earlier is None:
            earlier, finished, state = await self._decide(
                folded, acting, command_id, expected_version, command, payload, fingerprint
            )
            if earlier.accepted and not earlier.duplicate:
                state_version = earlier.last_version
        if earlier.accepted and earlier.duplicate and folded.version < earlier.last_version:
            # A retry racing its first attempt: answered from the game as it stands now (at or
            # past the first answer), not as it was before the command.
            folded, _ = await self._fold(game_id)
            finished, state, state_version = folded.record.finished, folded.state, folded.version
        _accepted(earlier, fingerprint)
        structlog.contextvars.bind_contextvars(duplicate=earlier.duplicate)
        return Applied(acting, earlier, folded, finished, state, state_version)

    async def _answer(
        self, applied: Applied, include: service_pb2.Include | None
    ) -> service_pb2.SubmitCommandResponse:
        """SubmitCommand's answer: the command's events as the seat may see them, and the parts
        of the game that ``include`` asks for."""
        earlier, folded, acting = applied.answer, applied.folded, applied.seat
        finished, state, state_version = applied.finished, applied.state, applied.state_version
        stored: Sequence[StoredEvent] = earlier.events
        if not stored:  # a retry: the first answer's events, read back
            read = await self.log.read(folded.record.game_id, earlier.first_version - 1)
            stored = [e for e in read if e.version <= earlier.last_version]
        response = service_pb2.SubmitCommandResponse(
            version=earlier.last_version,
            events=[self._present(folded.binding, e, acting, finished) for e in stored],
            finished=finished,
            already_applied=earlier.duplicate,
        )
        if include is not None:
            if not earlier.duplicate and not finished:
                # Turns that ran out right after the command are recorded first: parts of the
                # game as of now at the command's version would meet ABORTED when played.
                folded, state, state_version = await self._after_time_outs(
                    folded, state, state_version
                )
            parts = self._parts(folded, state, state_version, acting, include)
            if parts.view is not None:
                response.view.CopyFrom(parts.view)
            response.legal_moves.extend(parts.legal_moves)
            response.to_act.extend(parts.to_act)
            response.state_version = state_version
        return response

    async def _after_time_outs(
        self, folded: Folded, state: GameState, version: int
    ) -> tuple[Folded, GameState, int]:
        """The game at ``version`` (in ``state``), or, when a turn has run out there by now, the
        game after its time-outs are recorded."""
        current = self.cache.get(folded.record.game_id)
        if current is None or current.version != version:
            return folded, state, version
        if not self._turn_ran_out(current, self.clock()):
            return folded, state, version
        try:
            await self.tick(folded.record.game_id)
        except Exception as error:  # the command is recorded: answer with the parts at its version
            log_failure(
                log, "time-outs after a command not recorded", error, game_id=folded.record.game_id
            )
            return folded, state, version
        ticked = self.cache.get(folded.record.game_id)
        if ticked is None or ticked.version <= version:
            return folded, state, version
        return ticked, ticked.state, ticked.version

    def _parts(
        self,
        folded: Folded,
        state: GameState,
        version: int,
        seat: int | None,
        include: service_pb2.Include,
    ) -> Parts:
        """What ``include`` asks for, for ``seat`` (``None``: a spectator, who has no moves), of
        the game in ``state`` (at ``version``) as of now."""
        now = self._advanced(folded, state)
        # Views and legal moves are worked out once per version and seat, whoever asks, and the
        # seats to act once per version (every seat's stream wants them after each move); none
        # of them when time has changed the state.
        at = version if now is state else None
        return Parts(
            view=self._view(folded, now, at, seat) if include.view else None,
            legal_moves=(
                self._moves(folded, now, at, seat)
                if include.legal_moves and seat is not None
                else []
            ),
            to_act=self._seats_to_act(folded, now, at, seat) if include.to_act else [],
        )

    def _moves(
        self, folded: Folded, state: GameState, version: int | None, seat: int
    ) -> list[service_pb2.LegalMove]:
        """The seat's legal moves with labels (remembered for ``version`` when it is given)."""
        binding, game = folded.binding, folded.binding.game

        def listed() -> list[service_pb2.LegalMove]:
            moves = []
            for command in game.legal_commands(state, seat):
                move = service_pb2.LegalMove(label=game.label(state, command))
                # Filled in place: a Command given to the constructor would be copied in.
                binding.fill_command(move.command, command)
                moves.append(move)
            return moves

        if version is None:
            return listed()
        return self.moves_memo.get_or_make((folded.record.game_id, version, seat), listed)

    def _view(
        self, folded: Folded, state: GameState, version: int | None, seat: int | None
    ) -> service_pb2.View:
        """What ``seat`` (``None``: a spectator) sees, remembered for ``version`` when it is
        given: every spectator of a game, and each stream of one seat, is sent the same."""
        binding, game = folded.binding, folded.binding.game
        if version is None:
            return binding.view_to_proto(game.view(state, seat))
        return self.views_memo.get_or_make(
            (folded.record.game_id, version, seat),
            lambda: binding.view_to_proto(game.view(state, seat)),
        )

    def _seats_to_act(
        self, folded: Folded, state: GameState, version: int | None, seat: int | None
    ) -> list[service_pb2.SeatToAct]:
        """:meth:`_to_act` for ``seat``, remembered for ``version`` when it is given: every
        stream of one seat, and every spectator, is sent the same."""
        if version is None:
            return self._to_act(folded, state, seat)
        return self.to_act_memo.get_or_make(
            (folded.record.game_id, version, seat), lambda: self._to_act(folded, state, seat)
        )

    @staticmethod
    def _to_act(
        folded: Folded, state: GameState, viewer: int | None
    ) -> list[service_pb2.SeatToAct]:
        """The seats that have a move now as ``viewer`` (``None``: a spectator) may be told,
        read from the game's phase by the engine (a property test checks it against the legal
        moves, and that no hidden card decides another seat's place in it), each with its away
        flag; those on the turn clock with their deadline and bank (docs/rules/common.md §5.1)."""
        game = folded.binding.game
        clocks = {c.seat: c for c in game.seat_clocks(state)}
        # The seats the game waits on (their turn), clock or not: the others may act out of turn.
        turns = set(game.on_clock(state))
        answer = []
        for seat in game.to_act_seen(state, viewer):
            clock = clocks.get(seat)
            if clock is None:
                # Off the clock: a seat that may act out of turn (claim a discard, call the next
                # round) or come back from away, or any seat of a game without a turn clock.
                answer.append(
                    service_pb2.SeatToAct(
                        seat=seat, away=game.away(state, seat), turn=seat in turns
                    )
                )
            else:
                answer.append(
                    service_pb2.SeatToAct(
                        seat=seat,
                        deadline_ms=clock.deadline_ms,
                        bank_ms=clock.bank_ms,
                        away=clock.away,
                        turn=seat in turns,
                    )
                )
        return answer

    async def _decide(
        self,
        folded: Folded,
        seat: int | None,
        command_id: str,
        expected_version: int,
        command: service_pb2.Command,
        payload: bytes,
        fingerprint: bytes,
    ) -> tuple[CommandResult, bool, GameState]:
        """Decide a new command and record its answer: its events, or its refusal. Returns the
        answer, whether the game is over, and its state after the command. ``seat``: the acting
        seat, ``None`` for the studio's command (the engine is told :data:`NO_SEAT`)."""
        engine_command = self._command(folded, command)
        game_id, game = folded.record.game_id, folded.binding.game
        if expected_version != folded.version:
            return await self._answered_or_conflict(
                folded, command_id, VersionConflict(game_id, expected_version, folded.version)
            )
        # One instant for the decision and the record: a replay re-decides at the recorded time,
        # so a claim window closes there exactly as it did live.
        now = self.clock()
        if self._deadline_passed(folded, now):
            # Time made something due before this command (a turn's time-out, a battle claim
            # window's award): it is recorded first, and the command, made on what came before,
            # meets a newer version (ABORTED: look again), as it would have had the sweeper come
            # first. Deciding it after the award instead refused a command that was legal when
            # its seat looked (FAILED_PRECONDITION "it is seat 3's turn" for the seat that was
            # to act before a claimant was awarded the discard).
            current = await self.tick(game_id)
            if current != folded.version:
                return await self._answered_or_conflict(
                    folded, command_id, VersionConflict(game_id, expected_version, current)
                )
        try:
            events = game.decide(
                folded.state,
                NO_SEAT if seat is None else seat,
                engine_command,
                Context(folded.seeds, now),
            )
        except CommandError as error:
            refused = rejection(error).SerializeToString(deterministic=True)
            try:
                # Kept only if the game is still where it was refused: decided on this process's
                # copy, the refusal might not stand after another replica's append.
                result = await self.log.record_rejection(
                    game_id, command_id, refused, folded.version, fingerprint
                )
            except VersionConflict as conflict:
                return await self._answered_or_conflict(folded, command_id, conflict)
            except GameNotFound as gone:
                raise store_error(gone) from None
            return result, folded.record.finished, folded.state
        state = game.at(folded.state, now, seat)
        for event in events:
            state = game.evolve(state, event)
        finished = game.is_finished(state)
        new = self._with_seed(folded, _new_events(folded.binding, events), finished)
        due = None if finished else game.next_deadline(state)

        def made(appended: CommandResult) -> None:
            if not appended.duplicate:
                self._remember(folded, state, events, appended, finished, now)
                self._armed(due, game_id)

        try:
            # A caller gone meanwhile (a deadline, a closed stream) does not stop an append on a
            # thread: once made, it is remembered and its streams are told all the same (``late``),
            # which nothing else would do (the store's listener passes over this process's own).
            result = await self.log.append(
                game_id,
                folded.version,
                new,
                command_id,
                seat,
                now,
                finished=finished,
                command=payload,
                fingerprint=fingerprint,
                next_deadline_ms=due,
                late=made,
            )
        except VersionConflict as error:
            return await self._answered_or_conflict(folded, command_id, error)
        except GameNotFound as error:
            raise store_error(error) from None
        made(result)
        if not result.duplicate:
            return result, finished, state
        return result, folded.record.finished, folded.state

    async def _answered_or_conflict(
        self, folded: Folded, command_id: str, conflict: VersionConflict
    ) -> tuple[CommandResult, bool, GameState]:
        """The game moved on under a command: if that was the same command id answered
        meanwhile (a retry racing its first attempt), its first answer; else ABORTED."""
        answered = await self.log.result_of(folded.record.game_id, command_id)
        if answered is None:
            raise store_error(conflict)
        return answered, folded.record.finished, folded.state

    async def tick(self, game_id: str) -> int:
        """Record what time has made due in ``game_id`` (a closed claim window's award), as a batch
        of its own at this instant, without waiting for the next command. Returns the game's
        version. A replica that loses the race to another tick or to a command records nothing:
        the version check decides, and the command records what is due itself."""
        require(game_id, "game_id")
        limits.check_text(game_id, "game_id", limits.MAX_GAME_ID)
        running = self._ticks.get(game_id)
        if running is not None and not running.done():
            return await asyncio.shield(running)
        task = asyncio.get_running_loop().create_task(self._tick_once(game_id))
        self._ticks[game_id] = task
        task.add_done_callback(lambda done: self._forget_tick(game_id, done))
        return await asyncio.shield(task)

    def _forget_tick(self, game_id: str, done: asyncio.Future[int]) -> None:
        if self._ticks.get(game_id) is done:
            del self._ticks[game_id]
        # Retrieved here: every caller waiting on it may have gone (a stream closed).
        failure = None if done.cancelled() else done.exception()
        # A game of a newer release: the sweeper says so, once a while (each tick would).
        if failure is not None and not isinstance(failure, NewerRelease):
            log_failure(log, "tick failed", failure, game_id=game_id)

    def _current(self, folded: Folded) -> bool:
        """Whether this process's copy of a game is as new as anything the process heard of (its
        own appends, and other replicas' through the store's listener): good enough to decide a
        tick on. The append checks the version, so a game that moved on unheard costs a
        conflict and a read, never a fork."""
        return folded.version >= self.notifier.latest(folded.record.game_id)

    async def _tick_once(self, game_id: str) -> int:
        cached = self.cache.get(game_id)
        if cached is not None and self._current(cached):
            try:
                ticked = await self._tick(cached)
            except VersionConflict:
                ticked = None
            if ticked is not None:
                return ticked
            # Moved on, or nothing due in it: the store (where the deadline was due) knows more.
        folded, _ = await self._fold(game_id)
        try:
            ticked = await self._tick(folded)
        except VersionConflict:
            return (await self._fold(game_id))[0].version
        return folded.version if ticked is None else ticked

    async def _tick(self, folded: Folded) -> int | None:
        """:meth:`tick` on ``folded``: the version after it, ``None`` if nothing is due there;
        raises :class:`VersionConflict` if the log has moved on."""
        game_id, game = folded.record.game_id, folded.binding.game
        now = self.clock()
        state, events = self._due(folded, folded.state, now)
        if not events:
            return None
        for event in events:
            state = game.evolve(state, event)
        finished = game.is_finished(state)
        new = self._with_seed(folded, _new_events(folded.binding, events), finished)
        # The id names the version it ticks from, so replicas racing one tick dedupe.
        due = None if finished else game.next_deadline(state)
        result = await self.log.append(
            game_id,
            folded.version,
            new,
            f"{TICK}{folded.version}",
            None,  # no seat: time made it due
            now,
            finished=finished,
            next_deadline_ms=due,  # no command: nothing to store, nothing for a retry to match
            rank=Rank.CLOCK,  # late already: before the commands waiting for the store
        )
        if not result.duplicate:
            self._remember(folded, state, events, result, finished, now)
            self._armed(due, game_id)
            late = [e.deadline_ms for e in events if isinstance(e, TurnTimedOut)]
            for deadline in late:
                self.observer.timed_out(folded.record.kind, now - deadline)
            if late:
                # game_id, as every other line about one game names it: one filter finds them all.
                log.info("time-outs recorded", game_id=game_id, lateness_ms=[now - d for d in late])
            restarted = [e for e in events if isinstance(e, TurnRestarted)]
            for _ in restarted:
                self.observer.turn_restarted(folded.record.kind)
            if restarted:
                # Deadlines this service was not there to keep (it was down, or its store away).
                log.warning(
                    "turns restarted after an outage",
                    game_id=game_id,
                    seats=[e.seat for e in restarted],
                    lateness_ms=[e.at_ms - e.deadline_ms for e in restarted],
                )
        return result.last_version

    def _armed(self, due: int | None, game_id: str) -> None:
        """Tell the sweeper of a deadline this process just recorded (it may be the soonest)."""
        if due is not None and self.on_deadline is not None:
            self.on_deadline(due, game_id)

    def due_here(self, game_id: str, now: int) -> bool:
        """Whether this process holds the game current (:meth:`_current`) and something falls due
        in it by ``now`` (a turn's deadline, a claim window's close): a tick may go ahead on it
        without asking the store first."""
        cached = self.cache.peek(game_id)
        return cached is not None and self._current(cached) and self._deadline_passed(cached, now)

    def _with_seed(self, folded: Folded, new: list[NewEvent], finished: bool) -> list[NewEvent]:
        """The batch, with the revealed seed after it when it ends the game."""
        if finished:
            seed = service_pb2.EventBody(
                seed_revealed=service_pb2.SeedRevealed(server_seed=folded.record.server_seed.hex())
            )
            new.append(NewEvent("SeedRevealed", seed.SerializeToString(deterministic=True)))
        return new

    def _remember(
        self,
        folded: Folded,
        state: GameState,
        events: Sequence[Any],
        result: CommandResult,
        finished: bool,
        now: int,
    ) -> None:
        """Cache the game as this process just wrote it and wake its streams."""
        version = result.last_version
        self.recent.add(folded.record.game_id, result.events, version, finished)
        # The streams present these events next: they are the engine's events just decided, so
        # their bytes need not be read back (every event reads back as it was written: a test of
        # the contract checks it on random games).
        for stored, event in zip(result.events, events, strict=False):  # the seed: read back
            self.decoded.put((stored.game_id, stored.version), (event, complete_event(stored)))
        record = replaced(folded.record, version=version, finished=finished)
        updated = Folded(
            record,
            folded.binding,
            state,
            version,
            None if folded.events is None else folded.events + tuple(events),
            now,
            folded.snapshot_version,
        )
        self.cache.put(self._maybe_snapshot(updated))
        self.notifier.notify(record.game_id, version)

    def _take_allowance(self, game_id: str, acting: int) -> None:
        """One command of the seat's allowance (app/ratelimit.py), or :class:`RateLimited`."""
        wait_ms = self.rate.take((game_id, acting), self.clock())
        if wait_ms:
            raise RateLimited(
                f"seat {acting} sends commands faster than {self.rate.limit.per_second:g}/s; "
                f"retry in {wait_ms} ms",
                wait_ms,
            )

    async def validate(
        self, caller: Caller, game_id: str, command: service_pb2.Command, seat: int | None = None
    ) -> service_pb2.ValidateCommandResponse:
        acting = seat_of(caller, game_id, seat)
        # A dry run of a command costs the engine's check of it each time (no answer is kept to
        # share, as legal moves are per version): it draws on the same allowance, so that a seat
        # looping on it cannot take the server's CPU from everyone.
        self._take_allowance(game_id, acting)
        folded, _ = await self._fold(game_id, seat=acting)
        # As _apply checks a submitted command's bytes before it is decided.
        limits.check_command_size(command.ByteSize())
        engine_command = self._command(folded, command)
        try:
            folded.binding.game.validate(self._as_of_now(folded), acting, engine_command)
        except CommandError as error:
            return service_pb2.ValidateCommandResponse(
                accepted=False, rejection=rejection(error), version=folded.version
            )
        return service_pb2.ValidateCommandResponse(accepted=True, version=folded.version)

    async def legal_moves(
        self, caller: Caller, game_id: str, seat: int | None = None
    ) -> service_pb2.ListLegalMovesResponse:
        acting = seat_of(caller, game_id, seat)
        folded, _ = await self._fold(game_id, seat=acting)
        now = self._as_of_now(folded)
        at = folded.version if now is folded.state else None
        return service_pb2.ListLegalMovesResponse(
            version=folded.version,
            moves=self._moves(folded, now, at, acting),
            complete=folded.binding.game.legal_moves_complete(now, acting),
        )

    async def view(
        self, caller: Caller, game_id: str, seat: int | None = None
    ) -> service_pb2.GetViewResponse:
        acting = watcher(caller, game_id, seat)
        folded, _ = await self._fold(game_id, seat=acting)
        game, now = folded.binding.game, self._as_of_now(folded)
        at = folded.version if now is folded.state else None
        return service_pb2.GetViewResponse(
            view=self._view(folded, now, at, acting),
            version=folded.version,
            # As of now, as the view and who is to act: an award due may have ended the game.
            finished=game.is_finished(now),
            to_act=self._to_act(folded, now, acting),
        )

    def subscribe(
        self,
        caller: Caller,
        game_id: str,
        after_version: int = 0,
        include: service_pb2.Include | None = None,
        batched: bool = False,
        heartbeat_s: int = 0,
    ) -> AsyncGenerator[service_pb2.StreamEventsResponse]:
        """The seat's copies of the game's events after ``after_version``, live, until the game
        ends (:meth:`croupier.app.streams.Streams.subscribe`). Nothing runs until it is iterated."""
        return self.streams.subscribe(caller, game_id, after_version, include, batched, heartbeat_s)

    def play(
        self, caller: Caller, requests: AsyncIterator[service_pb2.PlayRequest]
    ) -> AsyncIterator[service_pb2.PlayResponse | Refused]:
        """One seat's connection: its join, its commands, the game's events and its state
        (:meth:`croupier.app.streams.Streams.play`). Nothing runs until it is iterated."""
        return self.streams.play(caller, requests)

    async def settlement(
        self, caller: Caller, game_id: str, round_number: int = 0, final: bool = False
    ) -> common_pb2.Settlement:
        """A finished round's itemized settlement (0: the last), or the whole game's."""
        seat = seat_or_spectator(caller, game_id)
        folded = await self._with_events(await self._fold_as_ended(game_id, seat))
        game, events = folded.binding.game, list(folded.events or ())
        if final:
            whole = game.final_settlement(events)
            if whole is None:
                raise NotNow("GAME_NOT_FINISHED", "the game is not over yet")
            return _settlement(whole)
        settlements = game.settlements(events)
        if not settlements:
            if folded.record.finished:  # ended by a forfeit or abandoned before a round did
                raise NotNow(
                    "ROUND_NOT_FINISHED",
                    "the game ended before any round did: its settlement is the final one "
                    "(ask with final)",
                )
            raise NotNow("ROUND_NOT_FINISHED", "no round of this game has finished yet")
        index = round_number - 1 if round_number else len(settlements) - 1
        if not 0 <= index < len(settlements):
            raise NotFound(
                "ROUND_NOT_FOUND",
                f"round {round_number} has not finished",
                {"rounds": str(len(settlements))},
            )
        return _settlement(settlements[index])

    async def replay(self, caller: Caller, game_id: str) -> service_pb2.GetReplayResponse:
        """The game's log as the caller may see it (:meth:`croupier.app.replaying.Replays.replay`)."""
        return await self.replays.replay(caller, game_id)

    async def _fold_as_ended(self, game_id: str, seat: int | None = None) -> Folded:
        """The game as its log stands; if what time has made due ends it (a last time-out the
        sweeper has not recorded yet), recorded first: a view already shows it finished, and
        its settlement, its whole replay and its export are then to be had at once. ``seat``:
        the caller's, refused if the game does not have it (:func:`croupier.app.callers.at_table`)."""
        folded, _ = await self._fold(game_id, seat=seat)
        game = folded.binding.game
        if folded.record.finished or not game.is_finished(self._as_of_now(folded)):
            return folded
        try:
            await self.tick(game_id)
        except AppError as error:  # the store away: the read answers as the log stands
            log.warning("a read's tick failed", game_id=game_id, reason=error.reason)
            return folded
        return (await self._fold(game_id))[0]

    async def _replay(
        self, folded: Folded, seat: int | None, complete: bool
    ) -> service_pb2.GetReplayResponse:
        """The game's log for ``seat``: complete (with the seed) or redacted as during play."""
        record, state = folded.record, folded.state
        stored = await self.log.read(record.game_id)
        folded = await self._with_events(folded)
        first = folded.events[0] if folded.events else None
        return service_pb2.GetReplayResponse(
            game_id=record.game_id,
            kind=folded.binding.kind,
            rules=folded.binding.rules_to_proto(state.rules),
            seats=record.seats,
            commitment=record.commitment,
            client_seeds=list(state.client_seeds),
            # The engine version that recorded the game (its first event), not the running one.
            engine_version=first.engine_version if first is not None else ENGINE_VERSION,
            finished=record.finished,
            server_seed=record.server_seed.hex() if complete else "",
            events=[self._present(folded.binding, e, seat, complete) for e in stored],
            log_format=record.log_format,
        )

    async def export_replay(self, caller: Caller, game_id: str, as_json: bool = False) -> bytes:
        """The finished game's replay file (:meth:`croupier.app.replaying.Replays.export_replay`)."""
        return await self.replays.export_replay(caller, game_id, as_json)

    async def verify_replay(self, data: bytes) -> tuple[Report, SignatureCheck]:
        """A replay file verified (:meth:`croupier.app.replaying.Replays.verify_replay`)."""
        return await self.replays.verify_replay(data)

    async def recent_games(self, caller: Caller) -> service_pb2.ListRecentGamesResponse:
        """The calling player's latest finished games, with outcome and settlement."""
        player = player_of(caller)
        response = service_pb2.ListRecentGamesResponse(player=player)
        recent = await self.log.recent_games(player, RECENT_GAMES)
        seats = {record.game_id: at for record, at in recent}
        # Two reads in all: the player's games, then every one of them at once.
        for folded in await self._fold_many([record.game_id for record, _ in recent]):
            folded = await self._with_events(folded)
            final = folded.binding.game.final_settlement(list(folded.events or ()))
            if final is None:  # pragma: no cover - the store lists finished games only
                continue
            at = seats[folded.record.game_id]
            response.games.append(
                service_pb2.RecentGame(
                    game_id=folded.record.game_id,
                    kind=folded.binding.kind,
                    seat=at,
                    finished_at_ms=folded.last_at_ms,
                    outcome=final.outcome,
                    net=final.net[at],
                    settlement=_settlement(final),
                )
            )
        return response

    async def recent_game(
        self, caller: Caller, recent_game_id: str
    ) -> service_pb2.GetReplayResponse:
        """One of the calling player's finished games as their seat saw it (redacted, no seed)."""
        player = player_of(caller)
        require(recent_game_id, "recent_game_id")
        limits.check_text(recent_game_id, "recent_game_id", limits.MAX_GAME_ID)
        seats = [s for s, p in enumerate(await self.log.players(recent_game_id)) if p == player]
        folded = None
        if seats:
            try:
                folded, _ = await self._fold(recent_game_id)
            except NotFound:
                folded = None
        if folded is None or not folded.record.finished:
            raise NotFound("NOT_A_RECENT_GAME", "not one of this player's finished games")
        return await self._replay(folded, seats[0], complete=False)

    def presets(self, kind: common_pb2.GameKind.ValueType) -> list[service_pb2.Preset]:
        binding = _binding(kind)
        game = binding.game
        return [
            service_pb2.Preset(
                name=name,
                description=game.preset_description(name),
                rules=binding.rules_to_proto(rules),
                is_default=name == game.default_preset,
            )
            for name, rules in game.presets().items()
        ]
