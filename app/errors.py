"""What went wrong, as types: each transport maps them to its own status codes in one table.

Every error carries a stable UPPER_SNAKE ``reason`` (clients branch on it), a message for people,
``metadata`` (the rule cited, the current version…) and, for malformed input, the ``field`` at
fault.
"""

from __future__ import annotations

from typing import Any

from croupier.contract.rejections import ILLEGAL
from croupier.log import GameNotFound, StoreUnavailable, VersionConflict
from croupier.v1 import common_pb2

#: The most characters of a message an error carries, and of each metadata value and field name:
#: errors often quote the request (an unknown game id…), and an unbounded quote would travel back
#: as status metadata (a 1 MB id overflows the client's header limit) and into every log line.
MESSAGE_LIMIT = 1000
ECHO_LIMIT = 200


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…(+{len(text) - limit} chars)"


class AppError(Exception):
    """Base of the application's errors."""

    def __init__(
        self,
        reason: str,
        message: str,
        metadata: dict[str, str] | None = None,
        field: str = "",
    ) -> None:
        message = clip(message, MESSAGE_LIMIT)
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.metadata = {clip(k): clip(v) for k, v in (metadata or {}).items()}
        self.field = clip(field)


class BadRequest(AppError):
    """The request or command cannot mean anything (missing field, unknown card, bad option)."""


class NotNow(AppError):
    """Well formed, but the game's state does not allow it (an illegal move, an unfinished game)."""


class StaleVersion(AppError):
    """The caller's ``expected_version`` is behind the game: read again and retry."""


class NotFound(AppError):
    """No such game, round or recent game."""


class BadCredentials(AppError):
    """The call lacks the credential it needs (a seat token, the studio's, a player's), or its
    token is not ours, malformed, expired or signed with a key we do not hold."""


class Forbidden(AppError):
    """A genuine token, but not for this game or this seat."""


class RetryLater(AppError):
    """Nothing wrong with the call: made again after ``retry_after_ms`` (a ``RetryInfo``), it
    may well succeed."""

    def __init__(self, reason: str, message: str, retry_after_ms: int) -> None:
        super().__init__(reason, message, {"retry_after_ms": str(retry_after_ms)})
        self.retry_after_ms = retry_after_ms


class RateLimited(RetryLater):
    """A seat sends commands faster than its allowance: retry after ``retry_after_ms``."""

    def __init__(self, message: str, retry_after_ms: int) -> None:
        super().__init__("RATE_LIMITED", message, retry_after_ms)


class TooManyStreams(AppError):
    """A seat's or a player's token holds as many live streams on this process as it may: one
    more is refused until one of them ends."""

    def __init__(self, most: int) -> None:
        super().__init__(
            TOO_MANY_STREAMS,
            f"this token holds {most} live streams on this server, as many as one may: close "
            "one (a page open twice, a reconnect that did not cancel the stream before it)",
            {"max_streams": str(most)},
        )


class TooManyUploads(RetryLater):
    """The HTTP listener receives as many large request bodies (replay files for VerifyReplay)
    at once as it may: each holds up to 4 MiB of memory while it comes, at the sender's pace.
    Sent again after ``retry_after_ms``, it may well be taken."""

    def __init__(self, most: int, retry_after_ms: int) -> None:
        super().__init__(
            TOO_MANY_UPLOADS,
            f"this server is receiving {most} replay files at once, as many as it may: send it "
            "again in a moment",
            retry_after_ms,
        )


class Unavailable(RetryLater):
    """The event store cannot be reached now (the database restarts, fails over, is down or
    its disk full): nothing was done, or, for a command, it may have been; the same call again,
    a command with the same id, is applied once."""

    def __init__(self, message: str, retry_after_ms: int, detail: str = "") -> None:
        super().__init__(
            STORE_UNAVAILABLE,
            f"the game store is unavailable ({message}): try again (a command with the same "
            "command_id is applied once)",
            retry_after_ms,
        )
        #: What the database or its driver said, for the log only (it names the database's host,
        #: port, name and user: not the clients').
        self.detail = detail


class NewerRelease(RetryLater):
    """A game recorded by a newer release of the service than this process's (a rolling upgrade
    under way): its record holds a rule option, an event or a field this release does not know,
    and this release would play it by its own rules, recording moves and time-outs that the
    game's rules do not make (its record would never verify again). Nothing is done: the newer
    replicas serve it, and the client tries again (reaching one of them, or this one upgraded)."""

    def __init__(self, game_id: str, retry_after_ms: int) -> None:
        super().__init__(
            GAME_FROM_NEWER_RELEASE,
            f"game {game_id} was recorded by a newer release of the service than this "
            "server's: try again (a newer server serves it)",
            retry_after_ms,
        )


class ShuttingDown(AppError):
    """This process is shutting down: a stream ends here, and its client resumes on another
    replica after ``after_version`` (the last version the stream sent)."""

    def __init__(self, after_version: int) -> None:
        super().__init__(
            SERVER_SHUTTING_DOWN,
            "this server is shutting down: reconnect (to another replica) and resume after "
            f"version {after_version}",
            {"after_version": str(after_version)},
        )
        self.after_version = after_version


#: The reason of ShuttingDown (UNAVAILABLE).
SERVER_SHUTTING_DOWN = "SERVER_SHUTTING_DOWN"
#: The reason of Unavailable (UNAVAILABLE).
STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
#: The reason of TooManyStreams (RESOURCE_EXHAUSTED).
TOO_MANY_STREAMS = "TOO_MANY_STREAMS"
#: The reason of TooManyUploads (RESOURCE_EXHAUSTED).
TOO_MANY_UPLOADS = "TOO_MANY_UPLOADS"
#: The reason of NewerRelease (UNAVAILABLE).
GAME_FROM_NEWER_RELEASE = "GAME_FROM_NEWER_RELEASE"
# Reasons of BadCredentials (UNAUTHENTICATED); the token's own faults (INVALID_TOKEN, UNKNOWN_KEY,
# TOKEN_EXPIRED) are named in croupier.app.tokens.
MISSING_TOKEN = "MISSING_TOKEN"  # a seat call with no token at all
SEAT_TOKEN_REQUIRED = "SEAT_TOKEN_REQUIRED"  # a seat call with a studio or player token
STUDIO_CREDENTIAL_REQUIRED = "STUDIO_CREDENTIAL_REQUIRED"  # CreateGame without the studio's
PLAYER_TOKEN_REQUIRED = "PLAYER_TOKEN_REQUIRED"  # recall without a studio-signed player token
BAD_AUTH_SCHEME = "BAD_AUTH_SCHEME"  # authorization metadata that is not "Bearer <token>"
DUPLICATE_AUTHORIZATION = "DUPLICATE_AUTHORIZATION"  # two authorization entries: which one?
# Reasons of Forbidden (PERMISSION_DENIED).
TOKEN_FOR_OTHER_GAME = "TOKEN_FOR_OTHER_GAME"
SEAT_MISMATCH = "SEAT_MISMATCH"
NO_SUCH_SEAT = "NO_SUCH_SEAT"  # a seat token for a seat its game does not have
# Reasons of a Play stream's first message (INVALID_ARGUMENT).
JOIN_TIMEOUT = "JOIN_TIMEOUT"  # no first message (the join) within the core's join_timeout_s


def invalid(reason: str, message: str, field: str) -> BadRequest:
    return BadRequest(reason, message, field=field)


def require(value: object, field: str) -> None:
    if not value:
        raise invalid("MISSING_FIELD", f"{field} is required", field)


def from_rejection(stored: common_pb2.Rejection) -> AppError:
    """A refusal as the store kept it: illegal now, or malformed."""
    metadata = {"rule": stored.rule} if stored.rule else {}
    if (stored.status or ILLEGAL) == ILLEGAL:
        return NotNow(stored.reason, stored.message, metadata)
    return BadRequest(stored.reason, stored.message, metadata, field=stored.field)


def log_failure(logger: Any, event: str, error: BaseException, **fields: object) -> None:
    """A failure of work nobody waits on (a sweep, the streams' recheck, a tick), logged: the
    store being away passes, and is a warning without a traceback; anything else is a bug, an
    error with its traceback. A game a newer release recorded (a rolling upgrade) is no bug
    either. (The sweeper says so itself, once a while, of the ticks it hands back: those do not
    come here, Croupier._forget_tick.)"""
    if isinstance(error, Unavailable | StoreUnavailable):
        # An answer's detail is what the database said; the answer itself says only that.
        said = error.detail if isinstance(error, Unavailable) and error.detail else str(error)
        logger.warning(event, reason=STORE_UNAVAILABLE, error=said, **fields)
    elif isinstance(error, NewerRelease):
        logger.warning(event, reason=error.reason, error=error.message, **fields)
    else:
        logger.error(event, exc_info=error, **fields)


def store_error(error: GameNotFound | VersionConflict) -> AppError:
    """The store's refusal of a read or an append, as the caller is told it."""
    if isinstance(error, GameNotFound):
        return NotFound("GAME_NOT_FOUND", str(error), {"game_id": error.game_id})
    return StaleVersion(
        "VERSION_CONFLICT",
        f"{error}; read the game again and retry",
        {"current_version": str(error.current), "expected_version": str(error.expected)},
    )
