"""The replay use cases: a game's log as the caller may see it (GetReplay), its replay file
(ExportReplay: binary or JSON, signed with the service's replay key) and the verification of any
replay file (VerifyReplay), off the event loop.

A collaborator of the core (:class:`croupier.app.core.Croupier` makes one,
:attr:`Croupier.replays`, and its ``replay``, ``export_replay`` and ``verify_replay`` hand the call
to it): it is given what it uses of the core, the fold of a game as it ends and a seat's copy of its
log, and the log itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from croupier.app import limits
from croupier.app.callers import Caller, seat_or_spectator
from croupier.app.errors import NotNow, invalid
from croupier.log import GameRecord, StoredEvent
from croupier.replays.format import ReplayFormatError, build, to_binary, to_json
from croupier.replays.format import parse as parse_replay
from croupier.replays.signing import ReplayKeys, SignatureCheck, sign, verify_signed
from croupier.replays.verify import Report
from croupier.v1 import service_pb2

if TYPE_CHECKING:
    from croupier.app.core import Folded
    from croupier.app.runner import AsyncLog

# VerifyReplay files parsed and verified at once per process: anyone may send one, and a crafted
# 3 MiB file holds a core for seconds and some 350 MB while it is read; more wait their turn.
MAX_VERIFYING = 2


class ReplayOf(Protocol):
    """A game's log for ``seat``: complete (with the seed) or redacted as during play (the core's
    per-seat presentation)."""

    def __call__(
        self, folded: Folded, seat: int | None, complete: bool
    ) -> Awaitable[service_pb2.GetReplayResponse]: ...


class Replays:
    """The replay use cases of one process (one per :class:`croupier.app.core.Croupier`)."""

    def __init__(
        self,
        *,
        log: AsyncLog,
        fold_as_ended: Callable[[str, int | None], Awaitable[Folded]],
        replay: ReplayOf,
        replay_keys: ReplayKeys,
    ) -> None:
        self.log = log
        self._fold_as_ended = fold_as_ended
        self._replay = replay
        #: Sign exported replays, and vouch for the files they signed (docs/replay-format.md).
        self.replay_keys = replay_keys
        # The VerifyReplay calls parsing and verifying a file at once; the others wait their turn.
        self._verifying = asyncio.Semaphore(MAX_VERIFYING)

    async def replay(self, caller: Caller, game_id: str) -> service_pb2.GetReplayResponse:
        """The game's log as the caller may see it: complete with the seed once it is over."""
        seat = seat_or_spectator(caller, game_id)
        folded = await self._fold_as_ended(game_id, seat)
        return await self._replay(folded, seat, complete=folded.record.finished)

    async def export_replay(self, caller: Caller, game_id: str, as_json: bool = False) -> bytes:
        """The finished game's replay file: binary, or its JSON form (UTF-8) with ``as_json``.
        The players' ids (the studio's own, ``CreateGameRequest.players``) only for the studio:
        anyone who knows a game's id may export it, its seats and spectators included, and a
        studio's account ids are not theirs to read. They are no part of the hashed game."""
        seat = seat_or_spectator(caller, game_id)
        folded = await self._fold_as_ended(game_id, seat)
        if not folded.record.finished:
            raise NotNow(
                "GAME_NOT_FINISHED",
                "a replay is made of a finished game (its seed is still secret)",
            )
        players = await self.log.players(game_id) if caller.studio is not None else ()
        events = await self.log.read(game_id)
        # Off the event loop: the file of a long match takes a good part of a second to build
        # and write out (its JSON form the most), anyone who knows the game's id may ask, and on
        # the loop every game this process serves waited as long.
        return await asyncio.to_thread(self._replay_file, folded.record, events, players, as_json)

    def _replay_file(
        self,
        record: GameRecord,
        events: Sequence[StoredEvent],
        players: Sequence[str],
        as_json: bool,
    ) -> bytes:
        """:meth:`export_replay`'s file, made in a worker thread."""
        replay = build(record, events, players)
        if self.replay_keys.signing is not None:
            sign(replay, self.replay_keys.signing)
        return to_json(replay).encode("utf-8") if as_json else to_binary(replay)

    async def verify_replay(self, data: bytes) -> tuple[Report, SignatureCheck]:
        """Re-derive and re-apply a replay file (binary or JSON), naming the first divergence;
        and its signature against this service's replay keys."""
        if len(data) > limits.MAX_REPLAY_BYTES:
            raise invalid(
                "TOO_LONG",
                f"a replay file is {len(data)} bytes long; at most {limits.MAX_REPLAY_BYTES}",
                "replay",
            )
        # Parsing is the costly part of a crafted file (3 MiB of tiny records is some 400,000
        # messages: seconds of CPU and hundreds of MB), so it runs off the event loop with the
        # verification, and only a few files at once: anyone may call this, and on the loop one
        # such file stalled every game the process serves for as long.
        async with self._verifying:
            return await asyncio.to_thread(self._verify_file, data)

    def _verify_file(self, data: bytes) -> tuple[Report, SignatureCheck]:
        """:meth:`verify_replay`'s work, in a worker thread."""
        try:
            replay = parse_replay(data)
        except ReplayFormatError as error:
            raise invalid("NOT_A_REPLAY", str(error), "replay") from None
        return verify_signed(replay, self.replay_keys.trusted)
