"""The server's garbage-collector policy: the survivors of every collection are frozen (later
ones do not walk them), handed back at each thaw (their garbage cycles freed then), and every
collection's pause is reported."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from croupier.service.collector import OLDEST, Collector


class Memory:
    """The process's peak memory, as the test sets it."""

    def __init__(self) -> None:
        self.peak = 100.0

    def __call__(self) -> float:
        return self.peak


class Node:
    """A container the collector tracks (a stream's objects stand for)."""

    def __init__(self) -> None:
        self.other: Node | None = None


def tracked(obj: object) -> bool:
    """Whether a collection walks ``obj`` (frozen objects are in no generation)."""
    return any(o is obj for o in gc.get_objects())


@pytest.fixture
def memory() -> Memory:
    return Memory()


@pytest.fixture
def collector(memory: Memory) -> Iterator[Collector]:
    policy = Collector(thaw_growth=0.5, memory=memory)
    policy.install()
    # Only the tests' own collections: one started by an allocation would freeze what a test
    # is about to look at.
    automatic = gc.isenabled()
    gc.disable()
    try:
        yield policy
    finally:
        if automatic:
            gc.enable()
        policy.uninstall()
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("generation", [0, 1, OLDEST])
def test_the_survivors_of_any_collection_are_walked_no_more(
    collector: Collector, generation: int
) -> None:
    kept = Node()
    assert tracked(kept)
    gc.collect(generation)
    assert not tracked(kept) and gc.get_freeze_count() > 0
    assert collector.frozen == 1
    # What is made afterwards is walked, until the next collection.
    later = Node()
    assert tracked(later)
    gc.collect(0)
    assert not tracked(later)
    assert collector.frozen == 2


def test_a_frozen_object_is_still_freed_when_nothing_refers_to_it(collector: Collector) -> None:
    kept = Node()
    gc.collect(0)
    gone = weakref.ref(kept)
    del kept
    assert gone() is None


def test_a_cycle_that_dies_young_is_freed_by_the_next_collection(collector: Collector) -> None:
    one, two = Node(), Node()
    one.other, two.other = two, one
    freed = weakref.ref(one)
    del one, two
    gc.collect(0)
    assert freed() is None


def test_a_thaw_hands_frozen_cycles_back_to_be_freed(collector: Collector, memory: Memory) -> None:
    one, two = Node(), Node()
    one.other, two.other = two, one  # a cycle: only a collection that walks it frees it
    gc.collect(0)
    freed = weakref.ref(one)
    del one, two
    gc.collect()
    assert freed() is not None  # frozen: even a full collection before the thaw does not walk it
    memory.peak = 149.0
    assert not collector.thaw_due  # the peak has grown by less than half
    memory.peak = 150.0
    assert collector.thaw_due
    assert collector.thaw() >= 2  # walks everything once: the cycle is freed
    assert freed() is None
    assert gc.get_freeze_count() > 0  # and what survives is frozen again
    # The next thaw waits for half as much again as the peak at this one.
    assert not collector.thaw_due and collector.thaws == 1
    memory.peak = 224.0
    assert not collector.thaw_due
    memory.peak = 225.0
    assert collector.thaw_due


def test_the_event_loop_thaws_when_a_thaw_is_due(collector: Collector, memory: Memory) -> None:
    one, two = Node(), Node()
    one.other, two.other = two, one
    gc.collect(0)
    freed = weakref.ref(one)
    del one, two

    async def maintained() -> None:
        task = asyncio.create_task(collector.maintain(every_s=0.01))
        await asyncio.sleep(0.05)
        assert freed() is not None and collector.thaws == 0  # not due yet
        memory.peak *= 2
        while collector.thaws == 0:
            await asyncio.sleep(0.01)
        task.cancel()

    asyncio.run(maintained())
    assert freed() is None


def test_with_no_thaw_nothing_is_frozen(memory: Memory) -> None:
    policy = Collector(thaw_growth=0, memory=memory)
    policy.install()
    try:
        kept = Node()
        gc.collect()
        assert tracked(kept) and gc.get_freeze_count() == 0
        assert OLDEST in [generation for generation, _ in policy.pauses()]
        assert policy.frozen == 0
        memory.peak *= 10
        assert not policy.thaw_due
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
        task = asyncio.create_task(
            collector.maintain(lambda g, s: seen.append((g, s)), every_s=0.01)
        )
        gc.collect()
        while not seen:
            await asyncio.sleep(0.01)
        task.cancel()

    asyncio.run(report())
    assert OLDEST in [generation for generation, _ in seen]
