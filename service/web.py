"""What the HTTP listener serves besides the API: the reference web client at ``/``, a finished
game's replay timeline at ``/games/<id>/timeline``, and (``--lobby`` only) the lobby.

The web client is built by ``make web`` into ``clients/web/dist`` (not committed): the default
``--web-root`` is that folder of the repository the package is installed from. Until a client
is built there, ``/`` says how to build it (a client built while the server runs is served at
the next reload); the API is served all the same.
"""

from __future__ import annotations

import asyncio
import html
import json
from pathlib import Path
from typing import Any

import structlog
from starlette.applications import Starlette
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from croupier.app.callers import ANONYMOUS
from croupier.app.core import Croupier
from croupier.app.errors import AppError, NotFound, NotNow
from croupier.app.memo import Memo
from croupier.replays.format import from_binary
from croupier.replays.timeline import render_html, timeline
from croupier.service.http import with_headers
from croupier.service.lobby import Lobby, LobbyError
from croupier.service.lobby import Request as LobbyRequest
from croupier.service.status import http_status_of, retry_after_s

log = structlog.get_logger("croupier.web")

#: The repository this package runs from (an editable install maps croupier.service here).
REPOSITORY = Path(__file__).resolve().parent.parent
#: Where ``make web`` puts the built client.
DEFAULT_WEB_ROOT = REPOSITORY / "clients" / "web" / "dist"
#: A lobby request is a few small fields: anything longer is refused unread.
MAX_LOBBY_BODY = 4096
#: The lobby's one content type. Requiring it keeps other sites out: a browser sends a page's
#: cross-site POST unasked only as a form or text (no-cors), and asks first (a CORS preflight,
#: refused unless --cors-origins allows the site) before sending JSON.
LOBBY_CONTENT_TYPE = "application/json"
#: The lobby's POST routes (``lobby_routes``).
LOBBY_GAMES = "/lobby/games"
LOBBY_COMMITMENTS = "/lobby/commitments"
LOBBY_POSTS = (LOBBY_GAMES, LOBBY_COMMITMENTS)
#: What a lobby route answers on a server without the lobby.
NO_LOBBY = (
    "this server has no lobby: start it with `croupier serve --lobby` (make run does); a "
    "studio creates games with CreateGame"
)
#: Pages are never cached by the browser: a rebuilt client is seen at the next load.
NO_CACHE = {"cache-control": "no-cache"}
#: What every page of the web side tells the browser: take each file as the type it is sent as
#: (never a text answer sniffed into a script), be shown in no other site's frame (the game page
#: holds a seat's token, and its buttons play its moves), and name no page of it to another site.
PAGE_HEADERS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",  # frame-ancestors' word for browsers older than CSP 2
    "referrer-policy": "no-referrer",
}
#: The web client's Content-Security-Policy: its own scripts, styles and calls only (it has no
#: inline script or style, and calls the service on its own origin), so that a text the page
#: shows, were it ever written as HTML, could run nothing nor send the seat's token elsewhere.
CLIENT_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
#: The server's own pages (the timeline, the page saying how to build the client): no script at
#: all, their one inline style.
PAGE_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
#: An answer that holds seat tokens (a lobby game's): kept by no cache.
NO_STORE = {"cache-control": "no-store"}
#: The built client's files are sent compressed to browsers that take gzip when larger than this
#: (the bundle is about 180 KB, a third of that compressed; tiny files gain nothing).
GZIP_MIN_BYTES = 1024

NOT_BUILT = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Croupier</title></head><body style="font-family:sans-serif;max-width:40em;margin:2em auto">
<h1>Croupier</h1><p>The service is running, but its web client is not built{where}.</p>
<p>Build it (it needs Node.js 20 and npm) and reload this page:</p>
<pre>make web</pre>
<p>or start the server with <code>--web-root</code> pointing at a built client. The API
(Connect, gRPC-Web, JSON) is served here all the same, for example:</p>
<pre>curl -s {base}/croupier.v1.GameService/ListPresets -H 'content-type: application/json' \\
  -d '{{"kind": "GAME_KIND_GIN"}}'</pre></body></html>
"""


def _error(status: int, reason: str, message: str, retry_after_s: int | None = None) -> Response:
    headers = {"retry-after": str(retry_after_s)} if retry_after_s else None
    return JSONResponse({"reason": reason, "message": message}, status, headers=headers)


async def _json_body(request: Request) -> Any:
    """The request's body as JSON; ``ValueError`` when it is not JSON, nested too deep for the
    parser included: 4 KiB of ``[[[…]]]`` raised RecursionError, answered 500 with its traceback
    logged twice (once not as JSON), before the lobby's rate limit, for any client to repeat."""
    try:
        return json.loads(await request.body())
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def lobby_routes(lobby: Lobby) -> list[BaseRoute]:
    """``POST /lobby/games``: a new game with bots, and the human seats' tokens;
    ``POST /lobby/commitments``: a seed ticket and its commitment, to create a game with."""

    def refused(request: Request) -> Response | None:
        """The body's length and type, as every lobby POST takes them; None when good."""
        length = request.headers.get("content-length")
        if length is None or not length.isdigit() or int(length) > MAX_LOBBY_BODY:
            return _error(413, "TOO_LONG", f"send at most {MAX_LOBBY_BODY} bytes of JSON")
        given = request.headers.get("content-type", "")
        if given.split(";", 1)[0].strip().lower() != LOBBY_CONTENT_TYPE:
            return _error(
                415,
                "NOT_JSON",
                f"send JSON with content-type: {LOBBY_CONTENT_TYPE} "
                f"(given: {given[:64] or 'none'})",
            )
        return None

    async def create(request: Request) -> Response:
        if (bad := refused(request)) is not None:
            return bad
        try:
            body = await _json_body(request)
            made = await lobby.create(
                LobbyRequest.parse(body), request.client.host if request.client else ""
            )
        except ValueError:
            return _error(400, "BAD_REQUEST", "send a JSON object")
        except LobbyError as error:
            return _error(error.status, error.reason, error.message, error.retry_after_s)
        return JSONResponse(made, 201, headers=NO_STORE)

    async def commit(request: Request) -> Response:
        if (bad := refused(request)) is not None:
            return bad
        try:
            # ``{}``: nothing is asked but a ticket; anything else is a client's mistake.
            if await _json_body(request) != {}:
                return _error(400, "BAD_REQUEST", "send an empty JSON object: {}")
            committed = await lobby.commit(request.client.host if request.client else "")
        except ValueError:
            return _error(400, "BAD_REQUEST", "send an empty JSON object: {}")
        except LobbyError as error:
            return _error(error.status, error.reason, error.message, error.retry_after_s)
        return JSONResponse(committed, 201, headers=NO_STORE)

    async def info(_: Request) -> Response:
        return JSONResponse(
            {"games": lobby.games, "max_games": lobby.settings.max_games}, headers=NO_CACHE
        )

    return [
        Route(LOBBY_GAMES, create, methods=["POST"]),
        Route(LOBBY_COMMITMENTS, commit, methods=["POST"]),
        Route("/lobby", info),
    ]


#: Timeline pages kept, by game id. A finished game's page never changes, and making one (the
#: export, the whole verification, the HTML) takes a core for half a second for a long match:
#: anyone with a finished game's link may ask for it again and again.
TIMELINE_PAGES_KEPT = 32


def _timeline_page(replay_file: bytes) -> str:
    return render_html(timeline(from_binary(replay_file)))


def timeline_routes(core: Croupier) -> list[BaseRoute]:
    """``GET /games/<id>/timeline``: a finished game turn by turn (``croupier replay show
    --html``). Only finished games: their seeds are revealed and GetReplay already shows anyone
    their whole log; a game in play is 404 like an unknown one."""
    pages: Memo[str, str] = Memo(TIMELINE_PAGES_KEPT)

    async def show(request: Request) -> Response:
        game_id = request.path_params["game_id"]
        page = pages.get(game_id)
        if page is None:
            try:
                replay_file = await core.export_replay(ANONYMOUS, game_id)
            except (NotNow, NotFound):
                return _error(404, "NO_TIMELINE", "no finished game has this id")
            except AppError as error:
                status = http_status_of(error)
                return _error(status, error.reason, error.message, retry_after_s(error))
            # Off the event loop: on it, every game this process serves waited for the page.
            page = await asyncio.to_thread(_timeline_page, replay_file)
            pages.put(game_id, page)
        return HTMLResponse(page, headers={"content-security-policy": PAGE_POLICY})

    return [Route("/games/{game_id}/timeline", show)]


class WebClient:
    """The built web client at ``/`` (``index.html`` there), or until it is built a page saying
    how to build it (other paths 404). The build is looked for at each request until found, so
    that a client built while the server runs (``make web``) is served at the next reload."""

    def __init__(self, web_root: Path | None) -> None:
        #: ``--web-root``, else where ``make web`` builds the client.
        self.web_root = web_root or DEFAULT_WEB_ROOT
        self._where = f" ({html.escape(str(web_root))} has no index.html)" if web_root else ""
        self._files: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._files is None and (self.web_root / "index.html").is_file():
            # Revalidated at each load (NO_CACHE): the client's file names carry no content
            # hash, so a browser kept a build it loaded for a tenth of the file's age (hours,
            # after a week) and a new deployment's page ran an old bundle; revalidating costs a
            # 304 by the ETag.
            files = with_headers(
                StaticFiles(directory=self.web_root, html=True),
                {**NO_CACHE, "content-security-policy": CLIENT_POLICY},
            )
            self._files = GZipMiddleware(files, minimum_size=GZIP_MIN_BYTES)
        if self._files is not None:
            await self._files(scope, receive, send)
            return
        request = Request(scope, receive)
        if request.url.path != "/":
            response: Response = PlainTextResponse("Not found.\n", status_code=404)
        else:
            base = f"{request.url.scheme}://{request.url.netloc}"
            page = NOT_BUILT.format(where=self._where, base=base)
            response = HTMLResponse(
                page, headers={**NO_CACHE, "content-security-policy": PAGE_POLICY}
            )
        await response(scope, receive, send)


async def _no_icon(_: Request) -> Response:
    """No icon (browsers ask every page for one; a 404 would be logged as a page error)."""
    return Response(status_code=204)


def web_routes(core: Croupier, web_root: Path | None, lobby: Lobby | None) -> list[BaseRoute]:
    """Every route of the web side, the static client last (it is mounted at ``/``)."""
    routes: list[BaseRoute] = [Route("/favicon.ico", _no_icon), *timeline_routes(core)]
    routes += lobby_routes(lobby) if lobby is not None else _no_lobby_routes()
    return [*routes, Mount("/", app=WebClient(web_root), name="web")]


async def _no_lobby(_: Request) -> Response:
    return _error(404, "NO_LOBBY", NO_LOBBY)


def _no_lobby_routes() -> list[BaseRoute]:
    """The lobby's routes on a server without it: a 404 that says so and how to turn it on (the
    static site answered a bare 405 Method Not Allowed, which told a curl user nothing)."""
    return [Route(path, _no_lobby, methods=["POST"]) for path in LOBBY_POSTS]


def web_app(core: Croupier, web_root: Path | None, lobby: Lobby | None) -> ASGIApp:
    """The application the HTTP listener mounts at ``/`` (``create_http_app``'s ``root``), every
    answer with PAGE_HEADERS."""
    return with_headers(Starlette(routes=web_routes(core, web_root, lobby)), PAGE_HEADERS)
