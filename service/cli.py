"""The ``croupier`` command: ``serve``, ``demo``, ``load``, ``replay``, ``token``."""

from __future__ import annotations

import asyncio
import errno
import functools
import os
import random
import signal
import socket
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import click
import grpc
import structlog

from croupier.app.ratelimit import DEFAULT_COMMAND_BURST, DEFAULT_COMMANDS_PER_S
from croupier.service import config, logs
from croupier.service import shutdown as shutdown_options
from croupier.service import tls as tls_options
from croupier.service.collector import DEFAULT_THAW_GROWTH as DEFAULT_GC_THAW_GROWTH
from croupier.service.collector import RETIRED_THAW_ENV as RETIRED_GC_THAW_ENV
from croupier.service.collector import THAW_ENV as GC_THAW_ENV
from croupier.service.collector import Collector
from croupier.service.options import EnvArgument, EnvOption, SettingError, Switch
from croupier.service.store import redacted

if TYPE_CHECKING:
    from croupier.replays.format import Replay
    from croupier.replays.signing import ReplayKeys
    from croupier.service.metrics import MetricsServer
    from croupier.service.server import PortInUse

log = structlog.get_logger("croupier")
F = TypeVar("F", bound=Callable[..., Any])


def _json_errors(command: F) -> F:
    """With ``--log-format json``, a command's failure (a bad setting, a busy port, a crash) is a
    JSON line on stderr like every other, not click's plain ``Error: …`` or a bare traceback."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("log_format") != "json":
            return command(*args, **kwargs)
        try:
            return command(*args, **kwargs)
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise  # click's own ways out, not failures
        except click.ClickException as error:
            _failed_in_json(error)
        except Exception:
            logs.configure("json")
            log.exception("crashed")
            sys.exit(1)

    return cast(F, run)


def _failed_in_json(error: click.ClickException) -> NoReturn:
    """``error`` as the JSON ``failed`` line, and the exit with its status."""
    logs.configure("json")
    log.error("failed", error=error.format_message())
    sys.exit(error.exit_code)


class _Commands(click.Group):
    """The ``croupier`` group: a bad value of an option's environment variable, found while the
    command's options are read (before :func:`_json_errors` runs), is the JSON ``failed`` line
    too when the command logs JSON (``--log-format`` is read first for that)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SettingError as error:
            if error.log_format == "json":
                _failed_in_json(error)
            raise


#: A container's first process (its entry point) has this pid in the container's PID namespace.
CONTAINER_INIT_PID = 1
#: The exit status of a process a signal ended, as a shell and Docker report it: 128 + its number.
SIGNALLED_EXIT_BASE = 128


def _end_on_sigterm_as_init() -> None:
    """As a container's first process (pid 1: the image's ``croupier serve``, an init
    container's ``croupier migrate``), end on SIGTERM until the command handles it itself
    (``serve`` does once it serves, to shut down gracefully; ``serve --workers``, to forward it).
    Any other process dies of SIGTERM by default, but pid 1 has no default: the kernel drops
    every signal it has set no handler for, so a stop during a start or a migration (the store's
    connection, a wait of up to 60 s for the migration lock) was ignored, and Docker or the
    kubelet waited out the grace (30 s in deploy/) before its SIGKILL. Elsewhere, nothing
    changes: a worker still starting up dies of the signal as before."""
    if os.getpid() != CONTAINER_INIT_PID:
        return

    def end(signum: int, _: object) -> None:
        raise SystemExit(SIGNALLED_EXIT_BASE + signum)

    signal.signal(signal.SIGTERM, end)


#: ``--store`` and ``--log-format``, as serve and migrate take them.
_store_option = click.option(
    "--store",
    "store_url",
    cls=EnvOption,
    env="CROUPIER_STORE",
    default=lambda: os.environ.get("CROUPIER_STORE", config.DEFAULT_STORE),
    show_default=config.DEFAULT_STORE,
    help="sqlite:///PATH or postgresql://… Environment: CROUPIER_STORE.",
)
_log_format_option = click.option(
    "--log-format",
    cls=EnvOption,
    env="CROUPIER_LOG_FORMAT",
    type=click.Choice(["json", "console"]),
    default=config.env_default("CROUPIER_LOG_FORMAT", "console"),
    show_default="console",
    # Read before the other options: a bad value of theirs is then a JSON line in a JSON run.
    is_eager=True,
    help="json: every line a JSON object (for a log shipper); console: for people. "
    "Environment: CROUPIER_LOG_FORMAT.",
)


@click.group(cls=_Commands)
def main() -> None:
    """Croupier: deals, referees, records and settles turn-based card games over gRPC."""


@main.command()
@click.option(
    "--address",
    cls=EnvOption,
    env=config.ADDRESS_ENV,
    default=lambda: os.environ.get(config.ADDRESS_ENV, config.DEFAULT_ADDRESS),
    show_default=config.DEFAULT_ADDRESS,
    help=f"HOST:PORT to listen on. Environment: {config.ADDRESS_ENV}.",
)
@_store_option
@_log_format_option
@click.option(
    "--log-level",
    cls=EnvOption,
    env=logs.LEVEL_ENV,
    type=click.Choice(logs.LEVELS, case_sensitive=False),
    default=config.env_default(logs.LEVEL_ENV, logs.DEFAULT_LEVEL),
    show_default=logs.DEFAULT_LEVEL,
    help="The lowest level logged: info logs a line for every call (rpc), warning only "
    f"warnings and errors (a quiet terminal under load). Environment: {logs.LEVEL_ENV}.",
)
@click.option(
    "--workers",
    cls=EnvOption,
    env="CROUPIER_WORKERS",
    type=click.IntRange(1, 512),
    default=config.env_default("CROUPIER_WORKERS", 1),
    show_default="1",
    help="Processes serving on the one port (SO_REUSEPORT), each with its own store connection "
    "and event loop, to use every core. Environment: CROUPIER_WORKERS.",
)
@click.option(
    "--command-rate",
    cls=EnvOption,
    env="CROUPIER_COMMAND_RATE",
    type=click.FloatRange(0),
    default=config.env_default("CROUPIER_COMMAND_RATE", DEFAULT_COMMANDS_PER_S),
    show_default=f"{DEFAULT_COMMANDS_PER_S:g}",
    help="Commands per second each seat may keep up (0: no limit); beyond it RESOURCE_EXHAUSTED "
    "RATE_LIMITED. Environment: CROUPIER_COMMAND_RATE.",
)
@click.option(
    "--command-burst",
    cls=EnvOption,
    env="CROUPIER_COMMAND_BURST",
    type=click.IntRange(1),
    default=config.env_default("CROUPIER_COMMAND_BURST", DEFAULT_COMMAND_BURST),
    show_default=str(DEFAULT_COMMAND_BURST),
    help="Commands a seat may send at once after a pause. Environment: CROUPIER_COMMAND_BURST.",
)
@click.option(
    "--http-address",
    cls=EnvOption,
    env=config.HTTP_ADDRESS_ENV,
    default=lambda: os.environ.get(config.HTTP_ADDRESS_ENV, config.DEFAULT_HTTP_ADDRESS),
    show_default=config.DEFAULT_HTTP_ADDRESS,
    help="HOST:PORT of the HTTP listener (Connect, gRPC-Web and JSON, for browsers and curl); "
    f"empty or 'off': none. Environment: {config.HTTP_ADDRESS_ENV}.",
)
@click.option(
    "--cors-origins",
    cls=EnvOption,
    env=config.CORS_ORIGINS_ENV,
    default=lambda: os.environ.get(config.CORS_ORIGINS_ENV, ""),
    show_default="none",
    help="Browser origins that may call the HTTP listener, comma-separated ('*': any). None by "
    f"default: pages it serves itself need none. Environment: {config.CORS_ORIGINS_ENV}.",
)
@click.option(
    "--http-connections-per-address",
    "http_per_address",
    cls=EnvOption,
    env=config.HTTP_PER_ADDRESS_ENV,
    type=click.IntRange(0),
    default=config.env_default(config.HTTP_PER_ADDRESS_ENV, config.DEFAULT_HTTP_PER_ADDRESS),
    show_default=str(config.DEFAULT_HTTP_PER_ADDRESS),
    help="The most HTTP connections one client address (an IPv6 /64) holds at once per "
    "process; past it a new one is closed as soon as it is accepted. This machine's own "
    "(loopback) are not counted. 0: no limit, behind a proxy on another machine (an ingress, "
    "a load balancer) or, in a container, on the host or in another container, where every "
    "connection is the proxy's: limit each client there "
    f"(docs/operations.md). Environment: {config.HTTP_PER_ADDRESS_ENV}.",
)
@click.option(
    "--web-root",
    cls=EnvOption,
    env="CROUPIER_WEB_ROOT",
    type=click.Path(file_okay=False, path_type=Path),
    default=lambda: os.environ.get("CROUPIER_WEB_ROOT") or None,
    show_default="clients/web/dist when built",
    help="The web client served at / on the HTTP listener (make web builds it). Environment: "
    "CROUPIER_WEB_ROOT.",
)
@click.option(
    "--lobby/--no-lobby",
    cls=EnvOption,
    env="CROUPIER_LOBBY",
    type=Switch(),
    default=config.env_default("CROUPIER_LOBBY", "off"),
    show_default="off",
    help="The web client's lobby on the HTTP listener (POST /lobby/games, POST "
    "/lobby/commitments): anyone who reaches it may create games, with this server's studio key, "
    "and bots play their other seats. For a "
    "local try (make run); bounded and rate limited. Environment: CROUPIER_LOBBY (1/0, "
    "true/false, yes/no, on/off).",
)
@tls_options.server_options
@shutdown_options.grace_option
@shutdown_options.delay_option
@click.option(
    "--metrics-address",
    cls=EnvOption,
    env="CROUPIER_METRICS_ADDRESS",
    default=lambda: os.environ.get("CROUPIER_METRICS_ADDRESS", ""),
    show_default="off",
    help="HOST:PORT to serve Prometheus metrics on (/metrics; docs/operations.md), e.g. "
    "0.0.0.0:9464; with --workers, the parent serves every worker's. Environment: "
    "CROUPIER_METRICS_ADDRESS.",
)
@click.option(
    "--gc-thaw-growth",
    cls=EnvOption,
    env=GC_THAW_ENV,
    type=click.FloatRange(0),
    default=config.env_default(GC_THAW_ENV, DEFAULT_GC_THAW_GROWTH),
    show_default=f"{DEFAULT_GC_THAW_GROWTH:g}",
    help="Python's garbage collector: the objects that survive a collection are frozen, so "
    "later ones walk only what is new; when the memory the process holds has grown by this "
    "fraction since just after the last thaw (and at least hourly), they are handed back and "
    "collected once (freeing the garbage cycles among them); 0: Python's own way, nothing "
    f"frozen (docs/operations.md). Environment: {GC_THAW_ENV}.",
)
# An earlier release's thaw on a clock: still accepted, so that a command line that gives it
# still starts, and said to be ignored.
@click.option("--gc-thaw", "retired_gc_thaw", type=float, default=None, hidden=True)
@click.option(
    "--listeners",
    cls=EnvOption,
    env=config.LISTENERS_ENV,
    type=click.IntRange(1, 64),
    default=config.env_default(config.LISTENERS_ENV, config.DEFAULT_LISTENERS),
    show_default=str(config.DEFAULT_LISTENERS),
    help="gRPC servers in each process, sharing its port: grpc.aio takes a server's new calls "
    "one at a time per method, so on a busy process new streams (seats joining games) queue "
    "behind each other; each listener is another queue, and the kernel deals the connections "
    "between them. More than 1 shares the port (SO_REUSEPORT) as --workers does: run it where "
    f"the port is the service's alone (docs/operations.md). Environment: {config.LISTENERS_ENV}.",
)
@click.option("--worker-of-group", default=None, hidden=True, help="Internal: run as a worker.")
@_json_errors
def serve(
    address: str,
    store_url: str,
    log_format: str,
    log_level: str,
    workers: int,
    command_rate: float,
    command_burst: int,
    http_address: str,
    cors_origins: str,
    http_per_address: int,
    web_root: Path | None,
    lobby: bool,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_client_ca: Path | None,
    shutdown_grace: float,
    shutdown_delay: float,
    metrics_address: str,
    gc_thaw_growth: float,
    retired_gc_thaw: float | None,
    listeners: int,
    worker_of_group: str | None,
) -> None:
    """Serve the game service (with health checking and reflection), and over HTTP (Connect,
    gRPC-Web, JSON) on --http-address. Traces: the OTEL_* variables (docs/operations.md)."""
    _end_on_sigterm_as_init()  # before the imports: a stop may come at once
    # Read by every configure of this process, and by the workers of a group, who inherit it.
    os.environ[logs.LEVEL_ENV] = log_level.lower()
    from croupier.app.ratelimit import RateLimit
    from croupier.app.tokens import TokenSigner
    from croupier.replays.signing import key_id
    from croupier.service import metrics, tracing
    from croupier.service.http import HttpListener, create_http_app, is_off, parse_origins
    from croupier.service.http_limits import raise_descriptor_limit
    from croupier.service.lobby import Lobby
    from croupier.service.server import PortInUse, claim, create_server
    from croupier.service.shutdown import not_serving_for, shut_down
    from croupier.service.store import StoreOpenError, open_store
    from croupier.service.tls import server_tls
    from croupier.service.web import web_app

    # Secrets and certificates first: a bad one stops the start with one line, before anything
    # else happens.
    try:
        keys = config.token_keys()
        studio = config.studio_keys()
        replay_keys = config.replay_keys()
        tls = server_tls(tls_cert, tls_key, tls_client_ca)
    except config.ConfigError as error:
        raise click.ClickException(str(error)) from None
    http = None if is_off(http_address) else http_address.strip()
    if workers > 1 and worker_of_group is None:
        # The workers read these from the environment they inherit (each has its own lobby).
        os.environ["CROUPIER_LOBBY"] = "1" if lobby else ""
        os.environ["CROUPIER_WEB_ROOT"] = str(web_root or "")
        forwarded = [
            *(["--tls-cert", str(tls_cert), "--tls-key", str(tls_key)] if tls else []),
            *(["--tls-client-ca", str(tls_client_ca)] if tls_client_ca else []),
            *("--shutdown-grace", str(shutdown_grace)),
            *("--shutdown-delay", str(shutdown_delay)),
            *("--http-connections-per-address", str(http_per_address)),
            *("--gc-thaw-growth", str(gc_thaw_growth)),
            *("--listeners", str(listeners)),
        ]
        _serve_workers(
            address,
            store_url,
            log_format,
            workers,
            command_rate,
            command_burst,
            keys,
            studio,
            (http, cors_origins),
            forwarded,
            metrics_address,
            retired_gc_thaw,
        )
        return
    logs.configure(log_format)
    # Thousands of connections need thousands of descriptors (docs/operations.md, "Connections
    # and file descriptors"): the soft limit up to the hard one, before any is opened.
    raised = raise_descriptor_limit()
    if raised is not None:
        log.info("descriptor limit raised", soft_before=raised[0], soft=raised[1])
    worker = worker_of_group is not None
    group_parent = _group_parent(worker_of_group) if worker_of_group is not None else None
    if not worker:
        _warn_of_retired_settings(retired_gc_thaw)
    if worker:
        # Every line of a worker says which process wrote it.
        pid = os.getpid()

        def add_pid(_: object, __: str, event: structlog.types.EventDict) -> Any:
            event["pid"] = pid
            return event

        processors = structlog.get_config()["processors"]
        structlog.configure(processors=[add_pid, *processors])
    signer = TokenSigner(keys.ring)
    if not worker:
        # Both ports first: a server that cannot listen leaves no store file behind (the gRPC
        # server and the HTTP listener claim them again as they bind).
        grpc_port = config.port_of(address)
        if grpc_port and grpc_port == config.port_of(http or ""):
            raise click.ClickException(
                f"--address and --http-address both name port {grpc_port}: give each its own"
            )
        for option, taken in (("--address", address), ("--http-address", http)):
            if taken is not None and not taken.startswith("unix:"):
                try:
                    claim(taken)
                except PortInUse as error:
                    raise _cannot_listen(option, error) from None
    if keys.generated and not worker:
        _warn_generated_secret()
    try:
        store = open_store(store_url)
    except StoreOpenError as error:
        raise click.ClickException(str(error)) from None
    where = (
        store_url
        if not store_url.startswith("sqlite:///")
        else f"sqlite:///{Path(store_url.removeprefix('sqlite:///')).resolve()}"
    )
    host = address.rsplit(":", 1)[0]
    try:
        tracer_provider = tracing.configure()
    except (RuntimeError, ValueError) as error:
        store.close()
        raise click.ClickException(f"OTEL_* tracing settings: {error}") from None
    counts = metrics.multiprocess_dir()
    if counts is not None and not worker:  # a lone process in multiprocess mode: a fresh count
        metrics.clear_multiprocess_dir(counts)
    # A worker's metrics are served by its parent (all the workers' at once).
    metrics_server = None if worker or not metrics_address else _metrics_server(metrics_address)

    async def run() -> None:
        # Set once the process has started: what start-up made is frozen with it.
        collector = Collector(gc_thaw_growth)
        collector.install()
        maintaining = asyncio.create_task(collector.maintain(metrics.metrics().gc_pause))
        sampling = asyncio.create_task(metrics.sample_pool(store, metrics.metrics()))
        serving = await create_server(
            address,
            store,
            signer,
            reuse_port=worker,
            rate_limit=RateLimit(command_rate, command_burst),
            studio_keys=studio.ring,
            credentials=tls.credentials() if tls else None,
            tracer_provider=tracer_provider,
            listeners=listeners,
            replay_keys=replay_keys,
        )
        # Whatever ends the serving (a signal, a failure on the way up or down), the core is
        # closed before the store is: its threads' calls under way end first.
        try:
            await serving.start()
            # The HTTP listener: the same core on the same loop (service/http.py).
            listener = None
            http_url = "off"
            games = Lobby(serving.core) if lobby and http is not None else None
            if http is not None:
                # At /: the web client, its timeline pages and (--lobby) the lobby (service/web.py).
                root = web_app(serving.core, web_root, games)
                listener = HttpListener(
                    create_http_app(
                        serving.core,
                        cors_origins=parse_origins(cors_origins),
                        # Prometheus scrapes the HTTP listener too (every worker's counts).
                        mounts={"/metrics": metrics.asgi_app()},
                        root=root,
                    ),
                    http,
                    reuse_port=worker,
                    grace_s=shutdown_grace,
                    tls=tls,
                    max_per_address=http_per_address,
                )
                await listener.start()
                http_url = listener.url
            if games is not None:
                await games.resume()  # the lobby games a restart left under way play on
            if studio.generated and not worker:
                # Only once both ports are this server's: a start that fails on a busy port
                # must not replace the credential of the server that holds it.
                _write_dev_credential(store_url, studio, serving.port)
            security = "plaintext" if tls is None else "mTLS" if tls.client_ca else "TLS"
            log.info(
                "serving",
                address=f"{host}:{serving.port}",
                http=http_url,
                store=redacted(where),
                tls=security,
                listeners=listeners,  # gRPC servers sharing the port (--listeners)
                # The web client's lobby (--lobby, CROUPIER_LOBBY): on only with the HTTP listener.
                lobby=games is not None,
                # The ids of the keys tokens may name (an UNKNOWN_KEY refusal names the token's).
                key_ids=list(keys.ring.kids()),
                studio_key_ids=list(studio.ring.kids()),
                # The key exported replays are signed with (none: unsigned), and the older ones
                # whose files VerifyReplay still vouches for.
                replay_key_ids=[key_id(public) for public in replay_keys.trusted],
            )
            if log_format != "json":  # JSON logs are all JSON: there, the "serving" line says it
                who = f"Croupier worker {os.getpid()}" if worker else "Croupier"
                click.echo(
                    f"{who} listening on {host}:{serving.port}; data in {redacted(where)}; "
                    f"HTTP (Connect, gRPC-Web, JSON): {http_url}",
                    err=True,
                )
            stopping = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, stopping.set)
            orphaned = (
                loop.create_task(_until_orphaned(stopping, group_parent))
                if group_parent is not None
                else None
            )
            await stopping.wait()
            if orphaned is not None:
                orphaned.cancel()
            # Health NOT_SERVING first, all else served on, for --shutdown-delay seconds.
            await not_serving_for(serving, shutdown_delay)
            if games is not None:
                await games.close()  # the lobby's bots first: they are this server's own calls
            # Both listeners at once: health NOT_SERVING and the streams ended first (shut_down),
            # the HTTP calls in flight given the same grace.
            await asyncio.gather(
                shut_down(serving, shutdown_grace),
                *([listener.stop()] if listener is not None else []),
            )
        finally:
            await serving.stop(grace=None)  # nothing left to do once shut down
            await serving.core.close()
            maintaining.cancel()
            sampling.cancel()

    try:
        asyncio.run(run())
    except PortInUse as error:
        raise click.ClickException(error.hint()) from None
    finally:
        store.close()
        if metrics_server is not None:
            metrics_server.close()
        if tracer_provider is not None:
            tracer_provider.shutdown()  # the last spans go out


def _metrics_server(address: str, directory: str | None = None) -> MetricsServer:
    """The Prometheus listener on ``address``, or a one-line error."""
    from croupier.service import metrics

    try:
        server = metrics.serve_http(address, directory)
    except (OSError, ValueError) as error:
        raise click.ClickException(
            f"--metrics-address: cannot listen on {address}: {error}"
        ) from None
    log.info("metrics", address=f"{server.host}:{server.port}", path="/metrics")
    return server


#: How often a worker of ``serve --workers`` looks whether its parent is still there.
ORPHAN_CHECK_S = 1.0


def _group_parent(worker_of_group: str) -> int:
    """The pid of the group's parent, which ``--worker-of-group`` names (its own pid)."""
    try:
        return int(worker_of_group)
    except ValueError:
        raise click.ClickException(
            f"--worker-of-group: {worker_of_group!r} is not the group's parent's pid"
        ) from None


async def _until_orphaned(stopping: asyncio.Event, parent: int) -> None:
    """Set ``stopping`` once this worker's parent, the group's (``parent``), is gone (killed,
    say, where it could not forward a signal): a worker must not serve on by itself, holding the
    port and its games. The group names its parent, rather than the worker taking whatever
    parent it has once it serves: a parent killed while its workers still started (a slow start
    on a loaded machine) left them adopted by init by then, and they served on for good."""
    while os.getppid() == parent:
        await asyncio.sleep(ORPHAN_CHECK_S)
    log.warning("the parent of this worker is gone: shutting down", parent=parent)
    stopping.set()


def _warn_generated_secret() -> None:
    log.warning(
        f"no {config.SECRET_ENV}: generated a secret for this run only; seat tokens stop working "
        "when it exits and no other replica accepts them, and its snapshots are refolded after a "
        f"restart; set {config.SECRET_ENV} for anything but a local try"
    )


#: The development credential's lock, held while the server runs (config.claim_dev_credential).
_dev_credential: config.DevCredential | None = None


def _write_dev_credential(store_url: str, studio: config.Keys, port: int) -> None:
    """No studio secret: only the holder of this machine's development credential (a file only
    this user reads) may create games. Never open creation. A second server from the same
    folder leaves the first one's file alone and writes its own beside it, named by ``port``."""
    global _dev_credential
    path = config.dev_credential_path(store_url).resolve()
    try:
        _dev_credential = config.claim_dev_credential(path, port)
        config.write_dev_credential(_dev_credential.path, studio.ring)
    except OSError as error:
        raise click.ClickException(
            f"cannot write the development studio credential to {path}: {error} "
            f"(or set {config.STUDIO_SECRET_ENV})"
        ) from None
    written = _dev_credential.path
    tools = "local `croupier demo` and `croupier load` read it"
    if _dev_credential.holder is not None:
        tools = (
            f"{path} is the credential of the server still running as "
            f"{_dev_credential.holder}, left as it is: give the tools --studio-key-file {written}"
        )
    log.warning(
        f"no {config.STUDIO_SECRET_ENV}: generated a development studio secret for this run; "
        f"CreateGame takes the development credential written to {written} (mode 0600; "
        f"{tools}); set {config.STUDIO_SECRET_ENV} in production",
        credential_file=str(written),
    )


def _warn_of_retired_settings(gc_thaw: float | None) -> None:
    """Settings an earlier release read and this one ignores: said once, at the start."""
    retired = [
        *(["--gc-thaw"] if gc_thaw is not None else []),
        *([RETIRED_GC_THAW_ENV] if os.environ.get(RETIRED_GC_THAW_ENV) else []),
    ]
    if retired:
        log.warning(
            f"{' and '.join(retired)}: no longer read; the garbage collector's frozen objects are "
            f"handed back when the memory the process holds has grown (--gc-thaw-growth, "
            f"{GC_THAW_ENV}; docs/operations.md, Scale)"
        )


def _serve_workers(
    address: str,
    store_url: str,
    log_format: str,
    workers: int,
    command_rate: float,
    command_burst: int,
    keys: config.Keys,
    studio: config.Keys,
    http: tuple[str | None, str],
    forwarded: list[str],
    metrics_address: str = "",
    retired_gc_thaw: float | None = None,
) -> None:
    """Start ``workers`` processes serving on one port (SO_REUSEPORT), forward SIGTERM and SIGINT
    to them (each shuts down gracefully), and exit when they have all exited: 0 (the ``stopped``
    line) when each exited 0 once asked to stop; else 1 (the ``failed`` line). A worker that
    exits while the group serves (killed, crashed) stops the whole group: it would serve on at
    part of its capacity, unseen, where its supervisor now starts it again whole. ``http``: the HTTP
    listener's address (``None``: none), shared by the workers the same way, and the CORS origins;
    ``forwarded`` are more flags for the workers (TLS, the shutdown grace).

    The workers count their metrics in prometheus-client's multiprocess mode, in
    PROMETHEUS_MULTIPROC_DIR (one made for the run and removed after it, unless set); the parent
    serves the sum on ``metrics_address``.

    The port must be free: a plain bind checks it (it fails on a port another server holds, a
    group of workers included), then a bound, non-listening SO_REUSEPORT socket keeps it for the
    workers (port 0: a free one) while they run. The secrets are made once here when
    CROUPIER_SECRET or CROUPIER_STUDIO_SECRET is unset, so that every worker accepts every
    worker's tokens and the one development credential; the schema is migrated once here before
    the workers open the store."""
    import shutil
    import subprocess
    import tempfile

    from croupier.service import metrics
    from croupier.service.store import StoreOpenError, open_store

    logs.configure(log_format)
    _warn_of_retired_settings(retired_gc_thaw)
    host, port, hold = _reserve(address, "--address")
    http_address, cors_origins = http
    held = [hold]
    http_option = "off"
    if http_address is not None:
        http_host, http_port, http_hold = _reserve(http_address, "--http-address")
        held.append(http_hold)
        http_option = f"{http_host}:{http_port}"
    env = dict(os.environ)
    if keys.generated:
        env[config.SECRET_ENV] = config.as_setting(keys.ring.signing)
        _warn_generated_secret()
    try:
        open_store(store_url).close()  # create or migrate the schema once, before the workers
    except StoreOpenError as error:
        for sock in held:
            sock.close()
        raise click.ClickException(str(error)) from None
    if studio.generated:
        env[config.STUDIO_SECRET_ENV] = config.as_setting(studio.ring.signing)
        _write_dev_credential(store_url, studio, port)
    counts = os.environ.get(metrics.MULTIPROC_DIR_ENV, "")
    if counts:
        metrics.clear_multiprocess_dir(counts)
    own_counts = None if counts else tempfile.mkdtemp(prefix="croupier-metrics-")
    counts = counts or str(own_counts)
    env[metrics.MULTIPROC_DIR_ENV] = counts
    try:
        metrics_server = _metrics_server(metrics_address, counts) if metrics_address else None
    except click.ClickException:
        for sock in held:
            sock.close()
        if own_counts is not None:
            shutil.rmtree(own_counts, ignore_errors=True)
        raise
    group = f"{os.getpid()}"
    command = [
        sys.executable,
        "-m",
        "croupier.service.cli",
        "serve",
        "--address",
        f"{host}:{port}",
        "--store",
        store_url,
        "--log-format",
        log_format,
        "--command-rate",
        str(command_rate),
        "--command-burst",
        str(command_burst),
        "--http-address",
        http_option,
        "--cors-origins",
        cors_origins,
        *forwarded,
        "--worker-of-group",
        group,
    ]
    children = [subprocess.Popen(command, env=env) for _ in range(workers)]
    log.info(
        "workers",
        address=f"{host}:{port}",
        workers=[c.pid for c in children],
        store=redacted(store_url),
    )
    stopping = False
    #: The signal the group was asked to stop with: a worker still starting up when it came has
    #: no handler for it yet, and ends killed by it (-signum), which is a stop, not a failure.
    asked_with = signal.SIGTERM

    def forward(signum: int, _: object) -> None:
        nonlocal stopping, asked_with
        if not stopping:
            asked_with = signal.Signals(signum)
        stopping = True
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    #: Each worker's exit status (``Popen.returncode``: negative, the signal that killed it), by
    #: pid, once it is seen to have exited.
    exits: dict[int, int] = {}
    #: The first worker that exited while the group was serving (nobody had asked it to stop).
    first_dead: int | None = None

    def stopped(code: int) -> bool:
        """Whether a worker asked to stop ended as asked: it shut down (0), or the signal ended
        it before it could (it was still starting up)."""
        return code in (0, -asked_with)

    def reap() -> None:
        """Every worker looked at (all of them, each time: one that exits is reaped, not left a
        zombie), and one that has exited logged once, its live gauges dropped."""
        nonlocal first_dead
        for child in children:
            code = child.poll()
            if code is None or child.pid in exits:
                continue
            exits[child.pid] = code
            metrics.process_exited(child.pid, counts)  # its open streams and cached games
            unasked = not stopping
            if unasked and first_dead is None:
                first_dead = child.pid
            (log.error if unasked or not stopped(code) else log.info)(
                "worker exited",
                worker=child.pid,
                exit_status=code,
                how=_exit_status(code),
                **({"stopping_the_group": True} if unasked else {}),
            )

    try:
        while True:
            reap()
            if len(exits) == len(children):
                break
            if first_dead is not None and not stopping:
                # A worker died: the whole group stops and exits 1, so that its supervisor
                # starts it again whole (it would serve on with fewer workers, unseen).
                forward(signal.SIGTERM, None)
            time.sleep(0.2)
    finally:
        for sock in held:
            sock.close()
        reap()
        if metrics_server is not None:
            metrics_server.close()
        if own_counts is not None:
            shutil.rmtree(own_counts, ignore_errors=True)
    codes = {child.pid: exits[child.pid] for child in children}
    # A worker that died while the group served (all of them at once included: the loop above
    # then ends at its first look), or one that failed its own shutdown.
    failed = first_dead
    if failed is None:
        failed = next((pid for pid, code in codes.items() if not stopped(code)), None)
    if failed is not None:
        raise click.ClickException(
            f"a worker failed (pid {failed}: {_exit_status(codes[failed])}); the workers exited "
            f"with {codes}"
        )
    log.info("stopped", workers=codes)


def _exit_status(code: int) -> str:
    """A process's return code in words: its exit status, or the signal that killed it."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _reserve(address: str, option: str) -> tuple[str, int, socket.socket]:
    """Check that ``address`` is free (``server.claim``: it fails on a port another server
    holds, a group of workers included), then keep it for the workers with a bound,
    non-listening SO_REUSEPORT socket (port 0: a free one). Returns the host, the port and that
    socket."""
    from croupier.service.server import PortInUse, claim

    host = address.rpartition(":")[0]
    if config.port_of(address) is None:
        raise click.ClickException(f"{option}: HOST:PORT, not {address!r}")
    bind_host = host.strip("[]")
    family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
    # Each message names the option, as a plain serve's do (the same busy port, the same line).
    try:
        port = int(claim(address).rpartition(":")[2])
    except PortInUse as error:
        raise _cannot_listen(option, error) from None
    try:
        hold = _hold(family, bind_host, port, reuse_address=False)
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise click.ClickException(f"{option}: cannot listen on {address}: {error}") from None
        try:
            # Only the connections of a server just stopped (TIME_WAIT) are there: ``claim``
            # found nothing listening. Without SO_REUSEADDR a hold also keeps out a second
            # server's ``claim`` until the workers listen, so it is used only now.
            hold = _hold(family, bind_host, port, reuse_address=True)
        except OSError as again:
            raise _cannot_listen(
                option, PortInUse(f"cannot listen on {address}: {again}", busy=True)
            ) from None
    return host, port, hold


#: The environment variable of each option a server listens by: `make run` takes no options, so
#: a busy port's refusal names the variable too (README, "Quick start").
_LISTENING_ENV = {"--address": config.ADDRESS_ENV, "--http-address": config.HTTP_ADDRESS_ENV}


def _cannot_listen(option: str, error: PortInUse) -> click.ClickException:
    """An address ``option`` names that this server cannot listen on, in one line; a busy port
    (another server there, or any program) also says how to take another."""
    if not error.busy:
        return click.ClickException(f"{option}: {error}")
    return click.ClickException(
        f"{option}: {error} (is another server running there? Take another port: "
        f"{option} HOST:PORT, or {_LISTENING_ENV[option]}=HOST:PORT, as `make run` takes it)"
    )


def _hold(family: int, host: str, port: int, reuse_address: bool) -> socket.socket:
    """A bound, non-listening SO_REUSEPORT socket on ``host``:``port`` (closed if it fails)."""
    hold = socket.socket(family, socket.SOCK_STREAM)
    try:
        hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if reuse_address:
            hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hold.bind((host, port))
    except OSError:
        hold.close()
        raise
    return hold


@main.command()
@_store_option
@_log_format_option
@_json_errors
def migrate(store_url: str, log_format: str) -> None:
    """Create the store's schema or bring it up to date, then exit. `serve` does the same at
    start; this runs it on its own (a deployment's init step). Any number may run at once: each
    waits for the one holding the migration lock, then finds nothing left to do."""
    _end_on_sigterm_as_init()
    from croupier.service.store import StoreOpenError, open_store
    from croupier.service.store.sql import SqlEventStore

    logs.configure(log_format)
    try:
        store = open_store(store_url)
    except StoreOpenError as error:
        raise click.ClickException(str(error)) from None
    applied = store.migrations_applied if isinstance(store, SqlEventStore) else ()
    store.close()
    log.info("migrated", store=redacted(store_url), applied=list(applied))


def rounds_games() -> tuple[str, ...]:
    """The games whose rule set has a ``rounds`` rule, as the contract says (``Rules``' oneof
    names the games; each one's message, its rules): Hoola and Koi-Koi (a Gin match runs to its
    match points, a Rummy game is one round)."""
    from croupier.v1 import service_pb2

    return tuple(
        field.name
        for field in service_pb2.Rules.DESCRIPTOR.oneofs_by_name["game"].fields
        if field.message_type is not None and "rounds" in field.message_type.fields_by_name
    )


def _check_rounds(game: str, rounds: int | None) -> None:
    """``--rounds`` given for a game without such a rule is refused, not silently ignored."""
    having = rounds_games()
    if rounds is not None and game not in having:
        raise click.UsageError(
            f"--rounds applies to {' and '.join(having)}: {game} has no rounds rule"
        )


def _studio_options(command: Any) -> Any:
    """``--studio-key`` and ``--studio-key-file``: the studio credential CreateGame and EndGame
    take."""
    command = click.option(
        "--studio-key-file",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Read the studio credential from this file (without any credential, a local "
        f"server's development one is read from {config.DEFAULT_DEV_CREDENTIAL}).",
    )(command)
    return click.option(
        "--studio-key",
        cls=EnvOption,
        env=config.STUDIO_KEY_ENV,
        default=lambda: os.environ.get(config.STUDIO_KEY_ENV, ""),
        show_default=False,
        help="The studio credential (CreateGame, EndGame; a token from `croupier token studio`). "
        f"Environment: {config.STUDIO_KEY_ENV}. Without it: minted from "
        f"{config.STUDIO_SECRET_ENV} when set, else a local server's development credential.",
    )(command)


def _studio_credential(given: str, addresses: list[str], key_file: Path | None) -> str:
    """The studio credential the tool sends; without one, a one-line error that first names
    the addresses where nothing listens: a tool sent to the wrong port was told of the
    credential, and its user mended that first."""
    try:
        return config.studio_credential(given, addresses, key_file)
    except config.ConfigError as error:
        silent = [address for address in addresses if not tls_options.listening(address)]
        first = (
            f"no server listens at {', '.join(silent)} ({_NO_SERVER_HINT}); and " if silent else ""
        )
        raise click.ClickException(f"{first}{error}") from None


#: Nothing listens where a tool was sent: a server started on other ports (`make run` with
#: CROUPIER_ADDRESS, which the tools do not read) looks like no server at all.
_NO_SERVER_HINT = "start one: make run; for one that listens elsewhere, give --address HOST:PORT"


def _wait_for_server(
    channel: grpc.Channel, address: str, secure: object | None, timeout_s: float
) -> None:
    """Wait for the server at ``address`` to answer, or fail saying what to check."""
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout_s)
    except grpc.FutureTimeoutError:
        hint = (
            (tls_options.TLS_HINT if tls_options.listening(address) else _NO_SERVER_HINT)
            if secure is None
            else "or the TLS handshake failed: check --tls-ca, --tls-cert/--tls-key and "
            "--tls-server-name against the server's certificate"
        )
        raise click.ClickException(f"no Croupier server at {address} ({hint})") from None


def _call_failed(
    error: grpc.RpcError, given: str, key_file: Path | None, addresses: list[str]
) -> click.ClickException:
    """A refused call in one line: its status, its message, and for a refused credential the
    tool found by itself, where else to look."""
    code = error.code()
    unauthenticated = code == grpc.StatusCode.UNAUTHENTICATED
    hint = _refused_hint(given, key_file, addresses) if unauthenticated else ""
    return click.ClickException(f"{code.name}: {error.details()}{hint}")


def _reason_of(error: grpc.RpcError) -> str:
    """The ``ErrorInfo`` reason of a refused call (every refusal of the service carries one)."""
    from google.rpc import error_details_pb2
    from grpc_status import rpc_status

    try:
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
    except ValueError:
        return ""
    for detail in status.details if status is not None else []:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return str(info.reason)
    return ""


def _refused_hint(given: str, key_file: Path | None, addresses: list[str]) -> str:
    """What to try when CreateGame refuses a credential the tool found by itself: the local
    development one, which a server writes beside its SQLite file (``data/`` by default), or,
    for a second server started from the same folder, beside it named by its port."""
    if not config.takes_dev_credential(given, key_file):
        return ""
    second = "".join(
        f"; a second server on port {path.name.rpartition('-')[2]} wrote its own: pass "
        f"--studio-key-file {path.resolve()}"
        for path in config.port_named_dev_credentials(addresses)
    )
    return (
        f" (the tool sent the development credential of {config.DEFAULT_DEV_CREDENTIAL.resolve()}"
        f"{second}; "
        "a server started from another folder, or with a --store elsewhere, writes its own "
        f"{config.DEV_CREDENTIAL_NAME} beside its SQLite file: pass that with --studio-key-file; "
        f"a server started with {config.STUDIO_SECRET_ENV} writes none: give the tool the same "
        f"{config.STUDIO_SECRET_ENV}, or --studio-key with a token from `croupier token studio`)"
    )


@main.command("end-game")
@click.argument("game_id")
@click.option(
    "--reason",
    required=True,
    help="Why, for people: kept in the game's log and its settlement's notes, which every "
    "player and the replay show (keep a dispute's details on your side).",
)
@click.option(
    "--command-id",
    default="",
    help="The call's command id (default: end-GAME_ID, so that running it again after a lost "
    "answer ends the game once and answers the same).",
)
@click.option(
    "--expected-version",
    type=click.IntRange(0),
    default=None,
    help="End the game only as it stood at this version (default: as it stands).",
)
@click.option(
    "--address", default=config.DEFAULT_ADDRESS, show_default=True, help="The server to call."
)
@click.option(
    "--connect-timeout", default=10.0, show_default=True, help="Seconds to wait for the server."
)
@_studio_options
@tls_options.client_options
def end_game(
    game_id: str,
    reason: str,
    command_id: str,
    expected_version: int | None,
    address: str,
    connect_timeout: float,
    studio_key: str,
    studio_key_file: Path | None,
    tls: bool,
    tls_ca: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_server_name: str,
) -> None:
    """End a game still on, as the studio (EndGame): abandoned, what was scored stands, the
    round in play is not scored (docs/rules/common.md §5.1). Prints its final settlement."""
    from croupier.service.bots import auth, describe_settlement
    from croupier.service.tls import channel as open_channel
    from croupier.v1 import service_pb2, service_pb2_grpc

    secure = tls_options.client_tls_of(tls, tls_ca, tls_cert, tls_key, tls_server_name)
    if not config.dialable(address):
        raise click.UsageError(f"--address: HOST:PORT, not {address!r}")
    with open_channel(address, secure) as channel:
        _wait_for_server(channel, address, secure, connect_timeout)
        studio = _studio_credential(studio_key, [address], studio_key_file)
        request = service_pb2.EndGameRequest(
            game_id=game_id, command_id=command_id or f"end-{game_id}", reason=reason
        )
        if expected_version is not None:
            request.expected_version = expected_version
        try:
            ended = service_pb2_grpc.GameServiceStub(channel).EndGame(
                request, metadata=auth(studio), timeout=connect_timeout
            )
        except grpc.RpcError as error:
            if not command_id and _reason_of(error) == "COMMAND_ID_REUSED":
                # The default id's answer is an earlier end-game's, with another --reason: that
                # one ended the game (or found it over), whoever ran it.
                raise click.ClickException(
                    f"game {game_id} was already ended by an earlier end-game (its command id "
                    f"{request.command_id}, with another --reason): it is over; run it with that "
                    "reason to see its answer again"
                ) from None
            raise _call_failed(error, studio_key, studio_key_file, [address]) from None
    click.echo(
        f"game {game_id} "
        + ("was already ended by this call" if ended.already_applied else "ended")
        + f" at version {ended.version}"
    )
    for line in describe_settlement(ended.settlement):
        click.echo(line)


@main.command()
@click.option(
    "--address", default=config.DEFAULT_ADDRESS, show_default=True, help="The server to play on."
)
@click.option(
    "--game",
    "kind",
    default="hoola",
    show_default=True,
    type=click.Choice(["hoola", "koikoi", "gin", "rummy"]),
    help="The game to play.",
)
@click.option(
    "--seats",
    default=None,
    type=click.IntRange(2, 7),
    help="Hoola: seats at the table (default 3; 6 or 7 play with sit-out, docs/rules/hoola.md "
    "§1.9). Rummy: 2 to 4 (default 4). Koi-Koi and Gin Rummy are for two.",
)
@click.option("--preset", default="", help="A preset of the game (default: the game's default).")
@click.option("--seed", default=None, type=int, help="Seed of the bots' choices.")
@click.option(
    "--rounds",
    default=None,
    type=click.IntRange(1, 50),
    help="Hoola: rounds at the table (default 1). Koi-Koi: 3, 6 or 12 (default: the preset's).",
)
@click.option(
    "--idle-seat",
    "idle_seats",
    multiple=True,
    type=click.IntRange(0, 6),
    help="A seat that never plays (may be given again): its turn clock runs out and the "
    "service plays its forced moves, printed as they happen. Needs --turn-time-ms.",
)
@click.option(
    "--turn-time-ms",
    default=0,
    type=click.IntRange(0),
    help="The turn clock (docs/rules/common.md §5.1); 0: the preset's (no clock).",
)
@click.option(
    "--connect-timeout", default=10.0, show_default=True, help="Seconds to wait for the server."
)
@_studio_options
@tls_options.client_options
def demo(
    address: str,
    kind: str,
    seats: int | None,
    preset: str,
    seed: int | None,
    rounds: int | None,
    idle_seats: tuple[int, ...],
    turn_time_ms: int,
    connect_timeout: float,
    studio_key: str,
    studio_key_file: Path | None,
    tls: bool,
    tls_ca: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_server_name: str,
) -> None:
    """Play a whole game between bots through a running server; print the result."""
    from croupier.replays.timeline import cards_in_words
    from croupier.service.bots import clock_rules, describe_tick, play_game
    from croupier.service.tls import channel as open_channel

    def say(text: str) -> None:
        # One notation for every card, as the timeline writes them (Q♦, 10♠): the engines' move
        # labels name cards by code ("Meld 3C 4C 5C") or at length ("Discard Four of clubs and
        # knock, melding 3C 3D 3S"), both in one line of a Gin knock.
        click.echo(cards_in_words(kind, text))

    secure = tls_options.client_tls_of(tls, tls_ca, tls_cert, tls_key, tls_server_name)
    if not config.dialable(address):
        raise click.UsageError(f"--address: HOST:PORT, not {address!r}")
    _check_rounds(kind, rounds)
    if idle_seats and not turn_time_ms:
        raise click.UsageError("--idle-seat needs a turn clock: give --turn-time-ms")
    from croupier.v1 import common_pb2, gin_pb2, hoola_pb2, koikoi_pb2, rummy_pb2, service_pb2

    if kind == "rummy":
        seats = seats or 4
        overrides = service_pb2.Rules(rummy=rummy_pb2.RummyRules())
        game_kind = common_pb2.GAME_KIND_RUMMY
    elif kind == "gin":
        seats = seats or 2
        overrides = service_pb2.Rules(gin=gin_pb2.GinRules())
        game_kind = common_pb2.GAME_KIND_GIN
    elif kind == "koikoi":
        seats = seats or 2
        overrides = service_pb2.Rules(
            koikoi=koikoi_pb2.KoiKoiRules(rounds=rounds) if rounds else koikoi_pb2.KoiKoiRules()
        )
        game_kind = common_pb2.GAME_KIND_KOIKOI
    else:
        seats = seats or 3
        overrides = service_pb2.Rules(hoola=hoola_pb2.HoolaRules(rounds=rounds or 1))
        if seats > 5:
            overrides.hoola.sit_out = True
            overrides.hoola.max_seats = seats
        game_kind = common_pb2.GAME_KIND_HOOLA
    if turn_time_ms:
        overrides = clock_rules(game_kind, overrides, turn_time_ms)
    if any(seat >= seats for seat in idle_seats):
        raise click.UsageError(f"--idle-seat: the game has seats 0 to {seats - 1}")

    def on_tick(events: list[service_pb2.GameEvent]) -> None:
        for line in describe_tick(events):
            say(line)

    with open_channel(address, secure) as channel:
        _wait_for_server(channel, address, secure, connect_timeout)
        # After the server answered: a development server has written its credential by then.
        studio = _studio_credential(studio_key, [address], studio_key_file)
        try:
            result = play_game(
                channel,
                studio=studio,
                seats=seats,
                preset=preset,
                overrides=overrides,
                kind=game_kind,
                rng=random.Random(seed),
                client_seed=uuid.uuid4().hex,
                on_move=lambda seat, label: say(f"  seat {seat}: {label}"),
                idle_seats=idle_seats,
                on_tick=on_tick,
            )
        except ValueError as error:
            raise click.UsageError(str(error)) from None
        except grpc.RpcError as error:
            raise _call_failed(error, studio_key, studio_key_file, [address]) from None
    say(result.describe())


@main.command()
@click.option(
    "--address",
    "addresses",
    multiple=True,
    help="A server to drive, HOST:PORT (default 127.0.0.1:50051). Given twice (or with "
    "--addresses a,b), games and seats alternate between them.",
)
@click.option("--addresses", "address_list", default="", help="Servers, comma-separated.")
@click.option(
    "--game",
    default="hoola",
    show_default=True,
    type=click.Choice(["hoola", "koikoi", "gin", "rummy"]),
    help="The game the bots play.",
)
@click.option("--seats", default=None, type=click.IntRange(2, 7), help="Seats per game.")
@click.option("--preset", default="", help="A preset of the game (default: the game's default).")
@click.option("--rounds", default=None, type=click.IntRange(1, 50), help="As in demo.")
@click.option(
    "--mode",
    default="play",
    show_default=True,
    type=click.Choice(["play", "submit", "browser"]),
    help="play: a Play stream per seat, one message per move; submit: SubmitCommand with "
    "include, ListLegalMoves when the acting seat changes; browser: each seat's StreamEvents "
    "with include pushes its state, each move is one SubmitCommand (as a browser plays).",
)
@click.option(
    "--games-in-flight", default=16, show_default=True, type=click.IntRange(1), help="Concurrency."
)
@click.option("--duration", type=click.FloatRange(min=0.1), default=None, help="Seconds to run.")
@click.option("--games", "game_count", type=click.IntRange(1), default=None, help="Games to play.")
@click.option(
    "--streams",
    default=0,
    type=click.IntRange(0),
    help="StreamEvents streams to open first (on games of their own, left idle), then hold "
    "while the games are played.",
)
@click.option(
    "--streams-over",
    type=click.Choice(["grpc", "connect"]),
    default="grpc",
    show_default=True,
    help="How the --streams are held. connect: as browsers hold them, Connect StreamEvents over "
    "HTTP/1.1, a connection each, on the server's HTTP listener (--http-address; a spawned "
    "server gets one).",
)
@click.option(
    "--http-address",
    default="",
    help="The server's HTTP listener, HOST:PORT, for --streams-over connect (with --spawn: the "
    "spawned server's).",
)
@click.option(
    "--spectators",
    default=0,
    show_default=True,
    type=click.IntRange(0),
    help="Spectators per game: each a StreamEvents with the studio's token, pushed the "
    "spectator's view and who is to act after each batch (a spectator screen); the report gives "
    "how soon a command reaches them. With --mode play or browser.",
)
@click.option(
    "--baseline",
    is_flag=True,
    help="Also measure a bare grpc.aio echo server, as long as the games ran: unary calls at the "
    "same concurrency, then bare tables of streams making moves shaped as Play's (what a move "
    "costs the transport).",
)
@click.option(
    "--server-pid",
    "server_pids",
    multiple=True,
    type=int,
    help="A local server's pid, its workers counted with it; repeated for several (replicas). "
    "Checked to serve the addresses; without it, the processes serving local addresses are "
    "found by their ports.",
)
@click.option("--spawn", is_flag=True, help="Start `croupier serve` on a free port, stop it after.")
@click.option(
    "--store",
    "store_url",
    default=None,
    help="With --spawn: the store (default: a temporary SQLite file).",
)
@click.option(
    "--server-workers", default=1, type=click.IntRange(1), help="With --spawn: serve --workers N."
)
@click.option(
    "--channels",
    default=4,
    show_default=True,
    type=click.IntRange(1),
    help="Channels (connections) per address; a game's seats share one.",
)
@click.option(
    "--split-seats/--no-split-seats",
    default=None,
    help="Alternate a game's seats over the addresses (default: with several addresses).",
)
@click.option("--seed", default=None, type=int, help="Seed of the bots' choices.")
@click.option(
    "--idle-seats",
    default=0,
    show_default=True,
    type=click.IntRange(0),
    help="Seats per game that never send a command: the turn clock plays them (needs "
    "--turn-time-ms). The report gives each time-out's lateness after its deadline.",
)
@click.option(
    "--turn-time-ms",
    default=0,
    show_default=True,
    type=click.IntRange(0),
    help="The games' turn time (docs/rules/common.md §5.1); 0: no clock.",
)
@click.option(
    "--think-ms",
    default=0,
    show_default=True,
    type=click.IntRange(0),
    help="How long a bot thinks before each move, on average (between half and one and a half "
    "times it): with players' pace, --games-in-flight is how many games the server holds open "
    "rather than how many keep it saturated; 0: at once.",
)
@click.option(
    "--warmup",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds played first and not measured (the games' start: all created and joined at "
    "once), before --duration: moves, latencies, errors and CPU are counted after it; games "
    "started and finished are counted over the whole run.",
)
@click.option(
    "--json",
    "json_path",
    default=None,
    type=click.Path(dir_okay=False, writable=True),
    help="Also write the report to this file, as JSON (README, Load testing); an interrupted "
    "run's too, marked so.",
)
@click.option("--quiet", is_flag=True, help="No progress display.")
@click.option(
    "--connect-timeout",
    default=10.0,
    show_default=True,
    help="Seconds to wait for every address to answer before the run starts.",
)
@_studio_options
@tls_options.client_options
def load(
    addresses: tuple[str, ...],
    address_list: str,
    game: str,
    seats: int | None,
    preset: str,
    rounds: int | None,
    mode: str,
    games_in_flight: int,
    duration: float | None,
    game_count: int | None,
    streams: int,
    streams_over: str,
    http_address: str,
    spectators: int,
    baseline: bool,
    server_pids: tuple[int, ...],
    spawn: bool,
    store_url: str | None,
    server_workers: int,
    channels: int,
    split_seats: bool | None,
    seed: int | None,
    idle_seats: int,
    turn_time_ms: int,
    think_ms: int,
    warmup: float,
    json_path: str | None,
    quiet: bool,
    connect_timeout: float,
    studio_key: str,
    studio_key_file: Path | None,
    tls: bool,
    tls_ca: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_server_name: str,
) -> None:
    """Bots play many concurrent games through the public API; measure moves per second,
    latencies, errors and (local server) CPU per move. Stops after --duration or --games (by
    default after 10 s).

    Exit code 1 when the service failed the run (the FAILED line says how): no move made, games
    abandoned, no move in the run's last 5 s (or three --think-ms, if longer), a call
    unanswered for over 10 s, or an extra stream (--streams) refused (one its server ended is
    opened again). Errors the bots got over (a refusal sent again, a stream resumed, an
    address passed over for another of --addresses) are counted, not failures."""
    from croupier.service import load as load_tool

    targets = [*addresses, *(a.strip() for a in address_list.split(",") if a.strip())]
    if spawn and targets:
        raise click.UsageError("--spawn starts its own server: leave out --address")
    for target in targets:
        if not config.dialable(target):
            option = "--address" if target in addresses else "--addresses"
            raise click.UsageError(f"{option}: HOST:PORT, not {target!r}")
    if not spawn and (store_url or server_workers > 1):
        raise click.UsageError("--store and --server-workers go with --spawn")
    if spawn and server_pids:
        raise click.UsageError("--spawn measures the server it starts: leave out --server-pid")
    _check_rounds(game, rounds)
    secure = tls_options.client_tls_of(tls, tls_ca, tls_cert, tls_key, tls_server_name)
    if spawn and secure is not None:
        raise click.UsageError("--spawn starts a plaintext server: leave out the --tls options")
    if spectators and mode == "submit":
        raise click.UsageError("--spectators watch games played in --mode play or browser")
    if streams_over == "connect" and not streams:
        raise click.UsageError(
            "--streams-over connect says how the --streams are held: give --streams"
        )
    if streams_over == "connect" and not (spawn or http_address):
        raise click.UsageError("--streams-over connect needs the server's --http-address")
    if streams_over == "connect" and tls_server_name.strip():
        raise click.UsageError(
            "--tls-server-name is for the gRPC calls: the Connect streams check the server's "
            "certificate against --http-address's host (give a name the certificate holds)"
        )
    if spawn and http_address:
        raise click.UsageError("--spawn starts its own server: leave out --http-address")
    if http_address and streams_over != "connect":
        raise click.UsageError("--http-address is where --streams-over connect holds the streams")
    if http_address and config.port_of(http_address) is None:
        raise click.UsageError(f"--http-address: HOST:PORT, not {http_address!r}")
    servers = targets or ([] if spawn else [config.DEFAULT_ADDRESS])
    # A spawned server gets its studio secret from the tool (load.run); any other, a credential.
    studio = "" if spawn else _studio_credential(studio_key, servers, studio_key_file)
    settings = load_tool.LoadConfig(
        addresses=servers,
        studio_key=studio,
        game=game,
        seats=seats,
        preset=preset,
        rounds=rounds,
        mode=mode,
        games_in_flight=games_in_flight,
        duration=duration,
        games=game_count,
        streams=streams,
        streams_over=streams_over,
        http_address=http_address,
        spectators=spectators,
        baseline=baseline,
        server_pids=list(server_pids),
        spawn=spawn,
        store=store_url,
        server_workers=server_workers,
        channels=channels,
        split_seats=split_seats,
        seed=seed,
        idle_seats=idle_seats,
        turn_time_ms=turn_time_ms,
        think_ms=think_ms,
        warmup=warmup,
        connect_timeout=connect_timeout,
        progress=None if quiet else sys.stderr,
        tls=secure,
        # A failed run keeps its spawned server's log beside its report (REPORT.server.log).
        server_log=str(Path(json_path).with_suffix(".server.log")) if json_path else None,
    )
    if json_path:
        # Checked before the run, which would otherwise end with nowhere to write its report.
        folder = Path(json_path).resolve().parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise click.BadParameter(
                f"cannot write {json_path}: {folder} is not a writable folder",
                param_hint="'--json'",
            )
    try:
        report = load_tool.main(settings)
    except load_tool.StoppedEarly as stopped:  # the shell's code for a run its signal ended
        click.echo(f"Error: {stopped}", err=True)
        raise SystemExit(128 + signal.Signals[stopped.signal_name].value) from None
    except load_tool.CredentialRefused as error:
        hint = "" if spawn else _refused_hint(studio_key, studio_key_file, servers)
        raise click.ClickException(f"{error}{hint}") from None
    except load_tool.LoadError as error:
        raise click.ClickException(str(error)) from None
    click.echo(load_tool.summary(report))  # first: a report that cannot be written loses nothing
    if json_path:
        try:
            load_tool.write_json(report, json_path)
        except OSError as error:
            raise click.ClickException(f"the JSON report was not written: {error}") from None
    if report.get("interrupted"):  # the shell's code for a run its signal ended
        raise SystemExit(128 + signal.Signals[report["interrupted"]].value)
    if report.get("failed"):  # the service failed the run (the summary's FAILED line says how)
        raise SystemExit(1)


@main.group()
def replay() -> None:
    """Replay files: export a finished game, verify one, show it turn by turn (text or HTML),
    convert between binary and JSON; make and read the keys that sign them."""


#: What an SQLite store's URL starts with; the path follows it.
SQLITE_SCHEME = "sqlite:///"


def _recorded_replay(store_url: str, game_id: str) -> Replay:
    """The store's record of ``game_id`` as a replay (its players' ids included): raises
    GameNotFound, or ReplayFormatError for a game not finished; a store that cannot be opened is
    one line."""
    from croupier.replays.format import build
    from croupier.service.store import StoreOpenError, open_store

    sqlite_path = Path(store_url.removeprefix(SQLITE_SCHEME))
    if store_url.startswith(SQLITE_SCHEME) and not sqlite_path.exists():
        # Opening it would make a new, empty store (as a server's first run does), whose "no
        # game" reads as the file's fault: a support agent in another directory than the
        # server's (the path is relative) was told a player's true record was not the store's.
        raise click.ClickException(
            f"no SQLite store at {sqlite_path.absolute()}: check the path (after {SQLITE_SCHEME}, "
            "relative to the working directory; an absolute one takes four slashes, "
            "sqlite:////var/lib/croupier/games.sqlite3)"
        )
    try:
        # Not migrated: this release's tool reading a store that an older one serves.
        store = open_store(store_url, migrate=False)
    except StoreOpenError as error:
        raise click.ClickException(str(error)) from None
    try:
        return build(store.game(game_id), store.read(game_id), store.players(game_id))
    finally:
        store.close()


@replay.command("export")
@click.argument("game_id")
@click.argument("out", type=click.Path(dir_okay=False, writable=True))
@click.option(
    "--store",
    "store_url",
    cls=EnvOption,
    env="CROUPIER_STORE",
    default=lambda: os.environ.get("CROUPIER_STORE", config.DEFAULT_STORE),
    show_default=config.DEFAULT_STORE,
    help="The store the game is in. Environment: CROUPIER_STORE.",
)
@click.option(
    "--format",
    "form",
    type=click.Choice(["json", "binary"]),
    default=None,
    help="The file's form; by default JSON when OUT ends in .json, else binary.",
)
def replay_export(game_id: str, out: str, store_url: str, form: str | None) -> None:
    """Write the replay of finished game GAME_ID to OUT (JSON if OUT ends in .json, unless
    --format says otherwise), signed with CROUPIER_REPLAY_KEY_FILE's key when it is set."""
    from croupier.log import GameNotFound
    from croupier.replays.format import ReplayFormatError, to_binary, to_json

    try:
        replay_file = _recorded_replay(store_url, game_id)
    except GameNotFound:
        raise click.ClickException(f"no game {game_id} in {redacted(store_url)}") from None
    except ReplayFormatError as error:
        raise click.ClickException(str(error)) from None
    signing = _replay_keys().signing
    if signing is not None:
        from croupier.replays.signing import sign

        sign(replay_file, signing)
    as_json = out.lower().endswith(".json") if form is None else form == "json"
    with open(out, "wb") as handle:
        handle.write(to_json(replay_file).encode("utf-8") if as_json else to_binary(replay_file))
    click.echo(f"wrote {out} ({'JSON' if as_json else 'binary'}): {len(replay_file.events)} events")


class NotAReplay(click.ClickException):
    """The file given to verify, show or convert is not a replay: exit status 2, apart from a
    failed check's 1 (a script telling a forged file from a wrong one), as
    replays/standalone_verify.py exits; every replay command says it the same way."""

    exit_code = 2


@replay.command("verify")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--against-store",
    "store_url",
    default=None,
    metavar="URL",
    help="Also check that the file is this store's record of its game, byte for byte (a file "
    "a player sends in: verified alone, it is consistent, not necessarily the one recorded).",
)
@click.option(
    "--public-key",
    "public_keys",
    multiple=True,
    metavar="KEY",
    help="Fail unless the file is signed by this replay key (ed25519:…, as `croupier replay "
    "public-key` prints it); repeatable. CROUPIER_REPLAY_KEY_FILE's key and "
    "CROUPIER_REPLAY_PREVIOUS_KEYS are checked too, when set.",
)
def replay_verify(path: str, store_url: str | None, public_keys: tuple[str, ...]) -> None:
    """Verify a replay file: chain, commitment, decks, every event and the settlement, and its
    signature. Exits 1 at the first divergence, naming it; 2 when the file is not a replay (as
    the standalone verifier does)."""
    from croupier.log import GameNotFound
    from croupier.replays.format import ReplayFormatError, load, printable
    from croupier.replays.signing import ReplayKeyError, Verdict, parse_public_key, verify_signed
    from croupier.replays.verify import against_record, players_left_out

    try:
        given = [parse_public_key(text) for text in public_keys]
    except ReplayKeyError as error:
        raise click.ClickException(f"--public-key: {error}") from None
    try:
        replay_file = load(path)
    except ReplayFormatError as error:
        raise NotAReplay(str(error)) from None
    configured = _replay_keys().trusted
    report, signature = verify_signed(replay_file, [*given, *configured])
    for line in report.lines():
        click.echo(line)
    if not report.ok:
        sys.exit(1)
    if signature.verdict is not Verdict.VALID:
        if given:  # the reader asked for a signature by one of these keys
            click.echo(printable(f"FAIL {signature.line()}"))
            sys.exit(1)
        unchecked = signature.verdict is Verdict.UNKNOWN_KEY and not configured
        click.echo(
            printable(
                f"note {signature.line()}"
                + ("; give --public-key to check it" if unchecked else "")
            )
        )
    if store_url is not None:
        game_id = replay_file.header.game_id
        try:
            recorded = _recorded_replay(store_url, game_id)
        except GameNotFound:
            click.echo(printable(f"FAIL {redacted(store_url)} has no game {game_id}"))
            sys.exit(1)
        except ReplayFormatError as error:
            click.echo(f"FAIL {redacted(store_url)}: {error}")
            sys.exit(1)
        differs = against_record(replay_file, recorded)
        if differs is not None:
            click.echo(printable(f"FAIL {differs}"))
            sys.exit(1)
        click.echo(
            printable(
                f"ok   the store's record: game {game_id}, {len(recorded.events)} events, "
                "the same bytes"
                + (
                    _players_of_the_record(recorded.header.players)
                    if players_left_out(replay_file, recorded)
                    else ""
                )
            )
        )
    elif signature.verdict is not Verdict.VALID:
        # Consistent, but nothing ties it to the service: a file remade from its revealed seed,
        # or edited and its signature taken out, is consistent too. Not the plain "verified" a
        # reader (or a script) takes for settled.
        click.echo(f"verified, {NOT_AUTHENTICATED}")
        return
    click.echo("verified")


def _players_of_the_record(players: Sequence[str]) -> str:
    """What ``verify --against-store`` adds for a file that names no players (a seat's or anyone's
    export: the service gives the studio's player ids to the studio alone): who sat where, from
    the record, which a support agent matching a complaint to a seat needs."""
    seated = ", ".join(f"seat {seat} {player}" for seat, player in enumerate(players))
    return (
        " but the player ids, which the file leaves out (the service gives them to the studio "
        f'alone: docs/replay-format.md, "Layout"); the record seats {seated}'
    )


#: The last line of a verify that found a file consistent but neither signed by a known key nor
#: compared with the store's record.
NOT_AUTHENTICATED = (
    "not authenticated: the file is consistent, but no signature by a known key shows it is the "
    "service's (--public-key or --against-store checks that)"
)


def _replay_keys() -> ReplayKeys:
    """The replay keys the environment configures (one line when they cannot be read)."""
    try:
        return config.replay_keys()
    except config.ConfigError as error:
        raise click.ClickException(str(error)) from None


@replay.command("keygen")
@click.argument("out", type=click.Path(dir_okay=False, writable=True))
def replay_keygen(out: str) -> None:
    """Make a replay key: write its private half to OUT (PEM, readable by its owner only) and
    print its public half. Serve with CROUPIER_REPLAY_KEY_FILE=OUT to sign exported replays."""
    from croupier.replays.signing import load_private_key, new_private_key_pem, public_key_text

    try:
        descriptor = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, config.PRIVATE_FILE_MODE)
    except FileExistsError:
        raise click.ClickException(f"{out} exists: a key is not overwritten") from None
    except OSError as error:
        raise click.ClickException(f"{out}: {error.strerror}") from None
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(new_private_key_pem())
    public = load_private_key(out).public_key()
    click.echo(f"wrote {out}; its public key (publish it to whoever checks your replays):")
    click.echo(public_key_text(public))


@replay.command("public-key")
@click.argument(
    "key_file",
    cls=EnvArgument,
    env=config.REPLAY_KEY_FILE_ENV,
    type=click.Path(dir_okay=False),
    default=lambda: os.environ.get(config.REPLAY_KEY_FILE_ENV, ""),
    required=False,
)
def replay_public_key(key_file: str) -> None:
    """Print the public half of a replay key (KEY_FILE, by default CROUPIER_REPLAY_KEY_FILE), as
    `croupier replay verify --public-key` takes it, and its key id."""
    from croupier.replays.signing import (
        ReplayKeyError,
        key_id,
        load_private_key,
        public_key_text,
    )

    if not key_file:
        raise click.ClickException(f"give KEY_FILE or set {config.REPLAY_KEY_FILE_ENV}")
    try:
        public = load_private_key(key_file).public_key()
    except ReplayKeyError as error:
        raise click.ClickException(str(error)) from None
    click.echo(public_key_text(public))
    click.echo(f"key id {key_id(public)}", err=True)


@replay.command("show")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the timeline as one self-contained HTML file instead.",
)
def replay_show(path: str, html_out: str | None) -> None:
    """The game turn by turn: each move in words, the hands and the table after it, and every
    settlement with each factor explained."""
    from croupier.replays.format import ReplayFormatError, load
    from croupier.replays.timeline import render_html, render_text, timeline

    try:
        shown = timeline(load(path))
    except ReplayFormatError as error:
        raise NotAReplay(str(error)) from None
    if html_out:
        Path(html_out).write_text(render_html(shown), encoding="utf-8")
        click.echo(f"wrote {html_out}: {len(shown.steps)} turns")
    else:
        click.echo(render_text(shown), nl=False)


@replay.command("convert")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False, writable=True))
def replay_convert(source: str, out: str) -> None:
    """Convert a replay between its binary and JSON forms (by OUT's extension)."""
    from croupier.replays.format import ReplayFormatError, dump, load

    try:
        replay_file = load(source)
    except ReplayFormatError as error:
        raise NotAReplay(str(error)) from None
    try:
        dump(replay_file, out)
    except OSError as error:
        raise click.ClickException(f"cannot write {out}: {error.strerror or error}") from None
    click.echo(f"wrote {out}")


class Duration(click.ParamType[int]):
    """Seconds, or a number with s, m, h or d: ``90``, ``15m``, ``1h``, ``30d``."""

    name = "duration"
    UNITS: dict[str, int] = {"s": 1, "m": 60, "h": 3600, "d": 86400}  # noqa: RUF012

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        unit = self.UNITS.get(text[-1:], 0)
        number = text[:-1] if unit else text
        if not number.isdigit() or int(number) == 0:
            self.fail(f"{value!r}: a positive number of seconds, or with s, m, h or d", param, ctx)
        return int(number) * (unit or 1)


@main.group()
def token() -> None:
    """Mint the studio's credentials (CROUPIER_STUDIO_SECRET signs them; docs/credentials.md)."""


def _studio_signing_key() -> bytes:
    if not os.environ.get(config.STUDIO_SECRET_ENV, "").strip():
        raise click.ClickException(
            f"{config.STUDIO_SECRET_ENV} is not set: the studio's secret signs these tokens "
            "(`croupier token secret` makes one; give the server the same one)"
        )
    try:
        return config.studio_keys().ring.signing
    except config.ConfigError as error:
        raise click.ClickException(str(error)) from None


@token.command("studio")
@click.option("--ttl", type=Duration(), default="1h", show_default=True, help="Lifetime.")
def token_studio(ttl: int) -> None:
    """Print a studio token: the credential CreateGame takes (authorization: Bearer …)."""
    from croupier.app.tokens import mint_studio_token

    click.echo(mint_studio_token(_studio_signing_key(), int(time.time()) + ttl))


@token.command("player")
@click.option("--player", required=True, help="The studio's id of the player.")
@click.option("--ttl", type=Duration(), default="1h", show_default=True, help="Lifetime.")
def token_player(player: str, ttl: int) -> None:
    """Print a player token: it recalls PLAYER's finished games (ListRecentGames,
    GetRecentGame)."""
    from croupier.app.tokens import mint_player_token

    if not player.strip():
        raise click.UsageError("--player: the studio's id of the player, not empty")
    click.echo(mint_player_token(_studio_signing_key(), player, int(time.time()) + ttl))


@token.command("secret")
def token_secret() -> None:
    """Print a new random secret in the form CROUPIER_SECRET and CROUPIER_STUDIO_SECRET take."""
    import secrets

    from croupier.app.tokens import MIN_SECRET_BYTES

    click.echo(config.as_setting(secrets.token_bytes(MIN_SECRET_BYTES)))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
