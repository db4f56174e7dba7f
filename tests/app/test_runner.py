"""The store's worker threads (app/runner.Pool): the turn clock's work goes before the calls
queued ahead of it; in order of arrival otherwise; failures reach the caller; shutdown cancels
what is still queued."""

from __future__ import annotations

import threading

import pytest

from croupier.app.runner import Pool, Rank


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
