"""The GameService servicer: thin glue between the contract, the engine and the event store.

A command: authenticate the seat → load the state (cached by game id and version, else folded from
the log) → ``decide`` → append at the expected version → answer with the caller's redacted events.
Nothing is kept between calls that the log does not hold: any process on the same store serves
any game.
"""

from __future__ import annotations

import functools
import secrets
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import structlog

from croupier.engine.game import CommandError, Context, InvalidRules
from croupier.engine.shuffle import Seeds
from croupier.engine import ENGINE_VERSION
from croupier.service import convert, errors
from croupier.service.auth import AuthError, SeatIdentity, TokenSigner
from croupier.service.errors import ServiceError, invalid
from croupier.replays.format import (
    ReplayFormatError, build, complete_event, from_binary, from_json, to_binary,
)
from croupier.replays.verify import verify
from croupier.service.games import BINDINGS, BY_NAME, GameBinding
from croupier.service.store import (
    EventStore, GameNotFound, GameRecord, NewEvent, StoredEvent, VersionConflict,
)
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

log = structlog.get_logger("croupier.rpc")

STREAM_WAIT_S = 15.0
# How many finished games ListRecentGames recalls.
RECENT_GAMES = 10


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class Loaded:
    """A game folded up to ``version``."""

    record: GameRecord
    binding: GameBinding
    state: Any
    version: int

    @property
    def seeds(self) -> Seeds:
        return Seeds(self.record.server_seed, self.state.client_seeds)


class StateCache:
    """Folded states by game id, with the version they reflect (LRU; states are immutable)."""

    def __init__(self, size: int = 2048) -> None:
        self._items: OrderedDict[str, tuple[int, Any]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, game_id: str) -> tuple[int, Any] | None:
        with self._lock:
            item = self._items.get(game_id)
            if item is not None:
                self._items.move_to_end(game_id)
            return item

    def put(self, game_id: str, version: int, state: Any) -> None:
        with self._lock:
            old = self._items.get(game_id)
            if old is None or old[0] < version:
                self._items[game_id] = (version, state)
                self._items.move_to_end(game_id)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


def rpc(method: Callable[..., Any]) -> Callable[..., Any]:
    """Map errors to statuses and log one line per call (game, seat, command, outcome, latency)."""

    def fail(context: grpc.ServicerContext, error: ServiceError) -> None:
        structlog.contextvars.bind_contextvars(reason=error.reason)
        context.abort_with_status(error.to_status())

    def translate(error: Exception) -> ServiceError:
        if isinstance(error, ServiceError):
            return error
        if isinstance(error, GameNotFound):
            return ServiceError(grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND", str(error),
                                {"game_id": error.game_id})
        if isinstance(error, VersionConflict):
            return ServiceError(grpc.StatusCode.ABORTED, "VERSION_CONFLICT",
                                f"{error}; read the game again and retry",
                                {"current_version": str(error.current),
                                 "expected_version": str(error.expected)})
        if isinstance(error, CommandError):
            return errors.from_rejection(errors.rejection(error))
        raise error

    def finish(started: float, context: grpc.ServicerContext, outcome: str) -> None:
        log.info("rpc", method=method.__name__, outcome=outcome,
                 latency_ms=round((time.perf_counter() - started) * 1000, 2))
        structlog.contextvars.clear_contextvars()

    if method.__name__ == "StreamEvents":
        @functools.wraps(method)
        def stream(self: Any, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            started = time.perf_counter()
            structlog.contextvars.clear_contextvars()
            outcome = "OK"
            try:
                yield from method(self, request, context)
            except (ServiceError, GameNotFound, VersionConflict, CommandError) as error:
                service_error = translate(error)
                outcome = service_error.code.name
                finish(started, context, outcome)
                fail(context, service_error)
            finish(started, context, outcome)
        return stream

    @functools.wraps(method)
    def unary(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        started = time.perf_counter()
        structlog.contextvars.clear_contextvars()
        try:
            response = method(self, request, context)
        except (ServiceError, GameNotFound, VersionConflict, CommandError) as error:
            service_error = translate(error)
            finish(started, context, service_error.code.name)
            fail(context, service_error)
        finish(started, context, "OK")
        return response
    return unary


def _binding(kind: int) -> GameBinding:
    binding = BINDINGS.get(kind)
    if binding is None:
        raise invalid("UNKNOWN_GAME_KIND", "kind must name a game kind", "kind")
    return binding


def _new_events(binding: GameBinding, events: list[Any]) -> list[NewEvent]:
    """Engine events as store records: the type name and the deterministic body bytes."""
    return [NewEvent(type(e).__name__, binding.event_to_body(e).SerializeToString(deterministic=True))
            for e in events]


def _require(value: Any, field: str) -> None:
    if not value:
        raise invalid("MISSING_FIELD", f"{field} is required", field)


class GameService(service_pb2_grpc.GameServiceServicer):
    def __init__(self, store: EventStore, signer: TokenSigner,
                 clock: Callable[[], int] = now_ms,
                 seed_source: Callable[[], bytes] = lambda: secrets.token_bytes(32)) -> None:
        self.store = store
        self.signer = signer
        self.clock = clock
        self.seed_source = seed_source
        self.cache = StateCache()

    # -- helpers -------------------------------------------------------------------------------

    def _identity(self, context: grpc.ServicerContext, required: bool = True) -> SeatIdentity | None:
        metadata = dict(context.invocation_metadata() or ())
        header = metadata.get("authorization", "")
        if not header:
            if not required:
                return None
            raise ServiceError(grpc.StatusCode.UNAUTHENTICATED, "MISSING_TOKEN",
                               "send the seat token as 'authorization: Bearer <token>'")
        token = header.removeprefix("Bearer ").strip()
        try:
            return self.signer.verify(token)
        except AuthError as error:
            raise ServiceError(grpc.StatusCode.UNAUTHENTICATED, "INVALID_TOKEN", str(error)) from None

    def _seat(self, context: grpc.ServicerContext, game_id: str, request: Any = None,
              required: bool = True) -> int | None:
        _require(game_id, "game_id")
        structlog.contextvars.bind_contextvars(game_id=game_id)
        identity = self._identity(context, required)
        if identity is None:
            return None
        if identity.game_id != game_id:
            raise ServiceError(grpc.StatusCode.PERMISSION_DENIED, "TOKEN_FOR_OTHER_GAME",
                               "this seat token belongs to another game")
        if request is not None and request.HasField("seat") and request.seat != identity.seat:
            raise ServiceError(grpc.StatusCode.PERMISSION_DENIED, "SEAT_MISMATCH",
                               f"the token is seat {identity.seat}'s, not seat {request.seat}'s",
                               {"token_seat": str(identity.seat)})
        structlog.contextvars.bind_contextvars(seat=identity.seat)
        return identity.seat

    def _decode(self, binding: GameBinding, stored: StoredEvent) -> Any | None:
        """The engine event a stored event holds (``None`` for service events such as the seed)."""
        body = service_pb2.EventBody.FromString(stored.payload)
        if body.WhichOneof("body") != binding.field:
            return None
        return binding.event_from_body(body)

    def _engine_events(self, binding: GameBinding, stored: list[StoredEvent]) -> list[Any]:
        """The game's own events among stored ones (the revealed seed is the service's)."""
        return [e for e in (self._decode(binding, s) for s in stored) if e is not None]

    def _load(self, game_id: str) -> Loaded:
        record = self.store.game(game_id)
        binding = BY_NAME[record.kind]
        cached = self.cache.get(game_id)
        if cached is not None and cached[0] == record.version:
            return Loaded(record, binding, cached[1], record.version)
        after, state = (cached if cached is not None and cached[0] < record.version
                        else (0, binding.game.initial_state()))
        version = after
        for stored in self.store.read(game_id, after):
            event = self._decode(binding, stored)
            if event is not None:
                state = binding.game.evolve(state, event)
            version = stored.version
        self.cache.put(game_id, version, state)
        return Loaded(record, binding, state, version)

    def _now(self, loaded: Loaded) -> Any:
        """The state as of now: what time has made due (a closed claim window) applied."""
        state = loaded.state
        for event in loaded.binding.game.advance(state, self.clock()):
            state = loaded.binding.game.evolve(state, event)
        return state

    def _present(self, binding: GameBinding, stored: StoredEvent, seat: int | None,
                 finished: bool) -> service_pb2.GameEvent:
        """A stored event as ``seat`` may see it: complete once the game is over."""
        engine_event = self._decode(binding, stored)
        if not finished and engine_event is not None:
            shown = binding.game.redact(engine_event, seat)
            if shown != engine_event:
                # A redacted copy carries no payload or hashes: they would give the hidden away.
                event = service_pb2.GameEvent(
                    game_id=stored.game_id, version=stored.version, command_id=stored.command_id,
                    recorded_at_ms=stored.recorded_at_ms, body=binding.event_to_body(shown),
                    redacted=True)
                if stored.seat is not None:
                    event.seat = stored.seat
                if stored.command:
                    event.command.ParseFromString(stored.command)
                return event
        return complete_event(stored)

    def _command(self, loaded: Loaded, command: service_pb2.Command) -> Any:
        if not command.WhichOneof("game"):
            raise invalid("MISSING_FIELD", "command is required", "command")
        try:
            engine_command = loaded.binding.command_from_proto(command)
        except ValueError as error:
            raise invalid("MALFORMED_COMMAND", str(error), "command") from None
        structlog.contextvars.bind_contextvars(command=type(engine_command).__name__)
        return engine_command

    # -- RPCs ----------------------------------------------------------------------------------

    @rpc
    def CreateGame(self, request: service_pb2.CreateGameRequest,
                   context: grpc.ServicerContext) -> service_pb2.CreateGameResponse:
        binding = _binding(request.kind)
        try:
            overrides = binding.overrides(request.overrides) if request.HasField("overrides") else {}
            rules = binding.game.rules_for(request.preset, overrides, request.seats)
        except InvalidRules as error:
            raise invalid(error.reason, error.message,
                          error.field if error.field in ("preset", "seats") else
                          f"overrides.{binding.field}.{error.field}") from None
        except ValueError as error:
            raise invalid("INVALID_OPTION", str(error), "overrides") from None
        players = tuple(request.players)
        if players and (len(players) != request.seats or not all(players)):
            raise invalid("INVALID_PLAYERS", f"name one player per seat ({request.seats}), or none",
                          "players")
        server_seed = self.seed_source()
        seeds = Seeds(server_seed, tuple(request.client_seeds))
        game_id = str(uuid.uuid4())
        events = binding.game.start(rules, request.seats, seeds)
        new = _new_events(binding, events)
        record = GameRecord(game_id, binding.game.kind, request.seats, server_seed,
                            seeds.commitment, self.clock())
        version = self.store.create_game(record, new, record.created_at_ms, players)
        structlog.contextvars.bind_contextvars(game_id=game_id, kind=binding.game.kind,
                                               seats=request.seats)
        return service_pb2.CreateGameResponse(
            game_id=game_id, commitment=seeds.commitment, rules=binding.rules_to_proto(rules),
            version=version,
            tokens=[service_pb2.SeatToken(seat=s, token=self.signer.issue(game_id, s),
                                          player=players[s] if players else "")
                    for s in range(request.seats)])

    @rpc
    def SubmitCommand(self, request: service_pb2.SubmitCommandRequest,
                      context: grpc.ServicerContext) -> service_pb2.SubmitCommandResponse:
        seat = self._seat(context, request.game_id, request)
        _require(request.command_id, "command_id")
        earlier = self.store.result_of(request.game_id, request.command_id)
        if earlier is None:
            loaded = self._load(request.game_id)
            command = self._command(loaded, request.command)
            if request.expected_version != loaded.version:
                raise VersionConflict(request.game_id, request.expected_version, loaded.version)
            # One instant for the decision and the record: a replay re-decides at the recorded
            # time, so a claim window closes there exactly as it did live.
            now = self.clock()
            try:
                events = loaded.binding.game.decide(loaded.state, seat, command,
                                                    Context(loaded.seeds, now))
            except CommandError as error:
                stored = self.store.record_rejection(
                    request.game_id, request.command_id,
                    errors.rejection(error).SerializeToString(deterministic=True), loaded.version)
                raise errors.from_rejection(common_pb2.Rejection.FromString(stored.rejection or b""))
            state = loaded.state
            for event in events:
                state = loaded.binding.game.evolve(state, event)
            finished = loaded.binding.game.is_finished(state)
            new = _new_events(loaded.binding, events)
            if finished:
                seed = service_pb2.EventBody(seed_revealed=service_pb2.SeedRevealed(
                    server_seed=loaded.record.server_seed.hex()))
                new.append(NewEvent("SeedRevealed", seed.SerializeToString(deterministic=True)))
            earlier = self.store.append(
                request.game_id, loaded.version, new, request.command_id, seat, now,
                finished=finished, command=request.command.SerializeToString(deterministic=True))
            if not earlier.duplicate:
                self.cache.put(request.game_id, earlier.last_version, state)
        if not earlier.accepted:
            raise errors.from_rejection(common_pb2.Rejection.FromString(earlier.rejection or b""))
        structlog.contextvars.bind_contextvars(duplicate=earlier.duplicate)
        record = self.store.game(request.game_id)
        binding = BY_NAME[record.kind]
        stored_events = [e for e in self.store.read(request.game_id, earlier.first_version - 1)
                         if e.version <= earlier.last_version]
        return service_pb2.SubmitCommandResponse(
            version=earlier.last_version,
            events=[self._present(binding, e, seat, record.finished) for e in stored_events])

    @rpc
    def ValidateCommand(self, request: service_pb2.ValidateCommandRequest,
                        context: grpc.ServicerContext) -> service_pb2.ValidateCommandResponse:
        seat = self._seat(context, request.game_id, request)
        loaded = self._load(request.game_id)
        command = self._command(loaded, request.command)
        try:
            loaded.binding.game.validate(self._now(loaded), seat, command)
        except CommandError as error:
            return service_pb2.ValidateCommandResponse(
                accepted=False, rejection=errors.rejection(error), version=loaded.version)
        return service_pb2.ValidateCommandResponse(accepted=True, version=loaded.version)

    @rpc
    def ListLegalMoves(self, request: service_pb2.ListLegalMovesRequest,
                       context: grpc.ServicerContext) -> service_pb2.ListLegalMovesResponse:
        seat = self._seat(context, request.game_id, request)
        loaded = self._load(request.game_id)
        game = loaded.binding.game
        now = self._now(loaded)
        return service_pb2.ListLegalMovesResponse(
            version=loaded.version,
            moves=[service_pb2.LegalMove(command=loaded.binding.command_to_proto(c),
                                         label=game.label(now, c))
                   for c in game.legal_commands(now, seat)])

    @rpc
    def GetView(self, request: service_pb2.GetViewRequest,
                context: grpc.ServicerContext) -> service_pb2.GetViewResponse:
        seat = self._seat(context, request.game_id, request)
        loaded = self._load(request.game_id)
        view = loaded.binding.game.view(self._now(loaded), seat)
        return service_pb2.GetViewResponse(view=loaded.binding.view_to_proto(view),
                                           version=loaded.version,
                                           finished=loaded.binding.game.is_finished(loaded.state))

    @rpc
    def StreamEvents(self, request: service_pb2.StreamEventsRequest,
                     context: grpc.ServicerContext) -> Iterator[service_pb2.StreamEventsResponse]:
        seat = self._seat(context, request.game_id)
        after = request.after_version
        while context.is_active():
            record = self.store.game(request.game_id)
            binding = BY_NAME[record.kind]
            for stored in self.store.read(request.game_id, after):
                yield service_pb2.StreamEventsResponse(
                    event=self._present(binding, stored, seat, record.finished))
                after = stored.version
            if record.finished and after >= record.version:
                return
            self.store.wait_for(request.game_id, after, STREAM_WAIT_S)

    @rpc
    def GetSettlement(self, request: service_pb2.GetSettlementRequest,
                      context: grpc.ServicerContext) -> service_pb2.GetSettlementResponse:
        self._seat(context, request.game_id, required=False)
        loaded = self._load(request.game_id)
        events = self._engine_events(loaded.binding, self.store.read(request.game_id))
        if request.final:
            final = loaded.binding.game.final_settlement(events)
            if final is None:
                raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION, "GAME_NOT_FINISHED",
                                   "the game is not over yet")
            return service_pb2.GetSettlementResponse(
                settlement=convert.to_proto(final, common_pb2.Settlement))
        settlements = loaded.binding.game.settlements(events)
        if not settlements:
            raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION, "ROUND_NOT_FINISHED",
                               "no round of this game has finished yet")
        index = request.round - 1 if request.round else len(settlements) - 1
        if not 0 <= index < len(settlements):
            raise ServiceError(grpc.StatusCode.NOT_FOUND, "ROUND_NOT_FOUND",
                               f"round {request.round} has not finished", {"rounds": str(len(settlements))})
        return service_pb2.GetSettlementResponse(
            settlement=convert.to_proto(settlements[index], common_pb2.Settlement))

    @rpc
    def GetReplay(self, request: service_pb2.GetReplayRequest,
                  context: grpc.ServicerContext) -> service_pb2.GetReplayResponse:
        seat = self._seat(context, request.game_id, required=False)
        loaded = self._load(request.game_id)
        return self._replay(loaded, seat, complete=loaded.record.finished)

    def _replay(self, loaded: Loaded, seat: int | None, complete: bool) -> service_pb2.GetReplayResponse:
        """The game's log for ``seat``: complete (with the seed) or redacted as during play."""
        record, state = loaded.record, loaded.state
        stored = self.store.read(record.game_id)
        first = next(iter(self._engine_events(loaded.binding, stored[:1])), None)
        return service_pb2.GetReplayResponse(
            game_id=record.game_id, kind=loaded.binding.kind,
            rules=loaded.binding.rules_to_proto(state.rules), seats=record.seats,
            commitment=record.commitment, client_seeds=list(state.client_seeds),
            # The engine version that recorded the game (its first event), not the running one.
            engine_version=first.engine_version if first is not None else ENGINE_VERSION,
            finished=record.finished, server_seed=record.server_seed.hex() if complete else "",
            events=[self._present(loaded.binding, e, seat, complete) for e in stored])

    @rpc
    def ExportReplay(self, request: service_pb2.ExportReplayRequest,
                     context: grpc.ServicerContext) -> service_pb2.ExportReplayResponse:
        self._seat(context, request.game_id, required=False)
        record = self._load(request.game_id).record
        if not record.finished:
            raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION, "GAME_NOT_FINISHED",
                               "a replay is made of a finished game (its seed is still secret)")
        replay = build(record, self.store.read(request.game_id))
        return service_pb2.ExportReplayResponse(replay=to_binary(replay))

    @rpc
    def VerifyReplay(self, request: service_pb2.VerifyReplayRequest,
                     context: grpc.ServicerContext) -> service_pb2.VerifyReplayResponse:
        data = request.replay
        try:
            replay = from_json(data.decode("utf-8")) if data.lstrip()[:1] == b"{" else from_binary(data)
        except (ReplayFormatError, UnicodeDecodeError) as error:
            raise invalid("NOT_A_REPLAY", str(error), "replay") from None
        report = verify(replay)
        response = service_pb2.VerifyReplayResponse(ok=report.ok, checks=report.checks)
        if report.divergence is not None:
            d = report.divergence
            response.divergence.CopyFrom(service_pb2.Divergence(
                event=d.event, check=d.check, expected=d.expected, found=d.found))
        return response

    def _player(self, context: grpc.ServicerContext, request: Any) -> str:
        """The player at the caller's seat (recall needs games created with player ids)."""
        seat = self._seat(context, request.game_id, request)
        players = self.store.players(request.game_id)
        if not players:
            raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION, "NO_PLAYER_IDS",
                               "this game was created without player ids (CreateGameRequest.players)")
        return players[seat]

    @rpc
    def ListRecentGames(self, request: service_pb2.ListRecentGamesRequest,
                        context: grpc.ServicerContext) -> service_pb2.ListRecentGamesResponse:
        player = self._player(context, request)
        response = service_pb2.ListRecentGamesResponse(player=player)
        for game_id, seat in self.store.recent_games(player, RECENT_GAMES):
            loaded = self._load(game_id)
            stored = self.store.read(game_id)
            final = loaded.binding.game.final_settlement(self._engine_events(loaded.binding, stored))
            response.games.append(service_pb2.RecentGame(
                game_id=game_id, kind=loaded.binding.kind, seat=seat,
                finished_at_ms=stored[-1].recorded_at_ms, outcome=final.outcome,
                net=final.net[seat], settlement=convert.to_proto(final, common_pb2.Settlement)))
        return response

    @rpc
    def GetRecentGame(self, request: service_pb2.GetRecentGameRequest,
                      context: grpc.ServicerContext) -> service_pb2.GetRecentGameResponse:
        player = self._player(context, request)
        _require(request.recent_game_id, "recent_game_id")
        seats = [s for s, p in enumerate(self.store.players(request.recent_game_id)) if p == player]
        if not seats or not self.store.game(request.recent_game_id).finished:
            raise ServiceError(grpc.StatusCode.NOT_FOUND, "NOT_A_RECENT_GAME",
                               "not one of this player's finished games")
        # What the player's seat could see: redacted as during play, without the seed.
        return service_pb2.GetRecentGameResponse(
            replay=self._replay(self._load(request.recent_game_id), seats[0], complete=False))

    @rpc
    def ListPresets(self, request: service_pb2.ListPresetsRequest,
                    context: grpc.ServicerContext) -> service_pb2.ListPresetsResponse:
        binding = _binding(request.kind)
        game = binding.game
        return service_pb2.ListPresetsResponse(presets=[
            service_pb2.Preset(name=name, description=game.preset_description(name),
                               rules=binding.rules_to_proto(rules),
                               is_default=name == game.default_preset)
            for name, rules in game.presets().items()])
