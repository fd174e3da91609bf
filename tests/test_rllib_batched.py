"""The RLlib env runner on the batched engine (``ray.sampler: batched``, training/rllib/batched_runner.py): its
episodes (shapes, rewards, masks, lengths), the episodes it builds against RLlib's own constructor, seeds, the
self-play snapshots inside the engine, and a two-iteration training run whose checkpoint the arena plays."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from test_rllib import _run_dir, _train

from sixnimmt_env.observation import OBS_SIZE
from sixnimmt_env.rllib_env import MASK_KEY, OBS_KEY
from sixnimmt_env.rules.engine import NUM_ACTIONS, NUM_CARDS, ROW_ACTION
from training.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "rllib_smoke.yaml"

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def _config(*overrides: str):
    return load_config(SMOKE, ["ray.sampler=batched", "self_play.enabled=false", *overrides])


def _runner(cfg, worker_index: int = 1):
    from training.rllib.backend import algorithm_config, register_envs
    from training.rllib.batched_runner import BatchedEnvRunner

    register_envs()
    return BatchedEnvRunner(config=algorithm_config(cfg), worker_index=worker_index, num_workers=1)


def test_sampler_key_is_checked() -> None:
    with pytest.raises(ConfigError, match=r"key 'ray.sampler' must be 'env' or 'batched', got 'fast'"):
        load_config(SMOKE, ["ray.sampler=fast"])
    assert load_config(SMOKE).ray.sampler == "env"
    assert load_config(ROOT / "configs" / "rllib_ppo_4p.yaml").ray.sampler == "batched"


def test_batched_runner_episodes_rewards_masks_and_metrics() -> None:
    """One fragment of 6 games x 40 steps: every step's action legal under its mask; a whole round is the
    learner's 10 cards (and its row choices, R9b), its rewards sum to minus the bullheads its seat took; chunks
    continue under the same id in the next fragment; the runner reports RLlib's metrics."""
    cfg = _config("ray.num_envs_per_env_runner=6", "algo.n_steps=40", "algo.batch_size=120")
    runner = _runner(cfg)
    try:
        episodes = runner.sample()
        assert sum(len(e) for e in episodes) == 6 * 40
        whole = 0
        for e in episodes:
            n = len(e)
            obs = e.get_observations()
            assert obs[OBS_KEY].shape == (n + 1, OBS_SIZE) and obs[OBS_KEY].dtype == np.float32
            assert obs[MASK_KEY].shape == (n + 1, NUM_ACTIONS) and obs[MASK_KEY].dtype == np.int8
            actions = e.get_actions()
            assert actions.shape == (n,) and actions.dtype == np.int64
            assert (obs[MASK_KEY][np.arange(n), actions] == 1).all()  # every sampled action legal
            logits = e.get_extra_model_outputs("action_dist_inputs")
            assert logits.shape == (n, NUM_ACTIONS) and (logits[obs[MASK_KEY][:n] == 0] < -1e30).all()
            logp = e.get_extra_model_outputs("action_logp")
            shifted = logits - logits.max(axis=1, keepdims=True)
            expected = shifted[np.arange(n), actions] - np.log(np.exp(shifted).sum(axis=1))
            np.testing.assert_allclose(logp, expected, rtol=1e-4, atol=1e-5)
            rewards = e.get_rewards()
            assert rewards.shape == (n,) and (rewards <= 0).all()
            e.validate()
            if e.is_terminated:
                assert not obs[MASK_KEY][-1].any()  # the terminal observation: no decision
                info = e.get_infos(-1)
                assert set(info) >= {"learner_seat", "round_penalties", "totals", "rank"}
                if e.t_started == 0:  # the whole round in this fragment
                    whole += 1
                    assert float(rewards.sum()) == -info["round_penalties"][info["learner_seat"]]
                    assert int((actions < NUM_CARDS).sum()) == 10  # 10 cards a round at 4 players (R4)
                    assert ((actions >= NUM_CARDS) & (actions < ROW_ACTION + 4)).sum() == n - 10  # row choices
            else:
                assert obs[MASK_KEY][-1].any()  # a cut chunk ends at the learner's next decision
        assert whole >= 12  # 40 steps of 6 games: about 3 rounds each
        # the fragment pickles as its arrays (what a remote runner sends) and loads as the same episodes
        back = pickle.loads(pickle.dumps(episodes))
        assert type(back) is type(episodes) and len(back) == len(episodes)
        for x, y in zip(episodes, back, strict=True):
            assert (x.id_, x.t_started, x.t, x.is_terminated, x.get_infos(-1)) == (
                y.id_,
                y.t_started,
                y.t,
                y.is_terminated,
                y.get_infos(-1),
            )
            for key in (OBS_KEY, MASK_KEY):
                np.testing.assert_array_equal(x.get_observations()[key], y.get_observations()[key])
            np.testing.assert_array_equal(x.get_actions(), y.get_actions())
            np.testing.assert_array_equal(x.get_rewards(), y.get_rewards())
            np.testing.assert_array_equal(
                x.get_extra_model_outputs("action_logp"), y.get_extra_model_outputs("action_logp")
            )
        ongoing = {e.id_: e.t for e in episodes if not e.is_terminated}
        assert len(ongoing) == 6
        metrics = runner.get_metrics()
        assert metrics["num_env_steps_sampled"] == 240 and metrics["num_episodes"] == len(episodes) - 6
        assert -40 < metrics["episode_return_mean"] < 0 and 10 <= metrics["episode_len_mean"] <= 16
        nxt = runner.sample()
        continued = [e for e in nxt if e.id_ in ongoing]
        assert len(continued) == 6 and all(e.t_started == ongoing[e.id_] for e in continued)
    finally:
        runner.stop()


def test_episode_builder_matches_rllib_constructor() -> None:
    """The fast builder gives the episode RLlib's constructor and ``to_numpy()`` give, attribute for attribute
    (the guard against a change of RLlib's episode internals)."""
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode
    from ray.rllib.utils.metrics import WEIGHTS_SEQ_NO

    from training.rllib.batched_runner import EpisodeBuilder

    cfg = _config("ray.num_envs_per_env_runner=2", "algo.n_steps=8", "algo.batch_size=16")
    runner = _runner(cfg)
    space, action_space = runner.env.single_observation_space, runner.env.single_action_space
    runner.stop()
    rng = np.random.default_rng(0)
    n = 5
    o = rng.random((n + 1, OBS_SIZE), dtype=np.float32)
    m = (rng.random((n + 1, NUM_ACTIONS)) < 0.3).astype(np.int8)
    a, r = rng.integers(0, NUM_ACTIONS, n), -rng.integers(0, 5, n).astype(np.float32)
    lp, z, seq = rng.random(n, dtype=np.float32), rng.random((n, NUM_ACTIONS), dtype=np.float32), np.full(n, 3)
    fast = EpisodeBuilder(space, action_space)("abc", 7, o, m, a, r, lp, z, seq, True, {"rank": 2})
    slow = SingleAgentEpisode(
        "abc",
        observations=[{OBS_KEY: o[i], MASK_KEY: m[i]} for i in range(n + 1)],
        observation_space=space,
        infos=[{}] * n + [{"rank": 2}],
        actions=list(a),
        action_space=action_space,
        rewards=list(r),
        terminated=True,
        extra_model_outputs={"action_logp": list(lp), "action_dist_inputs": list(z), WEIGHTS_SEQ_NO: list(seq)},
        t_started=7,
        len_lookback_buffer=0,
    ).to_numpy()
    slots = SingleAgentEpisode.__slots__
    assert all(hasattr(fast, k) for k in slots)  # every attribute RLlib's episode has is set
    for k in ("id_", "agent_id", "module_id", "multi_agent_episode_id", "is_terminated", "is_truncated", "t"):
        assert getattr(fast, k) == getattr(slow, k), k
    assert fast.observation_space == slow.observation_space and fast.action_space == slow.action_space
    for name in ("observations", "infos", "actions", "rewards"):
        f, s = getattr(fast, name), getattr(slow, name)
        assert vars(f).keys() == vars(s).keys() and f.lookback == s.lookback == 0 and f.finalized == s.finalized
        assert f.space == s.space
    assert fast.extra_model_outputs.keys() == slow.extra_model_outputs.keys()
    for k in fast.extra_model_outputs:
        np.testing.assert_allclose(fast.get_extra_model_outputs(k), slow.get_extra_model_outputs(k))
    for get in ("get_actions", "get_rewards"):
        np.testing.assert_array_equal(getattr(fast, get)(), getattr(slow, get)())
    for key in (OBS_KEY, MASK_KEY):
        np.testing.assert_array_equal(fast.get_observations()[key], slow.get_observations()[key])
    assert (fast.t, fast.t_started, fast.is_terminated, fast.is_truncated) == (12, 7, True, False)
    assert (slow.t, slow.t_started, len(fast), fast.get_infos(-1)) == (12, 7, 5, {"rank": 2})
    # RLlib's learner connector appends a bootstrap step to each episode: it works on these buffers
    from ray.rllib.utils.postprocessing.episodes import add_one_ts_to_episodes_and_truncate

    add_one_ts_to_episodes_and_truncate([fast])
    assert len(fast) == 6 and fast.get_observations()[OBS_KEY].shape == (7, OBS_SIZE)


def _actions(cfg, worker_index: int = 1) -> list[np.ndarray]:
    runner = _runner(cfg, worker_index)
    try:
        return [e.get_actions() for _ in range(2) for e in runner.sample()]
    finally:
        runner.stop()


def test_same_seed_same_actions() -> None:
    cfg = _config("ray.num_envs_per_env_runner=4", "algo.n_steps=16", "algo.batch_size=64")
    first, again = _actions(cfg), _actions(cfg)
    assert len(first) == len(again) and all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    other = _actions(cfg, worker_index=2)  # another runner of the run: its own seed
    assert not (len(other) == len(first) and all(np.array_equal(a, b) for a, b in zip(first, other, strict=True)))


def test_snapshots_play_inside_the_engine(tmp_path: Path) -> None:
    """A snapshot (an RLModule checkpoint) pushed to the runner plays opponent seats inside its engine: with
    self_play.prob 1 every opponent seat of a new episode is the snapshot, played by one batched forward."""
    import torch

    from training.rllib.batched_runner import snapshot_paths
    from training.rllib.rllib_agents import RLlibAgent, load_module

    cfg = load_config(
        SMOKE,
        ["ray.sampler=batched", "self_play.prob=1.0", "ray.num_envs_per_env_runner=4", "algo.n_steps=32"],
    )
    runner = _runner(cfg)
    try:
        for steps in (100, 300, 200):
            (tmp_path / "pool" / f"snapshot_{steps}").mkdir(parents=True)
        runner.module.save_to_path(str((tmp_path / "pool" / "snapshot_300").resolve()))
        paths = snapshot_paths(tmp_path / "pool", 1)
        assert paths == [tmp_path / "pool" / "snapshot_300"]
        assert [p.name for p in snapshot_paths(tmp_path / "pool", 2)] == ["snapshot_200", "snapshot_300"]
        runner.sample()
        venv = runner.env.venv
        assert (venv.tables.ext == -1).all()  # before: heuristic opponents only (the compiled kernel)
        assert runner.set_snapshot_pool([load_module(paths[0]).get_state(inference_only=True)]) == 1
        (agent,) = [a for a in venv._externals if isinstance(a, RLlibAgent)]
        assert agent.sample and agent.spec == "rllib-sample:snapshot0"
        x = runner._obs[:3]
        with torch.no_grad():
            expected = load_module(paths[0]).logits(torch.as_tensor(x)).numpy()
        np.testing.assert_allclose(agent.logits(x), expected, rtol=1e-4, atol=1e-5)  # the snapshot's policy
        episodes = runner.sample()
        k = venv._externals.index(agent)
        seats = venv.tables.seat
        opponents = venv.tables.ext[np.arange(4)[:, None], (seats[:, None] + np.arange(1, 4)) % 4]
        assert (opponents == k).all()  # every opponent seat of the new episodes is the snapshot
        assert all((e.get_observations()[MASK_KEY][np.arange(len(e)), e.get_actions()] == 1).all() for e in episodes)
    finally:
        runner.stop()


def test_batched_training_run_checkpoint_plays_in_the_arena(tmp_path: Path) -> None:
    """training.train with ray.sampler: batched on the smoke config (real local Ray, one runner, self-play on):
    two iterations, two snapshots in pool/, the checkpoints, and rllib:PATH playing in the arena."""
    out = _train(str(SMOKE), "--set", "ray.sampler=batched", "--set", f"train.output_dir={tmp_path}", "--no-progress")
    assert out.returncode == 0, out.stderr[-3000:]
    run = _run_dir(tmp_path)
    last = max((run / "checkpoints").iterdir(), key=lambda p: int(p.name.split("_")[1]))
    progress = json.loads((last / "progress.json").read_text())
    assert progress["iterations"] == 2 and progress["steps"] == 512 and progress["snapshots"] == 2
    assert sorted(p.name for p in (run / "pool").iterdir()) == ["snapshot_256", "snapshot_512"]
    report = (run / "report.md").read_text()
    assert "2 iterations" in report and "Illegal actions: 0" in report
    code = (
        "import json, ray; from training.evaluate import evaluate_agents; "
        f"r = evaluate_agents(['rllib:{last}', 'greedy', 'random'], games=12, seed=0); "
        "print(json.dumps([r['games'], r['illegal_actions'], r['agents'][0]['decisions'], ray.is_initialized()]))"
    )
    arena = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    games, illegal, decisions, ray_started = json.loads(arena.stdout.strip().splitlines()[-1])
    assert (games, illegal, ray_started) == (12, 0, False) and decisions >= 12 * 10

    # --resume: the pool folder's newest snapshots go to the runners again, and the run goes on to 1024 steps
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["train"]["total_timesteps"] = 1024
    (run / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    out = _train("--resume", str(run), "--no-progress")
    assert out.returncode == 0, out.stderr[-3000:]
    last = max((run / "checkpoints").iterdir(), key=lambda p: int(p.name.split("_")[1]))
    progress = json.loads((last / "progress.json").read_text())
    assert progress["iterations"] == 4 and progress["steps"] == 1024 and progress["snapshots"] == 4
    assert len(list((run / "pool").iterdir())) == 4


def test_runner_as_ray_actor_sends_the_fragment() -> None:
    """A runner in a Ray actor (no sample-end callbacks) returns its fragment unbuilt; this process loads it as
    the whole fragment's episodes, the same as a runner in this process samples with the same seed."""
    import ray

    from training.rllib.backend import algorithm_config, register_envs
    from training.rllib.batched_runner import BatchedEnvRunner, FragmentEpisodes

    cfg = _config("ray.num_envs_per_env_runner=4", "algo.n_steps=16", "algo.batch_size=64")
    local = [(e.id_[16:], e.get_actions().tolist()) for e in _runner(cfg).sample()]  # ids: runner prefix + count
    ray.init(address="local", num_cpus=1, object_store_memory=120 * 1024 * 1024, include_dashboard=False)
    try:
        register_envs()
        actor = ray.remote(num_cpus=1)(BatchedEnvRunner).remote(
            config=algorithm_config(cfg), worker_index=1, num_workers=1
        )
        assert ray.get(actor.__ray_call__.remote(lambda r: r._send_only))
        episodes = ray.get(actor.sample.remote())
    finally:
        ray.shutdown()
    assert isinstance(episodes, FragmentEpisodes) and sum(len(e) for e in episodes) == 4 * 16
    assert [(e.id_[16:], e.get_actions().tolist()) for e in episodes] == local
