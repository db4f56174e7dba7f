"""What a database offers the log: the recorder contract every store passes (``tests/store``).

The database decides every race: the unique keys (game id, version) and (game id, command id) make
appends optimistic and commands idempotent; no Python lock is trusted across processes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from croupier.log.records import (
    CommandResult,
    CreateRequest,
    GameRecord,
    Loaded,
    NewEvent,
    PoolStats,
    SeatInPlay,
    Snapshot,
    StoredEvent,
    UsedTicket,
)


class StoreError(Exception):
    """Base of the store's errors."""


class GameNotFound(StoreError):
    def __init__(self, game_id: str) -> None:
        super().__init__(f"no game {game_id!r}")
        self.game_id = game_id


class AlreadyCreated(StoreError):
    """A creation's request id made a game before: nothing was written. ``game_id`` is that
    game, ``version`` its version when made, ``commitment`` its seeds' commitment and
    ``fingerprint`` the hash of the request that made it (:class:`CreateRequest`)."""

    def __init__(
        self, request_id: str, game_id: str, version: int, commitment: str, fingerprint: bytes
    ) -> None:
        super().__init__(f"request {request_id!r} made game {game_id} before")
        self.request_id = request_id
        self.game_id = game_id
        self.version = version
        self.commitment = commitment
        self.fingerprint = fingerprint


class TicketUsed(StoreError):
    """A creation's seed ticket made a game before (in any process): nothing was written."""

    def __init__(self, ticket_id: str) -> None:
        super().__init__("the seed ticket made a game before")
        self.ticket_id = ticket_id


class StoreBusy(StoreError):
    """A call that may not wait found another writer holding the database's lock; it did
    nothing (see :meth:`EventStore.without_waiting`)."""


class HeldBack(StoreBusy):
    """A write that may not wait was held back for a moment by the store's own work (SQLite's
    checkpoint letting the WAL start over); it did nothing, and may be tried again at once."""


class StoreUnavailable(StoreError):
    """The database could not be reached, or the connection was lost during the call (a
    restart, a failover, a network that dropped it), or its lock was not had in the time a call
    may wait. A read did nothing; whether a write went through is not known: sent again with the
    same command id, it is applied once."""


class GameLocked(StoreUnavailable):
    """Another transaction held what a call on a game had to lock (the game's row; for a
    creation, its request id) for longer than a call waits for it (PostgreSQL's ``lock_timeout``): a replica frozen in the middle of an append, a
    session left idle in its transaction. The call did nothing (its transaction was rolled
    back): sent again as it was, a command is applied once. The database answered, so this is no
    outage of the store: the other games' calls go on."""

    def __init__(self, game_id: str, waited_s: float) -> None:
        super().__init__(
            f"game {game_id} is held by another transaction: not had within {waited_s:g} s"
        )
        self.game_id = game_id
        self.waited_s = waited_s


class VersionConflict(StoreError):
    """The game moved on: the expected version is not the current one."""

    def __init__(self, game_id: str, expected: int, current: int) -> None:
        super().__init__(f"game {game_id} is at version {current}, not {expected}")
        self.game_id = game_id
        self.expected = expected
        self.current = current


#: Called with (game id, version) after an append lands, by any process on the store.
AppendListener = Callable[[str, int], None]


@dataclass(frozen=True)
class AppendPoll:
    """A look the event loop makes itself, every ``every_s``, for appends made through other
    connections (:meth:`EventStore.append_poll`): each call of ``poll`` answers the games that
    grew since the last, with their newest version, at once and without waiting."""

    poll: Callable[[], list[tuple[str, int]]]
    every_s: float


class LoopAppender(ABC):
    """Appends a store makes on the application's event loop, over connections that do not
    block it (:meth:`EventStore.loop_appender`): the common append, at the version where the store
    knows the game's chain ends, in one round trip, with no thread between the loop and the
    database. Anything else is left to the store's own :meth:`EventStore.append` (on a thread)."""

    @abstractmethod
    async def append(
        self,
        game_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        command_id: str,
        seat: int | None,
        recorded_at_ms: int,
        *,
        finished: bool,
        command: bytes,
        fingerprint: bytes,
        next_deadline_ms: int | None,
    ) -> CommandResult | None:
        """As :meth:`EventStore.append` when it appended; ``None`` when it did not (the store
        does not know where the game ends, or the database found something else there: a retry,
        another replica's append, no such game; or its connection broke, so that whether it did
        is not known): then the store's own append answers, which reads the command's result
        first."""

    @abstractmethod
    async def close(self) -> None:
        """Close its connections (on the loop that made them)."""


class LoopListener(ABC):
    """Hears other processes' appends on the application's event loop, over a connection that
    does not block it (:meth:`EventStore.listen_on_loop`), in place of :meth:`EventStore.listen`'s
    thread."""

    @abstractmethod
    async def run(self, listener: AppendListener) -> None:
        """Until cancelled: call ``listener``, on the loop, for each append another process
        makes; after a lost connection, connect again."""


class EventStore(ABC):
    """What the application needs of a database. Methods block; the application calls them off
    its event loop. Subclasses differ only in connections and dialect."""

    url: str
    #: Whether writes must go through one writer (SQLite: one write lock for the whole file).
    single_writer: bool = False

    @abstractmethod
    def create_game(
        self,
        game: GameRecord,
        events: Sequence[NewEvent],
        recorded_at_ms: int,
        players: Sequence[str] = (),
        next_deadline_ms: int | None = None,
        request: CreateRequest | None = None,
        ticket: UsedTicket | None = None,
    ) -> tuple[StoredEvent, ...]:
        """Store a new game with its opening events (and who sits where, if known); returns the
        stored events (the game's version is the last one's). ``next_deadline_ms``: when it
        first has something due by time alone (see :meth:`claim_due`). With a ``request``
        whose id made a game before (in any process), nothing is written and
        :class:`AlreadyCreated` names that game: the database's unique key decides between
        two attempts made at once. With a ``ticket`` (a seed ticket) that made a game before,
        nothing is written and :class:`TicketUsed` says so (the request id is checked first: a
        retry of the creation that used the ticket is :class:`AlreadyCreated`). The ticket is
        recorded in the transaction that stores the game, so that neither is kept without the
        other; the record is forgotten some time after the ticket expires."""

    @abstractmethod
    def created_by(self, request_id: str) -> AlreadyCreated | None:
        """What a creation's request id made, as :meth:`create_game` would refuse it again
        (:class:`AlreadyCreated`), or None when it made no game. A read only: for a retry that
        can no longer be created (its options refused since), to find its first answer."""

    @abstractmethod
    def game(self, game_id: str) -> GameRecord:
        """The game's record; raises :class:`GameNotFound`."""

    @abstractmethod
    def load(
        self, game_id: str, after_version: int = 0, command_id: str = "", snapshot: str = ""
    ) -> Loaded:
        """In one read: the game's record, its events after ``after_version`` and, if
        ``command_id`` is given, that command's first result; raises :class:`GameNotFound`.

        With a ``snapshot`` format, the game's latest snapshot of that format past
        ``after_version`` comes too, and the events are those after the snapshot."""

    @abstractmethod
    def save_snapshot(self, snapshot: Snapshot) -> None:
        """Keep ``snapshot`` as the game's latest of its format (one at the same version replaces
        it, an older one is not kept)."""

    @abstractmethod
    def load_many(self, wanted: Sequence[tuple[str, int]]) -> list[Loaded]:
        """:meth:`load` for several (game id, after version) pairs in one read, in the order asked;
        unknown games are left out."""

    @abstractmethod
    def append(
        self,
        game_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        command_id: str,
        seat: int | None,
        recorded_at_ms: int,
        *,
        finished: bool = False,
        command: bytes = b"",
        fingerprint: bytes = b"",
        next_deadline_ms: int | None = None,
    ) -> CommandResult:
        """Append atomically if the game is at ``expected_version`` (else :class:`VersionConflict`).

        A command id seen before returns its first result (``duplicate=True``, with the
        ``fingerprint`` it was first given: the caller tells a retry from a reuse) and writes
        nothing; a new one returns the stored events with it. The chain is hashed in the game's
        log format (``croupier.log.chain``). ``next_deadline_ms`` replaces the game's next
        deadline (and frees it for the next sweep).
        """

    @abstractmethod
    def record_rejection(
        self,
        game_id: str,
        command_id: str,
        rejection: bytes,
        version: int,
        fingerprint: bytes = b"",
    ) -> CommandResult:
        """Remember that a command was refused at ``version``, so that a retry gets the same
        answer (a command id answered before keeps its first answer, which is returned). If the
        game is no longer at ``version``, the refusal was decided on an older state and might
        not stand: nothing is written and :class:`VersionConflict` is raised."""

    @abstractmethod
    def result_of(self, game_id: str, command_id: str) -> CommandResult | None: ...

    @abstractmethod
    def claim_due(self, now_ms: int, lease_ms: int, limit: int) -> list[str]:
        """Up to ``limit`` unfinished games whose next deadline is at or before ``now_ms`` and
        that no one has claimed (or whose claim has lapsed), the most overdue first, each now
        claimed for ``lease_ms``: of several replicas sweeping at once, one gets each game."""

    @abstractmethod
    def hand_back(self, game_id: str, until_ms: int) -> None:
        """A game this process claimed (:meth:`claim_due`) and will not tick: its claim lasts only
        until ``until_ms``, after which any replica may claim it."""

    @abstractmethod
    def next_due(self) -> int | None:
        """When :meth:`claim_due` will next have a game to give: the earliest next deadline of
        any game (a claimed one's once its lease lapses), or ``None``."""

    @abstractmethod
    def read(self, game_id: str, after_version: int = 0) -> list[StoredEvent]: ...

    @abstractmethod
    def versions(self, game_ids: Sequence[str]) -> dict[str, int]:
        """The version each named game has reached, in one read; unknown games are left out.
        How a process finds the appends it was not told of (a notice lost while its listener
        reconnected), for every game it streams at once."""

    @abstractmethod
    def players(self, game_id: str) -> tuple[str, ...]:
        """The player id at each seat, or ``()`` when the game was created without them."""

    @abstractmethod
    def recent_games(self, player: str, limit: int) -> list[tuple[GameRecord, int]]:
        """The player's last ``limit`` finished games, the latest first, as (record, seat)."""

    @abstractmethod
    def seats_in_play(self, players: Sequence[str], limit: int) -> list[SeatInPlay]:
        """The seats any of ``players`` hold in games not yet finished, at most ``limit`` of
        them, the games last moved in first (and by game id, then seat). How the lobby finds
        the games its bots were playing again after a restart (service/lobby.py)."""

    @abstractmethod
    def close(self) -> None: ...

    def pool_stats(self) -> PoolStats | None:
        """Its pool of connections for calls on threads, as it is now; ``None`` where it keeps
        none (SQLite's connections are one per thread)."""
        return None

    def without_waiting(self) -> EventStore | None:
        """The same store for calls made on the application's event loop, where no call may
        wait for another: each either does its work at once (a local file's work) or, finding
        another writer holding the lock, raises :class:`StoreBusy` having done nothing. ``None``
        where a call always waits on something (a database over the network): then every call
        goes to a worker thread."""
        return None

    def loop_appender(self) -> LoopAppender | None:
        """Appends the event loop can make without a thread (a database with a non-blocking
        driver: PostgreSQL), each made once the first is asked for; ``None`` where appends go
        through :meth:`without_waiting` or a thread."""
        return None

    # -- appends by other processes ---------------------------------------------------------------

    def listen(self, listener: AppendListener) -> None:  # noqa: B027 - a hook, empty by default
        """Call ``listener`` whenever another process appends to a game (from any thread).

        The application hears its own appends; PostgreSQL adds LISTEN/NOTIFY, SQLite a poller
        of its file (several workers on one file).
        """

    def listen_on_loop(self, listener: AppendListener) -> LoopListener | None:
        """Hear other processes' appends on the event loop rather than on a thread: where the
        store can, it returns what the loop runs (:class:`LoopListener`), and calls ``listener``
        (from any thread) only for what its own calls learn of another's appends. ``None``:
        :meth:`listen` it is."""
        return None

    def append_poll(self) -> AppendPoll | None:
        """On the store for the event loop (:meth:`without_waiting`): a poll the loop can make
        in place of :meth:`listen`'s thread (SQLite: a look at the file's change counter, a few
        microseconds), from now on; ``None`` where appends are heard otherwise."""
        return None

    def wait_listening(self, timeout: float) -> bool:
        """Wait until appends from now on are heard by :meth:`listen`'s listeners (a listener
        connection comes up on its own thread)."""
        return True
