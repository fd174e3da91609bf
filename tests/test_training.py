"""Training from YAML configs and checkpoint evaluation (`training/`)."""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
import yaml
from conftest import like_a_terminal
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecNormalize

from sixnimmt_env.gym_env import make_env
from sixnimmt_env.observation import OBS_SIZE
from training.config import ConfigError, load_config
from training.evaluate import evaluate_agents
from training.opponents import mixture_sampler
from training.ppo_agents import load_policy_agent, observation_from_view
from training.vec import EnvFactory, WorkerVecEnv, build_vec_env

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"


def _run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=os.environ.copy()
    )


def _tiny_model(tmp_path: Path) -> Path:
    """A MaskablePPO model trained for 128 steps, saved; returns the .zip path."""
    env = make_env(num_players=4, episode="round", opponents="greedy")
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, policy_kwargs={"net_arch": [16]}
    )
    model.learn(128)
    path = tmp_path / "tiny.zip"
    model.save(path)
    return path


# --------------------------------------------------------------------------- configs


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return path


def test_shipped_configs_load() -> None:
    names = {p.stem: load_config(p) for p in (ROOT / "configs").glob("*.yaml")}
    assert {"ppo_4p", "ppo_4p_game", "ppo_selfplay", "smoke"} <= set(names)
    assert names["ppo_4p"].env.num_players == 4 and names["ppo_4p"].env.episode == "round"
    assert names["ppo_4p"].self_play.enabled
    assert names["ppo_4p_game"].env.episode == "game" and names["ppo_4p_game"].env.end_score == 66
    assert names["ppo_selfplay"].env.table_sizes() == list(range(2, 11))


def test_unknown_key_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "train:\n  total_timestep: 10\n")
    typo = r"unknown key 'train\.total_timestep'; did you mean 'total_timesteps'\? "
    with pytest.raises(ConfigError, match=rf"cfg\.yaml: {typo}allowed keys here: total_timesteps, max_minutes, "):
        load_config(path)
    with pytest.raises(ConfigError, match=r"unknown key 'algo\.learnin_rate'"):
        load_config(SMOKE, ["algo.learnin_rate=1e-4"])
    with pytest.raises(ConfigError, match=r"unknown key 'evl'"):
        load_config(_write(tmp_path, "evl: {every: 10}\n"))


def test_wrong_type_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cfg\.yaml: key 'train\.n_envs' must be an integer >= 1, got 'four'"):
        load_config(_write(tmp_path, "train: {n_envs: four}\n"))
    with pytest.raises(ConfigError, match=r"key 'self_play\.enabled' must be true or false, got 'yes please'"):
        load_config(SMOKE, ["self_play.enabled=yes please"])
    with pytest.raises(ConfigError, match=r"key 'env\.episode' must be 'game' or 'round', got 'turn'"):
        load_config(SMOKE, ["env.episode=turn"])


def test_unknown_agent_names_the_key(tmp_path: Path) -> None:
    path = _write(tmp_path, "opponents:\n  - {agent: greedy}\n  - {agent: gredy, weight: 2}\n")
    with pytest.raises(ConfigError, match=r"cfg\.yaml: key 'opponents\[1\]\.agent': unknown agent spec 'gredy'"):
        load_config(path)
    with pytest.raises(ConfigError, match=r"key 'eval\.opponents\[0\]'.*'mc:x'"):
        load_config(SMOKE, ["eval.opponents=['greedy,mc:x,random']"])
    missing = re.escape(str(Path.cwd() / "missing.zip"))  # --set paths are relative to the current folder
    with pytest.raises(ConfigError, match=rf"checkpoint '{missing}' of agent 'ppo:{missing}' does not exist"):
        load_config(SMOKE, ["opponents=[{agent: 'ppo:missing.zip'}]"])


def test_overrides_are_yaml_values_not_code() -> None:
    cfg = load_config(SMOKE, ["algo.learning_rate=1e-4", "algo.policy_kwargs={net_arch: [8, 8]}", "train.seed=7"])
    assert cfg.algo.learning_rate == 1e-4 and cfg.algo.policy_kwargs.given_items() == {"net_arch": [8, 8]}
    assert cfg.train.seed == 7
    cfg = load_config(SMOKE, ["name=__import__('os').getcwd()"])
    assert cfg.name == "__import__('os').getcwd()"  # a plain string, never evaluated


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (["algo.verbose=1"], r"unknown key 'algo\.verbose'"),
        (
            ["algo.policy_kwargs.netarch=[32]"],
            r"unknown key 'algo\.policy_kwargs\.netarch'.*did you mean 'net_arch'\? allowed keys here: net_arch, act",
        ),
        (["algo.learning_rate=abc"], r"'algo\.learning_rate' must be a number >= 0\.0, got 'abc'"),
        (["algo.n_steps=0"], r"'algo\.n_steps' must be an integer >= 1, got 0"),
        (["algo.batch_size=true"], r"'algo\.batch_size' must be an integer >= 1, got True"),
        (["train.normalize_obs=true"], r"'train\.normalize_obs' must be false with card features"),
        (["algo.policy_kwargs.net_arch={pi: [16], vf: [64]}"], r"net_arch' must be a list of layer sizes"),
        (["algo.policy_kwargs.net_arch=32"], r"net_arch' must be a list of layer sizes .* got 32"),
    ],
)
def test_config_errors_name_the_key_before_anything_starts(override: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        load_config(SMOKE, override)
    assert "smoke.yaml" in str(err.value)


def test_every_vec_env_name_has_a_builder(tmp_path: Path) -> None:
    import typing

    from training.config.schema import TrainSection
    from training.vec import VEC_ENV_BUILDERS

    assert set(VEC_ENV_BUILDERS) == set(typing.get_args(typing.get_type_hints(TrainSection)["vec_env"]))
    message = r"smoke\.yaml: key 'train\.vec_env' must be 'dummy' or 'subproc' or 'batched'"
    with pytest.raises(ConfigError, match=message):
        load_config(SMOKE, ["train.vec_env=threads"])


# --------------------------------------------------------------------------- vector envs and masks


@pytest.mark.parametrize(
    ("kind", "workers", "normalize"),
    [("dummy", "null", False), ("subproc", "null", False), ("subproc", "1", False), ("dummy", "null", True)],
)
def test_masks_reach_maskable_ppo_through_each_stack(kind: str, workers: str, normalize: bool) -> None:
    cfg = load_config(
        SMOKE,
        [
            f"train.vec_env={kind}",
            f"train.n_workers={workers}",
            f"train.normalize_obs={str(normalize).lower()}",
            "train.n_envs=2",
            "algo.policy=MlpPolicy",  # normalised observations do not go with the card policy's features
        ],
    )
    venv = build_vec_env(cfg.env, cfg.train, mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw))
    try:
        assert isinstance(venv, VecNormalize) == normalize
        venv.seed(0)
        obs = venv.reset()
        assert obs.shape == (2, OBS_SIZE)
        rng = np.random.default_rng(0)
        for _ in range(40):
            masks = get_action_masks(venv)
            assert masks.shape == (2, 109) and masks.dtype == bool
            assert masks.sum(axis=1).min() >= 1 and not masks[:, 108].any()
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            obs, _, _, infos = venv.step(actions)
            assert not any(info["illegal_action"] for info in infos)
        model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=32, n_epochs=1, policy_kwargs={"net_arch": [8]})
        model.learn(64)
        assert model.num_timesteps == 64
    finally:
        venv.close()


def test_worker_vec_env_plays_the_same_games_as_dummy() -> None:
    """k envs per worker process (``subproc`` with ``n_workers``): same seeds, same actions -> the same observations,
    rewards, dones, masks and episode ends as SB3's DummyVecEnv, including auto-reset's terminal observations."""
    configs = [
        load_config(SMOKE, ["train.n_envs=5", *extra]) for extra in ([], ["train.vec_env=subproc", "train.n_workers=2"])
    ]
    stacks = [
        build_vec_env(cfg.env, cfg.train, mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw))
        for cfg in configs
    ]
    dummy, workers = stacks
    try:
        assert isinstance(workers, WorkerVecEnv) and workers.num_envs == 5
        for venv in stacks:
            venv.seed(3)
        assert np.array_equal(dummy.reset(), workers.reset())
        rng = np.random.default_rng(1)
        ends = 0
        for _ in range(60):
            masks = get_action_masks(dummy)
            assert np.array_equal(masks, get_action_masks(workers))
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            (obs_d, rew_d, done_d, info_d), (obs_w, rew_w, done_w, info_w) = dummy.step(actions), workers.step(actions)
            assert np.array_equal(obs_d, obs_w) and np.array_equal(rew_d, rew_w) and np.array_equal(done_d, done_w)
            for i in np.flatnonzero(done_d):
                assert np.array_equal(info_d[i]["terminal_observation"], info_w[i]["terminal_observation"])
                assert (
                    info_d[i]["episode"]["r"]
                    == info_w[i]["episode"]["r"]
                    == -info_d[i]["round_penalties"][info_d[i]["learner_seat"]]
                )
                ends += 1
        assert ends >= 20  # 60 steps of 5 envs, 10-11 decisions per round
        assert workers.get_attr("learner_seat", [4]) == dummy.get_attr("learner_seat", [4])
        assert workers.env_method("action_masks", indices=[1, 3])[1].shape == (109,)
        assert workers.has_attr("set_opponents") and workers.env_is_wrapped(Monitor) == [True] * 5
    finally:
        for venv in stacks:
            venv.close()
    sampler = mixture_sampler(configs[0].opponents, configs[0].self_play, configs[0].train.opponent_draw)
    with pytest.raises(ValueError, match=r"n_workers must be 1\.\.2 \(the number of envs\), got 3"):
        WorkerVecEnv([EnvFactory({"num_players": 4}, "random", sampler, None)] * 2, 3)


# --------------------------------------------------------------------------- checkpoints


def test_checkpoint_save_load_gives_the_same_actions(tmp_path: Path) -> None:
    path = _tiny_model(tmp_path)
    model = MaskablePPO.load(path)
    agent = load_policy_agent(f"ppo:{path}")
    env = make_env(num_players=4, episode="round", opponents="random")
    observations, masks = [], []
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            mask = env.action_masks()
            observations.append(obs)
            masks.append(mask)
            obs, _, done, _, _ = env.step(int(np.flatnonzero(mask)[0]))
    obs_b, mask_b = np.array(observations), np.array(masks)
    expected, _ = model.predict(obs_b, deterministic=True, action_masks=mask_b)
    got = agent.choose(obs_b, mask_b)
    assert len(got) >= 40 and np.array_equal(got, expected)  # 10 cards a round, plus low-card row choices
    assert mask_b[np.arange(len(got)), got].all()
    # the numpy actor (used for decisions) computes the torch actor's logits
    assert agent.layers is not None
    with torch.no_grad():  # torch's Categorical keeps log-softmax-normalised logits
        torch_logits = model.policy.get_distribution(torch.as_tensor(obs_b)).distribution.logits.numpy()
    ours = agent.logits(obs_b).astype(np.float64)
    ours -= np.log(np.exp(ours).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(ours, torch_logits, rtol=0, atol=1e-5)


def test_sample_masked_draws_from_the_masked_softmax() -> None:
    """``ppo-sample`` and ``champion-sample`` decisions: one uniform per row, the legal action where the masked
    softmax's cumulative probability reaches it; the frequencies of 200,000 draws match the probabilities."""
    from sixnimmt_env.champion import sample_masked

    logits = np.array([[0.0, 1.0, 2.0, 50.0, np.log(3.0)], [5.0, 0.0, 0.0, 0.0, 0.0]], np.float32)
    mask = np.array([[1, 1, 0, 0, 1], [0, 0, 0, 0, 0]], np.int8)
    # probabilities of row 0 over actions 0, 1, 4: 1, e, 3 over 4 + e; row 1 has no legal action
    edges = np.array([1.0, 1.0 + np.e]) / (4.0 + np.e)
    u = np.array([edges[0] - 1e-6, 0.0])
    assert sample_masked(logits, mask, u).tolist() == [0, -1]
    assert sample_masked(logits[:1], mask[:1], np.array([edges[0] + 1e-6])).tolist() == [1]
    assert sample_masked(logits[:1], mask[:1], np.array([edges[1] + 1e-6])).tolist() == [4]
    assert sample_masked(logits[:1], mask[:1], np.array([np.nextafter(1.0, 0.0)])).tolist() == [4]
    n = 200_000
    draws = sample_masked(np.repeat(logits[:1], n, 0), np.repeat(mask[:1], n, 0), np.random.default_rng(0).random(n))
    counts = np.bincount(draws, minlength=5) / n
    np.testing.assert_allclose(counts, [1 / (4 + np.e), np.e / (4 + np.e), 0, 0, 3 / (4 + np.e)], atol=0.004)


def test_policy_agent_decides_the_same_on_observations_and_on_views(tmp_path: Path) -> None:
    """As a Gymnasium opponent a checkpoint reads its seat's observation; in the arena, its view: same actions,
    also when sampling with the same generator."""
    from sixnimmt_env import parallel_env

    path = _tiny_model(tmp_path)
    for spec in (f"ppo:{path}", f"ppo-sample:{path}"):
        agent = load_policy_agent(spec)
        env = parallel_env(num_players=4, episode="round", infos="view")
        observations, infos = env.reset(seed=2)
        rng = np.random.default_rng(0)
        decisions = 0
        while env.agents:
            actions = {}
            for name in env.agents:
                ob = observations[name]
                state = rng.bit_generator.state
                by_view = agent.act(infos[name], rng)
                rng.bit_generator.state = state
                by_obs = (
                    agent.act_observation(ob["observation"], ob["action_mask"], rng) if infos[name]["must_act"] else 108
                )
                assert by_view == by_obs and ob["action_mask"][by_obs] == 1
                decisions += infos[name]["must_act"]
                actions[name] = by_obs
            observations, _, _, _, infos = env.step(actions)
        assert decisions >= 40


def test_observation_from_view_equals_the_envs_observation() -> None:
    from sixnimmt_env import parallel_env

    env = parallel_env(num_players=5, variant="logic", episode="round", row_choice="cheapest", infos="view")
    observations, infos = env.reset(seed=4)
    rng = np.random.default_rng(0)
    checked = 0
    while env.agents:
        for name in env.agents:
            assert np.array_equal(observation_from_view(infos[name]), observations[name]["observation"])
            checked += 1
        actions = {n: int(rng.choice(np.flatnonzero(observations[n]["action_mask"]))) for n in env.agents}
        observations, _, _, _, infos = env.step(actions)
    assert checked == 5 * (50 + 10)  # 50 draft picks (V2), then 10 turns (the engine chooses rows: R9b cheapest)


def test_zero_illegal_actions_in_a_full_evaluation(tmp_path: Path) -> None:
    path = _tiny_model(tmp_path)
    results = evaluate_agents([f"ppo:{path}", "greedy", "greedy", "greedy"], games=40)
    assert results["illegal_actions"] == 0
    # every game is a single round: the checkpoint plays 10 cards in each of 40 games, plus its row choices
    me = results["agents"][0]
    assert me["decisions"] >= 400 and me["illegal_actions"] == 0
    # the same policy driving the Gymnasium env through masks never triggers the illegal-action end
    model = MaskablePPO.load(path)
    env = gymnasium.make("sixnimmt/SixNimmt-v0", num_players=4, episode="round", opponents="greedy")
    for seed in range(10):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            action, _ = model.predict(obs, deterministic=True, action_masks=env.unwrapped.action_masks())
            obs, _, done, _, info = env.step(int(action))
            assert not info["illegal_action"]


def test_bad_checkpoints_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"ppo checkpoint '.*nothing\.zip' not found"):
        load_policy_agent(f"ppo:{tmp_path / 'nothing.zip'}")
    corrupt = tmp_path / "corrupt.zip"
    corrupt.write_bytes(b"not a zip at all")
    with pytest.raises(ValueError, match=r"not a MaskablePPO \.zip checkpoint"):
        load_policy_agent(f"ppo:{corrupt}")
    other = gymnasium.make("CartPole-v1")
    small = MaskablePPO("MlpPolicy", gymnasium.wrappers.TransformReward(other, float), n_steps=8, batch_size=8)
    wrong = tmp_path / "cartpole.zip"
    small.save(wrong)
    with pytest.raises(ValueError, match=r"trained for observations of shape \(4,\).*\(506,\)"):
        load_policy_agent(f"ppo:{wrong}")
    result = _run("-m", "training.evaluate", str(wrong), "--games", "10")
    assert result.returncode == 2 and "trained for observations of shape (4,)" in result.stderr


# --------------------------------------------------------------------------- the scripts


def test_smoke_run_then_evaluate_and_resume(tmp_path: Path) -> None:
    result = _run("-m", "training.train", str(SMOKE), "--no-progress", "--set", f"train.output_dir={tmp_path}")
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = (tmp_path / "smoke").iterdir()
    for name in ("config.yaml", "command.txt", "best_model.zip", "final_model.zip", "eval.csv", "final_eval.csv"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "learning_curve.png").stat().st_size > 1000
    assert "Against greedy,greedy,greedy" in (run_dir / "report.md").read_text()
    assert sorted(p.name for p in (run_dir / "monitor").iterdir()) == [f"{i}.monitor.csv" for i in range(4)]
    assert list((run_dir / "tb").iterdir())
    # snapshots at 1024, 2048 and 3072 steps; the pool keeps the last pool_size (2)
    assert sorted(p.name for p in (run_dir / "pool").iterdir()) == [f"snapshot_{k}.zip" for k in (2048, 3072)]
    resolved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert resolved["train"]["output_dir"] == str(tmp_path) and resolved["name"] == "smoke"
    with (run_dir / "eval.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows] == [1024, 2048, 3072]
    assert all(r["illegal_actions"] == "0" and 0 < float(r["mean_penalty"]) < 60 for r in rows)

    out = tmp_path / "eval_out"
    best = run_dir / "best_model.zip"
    args = ("-m", "training.evaluate", str(best), "--opponents", "greedy,random,greedy", "--games", "30")
    result = _run(*args, "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    counts = re.search(
        r"illegal actions: 0 in ([\d,]+) decisions of all agents \(([\d,]+) of the checkpoints\)", result.stdout
    )
    assert counts, result.stdout[-2000:]
    everyone, learned = (int(c.replace(",", "")) for c in counts.groups())
    assert learned >= 300 and everyone >= 4 * 300  # 30 single rounds of 10 cards, 4 seats (plus row choices)
    assert learned < everyone / 2
    assert (out / "results.json").is_file() and (out / "results.png").is_file()
    result = _run(
        "-m",
        "training.evaluate",
        "--agents",
        f"ppo:{best},ppo:{best},greedy,greedy",
        "--games",
        "12",
        "--out",
        str(out),
    )
    assert result.returncode == 2 and "already holds results" in result.stderr  # never overwritten silently
    assert (
        "was trained for 4 players"
        in _run("-m", "training.evaluate", "--agents", f"ppo:{best},ppo:{best},greedy", "--games", "12").stderr
    )  # a 3-seat table for a 4-player run must be asked for with --players
    result = _run(
        "-m", "training.evaluate", "--agents", f"ppo:{best},ppo:{best},greedy", "--games", "12", "--players", "3",
        "--out", str(tmp_path / "eval_3"),
    )  # fmt: skip
    assert result.returncode == 0 and result.stdout.count(f"ppo:{best}") >= 2

    # resume from an earlier checkpoint: training continues to the budget and the run is completed again
    (run_dir / "checkpoints" / "model_3072_steps.zip").unlink()
    (run_dir / "final_model.zip").unlink()
    result = _run("-m", "training.train", "--resume", str(run_dir), "--no-progress")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (run_dir / "checkpoints" / "model_3072_steps.zip").is_file() and (run_dir / "final_model.zip").is_file()
    assert len((run_dir / "command.txt").read_text().splitlines()) == 2


def test_train_refuses_a_bad_config_before_starting(tmp_path: Path) -> None:
    result = _run("-m", "training.train", str(SMOKE), "--set", "train.n_env=2", "--set", f"train.output_dir={tmp_path}")
    assert result.returncode == 2
    assert "smoke.yaml" in result.stderr and "unknown key 'train.n_env'" in result.stderr
    assert not any(tmp_path.iterdir())


def test_ctrl_c_during_a_checkpoint_waits_for_the_whole_file(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Ctrl-C that lands while a checkpoint is written is raised after the file is whole and in place (the run's
    handler then saves its own checkpoint); nothing half-written is left, under the final name or beside it."""
    from training.callbacks import save_model

    # Python's own Ctrl-C handler, whatever an earlier test in this process left (Ray's driver installs its own)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    env = make_env(num_players=4, episode="round", opponents="random")
    model = MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=16, seed=0, device="cpu")
    real_save = model.save
    calls: list[Path] = []

    def save_then_ctrl_c(path: Path) -> None:
        calls.append(Path(path))
        os.kill(os.getpid(), signal.SIGINT)  # arrives in the middle of the write
        real_save(path)

    model.save = save_then_ctrl_c  # type: ignore[method-assign]
    target = tmp_path / "checkpoints" / "model_2048_steps.zip"
    with pytest.raises(KeyboardInterrupt):
        save_model(model, target)
    assert calls == [tmp_path / "checkpoints" / ".model_2048_steps.partial.zip"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["model_2048_steps.zip"]
    loaded = MaskablePPO.load(target)
    for ours, theirs in zip(loaded.policy.parameters(), model.policy.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # nothing left blocked or replaced
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.1)


def test_ctrl_c_saves_a_checkpoint(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "training.train", str(SMOKE), "--no-progress"]
    args += ["--set", f"train.output_dir={tmp_path}", "--set", "train.total_timesteps=10000000"]
    proc = subprocess.Popen(args, cwd=ROOT, stderr=subprocess.PIPE, text=True, preexec_fn=like_a_terminal)
    run_dirs: list[Path] = []
    # training has begun once the first periodic checkpoint exists; on a fresh clone numba compiles first, which
    # takes minutes on a loaded machine: wait for it, and time only the answer to Ctrl-C
    deadline = time.time() + 900
    while time.time() < deadline and not any((d / "checkpoints").is_dir() for d in run_dirs):
        time.sleep(0.5)
        run_dirs = list((tmp_path / "smoke").glob("*")) if (tmp_path / "smoke").is_dir() else []
    if not any((d / "checkpoints").is_dir() for d in run_dirs):
        proc.kill()
        pytest.fail(f"no checkpoint within 900 s: {proc.communicate()[1][-2000:]}")
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()  # leave nothing running behind a failed test
        proc.communicate()
        raise
    assert proc.returncode == 130, err[-2000:]
    assert "--resume" in err
    (run_dir,) = run_dirs
    steps = [int(p.stem.split("_")[1]) for p in (run_dir / "checkpoints").glob("model_*_steps.zip")]
    assert max(steps) >= 2048  # the checkpoint written at Ctrl-C, at or after the periodic one of step 2048
    assert (run_dir / "config.yaml").is_file() and not (run_dir / "final_model.zip").exists()


@pytest.mark.slow
@pytest.mark.parametrize("config", ["ppo_4p", "ppo_4p_batched"])
def test_config_beats_three_greedy(tmp_path: Path, config: str) -> None:
    """The strength target: configs/ppo_4p.yaml (15 min on 2 cores) or ppo_4p_batched.yaml (5 min) trained, then
    5000 single rounds against three greedy agents with rotated seats: the learner's 95% interval lies wholly
    below greedy's."""
    result = _run(
        "-m", "training.train", f"configs/{config}.yaml", "--no-progress", "--set", f"train.output_dir={tmp_path}",
        timeout=1500,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = (tmp_path / config).iterdir()
    results = evaluate_agents([f"ppo:{run_dir / 'final_model.zip'}", "greedy", "greedy", "greedy"], games=5000)
    me, greedy = results["agents"][0], results["agents"][1:]
    assert results["illegal_actions"] == 0
    assert all(me["mean_penalty"] + me["ci95"] < g["mean_penalty"] - g["ci95"] for g in greedy)


def test_integral_floats_are_accepted_for_integer_keys():
    from training.config import ConfigError, load_config

    cfg = load_config(ROOT / "configs" / "smoke.yaml", ["train.total_timesteps=1e4"])
    assert cfg.train.total_timesteps == 10_000 and isinstance(cfg.train.total_timesteps, int)
    with pytest.raises(ConfigError, match=r"train\.total_timesteps' must be an integer >= 1, got 2\.5"):
        load_config(ROOT / "configs" / "smoke.yaml", ["train.total_timesteps=2.5"])


def test_ppo_specs_load_through_the_entry_point_without_importing_training_first():
    # a fresh interpreter: only sixnimmt_env is imported; the "ppo" prefix comes from the installed entry point
    code = (
        "import sys\n"
        "from sixnimmt_env.agents import make_agent\n"
        "assert 'training.ppo_agents' not in sys.modules\n"
        "try:\n"
        "    make_agent('ppo:/nonexistent/model.zip')\n"
        "except ValueError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "unknown agent spec" not in out.stdout
    assert "/nonexistent/model.zip" in out.stdout


def test_resume_from_a_damaged_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "config.yaml").write_text(SMOKE.read_text())
    (run_dir / "checkpoints" / "model_2048_steps.zip").write_bytes(b"not a checkpoint")
    result = _run("-m", "training.train", "--resume", str(run_dir), timeout=120)
    assert result.returncode == 2
    assert "config error: --resume" in result.stderr and "model_2048_steps.zip" in result.stderr
    assert "is not a MaskablePPO .zip checkpoint" in result.stderr and "Traceback" not in result.stderr


def test_evaluate_rejects_an_empty_agent_entry() -> None:
    result = _run("-m", "training.evaluate", "--agents", "greedy,,greedy,random", "--games", "10", timeout=60)
    assert result.returncode == 2
    assert "--agents 'greedy,,greedy,random' has an empty entry" in result.stderr


def test_algo_section_defaults_are_maskable_ppos_and_the_env_section_is_game_configs() -> None:
    import dataclasses
    import inspect

    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from sixnimmt_env.rules.engine import GameConfig
    from training.config.schema import TRAINING_GAME_DEFAULTS, AlgoSection, EnvSection, PolicyKwargs

    ppo = inspect.signature(MaskablePPO.__init__).parameters
    for name in AlgoSection.model_fields:
        if name not in ("policy", "policy_kwargs"):
            assert getattr(AlgoSection(), name) == ppo[name].default, name
    from training.policy import CardPolicy

    policy = inspect.signature(MaskableActorCriticPolicy.__init__).parameters
    card = inspect.signature(CardPolicy.__init__).parameters
    card_only = set(card) - set(policy) - {"args", "kwargs"}
    assert card_only == {"hand_attention_heads", "residual"}
    for name in PolicyKwargs.model_fields:
        if name not in ("activation_fn", "features_extractor_class"):
            default = (card if name in card_only else policy)[name].default
            assert getattr(PolicyKwargs(), name) == default, name
    assert PolicyKwargs().activation_fn == policy["activation_fn"].default.__name__.lower()
    game = {f.name: f.default for f in dataclasses.fields(GameConfig)}
    env = {name: f.default for name, f in EnvSection.model_fields.items()}
    assert env == {**game, **TRAINING_GAME_DEFAULTS, "learner_seat": "random"}
    assert TRAINING_GAME_DEFAULTS == {"episode": "round"}


@pytest.mark.parametrize("path", sorted(Path(__file__).parent.parent.glob("configs/*.yaml")), ids=lambda p: p.name)
def test_a_dumped_config_reloads_to_the_same_config(path: Path, tmp_path: Path) -> None:
    from training.config import dump_config

    cfg = load_config(path)
    dump_config(cfg, tmp_path / "config.yaml")
    again = load_config(tmp_path / "config.yaml")
    assert again == cfg and again.algo.model_fields_set == cfg.algo.model_fields_set
    assert again.algo.policy_kwargs.model_fields_set == cfg.algo.policy_kwargs.model_fields_set
    assert again.to_dict() == cfg.to_dict()
    assert again.name == path.stem  # the run's name, saved, is the file's stem, not the run folder's file's


def test_the_snapshot_pool_keeps_the_newest_snapshots(tmp_path: Path) -> None:
    from training.opponents import SnapshotPool

    folder = tmp_path / "pool"
    folder.mkdir()
    for steps in (30, 100, 200):
        (folder / f"snapshot_{steps}.zip").write_bytes(b"")
    (folder / "snapshot_30.obsnorm.npz").write_bytes(b"")
    pool = SnapshotPool(folder, 2)
    assert pool.paths == [str(folder / "snapshot_100.zip"), str(folder / "snapshot_200.zip")]
    assert sorted(p.name for p in folder.iterdir()) == ["snapshot_100.zip", "snapshot_200.zip"]
    pool.path_for(300).write_bytes(b"")
    pool.add(pool.path_for(300))
    assert pool.paths == [str(folder / "snapshot_200.zip"), str(folder / "snapshot_300.zip")]
    assert (folder / "snapshot_100.zip").is_file()  # evicted, deleted only by prune
    assert pool.prune() == pool.paths and not (folder / "snapshot_100.zip").exists()


@pytest.mark.parametrize("module", ["training.train"])
def test_training_commands_run_numpy_with_one_blas_thread(module: str) -> None:
    """The training commands set OPENBLAS_NUM_THREADS=1 before numpy loads (the policy opponents' forward passes
    run on the training process's core; a second BLAS thread only contends), unless the user set it (the lab's
    ``lab.train_champion``: lab/tests/test_train_champion.py; ``sixnimmt train``: tests/test_cli.py)."""
    code = (  # the variable as numpy is first imported (a finder that only looks), then after the command
        "import os, runpy, sys\n"
        "seen = []\n"
        "class Look:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numpy' and not seen:\n"
        "            seen.append(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
        "sys.meta_path.insert(0, Look())\n"
        "assert 'numpy' not in sys.modules\n"
        f"sys.argv = ['{module}', '--help']\n"
        "try:\n"
        f"    runpy.run_module('{module}', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(seen[0], os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    run = [sys.executable, "-c", code]
    out = subprocess.run(run, env=env, capture_output=True, text=True, check=True, timeout=120).stdout
    assert out.split()[-3:] == ["1", "1", "True"]
    env["OPENBLAS_NUM_THREADS"] = "2"
    out = subprocess.run(run, env=env, capture_output=True, text=True, check=True, timeout=120).stdout
    assert out.split()[-3:] == ["2", "2", "True"]


# --------------------------------------------------------------------------- the learning curve


def test_lineup_labels_count_equal_neighbours_and_shorten_paths() -> None:
    from training.evaluate import lineup_labels

    long = "champion:sixnimmt_env/weights/default_ppo_4p.npz"
    assert lineup_labels(["mc:64,mc:64,mc:64"]) == ["3 × mc:64"]
    assert lineup_labels(["greedy, lowest,random"]) == ["greedy, lowest, random"]
    assert lineup_labels([f"{long},greedy,greedy"]) == ["champion:default_ppo_4p.npz, 2 × greedy"]
    assert lineup_labels([f"{long},{long},{long}"]) == ["3 × champion:default_ppo_4p.npz"]
    # two checkpoints with one file name, in different line-ups: told apart by their folders
    assert lineup_labels(["ppo:runs/a/best_model.zip,greedy", "ppo:runs/b/best_model.zip,greedy"]) == [
        "ppo:a/best_model, greedy",
        "ppo:b/best_model, greedy",
    ]


def test_a_learning_curve_with_long_lineups_keeps_its_axes_wide(tmp_path: Path) -> None:
    from training.evaluate import learning_curve_figure, plot_learning_curve

    long = "champion:sixnimmt_env/weights/default_ppo_4p.npz"
    lineups = ["mc:64,mc:64,mc:64", f"{long},{long},{long}", "greedy,greedy,greedy"]
    rows = [
        {"step": str(step), "lineup": lineup, "mean_penalty": "9.5", "ci95": "0.6", "opponents_mean_penalty": "12.5"}
        for step in (8_000_000, 16_000_000)
        for lineup in lineups
    ]
    fig = learning_curve_figure(rows)
    fig.draw_without_rendering()  # constrained layout places the axes and the legend
    (ax,) = fig.axes
    box = ax.get_position()
    assert box.width > 0.8  # the legend sits under the axes, not beside them (it took all but 1 % before)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == [
        "learner vs 3 × mc:64",
        "3 × mc:64 (their mean)",
        "learner vs 3 × champion:default_ppo_4p.npz",
        "3 × champion:default_ppo_4p.npz (their mean)",
        "learner vs 3 × greedy",
        "3 × greedy (their mean)",
    ]
    assert ax.xaxis.get_major_formatter()(8_000_000, 0) == "8 M"
    assert ax.xaxis.get_major_formatter()(1_500, 0) == "1.5 k"  # short runs read in thousands
    csv_path = tmp_path / "eval.csv"
    csv_path.write_text("step,lineup,mean_penalty,ci95,opponents_mean_penalty\n")
    assert plot_learning_curve(csv_path, tmp_path / "lc.png") is None  # no rows: no picture


def test_final_model_is_the_mean_of_the_last_checkpoints(tmp_path: Path) -> None:
    from stable_baselines3.common.save_util import load_from_zip_file

    from training.sb3_backend import average_checkpoints

    result = _run(
        "-m", "training.train", str(SMOKE), "--no-progress", "--set", f"train.output_dir={tmp_path}",
        "--set", "checkpoint.every=1024", "--set", "checkpoint.average=2", "--set", "eval.final_games=10",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = (tmp_path / "smoke").iterdir()
    ckpts = sorted((run_dir / "checkpoints").iterdir())
    assert [p.name for p in ckpts] == [f"model_{k}_steps.zip" for k in (1024, 2048, 3072)]

    def policy(path: Path) -> dict[str, torch.Tensor]:
        return load_from_zip_file(path, load_data=False, device="cpu")[1]["policy"]

    final, last, before = policy(run_dir / "final_model.zip"), policy(ckpts[2]), policy(ckpts[1])
    weights = [k for k, v in final.items() if v.is_floating_point()]
    assert len(weights) >= 6
    for k in weights:
        torch.testing.assert_close(final[k], (last[k].double() + before[k].double()).div(2).to(final[k].dtype))
    assert any(not torch.equal(last[k], before[k]) for k in weights)  # the two checkpoints differ: a real mean
    report = (run_dir / "report.md").read_text()
    assert "the mean of the weights of model_3072_steps.zip, model_2048_steps.zip" in report
    assert sorted(average_checkpoints([ckpts[0]])) == sorted(final)  # one checkpoint: its own weights
    with pytest.raises(ValueError, match="no checkpoint"):
        average_checkpoints([])


def test_checkpoint_average_is_sb3_only(tmp_path: Path) -> None:
    raw = yaml.safe_load(SMOKE.read_text())
    raw["checkpoint"]["average"] = 3
    raw["train"]["backend"] = "rllib"
    path = tmp_path / "avg.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=r"'checkpoint.average' 3 applies to train.backend: sb3 only"):
        load_config(path)


def test_one_spec_eval_lineup_fills_the_table(tmp_path: Path) -> None:
    raw = yaml.safe_load(SMOKE.read_text())
    raw["eval"]["opponents"] = ["greedy", "random,greedy"]
    path = tmp_path / "fill.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=r"'eval.opponents\[1\]' seats 3 players .* env.num_players is 6"):
        load_config(path, ["env.num_players=6"])
    raw["eval"]["opponents"] = ["greedy", "mc:8"]
    path.write_text(yaml.safe_dump(raw))
    six = load_config(path, ["env.num_players=6"]).eval.opponents
    assert six == ["greedy,greedy,greedy,greedy,greedy", "mc:8,mc:8,mc:8,mc:8,mc:8"]
    assert load_config(path).eval.opponents == ["greedy,greedy,greedy", "mc:8,mc:8,mc:8"]
    assert load_config(path, ["env.num_players=2"]).eval.opponents == ["greedy", "mc:8"]


def test_spaced_checkpoints_skip_the_periodic_one_just_before_the_end(tmp_path: Path) -> None:
    from training.sb3_backend import spaced_checkpoints

    (tmp_path / "checkpoints").mkdir()
    for steps in (2000896, 4000768, 6000640, 6015488):
        (tmp_path / "checkpoints" / f"model_{steps}_steps.zip").write_bytes(b"")
    names = [p.name for p in spaced_checkpoints(tmp_path, 3, 2_000_000)]
    assert names == ["model_6015488_steps.zip", "model_4000768_steps.zip", "model_2000896_steps.zip"]
    assert [p.name for p in spaced_checkpoints(tmp_path, 9, 2_000_000)] == names
    assert len(spaced_checkpoints(tmp_path, 9, 10_000)) == 4
