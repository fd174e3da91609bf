"""Heuristic arena games per second with start-up included: the whole command a user waits for.

Runs ``python -m sixnimmt_env.arena --agents greedy,lowest,random,random --games 400000 --workers W`` (4 players,
single rounds, seats rotated) as a subprocess and divides the games by the wall-clock seconds of the whole
process: interpreter start, imports, numba loading its cached compiled code, worker processes, the games, the
statistics and the written results. Prints one line per run and a table.

    python benchmarks/arena_command.py                          # 1 and 2 workers, 3 runs each, this checkout
    python benchmarks/arena_command.py --repo /path/to/other/checkout   # the same runs there, interleaved

With ``--repo`` the runs of every checkout alternate (this checkout, the other, this, ...), so that both see the
same load of a shared machine: compare their ratio. Each checkout runs with its own ``.venv/bin/python`` if it has
one. A first run that compiles (no numba cache yet) is made and not counted.

Targets (issue 10): >= 130,000 games/s on one worker and >= 240,000 on two.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
TARGETS = {1: 130_000, 2: 240_000}


def _python(repo: Path) -> str:
    venv = repo / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def run_once(repo: Path, agents: str, games: int, workers: int) -> float:
    """Wall-clock seconds of one arena command in ``repo`` (``CalledProcessError`` if it fails)."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [_python(repo), "-m", "sixnimmt_env.arena", "--agents", agents, "--games", str(games)]
        cmd += ["--workers", str(workers), "--quiet", "--out", out]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True)
        return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agents", default="greedy,lowest,random,random")
    p.add_argument("--games", type=int, default=400_000)
    p.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    p.add_argument("--runs", type=int, default=3, help="timed runs per checkout and worker count (default 3)")
    p.add_argument("--repo", action="append", default=[], help="another checkout to time side by side")
    args = p.parse_args()
    repos = [HERE, *(Path(r).resolve() for r in args.repo)]
    workers = [int(w) for w in args.workers.split(",")]
    for repo in repos:  # warm-up: fills the numba caches of both checkouts
        run_once(repo, args.agents, 2000, 1)
    times: dict[tuple[Path, int], list[float]] = {(r, w): [] for r in repos for w in workers}
    for _ in range(args.runs):
        for w in workers:
            for repo in repos:
                seconds = run_once(repo, args.agents, args.games, w)
                times[repo, w].append(seconds)
                print(f"{repo}  workers={w}: {seconds:.2f} s, {args.games / seconds:,.0f} games/s", flush=True)
    print()
    extra = " speed / this checkout's |" if args.repo else ""
    print(f"| checkout | workers | median s | games/s (start-up included) | target | |{extra}")
    print("|---|---:|---:|---:|---:|---|" + ("---:|" if args.repo else ""))
    for w in workers:
        base = statistics.median(times[HERE, w])
        for repo in repos:
            med = statistics.median(times[repo, w])
            ratio = f" {base / med:.2f} |" if args.repo else ""
            rate, target = args.games / med, TARGETS.get(w)
            verdict = "" if target is None else ("met" if rate >= target else f"missed by {1 - rate / target:.0%}")
            shown = "" if target is None else f"{target:,}"
            print(f"| {repo} | {w} | {med:.2f} | {rate:,.0f} | {shown} | {verdict} |{ratio}")


if __name__ == "__main__":
    main()
