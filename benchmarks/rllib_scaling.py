"""Scaling measured in parts and projected: one RLlib env runner's sampling rate and one learner's update rate on our
config, beside the SB3 rollout process and learner, measured in one run; from them the expected env steps/s of a
cluster with N runners and k learners, and which side limits it.

Usage::

    python benchmarks/rllib_scaling.py [--config configs/rllib_ppo_4p.yaml] [--sb3-config configs/ppo_4p.yaml]
                                       [--seconds 3] [--rounds 3] [--repeats 3] [--set KEY=VALUE ...]

Measured (this process and one Ray actor on a local Ray of 2 CPUs; torch on 1 thread; self-play off):

========================  ===========================================================================================
figure                    what is timed
========================  ===========================================================================================
``r`` runner              one :class:`training.rllib.batched_runner.BatchedEnvRunner` as a Ray actor, its fragments'
                          episodes received here (``benchmarks/rllib_runner.py``'s ``RunnerActor``), median of rounds
``r`` sb3 rollout         one SB3 rollout process's loop on the SB3 config (``SB3Rollouts`` there), median of rounds
``L`` learner             RLlib's PPO learner update of one iteration's batch (``benchmarks/learner_rate.py``), best
                          of ``--repeats``; ``sb3 learner`` the AsyncMaskablePPO learner's work on the same samples
========================  ===========================================================================================

Projection, on paper, for runners and learners each on cores of their own (nothing shared, no network cost):

- **synchronous PPO** (RLlib's PPO: the runners sample a batch, then the learners update on it): an iteration of
  ``B`` steps takes ``B / (N r) + B / (k L)``, so ``1 / (1 / (N r) + 1 / (k L))`` env steps/s;
- **asynchronous** (APPO, or PPO whose runners sample the next batch during the update, as the SB3 path's rollout
  processes do): ``min(N r, k L)``.

``k`` learners are data-parallel (torch DDP): each updates ``B / k`` of the batch, and the projection takes their
all-reduce of the gradients (about 60,000 parameters a minibatch) as free, so ``k L`` is an upper bound. The limit
is where ``N r`` and ``k L`` cross: more runners past it wait on the learners, more learners wait on the runners.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling benchmark scripts
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

RUNNERS = (8, 32, 64, 128)
LEARNERS = (1, 4, 8)


def synchronous(n: int, r: float, k: int, learner: float) -> float:
    """Env steps/s of synchronous PPO with ``n`` runners of ``r`` steps/s and ``k`` learners of ``learner``."""
    return 1.0 / (1.0 / (n * r) + 1.0 / (k * learner))


def asynchronous(n: int, r: float, k: int, learner: float) -> float:
    """Env steps/s when sampling and learning overlap (APPO): the slower side's rate."""
    return min(n * r, k * learner)


def projection(r: float, learner: float) -> list[str]:
    """The table of projected env steps/s (markdown lines) for :data:`RUNNERS` x :data:`LEARNERS`."""
    lines = [
        "| runners | learners | synchronous PPO | asynchronous (APPO) | limit |",
        "|---:|---:|---:|---:|:---|",
    ]
    for n in RUNNERS:
        for k in LEARNERS:
            limit = "runners" if n * r < k * learner else "learners"
            sync, overlap = synchronous(n, r, k, learner), asynchronous(n, r, k, learner)
            lines.append(f"| {n} | {k} | {sync:,.0f} | {overlap:,.0f} | {limit} |")
    return lines


def main() -> None:
    import numpy as np
    import ray
    import torch
    from learner_rate import rllib_update_rate, sample_episodes, sb3_update_rate
    from rllib_runner import RunnerActor, SB3Rollouts, interleaved

    from training.config import load_config

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/rllib_ppo_4p.yaml")
    p.add_argument("--sb3-config", default="configs/ppo_4p.yaml")
    p.add_argument("--seconds", type=float, default=3.0, help="seconds per sampling setup and round (default 3)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of the sampling setups (default 3)")
    p.add_argument("--repeats", type=int, default=3, help="timed learner updates, the best kept (default 3)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args()
    torch.set_num_threads(1)
    off = ["self_play.enabled=false", "eval.every=1000000000", "checkpoint.every=1000000000"]
    rl = load_config(args.config, ["ray.sampler=batched", "ray.num_learners=0", *args.overrides, *off])
    sb3 = load_config(args.sb3_config, [*off, "distill.enabled=false", "train.vec_env=batched"])

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             object_store_memory=200 * 1024 * 1024)  # fmt: skip
    try:
        setups = {"rllib batched runner (actor)": RunnerActor(rl), "sb3 rollout process": SB3Rollouts(sb3)}
        rates = interleaved(setups, args.rounds, args.seconds)
        for setup in setups.values():
            setup.close()
        # one iteration's batch of the config (all runners' envs x n_steps), sampled in this process
        envs = max(rl.ray.num_env_runners, 1) * rl.ray.num_envs_per_env_runner
        local = load_config(
            args.config, [*args.overrides, *off, "ray.num_env_runners=0", f"ray.num_envs_per_env_runner={envs}"]
        )
        episodes = sample_episodes(local)
        rllib_learner = rllib_update_rate(local, episodes, args.repeats)["update"]
        sb3_learner = sb3_update_rate(local, episodes, args.repeats)["update"]
    finally:
        ray.shutdown()
    runner = statistics.median(rates["rllib batched runner (actor)"])
    sb3_runner = statistics.median(rates["sb3 rollout process"])
    load = os.getloadavg()[0]
    print(f"\n## Measured on this machine (load {load:.1f}), torch on 1 thread\n")
    print("| part | RLlib | SB3 | RLlib / SB3 |\n|---|---:|---:|---:|")
    print(f"| sampling, one runner / rollout process, env steps/s | {runner:,.0f} | {sb3_runner:,.0f} | "
          f"{runner / sb3_runner:.2f} |")  # fmt: skip
    print(f"| update, one learner, env steps/s | {rllib_learner:,.0f} | {sb3_learner:,.0f} | "
          f"{rllib_learner / sb3_learner:.2f} |")  # fmt: skip
    print(f"\n## Projected for RLlib, env steps/s (r = {runner:,.0f}, L = {rllib_learner:,.0f})\n")
    print("\n".join(projection(runner, rllib_learner)))
    needed = 1_000_000 / 8
    print(
        f"\n64 runners and 8 learners: {synchronous(64, runner, 8, rllib_learner):,.0f} synchronous, "
        f"{asynchronous(64, runner, 8, rllib_learner):,.0f} asynchronous; 1,000,000 asynchronous needs "
        f"L >= {needed:,.0f} per learner and r >= {1_000_000 / 64:,.0f} per runner"
    )
    print(f"(runner rounds: {np.round(rates['rllib batched runner (actor)']).astype(int).tolist()})")


if __name__ == "__main__":
    main()
