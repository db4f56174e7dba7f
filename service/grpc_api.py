"""The gRPC adapter of the application core: each handler parses, calls the core, and formats.

Who calls comes from the interceptor (:func:`croupier.service.calls.caller`), never from the
request; errors are the core's typed ones, turned into statuses by the interceptor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import structlog
from google.protobuf.unknown_fields import UnknownFieldSet

from croupier.app.core import Croupier, Refused
from croupier.app.errors import invalid
from croupier.replays.signing import Verdict
from croupier.service.calls import caller
from croupier.service.status import code_of
from croupier.v1 import service_pb2, service_pb2_grpc

#: A replay signature's verdict on the wire (``VerifyReplayResponse.signature``).
SIGNATURE_VERDICTS = {
    Verdict.UNSIGNED: service_pb2.SIGNATURE_VERDICT_UNSIGNED,
    Verdict.VALID: service_pb2.SIGNATURE_VERDICT_VALID,
    Verdict.INVALID: service_pb2.SIGNATURE_VERDICT_INVALID,
    Verdict.UNKNOWN_KEY: service_pb2.SIGNATURE_VERDICT_UNKNOWN_KEY,
}

#: The forms ``ExportReplay`` writes (unset: binary).
REPLAY_FORMATS = frozenset(service_pb2.ReplayFormat.values())

log = structlog.get_logger("croupier.rpc")

# The handlers read nothing of the call but its request (who calls is the interceptor's): the
# HTTP listener (service/http.py) calls them with its own context.
Context = grpc.aio.ServicerContext[Any, Any] | object


def _seat(request: Any) -> int | None:
    """The seat a request claims to act as, when it says (the token decides)."""
    return int(request.seat) if request.HasField("seat") else None


class GameServicer(service_pb2_grpc.GameServiceServicer):
    def __init__(self, core: Croupier) -> None:
        self.core = core

    async def CreateGame(
        self, request: service_pb2.CreateGameRequest, context: Context
    ) -> service_pb2.CreateGameResponse:
        if len(UnknownFieldSet(request)):
            # A newer contract's field: dropped, the game would not be the one asked for.
            raise invalid(
                "UNKNOWN_FIELD",
                "the request holds a field CreateGameRequest does not have in this server's "
                "contract (a newer contract's): the game would not be the one asked for",
                "",
            )
        return await self.core.create_game(
            caller(),
            request.kind,
            request.preset,
            request.seats,
            request.overrides if request.HasField("overrides") else None,
            request.client_seeds,
            request.players,
            request.request_id,
            request.seed_ticket,
        )

    async def CommitSeed(
        self, request: service_pb2.CommitSeedRequest, context: Context
    ) -> service_pb2.CommitSeedResponse:
        return await self.core.commit_seed(caller())

    async def SubmitCommand(
        self, request: service_pb2.SubmitCommandRequest, context: Context
    ) -> service_pb2.SubmitCommandResponse:
        return await self.core.submit(
            caller(),
            request.game_id,
            request.command_id,
            request.expected_version,
            request.command,
            _seat(request),
            request.include if request.HasField("include") else None,
        )

    async def EndGame(
        self, request: service_pb2.EndGameRequest, context: Context
    ) -> service_pb2.EndGameResponse:
        return await self.core.end_game(
            caller(),
            request.game_id,
            request.command_id,
            request.reason,
            request.expected_version if request.HasField("expected_version") else None,
        )

    async def ValidateCommand(
        self, request: service_pb2.ValidateCommandRequest, context: Context
    ) -> service_pb2.ValidateCommandResponse:
        return await self.core.validate(caller(), request.game_id, request.command, _seat(request))

    async def ListLegalMoves(
        self, request: service_pb2.ListLegalMovesRequest, context: Context
    ) -> service_pb2.ListLegalMovesResponse:
        return await self.core.legal_moves(caller(), request.game_id, _seat(request))

    async def GetView(
        self, request: service_pb2.GetViewRequest, context: Context
    ) -> service_pb2.GetViewResponse:
        return await self.core.view(caller(), request.game_id, _seat(request))

    async def StreamEvents(
        self, request: service_pb2.StreamEventsRequest, context: Context
    ) -> AsyncIterator[service_pb2.StreamEventsResponse]:
        async for response in self.core.subscribe(
            caller(),
            request.game_id,
            request.after_version,
            request.include,
            request.batched,
            request.heartbeat_s,
        ):
            yield response

    async def GetSettlement(
        self, request: service_pb2.GetSettlementRequest, context: Context
    ) -> service_pb2.GetSettlementResponse:
        settlement = await self.core.settlement(
            caller(), request.game_id, request.round, request.final
        )
        return service_pb2.GetSettlementResponse(settlement=settlement)

    async def GetReplay(
        self, request: service_pb2.GetReplayRequest, context: Context
    ) -> service_pb2.GetReplayResponse:
        return await self.core.replay(caller(), request.game_id)

    async def ExportReplay(
        self, request: service_pb2.ExportReplayRequest, context: Context
    ) -> service_pb2.ExportReplayResponse:
        if request.format not in REPLAY_FORMATS:
            # A format this contract does not have (a newer one's, or a stray number): answered
            # in binary, the file would be read as the form asked for, and fail there.
            raise invalid(
                "UNKNOWN_REPLAY_FORMAT",
                f"format {request.format} is not a replay format of this server's contract "
                "(REPLAY_FORMAT_BINARY or REPLAY_FORMAT_JSON; unset: binary)",
                "format",
            )
        replay = await self.core.export_replay(
            caller(), request.game_id, as_json=request.format == service_pb2.REPLAY_FORMAT_JSON
        )
        return service_pb2.ExportReplayResponse(replay=replay)

    async def VerifyReplay(
        self, request: service_pb2.VerifyReplayRequest, context: Context
    ) -> service_pb2.VerifyReplayResponse:
        report, signature = await self.core.verify_replay(request.replay)
        response = service_pb2.VerifyReplayResponse(
            ok=report.ok,
            checks=report.checks,
            signature=SIGNATURE_VERDICTS[signature.verdict],
            signature_key_id=signature.key_id,
        )
        if report.divergence is not None:
            d = report.divergence
            response.divergence.CopyFrom(
                service_pb2.Divergence(
                    event=d.event, check=d.check, expected=d.expected, found=d.found, field=d.field
                )
            )
        return response

    async def ListRecentGames(
        self, request: service_pb2.ListRecentGamesRequest, context: Context
    ) -> service_pb2.ListRecentGamesResponse:
        # The player is the token's: the request's game_id and seat are deprecated and ignored.
        return await self.core.recent_games(caller())

    async def GetRecentGame(
        self, request: service_pb2.GetRecentGameRequest, context: Context
    ) -> service_pb2.GetRecentGameResponse:
        # The player is the token's: the request's game_id and seat are deprecated and ignored.
        replay = await self.core.recent_game(caller(), request.recent_game_id)
        return service_pb2.GetRecentGameResponse(replay=replay)

    async def Play(
        self, request_iterator: AsyncIterator[service_pb2.PlayRequest], context: Context
    ) -> AsyncIterator[service_pb2.PlayResponse]:
        async for item in self.core.play(caller(), request_iterator):
            if isinstance(item, Refused):
                error = item.error
                # A Play stream's commands have no log line of their own (the stream's one rpc
                # line ends it); a refused one does, as a refused SubmitCommand has: a support
                # agent asked "my move was in time" finds it there (ABORTED: a time-out first).
                log.info(
                    "play_refused",
                    command=item.command,
                    command_id=item.command_id,
                    outcome=code_of(error).name,
                    reason=error.reason,
                )
                yield service_pb2.PlayResponse(
                    refused=service_pb2.PlayRefused(
                        command_id=item.command_id,
                        status=code_of(error).name,
                        reason=error.reason,
                        message=error.message,
                        metadata=error.metadata,
                        field=error.field,
                    )
                )
            else:
                yield item

    async def ListPresets(
        self, request: service_pb2.ListPresetsRequest, context: Context
    ) -> service_pb2.ListPresetsResponse:
        return service_pb2.ListPresetsResponse(presets=self.core.presets(request.kind))
