"""The server's garbage-collector policy: the survivors of a full collection are frozen (later
ones do not walk them), handed back at each thaw (their garbage cycles freed then), and every
collection's pause is reported."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from croupier.service.collector import OLDEST, Collector


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Node:
    """A container the collector tracks (a stream's objects stand for)."""

    def __init__(self) -> None:
        self.other: Node | None = None


def tracked(obj: object) -> bool:
    """Whether a collection walks ``obj`` (frozen objects are in no generation)."""
    return any(o is obj for o in gc.get_objects())


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def collector(clock: Clock) -> Iterator[Collector]:
    policy = Collector(thaw_s=60.0, clock=clock)
    policy.install()
    try:
        yield policy
    finally:
        policy.uninstall()
    assert gc.get_freeze_count() == 0


def test_the_survivors_of_a_full_collection_are_walked_no_more(collector: Collector) -> None:
    kept = Node()
    gc.collect(1)  # a younger collection freezes nothing
    assert tracked(kept)
    gc.collect()
    assert not tracked(kept) and gc.get_freeze_count() > 0
    assert (collector.full, collector.frozen) == (1, 1)
    # What is made afterwards is walked, until the next full collection.
    later = Node()
    assert tracked(later)
    gc.collect()
    assert not tracked(later)


def test_a_frozen_object_is_still_freed_when_nothing_refers_to_it(collector: Collector) -> None:
    kept = Node()
    gc.collect()
    gone = weakref.ref(kept)
    del kept
    assert gone() is None


def test_a_thaw_hands_frozen_cycles_back_to_be_freed(collector: Collector, clock: Clock) -> None:
    one, two = Node(), Node()
    one.other, two.other = two, one  # a cycle: only a collection that walks it frees it
    gc.collect()
    freed = weakref.ref(one)
    del one, two
    gc.collect()
    assert freed() is not None  # frozen: a full collection before the thaw does not walk it
    clock.now += collector.thaw_s
    gc.collect()  # the thaw: after this collection, everything goes back to the collector
    assert gc.get_freeze_count() == 0
    gc.collect()  # which walks it, and frees the cycle
    assert freed() is None
    assert gc.get_freeze_count() > 0  # and freezes what survives, again


def test_with_no_thaw_nothing_is_frozen(clock: Clock) -> None:
    policy = Collector(thaw_s=0, clock=clock)
    policy.install()
    try:
        kept = Node()
        gc.collect()
        assert tracked(kept) and gc.get_freeze_count() == 0
        assert OLDEST in [generation for generation, _ in policy.pauses()]
        assert policy.frozen == 0
    finally:
        policy.uninstall()


def test_every_collection_is_reported_with_its_generation(collector: Collector) -> None:
    collector.pauses()
    gc.collect(0)
    gc.collect()
    pauses = collector.pauses()
    assert [generation for generation, _ in pauses][-2:] == [0, OLDEST]
    assert all(seconds >= 0 for _, seconds in pauses)
    assert collector.pauses() == []  # each reported once

    seen: list[tuple[int, float]] = []

    async def report() -> None:
        task = asyncio.create_task(collector.report(lambda g, s: seen.append((g, s)), every_s=0.01))
        gc.collect()
        while not seen:
            await asyncio.sleep(0.01)
        task.cancel()

    asyncio.run(report())
    assert OLDEST in [generation for generation, _ in seen]
