"""Settings from the command line or the environment (``CROUPIER_*``)."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ADDRESS = "127.0.0.1:50051"
DEFAULT_STORE = f"sqlite:///{Path('data') / 'croupier.sqlite3'}"


@dataclass(frozen=True)
class Secret:
    value: bytes
    generated: bool


def token_secret() -> Secret:
    """``CROUPIER_SECRET`` (hex or text), else a fresh development secret (tokens die with it)."""
    configured = os.environ.get("CROUPIER_SECRET", "")
    if configured:
        try:
            return Secret(bytes.fromhex(configured), False)
        except ValueError:
            return Secret(configured.encode(), False)
    return Secret(secrets.token_bytes(32), True)
