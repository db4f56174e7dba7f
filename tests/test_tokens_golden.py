"""The golden tokens the TypeScript client's minting is held to
(clients/typescript/test/tokens.golden.json) are the ones the service mints and verifies: were
the Python side to change, the file would no longer say what the server takes."""

from __future__ import annotations

import json
from pathlib import Path

from croupier.app.tokens import (
    KeyRing,
    key_id,
    mint_player_token,
    mint_studio_token,
    parse_secret,
    verify_player_token,
    verify_studio_token,
)

GOLDEN = Path(__file__).resolve().parent.parent / "clients/typescript/test/tokens.golden.json"


def test_the_golden_tokens_are_the_service_s() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    expires = golden["expiresAtS"]
    assert len(golden["cases"]) >= 2
    for case in golden["cases"]:
        secret = parse_secret(case["secret"])
        assert key_id(secret) == case["keyId"]
        assert mint_studio_token(secret, expires) == case["studio"]
        assert mint_player_token(secret, case["player"], expires) == case["playerToken"]
        # And the server takes them (before they expire).
        keys = KeyRing(secret)
        verify_studio_token(keys, case["studio"], expires - 1)
        assert verify_player_token(keys, case["playerToken"], expires - 1).player == case["player"]
