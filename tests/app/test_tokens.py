"""Tokens and secrets (app/tokens.py) and the authorization entry (service/interceptor.py)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from croupier.app.errors import BadCredentials
from croupier.app.tokens import (
    INVALID_TOKEN,
    TOKEN_EXPIRED,
    UNKNOWN_KEY,
    AuthError,
    KeyRing,
    SeatIdentity,
    SecretError,
    TokenSigner,
    key_id,
    mint_player_token,
    mint_studio_token,
    parse_secret,
    verify_player_token,
    verify_studio_token,
)
from croupier.service.interceptor import bearer_token

KEY = b"k" * 32
OTHER = b"o" * 32
NOW = 1_700_000_000
keys = st.binary(min_size=32, max_size=64)
game_ids = st.uuids().map(str)
seats = st.integers(0, 6)
players = st.text(min_size=1, max_size=40)


# --- secrets ------------------------------------------------------------------------------------


@given(keys)
def test_a_secret_reads_back_from_hex_and_base64(secret: bytes) -> None:
    assert parse_secret("hex:" + secret.hex()) == secret
    assert parse_secret("HEX:" + secret.hex().upper()) == secret
    assert parse_secret("base64:" + base64.b64encode(secret).decode()) == secret
    urlsafe = base64.urlsafe_b64encode(secret).decode().rstrip("=")
    assert parse_secret(f"base64:{urlsafe}") == secret


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("test-secret-0123456789abcdef", "no hex: or base64: prefix"),
        ("ab" * 32, "no hex: or base64: prefix"),  # looks like hex: still not guessed at
        ("hex:" + "ab" * 31, "only 31 bytes"),
        ("base64:" + base64.b64encode(b"x" * 16).decode(), "only 16 bytes"),
        ("hex:zz" + "ab" * 32, "not valid hex"),
        ("base64:***", "not valid base64"),
        ("", "no hex: or base64: prefix"),
    ],
)
def test_a_bad_secret_says_what_and_how_to_fix(text: str, complaint: str) -> None:
    with pytest.raises(SecretError) as error:
        parse_secret(text)
    message = str(error.value)
    assert complaint in message and "\n" not in message
    assert "at least 32 bytes" in message and "secrets.token_hex(32)" in message


def test_a_key_ring_refuses_short_keys_and_names_keys_by_id() -> None:
    with pytest.raises(SecretError):
        KeyRing(b"short")
    with pytest.raises(SecretError):
        KeyRing(KEY, (b"short",))
    ring = KeyRing.of(KEY, [OTHER, KEY])
    assert ring.kid == key_id(KEY) and len(ring.kid) == 8 and key_id(OTHER) != ring.kid
    assert ring.key(key_id(OTHER)) == OTHER and set(ring.verifying()) == {KEY, OTHER}
    with pytest.raises(AuthError) as error:
        ring.key("00000000")
    assert error.value.reason == UNKNOWN_KEY


# --- seat tokens --------------------------------------------------------------------------------


@given(keys, game_ids, seats)
def test_seat_tokens_round_trip_and_name_their_key(key: bytes, game_id: str, seat: int) -> None:
    signer = TokenSigner(key)
    token = signer.issue(game_id, seat)
    assert token.startswith(f"v2.{key_id(key)}.")
    assert signer.verify(token) == SeatIdentity(game_id, seat)


@given(game_ids, seats, st.data())
def test_a_tampered_seat_token_is_refused(game_id: str, seat: int, data: st.DataObject) -> None:
    token = TokenSigner(KEY).issue(game_id, seat)
    index = data.draw(st.integers(0, len(token) - 1))
    replacement = data.draw(st.sampled_from("0123456789abcdef.v-"))
    tampered = token[:index] + replacement + token[index + 1 :]
    if tampered == token:
        return
    with pytest.raises(AuthError) as error:
        TokenSigner(KEY).verify(tampered)
    assert error.value.reason in (INVALID_TOKEN, UNKNOWN_KEY)


@given(game_ids, seats, st.integers(1, 3))
def test_a_seat_written_with_leading_zeros_is_refused(game_id: str, seat: int, zeros: int) -> None:
    """The MAC covers the seat's number: ``00`` for ``0`` kept it, one token with many spellings."""
    version, kid, game, written, mac = TokenSigner(KEY).issue(game_id, seat).split(".")
    with pytest.raises(AuthError) as error:
        TokenSigner(KEY).verify(".".join((version, kid, game, "0" * zeros + written, mac)))
    assert error.value.reason == INVALID_TOKEN


def test_a_token_of_no_known_shape_is_not_said_to_be_a_seat_token() -> None:
    """A studio's or a player's token mistyped reaches the seat tokens' check (it has neither
    prefix): its refusal names every kind, not a seat token the caller never sent."""
    with pytest.raises(AuthError) as error:
        TokenSigner(KEY).verify("garbage")
    assert error.value.reason == INVALID_TOKEN
    assert str(error.value) == "malformed token: not a seat, studio or player token"


@pytest.mark.parametrize("digits", [21, 4_301, 10_000])
def test_a_number_too_long_for_a_token_is_malformed_not_an_error(digits: int) -> None:
    """Python's int() refuses a string of over 4,300 digits with a ValueError: a seat or expiry
    that long, sent by anyone, was an INTERNAL error before it was a token's refusal."""
    number = "9" * digits
    kid = key_id(KEY)
    for token in (f"v2.{kid}.some-game.{number}.mac", f"v1.some-game.{number}.mac"):
        with pytest.raises(AuthError) as error:
            TokenSigner(KEY).verify(token)
        assert error.value.reason == INVALID_TOKEN
    for verify, kind in ((verify_studio_token, "studio"), (verify_player_token, "player")):
        shape = (
            f"{kind}.v1.{kid}.{number}.mac"
            if kind == "studio"
            else (f"{kind}.v1.{kid}.cGxheWVy.{number}.mac")
        )
        with pytest.raises(AuthError) as error:
            verify(KeyRing(KEY), shape, NOW)
        assert error.value.reason == INVALID_TOKEN, shape


def test_rotation_the_new_key_signs_and_the_old_still_verifies() -> None:
    old = TokenSigner(KEY)
    rotated = TokenSigner(KeyRing.of(OTHER, [KEY]))
    before = old.issue("g", 1)
    assert rotated.verify(before) == SeatIdentity("g", 1)
    after = rotated.issue("g", 1)
    assert after.split(".")[1] == key_id(OTHER) != before.split(".")[1]
    with pytest.raises(AuthError) as error:
        old.verify(after)  # the old server does not hold the new key
    assert error.value.reason == UNKNOWN_KEY
    with pytest.raises(AuthError):
        TokenSigner(OTHER).verify(before)  # the old key dropped: its tokens end


def test_first_version_seat_tokens_still_verify_with_any_key() -> None:
    """Seat tokens issued before key ids (a game in play across the upgrade)."""
    import hashlib
    import hmac

    mac = hmac.new(KEY, b"v1:g:2", hashlib.sha256).hexdigest()
    assert TokenSigner(KeyRing.of(OTHER, [KEY])).verify(f"v1.g.2.{mac}") == SeatIdentity("g", 2)
    with pytest.raises(AuthError):
        TokenSigner(OTHER).verify(f"v1.g.2.{mac}")


def test_seals_are_made_with_the_signing_key_and_opened_with_any() -> None:
    old, rotated = TokenSigner(KEY), TokenSigner(KeyRing.of(OTHER, [KEY]))
    seal = old.seal("snapshot", b"data")
    assert rotated.sealed("snapshot", b"data", seal)
    assert rotated.seal("snapshot", b"data") != seal
    assert not rotated.sealed("snapshot", b"other data", seal)
    assert not rotated.sealed("other purpose", b"data", seal)
    assert not TokenSigner(OTHER).sealed("snapshot", b"data", seal)


# --- studio and player tokens -------------------------------------------------------------------


@given(keys, st.integers(NOW + 1, NOW + 10**9))
def test_studio_tokens_verify_until_they_expire(key: bytes, expires: int) -> None:
    token = mint_studio_token(key, expires)
    assert token.startswith(f"studio.v1.{key_id(key)}.")
    assert verify_studio_token(KeyRing(key), token, NOW).expires_at_s == expires
    with pytest.raises(AuthError) as error:
        verify_studio_token(KeyRing(key), token, expires)
    assert error.value.reason == TOKEN_EXPIRED


@given(players, st.integers(NOW + 1, NOW + 10**9))
def test_player_tokens_name_any_player_id(player: str, expires: int) -> None:
    token = mint_player_token(KEY, player, expires)
    assert token.startswith(f"player.v1.{key_id(KEY)}.") and token.count(".") == 5
    identity = verify_player_token(KeyRing(KEY), token, NOW)
    assert (identity.player, identity.expires_at_s) == (player, expires)
    with pytest.raises(AuthError) as error:
        verify_player_token(KeyRing(KEY), token, expires + 1)
    assert error.value.reason == TOKEN_EXPIRED


@given(players, players)
def test_a_player_token_cannot_be_moved_to_another_player(player: str, other: str) -> None:
    parts = mint_player_token(KEY, player, NOW + 60).split(".")
    parts[3] = base64.urlsafe_b64encode(other.encode()).decode().rstrip("=")
    moved = ".".join(parts)
    if player == other:
        assert verify_player_token(KeyRing(KEY), moved, NOW).player == player
        return
    with pytest.raises(AuthError) as error:
        verify_player_token(KeyRing(KEY), moved, NOW)
    assert error.value.reason == INVALID_TOKEN


def test_kinds_do_not_stand_in_for_each_other() -> None:
    ring = KeyRing(KEY)
    studio = mint_studio_token(KEY, NOW + 60)
    player = mint_player_token(KEY, "p", NOW + 60)
    seat = TokenSigner(KEY).issue("g", 0)
    for token in (player, seat):
        with pytest.raises(AuthError):
            verify_studio_token(ring, token, NOW)
    for token in (studio, seat):
        with pytest.raises(AuthError):
            verify_player_token(ring, token, NOW)
    for token in (studio, player):
        with pytest.raises(AuthError):
            TokenSigner(KEY).verify(token)
    # An expiry extended by hand breaks the signature.
    parts = studio.split(".")
    parts[3] = str(int(parts[3]) + 3600)
    with pytest.raises(AuthError) as error:
        verify_studio_token(ring, ".".join(parts), NOW)
    assert error.value.reason == INVALID_TOKEN
    with pytest.raises(ValueError):
        mint_player_token(KEY, "", NOW + 60)


# --- the authorization entry --------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "BeArEr"])
def test_the_bearer_scheme_is_case_insensitive(scheme: str) -> None:
    assert bearer_token([("authorization", f"{scheme} abc")]) == "abc"
    assert bearer_token([("authorization", f" {scheme}   abc  ")]) == "abc"


def test_no_authorization_is_anonymous() -> None:
    assert bearer_token([]) is None and bearer_token(None) is None
    assert bearer_token([("x-other", "Bearer abc")]) is None


@pytest.mark.parametrize("value", ["abc", "Token abc", "Basic abc", "Bearer", "Bearer   ", ""])
def test_another_scheme_a_bare_or_empty_token_is_refused(value: str) -> None:
    with pytest.raises(BadCredentials) as error:
        bearer_token([("authorization", value)])
    assert error.value.reason == "BAD_AUTH_SCHEME"


def test_two_authorization_entries_are_refused() -> None:
    with pytest.raises(BadCredentials) as error:
        bearer_token([("authorization", "Bearer a"), ("authorization", "Bearer a")])
    assert error.value.reason == "DUPLICATE_AUTHORIZATION"
