"""The play table's web server: a Starlette app serving one page and a small JSON API (issue 14).

Starlette (with uvicorn to serve it) is small, typed and well kept, has a test client, and needs no template
engine or data-validation layer for a page that is static HTML, CSS and JavaScript (shipped in this package under
``static/``: no build step, no CDN, works offline). Requests are handled in a thread pool, so an agent's search or
the coach never blocks another game.

API (JSON; every error is ``{"error": message, "code": reason}`` with status 400, 404 or 409 and changes
nothing; the reasons are listed at :class:`~sixnimmt_env.play.table.TableError`; anything unforeseen, e.g. an
agent's own error, is a 500 with code ``"internal"``):

===========================================  ==================================================================
``GET  /``                                   the page
``GET  /api/settings``                       the table's settings: mode, seats, rules, replayable records
``POST /api/games``                          a new game (``{"record": i}``: a replay of record ``i``); answers
                                             ``{"game": id, "tab": token, "table": snapshot}``
``GET  /api/games/{id}``                     the table (header ``X-Tab``)
``POST /api/games/{id}/act``                 the person's decision ``{"version", "kind", "value"}``
``POST /api/games/{id}/advance``             a watched or replayed table's next move ``{"version"}``
``GET  /api/games/{id}/coach?version=v``     the coach's advice for the person's decision
``POST /api/games/{id}/claim``               move the game to this tab (a new ``X-Tab`` token; the old tab's
                                             requests are then refused)
===========================================  ==================================================================

Safety: the server listens on 127.0.0.1 unless told otherwise and answers only requests addressed to a local
host name. A game id is 22 random URL-safe characters (:func:`secrets.token_urlsafe`), so one game cannot be
reached from another browser without its id; each game also has a tab token held by the one tab playing it, so a
second tab on the same game gets a clear error (and may take the game over). Each request carries the table's
version: a stale one is refused.
"""

from __future__ import annotations

import hmac
import secrets
import socket
import threading
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sixnimmt_env.agents import Agent, make_agent
from sixnimmt_env.play.settings import HUMAN, PlaySettings
from sixnimmt_env.play.table import Table, TableError, card_bullheads

__all__ = ["LOCAL_HOSTS", "BackgroundServer", "GameStore", "bind", "create_app", "make_server"]

LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
"""Host names a server listening on this machine only answers to (``Host`` header)."""


class GameStore:
    """The games of one server, by unguessable id, each with the token of the tab that holds it (thread-safe).

    Args:
        settings: what a new game is.
        agents: one built agent per agent seat (shared by the games; agents keep no state between calls).
    """

    def __init__(self, settings: PlaySettings, agents: dict[int, Agent]) -> None:
        self.settings = settings
        self.agents = agents
        self._games: OrderedDict[str, tuple[Any, str]] = OrderedDict()
        self._count = 0
        self._lock = threading.Lock()

    def new(self, record: object = None) -> tuple[str, str, Any]:
        """Start a game (a replay of ``settings.records[record]`` in replay mode); returns ``(id, tab, table)``.

        Raises:
            TableError: a missing or bad record index in replay mode, or a record given elsewhere.
        """
        s = self.settings
        with self._lock:
            index = self._count
            self._count += 1
        if s.mode == "replay":
            from sixnimmt_env.play.replay import ReplayTable

            if record is None:
                raise TableError(f'this server replays records: send {{"record": i}} with i in 0..{len(s.records) - 1}')
            if isinstance(record, bool) or not isinstance(record, int) or not 0 <= record < len(s.records):
                raise TableError(f"record must be an index 0..{len(s.records) - 1}, got {record!r}")
            try:
                table: Any = ReplayTable(s.records[record], record)
            except ValueError as e:  # ReplayError: the record does not replay through the engine
                raise TableError(f"record {record} cannot be replayed: {e}") from None
        elif record is not None:
            raise TableError("this server plays games: it has no records to replay (start it with --replay FILE)")
        else:
            table = Table(
                s.config, s.specs, seed=s.seed, index=index, coach_samples=s.coach_samples, agents=self.agents
            )
        gid, tab = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        with self._lock:
            self._games[gid] = (table, tab)
            while len(self._games) > s.max_games:
                self._games.popitem(last=False)
        return gid, tab, table

    def get(self, gid: str, tab: str | None) -> Any:
        """The table of game ``gid`` if ``tab`` holds it.

        Raises:
            TableError: 404 for an unknown game, 409 if another tab holds it.
        """
        with self._lock:
            entry = self._games.get(gid)
            if entry is None:
                raise TableError(
                    "no such game here (the server may have restarted): start a new game", 404, "not_found"
                )
            self._games.move_to_end(gid)
        table, holder = entry
        if not tab or not hmac.compare_digest(tab.encode(), holder.encode()):
            raise TableError(
                "this game is open in another tab: play it there, or move it to this tab", 409, "other_tab"
            )
        return table

    def claim(self, gid: str) -> tuple[str, Any]:
        """Give game ``gid`` a new tab token (the tab asking takes it over); returns ``(tab, table)``.

        Raises:
            TableError: 404 for an unknown game.
        """
        with self._lock:
            entry = self._games.get(gid)
            if entry is None:
                raise TableError(
                    "no such game here (the server may have restarted): start a new game", 404, "not_found"
                )
            tab = secrets.token_urlsafe(16)
            self._games[gid] = (entry[0], tab)
        return tab, entry[0]


def _error(e: TableError) -> JSONResponse:
    return JSONResponse({"error": str(e), "code": e.code}, status_code=e.status)


async def _json(request: Request, allowed: tuple[str, ...]) -> dict[str, Any]:
    """The request's JSON object; ``TableError`` (400) if it is not an object or has a key outside ``allowed``."""
    try:
        body = await request.json()
    except ValueError:
        raise TableError("the request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise TableError(f"the request body must be a JSON object, got {type(body).__name__}")
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise TableError(
            f"unknown key(s) {', '.join(map(repr, unknown))} in the request body; allowed: {', '.join(allowed)}"
        )
    return body


def _advice(advice: Any) -> dict[str, Any] | None:
    if advice is None:
        return None
    return {
        "kind": advice.kind,
        "options": list(advice.options),
        "expected": list(advice.expected),
        "bullheads": list(advice.bullheads),
        "best": advice.best,
        "take_now": None if advice.take_now is None else list(advice.take_now),
        "samples": advice.samples,
    }


def create_app(settings: PlaySettings, allowed_hosts: Sequence[str] = LOCAL_HOSTS) -> Starlette:
    """The Starlette app of the play table.

    Args:
        settings: what each new game is.
        allowed_hosts: host names it answers to (``Host`` header); others get 400 (a guard against DNS
            rebinding of a local server).

    Raises:
        ValueError: an unknown agent spec (the message names it and lists the known ones).
    """
    agents = {i: make_agent(s) for i, s in enumerate(settings.specs) if s != HUMAN}
    store = GameStore(settings, agents)
    static = resources.files("sixnimmt_env.play") / "static"

    def index(request: Request) -> Response:
        return FileResponse(str(static / "index.html"), headers={"Cache-Control": "no-store"})

    def game_settings(request: Request) -> Response:
        c = settings.config
        records = [
            {"index": i, "label": f"game {r.game}: " + ", ".join(r.agents), "totals": list(r.totals)}
            for i, r in enumerate(settings.records)
        ]
        return JSONResponse({
            "mode": settings.mode,
            "specs": list(settings.specs),
            "config": {"num_players": c.num_players, "variant": c.variant, "episode": c.episode,
                       "end_score": c.end_score, "row_choice": c.row_choice},
            "coach_samples": settings.coach_samples,
            "bullheads": card_bullheads(),
            "records": records,
        })  # fmt: skip

    async def new_game(request: Request) -> Response:
        try:
            body = await _json(request, ("record",)) if await request.body() else {}
            gid, tab, table = await _threaded(store.new, body.get("record"))
        except TableError as e:
            return _error(e)
        return JSONResponse({"game": gid, "tab": tab, "table": table.snapshot()})

    def get_game(request: Request) -> Response:
        try:
            table = store.get(request.path_params["gid"], request.headers.get("x-tab"))
        except TableError as e:
            return _error(e)
        return JSONResponse({"table": table.snapshot()})

    async def act(request: Request) -> Response:
        try:
            table = store.get(request.path_params["gid"], request.headers.get("x-tab"))
            body = await _json(request, ("version", "kind", "value"))
            await _threaded(table.act, body.get("version"), body.get("kind"), body.get("value"))
        except TableError as e:
            return _error(e)
        return JSONResponse({"table": table.snapshot()})

    async def advance(request: Request) -> Response:
        try:
            table = store.get(request.path_params["gid"], request.headers.get("x-tab"))
            body = await _json(request, ("version",))
            await _threaded(table.advance, body.get("version"))
        except TableError as e:
            return _error(e)
        return JSONResponse({"table": table.snapshot()})

    async def coach(request: Request) -> Response:
        try:
            table = store.get(request.path_params["gid"], request.headers.get("x-tab"))
            raw = request.query_params.get("version", "")
            try:
                version = int(raw)
            except ValueError:
                raise TableError(f"version must be an integer, got {raw!r}") from None
            advice = await _threaded(table.coach, version)
        except TableError as e:
            return _error(e)
        return JSONResponse({"advice": _advice(advice)})

    def claim(request: Request) -> Response:
        try:
            tab, table = store.claim(request.path_params["gid"])
        except TableError as e:
            return _error(e)
        return JSONResponse({"tab": tab, "table": table.snapshot()})

    routes = [
        Route("/", index),
        Route("/api/settings", game_settings),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{gid}", get_game),
        Route("/api/games/{gid}/act", act, methods=["POST"]),
        Route("/api/games/{gid}/advance", advance, methods=["POST"]),
        Route("/api/games/{gid}/coach", coach),
        Route("/api/games/{gid}/claim", claim, methods=["POST"]),
        Mount("/static", StaticFiles(packages=[("sixnimmt_env.play", "static")]), name="static"),
    ]
    hosts = [h.strip("[]") if h.count(":") > 1 else h for h in allowed_hosts]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)],
        exception_handlers={Exception: _internal_error},
    )
    app.state.store = store
    return app


def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    """Anything else that went wrong (e.g. an agent's own error): said on the page, the game as it was."""
    return JSONResponse({"error": f"internal error: {type(exc).__name__}: {exc}", "code": "internal"}, status_code=500)


async def _threaded(fn: Any, *args: Any) -> Any:
    """Run ``fn(*args)`` in Starlette's thread pool (agents and the coach compute; the event loop stays free)."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port=0``: a free port chosen by the system).

    Raises:
        OSError: the port is taken or the host is not an address of this machine.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(64)
    return sock


def make_server(app: Starlette) -> Any:
    """A uvicorn server for ``app``, not yet started: ``server.run(sockets=[bind(...)])`` serves until Ctrl-C
    or ``server.should_exit = True``."""
    import uvicorn

    return uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))


class BackgroundServer:
    """Serve ``app`` on 127.0.0.1 at a free port in a thread, as a context manager (for tests and scripts).

    ``with BackgroundServer(app) as url:`` gives ``http://127.0.0.1:PORT``; leaving the block stops the server
    and waits for its thread (at most ``timeout`` seconds).

    Raises:
        RuntimeError: the server did not start within ``timeout`` seconds.
    """

    def __init__(self, app: Starlette, timeout: float = 10.0) -> None:
        self.app, self.timeout = app, timeout

    def __enter__(self) -> str:
        import time

        self.sock = bind("127.0.0.1", 0)
        self.server = make_server(self.app)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + self.timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                self.__exit__()
                raise RuntimeError("the play server did not start")
            time.sleep(0.01)
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(self.timeout)
        self.sock.close()
