"""Seat tokens: ``v1.<game id>.<seat>.<HMAC-SHA256(secret, "v1:<game id>:<seat>") hex>``.

Signed by the server, checked without a database read; the token alone says who is acting.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass


class AuthError(Exception):
    pass


@dataclass(frozen=True)
class SeatIdentity:
    game_id: str
    seat: int


class TokenSigner:
    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("the token secret needs at least 16 bytes")
        self._secret = secret

    def _mac(self, game_id: str, seat: int) -> str:
        return hmac.new(self._secret, f"v1:{game_id}:{seat}".encode(), hashlib.sha256).hexdigest()

    def seal(self, purpose: str, data: bytes) -> str:
        """An HMAC of ``data`` for ``purpose`` under the server's secret (snapshots carry one, so
        that only what this service wrote is ever read back)."""
        key = hmac.new(self._secret, f"v1:{purpose}".encode(), hashlib.sha256).digest()
        return hmac.new(key, data, hashlib.sha256).hexdigest()

    def issue(self, game_id: str, seat: int) -> str:
        return f"v1.{game_id}.{seat}.{self._mac(game_id, seat)}"

    def verify(self, token: str) -> SeatIdentity:
        parts = token.split(".")
        if len(parts) != 4 or parts[0] != "v1" or not parts[2].isdigit():
            raise AuthError("malformed seat token")
        game_id, seat = parts[1], int(parts[2])
        if not hmac.compare_digest(parts[3], self._mac(game_id, seat)):
            raise AuthError("seat token signature does not match")
        return SeatIdentity(game_id, seat)
