"""Training configs (training/config/): inheritance, paths relative to the config file, baseline names, and the
saved config of a run folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sixnimmt_env.champion import BASELINES, WEIGHTS
from training.config import ConfigError, dump_config, load_config

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_loads_and_its_saved_copy_reloads_from_a_run_folder(path: Path, tmp_path: Path) -> None:
    cfg = load_config(path)
    assert cfg.name == path.stem
    run_dir = tmp_path / "runs" / cfg.name / "20260101-000000"  # another folder than the config's
    run_dir.mkdir(parents=True)
    dump_config(cfg, run_dir / "config.yaml")
    assert "base" not in yaml.safe_load((run_dir / "config.yaml").read_text())  # saved resolved, inheritance done
    again = load_config(run_dir / "config.yaml")
    assert again == cfg
    assert again.algo.model_fields_set == cfg.algo.model_fields_set


def test_base_errors_name_the_file(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.yaml", "base: b.yaml\ntrain: {seed: 1}\n")
    _write(tmp_path / "b.yaml", "base: a.yaml\n")
    with pytest.raises(ConfigError, match=r"b\.yaml: key 'base' 'a\.yaml' includes b\.yaml again \(a cycle"):
        load_config(a)
    c = _write(tmp_path / "c.yaml", "base: missing.yaml\n")
    with pytest.raises(ConfigError, match=rf"{tmp_path / 'missing.yaml'}: config file not found \(the base of "):
        load_config(c)
    d = _write(tmp_path / "d.yaml", "base: [a.yaml]\n")
    with pytest.raises(ConfigError, match=r"d\.yaml: key 'base' must be the file name of another config"):
        load_config(d)
    e = _write(tmp_path / "e.yaml", "base: f.yaml\n")
    _write(tmp_path / "f.yaml", "train: {n_envs: many}\n")
    with pytest.raises(ConfigError, match=r"e\.yaml: key 'train\.n_envs' must be an integer >= 1, got 'many'"):
        load_config(e)


def test_paths_in_a_config_are_relative_to_its_folder_not_the_current_one(tmp_path: Path) -> None:
    """A config and its weights in one folder, a base config in a sibling folder: loaded from a third folder, each
    path resolves against the folder of the file that names it; ``--set`` paths against the current folder."""
    weights = tmp_path / "project" / "weights"
    weights.mkdir(parents=True)
    (weights / "mine.npz").write_bytes(BASELINES["stage-8"].read_bytes())
    _write(
        tmp_path / "shared" / "base.yaml",
        "algo: {policy: card, n_steps: 16, batch_size: 64, policy_kwargs: {net_arch: [64, 64]}}\n"
        "train: {n_envs: 4}\n"
        "opponents: [{agent: 'champion:../project/weights/mine.npz'}]\n",
    )
    cfg_path = _write(
        tmp_path / "project" / "stage.yaml",
        "base: ../shared/base.yaml\n"
        "train: {init_from: weights/mine.npz}\n"
        "eval: {opponents: ['greedy, champion:weights/mine.npz,mc:8']}\n",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "other.npz").write_bytes(BASELINES["stage-8"].read_bytes())
    old = Path.cwd()
    os.chdir(elsewhere)
    try:
        cfg = load_config(Path("..") / "project" / "stage.yaml", ["opponents=[{agent: 'champion:other.npz'}]"])
        base_only = load_config(cfg_path)
    finally:
        os.chdir(old)
    mine = str(weights / "mine.npz")
    assert cfg.train.init_from == mine
    assert cfg.eval.opponents == [f"greedy,champion:{mine},mc:8"]
    assert base_only.opponents[0].agent == f"champion:{mine}"  # the base's path, against the base's folder
    assert cfg.opponents[0].agent == f"champion:{elsewhere / 'other.npz'}"  # --set: the current folder


def test_baselines_are_reachable_by_name_from_any_folder(tmp_path: Path) -> None:
    """``champion:NAME`` and ``init_from: NAME`` find the package's weights; the run from another folder, in a
    fresh interpreter, also checks that the names are package data (not files of the clone's configs/): the shipped
    weights, no more than ``champion`` plays and the default-config policy."""
    assert set(BASELINES) == {"default-ppo", "stage-8", "tables", "2p"}
    assert BASELINES["stage-8"] == WEIGHTS and all(p.is_file() for p in BASELINES.values())
    assert all(p.parent.name in ("weights", "sixnimmt_env") and p.stat().st_size < 300_000 for p in BASELINES.values())
    cfg = _write(
        tmp_path / "mine.yaml",
        "algo: {policy: card, policy_kwargs: {net_arch: [64, 64]}}\n"
        "train: {init_from: tables}\n"
        "opponents: [{agent: 'champion:default-ppo'}]\n"
        "eval: {opponents: ['champion:stage-8,champion:2p,greedy']}\n",
    )
    code = (
        "import sys\n"
        "from sixnimmt_env.agents import make_agent\n"
        "from training.config import load_config\n"
        f"cfg = load_config({str(cfg)!r})\n"
        "print(cfg.train.init_from)\n"
        "agent = make_agent(cfg.opponents[0].agent)\n"
        "print(agent.meta.get('config'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    init_from, config = out.stdout.splitlines()
    assert init_from == str(ROOT / "sixnimmt_env" / "weights" / "champion_tables.npz")
    assert config == "configs/baseline_ppo_4p.yaml"  # the default-config policy's weights say where they came from


def test_an_unknown_baseline_name_lists_the_names() -> None:
    from sixnimmt_env.agents import make_agent

    with pytest.raises(ValueError, match=r"champion weights 'stage-9' not found; .*default-ppo, stage-8, tables, 2p"):
        make_agent("champion:stage-9")


def test_set_overrides_replace_values_and_inheritance_merges_mappings(tmp_path: Path) -> None:
    base = _write(tmp_path / "base.yaml", "algo: {policy: card, policy_kwargs: {net_arch: [32], ortho_init: false}}\n")
    child = _write(tmp_path / "child.yaml", f"base: {base.name}\nalgo: {{policy_kwargs: {{net_arch: [16]}}}}\n")
    cfg = load_config(child)
    assert cfg.algo.policy_kwargs.given_items() == {"net_arch": [16], "ortho_init": False}
    cfg = load_config(child, ["algo.policy_kwargs={net_arch: [8, 8]}"])
    assert cfg.algo.policy_kwargs.given_items() == {"net_arch": [8, 8]}  # --set replaces the whole value
    cfg = load_config(child, ["algo.learning_rate=1e-4", "train.total_timesteps=2e5"])
    assert cfg.algo.learning_rate == 1e-4 and cfg.train.total_timesteps == 200_000
    assert isinstance(cfg.train.total_timesteps, int)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "opponents: []\n",
            "key 'opponents' must be a list (a mapping of agent, weight each) with at least 1 entry, got []",
        ),
        ("opponents: [greedy]\n", "key 'opponents[0]' must be a mapping of agent, weight, got 'greedy'"),
        ("opponents: [{agent: greedy, weight: 0}]\n", "key 'opponents[0].weight' must be a number > 0.0, got 0"),
        ("env: {learner_seat: -1}\n", "key 'env.learner_seat' must be an integer >= 0 or 'random', got -1"),
        ("train: {max_minutes: 0}\n", "key 'train.max_minutes' must be a number > 0.0 or null, got 0"),
        ("evl: {every: 10}\n", "unknown key 'evl'; did you mean 'eval'? allowed keys here: name, env, opponents, "),
        ("algo: {verbose: 1}\n", "unknown key 'algo.verbose' (not a MaskablePPO keyword argument, or set in another"),
    ],
)
def test_errors_say_what_is_allowed_and_the_value_given(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path / "c.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: {message}")


@pytest.mark.parametrize("key", ["eval.games", "eval.final_games"])
def test_an_evaluation_of_one_game_is_a_config_error(key: str) -> None:
    """Arena game counts need two games (a 95 % interval needs two samples): refused before training starts, not
    at the first evaluation."""
    with pytest.raises(ConfigError, match=rf"key '{key}' must be an integer >= 2, got 1"):
        load_config(ROOT / "configs" / "smoke.yaml", [f"{key}=1"])
    assert getattr(load_config(ROOT / "configs" / "smoke.yaml", [f"{key}=2"]).eval, key[5:]) == 2


def test_a_key_given_twice_is_an_error_naming_it_and_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "twice.yaml", "train:\n  seed: 1\n  total_timesteps: 2048\n  seed: 2\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}: not valid YAML: the key 'seed' is given twice in one mapping at line 4, column 3"
