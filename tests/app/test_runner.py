"""The store's worker threads (app/runner.Pool): the turn clock's work goes before the calls
queued ahead of it; in order of arrival otherwise; failures reach the caller; shutdown cancels
what is still queued. And the outage a pool keeps ends with the database's first answer."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from croupier.app import runner
from croupier.app.errors import Unavailable
from croupier.app.runner import AsyncLog, Pool, Rank
from croupier.log import GameNotFound, StoreUnavailable
from croupier.service.store import open_store
from croupier.service.store.sql import SqlEventStore
from tests.store.games import new_game


def test_clock_work_goes_before_queued_calls_and_each_rank_keeps_its_order() -> None:
    pool = Pool(1, "test")
    started, release = threading.Event(), threading.Event()
    done: list[str] = []

    def blocker() -> None:
        started.set()
        release.wait(10)

    first = pool.submit(Rank.CALL, blocker)
    assert started.wait(10)  # the one thread is busy: what follows queues
    futures = [
        pool.submit(rank, lambda name=name: done.append(name))
        for rank, name in [
            (Rank.CALL, "call 1"),
            (Rank.CALL, "call 2"),
            (Rank.CLOCK, "tick 1"),
            (Rank.CALL, "call 3"),
            (Rank.CLOCK, "tick 2"),
        ]
    ]
    release.set()
    for future in [first, *futures]:
        future.result(10)
    assert done == ["tick 1", "tick 2", "call 1", "call 2", "call 3"]
    pool.shutdown()


def test_a_failure_reaches_the_caller_and_shutdown_cancels_the_queue() -> None:
    pool = Pool(1, "test")
    with pytest.raises(ZeroDivisionError):
        pool.submit(Rank.CALL, lambda: 1 // 0).result(10)
    started, release = threading.Event(), threading.Event()
    busy = pool.submit(Rank.CALL, lambda: started.set() or release.wait(10))
    assert started.wait(10)
    queued = pool.submit(Rank.CALL, lambda: "never")
    pool.shutdown()
    release.set()
    assert busy.result(10) is True  # the work under way finishes
    assert queued.cancelled()


@pytest.mark.parametrize(
    "store_kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_an_answer_of_the_database_ends_an_outage(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the store is unavailable one call at a time tries it; when that call is answered
    "no such game" the database was reached, and the calls after it go through at once rather
    than be refused until another call succeeds."""
    url = (
        f"sqlite:///{tmp_path / 'croupier.sqlite3'}"
        if store_kind == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    store = open_store(url)
    game_id = new_game(store)
    away = [True]
    load = SqlEventStore.load

    def flaky(self: SqlEventStore, *args: Any, **kwargs: Any) -> Any:
        if away[0]:
            raise StoreUnavailable("the database went away")
        return load(self, *args, **kwargs)

    monkeypatch.setattr(SqlEventStore, "load", flaky)

    async def scenario() -> None:
        log = AsyncLog(store)
        try:
            with pytest.raises(Unavailable):
                await log.load(game_id)
            away[0] = False
            await asyncio.sleep(runner.PROBE_S)  # the next call may try the store
            with pytest.raises(GameNotFound):
                await log.load("no-such-game")
            # At once, within PROBE_S of the last try: let through, not told "still away".
            assert (await log.load(game_id)).record.game_id == game_id
        finally:
            await log.aclose()

    try:
        asyncio.run(scenario())
    finally:
        store.close()
