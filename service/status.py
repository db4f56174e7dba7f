"""The application's errors as gRPC statuses with ``google.rpc`` details: the one table.

Every status carries an ``ErrorInfo`` (the stable reason, domain ``croupier.v1``, and metadata
such as the rule or the current version); malformed input adds a ``BadRequest`` naming the field.
"""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from croupier.app.errors import (
    AppError,
    BadCredentials,
    BadRequest,
    Forbidden,
    NewerRelease,
    NotFound,
    NotNow,
    RateLimited,
    RetryLater,
    ShuttingDown,
    StaleVersion,
    TooManyStreams,
    TooManyUploads,
    Unavailable,
)

DOMAIN = "croupier.v1"
#: The reason of an unexpected failure (a bug): the message names the error id of the log line
#: that holds the traceback.
INTERNAL_REASON = "INTERNAL_ERROR"

CODES: dict[type[AppError], grpc.StatusCode] = {
    BadRequest: grpc.StatusCode.INVALID_ARGUMENT,
    NotNow: grpc.StatusCode.FAILED_PRECONDITION,
    StaleVersion: grpc.StatusCode.ABORTED,
    NotFound: grpc.StatusCode.NOT_FOUND,
    # The call lacks the credential it needs or its token is no good: MISSING_TOKEN,
    # SEAT_TOKEN_REQUIRED, STUDIO_CREDENTIAL_REQUIRED, PLAYER_TOKEN_REQUIRED, BAD_AUTH_SCHEME,
    # DUPLICATE_AUTHORIZATION (croupier.app.errors); INVALID_TOKEN, UNKNOWN_KEY, TOKEN_EXPIRED
    # (croupier.app.tokens).
    BadCredentials: grpc.StatusCode.UNAUTHENTICATED,
    # A genuine seat token, not for this game or seat: TOKEN_FOR_OTHER_GAME, SEAT_MISMATCH,
    # NO_SUCH_SEAT.
    Forbidden: grpc.StatusCode.PERMISSION_DENIED,
    RateLimited: grpc.StatusCode.RESOURCE_EXHAUSTED,
    # A seat's or player's token holds as many live streams as it may (TOO_MANY_STREAMS).
    TooManyStreams: grpc.StatusCode.RESOURCE_EXHAUSTED,
    # The HTTP listener receives as many replay files as it may at once (TOO_MANY_UPLOADS, with a
    # RetryInfo).
    TooManyUploads: grpc.StatusCode.RESOURCE_EXHAUSTED,
    # The process stops (SIGTERM): the client reconnects, to another replica, and resumes.
    ShuttingDown: grpc.StatusCode.UNAVAILABLE,
    # The event store cannot be reached now (STORE_UNAVAILABLE, with a RetryInfo): try again, a
    # command with the same id (applied once).
    Unavailable: grpc.StatusCode.UNAVAILABLE,
    # A game a newer release recorded (GAME_FROM_NEWER_RELEASE, with a RetryInfo): a rolling
    # upgrade is under way, and a newer replica serves it.
    NewerRelease: grpc.StatusCode.UNAVAILABLE,
}


#: Connect's HTTP status for each code the service sends (connectrpc.com/docs/protocol, "Error
#: Codes"): the web pages' JSON errors (lobby, timeline) answer with these.
HTTP_STATUS: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.INTERNAL: 500,
}


def http_status_of(error: AppError) -> int:
    """The HTTP status of ``error`` for a JSON answer (a store away is 503, not 400)."""
    return HTTP_STATUS.get(code_of(error), 500)


def retry_after_s(error: AppError) -> int | None:
    """An HTTP ``Retry-After`` for ``error`` (whole seconds, rounded up), if it asks to wait."""
    if not isinstance(error, RetryLater):
        return None
    return max(1, -(-error.retry_after_ms // 1000))


def code_of(error: AppError) -> grpc.StatusCode:
    for kind in type(error).__mro__:
        if kind in CODES and issubclass(kind, AppError):
            return CODES[kind]
    return grpc.StatusCode.INTERNAL


def to_status(error: AppError) -> grpc.Status:
    """The gRPC status of ``error`` (its details in ``grpc-status-details-bin``)."""
    return rpc_status.to_status(status_of(error))


def status_of(error: AppError) -> status_pb2.Status:
    """The ``google.rpc.Status`` of ``error``: the code, the message and the details, the same on
    every transport (gRPC, Connect, gRPC-Web)."""
    code = code_of(error)
    status = status_pb2.Status(code=getattr(code_pb2, code.name), message=error.message)
    info = any_pb2.Any()
    info.Pack(
        error_details_pb2.ErrorInfo(reason=error.reason, domain=DOMAIN, metadata=error.metadata)
    )
    status.details.append(info)
    if error.field:
        bad = any_pb2.Any()
        bad.Pack(
            error_details_pb2.BadRequest(
                field_violations=[
                    error_details_pb2.BadRequest.FieldViolation(
                        field=error.field, description=error.message
                    )
                ]
            )
        )
        status.details.append(bad)
    if isinstance(error, RetryLater):
        retry = any_pb2.Any()
        delay = duration_pb2.Duration()
        delay.FromMilliseconds(error.retry_after_ms)
        retry.Pack(error_details_pb2.RetryInfo(retry_delay=delay))
        status.details.append(retry)
    return status


def internal_status(error_id: str) -> grpc.Status:
    """An unexpected failure: nothing of it but the id that finds its traceback in the logs."""
    return rpc_status.to_status(internal_status_of(error_id))


def internal_status_of(error_id: str) -> status_pb2.Status:
    """:func:`internal_status` as a ``google.rpc.Status``."""
    status = status_pb2.Status(
        code=code_pb2.INTERNAL,
        message=f"internal error {error_id}: the server logged it; report the id",
    )
    info = any_pb2.Any()
    info.Pack(
        error_details_pb2.ErrorInfo(
            reason=INTERNAL_REASON, domain=DOMAIN, metadata={"error_id": error_id}
        )
    )
    status.details.append(info)
    return status
