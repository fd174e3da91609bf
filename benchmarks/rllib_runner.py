"""Sampling rates side by side: one RLlib env runner on the batched engine, RLlib's stock env runner and one SB3
rollout process, on the same config; optionally the end-to-end training rates of both backends.

Usage::

    python benchmarks/rllib_runner.py [--config configs/rllib_ppo_4p.yaml] [--sb3-config configs/ppo_4p.yaml]
                                      [--seconds 3] [--rounds 5] [--end-to-end SECONDS] [--set KEY=VALUE ...]

Sampling (one process each, in this process, one after the other; torch on 1 thread; self-play off):

==========================  =====================================================================================
row                         what runs
==========================  =====================================================================================
``sb3 rollout process``     :func:`training.rollouts._collect`, the loop of an SB3 rollout process (batched
(sb3 config)                engine, actor forward, rollout buffer), on the SB3 config's games: its
                            ``train.n_envs`` games x ``algo.n_steps`` (``configs/ppo_4p.yaml``: 1024 x 16,
                            what one rollout process of ``train.workers: 2`` steps)
``sb3 rollout process``     the same loop on the RLlib config's game, opponents and network, with the games and
(rllib config)              steps of one RLlib runner (``ray.num_envs_per_env_runner`` x ``algo.n_steps``)
``rllib batched runner``    :class:`training.rllib.batched_runner.BatchedEnvRunner` ``sample()`` (one
                            fragment: the engine, the module's forward, the episodes built), in this process
                            and as a Ray actor (its episodes serialised to this process, as in training)
``rllib env runner``        RLlib's stock ``SingleAgentEnvRunner`` ``sample()`` (``ray.sampler: env``: one
                            Python game per env) with the same envs per runner, as a Ray actor
==========================  =====================================================================================

Every setup is built (and warmed up: one rollout or fragment) first; then ``--rounds`` rounds time each setup for
``--seconds`` in turn, so that the shared machine's changing load falls on all of them alike. Each row: the median
env steps/s over the rounds, its ratio to the first SB3 row's median, and the range.

``--end-to-end SECONDS``: training, evaluations and self-play off: MaskablePPO ``learn`` on the SB3 config
(distillation off, ``train.workers: 2``, a rollout process beside the learner) for about ``SECONDS`` of steps
(measured rate x SECONDS), and RLlib PPO ``train()`` iterations of the RLlib config for ``SECONDS`` with
``ray.sampler`` batched and env (a local Ray of 2 CPUs; the first iteration not counted).
The machine is shared: the 1-minute load average is shown beside each row.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import numpy as np
import torch

from training.config import TrainConfig, load_config


class SB3Rollouts:
    """The loop of one SB3 rollout process (:func:`training.rollouts._collect`: batched engine, actor forward,
    rollout buffer) on ``cfg``'s vector env (``train.vec_env: batched``, ``train.n_envs`` games, ``algo.n_steps``
    steps per rollout) with an untrained policy of ``cfg``'s ``algo`` section."""

    def __init__(self, cfg: TrainConfig) -> None:
        from sb3_contrib import MaskablePPO

        from sixnimmt_env.rules.engine import NUM_ACTIONS
        from training.opponents import mixture_sampler
        from training.policy import algo_kwargs
        from training.rollouts import _Job
        from training.vec import build_vec_env

        sampler = mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw)
        self.venv = venv = build_vec_env(cfg.env, cfg.train, sampler)
        kwargs = {"policy": "MlpPolicy", **algo_kwargs(cfg.algo)}
        self.policy = MaskablePPO(env=venv, seed=cfg.train.seed, device="cpu", verbose=0, **kwargs).policy
        self.policy.set_training_mode(False)
        n, t = venv.num_envs, cfg.algo.n_steps
        size = venv.observation_space.shape[0]  # type: ignore[index]
        shapes = {
            "observations": (t, n, size),
            "actions": (t, n, 1),
            "rewards": (t, n),
            "episode_starts": (t, n),
            "log_probs": (t, n),
            "action_masks": (t, n, NUM_ACTIONS),
            "last_obs": (n, size),
            "last_dones": (n,),
        }
        self.slot = {k: np.zeros(v, np.float32) for k, v in shapes.items()}
        self.job = _Job(0, cfg.env, cfg.train, sampler, None, t, cfg.algo.gamma, 0, n, [], shapes)
        venv.seed(cfg.train.seed)
        self.obs, self.starts = venv.reset(), np.ones(n, np.float32)
        self.collect()  # warm-up

    def collect(self) -> int:
        """One rollout; returns its env steps."""
        from training.rollouts import _collect

        self.obs, self.starts, _ = _collect(self.venv, self.policy, self.obs, self.starts, self.slot, self.job)
        return self.job.hi * self.job.n_steps

    def close(self) -> None:
        self.venv.close()


class RunnerInProcess:
    """One RLlib env runner of ``cfg`` (``ray.sampler`` picks the class) built in this process; ``collect``
    calls its ``sample()``."""

    def __init__(self, cfg: TrainConfig) -> None:
        from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

        from training.rllib.backend import algorithm_config, register_envs
        from training.rllib.batched_runner import BatchedEnvRunner

        register_envs()
        cls = BatchedEnvRunner if cfg.ray.sampler == "batched" else SingleAgentEnvRunner
        self.runner = cls(config=algorithm_config(cfg), worker_index=1, num_workers=1)
        self.collect()  # warm-up

    def collect(self) -> int:
        """One fragment; returns its env steps."""
        return sum(len(e) for e in self.runner.sample())

    def close(self) -> None:
        self.runner.stop()


class RunnerActor:
    """One RLlib env runner of ``cfg`` as a Ray actor (1 CPU) of the running local Ray; ``collect`` receives one
    fragment's episodes here (serialised, as in training) with the next request already in flight, so the runner
    samples while this process receives."""

    def __init__(self, cfg: TrainConfig) -> None:
        import ray
        from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

        from training.rllib.backend import algorithm_config, register_envs
        from training.rllib.batched_runner import BatchedEnvRunner

        register_envs()
        cls = BatchedEnvRunner if cfg.ray.sampler == "batched" else SingleAgentEnvRunner
        self.actor = ray.remote(num_cpus=1)(cls).remote(config=algorithm_config(cfg), worker_index=1, num_workers=1)
        ray.get(self.actor.sample.remote())  # warm-up
        self.pending: Any = None

    def collect(self) -> int:
        """One fragment; returns its env steps."""
        import ray

        if self.pending is None:
            self.pending = self.actor.sample.remote()
        nxt = self.actor.sample.remote()
        steps = sum(len(e) for e in ray.get(self.pending))
        self.pending = nxt
        return steps

    def pause(self) -> None:
        """Receive the request in flight (the actor idles until the next ``collect``)."""
        import ray

        if self.pending is not None:
            ray.get(self.pending)
            self.pending = None

    def close(self) -> None:
        import ray

        self.pause()
        ray.kill(self.actor)


def interleaved(setups: dict[str, Any], rounds: int, seconds: float) -> dict[str, list[float]]:
    """``rounds`` rounds, each timing every setup's ``collect()`` for ``seconds`` in turn (so that the shared
    machine's load falls on all of them alike); the env steps/s of each setup in each round."""
    rates: dict[str, list[float]] = {name: [] for name in setups}
    for _ in range(rounds):
        for name, setup in setups.items():
            steps, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                steps += setup.collect()
            rates[name].append(steps / (time.perf_counter() - start))
            if hasattr(setup, "pause"):
                setup.pause()
    return rates


def end_to_end_rllib(cfg: TrainConfig, seconds: float) -> dict[str, float]:
    """RLlib PPO ``train()`` iterations for ``seconds`` after a warm-up iteration: env steps/s, and the mean
    sampling and update seconds per iteration."""
    import ray
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED

    from training.rllib.backend import algorithm_config, register_envs, start_ray

    started = start_ray(cfg.ray)
    register_envs()
    algo = algorithm_config(cfg).build_algo()
    try:
        algo.train()
        steps = sample_s = learn_s = 0.0
        iterations = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            result = algo.train()
            timers = result.get("timers", {})
            steps += float(result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED])
            sample_s += float(timers.get("env_runner_sampling_timer", 0.0))
            learn_s += float(timers.get("learner_update_timer", 0.0))
            iterations += 1
        wall = time.perf_counter() - start
    finally:
        algo.stop()
        if started:
            ray.shutdown()
    return {
        "steps_per_second": steps / wall,
        "sample_s": sample_s / iterations,
        "learn_s": learn_s / iterations,
        "iterations": iterations,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/rllib_ppo_4p.yaml")
    p.add_argument("--sb3-config", default="configs/ppo_4p.yaml")
    p.add_argument("--seconds", type=float, default=3.0, help="seconds per setup and round (default 3)")
    p.add_argument("--rounds", type=int, default=5, help="rounds of the sampling setups (default 5)")
    p.add_argument("--end-to-end", type=float, default=0.0, metavar="SECONDS", help="also train each backend")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args()
    torch.set_num_threads(1)
    off = ["self_play.enabled=false", "eval.every=1000000000", "checkpoint.every=1000000000"]
    rl = load_config(args.config, [*args.overrides, *off])
    sb3 = load_config(args.sb3_config, [*off, "distill.enabled=false", "train.vec_env=batched"])
    envs, steps = rl.ray.num_envs_per_env_runner, rl.algo.n_steps
    # the SB3 loop on the RLlib config: its game, opponents and network, one runner's games (model_copy: the
    # SB3-only keys are refused by the rllib backend's checks, not by the loop)
    sb3_same = rl.model_copy(
        update={
            "train": rl.train.model_copy(update={"backend": "sb3", "n_envs": envs, "vec_env": "batched"}),
        }
    )
    import ray

    ray.init(address="local", num_cpus=2, object_store_memory=200 * 1024 * 1024, include_dashboard=False)
    stem, sb3_stem = Path(args.config).stem, Path(args.sb3_config).stem
    batched = rl.model_copy(update={"ray": rl.ray.model_copy(update={"sampler": "batched"})})
    stock = rl.model_copy(update={"ray": rl.ray.model_copy(update={"sampler": "env"})})
    setups: dict[str, Any] = {}
    try:
        setups[f"sb3 rollout process ({sb3_stem}: {sb3.train.n_envs} x {sb3.algo.n_steps})"] = SB3Rollouts(sb3)
        setups[f"sb3 rollout process ({stem}: {envs} x {steps})"] = SB3Rollouts(sb3_same)
        setups[f"rllib batched runner, in process ({stem}: {envs} x {steps})"] = RunnerInProcess(batched)
        setups[f"rllib batched runner, Ray actor ({stem}: {envs} x {steps})"] = RunnerActor(batched)
        setups[f"rllib env runner, Ray actor ({stem}: {envs} x {steps})"] = RunnerActor(stock)
        rates = interleaved(setups, args.rounds, args.seconds)
    finally:
        for setup in setups.values():
            setup.close()
        ray.shutdown()
    print(f"{'sampling, one process (median of rounds)':<58} {'env steps/s':>12} {'x sb3':>6} {'range':>17}")
    base = float(np.median(next(iter(rates.values()))))
    for i, (name, values) in enumerate(rates.items()):
        median = float(np.median(values))
        ratio = "" if i == 0 else f"{median / base:.2f}"
        print(f"{name:<58} {median:>12,.0f} {ratio:>6} {min(values):>8,.0f}-{max(values):,.0f}", flush=True)
    print(f"({args.rounds} rounds of {args.seconds:g} s per setup; load {os.getloadavg()[0]:.1f})", flush=True)

    def row(name: str, rate: float, base: float | None) -> None:
        ratio = "" if base is None else f"{rate / base:.2f}"
        print(f"{name:<58} {rate:>12,.0f} {ratio:>6} {os.getloadavg()[0]:>5.1f}", flush=True)

    if args.end_to_end <= 0:
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from train_speed import measure

    from training.policy import algo_kwargs

    print(f"\n{'end to end, training':<58} {'env steps/s':>12} {'x sb3':>6} {'load':>5}", flush=True)
    sb3_e2e = load_config(args.sb3_config, [*off, "distill.enabled=false", "train.workers=2"])
    budget = int(base * args.end_to_end / 3)  # about the requested seconds at a third of the sampling rate
    budget -= budget % (sb3_e2e.train.n_envs * sb3_e2e.algo.n_steps)
    r = measure(sb3_e2e, algo_kwargs(sb3_e2e.algo), max(budget, 2 * sb3_e2e.train.n_envs * sb3_e2e.algo.n_steps))
    e2e_base = r["steps_per_second"]
    row(f"sb3 {Path(args.sb3_config).stem}, workers=2, {r['steps']:,} steps", e2e_base, None)
    for sampler in ("batched", "env"):
        cfg = rl.model_copy(update={"ray": rl.ray.model_copy(update={"sampler": sampler})})
        r = end_to_end_rllib(cfg, args.end_to_end)
        name = (
            f"rllib {Path(args.config).stem}, sampler {sampler}, {rl.ray.num_env_runners} runners "
            f"(sample {r['sample_s']:.2f} s / update {r['learn_s']:.2f} s per it.)"
        )
        row(name, r["steps_per_second"], e2e_base)


if __name__ == "__main__":
    main()
