"""One contract for every event store, run against SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import inspect
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from croupier.log import (
    GENESIS_HASH,
    LOG_FORMAT_VERSION,
    PLAIN_FORMAT,
    AlreadyCreated,
    CommandResult,
    CreateRequest,
    EventStore,
    GameNotFound,
    GameRecord,
    NewEvent,
    SeatInPlay,
    Snapshot,
    StoreBusy,
    StoreError,
    TicketUsed,
    UsedTicket,
    VersionConflict,
    key_of,
    verify_chain,
)
from croupier.service.store import open_store
from croupier.service.store.sql import TICKET_KEPT_AFTER_EXPIRY_MS


def new_game(store: EventStore, events: int = 2, log_format: int = LOG_FORMAT_VERSION) -> str:
    game_id = str(uuid.uuid4())
    store.create_game(
        GameRecord(game_id, "hoola", 2, b"s" * 32, "c" * 64, 1, log_format=log_format),
        [NewEvent(f"E{i}", bytes([i]) * 3) for i in range(events)],
        10,
    )
    return game_id


def ticketed_game(store: EventStore, ticket: UsedTicket, at_ms: int) -> str:
    """A new game made with ``ticket`` at ``at_ms`` (its creation and its record's time)."""
    game_id = str(uuid.uuid4())
    store.create_game(
        GameRecord(game_id, "hoola", 2, b"s" * 32, "c" * 64, at_ms),
        [NewEvent("E0", b"zero")],
        at_ms,
        ticket=ticket,
    )
    return game_id


def chain_breaks_at(store: EventStore, game_id: str) -> int | None:
    """Where the game's stored chain first fails, checked in the game's own log format."""
    return verify_chain(store.read(game_id), key_of(store.game(game_id)))


@dataclasses.dataclass(frozen=True)
class Race:
    """Creations made at once: each attempt's game id, and which made its game, which the
    database's unique key refused (the store's error), and which found the store busy."""

    tried: list[str]
    made: list[str]
    refused: list[StoreError]
    busy: list[str]


def creations_at_once(
    store: EventStore,
    request: Callable[[int], CreateRequest],
    ticket: UsedTicket | None = None,
    attempts: int = 8,
) -> Race:
    """``attempts`` creations racing on two stores of one database (two replicas), attempt ``i``
    with ``request(i)`` and ``ticket``: one makes its game, and nothing of any other is left."""
    other = open_store(store.url)
    barrier = threading.Barrier(attempts)
    race = Race([str(uuid.uuid4()) for _ in range(attempts)], [], [], [])

    def attempt(i: int) -> None:
        on = store if i % 2 else other
        barrier.wait()
        try:
            on.create_game(
                GameRecord(race.tried[i], "hoola", 2, b"s" * 32, "c" * 64, 1),
                [NewEvent("E0", bytes([i]))],
                10,
                request=request(i),
                ticket=ticket,
            )
            race.made.append(race.tried[i])
        except (AlreadyCreated, TicketUsed) as error:
            race.refused.append(error)
        except StoreBusy:
            race.busy.append(race.tried[i])

    try:
        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(attempts)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        other.close()
    assert len(race.made) == 1 and len(race.made) + len(race.refused) + len(race.busy) == attempts
    for game_id in race.tried:
        if game_id != race.made[0]:
            with pytest.raises(GameNotFound):
                store.game(game_id)
    return race


class StoreContract:
    """Subclasses provide ``store``; every test here must pass on every backend."""

    #: Whether a write may answer :class:`StoreBusy` (having written nothing) rather than wait for
    #: another writer's lock: the view of a store for the event loop (``without_waiting``).
    may_be_busy = False

    @pytest.fixture
    def store(self) -> Iterator[EventStore]:
        raise NotImplementedError

    def test_create_answers_with_the_stored_events(self, store: EventStore) -> None:
        game_id = str(uuid.uuid4())
        stored = store.create_game(
            GameRecord(game_id, "hoola", 2, b"s" * 32, "c" * 64, 1),
            [NewEvent("E0", b"zero"), NewEvent("E1", b"one")],
            10,
        )
        assert list(stored) == store.read(game_id) and stored[-1].version == 2

    def test_create_and_read(self, store: EventStore) -> None:
        game_id = new_game(store)
        record = store.game(game_id)
        assert (record.version, record.kind, record.seats, record.finished) == (
            2,
            "hoola",
            2,
            False,
        )
        assert record.server_seed == b"s" * 32
        events = store.read(game_id)
        assert [e.version for e in events] == [1, 2]
        assert [e.payload for e in events] == [b"\x00" * 3, b"\x01" * 3]
        assert events[0].prev_hash == GENESIS_HASH and events[1].prev_hash == events[0].hash
        assert store.read(game_id, after_version=1) == events[1:]

    def test_unknown_game(self, store: EventStore) -> None:
        with pytest.raises(GameNotFound):
            store.game("nope")
        with pytest.raises(GameNotFound):
            store.read("nope")
        with pytest.raises(GameNotFound):
            store.append("nope", 0, [NewEvent("E", b"")], "c", 0, 1)

    def test_append_at_the_expected_version(self, store: EventStore) -> None:
        game_id = new_game(store)
        result = store.append(
            game_id,
            2,
            [NewEvent("A", b"a"), NewEvent("B", b"b")],
            "cmd",
            1,
            20,
            finished=True,
            command=b"the command",
        )
        assert (result.accepted, result.first_version, result.last_version, result.duplicate) == (
            True,
            3,
            4,
            False,
        )
        record = store.game(game_id)
        assert record.version == 4 and record.finished
        events = store.read(game_id)
        assert [(e.seat, e.command_id, e.type, e.command) for e in events[2:]] == [
            (1, "cmd", "A", b"the command"),
            (1, "cmd", "B", b""),
        ]
        assert chain_breaks_at(store, game_id) is None
        # The append answers with what it stored, so the caller need not read it back.
        assert list(result.events) == events[2:]

    def test_one_load_reads_the_row_the_new_events_and_a_commands_answer(
        self, store: EventStore
    ) -> None:
        game_id = new_game(store, events=3)
        loaded = store.load(game_id, 1, "cmd")
        assert loaded.record == store.game(game_id) and loaded.earlier is None
        assert list(loaded.events) == store.read(game_id, 1)
        store.append(game_id, 3, [NewEvent("A", b"a")], "cmd", 0, 20)
        again = store.load(game_id, 3, "cmd")
        assert again.record.version == 4 and [e.version for e in again.events] == [4]
        assert again.earlier == store.result_of(game_id, "cmd") and again.earlier is not None
        assert store.load(game_id, 4).events == ()
        with pytest.raises(GameNotFound):
            store.load("nope")

    def test_the_latest_snapshot_comes_with_the_events_after_it(self, store: EventStore) -> None:
        game_id = new_game(store, events=4)
        assert store.load(game_id, 0, snapshot="f1").snapshot is None
        store.save_snapshot(Snapshot(game_id, "f1", 2, b"state at 2", "seal"))
        store.save_snapshot(Snapshot(game_id, "f1", 3, b"state at 3", "seal 3"))
        store.save_snapshot(Snapshot(game_id, "f1", 1, b"older: not kept", "x"))
        # One at the same version replaces it (a new secret's seal after a restart).
        store.save_snapshot(Snapshot(game_id, "f1", 3, b"state at 3", "seal 3"))
        store.save_snapshot(Snapshot(game_id, "f2", 1, b"another format", "y"))
        loaded = store.load(game_id, 0, snapshot="f1")
        assert loaded.snapshot == Snapshot(game_id, "f1", 3, b"state at 3", "seal 3")
        assert [e.version for e in loaded.events] == [4]
        # A reader already past the snapshot gets no snapshot, and its own events.
        past = store.load(game_id, 3, snapshot="f1")
        assert past.snapshot is None and [e.version for e in past.events] == [4]
        assert store.load(game_id, 0, snapshot="f2").snapshot.version == 1  # type: ignore[union-attr]
        assert store.load(game_id, 0).snapshot is None

    def test_several_games_load_in_one_read(self, store: EventStore) -> None:
        games = [new_game(store, events=n) for n in (1, 3, 2)]
        wanted = [(games[0], 0), ("nope", 0), (games[1], 2), (games[2], 2)]
        loaded = store.load_many(wanted)
        assert [entry.record.game_id for entry in loaded] == [games[0], games[1], games[2]]
        assert [[e.version for e in entry.events] for entry in loaded] == [[1], [3], []]
        assert loaded[1].events == store.load(games[1], 2).events
        assert store.load_many([]) == []

    def test_the_versions_of_many_games_in_one_read(self, store: EventStore) -> None:
        """More games than one statement takes, some grown, one unknown (left out)."""
        from croupier.service.store.sql import VERSIONS_PER_STATEMENT

        games = [new_game(store, events=1) for _ in range(VERSIONS_PER_STATEMENT + 3)]
        grown = games[::7]
        for game_id in grown:
            store.append(game_id, 1, [NewEvent("E", b"x"), NewEvent("E", b"y")], "", None, 20)
        unknown = str(uuid.uuid4())
        versions = store.versions([*games, unknown])
        assert versions == {g: 3 if g in grown else 1 for g in games}
        assert store.versions([]) == {}

    def test_the_seats_players_hold_in_unfinished_games(self, store: EventStore) -> None:
        """Asked for two players' ids: the seats they hold in games not finished (a finished
        game, another player's and a game without players left out), the game last moved in
        first, each with its game's seat count and its last event's time."""

        run = uuid.uuid4().hex  # the players' ids this run's alone (a database may be shared)

        def seated(players: tuple[str, ...], at_ms: int) -> str:
            game_id = str(uuid.uuid4())
            record = GameRecord(game_id, "hoola", len(players), b"s" * 32, "c" * 64, at_ms)
            store.create_game(record, [NewEvent("E0", b"zero")], at_ms, [run + p for p in players])
            return game_id

        older = seated(("p", "bot-1", "bot-2"), 100)
        newer = seated(("q", "bot-1"), 200)
        moved = seated(("r", "bot-1"), 50)
        store.append(moved, 1, [NewEvent("E", b"x")], "c", 0, 300)
        finished = seated(("s", "bot-1"), 400)
        store.append(finished, 1, [NewEvent("E", b"x")], "c", 0, 400, finished=True)
        seated(("t", "u"), 500)
        new_game(store)
        wanted = [run + "bot-1", run + "bot-2"]
        assert store.seats_in_play(wanted, 10) == [
            SeatInPlay(moved, 1, wanted[0], 2, 300),
            SeatInPlay(newer, 1, wanted[0], 2, 200),
            SeatInPlay(older, 1, wanted[0], 3, 100),
            SeatInPlay(older, 2, wanted[1], 3, 100),
        ]
        assert store.seats_in_play(wanted, 2) == store.seats_in_play(wanted, 10)[:2]
        assert store.seats_in_play([], 10) == []

    @pytest.mark.parametrize("retry", [True, False], ids=["same-command", "other-command"])
    def test_an_append_waiting_for_anothers_lock_sees_what_it_wrote(
        self, store: EventStore, retry: bool
    ) -> None:
        """Two stores on one database append to one game at its version at once; the second
        waits while the first holds the game (it has written, not committed). Then a retry of
        the same command gets the first answer, and another command a conflict at the version
        the first made."""
        if self.may_be_busy:
            pytest.skip("the loop's view does not wait for another writer: it answers busy")
        game_id = new_game(store)
        first, second = open_store(store.url), open_store(store.url)
        write = first._write_append  # type: ignore[attr-defined]
        written = threading.Event()

        def held(*args: object, **kwargs: object) -> None:
            write(*args, **kwargs)
            written.set()
            time.sleep(0.5)  # the game stays locked: the second append waits

        first._write_append = held  # type: ignore[attr-defined]
        answers: dict[str, object] = {}

        def append_first() -> None:
            answers["first"] = first.append(game_id, 2, [NewEvent("A", b"a")], "cmd", 0, 20)

        try:
            thread = threading.Thread(target=append_first)
            thread.start()
            assert written.wait(10)
            try:
                answers["second"] = second.append(
                    game_id, 2, [NewEvent("B", b"b")], "cmd" if retry else "other", 0, 21
                )
            except VersionConflict as conflict:
                answers["second"] = conflict
            thread.join(10)
        finally:
            first.close()
            second.close()
        if retry:
            answer = answers["second"]
            assert isinstance(answer, CommandResult) and answer.duplicate
            assert answer.last_version == 3
        else:
            conflict = answers["second"]
            assert isinstance(conflict, VersionConflict) and conflict.current == 3
        assert [e.type for e in store.read(game_id)] == ["E0", "E1", "A"]
        assert chain_breaks_at(store, game_id) is None

    def test_a_stale_version_is_a_conflict_that_writes_nothing(self, store: EventStore) -> None:
        game_id = new_game(store)
        with pytest.raises(VersionConflict) as info:
            store.append(game_id, 1, [NewEvent("A", b"a")], "cmd", 0, 20)
        assert info.value.current == 2
        assert store.game(game_id).version == 2 and len(store.read(game_id)) == 2
        assert store.result_of(game_id, "cmd") is None

    def test_a_command_id_is_applied_once(self, store: EventStore) -> None:
        game_id = new_game(store)
        first = store.append(game_id, 2, [NewEvent("A", b"a")], "cmd", 0, 20)
        again = store.append(game_id, 2, [NewEvent("A", b"a")], "cmd", 0, 21)
        assert again.duplicate and (again.first_version, again.last_version) == (3, 3)
        assert not first.duplicate
        assert len(store.read(game_id)) == 3
        assert store.result_of(game_id, "cmd") == again

    def test_rejections_are_remembered(self, store: EventStore) -> None:
        game_id = new_game(store)
        result = store.record_rejection(game_id, "bad", b"why", 2)
        assert not result.accepted and result.rejection == b"why"
        # The same id later returns the first answer, even if the command would now pass.
        assert store.record_rejection(game_id, "bad", b"other", 2).rejection == b"why"
        assert store.append(game_id, 2, [NewEvent("A", b"a")], "bad", 0, 20).accepted is False
        assert store.game(game_id).version == 2

    def test_a_refusal_at_an_older_version_is_not_kept(self, store: EventStore) -> None:
        """A refusal decided on a copy of the game behind the store's (another replica appended
        meanwhile) might not stand: nothing is written, the conflict says where the game is, and
        the command id stays free for the command at the game's version."""
        game_id = new_game(store)
        store.append(game_id, 2, [NewEvent("A", b"a")], "other", 0, 20)
        with pytest.raises(VersionConflict) as info:
            store.record_rejection(game_id, "late", b"why", 2)
        assert (info.value.expected, info.value.current) == (2, 3)
        assert store.result_of(game_id, "late") is None
        assert store.append(game_id, 3, [NewEvent("B", b"b")], "late", 1, 30).accepted
        # A command answered before keeps its answer, whatever version its retry names.
        assert store.record_rejection(game_id, "other", b"why", 2).accepted
        assert store.record_rejection(game_id, "late", b"why", 3).last_version == 4

    def test_due_games_are_claimed_once_until_their_lease_lapses(self, store: EventStore) -> None:
        # Deadlines far ahead of real time: the sweepers of servers sharing this database (other
        # tests) must not claim this game first.
        at = 10**13
        game_id = new_game(store)
        store.append(game_id, 2, [NewEvent("A", b"a")], "cmd", 0, 20, next_deadline_ms=at)
        assert game_id not in store.claim_due(at - 1, 500, 1_000)  # not due yet
        due = store.next_due()
        assert due is not None and due <= at
        assert game_id in store.claim_due(at, 500, 1_000)
        # Claimed: nobody else gets it until the lease lapses, and it is not due before then.
        assert game_id not in store.claim_due(at + 200, 500, 1_000)
        assert game_id in store.claim_due(at + 501, 500, 1_000)
        # An append writes the next deadline (none: nothing is due) and frees the claim.
        store.append(game_id, 3, [NewEvent("B", b"b")], "cmd-2", 0, 30, next_deadline_ms=None)
        assert game_id not in store.claim_due(at * 10, 500, 1_000)

    @pytest.mark.parametrize("log_format", [PLAIN_FORMAT, LOG_FORMAT_VERSION])
    def test_the_chain_detects_tampering(self, store: EventStore, log_format: int) -> None:
        game_id = new_game(store, events=4, log_format=log_format)
        events = store.read(game_id)
        key = key_of(store.game(game_id))
        assert store.game(game_id).log_format == log_format
        assert verify_chain(events, key) is None
        import dataclasses

        forged = list(events)
        forged[2] = dataclasses.replace(events[2], payload=b"forged")
        assert verify_chain(forged, key) == 3
        forged[2] = dataclasses.replace(events[2], command=b"another command")
        assert verify_chain(forged, key) == 3
        assert verify_chain([events[0], events[2], events[1], events[3]], key) == 2

    def test_a_blinded_chain_needs_the_seed_to_check(self, store: EventStore) -> None:
        """Format 2: without the key (the seed is secret during play) nobody can recompute a
        hash, so a payload cannot be guessed by hashing candidates; with it the chain holds."""
        game_id = new_game(store, events=3)
        events = store.read(game_id)
        assert verify_chain(events, key_of(store.game(game_id))) is None
        assert verify_chain(events) == 1
        other_seed = dataclasses.replace(store.game(game_id), server_seed=b"t" * 32)
        assert verify_chain(events, key_of(other_seed)) == 1

    def test_a_command_ids_first_use_is_kept_with_it(self, store: EventStore) -> None:
        game_id = new_game(store)
        store.append(game_id, 2, [NewEvent("A", b"a")], "cmd", 0, 20, fingerprint=b"first")
        again = store.append(game_id, 2, [NewEvent("A", b"b")], "cmd", 1, 21, fingerprint=b"x")
        assert again.duplicate and again.fingerprint == b"first"
        refused = store.record_rejection(game_id, "no", b"why", 3, fingerprint=b"second")
        assert store.result_of(game_id, "no") == dataclasses.replace(refused, duplicate=True)
        assert store.result_of(game_id, "no").fingerprint == b"second"  # type: ignore[union-attr]

    def test_a_request_id_makes_one_game(self, store: EventStore) -> None:
        """A creation sent again with its request id writes nothing and names the game the first
        made, at the version it was made at, with the first request's fingerprint."""
        request = CreateRequest(f"req-{uuid.uuid4()}", b"asked")
        first, second = str(uuid.uuid4()), str(uuid.uuid4())
        made = store.create_game(
            GameRecord(first, "hoola", 2, b"s" * 32, "c" * 64, 1),
            [NewEvent("E0", b"zero"), NewEvent("E1", b"one")],
            10,
            ("ann", "bo"),
            request=request,
        )
        store.append(first, 2, [NewEvent("A", b"a")], "cmd", 0, 20)  # the game goes on
        with pytest.raises(AlreadyCreated) as told:
            store.create_game(
                GameRecord(second, "hoola", 2, b"t" * 32, "d" * 64, 2),
                [NewEvent("E0", b"other")],
                30,
                ("cy", "di"),
                request=dataclasses.replace(request, fingerprint=b"another"),
            )
        assert (told.value.game_id, told.value.version, told.value.commitment) == (
            first,
            made[-1].version,
            "c" * 64,
        )
        assert told.value.fingerprint == b"asked"  # the caller tells a retry from a reuse
        # The same, read without an attempt; an id that made nothing, nothing.
        read = store.created_by(request.request_id)
        assert read is not None
        assert (read.game_id, read.version, read.commitment, read.fingerprint) == (
            first,
            made[-1].version,
            "c" * 64,
            b"asked",
        )
        assert store.created_by(f"req-{uuid.uuid4()}") is None
        with pytest.raises(GameNotFound):
            store.game(second)  # nothing of the second attempt was kept
        assert store.game(first).version == 3
        # Without a request id, or with another, every creation makes a game.
        assert store.game(new_game(store)).version == 2
        store.create_game(
            GameRecord(second, "hoola", 2, b"t" * 32, "d" * 64, 2),
            [NewEvent("E0", b"other")],
            30,
            request=CreateRequest(f"req-{uuid.uuid4()}", b"asked"),
        )
        assert store.game(second).version == 1

    def test_attempts_of_one_request_made_at_once_make_one_game(self, store: EventStore) -> None:
        """Attempts racing on two stores of one database (two replicas): the database's unique
        key lets one make the game; every other is told of it and leaves nothing behind."""
        request = CreateRequest(f"req-{uuid.uuid4()}", b"asked")
        race = creations_at_once(store, lambda _: request)
        assert not race.busy or self.may_be_busy
        told = [error for error in race.refused if isinstance(error, AlreadyCreated)]
        assert len(told) == len(race.refused)  # every other attempt is told of the one game
        assert [error.game_id for error in told] == race.made * len(told)

    def test_a_seed_ticket_makes_one_game(self, store: EventStore) -> None:
        """A ticket's second game is refused with nothing written; a retry of the creation that
        used it (its request id) is that creation's game; without a ticket, nothing changes."""
        ticket = UsedTicket(uuid.uuid4().hex, 10_000)
        request = CreateRequest(f"req-{uuid.uuid4()}", b"asked")
        first, second, third = (str(uuid.uuid4()) for _ in range(3))

        def create(game_id: str, request: CreateRequest | None) -> None:
            store.create_game(
                GameRecord(game_id, "hoola", 2, b"s" * 32, "c" * 64, 1),
                [NewEvent("E0", b"zero")],
                10,
                request=request,
                ticket=ticket,
            )

        create(first, request)
        with pytest.raises(TicketUsed) as told:
            create(second, CreateRequest(f"req-{uuid.uuid4()}", b"asked"))
        assert told.value.ticket_id == ticket.ticket_id
        with pytest.raises(TicketUsed):
            create(second, None)
        with pytest.raises(AlreadyCreated) as retried:
            create(third, request)
        assert retried.value.game_id == first
        for game_id in (second, third):
            with pytest.raises(GameNotFound):
                store.game(game_id)  # nothing of a refused attempt was kept
        assert store.game(first).version == 1

    def test_expired_tickets_are_forgotten(self, store: EventStore) -> None:
        """A used ticket's record goes once its ticket is long expired (a ticketed creation
        forgets a few): the table does not grow with every game ever made."""
        old = UsedTicket(uuid.uuid4().hex, 1_000)
        ticketed_game(store, old, 10)
        later = old.expires_at_ms + TICKET_KEPT_AFTER_EXPIRY_MS + 1
        ticketed_game(store, UsedTicket(uuid.uuid4().hex, later + 10_000), later)
        # Forgotten: the store would take it again (the core refuses it first, as expired).
        ticketed_game(store, old, later)

    def test_a_used_ticket_is_kept_for_the_hour_after_it_expires(self, store: EventStore) -> None:
        """Within the hour after its expiry (replicas' clocks may disagree by less), a ticketed
        creation forgets other tickets but not this one: it still makes no second game."""
        used = UsedTicket(uuid.uuid4().hex, 1_000)
        ticketed_game(store, used, 10)
        within = used.expires_at_ms + TICKET_KEPT_AFTER_EXPIRY_MS - 1
        ticketed_game(store, UsedTicket(uuid.uuid4().hex, within + 10_000), within)
        with pytest.raises(TicketUsed):
            ticketed_game(store, used, within)

    def test_creations_with_one_ticket_at_once_make_one_game(self, store: EventStore) -> None:
        """Creations racing with one ticket and different request ids on two stores of one
        database (two replicas): one makes its game; every other is refused, leaving nothing."""
        ticket = UsedTicket(uuid.uuid4().hex, 10_000)
        race = creations_at_once(
            store, lambda _: CreateRequest(f"req-{uuid.uuid4()}", b"asked"), ticket
        )
        assert not race.busy or self.may_be_busy
        assert all(isinstance(refused, TicketUsed) for refused in race.refused)

    def test_concurrent_appends_at_one_version_one_wins(self, store: EventStore) -> None:
        game_id = new_game(store)
        outcomes: list[str] = []
        barrier = threading.Barrier(8)

        def attempt(i: int) -> None:
            barrier.wait()
            try:
                store.append(game_id, 2, [NewEvent("A", bytes([i]))], f"cmd-{i}", 0, 20)
                outcomes.append("ok")
            except VersionConflict:
                outcomes.append("conflict")
            except StoreBusy:
                outcomes.append("busy")

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert outcomes.count("ok") == 1 and len(outcomes) == 8
        assert outcomes.count("busy") == 0 or self.may_be_busy
        assert store.game(game_id).version == 3 and chain_breaks_at(store, game_id) is None

    def test_a_second_store_on_the_same_database_sees_everything(self, store: EventStore) -> None:
        game_id = new_game(store)
        other = open_store(store.url)
        try:
            assert other.game(game_id).version == 2
            other.append(game_id, 2, [NewEvent("A", b"a")], "cmd", 0, 20)
            assert store.game(game_id).version == 3
            with pytest.raises(VersionConflict):
                store.append(game_id, 2, [NewEvent("B", b"b")], "cmd-2", 0, 20)
        finally:
            other.close()

    def test_an_append_by_another_process_is_heard(self, store: EventStore) -> None:
        """Appends by another process on the same database are heard, game by game (PostgreSQL:
        one LISTEN connection per process; SQLite: a poller of the file)."""
        game_id = new_game(store)
        heard: list[tuple[str, int]] = []
        arrived = threading.Event()

        def listener(game: str, version: int) -> None:
            heard.append((game, version))
            if game == game_id and version == 3:
                arrived.set()

        store.listen(listener)
        other = open_store(store.url)
        try:
            assert store.wait_listening(10)
            other.append(game_id, 2, [NewEvent("A", b"a")], "cmd", 0, 20)
            assert arrived.wait(10), heard
        finally:
            other.close()


class TestSqliteStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path) -> Iterator[EventStore]:
        store = open_store(f"sqlite:///{tmp_path / 'events.sqlite3'}")
        yield store
        store.close()


class TestSqliteStoreWithoutWaiting(StoreContract):
    """The view of the SQLite store that the application writes through on its event loop."""

    may_be_busy = True

    @pytest.fixture
    def store(self, tmp_path) -> Iterator[EventStore]:
        store = open_store(f"sqlite:///{tmp_path / 'events.sqlite3'}")
        at_once = store.without_waiting()
        assert at_once is not None
        yield at_once
        store.close()


@pytest.mark.postgres
class TestPostgresStore(StoreContract):
    @pytest.fixture
    def store(self, postgres_url: str) -> Iterator[EventStore]:
        store = open_store(postgres_url)
        yield store
        store.close()

    def test_an_append_where_the_store_knows_the_chain_ends_is_one_statement(
        self, store: EventStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """After its own append (or creation), a store appends with ``croupier_append`` alone;
        whatever else the database finds there (another replica's append, a retry, a chain
        that ends elsewhere), it appends or answers the general way, as before."""
        from croupier.service.store.postgres import Head, PostgresEventStore

        assert isinstance(store, PostgresEventStore)
        general: list[str] = []
        read = PostgresEventStore._before_append

        def spied(self: PostgresEventStore, cur: object, game_id: str, command_id: str) -> object:
            if self is store:
                general.append(command_id)
            return read(self, cur, game_id, command_id)

        monkeypatch.setattr(PostgresEventStore, "_before_append", spied)
        game_id = new_game(store)
        first = store.append(game_id, 2, [NewEvent("A", b"a"), NewEvent("B", b"b")], "one", 0, 20)
        assert (first.first_version, first.last_version, general) == (3, 4, [])
        # A retry: answered the general way, with the first answer.
        again = store.append(game_id, 4, [NewEvent("A", b"a")], "one", 0, 30)
        assert again.duplicate and again.last_version == 4 and general == ["one"]
        # Another replica moves the game on: a command at the old version is refused...
        other = open_store(store.url)
        try:
            other.append(game_id, 4, [NewEvent("C", b"c")], "theirs", 1, 40)
        finally:
            other.close()
        with pytest.raises(VersionConflict) as conflict:
            store.append(game_id, 4, [NewEvent("D", b"d")], "stale", 0, 50)
        assert conflict.value.current == 5
        # ...after a read, which found where the chain ends now: at the new version, one
        # statement again.
        store.append(game_id, 5, [NewEvent("D", b"d")], "read", 0, 60)
        store.append(game_id, 6, [NewEvent("E", b"e")], "at-once", 0, 70)
        assert general == ["one", "stale"]
        # A chain the store believes ends elsewhere: the database refuses the one statement and
        # the append is made the general way, onto the true last hash.
        head = store._heads[game_id]  # type: ignore[attr-defined]
        store._heads[game_id] = Head(head.game, head.version, "0" * 64)  # type: ignore[attr-defined]
        store.append(game_id, 7, [NewEvent("F", b"f")], "elsewhere", 0, 80)
        assert general[-1] == "elsewhere"
        assert chain_breaks_at(store, game_id) is None
        assert [e.version for e in store.read(game_id)] == list(range(1, 9))

    def test_another_replicas_append_met_while_waiting_for_the_row_is_heard(
        self, store: EventStore
    ) -> None:
        """This store appends in one statement at the version where it knows the chain ends;
        another replica holds the row and appends at that version first. Its notice is the one
        this store would have sent (same game, same version): passed over as its own, it is
        told to the listeners once the statement finds the game moved on."""
        game_id = new_game(store)
        store.append(game_id, 2, [NewEvent("A", b"a")], "first", 0, 20)  # the chain ends at 3
        heard: list[tuple[str, int]] = []
        arrived = threading.Event()

        def listener(game: str, version: int) -> None:
            heard.append((game, version))
            if (game, version) == (game_id, 4):
                arrived.set()

        store.listen(listener)
        other = open_store(store.url)  # knows nothing of the game: appends the general way
        write = other._write_append  # type: ignore[attr-defined]
        written = threading.Event()

        def held(*args: object, **kwargs: object) -> None:
            write(*args, **kwargs)
            written.set()
            time.sleep(0.5)  # the row stays locked while this store's statement waits

        other._write_append = held  # type: ignore[attr-defined]
        try:
            assert store.wait_listening(10)
            thread = threading.Thread(
                target=other.append, args=(game_id, 3, [NewEvent("B", b"b")], "theirs", 1, 30)
            )
            thread.start()
            assert written.wait(10)
            with pytest.raises(VersionConflict):
                store.append(game_id, 3, [NewEvent("C", b"c")], "mine", 0, 40)
            thread.join(10)
            assert arrived.wait(10), heard
        finally:
            other.close()

    def test_its_own_appends_are_not_heard(self, store: EventStore) -> None:
        """The process tells its streams of its own appends as it makes them; heard again from
        LISTEN, one could arrive before the append's answer and send the streams to the
        database for what the process holds."""
        mine, theirs = new_game(store), new_game(store)
        heard: list[str] = []
        arrived = threading.Event()

        def listener(game: str, version: int) -> None:
            heard.append(game)
            if game == theirs:
                arrived.set()

        store.listen(listener)
        other = open_store(store.url)
        try:
            assert store.wait_listening(10)
            store.append(mine, 2, [NewEvent("A", b"a")], "mine", 0, 20)
            other.append(theirs, 2, [NewEvent("A", b"a")], "theirs", 0, 20)
            assert arrived.wait(10), heard  # notices arrive in commit order: mine came first
            assert mine not in heard
        finally:
            other.close()


def _appending_on_the_loop(url: str) -> Iterator[EventStore]:
    """A PostgreSQL store whose appends go as the application makes them: first on an event
    loop, over its non-blocking connections (:meth:`EventStore.loop_appender`), and the store's
    own append (the general way, which reads first) only where the loop's answers ``None``; and
    that hears other processes' appends on that loop (:meth:`EventStore.listen_on_loop`)."""
    from croupier.service.store.postgres import PostgresEventStore

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    class AppendingOnTheLoop(PostgresEventStore):
        def append(self, *args: Any, **kwargs: Any) -> CommandResult:
            call = inspect.signature(PostgresEventStore.append).bind(self, *args, **kwargs)
            call.apply_defaults()
            on_loop = appender.append(*call.args[1:], **call.kwargs)
            made = asyncio.run_coroutine_threadsafe(on_loop, loop).result(30)
            return made if made is not None else super().append(*args, **kwargs)

        def listen(self, listener: Any) -> None:
            heard = self.listen_on_loop(listener)
            assert heard is not None
            listening.append(asyncio.run_coroutine_threadsafe(heard.run(listener), loop))

    store = AppendingOnTheLoop(url)
    appender = store.loop_appender()
    listening: list[concurrent.futures.Future[None]] = []
    try:
        yield store
    finally:
        for running in listening:
            running.cancel()
        asyncio.run_coroutine_threadsafe(appender.close(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        store.close()


@pytest.mark.postgres
class TestPostgresStoreAppendingOnTheLoop(TestPostgresStore):
    """The PostgreSQL store as the application appends to it (on its event loop first) and
    listens (on that loop): every test of the contract, the one-statement appends' and the
    notices' included."""

    @pytest.fixture
    def store(self, postgres_url: str) -> Iterator[EventStore]:
        yield from _appending_on_the_loop(postgres_url)


def test_unsupported_store_url() -> None:
    with pytest.raises(ValueError):
        open_store("mysql://x")
