"""The server's garbage-collector policy: the survivors of every collection are frozen (later
ones do not walk them), handed back at each thaw (their garbage cycles freed then), and every
collection's pause is reported."""

from __future__ import annotations

import asyncio
import gc
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from croupier.service.collector import OLDEST, Collector

#: How long a test waits for the event loop's task to act.
WAIT_S = 10.0


class Memory:
    """The memory blocks the process holds, as the test sets them."""

    def __init__(self) -> None:
        self.held = 100.0

    def __call__(self) -> float:
        return self.held


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Node:
    """A container the collector tracks (a stream's objects stand for)."""

    def __init__(self) -> None:
        self.other: Node | None = None


def frozen_cycles(count: int) -> None:
    """``count`` cycles of two nodes that outlive a collection (frozen), then die in their
    cycles: garbage that only a thaw frees."""
    cycles = []
    for _ in range(count):
        one, two = Node(), Node()
        one.other, two.other = two, one
        cycles.append(one)
    gc.collect(0)


def tracked(obj: object) -> bool:
    """Whether a collection walks ``obj`` (frozen objects are in no generation)."""
    return any(o is obj for o in gc.get_objects())


async def until(done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, "the collector's task did not act"
        await asyncio.sleep(0.01)


@pytest.fixture
def memory() -> Memory:
    return Memory()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@contextmanager
def installed(policy: Collector) -> Iterator[Collector]:
    """``policy`` installed, with only the test's own collections: one started by an allocation
    would freeze what a test is about to look at."""
    policy.install()
    automatic = gc.isenabled()
    gc.disable()
    try:
        yield policy
    finally:
        if automatic:
            gc.enable()
        policy.uninstall()


@pytest.fixture
def collector(memory: Memory, clock: Clock) -> Iterator[Collector]:
    with installed(
        Collector(thaw_growth=1.0, memory=memory, clock=clock, thaw_every_s=3600.0)
    ) as policy:
        yield policy
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
    memory.held = 199.0
    assert not collector.thaw_due  # the memory held has not doubled
    memory.held = 200.0
    assert collector.thaw_due
    memory.held = 120.0  # what the thaw leaves (the cycles it frees)
    assert collector.thaw() >= 2  # walks everything once: the cycle is freed
    assert freed() is None
    assert gc.get_freeze_count() > 0  # and what survives is frozen again
    # The next thaw waits for twice what this one left, not twice what it found.
    assert not collector.thaw_due and collector.thaws == 1
    memory.held = 239.0
    assert not collector.thaw_due
    memory.held = 240.0
    assert collector.thaw_due


def test_a_thaw_that_finds_the_growth_alive_waits_longer_for_the_next(
    memory: Memory, clock: Clock
) -> None:
    """Memory that grew with live objects (streams opening) frees nothing at its thaw: the next
    waits for four times the memory, then eight; a thaw that frees cycles goes back to twice."""
    memory.held = 1e6  # installed at a million blocks
    with installed(Collector(thaw_growth=1.0, memory=memory, clock=clock)) as policy:
        memory.held = 2e6  # doubled, by live objects: a thaw frees (next to) nothing of it
        assert policy.thaw_due
        assert policy.thaw() < 0.01 * 1e6 and policy.growth == 3.0
        memory.held = 7.9e6
        assert not policy.thaw_due  # not at twice the memory, nor at almost four times
        memory.held = 8e6
        assert policy.thaw_due
        policy.thaw()
        assert policy.growth == 7.0
        frozen_cycles(300_000)  # more than a hundredth of the growth, in objects
        memory.held = 8e6 * 8
        assert policy.thaw() >= 600_000  # freed: the growth was garbage, not life
        assert policy.growth == 1.0  # back to the configured growth


def test_a_thaw_comes_at_least_once_an_hour(collector: Collector, clock: Clock) -> None:
    """A cycle may hold little memory and a socket: the memory alone may never call a thaw."""
    clock.now += 3599.0
    assert not collector.thaw_due
    clock.now += 1.0
    assert collector.thaw_due
    collector.thaw()
    assert not collector.thaw_due


def test_cycles_that_pile_up_call_a_thaw_which_frees_them(clock: Clock) -> None:
    """With the process's own measure (the blocks it holds): frozen garbage cycles raise it, the
    thaw frees them, and the next thaw is measured from what is left, so that cycles made on and
    on are freed on and on (a peak-memory measure kept rising with them)."""
    with installed(Collector(thaw_growth=0.1, clock=clock)) as policy:
        start = sys.getallocatedblocks()
        for _ in range(3):
            made = 0
            while not policy.thaw_due:
                frozen_cycles(5_000)
                made += 5_000
                assert made < 2_000_000, "frozen cycles never called a thaw"
            freed = policy.thaw()
            assert freed >= made  # every cycle made since the last thaw, at least
            assert not policy.thaw_due
            assert sys.getallocatedblocks() < start * 1.05


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
        memory.held *= 2
        await until(lambda: collector.thaws > 0)
        task.cancel()

    asyncio.run(maintained())
    assert freed() is None


def test_with_no_thaw_nothing_is_frozen(memory: Memory, clock: Clock) -> None:
    policy = Collector(thaw_growth=0, memory=memory, clock=clock)
    policy.install()
    try:
        kept = Node()
        gc.collect()
        assert tracked(kept) and gc.get_freeze_count() == 0
        assert OLDEST in [generation for generation, _ in policy.pauses()]
        assert policy.frozen == 0
        memory.held *= 10
        clock.now += 10 * policy.thaw_every_s
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
        await until(lambda: bool(seen))
        task.cancel()

    asyncio.run(report())
    assert OLDEST in [generation for generation, _ in seen]
