"""The play table's web server: a Starlette app serving one page and a small JSON API (issue 14).

Starlette (with uvicorn to serve it) is small, typed and well kept, has a test client, and needs no template
engine or data-validation layer for a page that is static HTML, CSS and JavaScript (shipped in this package under
``static/``: no build step, no CDN, works offline). Requests are handled in a thread pool, so an agent's search or
the coach never blocks another game.

API (JSON; every error is ``{"error": message, "code": reason}`` with status 400, 404, 409 or 503 and changes
nothing; the reasons are listed at :class:`~sixnimmt_env.play.table.TableError`; anything unforeseen, e.g. an
agent's own error, is a 500 with code ``"internal"``):

===========================================  ==================================================================
``GET  /``                                   the page (``/history``: the history page)
``GET  /api/settings``                       the table's settings: mode, seats, rules, replayable records,
                                             whether games are saved
``POST /api/games``                          a new game (``{"record": i}``: a replay of record ``i``;
                                             ``{"saved": id}``: a replay of a finished saved game); answers
                                             ``{"game": id, "tab": token, "table": snapshot}``
``GET  /api/games/{id}``                     the table (header ``X-Tab``)
``POST /api/games/{id}/act``                 the person's decision ``{"version", "kind", "value"}``
``POST /api/games/{id}/advance``             a watched or replayed table's next move ``{"version"}``
``GET  /api/games/{id}/coach?version=v``     the coach's advice for the person's decision
``POST /api/games/{id}/claim``               move the game to this tab (a new ``X-Tab`` token; the old tab's
                                             requests are then refused): how an unfinished game is continued
``GET  /api/unfinished``                     the saved games not over (what a restarted server offers)
``GET  /api/history``                        the history (:func:`sixnimmt_env.play.history.history`)
``GET  /api/history/records.jsonl``          the finished games as a records file (``sixnimmt-game``)
===========================================  ==================================================================

Games are saved (:mod:`sixnimmt_env.play.saved`) after every move when the app has a database; memory then only
caches them (:class:`GameStore`).

Safety: the server listens on 127.0.0.1 unless told otherwise and answers only requests addressed to a local
host name. Only the table's own page may drive the API (:mod:`sixnimmt_env.play.guard`: the ``Origin`` or
``Referer`` must be the server's own, a ``POST`` must be ``application/json`` and carry the server's token, which
the page holds; bodies over 4 KiB get 413), and no other site may frame the page. A game id is 22 random URL-safe
characters (:func:`secrets.token_urlsafe`), so one game cannot be reached from another browser without its id;
each game also has a tab token held by the one tab playing it, so a second tab on the same game gets a clear error
(and may take the game over). Each request carries the table's version: a stale one is refused.
"""

from __future__ import annotations

import hmac
import json
import secrets
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sixnimmt_env.agents import Agent, make_agent
from sixnimmt_env.play.guard import ApiGuard
from sixnimmt_env.play.history import game_summary, history
from sixnimmt_env.play.saved import GameDB, restore, tab_hash
from sixnimmt_env.play.settings import HUMAN, PlaySettings
from sixnimmt_env.play.table import Table, TableError, card_bullheads

__all__ = ["LOCAL_HOSTS", "BackgroundServer", "GameStore", "bind", "create_app", "make_server"]

LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
"""Host names a server listening on this machine only answers to (``Host`` header)."""


@dataclass
class _Entry:
    """A game in memory: its table, the hash of its tab's token (:func:`~sixnimmt_env.play.saved.tab_hash`), the
    monotonic time of its last request, the requests in flight on it, and whether a move was made (a game is saved
    from its first move on)."""

    table: Any
    tab: str
    used: float
    busy: int = 0
    played: bool = False


class GameStore:
    """The games of one server, by unguessable id, each with the token of the tab that holds it (thread-safe).

    With a database (:class:`~sixnimmt_env.play.saved.GameDB`) every game is saved after each move and memory is
    a cache: a game not in memory is read back from the file when it is asked for, so a restarted server continues
    every unfinished game. Memory holds at most ``settings.max_games`` games:

    - with a database, games not asked for in ``settings.idle_seconds`` leave memory (not the file) whenever a
      game is created (one never moved in is then forgotten: its page starts a new game);
    - when a new game needs room, the least recently used game that is finished or idle leaves; with a database,
      else the least recently used of the others, saved first if it was never moved in (its next request reads it
      back from the file);
    - a game with a request in flight never leaves; without a database a game in play (not over, asked for
      within ``idle_seconds``) never leaves either, and when every place holds one a new game gets 503
      (``"full"``).

    Args:
        settings: what a new game is.
        agents: one built agent per agent seat (shared by the games; agents keep no state between calls).
        db: where games are saved; ``None`` saves nothing (``--no-save``).
        clock: the time source in seconds (monotonic).
    """

    def __init__(
        self,
        settings: PlaySettings,
        agents: dict[int, Agent],
        db: GameDB | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.agents = agents
        self.db = db
        self.clock = clock
        self._games: OrderedDict[str, _Entry] = OrderedDict()
        self._by_spec: dict[str, Agent] = {settings.specs[i]: a for i, a in agents.items()}
        self._count = 0 if db is None or settings.seed is None else db.next_index(settings.seed)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """Games in memory now."""
        return len(self._games)

    def __contains__(self, gid: object) -> bool:
        """Game ``gid`` is in memory now."""
        return gid in self._games

    def new(self, record: object = None, saved: object = None) -> tuple[str, str, Any]:
        """Start a game: a replay of ``settings.records[record]`` in replay mode, a replay of the finished saved
        game ``saved``, else a new game of the settings. Returns ``(id, tab, table)``.

        Raises:
            TableError: a missing or bad record index in replay mode, a record given elsewhere, an unknown or
                unfinished saved game (400), no room (503, ``"full"``).
        """
        s = self.settings
        if saved is not None:
            if record is not None:
                raise TableError("send either record or saved, not both")
            table: Any = self._saved_replay(saved)
        elif s.mode == "replay":
            from sixnimmt_env.play.replay_table import ReplayTable

            if record is None:
                raise TableError(f'this server replays records: send {{"record": i}} with i in 0..{len(s.records) - 1}')
            if isinstance(record, bool) or not isinstance(record, int) or not 0 <= record < len(s.records):
                raise TableError(f"record must be an index 0..{len(s.records) - 1}, got {record!r}")
            try:
                table = ReplayTable(s.records[record], record)
            except ValueError as e:  # ReplayError: the record does not replay through the engine
                raise TableError(f"record {record} cannot be replayed: {e}") from None
        elif record is not None:
            raise TableError("this server plays games: it has no records to replay (start it with --replay FILE)")
        else:
            with self._lock:
                index = self._count
                self._count += 1
            table = Table(
                s.config, s.specs, seed=s.seed, index=index, coach_samples=s.coach_samples, agents=self.agents
            )
        gid, tab = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        with self._lock:
            now = self.clock()
            self._sweep(now)
            if len(self._games) >= s.max_games and not self._make_room(now):
                raise TableError(
                    f"all {s.max_games} places of this server hold a game in play: try again in a minute", 503, "full"
                )
            self._games[gid] = _Entry(table, tab_hash(tab), now)
        return gid, tab, table

    def _saved_replay(self, gid: object) -> Any:
        """A replay table of the finished saved game ``gid``."""
        from sixnimmt_env.play.replay_table import ReplayTable

        if not isinstance(gid, str):
            raise TableError(f"saved must be a saved game's id (a string), got {type(gid).__name__}")
        found = self.db.load(gid) if self.db is not None else None
        if found is None:
            raise TableError(f"no saved game {gid[:40]!r} here: the history page lists the saved games")
        if not found.finished:
            raise TableError(f"saved game {gid!r} is not over: continue it instead (the history page links it)")
        return ReplayTable(found.record)

    def _sweep(self, now: float) -> None:
        """With a database: drop the games idle for ``idle_seconds``, least recently used first (lock held)."""
        if self.db is None:
            return
        while self._games:
            gid, entry = next(iter(self._games.items()))
            if entry.busy or now - entry.used < self.settings.idle_seconds:
                return
            del self._games[gid]

    def _make_room(self, now: float) -> bool:
        """Drop one game (lock held; the order of the class docstring); ``False`` if none may leave."""
        idle = self.settings.idle_seconds
        for gid, entry in self._games.items():
            if not entry.busy and (entry.table.state.done or now - entry.used >= idle):
                del self._games[gid]
                return True
        if self.db is None:
            return False
        for gid, entry in self._games.items():
            if not entry.busy:
                if not entry.played and entry.table.mode != "replay":
                    self.db.save(gid, entry.tab, entry.table)  # a fresh deal: saved as it is, read back if asked for
                del self._games[gid]
                return True
        return False

    @contextmanager
    def use(self, gid: str, tab: str | None) -> Iterator[_Entry]:
        """Game ``gid`` for one request of the tab holding ``tab`` (read back from the database if it left
        memory); it cannot leave memory until the block ends.

        Raises:
            TableError: 404 for an unknown game, 409 if another tab holds it.
        """
        with self._lock:
            entry = self._games.get(gid) or self._load(gid)
            if not tab or not hmac.compare_digest(tab_hash(tab), entry.tab):
                raise TableError(
                    "this game is open in another tab: play it there, or move it to this tab", 409, "other_tab"
                )
            entry.busy += 1
            entry.used = self.clock()
            self._games.move_to_end(gid)
        try:
            yield entry
        finally:
            with self._lock:
                entry.busy -= 1
                entry.used = self.clock()

    def _load(self, gid: str) -> _Entry:
        """Read game ``gid`` back from the database into memory (lock held).

        Raises:
            TableError: 404 if it is not saved (or nothing is); 409 if it cannot be continued (the message says
                why).
        """
        saved = self.db.load(gid) if self.db is not None and len(gid) < 64 else None
        if saved is None:
            why = "the server may have restarted" if self.db is not None else "this server saves no game (--no-save)"
            raise TableError(f"no such game here ({why}): start a new game", 404, "not_found")
        agents = {i: self._agent(spec) for i, spec in enumerate(saved.record.agents) if spec != HUMAN}
        try:
            table = restore(saved, agents)
        except ValueError as e:
            raise TableError(str(e), 409, "cannot_continue") from None
        entry = _Entry(table, saved.tab, self.clock(), played=True)
        if len(self._games) >= self.settings.max_games:
            self._make_room(entry.used)
        self._games[gid] = entry
        return entry

    def _agent(self, spec: str) -> Agent:
        """The built agent of ``spec`` (built once per server; lock held)."""
        if spec not in self._by_spec:
            self._by_spec[spec] = make_agent(spec)
        return self._by_spec[spec]

    def snapshot(self, gid: str, tab: str | None) -> dict[str, Any]:
        """The table of game ``gid`` (:meth:`~sixnimmt_env.play.table.Table.snapshot`) for the tab holding
        ``tab``; :meth:`use`'s errors."""
        with self.use(gid, tab) as entry:
            return entry.table.snapshot()

    def play(self, gid: str, tab: str | None, method: str, *args: Any) -> dict[str, Any]:
        """Call ``table.<method>(*args)`` (``"act"`` or ``"advance"``) on game ``gid``, save the game, and return
        its snapshot, all under the table's lock (so saves of one game never cross).

        Raises:
            TableError: :meth:`use`'s errors and the table's own.
        """
        with self.use(gid, tab) as entry:
            table = entry.table
            with table.lock:
                getattr(table, method)(*args)
                entry.played = True
                if self.db is not None and table.mode != "replay":
                    self.db.save(gid, entry.tab, table)
                return table.snapshot()

    def coach(self, gid: str, tab: str | None, version: int) -> Any:
        """The coach's advice on game ``gid`` (:meth:`~sixnimmt_env.play.table.Table.coach`)."""
        with self.use(gid, tab) as entry:
            return entry.table.coach(version)

    def claim(self, gid: str) -> tuple[str, dict[str, Any]]:
        """Give game ``gid`` a new tab token (the tab asking takes it over); returns ``(tab, snapshot)``.

        Raises:
            TableError: 404 for an unknown game, 409 for a saved game that cannot be continued.
        """
        tab = secrets.token_urlsafe(16)
        with self._lock:
            entry = self._games.get(gid) or self._load(gid)
            entry.tab = tab_hash(tab)
            entry.used = self.clock()
            self._games.move_to_end(gid)
            if self.db is not None and entry.played:
                self.db.set_tab(gid, entry.tab)
        return tab, entry.table.snapshot()


def _error(e: TableError) -> JSONResponse:
    return JSONResponse({"error": str(e), "code": e.code}, status_code=e.status)


async def _json(request: Request, allowed: tuple[str, ...], empty: bool = False) -> dict[str, Any]:
    """The request's JSON object (``{}`` for an empty body if ``empty``).

    Raises:
        TableError: (400) a body that is not UTF-8 JSON, is nested too deeply, is not an object, has a key outside
            ``allowed`` or a value that is not a number, string, boolean or null (the API's bodies are flat).
    """
    raw = await request.body()
    if not raw and empty:
        return {}
    try:
        body = json.loads(raw)
    except UnicodeDecodeError:
        raise TableError("the request body must be a JSON object in UTF-8") from None
    except RecursionError:
        raise TableError("the request body is nested too deeply: the API takes a flat JSON object") from None
    except ValueError as e:
        where = f": {e.msg} at line {e.lineno}, column {e.colno}" if isinstance(e, json.JSONDecodeError) else f": {e}"
        raise TableError(f"the request body must be a JSON object; it is not valid JSON{where}") from None
    if not isinstance(body, dict):
        raise TableError(f"the request body must be a JSON object, got {type(body).__name__}")
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        shown = ", ".join(repr(k[:40]) for k in unknown[:5])
        raise TableError(f"unknown key(s) {shown} in the request body; allowed: {', '.join(allowed)}")
    for key, value in body.items():
        if isinstance(value, list | dict):
            raise TableError(f"{key} must be a number or a string, got a JSON {type(value).__name__}")
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


def create_app(
    settings: PlaySettings,
    allowed_hosts: Sequence[str] = LOCAL_HOSTS,
    db: GameDB | None = None,
    token: str | None = None,
) -> Starlette:
    """The Starlette app of the play table.

    Args:
        settings: what each new game is.
        allowed_hosts: host names it answers to (``Host`` header); others get 400 (a guard against DNS
            rebinding of a local server).
        db: where games are saved and the history is read from; ``None`` saves nothing.
        token: the server's token, which every ``POST`` must carry (:mod:`sixnimmt_env.play.guard`); a fresh
            random one if ``None``. ``app.state.token`` holds it.

    Raises:
        ValueError: an unknown agent spec (the message names it and lists the known ones).
    """
    agents = {i: make_agent(s) for i, s in enumerate(settings.specs) if s != HUMAN}
    store = GameStore(settings, agents, db)
    token = secrets.token_urlsafe(24) if token is None else token
    static = resources.files("sixnimmt_env.play") / "static"
    page_headers = {"Cache-Control": "no-store", "X-Frame-Options": "DENY",
                    "Content-Security-Policy": "frame-ancestors 'none'"}  # fmt: skip
    meta = f'<head>\n<meta name="sixnimmt-token" content="{token}">'

    def page(name: str) -> Callable[[Request], Response]:
        html = (static / name).read_text(encoding="utf-8").replace("<head>", meta, 1)
        return lambda request: HTMLResponse(html, headers=page_headers)

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
            "saving": db is not None,
        })  # fmt: skip

    async def new_game(request: Request) -> Response:
        try:
            body = await _json(request, ("record", "saved"), empty=True)
            gid, tab, table = await _threaded(store.new, body.get("record"), body.get("saved"))
        except TableError as e:
            return _error(e)
        return JSONResponse({"game": gid, "tab": tab, "table": table.snapshot()})

    async def get_game(request: Request) -> Response:
        try:
            table = await _threaded(store.snapshot, request.path_params["gid"], request.headers.get("x-tab"))
        except TableError as e:
            return _error(e)
        return JSONResponse({"table": table})

    async def act(request: Request) -> Response:
        try:
            body = await _json(request, ("version", "kind", "value"))
            args = (body.get("version"), body.get("kind"), body.get("value"))
            table = await _threaded(store.play, request.path_params["gid"], request.headers.get("x-tab"), "act", *args)
        except TableError as e:
            return _error(e)
        return JSONResponse({"table": table})

    async def advance(request: Request) -> Response:
        try:
            body = await _json(request, ("version",))
            gid, tab = request.path_params["gid"], request.headers.get("x-tab")
            table = await _threaded(store.play, gid, tab, "advance", body.get("version"))
        except TableError as e:
            return _error(e)
        return JSONResponse({"table": table})

    async def coach(request: Request) -> Response:
        try:
            raw = request.query_params.get("version", "")
            try:
                version = int(raw)
            except ValueError:
                raise TableError(f"version must be an integer, got {raw[:40]!r}") from None
            gid, tab = request.path_params["gid"], request.headers.get("x-tab")
            advice = await _threaded(store.coach, gid, tab, version)
        except TableError as e:
            return _error(e)
        return JSONResponse({"advice": _advice(advice)})

    async def claim(request: Request) -> Response:
        try:
            await _json(request, (), empty=True)
            tab, table = await _threaded(store.claim, request.path_params["gid"])
        except TableError as e:
            return _error(e)
        return JSONResponse({"tab": tab, "table": table})

    def saved_games(finished: bool | None = None) -> list[Any]:
        return [] if db is None else db.games(finished)

    async def unfinished(request: Request) -> Response:
        games = await _threaded(saved_games, False)
        shown = [game_summary(g) for g in sorted(games, key=lambda g: -g.updated) if g.record.rounds]
        return JSONResponse({"saving": db is not None, "games": shown})

    async def game_history(request: Request) -> Response:
        games = await _threaded(saved_games)
        return JSONResponse({"saving": db is not None, **history(games)})

    async def export(request: Request) -> Response:
        games = await _threaded(saved_games, True)
        lines = [json.dumps(g.record.to_dict(), separators=(",", ":")) + "\n" for g in games]
        headers = {"Content-Disposition": 'attachment; filename="sixnimmt-games.jsonl"'}
        return Response("".join(lines), media_type="application/jsonl", headers=headers)

    routes = [
        Route("/", page("index.html")),
        Route("/history", page("history.html")),
        Route("/api/settings", game_settings),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{gid}", get_game),
        Route("/api/games/{gid}/act", act, methods=["POST"]),
        Route("/api/games/{gid}/advance", advance, methods=["POST"]),
        Route("/api/games/{gid}/coach", coach),
        Route("/api/games/{gid}/claim", claim, methods=["POST"]),
        Route("/api/unfinished", unfinished),
        Route("/api/history", game_history),
        Route("/api/history/records.jsonl", export),
        Mount("/static", StaticFiles(packages=[("sixnimmt_env.play", "static")]), name="static"),
    ]
    hosts = [h.strip("[]") if h.count(":") > 1 else h for h in allowed_hosts]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts), Middleware(ApiGuard, token=token)],
        exception_handlers={Exception: _internal_error},
    )
    app.state.store = store
    app.state.token = token
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
    # answers go out at once: a connection kept alive otherwise waits ~40 ms on each (Nagle's algorithm against the
    # browser's delayed ACK); accepted connections inherit the option
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
