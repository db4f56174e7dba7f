"""The reference web client (clients/web) and what the HTTP listener serves for it: the lobby
(only with ``--lobby``), a finished game's timeline, the client itself; and whole games of every
kind played through the page in headless Chromium (Debian's ``chromium``, driven by
``playwright-core`` from npm: clients/web/test/play.mjs)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import structlog.testing

from croupier.app.tokens import KeyRing, TokenSigner, mint_player_token
from croupier.service.bots import auth, choose
from croupier.service.http import HttpListener, create_http_app
from croupier.service.lobby import Lobby, LobbyError, LobbySettings
from croupier.service.lobby import Request as LobbyRequest
from croupier.service.server import ServerThread
from croupier.service.store import open_store
from croupier.service.web import CLIENT_POLICY, DEFAULT_WEB_ROOT, PAGE_POLICY, web_app
from croupier.v1 import service_pb2, service_pb2_grpc

SECRET = b"web-test-secret-0123456789abcdef-0123456789"
#: The lobby mints its studio tokens with the server's studio key: any key does.
STUDIO_SECRET = b"web-test-studio-secret-0123456789abcdef"
STUDIO_KEYS = KeyRing(STUDIO_SECRET)
WEB = Path(__file__).resolve().parents[2] / "clients" / "web"
SCREENSHOTS = Path(os.environ.get("CROUPIER_SCREENSHOTS", "/tmp/croupier-screenshots"))
#: One whole game through the page, at most (a stuck page must fail the test, not hang it;
#: within pytest-timeout's 300 s a test).
GAME_TIMEOUT_S = 280
#: The bots' pause in the tests: enough for a person to see nothing, and the games go fast.
BOT_DELAY_MS = 20


@dataclass
class Served:
    thread: ServerThread
    stub: service_pb2_grpc.GameServiceStub
    url: str
    lobby: Lobby | None


@contextlib.contextmanager
def serve(tmp: Path, lobby: LobbySettings | None, web_root: Path | None = None) -> Iterator[Served]:
    """A server with its HTTP listener serving the web side, with the lobby when ``lobby``."""
    store = open_store(f"sqlite:///{tmp / 'web.sqlite3'}")
    thread = ServerThread("127.0.0.1:0", store, TokenSigner(SECRET), studio_keys=STUDIO_KEYS)
    port = thread.start()
    games = Lobby(thread.core, lobby) if lobby is not None else None
    app = create_http_app(thread.core, root=web_app(thread.core, web_root, games))
    listener = HttpListener(app, "127.0.0.1:0", grace_s=0.1)
    http_port = thread.call(listener.start())
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Served(
            thread,
            service_pb2_grpc.GameServiceStub(channel),
            f"http://127.0.0.1:{http_port}",
            games,
        )
    finally:
        channel.close()
        thread.call(listener.stop())
        if games is not None:
            thread.call(games.close())
        thread.stop(grace=None)
        store.close()


def request(
    url: str, body: Any = None, method: str = "GET", raw: bytes | None = None
) -> tuple[int, dict[str, str], str]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    sent = urllib.request.Request(
        url, data=data, method=method, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(sent, timeout=30) as answer:
            return answer.status, dict(answer.headers.items()), answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers.items()), error.read().decode()


GIN = {"kind": "gin", "preset": "single-hand", "seats": 2, "humans": 1}


# --- the lobby, the timeline, the pages: over HTTP -----------------------------------------------


def test_without_lobby_the_lobby_route_does_not_exist(tmp_path: Path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text("<p>the web client</p>")
    with serve(tmp_path, None, root) as served:
        for path in ("/lobby/games", "/lobby/commitments"):
            # Not the static site's bare 405: what is missing, and how to turn it on.
            status, _, text = request(f"{served.url}{path}", GIN, "POST")
            assert status == 404 and json.loads(text)["reason"] == "NO_LOBBY", text
            assert "--lobby" in json.loads(text)["message"]
        assert request(f"{served.url}/lobby")[0] == 404
        assert request(f"{served.url}/")[2] == "<p>the web client</p>"


def test_without_a_built_client_root_says_how_to_build_it_until_it_is_built(
    tmp_path: Path,
) -> None:
    """Until the client is built, / says how (other paths are 404); built while the server
    runs, it is served at the next reload, as the page says."""
    root = tmp_path / "later"
    with serve(tmp_path, None, root) as served:
        status, _, page = request(f"{served.url}/")
        assert status == 200 and "make web" in page and "ListPresets" in page
        assert request(f"{served.url}/lobby/games", GIN, "POST")[0] == 404
        assert request(f"{served.url}/assets/app.js")[0] == 404
        root.mkdir()
        (root / "index.html").write_text("<p>built meanwhile</p>")
        status, _, page = request(f"{served.url}/")
        assert (status, page) == (200, "<p>built meanwhile</p>")


def test_the_built_client_is_sent_gzipped_and_revalidated_at_each_load(tmp_path: Path) -> None:
    """The bundle went out uncompressed (187 KB where gzip makes 58 KB) and with no
    cache-control: its name carries no content hash, so a browser kept an old build for hours
    after a deployment. Now gzip where asked for, and no-cache (a 304 by the ETag)."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text("<p>the web client</p>")
    bundle = b"export const x = 1;\n" * 2000
    (root / "main.js").write_bytes(bundle)
    with serve(tmp_path, None, root) as served:
        for path in ("/", "/main.js"):
            sent = urllib.request.Request(
                f"{served.url}{path}", headers={"accept-encoding": "gzip"}
            )
            with urllib.request.urlopen(sent, timeout=30) as answer:
                headers = {k.lower(): v for k, v in answer.headers.items()}
                body = answer.read()
            assert headers["cache-control"] == "no-cache"
            if path == "/main.js":
                assert headers["content-encoding"] == "gzip"
                assert len(body) < len(bundle) // 10 and gzip.decompress(body) == bundle
        # Without gzip asked for, the file as it is.
        status, headers, text = request(f"{served.url}/main.js")
        assert status == 200 and text.encode() == bundle
        assert "content-encoding" not in {k.lower() for k in headers}


def _headers(answer: tuple[int, dict[str, str], str]) -> dict[str, str]:
    return {k.lower(): v for k, v in answer[1].items()}


def test_pages_forbid_framing_sniffing_and_scripts_of_others_and_tokens_are_not_kept(
    tmp_path: Path,
) -> None:
    """The page holds a seat's token and plays its moves: before, no page said a word of
    framing, sniffing or scripts, and the lobby's answer (the seat tokens) nothing of caches."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text("<p>the web client</p>")
    page_headers = {
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
    }
    with serve(tmp_path, LobbySettings(bot_delay_ms=0), root) as served:
        client = _headers(request(f"{served.url}/"))
        assert client.items() >= {**page_headers, "content-security-policy": CLIENT_POLICY}.items()
        assert "frame-ancestors 'none'" in CLIENT_POLICY and "connect-src 'self'" in CLIENT_POLICY
        made = request(f"{served.url}/lobby/games", GIN, "POST")
        assert made[0] == 201 and _headers(made)["cache-control"] == "no-store"
        api = request(
            f"{served.url}/croupier.v1.GameService/ListPresets", {"kind": "GAME_KIND_GIN"}, "POST"
        )
        assert api[0] == 200
        assert (
            _headers(api).items()
            >= {
                "cache-control": "no-store",
                "x-content-type-options": "nosniff",
            }.items()
        )
        game = json.loads(made[2])
        assert _play_seat(served, game["game_id"], game["seats"][0]["token"]) > 0
        timeline = request(f"{served.url}/games/{game['game_id']}/timeline")
        assert timeline[0] == 200, timeline
        assert (
            _headers(timeline).items()
            >= {
                **page_headers,
                "content-security-policy": PAGE_POLICY,
            }.items()
        )
    with serve(tmp_path / "unbuilt", None, tmp_path / "not-built") as served:
        not_built = request(f"{served.url}/")
        assert "make web" in not_built[2]
        assert _headers(not_built)["content-security-policy"] == PAGE_POLICY


def test_the_lobby_and_timeline_answer_a_store_away_as_503_with_retry_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CreateGame's refusals reach the lobby's page with Connect's HTTP status for their code:
    the store away is 503 with the delay to wait, as on the gRPC port (it was 400, the
    caller's fault)."""
    from croupier.app.errors import Unavailable

    async def away(*_: object, **__: object) -> None:
        raise Unavailable("the game store cannot be reached now", 1500)

    with serve(tmp_path, LobbySettings()) as served:
        assert served.lobby is not None
        monkeypatch.setattr(served.lobby.core, "create_game", away)
        monkeypatch.setattr(served.lobby.core, "export_replay", away)
        answers = [
            request(f"{served.url}/lobby/games", GIN, "POST"),
            request(f"{served.url}/games/some-game/timeline"),
        ]
    for status, headers, body in answers:
        assert (status, json.loads(body)["reason"]) == (503, "STORE_UNAVAILABLE")
        assert {k.lower(): v for k, v in headers.items()}["retry-after"] == "2"


def _play_seat(served: Served, game_id: str, token: str) -> int:
    """Play one seat through gRPC with the bots' choices until the game is over; the moves."""
    rng, moves = random.Random(7), 0
    while True:
        view = served.stub.GetView(
            service_pb2.GetViewRequest(game_id=game_id), metadata=auth(token)
        )
        if view.finished:
            return moves
        legal = served.stub.ListLegalMoves(
            service_pb2.ListLegalMovesRequest(game_id=game_id), metadata=auth(token)
        )
        if not legal.moves:  # the bot's turn: wait for its move (a stream, not a sleep)
            stream = served.stub.StreamEvents(
                service_pb2.StreamEventsRequest(game_id=game_id, after_version=view.version),
                metadata=auth(token),
                timeout=30,
            )
            next(stream, None)
            stream.cancel()
            continue
        try:
            served.stub.SubmitCommand(
                service_pb2.SubmitCommandRequest(
                    game_id=game_id,
                    command_id=uuid.uuid4().hex,
                    expected_version=legal.version,
                    command=choose(list(legal.moves), rng).command,
                ),
                metadata=auth(token),
            )
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.ABORTED:  # ABORTED: the bot moved first
                raise
        moves += 1
        assert moves < 500, "the game does not end"


def test_a_finished_game_s_timeline_is_made_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anyone with a finished game's link may ask for its timeline again and again: making it
    (the export, the whole verification, the HTML) took the event loop half a second for a long
    match, every game on the process waiting meanwhile. The page is kept and made once."""
    from croupier.app.core import Croupier

    exports = 0
    export = Croupier.export_replay

    async def counted(self: Croupier, *args: Any, **kwargs: Any) -> bytes:
        nonlocal exports
        exports += 1
        return await export(self, *args, **kwargs)

    monkeypatch.setattr(Croupier, "export_replay", counted)
    with serve(tmp_path, LobbySettings(bot_delay_ms=0)) as served:
        made = json.loads(request(f"{served.url}/lobby/games", GIN, "POST")[2])
        assert _play_seat(served, made["game_id"], made["seats"][0]["token"]) > 0
        timeline = f"{served.url}/games/{made['game_id']}/timeline"
        first, second = request(timeline), request(timeline)
    assert first[0] == 200 and first[2] == second[2]
    assert exports == 1


def test_lobby_game_bots_play_the_other_seats_and_the_timeline_shows_at_the_end(
    tmp_path: Path,
) -> None:
    with serve(tmp_path, LobbySettings(bot_delay_ms=0)) as served:
        status, _, text = request(f"{served.url}/lobby/games", GIN, "POST")
        assert status == 201, text
        made = json.loads(text)
        seats = made["seats"]
        assert [s["human"] for s in seats] == [True, False]
        assert "token" in seats[0] and "token" not in seats[1]  # a bot's token stays inside
        game_id = made["game_id"]
        timeline = f"{served.url}/games/{game_id}/timeline"
        assert request(timeline)[0] == 404  # in play: its seed is secret
        assert json.loads(request(f"{served.url}/lobby")[2]) == {"games": 1, "max_games": 16}
        assert _play_seat(served, game_id, seats[0]["token"]) > 0
        replay = served.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game_id))
        assert {e.seat for e in replay.events if e.HasField("seat")} == {0, 1}  # the bot played
        status, _, page = request(timeline)
        assert status == 200 and "Final settlement" in page and "<table>" in page
        assert request(f"{served.url}/games/no-such-game/timeline")[0] == 404
        # The game is over: it leaves the lobby, its slot free again (polled, with a deadline).
        deadline = time.monotonic() + 30
        while (
            json.loads(request(f"{served.url}/lobby")[2])["games"] and time.monotonic() < deadline
        ):
            served.thread.call(asyncio.sleep(0.02))
        assert json.loads(request(f"{served.url}/lobby")[2])["games"] == 0


def test_the_lobby_s_bots_leave_every_between_rounds_move_to_people_as_the_page_says() -> None:
    """The page tells a player that bots leave the next deal to people (src/render.ts,
    BETWEEN_ROUNDS_MOVES): the lobby's bots must leave the same moves, every game's (Gin's bots
    once dealt its next hand themselves), and each is a move some game's command has."""
    from croupier.service.lobby import BETWEEN_ROUNDS
    from croupier.v1 import service_pb2 as pb

    listed = re.search(
        r"BETWEEN_ROUNDS_MOVES[^=]*= new Set\(\[(.*?)\]\)",
        (WEB / "src" / "render.ts").read_text(),
        re.S,
    )
    assert listed is not None
    page = {
        re.sub(r"([A-Z])", lambda m: "_" + m[1].lower(), name)
        for name in re.findall(r'"(\w+)"', listed[1])
    }
    assert page == BETWEEN_ROUNDS
    game_moves = {
        move.name
        for game in pb.Command.DESCRIPTOR.oneofs_by_name["game"].fields
        for move in game.message_type.oneofs_by_name["move"].fields
    }
    assert game_moves >= BETWEEN_ROUNDS and "next_hand" in BETWEEN_ROUNDS


def test_the_page_says_factors_in_the_timeline_s_words() -> None:
    """The page said a table's close's factor as "table balance" where the timeline and the demo
    say "balance paid at the table's close": its words for recorded names are the engine's."""
    from croupier.engine.settlement import FACTOR_WORDS

    listed = re.search(
        r"FACTOR_WORDS[^=]*= \{(.*?)\};", (WEB / "src" / "render.ts").read_text(), re.S
    )
    assert listed is not None
    page = dict(re.findall(r'(\w+): "([^"]*)"', listed[1]))
    assert page == FACTOR_WORDS


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({**GIN, "kind": "poker"}, "BAD_KIND"),
        ({**GIN, "seats": 1}, "BAD_SEATS"),
        ({**GIN, "seats": True}, "BAD_SEATS"),
        ({**GIN, "humans": 3}, "BAD_HUMANS"),
        ({**GIN, "preset": "x" * 65}, "BAD_PRESET"),
        ({**GIN, "overrides": {"hoola": {"rounds": 1}}}, "BAD_OVERRIDES"),
        ({**GIN, "overrides": {"gin": {"no_such_option": 1}}}, "BAD_OVERRIDES"),
        ({**GIN, "preset": "no-such-preset"}, "UNKNOWN_PRESET"),
        ([1, 2], "BAD_REQUEST"),
    ],
)
def test_the_lobby_refuses_what_it_cannot_deal(
    tmp_path: Path, body: Any, reason: str, lobby_server: Served
) -> None:
    status, _, text = request(f"{lobby_server.url}/lobby/games", body, "POST")
    assert status == 400 and json.loads(text)["reason"] == reason, text


@pytest.fixture(scope="module")
def lobby_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # Every test's games come from one address (127.0.0.1): the lobby's bound, not its own.
    settings = LobbySettings(burst=100, per_address=LobbySettings.max_games)
    with serve(tmp_path_factory.mktemp("lobby"), settings) as served:
        yield served


def test_the_lobby_refuses_long_or_broken_bodies(lobby_server: Served) -> None:
    url = f"{lobby_server.url}/lobby/games"
    assert request(url, raw=b"{" + b" " * 5000 + b"}", method="POST")[0] == 413
    status, _, text = request(url, raw=b"{not json", method="POST")
    assert status == 400 and json.loads(text)["reason"] == "BAD_REQUEST"
    # JSON nested deeper than the parser goes, within the size allowed: refused as broken, on
    # both lobby routes (it was a 500, its traceback logged for every such request).
    deep = b"[" * 2000 + b"]" * 2000
    for route in ("games", "commitments"):
        status, _, text = request(f"{lobby_server.url}/lobby/{route}", raw=deep, method="POST")
        assert status == 400 and json.loads(text)["reason"] == "BAD_REQUEST", (route, text)


def test_the_lobby_takes_only_json_so_other_sites_cannot_post_to_it(lobby_server: Served) -> None:
    """A page on another site can make a browser POST a form or text anywhere without asking
    (no-cors); JSON only after a CORS preflight, which an origin not allowed fails."""
    url = f"{lobby_server.url}/lobby/games"
    body = json.dumps(GIN).encode()
    for content_type in ["text/plain", "application/x-www-form-urlencoded", None]:
        headers = {"origin": "https://elsewhere.example"}
        if content_type is not None:
            headers["content-type"] = content_type
        sent = urllib.request.Request(url, data=body, method="POST", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(sent, timeout=30)
        assert refused.value.code == 415, content_type
        assert json.loads(refused.value.read())["reason"] == "NOT_JSON"
    sent = urllib.request.Request(
        url, data=body, method="POST", headers={"content-type": "application/json; charset=utf-8"}
    )
    with urllib.request.urlopen(sent, timeout=30) as answer:
        assert answer.status == 201


def test_the_lobby_is_bounded_and_rate_limited(tmp_path: Path) -> None:
    with serve(tmp_path, LobbySettings(max_games=2, burst=3, per_minute=1)) as served:
        url = f"{served.url}/lobby/games"
        assert [request(url, GIN, "POST")[0] for _ in range(2)] == [201, 201]
        status, headers, text = request(url, GIN, "POST")
        assert status == 503 and json.loads(text)["reason"] == "LOBBY_FULL"
        assert int(headers["retry-after"]) > 0
        status, headers, text = request(url, GIN, "POST")  # the burst of 3 is spent
        assert status == 429 and json.loads(text)["reason"] == "RATE_LIMITED"
        assert int(headers["retry-after"]) > 0


def test_a_lobby_game_from_a_commitment_and_the_players_seed(lobby_server: Served) -> None:
    """``POST /lobby/commitments`` answers a ticket and its commitment; ``POST /lobby/games``
    with the ticket and the player's seed makes a game that starts with that commitment and
    those seeds; the ticket makes no second game."""
    status, headers, text = request(f"{lobby_server.url}/lobby/commitments", {}, "POST")
    assert status == 201 and headers["cache-control"] == "no-store"
    committed = json.loads(text)
    assert set(committed) == {"ticket", "commitment", "expires_at_ms"}
    assert len(committed["commitment"]) == 64 and int(committed["commitment"], 16) >= 0
    assert isinstance(committed["expires_at_ms"], int)
    asked = {**GIN, "seed_ticket": committed["ticket"], "client_seed": "my lucky seed"}
    status, _, text = request(f"{lobby_server.url}/lobby/games", asked, "POST")
    assert status == 201, text
    made = json.loads(text)
    replay = lobby_server.stub.GetReplay(
        service_pb2.GetReplayRequest(game_id=made["game_id"]),
        metadata=auth(made["seats"][0]["token"]),
    )
    started = replay.events[0].body.gin.match_started
    assert started.commitment == committed["commitment"]
    assert list(started.client_seeds) == ["my lucky seed"]
    status, _, text = request(f"{lobby_server.url}/lobby/games", asked, "POST")
    # FAILED_PRECONDITION, as Connect answers it.
    assert status == 400 and json.loads(text)["reason"] == "SEED_TICKET_USED", text
    # A client seed without a ticket is the player's seed all the same.
    status, _, text = request(
        f"{lobby_server.url}/lobby/games", {**GIN, "client_seed": "only mine"}, "POST"
    )
    game_id = json.loads(text)["game_id"]
    token = json.loads(text)["seats"][0]["token"]
    replay = lobby_server.stub.GetReplay(
        service_pb2.GetReplayRequest(game_id=game_id), metadata=auth(token)
    )
    assert list(replay.events[0].body.gin.match_started.client_seeds) == ["only mine"]


@pytest.mark.parametrize(
    ("extra", "status", "reason"),
    [
        ({"seed_ticket": 7}, 400, "BAD_SEED_TICKET"),
        ({"client_seed": 7}, 400, "BAD_CLIENT_SEED"),
        ({"client_seed": "x" * 257}, 400, "TOO_LONG"),
        ({"client_seed": "a\x00b"}, 400, "INVALID_CHARACTER"),
        ({"seed_ticket": "st1.not-a-ticket"}, 404, "SEED_TICKET_NOT_FOUND"),
    ],
)
def test_the_lobby_refuses_a_bad_ticket_or_seed(
    lobby_server: Served, extra: dict[str, Any], status: int, reason: str
) -> None:
    answer = request(f"{lobby_server.url}/lobby/games", {**GIN, **extra}, "POST")
    assert (answer[0], json.loads(answer[2])["reason"]) == (status, reason), answer[2]


def test_the_lobby_s_commitments_take_an_empty_json_object_and_are_rate_limited(
    tmp_path: Path,
) -> None:
    with serve(tmp_path, LobbySettings(burst=2, per_minute=1)) as served:
        url = f"{served.url}/lobby/commitments"
        status, _, text = request(url, {"kind": "gin"}, "POST")
        assert status == 400 and json.loads(text)["reason"] == "BAD_REQUEST"
        status, _, text = request(url, raw=b"{}", method="POST")
        assert status == 201, text
        sent = urllib.request.Request(url, data=b"{}", method="POST")  # no content type
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(sent, timeout=30)
        assert refused.value.code == 415
        assert request(url, {}, "POST")[0] == 201  # the burst of 2 is spent
        status, headers, text = request(url, {}, "POST")
        assert status == 429 and json.loads(text)["reason"] == "RATE_LIMITED"
        assert int(headers["retry-after"]) > 0
        # Creations have their own allowance: a player's commitment does not spend it.
        assert request(f"{served.url}/lobby/games", GIN, "POST")[0] == 201


# --- whole games through the page, in Chromium ---------------------------------------------------


def _browser_tools() -> tuple[str, str]:
    """Node.js, Chromium and the built web client with playwright-core; skips without them,
    except in CI, where `make test` installs Chromium and builds the client."""
    node = shutil.which("node") if shutil.which("npm") else None
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    missing = [
        what
        for what, there in [
            ("Node.js and npm (https://nodejs.org, or apt-get install nodejs npm)", node),
            ("Debian's chromium (apt-get install chromium; make test does it)", browser),
            (
                "the built web client (make web)",
                (DEFAULT_WEB_ROOT / "index.html").is_file()
                and (WEB / "node_modules" / "playwright-core").is_dir(),
            ),
        ]
        if not there
    ]
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the browser tests lack {'; '.join(missing)}")
        pytest.skip(f"the browser tests need {'; '.join(missing)}")
    assert node is not None and browser is not None
    return node, browser


def test_the_web_client_type_checks_and_is_formatted() -> None:
    """tsc --strict (esbuild bundles without checking types) and prettier, as the client's
    ``npm run check``."""
    _browser_tools()
    npm = shutil.which("npm")
    assert npm is not None  # _browser_tools found Node.js, and `make web` ran npm ci with it
    run = subprocess.run(
        [npm, "run", "--silent", "check"],
        cwd=WEB,
        capture_output=True,
        text=True,
        timeout=GAME_TIMEOUT_S,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]


#: The shortest games of each kind: two tabs (two people, each sees the other's moves live) in
#: the two-seat games and in Hoola beside a bot; one person against a bot in Rummy. Gin's page is
#: opened at http://game.test:PORT/ (Chromium maps the name to the server): plain HTTP from a host
#: that is not localhost, no secure context, where browsers have no crypto.randomUUID.
GAMES = {
    "gin": ["--preset", "single-hand", "--seats", "2", "--humans", "2", "--host", "game.test"],
    "koikoi": ["--preset", "nintendo-3", "--seats", "2", "--humans", "2"],
    "hoola": ["--preset", "korean", "--seats", "3", "--humans", "2", "--rounds", "1"],
    "rummy": ["--preset", "standard", "--seats", "2", "--humans", "1"],
}


@pytest.fixture(scope="module")
def web_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    _browser_tools()
    # Every test's browser is one address (127.0.0.1): the lobby's bound, not its own.
    settings = LobbySettings(bot_delay_ms=BOT_DELAY_MS, per_address=LobbySettings.max_games)
    with serve(tmp_path_factory.mktemp("web"), settings, DEFAULT_WEB_ROOT) as served:
        yield served


@pytest.mark.parametrize("kind", sorted(GAMES))
def test_a_whole_game_through_the_page_in_chromium(web_server: Served, kind: str) -> None:
    node, browser = _browser_tools()
    run = subprocess.run(
        [
            node,
            str(WEB / "test" / "play.mjs"),
            "--url",
            web_server.url,
            "--kind",
            kind,
            *GAMES[kind],
            "--out",
            str(SCREENSHOTS),
            "--chromium",
            browser,
        ],
        capture_output=True,
        text=True,
        timeout=GAME_TIMEOUT_S,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    humans = int(GAMES[kind][GAMES[kind].index("--humans") + 1])
    assert report["moves"] > 0
    if "--host" in GAMES[kind]:  # every move made its command id without randomUUID
        assert (report["secureContext"], report["randomUUID"]) == (False, False), report
        assert report["origin"].startswith("http://game.test:"), report
    # The move play.mjs sends stale is refused, and the page still says so after reading the game
    # again (its own notice: the status is rewritten by every state).
    assert report["refusalShown"], report
    # A move sent as the game moved on is refused (ABORTED) and looked at again: a race, not the
    # rule (a page whose moves were mostly refused would be out of step with the game). The stale
    # move's own refusals (one per attempt of submit's, up to eight) are not races: a short game
    # (8 moves in a hand won at once) failed this on them alone.
    assert report["refusedStale"] >= 1, report
    assert report["refused"] - report["refusedStale"] <= report["moves"] // 2, report
    assert sorted(report["finalSeen"]) == list(range(humans))  # every tab saw the settlement
    # Every tab checked the deal against the seed revealed at the end, and it passed; without
    # WebCrypto (plain HTTP from game.test) the page said it could not, and localhost's passed.
    assert len(report["fairDeal"]) == humans, report
    for fair in report["fairDeal"]:
        assert fair["state"] == "passed" and "…" in fair["commitment"], report
        assert fair["unavailableFirst"] == ("--host" in GAMES[kind]), report
        # Seat 0's tab made the game in the lobby: the server's commitment first, then its own
        # seed (a seed ticket), and the check holds the game to both, and to the game the lobby
        # asked for (its kind, preset rules, seats and seat 0). The localhost tab that checks a
        # game.test game's deal was not there (another origin's storage).
        if fair["seat"] == 0:
            assert fair["ownSeed"] == ("--host" not in GAMES[kind]), report
            assert fair["shownGame"] == fair["ownSeed"], report
    if humans > 1:
        assert report["live"] >= report["moves"] // 2  # every applied move, live in the other tab
    # One call per move: each tab is pushed its state (StreamEvents with include, from its first
    # message on) and reads the game itself only after a refused move (once more if the game
    # moved between its two reads).
    # (A move's SubmitCommand may be sent again, with its command id, after a conflict at the
    # very version it was sent at.)
    calls = report["calls"]
    assert report["moves"] <= calls["SubmitCommand"] <= 2 * report["moves"], calls
    for read in ("GetView", "ListLegalMoves"):
        assert calls.get(read, 0) <= 2 * report["refused"], (report, calls)
    for name in ("lobby", "seat0-final", "timeline"):
        assert (SCREENSHOTS / f"{kind}-{name}.png").stat().st_size > 0


def test_a_whole_game_on_a_phone_needs_no_sideways_scroll_and_fits_a_finger(
    web_server: Served,
) -> None:
    """A Koi-Koi match on a phone's screen (390 px wide, touch), every move tapped (play.mjs
    --phone): at every look nothing needs scrolling sideways (a round's settlement, its yaku's
    long card names in three columns, made the page 401 px wide), every button, link and field is
    at least 44 px each way (the moves were 35 px high, the lobby's fields 33), and no text is
    under 12 px (a Hanafuda card's month was 11.2)."""
    node, browser = _browser_tools()
    report = _node_script(
        node,
        "play.mjs",
        "--url",
        web_server.url,
        "--kind",
        "koikoi",
        "--preset",
        "nintendo-3",
        "--humans",
        "1",
        "--phone",
        "--out",
        str(SCREENSHOTS),
        "--chromium",
        browser,
    )
    assert report["phone"] and report["moves"] > 0 and report["finalSeen"] == [0], report
    # The moves in sight at the top of the page at every look (a sticky bar at the screen's foot).
    assert report["movesInSight"] >= report["moves"] > 0, report
    # Three rounds: twice the player could deal the next, and was told so, not to wait for the bot.
    assert len(report["betweenRounds"]) >= 2, report
    for status in report["betweenRounds"]:
        assert status == "Your move." or status.startswith("The round is over: deal the next"), (
            report
        )
    assert (SCREENSHOTS / "koikoi-phone-seat0-final.png").stat().st_size > 0


def _node_script(node: str, script: str, *args: str) -> dict[str, Any]:
    """Run one of clients/web/test's scripts; the JSON line it prints last."""
    run = subprocess.run(
        [node, str(WEB / "test" / script), *args],
        capture_output=True,
        text=True,
        timeout=GAME_TIMEOUT_S,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    report: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return report


#: A game of each kind, one person (by keyboard, with a screen reader) against bots.
A11Y_GAMES = {
    "gin": ["--preset", "single-hand"],
    "koikoi": ["--preset", "nintendo-3"],
    "hoola": ["--preset", "korean", "--seats", "3", "--rounds", "1"],
    "rummy": ["--preset", "standard"],
}


@pytest.mark.parametrize("kind", sorted(A11Y_GAMES))
def test_a_keyboard_and_screen_reader_player_plays_a_whole_game(
    web_server: Served, kind: str
) -> None:
    """By keys alone, read through Chromium's accessibility tree (a11y.mjs): after every move the
    focus stays on the moves (every state drew them anew and dropped it to the page's start), and
    on the move refused, to try again; after Play in the lobby, on the seat's link. A live region
    says whose turn it is and each seat's move as it comes (nothing did), not the history; cards
    are named in words ("queen of diamonds", a Hanafuda card with its month and kind), never as
    symbols; the table, hand, moves and log are named regions; the seats' table, redrawn every
    half second for its clocks, is changed in place."""
    node, browser = _browser_tools()
    report = _node_script(
        node,
        "a11y.mjs",
        "--url",
        web_server.url,
        "--kind",
        kind,
        *A11Y_GAMES[kind],
        "--chromium",
        browser,
    )
    assert report["moves"] >= 2, report
    assert set(report["focusAfterMove"]) <= {"move", "moves"}, report
    assert report["refused"]["notice"][0] == "alert", report
    assert report["lobbyFocus"] == "seat-link" and report["seatsKept"], report
    assert report["hand"] and not any(set(name) & set("♠♥♦♣") for name in report["hand"]), report


def test_a_full_lobby_says_when_to_try_again_and_offers_to(tmp_path: Path) -> None:
    """A full lobby (503 LOBBY_FULL, Retry-After) said only "The lobby refused: the lobby has 16
    games in play": now when to try again, counted down, and a Try again button that asks again
    (lobbyfull.mjs; a lobby of no games is always full)."""
    node, browser = _browser_tools()
    with serve(tmp_path, LobbySettings(max_games=0), DEFAULT_WEB_ROOT) as served:
        report = _node_script(node, "lobbyfull.mjs", "--url", served.url, "--chromium", browser)
    assert report["status"].startswith("The lobby is full (the lobby has 0 games in play)"), report
    assert "Try again in about 30 s." in report["status"], report
    assert re.fullmatch(r"Try again in \d+ s\.", report["countdown"]), report
    assert report["focused"] == "Try again" and report["asked"] == 2, report


def test_a_link_that_cannot_work_says_so_once_and_a_broken_network_is_retried(
    web_server: Served,
) -> None:
    """A seat link the server refuses for good (a token it does not accept, one for another game)
    says so in plain words, with the code small, after one call (it used to ask every second for
    ever); a stream the network breaks is tried again, less often each time, and picks up."""
    node, browser = _browser_tools()
    report = _node_script(
        node, "links.mjs", "--url", web_server.url, "--chromium", browser, "--case", "links"
    )
    assert report["badToken"]["code"] == "UNAUTHENTICATED · INVALID_TOKEN", report
    assert report["otherGame"]["code"] == "PERMISSION_DENIED · TOKEN_FOR_OTHER_GAME", report
    assert report["network"]["broken"].startswith("The connection to the server is lost"), report


def test_a_seat_gone_away_is_told_so_not_that_it_is_its_move(web_server: Served) -> None:
    """On a turn clock, a person who does not move is made away; its tab's only move is to come
    back, and it says so (it said "Your move." while another seat acted)."""
    node, browser = _browser_tools()
    report = _node_script(
        node, "links.mjs", "--url", web_server.url, "--chromium", browser, "--case", "away"
    )["away"]
    assert report["status"].startswith("You are away"), report
    assert any("Come back" in label for label in report["buttons"]), report


def test_the_page_is_its_token_s_seat_whatever_the_link_says(web_server: Served) -> None:
    """The seat is the token's, as the server's views say it: a link whose ``seat=`` names the
    other seat (or that names none) shows the token's seat's hand as its own, calls that seat
    "(you)" and no other, tells its moves as its own, and says what the link got wrong (it
    believed the link: seat 1's hand shown as seat 0's, seat 0 "(you)", its own moves another's)."""
    node, browser = _browser_tools()
    report = _node_script(
        node, "links.mjs", "--url", web_server.url, "--chromium", browser, "--case", "seat"
    )["seat"]
    for name in ("otherSeat", "noSeat"):
        assert (report[name]["seat"], report[name]["you"]) == ("1", ["1"]), report
    assert "the link says seat 0" in report["otherSeat"]["header"], report
    assert "the link says" not in report["noSeat"]["header"], report
    assert report["mine"] and all("Seat 1 (you)" in line for line in report["mine"]), report


def test_the_turn_clock_is_the_server_s_whatever_the_browser_s_clock_says(
    web_server: Served,
) -> None:
    """A deadline is on the server's clock: a browser 40 s slow or 40 s fast shows the time the
    server has left, give or take the rounding of whole seconds (it showed 1:03 of a 30 s turn, and
    0:00), also when the game's last event is seconds old as the page opens: not taken for the
    present, which would show the whole turn left."""
    node, browser = _browser_tools()
    report = _node_script(
        node, "links.mjs", "--url", web_server.url, "--chromium", browser, "--case", "skew"
    )["skew"]
    assert sorted(report) == ["-40000", "40000"], report
    for seen in report.values():
        assert -1 <= seen["shown"] - seen["left"] <= 3, report


def test_a_stream_that_stalls_without_closing_is_noticed_and_catches_up(
    web_server: Served,
) -> None:
    """A connection that stops carrying the page's event stream but stays open (a proxy or a
    network that hangs: links.mjs puts a TCP proxy in front of the server and stalls it) is
    noticed by its silence, no heartbeat coming (StreamEvents' heartbeat_s, short on the test's
    page: ``?heartbeat_s=2``), said as a lost connection, and reopened after the last event,
    catching up with a move the other seat made meanwhile; in a quiet game before it, the
    heartbeats alone kept the one stream open, and none of them was logged."""
    node, browser = _browser_tools()
    report = _node_script(
        node, "links.mjs", "--url", web_server.url, "--chromium", browser, "--case", "stall"
    )["stall"]
    assert report["noticed"].startswith("The connection to the server is lost"), report
    assert report["streams"] >= 2 and int(report["caughtUp"]) > 0, report
    assert "connection" not in report["back"], report


def test_a_slow_server_is_said_connecting_and_a_slow_move_sending(web_server: Served) -> None:
    """A busy server (links.mjs holds the page's requests until it has looked): until the first
    stream's state the page says it is connecting (it showed the table's empty sections without a
    word); while a move is on its way, that it is sent (it said "Your move." beside greyed-out
    buttons), whatever the stream pushes meanwhile; once the move is refused (before the page has
    read the game again), or answered older than what the stream showed, it says what the state
    says, its moves playable (they stayed greyed out)."""
    node, browser = _browser_tools()
    report = _node_script(
        node, "links.mjs", "--url", web_server.url, "--chromium", browser, "--case", "slow"
    )["slow"]
    assert report["connecting"]["status"] == "Connecting…", report
    assert report["connected"]["status"] == "Your move.", report
    for sending in ("lostSending", "sending"):
        assert report[sending]["status"] == "Sending your move…", report
        assert report[sending]["enabled"] == 0, report
    assert report["lost"]["notice"].startswith("Not played: the server could not be reached")
    assert report["lost"]["notice"].endswith("NO_CONNECTION"), report
    for settled in ("lost", "played"):
        assert report[settled]["status"] == "Your move.", report
        assert report[settled]["enabled"] == len(report[settled]["moves"]) > 0, report


def test_a_seat_whose_time_runs_short_sees_it_and_a_screen_reader_hears_it_once(
    web_server: Served,
) -> None:
    """On a turn clock, a seat's own page warns it once its time is short (10 s, or half of a
    shorter step): a line with the time left that stays in sight wherever the page is scrolled, the
    seat's clock marked, said once to a screen reader (not at every redraw of the clock), gone
    once the time-out passed the turn on. It warned of nothing: the time-out was the news."""
    node, browser = _browser_tools()
    report = _node_script(
        node, "links.mjs", "--url", web_server.url, "--chromium", browser, "--case", "hurry"
    )["hurry"]
    assert report["shown"].startswith("Your time is running out: 0:0"), report
    assert report["marked"] and report["sticky"] == "sticky", report
    assert len(report["heard"]) == 1 and "seconds left to move" in report["heard"][0], report


def test_a_player_token_s_link_watches_the_game_as_a_spectator(web_server: Served) -> None:
    """A player's (or the studio's) token watches any game as a spectator (README, "Playing from
    a client"): its link shows the table and the moves live, with no hand of its own. The page
    asked for legal moves, which are a seat's, and said the link "no longer works"."""
    node, browser = _browser_tools()
    token = mint_player_token(STUDIO_SECRET, "watcher", int(time.time()) + 600)
    report = _node_script(
        node,
        "links.mjs",
        "--url",
        web_server.url,
        "--chromium",
        browser,
        "--case",
        "watch",
        "--watch-token",
        token,
    )["watch"]
    for seen in ("opened", "moved"):
        assert not report[seen]["dead"] and "you are watching" in report[seen]["header"], report
        assert report[seen]["moves"] == "None: you are watching the game.", report


def test_a_page_back_online_reads_the_game_at_once(web_server: Served) -> None:
    """The network gone while the stream waits to be reopened (a phone in a lift), then back:
    offline, the page says so at once; online, it shows the game within 2.5 s, not once the
    reconnection's wait (at least 6 s by then, up to 30 s) has run out, a turn clock running."""
    node, browser = _browser_tools()
    report = _node_script(
        node, "links.mjs", "--url", web_server.url, "--chromium", browser, "--case", "online"
    )["online"]
    assert report["offline"].startswith("No network"), report
    assert report["back"] == "Your move." and report["backMs"] <= 2500, report


def test_rummy_s_discard_pile_is_kept_from_the_events() -> None:
    """Rummy's discard pile under its top card (clients/web/src/pile.ts, run in Node.js): what a
    player plans by, since only the top may be taken; each discard on top, a taken discard off it,
    a rebuilt stock leaves the top; none shown when it is not the view's (top and count), over
    seeded random rounds against a plain list. play.mjs checks it against the server's view after
    every move of a whole Rummy game."""
    node, _ = _browser_tools()
    assert _node_script(node, "pile.mjs")["checked"] > 0


def test_the_page_checks_the_deal_and_a_tampered_seed_fails() -> None:
    """The page's fair-deal check (clients/web/src/fairdeal.ts, run in Node.js) on a Hoola round
    dealt from a golden vector's seed: each seat's own copy of the events passes; a revealed seed
    that is not the committed one, a hand other than the seeds', a commitment other than the one
    shown before the game fail, saying why. A Gin hand whose dealer is not the one the seeds' draw
    makes (the seeds' draw shown, the other seat named dealer and dealt as such), a Hoola round
    whose dealer is not the one its deck's last card makes (a game recorded before
    ``first_dealer_drawn``) and a Koi-Koi round claimed dealt again when the seeds' deal needed no
    redeal fail too, as do a lobby game with a client seed beside the player's own and a game
    other than the one the lobby asked for (another seat count, other rules): each would let a
    server choose among decks or hands and still be "checked". The check is @croupier/client's
    ``checkDeal`` (clients/typescript/src/dealcheck.ts)."""
    node, _ = _browser_tools()
    report = _node_script(node, "fairdeal.mjs")
    assert report["seat0"] == "Your dealt hand matches the deck from the sealed seed.", report
    assert "revealed seed is not the one sealed" in report["tampered"], report
    assert "hand you were dealt is not" in report["swapped"], report
    assert "the dealer is not the one the seeds' deck makes" in report["hoolaOtherDealer"], report
    assert "the game seats 2, not the 3 you were shown" in report["otherSeats"], report
    assert "jokers is 0, not 2" in report["otherRules"], report
    for seat in (0, 1):
        assert "the dealer is not the one" in report[f"ginOtherDealer{seat}"], report
    assert "needed no redeal" in report["koikoiRedeal"], report
    assert "a client seed besides yours" in report["extraSeed"], report


#: Games per kind and seat count the page checks against the engine's deals (each seat's copy).
ENGINE_DEAL_GAMES = 4
#: Koi-Koi games dealt until this many took a redeal (about one round in 230 does; bounded).
KOIKOI_REDEALT_GAMES = 2
KOIKOI_SEARCH_LIMIT = 20_000


def _engine_deals(rng: random.Random) -> list[dict[str, Any]]:
    """Games as engine/*/deal.py deals them from random seeds, in the shape of the page's events:
    every kind and seat count, Hoola with 0 to 2 jokers, first dealers drawn, a later round's
    dealer given, Koi-Koi rounds dealt again."""
    from croupier.engine.gin import deal as gin_deal
    from croupier.engine.hoola import deal as hoola_deal
    from croupier.engine.hoola.rules import HoolaRules
    from croupier.engine.koikoi import deal as koikoi_deal
    from croupier.engine.rummy import deal as rummy_deal
    from croupier.engine.rummy.rules import RummyRules
    from croupier.engine.shuffle import Seeds

    def card(code: object) -> dict[str, str]:
        return {"code": str(code)}

    def hands(dealt: Any) -> list[dict[str, Any]]:
        return [{"seat": h.seat, "cards": [card(c) for c in h.cards]} for h in dealt]

    def draws(dealt: Any) -> list[dict[str, Any]]:
        return [{"seat": d.seat, "card": card(d.card)} for d in dealt]

    def seeds() -> Seeds:
        client = tuple(rng.choice(["", "é☃ seed", "x" * 40]) for _ in range(rng.randrange(3)))
        return Seeds(rng.randbytes(32), client)

    games: list[dict[str, Any]] = []

    def game(kind: str, sd: Seeds, seats: int, jokers: int, deals: list[dict[str, Any]]) -> None:
        # The first event's rules, as far as the deal goes: Hoola's jokers, and the first dealer
        # drawn (every preset's) where the rules have the option.
        drawn = {"firstDealerDrawn": True}
        rules = {"hoola": {"jokers": jokers, **drawn}, "rummy": drawn}.get(kind, {})
        games.append(
            {
                "kind": kind,
                "start": "gameStarted" if kind in ("hoola", "rummy") else "matchStarted",
                "seed": sd.server_seed.hex(),
                "commitment": hashlib.sha256(sd.server_seed).hexdigest(),
                "clientSeeds": list(sd.client_seeds),
                "seats": seats,
                "rules": rules,
                "deals": deals,
            }
        )

    for _ in range(ENGINE_DEAL_GAMES):
        for seats in range(2, 8):
            for jokers in range(3):
                sd = seeds()
                rules = dataclasses.replace(HoolaRules(), jokers=jokers, first_dealer_drawn=True)
                rounds = [
                    hoola_deal.deal(rules, seats, sd, 1),
                    hoola_deal.deal(rules, seats, sd, 2, dealer=rng.randrange(seats)),
                ]
                game("hoola", sd, seats, jokers, [
                    {"case": "roundDealt", "value": {
                        "round": d.round, "dealer": d.dealer, "hands": hands(d.hands),
                        "upcard": card(d.upcard), "dealerDraws": draws(d.dealer_draws)}}
                    for d in rounds
                ])  # fmt: skip
        for seats in range(2, 7):
            sd = seeds()
            rummy_rules = dataclasses.replace(RummyRules(), first_dealer_drawn=True)
            r = rummy_deal.deal(rummy_rules, seats, sd)
            game("rummy", sd, seats, 0, [{"case": "roundDealt", "value": {
                "dealer": r.dealer, "hands": hands(r.hands), "upcard": card(r.upcard),
                "dealerDraws": draws(r.dealer_draws)}}])  # fmt: skip
        sd = seeds()
        first = gin_deal.deal(sd, 1, None)
        game("gin", sd, 2, 0, [
            {"case": "handDealt", "value": {
                "hand": g.hand, "dealer": g.dealer, "hands": hands(g.hands),
                "upcard": card(g.upcard), "dealerDraws": draws(g.dealer_draws)}}
            for g in (first, gin_deal.deal(sd, 2, 1 - first.dealer))
        ])  # fmt: skip
    redealt = 0
    for tried in range(KOIKOI_SEARCH_LIMIT):
        sd = seeds()
        first_round = koikoi_deal.deal(sd, 1, None)
        rounds = [first_round, koikoi_deal.deal(sd, 2, 1 - first_round.dealer)]
        if tried >= ENGINE_DEAL_GAMES and not any(k.redeals for k in rounds):
            continue
        redealt += any(k.redeals for k in rounds)
        game("koikoi", sd, 2, 0, [
            {"case": "roundDealt", "value": {
                "round": k.round, "dealer": k.dealer, "hands": hands(k.hands),
                "field": [card(c) for c in k.field], "redeals": k.redeals,
                "dealerDraws": draws(k.dealer_draws)}}
            for k in rounds
        ])  # fmt: skip
        if redealt == KOIKOI_REDEALT_GAMES:
            break
    assert redealt == KOIKOI_REDEALT_GAMES, "no Koi-Koi redeal found to check"
    return games


def test_the_pages_check_passes_every_deal_the_engine_makes(tmp_path: Path) -> None:
    """No false alarm: the page's check (fairdeal.ts, in Node.js) passes each seat's own copy,
    and a spectator's, of deals the engine made from random seeds, in every kind and seat count,
    with Hoola's jokers, drawn first dealers, later rounds' dealers and Koi-Koi redeals. A layout
    of the page's that differs from the engine's fails some seat's copy."""
    node, _ = _browser_tools()
    seed = random.randrange(2**32)
    games = tmp_path / "games.json"
    games.write_text(json.dumps(_engine_deals(random.Random(seed))))
    report = _node_script(node, "fairdeal_engine.mjs", str(games))
    assert set(report["passed"]) == {"hoola", "rummy", "gin", "koikoi"}, (seed, report)


def test_the_event_log_says_whose_turn_timed_out_and_which_moves_were_forced() -> None:
    """The page's event log in words (clients/web/src/events.ts, run in Node.js): a time-out is
    the seat's, at a clock time; its forced moves are the seat's, marked forced; the deal and a
    hand's end are nobody's; no hash, no raw field names."""
    node, _ = _browser_tools()
    lines = _node_script(node, "events.mjs")["lines"]
    assert "Seat 0 (you), forced: draws 7♠ from the stock" in lines
    assert not any("Dealer" in line for line in lines)


def test_the_status_says_whom_the_game_waits_on_and_factors_read_as_the_timeline() -> None:
    """The page's status and settlement words (clients/web/src/render.ts, run in Node.js): a seat
    that may only act out of turn (a battle-Hoola claim while the next seat is to take) is told
    whom the game waits on, not "Your move."; a payment's first factor sets it (``=``); a seat's
    time is short (the page warns it) from 10 s left, or half of a shorter step."""
    node, _ = _browser_tools()
    report = _node_script(node, "render.mjs")
    assert report["claim"].startswith("Waiting for Seat 1; meanwhile you may act"), report
    assert report["turn"] == "Your move.", report
    assert report["signs"] == ["=", "×", "+"], report
    assert [hand["value"] for hand in report["hands"]] == [0, 3, 53], report
    assert dict(report["short"])[12_000] == 6000 and dict(report["short"])[60_000] == 10_000
    # Between rounds, with a bot on the clock to deal: the player deals (bots never do).
    assert report["betweenRounds"].endswith("Seat 1 is a bot: bots leave the next deal to people.")
    # The time left includes the bank, and says so.
    assert report["times"]["turnAndBank"]["shown"] == "to act: 0:35 left (0:30 turn + 0:05 bank)"
    assert report["times"]["allBank"]["shown"] == "to act: 0:05 left, all bank"
    # A move's label in one notation (Gin's knock named its discard at length, its melds by code).
    assert report["labels"] == [
        "Discard 4♣ and knock, melding 3♣ 3♦ 3♠",
        "Discard 10♥",
        "Lay off Joker onto meld 2",
        "Discard Q♦",
        "left in hand: 6♦ 5♠",
    ], report


def test_the_page_estimates_the_server_s_clock_from_what_it_receives() -> None:
    """The server's clock as the page reads it (clients/web/src/servertime.ts, run in Node.js):
    the reading that took least time to come counts, so that a stream's old events are not taken
    for the present, an answer's Date header bounds it within a second and a fresh event within
    its delay; the browser's own clock counts only before any reading."""
    node, _ = _browser_tools()
    report = _node_script(node, "servertime.mjs")
    assert report["staleEvents"] == -60_000 and -1080 < report["dateHeader"] <= 0, report
    assert report["freshEvent"] == -25, report


def test_the_client_package_bundles_for_browsers_without_stand_ins() -> None:
    """@croupier/client, as shipped, bundles with plain esbuild for browsers: its browser entry
    (and the `browser` condition of a plain import) has no Node.js built-in and no connect-node."""
    node, _ = _browser_tools()
    report = _node_script(node, "bundle.mjs")
    assert report["bytes"] > 0


# --- croupier serve: the lobby only with --lobby ---------------------------------------------------

CROUPIER = str(Path(sys.executable).parent / "croupier")
HTTP_URL = re.compile(r"HTTP \(Connect, gRPC-Web, JSON\): (http://127\.0\.0\.1:\d+)")


@pytest.mark.parametrize("lobby", [False, True])
def test_serve_has_the_lobby_only_with_the_lobby_option(tmp_path: Path, lobby: bool) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROUPIER_")}
    log_path = tmp_path / "serve.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [
                CROUPIER,
                "serve",
                "--address",
                "127.0.0.1:0",
                "--http-address",
                "127.0.0.1:0",
                "--store",
                f"sqlite:///{tmp_path / 'games.sqlite3'}",
                "--web-root",
                str(tmp_path / "no-client"),
                *(["--lobby"] if lobby else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp_path,
        )
    try:
        deadline, found = time.monotonic() + 60, None
        while found is None and process.poll() is None and time.monotonic() < deadline:
            found = HTTP_URL.search(log_path.read_text())
            time.sleep(0.1)
        assert found, log_path.read_text()
        url = found.group(1)
        status, _, text = request(f"{url}/lobby/games", GIN, "POST")
        assert status == (201 if lobby else 404), text
        assert request(f"{url}/lobby")[0] == (200 if lobby else 404)
        status, _, page = request(f"{url}/")  # no client at --web-root: how to build one
        assert status == 200 and "make web" in page
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_lobby_game_nobody_moves_in_is_ended_and_its_seed_revealed(tmp_path: Path) -> None:
    """A lobby game left idle (its person gone, its bots waiting on that person) was dropped from
    the lobby but stayed on the server unfinished for good, its seed never revealed, so nobody
    could check its deal. The lobby now ends it as the studio ends an abandoned game."""
    with serve(tmp_path, LobbySettings(bot_delay_ms=0, idle_s=0.3)) as served:
        made = json.loads(request(f"{served.url}/lobby/games", GIN, "POST")[2])
        game_id = made["game_id"]
        deadline = time.monotonic() + 30  # polled, with a deadline
        while json.loads(request(f"{served.url}/lobby")[2])["games"]:
            assert time.monotonic() < deadline, "the idle game never left the lobby"
            served.thread.call(asyncio.sleep(0.05))
        replay = served.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game_id))
        status, _, page = request(f"{served.url}/games/{game_id}/timeline")
    assert replay.finished and replay.server_seed, replay.finished
    ended = [e for e in replay.events if e.type == "StudioEndedGame"]
    assert len(ended) == 1 and "nobody moved for 0.3 seconds" in str(ended[0]), ended
    assert status == 200 and "nobody moved" in page


def _lobby_game_left_by_a_restart(tmp_path: Path, settings: LobbySettings) -> tuple[str, str]:
    """A lobby Gin game made on one server, which then stops before the game ends (its bot
    stops with it): the game's id and its person's seat token."""
    with serve(tmp_path, settings) as served:
        made = json.loads(request(f"{served.url}/lobby/games", GIN, "POST")[2])
    game_id, token = made["game_id"], made["seats"][0]["token"]
    store = open_store(f"sqlite:///{tmp_path / 'web.sqlite3'}")
    try:
        assert not store.game(game_id).finished
        assert store.players(game_id) == ("lobby-person-0", "lobby-bot-1")
    finally:
        store.close()
    return game_id, token


def test_a_lobby_game_under_way_at_a_restart_is_played_on_by_the_next_server(
    tmp_path: Path,
) -> None:
    """A restart (a deploy, a crash) stopped the bots of every lobby game under way, and the next
    server's lobby knew nothing of them: the person's link still worked, and the game waited for
    its bot for good. Two servers now start on the store at once (``--workers``, replicas): each
    lobby takes the game up, and the person plays it to its end with the same link, each bot move
    made once though two bots play that seat."""
    settings = LobbySettings(bot_delay_ms=0)
    game_id, token = _lobby_game_left_by_a_restart(tmp_path, settings)
    with (
        structlog.testing.capture_logs() as logs,
        serve(tmp_path, settings) as served,
        serve(tmp_path, settings) as other,
    ):
        assert served.lobby is not None and other.lobby is not None
        assert served.thread.call(served.lobby.resume()) == 1
        assert other.thread.call(other.lobby.resume()) == 1
        assert json.loads(request(f"{served.url}/lobby")[2])["games"] == 1
        assert _play_seat(served, game_id, token) > 0
        replay = served.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game_id))
    assert replay.finished and replay.server_seed
    assert not any(e.type == "StudioEndedGame" for e in replay.events)
    bot_commands = [e.command_id for e in replay.events if e.HasField("seat") and e.seat == 1]
    assert bot_commands and all(c.startswith("lobby-bot-1-") for c in bot_commands), bot_commands
    # The two bots made the same command each time: neither was refused (a command id used
    # again for another move is), nor failed.
    assert not [e for e in logs if e["event"] in ("lobby bot refused", "lobby bot failed")], logs


def test_a_lobby_game_idle_before_a_restart_is_ended_by_the_next_server(tmp_path: Path) -> None:
    """A game nobody had moved in for the idle limit when the server restarted is ended by the
    next lobby as it starts (abandoned, its seed revealed), not taken up."""
    settings = LobbySettings(bot_delay_ms=0, idle_s=0.5)
    game_id, _ = _lobby_game_left_by_a_restart(tmp_path, settings)
    time.sleep(settings.idle_s)
    with serve(tmp_path, settings) as served:
        assert served.lobby is not None
        assert served.thread.call(served.lobby.resume()) == 0
        replay = served.stub.GetReplay(service_pb2.GetReplayRequest(game_id=game_id))
        assert json.loads(request(f"{served.url}/lobby")[2])["games"] == 0
    assert replay.finished and replay.server_seed
    ended = [e for e in replay.events if e.type == "StudioEndedGame"]
    assert len(ended) == 1 and "nobody moved" in str(ended[0]), ended


def test_one_address_holds_a_few_lobby_games_and_its_idle_one_makes_room_for_a_new_one(
    tmp_path: Path,
) -> None:
    """One client kept the lobby full (16 games from one address, each freed only after 30 idle
    minutes). An address now holds ``per_address`` games at once: another is refused, with when
    to try again, until its game idle longest has gone ``replace_after_s`` without a move; then
    that one is ended (abandoned, its seed revealed, the reason said) for the new one. Other
    addresses are not held back by it."""
    settings = LobbySettings(bot_delay_ms=0, burst=100, per_address=2, replace_after_s=1.0)
    people = {**GIN, "humans": 2}  # nobody moves unless a person does: the games stay idle
    with serve(tmp_path, settings) as served:
        assert served.lobby is not None
        lobby = served.lobby

        def create(client: str) -> dict[str, Any]:
            request = LobbyRequest.parse(people)
            return served.thread.call(lobby.create(request, client))

        first, _ = create("a")["game_id"], create("a")["game_id"]
        with pytest.raises(LobbyError) as refused:
            create("a")
        assert refused.value.status == 429 and refused.value.reason == "TOO_MANY_GAMES_HERE"
        assert refused.value.retry_after_s == 1
        assert create("b")["game_id"]  # another address is not held back
        time.sleep(settings.replace_after_s)
        third = create("a")["game_id"]
        assert lobby.games == 3 and third != first
        replay = served.stub.GetReplay(service_pb2.GetReplayRequest(game_id=first))
    assert replay.finished and replay.server_seed
    (ended,) = [e for e in replay.events if e.type == "StudioEndedGame"]
    assert "started another game" in str(ended)
