"""structlog set-up: JSON lines in production, readable colours in a terminal."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import structlog
from opentelemetry import trace

from croupier.app.errors import clip
from croupier.app.throttle import Throttle
from croupier.service.config import port_of

#: The most characters of one value in a log line (a traceback: ``TRACEBACK_LIMIT``): a request's
#: fields reach the log (the game id a call names…), and a 1 MB id must not make a 1 MB line.
VALUE_LIMIT = 1000
TRACEBACK_LIMIT = 20000


#: The event a server logs once it listens, with ``address``: what tools that start one wait for.
SERVING_EVENT = "serving"


def _serving_lines(text: str) -> list[dict[str, Any]]:
    """The ``serving`` lines of a server's JSON log (one per worker); the lines that are not
    JSON objects are skipped."""
    found = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("event") == SERVING_EVENT:
            found.append(entry)
    return found


def serving_addresses(text: str) -> list[str]:
    """The gRPC ``address`` of every ``serving`` line in a server's JSON log."""
    return [str(entry.get("address", "")) for entry in _serving_lines(text)]


def serving_http_ports(text: str) -> list[int]:
    """The HTTP listener's port of every ``serving`` line in a server's JSON log that has one
    (its ``http`` URL; ``off`` has none)."""
    ports = (port_of(str(entry.get("http", ""))) for entry in _serving_lines(text))
    return [port for port in ports if port is not None]


def clip_values(_: object, __: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
    """Every string value of the line, cut to its limit."""
    for key, value in event.items():
        if isinstance(value, str):
            event[key] = clip(value, TRACEBACK_LIMIT if key == "exception" else VALUE_LIMIT)
    return event


def add_trace_ids(
    _: object, __: str, event: structlog.types.EventDict
) -> structlog.types.EventDict:
    """The current span's ``trace_id`` and ``span_id`` (hex, as trace back-ends show them), when
    the line is written inside a traced call: a log line leads to its trace and back."""
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        event["trace_id"] = trace.format_trace_id(context.trace_id)
        event["span_id"] = trace.format_span_id(context.span_id)
    return event


#: The lowest level logged (``serve --log-level``), for every process that reads it: a
#: ``serve --workers`` group's too.
LEVEL_ENV = "CROUPIER_LOG_LEVEL"
#: The levels it takes, lowest first; ``info`` logs every call's ``rpc`` line.
LEVELS = ("debug", "info", "warning", "error")
DEFAULT_LEVEL = "info"


def configure(fmt: str = "console", level: str | None = None) -> None:
    """``fmt``: ``json`` or ``console``; ``level``: the lowest level logged (by default
    ``CROUPIER_LOG_LEVEL``'s, else info)."""
    if level is None:
        level = os.environ.get(LEVEL_ENV, "").strip().lower() or DEFAULT_LEVEL
        if level not in LEVELS:  # the option checks it; a tool's own read may not
            level = DEFAULT_LEVEL
    processors: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        add_trace_ids,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor
    # Tracebacks rendered as text in both formats, so that they are cut like any value.
    processors += [structlog.processors.format_exc_info, clip_values]
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    _route_libraries(processors, renderer)
    structlog.configure(
        processors=[*processors, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        # Each line in one write (print writes the line and its newline apart): the workers of
        # `serve --workers` share stderr, and their lines ran into each other.
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


#: The level from which the libraries' own log records are written (psycopg's pool, asyncio…).
LIBRARY_LEVEL = logging.WARNING
#: The level from which psycopg's pool's records are written (:func:`_route_libraries`).
POOL_LEVEL = logging.ERROR
_handler: logging.Handler | None = None


def _route_libraries(
    processors: list[structlog.types.Processor], renderer: structlog.types.Processor
) -> None:
    """The records of the standard library's logging (the libraries': psycopg's pool losing a
    connection, asyncio's unretrieved exceptions) rendered as ours, with the logger's name: a
    JSON run writes JSON lines only (they were plain text, which a log shipper cannot parse)."""
    global _handler
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *processors],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    if _handler is not None:  # configured again (the workers of serve --workers, the tests)
        root.removeHandler(_handler)
    root.addHandler(handler)
    root.setLevel(LIBRARY_LEVEL)
    # psycopg_pool says everything as a warning, one line per connection: when PostgreSQL drops
    # the connections (a restart, a failover) a `discarding broken connection` or `error
    # connecting` for each of them, hundreds of lines per outage, while the store's own `the
    # store is unavailable` and `the store is back` say it once. Its errors only (it has none
    # today, and the service's answers and lines say what its warnings did).
    logging.getLogger("psycopg.pool").setLevel(POOL_LEVEL)
    _handler = handler
    for repeated in (_ACCEPT_FAILURES, _SEND_FAILURES):  # the same filters: added once
        logging.getLogger("asyncio").addFilter(repeated)
    threading.excepthook = _thread_failed


def _thread_failed(failure: threading.ExceptHookArgs) -> None:
    """A thread ended by an exception: logged as every other line (Python printed it as text)."""
    if failure.exc_type is SystemExit:
        return
    name = failure.thread.name if failure.thread is not None else "?"
    logging.getLogger("threading").error(
        f"thread {name} failed",
        exc_info=(failure.exc_type, failure.exc_value, failure.exc_traceback),  # type: ignore[arg-type]
    )


#: How often asyncio's failure to accept a connection for want of descriptors (or memory) is
#: written at most (seconds); the ones between are counted in the next.
REPEAT_EVERY_S = 10.0


class Repeats(logging.Filter):
    """Of the records whose message starts with ``prefix``, one every ``every_s`` seconds; the next
    one let through says how many were left out before it (``suppressed``).

    For asyncio's ``socket.accept() out of system resource``: once the process has no descriptor
    left, a listening socket's every accept fails, and asyncio (3.11) logs each, a traceback
    with it, up to the socket's backlog times a second (4096 on the HTTP port): 4 MB of log a
    second, 349 MB in a chaos test, for a fault that one line says."""

    def __init__(
        self, prefix: str, every_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.prefix = prefix
        self.throttle = Throttle(every_s, clock)
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if not isinstance(record.msg, str) or not record.msg.startswith(self.prefix):
            return True
        with self._lock:
            said = self.throttle.due()
        if said is None:
            return False
        if suppressed := said.unsaid:
            first, _, rest = record.getMessage().partition("\n")
            record.msg = f"{first} ({suppressed} more like it since the last one, not logged)" + (
                f"\n{rest}" if rest else ""
            )
            record.args = None
        return True


_ACCEPT_FAILURES = Repeats("socket.accept() out of system resource", REPEAT_EVERY_S)
#: asyncio's warning for every write to a connection its client has dropped, past the fifth: a
#: client that drops its HTTP/2 connections as soon as it has sent 100 calls on each (their
#: answers then written to nobody) had it written 17 times a connection, some 600 lines a
#: second from one client, each saying nothing of which connection or why.
_SEND_FAILURES = Repeats("socket.send() raised exception.", REPEAT_EVERY_S)
