"""Env steps per second during training: RLlib's PPO with 1 and 2 env runners next to the SB3 default job,
measured one after the other in one run, and the RLlib scaling on paper.

Usage::

    python benchmarks/rllib_throughput.py [--config configs/rllib_ppo_4p.yaml] [--sb3-config configs/ppo_4p.yaml]
                                          [--iterations 3] [--sb3-steps 65536] [--runners 1 2]

Setups:

=====================  ======================================================================
name                   what runs
=====================  ======================================================================
``sb3 (ppo_4p)``       MaskablePPO ``learn`` on the SB3 default job (``configs/ppo_4p.yaml``:
                       1024 games on the batched engine), with ``train.workers`` 1 (one process)
                       and the cores (rollout processes beside the learner), self-play and
                       evaluations off
``rllib, k runners``   RLlib PPO ``train()`` iterations of ``configs/rllib_ppo_4p.yaml`` with
                       ``ray.num_env_runners = k`` (the envs per runner, ``n_steps`` and
                       ``ray.sampler`` of the config: ``batched`` there, ``--set
                       ray.sampler=env`` for RLlib's stock runners; the batch grows with the
                       runners), self-play and evaluations off; the first iteration (start-up)
                       is not counted
=====================  ======================================================================

For RLlib the iteration's wall time splits into sampling (env runners, in parallel) and the
learner's update (in the training process: ``num_learners: 0``). From them, on paper: a runner
samples ``r`` steps/s, the learner updates ``L`` steps/s, and a synchronous PPO iteration of ``B``
steps with ``N`` runners takes ``B / (N r) + B / L``: throughput ``1 / (1 / (N r) + 1 / L)``,
the learner the bottleneck once ``N r > L`` (then more learners, ``ray.num_learners``, or GPUs).
The machine is shared: figures are inflated by other load (shown as the 1-minute load average).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from training.config import TrainConfig, load_config


def measure_rllib(cfg: TrainConfig, iterations: int) -> dict[str, float]:
    """``iterations`` RLlib iterations after one warm-up; steps/s, sampling and update seconds per iteration."""
    import ray
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED

    from training.rllib.backend import algorithm_config, register_envs, start_ray

    started = start_ray(cfg.ray)
    register_envs()
    algo = algorithm_config(cfg).build_algo()
    try:
        algo.train()  # warm-up: actors, numba, first forward
        steps = sample_s = learn_s = 0.0
        start = time.perf_counter()
        for _ in range(iterations):
            t0 = time.perf_counter()
            result = algo.train()
            timers = result.get("timers", {})
            sample = float(timers.get("env_runner_sampling_timer", float("nan")))
            learn = float(timers.get("learner_update_timer", float("nan")))
            steps += float(result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED])
            sample_s += sample if sample == sample else time.perf_counter() - t0
            learn_s += learn if learn == learn else 0.0
        wall = time.perf_counter() - start
    finally:
        algo.stop()
        if started:
            ray.shutdown()
    return {
        "steps": steps,
        "steps_per_second": steps / wall,
        "sample_s": sample_s / iterations,
        "learn_s": learn_s / iterations,
        "batch": steps / iterations,
        "load": os.getloadavg()[0],
    }


def measure_sb3(config: str, steps: int, overrides: tuple[str, ...] = ()) -> dict[str, float]:
    """MaskablePPO ``learn(steps)`` on the SB3 config with ``overrides`` (``benchmarks/train_speed.py``'s
    measurement)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from train_speed import measure

    from training.policy import algo_kwargs

    cfg = load_config(config, ["self_play.enabled=false", *overrides])
    return measure(cfg, algo_kwargs(cfg.algo), steps)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/rllib_ppo_4p.yaml")
    p.add_argument("--sb3-config", default="configs/ppo_4p.yaml")
    p.add_argument("--iterations", type=int, default=3, help="measured RLlib iterations per setup (default 3)")
    p.add_argument("--sb3-steps", type=int, default=65536, help="SB3 steps (default 65536)")
    p.add_argument("--runners", type=int, nargs="+", default=[1, 2], help="env runner counts (default 1 2)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--no-sb3", action="store_true", help="skip the SB3 setup")
    args = p.parse_args()
    print(f"{'setup':<44} {'steps':>9} {'steps/s':>9} {'sample s':>9} {'update s':>9} {'load':>5}", flush=True)
    if not args.no_sb3:
        for workers in (1, max(2, os.cpu_count() or 1)):
            r = measure_sb3(args.sb3_config, args.sb3_steps, (f"train.workers={workers}",))
            name = f"sb3 ({Path(args.sb3_config).stem}, MaskablePPO), workers={workers}"
            print(f"{name:<44} {r['steps']:>9,.0f} {r['steps_per_second']:>9,.0f} {'':>9} {'':>9} {r['load']:>5.1f}")
    rows = {}
    for k in args.runners:
        cfg = load_config(
            args.config,
            [
                *args.overrides,
                "self_play.enabled=false",
                "eval.every=1000000000",
                "checkpoint.every=1000000000",
                f"ray.num_env_runners={k}",
                f"ray.num_cpus={max(k, 2)}",
            ],
        )
        r = rows[k] = measure_rllib(cfg, args.iterations)
        name = f"rllib ({Path(args.config).stem}, {cfg.ray.sampler}), {k} runner(s) x {cfg.ray.num_envs_per_env_runner}"
        print(
            f"{name:<44} {r['steps']:>9,.0f} {r['steps_per_second']:>9,.0f} {r['sample_s']:>9.2f} "
            f"{r['learn_s']:>9.2f} {r['load']:>5.1f}",
            flush=True,
        )
    k = min(rows)
    r = rows[k]
    per_runner = r["batch"] / r["sample_s"] / k
    learner = r["batch"] / r["learn_s"] if r["learn_s"] > 0 else float("inf")
    print(
        f"\non paper (from {k} runner(s)): one runner samples {per_runner:,.0f} steps/s, the learner updates "
        f"{learner:,.0f} steps/s; learner-bound from {learner / per_runner:,.1f} runners"
    )
    for n in (8, 32, 128):
        sample, update = 1.0 / (n * per_runner), 1.0 / learner  # seconds per env step
        rate = 1.0 / (sample + update)
        share = update / (sample + update)
        print(f"  {n:>4} runners: {rate:>10,.0f} env steps/s (the update takes {share:.0%} of an iteration)")


if __name__ == "__main__":
    main()
