"""Helpers the games share: immutable updates of a state's per-seat tuples."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def replace_at(values: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    """``values`` with the item at ``index`` replaced by ``value`` (states are immutable)."""
    return values[:index] + (value,) + values[index + 1:]
