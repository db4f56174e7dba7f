"""Engine and store errors → gRPC status codes with ``google.rpc`` details.

Every error carries an ``ErrorInfo`` (a stable UPPER_SNAKE reason, domain ``croupier.v1``, and
metadata such as the rule or the current version); malformed requests add a ``BadRequest`` with
the field at fault.
"""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from croupier.engine.game import CommandError, IllegalCommand
from croupier.v1 import common_pb2

DOMAIN = "croupier.v1"


class ServiceError(Exception):
    """An error to send as a gRPC status."""

    def __init__(self, code: grpc.StatusCode, reason: str, message: str,
                 metadata: dict[str, str] | None = None, field: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.metadata = metadata or {}
        self.field = field

    def to_status(self) -> grpc.Status:
        status = status_pb2.Status(code=getattr(code_pb2, self.code.name), message=self.message)
        info = any_pb2.Any()
        info.Pack(error_details_pb2.ErrorInfo(reason=self.reason, domain=DOMAIN,
                                              metadata=self.metadata))
        status.details.append(info)
        if self.field:
            bad = any_pb2.Any()
            bad.Pack(error_details_pb2.BadRequest(field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field=self.field,
                                                            description=self.message)]))
            status.details.append(bad)
        return rpc_status.to_status(status)


def invalid(reason: str, message: str, field: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, reason, message, field=field)


def rejection(error: CommandError) -> common_pb2.Rejection:
    """The engine's refusal as a message (kept by the store so that a retry gets the same)."""
    illegal = isinstance(error, IllegalCommand)
    return common_pb2.Rejection(
        reason=error.reason, rule=error.rule, message=error.message,
        field=f"command.{error.field}" if error.field and not illegal else "",
        status="FAILED_PRECONDITION" if illegal else "INVALID_ARGUMENT")


def from_rejection(stored: common_pb2.Rejection) -> ServiceError:
    """Illegal in this state → FAILED_PRECONDITION; malformed → INVALID_ARGUMENT."""
    metadata = {"rule": stored.rule} if stored.rule else {}
    return ServiceError(grpc.StatusCode[stored.status or "FAILED_PRECONDITION"], stored.reason,
                        stored.message, metadata, field=stored.field)
