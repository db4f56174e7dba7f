"""The access policy (app/callers.py): whom each kind of token lets a call act for.

Every use case of the core asks here first; the gRPC tests meet these refusals through a server,
these check the whole policy directly, for any game, seat and claim."""

from __future__ import annotations

import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from croupier.app.callers import (
    ANONYMOUS,
    Caller,
    at_table,
    player_of,
    seat_of,
    seat_or_spectator,
    seat_token_of,
    studio_of,
    watcher,
)
from croupier.app.errors import (
    MISSING_TOKEN,
    NO_SUCH_SEAT,
    PLAYER_TOKEN_REQUIRED,
    SEAT_MISMATCH,
    SEAT_TOKEN_REQUIRED,
    STUDIO_CREDENTIAL_REQUIRED,
    TOKEN_FOR_OTHER_GAME,
    AppError,
    BadCredentials,
    BadRequest,
    Forbidden,
)
from croupier.app.tokens import PlayerIdentity, SeatIdentity, StudioIdentity
from croupier.log import GameRecord

game_ids = st.uuids().map(str)
seats = st.integers(0, 6)
STUDIO = Caller(studio=StudioIdentity("kid", 2_000_000_000))
PLAYER = Caller(player=PlayerIdentity("alice", 2_000_000_000))


@pytest.fixture(autouse=True)
def _fresh_log_context() -> None:
    structlog.contextvars.clear_contextvars()


def _refusal(call: object) -> AppError:
    assert callable(call)
    with pytest.raises(AppError) as refused:
        call()
    return refused.value


@given(game_ids, seats, game_ids, st.none() | seats)
def test_a_seat_token_acts_for_its_own_game_and_seat_only(
    game_id: str, seat: int, asked_game: str, claimed: int | None
) -> None:
    caller = Caller(SeatIdentity(game_id, seat))
    if asked_game != game_id:
        error = _refusal(lambda: seat_of(caller, asked_game, claimed))
        assert isinstance(error, Forbidden) and error.reason == TOKEN_FOR_OTHER_GAME
    elif claimed is not None and claimed != seat:
        error = _refusal(lambda: seat_of(caller, asked_game, claimed))
        assert isinstance(error, Forbidden) and error.reason == SEAT_MISMATCH
        assert error.metadata == {"token_seat": str(seat)}
    else:
        assert seat_of(caller, asked_game, claimed) == seat
        # The call's log line names the game and the seat it acts for.
        assert structlog.contextvars.get_contextvars() == {"game_id": game_id, "seat": seat}
    # A seat token watches, and reads settlements, as its seat too: never as a spectator.
    if asked_game == game_id:
        assert seat_or_spectator(caller, game_id) == seat == watcher(caller, game_id)


@given(game_ids, st.none() | seats)
def test_studio_and_player_tokens_are_spectators_who_claim_no_seat(
    game_id: str, claimed: int | None
) -> None:
    for caller in (STUDIO, PLAYER):
        error = _refusal(lambda caller=caller: seat_token_of(caller))
        assert isinstance(error, BadCredentials) and error.reason == SEAT_TOKEN_REQUIRED
        if claimed is None:
            assert seat_or_spectator(caller, game_id) is None
            assert watcher(caller, game_id) is None
        else:
            error = _refusal(lambda caller=caller: watcher(caller, game_id, claimed))
            assert isinstance(error, BadCredentials) and error.reason == SEAT_TOKEN_REQUIRED


@given(game_ids)
def test_nobody_in_particular_reads_what_anyone_may_but_acts_and_watches_for_nobody(
    game_id: str,
) -> None:
    assert seat_or_spectator(ANONYMOUS, game_id) is None  # a finished game's replay, say
    for call in (lambda: seat_of(ANONYMOUS, game_id), lambda: watcher(ANONYMOUS, game_id)):
        error = _refusal(call)
        assert isinstance(error, BadCredentials) and error.reason == MISSING_TOKEN


def test_only_the_studio_creates_and_only_a_player_recalls() -> None:
    seat = Caller(SeatIdentity("g", 0))
    assert studio_of(STUDIO) is STUDIO.studio
    assert player_of(PLAYER) == "alice"
    for caller in (seat, PLAYER, ANONYMOUS):
        error = _refusal(lambda caller=caller: studio_of(caller))
        assert error.reason == STUDIO_CREDENTIAL_REQUIRED
        # It names each call it guards: a CommitSeed refused so says so too.
        assert all(call in error.message for call in ("creating", "ending", "CommitSeed"))
    for caller, given_as in ((seat, "a seat token"), (STUDIO, "studio's"), (ANONYMOUS, "none")):
        error = _refusal(lambda caller=caller: player_of(caller))
        assert error.reason == PLAYER_TOKEN_REQUIRED and given_as in error.message


@pytest.mark.parametrize("game_id", ["", "g" * 65])
def test_a_game_id_is_given_and_bounded_before_any_token_is_looked_at(game_id: str) -> None:
    for call in (
        lambda: seat_of(ANONYMOUS, game_id),
        lambda: seat_or_spectator(ANONYMOUS, game_id),
    ):
        error = _refusal(call)
        assert isinstance(error, BadRequest) and error.field == "game_id"
    # A Play join names its own field.
    assert _refusal(lambda: seat_of(ANONYMOUS, game_id, field="join.game_id")).field == (
        "join.game_id"
    )


@given(st.integers(1, 7), st.integers(-3, 10))
def test_a_seat_the_game_does_not_have_is_refused_once_the_game_is_read(
    game_seats: int, seat: int
) -> None:
    record = GameRecord("g", "hoola", game_seats, b"s" * 32, "c", 0)
    at_table(record, None)  # a spectator
    if 0 <= seat < game_seats:
        at_table(record, seat)
    else:
        error = _refusal(lambda: at_table(record, seat))
        assert isinstance(error, Forbidden) and error.reason == NO_SUCH_SEAT
        assert error.metadata == {"seats": str(game_seats)}
