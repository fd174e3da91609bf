"""The learner's update rate, side by side in one run: RLlib's PPO learner and SB3 MaskablePPO's ``train()`` on the
same network, the same samples, the same minibatch and one epoch.

Usage::

    python benchmarks/learner_rate.py [--config configs/rllib_ppo_4p.yaml] [--repeats 5] [--learners 0 2]
                                      [--set KEY=VALUE ...] [--profile FILE]

Both learners see the same batch: one RLlib iteration's worth of real env steps of the config (``algo.n_steps`` x
all its envs, 16,384 for ``configs/rllib_ppo_4p.yaml``), sampled once by a local RLlib env runner with the untrained
card policy before anything is timed. Each figure is env steps per second of wall time, the best of ``--repeats``
updates (the machine is shared: the 1-minute load average is printed beside it), with ``torch`` on
``train.torch_threads`` threads:

==========================  =========================================================================================
row                         what is timed
==========================  =========================================================================================
``rllib learner``           ``LearnerGroup.update(episodes=...)`` as RLlib's ``PPO.training_step`` calls it: the
                            learner connector (episodes to a batch, the critic's values, GAE) and the epoch of
                            minibatch updates; ``num_learners: 0`` (in this process), or ``--learners k`` remote
                            learners (data-parallel, torch DDP on gloo; each reserves ``ray.num_cpus_per_learner``)
``  of which connector``    the learner connector alone (episodes to the train batch, values, GAE)
``sb3 learner``             what the SB3 learner does per rollout in ``train.workers >= 2`` runs
                            (:class:`training.rollouts.AsyncMaskablePPO`): the card features and the critic's values
                            of the rollout (:func:`training.rollouts.critic_values`), GAE, then ``train()``
``  of which train()``      MaskablePPO's ``train()`` alone (the epoch of minibatch updates)
==========================  =========================================================================================

The networks are the same classes with the same sizes (:class:`training.rllib.module.CardRLModule` wraps
:mod:`training.policy`'s card policy); both use Adam, gradient clipping and SB3's PPO loss (no KL term, no value
clipping). ``--profile FILE`` writes a cProfile of one RLlib update (``python -m pstats FILE``).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import numpy as np

from training.config import TrainConfig, load_config
from training.config.rllib_settings import train_batch_size


def sample_episodes(cfg: TrainConfig) -> list[Any]:
    """One iteration's episodes (``train_batch_size(cfg.algo, cfg.ray)`` env steps) from a local env runner of
    ``cfg`` (RLlib's ``SingleAgentEnvRunner``, or the runner class ``ray.sampler`` names)."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    from training.rllib.backend import algorithm_config, register_envs

    register_envs()
    config = algorithm_config(cfg)
    runner = (config.env_runner_cls or SingleAgentEnvRunner)(config=config, worker_index=0)  # ray.sampler's
    try:
        return runner.sample(num_timesteps=train_batch_size(cfg.algo, cfg.ray), force_reset=True)
    finally:
        runner.stop()


def rllib_update_rate(
    cfg: TrainConfig, episodes: list[Any], repeats: int, profile: str | None = None
) -> dict[str, float]:
    """Best env steps/s of ``repeats`` RLlib learner updates on ``episodes`` (and of the learner connector alone).

    Returns:
        ``{"update": steps/s of LearnerGroup.update, "connector": steps/s of the connector alone (local learner
        only, else nan)}``.
    """
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    from training.rllib.backend import algorithm_config

    config = algorithm_config(cfg)
    spaces = {DEFAULT_MODULE_ID: (episodes[0].observation_space, episodes[0].action_space)}
    group = config.build_learner_group(spaces=spaces)
    steps = sum(len(e) for e in episodes)
    kwargs = {
        "num_epochs": config.num_epochs,
        "minibatch_size": config.minibatch_size,
        "shuffle_batch_per_epoch": config.shuffle_batch_per_epoch,
    }
    best = best_connector = float("inf")
    try:
        for i in range(repeats + 1):  # the first one warms up (numba, torch, DDP)
            batch = copy.deepcopy(episodes)  # the connector pads the episodes in place
            start = time.perf_counter()
            group.update(episodes=batch, timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: steps * (i + 1)}, **kwargs)
            if i:
                best = min(best, time.perf_counter() - start)
            if group.is_local:
                learner = group._learner  # the connector alone, as Learner.update runs it
                batch = copy.deepcopy(episodes)
                start = time.perf_counter()
                learner._learner_connector(
                    rl_module=learner.module, batch={}, episodes=batch, shared_data={}, metrics=learner.metrics
                )
                if i:
                    best_connector = min(best_connector, time.perf_counter() - start)
        if profile:
            import cProfile

            batch = copy.deepcopy(episodes)
            cProfile.runctx(
                "group.update(episodes=batch, timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: steps}, **kwargs)",
                globals(),
                {**locals(), "NUM_ENV_STEPS_SAMPLED_LIFETIME": NUM_ENV_STEPS_SAMPLED_LIFETIME},
                profile,
            )
    finally:
        group.shutdown()
    return {"update": steps / best, "connector": steps / best_connector if best_connector < float("inf") else np.nan}


def _trajectories(episodes: list[Any]) -> dict[str, np.ndarray]:
    """The episodes' steps flattened: ``obs float32 (N, 506)``, ``mask (N, 109)``, ``actions int64 (N,)``,
    ``rewards float32 (N,)``, ``starts float32 (N,)`` (1 at an episode's first step), ``log_probs float32 (N,)``."""
    from ray.rllib.core.columns import Columns

    from sixnimmt_env.rllib_env import MASK_KEY, OBS_KEY

    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("obs", "mask", "actions", "rewards", "starts", "log_probs")}
    for ep in episodes:
        n = len(ep)
        obs = ep.get_observations(slice(0, n))
        parts["obs"].append(np.asarray(obs[OBS_KEY], np.float32))
        parts["mask"].append(np.asarray(obs[MASK_KEY], np.float32))
        parts["actions"].append(np.asarray(ep.get_actions(), np.int64))
        parts["rewards"].append(np.asarray(ep.get_rewards(), np.float32))
        start = np.zeros(n, np.float32)
        start[0] = 1.0
        parts["starts"].append(start)
        parts["log_probs"].append(np.asarray(ep.get_extra_model_outputs(Columns.ACTION_LOGP), np.float32))
    return {k: np.concatenate(v) for k, v in parts.items()}


def sb3_update_rate(cfg: TrainConfig, episodes: list[Any], repeats: int, n_envs: int = 128) -> dict[str, float]:
    """Best env steps/s of ``repeats`` SB3 learner steps on the same samples (the AsyncMaskablePPO learner's work:
    features and values of the rollout, GAE, ``train()``), and of ``train()`` alone.

    The batch is laid out as ``(n_steps, n_envs)`` = ``(N // n_envs, n_envs)`` (as a rollout of ``n_envs`` envs).

    Returns:
        ``{"update": steps/s of the learner's whole work, "train": steps/s of train() alone, "steps": samples}``.
    """
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.vec_env import DummyVecEnv

    from sixnimmt_env.gym_env import make_env
    from training.config.rllib_settings import model_config
    from training.policy import CardPolicy
    from training.rollouts import critic_values

    data = _trajectories(episodes)
    n_total = len(data["obs"]) // n_envs * n_envs
    n_steps = n_total // n_envs
    a = cfg.algo
    policy = {"card": CardPolicy, "MlpPolicy": "MlpPolicy"}[model_config(cfg.algo)["policy"]]
    model = MaskablePPO(
        policy,
        DummyVecEnv([lambda: make_env(num_players=4, opponents="greedy")] * n_envs),
        n_steps=n_steps,
        batch_size=a.batch_size,
        n_epochs=a.n_epochs,
        learning_rate=a.learning_rate,
        gamma=a.gamma,
        gae_lambda=a.gae_lambda,
        clip_range=a.clip_range,
        ent_coef=a.ent_coef,
        vf_coef=a.vf_coef,
        max_grad_norm=a.max_grad_norm,
        policy_kwargs={"net_arch": model_config(cfg.algo)["net_arch"]},
        seed=cfg.train.seed,
        device="cpu",
    )
    model.set_logger(configure(None, []))  # train() records its losses; nowhere here
    shaped = {k: v[:n_total].reshape(n_steps, n_envs, *v.shape[1:]) for k, v in data.items()}
    slot = {"observations": shaped["obs"], "last_obs": shaped["obs"][-1]}
    best = best_train = float("inf")
    for i in range(repeats + 1):
        buf = model.rollout_buffer
        buf.reset()
        start = time.perf_counter()
        observations, values, last_values = critic_values(model.policy, slot)
        buf.observations, buf.values = observations, values
        buf.actions = shaped["actions"].reshape(n_steps, n_envs, 1).astype(np.float32)
        buf.rewards, buf.episode_starts = shaped["rewards"], shaped["starts"]
        buf.log_probs, buf.action_masks = shaped["log_probs"], shaped["mask"]
        buf.pos, buf.full = n_steps, True
        buf.compute_returns_and_advantage(last_values=last_values, dones=np.zeros(n_envs, np.float32))
        mid = time.perf_counter()
        model.train()
        end = time.perf_counter()
        if i:
            best, best_train = min(best, end - start), min(best_train, end - mid)
    return {"update": n_total / best, "train": n_total / best_train, "steps": n_total}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/rllib_ppo_4p.yaml")
    p.add_argument("--repeats", type=int, default=5, help="timed updates per learner (default 5; best shown)")
    p.add_argument("--learners", type=int, nargs="+", default=[0], help="ray.num_learners settings to time (default 0)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--profile", default=None, help="write a cProfile of one local RLlib update to this file")
    args = p.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray
    import torch

    base = load_config(
        args.config,
        [
            "self_play.enabled=false",
            "ray.num_env_runners=0",
            f"ray.num_envs_per_env_runner={128}",
            "ray.num_cpus=2",
            *args.overrides,
        ],
    )
    torch.set_num_threads(base.train.torch_threads)
    episodes = sample_episodes(base)
    steps = sum(len(e) for e in episodes)
    a = base.algo
    print(
        f"batch: {steps:,} env steps of {args.config} ({len(episodes)} episode chunks), minibatch {a.batch_size}, "
        f"{a.n_epochs} epoch(s), net {base.algo.policy_kwargs.net_arch}, torch threads {base.train.torch_threads}",
        flush=True,
    )
    print(f"{'learner':<40} {'env steps/s':>12} {'vs sb3':>7} {'load':>5}", flush=True)
    sb3 = sb3_update_rate(base, episodes, args.repeats)
    rows = [
        ("sb3 learner (values, GAE, train())", sb3["update"]),
        ("  of which train()", sb3["train"]),
    ]
    for name, rate in rows:
        print(f"{name:<40} {rate:>12,.0f} {rate / sb3['update']:>7.2f} {os.getloadavg()[0]:>5.1f}", flush=True)
    for k in args.learners:
        cfg = load_config(
            args.config,
            [
                "self_play.enabled=false",
                "ray.num_env_runners=0",
                "ray.num_envs_per_env_runner=128",
                f"ray.num_learners={k}",
                f"ray.num_cpus={max(2, k)}",
                *args.overrides,
            ],
        )
        started = False
        if k > 0 and not ray.is_initialized():
            from training.rllib.backend import start_ray

            started = start_ray(cfg.ray)
        try:
            r = rllib_update_rate(cfg, episodes, args.repeats, args.profile if k == 0 else None)
        finally:
            if started:
                ray.shutdown()
        name = f"rllib learner, num_learners={k}"
        print(f"{name:<40} {r['update']:>12,.0f} {r['update'] / sb3['update']:>7.2f} {os.getloadavg()[0]:>5.1f}")
        if r["connector"] == r["connector"]:
            print(f"{'  of which connector (values, GAE)':<40} {r['connector']:>12,.0f}", flush=True)


if __name__ == "__main__":
    main()
