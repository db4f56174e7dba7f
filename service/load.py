"""``croupier load``: bots play many concurrent games through the public gRPC API and measure.

Only the contract is used (the ``croupier.v1`` stubs and the bots' move choice): the tool can drive
any server, local or remote, one process or several workers, or replicas sharing PostgreSQL. One
process and one event loop (grpc.aio) hold every game and stream.

Two ways to play a game:

- ``play`` (default): each seat has its own ``Play`` stream, joined with ``include`` legal moves and
  who is to act; the seat named first in its pushed state's ``to_act`` sends one command chosen
  from its pushed legal moves. One client message per move.
- ``submit``: ``SubmitCommand`` with ``include`` (legal moves, to act); ``ListLegalMoves`` only
  when the acting seat changes.
- ``browser``: as a browser plays (it cannot hold ``Play``): each seat's ``StreamEvents`` with
  ``include`` (and ``batched``) pushes each batch with its state, and each move is one
  ``SubmitCommand``.

What it measures: moves per second, games finished, latency percentiles per call kind, errors by
status code, calls per move, and for a local server (``--spawn``, or found by its port) its CPU time
per move and memory, from ``/proc``. ``--baseline`` runs a bare grpc.aio echo server
(:mod:`croupier.service.echo`) the same way for comparison: unary calls, and moves on bare tables
of streams shaped as the games' Play streams. ``--streams N`` first opens N
``StreamEvents`` streams on games of their own, left idle (N clients connected to quiet games),
counts each open once the server has answered it, then holds them while the games are played;
``--streams-over connect`` holds them as browsers do, Connect over HTTP/1.1 on the HTTP listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    Awaitable,
    Callable,
    Collection,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar

import grpc
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from pyqwest import Client, HTTPTransport, HTTPVersion

from croupier.app.tokens import MIN_SECRET_BYTES, mint_studio_token
from croupier.service.bots import auth, choose, time_outs
from croupier.service.collector import Collector
from croupier.service.config import STUDIO_SECRET_ENV, as_setting, is_local, port_of, studio_keys
from croupier.service.echo import METHOD as ECHO_METHOD
from croupier.service.echo import TABLE_METHOD
from croupier.service.http import grpc_name
from croupier.service.logs import serving_addresses, serving_http_ports
from croupier.service.tls import (
    CERT_ENV,
    CLIENT_CA_ENV,
    KEY_ENV,
    TLS_HINT,
    ClientTLS,
    aio_channel,
    listening,
)
from croupier.v1 import (
    common_pb2,
    gin_pb2,
    hoola_pb2,
    koikoi_pb2,
    rummy_pb2,
    service_pb2,
    service_pb2_grpc,
)
from croupier.v1.service_connect import GameServiceClient

T = TypeVar("T")

GAMES = ("hoola", "koikoi", "gin", "rummy")
#: The final outcome of a game on a clock whose every seat stayed away (docs/rules/common.md
#: §5.1): in a load run, bots too slow for the turn clock.
ABANDONED = "ABANDONED"
ABANDONED_HINT = (
    "nobody attended: are the bots' --think-ms or the server slower than the turn clock?"
)
MODES = ("play", "submit", "browser")
# The life of the studio credential minted for a spawned server: longer than any run.
SPAWN_TOKEN_S = 7 * 24 * 3600
INCLUDE = service_pb2.Include(legal_moves=True, to_act=True)
#: What a spectator screen asks for (a spectator has no legal moves).
SPECTATOR_INCLUDE = service_pb2.Include(view=True, to_act=True)
# A game that makes no progress for this long is abandoned (counted as a STALLED error).
STALL_S = 30.0
# Consecutive failed calls after which a game is abandoned.
MAX_FAILURES = 5
# How long a submit-mode game waits on one StreamEvents call for the service's clock to play an
# idle seat before looking again (a lost wake costs this much, never a spin).
CLOCK_WAIT_S = 5.0
ECHO_PAYLOAD = b"x" * 96  # about the size of a SubmitCommand request
# A bare table's command (about a PlayCommand's size), and its moves per game (about a Hoola
# game's of three seats, one round).
TABLE_COMMAND = b"c" * 64
TABLE_MOVES = 30


class LoadError(RuntimeError):
    """The run could not start (no server, the spawned server failed…)."""


class StoppedEarly(LoadError):
    """A signal stopped the run before its games started: no report, the signal's exit code."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(
            f"stopped ({signal_name}) before the games started: the servers it started are "
            "stopped, and there is no report"
        )
        self.signal_name = signal_name


@dataclass
class LoadConfig:
    addresses: list[str] = field(default_factory=list)
    game: str = "hoola"
    seats: int | None = None
    preset: str = ""
    rounds: int | None = None
    mode: str = "play"
    games_in_flight: int = 16
    duration: float | None = None
    games: int | None = None
    streams: int = 0
    #: How the extra streams are held: "grpc" (StreamEvents), or "connect": as browsers hold
    #: them, Connect StreamEvents over HTTP/1.1, a connection each, at ``http_address``.
    streams_over: str = "grpc"
    #: The server's HTTP listener, HOST:PORT (with ``spawn``: set once the server listens).
    http_address: str = ""
    baseline: bool = False
    server_pids: list[int] = field(default_factory=list)
    spawn: bool = False
    store: str | None = None
    server_workers: int = 1
    channels: int = 4
    split_seats: bool | None = None
    seed: int | None = None
    connect_timeout: float = 10.0
    progress: TextIO | None = None
    #: The studio credential CreateGame takes; with ``spawn``, minted by :func:`run`.
    studio_key: str = ""
    #: Seats per game that never send a command (the turn clock plays them): which ones changes
    #: from game to game. Needs ``turn_time_ms``.
    idle_seats: int = 0
    #: The games' turn clock (0: the preset's, no clock by default).
    turn_time_ms: int = 0
    #: How long a bot thinks before each move, on average (each time between half and one and a
    #: half times it): players' pace, so that a run measures a server with that many games open
    #: rather than saturated (0: at once).
    think_ms: int = 0
    #: Seconds played first and not measured (the games' start, their moves falling out of
    #: step), before ``duration``.
    warmup: float = 0.0
    #: Call the servers over TLS (``None``: plaintext).
    tls: ClientTLS | None = None
    #: Spectators per game: each a ``StreamEvents`` with the studio's token, pushed the
    #: spectator's copies, view and who is to act, as a spectator screen is.
    spectators: int = 0
    #: With ``spawn``: where a run that failed keeps its server's log (the scratch folder it was
    #: written in is removed); ``None``: a ``croupier-load-server-*.log`` of the temp folder.
    server_log: str | None = None


# --- measuring -----------------------------------------------------------------------------------


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of sorted values, nearest rank; 0 for none."""
    if not ordered:
        return 0.0
    rank = max(0, min(len(ordered) - 1, int(q * len(ordered) + 0.999999) - 1))
    return ordered[rank]


def summarize(values: Sequence[float]) -> dict[str, float]:
    """Count and p50/p95/p99/max, in milliseconds (``values`` in seconds)."""
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "p50_ms": round(percentile(ordered, 0.50) * 1000, 3),
        "p95_ms": round(percentile(ordered, 0.95) * 1000, 3),
        "p99_ms": round(percentile(ordered, 0.99) * 1000, 3),
        "max_ms": round((ordered[-1] if ordered else 0.0) * 1000, 3),
    }


#: From this long without a move, the progress line says so (a server gone or hung fails no
#: call: its bots wait, and the run fails only at its end).
QUIET_SHOWN_S = 2.0


def progress_line(
    recorder: Recorder, elapsed: float, rate: float, window: Sequence[float], playing: int
) -> str:
    """The live display's line: the moves, the games, the errors, the p99 of the moves answered
    since the last line (none answered: no p99, not 0 ms), and what a stall or a lost server
    would otherwise hide until the report: how long no move came, the seats' streams resumed."""
    p99 = f"{percentile(sorted(window), 0.99) * 1000:.1f} ms" if window else "-"
    line = (
        f"{elapsed:6.1f}s  {rate:8.1f} moves/s  {recorder.moves} moves  "
        f"games {recorder.games_finished} done / {playing} playing  "
        f"errors {recorder.error_count()}  p99 {p99}"
    )
    if recorder.resumed or recorder.spectators_resumed:
        line += f"  resumed {recorder.resumed + recorder.spectators_resumed}"
    last = recorder.last_move_at
    quiet = min(elapsed, time.perf_counter() - last) if last is not None else elapsed
    if quiet >= QUIET_SHOWN_S:
        line += f"  no move for {quiet:.0f} s"
    return line


#: How much of what the server said of an error the report keeps.
ERROR_SAID_CHARS = 200


def said_of(error: grpc.aio.AioRpcError) -> str:
    """What the server said of a failed call: its ``ErrorInfo`` reason, if any, and its
    message."""
    reasons = []
    for detail in _status_details(error):
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reasons.append(info.reason)
    return " ".join(filter(None, [*reasons, error.details() or ""]))


class Recorder:
    """Counters and latencies of one run."""

    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.window: dict[str, list[float]] = defaultdict(list)
        self.errors: Counter[tuple[str, str]] = Counter()
        self.calls: Counter[str] = Counter()
        self.moves = 0
        # The moves each address (by its place in --addresses) applied: a replica that takes no
        # share shows here.
        self.moves_by_address: Counter[int] = Counter()
        self.move_calls = 0  # calls or messages sent to make moves
        self.setup_calls = 0  # CreateGame, joins, first views
        self.games_started = 0
        self.games_finished = 0
        self.games_abandoned = 0
        # CreateGame calls the end of the run cut before their answer: the server may have made
        # the game (a CI run's server held 4 unfinished games of a report's 3).
        self.creates_cut = 0
        # Turn clocks, read from each finished game's log: every recorded TurnTimedOut's
        # lateness (its batch's recorded time − its deadline, ms).
        self.lateness_ms: list[int] = []
        self.time_outs_of_playing_seats = 0
        self.recorded_twice = 0
        self.tick_batches = 0
        self.games_checked = 0
        #: How the games checked ended: their final settlement's outcome, counted.
        self.endings: Counter[str] = Counter()
        self.clock_waits = 0
        # Commands answered ABORTED because a time-out was recorded first (on a clock): what
        # docs/rules/common.md §5.1 promises, so counted apart from the errors.
        self.overtaken = 0
        # Play streams waiting for their first state (opened, not yet answered), integrated over
        # time: of the games in flight, how many are in play and how many wait to be let in.
        self.seats_joining = 0
        self.joining_seat_s = 0.0
        self._joining_since = time.perf_counter()
        # Calls and Play commands still unanswered when the run stopped: how long each had
        # waited (a server that stopped answering shows here, not in the latencies).
        self.unanswered_s: list[float] = []
        # The slowest call (or Play command) answered, and its kind: one answered only after
        # UNANSWERED_FAILS_S (a replica frozen a while, then back) fails the run as one never
        # answered does.
        self.slowest_answer: tuple[float, str] = (0.0, "")
        #: When the run stopped (perf_counter): an unanswered wait ends there, not when the
        #: tool got round to cancelling it (with 10,000 streams to close, seconds later).
        self.stopped_at: float | None = None
        # Play streams the server ended (UNAVAILABLE: a shutdown, a lost connection) that the
        # bots resumed after their newest event.
        self.resumed = 0
        self.spectators_resumed = 0  # the same, of the spectators' streams
        # Calls a stopping server cancelled unanswered (not let in, or cut by the grace: ``lost``),
        # by kind: sent again, as a command refused UNAVAILABLE is, and not errors.
        self.lost: Counter[str] = Counter()
        #: When the last move was accepted (perf_counter; None: none yet).
        self.last_move_at: float | None = None
        # Seats whose stream was lost and that were still waiting to join again when the run
        # stopped (their server gone): each is among the unanswered, from the resume on.
        self.rejoining_at_end = 0
        #: The first error of each kind and code: what the server said (its reason, message).
        self.first_said: dict[tuple[str, str], str] = {}

    def waited(self, since: float) -> float:
        """How long something unanswered since ``since`` (perf_counter) had waited when the run
        stopped (or until now, if it has not)."""
        end = self.stopped_at if self.stopped_at is not None else time.perf_counter()
        return max(0.0, end - since)

    def joining(self, change: int) -> None:
        """A seat's stream starts (+1) or stops (-1) waiting for its first state (0: bring the
        integral up to now)."""
        now = time.perf_counter()
        self.joining_seat_s += self.seats_joining * (now - self._joining_since)
        self.seats_joining += change
        self._joining_since = now

    def moved(self, address: int) -> None:
        """A move was applied (its command accepted) by the server at ``address`` (its place in
        the run's addresses)."""
        self.moves += 1
        self.moves_by_address[address] += 1
        self.last_move_at = time.perf_counter()

    def observe(self, kind: str, seconds: float) -> None:
        self.latencies[kind].append(seconds)
        self.window[kind].append(seconds)

    def answered(self, kind: str, seconds: float) -> None:
        """A call (or a Play command) answered after ``seconds``: timed, and the slowest kept."""
        self.observe(kind, seconds)
        if seconds > self.slowest_answer[0]:
            self.slowest_answer = (seconds, kind)

    def error(self, kind: str, code: str, said: str = "") -> None:
        """An error of ``kind`` with status ``code``; ``said``: the server's reason and message,
        kept for the first of each (the report prints it: a count alone does not tell a
        misconfigured server's refusals from a slow one's)."""
        self.errors[(kind, code)] += 1
        if said and (kind, code) not in self.first_said:
            self.first_said[(kind, code)] = said[:ERROR_SAID_CHARS]

    async def call(
        self, kind: str, call: Awaitable[T], move: bool = False, overtaken: bool = False
    ) -> T:
        """Await a unary call, timing it and counting its failure by status code; a ``move``
        call counts towards the calls per move once answered (a call cut at the end does not).
        With ``overtaken`` (a game on a clock), ABORTED counts as overtaken by a time-out."""
        self.calls[kind] += 1
        started = time.perf_counter()
        try:
            result = await call
        except asyncio.CancelledError:  # the run stopped before the answer came
            self.unanswered_s.append(self.waited(started))
            raise
        except grpc.aio.AioRpcError as error:
            if overtaken and error.code() == grpc.StatusCode.ABORTED:
                self.overtaken += 1
            elif lost(error):  # its callers send it again: no error of the service's
                self.lost[kind] += 1
            else:
                self.error(kind, error.code().name, said_of(error))
            self.move_calls += move
            raise
        self.answered(kind, time.perf_counter() - started)
        self.move_calls += move
        return result

    def error_count(self) -> int:
        return sum(self.errors.values())


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's name (the 3rd on: state, ppid, …), or
    ``None`` when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()


def _proc_tree(pids: Sequence[int]) -> list[int]:
    """``pids`` and all their descendants that are alive (the workers of ``serve --workers``)."""
    parents: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat_fields(int(entry.name))) is not None:
            parents[int(fields[1])].append(int(entry.name))
    seen: list[int] = []
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen or not Path(f"/proc/{pid}").exists():
            continue
        seen.append(pid)
        todo.extend(parents.get(pid, []))
    return seen


#: /proc/net/tcp's state of a listening socket.
LISTEN_STATE = "0A"


def _serve_args(pid: int) -> list[bytes] | None:
    """The arguments of ``croupier serve`` when ``pid`` runs it (the console script, or ``python
    -m croupier.service.cli``), else ``None``: a forwarder on the port (``ssh -L``, ``kubectl
    port-forward``), or a wrapper that starts the server (``timeout``, ``tini``, ``tmux``), is not
    the server, and its CPU is not the server's."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    for at, word in enumerate(words[:-1]):
        program = word.rsplit(b"/", 1)[-1] == b"croupier" or word == b"croupier.service.cli"
        if program and words[at + 1] == b"serve":
            return words[at + 2 :]
    return None


def serving_pids(ports: Collection[int]) -> set[int]:
    """The ``croupier serve`` processes of this machine listening on one of ``ports`` (TCP over
    IPv4 or IPv6), from /proc; a worker of ``serve --workers`` taken at its parent (the group's
    workers are counted with it). Empty where /proc cannot tell (another user's processes) or
    what listens is not Croupier."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            # sl, local address (HEXIP:HEXPORT), remote address, state, ..., inode (10th)
            if (
                len(fields) > 9
                and fields[3] == LISTEN_STATE
                and fields[9] != "0"
                and int(fields[1].rsplit(":", 1)[1], 16) in ports
            ):
                inodes.add(f"socket:[{fields[9]}]")
    found: set[int] = set()
    if not inodes:
        return found
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) in inodes for fd in (entry / "fd").iterdir()):
                found.add(int(entry.name))
    servers = set()
    for pid in found:
        args = _serve_args(pid)
        if args is None:
            continue
        stat = _stat_fields(pid)
        if b"--worker-of-group" in args and stat is not None:
            pid = int(stat[1])  # a worker of serve --workers: the group, at its parent
        servers.add(pid)
    return servers


def local_ports(addresses: Sequence[str]) -> set[int] | None:
    """The ports of ``addresses`` when every one is on this machine; ``None`` otherwise."""
    ports = {port_of(address) for address in addresses}
    if not addresses or not all(map(is_local, addresses)) or None in ports:
        return None
    return {port for port in ports if port is not None}


def servers_to_watch(addresses: Sequence[str], given: Sequence[int]) -> list[int]:
    """The server processes whose CPU and memory a run reports: ``given`` (``--server-pid``),
    once checked to serve one of ``addresses`` when they are local (a pid of another process
    would report its figures as the server's); else, with every address local, the processes
    serving them."""
    ports = local_ports(addresses)
    serving = serving_pids(ports) if ports else set()
    if not given:
        return sorted(serving)
    if not serving:
        return list(given)
    served_by = set(_proc_tree(sorted(serving)))  # the workers of a group too
    watched: list[int] = []
    for pid in given:
        if pid in served_by:
            watched.append(pid)
            continue
        # A process above the server (a supervisor, a wrapper script, the shell that started the
        # server and this tool): the servers under it, not every process under it (this tool
        # among them, whose CPU would be reported as the server's).
        under = sorted(serving & set(_proc_tree([pid])))
        if not under:
            raise LoadError(
                f"--server-pid {pid} serves none of {', '.join(addresses)} (nor do its child "
                f"processes): its figures would not be the server's; what serves them: "
                f"pid {', '.join(map(str, sorted(serving)))}"
            )
        watched += [server for server in under if server not in watched]
    return watched


def cpu_by_pid(pids: Sequence[int]) -> dict[int, float]:
    """User + system CPU time of each process still there (utime + stime from /proc/PID/stat)."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: dict[int, float] = {}
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is None or fields[0] in ("Z", "X"):
            continue  # gone, or ended with its parent not yet told: gone all the same
        found[pid] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime: 14th, 15th
    return found


def memory_kb(pids: Sequence[int]) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of the processes, summed, in kB."""
    found = {"vmrss_kb": 0, "vmhwm_kb": 0}
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[f"{key.lower()}_kb"] += int(value.split()[0])
    return found


def machine_cpu_s() -> tuple[float, float] | None:
    """(busy, all) CPU seconds of the whole machine since it booted, every core (/proc/stat's
    first line; idle and I/O wait are not busy); None where there is no /proc/stat."""
    try:
        first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    # user nice system idle iowait irq softirq steal (guest time is counted in user already)
    ticks = [int(value) for value in first[1:9]]
    every = sum(ticks)
    per_s = os.sysconf("SC_CLK_TCK")
    return (every - ticks[3] - ticks[4]) / per_s, every / per_s


#: From this share of the machine's CPU busy, a run's figures are the machine's limit as much as
#: the server's: the report says so.
MACHINE_SATURATED = 0.9


@dataclass
class Usage:
    """The load tool's own CPU and the whole machine's over a run. The tool's bots cost CPU too;
    on a machine the server shares with them, a run that keeps every core busy measures what the
    machine can do, and the tool's share says how much of it the tool took."""

    own_s: float
    machine: tuple[float, float] | None

    @classmethod
    def start(cls) -> Usage:
        return cls(time.process_time(), machine_cpu_s())

    def stop(self, done: int, unit: str) -> dict[str, Any]:
        """The tool's CPU (all its threads) per ``unit`` done, and how busy the machine was."""
        own = time.process_time() - self.own_s
        found: dict[str, Any] = {
            "client": {
                "cpu_s": round(own, 3),
                f"cpu_ms_per_{unit}": round(own * 1000 / done, 4) if done else None,
            }
        }
        now = machine_cpu_s()
        if self.machine is not None and now is not None and now[1] > self.machine[1]:
            used = now[0] - self.machine[0]
            busy = used / (now[1] - self.machine[1])
            found["machine"] = {
                "cores": os.cpu_count(),
                "busy": round(busy, 3),
                "cpu_s": round(used, 3),
            }
        return found


#: From this share of the machine's CPU taken by processes that are neither the server nor the
#: load tool (on a shared machine: other people's work), the report says the figures are not the
#: server's alone.
OTHERS_NOTABLE = 0.15


def others_share(report: dict[str, Any]) -> float | None:
    """The share of the machine's CPU (of all its cores over the run) that neither the load tool
    nor the watched server used: other processes' (None: not known, as when a local server's
    CPU was not read, or was partial). The busy share alone cannot tell a server and bots that keep the cores
    busy from a machine busy with other work."""
    machine, client = report.get("machine"), report.get("client")
    if not machine or not client or not machine.get("cpu_s") or not machine.get("busy"):
        return None
    server = report.get("server")
    if server and server.get("cpu_partial"):
        # A watched process ended: its successor (a restarted server) served on unwatched, and
        # its CPU was said to be other people's work ("81 % … not the server's alone").
        return None
    if server and server.get("cpu_s") is not None:
        server_s = float(server["cpu_s"])
    elif report.get("addresses") and not any(map(is_local, report["addresses"])):
        server_s = 0.0  # a server elsewhere: its CPU is not this machine's
    else:
        return None
    used, client_s = float(machine["cpu_s"]), float(client["cpu_s"])
    capacity = used / float(machine["busy"])
    return round(max(0.0, used - client_s - server_s) / capacity, 3)


#: Why a run's server CPU is no figure per move: the processes it was read from are not all
#: the processes that served the run's moves.
CPU_PARTIAL = "a server process exited during the run"


class ProcWatch:
    """CPU time over a run and memory of local server processes (with their descendants). A
    process that ends during the run (killed, restarted) counts its CPU up to the last look
    (:meth:`sample`, every ``SAMPLE_S`` of the run) and is named in the report. Its successor (a
    restarted server, on the same port) is not looked up: the processes are those found at the
    start, so the CPU is then partial, and the report gives no CPU per move (:func:`_measured`)."""

    def __init__(self, pids: Sequence[int]) -> None:
        self.roots = list(pids)
        self.pids: list[int] = []
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.exited: list[int] = []
        self.rss_at_start = 0

    def missing(self) -> list[int]:
        """The pids given that are no process of this machine."""
        return [pid for pid in self.roots if not Path(f"/proc/{pid}").exists()]

    def start(self) -> None:
        self.pids = _proc_tree(self.roots)
        # A process given that is gone by now (ended during a warm-up) has ended during the run
        # all the same: it counts no CPU, and is named among the processes that exited.
        self.pids += [pid for pid in self.roots if pid not in self.pids]
        self.first = cpu_by_pid(self.pids)
        self.last = dict(self.first)
        # A server's memory grows as it fills its caches, or leaks: the end's figure alone
        # cannot tell a run that added 50 MiB from one that added none.
        self.rss_at_start = memory_kb(self.pids)["vmrss_kb"]

    def sample(self) -> None:
        now = cpu_by_pid(self.pids)
        self.last.update(now)
        self.exited = [pid for pid in self.pids if pid not in now]

    def stop(self) -> dict[str, Any]:
        self.sample()
        used = sum(self.last[pid] - self.first[pid] for pid in self.first)
        alive = [pid for pid in self.pids if pid not in self.exited]
        return {
            "pids": self.pids,
            "exited": self.exited,
            "cpu_s": round(used, 3),
            # None: every process had ended (nothing to measure, rather than 0 kB).
            **(memory_kb(alive) if alive else {"vmrss_kb": None, "vmhwm_kb": None}),
            # None: a process ended, and the survivors' memory is not the start's to compare.
            "vmrss_at_start_kb": None if self.exited else self.rss_at_start,
        }


# --- the servers the tool starts -----------------------------------------------------------------


class Spawned:
    """A process the tool started and stops at the end."""

    def __init__(
        self, process: subprocess.Popen[Any], port: int, log: Path | None, http_port: int = 0
    ) -> None:
        self.process = process
        self.port = port
        self.log = log
        #: Its HTTP listener's port (0: none).
        self.http_port = http_port

    @property
    def pid(self) -> int:
        return self.process.pid

    def exited(self) -> bool:
        """Whether it has exited by itself (or been killed) before the tool stopped it."""
        return self.process.poll() is not None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def spawn_server(
    store: str,
    log: Path,
    workers: int = 1,
    timeout: float = 30.0,
    env: Mapping[str, str] | None = None,
    http: bool = False,
) -> Spawned:
    """``croupier serve`` on a free local port with ``store`` and ``workers`` (and ``env``: the
    environment, whose ``CROUPIER_*`` settings the flags given here do not set reach it);
    returns once it listens."""
    command = [
        sys.executable,
        "-m",
        "croupier.service.cli",
        "serve",
        "--address",
        "127.0.0.1:0",
        "--store",
        store,
        "--log-format",
        "json",
        # The load is on gRPC: an HTTP listener (on a free port) only for streams held over it.
        "--http-address",
        "127.0.0.1:0" if http else "off",
    ]
    # Always said, so that a CROUPIER_WORKERS in the caller's environment cannot make the
    # server another shape than the report says (its other settings do reach it: the rate
    # limit, the listeners, a metrics address).
    command += ["--workers", str(workers)]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=env,
            preexec_fn=die_with_parent(),
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        found = serving_addresses(text)
        if len(found) >= workers:
            http_port = next(iter(serving_http_ports(text)), 0)
            return Spawned(process, int(found[0].rpartition(":")[2]), log, http_port)
        if process.poll() is not None:
            raise LoadError(f"the server exited ({process.returncode}):\n{text[-2000:]}")
        time.sleep(0.05)
    process.kill()
    raise LoadError(f"the server did not listen within {timeout:.0f} s:\n{log.read_text()[-2000:]}")


#: prctl(2)'s option that has the kernel signal a process when its parent dies.
PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """What a spawned server runs before its exec (Linux; elsewhere nothing): SIGTERM to it
    when the tool dies, however (a SIGKILL gives the tool no chance to stop it, and it would
    serve on for good); SIGTERM shuts it down gracefully. The kernel sends it when the thread
    that started it ends: a thread of the run's executor, which lives until the run's end, when
    the server is stopped anyway. libc is loaded here, in the tool: the forked child only calls
    it (it must not load libraries, other threads may hold locks it would wait on)."""
    if sys.platform != "linux":
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def set_signal() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return set_signal


#: The scratch folders (a spawned server's store and log) are named after the tool's pid, so that
#: a run killed before it could remove its own has it removed by the next.
SCRATCH_PREFIX = "croupier-load-"


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def scratch_folder() -> tempfile.TemporaryDirectory[str]:
    """This run's scratch folder, once those of runs that died (SIGKILL) are removed."""
    for stale in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        pid = stale.name.removeprefix(SCRATCH_PREFIX).partition("-")[0]
        if stale.is_dir() and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    return tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-")


async def started(start: Callable[[], Spawned]) -> Spawned:
    """``start()`` (a server spawned and waited for) on a thread. Cancelled meanwhile (Ctrl-C,
    SIGTERM), the server is stopped once it is up, rather than left running without a parent."""
    starting = asyncio.ensure_future(asyncio.to_thread(start))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):  # it failed to start: nothing to stop
            (await starting).stop()
        raise


def spawn_echo(timeout: float = 15.0) -> Spawned:
    """The bare echo server (:mod:`croupier.service.echo`) on a free local port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "croupier.service.echo", "--address", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        text=True,
        # As a spawned server: a tool killed outright during the baseline left it serving.
        preexec_fn=die_with_parent(),
    )
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline and not line:
        line = process.stdout.readline().strip()
        if process.poll() is not None and not line:
            break
    if not line.isdigit():
        process.kill()
        raise LoadError(f"the echo server did not start: {line!r}")
    return Spawned(process, int(line), None)


# --- channels ------------------------------------------------------------------------------------


def open_channels(
    addresses: Sequence[str], per_address: int, tls: ClientTLS | None = None
) -> list[list[grpc.aio.Channel]]:
    """``per_address`` channels to each address, each with its own connection (a local
    subchannel pool), so that several workers sharing a port (SO_REUSEPORT) all get connections;
    over TLS when ``tls`` is given."""
    options = [("grpc.use_local_subchannel_pool", 1)]
    return [
        [aio_channel(address, tls, options) for _ in range(per_address)] for address in addresses
    ]


#: A call made to learn why a channel has no connection (any method: it is never let in), and
#: how long it may take.
PROBE_METHOD = "/grpc.health.v1.Health/Check"
PROBE_S = 2.0


async def last_error(channel: grpc.aio.Channel) -> str:
    """Why ``channel`` has no connection, in gRPC's words: a call made without waiting for one
    fails at once with its connection attempts' last error (refused, a name not resolved, a
    handshake failed, not an HTTP/2 server); empty if it is answered after all."""
    probe: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(PROBE_METHOD)
    try:
        await probe(b"", timeout=PROBE_S)
    except grpc.aio.AioRpcError as error:
        return error.details() or error.code().name
    return ""


async def wait_ready(
    channels: list[list[grpc.aio.Channel]],
    timeout: float,
    addresses: Sequence[str] = (),
    tls: ClientTLS | None = None,
) -> None:
    """Every channel connected within ``timeout``; else an error naming the addresses (one
    row of ``channels`` each) that did not answer, each with gRPC's last error."""
    rows = [asyncio.gather(*(c.channel_ready() for c in row)) for row in channels]
    done, _ = await asyncio.wait(rows, timeout=timeout) if rows else (set(), set())
    silent = [i for i, row in enumerate(rows) if row not in done or row.exception() is not None]
    await _cancelled(rows)  # their exceptions taken: asyncio would log each at exit
    if silent:
        why = await asyncio.gather(*(last_error(channels[i][0]) for i in silent))
        named = (
            [
                addresses[i] + (f" ({said})" if said else "")
                for i, said in zip(silent, why, strict=True)
            ]
            if len(addresses) == len(rows)
            else []
        )
        where = f" at {', '.join(named)}" if named else ""
        # A TLS server refuses plaintext in its handshake: grpc says only "Socket closed".
        plain_tls = (
            tls is None
            and len(addresses) == len(rows)
            and any(
                await asyncio.gather(*(asyncio.to_thread(listening, addresses[i]) for i in silent))
            )
        )
        hint = f" ({TLS_HINT})" if plain_tls else ""
        raise LoadError(f"no server answered{where} within {timeout:.0f} s{hint}")


# --- the games -----------------------------------------------------------------------------------


def game_request(
    game: str, seats: int | None, preset: str, rounds: int | None, turn_time_ms: int = 0
) -> service_pb2.CreateGameRequest:
    """The CreateGame request of ``game`` as ``croupier demo`` makes it (a Hoola table of one
    round unless ``rounds``; six or seven Hoola seats play with sit-out), on a turn clock of
    ``turn_time_ms`` if given."""
    if game == "rummy":
        kind, seats = common_pb2.GAME_KIND_RUMMY, seats or 4
        overrides = service_pb2.Rules(rummy=rummy_pb2.RummyRules())
    elif game == "gin":
        kind, seats = common_pb2.GAME_KIND_GIN, seats or 2
        overrides = service_pb2.Rules(gin=gin_pb2.GinRules())
    elif game == "koikoi":
        kind, seats = common_pb2.GAME_KIND_KOIKOI, seats or 2
        rules = koikoi_pb2.KoiKoiRules(rounds=rounds) if rounds else koikoi_pb2.KoiKoiRules()
        overrides = service_pb2.Rules(koikoi=rules)
    elif game == "hoola":
        kind, seats = common_pb2.GAME_KIND_HOOLA, seats or 3
        overrides = service_pb2.Rules(hoola=hoola_pb2.HoolaRules(rounds=rounds or 1))
        if seats > 5:
            overrides.hoola.sit_out = True
            overrides.hoola.max_seats = seats
    else:
        raise ValueError(f"unknown game {game!r}: one of {', '.join(GAMES)}")
    if turn_time_ms:
        getattr(overrides, game).turn_time_ms = turn_time_ms
    return service_pb2.CreateGameRequest(kind=kind, preset=preset, seats=seats, overrides=overrides)


def acting_seat(
    to_act: Sequence[service_pb2.SeatToAct], idle: frozenset[int]
) -> tuple[int | None, bool]:
    """Which seat the bots play now, and whether only idle seats are to act (wait for the
    clock). ``to_act`` may name several seats (Rummy lists every away seat, which may come
    back; between hands either seat may deal): the seat whose turn it is (``turn``) comes
    first, then any other that plays."""
    playing = [t for t in to_act if t.seat not in idle]
    on_turn = [t for t in playing if t.turn]
    chosen = (on_turn or playing)[:1]
    if chosen:
        return chosen[0].seat, False
    return None, bool(to_act)


def check_idle(config: LoadConfig) -> None:
    """Idle seats need a clock, and a seat that plays (a table of idle seats only measures nothing)."""
    if not config.idle_seats:
        return
    if not config.turn_time_ms:
        raise LoadError("idle seats need a turn clock: give --turn-time-ms")
    seats = game_request(config.game, config.seats, config.preset, config.rounds).seats
    if config.idle_seats >= seats:
        raise LoadError(
            f"--idle-seats {config.idle_seats}: at least one of the {seats} seats must play "
            "(a table of idle seats only is played by the clock alone: nothing to measure)"
        )


#: A bot's think time is drawn between these fractions of --think-ms.
THINK_SPREAD = (0.5, 1.5)


async def think(think_ms: int, rng: random.Random) -> None:
    """A player's pause before a move: ``think_ms`` on average, spread evenly by THINK_SPREAD
    (so that the games' moves do not fall in step)."""
    if think_ms:
        await asyncio.sleep(rng.uniform(*THINK_SPREAD) * think_ms / 1000)


def idle_seats(number: int, seats: int, idle: int, addresses: int = 1) -> frozenset[int]:
    """The idle seats of game ``number``: ``idle`` seats in a row from a seat that moves on with
    each game, so that idle seats deal, lead and follow in turn; over several ``addresses``, with
    each round of games over them (the same seats idle while the games go round the addresses,
    :func:`address_row`), so that each address hosts every seat, idle or playing. Moved on with
    each game there, the idle seats kept to one address whenever the seats were a multiple of
    the addresses: two seats, one idle, on two replicas put every move on one replica."""
    first = (number // addresses) % seats
    return frozenset((first + i) % seats for i in range(idle))


def address_row(game: int, seat: int, addresses: int, split_seats: bool) -> int:
    """Which of ``addresses`` game ``game``'s ``seat`` calls: games alternate over the addresses,
    and with ``split_seats`` a game's seats too."""
    return (game + (seat if split_seats else 0)) % addresses


@dataclass(frozen=True)
class ClockCheck:
    """What one finished game's log says about its turn clock."""

    #: Every TurnTimedOut's lateness: its batch's recorded_at_ms − its deadline_ms.
    lateness_ms: tuple[int, ...]
    #: Time-outs of seats that were playing (a bot slower than the turn time).
    of_playing_seats: int
    #: Time-outs (seat, deadline) found in more than one batch: recorded more than once.
    recorded_twice: int
    #: Batches that time made due (command id ``tick:<version>``).
    tick_batches: int


def check_clock(events: Sequence[service_pb2.GameEvent], idle: frozenset[int]) -> ClockCheck:
    """The turn-clock facts of a game's log (see :class:`ClockCheck`). A time-out is one fact
    of one batch: the same seat and deadline twice in a batch is two turns (an away seat forced
    to deal the round its own forced move ended), in two batches it was recorded twice."""
    batches: dict[tuple[int, int], set[str]] = defaultdict(set)
    lateness = []
    playing = 0
    for event, timed in time_outs(events):
        lateness.append(event.recorded_at_ms - timed.deadline_ms)
        batches[(timed.seat, timed.deadline_ms)].add(event.command_id)
        playing += timed.seat not in idle
    ticks = {e.command_id for e in events if e.command_id.startswith("tick:")}
    twice = sum(1 for ids in batches.values() if len(ids) > 1)
    return ClockCheck(tuple(lateness), playing, twice, len(ticks))


@dataclass
class Running:
    """A game in play."""

    token: str
    version: int
    stub: service_pb2_grpc.GameServiceAsyncStub
    # When a command was sent at each version: its first event (version + 1) reaching each seat's
    # stream measures how fast a command reaches the streams on its game.
    sent_at: dict[int, float] = field(default_factory=dict)


# How many extra streams open per second.
STREAM_RAMP_PER_S = 1000.0
# The extra streams watch games of their own, this many streams to a game (a seat's token each,
# in turn).
STREAMS_PER_WATCHED_GAME = 10
# How long the extra streams may take to be answered before the games start regardless.
STREAMS_OPEN_WAIT_S = 120.0
# Calls in flight while the watched games are created.
SETUP_CALLS_IN_FLIGHT = 32
# Versions whose send time is kept per game.
SENT_KEPT = 64


#: A refused CreateGame's game slot waits this long before the next, then twice as long each
#: time up to the most.
CREATE_RETRY_FIRST_S = 0.05
CREATE_RETRY_MAX_S = 1.0


def _backoff_s(tries: int) -> float:
    """The wait before the next try after ``tries`` in a row have failed (0: the first wait),
    doubling from ``CREATE_RETRY_FIRST_S`` up to ``CREATE_RETRY_MAX_S``."""
    return min(CREATE_RETRY_FIRST_S * 2.0**tries, CREATE_RETRY_MAX_S)


#: How often one seat's Play stream is resumed after the server ended it or went away.
MAX_RESUMES = 5
#: The statuses of a Play stream the server ended by going away: the bots join again.
RESUMABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED})
#: The same over Connect (the extra streams held as browsers hold them).
CONNECT_GONE = frozenset({Code.UNAVAILABLE, Code.CANCELED})
#: What grpc's Python (aio) client makes of a stream whose request it was writing as the server
#: ended the call (a shutdown): its own INTERNAL with these details, the server's status lost. A
#: server's INTERNAL names an error id instead (docs/operations.md).
CUT_WHILE_WRITING = "Internal error from Core"


async def _write(call: Any, request: service_pb2.PlayRequest) -> None:
    """Send ``request`` on a Play stream, unless the server has ended it (a shutdown, a lost
    connection: grpc.aio raises InvalidStateError then): the next read says how, and the stream
    resumed sends what is unanswered again."""
    with contextlib.suppress(asyncio.InvalidStateError):
        await call.write(request)


def resumable(error: grpc.aio.AioRpcError) -> bool:
    """Whether a Play stream ended by ``error`` was ended by the server going away, so that its
    client joins again: UNAVAILABLE, CANCELLED, or the client library's INTERNAL of a request cut
    while it was written."""
    code = error.code()
    return code in RESUMABLE or (
        code == grpc.StatusCode.INTERNAL and error.details() == CUT_WHILE_WRITING
    )


#: A call or command unanswered this long when the run stops fails it: a healthy server, even
#: saturated, answers within a few seconds (a seat's first join included, which is not counted).
UNANSWERED_FAILS_S = 10.0

#: No move accepted in the run's last this many seconds (or this many bots' longest thinking,
#: if more) fails it: games were in flight, so a server that answers would have moved them.
QUIET_FAILS_S = 5.0
QUIET_THINKS = 3

#: Fewer moves measured than this and the run is too short to sign anything off: of fewer than
#: 100 answers, the nearest-rank p99 is their slowest (one stray answer is the "p99").
MOVES_FOR_A_P99 = 100

#: How long an address that answered UNAVAILABLE is passed over for the others.
PASSED_OVER_S = 5.0

#: How long a command refused UNAVAILABLE waits to be sent again when the refusal says nothing.
UNAVAILABLE_RETRY_S = 1.0


def _code_name(error: grpc.aio.AioRpcError | ConnectError) -> str:
    """A failed call's status code by its gRPC name, over gRPC or Connect."""
    if isinstance(error, ConnectError):
        return grpc_name(error.code)
    return error.code().name


def _retry_after_s(refused: service_pb2.PlayRefused) -> float:
    """The delay a refusal asks for before the same command is sent again."""
    try:
        return int(refused.metadata["retry_after_ms"]) / 1000
    except (KeyError, ValueError):
        return UNAVAILABLE_RETRY_S


def _sent_again(refused: service_pb2.PlayRefused) -> bool:
    """Whether a Play refusal asks for the same command again: the store was unavailable, or
    the refusal names a delay (a seat over its command rate, RATE_LIMITED), after which the
    command, which was not applied, may well be."""
    return refused.status == "UNAVAILABLE" or "retry_after_ms" in refused.metadata


def _status_details(error: grpc.aio.AioRpcError) -> list[Any]:
    """The details (``Any`` messages) of a failed call's rich status; none when it has none."""
    try:
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
    except ValueError:
        status = None
    return list(status.details) if status is not None else []


def lost(error: grpc.aio.AioRpcError) -> bool:
    """Whether a call failed for want of the server's answer rather than by it: CANCELLED with
    no ``ErrorInfo`` (every status of the service carries one). gRPC core cancels so the calls a
    server had not yet let in when it began to stop (never applied), and those its grace cut
    (perhaps applied: the retry's id gets the first answer). The bots' own
    cancellation never comes here (awaiting a call the tool cancelled raises
    ``asyncio.CancelledError``). As the TypeScript client's ``isConnectionLoss``: sent again."""
    return error.code() == grpc.StatusCode.CANCELLED and not any(
        detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR) for detail in _status_details(error)
    )


def gone_away(error: grpc.aio.AioRpcError) -> bool:
    """Whether a call failed because its server went away (UNAVAILABLE, or a call it cancelled
    unanswered as it stopped: :func:`lost`): sent again, at the next address if there are
    several."""
    return error.code() == grpc.StatusCode.UNAVAILABLE or lost(error)


def _again_after_s(error: grpc.aio.AioRpcError) -> float | None:
    """How long to wait before a refused call is made again, the same command (applied once):
    the delay its ``RetryInfo`` asks for (a seat over its command rate, the store unavailable),
    else ``UNAVAILABLE_RETRY_S`` for a server going (UNAVAILABLE, or a call it cancelled before
    letting it in: :func:`lost`); ``None``: not again."""
    for detail in _status_details(error):
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            return float(info.retry_delay.ToMilliseconds()) / 1000
    return UNAVAILABLE_RETRY_S if gone_away(error) else None


#: How often the local server's CPU is looked at during a run (a process that ends keeps it).
SAMPLE_S = 0.5


#: CreateGame's refusals that no retry mends: the studio credential is wrong. The run stops.
CREDENTIAL_REFUSALS = frozenset(
    {grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED}
)


class NotCreated(Exception):
    """CreateGame failed at ``address``: the game never started (neither finished nor
    abandoned)."""

    def __init__(self, error: grpc.aio.AioRpcError, address: str) -> None:
        super().__init__(error.details())
        self.error = error
        self.address = address


#: CreateGame's refusals of the request itself (an unknown preset, seats or rounds the game does
#: not take): no retry mends them either. The run stops with the server's reason.
REQUEST_REFUSALS = frozenset({grpc.StatusCode.INVALID_ARGUMENT})
#: CreateGame's refusals that stop the run: every other CreateGame would be refused too.
REFUSED_FOR_GOOD = CREDENTIAL_REFUSALS | REQUEST_REFUSALS


class CredentialRefused(LoadError):
    """CreateGame refused the studio credential the run was given."""


class RequestRefused(LoadError):
    """CreateGame refused the game the run asks for (its preset, seats, rounds…)."""


def refused_credential(error: grpc.aio.AioRpcError, address: str = "") -> LoadError:
    return CredentialRefused(
        f"CreateGame refused the studio credential ({error.code().name}){_at(address)}: "
        f"{error.details()}"
    )


def _at(address: str) -> str:
    """Where a call was refused, as a clause (with several --addresses, the replica to mend)."""
    return f" at {address}" if address else ""


def refused(error: grpc.aio.AioRpcError, address: str = "") -> LoadError:
    """The error that stops a run whose CreateGame was refused for good at ``address``: the
    credential, or the game asked for, with the server's reason."""
    if error.code() in CREDENTIAL_REFUSALS:
        return refused_credential(error, address)
    return RequestRefused(
        f"CreateGame refused the game asked for ({error.code().name}){_at(address)}: "
        f"{error.details()}"
    )


class Stalled(Exception):
    """A game made no progress for too long."""


class Load:
    """One run: the games, the extra streams and the progress display."""

    def __init__(
        self,
        config: LoadConfig,
        channels: list[list[grpc.aio.Channel]],
        watch: ProcWatch | None = None,
        server_exited: Callable[[], bool] | None = None,
    ) -> None:
        self.config = config
        # The server's CPU is counted from when the games start (the extra streams opened).
        self.watch = watch
        #: Whether the server the tool started has exited: the run then ends at once, as
        #: nothing will answer its games again (a --server-pid may be restarted: it goes on).
        self.server_exited = server_exited
        self.channels = channels
        self.stubs = [[service_pb2_grpc.GameServiceStub(c) for c in row] for row in channels]
        self.request = game_request(
            config.game, config.seats, config.preset, config.rounds, config.turn_time_ms
        )
        self.studio = auth(config.studio_key)
        #: The run's CreateGame request ids are this and the game's number.
        self.run_id = f"load-{uuid.uuid4()}"
        #: The games made for the extra streams (``--streams``), left unfinished on the server.
        self.watched_games = 0
        self.recorder = Recorder()
        self.running: dict[str, Running] = {}
        #: Per address (its row): until when it is passed over, having answered UNAVAILABLE.
        self.down_until: dict[int, float] = {}
        #: Per address (its row): when it last went away (perf_counter), and its last error.
        self.gone_since: dict[int, tuple[float, str]] = {}
        self.tickets = 0
        #: The numbers of the games CreateGame made: a game that fails later is abandoned, one
        #: that fails before was never started (neither finished nor abandoned).
        self.created: set[int] = set()
        #: A CreateGame refused for good (the studio credential, or the game asked for), and
        #: the address that refused it: the run stopped, and fails with it.
        self.refused: grpc.aio.AioRpcError | None = None
        self.refused_at = ""
        self.stopping = asyncio.Event()
        self.started = 0.0
        #: Whether a --warmup is over (the counts restarted): the live line says which it is.
        self.warmed_up = False
        self.elapsed = 0.0
        self.quiet_s = 0.0  # how long before the run stopped the last move was accepted
        self.usage: Usage | None = None  # the tool's and the machine's CPU, from the games' start
        self.used: dict[str, Any] = {}  # ... to when the run stopped
        self.streams_open = 0
        self.streams_opened = 0
        self.streams_ended = 0  # ended by the server with OK: their game was over
        # Answered again after their server ended them or went away, and the attempts to open
        # them again (answered or not: a server down for a while is asked again and again).
        self.streams_resumed = 0
        self.stream_resume_attempts = 0
        self.streams_answered = 0  # answered by the server at least once, or failed
        self.streams_open_s = 0.0  # how long they took to open, all of them answered
        self.streams_open_at_start = 0
        self.streams_failed: Counter[str] = Counter()
        self.streams_last_error = ""  # the last failed extra stream's details
        self.streams_opened_once = False  # the server answered at least one extra stream
        self.stream_events = 0
        self.streams_open_min: int | None = None
        self.streams_open_at_end = 0
        #: With ``streams_over`` "connect": the extra streams' Connect client, on HTTP/1.1 (a
        #: connection per stream, as a browser without HTTP/2 holds them).
        self._http: HTTPTransport | None = None
        self._connect: GameServiceClient | None = None
        #: Where the Connect-held streams go: over TLS as the gRPC calls are.
        self.connect_url = f"{'http' if config.tls is None else 'https'}://{config.http_address}"
        if config.streams_over == "connect" and config.streams:
            # Over TLS as the gRPC calls are (the server serves both ports alike).
            tls = config.tls
            self._http = HTTPTransport(
                http_version=HTTPVersion.HTTP1,
                tls_ca_cert=None if tls is None else tls.root_certificates,
                tls_include_system_certs=tls is not None and tls.root_certificates is None,
                tls_key=None if tls is None else tls.private_key,
                tls_cert=None if tls is None else tls.certificate_chain,
            )
            self._connect = GameServiceClient(self.connect_url, http_client=Client(self._http))
        self.joining_seat_s = 0.0  # the recorder's integral when the run stopped
        split = config.split_seats
        self.split_seats = len(channels) > 1 if split is None else split

    # Which channel a game's call goes on: games alternate over the addresses, then over the
    # channels of an address; a game's seats share its channel (one connection: one worker of a
    # SO_REUSEPORT group), or alternate over the addresses with split seats. An address that
    # answered UNAVAILABLE is passed over for the next one for a while (any replica serves any
    # game: a client fails over), unless every one is.
    def stub(
        self, game: int, seat: int = 0, attempt: int = 0
    ) -> service_pb2_grpc.GameServiceAsyncStub:
        """The channel for ``game``'s ``seat``; ``attempt``: when every address is passed over,
        the caller's attempts go round them (one may be back before the others)."""
        addresses = len(self.stubs)
        row = address_row(game, seat, addresses, self.split_seats)
        if self.down_until:
            now = time.monotonic()
            up = [
                r
                for r in (i % addresses for i in range(row, row + addresses))
                if self.down_until.get(r, 0.0) <= now
            ]
            row = up[0] if up else (row + attempt) % addresses
        column = (game // addresses) % len(self.stubs[row])
        stub: service_pb2_grpc.GameServiceAsyncStub = self.stubs[row][column]
        return stub

    def passed_over(
        self,
        stub: service_pb2_grpc.GameServiceAsyncStub,
        error: grpc.aio.AioRpcError | None = None,
    ) -> None:
        """``stub``'s address answered UNAVAILABLE (``error``, kept as its last word: a run that
        fails for want of moves names the addresses gone since): the next calls go to the others
        for ``PASSED_OVER_S`` (then it is tried again: a replica restarted takes its share)."""
        row = self.row_of(stub)
        # Only the server's own going counts as its last word: not grpc's client-side INTERNAL
        # of a Play request cut while it was written (the server answered; a reviewer's run
        # named a healthy server "stopped answering" for it).
        if error is not None and gone_away(error):
            said = f"{error.code().name}: {error.details() or 'no details'}"
            self.gone_since[row] = (time.perf_counter(), said)
        if len(self.stubs) > 1:
            self.down_until[row] = time.monotonic() + PASSED_OVER_S

    def row_of(self, stub: service_pb2_grpc.GameServiceAsyncStub) -> int:
        """The place in the run's addresses of the address ``stub`` calls."""
        return next(r for r, stubs in enumerate(self.stubs) if stub in stubs)

    def stopped_answering(self) -> dict[str, str]:
        """The addresses that went away (their last error) after the last move was accepted (or
        with none accepted): those the run's games waited for when it stopped."""
        last_move = self.recorder.last_move_at
        return {
            self.config.addresses[row]: said
            for row, (at, said) in sorted(self.gone_since.items())
            if (last_move is None or at >= last_move) and row < len(self.config.addresses)
        }

    def all_down(self) -> bool:
        """Whether every address is being passed over (callers then try each in turn; with
        one address, they wait for it)."""
        now = time.monotonic()
        return len(self.stubs) == 1 or all(
            self.down_until.get(r, 0.0) > now for r in range(len(self.stubs))
        )

    def in_flight(self) -> int:
        """How many games are played at once: ``--games-in-flight``, or fewer ``--games``."""
        games = self.config.games
        return (
            self.config.games_in_flight
            if games is None
            else min(self.config.games_in_flight, games)
        )

    def _take_ticket(self) -> int | None:
        if self.stopping.is_set():
            return None
        if self.config.games is not None and self.tickets >= self.config.games:
            return None
        self.tickets += 1
        return self.tickets - 1

    async def _worker(self, index: int) -> None:
        refused_for = 0.0  # how long the last CreateGame refusals in a row were waited out
        again: int | None = None  # a game whose CreateGame was refused: asked for again
        while (number := again if again is not None else self._take_ticket()) is not None:
            again = None
            rng = random.Random(
                None if self.config.seed is None else f"{self.config.seed}-{number}"
            )
            try:
                if self.config.mode == "submit":
                    await self._submit_game(number, rng)
                else:
                    await self._play_game(number, rng)
                refused_for = 0.0
            except NotCreated as failed:  # an error of CreateGame's (counted): no game started
                if failed.error.code() in REFUSED_FOR_GOOD and self.refused is None:
                    self.refused, self.refused_at = failed.error, failed.address
                    self.stopping.set()  # every other CreateGame would be refused too
                # Waited out longer each time, as a client backs off from a server that refuses
                # or is gone (a restart: it was asked every 50 ms, 165 errors of the tool's own).
                refused_for = min(max(2 * refused_for, CREATE_RETRY_FIRST_S), CREATE_RETRY_MAX_S)
                await asyncio.sleep(refused_for)
                # The same game asked for again, with its request id: if the refusal was a lost
                # answer (the game was made), the retry gets that game rather than a second.
                again = None if self.stopping.is_set() else number
            except grpc.aio.AioRpcError:
                self.recorder.games_abandoned += 1
                await asyncio.sleep(0.05)  # the call was counted; do not spin on a sick server
            except Stalled:
                self.recorder.error("game", "STALLED")
                self.recorder.games_abandoned += 1
            except Exception as error:  # a bug or a surprise: count it, keep the load going
                self.recorder.error("game", type(error).__name__)
                # Abandoned only if it was made: the games' counts add up to those started.
                self.recorder.games_abandoned += number in self.created
                await asyncio.sleep(0.05)

    async def _create(self, number: int) -> service_pb2.CreateGameResponse:
        request = service_pb2.CreateGameRequest()
        request.CopyFrom(self.request)
        request.request_id = f"{self.run_id}-{number}"
        stub = self.stub(number)
        try:
            created = await self.recorder.call(
                "CreateGame", stub.CreateGame(request, metadata=self.studio)
            )
        except asyncio.CancelledError:
            self.recorder.creates_cut += 1  # made or not: the answer will not be read
            raise
        except grpc.aio.AioRpcError as error:
            if gone_away(error):
                # Asked again at the next address, if there are several.
                self.passed_over(stub, error)
            raise NotCreated(error, self.config.addresses[self.row_of(stub)]) from error
        self.recorder.games_started += 1
        self.recorder.setup_calls += 1
        self.created.add(number)
        return created

    # -- play mode --

    async def _play_game(self, number: int, rng: random.Random) -> None:
        created = await self._create(number)
        idle = idle_seats(number, len(created.tokens), self.config.idle_seats, len(self.stubs))
        info = Running(created.tokens[0].token, created.version, self.stub(number))
        self.running[created.game_id] = info
        progress = [time.monotonic()]
        # An idle seat's player is gone: no stream, no command; the turn clock plays it.
        seats = [
            asyncio.create_task(
                self._play_seat(
                    created.game_id,
                    t.seat,
                    t.token,
                    number,
                    rng,
                    info,
                    progress,
                    idle,
                )
            )
            for t in created.tokens
            if t.seat not in idle
        ]
        # Spectators: their streams end with the game, as the seats' do.
        seats += [
            asyncio.create_task(self._spectate(created.game_id, number, info))
            for _ in range(self.config.spectators)
        ]
        try:
            while True:
                done, pending = await asyncio.wait(seats, timeout=1.0)
                for task in done:
                    failure = task.exception()
                    if failure is not None:
                        raise failure
                if not pending:
                    break
                if time.monotonic() - progress[0] > STALL_S:
                    raise Stalled(created.game_id)
            self.recorder.games_finished += 1
            await self._check_clock(number, created.game_id, info.token, idle)
        finally:
            self.running.pop(created.game_id, None)
            await _cancelled(seats)

    async def _play_seat(
        self,
        game_id: str,
        seat: int,
        token: str,
        number: int,
        rng: random.Random,
        info: Running,
        progress: list[float],
        idle: frozenset[int],
    ) -> None:
        recorder = self.recorder
        # A browser's seat (--mode browser): its StreamEvents pushes the same events and states,
        # and each move is a SubmitCommand of its own rather than a message on the stream.
        browser = self.config.mode == "browser"
        recorder.joining(+1)
        joined = joining = time.perf_counter()
        recorder.setup_calls += 1
        sent: dict[str, float] = {}
        # The commands sent and not yet answered: sent again on a resumed stream (each applied
        # once by its id), as a mobile client does after a reconnect.
        unanswered: dict[str, service_pb2.PlayRequest] = {}
        last_sent = -1
        seen = 0  # the newest event this seat has: a resumed stream joins after it
        closed = first = False
        in_game = False  # this stream has sent the seat its state (it is not joining)
        resumes = 0  # in a row, without a state between them

        def reached(event: service_pb2.GameEvent) -> None:
            """An event reached this seat: how long after the command it follows was sent. Not
            timed on a stream still joining: its first batch catches it up on the moves made
            while it waited to be let in (the join's time), rather than pushing a move to it."""
            nonlocal seen
            seen = max(seen, event.version)
            started = info.sent_at.get(event.version - 1)
            if started is not None and in_game:
                recorder.observe("command→event, each seat", time.perf_counter() - started)

        try:
            while True:
                recorder.calls["StreamEvents" if browser else "Play"] += 1
                # A resumed stream goes on to the next address, if there are several. With one,
                # it waits for the server to be back (a restart, a rolling update); with several
                # all passed over, it tries each in turn, backing off (any may come back first).
                several_down = len(self.stubs) > 1 and resumes > 1 and self.all_down()
                if several_down:
                    await asyncio.sleep(_backoff_s(resumes - 2))
                stub = self.stub(number, seat, resumes)
                waits = resumes > 0 and len(self.stubs) == 1
                call: Any
                if browser:
                    watch = service_pb2.StreamEventsRequest(
                        game_id=game_id, after_version=seen, include=INCLUDE, batched=True
                    )
                    call = stub.StreamEvents(
                        watch, metadata=auth(token), wait_for_ready=waits or None
                    )
                else:
                    call = stub.Play(metadata=auth(token), wait_for_ready=waits or None)
                try:
                    if not browser:
                        join = service_pb2.PlayJoin(
                            game_id=game_id, after_version=seen, include=INCLUDE, batched=True
                        )
                        await _write(call, service_pb2.PlayRequest(join=join))
                        for request in list(unanswered.values()):
                            await _write(call, request)
                    while True:
                        response = await call.read()
                        kind: str | None
                        if isinstance(response, service_pb2.StreamEventsResponse):
                            kind = next(
                                (k for k in ("batch", "state") if response.HasField(k)), "event"
                            )
                        elif isinstance(response, service_pb2.PlayResponse):
                            kind = response.WhichOneof("kind")
                        else:
                            return  # EOF: the server ended the stream (the game is over)
                        if kind == "batch":  # each event, then the state after them
                            for event in response.batch.events:
                                reached(event)
                            if not response.batch.HasField("state"):
                                continue
                        if kind in ("state", "batch"):
                            state = response.state if kind == "state" else response.batch.state
                            if not in_game:
                                in_game, resumes = True, 0
                                recorder.joining(-1)
                            if not first:
                                first = True
                                recorder.observe(
                                    "StreamEvents open→state" if browser else "Play join→state",
                                    time.perf_counter() - joined,
                                )
                            if state.version > info.version:
                                info.version = state.version
                                progress[0] = time.monotonic()
                            if state.finished:
                                if not closed and not browser:
                                    closed = True
                                    with contextlib.suppress(asyncio.InvalidStateError):
                                        await call.done_writing()
                                continue
                            if (
                                state.to_act
                                and acting_seat(state.to_act, idle)[0] == seat
                                and state.version > last_sent
                                and state.legal_moves
                            ):
                                await think(self.config.think_ms, rng)
                                move = choose(list(state.legal_moves), rng)
                                command_id = uuid.uuid4().hex
                                last_sent = state.version
                                info.sent_at[state.version] = time.perf_counter()
                                info.sent_at.pop(state.version - SENT_KEPT, None)
                                if browser:
                                    submit = service_pb2.SubmitCommandRequest(
                                        game_id=game_id,
                                        command_id=command_id,
                                        expected_version=state.version,
                                        command=move.command,
                                    )
                                    if not await self._submit_move(
                                        submit, number, seat, token, progress
                                    ):
                                        last_sent = -1  # not applied: the next state may retry
                                    continue
                                sent[command_id] = info.sent_at[state.version]
                                request = service_pb2.PlayRequest(
                                    command=service_pb2.PlayCommand(
                                        command_id=command_id,
                                        expected_version=state.version,
                                        command=move.command,
                                    )
                                )
                                unanswered[command_id] = request
                                await _write(call, request)
                        elif kind == "event":
                            reached(response.event)
                        elif kind == "accepted":
                            unanswered.pop(response.accepted.command_id, None)
                            started = sent.pop(response.accepted.command_id, None)
                            if started is not None:
                                recorder.move_calls += 1
                                recorder.answered(
                                    "Play command→accepted", time.perf_counter() - started
                                )
                            recorder.moved(self.row_of(stub))
                            progress[0] = time.monotonic()
                        elif kind == "refused":
                            refused = response.refused
                            status = refused.status or "REFUSED"
                            again = unanswered.get(refused.command_id)
                            if again is not None and _sent_again(refused):
                                # The store could not be reached, or the seat is over its rate:
                                # the same command again after the delay asked for (applied
                                # once, whatever the first did).
                                recorder.error(
                                    "Play command", status, f"{refused.reason} {refused.message}"
                                )
                                recorder.move_calls += 1
                                await asyncio.sleep(_retry_after_s(refused))
                                await _write(call, again)
                                continue
                            unanswered.pop(refused.command_id, None)
                            if sent.pop(refused.command_id, None) is not None:
                                recorder.move_calls += 1
                            if self.config.turn_time_ms and status == "ABORTED":
                                # A time-out was due before the command: recorded first (its
                                # state comes next), as docs/rules/common.md §5.1 says.
                                recorder.overtaken += 1
                            else:
                                recorder.error(
                                    "Play command", status, f"{refused.reason} {refused.message}"
                                )
                except grpc.aio.AioRpcError as error:
                    # The server went away (a shutdown, a lost connection): resume after the
                    # newest event, as docs/operations.md tells clients to. (A stream that came
                    # in as the server was stopping can end CANCELLED, the server's cancel.)
                    if self._given_up(error, resumes):
                        recorder.error("Play", error.code().name, said_of(error))
                        raise
                    resumes += 1
                    recorder.resumed += 1
                    closed = False
                    if in_game:  # joining again: counted as joining until its state comes
                        in_game, joining = False, time.perf_counter()
                        recorder.joining(+1)
                    self.passed_over(stub, error)
                finally:
                    call.cancel()
        finally:
            if not in_game:
                recorder.joining(-1)
                if first and self.stopping.is_set():
                    # The run stopped while the seat joined again (its server gone): it waits
                    # unanswered (not a game given up meanwhile, counted as abandoned).
                    recorder.unanswered_s.append(recorder.waited(joining))
                    recorder.rejoining_at_end += 1
            recorder.unanswered_s += [recorder.waited(sent_at) for sent_at in sent.values()]

    def _given_up(self, error: grpc.aio.AioRpcError, resumes: int) -> bool:
        """Whether a stream that ``error`` ended is given up rather than resumed: the server did
        not go away, or the stream was resumed ``MAX_RESUMES`` times in a row. With every
        address passed over, it is tried in turn until one answers (the game's stall limit
        holds), not given up after a few."""
        every_down = len(self.stubs) > 1 and self.all_down()
        return not resumable(error) or (resumes >= MAX_RESUMES and not every_down)

    async def _spectate(self, game_id: str, number: int, info: Running) -> None:
        """A spectator screen (``--spectators``): the game's ``StreamEvents`` with the studio's
        token, batched, pushed the spectator's view and who is to act after each batch, until
        the game ends; resumed after its newest event when its server goes away."""
        recorder = self.recorder
        seen = resumes = 0
        # Whether its opening is timed: once, by the stream that brought its first state (one
        # that its server ended before that, a restart while it waited to be let in, is not).
        timed = False
        while True:
            recorder.calls["StreamEvents (spectator)"] += 1
            stub = self.stub(number, 0, resumes)
            request = service_pb2.StreamEventsRequest(
                game_id=game_id, after_version=seen, include=SPECTATOR_INCLUDE, batched=True
            )
            waits = resumes > 0 and len(self.stubs) == 1
            opened = time.perf_counter()
            call = stub.StreamEvents(request, metadata=self.studio, wait_for_ready=waits or None)
            # The first message catches the spectator up (the game goes on while its stream
            # waits to be let in): its events are timed as the stream's opening, the later
            # ones as how soon a move reaches a spectator.
            live = False
            try:
                async for response in call:
                    for event in response.batch.events:
                        seen = max(seen, event.version)
                        started = info.sent_at.get(event.version - 1)
                        if live and started is not None:
                            recorder.observe(
                                "command→event, spectators", time.perf_counter() - started
                            )
                    if not live:
                        live = True
                        if not timed:
                            timed = True
                            recorder.observe(
                                "StreamEvents (spectator) open→state",
                                time.perf_counter() - opened,
                            )
                    if response.batch.state.finished:
                        return
                return
            except grpc.aio.AioRpcError as error:
                if self._given_up(error, resumes):
                    recorder.error("StreamEvents (spectator)", error.code().name)
                    raise
                resumes += 1
                recorder.spectators_resumed += 1
                self.passed_over(stub, error)
            finally:
                call.cancel()

    async def _submit_move(
        self,
        request: service_pb2.SubmitCommandRequest,
        number: int,
        seat: int,
        token: str,
        progress: list[float],
    ) -> bool:
        """A browser seat's move (``--mode browser``): its SubmitCommand, sent again with the
        same command id (applied once) after UNAVAILABLE, at the next address if there are
        several, and after the delay a rate limit asks for (however often: it was not applied).
        Whether it was applied: a refusal (the game moved on, a time-out came first) leaves the
        seat to its next pushed state."""
        recorder = self.recorder
        attempt = 0
        while attempt < MAX_FAILURES:
            stub = self.stub(number, seat, attempt)
            try:
                await recorder.call(
                    "SubmitCommand",
                    stub.SubmitCommand(request, metadata=auth(token)),
                    move=True,
                    overtaken=bool(self.config.turn_time_ms),
                )
            except grpc.aio.AioRpcError as error:
                # The store away, the server going, or the seat over its rate: the same command
                # again (applied once) after the delay asked for.
                again_s = _again_after_s(error)
                if again_s is None:
                    return False
                if gone_away(error):
                    self.passed_over(stub, error)
                    attempt += 1
                await asyncio.sleep(again_s)
                continue
            recorder.moved(self.row_of(stub))
            progress[0] = time.monotonic()
            return True
        return False

    # -- submit mode --

    async def _submit_game(self, number: int, rng: random.Random) -> None:
        recorder = self.recorder
        created = await self._create(number)
        tokens = [t.token for t in created.tokens]
        idle = idle_seats(number, len(tokens), self.config.idle_seats, len(self.stubs))
        info = Running(tokens[0], created.version, self.stub(number))
        self.running[created.game_id] = info
        game_id = created.game_id
        try:
            recorder.setup_calls += 1
            # As every later look: an address that answers UNAVAILABLE is passed over.
            version, to_act, finished = await self._look(number, game_id, tokens, move=False)
            legal: list[service_pb2.LegalMove] = []
            legal_for: int | None = None
            failures = 0
            last_progress = time.monotonic()
            stub = self.stub(number)  # the acting seat's, once there is one
            while not finished:
                if time.monotonic() - last_progress > STALL_S:
                    raise Stalled(game_id)
                try:
                    if not to_act:  # a claim window: wait, then look again
                        await asyncio.sleep(0.05)
                        version, to_act, finished = await self._look(number, game_id, tokens)
                        legal_for = None
                        continue
                    chosen, wait = acting_seat(to_act, idle)
                    if chosen is None and wait:  # the turn clock plays the idle seats
                        await self._await_clock(number, game_id, tokens[0], version)
                        before = version
                        version, to_act, finished = await self._look(number, game_id, tokens)
                        info.version, legal_for = version, None
                        if version > before:  # the clock moved the game on
                            last_progress = time.monotonic()
                        continue
                    seat = to_act[0].seat if chosen is None else chosen
                    stub = self.stub(number, seat)
                    if seat != legal_for:
                        listed = await recorder.call(
                            "ListLegalMoves",
                            stub.ListLegalMoves(
                                service_pb2.ListLegalMovesRequest(game_id=game_id),
                                metadata=auth(tokens[seat]),
                            ),
                            move=True,
                        )
                        legal, version, legal_for = list(listed.moves), listed.version, seat
                    if not legal:
                        await asyncio.sleep(0.05)
                        version, to_act, finished = await self._look(number, game_id, tokens)
                        legal_for = None
                        continue
                    await think(self.config.think_ms, rng)
                    move = choose(legal, rng)
                    answer = await recorder.call(
                        "SubmitCommand",
                        stub.SubmitCommand(
                            service_pb2.SubmitCommandRequest(
                                game_id=game_id,
                                command_id=uuid.uuid4().hex,
                                expected_version=version,
                                command=move.command,
                                include=INCLUDE,
                            ),
                            metadata=auth(tokens[seat]),
                        ),
                        move=True,
                        overtaken=bool(self.config.turn_time_ms),
                    )
                except grpc.aio.AioRpcError as error:
                    # A command a time-out overtook is no failure: look again and play on.
                    clock_race = (
                        bool(self.config.turn_time_ms) and error.code() == grpc.StatusCode.ABORTED
                    )
                    # Nor is the store's being away (the game stalls past STALL_S if it lasts),
                    # nor the seat's being over its rate: again after the RetryInfo's delay.
                    again_s = _again_after_s(error)
                    failures = 0 if clock_race else failures + (again_s is None)
                    if failures >= MAX_FAILURES:
                        raise
                    if gone_away(error):
                        # At the next address, if there are several (this one may be down).
                        self.passed_over(stub, error)
                    if again_s is not None:
                        await asyncio.sleep(again_s)
                    version, to_act, finished = await self._look(number, game_id, tokens)
                    legal_for = None
                    continue
                failures = 0
                recorder.moved(self.row_of(stub))
                last_progress = time.monotonic()
                # The parts are as of state_version: past time-outs recorded after the command.
                version = answer.state_version or answer.version
                to_act, finished = list(answer.to_act), answer.finished
                legal, legal_for = list(answer.legal_moves), seat
                info.version = version
            recorder.games_finished += 1
            await self._check_clock(number, game_id, tokens[0], idle)
        finally:
            self.running.pop(game_id, None)

    async def _await_clock(self, number: int, game_id: str, token: str, version: int) -> None:
        """Wait, on one StreamEvents call, until the game moves past ``version``: only an idle
        seat is to act and the service's sweeper will record its time-out. Bounded by
        ``CLOCK_WAIT_S`` (the caller looks again and waits again: the game's stall limit holds)."""
        self.recorder.clock_waits += 1
        self.recorder.calls["StreamEvents (clock wait)"] += 1
        call = self.stub(number).StreamEvents(
            service_pb2.StreamEventsRequest(game_id=game_id, after_version=version),
            metadata=auth(token),
            timeout=CLOCK_WAIT_S,
        )
        try:
            # The call's own deadline, and ours: a call that never got going (seen once: stuck
            # in grpc.aio's send, past its deadline) must not hold the game.
            await asyncio.wait_for(call.read(), CLOCK_WAIT_S + 1)
        except grpc.aio.AioRpcError as error:
            if lost(error):  # the server stopping: the caller looks again, and waits again
                self.recorder.lost["StreamEvents (clock wait)"] += 1
            elif error.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                self.recorder.error("StreamEvents (clock wait)", error.code().name)
        except TimeoutError:
            self.recorder.error("StreamEvents (clock wait)", "CLIENT_TIMEOUT")
        finally:
            call.cancel()

    async def _check_clock(
        self, number: int, game_id: str, token: str, idle: frozenset[int]
    ) -> None:
        """On a clock: read the finished game's log for its time-outs (see :func:`check_clock`),
        and its final settlement for how it ended (a table nobody attended ends ABANDONED:
        bots slower than the clock, or a clock too short for them, show there)."""
        if not self.config.turn_time_ms:
            return
        replay = await self._asked(
            number,
            "GetReplay (clock check)",
            lambda stub: stub.GetReplay(
                service_pb2.GetReplayRequest(game_id=game_id), metadata=auth(token)
            ),
        )
        if replay is None:
            return
        found = check_clock(replay.events, idle)
        r = self.recorder
        r.lateness_ms += found.lateness_ms
        r.time_outs_of_playing_seats += found.of_playing_seats
        r.recorded_twice += found.recorded_twice
        r.tick_batches += found.tick_batches
        r.games_checked += 1
        final = await self._asked(
            number,
            "GetSettlement (clock check)",
            lambda stub: stub.GetSettlement(
                service_pb2.GetSettlementRequest(game_id=game_id, final=True),
                metadata=auth(token),
            ),
        )
        if final is not None:
            r.endings[final.settlement.outcome or "UNSPECIFIED"] += 1

    async def _asked(
        self,
        number: int,
        label: str,
        call: Callable[[service_pb2_grpc.GameServiceAsyncStub], Awaitable[T]],
    ) -> T | None:
        """A check's call about game ``number``: its answer, or ``None`` when it failed (counted
        as the check's error; the game itself finished, not abandoned). Its server gone
        (:func:`gone_away`: stopping before it let the call in, or stopped, UNAVAILABLE): asked
        again, at the next address if there are several, up to ``MAX_FAILURES`` times, as the
        bots' own calls are (a replica stopped during a run left its games' checks unmade)."""
        for attempt in range(MAX_FAILURES):
            stub = self.stub(number, attempt=attempt)
            try:
                return await self.recorder.call(label, call(stub))
            except grpc.aio.AioRpcError as error:
                if not gone_away(error):
                    return None
                self.passed_over(stub, error)
                await asyncio.sleep(UNAVAILABLE_RETRY_S)
        return None

    async def _look(
        self, number: int, game_id: str, tokens: list[str], move: bool = True
    ) -> tuple[int, list[service_pb2.SeatToAct], bool]:
        """Who is to act, and the version; while the server answers UNAVAILABLE (the store
        away) or is gone (:func:`gone_away`), asked again after the refusal's delay, up to the
        game's stall limit."""
        give_up_at = time.monotonic() + STALL_S
        while True:
            stub = self.stub(number)
            try:
                view = await self.recorder.call(
                    "GetView",
                    stub.GetView(
                        service_pb2.GetViewRequest(game_id=game_id), metadata=auth(tokens[0])
                    ),
                    move=move,
                )
            except grpc.aio.AioRpcError as error:
                if not gone_away(error) or time.monotonic() > give_up_at:
                    raise
                self.passed_over(stub, error)  # the next address, if there are several
                await asyncio.sleep(UNAVAILABLE_RETRY_S)
                continue
            return view.version, list(view.to_act), view.finished

    # -- extra streams --

    async def _watched_games(self) -> list[service_pb2.CreateGameResponse]:
        """The games the extra streams watch: created for them and never played (each stream a
        client connected to its quiet game), ``STREAMS_PER_WATCHED_GAME`` streams each."""
        count = -(-self.config.streams // STREAMS_PER_WATCHED_GAME)
        gate = asyncio.Semaphore(SETUP_CALLS_IN_FLIGHT)
        # Off the clock: nobody plays them, and on a clock time-outs would end them, and with
        # them their streams, before the run does.
        config = self.config
        quiet = game_request(config.game, config.seats, config.preset, config.rounds)

        async def create(number: int) -> service_pb2.CreateGameResponse:
            request = service_pb2.CreateGameRequest()
            request.CopyFrom(quiet)
            # Marked as the run's, as its played games are: nobody ends them (no clock, no
            # player), so an operator finds them by it on the server they are left on.
            request.request_id = f"{self.run_id}-streams-{number}"
            stub = self.stub(number)
            async with gate:
                try:
                    created: service_pb2.CreateGameResponse = await stub.CreateGame(
                        request, metadata=self.studio
                    )
                except grpc.aio.AioRpcError as error:
                    if error.code() in REFUSED_FOR_GOOD:
                        raise refused(error, self.config.addresses[self.row_of(stub)]) from None
                    raise LoadError(
                        f"CreateGame failed for the extra streams' games ({error.code().name}): "
                        f"{error.details()}"
                    ) from None
                return created

        return list(await asyncio.gather(*(create(n) for n in range(count))))

    async def _watch(
        self, index: int, game: service_pb2.CreateGameResponse, answered: asyncio.Event
    ) -> None:
        """One extra StreamEvents stream, on a watched game: open once the server has answered
        it (the game's first events), held until the run ends. The streams open at a steady
        pace (``STREAM_RAMP_PER_S``), as clients connect. Over gRPC, or (``streams_over``
        "connect") as a browser holds it: Connect over HTTP/1.1, on a connection of its own.
        A stream its server ended by going away (a shutdown: UNAVAILABLE) is resumed after its
        newest event, at the next address if there are several, as a client does; it fails only
        when refused otherwise, or ``MAX_RESUMES`` times in a row. One the server ended with OK
        is over (its game ended): not held any longer."""
        await asyncio.sleep(index / STREAM_RAMP_PER_S)
        token = game.tokens[index % len(game.tokens)].token
        self.streams_opened += 1
        seen = resumes = 0
        answered_once = reopened = False

        def answer() -> None:
            """The server answered this stream, or failed it, for the first time."""
            nonlocal answered_once
            if not answered_once:
                answered_once = True
                self._all_answered(answered)

        while not self.stopping.is_set():
            # Resumed from the event before its newest: the game is quiet, so that event again
            # is the server's answer that the stream is open (as its first events were).
            after = max(seen - 1, 0)
            request = service_pb2.StreamEventsRequest(game_id=game.game_id, after_version=after)
            events: AsyncIterable[service_pb2.StreamEventsResponse]
            stub = None
            if self._connect is not None:
                self.recorder.calls["StreamEvents (Connect)"] += 1
                events = self._connect.stream_events(
                    request, headers={"authorization": f"Bearer {token}"}
                )
            else:
                self.recorder.calls["StreamEvents"] += 1
                stub = self.stub(index, attempt=resumes)
                events = stub.StreamEvents(
                    request, metadata=auth(token), wait_for_ready=resumes > 0 or None
                )
            live = False  # this connection of it answered: counted among the open
            try:
                async for response in events:
                    seen = max(seen, response.event.version)
                    self.stream_events += 1
                    if not live:
                        live, resumes = True, 0
                        self.streams_open += 1
                        self.streams_opened_once = True
                        if reopened:  # back after its server ended it or went away
                            reopened = False
                            self.streams_resumed += 1
                    answer()
                # Ended by the server with OK: its game is over (a shutdown ends it UNAVAILABLE,
                # below, and is resumed). Nothing more will come: held no longer.
                self.streams_ended += 1
                return
            except (grpc.aio.AioRpcError, ConnectError) as error:
                if self.stopping.is_set():
                    return
                gone = (
                    error.code in CONNECT_GONE
                    if isinstance(error, ConnectError)
                    else resumable(error)
                )
                if not gone or resumes >= MAX_RESUMES:
                    self.streams_failed[_code_name(error)] += 1
                    said = error.message if isinstance(error, ConnectError) else error.details()
                    self.streams_last_error = said or ""
                    answer()
                    return
                if stub is not None and isinstance(error, grpc.aio.AioRpcError):
                    self.passed_over(stub, error)
            finally:
                if live:
                    self.streams_open -= 1
                if isinstance(events, grpc.aio.UnaryStreamCall):
                    events.cancel()
                elif isinstance(events, AsyncGenerator):  # a Connect stream: its connection closed
                    with contextlib.suppress(Exception):
                        await events.aclose()
            resumes += 1
            reopened = True
            self.stream_resume_attempts += 1
            await asyncio.sleep(_backoff_s(resumes - 1))

    def _all_answered(self, answered: asyncio.Event) -> None:
        """One more extra stream answered by the server (or failed): set ``answered`` once every
        one has been."""
        self.streams_answered += 1
        if self.streams_answered >= self.config.streams:
            answered.set()

    async def _open_streams(self) -> list[asyncio.Task[None]]:
        """The extra streams, open before the games start; returns once the server has answered
        every one (or ``STREAMS_OPEN_WAIT_S`` passed: the report says how many it answered)."""
        games = await self._watched_games()
        self.watched_games = len(games)
        answered = asyncio.Event()
        started = time.monotonic()
        watchers = [
            asyncio.create_task(self._watch(i, games[i // STREAMS_PER_WATCHED_GAME], answered))
            for i in range(self.config.streams)
        ]
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STREAMS_OPEN_WAIT_S):
                    await answered.wait()
        except BaseException:  # interrupted while they open: none may outlive its channel
            await _cancelled(watchers)
            raise
        self.streams_open_s = time.monotonic() - started
        self.streams_open_at_start = self.streams_open
        if self.streams_failed and not self.streams_opened_once:
            # Not one could be opened (no listener there, say): the run would measure nothing
            # it was asked to, for its whole length.
            await _cancelled(watchers)
            where = self.connect_url if self._connect is not None else "gRPC"
            raise LoadError(
                f"no extra stream could be opened ({where}): "
                f"{_counted(self.streams_failed)}; the last: {self.streams_last_error}"
            )
        return watchers

    async def _sample_streams(self) -> None:
        """The fewest streams open while the games are played, looked at four times a second."""
        while not self.stopping.is_set():
            low = self.streams_open_min
            self.streams_open_min = (
                self.streams_open if low is None else min(low, self.streams_open)
            )
            await asyncio.sleep(0.25)

    # -- progress --

    def _primary(self) -> str:
        return "Play command→accepted" if self.config.mode == "play" else "SubmitCommand"

    async def _progress(self, out: TextIO) -> None:
        tty = out.isatty()
        every = 1.0 if tty else 5.0
        shown_from = last_shown = since = time.monotonic()
        last_moves = 0  # the moves counted at ``since``, the rate's start
        # When the moves counted began: the games' start (0.0 until then), and again at the end
        # of a warm-up, which drops the moves counted so far.
        measured_from = self.started
        window: list[float] = []
        while True:
            await asyncio.sleep(1.0)
            window += self.recorder.window.pop(self._primary(), [])
            self.recorder.window.clear()
            now = time.monotonic()
            if self.started != measured_from:
                # The moves are counted from 0 again: the rate is of those since (after a
                # warm-up it was negative, the warm-up's moves taken off).
                measured_from = self.started
                last_moves, since = 0, max(since, self.started)
            # A line as often as ``every``, with half of it at least to count the rate over (not
            # 3 moves in 3 ms just after the counts restarted).
            if now - last_shown < every - 0.01 or (self.started and now - since < every / 2):
                continue
            if not self.started:
                # The extra streams still opening, no game yet: their count, not an elapsed
                # time and a "no move for" of the monotonic clock's (the machine's uptime).
                line = (
                    f"{now - shown_from:6.1f}s  opening the extra streams: "
                    f"{self.streams_open} of {self.config.streams} open"
                )
            else:
                rate = (self.recorder.moves - last_moves) / max(now - since, 1e-3)
                line = progress_line(
                    self.recorder, now - self.started, rate, window, len(self.running)
                )
                if self.config.warmup and not self.warmed_up:
                    line += "  (warm-up: not measured)"
                if self.config.streams:
                    line += f"  streams open {self.streams_open}"
            last_moves, since, last_shown = self.recorder.moves, now, now
            window = []
            if tty:
                out.write("\r\x1b[2K" + line)
            else:
                out.write(line + "\n")
            out.flush()

    # -- the run --

    async def run(self) -> None:
        config = self.config
        display = (
            asyncio.create_task(self._progress(config.progress))
            if config.progress is not None
            else None
        )
        watchers: list[asyncio.Task[None]] = []
        workers: list[asyncio.Task[None]] = []
        try:
            if config.streams:
                watchers = await self._open_streams()
                watchers.append(asyncio.create_task(self._sample_streams()))
            if self.watch is not None:
                self.watch.start()
                watchers.append(asyncio.create_task(self._watch_server(self.watch)))
            self.usage = Usage.start()
            self.started = time.monotonic()  # no seat has joined yet: their integral is 0
            workers = [asyncio.create_task(self._worker(i)) for i in range(self.in_flight())]
            if config.warmup:
                # Played, not measured: the games' start (every game created and joined at
                # once) is over, and with --think-ms their moves have fallen out of step.
                await asyncio.wait(workers, timeout=config.warmup)
                over = all(worker.done() for worker in workers)
                if config.games is not None and self.refused is None and over:
                    # Not the service's failure ("no move was made"): the options left nothing
                    # to measure.
                    raise LoadError(
                        f"the --games {config.games} were all over within the --warmup "
                        f"{config.warmup:g} s (in {time.monotonic() - self.started:.1f} s): "
                        "nothing was left to measure; ask for more --games, or a shorter "
                        "--warmup"
                    )
                self._measure_from_now()
            await self._played(workers, config.duration)
            self._stop_clock()
            self.streams_open_at_end = self.streams_open
            self.stopping.set()
        finally:
            self.stopping.set()
            if self.elapsed == 0.0 and self.started:
                self._stop_clock()
            if display is not None:
                display.cancel()
                await asyncio.gather(display, return_exceptions=True)
                if config.progress is not None and config.progress.isatty():
                    config.progress.write("\n")
            await _cancelled([*workers, *watchers])
            if self._connect is not None and self._http is not None:
                await self._connect.close()
                await self._http.aclose()  # the client leaves its transport to whoever made it

    async def _played(self, workers: list[asyncio.Task[None]], duration: float | None) -> None:
        """Until every worker is done, ``duration`` is over, or the server the tool started has
        exited (looked at every ``SAMPLE_S``)."""
        games = asyncio.ensure_future(asyncio.wait(workers))
        ended: list[asyncio.Future[Any]] = [games]
        if self.server_exited is not None:
            ended.append(asyncio.ensure_future(self._until_server_exited(self.server_exited)))
        try:
            await asyncio.wait(ended, timeout=duration, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await _cancelled(ended)

    @staticmethod
    async def _until_server_exited(exited: Callable[[], bool]) -> None:
        while not exited():
            await asyncio.sleep(SAMPLE_S)

    @staticmethod
    async def _watch_server(watch: ProcWatch) -> None:
        """A look at the server's CPU now and then: a process that ends keeps what it used."""
        while True:
            await asyncio.sleep(SAMPLE_S)
            watch.sample()

    def _measure_from_now(self) -> None:
        """The warm-up is over: the moves, calls, latencies, errors and CPU counted so far are
        dropped, and the run's time starts now. The games' own counts (started, finished) stay
        whole-run: a game started in the warm-up finishes in the measured time."""
        r = self.recorder
        r.latencies.clear()
        r.window.clear()
        r.errors.clear()
        # What the server said of the first of each error goes with the errors (a warm-up's
        # was printed under "errors 0"), and the slowest answer with the latencies (the start's
        # burst failed a run that its measured time passed).
        r.first_said.clear()
        r.slowest_answer = (0.0, "")
        r.lost.clear()
        r.calls.clear()
        r.moves = r.move_calls = 0
        r.joining(0)
        r.joining_seat_s = 0.0
        if self.watch is not None:
            self.watch.start()
        self.usage = Usage.start()
        self.started = time.monotonic()
        self.warmed_up = True

    def _stop_clock(self) -> None:
        """The run's length, and the seats' time waiting to join, up to now."""
        self.recorder.stopped_at = time.perf_counter()
        self.elapsed = time.monotonic() - self.started
        last = self.recorder.last_move_at
        self.quiet_s = (
            self.elapsed if last is None else min(time.perf_counter() - last, self.elapsed)
        )
        if self.usage is not None and not self.used:
            self.used = self.usage.stop(self.recorder.moves, "move")
        self.recorder.joining(0)
        self.joining_seat_s = self.recorder.joining_seat_s

    def report(self) -> dict[str, Any]:
        r = self.recorder
        elapsed = self.elapsed or 1e-9
        by_code: Counter[str] = Counter()
        for (_, code), n in r.errors.items():
            by_code[code] += n
        report: dict[str, Any] = {
            "mode": self.config.mode,
            "game": self.config.game,
            "seats": self.request.seats,
            "preset": self.config.preset,
            "addresses": self.config.addresses,
            "games_in_flight": self.in_flight(),
            "think_ms": self.config.think_ms,
            "warmup_s": self.config.warmup,
            # The rest of the run as asked, so that a report says how to run it again.
            "rounds": self.config.rounds,
            "duration_asked_s": self.config.duration,
            "games_asked": self.config.games,
            "channels": self.config.channels,
            "split_seats": self.split_seats,
            "seed": self.config.seed,
            "elapsed_s": round(elapsed, 3),
            "moves": r.moves,
            "moves_per_s": round(r.moves / elapsed, 2),
            # Each address's share of them (a replica left out, or one taking all, shows here).
            "moves_by_address": {
                address: r.moves_by_address[row]
                for row, address in enumerate(self.config.addresses)
            },
            "games_started": r.games_started,
            "games_finished": r.games_finished,
            "games_abandoned": r.games_abandoned,
            "games_cut_at_end": r.games_started - r.games_finished - r.games_abandoned,
            "creates_cut_at_end": r.creates_cut,
            # Unfinished when the run ended, on the server for good unless a turn clock ends
            # them (the extra streams' games are off the clock): those cut at the end, those the
            # bots gave up on (abandoned: still on the server) and the extra streams' games,
            # and at most those whose CreateGame was cut unanswered (made or not: an upper
            # bound). Their CreateGame request ids begin with the run's id.
            "run_id": self.run_id,
            "games_left_unfinished": (
                r.games_started - r.games_finished + self.watched_games + r.creates_cut
            ),
            # The seats' streams the bots joined again: Play, or StreamEvents in browser mode
            # (the old key, kept for the reports' readers, is the same count).
            "seat_streams_resumed": r.resumed,
            "play_streams_resumed": r.resumed,
            "spectators_per_game": self.config.spectators,
            "spectator_streams_resumed": r.spectators_resumed,
            "seats_rejoining_at_end": r.rejoining_at_end,
            "no_move_for_s_at_end": round(self.quiet_s, 3),
            "no_move_fails_after_s": max(QUIET_FAILS_S, QUIET_THINKS * self.config.think_ms / 1000),
            "unanswered_at_end": len(r.unanswered_s),
            "unanswered_oldest_s": round(max(r.unanswered_s), 3) if r.unanswered_s else None,
            "slowest_answer_s": round(r.slowest_answer[0], 3),
            "slowest_answer_of": r.slowest_answer[1],
            # Some moves, too few for their p99 to be one (no move at all fails the run).
            "too_short": 0 < r.moves < MOVES_FOR_A_P99,
            "calls_per_move": round(r.move_calls / r.moves, 4) if r.moves else None,
            "setup_calls_per_game": (
                round(r.setup_calls / r.games_started, 3) if r.games_started else None
            ),
            "calls": dict(r.calls),
            "latency": {kind: summarize(values) for kind, values in sorted(r.latencies.items())},
            "errors": dict(by_code),
            "errors_by_call": {f"{kind} {code}": n for (kind, code), n in r.errors.items()},
            # What the server said of the first of each (its reason and message).
            "errors_first_said": {
                f"{kind} {code}": said for (kind, code), said in r.first_said.items()
            },
            # Cancelled unanswered by a stopping server, sent again (applied once): not errors.
            "lost_calls_sent_again": dict(r.lost),
            # The addresses gone since the last move, each with its last error.
            "stopped_answering": self.stopped_answering(),
            # A CreateGame refused for good once games had been made with the same credential
            # and request (a replica set up with other keys, a server restarted with a new
            # development secret): the run stopped there and fails, its figures kept.
            "create_refused": str(refused(self.refused, self.refused_at)) if self.refused else "",
            **self.used,
        }
        if self.config.mode != "submit":  # the seats' streams, Play or StreamEvents
            report["seats_joining_avg"] = round(self.joining_seat_s / elapsed, 2)
        if self.config.turn_time_ms:
            # Lateness in ms: summarize takes seconds.
            lateness = summarize([ms / 1000 for ms in r.lateness_ms])
            report["clock"] = {
                "turn_time_ms": self.config.turn_time_ms,
                "idle_seats": self.config.idle_seats,
                "games_checked": r.games_checked,
                "endings": dict(sorted(r.endings.items())),
                "time_outs": len(r.lateness_ms),
                "time_outs_of_playing_seats": r.time_outs_of_playing_seats,
                "tick_batches": r.tick_batches,
                "recorded_twice": r.recorded_twice,
                "clock_waits": r.clock_waits,
                "commands_overtaken": r.overtaken,
                "lateness": lateness,
            }
        if self.config.streams:
            unary = [
                value
                for kind in ("CreateGame", "SubmitCommand", "ListLegalMoves", "GetView")
                for value in r.latencies.get(kind, [])
            ]
            report["streams"] = {
                "requested": self.config.streams,
                "over": self.config.streams_over,
                "open_at_start": self.streams_open_at_start,
                "open_s": round(self.streams_open_s, 3),
                "open_at_end": self.streams_open_at_end,
                "open_min": self.streams_open_min,
                "opened": self.streams_opened,
                "ended_by_server": self.streams_ended,
                "resumed": self.streams_resumed,
                "resume_attempts": self.stream_resume_attempts,
                "failed": dict(self.streams_failed),
                "events": self.stream_events,
                "unary_p99_ms": summarize(unary)["p99_ms"],
                "move_p99_ms": summarize(r.latencies.get(self._primary(), []))["p99_ms"],
            }
        return report


# --- the baseline --------------------------------------------------------------------------------


async def echo_baseline(
    concurrency: int, seats: int, duration: float, channels: int, progress: TextIO | None
) -> dict[str, Any]:
    """The bare grpc.aio echo server (:mod:`croupier.service.echo`), spawned, driven for
    ``duration`` each way: ``concurrency`` callers of the unary echo, then ``concurrency``
    tables of ``seats`` streams making moves as a game's Play streams do (the report's
    ``table``): what a call and what a move cost the transport, with no game behind them."""
    echo = await started(spawn_echo)
    rows = open_channels([f"127.0.0.1:{echo.port}"], channels)
    try:
        await wait_ready(rows, 10.0)
        if progress is not None:
            progress.write(f"baseline: echo server, calls then moves, {duration:.1f} s each …\n")
            progress.flush()
        report = await _echo_calls(rows[0], echo.pid, concurrency, duration)
        report["table"] = await _table_moves(rows[0], echo.pid, concurrency, seats, duration)
    finally:
        for row in rows:
            for channel in row:
                await channel.close()
        echo.stop()
    return report


async def _echo_calls(
    channels: list[grpc.aio.Channel], pid: int, concurrency: int, duration: float
) -> dict[str, Any]:
    """``concurrency`` callers of the unary echo, each calling again as its answer comes."""
    calls: list[grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]] = [
        c.unary_unary(ECHO_METHOD) for c in channels
    ]
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    stop_at = time.monotonic() + duration

    async def caller(index: int) -> None:
        call = calls[index % len(calls)]
        while time.monotonic() < stop_at:
            started = time.perf_counter()
            try:
                await call(ECHO_PAYLOAD)
            except grpc.aio.AioRpcError as error:
                errors[error.code().name] += 1
                continue
            latencies.append(time.perf_counter() - started)

    return await _watched(pid, [caller(i) for i in range(concurrency)], latencies, errors, "call")


async def _table_moves(
    channels: list[grpc.aio.Channel], pid: int, concurrency: int, seats: int, duration: float
) -> dict[str, Any]:
    """``concurrency`` tables of ``seats`` streams on the echo's ``Table`` method, each a game of
    ``TABLE_MOVES`` moves (then new streams, as a new game's seats join): the seats move in turn,
    each move one message in, its answer and a message to every seat out."""
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    stop_at = time.monotonic() + duration

    async def table(index: int) -> None:
        method: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = channels[
            index % len(channels)
        ].stream_stream(TABLE_METHOD)
        for number in range(sys.maxsize):
            if time.monotonic() >= stop_at:
                return
            streams = [method() for _ in range(seats)]
            try:
                for stream in streams:
                    await stream.write(f"{index}:{number}".encode())
                for stream in streams:
                    await stream.read()  # seated
                for move in range(TABLE_MOVES):
                    if time.monotonic() >= stop_at:
                        break
                    actor = streams[move % seats]
                    started = time.perf_counter()
                    await actor.write(TABLE_COMMAND)
                    for stream in streams:  # the actor: its answer and its batch
                        for _ in range(2 if stream is actor else 1):
                            await stream.read()
                    latencies.append(time.perf_counter() - started)
                for stream in streams:
                    await stream.done_writing()
                for stream in streams:
                    await stream.code()
            except grpc.aio.AioRpcError as error:
                errors[error.code().name] += 1
                return
            finally:
                for stream in streams:
                    stream.cancel()

    tables = [table(i) for i in range(concurrency)]
    return {"seats": seats, **await _watched(pid, tables, latencies, errors, "move")}


async def _watched(
    pid: int,
    runs: Sequence[Awaitable[None]],
    latencies: list[float],
    errors: Counter[str],
    unit: str,
) -> dict[str, Any]:
    """Run ``runs`` together, the echo server's CPU watched meanwhile; the report of what they
    counted: each ``unit`` (a call, a move) done, with its latency, and the errors."""
    watch = ProcWatch([pid])
    watch.start()
    usage = Usage.start()
    began = time.monotonic()
    await asyncio.gather(*runs)
    elapsed = time.monotonic() - began
    server = watch.stop()
    done = len(latencies)
    return {
        **usage.stop(done, unit),
        "elapsed_s": round(elapsed, 3),
        f"{unit}s": done,
        f"{unit}s_per_s": round(done / elapsed, 2),
        "latency": summarize(latencies),
        "errors": dict(errors),
        "server": {
            **server,
            f"cpu_ms_per_{unit}": round(server["cpu_s"] * 1000 / done, 4) if done else None,
        },
    }


# --- the whole run -------------------------------------------------------------------------------


def _measured(load: Load, watch: ProcWatch | None) -> dict[str, Any]:
    """The run's report, with the local server's CPU and memory when it is watched, and why the
    service failed the run if it did."""
    report = load.report()
    if watch is not None:
        server = watch.stop()
        moves = report["moves"]
        server["cpu_ms_per_move"] = round(server["cpu_s"] * 1000 / moves, 4) if moves else None
        if server["exited"]:
            # The moves made after it ended were another process's (a restarted server, another
            # replica), whose CPU was not read: the CPU over all the moves would be too low.
            server["cpu_ms_per_move"] = None
            server["cpu_partial"] = CPU_PARTIAL
        report["server"] = server
    others = others_share(report)
    if others is not None:
        report["machine"]["others"] = others
    report["failed"] = failures(report)
    return report


def failures(report: dict[str, Any]) -> list[str]:
    """Why the service failed the run (``croupier load`` then exits 1): no move was made, games
    were given up, no move came in the run's last seconds (a server gone or hung: its bots wait,
    failing no call), or a call waited past any healthy server's answer. Errors the bots got
    over (a refusal sent again, a stream resumed, an address passed over) and servers that
    ended while the others played on are counted in the report, not failures; an extra stream
    the server failed (``--streams``: refused, or not opened again after its server ended it)
    is one, and so is a CreateGame refused for good once games had been made (the run stopped
    there). A run a signal stopped is not judged."""
    if report.get("interrupted"):
        return []
    failed = []
    # Why the games waited, when their servers went away: each one's last error.
    gone = "".join(
        f"; {address} stopped answering (its last error {said})"
        for address, said in (report.get("stopped_answering") or {}).items()
    )
    if not report["moves"]:
        failed.append("no move was made" + gone)
    if report["games_abandoned"]:
        failed.append(
            f"{report['games_abandoned']} games given up by the bots (stalled, or failing)"
        )
    quiet, limit = report["no_move_for_s_at_end"], report["no_move_fails_after_s"]
    if report["moves"] and quiet > limit:
        failed.append(f"no move in the run's last {quiet:.1f} s" + gone)
    oldest = report["unanswered_oldest_s"]
    if oldest is not None and oldest > UNANSWERED_FAILS_S:
        failed.append(f"a call unanswered for {oldest} s at the end")
    slowest = report.get("slowest_answer_s") or 0.0
    if slowest > UNANSWERED_FAILS_S:
        failed.append(f"a call answered only after {slowest} s ({report['slowest_answer_of']})")
    if report.get("create_refused"):
        failed.append(
            f"{report['create_refused']}, after {report['games_started']} games made with the same "
            "credential and request: the run stopped there"
        )
    server = report.get("server") or {}
    if server.get("exit_status"):
        failed.append(f"the spawned server exited during the run ({server['exit_status']})")
    streams = report.get("streams") or {}
    if streams.get("failed"):
        failed.append(
            f"{sum(streams['failed'].values())} extra streams failed ({_counted(streams['failed'])})"
        )
    return failed


async def run(config: LoadConfig, partial: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Run the load as configured; returns the report (see :func:`summary`). Interrupted once
    the games have started, the report so far is put in ``partial`` before the cancellation goes
    on."""
    if config.mode not in MODES:
        raise ValueError(f"mode: one of {', '.join(MODES)}")
    if config.duration is None and config.games is None:
        config.duration = 10.0
    check_idle(config)
    with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):  # not main thread
        # SIGTERM ends the run as Ctrl-C does: what it started is stopped, its files removed.
        task = asyncio.current_task()
        if task is not None:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    spawned: Spawned | None = None
    report: dict[str, Any] | None = None
    scratch = scratch_folder()
    try:
        if config.spawn:
            store = config.store or f"sqlite:///{Path(scratch.name) / 'croupier.sqlite3'}"
            # The tool is the studio of the server it starts: the server verifies with the
            # studio secret (the caller's CROUPIER_STUDIO_SECRET, else one made up here) and the
            # tool signs its credential with it.
            # The spawned server is plaintext, whatever TLS the caller's environment gives a server.
            tls_settings = (CERT_ENV, KEY_ENV, CLIENT_CA_ENV)
            env = {k: v for k, v in os.environ.items() if k not in tls_settings}
            if not env.get(STUDIO_SECRET_ENV, "").strip():
                env[STUDIO_SECRET_ENV] = as_setting(secrets.token_bytes(MIN_SECRET_BYTES))
            ring = studio_keys(env).ring
            config.studio_key = mint_studio_token(ring.signing, int(time.time()) + SPAWN_TOKEN_S)
            log = Path(scratch.name) / "server.log"
            spawned = await started(
                functools.partial(
                    spawn_server,
                    store,
                    log,
                    config.server_workers,
                    env=env,
                    http=config.streams_over == "connect",
                )
            )
            config.addresses = [f"127.0.0.1:{spawned.port}"]
            if spawned.http_port:
                config.http_address = f"127.0.0.1:{spawned.http_port}"
            config.server_pids = [spawned.pid]
        if not config.addresses:
            raise LoadError("give --address (or --spawn)")
        if spawned is None:
            config.server_pids = servers_to_watch(config.addresses, config.server_pids)
        channels = open_channels(config.addresses, config.channels, config.tls)
        try:
            await wait_ready(channels, config.connect_timeout, config.addresses, config.tls)
            watch = ProcWatch(config.server_pids) if config.server_pids else None
            if watch is not None and (missing := watch.missing()):
                raise LoadError(f"no process {', '.join(map(str, missing))} (--server-pid)")
            load = Load(
                config,
                channels,
                watch,
                None if spawned is None else spawned.exited,
            )
            try:
                await load.run()
            except asyncio.CancelledError:  # Ctrl-C, SIGTERM: what was measured is kept
                # Once the games have started: before (the extra streams opening), nothing was
                # measured, and the run stops as it does before the server is up.
                if partial is not None and load.started:
                    stopped = _measured(load, watch)
                    if config.warmup and not load.warmed_up:
                        stopped["interrupted_during"] = IN_THE_WARMUP  # nothing measured yet
                    partial.append(stopped)
                raise
            if load.refused is not None and not load.recorder.games_started:
                # Refused from the first CreateGame: nothing was played, the reason is all.
                raise refused(load.refused, load.refused_at)
            report = _measured(load, watch)
            if partial is not None:  # a signal from here on (the baseline) keeps it, whole
                partial.append({**report, "interrupted_during": IN_THE_BASELINE})
        finally:
            for row in channels:
                for channel in row:
                    await channel.close()
        if spawned is not None:
            report["server"]["spawned"] = True
            report["server"]["workers"] = config.server_workers
            report["server"].update(exited_early(spawned))
            report["failed"] = failures(report)
    finally:
        if spawned is not None:
            spawned.stop()
            if report is not None and report["failed"] and spawned.log is not None:
                # Its INTERNAL errors' ids are looked up there: kept past the scratch folder.
                report["server"]["log"] = str(keep_log(spawned.log, config.server_log))
        scratch.cleanup()
    if config.baseline:
        baseline = await echo_baseline(
            config.games_in_flight,
            report["seats"],
            report["elapsed_s"],
            config.channels,
            config.progress,
        )
        report["baseline"] = baseline
        table = baseline["table"]
        per_move = report.get("server", {}).get("cpu_ms_per_move")
        report["ratios"] = {
            "commands_per_s_vs_echo_calls_per_s": _ratio(
                report["moves_per_s"], baseline["calls_per_s"], 4
            ),
            "cpu_per_move_vs_echo_cpu_per_call": _ratio(
                per_move, baseline["server"]["cpu_ms_per_call"], 2
            ),
            "moves_per_s_vs_bare_table_moves_per_s": _ratio(
                report["moves_per_s"], table["moves_per_s"], 4
            ),
            "cpu_per_move_vs_bare_table_cpu_per_move": _ratio(
                per_move, table["server"]["cpu_ms_per_move"], 2
            ),
        }
    return report


#: The last lines of a spawned server's log that the report shows when it exited by itself.
LOG_TAIL_LINES = 10


def exit_status(code: int) -> str:
    """A process's return code in words: its exit status, or the signal that killed it."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exit status {code}"


def exited_early(spawned: Spawned) -> dict[str, Any]:
    """For a spawned server that exited during the run (the tool had not stopped it yet): how
    (``exit_status``) and its log's last lines (``log_tail``); nothing for one still serving."""
    code = spawned.process.poll()
    if code is None:
        return {}
    tail = spawned.log.read_text(errors="replace").splitlines() if spawned.log else []
    return {"exit_status": exit_status(code), "log_tail": tail[-LOG_TAIL_LINES:]}


def keep_log(log: Path, where: str | None) -> Path:
    """A copy of the spawned server's ``log`` at ``where`` (else a file of the temp folder)."""
    if where is None:
        handle, name = tempfile.mkstemp(prefix="croupier-load-server-", suffix=".log")
        os.close(handle)
        where = name
    kept = Path(where)
    kept.write_bytes(log.read_bytes())
    return kept


async def _cancelled(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel ``tasks`` and wait until every one has ended (what each raised is dropped)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _ratio(numerator: float | None, denominator: float | None, digits: int) -> float | None:
    return round(numerator / denominator, digits) if numerator and denominator else None


def primary_call(report: dict[str, Any]) -> str:
    """The call that makes a move in the report's mode."""
    return "Play command→accepted" if report["mode"] == "play" else "SubmitCommand"


def _busy(run: dict[str, Any]) -> str:
    """How busy the machine was during a yardstick's run, as a clause for its line."""
    machine = run.get("machine")
    return f", the machine {machine['busy']:.0%} busy" if machine else ""


def _usage_lines(report: dict[str, Any]) -> list[str]:
    """The tool's own CPU and the machine's, and a word when the machine was the limit."""
    lines: list[str] = []
    client = report.get("client")
    if client:
        lines += [
            "",
            f"  load tool CPU        {client['cpu_s']:.2f} s{_per_move(client['cpu_ms_per_move'])}"
            " (the bots' side, this process)",
        ]
    machine = report.get("machine")
    others = machine.get("others") if machine else None
    if machine and others is not None and others >= OTHERS_NOTABLE:
        lines.append(
            f"  machine CPU          {machine['busy']:.0%} busy of {machine['cores']} cores, "
            f"{others:.0%} of the machine's CPU taken by other processes (neither the server "
            "nor the load tool: other work, or the server's database when it runs on this "
            "machine, whose CPU the server CPU above leaves out): "
            "the figures are not the server's alone; measure again on a quieter machine"
        )
    elif machine:
        lines.append(
            f"  machine CPU          {machine['busy']:.0%} busy of {machine['cores']} cores"
            + (
                (
                    ": the figures are the machine's limit (the server and the load tool share it)"
                    if report.get("server") or all(map(is_local, report.get("addresses", [""])))
                    else ": the load tool's machine is the limit (its bots), perhaps not the server"
                )
                if machine["busy"] >= MACHINE_SATURATED
                else ""
            )
        )
    return lines


def _from_start(server: dict[str, Any]) -> str:
    """The server's memory at the start of the measured time, as a clause (none when a process
    ended during the run: the survivors' memory is not comparable)."""
    start = server.get("vmrss_at_start_kb")
    return f" (from {start / 1024:.1f} at the start)" if start else ""


def _unchecked(report: dict[str, Any]) -> str:
    """The finished games whose logs the clock's check had not read when the run stopped."""
    unchecked = report["games_finished"] - report["clock"]["games_checked"]
    return (
        f" (of {report['games_finished']}: the run ended before {unchecked} were read)"
        if unchecked > 0
        else ""
    )


#: When a signal stopped a run (the report's ``interrupted_during``; none: while it measured).
#: In the warm-up, its figures are the warm-up's: the games' start, not measured.
IN_THE_WARMUP = "the warm-up"
#: After the games, measured whole.
IN_THE_BASELINE = "the baseline"


def _warmup_clause(report: dict[str, Any]) -> str:
    """The header's word on --warmup: measured after it, or stopped in it (the figures are then
    the warm-up's: it read "measured after 6 s" over 2.5 s of a 6 s warm-up)."""
    if not report.get("warmup_s"):
        return ""
    if report.get("interrupted_during") == IN_THE_WARMUP:
        return f", stopped in its {report['warmup_s']:g} s warm-up (not measured)"
    return f", measured after {report['warmup_s']:g} s"


#: The latency table's first column, at the least.
LATENCY_NAME_WIDTH = 24


def summary(report: dict[str, Any]) -> str:
    """The report as a readable table."""
    # The latency table's first column, as wide as its longest name.
    width = max([LATENCY_NAME_WIDTH, *(len(kind) + 1 for kind in report["latency"])])
    lines = [
        f"{report['game']} × {report['seats']} seats, mode {report['mode']}, "
        f"{report['games_in_flight']} game{'' if report['games_in_flight'] == 1 else 's'} in flight"
        + (f", {report['think_ms']} ms to think a move" if report.get("think_ms") else "")
        + _warmup_clause(report)
        + f", {report['elapsed_s']:.1f} s against {', '.join(report['addresses'])}",
        "",
        *(
            [
                f"  INTERRUPTED ({report['interrupted']}) during {IN_THE_BASELINE}:"
                " the games' figures are whole, the baseline's left out"
                if report.get("interrupted_during") == IN_THE_BASELINE
                else f"  INTERRUPTED ({report['interrupted']}) during {IN_THE_WARMUP}: nothing "
                "was measured yet; the figures are the warm-up's, the games' start among them"
                if report.get("interrupted_during") == IN_THE_WARMUP
                else f"  INTERRUPTED ({report['interrupted']}): the figures are of the run until then"
            ]
            if report.get("interrupted")
            else []
        ),
        *(
            [f"  FAILED: {'; '.join(report['failed'])}"]
            if report.get("failed") and not report.get("interrupted")
            else []
        ),
        *(
            [
                f"  TOO SHORT: {report['moves']} moves measured; a p99 needs {MOVES_FOR_A_P99}"
                " answers or more (of fewer it is their slowest): run longer (--duration, --games)"
            ]
            if report.get("too_short")
            else []
        ),
        f"  moves                {report['moves']}  ({report['moves_per_s']:.1f}/s)"
        + (
            " by address: " + ", ".join(f"{a} {n}" for a, n in report["moves_by_address"].items())
            if len(report.get("moves_by_address", {})) > 1
            else ""
        ),
        f"  games finished       {report['games_finished']}  (started {report['games_started']},"
        # "Given up": the bots' (a game that stalled or kept failing), not a game's outcome
        # ABANDONED, which a turn clock's "games ended" line counts.
        f" given up by the bots {report['games_abandoned']},"
        f" cut at the end {report['games_cut_at_end']}"
        # Unlike the moves: a game started in the warm-up finishes in the measured time.
        + ("; over the whole run, the warm-up included)" if report.get("warmup_s") else ")"),
        *(
            [
                f"  left unfinished      {report['games_left_unfinished']} games on the server"
                + (
                    f" (at most: {report['creates_cut_at_end']} of them CreateGame calls cut"
                    " unanswered, made or not)"
                    if report.get("creates_cut_at_end")
                    else ""
                )
                + (" (the cut ones end by the turn clock)" if report.get("clock") else "")
                + f"; their CreateGame request ids begin {report['run_id']}-"
            ]
            if report.get("games_left_unfinished")
            else []
        ),
        *(
            [
                f"  {'Play streams' if report['mode'] == 'play' else 'StreamEvents':<12} resumed "
                f"{report['seat_streams_resumed']}  (the seats' streams ended by the server or a "
                "lost connection, joined again after the newest event)"
            ]
            if report.get("seat_streams_resumed")
            else []
        ),
        f"  unanswered at end    {report['unanswered_at_end']}"
        + (
            f"  (calls and commands sent, not answered; the oldest {report['unanswered_oldest_s']} s)"
            + (
                f"; {report['seats_rejoining_at_end']} of them seats joining again"
                if report.get("seats_rejoining_at_end")
                else ""
            )
            if report["unanswered_at_end"]
            else ""
        ),
        f"  calls per move       {_shown(report['calls_per_move'], 'none: no move was made')}"
        + (
            f"  (+ {report['setup_calls_per_game']} per game to set up)"
            if report["setup_calls_per_game"] is not None
            else ""
        ),
        *(
            [
                f"  spectators           {report['spectators_per_game']} a game  (each a "
                "StreamEvents with the studio's token, not counted in the calls above; "
                f"{report['calls'].get('StreamEvents (spectator)', 0)} opened, "
                f"{report['spectator_streams_resumed']} resumed)"
            ]
            if report.get("spectators_per_game")
            else []
        ),
        *(
            [
                f"  seats joining        {report['seats_joining_avg']} on average (their "
                f"{'Play' if report['mode'] == 'play' else 'StreamEvents'} streams opened and "
                "waiting for their first state)"
            ]
            if "seats_joining_avg" in report
            else []
        ),
        *(
            [
                f"  calls sent again     {sum(report['lost_calls_sent_again'].values())}  ("
                + _counted(report["lost_calls_sent_again"])
                + "; cancelled unanswered by a server stopping: sent again with the same id, "
                "applied once)"
            ]
            if report.get("lost_calls_sent_again")
            else []
        ),
        f"  errors               {sum(report['errors'].values())}"
        + ("  (" + _counted(report["errors_by_call"]) + ")" if report["errors"] else ""),
        *(
            f"    first {call}: {said}"
            for call, said in sorted(report.get("errors_first_said", {}).items())
        ),
        "",
        f"  {'latency (ms)':<{width}}{'count':>8}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}",
    ]
    for kind, s in report["latency"].items():
        lines.append(
            f"  {kind:<{width}}{s['count']:>8}{s['p50_ms']:>9.2f}{s['p95_ms']:>9.2f}"
            f"{s['p99_ms']:>9.2f}{s['max_ms']:>9.2f}"
        )
    server = report.get("server")
    if server:
        measured = len(server["pids"]) - len(server.get("exited", []))
        summed = f" (the sum of {measured} processes)" if measured > 1 else ""
        lines += [
            "",
            f"  server pids          {' '.join(map(str, server['pids']))}",
            f"  server CPU           {server['cpu_s']:.2f} s"
            + (
                f" (server CPU partial: {server['cpu_partial']}; no figure per move)"
                if server.get("cpu_partial")
                else _per_move(server["cpu_ms_per_move"])
            ),
            "  server memory        "
            + (
                f"VmRSS {server['vmrss_kb'] / 1024:.1f} MiB{_from_start(server)}, "
                f"VmHWM {server['vmhwm_kb'] / 1024:.1f} MiB{summed}"
                if server["vmrss_kb"] is not None
                else "not measured: every server process had ended"
            ),
        ]
        if server.get("exited"):
            others = ", memory of the others only" if measured else ""
            lines.append(
                f"  server pids exited   {' '.join(map(str, server['exited']))} during the run: "
                f"CPU counted to the last look (every {SAMPLE_S:g} s){others}"
            )
        if server.get("exit_status"):
            lines.append(
                f"  spawned server       exited during the run ({server['exit_status']}); "
                "its log's last lines:"
            )
            lines += [f"    {line}" for line in server.get("log_tail", [])]
        if server.get("log"):
            lines.append(f"  server log           kept at {server['log']} (the run failed)")
    lines += _usage_lines(report)
    clock = report.get("clock")
    if clock:
        late = clock["lateness"]
        lines += [
            "",
            f"  turn clock           {clock['turn_time_ms']} ms a turn, {clock['idle_seats']} idle "
            f"seat(s) a game; {clock['time_outs']} time-outs in {clock['games_checked']} finished "
            f"games{_unchecked(report)} ({clock['time_outs_of_playing_seats']} of playing seats), "
            f"{clock['tick_batches']} batches made due by time",
            (
                f"  time-out latency     recorded after the deadline: p50 {late['p50_ms']:.0f} ms, "
                f"p99 {late['p99_ms']:.0f} ms, max {late['max_ms']:.0f} ms"
                if clock["time_outs"]
                else "  time-out latency     none: no turn timed out"
            ),
            f"  games ended          {_counted(clock.get('endings', {})) or 'none checked'}"
            + (f" ({ABANDONED_HINT})" if clock.get("endings", {}).get(ABANDONED) else ""),
            f"  recorded twice       {clock['recorded_twice']}",
            f"  overtaken commands   {clock['commands_overtaken']} (ABORTED: a time-out that was "
            "due was recorded first)",
        ]
    streams = report.get("streams")
    if streams:
        lines += [
            "",
            f"  extra streams        {streams['open_at_start']} of {streams['requested']}"
            + (" (Connect over HTTP/1.1)" if streams.get("over") == "connect" else "")
            + " answered "
            f"by the server in {streams['open_s']:.1f} s before the games began; while they were "
            f"played, {streams['open_min']} open at the fewest, {streams['open_at_end']} at the end;"
            f" resumed {streams.get('resumed', 0)} (their server ended them or went away; "
            f"{streams.get('resume_attempts', 0)} attempts),"
            f" failed {_counted(streams['failed']) or 0}",
            f"  p99 meanwhile        unary calls {streams['unary_p99_ms']:.2f} ms, "
            f"moves ({primary_call(report)}) {streams['move_p99_ms']:.2f} ms",
        ]
    baseline = report.get("baseline")
    if baseline:
        ratios = report["ratios"]
        partial = (report.get("server") or {}).get("cpu_partial")
        unmeasured = (
            f"not measured: server CPU partial ({partial})"
            if partial
            else "not measured: the server's CPU is measured when it is local (--spawn, --server-pid)"
        )
        lines += [
            "",
            f"  echo baseline        {baseline['calls']} calls ({baseline['calls_per_s']:.1f}/s),"
            f" p50 {baseline['latency']['p50_ms']:.2f} ms, p99 {baseline['latency']['p99_ms']:.2f}"
            f" ms, CPU {baseline['server']['cpu_ms_per_call']} ms per call (the client's "
            f"{baseline['client']['cpu_ms_per_call']}){_busy(baseline)}",
            "  commands/s ÷ echo calls/s          "
            f"{_shown(ratios['commands_per_s_vs_echo_calls_per_s'])}",
            "  CPU per move ÷ echo CPU per call   "
            + _shown(
                ratios["cpu_per_move_vs_echo_cpu_per_call"],
                unmeasured,
            ),
        ]
        table = baseline["table"]
        lines += [
            f"  bare table moves     {table['moves']} moves ({table['moves_per_s']:.1f}/s) at "
            f"{table['seats']} seats, p99 {table['latency']['p99_ms']:.2f} ms, CPU "
            f"{table['server']['cpu_ms_per_move']} ms per move (the transport's part of a move; "
            f"the client's {table['client']['cpu_ms_per_move']}){_busy(table)}",
            "  moves/s ÷ bare table moves/s       "
            f"{_shown(ratios['moves_per_s_vs_bare_table_moves_per_s'])}",
            "  CPU per move ÷ bare table CPU per move   "
            + _shown(
                ratios["cpu_per_move_vs_bare_table_cpu_per_move"],
                unmeasured,
            ),
        ]
    return "\n".join(lines)


def _counted(by_code: Mapping[str, int]) -> str:
    """Counts by status code (or by call) as the report prints them: ``UNAVAILABLE: 50, …``."""
    return ", ".join(f"{code}: {n}" for code, n in sorted(by_code.items()))


def _per_move(ms: float | None) -> str:
    """A CPU time's share per move, as a clause: none when no move was made."""
    return f", {ms} ms per move" if ms is not None else ", no move made"


def _shown(value: object, missing: str = "n/a") -> str:
    """A figure of the report as printed: ``missing`` says why when there is none."""
    return missing if value is None else str(value)


def write_json(report: dict[str, Any], path: str) -> None:
    Path(path).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main(config: LoadConfig) -> dict[str, Any]:
    """Run from synchronous code (the CLI). The tool's own process collects its garbage as the
    server does (:mod:`croupier.service.collector`): holding ``--streams`` it has as many objects,
    and its full collections' pauses would be counted against the server's latency."""
    collector = Collector()
    collector.install()
    partial: list[dict[str, Any]] = []

    async def collected() -> dict[str, Any]:
        # Its thaws are not logged: the tool's output is its progress and report.
        maintaining = asyncio.create_task(collector.maintain(announce=False))
        try:
            return await run(config, partial)
        finally:
            maintaining.cancel()

    try:
        return asyncio.run(collected())
    except (KeyboardInterrupt, asyncio.CancelledError) as stopped:
        # asyncio.run: KeyboardInterrupt for Ctrl-C; SIGTERM cancels the run itself.
        signal_name = "SIGINT" if isinstance(stopped, KeyboardInterrupt) else "SIGTERM"
        if not partial:
            raise StoppedEarly(signal_name) from None
        stopped_run = {**partial[0], "interrupted": signal_name}
        return {**stopped_run, "failed": failures(stopped_run)}
    finally:
        collector.uninstall()


__all__ = [
    "CredentialRefused",
    "LoadConfig",
    "LoadError",
    "Recorder",
    "RequestRefused",
    "StoppedEarly",
    "main",
    "percentile",
    "run",
    "summary",
    "write_json",
]
