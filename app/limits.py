"""The sizes a request may have: every id, seed and file a client sends is bounded here.

Beyond a bound a request is ``INVALID_ARGUMENT`` with reason ``TOO_LONG`` (or ``TOO_MANY``) and
the field; the README and the contract's comments state the same numbers. Why bound at all: the
stores index ids (PostgreSQL cannot index a 1 MB player id), a game's first event records its
client seeds (a 3.9 MB seed made a 12 MB replay no default client can read), and errors and logs
quote ids.
"""

from __future__ import annotations

from croupier.app.errors import invalid

#: Game ids are the server's UUIDs (36 characters); a little room for other forms.
MAX_GAME_ID = 64
#: Command ids are the client's (a UUID is 36 characters).
MAX_COMMAND_ID = 128
#: A studio's opaque player id.
MAX_PLAYER_ID = 128
#: A studio's CreateGame request id (a UUID is 36 characters).
MAX_REQUEST_ID = 128
#: The studio's reason for ending a game (EndGame): a sentence for people, kept in the log.
MAX_END_REASON = 256
#: Client seeds: at most this many, each at most ``MAX_CLIENT_SEED`` characters (a hex SHA-512
#: is 128).
MAX_CLIENT_SEEDS = 16
MAX_CLIENT_SEED = 256
#: A replay file given to VerifyReplay (the longest corpus game is about 200 kB; gRPC's default
#: message limit is 4 MiB, so the file's own bound answers first, with a reason).
MAX_REPLAY_BYTES = 3 * 1024 * 1024
#: A command's encoded size (bytes). The largest a game takes (a Rummy lay-down of a whole hand,
#: its jokers named) is a few hundred bytes; past this, a command of thousands of cards or named
#: jokers was read into the engine's objects and checked one by one on the event loop: 2 MB of
#: them held every game of the process for over a second, from one seat's ValidateCommand.
MAX_COMMAND_BYTES = 16 * 1024
#: Versions are SQL BIGINTs: a version past this cannot name an event.
MAX_VERSION = 2**63 - 1
#: A stream's heartbeat interval (StreamEventsRequest.heartbeat_s, PlayJoin.heartbeat_s): a
#: sign of life rarer than every five minutes tells a client nothing in time.
MAX_HEARTBEAT_S = 300


def check_text(value: str, field: str, limit: int) -> None:
    """``value`` is at most ``limit`` characters, without NUL (PostgreSQL's text cannot hold one
    and a C client would cut the id there)."""
    if len(value) > limit:
        raise invalid(
            "TOO_LONG", f"{field} is {len(value)} characters long; at most {limit}", field
        )
    if "\x00" in value:
        raise invalid("INVALID_CHARACTER", f"{field} cannot hold a NUL character", field)


def check_command_size(size: int) -> None:
    """A command's encoded ``size`` is at most :data:`MAX_COMMAND_BYTES`."""
    if size > MAX_COMMAND_BYTES:
        raise invalid(
            "TOO_LONG", f"command is {size} bytes long; at most {MAX_COMMAND_BYTES}", "command"
        )


def check_version(value: int, field: str) -> None:
    if value > MAX_VERSION:
        raise invalid("OUT_OF_RANGE", f"{field} is at most {MAX_VERSION}", field)


def check_heartbeat(value: int, field: str) -> None:
    if value > MAX_HEARTBEAT_S:
        raise invalid("OUT_OF_RANGE", f"{field} is at most {MAX_HEARTBEAT_S} seconds", field)
