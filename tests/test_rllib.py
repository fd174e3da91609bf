"""Ray RLlib: the action-mask adapters, RLlib's PettingZoo wrappers with PPO, the rllib training backend
(config checks, run folder, resume, SIGTERM), rllib:PATH agents without Ray, and a two-node cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from sixnimmt_env import parallel_env
from sixnimmt_env.gym_env import make_env
from sixnimmt_env.observation import OBS_SIZE
from sixnimmt_env.rllib_env import (
    MASK_KEY,
    OBS_KEY,
    ActionMaskObservation,
    masked_aec_env,
    masked_parallel_env,
)
from sixnimmt_env.rules.engine import NUM_ACTIONS
from training.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "rllib_smoke.yaml"
RAY_MB = 120 * 1024 * 1024  # object store of the in-test Ray nodes
LOOPBACK = {"node_ip_address": "127.0.0.1"}  # the in-test clusters' nodes listen on this machine's loopback only


@pytest.fixture
def loopback_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray processes started by the test (its cluster's nodes, the training subprocess's driver) take 127.0.0.1 as
    their node address: Ray's switch for single-machine clusters, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``."""
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


# --------------------------------------------------------------------------- adapters (no Ray)


def test_masked_parallel_env_renames_and_keeps_values() -> None:
    raw, masked = parallel_env(num_players=4), masked_parallel_env(num_players=4)
    obs_raw, _ = raw.reset(seed=3)
    obs, _ = masked.reset(seed=3)
    assert list(obs) == ["player_0", "player_1", "player_2", "player_3"]
    for agent, o in obs.items():
        assert set(o) == {OBS_KEY, MASK_KEY}
        assert o[OBS_KEY].dtype == np.float32 and o[OBS_KEY].shape == (OBS_SIZE,)
        assert o[MASK_KEY].dtype == np.int8 and o[MASK_KEY].shape == (NUM_ACTIONS,)
        np.testing.assert_array_equal(o[OBS_KEY], obs_raw[agent]["observation"])
        np.testing.assert_array_equal(o[MASK_KEY], obs_raw[agent]["action_mask"].astype(np.int8))
        assert o[MASK_KEY].sum() == 10  # a full hand of 10 cards to choose from (R4)
        assert masked.observation_space(agent).contains(o)
    actions = {a: int(np.flatnonzero(o[MASK_KEY])[0]) for a, o in obs.items()}  # everyone plays the lowest card
    step_raw = raw.step(actions)
    step = masked.step(actions)
    assert step[1] == step_raw[1]  # rewards
    assert step[2] == step_raw[2] and step[3] == step_raw[3]
    for agent, o in step[0].items():
        np.testing.assert_array_equal(o[OBS_KEY], step_raw[0][agent]["observation"])
        np.testing.assert_array_equal(o[MASK_KEY], step_raw[0][agent]["action_mask"].astype(np.int8))


def test_masked_aec_env_passes_pettingzoo_api_test() -> None:
    from pettingzoo.test import api_test

    env = masked_aec_env(num_players=3)
    api_test(env, num_cycles=30)
    env.reset(seed=1)
    obs, *_ = env.last()
    assert set(obs) == {OBS_KEY, MASK_KEY} and obs[MASK_KEY].sum() == 10


def test_single_seat_adapter_gives_the_env_mask() -> None:
    env = ActionMaskObservation(make_env(num_players=4, opponents="greedy", learner_seat=0, episode="round"))
    obs, _ = env.reset(seed=5)
    for _ in range(20):
        assert env.observation_space.contains(obs)
        np.testing.assert_array_equal(obs[MASK_KEY], env.unwrapped.action_masks().astype(np.int8))
        legal = np.flatnonzero(obs[MASK_KEY])
        assert 1 <= len(legal) <= 10  # its cards, or the 4 rows to take (R9)
        obs, reward, terminated, _truncated, _ = env.step(int(legal[-1]))
        assert reward <= 0
        if terminated:
            break
    assert terminated  # one round: 10 cards and the learner's row choices (R9)


def test_rllib_env_imports_neither_torch_nor_ray() -> None:
    code = "import sys, sixnimmt_env.rllib_env; print(sorted({'torch', 'ray'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- config checks (no Ray)


def _write(tmp_path: Path, extra: dict) -> Path:
    raw = yaml.safe_load(SMOKE.read_text())
    for section, values in extra.items():
        if values is None:
            raw.pop(section, None)
        elif isinstance(values, dict):
            raw.setdefault(section, {}).update(values)
        else:
            raw[section] = values
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"ray": {"num_workers": 2}},
            r"unknown key 'ray.num_workers'; did you mean 'num_learners'\? allowed keys here: address, num_cpus",
        ),
        ({"algo": {"target_kl": 0.1}}, r"unknown key 'algo.target_kl' for train.backend: rllib; allowed: policy"),
        ({"algo": {"policy_kwargs": {"ortho_init": False}}}, r"unknown key 'algo.policy_kwargs.ortho_init'"),
        ({"algo": {"policy": "CnnPolicy"}}, r"key 'algo.policy' must be one of card, MlpPolicy, got 'CnnPolicy'"),
        ({"train": {"backend": "jax"}}, r"key 'train.backend' must be 'sb3' or 'rllib', got 'jax'"),
        ({"train": {"vec_env": "subproc"}}, r"key 'train.vec_env' does not apply to train.backend: rllib"),
        ({"train": {"n_envs": 64}}, r"key 'train.n_envs' does not apply to train.backend: rllib"),
        ({"ray": {"address": "auto", "num_cpus": 4}}, r"key 'ray.num_cpus' applies to a local Ray only"),
        ({"ray": {"address": "auto", "object_store_mb": 500}}, r"key 'ray.object_store_mb' applies to a local Ray"),
        ({"ray": {"address": "my cluster"}}, r"key 'ray.address' must be null .* got 'my cluster'"),
        ({"ray": {"num_env_runners": 3, "num_cpus": 2}}, r"key 'ray.num_env_runners': 3 runners .* need 3 CPUs"),
        ({"ray": {"num_envs_per_env_runner": 0}}, r"key 'ray.num_envs_per_env_runner' must be an integer >= 1, got 0"),
        ({"algo": {"batch_size": 1024}}, r"key 'algo.batch_size' \(1024\) is larger than the train batch .*\(256 "),
        ({"ray": {"num_gpus_per_learner": 1, "num_learners": 1}}, r"key 'ray.num_gpus_per_learner' asks for a GPU"),
    ],
)
def test_rllib_config_errors_name_key_and_file(tmp_path: Path, extra: dict, message: str) -> None:
    path = _write(tmp_path, extra)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path)
    assert str(info.value).startswith(str(path))


def test_ray_section_with_sb3_backend_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "sb3.yaml"
    path.write_text(yaml.safe_dump({"ray": {"num_env_runners": 4}}))
    with pytest.raises(ConfigError, match=r"section 'ray' applies to train.backend: rllib only"):
        load_config(path)


def test_shipped_rllib_configs_load() -> None:
    import ray

    from training.config.rllib_settings import num_envs, ppo_training_kwargs, train_batch_size

    cfg = load_config(ROOT / "configs" / "rllib_ppo_4p.yaml")
    assert cfg.train.backend == "rllib" and cfg.ray.num_env_runners == 2 and num_envs(cfg.ray) == 512
    assert cfg.ray.sampler == "batched"
    assert train_batch_size(cfg.algo, cfg.ray) == 16384
    kwargs = ppo_training_kwargs(cfg.algo, cfg.ray)
    assert kwargs["minibatch_size"] == 2048 and kwargs["num_epochs"] == 1 and kwargs["lr"] == 0.0003
    smoke = load_config(SMOKE)
    assert train_batch_size(smoke.algo, smoke.ray) == 256 and smoke.train.total_timesteps == 512
    assert not ray.is_initialized()  # checking a config never starts Ray


def test_bad_rllib_command_exits_2_before_ray(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "training.train", str(SMOKE), "--set", "ray.num_env_runners=-1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 2
    assert "config error" in out.stderr and "key 'ray.num_env_runners' must be an integer >= 0, got -1" in out.stderr


# --------------------------------------------------------------------------- RLlib's PettingZoo wrappers + PPO


@pytest.fixture(scope="module")
def local_ray():
    import ray

    ray.init(address="local", num_cpus=1, object_store_memory=RAY_MB, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.parametrize("wrapper", ["ParallelPettingZooEnv", "PettingZooEnv"])
def test_rllib_ppo_shared_policy_with_action_masking(local_ray, wrapper: str) -> None:
    """RLlib's documented path: its PettingZoo wrapper on our env (default keywords), its example
    action-masking RLModule, one policy shared by every seat, env checking on, two iterations."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
    from ray.tune.registry import register_env

    from sixnimmt_env.rllib_env import rllib_aec_env, rllib_parallel_env

    creator = rllib_parallel_env if wrapper == "ParallelPettingZooEnv" else rllib_aec_env
    register_env(f"sixnimmt_{wrapper}", creator)  # the tutorial's recipe: ParallelPettingZooEnv / PettingZooEnv
    assert type(creator({})).__name__ == wrapper
    config = (
        PPOConfig()
        .environment(f"sixnimmt_{wrapper}", env_config={"num_players": 4}, disable_env_checking=False)
        .env_runners(num_env_runners=0)
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, *args, **kwargs: "shared")
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={"shared": RLModuleSpec(module_class=ActionMaskingTorchRLModule)}
            )
        )
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        results = [algo.train() for _ in range(2)]
    finally:
        algo.stop()
    sampled = [r["env_runners"]["num_env_steps_sampled_lifetime"] for r in results]
    assert sampled[0] >= 200 and sampled[1] >= 400
    # rewards are minus the bullheads taken (R8, R9): a round costs the table something
    assert results[1]["env_runners"]["episode_return_mean"] < 0
    assert "shared" in results[1]["learners"]


# --------------------------------------------------------------------------- self-play through the policy mapping


def test_league_env_seats_rewards_and_seeds() -> None:
    """The league env: the learner and the snapshot seats are RLlib agents mapped to their modules, the other
    seats play inside; each agent's rewards sum to minus its seat's bullheads (R8, R9); same seed, same game."""
    from training.rllib.self_play import LEARNER_MODULE, LeagueEnv, league_mapping

    config = {
        "game": {"num_players": 4, "episode": "round"},
        "table_sizes": [4],
        "learner_seat": "random",
        "specs": ["greedy", "random"],
        "weights": [0.7, 0.3],
        "prob": 0.5,
        "pool_slots": 2,
        "filled": 0,
    }

    def play(env: LeagueEnv, seed: int) -> tuple[list[str], dict[str, float], list[int]]:
        rng = np.random.default_rng(seed)
        obs, _ = env.reset(seed=seed)
        agents, totals = list(env.agents), dict.fromkeys(env.agents, 0.0)
        while True:
            assert set(obs) <= set(agents) and all(o[MASK_KEY].any() and not o[MASK_KEY][-1] for o in obs.values())
            actions = {a: int(rng.choice(np.flatnonzero(o[MASK_KEY]))) for a, o in obs.items()}
            obs, rewards, terminateds, _, _ = env.step(actions)
            for a, r in rewards.items():
                totals[a] += r
            if terminateds["__all__"]:
                assert set(obs) == set(agents) and all(terminateds[a] for a in agents)
                return agents, totals, list(env.parallel.game_state.round_penalties)

    env = LeagueEnv(config)
    agents, _, _ = play(env, 0)
    assert len(agents) == 1 and agents[0].startswith("learner_")  # no snapshot yet: three in-env opponents
    env.set_filled(2)
    seen: set[str] = set()
    for seed in range(30):
        agents, totals, penalties = play(env, seed)
        assert sum(a.startswith("learner_") for a in agents) == 1
        assert all(totals[a] == -penalties[int(a.rsplit("_", 1)[1])] for a in agents)
        seen |= {league_mapping(a) for a in agents}
    assert seen == {LEARNER_MODULE, "snapshot0", "snapshot1"}
    assert play(LeagueEnv({**config, "filled": 2}), 7) == play(env, 7)
    with pytest.raises(ValueError, match=r"filled must be 0..2 \(pool_slots\), got 3"):
        env.set_filled(3)


LEAGUE_SEED1 = {  # seed 1: learner_1 and snapshot0_3 decide; seats 0 and 2 play "random" inside (drawing numbers)
    "game": {"num_players": 4, "episode": "round"},
    "table_sizes": [4],
    "learner_seat": 1,
    "specs": ["random"],
    "weights": [1.0],
    "prob": 0.5,
    "pool_slots": 1,
    "filled": 1,
}
LEARNER_LEGAL = [2, 4, 16, 22, 35, 36, 51, 59, 69, 73]  # player_1's hand at seed 1, as action indices (card - 1)
SNAPSHOT_LEGAL = [47, 54, 56, 60, 63, 66, 93, 94, 100, 101]  # player_3's


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        (  # int(2.5) would play card 3
            {"learner_1": 2.5, "snapshot0_3": 47},
            f"player_1: action 2.5 of type float is not an integer; legal actions: {LEARNER_LEGAL}",
        ),
        (
            {"learner_1": np.float32(2.0), "snapshot0_3": 47},
            f"player_1: action {np.float32(2.0)!r} of type float32 is not an integer; legal actions: {LEARNER_LEGAL}",
        ),
        (
            {"learner_1": 109, "snapshot0_3": 47},
            f"player_1: action 109 is outside 0..108; legal actions: {LEARNER_LEGAL}",
        ),
        (  # the learner's legal action is not played either
            {"learner_1": 2, "snapshot0_3": np.int64(48)},
            f"player_3: action 48 is not legal in phase 'select'; legal actions: {SNAPSHOT_LEGAL}",
        ),
        (  # a deciding agent left out plays the no-op
            {"learner_1": 2},
            f"player_3: action 108 is not legal in phase 'select'; legal actions: {SNAPSHOT_LEGAL}",
        ),
        (  # the first offender in seat order
            {"learner_1": 5, "snapshot0_3": 2.5},
            f"player_1: action 5 is not legal in phase 'select'; legal actions: {LEARNER_LEGAL}",
        ),
    ],
)
def test_league_env_rejects_a_bad_action_before_anyone_acts(actions: dict[str, Any], message: str) -> None:
    """A float (never truncated) or an illegal action of an RLlib agent is the learner-step contract's error
    (:mod:`sixnimmt_env.rules.learner_step`), raised before any seat acts: the in-env opponents draw no number,
    nothing is played, and the env then plays exactly as a twin that never saw the action."""
    from training.rllib.self_play import LeagueEnv

    env, twin = LeagueEnv(LEAGUE_SEED1), LeagueEnv(LEAGUE_SEED1)
    obs, _ = env.reset(seed=1)
    twin.reset(seed=1)
    assert {a: np.flatnonzero(o[MASK_KEY]).tolist() for a, o in obs.items()} == {
        "learner_1": LEARNER_LEGAL,
        "snapshot0_3": SNAPSHOT_LEGAL,
    }
    assert env.agents == ["learner_1", "snapshot0_3"]  # seats 0 and 2 play inside
    for _ in range(2):  # rejected again: still unchanged
        with pytest.raises(ValueError) as raised:
            env.step(actions)
        assert str(raised.value) == message

    def play_out(league: LeagueEnv) -> list[Any]:
        """The rest of the episode, every decider playing its lowest legal action, first ``learner_1: 2`` (card 3)
        and ``snapshot0_3: 47`` (card 48)."""
        trace: list[Any] = []
        actions = {"learner_1": 2, "snapshot0_3": 47}
        while True:
            obs, rewards, terminateds, _, _ = league.step(actions)
            trace.append(({a: (o[OBS_KEY].tolist(), o[MASK_KEY].tolist()) for a, o in obs.items()}, rewards))
            if terminateds["__all__"]:
                state = league.parallel.game_state
                return [*trace, list(state.round_penalties), list(state.totals), league._rng.random()]
            actions = {a: int(np.flatnonzero(o[MASK_KEY])[0]) for a, o in obs.items()}

    assert play_out(env) == play_out(twin)


def test_league_snapshot_module_plays_seats_and_is_not_trained(local_ray, tmp_path: Path) -> None:
    """Two iterations of the rllib_smoke config's league: after the snapshot (the learner's weights copied
    into slot 0), the snapshot module plays seats on the env runner and keeps its weights while the learner's
    module changes."""
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_MODULE_STEPS_SAMPLED

    from training.rllib.backend import algorithm_config, register_envs
    from training.rllib.self_play import LEARNER_MODULE, push_slots, snapshot_into_slot

    cfg = load_config(_write(tmp_path, {"ray": {"num_env_runners": 1, "num_envs_per_env_runner": 2}}))
    register_envs()
    algo = algorithm_config(cfg).build_algo()

    def weights(module_id: str) -> tuple[dict, list[dict]]:
        learner = algo.get_weights([module_id])[module_id]
        runners = algo.env_runner_group.foreach_env_runner(
            lambda r: r.module[module_id].get_state(), local_env_runner=False
        )
        return learner, runners

    def same(a: dict, b: dict) -> bool:  # b may be an env runner's inference-only subset of a
        return (
            len(b) > 0 and b.keys() <= a.keys() and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in b)
        )

    try:
        first = algo.train()[ENV_RUNNER_RESULTS][NUM_MODULE_STEPS_SAMPLED]
        assert first.get("snapshot0", 0) == 0 and first[LEARNER_MODULE] > 0  # no snapshot yet
        snapshot_into_slot(algo, 0, 1)
        learner_before, _ = weights(LEARNER_MODULE)
        snap_before, snap_runners = weights("snapshot0")
        assert (
            same(snap_before, learner_before)
            and snap_before.keys() == learner_before.keys()
            and all(same(snap_before, w) for w in snap_runners)
        )
        result = algo.train()
        steps = result[ENV_RUNNER_RESULTS][NUM_MODULE_STEPS_SAMPLED]
        assert steps["snapshot0"] > 0 and steps.get("snapshot1", 0) == 0  # one slot filled
        learner_after, _ = weights(LEARNER_MODULE)
        snap_after, snap_runners = weights("snapshot0")
        assert not same(learner_after, learner_before)  # the learner's module trained
        assert same(snap_after, snap_before) and all(same(snap_before, w) for w in snap_runners)
        algo.save_to_path(str(tmp_path / "ckpt"))
    finally:
        algo.stop()
    # a resumed run: the restored snapshot module plays on the env runners again (train.py's --resume)
    algo = algorithm_config(cfg, filled=1).build_algo()
    try:
        algo.restore_from_path(str(tmp_path / "ckpt"))
        push_slots(algo, 1)
        restored, restored_runners = weights("snapshot0")
        assert same(restored, snap_before) and all(same(snap_before, w) for w in restored_runners)
    finally:
        algo.stop()


# --------------------------------------------------------------------------- the rllib backend, end to end


def _train(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "training.train", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout
    )


def _run_dir(output: Path) -> Path:
    (run,) = (output / "rllib_smoke").iterdir()
    return run


def test_rllib_smoke_run_folder_resume_sigterm_and_arena(tmp_path: Path) -> None:
    # a relative output folder (RLlib's checkpoint code wants absolute paths: the backend resolves them)
    out = _train(str(SMOKE), "--set", "train.output_dir=runs", "--no-progress", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    run = _run_dir(tmp_path / "runs")
    for name in ("config.yaml", "command.txt", "eval.csv", "final_eval.csv", "report.md", "learning_curve.png"):
        assert (run / name).is_file(), name
    assert any((run / "tb").iterdir())
    for folder in ("final_model", "best_model"):
        assert (run / folder / "module_state.pkl").is_file() or (run / folder / "module_state.pt").is_file()
    checkpoints = sorted((run / "checkpoints").iterdir(), key=lambda p: int(p.name.split("_")[1]))
    progress = [json.loads((c / "progress.json").read_text()) for c in checkpoints]
    assert [p["iterations"] for p in progress] == [1, 2, 2][: len(progress)] and progress[-1]["iterations"] == 2
    assert progress[-1]["steps"] >= 512
    assert progress[-1]["snapshots"] == 2  # league slots filled by the run (snapshot_every 256)
    pool = list((run / "pool").iterdir())
    assert len(pool) == 2  # one snapshot per 256 steps, pool_size 2
    with (run / "eval.csv").open() as f:
        rows = list(__import__("csv").DictReader(f))
    assert len(rows) == 2 and rows[0]["lineup"] == "greedy,greedy,greedy" and rows[0]["games"] == "10"
    assert all(r["illegal_actions"] == "0" for r in rows)
    report = (run / "report.md").read_text()
    assert "Ray RLlib PPO" in report and "2 iterations" in report and "Illegal actions: 0" in report
    assert yaml.safe_load((run / "config.yaml").read_text())["train"]["backend"] == "rllib"

    # rllib:PATH in the arena, in a fresh process, without starting Ray
    code = (
        "import ray, json; from training.evaluate import evaluate_agents; "
        f"r = evaluate_agents(['rllib:{run / 'final_model'}', 'greedy', 'random'], games=12, seed=0); "
        "print(json.dumps([r['games'], r['illegal_actions'], r['agents'][0]['decisions'], ray.is_initialized()]))"
    )
    arena = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    games, illegal, decisions, ray_started = json.loads(arena.stdout.strip().splitlines()[-1])
    assert (games, illegal, ray_started) == (12, 0, False) and decisions >= 12 * 10

    # the evaluate command (make train's last step) takes the module folder, bare or as rllib:PATH, and the rules
    # of its run
    from training.evaluate import main as evaluate_main

    for n, checkpoint in enumerate([f"rllib:{run / 'final_model'}", str(run / "final_model")]):
        out = tmp_path / f"eval_cli_{n}"
        assert evaluate_main([checkpoint, "--games", "8", "--quiet", "--out", str(out)]) == 0
        result = json.loads((out / "results.json").read_text())
        assert result["games"] == 8 and result["illegal_actions"] == 0
        assert [a["agent"] for a in result["agents"]] == [f"rllib:{run / 'final_model'}", *["greedy"] * 3]
    assert evaluate_main([f"rllib:{run / 'no_such_model'}", "--games", "8"]) == 2

    # --resume with a larger budget, stopped by SIGTERM: a checkpoint past the first run's, exit 130
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["train"]["total_timesteps"] = 1_000_000
    config["eval"]["every"] = 1_000_000
    (run / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = subprocess.Popen(
        [sys.executable, "-m", "training.train", "--resume", str(run), "--no-progress"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and len(list((run / "checkpoints").iterdir())) <= len(checkpoints):
            assert proc.poll() is None, proc.stderr.read()[-3000:] if proc.stderr else ""
            time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    assert "SIGTERM: stopping after this iteration" in err and f"--resume {run}" in err
    last = max((run / "checkpoints").iterdir(), key=lambda p: int(p.name.split("_")[1]))
    state = json.loads((last / "progress.json").read_text())
    assert state["iterations"] >= 3 and state["steps"] > progress[-1]["steps"]
    assert len((run / "command.txt").read_text().splitlines()) == 2

    # a driver killed with SIGKILL (no clean-up, no last checkpoint): --resume goes on from its newest whole one,
    # losing at most the iterations since
    def whole() -> list[Path]:
        found = [c for c in (run / "checkpoints").glob("checkpoint_*_steps") if (c / "progress.json").is_file()]
        return sorted(found, key=lambda p: int(p.name.split("_")[1]))

    before = whole()[-1]
    proc = subprocess.Popen([sys.executable, "-m", "training.train", "--resume", str(run), "--no-progress"], cwd=ROOT)
    try:
        deadline = time.monotonic() + 180
        while whole()[-1] == before:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        proc.kill()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    newest = whole()[-1]
    state = json.loads((newest / "progress.json").read_text())
    budget = state["steps"] + 256
    out = _train("--resume", str(run), "--set", f"train.total_timesteps={budget}", "--no-progress")
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"resuming from {newest}" in out.stderr
    final = json.loads((whole()[-1] / "progress.json").read_text())
    assert final["iterations"] == state["iterations"] + 1 and final["steps"] >= budget


def test_rllib_agent_numpy_actor_matches_module(tmp_path: Path) -> None:
    import torch
    from gymnasium import spaces

    from sixnimmt_env.rllib_env import masked_space
    from training.rllib.module import CardRLModule
    from training.rllib.rllib_agents import RLlibAgent, load_rllib_agent

    box = spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32)
    for policy in ("card", "MlpPolicy"):
        module = CardRLModule(
            observation_space=masked_space(box),
            action_space=spaces.Discrete(NUM_ACTIONS),
            model_config={"policy": policy, "net_arch": [16, 8]},
        )
        module.save_to_path(str(tmp_path / policy))
        agent = load_rllib_agent(f"rllib:{tmp_path / policy}")
        assert isinstance(agent, RLlibAgent) and (agent.card_actor is not None) == (policy == "card")
        env = masked_parallel_env(num_players=4)
        obs, _ = env.reset(seed=2)
        x = np.stack([o[OBS_KEY] for o in obs.values()])
        mask = np.stack([o[MASK_KEY] for o in obs.values()])
        with torch.no_grad():
            out = module.forward_inference({"obs": {OBS_KEY: torch.as_tensor(x), MASK_KEY: torch.as_tensor(mask)}})
        torch_logits = out["action_dist_inputs"].numpy()
        np.testing.assert_allclose(agent.logits(x)[mask > 0], torch_logits[mask > 0], rtol=1e-4, atol=1e-5)
        assert (torch_logits[mask == 0] < -1e30).all()  # illegal actions masked
        chosen = agent.choose(x, mask)
        np.testing.assert_array_equal(chosen, torch_logits.argmax(axis=1))


def test_rllib_spec_errors() -> None:
    from sixnimmt_env.agents import make_agent

    with pytest.raises(ValueError, match=r"rllib checkpoint 'no/such/folder' not found"):
        make_agent("rllib:no/such/folder")
    with pytest.raises(ValueError, match=r"holds no RLModule"):
        make_agent(f"rllib:{ROOT / 'configs'}")


# --------------------------------------------------------------------------- a two-node cluster on this machine


def test_two_node_cluster_runs_env_runners_on_both_nodes(tmp_path: Path, loopback_ray: None) -> None:
    """A head and a worker node (Ray's own cluster test utility, 1 CPU each); `training.train` joins with
    ray.address and its 2 env runners (1 CPU each) land one per node; two iterations; the nodes are stopped."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "object_store_memory": RAY_MB, "include_dashboard": False, **LOOPBACK},
    )
    try:
        cluster.add_node(num_cpus=1, object_store_memory=RAY_MB, **LOOPBACK)
        cluster.wait_for_nodes()
        address = cluster.address
        out = _train(
            str(SMOKE),
            "--set",
            f"train.output_dir={tmp_path}",
            "--set",
            f"ray.address={address}",
            "--set",
            "train.total_timesteps=1024",
            "--set",
            "ray.num_env_runners=2",
            "--set",
            "self_play.enabled=false",
            "--no-progress",
        )
    finally:
        cluster.shutdown()
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Ray: 2 env runner(s) on 2 node(s)" in out.stderr
    run = _run_dir(tmp_path)
    report = (run / "report.md").read_text()
    assert f"Ray: {address}, 2 env runners x 4 envs on 2 node(s)" in report and "2 iterations" in report
    state = json.loads(
        (max((run / "checkpoints").iterdir(), key=lambda p: int(p.name.split("_")[1])) / "progress.json").read_text()
    )
    assert state["iterations"] == 2 and state["steps"] >= 512  # 2 runners x 4 envs x 64 steps = 512 per iteration
    assert os.environ.get("RAY_ADDRESS") is None


def _descendants(pids: set[int]) -> set[int]:
    """Every process below ``pids`` (from /proc's parent ids)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), set(pids)
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _env_runner_pids(cluster: Any) -> dict[int, str]:
    """The live env runner processes of ``cluster``'s nodes and what each runs now (Ray names an actor's process
    ``ray::CLASS`` while idle, ``ray::CLASS.METHOD`` while it runs a method, e.g. ``sample``)."""
    raylets = {p.process.pid for node in cluster.list_all_nodes() for p in node.all_processes["raylet"]}
    out = {}
    for pid in sorted(_descendants(raylets)):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except (OSError, UnicodeDecodeError):
            continue
        if title.startswith("ray::") and "EnvRunner" in title:
            out[pid] = title
    return out


def test_a_killed_env_runner_is_replaced_and_the_run_finishes(tmp_path: Path, loopback_ray: None) -> None:
    """One of two batched env runners (one per node of a 2-node cluster, self-play on) is killed with SIGKILL while
    the run iterates: training goes on with the other, RLlib's fault tolerance starts a new runner process that
    joins, and the run (stopped by SIGTERM once it has, then resumed) finishes its budget with a playable model."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "object_store_memory": RAY_MB, "include_dashboard": False, **LOOPBACK},
    )
    log = tmp_path / "stderr.txt"
    try:
        cluster.add_node(num_cpus=1, object_store_memory=RAY_MB, **LOOPBACK)
        cluster.wait_for_nodes()
        cmd = [sys.executable, "-m", "training.train", str(SMOKE), "--no-progress"]
        for key, value in {
            "train.output_dir": tmp_path,
            "ray.address": cluster.address,
            "ray.num_env_runners": 2,
            "ray.env_runner_restart_delay_s": 0,
            "ray.sampler": "batched",  # the restarted runner gets the snapshot pool again
            "self_play.snapshot_every": 2048,
            "train.total_timesteps": 10**7,  # stopped by SIGTERM below
            "eval.every": 10**9,
            "checkpoint.every": 10**9,
        }.items():
            cmd += ["--set", f"{key}={value}"]
        with log.open("w") as stderr:
            proc = subprocess.Popen(cmd, cwd=ROOT, stderr=stderr, stdout=subprocess.DEVNULL, text=True)
        try:
            deadline = time.monotonic() + 240

            def wait_for(text: str) -> None:
                while text not in log.read_text():
                    assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                    time.sleep(0.05)

            wait_for("Ray: 2 env runner(s) on 2 node(s)")  # built: the runners iterate from now on
            before = _env_runner_pids(cluster)
            sampling = [p for p, title in before.items() if title.endswith(".apply")]  # RLlib samples via `apply`
            for _ in range(100):
                if sampling:
                    break
                time.sleep(0.02)
                sampling = [p for p, title in _env_runner_pids(cluster).items() if title.endswith(".apply")]
            killed = (sampling or sorted(before))[0]
            os.kill(killed, signal.SIGKILL)
            wait_for("1 of 2 env runner(s) lost at ")
            wait_for("1 env runner(s) restarted; 2 of 2 healthy")
            after = _env_runner_pids(cluster)
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        err = log.read_text()
        assert proc.returncode == 130, err[-3000:]
        assert "training goes on with the others while RLlib restarts them" in err
        assert len(before) == 2 and killed not in after and len(set(after) - set(before)) == 1  # a new process
        (run,) = (tmp_path / "rllib_smoke").iterdir()
        (checkpoint,) = (run / "checkpoints").iterdir()  # written at SIGTERM
        state = json.loads((checkpoint / "progress.json").read_text())
        lost_at = int(err.split("1 of 2 env runner(s) lost at ")[1].split(" steps")[0].replace(",", ""))
        assert state["steps"] > lost_at  # trained on after the loss
        out = _train("--resume", str(run), "--set", f"train.total_timesteps={state['steps'] + 512}", "--no-progress")
    finally:
        cluster.shutdown()
    assert out.returncode == 0, out.stderr[-3000:]
    assert (run / "final_model").is_dir() and "Illegal actions: 0" in (run / "report.md").read_text()


def test_resume_takes_the_newest_whole_checkpoint(tmp_path: Path) -> None:
    """A driver killed while saving leaves a `.partial` folder (never read) or, from an older version, a folder
    without progress.json: --resume takes the newest whole checkpoint and names each one it skipped."""
    from training.rllib.backend import last_rllib_checkpoint

    ckpts = tmp_path / "checkpoints"
    for steps, whole in ((512, True), (1024, True), (1536, False)):
        folder = ckpts / f"checkpoint_{steps}_steps"
        (folder / "learner_group").mkdir(parents=True)
        if whole:
            (folder / "progress.json").write_text(json.dumps({"steps": steps}))
    (ckpts / "checkpoint_2048_steps.partial" / "learner_group").mkdir(parents=True)
    path, skipped = last_rllib_checkpoint(tmp_path)
    assert path == ckpts / "checkpoint_1024_steps"
    assert skipped == ["skipping damaged checkpoint checkpoint_1536_steps: no progress.json or learner_group/"]
    for folder in ckpts.glob("checkpoint_*_steps"):
        (folder / "progress.json").unlink(missing_ok=True)
    with pytest.raises(ConfigError, match=r"no whole checkpoint; skipping damaged checkpoint checkpoint_1536_steps"):
        last_rllib_checkpoint(tmp_path)
