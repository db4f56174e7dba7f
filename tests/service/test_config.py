"""The secrets as the server reads them, and the studio credential as the tools find it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from croupier.app.tokens import KeyRing, key_id, verify_studio_token
from croupier.service import config

HEX = "hex:" + "11" * 32
OLD = "hex:" + "22" * 32
OLDER = "base64:" + "MzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM="


def test_no_secret_is_a_generated_one_said_as_such() -> None:
    keys = config.token_keys({})
    assert keys.generated and len(keys.ring.signing) == 32
    assert config.token_keys({}).ring.signing != keys.ring.signing


def test_the_signing_key_and_the_previous_ones() -> None:
    keys = config.token_keys(
        {"CROUPIER_SECRET": HEX, "CROUPIER_PREVIOUS_SECRETS": f" {OLD} ,{OLDER},"}
    )
    assert not keys.generated and keys.ring.signing == bytes.fromhex("11" * 32)
    assert keys.ring.key(key_id(b"3" * 32)) == b"3" * 32
    studio = config.studio_keys({"CROUPIER_STUDIO_SECRET": OLD})
    assert studio.ring.signing == bytes.fromhex("22" * 32)


@pytest.mark.parametrize(
    ("env", "complaint"),
    [
        ({"CROUPIER_SECRET": "plain-text-secret-0123456789abcdef"}, "CROUPIER_SECRET: no hex:"),
        ({"CROUPIER_PREVIOUS_SECRETS": OLD}, "set CROUPIER_SECRET (the signing key) too"),
        (
            {"CROUPIER_SECRET": HEX, "CROUPIER_PREVIOUS_SECRETS": f"{OLD},hex:12"},
            "CROUPIER_PREVIOUS_SECRETS (entry 2): only 1 bytes",
        ),
    ],
)
def test_a_bad_setting_is_one_line(env: dict[str, str], complaint: str) -> None:
    with pytest.raises(config.ConfigError) as error:
        config.token_keys(env)
    assert complaint in str(error.value) and "\n" not in str(error.value)


def test_the_development_credential_is_this_users_only(tmp_path: Path) -> None:
    path = config.dev_credential_path(f"sqlite:///{tmp_path / 'data' / 'games.sqlite3'}")
    assert path == tmp_path / "data" / "dev-studio-credential"
    assert config.dev_credential_path("postgresql://db/x") == Path("data/dev-studio-credential")
    path.parent.mkdir()
    path.write_text("stale")
    path.chmod(0o644)
    ring = KeyRing(b"s" * 32)
    config.write_dev_credential(path, ring, now_s=1000)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    token = path.read_text().strip()
    assert verify_studio_token(ring, token, 1000).expires_at_s == 1000 + config.DEV_CREDENTIAL_TTL_S
    assert [p.name for p in path.parent.iterdir()] == ["dev-studio-credential"]


def test_a_live_servers_development_credential_is_left_to_it(tmp_path: Path) -> None:
    """The claim is a lock the kernel drops with its process: while one is held, the next
    server writes beside the usual file, named by its port, and says who holds the usual one."""
    path = tmp_path / "data" / "dev-studio-credential"
    first = config.claim_dev_credential(path, 50051)
    try:
        assert (first.path, first.holder) == (path, None)
        second = config.claim_dev_credential(path, 50191)
        assert second.path == path.with_name("dev-studio-credential-50191")
        assert second.holder == f"pid {os.getpid()}"
        with pytest.raises(OSError, match="held by another live server"):
            config.claim_dev_credential(path, 50191)
        os.close(second.lock_fd)
    finally:
        os.close(first.lock_fd)
    again = config.claim_dev_credential(path, 50192)
    os.close(again.lock_fd)
    assert again.path == path


def test_the_tools_find_the_studio_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local, remote = ["127.0.0.1:50051"], ["croupier.example:50051"]
    assert config.studio_credential(" given ", remote, env={}) == "given"
    minted = config.studio_credential("", remote, env={"CROUPIER_STUDIO_SECRET": HEX})
    ring = KeyRing(bytes.fromhex("11" * 32))
    assert verify_studio_token(ring, minted, 0).kid == ring.kid
    key_file = tmp_path / "studio-key"
    key_file.write_text("studio.v1.file\n")
    assert config.studio_credential(None, remote, key_file, env={}) == "studio.v1.file"
    with pytest.raises(config.ConfigError):
        config.studio_credential(None, remote, tmp_path / "missing", env={})
    # Nothing given: a local server's development credential, from the working directory.
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "dev-studio-credential").write_text("studio.v1.dev\n")
    monkeypatch.chdir(tmp_path)
    assert config.studio_credential(None, local, env={}) == "studio.v1.dev"
    assert config.studio_credential(None, ["[::1]:1", "localhost:2"], env={}) == "studio.v1.dev"
    # A remote server never gets it (nor a word on where the local file was looked for).
    with pytest.raises(config.ConfigError) as error:
        config.studio_credential(None, remote, env={})
    assert "--studio-key" in str(error.value) and "CROUPIER_STUDIO_SECRET" in str(error.value)
    assert "there is none at" not in str(error.value)
    monkeypatch.chdir(tmp_path / "data")
    with pytest.raises(config.ConfigError) as error:
        config.studio_credential(None, local, env={})
    # A local server of its own store wrote its credential elsewhere: the refusal says how to
    # give it, and where the tool looked (a tool run from another folder than the server's
    # was told to start a server, one running already).
    assert "--studio-key-file" in str(error.value)
    looked = tmp_path / "data" / "data" / "dev-studio-credential"
    assert f"there is none at {looked}: run the tool from the folder" in str(error.value)


def test_a_second_servers_credential_is_found_by_its_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second server from the same folder writes data/dev-studio-credential-PORT
    (claim_dev_credential): a refused tool is pointed at the one of its server's port, and only
    for a local server."""
    monkeypatch.chdir(tmp_path)
    first = config.claim_dev_credential(tmp_path / "data" / "dev-studio-credential", 50051)
    second = config.claim_dev_credential(first.path, 50191)
    try:
        assert second.path.name == "dev-studio-credential-50191"
        assert config.port_named_dev_credentials(["127.0.0.1:50191"]) == []  # not written yet
        second.path.write_text("studio.v1.second\n")
        found = config.port_named_dev_credentials(["127.0.0.1:50191", "localhost:50051"])
        assert [path.resolve() for path in found] == [second.path]
        assert config.port_named_dev_credentials(["127.0.0.1:50051"]) == []
        assert config.port_named_dev_credentials(["croupier.example:50191"]) == []
    finally:
        os.close(second.lock_fd)
        os.close(first.lock_fd)


def test_a_credential_a_header_cannot_carry_is_refused_naming_where_it_came_from(
    tmp_path: Path,
) -> None:
    """gRPC refuses every call whose metadata holds a control character (its core logs a line
    for each, and the call ends INTERNAL "Invalid metadata"): the tools say so at once, and
    where the credential came from."""
    remote = ["croupier.example:50051"]
    with pytest.raises(config.ConfigError, match=r"from --studio-key .*may not carry"):
        config.studio_credential("abc\ndef", remote, env={})
    key_file = tmp_path / "notes.md"
    key_file.write_text("# a file\n\nof several lines\n")
    with pytest.raises(config.ConfigError, match=rf"from --studio-key-file {key_file} holds"):
        config.studio_credential(None, remote, key_file, env={})
    assert config.studio_credential("studio.v1.a-b_c", remote, env={}) == "studio.v1.a-b_c"


@pytest.mark.parametrize(
    ("address", "ok"),
    [
        ("127.0.0.1:50051", True),
        ("localhost:1", True),
        ("[::1]:50051", True),
        ("croupier.example:443", True),
        (":50051", False),  # a server's "every interface"; a client must name the machine
        ("[]:50051", False),
        (" :50051", False),
        ("127.0.0.1", False),
        ("127.0.0.1:", False),
        ("127.0.0.1:65536", False),
        ("127.0.0.1:５", False),  # a digit, but not ASCII
    ],
)
def test_a_client_dials_a_host_and_a_port(address: str, ok: bool) -> None:
    """The one check the tools (demo, load) make of the addresses they dial."""
    assert config.dialable(address) is ok


@pytest.mark.parametrize(
    ("address", "local"),
    [
        ("127.0.0.1:50051", True),
        ("127.0.0.2:50051", True),  # all of 127.0.0.0/8 is this machine's
        ("localhost:50051", True),
        ("[::1]:50051", True),
        ("::1", True),
        ("10.0.0.1:50051", False),
        ("croupier.example:443", False),
        ("[::2]:50051", False),
    ],
)
def test_a_local_address_is_a_loopback_one(address: str, local: bool) -> None:
    """Where the development credential may go, and whose memory the load tool reads."""
    assert config.is_local(address) is local
