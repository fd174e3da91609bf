"""Gymnasium (issue 9's table): ``check_env``, ``gymnasium.make_vec`` sync and async, ``RecordVideo``."""

from __future__ import annotations

import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import RecordVideo

ENV_ID = "sixnimmt_env:sixnimmt/SixNimmt-v0"  # Gymnasium imports sixnimmt_env (which registers the id) first


def test_check_env_without_warnings() -> None:
    env = gymnasium.make(ENV_ID)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. the infinite Box bound used to warn
        check_env(env.unwrapped)
    for mode in ("ansi", "rgb_array"):
        check_env(gymnasium.make(ENV_ID, render_mode=mode, num_players=3).unwrapped)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec_sync_and_async(mode: str) -> None:
    envs = gymnasium.make_vec(ENV_ID, num_envs=3, vectorization_mode=mode, episode="round", num_players=3)
    try:
        obs, infos = envs.reset(seed=1)
        assert obs.shape == (3, 506) and obs.dtype == np.float32
        assert infos["action_mask"].shape == (3, 109) and infos["learner_seat"].shape == (3,)
        rng = np.random.default_rng(1)
        episodes, returns = 0, 0.0
        for _ in range(40):
            masks = infos["action_mask"].astype(bool)
            assert masks.any(axis=1).all()
            obs, rewards, terminated, truncated, infos = envs.step(
                np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            )
            assert envs.observation_space.contains(obs) and not truncated.any()
            episodes += int(terminated.sum())
            returns += float(rewards.sum())
        assert episodes >= 6 and returns < -episodes  # a learner rarely ends a round without bullheads
    finally:
        envs.close()


def test_record_video_writes_an_mp4(tmp_path: Path) -> None:
    env = RecordVideo(
        gymnasium.make(ENV_ID, render_mode="rgb_array", num_players=4, episode="round"),
        video_folder=str(tmp_path),
        episode_trigger=lambda episode: True,
        disable_logger=True,
    )
    env.reset(seed=0)
    done, steps = False, 0
    while not done:
        action = int(np.flatnonzero(env.unwrapped.action_masks())[0])
        _, _, terminated, truncated, _ = env.step(action)
        done, steps = terminated or truncated, steps + 1
    env.close()
    videos = sorted(tmp_path.glob("*.mp4"))
    assert [v.name for v in videos] == ["rl-video-episode-0.mp4"]
    assert videos[0].stat().st_size > 10_000 and steps >= 10  # one frame per decision of the learner
