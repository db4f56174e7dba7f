"""Prometheus metrics (``prometheus-client``): what the service counts, and where it is scraped.

Families (``docs/operations.md``, section "Metrics", lists each with its labels):

* RPCs: ``grpc_server_started_total``, ``grpc_server_handled_total`` and
  ``grpc_server_handling_seconds``, by ``grpc_service``, ``grpc_method``, ``grpc_type`` (and
  ``grpc_code``) — the names and labels of the gRPC ecosystem's interceptors (go-grpc-prometheus,
  py-grpc-prometheus), so that their dashboards and alerts work unchanged;
* ``croupier_open_streams``: StreamEvents and Play streams open now;
* ``croupier_commands_total``: commands by game kind and outcome (``croupier.app.observer``), and
  ``croupier_command_seconds``: how long each took to answer (a Play stream's commands included,
  which ``grpc_server_handling_seconds`` cannot time: it times the whole stream);
* ``croupier_store_operation_seconds``, ``croupier_store_errors_total`` and
  ``croupier_store_busy_total``: the event store; ``croupier_store_pool_connections``,
  ``croupier_store_pool_max_connections`` and ``croupier_store_pool_waiting``: its pool of
  connections (PostgreSQL), sampled every few seconds (:func:`sample_pool`);
* ``croupier_timeouts_total`` and ``croupier_timeout_lateness_seconds``: turn time-outs recorded,
  and how long after their deadline; ``croupier_turns_restarted_total``: turns whose deadline
  passed unkept by more than its grace, restarted instead;
* ``croupier_state_cache_lookups_total`` and ``croupier_state_cache_entries``: the folded-state
  cache;
* ``croupier_fold_events``: folds, and how many stored events each folded;
* ``croupier_gc_pause_seconds``: Python's garbage collections, and how long each stopped the
  process (``croupier.service.collector``).

Several processes (``serve --workers N``) count in prometheus-client's multiprocess mode: each
worker writes its values to files in ``PROMETHEUS_MULTIPROC_DIR`` (the parent makes one per run),
and whoever serves ``/metrics`` adds the files up (:func:`registry`). One process without that
variable counts in memory.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    make_asgi_app,
    multiprocess,
    start_http_server,
)

from croupier.log import EventStore, PoolStats

#: The variable prometheus-client reads (at import) to count in files shared by several processes.
MULTIPROC_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: ``serve --metrics-address``'s environment variable; empty: no metrics listener.
METRICS_ADDRESS_ENV = "CROUPIER_METRICS_ADDRESS"

# Bucket bounds, in the families' base units. A call takes milliseconds, a stream minutes.
RPC_BUCKETS_S = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600, 3600,
)  # fmt: skip
# A command is answered in milliseconds; one that waits for the store, up to its waits (5 s for a
# PostgreSQL connection, 10 s on SQLite: docs/operations.md, "When the database goes away").
COMMAND_BUCKETS_S = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
)  # fmt: skip
# A store call takes from tens of microseconds (SQLite, cached pages) to a network round trip.
STORE_BUCKETS_S = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
)  # fmt: skip
# A sweeper records a time-out within its poll (tens of ms); after a restart, as late as the
# downtime was.
LATENESS_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600)
# A young generation's collection takes tens of microseconds; a full one, with thousands of
# streams open and nothing frozen, most of a second.
GC_BUCKETS_S = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
)  # fmt: skip
# Events per fold: 0 (the cache was up to date) to a long game's whole log.
FOLD_BUCKETS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)

# grpc_type, as the ecosystem's interceptors name the kinds of call.
UNARY = "unary"
SERVER_STREAM = "server_stream"
BIDI_STREAM = "bidi_stream"

MS_PER_S = 1000


class Metrics:
    """The service's metric families on one registry. Implements the core's observer
    (``croupier.app.observer.Observer``); the interceptor and the store wrapper call the rest."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        rpc = ("grpc_service", "grpc_method", "grpc_type")
        self.rpc_started = Counter(
            "grpc_server_started", "RPCs started on the server.", rpc, registry=registry
        )
        self.rpc_handled = Counter(
            "grpc_server_handled",
            "RPCs completed on the server, by status code.",
            (*rpc, "grpc_code"),
            registry=registry,
        )
        self.rpc_seconds = Histogram(
            "grpc_server_handling_seconds",
            "Time from an RPC's start to its status (a stream: how long it was open).",
            (*rpc, "grpc_code"),
            buckets=RPC_BUCKETS_S,
            registry=registry,
        )
        self.open_streams = Gauge(
            "croupier_open_streams",
            "Streaming RPCs (StreamEvents, Play) open now.",
            ("grpc_method",),
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.commands = Counter(
            "croupier_commands",
            "Commands answered, by game kind and outcome (accepted, duplicate, or the class of "
            "refusal).",
            ("kind", "outcome"),
            registry=registry,
        )
        self.command_seconds = Histogram(
            "croupier_command_seconds",
            "Time from a command's arrival (SubmitCommand, a Play stream's command, EndGame) to "
            "its answer, by game kind; a Play stream's commands are timed here only.",
            ("kind",),
            buckets=COMMAND_BUCKETS_S,
            registry=registry,
        )
        self.store_seconds = Histogram(
            "croupier_store_operation_seconds",
            "Time an event-store call took (on the event loop, or on a worker thread without the "
            "wait for one).",
            ("operation",),
            buckets=STORE_BUCKETS_S,
            registry=registry,
        )
        self.store_errors = Counter(
            "croupier_store_errors",
            "Event-store calls that raised, by operation and exception type (VersionConflict and "
            "GameNotFound are answers to races and unknown ids; anything else is a failure).",
            ("operation", "error"),
            registry=registry,
        )
        self.store_busy = Counter(
            "croupier_store_busy",
            "Tries of SQLite calls on the event loop that found another writer holding the "
            "lock (each call is tried again, soon).",
            ("operation",),
            registry=registry,
        )
        self.pool_connections = Gauge(
            "croupier_store_pool_connections",
            "The store's pool of connections for calls on threads (PostgreSQL), by state: open "
            "(idle or in use) and idle; summed over the live processes.",
            ("state",),
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.pool_max = Gauge(
            "croupier_store_pool_max_connections",
            "The most connections the store's pool opens (PostgreSQL; summed over the live "
            "processes): open connections near it, and calls waiting, say the pool is too small "
            "for the load or the database too slow.",
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.pool_waiting = Gauge(
            "croupier_store_pool_waiting",
            "Calls waiting for a connection of the store's pool (PostgreSQL), summed over the "
            "live processes.",
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.timeouts = Counter(
            "croupier_timeouts",
            "Turn time-outs recorded (TurnTimedOut events), by game kind.",
            ("kind",),
            registry=registry,
        )
        self.timeout_lateness = Histogram(
            "croupier_timeout_lateness_seconds",
            "How long after its deadline a time-out was recorded.",
            ("kind",),
            buckets=LATENESS_BUCKETS_S,
            registry=registry,
        )
        self.turns_restarted = Counter(
            "croupier_turns_restarted",
            "Turns restarted rather than timed out (TurnRestarted events), by game kind: their "
            "deadline passed by more than its grace before any replica recorded it (the service "
            "down, its store away, or a process stalled). Any is worth a look.",
            ("kind",),
            registry=registry,
        )
        self.cache_lookups = Counter(
            "croupier_state_cache_lookups",
            "Lookups in the folded-state cache, by result (hit or miss).",
            ("result",),
            registry=registry,
        )
        self.cache_entries = Gauge(
            "croupier_state_cache_entries",
            "Games held folded in memory (summed over the live processes).",
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.fold_events = Histogram(
            "croupier_fold_events",
            "Stored events folded to bring a game up to date, by game kind and where the fold "
            "started (cache, snapshot or log); its _count is the number of folds.",
            ("kind", "start"),
            buckets=FOLD_BUCKETS,
            registry=registry,
        )
        self.gc_pauses = Histogram(
            "croupier_gc_pause_seconds",
            "How long each of Python's garbage collections stopped the process, by generation "
            "(2: a full collection).",
            ("generation",),
            buckets=GC_BUCKETS_S,
            registry=registry,
        )
        # Children by label values, made once: labels() costs a lock and a dictionary lookup.
        self._hit = self.cache_lookups.labels("hit")
        self._miss = self.cache_lookups.labels("miss")

    # -- the core's observer (croupier.app.observer.Observer) -------------------------------------

    def command(self, kind: str, outcome: str, seconds: float) -> None:
        self.commands.labels(kind, outcome).inc()
        self.command_seconds.labels(kind).observe(seconds)

    def fold(self, kind: str, start: str, events: int) -> None:
        self.fold_events.labels(kind, start).observe(events)

    def cache_lookup(self, hit: bool) -> None:
        (self._hit if hit else self._miss).inc()

    def cache_size(self, entries: int) -> None:
        self.cache_entries.set(entries)

    def timed_out(self, kind: str, lateness_ms: int) -> None:
        self.timeouts.labels(kind).inc()
        self.timeout_lateness.labels(kind).observe(max(0, lateness_ms) / MS_PER_S)

    def turn_restarted(self, kind: str) -> None:
        self.turns_restarted.labels(kind).inc()

    # -- the store's pool (sample_pool) -----------------------------------------------------------

    def pool(self, stats: PoolStats) -> None:
        self.pool_connections.labels("open").set(stats.open)
        self.pool_connections.labels("idle").set(stats.idle)
        self.pool_max.set(stats.max)
        self.pool_waiting.set(stats.waiting)

    # -- the process (croupier.service.collector) -------------------------------------------------

    def gc_pause(self, generation: int, seconds: float) -> None:
        self.gc_pauses.labels(str(generation)).observe(seconds)

    # -- RPCs (croupier.service.interceptor) ------------------------------------------------------

    def rpc_start(self, service: str, method: str, kind: str) -> None:
        self.rpc_started.labels(service, method, kind).inc()
        if kind != UNARY:
            self.open_streams.labels(method).inc()

    def rpc_end(self, service: str, method: str, kind: str, code: str, seconds: float) -> None:
        self.rpc_handled.labels(service, method, kind, code).inc()
        self.rpc_seconds.labels(service, method, kind, code).observe(seconds)
        if kind != UNARY:
            self.open_streams.labels(method).dec()

    # -- the store (croupier.service.store.observed) ----------------------------------------------

    def store_busy_call(self, operation: str) -> None:
        self.store_busy.labels(operation).inc()

    def store_call(self, operation: str, seconds: float, error: BaseException | None) -> None:
        self.store_seconds.labels(operation).observe(seconds)
        if error is not None:
            self.store_errors.labels(operation, type(error).__name__).inc()


@functools.cache
def metrics() -> Metrics:
    """The process's families, on prometheus-client's default registry (a family is registered
    once per process: every server of the process counts into it)."""
    # No `_created` series beside every counter and histogram: a series each, which Prometheus
    # itself does not read (it sees resets by the values going down).
    disable_created_metrics()  # type: ignore[no-untyped-call]
    return Metrics()


#: How often the store's pool is sampled (a gauge between samples holds the last one).
POOL_SAMPLE_S = 5.0


async def sample_pool(store: EventStore, metrics: Metrics, every_s: float = POOL_SAMPLE_S) -> None:
    """Until cancelled: the store's pool in ``metrics`` every ``every_s`` seconds (a store
    without a pool, SQLite, sets nothing)."""
    while True:
        stats = store.pool_stats()
        if stats is None:
            return
        metrics.pool(stats)
        await asyncio.sleep(every_s)


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_DIR_ENV) or None


def registry(directory: str | None = None) -> CollectorRegistry:
    """What a scrape reads: with a multiprocess ``directory`` (default: ``PROMETHEUS_MULTIPROC_DIR``),
    every process's files added up (live gauges summed over live processes); else this process's
    default registry."""
    directory = directory or multiprocess_dir()
    if directory is None:
        return REGISTRY
    collected = CollectorRegistry()
    multiprocess.MultiProcessCollector(collected, path=directory)  # type: ignore[no-untyped-call]
    return collected


def asgi_app() -> Callable[..., Any]:
    """``/metrics`` as an ASGI app, to mount on an HTTP listener (the exposition format, or
    OpenMetrics when the scraper asks for it)."""
    metrics()  # the families exist (with no samples yet) from the first scrape
    return make_asgi_app(registry())


@dataclass
class MetricsServer:
    """A metrics listener (``/metrics``, any path in fact) on a thread of its own."""

    host: str
    port: int
    _server: WSGIServer
    _thread: threading.Thread

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9464`` for IPv6) as a host and port; ``ValueError`` if it is not."""
    host, separator, port = address.rpartition(":")
    if not separator or not host or not port.isdigit() or int(port) > 0xFFFF:
        raise ValueError(f"HOST:PORT, not {address!r}")
    return host.strip("[]"), int(port)


def serve_http(address: str, directory: str | None = None) -> MetricsServer:
    """Serve :func:`registry` (of ``directory``) over HTTP on ``address`` (port 0: a free one);
    ``OSError`` if the address cannot be listened on."""
    host, port = parse_address(address)
    if directory is None:
        metrics()  # this process counts: its families show from the first scrape
    server, thread = start_http_server(port, host, registry=registry(directory))
    return MetricsServer(host, server.server_port, server, thread)


def clear_multiprocess_dir(directory: str) -> None:
    """Forget the counts of an earlier run: prometheus-client adds up every file it finds."""
    for name in os.listdir(directory):
        if name.endswith(".db"):
            os.remove(os.path.join(directory, name))


def process_exited(pid: int, directory: str) -> None:
    """A worker exited: its live gauges (open streams, cache entries) no longer count."""
    multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]
