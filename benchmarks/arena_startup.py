"""The arena command's start-up taken apart: where the wall time of a short run goes, beside the whole command's.

Runs ``python -m sixnimmt_env.arena --agents greedy,lowest,random,random --games 2000 --workers W`` (4 players,
single rounds) as a subprocess, twice per round: once plain (its wall time is the command's) and once with a probe
that stamps its parts (the probe adds about a millisecond). The probe is a ``sitecustomize`` module put on
``PYTHONPATH`` for that run only, so every process of the command loads it (the parent, the plot helper, forked
and spawned workers) and the command's code runs unchanged. It times, with one clock (``time.perf_counter``,
shared by the processes of one machine):

- every import (``importlib._bootstrap._find_and_load``, as ``python -X importtime``), its own time charged to
  its top-level package (numpy, numba, scipy, matplotlib, ...);
- the command's steps, by wrapping these functions where they exist: ``command.main`` (parsing, checks,
  printing), ``plotter.PlotProcess.__init__`` and ``.draft`` (the plot helper's start), ``loop_cache.load`` (the
  compiled loop from numba's cache), ``pool.play_all`` (the games), ``multiprocessing``'s ``Process.start``
  (workers' start), ``summary.part_summary`` / ``rows_from_parts`` (the statistics), ``report.write_results``
  (JSON and Markdown), ``report.markdown_table`` (the tables), ``plotter.PlotProcess.plot`` (waiting for the
  plot); in the children ``plotter._serve`` (the plot helper) and ``pool._worker`` (a worker).

Each part is the time the parent process spent in it, less the parts nested in it, so that the parts add up to the
wall time (``other``: what no part covers, e.g. the interpreter's own work between them); the ``CPU:`` rows give the
parent's CPU time (``time.process_time``) in the same parts, which a loaded machine changes less than the wall
time. The plot helper's and the workers' timelines follow (when each was ready, since the command's start). A last
table times a worker's start after the parent loaded the compiled loop, forked, from a fork server and spawned.

    python benchmarks/arena_startup.py                       # 1 and 2 workers, 5 rounds, this checkout
    python benchmarks/arena_startup.py --repo /tmp/base      # another checkout beside it, runs interleaved
    python benchmarks/arena_startup.py --bytecode            # with Python's .pyc files (PYTHONDONTWRITEBYTECODE off)
    python benchmarks/arena_startup.py --no-plot             # the commands with --no-plot

Each checkout runs with its own ``.venv/bin/python`` if it has one, else the one running this script. A first
run per checkout (not counted) fills numba's cache (and, with ``--bytecode``, Python's).
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]

PROBE = r'''
"""The arena start-up probe (benchmarks/arena_startup.py): loaded by site from PYTHONPATH."""
import os

_OUT = os.environ.get("ARENA_STARTUP_PROBE")
if _OUT:
    import sys
    import time

    _clock = time.perf_counter
    _cpu = time.process_time
    _T_SITE = _clock()
    _CPU_SITE = _cpu()
    import _frozen_importlib as _bootstrap

    _fd = os.open(_OUT, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    _argv = " ".join(getattr(sys, "orig_argv", []))
    _role = "spawned" if "--multiprocessing-fork" in _argv else ("forkserver" if "forkserver" in _argv else "main")
    _state = {"role": _role}
    _own = {}  # category -> own seconds
    _own_cpu = {}  # category -> own CPU seconds (this process)
    _stack = []  # [category, children's seconds, children's CPU seconds, CPU at the start]

    def _write(record):
        os.write(_fd, (repr(record) + "\n").encode())

    def _enter(category):
        if category is None:
            category = _stack[-1][0] if _stack else "other"
        _stack.append([category, 0.0, 0.0, _cpu()])
        return category

    def _leave(t0):
        dt = _clock() - t0
        category, children, children_cpu, cpu0 = _stack.pop()
        dcpu = _cpu() - cpu0
        _own[category] = _own.get(category, 0.0) + dt - children
        _own_cpu[category] = _own_cpu.get(category, 0.0) + dcpu - children_cpu
        if _stack:
            _stack[-1][1] += dt
            _stack[-1][2] += dcpu

    def _flush():
        _write(("own", os.getpid(), _state["role"], dict(_own), _T_SITE, dict(_own_cpu), _CPU_SITE, _cpu()))

    def _child_reset():
        _own.clear()
        _own_cpu.clear()
        del _stack[:]
        _state["role"] = "forked"

    os.register_at_fork(after_in_child=_child_reset)

    import atexit

    atexit.register(_flush)

    _find_and_load = _bootstrap._find_and_load

    def _timed_find_and_load(name, import_):
        t0 = _clock()
        _enter("import " + name.partition(".")[0])
        try:
            return _find_and_load(name, import_)
        finally:
            _leave(t0)
            _patch(name)
            if len(_stack) <= 1 and _state["role"] != "main":  # a child may be killed once done: write as it goes
                _flush()

    _bootstrap._find_and_load = _timed_find_and_load

    def _wrap(fn, category, span, role=None):
        def wrapper(*args, **kwargs):
            if role is not None:
                _state["role"] = role
            cat = category
            if cat == "workers' start" and not (_stack and _stack[-1][0] == "games"):
                cat = None  # a process started elsewhere (the plot helper): its caller's part
            t0 = _clock()
            if role is not None:
                _write(("enter", os.getpid(), role, span, t0))
            _enter(cat)
            try:
                return fn(*args, **kwargs)
            finally:
                _leave(t0)
                _write(("span", os.getpid(), _state["role"], span, t0, _clock()))
                if role is not None:
                    _flush()

        wrapper.__wrapped__ = fn
        return wrapper

    _TARGETS = {
        "multiprocessing.process": [("BaseProcess.start", "workers' start")],
        "sixnimmt_env.arena.command": [("main", "command: parse, check, print")],
        "sixnimmt_env.arena.plotter": [
            ("PlotProcess.__init__", "plot helper's start"),
            ("PlotProcess.draft", "plot helper's start"),
            ("PlotProcess.plot", "plot: wait for the helper"),
            ("_serve", None, "plot helper"),
        ],
        "sixnimmt_env.compiled.loop_cache": [("load", "kernel load (numba's cache)")],
        "sixnimmt_env.arena.pool": [("play_all", "games"), ("_worker", None, "worker")],
        "sixnimmt_env.arena.run": [("run_arena", "arena set-up")],
        "sixnimmt_env.arena.summary": [("part_summary", "statistics"), ("rows_from_parts", "statistics")],
        "sixnimmt_env.arena.report": [
            ("write_results", "results written (JSON, Markdown)"),
            ("markdown_table", "tables"),
        ],
    }

    def _patch(name):
        targets = _TARGETS.pop(name, None)
        module = sys.modules.get(name)
        if targets is None or module is None:
            return
        for target in targets:
            path, category, role = target[0], target[1], (target[2] if len(target) > 2 else None)
            owner_name, _, attr = path.rpartition(".")
            owner = getattr(module, owner_name) if owner_name else module
            fn = getattr(owner, attr, None)
            if fn is not None:
                setattr(owner, attr, _wrap(fn, category, path, role))
'''

MAIN_PARTS = [
    "Python start (interpreter, site)",
    "import numpy",
    "import numba",
    "import llvmlite",
    "import scipy",
    "import matplotlib",
    "import sixnimmt_env",
    "import (standard library, others)",
    "command: parse, check, print",
    "plot helper's start",
    "arena set-up",
    "kernel load (numba's cache)",
    "workers' start",
    "games",
    "statistics",
    "results written (JSON, Markdown)",
    "tables",
    "plot: wait for the helper",
    "exit (after the last line of Python)",
    "other",
]
_MPL_PACKAGES = ("matplotlib", "mpl_toolkits", "PIL", "pyparsing", "kiwisolver", "cycler", "dateutil", "fontTools")
_OWN_PACKAGES = {"numpy", "numba", "llvmlite", "scipy", "matplotlib", "sixnimmt_env"}


def _python(repo: Path) -> str:
    venv = repo / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


EXTRA: list[str] = []
"""More options for every command timed (``--no-plot`` sets ``["--no-plot"]``)."""


def _command(repo: Path, agents: str, games: int, workers: int, out: str) -> list[str]:
    cmd = [_python(repo), "-m", "sixnimmt_env.arena", "--agents", agents, "--games", str(games)]
    return [*cmd, "--workers", str(workers), "--quiet", "--out", out, *EXTRA]


def run_env(repo: Path, bytecode: Path | None) -> dict[str, str]:
    """The environment of the runs in ``repo``: this one, or with ``bytecode`` (a folder), Python writing and
    reading its ``.pyc`` files there (``PYTHONPYCACHEPREFIX``, one folder per checkout) even where
    ``PYTHONDONTWRITEBYTECODE`` is set here, as in a usual install."""
    env = dict(os.environ)
    if bytecode is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode / repo.as_posix().strip("/").replace("/", "_"))
    return env


def plain_run(repo: Path, agents: str, games: int, workers: int, env: dict[str, str] | None = None) -> float:
    """Wall-clock seconds of one arena command in ``repo``, without the probe."""
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        cmd = _command(repo, agents, games, workers, out)
        subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True)
        return time.perf_counter() - t0


def probed_run(
    repo: Path, agents: str, games: int, workers: int, probe_dir: Path, env: dict[str, str] | None = None
) -> dict[str, float]:
    """One arena command in ``repo`` with the probe: the parent's parts (seconds) and the children's timelines."""
    with tempfile.TemporaryDirectory() as out:
        log = Path(out) / "probe.log"
        env = dict(env or os.environ, ARENA_STARTUP_PROBE=str(log))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(probe_dir), env.get("PYTHONPATH", "")]))
        t0 = time.perf_counter()
        subprocess.run(
            _command(repo, agents, games, workers, str(Path(out) / "results")),
            cwd=repo,
            env=env,
            check=True,
            capture_output=True,
        )
        t1 = time.perf_counter()
        records = [ast.literal_eval(line) for line in log.read_text().splitlines()]
    return _parts(records, t0, t1)


def _charge(parts: dict[str, float], own: dict[str, float]) -> None:
    """Add the probe's own seconds per category to the table's parts (imports by package)."""
    for category, seconds in own.items():
        if category.startswith("import "):
            package = category.removeprefix("import ")
            key = f"import {package}" if package in _OWN_PACKAGES else "import (standard library, others)"
            if package in _MPL_PACKAGES:
                key = "import matplotlib"
            parts[key] += seconds
        elif category in parts:
            parts[category] += seconds
        else:
            parts["other"] = parts.get("other", 0.0) + seconds


def _mpl(own: dict[str, float]) -> float:
    """The seconds of matplotlib's import (its own and its dependencies') in a process's own seconds."""
    return sum(seconds for category, seconds in own.items() if category.removeprefix("import ") in _MPL_PACKAGES)


def _parts(records: list[tuple], t0: float, t1: float) -> dict[str, float]:
    last: dict[int, tuple] = {}
    for r in records:  # a child writes its imports as it goes: its last record counts
        if r[0] == "own":
            last[r[1]] = r
    records = [r for r in records if r[0] != "own"] + list(last.values())
    main_pid = next(r[1] for r in records if r[0] == "own" and r[2] == "main")
    main_own = next(r for r in records if r[0] == "own" and r[1] == main_pid)
    own, site = main_own[3], main_own[4]
    spans = [r for r in records if r[0] == "span"]
    main_end = max(r[5] for r in spans if r[1] == main_pid and r[3] == "main")
    parts = {name: 0.0 for name in MAIN_PARTS}
    parts["Python start (interpreter, site)"] = site - t0
    _charge(parts, own)
    cpu = {name: 0.0 for name in MAIN_PARTS if not name.startswith(("exit", "other"))}
    cpu["Python start (interpreter, site)"] = main_own[6]
    _charge(cpu, main_own[5])
    parts.update({f"CPU: {name}": seconds for name, seconds in cpu.items()})
    parts["CPU: the parent, in all (to its exit)"] = main_own[7]
    parts["exit (after the last line of Python)"] = t1 - main_end
    # what ran after main() in Python (the module's last lines, the probe's own atexit record) is "other"
    parts["other"] += (t1 - t0) - sum(parts[name] for name in MAIN_PARTS)
    parts["wall (probed run)"] = t1 - t0
    helper = [r for r in records if r[0] == "enter" and r[2] == "plot helper"]
    if helper:
        pid = helper[0][1]
        helper_own = next((r[3] for r in records if r[0] == "own" and r[1] == pid), {})
        helper_cpu = next((r[5] for r in records if r[0] == "own" and r[1] == pid), {})
        parts["plot helper: ready (its code running) at"] = helper[0][4] - t0
        parts["plot helper: its matplotlib import"] = _mpl(helper_own)
        parts["CPU: plot helper's matplotlib import"] = _mpl(helper_cpu)
    plots = [r for r in spans if r[1] == main_pid and r[3] == "PlotProcess.plot"]
    if plots:
        parts["plot: asked for at"] = plots[0][4] - t0
        parts["plot: written at"] = plots[0][5] - t0
    workers = [r for r in records if r[0] == "enter" and r[2] == "worker"]
    if workers:
        parts["workers: first ready at"] = min(r[4] for r in workers) - t0
    loads = [r for r in spans if r[1] == main_pid and r[3] == "load"]
    if loads:
        parts["kernel loaded at"] = loads[0][5] - t0
    games = [r for r in spans if r[1] == main_pid and r[3] == "play_all"]
    if games:
        parts["games done at"] = games[0][5] - t0
    return parts


def _ready(conn: Any) -> None:
    """A worker's start: the arena's compiled loop loaded (at once where forked from a process that loaded it)."""
    from sixnimmt_env.compiled.fast_arena import load
    from sixnimmt_env.rules.engine import GameConfig

    load(GameConfig())
    conn.send(time.perf_counter())
    conn.close()


def start_method_child(method: str) -> None:
    """In a fresh process (``--start-method-child``): load the compiled loop as the arena's parent does, start one
    worker with ``method`` and print the seconds the parent was blocked in ``start()`` and until the worker had
    the loop loaded."""
    import multiprocessing

    from sixnimmt_env.compiled.fast_arena import load
    from sixnimmt_env.rules.engine import GameConfig

    load(GameConfig())
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["sixnimmt_env.compiled.fast_arena", "sixnimmt_env.compiled.loop_cache"])
    reader, writer = ctx.Pipe(duplex=False)
    t0 = time.perf_counter()
    proc = ctx.Process(target=_ready, args=(writer,), daemon=True)
    proc.start()
    t1 = time.perf_counter()
    ready = reader.recv()
    proc.join()
    print(t1 - t0, ready - t0)


def start_methods(repo: Path, runs: int) -> dict[str, tuple[float, float]]:
    """Median (blocked in ``start()``, until ready) seconds per start method, ``runs`` fresh processes each."""
    times: dict[str, list[tuple[float, float]]] = {m: [] for m in ("fork", "forkserver", "spawn")}
    for _ in range(runs):
        for method in times:
            out = subprocess.run(
                [_python(repo), str(Path(__file__).resolve()), "--start-method-child", method],
                cwd=repo,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            times[method].append((float(out[0]), float(out[1])))
    return {m: (statistics.median(a for a, _ in v), statistics.median(b for _, b in v)) for m, v in times.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agents", default="greedy,lowest,random,random")
    p.add_argument("--games", type=int, default=2000)
    p.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    p.add_argument("--runs", type=int, default=5, help="rounds (one plain and one probed run each; default 5)")
    p.add_argument("--repo", action="append", default=[], help="another checkout to time side by side")
    p.add_argument("--no-plot", action="store_true", help="time the commands with --no-plot (no results.png)")
    p.add_argument(
        "--bytecode",
        action="store_true",
        help="let Python cache its bytecode (in a temporary folder) even where PYTHONDONTWRITEBYTECODE is set",
    )
    p.add_argument("--start-method-child", choices=("fork", "forkserver", "spawn"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.start_method_child:
        start_method_child(args.start_method_child)
        return
    repos = [HERE, *(Path(r).resolve() for r in args.repo)]
    if args.no_plot:
        EXTRA.append("--no-plot")
    workers = [int(w) for w in args.workers.split(",")]
    with tempfile.TemporaryDirectory() as probe_dir:
        (Path(probe_dir) / "sitecustomize.py").write_text(PROBE)
        envs = {r: run_env(r, Path(probe_dir) / "bytecode" if args.bytecode else None) for r in repos}
        for repo in repos:  # warm-up: fills numba's cache of each checkout (and the bytecode folders)
            plain_run(repo, args.agents, 2000, 1, envs[repo])
        walls: dict[tuple[Path, int], list[float]] = {(r, w): [] for r in repos for w in workers}
        probed: dict[tuple[Path, int], list[dict[str, float]]] = {(r, w): [] for r in repos for w in workers}
        for k in range(args.runs):
            for w in workers:
                for repo in repos:
                    walls[repo, w].append(plain_run(repo, args.agents, args.games, w, envs[repo]))
                    probed[repo, w].append(probed_run(repo, args.agents, args.games, w, Path(probe_dir), envs[repo]))
                    print(
                        f"round {k + 1}: {repo} workers={w}: {walls[repo, w][-1]:.3f} s "
                        f"(probed {probed[repo, w][-1]['wall (probed run)']:.3f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
    columns = [(r, w) for w in workers for r in repos]
    names = {r: (r.name if r != HERE else "this checkout") for r in repos}
    how = (
        "bytecode cached"
        if args.bytecode
        else f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')}"
    )
    how += ", --no-plot" if args.no_plot else ""
    print(f"\n{args.games:,} games, agents {args.agents}; {how}; median of {args.runs} runs, milliseconds\n")
    print("| part | " + " | ".join(f"{names[r]}, {w} worker(s)" for r, w in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    keys = [*MAIN_PARTS, "wall (probed run)"]
    found = {k for runs in probed.values() for run in runs for k in run} - set(keys)
    extra = sorted(k for k in found if not k.startswith("CPU: "))
    cpu = [f"CPU: {name}" for name in MAIN_PARTS if f"CPU: {name}" in found]
    cpu += sorted(k for k in found if k.startswith("CPU: ") and k not in cpu)
    for key in [*keys, *extra, *cpu]:
        cells = []
        for col in columns:
            values = [run[key] for run in probed[col] if key in run]
            cells.append(f"{statistics.median(values) * 1000:.0f}" if values else "")
        print(f"| {key} | " + " | ".join(cells) + " |")
    cells = [f"**{statistics.median(walls[col]) * 1000:.0f}**" for col in columns]
    print("| **whole command, wall (plain run)** | " + " | ".join(cells) + " |")
    methods = start_methods(HERE, args.runs)
    print("\nA worker's start, after the parent loaded the compiled loop (this checkout; median, milliseconds)\n")
    print("| start method | parent blocked in start() | worker ready (loop loaded) |")
    print("|---|---:|---:|")
    for method, (blocked, ready) in methods.items():
        print(f"| {method} | {blocked * 1000:.1f} | {ready * 1000:.1f} |")


if __name__ == "__main__":
    main()
