"""What a fresh checkout waits for numba: the first compile of the compiled tier's loops, side by side.

Usage::

    python lab/benchmarks/compile_time.py [--repo OTHER_CHECKOUT ...] [--repeat 2]

Each measurement runs in a fresh process with an empty ``NUMBA_CACHE_DIR`` (what a fresh clone or a new install
sees: nothing compiled yet), for this checkout and for every ``--repo`` (e.g. a git worktree of an earlier commit),
one after the other, ``--repeat`` rounds interleaved. Printed per checkout, the best round's seconds:

=======================  ==========================================================================================
figure                   what it times
=======================  ==========================================================================================
batched engine           building the main job's training vector env (``configs/ppo_4p.yaml``, one game) and its
                         first step: numba compiles the learner tables' play loop (``compiled/learner._play``,
                         the kernel's ``step_game`` inlined) and the encoders
arena loop               ``python -m sixnimmt_env.compiled.loop_cache``'s work: the arena's fused game loop
                         (``compiled/_fused.play_chunk``), what ``make install`` compiles ahead
second run               the batched engine again in a new process with the cache the first run filled: the
                         load from numba's cache every later process pays
=======================  ==========================================================================================
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_BATCHED = """
import time
t = time.perf_counter()
import numpy as np
from training.config import load_config
from training.opponents import mixture_sampler
from training.vec import build_vec_env
cfg = load_config("configs/ppo_4p.yaml", ["distill.enabled=false", "train.workers=1", "train.n_envs=1"])
venv = build_vec_env(cfg.env, cfg.train, mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw))
venv.reset()
venv.step(np.array([venv.venv.action_masks()[0].argmax()]))
print(time.perf_counter() - t)
"""

_ARENA = """
import time
t = time.perf_counter()
from sixnimmt_env.compiled.loop_cache import load
from sixnimmt_env.rules.engine import GameConfig
load(GameConfig())
print(time.perf_counter() - t)
"""


def _seconds(repo: Path, code: str, cache: Path) -> float:
    """Run ``code`` (which prints its seconds) in a fresh process of ``repo`` with numba's cache in ``cache``."""
    env = {**os.environ, "PYTHONPATH": str(repo), "NUMBA_CACHE_DIR": str(cache), "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Print the table (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", action="append", default=[], type=Path, help="another checkout to time beside this one")
    p.add_argument("--repeat", type=int, default=2, help="rounds, interleaved across the checkouts")
    args = p.parse_args()
    repos = [ROOT, *(r.resolve() for r in args.repo)]
    best: dict[Path, list[float]] = {r: [float("inf")] * 3 for r in repos}
    for _ in range(args.repeat):
        for repo in repos:
            with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
                first = _seconds(repo, _BATCHED, Path(cache))
                second = _seconds(repo, _BATCHED, Path(cache))
            with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
                arena = _seconds(repo, _ARENA, Path(cache))
            best[repo] = [min(a, b) for a, b in zip(best[repo], (first, arena, second), strict=True)]
    header = f"{'checkout':<40} {'batched engine':>15} {'arena loop':>11} {'second run':>11}"
    print(f"{header}   (seconds, best of {args.repeat})")
    for repo in repos:
        first, arena, second = best[repo]
        print(f"{repo!s:<40} {first:>15.1f} {arena:>11.1f} {second:>11.1f}")


if __name__ == "__main__":
    main()
