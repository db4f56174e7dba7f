"""TLS for the server (``serve --tls-cert/--tls-key``, ``--tls-client-ca`` for mutual TLS) and
for the tools that call it (``demo``, ``load``: ``--tls-ca``, ``--tls-cert/--tls-key``,
``--tls-server-name``); ``docs/operations.md`` ("TLS") tells an operator how.

The files are read and checked here, before gRPC sees them: gRPC would take a key that does not
match its certificate, or a file that is not PEM, and fail later with a handshake error nobody
can place. Every problem is a :class:`~croupier.service.config.ConfigError` of one line naming
the setting and the file.
"""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click
import grpc

from croupier.service.config import ConfigError, port_of
from croupier.service.options import EnvOption

# The server's settings (the flags' environment variables).
CERT_ENV = "CROUPIER_TLS_CERT"
KEY_ENV = "CROUPIER_TLS_KEY"
CLIENT_CA_ENV = "CROUPIER_TLS_CLIENT_CA"
#: gRPC's channel option that checks the server's certificate against another name than the
#: address's host (a server reached by IP, or through a tunnel).
SERVER_NAME_OPTION = "grpc.ssl_target_name_override"

F = TypeVar("F", bound=Callable[..., Any])
_PATH = click.Path(dir_okay=False, path_type=Path)


def _read(path: Path, setting: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"{setting}: cannot read {path}: {error.strerror or error}") from None
    if b"-----BEGIN " not in data:
        raise ConfigError(f"{setting}: {path} is not a PEM file (-----BEGIN … -----)")
    return data


def _check_pair(cert: Path, key: Path, cert_setting: str, key_setting: str) -> None:
    """The key is the certificate's (the standard library's TLS parses both, as gRPC will)."""
    try:
        # No password: an encrypted key fails here rather than prompting on the terminal (gRPC
        # takes only unencrypted keys).
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(cert, key, password=b"")
    except ssl.SSLError as error:
        why = error.reason or error.library or str(error)
        if why == "KEY_VALUES_MISMATCH":
            raise ConfigError(
                f"{key_setting}: {key} is not the private key of the certificate in {cert}"
            ) from None
        raise ConfigError(
            f"{cert_setting}/{key_setting}: {cert} and {key} are not a PEM certificate and its "
            f"unencrypted private key ({why})"
        ) from None


def _check_not_expired(chain: bytes, cert: Path, cert_setting: str) -> None:
    """The leaf certificate is still valid: an expired one starts a server every client's
    handshake then fails against ("certificate has expired"), while the server logs nothing of
    it. Stopping the start says it where the operator looks, and a rollout stops at the first
    replica rather than replacing the working ones."""
    from cryptography import x509

    try:
        leaf = x509.load_pem_x509_certificate(chain)
    except ValueError:
        return  # not parsed here: _check_pair has told a certificate gRPC cannot use
    expired_at = leaf.not_valid_after_utc
    if expired_at <= datetime.now(UTC):
        raise ConfigError(
            f"{cert_setting}: the certificate in {cert} expired on "
            f"{expired_at:%Y-%m-%d %H:%M:%S} UTC (clients would refuse every handshake): "
            "renew it and start again"
        )


def _check_roots(path: Path, setting: str) -> None:
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=path)
    except ssl.SSLError as error:
        raise ConfigError(
            f"{setting}: {path} holds no PEM certificate to trust ({error.reason or error})"
        ) from None


@dataclass(frozen=True)
class ServerTLS:
    """The server's certificate chain and key, and the roots that sign client certificates
    (mutual TLS: a client without such a certificate is refused in the handshake)."""

    certificate_chain: bytes
    private_key: bytes
    client_ca: bytes | None = None
    #: The files they were read from: the HTTP listener's TLS (hypercorn) reads them by name.
    files: tuple[Path, Path, Path | None] | None = None

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials(
            [(self.private_key, self.certificate_chain)],
            root_certificates=self.client_ca,
            require_client_auth=self.client_ca is not None,
        )


def server_tls(
    cert: Path | None, key: Path | None, client_ca: Path | None = None
) -> ServerTLS | None:
    """The server's TLS from the files given (``None``: none given, plaintext)."""
    cert_setting, key_setting = f"--tls-cert ({CERT_ENV})", f"--tls-key ({KEY_ENV})"
    ca_setting = f"--tls-client-ca ({CLIENT_CA_ENV})"
    if cert is None and key is None:
        if client_ca is not None:
            raise ConfigError(
                f"{ca_setting} asks for mutual TLS: give the server's own certificate too "
                f"({cert_setting} and {key_setting})"
            )
        return None
    if cert is None or key is None:
        missing = cert_setting if cert is None else key_setting
        raise ConfigError(f"TLS needs both the certificate and its key: give {missing} too")
    chain, private = _read(cert, cert_setting), _read(key, key_setting)
    _check_pair(cert, key, cert_setting, key_setting)
    _check_not_expired(chain, cert, cert_setting)
    roots = None
    if client_ca is not None:
        roots = _read(client_ca, ca_setting)
        _check_roots(client_ca, ca_setting)
    return ServerTLS(chain, private, roots, (cert, key, client_ca))


#: How long a tool waits for a TCP connection when it tells a silent server from none.
PROBE_S = 1.0

#: What a tool says when something listens where it called in plaintext and gRPC never answered.
TLS_HINT = (
    "something listens there but did not answer plaintext gRPC: if it serves TLS, give --tls-ca "
    "(its roots; --tls alone trusts the system's), and --tls-cert/--tls-key for mutual TLS"
)


def listening(address: str) -> bool:
    """Whether a TCP connection to ``address`` (``HOST:PORT``) is taken: a server is there, even
    if it did not answer the gRPC a tool spoke (a TLS server refuses plaintext in its handshake,
    which grpc reports as a server that never came up)."""
    port = port_of(address)
    if port is None:
        return False
    try:
        with socket.create_connection((address.rpartition(":")[0].strip("[]"), port), PROBE_S):
            return True
    except OSError:
        return False


def env_path(name: str, env: Mapping[str, str] | None = None) -> Path | None:
    """A file named by the environment variable ``name`` (unset or empty: none)."""
    value = (os.environ if env is None else env).get(name, "").strip()
    return Path(value) if value else None


@dataclass(frozen=True)
class ClientTLS:
    """How a tool calls a server over TLS: the roots it trusts (``None``: the system's), its
    own certificate for mutual TLS, and the name the server's certificate must carry when the
    address does not say it."""

    root_certificates: bytes | None = None
    private_key: bytes | None = None
    certificate_chain: bytes | None = None
    server_name: str = ""

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            self.root_certificates, self.private_key, self.certificate_chain
        )

    def options(self) -> list[tuple[str, Any]]:
        return [(SERVER_NAME_OPTION, self.server_name)] if self.server_name else []


def client_tls(
    tls: bool,
    ca: Path | None = None,
    cert: Path | None = None,
    key: Path | None = None,
    server_name: str = "",
) -> ClientTLS | None:
    """The tool's TLS (``None``: plaintext). Any of the files, or ``tls``, turns it on."""
    if not (tls or ca or cert or key or server_name):
        return None
    if (cert is None) != (key is None):
        missing = "--tls-cert" if cert is None else "--tls-key"
        raise ConfigError(
            f"a client certificate needs both the certificate and its key: give {missing}"
        )
    roots = None
    if ca is not None:
        roots = _read(ca, "--tls-ca")
        _check_roots(ca, "--tls-ca")
    chain = private = None
    if cert is not None and key is not None:
        chain, private = _read(cert, "--tls-cert"), _read(key, "--tls-key")
        _check_pair(cert, key, "--tls-cert", "--tls-key")
    return ClientTLS(roots, private, chain, server_name.strip())


#: How long the tools' connections (``demo``, ``load``, the health check) go without receiving
#: anything before they ping the server, and how long a ping may go unanswered before the
#: connection is taken for dead (its calls fail ``UNAVAILABLE``, and the bots join again on a new
#: one). grpcio's clients never ping by default: a connection a carrier's NAT forgot (packets
#: dropped, nothing closed) held a bot's ``Play`` stream, waiting for the other seats' moves, for
#: good. 15 s: the server takes a ping every 10 s at most (``ConnectionLimits``:
#: ``too_many_pings`` beyond).
CLIENT_KEEPALIVE_TIME_MS = 15_000
CLIENT_KEEPALIVE_TIMEOUT_MS = 10_000
CLIENT_KEEPALIVE: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", CLIENT_KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", CLIENT_KEEPALIVE_TIMEOUT_MS),
    # grpcio 1.85 waits for a keepalive ping's answer as long as for any ping, 60 s by default,
    # whatever keepalive_timeout_ms says (measured through a blackholing proxy: 60 s, and 10 s
    # with this).
    ("grpc.http2.ping_timeout_ms", CLIENT_KEEPALIVE_TIMEOUT_MS),
    # A stream that only listens sends no data: without this, grpcio stops pinging after two
    # pings (its default), and a link that dies later is never found.
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.keepalive_permit_without_calls", 1),
)


def channel(
    address: str, tls: ClientTLS | None, options: Sequence[tuple[str, Any]] = ()
) -> grpc.Channel:
    """A blocking channel to ``address``, over TLS when ``tls`` is given, with
    ``CLIENT_KEEPALIVE``."""
    given = [*CLIENT_KEEPALIVE, *options]
    if tls is None:
        return grpc.insecure_channel(address, options=given)
    return grpc.secure_channel(address, tls.credentials(), options=[*given, *tls.options()])


def aio_channel(
    address: str, tls: ClientTLS | None, options: Sequence[tuple[str, Any]] = ()
) -> grpc.aio.Channel:
    """An asyncio channel to ``address``, over TLS when ``tls`` is given, with
    ``CLIENT_KEEPALIVE``."""
    given = [*CLIENT_KEEPALIVE, *options]
    if tls is None:
        return grpc.aio.insecure_channel(address, options=given)
    return grpc.aio.secure_channel(address, tls.credentials(), options=[*given, *tls.options()])


# --- the command line ----------------------------------------------------------------------------


def server_options(command: F) -> F:
    """``serve``'s ``--tls-cert``, ``--tls-key`` and ``--tls-client-ca`` (each also from the
    environment)."""
    for name, env, text in reversed(
        [
            ("--tls-cert", CERT_ENV, "Serve TLS with this PEM certificate chain (with --tls-key)."),
            ("--tls-key", KEY_ENV, "The certificate's private key (PEM, unencrypted)."),
            (
                "--tls-client-ca",
                CLIENT_CA_ENV,
                "Mutual TLS: require client certificates signed by these PEM roots.",
            ),
        ]
    ):
        command = click.option(
            name,
            cls=EnvOption,
            env=env,
            type=_PATH,
            default=lambda env=env: env_path(env),
            show_default=False,
            help=f"{text} Environment: {env}.",
        )(command)
    return command


def client_options(command: F) -> F:
    """A tool's ``--tls``, ``--tls-ca``, ``--tls-cert``/``--tls-key`` and ``--tls-server-name``
    (:func:`client_tls_of` makes them a :class:`ClientTLS`)."""
    for option in reversed(
        [
            click.option(
                "--tls", is_flag=True, help="Call over TLS (the system's trust roots by default)."
            ),
            click.option(
                "--tls-ca",
                type=_PATH,
                default=None,
                help="Trust these PEM roots for the server's certificate (implies --tls).",
            ),
            click.option(
                "--tls-cert",
                type=_PATH,
                default=None,
                help="A client certificate (PEM) for a server that asks for one (mutual TLS).",
            ),
            click.option(
                "--tls-key",
                type=_PATH,
                default=None,
                help="The client certificate's private key (PEM).",
            ),
            click.option(
                "--tls-server-name",
                default="",
                help="The name the server's certificate must carry, when the address does not "
                "say it.",
            ),
        ]
    ):
        command = option(command)
    return command


def client_tls_of(
    tls: bool, ca: Path | None, cert: Path | None, key: Path | None, server_name: str
) -> ClientTLS | None:
    """:func:`client_tls` for a command: a bad setting stops it with its one line."""
    try:
        return client_tls(tls, ca, cert, key, server_name)
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
