"""The reference web client's lobby: games for people in a browser, with bots at the other seats.

Only the studio creates games (CreateGame takes a studio token), and a browser holds no studio
credential. The lobby, on the HTTP listener and **off unless** ``croupier serve --lobby``, is a
tiny studio inside the server: it mints a short-lived studio token with the server's own studio
key, creates the game through the core's public use case, hands back the human seats' tokens
(the page puts each in a link's fragment, which is never sent to a server or logged), and plays
the other seats with :func:`croupier.service.bots.choose` through the same public calls a client
makes (each bot authenticates with its seat token).

For a deal the player can check (docs/shuffle.md, "Seed tickets"), the page first asks for a
commitment (``POST /lobby/commitments``: a seed ticket, through the core's ``commit_seed``),
shows it, and sends the ticket and the seed the player then chose with the game.

It is bounded: at most ``max_games`` lobby games at once (a game leaves the lobby when it ends or
when nobody has moved in it for ``idle_s``: its bots stop and the lobby ends it), and creations and commitments are
rate limited per client address. Between rounds the bots wait: the people at the table deal the
next round (or leave), after reading the settlement.

A restart does not strand a game. The lobby names its seats with player ids of its own
(``lobby-person-N``, ``lobby-bot-N``), and a lobby starting up (:meth:`Lobby.resume`) finds the
unfinished games with those ids, takes them up again (its bots play on; the people's links
still work where the server's secret is kept: seat tokens outlive the process) and ends those
idle for ``idle_s`` already. Every
process with a lobby does this (``--workers``, replicas on one store), so a game may have a bot
of each at one seat: a bot's command id and its choice of move follow from the game, the seat
and the version alone, so that the same move made twice is applied once.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from google.protobuf import json_format

from croupier.app import limits
from croupier.app.callers import Caller
from croupier.app.core import Croupier
from croupier.app.errors import AppError, RetryLater, StaleVersion
from croupier.app.ratelimit import RateLimit, RateLimiter
from croupier.app.tokens import mint_studio_token
from croupier.log import SeatInPlay, StoreError
from croupier.service.bots import KIND_FIELDS, choose, move_kind
from croupier.service.status import http_status_of, retry_after_s
from croupier.v1 import common_pb2, service_pb2

log = structlog.get_logger("croupier.lobby")

#: The game kinds by the names the page and the API use.
KINDS: dict[str, common_pb2.GameKind.ValueType] = {name: kind for kind, name in KIND_FIELDS.items()}
#: Moves between rounds (deal the next round, or Gin's next hand; leave the table): people make
#: them, never the bots (the web client says so: its BETWEEN_ROUNDS_MOVES, src/render.ts).
BETWEEN_ROUNDS = frozenset({"next_round", "next_hand", "leave_table", "close_table"})
#: A studio token the lobby mints lives this long: it is used at once, for one CreateGame.
STUDIO_TOKEN_TTL_S = 60
#: The most seats a lobby game may have (the games' own limits are checked by CreateGame).
MAX_SEATS = 8
#: The longest preset name the lobby accepts (presets are short words).
MAX_PRESET = 64
#: The command id (before the game's id) of the EndGame the lobby sends for a game left idle.
IDLE_END_COMMAND_ID = "lobby-idle-"
#: The same for a game ended to make room for its player's new one (``per_address``).
REPLACED_END_COMMAND_ID = "lobby-replaced-"
#: How many times a bot retries after an unexpected refusal before it stops (the game then
#: waits for the idle limit).
BOT_RETRIES = 5
#: The player ids of a lobby game's seats (CreateGame's ``players``: one for every seat, each
#: different), the people's first: how a lobby finds its games again after a restart.
PERSON_PLAYER = "lobby-person-"
BOT_PLAYER = "lobby-bot-"
#: Every lobby player id there may be (seat 0 is always a person's).
LOBBY_PLAYERS = (
    *(f"{PERSON_PLAYER}{seat}" for seat in range(MAX_SEATS)),
    *(f"{BOT_PLAYER}{seat}" for seat in range(1, MAX_SEATS)),
)
#: The games a starting lobby looks at, at most (the ones last moved in first).
RESUMED_AT_MOST = 256
#: The rate limiter's keys of a client's two buckets: its creations, its commitments (each has
#: the lobby's allowance: a player who asks for a commitment then creates uses one of each).
CREATIONS = 0
COMMITMENTS = 1


class LobbyError(Exception):
    """A lobby request refused: an HTTP status, a stable reason and a message for people."""

    def __init__(
        self, status: int, reason: str, message: str, retry_after_s: int | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class LobbySettings:
    """How much the lobby takes on, and how its bots play."""

    #: Lobby games at once (a game counts until it ends or is dropped as idle).
    max_games: int = 16
    #: Games created per client address: a burst, then this many a minute.
    per_minute: float = 12.0
    burst: int = 6
    #: A bot's pause before each move, so that people can follow the table.
    bot_delay_ms: int = 700
    #: A lobby game nobody moved in for this long is ended (abandoned, as EndGame ends one):
    #: its bots stop, its slot is freed, its seed is revealed.
    idle_s: float = 1800.0
    #: Lobby games one client address may have in play at once: one address filled the whole
    #: lobby for ``idle_s`` (a person plays a few tabs, not sixteen).
    per_address: int = 4
    #: At that limit, the address's game nobody has moved in for longer than this is ended to
    #: make room for its new one (a person trying game after game is never stopped); sooner,
    #: the new one is refused until then.
    replace_after_s: float = 60.0


@dataclass(frozen=True)
class Request:
    """A lobby game as asked for: ``humans`` seats for people (the first ones), bots at the rest."""

    kind: str
    preset: str
    seats: int
    humans: int
    overrides: service_pb2.Rules | None
    #: A ticket from ``POST /lobby/commitments`` (empty: the server draws its seed now).
    seed_ticket: str = ""
    #: The player's seed, chosen after seeing the ticket's commitment (None: the lobby's own).
    client_seed: str | None = None

    @classmethod
    def parse(cls, body: Any) -> Request:
        """The request in a JSON body ``{kind, preset, seats, humans, overrides, seed_ticket,
        client_seed}``, checked."""
        if not isinstance(body, Mapping):
            raise LobbyError(400, "BAD_REQUEST", "send a JSON object")
        kind = body.get("kind")
        if kind not in KINDS:
            raise LobbyError(400, "BAD_KIND", f"kind is one of {', '.join(KINDS)}")
        preset = body.get("preset", "")
        if not isinstance(preset, str) or len(preset) > MAX_PRESET:
            raise LobbyError(400, "BAD_PRESET", f"preset is a name of at most {MAX_PRESET} chars")
        seats, humans = body.get("seats"), body.get("humans", 1)
        if not isinstance(seats, int) or isinstance(seats, bool) or not 2 <= seats <= MAX_SEATS:
            raise LobbyError(400, "BAD_SEATS", f"seats is a number from 2 to {MAX_SEATS}")
        if not isinstance(humans, int) or isinstance(humans, bool) or not 1 <= humans <= seats:
            raise LobbyError(400, "BAD_HUMANS", "humans is a number from 1 to seats")
        overrides = None
        if body.get("overrides") is not None:
            try:
                overrides = json_format.ParseDict(body["overrides"], service_pb2.Rules())
            except (json_format.ParseError, TypeError, ValueError) as error:
                raise LobbyError(400, "BAD_OVERRIDES", f"overrides: {error}") from None
            if overrides.WhichOneof("game") not in (None, kind):
                raise LobbyError(400, "BAD_OVERRIDES", f"overrides are {kind}'s rules")
        seed_ticket = body.get("seed_ticket", "")
        if not isinstance(seed_ticket, str):
            raise LobbyError(
                400, "BAD_SEED_TICKET", "seed_ticket is a ticket from /lobby/commitments"
            )
        client_seed = body.get("client_seed")
        if client_seed is not None:
            if not isinstance(client_seed, str):
                raise LobbyError(400, "BAD_CLIENT_SEED", "client_seed is a string")
            try:
                # As CreateGame checks each of its client seeds.
                limits.check_text(client_seed, "client_seed", limits.MAX_CLIENT_SEED)
            except AppError as error:
                raise LobbyError(400, error.reason, error.message) from None
        return cls(str(kind), preset, seats, humans, overrides, seed_ticket, client_seed)


def _players(seats: int, humans: int) -> list[str]:
    """The player ids of a lobby game's seats: the people's, then the bots'."""
    return [f"{PERSON_PLAYER if seat < humans else BOT_PLAYER}{seat}" for seat in range(seats)]


def _refused(error: AppError) -> LobbyError:
    """A refusal of the core's, as Connect answers it (a store away is 503 with Retry-After,
    not the caller's 400)."""
    return LobbyError(http_status_of(error), error.reason, error.message, retry_after_s(error))


@dataclass
class _Game:
    game_id: str
    tokens: list[str]
    humans: int
    #: The client address that made it ("": a game taken up after a restart).
    client: str = ""
    #: When its last move was seen (the event loop's clock): how long it has been idle.
    moved_at: float = 0.0
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class Lobby:
    """Creates lobby games and runs their bots on the server's event loop."""

    def __init__(
        self,
        core: Croupier,
        settings: LobbySettings | None = None,
    ) -> None:
        self.core = core
        self.settings = settings or LobbySettings()
        self._games: dict[str, _Game] = {}
        self._limiter = RateLimiter(
            RateLimit(self.settings.per_minute / 60, self.settings.burst), size=4096
        )

    @property
    def games(self) -> int:
        """Lobby games in play now."""
        return len(self._games)

    async def create(self, request: Request, client: str) -> dict[str, Any]:
        """A new game: its id, and per seat whether people or a bot sit there, with the human
        seats' tokens. With the request's client seed, the deck comes from it (and from the
        ticket's server seed, with a ticket) rather than from a seed of the lobby's."""
        self._allow(client, CREATIONS, "too many games from here; wait")
        await self._make_room_for(client)
        if len(self._games) >= self.settings.max_games:
            raise LobbyError(
                503, "LOBBY_FULL", f"the lobby has {self.settings.max_games} games in play", 30
            )
        client_seeds = [uuid.uuid4().hex if request.client_seed is None else request.client_seed]
        try:
            created = await self.core.create_game(
                self._studio(),
                KINDS[request.kind],
                request.preset,
                request.seats,
                request.overrides,
                client_seeds,
                _players(request.seats, request.humans),
                seed_ticket=request.seed_ticket,
            )
        except AppError as error:
            raise _refused(error) from None
        tokens = [t.token for t in sorted(created.tokens, key=lambda t: t.seat)]
        game = _Game(created.game_id, tokens, request.humans, client)
        self._run(game, self.settings.idle_s)
        log.info("lobby game", game_id=game.game_id, kind=request.kind, seats=request.seats)
        return {
            "game_id": game.game_id,
            "kind": request.kind,
            "seats": [
                {"seat": seat, "human": seat < request.humans}
                | ({"token": tokens[seat]} if seat < request.humans else {})
                for seat in range(request.seats)
            ],
        }

    async def _make_room_for(self, client: str) -> None:
        """Below ``client``'s limit of games at once, nothing; at it, its game idle longest is
        ended (after ``replace_after_s`` without a move) to make room, or the new one refused."""
        mine = [game for game in self._games.values() if game.client == client]
        if len(mine) < self.settings.per_address:
            return
        oldest = min(mine, key=lambda game: game.moved_at)
        idle_s = asyncio.get_running_loop().time() - oldest.moved_at
        if idle_s < self.settings.replace_after_s:
            wait_s = self.settings.replace_after_s - idle_s
            raise LobbyError(
                429,
                "TOO_MANY_GAMES_HERE",
                f"{len(mine)} lobby games from here are in play: the one idle longest is ended "
                f"for a new one once nobody has moved in it for "
                f"{self.settings.replace_after_s:g} s",
                -(-int(wait_s * 1000) // 1000),
            )
        self._drop(oldest)
        await self._end(
            oldest,
            f"{REPLACED_END_COMMAND_ID}{oldest.game_id}",
            f"its player started another game; nobody had moved in it for {round(idle_s)} s",
        )

    def _drop(self, game: _Game) -> None:
        """Out of the lobby at once: its bots and its watch stop, its slot is free."""
        self._games.pop(game.game_id, None)
        for task in game.tasks:
            if task is not asyncio.current_task():
                task.cancel()

    def _run(self, game: _Game, idle_left_s: float) -> None:
        """The game's bots, and its watch (which ends it after ``idle_left_s`` without a move)."""
        game.moved_at = asyncio.get_running_loop().time()
        self._games[game.game_id] = game
        game.tasks = [
            asyncio.create_task(self._logged(game, seat), name=f"lobby-bot-{game.game_id}-{seat}")
            for seat in range(game.humans, len(game.tokens))
        ]
        game.tasks.append(
            asyncio.create_task(self._watch(game, idle_left_s), name=f"lobby-{game.game_id}")
        )

    async def resume(self) -> int:
        """Take up again the lobby games an earlier process left unfinished (a restart, a
        crash): their bots play on, and a game already idle for ``idle_s`` is ended. Returns how
        many were taken up. Without this, a game under way when the server restarted waited for
        its bots for good, and stayed unfinished, its seed never revealed."""
        try:
            seats = await self.core.log.seats_in_play(LOBBY_PLAYERS, RESUMED_AT_MOST * MAX_SEATS)
        except (AppError, StoreError) as error:  # the store away: they wait for the next start
            log.warning("lobby games not resumed", error=str(error))
            return 0
        found: dict[str, list[SeatInPlay]] = {}
        for seat in seats:
            found.setdefault(seat.game_id, []).append(seat)
        now_s = self.core.clock() / 1000
        resumed = 0
        for game_id, held in found.items():
            if game_id in self._games or len(held) < held[0].seats:
                continue  # this lobby's own (made since it started), or cut off by the limit
            idle_left_s = self.settings.idle_s - (now_s - held[0].last_at_ms / 1000)
            humans = sum(seat.player.startswith(PERSON_PLAYER) for seat in held)
            tokens = [self.core.signer.issue(game_id, seat) for seat in range(held[0].seats)]
            game = _Game(game_id, tokens, humans)
            if idle_left_s <= 0:
                await self._end_idle(game)
                continue
            # Taken up whether or not the lobby is full (``max_games`` bounds new games): each was
            # let in once, and a lobby that fills on taking up its own games frees as they end.
            self._run(game, idle_left_s)
            resumed += 1
        if found:
            log.info("lobby games resumed", resumed=resumed, found=len(found))
        return resumed

    async def commit(self, client: str) -> dict[str, Any]:
        """A seed ticket (CommitSeed, as the lobby's studio): the commitment to show the player
        before they choose their seed, and the ticket to create the game with."""
        self._allow(client, COMMITMENTS, "too many commitments from here; wait")
        try:
            committed = await self.core.commit_seed(self._studio())
        except AppError as error:
            raise _refused(error) from None
        return {
            "ticket": committed.ticket,
            "commitment": committed.commitment,
            "expires_at_ms": committed.expires_at_ms,
        }

    def _allow(self, client: str, bucket: int, message: str) -> None:
        wait_ms = self._limiter.take((client, bucket), self.core.clock())
        if wait_ms:
            raise LobbyError(429, "RATE_LIMITED", message, -(-wait_ms // 1000))

    def _studio(self) -> Caller:
        """The lobby as the studio, with a token minted for the one call it makes now."""
        token = mint_studio_token(
            self.core.studio_keys.signing, self.core.clock() // 1000 + STUDIO_TOKEN_TTL_S
        )
        return self.core.authenticate(token)

    async def close(self) -> None:
        """Stop every bot (the server is stopping)."""
        tasks = [task for game in self._games.values() for task in game.tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._games.clear()

    async def _wait_past(self, caller: Caller, game_id: str, version: int) -> None:
        """Until the game moves past ``version`` (or ends). The stream is closed on the way out, so
        that its place among its token's live streams is given back at once, not when the
        collector finds it."""
        stream = self.core.subscribe(caller, game_id, version)
        try:
            async for _ in stream:
                return
        finally:
            await stream.aclose()

    async def _watch(self, game: _Game, idle_left_s: float) -> None:
        """Keep the game in the lobby while it is played; drop it when it ends or idles (for
        ``idle_left_s`` first, ``idle_s`` after each move)."""
        caller = self.core.authenticate(game.tokens[0])
        try:
            while True:
                view = await self.core.view(caller, game.game_id)
                if view.finished:
                    return
                try:
                    async with asyncio.timeout(idle_left_s):
                        await self._wait_past(caller, game.game_id, view.version)
                except TimeoutError:
                    await self._end_idle(game)
                    return
                game.moved_at = asyncio.get_running_loop().time()
                idle_left_s = self.settings.idle_s
        finally:
            self._drop(game)

    async def _end_idle(self, game: _Game) -> None:
        """End a game nobody has moved in for ``idle_s``, as the studio ends an abandoned one
        (EndGame): dropped from the lobby alone it stayed on the server unfinished for good, its
        seed never revealed, so its player could never check the deal. A player who comes back
        finds it ended, with the reason."""
        minutes = round(self.settings.idle_s / 60)
        reason = (
            f"nobody moved for {minutes} minutes"
            if minutes >= 1
            else f"nobody moved for {self.settings.idle_s:g} seconds"
        )
        await self._end(game, f"{IDLE_END_COMMAND_ID}{game.game_id}", reason)

    async def _end(self, game: _Game, command_id: str, reason: str) -> None:
        """End ``game`` as the studio ends an abandoned one (EndGame), for ``reason``."""
        try:
            await self.core.end_game(self._studio(), game.game_id, command_id, reason)
        except AppError as error:  # ended meanwhile, or the store away: it stays as it is
            log.warning("lobby game not ended", game_id=game.game_id, reason=error.reason)
            return
        log.info("lobby game ended", game_id=game.game_id, why=reason)

    async def _logged(self, game: _Game, seat: int) -> None:
        """A bot, whose unexpected failure is logged (its game then waits for the idle limit)."""
        try:
            await self._bot(game, seat)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("lobby bot failed", game_id=game.game_id, seat=seat)

    async def _bot(self, game: _Game, seat: int) -> None:
        """Play ``seat`` through the public calls until the game ends; between rounds, wait for
        the people."""
        caller = self.core.authenticate(game.tokens[seat])
        failures = 0
        while failures < BOT_RETRIES:
            view = await self.core.view(caller, game.game_id)
            if view.finished:
                return
            legal = await self.core.legal_moves(caller, game.game_id)
            moves = list(legal.moves)
            if not moves or any(move_kind(m) in BETWEEN_ROUNDS for m in moves):
                await self._wait_past(caller, game.game_id, max(view.version, legal.version))
                continue
            await asyncio.sleep(self.settings.bot_delay_ms / 1000)
            # The game, the seat, the version and the refusals so far make the move and its
            # command id: another process's bot at this seat (see the module's docstring) makes
            # the same command, which is applied once.
            made = f"{seat}-{legal.version}-{failures}"
            move = choose(moves, random.Random(f"{game.game_id}-{made}"))
            try:
                await self.core.submit(
                    caller, game.game_id, f"{BOT_PLAYER}{made}", legal.version, move.command
                )
            except StaleVersion:
                continue  # someone moved first (a claim, a person): look again
            except RetryLater as error:  # its allowance, or the store, is back
                await asyncio.sleep(error.retry_after_ms / 1000)
            except AppError as error:
                failures += 1
                log.warning(
                    "lobby bot refused", game_id=game.game_id, seat=seat, reason=error.reason
                )
            else:
                failures = 0
