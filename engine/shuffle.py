"""Provably fair shuffles: a committed server seed, client seeds and a documented derivation.

The algorithm (``docs/shuffle.md`` is the reference for third-party verifiers):

1. At creation the server draws a secret 32-byte ``server_seed`` and publishes
   ``commitment = sha256(server_seed)`` (hex). Players may contribute client seeds (UTF-8 strings).
   When the game ends the server seed is revealed in the log.
2. ``client_digest = sha256(concat(len(s) as 4-byte big-endian ‖ s for s in client_seeds))``,
   with each seed UTF-8 encoded, in the order given at creation.
3. A stream of bytes for one shuffle is the concatenation, for ``counter = 0, 1, 2, …``, of
   ``HMAC-SHA256(key=server_seed, msg="croupier/shuffle/v1" ‖ 0x00 ‖ purpose ‖ 0x00 ‖
   round (4-byte BE) ‖ client_digest ‖ counter (4-byte BE))``. ``purpose`` names the shuffle
   (``"deal"``, ``"reshuffle-1"``…), ``round`` is the round number (1-based).
4. The stream is read as 4-byte big-endian unsigned words. To pick an index in ``[0, n)``
   without bias, let ``limit = 2**32 - (2**32 mod n)``; take words until one ``w < limit``; the index
   is ``w mod n`` (rejection sampling).
5. Fisher–Yates: for ``i`` from ``len(cards) - 1`` down to 1, pick ``j`` in ``[0, i + 1)`` and swap
   positions ``i`` and ``j``. The input is the canonical deck order of
   :func:`croupier.engine.cards.standard_deck` (or the cards named by the caller, in their order).
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

DOMAIN = b"croupier/shuffle/v1"


@dataclass(frozen=True)
class Shuffle:
    """One shuffle as the seeds made it: its round and purpose, what was shuffled (in the order
    given) and the order that came out."""

    round_no: int
    purpose: str
    given: tuple[Any, ...]
    result: tuple[Any, ...]


@dataclass(frozen=True)
class Seeds:
    """The inputs of every shuffle of one game; ``on_shuffle``, when set, is told of each
    shuffle made with them (a verifier shows a dispute the decks it re-derived)."""

    server_seed: bytes
    client_seeds: tuple[str, ...] = ()
    on_shuffle: Callable[[Shuffle], None] | None = field(default=None, compare=False, repr=False)

    @property
    def commitment(self) -> str:
        return commitment(self.server_seed)


def commitment(server_seed: bytes) -> str:
    """The published commitment: hex sha256 of the server seed."""
    return hashlib.sha256(server_seed).hexdigest()


def client_digest(client_seeds: Sequence[str]) -> bytes:
    h = hashlib.sha256()
    for seed in client_seeds:
        data = seed.encode("utf-8")
        h.update(struct.pack(">I", len(data)))
        h.update(data)
    return h.digest()


def _words(seeds: Seeds, round_no: int, purpose: str) -> Iterator[int]:
    prefix = (
        DOMAIN
        + b"\x00"
        + purpose.encode("ascii")
        + b"\x00"
        + struct.pack(">I", round_no)
        + client_digest(seeds.client_seeds)
    )
    counter = 0
    while True:
        block = hmac.new(
            seeds.server_seed, prefix + struct.pack(">I", counter), hashlib.sha256
        ).digest()
        yield from struct.unpack(">8I", block)
        counter += 1


def _index_below(words: Iterator[int], n: int) -> int:
    limit = 2**32 - (2**32 % n)
    for w in words:
        if w < limit:
            return w % n
    raise AssertionError("unreachable: the word stream is endless")


def shuffled(items: Sequence[T], seeds: Seeds, round_no: int, purpose: str) -> tuple[T, ...]:
    """``items`` in the order the seeds give for this round and purpose (Fisher–Yates)."""
    out = list(items)
    words = _words(seeds, round_no, purpose)
    for i in range(len(out) - 1, 0, -1):
        j = _index_below(words, i + 1)
        out[i], out[j] = out[j], out[i]
    if seeds.on_shuffle is not None:
        seeds.on_shuffle(Shuffle(round_no, purpose, tuple(items), tuple(out)))
    return tuple(out)
