"""The play table under load, after restarts and against bad requests (issue 39): the figures of its closing note.

Every figure is taken from a real server: ``python -m sixnimmt_env.play --no-browser --port 0 ...`` started as a
subprocess on 127.0.0.1 with a fresh ``--db`` in a temporary folder, driven over HTTP by client threads the way the
page drives it (the token read from the page, ``application/json`` bodies, the ``X-Tab`` header): the driver of
``tests/play_server.py``, which the play table's tests use too.

- **Load**: ``C`` clients, each creating a game against ``greedy,greedy,greedy`` (to 66) and playing it to its end
  (the lowest card, row 1), then the next, for ``S`` seconds; with ``--coach`` each client also asks the coach
  (``--coach-samples``, default 1,000 worlds) before each card or row. Prints clients, moves/s, the p50 and p99
  latency of a move (one ``act`` request), errors (any answer but 200) and lost games (a 404 on a game in play).
- **Memory**: the server's resident memory (``VmRSS``) after 20,000 games were created and given one move each,
  then abandoned, and the size of the database.
- **Restarts**: one game (``random,mc:8,greedy`` opponents, seeded) played to its end through ``K`` kills
  (``SIGKILL``) and restarts of the server; its saved record is compared with the same game played without a
  restart (in this process, :class:`sixnimmt_env.play.table.Table`).
- **Bad requests**: cross-origin, wrong content type, missing token, oversized, malformed and deeply nested bodies,
  unknown games and other hostile requests; a clear error is a 4xx answer with a JSON ``error`` and ``code``.

    python benchmarks/play_load.py                      # everything (about 4 minutes on 2 cores)
    python benchmarks/play_load.py --only load --clients 50 --seconds 20
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the server's driver: tests/play_server.py

from play_server import Client, bad_requests, restarts, run_load, start_server


def memory_after_abandoned(games: int = 20_000, threads: int = 8, db: Path | None = None) -> dict[str, Any]:
    """Create ``games`` games, give each one move and abandon it; the server's memory along the way."""
    with tempfile.TemporaryDirectory() as tmp:
        path = db or Path(tmp) / "games.sqlite3"
        server = start_server("--opponents", "greedy,greedy,greedy", "--db", str(path))
        try:
            done = [0]
            errors = [0]
            lock = threading.Lock()
            rss: dict[int, int] = {}

            def work(count: int) -> None:
                c = Client(server)
                for _ in range(count):
                    gid, tab, table = c.new_game()
                    status, _ = c.move(gid, tab, table)
                    with lock:
                        done[0] += 1
                        errors[0] += status != 200

            t0 = time.perf_counter()
            work(300)  # warm-up: past the 256 games memory holds
            rss[300] = server.rss_kib()
            for target in (games // 2, games):
                per = (target - done[0]) // threads
                pool = [threading.Thread(target=work, args=(per,)) for _ in range(threads)]
                for t in pool:
                    t.start()
                for t in pool:
                    t.join()
                rss[done[0]] = server.rss_kib()
            seconds = time.perf_counter() - t0
            return {"games": done[0], "errors": errors[0], "rss_kib": rss, "seconds": seconds,
                    "db_bytes": sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))}  # fmt: skip
        finally:
            server.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=["load", "memory", "restarts", "bad"], default=None)
    p.add_argument("--clients", default="50,100", help="comma-separated client counts (default 50,100)")
    p.add_argument("--seconds", type=float, default=20.0, help="seconds per load run (default 20)")
    p.add_argument("--coach-samples", type=int, default=1000, help="the coach's worlds in the coach runs")
    p.add_argument("--games", type=int, default=20_000, help="games created and abandoned for the memory figure")
    p.add_argument("--kills", type=int, default=5, help="server kills in the restart figure")
    args = p.parse_args()
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# python benchmarks/play_load.py  ({os.cpu_count()} CPUs, {now})")
    if args.only in (None, "load"):
        print("## load: clients play whole games against greedy,greedy,greedy (to 66)")
        for coach in (False, True):
            for clients in (int(c) for c in args.clients.split(",")):
                with tempfile.TemporaryDirectory() as tmp:
                    server = start_server("--opponents", "greedy,greedy,greedy", "--db", f"{tmp}/g.sqlite3",
                                          "--coach-samples", str(args.coach_samples))  # fmt: skip
                    try:
                        result = run_load(server, clients, args.seconds, coach)
                    finally:
                        server.stop()
                print(result.line(), flush=True)
                for sample in result.error_samples[:3]:
                    print("   ", sample)
    if args.only in (None, "memory"):
        m = memory_after_abandoned(args.games)
        rss = ", ".join(f"after {k:,} games {v / 1024:.0f} MiB" for k, v in m["rss_kib"].items())
        print(f"## memory: {m['games']:,} games created, moved in once and abandoned in {m['seconds']:.0f} s "
              f"({m['errors']} errors): server RSS {rss}; database {m['db_bytes'] / 2**20:.1f} MiB")  # fmt: skip
    if args.only in (None, "restarts"):
        r = restarts(args.kills)
        print(f"## restarts: {r['survived']}/{r['kills']} SIGKILLs survived mid-game ({r['moves']} moves); "
              f"same game as without a restart: {r['same_game']}; totals {r['totals']}")  # fmt: skip
    if args.only in (None, "bad"):
        with tempfile.TemporaryDirectory() as tmp:
            server = start_server("--opponents", "greedy,greedy,greedy", "--db", f"{tmp}/g.sqlite3")
            try:
                results = bad_requests(server)
            finally:
                server.stop()
        clear = sum(c for _, _, c in results)
        print(f"## bad requests: {len(results)} tried, {clear} got a clear error (4xx, JSON message), game unchanged")
        for what, status, ok in results:
            print(f"   {status}  {'clear' if ok else 'NOT CLEAR'}  {what}")


if __name__ == "__main__":
    main()
