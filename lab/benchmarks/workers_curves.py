"""Learning per step with and without rollout processes: the main job's PPO with ``train.workers`` 1 (synchronous
MaskablePPO) and 2 (rollouts one update behind, values from the learner, :mod:`training.rollouts`), the same seed
and steps, their evaluations against three ``greedy`` at equal steps side by side, and a plot.

Usage::

    python lab/benchmarks/workers_curves.py [--steps 12000000] [--every 1000000] [--games 1000] [--out DIR]
    python lab/benchmarks/workers_curves.py --runs RUN_W1 RUN_W2 [--png lab/docs/workers_curve.png]   # plot runs made

Each run is ``python -m training.train configs/ppo_4p.yaml`` from a fresh policy (distillation off, so the curve
starts where learning is fastest), ``--steps`` steps (no time limit), an evaluation every ``--every`` steps of
``--games`` single rounds against three ``greedy`` (the same seeded deals for both runs). The table gives both
runs' mean bullheads per round with their 95 % intervals at each step and the difference.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _curve(run_dir: Path) -> dict[int, tuple[float, float]]:
    """``step -> (mean penalty, ci95)`` of the run's first evaluation line-up (``eval.csv``)."""
    with (run_dir / "eval.csv").open() as f:
        rows = list(csv.DictReader(f))
    first = rows[0]["lineup"]
    return {int(r["step"]): (float(r["mean_penalty"]), float(r["ci95"])) for r in rows if r["lineup"] == first}


def _train(workers: int, args: argparse.Namespace, out: Path) -> Path:
    cmd = [sys.executable, "-m", "training.train", "configs/ppo_4p.yaml", "--no-progress"]
    for o in (
        "distill.enabled=false",
        "train.max_minutes=null",
        f"train.total_timesteps={args.steps}",
        f"eval.every={args.every}",
        f"eval.games={args.games}",
        'eval.opponents=["greedy,greedy,greedy"]',
        f"eval.final_games={args.games}",
        f"train.workers={workers}",
        f"train.output_dir={out / f'w{workers}'}",
    ):
        cmd += ["--set", o]
    subprocess.run(cmd, cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    (run_dir,) = (out / f"w{workers}" / "ppo_4p").iterdir()
    return run_dir


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=12_000_000)
    p.add_argument("--every", type=int, default=1_000_000)
    p.add_argument("--games", type=int, default=1000)
    p.add_argument("--out", help="folder for the two runs (default: a temporary folder)")
    p.add_argument("--runs", nargs=2, metavar=("RUN_W1", "RUN_W2"), help="plot these two run folders instead")
    p.add_argument("--png", default=None, help="write the plot here (default: beside the runs)")
    args = p.parse_args()
    if args.runs:
        runs = [Path(r) for r in args.runs]
    else:
        out = Path(args.out or tempfile.mkdtemp(prefix="workers-curves-"))
        runs = [_train(1, args, out), _train(2, args, out)]
    sync, ahead = _curve(runs[0]), _curve(runs[1])
    steps = sorted(set(sync) & set(ahead))
    print(f"mean bullheads per round against three greedy (95 % intervals); runs {runs[0]} and {runs[1]}")
    print(f"{'steps':>12} {'workers=1':>16} {'workers=2':>16} {'2 - 1':>8}")
    for s in steps:
        (a, ca), (b, cb) = sync[s], ahead[s]
        print(f"{s:>12,} {a:>9.2f} ± {ca:<4.2f} {b:>9.2f} ± {cb:<4.2f} {b - a:>+8.2f}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter

    fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=120)
    for curve, label, color in (
        (sync, "train.workers=1 (synchronous MaskablePPO)", "tab:blue"),
        (ahead, "train.workers=2 (rollouts one update behind, the learner's values)", "tab:orange"),
    ):
        xs = sorted(curve)
        ys = [curve[x][0] for x in xs]
        ci = [curve[x][1] for x in xs]
        ax.plot(xs, ys, marker="o", ms=3, color=color, label=label)
        ax.fill_between(xs, [y - c for y, c in zip(ys, ci, strict=True)], [y + c for y, c in zip(ys, ci, strict=True)],
                        color=color, alpha=0.2)  # fmt: skip
    ax.xaxis.set_major_formatter(EngFormatter(sep=" "))
    ax.set_xlabel("environment steps")
    ax.set_ylabel("bullheads per round vs three greedy (lower is better)")
    ax.set_title("configs/ppo_4p.yaml from a fresh policy, same seed: learning per step")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right")
    fig.tight_layout()
    png = Path(args.png) if args.png else runs[1].parent / "workers_curve.png"
    fig.savefig(png)
    print(f"plot: {png}")


if __name__ == "__main__":
    main()
