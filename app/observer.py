"""What the application core tells whoever watches it: commands, folds, its state cache, time-outs.

The core knows nothing of Prometheus or any other metrics library (it must not depend on the
service layer): it calls an :class:`Observer`, and the service passes one that counts
(``croupier.service.metrics``). :class:`Unobserved` is the default and does nothing.

Every label value an observer is given comes from a small fixed set (a game kind, the outcome and
fold-start names below), never from a request: a metric's series stay few whatever clients send.
"""

from __future__ import annotations

from typing import Protocol

from croupier.app.errors import (
    AppError,
    BadCredentials,
    BadRequest,
    Forbidden,
    NewerRelease,
    NotFound,
    NotNow,
    RateLimited,
    ShuttingDown,
    StaleVersion,
    Unavailable,
)

# How a command was answered (``Observer.command``'s ``outcome``).
ACCEPTED = "accepted"  # new, legal: its events are recorded
DUPLICATE = "duplicate"  # a retry of a command id answered before: its first answer again
ILLEGAL = "illegal"  # refused by the rules now (FAILED_PRECONDITION)
INVALID = "invalid"  # malformed: cannot mean anything (INVALID_ARGUMENT)
STALE = "stale"  # expected_version is behind the game (ABORTED)
RATE_LIMITED = "rate_limited"  # the seat is over its allowance (RESOURCE_EXHAUSTED)
NOT_FOUND = "not_found"  # no such game (NOT_FOUND)
DENIED = (
    "denied"  # no credential, or not this game's or seat's (UNAUTHENTICATED, PERMISSION_DENIED)
)
# Not decided now, through no fault of the command (UNAVAILABLE): the store is away, the game is
# a newer release's, or this process is shutting down. Sent again it may well be applied; counted
# apart so that an outage shows as one on a dashboard, not as clients sending malformed commands.
UNAVAILABLE = "unavailable"
OUTCOMES = (
    ACCEPTED,
    DUPLICATE,
    ILLEGAL,
    INVALID,
    STALE,
    RATE_LIMITED,
    NOT_FOUND,
    DENIED,
    UNAVAILABLE,
)

#: The kind of a command whose game is not known (a game id nobody created, or a refusal before
#: the game was read).
UNKNOWN_KIND = "unknown"

# Where a fold starts (``Observer.fold``'s ``start``).
FROM_CACHE = "cache"  # this process's folded state: only the events since it are folded
FROM_SNAPSHOT = "snapshot"  # the game's latest snapshot in the store, then the events after it
FROM_LOG = "log"  # the whole log, from its first event
FOLD_STARTS = (FROM_CACHE, FROM_SNAPSHOT, FROM_LOG)

_OUTCOME_OF: tuple[tuple[type[AppError], str], ...] = (
    (RateLimited, RATE_LIMITED),
    (StaleVersion, STALE),
    (NotNow, ILLEGAL),
    (BadRequest, INVALID),
    (NotFound, NOT_FOUND),
    (BadCredentials, DENIED),
    (Forbidden, DENIED),
    (Unavailable, UNAVAILABLE),
    (NewerRelease, UNAVAILABLE),
    (ShuttingDown, UNAVAILABLE),
)


def outcome_of(error: AppError) -> str:
    """The outcome class of a refused command."""
    for kind, outcome in _OUTCOME_OF:
        if isinstance(error, kind):
            return outcome
    return INVALID  # pragma: no cover - every AppError a command meets is one of the above


class Observer(Protocol):
    """Told of what the core does; every method is called on the event loop and must be quick."""

    def command(self, kind: str, outcome: str, seconds: float) -> None:
        """A command (SubmitCommand, a Play stream's, EndGame) was answered with ``outcome``,
        ``seconds`` after it came."""

    def fold(self, kind: str, start: str, events: int) -> None:
        """A game was brought up to date: ``events`` stored events folded from ``start``."""

    def cache_lookup(self, hit: bool) -> None:
        """The folded-state cache was asked for a game (``hit``: it held one)."""

    def cache_size(self, entries: int) -> None:
        """The folded-state cache now holds ``entries`` games."""

    def timed_out(self, kind: str, lateness_ms: int) -> None:
        """A turn's time-out was recorded ``lateness_ms`` after its deadline."""

    def turn_restarted(self, kind: str) -> None:
        """A turn's deadline was passed by more than its grace (the service down, its store away,
        or the process stalled): the turn was restarted rather than timed out."""


class Unobserved:
    """An :class:`Observer` that does nothing (the default)."""

    def command(self, kind: str, outcome: str, seconds: float) -> None:
        pass

    def fold(self, kind: str, start: str, events: int) -> None:
        pass

    def cache_lookup(self, hit: bool) -> None:
        pass

    def cache_size(self, entries: int) -> None:
        pass

    def timed_out(self, kind: str, lateness_ms: int) -> None:
        pass

    def turn_restarted(self, kind: str) -> None:
        pass
