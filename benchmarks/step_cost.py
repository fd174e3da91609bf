"""The cost of one env step of the main job, taken apart: where 1,000 env steps spend their time, the physical limit
it implies, and what more cores would give.

Usage::

    python benchmarks/step_cost.py [--config configs/ppo_4p.yaml] [--rollouts 30] [--pool N] [--set KEY=VALUE ...]

The config's PPO (distillation off: it comes before and is timed by the main job itself) runs synchronously
(``train.workers=1``) on its vector env, with a full self-play pool (``--pool``, default ``self_play.pool_size``
snapshots of the policy, each its own opponent: what a run steps once its pool has filled; its snapshots play
``self_play.prob`` of the opponent seats), and every part is timed by wrapping the functions that do it:

==================  ====================================================================================
part                what it is
==================  ====================================================================================
engine              the batched engine's play (rules, and the heuristic opponents compiled into the same
                    call: ``greedy``, ``lowest``, ``highest``, ``random``), observations and masks
opponents           the self-play snapshots' forward passes (numpy/numba, one per snapshot per step)
policy forward      the learner's policy in the rollout: features, actor, critic, masked sampling (torch)
update              ``train()``: PPO's forward and backward passes over the rollout, Adam
everything else     SB3's rollout bookkeeping: the buffer, masks, callbacks, VecMonitor, ``step`` glue
==================  ====================================================================================

The same config then runs with ``train.workers=2`` for as many rollouts, with the same pool, timing the learner's
update, what it does besides (the critic's values and the card features of each rollout, which the rollout process
leaves to it: ``training.rollouts.critic_values``; taking the rollout from shared memory; the callbacks) and how long
it waits for the rollout process. The rollout process's own cost is the synchronous parts with the actor's share of
the forward pass (timed on one vector step) in place of the whole forward.

The physical limit: the multiply-adds of the networks per env step (the policy's forward in the rollout, its
forward and backward in the update, ~3x the forward's, ``n_epochs`` times, and the snapshots' actor forwards at
their share of the opponent decisions), at the machine's measured matrix-multiply rate (torch, one thread, at the
policy's own layer shape and at a large square one). The scaling table puts the measured parts on W cores: with
``train.workers: W`` the learner (update + its bookkeeping) runs on one core and W - 1 rollout processes (engine,
opponents, forward) on the others, so steps/s = min(learner limit, (W - 1) x one rollout process), assuming the
rollout processes scale perfectly (they share nothing but the learner's weights).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import numpy as np
import torch
from sb3_contrib import MaskablePPO

import training.ppo_agents  # noqa: F401  (ppo: specs)
from training.config import TrainConfig, load_config
from training.opponents import mixture_sampler
from training.policy import algo_kwargs
from training.vec import build_vec_env


def _timed(times: dict[str, float], key: str, obj: object, name: str) -> None:
    """Replace ``obj.name`` by a wrapper that adds its wall time to ``times[key]``."""
    f = getattr(obj, name)

    def wrapper(*args: object, **kwargs: object) -> object:
        t = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            times[key] = times.get(key, 0.0) + time.perf_counter() - t

    setattr(obj, name, wrapper)


def _gemm_rate(m: int, k: int, n: int, seconds: float = 0.5) -> float:
    """FLOP/s of a float32 ``(m, k) @ (k, n)`` matrix multiply, one torch thread."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    a @ b
    reps, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        a @ b
        reps += 1
    return 2 * m * k * n * reps / (time.perf_counter() - t)


def _macs(module: torch.nn.Module, per_sample: dict[str, int]) -> int:
    """Multiply-adds of one forward pass per sample: every Linear's ``in x out`` times its uses per sample
    (``per_sample``: the card head's per-card layers run once per held card)."""
    total = 0
    for name, sub in module.named_modules():
        if isinstance(sub, torch.nn.Linear):
            total += sub.in_features * sub.out_features * per_sample.get(name, 1)
    return total


def _async_learner(cfg: TrainConfig, rollouts: int, pool: list[str]) -> tuple[float, float, float, float]:
    """Run ``cfg`` with ``train.workers=2`` for ``rollouts`` rollouts, the snapshots ``pool`` in its self-play pool;
    returns the learner's ms per 1000 steps in ``train()`` (the update; the features come with the rollout),
    outside ``train()`` and outside waiting (the critic's values, taking the rollout, the callbacks), the steps/s,
    and its ms per 1000 steps waiting for the rollout process."""
    from training.rollouts import AsyncMaskablePPO, RolloutWorkers

    train = cfg.train.model_copy(update={"workers": 2})
    sampler = mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw, pool)
    workers = RolloutWorkers(cfg.env, train, sampler, 2, cfg.algo.n_steps, cfg.algo.gamma)
    try:
        model = AsyncMaskablePPO(env=workers, seed=0, device="cpu", verbose=0, **algo_kwargs(cfg.algo))
        per_rollout = model.n_steps * workers.num_envs
        model.learn(4 * per_rollout)
        times: dict[str, float] = {}
        _timed(times, "collect", model, "collect_rollouts")
        _timed(times, "wait", workers, "wait")
        _timed(times, "train", model, "train")
        start = time.perf_counter()
        model.learn(rollouts * per_rollout, reset_num_timesteps=False)
        wall = time.perf_counter() - start
    finally:
        workers.close()
    k = 1e6 / (rollouts * per_rollout)
    return times["train"] * k, (times["collect"] - times["wait"]) * k, rollouts * per_rollout / wall, times["wait"] * k


def _actor_share(policy: object, obs: np.ndarray, masks: np.ndarray) -> float:
    """The actor's share of the policy's forward pass (features, actor, masked sampling, without the critic) on one
    vector step's observations ``obs`` and masks: what a rollout process computes with ``train.workers >= 2``."""
    x = torch.as_tensor(obs)

    def best(f: object) -> float:
        out = []
        for _ in range(30):
            t = time.perf_counter()
            f()  # type: ignore[operator]
            out.append(time.perf_counter() - t)
        return min(out)

    def actor() -> None:
        d = policy.get_distribution(x, action_masks=masks)  # type: ignore[attr-defined]
        d.log_prob(d.get_actions())

    with torch.no_grad():
        return best(actor) / best(lambda: policy(x, action_masks=masks))  # type: ignore[operator]


def main() -> None:
    """Print the table, the physical limit and the scaling table (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/ppo_4p.yaml")
    p.add_argument("--rollouts", type=int, default=30, help="rollouts timed (after 4 to warm up)")
    p.add_argument("--pool", type=int, default=None, help="snapshots in the self-play pool (default: pool_size)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args()
    cfg = load_config(args.config, [*args.overrides, "distill.enabled=false", "train.workers=1"])
    torch.set_num_threads(cfg.train.torch_threads)
    venv = build_vec_env(cfg.env, cfg.train, mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw))
    model = MaskablePPO(env=venv, seed=cfg.train.seed, device="cpu", verbose=0, **algo_kwargs(cfg.algo))
    base = venv.venv if hasattr(venv, "venv") else venv
    pool: list[str] = []
    if cfg.self_play.enabled:
        folder = Path(tempfile.mkdtemp())
        for i in range(cfg.self_play.pool_size if args.pool is None else args.pool):
            model.save(folder / f"snapshot_{i}.zip")
            pool.append(str(folder / f"snapshot_{i}.zip"))
        venv.env_method("set_opponents", mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw, pool))
    per_rollout = model.n_steps * venv.num_envs
    model.learn(4 * per_rollout)  # warm up: numba, torch, the pool's snapshot loaded
    times: dict[str, float] = {}
    _timed(times, "update", model, "train")
    _timed(times, "rollout", model, "collect_rollouts")
    _timed(times, "policy forward", model.policy, "forward")
    _timed(times, "env step", base, "step_wait")
    _timed(times, "engine play", base.tables, "play")
    _timed(times, "engine observe", base, "_observe")
    decisions = [0]
    choose = base._external_actions

    def counted(active: object) -> None:  # the snapshot decisions, for the FLOP count
        games, _seats = base.tables.pending(active)
        decisions[0] += len(games)
        choose(active)

    base._external_actions = counted
    _timed(times, "opponents", base, "_external_actions")
    steps = args.rollouts * per_rollout
    start = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    wall = time.perf_counter() - start
    share = _actor_share(model.policy, venv.reset(), np.stack(venv.env_method("action_masks")))
    venv.close()
    k = 1000 / steps  # seconds per step -> ms per 1000 steps: x 1e3 x 1000 / steps
    ms = {key: 1e3 * v * k for key, v in times.items()}
    engine = ms["engine play"] + ms["engine observe"]
    opponents = ms.get("opponents", 0.0)
    forward = ms["policy forward"]
    update = ms["update"]
    other = ms["rollout"] - forward - opponents - engine
    total = 1e3 * wall * k
    print(
        f"{args.config}: {venv.num_envs} envs x {model.n_steps} steps per rollout, {model.batch_size} per minibatch, "
        f"{model.n_epochs} epoch(s); {steps:,} steps timed in {wall:.1f} s ({steps / wall:,.0f} steps/s, one process, "
        f"one torch thread); load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'part':<50} {'ms / 1k steps':>10} {'share':>7}")
    rows = [
        ("engine (rules, heuristic opponents, obs, masks)", engine),
        ("opponents (self-play snapshots' forwards)", opponents),
        ("policy forward (rollout)", forward),
        ("update (forward + backward + Adam)", update),
        ("everything else (SB3 bookkeeping, buffer, glue)", other),
    ]
    for name, value in rows:
        print(f"{name:<50} {value:>10.2f} {100 * value / total:>6.1f}%")
    print(f"{'total':<50} {total:>10.2f}")

    policy = model.policy
    hand = 10  # the card head's per-card layers run once per held card
    fwd_macs = _macs(policy, {"action_net.card_in": hand, "action_net.card_out": hand})
    actor_macs = _macs(policy.action_net, {"card_in": hand, "card_out": hand}) + _macs(
        policy.mlp_extractor.policy_net, {}
    )
    per_step_opp = decisions[0] / steps
    flops_step = 2 * (fwd_macs + 3 * fwd_macs * model.n_epochs + actor_macs * per_step_opp)
    layer = _gemm_rate(model.batch_size, policy.mlp_extractor.policy_net[0].in_features, 64)
    big = _gemm_rate(2048, 1024, 1024)
    print(
        f"\nnetworks: {fwd_macs:,} multiply-adds per forward (actor + critic), {per_step_opp:.2f} snapshot "
        f"decisions per step; {flops_step / 1e3:,.0f} kFLOP per env step (forward, update at 3x the forward per "
        "epoch, snapshots)"
    )
    print(
        f"matrix multiply, one thread: {layer / 1e9:.1f} GFLOP/s at the first layer's shape ({model.batch_size} x "
        f"{policy.mlp_extractor.policy_net[0].in_features} x 64), {big / 1e9:.1f} GFLOP/s at 2048 x 1024 x 1024"
    )
    limit = layer / flops_step
    cores = os.cpu_count() or 1
    print(
        f"physical limit (the networks alone at {layer / 1e9:.1f} GFLOP/s): {limit:,.0f} steps/s per core, "
        f"{cores * limit:,.0f} on {cores} cores; measured {steps / wall:,.0f} in one process "
        f"({100 * steps / wall / limit:.0f} % of one core's limit)"
    )
    async_update, learner_other, async_rate, waiting = _async_learner(cfg, args.rollouts, pool)
    learner = async_update + learner_other
    rollout = engine + opponents + share * forward + other
    print(
        f"\ntrain.workers=2 (one rollout process beside the learner): {async_rate:,.0f} steps/s. The rollout "
        f"process runs the actor alone ({share * forward:.2f} of the forward's {forward:.2f} ms / 1000 steps): "
        f"{rollout:.2f} ms / 1000 steps in all. The learner: the update {async_update:.2f} (the features come with "
        f"the rollout), the critic's values, the features and taking the rollout and the callbacks "
        f"{learner_other:.2f}; waiting for the rollout process {waiting:.2f} ms / 1000 steps"
    )
    print(
        f"\nscaling on paper (train.workers = W cores: 1 learner at {learner:.1f} ms / 1000 steps, W - 1 rollout "
        f"processes at {rollout:.1f} ms / 1000 steps each)"
    )
    print(f"{'cores':>6} {'steps/s':>10}  limit")
    for w in (2, 8, 16, 64):
        learn_cap, roll_cap = 1e6 / learner, (w - 1) * 1e6 / rollout
        print(f"{w:>6} {min(learn_cap, roll_cap):>10,.0f}  {'learner' if learn_cap < roll_cap else 'rollouts'}")
    print(
        f"the learner is the limit from {1 + rollout / learner:.1f} cores on ({1e6 / learner:,.0f} steps/s); past "
        "it, more steps/s need a faster update (several learners, train.backend: rllib with ray.num_learners)"
    )


if __name__ == "__main__":
    main()  # the rollout processes start by forkserver: the module must be importable without side effects
