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

Targets (issue 10): >= 130,000 games/s on one worker and >= 240,000 on two. The last column divides the games/s by
the compiled Rust engine's figures that issue 59 quotes (``RUST``: 57,746-66,304 games/s on 1 thread, 136,646 on 2),
measured on another host: a ratio to recompute where both run side by side. ``--no-plot`` times the command
without its ``results.png``.

``--rust 'COMMAND'`` times the Rust engine in the same run, interleaved with the arena commands: ``COMMAND`` is its
command line with ``{games}`` and ``{threads}`` in place of the games and the threads (the worker counts of
``--workers``), run through the shell and timed whole, start-up included, as ours; the last column then divides by
its median of this run instead of the quoted figures. For example
``--rust '/opt/take5/target/release/arena --games {games} --threads {threads}'``.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
TARGETS = {1: 130_000, 2: 240_000}
RUST = {1: (57_746, 66_304), 2: (136_646, 136_646)}
"""Games/s of the compiled Rust engine on 1 and 2 threads (issue 59, its lowest and highest figure), another host."""


def _python(repo: Path) -> str:
    venv = repo / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def run_once(repo: Path, agents: str, games: int, workers: int, extra: Sequence[str] = ()) -> float:
    """Wall-clock seconds of one arena command in ``repo`` (``CalledProcessError`` if it fails); ``extra``: more
    options."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [_python(repo), "-m", "sixnimmt_env.arena", "--agents", agents, "--games", str(games)]
        cmd += ["--workers", str(workers), "--quiet", "--out", out, *extra]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True)
        return time.perf_counter() - t0


def run_rust(template: str, games: int, threads: int) -> float:
    """Wall-clock seconds of the Rust engine's command ``template`` (``{games}``, ``{threads}`` filled in; run by
    the shell; ``CalledProcessError`` if it fails)."""
    cmd = template.format(games=games, threads=threads)
    t0 = time.perf_counter()
    subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agents", default="greedy,lowest,random,random")
    p.add_argument("--games", type=int, default=400_000)
    p.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    p.add_argument("--runs", type=int, default=3, help="timed runs per checkout and worker count (default 3)")
    p.add_argument("--repo", action="append", default=[], help="another checkout to time side by side")
    p.add_argument("--no-plot", action="store_true", help="pass --no-plot (every checkout must know it)")
    p.add_argument("--rust", default=None, metavar="COMMAND", help="the Rust engine's command, timed in the same run")
    args = p.parse_args()
    if args.rust is not None and ("{games}" not in args.rust or "{threads}" not in args.rust):
        p.error(f"--rust needs {{games}} and {{threads}} in its command, got {shlex.quote(args.rust)}")
    extra = ["--no-plot"] if args.no_plot else []
    repos = [HERE, *(Path(r).resolve() for r in args.repo)]
    workers = [int(w) for w in args.workers.split(",")]
    for repo in repos:  # warm-up: fills the numba caches of both checkouts
        run_once(repo, args.agents, 2000, 1)
    times: dict[tuple[Path, int], list[float]] = {(r, w): [] for r in repos for w in workers}
    rust: dict[int, list[float]] = {w: [] for w in workers}
    for _ in range(args.runs):
        for w in workers:
            for repo in repos:
                seconds = run_once(repo, args.agents, args.games, w, extra)
                times[repo, w].append(seconds)
                print(f"{repo}  workers={w}: {seconds:.2f} s, {args.games / seconds:,.0f} games/s", flush=True)
            if args.rust is not None:
                seconds = run_rust(args.rust, args.games, w)
                rust[w].append(seconds)
                print(f"rust  threads={w}: {seconds:.2f} s, {args.games / seconds:,.0f} games/s", flush=True)
    print()
    side = " speed / this checkout's |" if args.repo else ""
    rust_rate = {w: args.games / statistics.median(seconds) for w, seconds in rust.items() if seconds}
    measured = "this run's" if args.rust is not None else "issue 59's"
    print(f"| checkout | workers | median s | games/s (start-up included) | target | | / Rust ({measured}) |{side}")
    print("|---|---:|---:|---:|---:|---|---:|" + ("---:|" if args.repo else ""))
    for w in workers:
        base = statistics.median(times[HERE, w])
        for repo in repos:
            med = statistics.median(times[repo, w])
            ratio = f" {base / med:.2f} |" if args.repo else ""
            rate, target = args.games / med, TARGETS.get(w)
            verdict = "" if target is None else ("met" if rate >= target else f"missed by {1 - rate / target:.0%}")
            shown = "" if target is None else f"{target:,}"
            low, high = RUST.get(w, (0, 0)) if args.rust is None else (rust_rate[w], rust_rate[w])
            over = "" if not low else f"{rate / high:.2f}-{rate / low:.2f}x" if low != high else f"{rate / low:.2f}x"
            print(f"| {repo} | {w} | {med:.2f} | {rate:,.0f} | {shown} | {verdict} | {over} |{ratio}")
        if args.rust is not None:
            med = args.games / rust_rate[w]
            print(f"| Rust engine | {w} | {med:.2f} | {rust_rate[w]:,.0f} | | | 1.00x |" + (" |" if args.repo else ""))


if __name__ == "__main__":
    main()
