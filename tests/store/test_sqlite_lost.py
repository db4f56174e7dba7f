"""The SQLite store's file deleted (or its folder), or another file put in its place, while the
store runs: its open connections would go on writing a file nobody finds again, and the next
start would begin empty. Found within a turn of the checkpointer (or :data:`sqlite.LOOK_S` of
a write), every later call is refused :class:`StoreUnavailable`, nothing more is acknowledged,
an error is logged once, and the lost file, still open, holds every write acknowledged: copied
from ``/proc/PID/fd/N``, it is the store."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from croupier.log import EventStore, GameRecord, NewEvent, StoreUnavailable
from croupier.service.store import sqlite
from croupier.service.store.sqlite import SqliteEventStore
from tests.store.games import new_game

#: How soon a loss must be found: a few turns of the (shortened) checkpointer and look.
FOUND_WITHIN_S = 2.0


@pytest.fixture(autouse=True)
def often(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite, "CHECKPOINT_S", 0.02)
    monkeypatch.setattr(sqlite, "LOOK_S", 0.05)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteEventStore]:
    store = SqliteEventStore(tmp_path / "data" / "events.sqlite3")
    yield store
    store.close()


def _create(store: EventStore) -> str:
    game_id = str(uuid.uuid4())
    store.create_game(
        GameRecord(game_id, "hoola", 2, b"s" * 32, "c" * 64, 1),
        [NewEvent("E", b"x" * 300)],
        10,
    )
    return game_id


def _until_refused(store: EventStore, acknowledged: list[str]) -> float:
    """Create games until one is refused; how long after the first call that took."""
    started = time.monotonic()
    while True:
        try:
            acknowledged.append(_create(store))
        except StoreUnavailable:
            return time.monotonic() - started
        assert time.monotonic() < started + FOUND_WITHIN_S, "the loss was not found"
        time.sleep(0.002)


def _errors(logged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in logged if line["log_level"] == "error"]


def _games_in(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return {row[0] for row in conn.execute("SELECT game_id FROM games")}
    finally:
        conn.close()


def _delete_file(path: Path) -> bytes | None:
    path.unlink()
    return None


def _delete_folder(path: Path) -> bytes | None:
    shutil.rmtree(path.parent)
    return None


def _replace(path: Path) -> bytes | None:
    """A copy of the file (another inode) renamed over it, as a restore under a running server
    would: what it holds."""
    copy = path.with_name("copy.sqlite3")
    shutil.copyfile(path, copy)
    copy.rename(path)
    return path.read_bytes()


@pytest.mark.parametrize(
    ("lose", "found"),
    [(_delete_file, "deleted"), (_delete_folder, "deleted"), (_replace, "replaced")],
)
def test_a_lost_file_is_found_and_every_later_call_refused_with_the_error_said_once(
    store: SqliteEventStore, tmp_path: Path, lose: Callable[[Path], bytes | None], found: str
) -> None:
    view = store.without_waiting()  # the server's: with the checkpointer
    acknowledged = [_create(view) for _ in range(50)]
    with capture_logs() as logged:
        put_in_its_place = lose(store.path)
        _until_refused(view, acknowledged)
        assert store.lost
        # Nothing is acknowledged from then on: writes, and reads too (a thread's own
        # connection, or a new one, would not read the store the next start finds).
        for call in (
            lambda: _create(view),
            lambda: _create(store),
            lambda: view.read(acknowledged[0]),
            lambda: store.read(acknowledged[0]),
        ):
            with pytest.raises(StoreUnavailable, match=f"was {found}"):
                call()
        time.sleep(10 * sqlite.CHECKPOINT_S)
    errors = _errors(logged)
    assert len(errors) == 1, logged
    said = errors[0]
    assert said["path"] == str(store.path) and found in said["event"]
    assert "/proc/" in said["what_to_do"]
    if put_in_its_place is not None:  # the file put in its place is not written to
        assert store.path.read_bytes() == put_in_its_place
    # The file still open, copied from /proc, holds every write acknowledged (the WAL copied
    # into it by the checkpointer), and nothing refused.
    if sys.platform == "linux":
        open_as = said["open_as"]
        assert open_as and open_as.startswith(f"/proc/{os.getpid()}/fd/")
        rescued = tmp_path / "rescued.sqlite3"
        shutil.copyfile(open_as, rescued)
        assert _games_in(rescued) == set(acknowledged)


def test_a_store_without_a_checkpointer_finds_it_at_a_write(store: SqliteEventStore) -> None:
    acknowledged = [_create(store)]
    with capture_logs() as logged:
        store.path.unlink()
        took = _until_refused(store, acknowledged)
    assert took < FOUND_WITHIN_S
    assert len(_errors(logged)) == 1


def test_a_lost_store_is_not_made_again_at_its_path(store: SqliteEventStore) -> None:
    """Not opened again (the operator decides): its close leaves the folder deleted."""
    view = store.without_waiting()
    _create(view)
    shutil.rmtree(store.path.parent)
    _until_refused(view, [])
    store.close()
    assert not store.path.parent.exists()


def test_a_sound_store_is_never_found_lost(store: SqliteEventStore) -> None:
    view = store.without_waiting()
    with capture_logs() as logged:
        deadline = time.monotonic() + 20 * sqlite.LOOK_S
        while time.monotonic() < deadline:
            _create(view)
            _create(store)
            time.sleep(0.005)
    assert not store.lost
    assert not _errors(logged) and not [x for x in logged if x["log_level"] == "warning"]


def test_a_store_started_where_its_file_went_missing_says_so(tmp_path: Path) -> None:
    path = tmp_path / "data" / "events.sqlite3"
    with capture_logs() as logged:
        SqliteEventStore(path).close()  # a first run: its folder made, nothing said
    assert not logged
    path.unlink()
    with capture_logs() as logged:
        SqliteEventStore(path).close()
    [warned] = [line for line in logged if line["log_level"] == "warning"]
    assert warned["path"] == str(path)
    assert f"{path.name}.migrate.lock" in warned["found_beside"]


def test_a_credential_beside_a_missing_file_is_a_trace_of_a_store(tmp_path: Path) -> None:
    path = tmp_path / "events.sqlite3"
    (tmp_path / "dev-studio-credential").write_text("x")
    with capture_logs() as logged:
        SqliteEventStore(path).close()
    [warned] = [line for line in logged if line["log_level"] == "warning"]
    assert warned["found_beside"] == ["dev-studio-credential"]


def test_a_new_store_beside_another_store_is_no_store_gone_missing(tmp_path: Path) -> None:
    """A second store started in a folder where a first one lives (a fresh store for a load
    test beside the production one): the development credential there is the first one's, and
    nothing tells the operator to restore a backup."""
    SqliteEventStore(tmp_path / "first.sqlite3").close()
    (tmp_path / "dev-studio-credential").write_text("x")
    with capture_logs() as logged:
        SqliteEventStore(tmp_path / "second.sqlite3").close()
    assert not [line for line in logged if line["log_level"] == "warning"]
    # The second's own traces still say so when its file goes missing.
    (tmp_path / "second.sqlite3").unlink()
    with capture_logs() as logged:
        SqliteEventStore(tmp_path / "second.sqlite3").close()
    [warned] = [line for line in logged if line["log_level"] == "warning"]
    assert warned["found_beside"] == ["second.sqlite3.migrate.lock"]


def test_a_new_store_file_is_its_owners_only(tmp_path: Path) -> None:
    """The games table holds the server seed of every game in play: another user of the machine
    who reads the file derives every hand. A new file, and the WAL beside it, are the owner's."""
    path = tmp_path / "data" / "games.sqlite3"
    store = SqliteEventStore(path)
    try:
        new_game(store)  # written: the WAL and its index exist now
        for made in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            assert made.exists(), made
            assert stat.S_IMODE(made.stat().st_mode) == sqlite.STORE_FILE_MODE, made
    finally:
        store.close()
    # One readable by every user (made before, or by hand) is said, and left as the operator set.
    path.chmod(0o644)
    with capture_logs() as logged:
        SqliteEventStore(path).close()
    assert [line["path"] for line in logged if "readable by every user" in line["event"]] == [
        str(path)
    ]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
