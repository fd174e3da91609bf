"""The main job's PPO phase, whole: env steps/s (evaluations and checkpoints included), busy cores and peak memory,
for each setup side by side in one run, the commit before the work among them.

Usage::

    python lab/benchmarks/train_phase.py [--minutes 3] [--before REV] [--config configs/ppo_4p.yaml]
                                     [--workers 1 2 ...] [--set KEY=VALUE ...]

Each setup is ``python -m training.train CONFIG --set train.max_minutes=M`` in a process of its own, with the
distillation off (it is the same in every setup and not part of the PPO phase) and a short final evaluation:

- ``before (REV)``: the same command in a ``git worktree`` of ``REV`` (with the compiled arena loop copied in);
- ``workers=W``: this checkout with ``--set train.workers=W`` (1: synchronous MaskablePPO in one process).

Each checkout first runs a short warm-up (four rollouts, a self-play snapshot, an evaluation) that fills numba's
on-disk caches, so that no setup pays for compiling the kernels inside its measured phase.

Figures: the env steps/s that the run prints for its whole ``learn`` phase (rollouts, updates, evaluations,
checkpoints, self-play snapshots); the busy cores (user + system CPU of the run's process tree over wall time,
read from ``/proc`` every 0.25 s)
over the whole process and over the middle 80 % of it (steady training, start-up and the final evaluation left
out); the peak resident memory of the process tree (the sum over its processes, sampled every 0.25 s) and of its
largest process. Run nothing else on the machine meanwhile: a load above its cores slows every figure.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TypedDict

ROOT = Path(__file__).resolve().parents[2]
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _sample(pid: int, seen: dict[int, float]) -> tuple[float, int, int]:
    """CPU seconds (user + system) of ``pid``'s tree so far, its summed and largest resident bytes now. ``seen``
    keeps each process's last CPU figure, so a process that has ended still counts."""
    total, largest = 0, 0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{p}/statm") as f:
                rss = int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
        seen[p] = (int(fields[11]) + int(fields[12])) / TICK
        total += rss
        largest = max(largest, rss)
    return sum(seen.values()), total, largest


class Figures(TypedDict):
    """One setup's figures (:func:`run`): the PPO phase's env steps, seconds and steps/s as the run prints them, the
    wall seconds, the busy cores over the whole process and over its middle 80 %, the peak MB of the process tree
    and of its largest process."""

    setup: str
    steps: int
    learn_s: int
    steps_per_s: int
    wall_s: float
    busy_all: float
    busy_steady: float
    peak_tree_mb: float
    peak_proc_mb: float


def run(label: str, cwd: Path, python: str, args: list[str]) -> Figures:
    """Run one setup; returns its figures."""
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [python, "-m", "training.train", *args], cwd=cwd, env=env, stderr=subprocess.PIPE, text=True
    )
    samples: list[tuple[float, float]] = []
    peak = [0, 0]
    seen: dict[int, float] = {}

    def watch() -> None:
        while proc.poll() is None:
            cpu, total, largest = _sample(proc.pid, seen)
            samples.append((time.perf_counter() - start, cpu))
            peak[0], peak[1] = max(peak[0], total), max(peak[1], largest)
            time.sleep(0.25)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    watcher.join()
    if proc.returncode != 0:
        raise SystemExit(f"{label}: training failed ({proc.returncode}):\n{err[-3000:]}")
    found = re.search(r"([\d,]+) steps in (\d+) s \(([\d,]+) steps/s\)", err)
    if found is None:
        raise SystemExit(f"{label}: no speed line in the output:\n{err[-3000:]}")
    cpu_all = samples[-1][1] if samples else float("nan")
    lo, hi = 0.1 * wall, 0.9 * wall
    window = [(t, c) for t, c in samples if lo <= t <= hi]
    steady = (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0]) if len(window) > 2 else float("nan")
    return {
        "setup": label,
        "steps": int(found.group(1).replace(",", "")),
        "learn_s": int(found.group(2)),
        "steps_per_s": int(found.group(3).replace(",", "")),
        "wall_s": wall,
        "busy_all": cpu_all / wall,
        "busy_steady": steady,
        "peak_tree_mb": peak[0] / 2**20,
        "peak_proc_mb": peak[1] / 2**20,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/ppo_4p.yaml")
    p.add_argument("--minutes", type=float, default=3.0, help="PPO phase of each setup (train.max_minutes)")
    p.add_argument("--before", metavar="REV", help="also run the commit REV (a git worktree), first")
    p.add_argument("--workers", type=int, nargs="+", default=[1, os.cpu_count() or 1], help="train.workers values")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--keep", metavar="DIR", help="keep the runs' folders in DIR (e.g. their eval.csv learning curves)")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="train-phase-"))
    out = Path(args.keep) if args.keep else work
    common = [
        args.config,
        "--no-progress",
        "--set",
        "distill.enabled=false",
        "--set",
        f"train.max_minutes={args.minutes}",
        "--set",
        "eval.final_games=300",
    ]
    for o in args.overrides:
        common += ["--set", o]
    setups: list[tuple[str, Path, list[str]]] = []
    worktree = None
    if args.before:
        worktree = work / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(worktree), args.before], cwd=ROOT, check=True)
        rev = subprocess.run(["git", "rev-parse", "--short", args.before], cwd=ROOT, capture_output=True, text=True)
        label = f"before ({rev.stdout.strip()})"
        setups.append((label, worktree, [*common, "--set", f"train.output_dir={out / 'before'}"]))
    for w in args.workers:
        setups.append(
            (
                f"workers={w}",
                ROOT,
                [*common, "--set", f"train.workers={w}", "--set", f"train.output_dir={out / f'workers{w}'}"],
            )
        )
    print(
        f"{args.config}, PPO phase {args.minutes:g} min per setup, {os.cpu_count()} CPUs, load before "
        f"{os.getloadavg()[0]:.1f}",
        flush=True,
    )
    header = (
        f"{'setup':<18} {'steps':>11} {'learn s':>8} {'steps/s':>9} {'busy cores':>11} {'(steady)':>9} "
        f"{'peak MB tree':>13} {'(largest)':>10}"
    )
    print(header, flush=True)
    results: list[Figures] = []
    try:
        for cwd in dict.fromkeys(cwd for _, cwd, _ in setups):  # numba's caches filled, in each checkout, first
            warm = ["--set", "train.total_timesteps=65536", "--set", "train.max_minutes=null"]
            warm += ["--set", "self_play.snapshot_every=16384", "--set", "eval.every=32768"]
            run(
                f"warm-up in {cwd}", cwd, sys.executable, [*common, *warm, "--set", f"train.output_dir={work / 'warm'}"]
            )
        for label, cwd, setup_args in setups:
            r = run(label, cwd, sys.executable, setup_args)
            results.append(r)
            print(
                f"{r['setup']:<18} {r['steps']:>11,} {r['learn_s']:>8} {r['steps_per_s']:>9,} {r['busy_all']:>11.2f} "
                f"{r['busy_steady']:>9.2f} {r['peak_tree_mb']:>13,.0f} {r['peak_proc_mb']:>10,.0f}",
                flush=True,
            )
    finally:
        if worktree is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False)
        shutil.rmtree(work, ignore_errors=True)
    if results:
        base = results[0]
        for r in results[1:]:
            print(f"{r['setup']}: {r['steps_per_s'] / base['steps_per_s']:.2f}x the steps/s of {base['setup']}")


if __name__ == "__main__":
    main()
