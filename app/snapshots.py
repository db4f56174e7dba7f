"""Snapshots of folded games: a cache in the store, so that the first read of a long game after a
restart folds only the events after its latest snapshot.

A snapshot is the folded state and the last event's time, pickled (not the events: a use case that
needs them, a settlement, reads them from the log). It is
never the truth: its ``format`` names the engine's version and a digest of the engine's source,
so a snapshot written by other code is ignored; and it is sealed with the server's signing key
(any of its verification keys opens it), so only what this service wrote is ever unpickled. Anything unreadable falls back to folding the log.
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass
from importlib import resources
from typing import Any

from croupier.app.tokens import TokenSigner
from croupier.engine import ENGINE_VERSION
from croupier.log import Snapshot

#: A snapshot is written once a game has this many events more than its last one.
SNAPSHOT_EVERY = 64


def _engine_digest() -> str:
    """A digest of the engine's source: a snapshot of states folded by other code is ignored."""
    digest = hashlib.sha256()
    root = resources.files("croupier.engine")
    stack = [root]
    files = []
    while stack:
        folder = stack.pop()
        for entry in folder.iterdir():
            if entry.is_dir() and entry.name != "__pycache__":
                stack.append(entry)
            elif entry.name.endswith(".py"):
                files.append(entry)
    for entry in sorted(files, key=lambda e: str(e)):
        digest.update(entry.name.encode() + b"\0" + entry.read_bytes())
    return digest.hexdigest()[:16]


#: How the core folds a log into a state (app/core.py ``_folded``: where a batch of events
#: starts, what each batch charges the turn clock), which the engine's digest does not cover: a
#: change there makes the snapshots folded before it wrong, and is made with this number raised.
#: 2: a batch starts at every event that carries its command (a seat's move recorded under the
#: deal's id, ``create``, folded as part of the deal).
FOLD_VERSION = 2

FORMAT = f"pickle-state:{ENGINE_VERSION}:{FOLD_VERSION}:{_engine_digest()}"


@dataclass(frozen=True)
class Thawed:
    version: int
    state: Any
    last_at_ms: int


def _sealed_bytes(snapshot_game: str, version: int, data: bytes) -> bytes:
    return f"{FORMAT}\0{snapshot_game}\0{version}\0".encode() + data


def freeze(
    signer: TokenSigner,
    game_id: str,
    version: int,
    state: Any,
    last_at_ms: int,
) -> Snapshot:
    data = pickle.dumps((state, last_at_ms), protocol=pickle.HIGHEST_PROTOCOL)
    seal = signer.seal("snapshot", _sealed_bytes(game_id, version, data))
    return Snapshot(game_id, FORMAT, version, data, seal)


def thaw(signer: TokenSigner, snapshot: Snapshot) -> Thawed | None:
    """The folded game a snapshot holds, or ``None`` when it is not ours to read."""
    if snapshot.format != FORMAT:
        return None
    sealed = _sealed_bytes(snapshot.game_id, snapshot.version, snapshot.state)
    # Sealed with the signing key; any of the server's keys opens it, so that rotating
    # CROUPIER_SECRET keeps the snapshots written before (a key dropped: they are refolded).
    if not signer.sealed("snapshot", sealed, snapshot.seal):
        return None
    try:
        state, last_at_ms = pickle.loads(snapshot.state)
    except Exception:  # pragma: no cover - a sealed snapshot of this format always loads
        return None
    return Thawed(snapshot.version, state, int(last_at_ms))
