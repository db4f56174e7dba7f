"""Who calls, and what each caller may do: the service's access policy in one place.

A verified token makes a :class:`Caller`: a seat of one game, the studio's backend, a player the
studio vouches for, or nobody in particular. Each use case of :class:`croupier.app.core.Croupier`
asks here, before it reads anything, whom it acts for: a seat (its token's, never the request's),
a spectator, the studio or a player; a caller who is none of those it needs is refused with a
typed error (``docs/credentials.md``). Nothing here reads the store or keeps state: whether the
game has the token's seat is checked once the game is read (:func:`at_table`).
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from croupier.app import limits
from croupier.app.errors import (
    MISSING_TOKEN,
    NO_SUCH_SEAT,
    PLAYER_TOKEN_REQUIRED,
    SEAT_MISMATCH,
    SEAT_TOKEN_REQUIRED,
    STUDIO_CREDENTIAL_REQUIRED,
    TOKEN_FOR_OTHER_GAME,
    BadCredentials,
    Forbidden,
    require,
)
from croupier.app.tokens import PlayerIdentity, SeatIdentity, StudioIdentity
from croupier.log import GameRecord


@dataclass(frozen=True)
class Caller:
    """Who calls, as a verified token says: a seat of a game (``identity``), the studio's backend
    (``studio``), a player vouched for by the studio (``player``), or nobody in particular. At
    most one is set."""

    identity: SeatIdentity | None = None
    studio: StudioIdentity | None = None
    player: PlayerIdentity | None = None


ANONYMOUS = Caller()


def studio_of(caller: Caller) -> StudioIdentity:
    """The studio's backend, or the call fails: only it creates games (and names players), commits
    seeds for them and ends them."""
    if caller.studio is None:
        raise BadCredentials(
            STUDIO_CREDENTIAL_REQUIRED,
            "creating or ending a game, or committing a seed for one (CommitSeed), takes the "
            "studio's credential: 'authorization: Bearer <studio token>' (croupier token studio; "
            "docs/credentials.md)",
        )
    return caller.studio


def seat_token_of(caller: Caller) -> SeatIdentity:
    """The seat token the call came with, or the call fails: none (``MISSING_TOKEN``), or a
    studio or player token (``SEAT_TOKEN_REQUIRED``)."""
    identity = caller.identity
    if identity is None:
        if caller.studio is not None or caller.player is not None:
            raise BadCredentials(
                SEAT_TOKEN_REQUIRED,
                "this call acts as a seat: send the seat token CreateGame returned, not a "
                "studio or player token",
            )
        raise BadCredentials(
            MISSING_TOKEN, "send the seat token as 'authorization: Bearer <token>'"
        )
    return identity


def seat_of(caller: Caller, game_id: str, seat: int | None = None, field: str = "game_id") -> int:
    """The caller's seat in ``game_id``; ``seat`` is what the request claims, if anything.
    Whether the game has that seat is only known once the game is read: the call's first read
    refuses a seat it does not have (:func:`at_table`). ``field`` names the game id in the
    request, for its refusals (a Play join's is ``join.game_id``)."""
    _named_game(game_id, field)
    identity = seat_token_of(caller)
    if identity.game_id != game_id:
        raise Forbidden(TOKEN_FOR_OTHER_GAME, "this seat token belongs to another game")
    if seat is not None and seat != identity.seat:
        raise Forbidden(
            SEAT_MISMATCH,
            f"the token is seat {identity.seat}'s, not seat {seat}'s",
            {"token_seat": str(identity.seat)},
        )
    structlog.contextvars.bind_contextvars(seat=identity.seat)
    return identity.seat


def seat_or_spectator(caller: Caller, game_id: str, seat: int | None = None) -> int | None:
    """The caller's seat when a seat token came with the call, else a spectator (``None``): a
    studio or player token sees what anyone may see, no more. ``seat``: the seat the request
    claims, if any; a spectator claims none."""
    if caller.identity is None:
        if seat is not None:
            raise BadCredentials(
                SEAT_TOKEN_REQUIRED,
                f"seat {seat}'s part needs its seat token (CreateGame returned it); a studio "
                "or player token watches as a spectator, with no seat in the request",
            )
        _named_game(game_id, "game_id")
        return None
    return seat_of(caller, game_id, seat)


def watcher(caller: Caller, game_id: str, seat: int | None = None) -> int | None:
    """Who watches a game live (GetView, StreamEvents): a seat, by its token, or a spectator, by
    a studio or player token (a spectator screen, the studio's backend following its games). Not
    anonymously: a stream holds the server's memory while it is open."""
    if caller.identity is None and caller.studio is None and caller.player is None:
        raise BadCredentials(
            MISSING_TOKEN,
            "send a seat token as 'authorization: Bearer <token>', or a studio or player "
            "token to watch as a spectator",
        )
    return seat_or_spectator(caller, game_id, seat)


def player_of(caller: Caller) -> str:
    """The player a studio-signed player token names: recall acts for them, and only them (a
    seat token says which seat, not who sits there)."""
    if caller.player is None:
        given = (
            "a seat token"
            if caller.identity is not None
            else "the studio's credential (the studio recalls for a player with a player "
            "token it mints for them)"
            if caller.studio is not None
            else "none"
        )
        raise BadCredentials(
            PLAYER_TOKEN_REQUIRED,
            "recall takes a player token the studio signed (croupier token player; "
            f"docs/credentials.md); this call came with {given}",
        )
    return caller.player.player


def at_table(record: GameRecord, seat: int | None) -> None:
    """Refuse a seat the game ``record`` is the row of does not have (``None``: a spectator). A
    seat token names its game and seat, not how many seats the game has: a genuine token for seat
    5 of a two-seat game would otherwise be served, or fail deep in the engine. So each read of a
    game for a seat checks it (the core's folds, a stream's first read, a command decided on the
    cached game), before anything is worked out for the seat. A game's seats never change."""
    if seat is not None and not 0 <= seat < record.seats:
        raise Forbidden(
            NO_SUCH_SEAT,
            f"this seat token is seat {seat}'s, and the game has {record.seats} seats "
            f"(0 to {record.seats - 1})",
            {"seats": str(record.seats)},
        )


def _named_game(game_id: str, field: str) -> None:
    """A request's game id: given, not too long, and on the call's log line from here on."""
    require(game_id, field)
    limits.check_text(game_id, field, limits.MAX_GAME_ID)
    structlog.contextvars.bind_contextvars(game_id=game_id)
