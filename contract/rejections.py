"""A refused command as the contract's ``Rejection`` message (kept by the store, so that a retry
gets the same answer)."""

from __future__ import annotations

from croupier.engine.game import CommandError, IllegalCommand
from croupier.v1 import common_pb2

#: The two ways the engine refuses a command, as ``Rejection.status`` names them.
ILLEGAL = "FAILED_PRECONDITION"
MALFORMED = "INVALID_ARGUMENT"


def rejection(error: CommandError) -> common_pb2.Rejection:
    """The engine's refusal as a message: illegal now, or malformed (naming the field)."""
    illegal = isinstance(error, IllegalCommand)
    return common_pb2.Rejection(
        reason=error.reason,
        rule=error.rule,
        message=error.message,
        field=f"command.{error.field}" if error.field and not illegal else "",
        status=ILLEGAL if illegal else MALFORMED,
    )
