"""Learning per step on both backends: the same recipe trained by SB3 MaskablePPO, by RLlib PPO on the batched env
runners and by RLlib APPO, evaluated at the same env steps against three ``greedy``; a table and a plot.

Usage::

    python benchmarks/backend_curves.py [--steps 4000000] [--points 4] [--games 2000] [--seeds 0]
                                        [--out runs/backend_curves] [--plot docs/backend_curves.png]

Runs, one after the other, each ``python -m training.train`` with evaluations every ``steps / points`` env steps
(``eval.games`` games against ``greedy,greedy,greedy``, seats rotated), checkpoints and the time cap off:

=================  ====================================================================================
run                config
=================  ====================================================================================
``sb3 ppo``        ``configs/baseline_ppo_4p.yaml`` (the recipe without distillation), ``train.vec_env:
                   batched`` (1024 games of the batched engine, self-play snapshots inside)
``rllib ppo``      ``configs/rllib_ppo_4p.yaml`` (the same recipe; ``ray.sampler: batched``)
``rllib appo``     the same with ``ray.algorithm: appo``
=================  ====================================================================================

The learner's mean bullheads per round at each evaluation with its 95 % interval: curves whose intervals overlap
at every point learn alike per step. APPO's iterations are asynchronous and overshoot the evaluation steps; its
rows are at the steps where it evaluated.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUNS = {
    "sb3 ppo": ("configs/baseline_ppo_4p.yaml", ["train.vec_env=batched", "train.n_workers=1", "train.workers=2"]),
    "rllib ppo": ("configs/rllib_ppo_4p.yaml", ["ray.sampler=batched"]),
    "rllib appo": ("configs/rllib_ppo_4p.yaml", ["ray.sampler=batched", "ray.algorithm=appo"]),
}


def train(name: str, steps: int, points: int, games: int, seed: int, out: Path) -> Path:
    """Train run ``name`` of :data:`RUNS` into ``out/<name>-<seed>``; its run folder."""
    config, overrides = RUNS[name]
    folder = out / f"{name.replace(' ', '_')}-{seed}"
    sets = [
        *overrides,
        f"train.total_timesteps={steps}",
        f"train.seed={seed}",
        "train.max_minutes=null",
        f"train.output_dir={folder}",
        f"eval.every={steps // points}",
        f"eval.games={games}",
        'eval.opponents=["greedy,greedy,greedy"]',
        f"eval.final_games={games}",
        f"checkpoint.every={10 * steps}",
    ]
    cmd = [sys.executable, "-m", "training.train", config, "--no-progress"]
    for s in sets:
        cmd += ["--set", s]
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    (run,) = sorted(folder.glob("*/*"))
    return run


def rows(run: Path) -> list[dict[str, float]]:
    """The evaluations of ``run`` against greedy: ``step``, ``mean_penalty``, ``ci95``, ``win_share``."""
    with (run / "eval.csv").open() as f:
        out = []
        for r in csv.DictReader(f):
            if r["lineup"] == "greedy,greedy,greedy":
                out.append({k: float(r[k]) for k in ("step", "mean_penalty", "ci95", "win_share")})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=4_000_000)
    p.add_argument("--points", type=int, default=4)
    p.add_argument("--games", type=int, default=2000)
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    p.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated runs of {list(RUNS)}")
    p.add_argument("--out", default="runs/backend_curves")
    p.add_argument("--plot", default=None, help="write the curves to this PNG")
    args = p.parse_args()
    out = (ROOT / args.out).resolve()
    results: dict[str, list[list[dict[str, float]]]] = {}
    for name in args.runs.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            results.setdefault(name, []).append(rows(train(name, args.steps, args.points, args.games, seed, out)))
    print("\n| run | seed | " + " | ".join(f"eval {i + 1}" for i in range(args.points)) + " |")
    print("|---|---:|" + "---:|" * args.points)
    for name, per_seed in results.items():
        for seed, evals in zip(args.seeds.split(","), per_seed, strict=True):
            cells = [f"{r['mean_penalty']:.2f} ± {r['ci95']:.2f} @ {r['step'] / 1e6:.2f} M" for r in evals]
            print(f"| {name} | {seed} | " + " | ".join(cells) + " |")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.2))
        for name, per_seed in results.items():
            for seed, evals in zip(args.seeds.split(","), per_seed, strict=True):
                x = [r["step"] / 1e6 for r in evals]
                y = [r["mean_penalty"] for r in evals]
                ax.errorbar(x, y, yerr=[r["ci95"] for r in evals], marker="o", capsize=3, label=f"{name} (seed {seed})")
        ax.set_xlabel("env steps (millions)")
        ax.set_ylabel("learner's bullheads per round vs three greedy\n(lower is better, 95 % interval)")
        ax.set_title("Learning per step: SB3 and RLlib on the same recipe")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"\nplot: {args.plot}")


if __name__ == "__main__":
    main()
