"""Signed replay files (replays/signing.py): a file whose signature holds and whose chain verifies
is the service's record; any change to what the signature covers, or to what the chain ties to
it, fails; the signature survives the file's conversions; the service and the CLI sign and check
with the configured keys."""

from __future__ import annotations

import copy
import random
import stat
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from croupier.app.tokens import KeyRing, TokenSigner, mint_studio_token
from croupier.replays.format import Replay, from_binary, from_json, to_binary, to_json
from croupier.replays.signing import (
    ReplayKeys,
    Verdict,
    check,
    key_id,
    parse_public_key,
    public_key_text,
    sign,
    verify_signed,
)
from croupier.replays.timeline import timeline
from croupier.replays.verify import against_record
from croupier.service import cli, config
from croupier.service.bots import play_game
from croupier.service.cli import main
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

from .conftest import remake_chain

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
STUDIO = b"signing-tests-studio-secret-0123456789ab"


def signed_copy(replay: Replay, key: Ed25519PrivateKey = KEY) -> Replay:
    copy = from_binary(to_binary(replay))
    sign(copy, key)
    return copy


def test_every_kind_signed_is_valid_and_stays_valid_through_either_form(
    replays: dict[str, Replay],
) -> None:
    for name, replay in replays.items():
        assert check(replay, [KEY.public_key()]).verdict is Verdict.UNSIGNED, name
        signed = signed_copy(replay)
        for form in (signed, from_json(to_json(signed)), from_binary(to_binary(signed))):
            report, signature = verify_signed(form, [KEY.public_key()])
            assert report.ok, (name, report.lines())
            assert signature.verdict is Verdict.VALID and signature.key_id == key_id(
                KEY.public_key()
            )
            assert report.checks[-1] == f"signature: valid, by key {key_id(KEY.public_key())}"
        # The timeline names the key, and checks nothing (it has no keys).
        assert dict(timeline(signed).facts)["signature"].startswith(
            f"by key {key_id(KEY.public_key())}, not checked here"
        )
        assert dict(timeline(replay).facts)["signature"].startswith("none")
        # The page cannot know why: a signature is as easily taken out of an edited file.
        assert "or the signature was removed" in dict(timeline(replay).facts)["signature"]
        # Nobody's key but the signer's makes it hold; a reader without it is told whose it is.
        assert check(signed, [OTHER.public_key()]).verdict is Verdict.UNKNOWN_KEY
        assert check(signed, []).key_id == key_id(KEY.public_key())


@settings(max_examples=30, deadline=None)
@given(
    part=st.sampled_from(["game_id", "last_hash", "players"]),
    text=st.text(min_size=1, max_size=12),
)
def test_a_change_to_what_is_signed_breaks_the_signature(
    replays: dict[str, Replay], part: str, text: str
) -> None:
    original = replays["gin"]
    # The events are shared, not copied: nothing here changes them.
    signed = Replay(copy.deepcopy(original.header), original.events, copy.deepcopy(original.footer))
    sign(signed, KEY)
    if part == "players":
        signed.header.players.append(text)
    elif part == "game_id":
        signed.header.game_id += text
    else:
        changed = text + signed.footer.last_hash[len(text) :]
        # A text that is the hash's own first characters changes nothing (a CI run drew the
        # hash's first hex digit, and the signature was rightly still valid).
        assume(changed != signed.footer.last_hash)
        signed.footer.last_hash = changed
    assert check(signed, [KEY.public_key()]).verdict is Verdict.INVALID


def test_a_file_remade_from_its_seed_verifies_but_its_signature_does_not(
    replays: dict[str, Replay],
) -> None:
    """What the signature is for: once the seed is out, anyone can change a move's time and make
    the chain again; the file is then consistent, but no longer what the service signed."""
    forged = signed_copy(replays["hoola"])
    forged.events[-2].recorded_at_ms += 3_600_000
    remake_chain(forged)
    report, signature = verify_signed(forged, [KEY.public_key()])
    assert signature.verdict is Verdict.INVALID
    assert not report.ok and report.divergence is not None
    assert report.divergence.check == "signature"
    # Without the key, the file is only as good as its other checks: they pass.
    alone, unchecked = verify_signed(forged, [])
    assert alone.ok and unchecked.verdict is Verdict.UNKNOWN_KEY

    # The player ids, which no event holds, are covered too.
    renamed = signed_copy(replays["hoola"])
    renamed.header.players[:] = ["alice", "bob", "carol"]
    sign(renamed, KEY)
    renamed.header.players[1] = "mallory"
    assert verify_signed(renamed, [KEY.public_key()])[1].verdict is Verdict.INVALID


def test_the_store_comparison_leaves_the_signature_out(replays: dict[str, Replay]) -> None:
    """The signature is the exporter's word on the record, not part of it: a signed export is the
    store's record, byte for byte, whatever signed it."""
    replay = replays["rummy"]
    assert against_record(signed_copy(replay), replay) is None
    assert against_record(signed_copy(replay, OTHER), signed_copy(replay)) is None


def test_public_keys_read_back_and_bad_ones_are_one_line() -> None:
    text = public_key_text(KEY.public_key())
    assert key_id(parse_public_key(text)) == key_id(KEY.public_key())
    for bad, says in (
        (text.removeprefix("ed25519:"), "starts with 'ed25519:'"),
        ("ed25519:zz", "hex digits"),
        ("ed25519:" + "ab" * 31, "this one is 31"),
    ):
        with pytest.raises(ValueError, match=says):
            parse_public_key(bad)


def test_the_configured_keys(tmp_path: Path) -> None:
    assert config.replay_keys({}) == ReplayKeys()
    key_file = tmp_path / "replay.pem"
    result = CliRunner().invoke(main, ["replay", "keygen", str(key_file)])
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(key_file.stat().st_mode) == config.PRIVATE_FILE_MODE
    printed = result.output.strip().splitlines()[-1]
    keys = config.replay_keys(
        {
            config.REPLAY_KEY_FILE_ENV: str(key_file),
            config.REPLAY_PREVIOUS_KEYS_ENV: public_key_text(OTHER.public_key()),
        }
    )
    assert keys.signing is not None
    assert public_key_text(keys.signing.public_key()) == printed
    assert [key_id(k) for k in keys.trusted] == [
        key_id(parse_public_key(printed)),
        key_id(OTHER.public_key()),
    ]
    again = CliRunner().invoke(main, ["replay", "keygen", str(key_file)])
    assert again.exit_code == 1 and "is not overwritten" in again.output
    shown = CliRunner().invoke(main, ["replay", "public-key", str(key_file)])
    assert shown.exit_code == 0 and shown.stdout.strip() == printed

    not_a_key = tmp_path / "not-a-key.pem"
    not_a_key.write_text("hello")
    for env, says in (
        ({config.REPLAY_KEY_FILE_ENV: str(tmp_path / "missing.pem")}, "No such file"),
        ({config.REPLAY_KEY_FILE_ENV: str(not_a_key)}, "not an unencrypted PEM private key"),
        ({config.REPLAY_PREVIOUS_KEYS_ENV: "ed25519:00"}, "(entry 1)"),
    ):
        with pytest.raises(config.ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
            config.replay_keys(env)


def finished_gin(url: str, replay_keys: ReplayKeys) -> tuple[ServerThread, str]:
    """A server with ``replay_keys`` on the store at ``url`` (started) and a finished Gin hand
    recorded by it, created with player ids."""
    store = open_store(url)
    server = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(b"signing-tests-secret-0123456789abcdef"),
        studio_keys=KeyRing(STUDIO),
        replay_keys=replay_keys,
    )
    port = server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        game_id = play_game(
            channel,
            studio=mint_studio_token(STUDIO, int(time.time()) + 3600),
            seats=2,
            kind=common_pb2.GAME_KIND_GIN,
            preset="single-hand",
            rng=random.Random(7),
            players=["ann", "ben"],
        ).game_id
    return server, game_id


def test_the_service_signs_its_exports_and_vouches_for_them(tmp_path: Path) -> None:
    rotated = ReplayKeys(KEY, (OTHER.public_key(),))
    server, game_id = finished_gin(f"sqlite:///{tmp_path / 'games.sqlite3'}", rotated)
    studio = [("authorization", f"Bearer {mint_studio_token(STUDIO, int(time.time()) + 3600)}")]
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = service_pb2_grpc.GameServiceStub(channel)

            def verdict(data: bytes) -> service_pb2.VerifyReplayResponse:
                return stub.VerifyReplay(service_pb2.VerifyReplayRequest(replay=data))

            exported = stub.ExportReplay(
                service_pb2.ExportReplayRequest(game_id=game_id), metadata=studio
            ).replay
            replay = from_binary(exported)
            assert list(replay.header.players) == ["ann", "ben"]
            answer = verdict(exported)
            assert answer.ok and answer.signature == service_pb2.SIGNATURE_VERDICT_VALID
            assert answer.signature_key_id == key_id(KEY.public_key())

            # A player's id changed in a signed file: nothing else catches it.
            replay.header.players[0] = "mallory"
            changed = verdict(to_binary(replay))
            assert not changed.ok
            assert changed.signature == service_pb2.SIGNATURE_VERDICT_INVALID
            assert changed.divergence.check == "signature"

            # Signed with the key before the rotation: still vouched for; with a stranger's:
            # consistent, and said to be signed by a key the service does not hold.
            for key, expected in (
                (OTHER, service_pb2.SIGNATURE_VERDICT_VALID),
                (Ed25519PrivateKey.generate(), service_pb2.SIGNATURE_VERDICT_UNKNOWN_KEY),
            ):
                resigned = from_binary(exported)
                sign(resigned, key)
                answer = verdict(to_binary(resigned))
                assert answer.ok and answer.signature == expected
            unsigned = from_binary(exported)
            unsigned.footer.ClearField("signature")
            assert verdict(to_binary(unsigned)).signature == service_pb2.SIGNATURE_VERDICT_UNSIGNED
    finally:
        server.stop(grace=None)


def test_the_cli_signs_with_the_configured_key_and_checks_the_keys_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'games.sqlite3'}"
    server, game_id = finished_gin(url, ReplayKeys())
    server.stop(grace=None)
    key_file = tmp_path / "replay.pem"
    made = CliRunner().invoke(main, ["replay", "keygen", str(key_file)])
    public = made.output.strip().splitlines()[-1]

    def run(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(main, ["replay", *args])
        return result.exit_code, result.output

    unsigned, signed = tmp_path / "unsigned.json", tmp_path / "signed.replay"
    assert run("export", game_id, str(unsigned), "--store", url)[0] == 0
    monkeypatch.setenv(config.REPLAY_KEY_FILE_ENV, str(key_file))
    assert run("export", game_id, str(signed), "--store", url)[0] == 0
    # The configured key checks it; so does its public key alone, anywhere.
    code, output = run("verify", str(signed))
    assert (
        code == 0 and f"ok   signature: valid, by key {key_id(parse_public_key(public))}" in output
    )
    monkeypatch.delenv(config.REPLAY_KEY_FILE_ENV)
    code, output = run("verify", str(signed), "--public-key", public)
    assert code == 0 and "ok   signature: valid" in output and output.endswith("verified\n")
    # Without a key the file is consistent, and the reader is told how to check who signed it.
    code, output = run("verify", str(signed))
    assert code == 0 and "note signature: by key" in output and "give --public-key" in output
    code, output = run("verify", str(unsigned))
    assert code == 0 and "note signature: none" in output
    # Consistent, but not the service's for all the reader knows: not a plain "verified".
    assert output.endswith(f"verified, {cli.NOT_AUTHENTICATED}\n"), output
    # Asked for a signature by a key: an unsigned file, or another key's, fails.
    stranger = public_key_text(OTHER.public_key())
    for path, says in ((unsigned, "signature: none"), (signed, "not one of the keys given")):
        code, output = run("verify", str(path), "--public-key", stranger)
        last = output.splitlines()[-1]
        assert code == 1 and last.startswith("FAIL signature: ") and says in last, output
    # A signed file whose player ids were changed.
    replay = from_binary(signed.read_bytes())
    replay.header.players[0] = "mallory"
    forged = tmp_path / "forged.replay"
    forged.write_bytes(to_binary(replay))
    code, output = run("verify", str(forged), "--public-key", public)
    assert code == 1 and "FAIL the replay: signature" in output
    code, output = run("verify", str(signed), "--public-key", "ed25519:00")
    assert code == 1 and "--public-key: an Ed25519 public key is 32 bytes" in output


STANDALONE = Path(__file__).resolve().parents[2] / "replays" / "standalone_verify.py"


def test_the_standalone_verifier_checks_a_signature_with_the_key_given(
    replays: dict[str, Replay], tmp_path: Path
) -> None:
    public = public_key_text(KEY.public_key())
    signed, forged, unsigned = tmp_path / "s.replay", tmp_path / "f.json", tmp_path / "u.replay"
    replay = signed_copy(replays["koikoi"])
    signed.write_bytes(to_binary(replay))
    unsigned.write_bytes(to_binary(replays["koikoi"]))
    replay.header.players.append("mallory")
    forged.write_text(to_json(replay))

    def run(path: Path, *options: str, bare: bool = False) -> tuple[int, str]:
        # This interpreter, whose site-packages hold cryptography; bare: none (-I -S).
        isolation = ["-I", "-S"] if bare else []
        done = subprocess.run(
            [sys.executable, *isolation, str(STANDALONE), str(path), *options],
            capture_output=True,
            text=True,
        )
        return done.returncode, done.stdout + done.stderr

    code, output = run(signed, "--public-key", public)
    assert code == 0 and f"ok   signature: valid, by key {key_id(KEY.public_key())}" in output
    # Only a signature checked with a key makes the plain verdict, as in `croupier replay verify`:
    # a support agent who reads the last line alone must not take a consistent file for the
    # service's record.
    verdict = "verified: chain, seed, header, decoded copies, decks and footer settlements"
    assert output.splitlines()[-1] == verdict, output
    for path in (signed, unsigned):
        code, output = run(path)
        last = output.splitlines()[-1]
        assert code == 0 and last.startswith("verified, not authenticated: "), output
        assert "--public-key" in last, output
    code, output = run(forged, "--public-key", public)
    assert code == 1 and "FAIL signature: does NOT hold" in output
    code, output = run(unsigned, "--public-key", public)
    assert code == 1 and "FAIL signature: the file is not signed" in output
    code, output = run(signed, "--public-key", public_key_text(OTHER.public_key()))
    assert code == 1 and "not one of the keys given" in output
    # On a bare interpreter: every other check, and the signature named, not checked.
    code, output = run(signed, bare=True)
    assert code == 0 and "note signature: by key" in output and "give --public-key" in output
    code, output = run(signed, "--public-key", public, bare=True)
    assert code == 2 and "needs the cryptography package" in output
    code, output = run(signed, "--public-key", "ed25519:00")
    assert code == 2 and "not 'ed25519:' and 64 hex digits" in output
