"""Stable-Baselines3 and sb3-contrib (issue 9's table) on the registered Gymnasium id with default arguments:
``check_env``, ``make_vec_env`` with ``DummyVecEnv`` and ``SubprocVecEnv`` (whose workers import ``sixnimmt_env``
through the id's ``module:`` prefix and ask for ``render_mode="rgb_array"``), MaskablePPO for a few thousand steps
and ``evaluate_policy`` with masks."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

ENV_ID = "sixnimmt_env:sixnimmt/SixNimmt-v0"  # Gymnasium imports sixnimmt_env first, in every worker


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_sb3_check_env() -> None:
    check_env(gymnasium.make(ENV_ID).unwrapped, warn=True)


@pytest.mark.parametrize("vec_env_cls", [DummyVecEnv, SubprocVecEnv])
def test_make_vec_env(vec_env_cls: type) -> None:
    venv = make_vec_env(ENV_ID, n_envs=2, vec_env_cls=vec_env_cls, seed=0)
    try:
        assert venv.get_attr("render_mode") == ["rgb_array", "rgb_array"]  # what make_vec_env asks for
        obs = venv.reset()
        assert obs.shape == (2, 506)
        frames = venv.env_method("render")
        assert all(f.shape == (600, 960, 3) for f in frames)
        rng = np.random.default_rng(0)
        for _ in range(25):
            masks = np.stack(venv.env_method("action_masks"))
            assert masks.any(axis=1).all()
            obs, rewards, _, infos = venv.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
            assert (rewards <= 0).all() and all(info["illegal_action"] is False for info in infos)
    finally:
        venv.close()


def test_maskable_ppo_learns_a_few_thousand_steps_and_evaluates_with_masks() -> None:
    venv = make_vec_env(ENV_ID, n_envs=2, seed=0, env_kwargs={"episode": "round", "opponents": "random"})
    model = MaskablePPO("MlpPolicy", venv, n_steps=256, batch_size=128, n_epochs=1, seed=0, device="cpu")
    model.learn(2048)
    assert model.num_timesteps == 2048
    mean, std = evaluate_policy(model, venv, n_eval_episodes=6, use_masking=True, warn=False)
    # minus the bullheads of one round: never illegal (-171), and 4 players take 10-40 in all in a round
    assert -60 < mean < 0 and std >= 0
    venv.close()
