"""Seed tickets: the server commits to its seed before the players choose theirs.

``CommitSeed`` answers a ticket and the commitment ``sha256(server_seed)``; the players see the
commitment, choose their seeds, and ``CreateGame`` takes the ticket with them (docs/shuffle.md,
"Seed tickets"). A ticket is stateless: ``st1.<kid>.<nonce>.<expires_at_ms>.<mac>``, where the
nonce is 32 random bytes (hex) and the MAC, under a key derived from Croupier's own secret
(``CROUPIER_SECRET``, the key ``kid`` names), covers the rest. The server seed is derived from
the nonce under another key derived from that secret, so it is in no ticket's clear text, and
any replica holding the secret derives it again without a read. Nothing is stored until a
ticket is used: the store then records its nonce, in the transaction that creates the game,
under a unique key that lets it make one game only (:class:`croupier.log.UsedTicket`).

Why stateless rather than a table of issued tickets: a table must be written at every
CommitSeed (tickets asked for and never used included) and swept of the expired ones; here only
used tickets are written, next to the game they made, and the one-use rule is the same unique
key on both stores as a creation's request id (``create_requests``).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field

from croupier.app.errors import NotFound, NotNow
from croupier.app.tokens import KID_HEX, MAX_NUMBER_DIGITS, AuthError, KeyRing
from croupier.log import UsedTicket

#: A ticket's version, its first part.
TICKET_PREFIX = "st1"
#: How long a ticket may wait for its game: a lobby's "show the commitment, let the player type
#: a seed" takes seconds to minutes; longer would only let a studio hold tickets in stock.
TICKET_TTL_MS = 10 * 60 * 1000
#: Random bytes of a ticket's nonce: as many as a server seed has, so that two tickets never
#: share one.
NONCE_BYTES = 32
#: The longest ticket CreateGame reads (one is about 160 characters; more is not one of ours).
MAX_TICKET = 256

# Why a ticket is refused (ErrorInfo.reason; docs/errors.md).
SEED_TICKET_NOT_FOUND = "SEED_TICKET_NOT_FOUND"
SEED_TICKET_EXPIRED = "SEED_TICKET_EXPIRED"
SEED_TICKET_USED = "SEED_TICKET_USED"

_SEED_LABEL = b"croupier seed ticket v1: server seed"
_MAC_LABEL = b"croupier seed ticket v1: mac"


@dataclass(frozen=True)
class Ticket:
    """A ticket as issued or read back: what CommitSeed answers, and the secret seed behind it."""

    ticket: str
    #: Secret until the game ends: kept out of the repr, so that no log line can hold it.
    server_seed: bytes = field(repr=False)
    expires_at_ms: int = 0
    #: The nonce (hex): what the store records of a used ticket.
    nonce: str = ""

    @property
    def commitment(self) -> str:
        return hashlib.sha256(self.server_seed).hexdigest()

    @property
    def used(self) -> UsedTicket:
        return UsedTicket(self.nonce, self.expires_at_ms)


def _subkey(secret: bytes, label: bytes) -> bytes:
    return hmac.new(secret, label, hashlib.sha256).digest()


def _mac(secret: bytes, kid: str, nonce: str, expires: str) -> str:
    message = f"{TICKET_PREFIX}:{kid}:{nonce}:{expires}".encode()
    return hmac.new(_subkey(secret, _MAC_LABEL), message, hashlib.sha256).hexdigest()


def _seed(secret: bytes, nonce: bytes) -> bytes:
    return hmac.new(_subkey(secret, _SEED_LABEL), nonce, hashlib.sha256).digest()


def issue(ring: KeyRing, nonce: bytes, now_ms: int, ttl_ms: int = TICKET_TTL_MS) -> Ticket:
    """A new ticket under the signing key, good for ``ttl_ms`` from ``now_ms``."""
    kid = ring.kid
    nonce_hex = nonce.hex()
    expires = str(now_ms + ttl_ms)
    mac = _mac(ring.signing, kid, nonce_hex, expires)
    return Ticket(
        f"{TICKET_PREFIX}.{kid}.{nonce_hex}.{expires}.{mac}",
        _seed(ring.signing, nonce),
        int(expires),
        nonce_hex,
    )


def _not_ours(why: str) -> NotFound:
    return NotFound(
        SEED_TICKET_NOT_FOUND,
        f"this seed ticket is not one this server issued ({why}): ask CommitSeed for one",
        field="seed_ticket",
    )


def read(ring: KeyRing, ticket: str, now_ms: int) -> Ticket:
    """The ticket CreateGame was given, checked: NOT_FOUND when this server did not issue it
    (malformed, forged, or signed with a key it no longer holds), FAILED_PRECONDITION when it
    has expired. Whether it was used is the store's to say, as the game is made."""
    parts = ticket.split(".")
    if len(ticket) > MAX_TICKET or len(parts) != 5 or parts[0] != TICKET_PREFIX:
        raise _not_ours("malformed")
    _, kid, nonce_hex, expires, mac = parts
    if (
        len(kid) != KID_HEX
        or len(nonce_hex) != 2 * NONCE_BYTES
        or not all(c in "0123456789abcdef" for c in nonce_hex)
        or not (expires.isdigit() and expires.isascii() and len(expires) <= MAX_NUMBER_DIGITS)
    ):
        raise _not_ours("malformed")
    try:
        secret = ring.key(kid)
    except AuthError:
        raise _not_ours("its key is not one this server holds") from None
    if not hmac.compare_digest(_mac(secret, kid, nonce_hex, expires).encode(), mac.encode()):
        raise _not_ours("its signature does not match")
    expires_at_ms = int(expires)
    if expires_at_ms <= now_ms:
        raise NotNow(
            SEED_TICKET_EXPIRED,
            f"this seed ticket expired (at {expires_at_ms} ms since the epoch): ask CommitSeed "
            "for another and show its commitment to the players again",
            {"expires_at_ms": str(expires_at_ms)},
            field="seed_ticket",
        )
    nonce = bytes.fromhex(nonce_hex)
    return Ticket(ticket, _seed(secret, nonce), expires_at_ms, nonce_hex)


def used_again() -> NotNow:
    """A ticket that made a game already (in any process): the store's unique key said so."""
    return NotNow(
        SEED_TICKET_USED,
        "this seed ticket made a game already: a ticket makes one game (a retry of that "
        "creation with its request id is answered with it)",
        field="seed_ticket",
    )
