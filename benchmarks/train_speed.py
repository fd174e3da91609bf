"""Environment steps per second during MaskablePPO ``learn``: SB3's default batch settings vs our config,
with the envs in the learner's process (``dummy``) and in worker processes (``subproc``).

Usage::

    python benchmarks/train_speed.py [--config configs/ppo_4p.yaml] [--steps 65536] [--set KEY=VALUE ...]
                                     [--only NAME ...]

Setups (each a fresh model, measured one after the other):

=================  ===========================================================================
name               what runs
=================  ===========================================================================
``sb3-defaults``   MaskablePPO's defaults (``n_steps=2048, batch_size=64, n_epochs=10``, net
                   ``[64, 64]``) on 8 of the config's envs in a ``DummyVecEnv`` (a plain set-up)
``ours-dummy``     the config's ``algo`` section, envs in a ``DummyVecEnv``
``ours-subproc``   the config's ``algo`` section, envs in ``train.n_workers`` worker processes
                   (:class:`training.vec.WorkerVecEnv`; 2 if the config sets none)
``ours-batched``   the config's ``algo`` section, ``train.n_envs`` games in lockstep on the batched
                   engine (:class:`training.vec_env.SixNimmtVecEnv`, ``train.vec_env: batched``)
``ours-batched-   ``ours-batched`` with ``train.workers`` = the cores (at least 2): rollout processes
workers``          beside the learner's updates (:mod:`training.rollouts`)
``ours-subproc-    ``ours-subproc`` with the config's ``self_play`` section and one snapshot (the
pool``             untrained policy) in the pool: what a training run steps once its pool has filled
=================  ===========================================================================

The figure is environment steps over the wall time of ``learn`` (rollouts and
updates together), the number the issue's speed target (>= 10,000 steps/s)
refers to; beside it the CPU time of the learner's process per step, of which
the PPO update (``train``), and the 1-minute load average when the setup
finished (the machine is shared: a load above its 2 cores slows every figure).
Evaluations are off (they are not part of ``learn``); self-play opponents play only in
``ours-subproc-pool``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import torch
from sb3_contrib import MaskablePPO

import training.ppo_agents  # noqa: F401  (ppo: specs)
from training.config import TrainConfig, load_config
from training.opponents import mixture_sampler
from training.policy import algo_kwargs
from training.vec import build_vec_env


def measure(cfg: TrainConfig, algo: dict, steps: int, self_play: TrainConfig | None = None) -> dict[str, float]:
    """Run ``learn(steps)`` for ``cfg``'s envs with MaskablePPO keyword arguments ``algo``; with ``self_play``
    (a config whose ``self_play`` section is on), the untrained model is first put in the self-play pool.

    Returns:
        ``{"steps_per_second": wall-clock rate, "cpu_us": learner-process CPU microseconds per step,
        "train_cpu_us": of which in PPO updates, "load": 1-minute load average at the end}``.
    """
    torch.set_num_threads(cfg.train.torch_threads)
    workers = cfg.train.workers or 1
    sampler = mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw)
    if workers > 1:  # rollout processes beside the learner (training/rollouts.py)
        from training.rollouts import AsyncMaskablePPO, RolloutWorkers

        venv = RolloutWorkers(cfg.env, cfg.train, sampler, workers, cfg.algo.n_steps, cfg.algo.gamma)
        algorithm: type[MaskablePPO] = AsyncMaskablePPO
    else:
        venv = build_vec_env(cfg.env, cfg.train, sampler)
        algorithm = MaskablePPO
    try:
        algo = {"policy": "MlpPolicy", **algo}
        model = algorithm(env=venv, seed=cfg.train.seed, device=cfg.train.device, verbose=0, **algo)
        if self_play is not None:
            snapshot = Path(tempfile.mkdtemp()) / "snapshot_0.zip"
            model.save(snapshot)
            pool = mixture_sampler(
                self_play.opponents, self_play.self_play, self_play.train.opponent_draw, [str(snapshot)]
            )
            venv.env_method("set_opponents", pool)
        train = model.train
        train_cpu = [0.0]

        def timed_train() -> None:
            t = time.process_time()
            train()
            train_cpu[0] += time.process_time() - t

        model.train = timed_train  # type: ignore[method-assign]
        start, cpu = time.perf_counter(), time.process_time()
        model.learn(steps)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        n = model.num_timesteps
        return {
            "steps": n,
            "steps_per_second": n / wall,
            "cpu_us": 1e6 * cpu / n,
            "train_cpu_us": 1e6 * train_cpu[0] / n,
            "load": os.getloadavg()[0],
        }
    finally:
        venv.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/ppo_4p.yaml")
    p.add_argument("--steps", type=int, default=65536, help="environment steps per measurement (default 65536)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument(
        "--only",
        nargs="+",
        choices=[
            "sb3-defaults",
            "ours-dummy",
            "ours-subproc",
            "ours-batched",
            "ours-batched-workers",
            "ours-subproc-pool",
        ],
        help="setups to run",
    )
    args = p.parse_args()
    base = [*args.overrides, "self_play.enabled=false"]
    cfg = load_config(args.config, base)
    workers = cfg.train.n_workers or 2
    dummy = load_config(args.config, [*base, "train.vec_env=dummy"])
    plain = load_config(args.config, [*base, "train.vec_env=dummy", "train.n_envs=8"])
    subproc = load_config(args.config, [*base, "train.vec_env=subproc", f"train.n_workers={workers}"])
    batched = load_config(args.config, [*base, "train.vec_env=batched", "train.workers=1"])
    cores = os.cpu_count() or 1
    batched_workers = load_config(args.config, [*base, "train.vec_env=batched", f"train.workers={max(2, cores)}"])
    setups = {
        "sb3-defaults": ("SB3 defaults (n_steps 2048, batch 64, 10 epochs, [64, 64]), 8 envs, dummy", plain, {}),
        "ours-dummy": (f"ours ({args.config}), dummy", dummy, algo_kwargs(cfg.algo)),
        "ours-subproc": (f"ours ({args.config}), subproc, {workers} workers", subproc, algo_kwargs(cfg.algo)),
        "ours-batched": (f"ours ({args.config}), batched engine, workers=1", batched, algo_kwargs(cfg.algo)),
        "ours-batched-workers": (
            f"ours ({args.config}), batched engine, workers={max(2, cores)}",
            batched_workers,
            algo_kwargs(cfg.algo),
        ),
        "ours-subproc-pool": (
            f"ours ({args.config}), subproc, {workers} workers, self-play pool",
            subproc,
            algo_kwargs(cfg.algo),
        ),
    }
    with_pool = load_config(args.config, [*args.overrides, "self_play.enabled=true"])
    chosen = args.only or list(setups)
    print(
        f"{cfg.train.n_envs} envs, {cfg.env.table_sizes()} players, at least {args.steps:,} steps each "
        f"(whole rollouts), {cfg.train.torch_threads} torch thread(s), {os.cpu_count()} CPUs"
    )
    print(f"{'setup':<78} {'steps':>9} {'steps/s':>9} {'cpu us/step':>12} {'(update)':>9} {'load':>5}")
    for key in chosen:
        name, setup_cfg, algo = setups[key]
        r = measure(setup_cfg, algo, args.steps, with_pool if key.endswith("-pool") else None)
        print(
            f"{name:<78} {r['steps']:>9,} {r['steps_per_second']:>9,.0f} {r['cpu_us']:>12.0f} "
            f"{r['train_cpu_us']:>9.0f} {r['load']:>5.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
