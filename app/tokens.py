"""Credentials: who may do what, as HMAC-SHA256-signed tokens checked without a database read.

Three kinds of bearer token, told apart by their prefix (formats in ``docs/credentials.md``):

- a **seat token** ``v2.<kid>.<game id>.<seat>.<mac>``, signed by Croupier with its secret
  (``CROUPIER_SECRET``) and returned by CreateGame: it acts as one seat of one game;
- a **studio token** ``studio.v1.<kid>.<expires>.<mac>``, signed by the studio with the studio
  secret (``CROUPIER_STUDIO_SECRET``): it creates games and names their players;
- a **player token** ``player.v1.<kid>.<player>.<expires>.<mac>`` (the player id base64url),
  signed by the studio: it recalls that player's finished games.

Every kind names the key it was signed with (``kid``), so that keys rotate: one key signs, the
previous ones still verify (:class:`KeyRing`). ``expires`` is in seconds since the epoch.

Secrets are text with an explicit encoding, ``hex:…`` or ``base64:…``, of at least
:data:`MIN_SECRET_BYTES` bytes (:func:`parse_secret`): text that merely looks like hex is never
guessed at, and a short secret is refused rather than weakened.

Minting studio and player tokens is pure (:func:`mint_studio_token`, :func:`mint_player_token`):
the studio's backend calls them (or ``croupier token …``, or its own code in any language, after
the format) and never sends its secret to anyone.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass, field

#: A secret shorter than this is refused: 256 bits, the size of HMAC-SHA256's output.
MIN_SECRET_BYTES = 32
HEX_PREFIX = "hex:"
BASE64_PREFIX = "base64:"
#: How to make a good secret, for error messages and the docs.
MAKE_SECRET = "python3 -c \"import secrets; print('hex:' + secrets.token_hex(32))\""
#: Hex digits of a key id: enough to tell a handful of configured keys apart, too few to matter.
KID_HEX = 8

SEAT_V1 = "v1"  # the first seat tokens, without a key id: verified with every key (see verify)
SEAT_V2 = "v2"
STUDIO_PREFIX = "studio.v1."
PLAYER_PREFIX = "player.v1."

# Why a token is refused (the reason clients see, as ``ErrorInfo.reason``).
INVALID_TOKEN = "INVALID_TOKEN"  # malformed, or its signature does not match
#: What a token of no known shape is told: a seat's, a studio's and a player's all fit none.
MALFORMED_TOKEN = "malformed token: not a seat, studio or player token"
UNKNOWN_KEY = "UNKNOWN_KEY"  # signed with a key this server does not hold (rotated out?)
TOKEN_EXPIRED = "TOKEN_EXPIRED"


class SecretError(ValueError):
    """A configured secret that cannot be used; the message says what is wrong and how to fix."""


class AuthError(Exception):
    """A token that is not ours, or no longer good, with the machine-readable ``reason``."""

    def __init__(self, reason: str, message: str, metadata: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.metadata = metadata or {}


def parse_secret(text: str) -> bytes:
    """``hex:…`` or ``base64:…`` (standard or URL-safe alphabet) of at least 32 bytes."""
    text = text.strip()
    scheme, _, encoded = text.partition(":")
    need = (
        f"needs hex:… or base64:… of at least {MIN_SECRET_BYTES} bytes; "
        f"make one with `{MAKE_SECRET}`"
    )
    try:
        if f"{scheme.lower()}:" == HEX_PREFIX:
            value = bytes.fromhex(encoded)
        elif f"{scheme.lower()}:" == BASE64_PREFIX:
            standard = encoded.replace("-", "+").replace("_", "/")
            value = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
        else:
            value = None
    except (ValueError, binascii.Error) as error:
        raise SecretError(f"not valid {scheme.lower()} ({error}); {need}") from None
    if value is None:
        raise SecretError(f"no hex: or base64: prefix; {need}")
    if len(value) < MIN_SECRET_BYTES:
        raise SecretError(f"only {len(value)} bytes; {need}")
    return value


def key_id(secret: bytes) -> str:
    """A key's public name: a digest of it under its own label, so that it reveals nothing."""
    return hashlib.sha256(b"croupier key id\0" + secret).hexdigest()[:KID_HEX]


def _mac(secret: bytes, message: str) -> str:
    return hmac.new(secret, message.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class KeyRing:
    """One key signs; it and the previous ones verify (a token names its key by ``kid``)."""

    signing: bytes
    previous: tuple[bytes, ...] = ()
    _by_kid: dict[str, bytes] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        keys: dict[str, bytes] = {}
        for key in (self.signing, *self.previous):
            if len(key) < MIN_SECRET_BYTES:
                raise SecretError(f"a key needs at least {MIN_SECRET_BYTES} bytes")
            keys.setdefault(key_id(key), key)
        object.__setattr__(self, "_by_kid", keys)

    @classmethod
    def of(cls, signing: bytes, previous: Iterable[bytes] = ()) -> KeyRing:
        return cls(signing, tuple(previous))

    @property
    def kid(self) -> str:
        """The signing key's id."""
        return key_id(self.signing)

    def key(self, kid: str) -> bytes:
        found = self._by_kid.get(kid)
        if found is None:
            # The key id in the metadata, and so in the call's log line: an operator tells a
            # rotation missed on one replica from another deployment's tokens.
            raise AuthError(
                UNKNOWN_KEY,
                f"the token's key {kid!r} is not one this server holds",
                {"key_id": kid},
            )
        return found

    def verifying(self) -> tuple[bytes, ...]:
        return tuple(self._by_kid.values())

    def kids(self) -> tuple[str, ...]:
        """The ids of the keys it verifies with, the signing key's first (safe to log: every
        token carries its key's id)."""
        return tuple(self._by_kid)


def _check(expected: str, mac: str, what: str) -> None:
    if not hmac.compare_digest(expected.encode(), mac.encode()):
        raise AuthError(INVALID_TOKEN, f"{what} signature does not match")


#: A number in a token (a seat, an expiry) has at most this many digits: 2^64 has 20. Longer is
#: malformed, and must be refused before ``int`` reads it (which refuses over 4,300 digits with a
#: ValueError, an INTERNAL error where a token's refusal is due).
MAX_NUMBER_DIGITS = 20


def _is_number(text: str) -> bool:
    return text.isdigit() and text.isascii() and len(text) <= MAX_NUMBER_DIGITS


def _is_seat(text: str) -> bool:
    """A seat as :meth:`TokenSigner.issue` writes it, without leading zeros: the MAC covers the
    seat's number, not its text, so ``00`` or ``000`` also passed for seat 0, one token with
    many spellings (a list of tokens refused, a cache by token, a log search miss them)."""
    return _is_number(text) and text == str(int(text))


def _expiry(text: str, now_s: int, what: str) -> int:
    if not _is_number(text):
        raise AuthError(INVALID_TOKEN, f"malformed {what}")
    expires = int(text)
    if expires <= now_s:
        raise AuthError(TOKEN_EXPIRED, f"the {what} expired (at {expires} s since the epoch)")
    return expires


# --- seat tokens (Croupier signs) -------------------------------------------------------------


@dataclass(frozen=True)
class SeatIdentity:
    game_id: str
    seat: int


class TokenSigner:
    """Croupier's own keys: seat tokens and the seals of snapshots."""

    def __init__(self, keys: KeyRing | bytes) -> None:
        self.ring = keys if isinstance(keys, KeyRing) else KeyRing(keys)

    @staticmethod
    def _seat_mac(secret: bytes, version: str, kid: str, game_id: str, seat: int) -> str:
        if version == SEAT_V1:
            return _mac(secret, f"v1:{game_id}:{seat}")
        return _mac(secret, f"v2:{kid}:{game_id}:{seat}")

    @staticmethod
    def _seal(secret: bytes, purpose: str, data: bytes) -> str:
        key = hmac.new(secret, f"v1:{purpose}".encode(), hashlib.sha256).digest()
        return hmac.new(key, data, hashlib.sha256).hexdigest()

    def seal(self, purpose: str, data: bytes) -> str:
        """An HMAC of ``data`` for ``purpose`` under the signing key (snapshots carry one, so
        that only what this service wrote is ever read back)."""
        return self._seal(self.ring.signing, purpose, data)

    def sealed(self, purpose: str, data: bytes, seal: str) -> bool:
        """Whether ``seal`` is :meth:`seal`'s under any of the keys (a rotation keeps the
        snapshots written before it)."""
        return any(
            hmac.compare_digest(self._seal(key, purpose, data).encode(), seal.encode())
            for key in self.ring.verifying()
        )

    def issue(self, game_id: str, seat: int) -> str:
        kid = self.ring.kid
        mac = self._seat_mac(self.ring.signing, SEAT_V2, kid, game_id, seat)
        return f"{SEAT_V2}.{kid}.{game_id}.{seat}.{mac}"

    def verify(self, token: str) -> SeatIdentity:
        parts = token.split(".")
        if len(parts) == 5 and parts[0] == SEAT_V2 and _is_seat(parts[3]):
            _, kid, game_id, seat_text, mac = parts
            seat = int(seat_text)
            _check(self._seat_mac(self.ring.key(kid), SEAT_V2, kid, game_id, seat), mac, "seat")
            return SeatIdentity(game_id, seat)
        if len(parts) == 4 and parts[0] == SEAT_V1 and _is_seat(parts[2]):
            # Seat tokens issued before key ids (games in play across the upgrade): they name no
            # key, so every key is tried. Deprecated; dropped once those games are over.
            _, game_id, seat_text, mac = parts
            seat = int(seat_text)
            for key in self.ring.verifying():
                if hmac.compare_digest(
                    self._seat_mac(key, SEAT_V1, "", game_id, seat).encode(), mac.encode()
                ):
                    return SeatIdentity(game_id, seat)
            raise AuthError(INVALID_TOKEN, "seat token signature does not match")
        # Any token without a studio or player prefix ends here (core.authenticate): it may have
        # been meant as any of the three, so the message does not say it was a seat's.
        raise AuthError(INVALID_TOKEN, MALFORMED_TOKEN)


# --- studio and player tokens (the studio signs) ----------------------------------------------


@dataclass(frozen=True)
class StudioIdentity:
    """The studio's backend: it may create games and name their players."""

    kid: str
    expires_at_s: int


@dataclass(frozen=True)
class PlayerIdentity:
    """A player as the studio vouches for them: they may recall their own finished games."""

    player: str
    expires_at_s: int


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
    except (ValueError, binascii.Error):
        raise AuthError(INVALID_TOKEN, "malformed player token") from None


def _studio_mac(secret: bytes, kid: str, expires: str) -> str:
    return _mac(secret, f"croupier studio v1:{kid}:{expires}")


def _player_mac(secret: bytes, kid: str, player: str, expires: str) -> str:
    return _mac(secret, f"croupier player v1:{kid}:{player}:{expires}")


def mint_studio_token(secret: bytes, expires_at_s: int) -> str:
    """The studio credential CreateGame takes, good until ``expires_at_s`` (epoch seconds)."""
    kid = KeyRing(secret).kid
    expires = str(int(expires_at_s))
    return f"{STUDIO_PREFIX}{kid}.{expires}.{_studio_mac(secret, kid, expires)}"


def mint_player_token(secret: bytes, player: str, expires_at_s: int) -> str:
    """A token that recalls ``player``'s games (ListRecentGames, GetRecentGame) until
    ``expires_at_s``; the studio hands it to that player's client."""
    if not player:
        raise ValueError("a player token names a player")
    kid = KeyRing(secret).kid
    encoded = _b64(player)
    expires = str(int(expires_at_s))
    return f"{PLAYER_PREFIX}{kid}.{encoded}.{expires}.{_player_mac(secret, kid, encoded, expires)}"


def verify_studio_token(keys: KeyRing, token: str, now_s: int) -> StudioIdentity:
    parts = token.removeprefix(STUDIO_PREFIX).split(".")
    if not token.startswith(STUDIO_PREFIX) or len(parts) != 3:
        raise AuthError(INVALID_TOKEN, "malformed studio token")
    kid, expires, mac = parts
    _check(_studio_mac(keys.key(kid), kid, expires), mac, "studio token")
    return StudioIdentity(kid, _expiry(expires, now_s, "studio token"))


def verify_player_token(keys: KeyRing, token: str, now_s: int) -> PlayerIdentity:
    parts = token.removeprefix(PLAYER_PREFIX).split(".")
    if not token.startswith(PLAYER_PREFIX) or len(parts) != 4:
        raise AuthError(INVALID_TOKEN, "malformed player token")
    kid, encoded, expires, mac = parts
    _check(_player_mac(keys.key(kid), kid, encoded, expires), mac, "player token")
    player = _unb64(encoded)
    if not player:
        raise AuthError(INVALID_TOKEN, "malformed player token")
    return PlayerIdentity(player, _expiry(expires, now_s, "player token"))
