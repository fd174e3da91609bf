"""A real play server in a subprocess, driven over HTTP the way the table's page drives it (issue 39): the play
table's tests and ``benchmarks/play_load.py`` use it.

:func:`start_server` runs ``python -m sixnimmt_env.play --no-browser --port 0 ...`` on 127.0.0.1 and reads its token
from the page; a :class:`Client` sends requests as the page does (the token, ``application/json`` bodies, the
``X-Tab`` header). On top of them:

- :func:`run_load`: ``C`` client threads, each creating a game against the server's opponents and playing it to its
  end (the lowest card, row 1), then the next, for ``S`` seconds, with the coach asked before each card or row if
  wanted: moves, latencies, errors (any answer but 200) and lost games (a 404 on a game in play);
- :func:`restarts`: one seeded game played to its end through ``K`` kills (``SIGKILL``) and restarts of the server,
  its saved record compared with the same game played without a restart (in this process,
  :class:`sixnimmt_env.play.table.Table`);
- :func:`bad_requests`: cross-origin, wrong content type, missing token, oversized, malformed and deeply nested
  bodies, unknown games and other hostile requests, byte for byte over a socket; a clear error is a 4xx answer with
  a JSON ``error`` and ``code``.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parents[1]
"""The repository's root: the server runs there, with it on ``PYTHONPATH``."""
TOKEN_HEADER = "X-Sixnimmt-Token"


@dataclass
class Server:
    """A play server subprocess: ``proc``, its ``host``/``port``, its ``token`` (read from its page)."""

    proc: subprocess.Popen
    host: str
    port: int
    token: str

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://{self.host}:{self.port}"

    def rss_kib(self) -> int:
        """The server's resident memory (``VmRSS`` of ``/proc``, KiB)."""
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", text).group(1))  # type: ignore[union-attr]

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL after 10 s)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def kill(self) -> None:
        """Kill it at once (SIGKILL: no clean-up, as a crash or a power cut)."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


def start_server(*args: str, timeout: float = 60.0) -> Server:
    """Start ``python -m sixnimmt_env.play --no-browser --port 0 ARGS`` and wait until it answers.

    Raises:
        RuntimeError: it exited or did not answer within ``timeout`` seconds (with its stderr).
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(HERE)}
    cmd = [sys.executable, "-m", "sixnimmt_env.play", "--no-browser", "--port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=HERE)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    match = re.search(r"at http://([\d.]+):(\d+)/", line)
    if match is None:
        proc.kill()
        raise RuntimeError(f"the server did not start: {line}{proc.stderr.read()}")  # type: ignore[union-attr]
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # type: ignore[union-attr]
    host, port = match.group(1), int(match.group(2))
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = http.client.HTTPConnection(host, port, timeout=5)
            conn.request("GET", "/")
            page = conn.getresponse().read().decode()
            conn.close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the server did not answer") from None
            time.sleep(0.05)
    token = re.search(r'<meta name="sixnimmt-token" content="([^"]+)">', page).group(1)  # type: ignore[union-attr]
    return Server(proc, host, port, token)


class Client:
    """One keep-alive HTTP connection to a server, sending requests as the table's page does."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.conn = http.client.HTTPConnection(server.host, server.port, timeout=60)

    def request(
        self, method: str, path: str, body: Any = None, tab: str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        """``(status, parsed JSON answer)``; the connection is opened again after a network error."""
        h = {"Origin": self.server.origin}
        if tab:
            h["X-Tab"] = tab
        data = None
        if method == "POST":
            h.update({"Content-Type": "application/json", TOKEN_HEADER: self.server.token})
            data = json.dumps({} if body is None else body).encode()
        h.update(headers or {})
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=data, headers=h)
                r = self.conn.getresponse()
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.server.host, self.server.port, timeout=60)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def new_game(self) -> tuple[str, str, dict[str, Any]]:
        """A new game: ``(id, tab, table)``.

        Raises:
            RuntimeError: the server refused (with its answer).
        """
        status, d = self.request("POST", "/api/games")
        if status != 200:
            raise RuntimeError(f"new game: {status} {d}")
        return d["game"], d["tab"], d["table"]

    def move(self, gid: str, tab: str, table: dict[str, Any]) -> tuple[int, Any]:
        """The person's move in ``table``: the lowest card, row 1, the lowest display card."""
        d = table["decision"]
        body = {"version": table["version"], "kind": d["kind"], "value": d["options"][0]}
        return self.request("POST", f"/api/games/{gid}/act", body, tab=tab)


@dataclass
class LoadResult:
    """What :func:`run_load` measured."""

    clients: int
    seconds: float
    coach: bool
    moves: int = 0
    games_finished: int = 0
    errors: int = 0
    lost: int = 0
    latencies: list[float] = field(default_factory=list)
    coach_latencies: list[float] = field(default_factory=list)
    error_samples: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line of figures."""
        lat = np.array(self.latencies or [0.0]) * 1000
        coach = f", coach p50 {np.percentile(self.coach_latencies, 50) * 1000:.0f} ms" if self.coach_latencies else ""
        return (
            f"{self.clients:>3} clients, coach {'on ' if self.coach else 'off'}, {self.seconds:.0f} s: "
            f"{self.moves / self.seconds:7.1f} moves/s, p50 {np.percentile(lat, 50):5.1f} ms, "
            f"p99 {np.percentile(lat, 99):6.1f} ms, errors {self.errors}, lost games {self.lost}, "
            f"games finished {self.games_finished}{coach}"
        )


def run_load(server: Server, clients: int, seconds: float, coach: bool = False) -> LoadResult:
    """``clients`` threads play whole games against ``server`` for ``seconds`` (see the module docstring)."""
    result = LoadResult(clients, seconds, coach)
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def play() -> None:
        c = Client(server)
        lat, coach_lat, moves, finished, errors, lost, samples = [], [], 0, 0, 0, 0, []
        try:
            while time.monotonic() < stop_at:
                status, d = c.request("POST", "/api/games")
                if status != 200:
                    errors += 1
                    samples.append(f"new game: {status} {d}")
                    continue
                gid, tab, table = d["game"], d["tab"], d["table"]
                while table["phase"] != "done" and time.monotonic() < stop_at:
                    if coach and table["decision"]["kind"] in ("card", "row"):
                        t0 = time.perf_counter()
                        status, d = c.request("GET", f"/api/games/{gid}/coach?version={table['version']}", tab=tab)
                        coach_lat.append(time.perf_counter() - t0)
                        if status != 200:
                            errors += 1
                            samples.append(f"coach: {status} {d}")
                    t0 = time.perf_counter()
                    status, d = c.move(gid, tab, table)
                    lat.append(time.perf_counter() - t0)
                    if status == 200:
                        table = d["table"]
                        moves += 1
                        continue
                    lost += status == 404
                    errors += 1
                    samples.append(f"move: {status} {d}")
                    break
                finished += table["phase"] == "done"
        finally:
            with lock:
                result.latencies += lat
                result.coach_latencies += coach_lat
                result.moves += moves
                result.games_finished += finished
                result.errors += errors
                result.lost += lost
                result.error_samples += samples[:3]

    threads = [threading.Thread(target=play) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return result


def restarts(kills: int = 5, seed: int = 17) -> dict[str, Any]:
    """Play one seeded game to its end through ``kills`` SIGKILLs and restarts; compare it with the same game
    played in this process without a restart."""
    from sixnimmt_env.play.saved import GameDB
    from sixnimmt_env.play.table import Table
    from sixnimmt_env.rules.engine import GameConfig

    specs = ["human", "random", "mc:8", "greedy"]
    reference = Table(GameConfig(num_players=4), specs, seed=seed)
    while not reference.state.done:
        d = reference.snapshot()["decision"]
        reference.act(reference.version, d["kind"], d["options"][0])
    args = ["--opponents", ",".join(specs[1:]), "--seed", str(seed)]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "games.sqlite3"
        server = start_server(*args, "--db", str(db))
        gid, tab, table = Client(server).new_game()
        every = max(1, reference.version // (kills + 1) // 2)
        survived = moves = 0
        while table["phase"] != "done":
            status, d = Client(server).move(gid, tab, table)
            assert status == 200, d
            table, moves = d["table"], moves + 1
            if moves % every == 0 and survived < kills and table["phase"] != "done":
                server.kill()
                server = start_server(*args, "--db", str(db))
                status, d = Client(server).request("GET", f"/api/games/{gid}", tab=tab)
                survived += status == 200 and d["table"] == table
                table = d["table"]
        server.stop()
        saved = GameDB(db).load(gid)
    same = saved is not None and saved.record == reference.record() and saved.finished
    return {"kills": kills, "survived": survived, "same_game": same, "moves": moves, "totals": table["totals"]}


def bad_requests(server: Server) -> list[tuple[str, int, bool]]:
    """Hostile and malformed requests: ``(what, status, clear)`` for each; nothing may be created or changed."""
    c = Client(server)
    gid, tab, table = c.new_game()
    own = server.origin
    act = f"/api/games/{gid}/act"
    good = json.dumps({"version": table["version"], "kind": "card", "value": table["decision"]["options"][0]})
    json_h = {"Content-Type": "application/json", TOKEN_HEADER: server.token, "Origin": own}
    cases: list[tuple[str, str, str, dict[str, str], bytes | None]] = [
        ("new game from another origin", "POST", "/api/games", {**json_h, "Origin": "http://evil.example"}, b"{}"),
        ("new game, text/plain, other origin", "POST", "/api/games",
         {"Content-Type": "text/plain", "Origin": "http://evil.example"}, b"{}"),
        ("claim from another origin", "POST", f"/api/games/{gid}/claim", {**json_h, "Origin": "http://evil.example"},
         b"{}"),
        ("move from an other-origin Referer", "POST", act,
         {**json_h, "Origin": "", "Referer": "http://evil.example/page", "X-Tab": tab}, good.encode()),
        ("move with Origin null (sandboxed frame)", "POST", act, {**json_h, "Origin": "null", "X-Tab": tab},
         good.encode()),
        ("history read from another origin", "GET", "/api/history", {"Origin": "http://evil.example"}, None),
        ("new game, text/plain, own origin", "POST", "/api/games", {**json_h, "Content-Type": "text/plain"}, b"{}"),
        ("new game, form body", "POST", "/api/games",
         {**json_h, "Content-Type": "application/x-www-form-urlencoded"}, b"a=1"),
        ("new game without the token", "POST", "/api/games", {"Content-Type": "application/json", "Origin": own},
         b"{}"),
        ("new game with a wrong token", "POST", "/api/games", {**json_h, TOKEN_HEADER: "guess"}, b"{}"),
        ("100,000 nested [", "POST", "/api/games", json_h, b"[" * 100_000),
        ("2,000 nested [ (under the size limit)", "POST", "/api/games", json_h, b"[" * 2000),
        ("nested value", "POST", act, {**json_h, "X-Tab": tab},
         b'{"version": ' + b"[" * 1000 + b"]" * 1000 + b', "kind": "card", "value": 1}'),
        ("1 MB body", "POST", "/api/games", json_h, b'{"record": "' + b"x" * 1_000_000 + b'"}'),
        ("malformed JSON", "POST", act, {**json_h, "X-Tab": tab}, b'{"version": 0, "kind": '),
        ("not UTF-8", "POST", act, {**json_h, "X-Tab": tab}, b'{"kind": "\xff\xfe"}'),
        ("JSON list body", "POST", act, {**json_h, "X-Tab": tab}, b"[1, 2, 3]"),
        ("unknown key", "POST", act, {**json_h, "X-Tab": tab}, b'{"version": 0, "cheat": 1}'),
        ("huge integer", "POST", act, {**json_h, "X-Tab": tab},
         b'{"version": ' + b"9" * 4000 + b', "kind": "card", "value": 1}'),
        ("card not in hand", "POST", act, {**json_h, "X-Tab": tab},
         json.dumps({"version": table["version"], "kind": "card", "value": 105}).encode()),
        ("stale version", "POST", act, {**json_h, "X-Tab": tab},
         json.dumps({"version": 99, "kind": "card", "value": 1}).encode()),
        ("unknown game", "POST", "/api/games/nosuchgame/act", json_h, good.encode()),
        ("other tab's move", "POST", act, {**json_h, "X-Tab": "guess"}, good.encode()),
        ("coach version not a number", "GET", f"/api/games/{gid}/coach?version=x", {"X-Tab": tab}, None),
        ("replay of an unknown saved game", "POST", "/api/games", json_h, b'{"saved": "nosuchgame"}'),
        ("Host evil.example (DNS rebinding)", "GET", "/api/settings", {"Host": "evil.example"}, None),
        ("Content-Length not a number", "POST", "/api/games", {**json_h, "Content-Length": "abc"}, None),
    ]  # fmt: skip
    out = []
    for what, method, path, headers, body in cases:
        status, clear = _raw(server, method, path, headers, body)
        out.append((what, status, clear))
    status, d = c.request("GET", f"/api/games/{gid}", tab=tab)
    assert status == 200 and d["table"] == table, "a bad request changed the game"
    return out


def _raw(server: Server, method: str, path: str, headers: dict[str, str], body: bytes | None) -> tuple[int, bool]:
    """Send one request byte for byte (headers as given, an empty ``Origin`` left out); ``(status, clear)``."""
    lines = [f"{method} {path} HTTP/1.1"]
    given = {k.lower() for k in headers}
    if "host" not in given:
        lines.append(f"Host: {server.host}:{server.port}")
    lines += [f"{k}: {v}" for k, v in headers.items() if v]
    if body is not None and "content-length" not in given:
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode()
    data = b""
    with socket.create_connection((server.host, server.port), timeout=30) as s:
        if body is not None and len(body) > 65536:  # a large body: the server may answer from the headers alone
            s.sendall(head_bytes)
            s.settimeout(1.0)
            try:
                data = s.recv(65536)
            except TimeoutError:
                s.sendall(body)
            s.settimeout(30)
        else:
            s.sendall(head_bytes + (body or b""))
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass  # closed after its answer
    head, _, payload = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head else 0
    try:
        answer = json.loads(payload) if payload else None
    except ValueError:
        answer = None
    if answer is None and head and b"chunked" in head.lower():
        answer = _dechunk(payload)
    clear = 400 <= status < 500 and isinstance(answer, dict) and bool(answer.get("error")) and "code" in answer
    plain = 400 <= status < 500 and payload.strip() in (b"Invalid host header",)  # Starlette's TrustedHost answer
    return status, clear or plain


def _dechunk(payload: bytes) -> Any:
    out, rest = b"", payload
    while rest:
        size, _, rest = rest.partition(b"\r\n")
        n = int(size or b"0", 16)
        if n == 0:
            break
        out, rest = out + rest[:n], rest[n + 2 :]
    try:
        return json.loads(out)
    except ValueError:
        return None
