"""What went wrong, as types: each transport maps them to its own status codes in one table.

Every error carries a stable UPPER_SNAKE ``reason`` (clients branch on it), a message for people,
``metadata`` (the rule cited, the current version…) and, for malformed input, the ``field`` at
fault.
"""

from __future__ import annotations

from croupier.contract.rejections import ILLEGAL
from croupier.v1 import common_pb2


class AppError(Exception):
    """Base of the application's errors."""

    def __init__(
        self,
        reason: str,
        message: str,
        metadata: dict[str, str] | None = None,
        field: str = "",
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.metadata = dict(metadata or {})
        self.field = field


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
