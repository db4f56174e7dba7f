"""TLS: `croupier serve --tls-cert/--tls-key` (and `--tls-client-ca` for mutual TLS) with
certificates made on the fly (trustme); the tools call it with `--tls-ca`, `--tls-cert/--tls-key`
and `--tls-server-name`."""

from __future__ import annotations

import re
import socket
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest
import trustme
from grpc_health.v1 import health_pb2, health_pb2_grpc

from croupier.service.config import ConfigError
from croupier.service.tls import ClientTLS, channel, client_tls, server_tls
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc
from tests.service.processes import CROUPIER, ENV, Served, serve, stop

#: The name in the server's certificate: not the address's (127.0.0.1), so every client says it.
SERVER_NAME = "croupier.test"
CONNECT_S = 10.0


@dataclass(frozen=True)
class Files:
    ca: Path
    cert: Path
    key: Path
    client_cert: Path
    client_key: Path
    #: A client certificate from a CA the server does not trust.
    stranger_cert: Path
    stranger_key: Path
    stranger_ca: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Files:
    where = tmp_path_factory.mktemp("pki")
    ca, stranger = trustme.CA(), trustme.CA()
    server = ca.issue_cert(SERVER_NAME)
    client = ca.issue_cert("seat-client@croupier.test")
    other = stranger.issue_cert("stranger@croupier.test")
    names = ["ca", "server.pem", "server.key", "client.pem", "client.key"]
    names += ["stranger.pem", "stranger.key", "stranger-ca.pem"]
    files = Files(*(where / name for name in names))
    files.ca.write_bytes(ca.cert_pem.bytes())
    for leaf, cert, key in (
        (server, files.cert, files.key),
        (client, files.client_cert, files.client_key),
        (other, files.stranger_cert, files.stranger_key),
    ):
        cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        key.write_bytes(leaf.private_key_pem.bytes())
    files.stranger_ca.write_bytes(stranger.cert_pem.bytes())
    return files


@pytest.fixture(scope="module")
def tls_server(pki: Files, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """TLS from the flags."""
    where = tmp_path_factory.mktemp("tls")
    served = serve(
        where / "serve.log",
        f"sqlite:///{where / 'games.sqlite3'}",
        "--tls-cert",
        str(pki.cert),
        "--tls-key",
        str(pki.key),
    )
    yield served
    stop(served)


@pytest.fixture(scope="module")
def mtls_server(pki: Files, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Mutual TLS from the environment."""
    where = tmp_path_factory.mktemp("mtls")
    env = {
        **ENV,
        "CROUPIER_TLS_CERT": str(pki.cert),
        "CROUPIER_TLS_KEY": str(pki.key),
        "CROUPIER_TLS_CLIENT_CA": str(pki.ca),
    }
    served = serve(where / "serve.log", f"sqlite:///{where / 'games.sqlite3'}", env=env)
    yield served
    stop(served)


def _presets(address: str, tls: ClientTLS | None) -> int:
    """A call that needs no token: the presets of Hoola (it fails as the connection does)."""
    with channel(address, tls) as chan:
        stub = service_pb2_grpc.GameServiceStub(chan)
        answer = stub.ListPresets(
            service_pb2.ListPresetsRequest(kind=common_pb2.GAME_KIND_HOOLA), timeout=CONNECT_S
        )
        return len(answer.presets)


def _refused(address: str, tls: ClientTLS | None) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as failed:
        _presets(address, tls)
    return failed.value.code()


def _trusting(pki: Files, **more: Path | str) -> ClientTLS:
    tls = client_tls(True, pki.ca, server_name=SERVER_NAME, **more)  # type: ignore[arg-type]
    assert tls is not None
    return tls


def test_a_tls_call_works_and_a_plaintext_one_fails(tls_server: Served, pki: Files) -> None:
    assert _presets(tls_server.address, _trusting(pki)) > 0
    with channel(tls_server.address, _trusting(pki)) as chan:
        health = health_pb2_grpc.HealthStub(chan).Check(
            health_pb2.HealthCheckRequest(service=""), timeout=CONNECT_S
        )
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    # Plaintext to a TLS port, a certificate for another name, roots that did not sign it.
    assert _refused(tls_server.address, None) == grpc.StatusCode.UNAVAILABLE
    wrong_name = client_tls(True, pki.ca, server_name="elsewhere.test")
    assert _refused(tls_server.address, wrong_name) == grpc.StatusCode.UNAVAILABLE
    untrusted = client_tls(True, pki.stranger_ca, server_name=SERVER_NAME)
    assert _refused(tls_server.address, untrusted) == grpc.StatusCode.UNAVAILABLE
    assert "tls=TLS" in tls_server.output()


def test_mutual_tls_refuses_a_client_without_a_good_certificate(
    mtls_server: Served, pki: Files
) -> None:
    with_cert = _trusting(pki, cert=pki.client_cert, key=pki.client_key)
    assert _presets(mtls_server.address, with_cert) > 0
    assert _refused(mtls_server.address, _trusting(pki)) == grpc.StatusCode.UNAVAILABLE
    stranger = _trusting(pki, cert=pki.stranger_cert, key=pki.stranger_key)
    assert _refused(mtls_server.address, stranger) == grpc.StatusCode.UNAVAILABLE
    assert _refused(mtls_server.address, None) == grpc.StatusCode.UNAVAILABLE
    assert "tls=mTLS" in mtls_server.output()


def _http_port(served: Served) -> tuple[str, int]:
    """The scheme and port of the server's HTTP listener, from its start line."""
    found = re.search(r"(https?)://127\.0\.0\.1:(\d+)", served.output())
    assert found, served.output()
    return found.group(1), int(found.group(2))


def _presets_over_http(port: int, tls: ssl.SSLContext | None) -> bytes:
    """ListPresets as JSON over HTTP/1.1 (Connect's unary POST), over TLS when ``tls`` is given."""
    body = b'{"kind": "GAME_KIND_HOOLA"}'
    request = (
        b"POST /croupier.v1.GameService/ListPresets HTTP/1.1\r\nHost: croupier.test\r\n"
        b"Content-Type: application/json\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    with socket.create_connection(("127.0.0.1", port), timeout=CONNECT_S) as raw:
        sock = raw if tls is None else tls.wrap_socket(raw, server_hostname=SERVER_NAME)
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def _https_client(pki: Files, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if cert is not None and key is not None:
        context.load_cert_chain(str(cert), str(key))
    return context


def test_the_http_listener_serves_the_same_tls(
    tls_server: Served, mtls_server: Served, pki: Files
) -> None:
    """With TLS on, the HTTP listener (Connect, gRPC-Web, JSON, the web client) is TLS too, with
    the same certificate and, for mutual TLS, the same client roots: before, it answered every
    call in the clear, bearer tokens included, whatever the gRPC port asked (a studio's review:
    a game created over plain HTTP, without a client certificate, from an mTLS server)."""
    scheme, port = _http_port(tls_server)
    assert scheme == "https"
    assert _answered(port, _https_client(pki))
    assert not _answered(port, None)  # plain HTTP to it
    scheme, port = _http_port(mtls_server)
    assert scheme == "https"
    assert _answered(port, _https_client(pki, pki.client_cert, pki.client_key))
    assert not _answered(port, _https_client(pki))  # no client certificate
    assert not _answered(port, _https_client(pki, pki.stranger_cert, pki.stranger_key))
    assert not _answered(port, None)


def _answered(port: int, tls: ssl.SSLContext | None) -> bool:
    """Whether the call was answered with the presets (any failure of the connection: not)."""
    try:
        answer = _presets_over_http(port, tls)
    except (ssl.SSLError, OSError):
        return False
    return answer.startswith(b"HTTP/1.1 200 ") and b'"presets"' in answer


def test_a_tool_speaking_plaintext_to_a_tls_server_is_told_so(
    tls_server: Served, tmp_path: Path
) -> None:
    """grpc reports a TLS server's refusal of plaintext as a server that never came up; the
    tools said there was no server (start one: make run). Something listens there: they say to
    give --tls-ca."""
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    nobody = f"127.0.0.1:{free.getsockname()[1]}"
    free.close()
    for command in (["demo"], ["load", "--games", "1"]):
        said = {}
        for address in (tls_server.address, nobody):
            run = subprocess.run(
                [CROUPIER, *command, "--address", address, "--connect-timeout", "2"]
                + ["--studio-key", "studio.v1.x"],
                capture_output=True,
                text=True,
                timeout=60,
                env=ENV,
                cwd=tmp_path,
            )
            assert run.returncode != 0
            said[address] = run.stdout + run.stderr
        assert "if it serves TLS, give --tls-ca" in said[tls_server.address], said
        assert "if it serves TLS" not in said[nobody], said


def test_a_failed_handshake_leaves_the_json_log_json(pki: Files, tmp_path: Path) -> None:
    """gRPC's C core wrote a plain-text INFO line for each handshake a plaintext client failed
    (a port scanner's, too) into a log that promises one JSON object a line: it prints only
    its errors unless GRPC_VERBOSITY asks for more."""
    env = {k: v for k, v in ENV.items() if k != "GRPC_VERBOSITY"}
    served = serve(
        tmp_path / "serve.log",
        f"sqlite:///{tmp_path / 'games.sqlite3'}",
        *("--tls-cert", str(pki.cert), "--tls-key", str(pki.key), "--log-format", "json"),
        env=env,
    )
    try:
        assert _refused(served.address, None) == grpc.StatusCode.UNAVAILABLE
    finally:
        stop(served)
    lines = served.output().splitlines()
    assert lines and all(line.startswith("{") for line in lines), lines


def _tool_tls(pki: Files) -> list[str]:
    return [
        "--tls-ca",
        str(pki.ca),
        "--tls-cert",
        str(pki.client_cert),
        "--tls-key",
        str(pki.client_key),
        "--tls-server-name",
        SERVER_NAME,
    ]


def test_demo_over_mutual_tls_finishes_a_game(mtls_server: Served, pki: Files) -> None:
    demo = subprocess.run(
        [CROUPIER, "demo", "--address", mtls_server.address, "--seed", "3", *_tool_tls(pki)],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    assert demo.returncode == 0, demo.stderr
    assert re.search(r"game [0-9a-f-]+: 1 round\(s\)", demo.stdout)
    assert "net, in stakes: seat 0" in demo.stdout
    # Without its certificate the demo cannot even connect, and says so.
    bare = subprocess.run(
        [CROUPIER, "demo", "--address", mtls_server.address, "--connect-timeout", "2"]
        + _tool_tls(pki)[:2]
        + ["--tls-server-name", SERVER_NAME],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
    )
    assert bare.returncode != 0
    assert (
        f"no Croupier server at {mtls_server.address} (or the TLS handshake failed" in bare.stderr
    )


def test_load_over_mutual_tls_plays_its_games(mtls_server: Served, pki: Files) -> None:
    load = subprocess.run(
        [
            CROUPIER,
            "load",
            "--address",
            mtls_server.address,
            "--games",
            "2",
            "--games-in-flight",
            "2",
            "--channels",
            "1",
            "--quiet",
            "--seed",
            "4",
            *_tool_tls(pki),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    assert load.returncode == 0, load.stderr
    assert re.search(r"games finished\s+2 ", load.stdout), load.stdout
    assert re.search(r"errors\s+0\b", load.stdout), load.stdout


# --- settings that cannot work: one line each ------------------------------------------------


def test_bad_server_files_are_one_line_errors(pki: Files, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.pem"
    text = tmp_path / "notes.txt"
    text.write_text("not a certificate\n")
    cases: list[tuple[tuple[Path | None, Path | None, Path | None], str]] = [
        ((missing, pki.key, None), f"--tls-cert (CROUPIER_TLS_CERT): cannot read {missing}"),
        ((pki.cert, text, None), f"--tls-key (CROUPIER_TLS_KEY): {text} is not a PEM file"),
        (
            (pki.cert, pki.client_key, None),
            f"{pki.client_key} is not the private key of the certificate in {pki.cert}",
        ),
        ((pki.key, pki.cert, None), "are not a PEM certificate and its unencrypted private key"),
        ((pki.cert, None, None), "give --tls-key (CROUPIER_TLS_KEY) too"),
        ((None, pki.key, None), "give --tls-cert (CROUPIER_TLS_CERT) too"),
        ((None, None, pki.ca), "asks for mutual TLS: give the server's own certificate too"),
        ((pki.cert, pki.key, pki.key), "holds no PEM certificate to trust"),
    ]
    for (cert, key, ca), expected in cases:
        with pytest.raises(ConfigError) as error:
            server_tls(cert, key, ca)
        assert expected in str(error.value) and "\n" not in str(error.value)
    assert server_tls(None, None) is None
    both = server_tls(pki.cert, pki.key, pki.ca)
    assert both is not None and both.client_ca == pki.ca.read_bytes()


def test_an_expired_server_certificate_stops_the_start(tmp_path: Path) -> None:
    # Served, it would fail every client's handshake ("certificate has expired") with nothing
    # in the server's log.
    expired = trustme.CA().issue_cert(
        SERVER_NAME,
        not_before=datetime(2020, 1, 1, tzinfo=UTC),
        not_after=datetime(2021, 1, 1, tzinfo=UTC),
    )
    cert, key = tmp_path / "expired.pem", tmp_path / "expired.key"
    cert.write_bytes(b"".join(blob.bytes() for blob in expired.cert_chain_pems))
    key.write_bytes(expired.private_key_pem.bytes())
    with pytest.raises(ConfigError) as error:
        server_tls(cert, key)
    said = str(error.value)
    assert said.startswith("--tls-cert (CROUPIER_TLS_CERT): ") and "\n" not in said
    assert f"{cert} expired on 2021-01-01 00:00:00 UTC" in said and "renew it" in said


def test_bad_client_files_are_one_line_errors(pki: Files) -> None:
    with pytest.raises(ConfigError, match="give --tls-key"):
        client_tls(False, cert=pki.client_cert)
    with pytest.raises(ConfigError, match="is not the private key"):
        client_tls(False, cert=pki.client_cert, key=pki.key)
    with pytest.raises(ConfigError, match=r"--tls-ca: .* holds no PEM certificate"):
        client_tls(False, ca=pki.client_key)
    assert client_tls(False) is None
    system = client_tls(True)
    assert system is not None and system.root_certificates is None and system.options() == []


def test_serve_with_a_mismatched_key_stops_with_one_line(pki: Files, tmp_path: Path) -> None:
    started = subprocess.run(
        [
            CROUPIER,
            "serve",
            "--address",
            "127.0.0.1:0",
            "--store",
            f"sqlite:///{tmp_path / 'games.sqlite3'}",
            "--tls-cert",
            str(pki.cert),
            "--tls-key",
            str(pki.client_key),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
    )
    assert started.returncode != 0
    lines = started.stderr.strip().splitlines()
    assert lines == [
        f"Error: --tls-key (CROUPIER_TLS_KEY): {pki.client_key} is not the private key of the "
        f"certificate in {pki.cert}"
    ]


def _healthcheck(served: Served, **env: str) -> subprocess.CompletedProcess[str]:
    """The container's HEALTHCHECK, run with the server's own TLS settings, as the image runs it
    beside `serve` (the same environment)."""
    import os
    import sys

    return subprocess.run(
        [sys.executable, "-m", "croupier.service.healthcheck"],
        env={**os.environ, "CROUPIER_ADDRESS": served.address, **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_the_healthcheck_speaks_tls_to_a_tls_server(tls_server: Served, pki: Files) -> None:
    done = _healthcheck(tls_server, CROUPIER_TLS_CERT=str(pki.cert), CROUPIER_TLS_KEY=str(pki.key))
    assert done.returncode == 0, done.stderr


def test_the_healthcheck_passes_mutual_tls_with_the_servers_certificate(
    mtls_server: Served, pki: Files
) -> None:
    """The server's certificate, from the roots that sign client certificates, for client use
    too (trustme's are): the check's handshake passes."""
    done = _healthcheck(
        mtls_server,
        CROUPIER_TLS_CERT=str(pki.cert),
        CROUPIER_TLS_KEY=str(pki.key),
        CROUPIER_TLS_CLIENT_CA=str(pki.ca),
    )
    assert done.returncode == 0, done.stderr
