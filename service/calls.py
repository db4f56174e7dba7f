"""What every transport does around a GameService call: who calls, errors as statuses, one log line.

The gRPC interceptor (:mod:`croupier.service.interceptor`) and the Connect one of the HTTP listener
(:mod:`croupier.service.http`) both go through :class:`Call`: the one ``authorization: Bearer
<token>`` entry (:func:`bearer_token`), the core's caller resolution (rate limits are the core's
too, per seat, whatever the transport), the application's typed errors as ``google.rpc.Status``
messages with their details (:mod:`croupier.service.status`), an unexpected exception as
``INTERNAL`` with an error id, and one log line per call with the method, the outcome, the latency
and what the core bound (game, seat, command), and the RPC metrics (:mod:`croupier.service.metrics`:
started, handled by status code, latency, open streams). Each transport only turns the status into
its wire.
"""

from __future__ import annotations

import contextvars
import time
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

import structlog
from google.rpc import status_pb2

from croupier.app.callers import ANONYMOUS, Caller
from croupier.app.core import Croupier
from croupier.app.errors import (
    BAD_AUTH_SCHEME,
    DUPLICATE_AUTHORIZATION,
    AppError,
    BadCredentials,
)
from croupier.service.status import code_of, internal_status_of, status_of

if TYPE_CHECKING:
    from croupier.service.metrics import Metrics

log = structlog.get_logger("croupier.rpc")

_CALLER: contextvars.ContextVar[Caller] = contextvars.ContextVar("caller", default=ANONYMOUS)
AUTHORIZATION = "authorization"  # gRPC metadata keys arrive lower-case; HTTP headers are lowered
BEARER = "bearer"  # the scheme, compared case-insensitively (RFC 9110 §11.1)
#: The outcome of a call whose client went away.
CANCELLED = "CANCELLED"


def caller() -> Caller:
    """The current call's verified caller (set by :meth:`Call.begin`)."""
    return _CALLER.get()


def bearer_token(metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
    """The token of the call's one ``authorization: Bearer <token>`` entry; ``None`` without one.

    Anything else is refused rather than guessed at: another scheme or a bare token (a client
    that meant something else), an empty token, and two entries (a proxy and a client that
    disagree about who calls)."""
    values = [value for key, value in metadata or () if key.lower() == AUTHORIZATION]
    if not values:
        return None
    if len(values) > 1:
        raise BadCredentials(DUPLICATE_AUTHORIZATION, "send one 'authorization' entry, not several")
    scheme, _, token = str(values[0]).strip().partition(" ")
    token = token.strip()
    if scheme.lower() != BEARER or not token:
        raise BadCredentials(BAD_AUTH_SCHEME, "send the token as 'authorization: Bearer <token>'")
    return token


class Call:
    """One call's bookkeeping, from :meth:`begin` to one of :meth:`ok`, :meth:`failed`,
    :meth:`crashed`, :meth:`cancelled` or :meth:`ended` (each logs the call's one line, and counts
    it once: the first of them is the call's outcome).

    With ``metrics``, the call is counted as started at once and as handled when it ends, under
    ``service``, its ``method`` and its ``kind`` (:data:`croupier.service.metrics.UNARY`…)."""

    def __init__(
        self,
        core: Croupier,
        method: str,
        *,
        metrics: Metrics | None = None,
        service: str = "",
        kind: str = "unary",
        **context: str,
    ) -> None:
        self._core = core
        self.method = method
        self._context = context
        self._started = time.perf_counter()
        self._metrics = metrics
        self._service = service
        self._kind = kind
        self._open = True
        if metrics is not None:
            metrics.rpc_start(service, method, kind)

    @property
    def open(self) -> bool:
        """Whether the call has not ended yet."""
        return self._open

    def begin(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> None:
        """Resolve the caller from the call's ``authorization`` entry (raises the core's
        :class:`BadCredentials` for a bad one: answer it with :meth:`failed`)."""
        structlog.contextvars.clear_contextvars()
        if self._context:
            structlog.contextvars.bind_contextvars(**self._context)
        self._started = time.perf_counter()
        _CALLER.set(self._core.authenticate(bearer_token(metadata)))

    def ended(self, outcome: str) -> None:
        """Log the call's line with ``outcome`` (a status code's name, or OK) and count it; a call
        ends once (a later end, such as a stream's generator closed after its error, is ignored)."""
        if not self._open:
            return
        self._open = False
        seconds = time.perf_counter() - self._started
        if self._metrics is not None:
            self._metrics.rpc_end(self._service, self.method, self._kind, outcome, seconds)
        log.info("rpc", method=self.method, outcome=outcome, latency_ms=round(seconds * 1000, 2))
        structlog.contextvars.clear_contextvars()

    def ok(self) -> None:
        self.ended("OK")

    def cancelled(self) -> None:
        """The client went away."""
        self.ended(CANCELLED)

    def failed(self, error: AppError) -> status_pb2.Status:
        """An application error: the status to answer, with its details."""
        # With its metadata (the versions of a conflict, the rule of an illegal move, the key
        # id of an unknown key): what the client was told, for whoever reads the line.
        structlog.contextvars.bind_contextvars(
            reason=error.reason, **({"metadata": error.metadata} if error.metadata else {})
        )
        self.ended(code_of(error).name)
        return status_of(error)

    def crashed(self, error: Exception) -> status_pb2.Status:
        """An unexpected exception: logged with its traceback under a fresh id, answered
        ``INTERNAL`` with that id (the client can report it; nothing else of it leaves)."""
        error_id = uuid.uuid4().hex
        structlog.contextvars.bind_contextvars(reason="INTERNAL_ERROR", error_id=error_id)
        log.error("rpc failed unexpectedly", method=self.method, error_id=error_id, exc_info=error)
        self.ended("INTERNAL")
        return internal_status_of(error_id)
