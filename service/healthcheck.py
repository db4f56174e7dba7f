"""``python -m croupier.service.healthcheck``: the container's HEALTHCHECK.

Asks the local server, on gRPC health checking (``grpc.health.v1``), whether the game service is
SERVING, and exits 0 if so, 1 otherwise (not serving, not answering, or a bad address). It asks
where ``CROUPIER_ADDRESS`` says the server listens, as ``serve`` reads it, so that a server moved
to another port is still checked; a wildcard host (``0.0.0.0``, ``[::]``) is asked on loopback.
Kubernetes does not use it: its own ``grpc`` probes ask the same service (deploy/kubernetes/).

A server given a certificate (``CROUPIER_TLS_CERT``/``CROUPIER_TLS_KEY``, as ``serve`` reads them)
speaks TLS only, and a plaintext check of it could only fail: the check then speaks TLS too,
trusting that very certificate and asking for the name it carries; under mutual TLS
(``CROUPIER_TLS_CLIENT_CA``) it shows the server's certificate as its own, which passes where the
client roots signed it for client use (docs/operations.md, "TLS").
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2

from croupier.service.config import DEFAULT_ADDRESS
from croupier.service.tls import CERT_ENV, CLIENT_CA_ENV, KEY_ENV, ClientTLS, channel
from croupier.v1 import service_pb2

ADDRESS_ENV = "CROUPIER_ADDRESS"
CHECK_METHOD = "/grpc.health.v1.Health/Check"
#: The service whose status is checked (the server also reports "", the whole server).
SERVICE = service_pb2.DESCRIPTOR.services_by_name["GameService"].full_name
#: Under Docker's own HEALTHCHECK timeout (3 s in deploy/Dockerfile), so the check says why.
TIMEOUT_S = 2.0
#: What a server that takes game calls reports.
SERVING = health_pb2.HealthCheckResponse.ServingStatus.Name(health_pb2.HealthCheckResponse.SERVING)
#: A listening host that is no address to connect to, and the loopback that reaches it.
WILDCARDS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "[::]": "[::1]", "::": "[::1]"}


def local_target(address: str) -> str:
    """Where to reach a server listening on ``address`` (HOST:PORT) from the same machine."""
    host, separator, port = address.rpartition(":")
    if not separator or not port.isdigit():
        raise ValueError(f"{ADDRESS_ENV}: HOST:PORT, not {address!r}")
    return f"{WILDCARDS.get(host, host)}:{port}"


def _name_in(chain: bytes) -> str:
    """The name the chain's first certificate carries (its first DNS name, else its first IP
    address, else its common name): what the check asks the server's certificate for."""
    from cryptography import x509

    leaf = x509.load_pem_x509_certificate(chain)
    try:
        names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        names = x509.SubjectAlternativeName([])
    for name in (
        *names.get_values_for_type(x509.DNSName),
        *names.get_values_for_type(x509.IPAddress),
    ):
        # A wildcard name is asked for as one name it covers.
        return "healthcheck" + str(name)[1:] if str(name).startswith("*.") else str(name)
    common = leaf.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)
    return str(common[0].value) if common else ""


def server_tls() -> ClientTLS | None:
    """How to reach the local server, from the TLS settings it serves with (``None``:
    plaintext)."""
    cert = os.environ.get(CERT_ENV, "").strip()
    if not cert:
        return None
    chain = Path(cert).read_bytes()
    key = os.environ.get(KEY_ENV, "").strip()
    if os.environ.get(CLIENT_CA_ENV, "").strip() and key:
        return ClientTLS(chain, Path(key).read_bytes(), chain, _name_in(chain))
    return ClientTLS(chain, server_name=_name_in(chain))


def status(
    target: str,
    service: str = SERVICE,
    timeout_s: float = TIMEOUT_S,
    tls: ClientTLS | None = None,
) -> str:
    """What the server at ``target`` reports of ``service`` within ``timeout_s`` (``SERVING``,
    ``NOT_SERVING``, ``SERVICE_UNKNOWN``), or why it reports nothing."""
    with channel(target, tls) as opened:
        # The method by hand: the health stubs' types do not declare HealthStub's methods.
        check = opened.unary_unary(
            CHECK_METHOD,
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        try:
            answer = check(health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
        except grpc.RpcError as error:
            # A call's error (every one here) has its status code; RpcError itself declares none.
            code_of = getattr(error, "code", None)
            code = code_of() if callable(code_of) else None
            if code == grpc.StatusCode.UNAVAILABLE:
                # Nothing listening, a server shutting down, TLS asked in plaintext…: its words.
                details_of = getattr(error, "details", None)
                details = details_of() if callable(details_of) else ""
                return f"no answer (UNAVAILABLE: {details})"
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                return f"no answer within {timeout_s:g} s"
            return f"the check failed ({code.name if code else error})"
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status))


def serving(target: str, service: str = SERVICE, timeout_s: float = TIMEOUT_S) -> bool:
    """Whether the server at ``target`` reports ``service`` SERVING within ``timeout_s``."""
    return status(target, service, timeout_s) == SERVING


def main() -> int:
    address = os.environ.get(ADDRESS_ENV, DEFAULT_ADDRESS)
    try:
        target = local_target(address)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    try:
        tls = server_tls()
    except (OSError, ValueError) as error:
        print(
            f"{CERT_ENV}/{KEY_ENV}: cannot read the server's certificate: {error}", file=sys.stderr
        )
        return 1
    found = status(target, tls=tls)
    if found == SERVING:
        return 0
    print(f"{SERVICE} is not SERVING at {target}: {found}", file=sys.stderr)
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
