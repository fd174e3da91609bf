"""Environment steps per second during MaskablePPO ``learn``: SB3's default batch settings vs our config.

Usage::

    python benchmarks/train_speed.py [--config configs/ppo_4p.yaml] [--steps 65536] [--set train.vec_env=subproc ...]

Both runs use the config's environment, opponents and vector env; "SB3
defaults" replaces the ``algo`` section with MaskablePPO's defaults
(``n_steps=2048, batch_size=64, n_epochs=10``, net ``[64, 64]``). The figure
is steps over the wall time of ``learn`` (rollouts and updates together), the
number the issue's speed target (>= 10,000 steps/s) refers to. Self-play
snapshots are switched off (they would only add file writes).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import torch
from sb3_contrib import MaskablePPO

import training.agent  # noqa: F401  (ppo: specs)
from training.config import TrainConfig, algo_kwargs, load_config
from training.vec import build_vec_env


def measure(cfg: TrainConfig, algo: dict, steps: int) -> float:
    """Steps per second of ``learn(steps)`` for ``cfg`` with MaskablePPO keyword arguments ``algo``."""
    venv = build_vec_env(cfg, None)
    try:
        model = MaskablePPO("MlpPolicy", venv, seed=cfg.train.seed, device=cfg.train.device, verbose=0, **algo)
        start = time.perf_counter()
        model.learn(steps)
        return model.num_timesteps / (time.perf_counter() - start)
    finally:
        venv.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/ppo_4p.yaml")
    p.add_argument("--steps", type=int, default=65536, help="environment steps per measurement (default 65536)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--only", choices=["default", "ours"], help="measure one setup only")
    args = p.parse_args()
    cfg = load_config(args.config, [*args.overrides, "self_play.enabled=false"])
    torch.set_num_threads(cfg.train.torch_threads)
    setups = {
        "SB3 defaults (n_steps=2048, batch 64, 10 epochs, [64, 64])": {},
        f"ours ({args.config})": algo_kwargs(cfg),
    }
    if args.only:
        setups = dict([list(setups.items())[0 if args.only == "default" else 1]])
    print(f"{cfg.train.n_envs} envs ({cfg.train.vec_env}), {cfg.env.table_sizes()} players, {args.steps:,} steps each")
    for name, algo in setups.items():
        rate = measure(cfg, algo, args.steps)
        print(f"{name:<60} {rate:>9,.0f} env steps/s")


if __name__ == "__main__":
    main()
