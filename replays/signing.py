"""Replay files signed by the service that recorded their game (docs/replay-format.md, "Signed
files").

A replay that verifies is consistent: its decks come from its committed seeds and its moves follow
the rules. Once a game is over, though, its revealed seed keys the chain, so anyone can change what
no rule decides (a move's recorded time, the player ids) and make the chain again. The store's
record settles that (``croupier replay verify --against-store``), but only for whoever can read the
store, and only while it keeps the game. A service with a replay key signs every file it exports,
so that anyone holding its public key can tell its files from edited ones, without the store.

What is signed is small and the same in every language: the game id, the last event's chain hash
and the header's player ids. The chain ties the last hash to every event, and the verifier ties
the header and footer to the events; the player ids are the one part no event holds. So a file
whose signature holds and whose chain verifies is the service's record. A signature alone, on a
file whose chain does not verify, proves nothing of its events.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from croupier.replays.format import Replay
from croupier.replays.verify import Divergence, Report, verify
from croupier.v1 import replay_pb2

ALGORITHM = "ed25519"
#: Keeps a replay signature from being taken for a signature over anything else.
DOMAIN = b"croupier/replay/v1/signature\x00"
#: How a public key is written out and read back: this, then its 32 raw bytes in hex.
PUBLIC_KEY_PREFIX = "ed25519:"
RAW_KEY_BYTES = 32
#: A key id is this many bytes of sha256 over the raw public key, in hex.
KEY_ID_BYTES = 8


class ReplayKeyError(ValueError):
    """A key that cannot be read (the message says which and why, in one line)."""


class Verdict(Enum):
    """What a file's signature says against the keys a reader trusts."""

    UNSIGNED = "unsigned"
    VALID = "valid"
    INVALID = "invalid"
    UNKNOWN_KEY = "unknown key"


@dataclass(frozen=True)
class SignatureCheck:
    verdict: Verdict
    #: The key the file names; empty when it is unsigned.
    key_id: str = ""

    def line(self) -> str:
        """The check in words, as the verifiers print it."""
        match self.verdict:
            case Verdict.UNSIGNED:
                return "signature: none (the file is not signed)"
            case Verdict.VALID:
                return f"signature: valid, by key {self.key_id}"
            case Verdict.INVALID:
                return (
                    f"signature: does NOT hold for key {self.key_id}: the file was changed after "
                    "it was signed"
                )
            case Verdict.UNKNOWN_KEY:
                return f"signature: by key {self.key_id}, which is not one of the keys given"


@dataclass(frozen=True)
class ReplayKeys:
    """A service's replay keys: the one it signs its exports with (none: they go out unsigned),
    and the public keys it signed with before a rotation, whose files it still vouches for."""

    signing: Ed25519PrivateKey | None = None
    previous: tuple[Ed25519PublicKey, ...] = ()

    @property
    def trusted(self) -> tuple[Ed25519PublicKey, ...]:
        own = (self.signing.public_key(),) if self.signing is not None else ()
        return own + self.previous


def raw_public(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public: Ed25519PublicKey) -> str:
    return hashlib.sha256(raw_public(public)).digest()[:KEY_ID_BYTES].hex()


def public_key_text(public: Ed25519PublicKey) -> str:
    """The public key as ``croupier replay verify --public-key`` takes it."""
    return PUBLIC_KEY_PREFIX + raw_public(public).hex()


def parse_public_key(text: str) -> Ed25519PublicKey:
    """``ed25519:`` and 64 hex digits (:func:`public_key_text`)."""
    value = text.strip()
    if not value.startswith(PUBLIC_KEY_PREFIX):
        raise ReplayKeyError(f"a public key starts with {PUBLIC_KEY_PREFIX!r}; this one does not")
    try:
        raw = bytes.fromhex(value.removeprefix(PUBLIC_KEY_PREFIX))
    except ValueError:
        raise ReplayKeyError("a public key is 'ed25519:' then hex digits") from None
    if len(raw) != RAW_KEY_BYTES:
        raise ReplayKeyError(
            f"an Ed25519 public key is {RAW_KEY_BYTES} bytes ({2 * RAW_KEY_BYTES} hex digits); "
            f"this one is {len(raw)}"
        )
    return Ed25519PublicKey.from_public_bytes(raw)


def new_private_key_pem() -> bytes:
    """A fresh key as a PKCS#8 PEM file holds it (what ``openssl genpkey -algorithm ed25519``
    writes)."""
    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    """The Ed25519 key of a PKCS#8 PEM file with no password."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ReplayKeyError(f"{path}: {error.strerror or error}") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise ReplayKeyError(f"{path}: not an unencrypted PEM private key ({error})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ReplayKeyError(f"{path}: not an Ed25519 key (make one with `croupier replay keygen`)")
    return key


def signed_bytes(replay: Replay) -> bytes:
    """What a signature covers: the domain, then the game id, the last hash and each player id,
    each as its UTF-8 length (u32 big-endian) and its UTF-8."""
    parts = [replay.header.game_id, replay.footer.last_hash, *replay.header.players]
    out = bytearray(DOMAIN)
    for part in parts:
        data = part.encode("utf-8")
        out += struct.pack(">I", len(data)) + data
    return bytes(out)


def sign(replay: Replay, key: Ed25519PrivateKey) -> None:
    """Sign ``replay`` (its footer's ``signature``) with the service's replay key."""
    replay.footer.signature.CopyFrom(
        replay_pb2.ReplaySignature(
            algorithm=ALGORITHM,
            key_id=key_id(key.public_key()),
            signature=key.sign(signed_bytes(replay)),
        )
    )


def check(replay: Replay, trusted: Sequence[Ed25519PublicKey]) -> SignatureCheck:
    """The file's signature against the ``trusted`` keys (the one it names, by its key id)."""
    if not replay.footer.HasField("signature"):
        return SignatureCheck(Verdict.UNSIGNED)
    signature = replay.footer.signature
    named = signature.key_id
    by_id = {key_id(public): public for public in trusted}
    public = by_id.get(named)
    if public is None or signature.algorithm != ALGORITHM:
        return SignatureCheck(Verdict.UNKNOWN_KEY, named)
    try:
        public.verify(signature.signature, signed_bytes(replay))
    except InvalidSignature:
        return SignatureCheck(Verdict.INVALID, named)
    return SignatureCheck(Verdict.VALID, named)


def verify_signed(
    replay: Replay, trusted: Sequence[Ed25519PublicKey]
) -> tuple[Report, SignatureCheck]:
    """:func:`croupier.replays.verify.verify`, and the file's signature against the ``trusted``
    keys. A signature that holds is one more check passed; one that does not, for a key it names
    and the reader trusts, fails the file (it was changed after it was signed). An unsigned file,
    or one signed by a key the reader does not hold, is only as good as its other checks."""
    report = verify(replay)
    signature = check(replay, trusted)
    if signature.verdict is Verdict.VALID:
        report.checks.append(signature.line())
    elif signature.verdict is Verdict.INVALID and report.divergence is None:
        report.divergence = Divergence(
            0,
            "signature",
            f"key {signature.key_id}'s signature over the game id, last hash and player ids",
            "a signature that does not hold for them",
        )
    return report, signature
