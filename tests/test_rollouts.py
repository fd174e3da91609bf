"""Training on every core (`training/rollouts.py`): rollout processes beside the learner (``train.workers``)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from training.config import ConfigError, load_config
from training.evaluate import evaluate_lineups
from training.features import hand_features_numpy
from training.opponents import mixture_sampler
from training.policy import algo_kwargs
from training.rollouts import (
    AsyncMaskablePPO,
    RolloutWorkers,
    critic_values,
    resolve_workers,
    rollout_processes,
    worker_seed,
)
from training.train import train
from training.vec import build_vec_env

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"
BATCHED = [
    "train.vec_env=batched",
    "train.n_envs=16",
    "algo.n_steps=24",
    "algo.batch_size=64",
    "self_play.enabled=false",
    "train.seed=5",
]


def test_a_rollout_process_collects_what_maskable_ppo_collects_in_process() -> None:
    """One rollout of the rollout process equals SB3's own ``collect_rollouts`` on the same envs, seeds and
    weights: observations, actions, rewards, episode starts (episodes end inside the rollout), values,
    log-probabilities, masks, and the advantages and returns computed from its last values and dones."""
    cfg = load_config(SMOKE, [*BATCHED, "train.workers=2"])
    workers = RolloutWorkers(
        cfg.env,
        cfg.train,
        mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw),
        2,
        cfg.algo.n_steps,
        cfg.algo.gamma,
    )
    try:
        model = AsyncMaskablePPO(env=workers, seed=1, device="cpu", **algo_kwargs(cfg.algo))
        workers.set_policy(model.policy)
        workers.start(torch.nn.utils.parameters_to_vector(model.policy.parameters()).detach().numpy())
        slot, events = workers.wait()
        ours = {name: np.array(a) for name, a in slot.items()}
        features, values, last_values = critic_values(model.policy, slot)  # the learner's half (the same weights)
        buf = model.rollout_buffer  # filled as AsyncMaskablePPO.collect_rollouts fills it
        buf.reset()
        for name in ("observations", "actions", "rewards", "episode_starts", "log_probs", "action_masks"):
            setattr(buf, name, ours[name])
        buf.values = values
        buf.compute_returns_and_advantage(last_values, ours["last_dones"])
    finally:
        workers.close()
    # the same in one process: the worker's seed, its env, SB3's loop
    seed = worker_seed(cfg.train.seed, 0)
    assert seed == int(np.random.SeedSequence([cfg.train.seed, 0]).generate_state(1)[0])
    venv = build_vec_env(
        cfg.env,
        cfg.train.model_copy(update={"seed": seed}),
        mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw),
    )
    ref = MaskablePPO(env=venv, seed=seed, device="cpu", **algo_kwargs(cfg.algo))
    ref.policy.load_state_dict(model.policy.state_dict())
    _, callback = ref._setup_learn(10**6, None)  # seeds and resets the envs, as the worker does at start
    torch.manual_seed(seed)
    assert ref.collect_rollouts(venv, callback, ref.rollout_buffer, cfg.algo.n_steps)
    theirs = ref.rollout_buffer
    for name in ("observations", "actions", "rewards", "episode_starts", "action_masks"):
        np.testing.assert_array_equal(ours[name], getattr(theirs, name), err_msg=name)
    for name in ("values", "log_probs", "advantages", "returns"):
        np.testing.assert_allclose(getattr(buf, name), getattr(theirs, name), atol=1e-4, err_msg=name)
    assert ours["observations"].shape == (24, 16, 506)
    # the card policy's features take the observations' place in the learner's buffer: the observation first
    assert features.shape == (24, 16, 636)
    np.testing.assert_array_equal(features[..., :506], ours["observations"])
    np.testing.assert_array_equal(features.reshape(-1, 636), hand_features_numpy(ours["observations"].reshape(-1, 506)))
    with torch.no_grad():  # and the update reads them as it reads the observations
        args = (torch.as_tensor(ours["actions"].reshape(-1)), ours["action_masks"].reshape(-1, 109))
        from_features = model.policy.evaluate_actions(torch.as_tensor(features.reshape(-1, 636)), *args)
        from_observations = model.policy.evaluate_actions(torch.as_tensor(ours["observations"].reshape(-1, 506)), *args)
    for a, b in zip(from_features, from_observations, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert ours["action_masks"].sum(axis=2).min() >= 1  # every stored step had a legal action
    # a round is 10 card choices and the learner's row choices: every game ends one episode within 24 steps
    ended = {i for _, i, _, _, _ in events}
    assert ended == set(range(16)) and all(length >= 10 for _, _, _, length, _ in events)
    assert ours["rewards"].max() <= 0 and ours["rewards"].min() < 0
    starts = ours["episode_starts"]
    assert starts[0].tolist() == [1.0] * 16
    assert starts[1:].sum() == sum(1 for t, *_ in events if t < 23)
    assert ours["last_dones"].sum() == sum(1 for t, *_ in events if t == 23)
    for t, i, _, _, _ in events:  # the step after an episode's last one starts a new episode
        assert starts[t + 1, i] == 1.0 if t < 23 else ours["last_dones"][i] == 1.0


def test_workers_split_the_envs_and_default_to_the_usable_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = load_config(SMOKE, ["train.n_envs=10"])
    assert rollout_processes(cfg.train.n_envs, 2) == [10]
    assert rollout_processes(cfg.train.n_envs, 4) == [3, 4, 3]
    assert rollout_processes(cfg.train.n_envs, 64) == [1] * 10  # never more processes than envs
    monkeypatch.setattr("sixnimmt_env.arena.pool.usable_cores", lambda: 2)
    assert resolve_workers(cfg.train) == 2
    monkeypatch.setattr("sixnimmt_env.arena.pool.usable_cores", lambda: 64)
    assert resolve_workers(cfg.train) == 4  # AUTO_WORKERS_MAX: the learner is the limit long before
    assert resolve_workers(load_config(SMOKE, ["train.workers=1"]).train) == 1
    assert resolve_workers(load_config(SMOKE, ["train.n_envs=1"]).train) == 1  # one env: nothing to overlap


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (["train.workers=0"], r"'train\.workers' must be an integer >= 1 or null, got 0"),
        (["train.workers=2", "train.vec_env=subproc"], r"'train\.workers' must be 1 \(or null\) with train\.vec_env"),
        (
            ["train.workers=2", "algo.policy=MlpPolicy", "train.normalize_obs=true"],
            r"'train\.workers' must be 1 \(or null\) with train\.normalize_obs",
        ),
    ],
)
def test_workers_config_errors_name_the_key(override: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(SMOKE, override)


def test_a_run_with_two_rollout_processes_trains_checkpoints_and_logs_every_episode(tmp_path: Path) -> None:
    """``train.workers=3`` (two rollout processes of 2 envs each): the step budget is counted as usual, the
    checkpoints load as plain MaskablePPO, every episode reaches the Monitor CSVs (one round = 10 steps), the
    self-play pool fills and the evaluations run on schedule."""
    overrides = ["train.workers=3", f"train.output_dir={tmp_path}"]
    cfg = load_config(SMOKE, overrides)
    summary = train(SMOKE, overrides, progress=False)  # the pipeline: a new run folder under tmp_path
    run_dir = Path(summary["run_dir"])
    assert summary["workers"] == 3
    assert summary["steps"] == 3072  # 3 rollouts of 256 steps x 4 envs
    model = MaskablePPO.load(run_dir / "final_model.zip")
    assert model.num_timesteps == 3072 and type(model.policy).__name__ == "CardPolicy"
    for i in range(4):
        with (run_dir / "monitor" / f"{i}.monitor.csv").open() as f:
            next(f)  # SB3's JSON header line
            rows = list(csv.DictReader(f))
        lengths = [int(r["l"]) for r in rows]
        # a round is 10 card choices plus the learner's low-card row choices (R9b); each env played 4 rollouts of
        # 256 steps: the 3 trained on and the one collected beside the last update (logged, never trained on)
        assert min(lengths) >= 10 and max(lengths) <= 20
        assert 1024 - 20 < sum(lengths) <= 1024
        assert all(float(r["r"]) <= 0 for r in rows)
    with (run_dir / "eval.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows] == [1024, 2048, 3072]
    assert len(list((run_dir / "pool").glob("*.zip"))) == 2  # pool_size 2, a snapshot every 1024 steps
    # the evaluations ran in the learner's background thread (while it waited for the rollout processes): each
    # row is what the same evaluation gives in the foreground, for the checkpoint saved at its step (every 2048)
    checkpoint = run_dir / "checkpoints" / "model_2048_steps.zip"
    again = evaluate_lineups(
        f"ppo:{checkpoint}", cfg.eval.opponents, cfg.eval.games, cfg.env.game_kwargs(), seed=cfg.train.seed
    )
    assert rows[1]["lineup"] == again[0]["lineup"] == "greedy,greedy,greedy"
    assert float(rows[1]["mean_penalty"]) == again[0]["mean_penalty"]
    assert float(rows[1]["win_share"]) == again[0]["win_share"]
    assert int(rows[1]["games"]) == 20 and int(rows[1]["illegal_actions"]) == 0
    assert all(float(r["seconds"]) > 0 for r in rows)


def test_a_rollout_process_that_fails_to_start_is_a_clear_error_and_leaves_nothing_running() -> None:
    cfg = load_config(SMOKE, ["train.workers=2", "train.n_envs=2"])
    bad = cfg.model_copy(update={"opponents": [cfg.opponents[0].model_copy(update={"agent": "ppo:/nonexistent.zip"})]})
    with pytest.raises(RuntimeError, match=r"rollout worker 0: .*nonexistent\.zip"):
        sampler = mixture_sampler(bad.opponents, bad.self_play, bad.train.opponent_draw)
        RolloutWorkers(bad.env, bad.train, sampler, 2, cfg.algo.n_steps, cfg.algo.gamma)
    import multiprocessing

    assert [p for p in multiprocessing.active_children() if p.name.startswith("sixnimmt-rollouts")] == []


def test_seed_then_reset_reseeds_every_rollout_process() -> None:
    """SB3's ``env.seed(s)`` (a new run, or ``--resume`` past the steps done) reaches the processes at the next
    reset: the same seed gives the same deals in another set of workers, another seed other deals."""
    cfg = load_config(SMOKE, [*BATCHED, "train.workers=3"])
    first = {}
    for name, seed in (("a", 9), ("b", 9), ("c", 10)):
        workers = RolloutWorkers(
            cfg.env,
            cfg.train,
            mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw),
            3,
            cfg.algo.n_steps,
            cfg.algo.gamma,
        )
        try:
            assert workers.processes == 2
            workers.seed(seed)
            first[name] = workers.reset()
        finally:
            workers.close()
    assert first["a"].shape == (16, 506)
    np.testing.assert_array_equal(first["a"], first["b"])
    assert not np.array_equal(first["a"], first["c"])


def test_loading_a_policy_leaves_the_global_random_generators_alone(tmp_path: Path) -> None:
    """``load_policy`` (every ``ppo:`` agent: the evaluations during training, the self-play snapshots) keeps the
    process's ``random``, numpy and torch generators where they were; SB3's ``load`` alone seeds them with the
    checkpoint's seed, which would move a learner's minibatch shuffles by when an evaluation loads its model."""
    import random

    from training.ppo_agents import _CACHE, load_policy

    cfg = load_config(SMOKE, [*BATCHED, "train.n_envs=2"])
    venv = build_vec_env(cfg.env, cfg.train, mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw))
    MaskablePPO(env=venv, seed=0, device="cpu", **algo_kwargs(cfg.algo)).save(tmp_path / "model.zip")

    def draws() -> tuple[float, float, float]:
        return random.random(), float(np.random.rand()), float(torch.rand(1))

    random.seed(123), np.random.seed(123), torch.manual_seed(123)
    expected = draws()
    random.seed(123), np.random.seed(123), torch.manual_seed(123)
    _CACHE.clear()
    load_policy(tmp_path / "model.zip")
    assert draws() == expected
    random.seed(0), np.random.seed(0), torch.manual_seed(0)
    assert draws() != expected  # (the checkpoint's own seed, what SB3's load would have left)
