"""A small least-recently-used map: the one the core's caches and memos are built on."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Memo(Generic[K, V]):
    """At most ``size`` entries; the least recently used goes first."""

    def __init__(self, size: int) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()
        self._size = size

    def get(self, key: K) -> V | None:
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
        return item

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The entry, made by ``make`` and kept if there is none."""
        item = self.get(key)
        if item is None:
            item = make()
            self.put(key, item)
        return item

    def peek(self, key: K) -> V | None:
        """The entry, without making it the most recently used."""
        return self._items.get(key)

    def __len__(self) -> int:
        return len(self._items)

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)
