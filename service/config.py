"""Settings from the command line or the environment (``CROUPIER_*``), and the credentials the
server and the tools use (``docs/credentials.md``)."""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from croupier.app.tokens import (
    HEX_PREFIX,
    MIN_SECRET_BYTES,
    KeyRing,
    SecretError,
    mint_studio_token,
    parse_secret,
)

if TYPE_CHECKING:
    from croupier.replays.signing import ReplayKeys

DEFAULT_ADDRESS = "127.0.0.1:50051"
ADDRESS_ENV = "CROUPIER_ADDRESS"
#: The HTTP listener (Connect, gRPC-Web, JSON: service/http.py); empty or "off" turns it off.
DEFAULT_HTTP_ADDRESS = "127.0.0.1:8080"
HTTP_ADDRESS_ENV = "CROUPIER_HTTP_ADDRESS"
#: Browser origins allowed to call the HTTP listener (comma-separated, "*" for any). None by
#: default: a page the listener serves itself (at /) is same-origin and needs none, and a page
#: elsewhere gets the service only where its operator says so.
CORS_ORIGINS_ENV = "CROUPIER_CORS_ORIGINS"
#: The most HTTP connections one client address holds at once on a process (0: no limit;
#: service/http_limits.py), so that one machine cannot take the whole listener: 15,100 connections
#: from one, each sent a byte every 20 s, refused every browser. A browser holds up to six to a
#: site over HTTP/1.1 (a playing tab two: its game's stream and its calls), and people behind one
#: NAT (an office, a school, a mobile carrier's) share an address: 256 is some forty browsers at
#: their most, or a hundred tabs at a table. Behind a proxy on another machine every connection
#: is the proxy's: set 0 there, and limit each client address in the proxy.
DEFAULT_HTTP_PER_ADDRESS = 256
HTTP_PER_ADDRESS_ENV = "CROUPIER_HTTP_CONNECTIONS_PER_ADDRESS"
#: gRPC servers per process sharing its port (``serve --listeners``). grpc.aio takes a server's
#: new calls one at a time per method, a few turns of the event loop each: on a busy loop, new
#: streams (a game's seats joining) queue there while the games in play go on. Each listener is
#: another such queue; the kernel hands each new connection to one of them. That shares the port
#: (SO_REUSEPORT), as ``--workers`` does, so it is asked for, never the default: a plain ``serve``
#: owns its port, and another server started there later fails.
DEFAULT_LISTENERS = 1
LISTENERS_ENV = "CROUPIER_LISTENERS"
DATA_DIR = Path("data")
#: The highest TCP port.
MAX_PORT = 65_535
DEFAULT_STORE = f"sqlite:///{DATA_DIR / 'croupier.sqlite3'}"

# Croupier's own keys: the first signs seat tokens and snapshot seals; the previous ones still
# verify (a rotation: the new key goes in SECRET, the old one moves to PREVIOUS_SECRETS).
SECRET_ENV = "CROUPIER_SECRET"
PREVIOUS_SECRETS_ENV = "CROUPIER_PREVIOUS_SECRETS"
# The studio's keys: Croupier only verifies with them (studio tokens, player tokens); the studio's
# backend and `croupier token` sign with the first.
STUDIO_SECRET_ENV = "CROUPIER_STUDIO_SECRET"
STUDIO_PREVIOUS_SECRETS_ENV = "CROUPIER_STUDIO_PREVIOUS_SECRETS"
# The tools' studio credential (a studio token, not the secret).
STUDIO_KEY_ENV = "CROUPIER_STUDIO_KEY"
# The replay key (docs/replay-format.md, "Signed files"): a PEM file of the Ed25519 key the
# service signs exported replays with; the public keys of those it signed with before a rotation.
REPLAY_KEY_FILE_ENV = "CROUPIER_REPLAY_KEY_FILE"
REPLAY_PREVIOUS_KEYS_ENV = "CROUPIER_REPLAY_PREVIOUS_KEYS"

#: Where a server without a studio secret writes the development credential, beside its SQLite
#: file (``data/`` for the default store and for PostgreSQL); local tools read it from here.
DEV_CREDENTIAL_NAME = "dev-studio-credential"
DEFAULT_DEV_CREDENTIAL = DATA_DIR / DEV_CREDENTIAL_NAME
#: The development credential's life: its secret dies with the server anyway.
DEV_CREDENTIAL_TTL_S = 30 * 24 * 3600
#: A studio token the tools mint from CROUPIER_STUDIO_SECRET lives this long (a run of `load`).
TOOL_TOKEN_TTL_S = 24 * 3600
PRIVATE_FILE_MODE = 0o600


class ConfigError(ValueError):
    """A setting that cannot be used: the message is one line saying what and how to fix it."""


@dataclass(frozen=True)
class Keys:
    ring: KeyRing
    #: Made up for this run (nothing configured): what it signs dies with the process.
    generated: bool


def env_default(name: str, default: object) -> Callable[[], str]:
    """An option's default from the environment variable ``name`` (unset or empty:
    ``default``), as text: the option's own type reads it, and an
    :class:`~croupier.service.options.EnvOption` says which variable a bad value came from."""
    return lambda: os.environ.get(name) or str(default)


def _keys(env: Mapping[str, str], name: str, previous_name: str) -> Keys:
    configured = env.get(name, "").strip()
    previous = [p.strip() for p in env.get(previous_name, "").split(",") if p.strip()]
    if not configured:
        if previous:
            raise ConfigError(f"{previous_name} verifies only: set {name} (the signing key) too")
        return Keys(KeyRing(secrets.token_bytes(MIN_SECRET_BYTES)), True)
    try:
        signing = parse_secret(configured)
    except SecretError as error:
        raise ConfigError(f"{name}: {error}") from None
    older = []
    for number, text in enumerate(previous, 1):
        try:
            older.append(parse_secret(text))
        except SecretError as error:
            raise ConfigError(f"{previous_name} (entry {number}): {error}") from None
    return Keys(KeyRing.of(signing, older), False)


def token_keys(env: Mapping[str, str] | None = None) -> Keys:
    """Croupier's keys (``CROUPIER_SECRET``, ``CROUPIER_PREVIOUS_SECRETS``), else a fresh
    development key."""
    return _keys(os.environ if env is None else env, SECRET_ENV, PREVIOUS_SECRETS_ENV)


def studio_keys(env: Mapping[str, str] | None = None) -> Keys:
    """The studio's keys (``CROUPIER_STUDIO_SECRET``, ``CROUPIER_STUDIO_PREVIOUS_SECRETS``), else
    a fresh development key whose credential only the local machine gets
    (:func:`write_dev_credential`)."""
    return _keys(os.environ if env is None else env, STUDIO_SECRET_ENV, STUDIO_PREVIOUS_SECRETS_ENV)


def replay_keys(env: Mapping[str, str] | None = None) -> ReplayKeys:
    """The replay keys (``CROUPIER_REPLAY_KEY_FILE``, ``CROUPIER_REPLAY_PREVIOUS_KEYS``); none
    set: exports go out unsigned."""
    # Here, not above: only the commands that sign or verify replays load the crypto library.
    from croupier.replays.signing import (
        ReplayKeyError,
        ReplayKeys,
        load_private_key,
        parse_public_key,
    )

    env = os.environ if env is None else env
    path = env.get(REPLAY_KEY_FILE_ENV, "").strip()
    try:
        signing = load_private_key(path) if path else None
    except ReplayKeyError as error:
        raise ConfigError(f"{REPLAY_KEY_FILE_ENV}: {error}") from None
    previous = []
    for number, text in enumerate(
        (t for t in env.get(REPLAY_PREVIOUS_KEYS_ENV, "").split(",") if t.strip()), 1
    ):
        try:
            previous.append(parse_public_key(text))
        except ReplayKeyError as error:
            raise ConfigError(f"{REPLAY_PREVIOUS_KEYS_ENV} (entry {number}): {error}") from None
    return ReplayKeys(signing, tuple(previous))


def as_setting(secret: bytes) -> str:
    """A secret as CROUPIER_SECRET takes it (to hand a generated one to worker processes)."""
    return HEX_PREFIX + secret.hex()


def dev_credential_path(store_url: str) -> Path:
    """Beside the SQLite file of ``store_url``; ``data/`` for any other store."""
    if store_url.startswith("sqlite:///"):
        return Path(store_url.removeprefix("sqlite:///")).parent / DEV_CREDENTIAL_NAME
    return DEFAULT_DEV_CREDENTIAL


@dataclass(frozen=True)
class DevCredential:
    """Where this server's development credential is, and the lock that says a live server
    holds it (kept open for the process's life: the kernel lets go of it when the process ends,
    however it ends)."""

    path: Path
    lock_fd: int
    #: The server that held the usual path (``dev_credential_path``), when this one took another.
    holder: str | None = None


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


def _try_lock(path: Path) -> int | None:
    """The lock on ``path``'s credential, with this process's pid written in it; ``None`` while
    another live process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(_lock_path(path), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def port_named(path: Path, port: int) -> Path:
    """The credential a second server on ``port`` writes beside ``path``, which another holds."""
    return path.with_name(f"{path.name}-{port}")


def claim_dev_credential(path: Path, port: int) -> DevCredential:
    """The file a server without a studio secret writes its development credential to: ``path``,
    unless another live server holds it (a second ``serve`` from the same folder, on another
    store or port). Then ``path`` stays that server's (its tools keep working) and this one
    writes beside it, named by its gRPC port (``dev-studio-credential-50191``)."""
    fd = _try_lock(path)
    if fd is not None:
        return DevCredential(path, fd)
    holder = None
    with contextlib.suppress(OSError):
        holder = _lock_path(path).read_text().strip() or None
    own = port_named(path, port)
    fd = _try_lock(own)
    if fd is None:  # the kernel drops a lock with its process: this one's holder is alive
        raise OSError(f"{own} is held by another live server")
    return DevCredential(own, fd, holder=f"pid {holder}" if holder else "another server")


def write_dev_credential(path: Path, studio: KeyRing, now_s: int | None = None) -> None:
    """A studio token for the development key, readable by this user only (mode 0600), written
    whole (to a private temporary file, then renamed) so that a reader never sees half of it.
    The temporary file is new (O_EXCL, never through a symbolic link): a store in a shared
    directory such as /tmp cannot be made to write it elsewhere."""
    now_s = int(time.time()) if now_s is None else now_s
    token = mint_studio_token(studio.signing, now_s + DEV_CREDENTIAL_TTL_S)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(scratch, flags, PRIVATE_FILE_MODE)
    try:
        os.write(fd, f"{token}\n".encode())
    finally:
        os.close(fd)
    os.replace(scratch, path)


def is_local(address: str) -> bool:
    """Whether ``address`` (``HOST:PORT``, or a bare host) is on this machine: ``localhost`` or
    a loopback IP address (``127.0.0.0/8``, ``::1``)."""
    # The whole of it as a bare host (``::1`` included), else the part before the port.
    for candidate in (address, address.rpartition(":")[0]):
        host = candidate.strip("[]")
        if host == "localhost":
            return True
        with contextlib.suppress(ValueError):
            return ipaddress.ip_address(host).is_loopback
    return False  # a name: only "localhost" is sure to be this machine


def takes_dev_credential(
    given: str | None, key_file: Path | None = None, env: Mapping[str, str] | None = None
) -> bool:
    """Whether :func:`studio_credential` is left with a local server's development credential:
    no credential given, no key file, no ``CROUPIER_STUDIO_SECRET`` (a refusal of it is then
    worth a word on where that file comes from)."""
    env = os.environ if env is None else env
    return not (
        (given and given.strip()) or key_file is not None or env.get(STUDIO_SECRET_ENV, "").strip()
    )


#: What a header's value may carry (gRPC's ASCII metadata, HTTP's field values): printable
#: ASCII, the space included. A credential sent as ``authorization: Bearer …`` must hold only it.
HEADER_CHARACTERS = frozenset(map(chr, range(0x20, 0x7F)))


def header_safe(credential: str, source: str) -> str:
    """``credential`` (from ``source``: the option or file it came from), once checked to hold
    only characters a header may carry; else one line saying so (gRPC would refuse each call,
    INTERNAL "Invalid metadata", with a log line of its core's for every one)."""
    wrong = next((c for c in credential if c not in HEADER_CHARACTERS), None)
    if wrong is not None:
        raise ConfigError(
            f"the studio credential from {source} holds a character a header may not carry "
            f"({wrong!r}, at {credential.index(wrong)}): a credential is one line of printable "
            "ASCII (a token from `croupier token studio`)"
        )
    return credential


def studio_credential(
    given: str | None,
    addresses: list[str],
    key_file: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """The studio credential a tool sends with CreateGame, the first of: ``given``
    (``--studio-key`` or ``CROUPIER_STUDIO_KEY``); ``key_file`` (``--studio-key-file``); one
    minted from ``CROUPIER_STUDIO_SECRET``; and, when every server is local, the development
    credential a local server wrote (a remote server never gets it). A credential that could
    not be sent as a header (:func:`header_safe`) is refused, naming where it came from."""
    env = os.environ if env is None else env
    if not takes_dev_credential(given, key_file, env):
        if given and given.strip():
            return header_safe(given.strip(), f"--studio-key (or {STUDIO_KEY_ENV})")
        if key_file is not None:
            try:
                text = key_file.read_text().strip()
            except (OSError, UnicodeDecodeError) as error:
                raise ConfigError(f"--studio-key-file: cannot read {key_file}: {error}") from None
            return header_safe(text, f"--studio-key-file {key_file}")
        ring = studio_keys(env).ring
        return mint_studio_token(ring.signing, int(time.time()) + TOOL_TOKEN_TTL_S)
    local = all(is_local(a) for a in addresses)
    if local:
        try:
            text = DEFAULT_DEV_CREDENTIAL.read_text().strip()
        except (OSError, UnicodeDecodeError):
            pass
        else:
            return header_safe(text, str(DEFAULT_DEV_CREDENTIAL))
    # With `make run` serving, the usual cause is a tool run from another folder: the path is
    # relative to the working directory, so the whole one it looked at says which.
    looked = (
        f"; there is none at {DEFAULT_DEV_CREDENTIAL.resolve()}: run the tool from the folder "
        "the server started in"
        if local
        else ""
    )
    raise ConfigError(
        "the studio's calls (CreateGame, EndGame) need the studio's credential: pass --studio-key "
        f"(or set {STUDIO_KEY_ENV}) to a token from `croupier token studio`, set {STUDIO_SECRET_ENV}, "
        f"or run a local development server (make run), which writes {DEFAULT_DEV_CREDENTIAL} "
        "(a server with its --store elsewhere writes its dev-studio-credential beside its SQLite "
        f"file, as its start-up warning says: pass that with --studio-key-file){looked}"
    )


def port_named_dev_credentials(addresses: Sequence[str]) -> list[Path]:
    """The development credentials beside the usual one named by the port of one of the local
    ``addresses``: a second server started from this folder writes its own so
    (:func:`claim_dev_credential`), and a tool that read the usual file sent it the first one's."""
    ports = sorted({port for a in addresses if is_local(a) and (port := port_of(a)) is not None})
    named = (port_named(DEFAULT_DEV_CREDENTIAL, port) for port in ports)
    return [path for path in named if path.is_file()]


def port_of(address: str) -> int | None:
    """The port of ``HOST:PORT`` (or of a URL that ends in one), or ``None`` when it has none:
    ASCII digits, 0 to :data:`MAX_PORT`."""
    text = address.rpartition(":")[2]
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_PORT:
        return None
    return int(text)


def dialable(address: str) -> bool:
    """Whether a client can dial ``address``: ``HOST:PORT`` with a host (a server may listen on
    ``:PORT``, every interface; a client must name the machine) and a port (:func:`port_of`)."""
    host = address.rpartition(":")[0].strip("[]")
    return bool(host.strip()) and port_of(address) is not None
