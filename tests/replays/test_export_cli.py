"""``croupier replay export --format json|binary``: the form by the option, else by OUT's name."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
from click.testing import CliRunner

from croupier.app.tokens import KeyRing, TokenSigner, mint_studio_token
from croupier.replays.format import from_binary, from_json, to_binary, to_json
from croupier.replays.timeline import iso_time
from croupier.service.bots import GameResult, play_game
from croupier.service.cli import main
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.v1 import common_pb2, service_pb2, service_pb2_grpc

from .conftest import remake_chain

STUDIO = b"export-cli-tests-studio-secret-0123456789"
CORPUS_GAME = Path(__file__).resolve().parents[2] / "replays" / "corpus" / "gin-standard.replay"


@contextlib.contextmanager
def serving(url: str) -> Iterator[grpc.Channel]:
    """A channel to a server on the store at ``url`` (studio key ``STUDIO``), until the block
    ends; the server and the store are closed then."""
    store = open_store(url)
    server = ServerThread(
        "127.0.0.1:0",
        store,
        TokenSigner(b"export-cli-tests-secret-0123456789abc"),
        studio_keys=KeyRing(STUDIO),
    )
    port = server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield channel
    finally:
        server.stop(grace=None)
        store.close()


def played(channel: grpc.Channel, players: tuple[str, ...] = ()) -> GameResult:
    """A Gin hand played to its end through ``channel`` (as bots.play_game answers)."""
    return play_game(
        channel,
        studio=mint_studio_token(STUDIO, int(time.time()) + 3600),
        seats=2,
        kind=common_pb2.GAME_KIND_GIN,
        preset="single-hand",
        rng=random.Random(14),
        players=players,
    )


def finished_game(url: str) -> str:
    """A finished Gin hand recorded by the service in the store at ``url``; its game id."""
    with serving(url) as channel:
        return played(channel).game_id


def test_export_writes_the_form_asked_for(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'games.sqlite3'}"
    game_id = finished_game(url)

    def export(name: str, *options: str) -> bytes:
        out = tmp_path / name
        result = CliRunner().invoke(
            main, ["replay", "export", game_id, str(out), "--store", url, *options]
        )
        assert result.exit_code == 0, result.output
        return out.read_bytes()

    binary = export("game.replay")
    replay = from_binary(binary)
    assert replay.header.game_id == game_id
    # By the name: JSON for .json; the option wins over the name either way.
    as_json = export("game.json")
    assert to_binary(from_json(as_json.decode("utf-8"))) == binary
    assert export("game.replay.txt", "--format", "json") == as_json
    assert export("game-binary.json", "--format", "binary") == binary
    result = CliRunner().invoke(main, ["replay", "export", game_id, "x", "--format", "xml"])
    assert result.exit_code == 2 and "xml" in result.output


def test_verify_against_the_store_finds_a_file_remade_with_another_time(tmp_path: Path) -> None:
    """A player's file can be consistent (its chain remade from the revealed seed) and still not
    be what the service recorded: ``verify --against-store`` compares it with the record."""
    url = f"sqlite:///{tmp_path / 'games.sqlite3'}"
    game_id = finished_game(url)
    exported = tmp_path / "game.json"
    made = CliRunner().invoke(main, ["replay", "export", game_id, str(exported), "--store", url])
    assert made.exit_code == 0, made.output
    verified = CliRunner().invoke(main, ["replay", "verify", str(exported), "--against-store", url])
    assert verified.exit_code == 0, verified.output
    assert "ok   the store's record" in verified.output

    # A move's recorded time moved an hour later, the chain made again: still consistent.
    replay = from_json(exported.read_text())
    moved = replay.events[-2]
    moved.recorded_at_ms += 3_600_000
    remake_chain(replay)
    forged = tmp_path / "forged.json"
    forged.write_text(to_json(replay))
    alone = CliRunner().invoke(main, ["replay", "verify", str(forged)])
    assert alone.exit_code == 0, alone.output
    against = CliRunner().invoke(main, ["replay", "verify", str(forged), "--against-store", url])
    assert against.exit_code == 1
    recorded = moved.recorded_at_ms - 3_600_000
    assert (  # each moment read as its UTC time too
        f"FAIL event {moved.version}: the service's record, at recorded_at_ms: "
        f"expected {recorded} ({iso_time(recorded)}), "
        f"found {moved.recorded_at_ms} ({iso_time(moved.recorded_at_ms)})"
    ) in against.output
    other = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    open_store(other).close()
    elsewhere = CliRunner().invoke(
        main, ["replay", "verify", str(exported), "--against-store", other]
    )
    assert elsewhere.exit_code == 1 and f"has no game {game_id}" in elsewhere.output


def test_a_players_own_export_is_the_record_against_the_store(tmp_path: Path) -> None:
    """``ExportReplay`` gives the studio's player ids to the studio alone, so the file a player
    exports (with a seat's token, or none) names no players. ``verify --against-store`` once
    failed every such file at ``header.players``: the player's own untouched file read as an
    edited one. It is the record but for the ids it leaves out, and the line says whom the record
    seats; a file that names other players than the record's still fails."""
    url = f"sqlite:///{tmp_path / 'games.sqlite3'}"
    players = ("player-ana", "player-bo")
    with serving(url) as channel:
        game = played(channel, players)
        exported = (
            service_pb2_grpc.GameServiceStub(channel)
            .ExportReplay(
                service_pb2.ExportReplayRequest(game_id=game.game_id),
                metadata=(("authorization", f"Bearer {game.tokens[1]}"),),
            )
            .replay
        )
    assert not from_binary(exported).header.players  # the seat's file: no player ids
    own = tmp_path / "own.replay"
    own.write_bytes(exported)
    verified = CliRunner().invoke(main, ["replay", "verify", str(own), "--against-store", url])
    assert verified.exit_code == 0, verified.output
    assert (
        "ok   the store's record: game "
        f"{game.game_id}, {len(from_binary(exported).events)} events, the same bytes but the "
        "player ids"
    ) in verified.output
    assert "the record seats seat 0 player-ana, seat 1 player-bo" in verified.output

    named = from_binary(exported)
    named.header.players.extend(["player-ana", "mallory"])
    wrong = tmp_path / "wrong.replay"
    wrong.write_bytes(to_binary(named))
    against = CliRunner().invoke(main, ["replay", "verify", str(wrong), "--against-store", url])
    assert against.exit_code == 1
    assert (
        "FAIL the replay: the service's record, at header.players[1]: expected 'player-bo', "
        "found 'mallory'"
    ) in against.output


def test_a_store_path_with_no_store_is_refused_not_made(tmp_path: Path, monkeypatch) -> None:
    """A mistyped path, or the default relative one from another directory, once made a new
    empty store and then said it had no game: as if the player's file were not the record."""
    monkeypatch.chdir(tmp_path)
    missing = "sqlite:///data/croupier.sqlite3"
    commands = [
        ["replay", "verify", str(CORPUS_GAME), "--against-store", missing],
        ["replay", "export", "some-game", str(tmp_path / "out.replay"), "--store", missing],
    ]
    for command in commands:
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert f"no SQLite store at {tmp_path / 'data' / 'croupier.sqlite3'}" in result.output
        assert "has no game" not in result.output
        assert not (tmp_path / "data").exists()


def test_a_store_that_cannot_be_opened_is_one_line_for_export_and_verify(tmp_path: Path) -> None:
    """Before, export answered a store URL of another scheme with a traceback."""
    store = "mysql://user@db/games"
    commands = [
        ["replay", "export", "some-game", str(tmp_path / "out.replay"), "--store", store],
        ["replay", "verify", str(CORPUS_GAME), "--against-store", store],
    ]
    for command in commands:
        result = CliRunner().invoke(main, command)
        # click's one-line error (its exit), not the StoreOpenError's traceback
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert "unsupported store URL scheme 'mysql'" in result.output
