"""SuperSuit (issue 9's table): ``pettingzoo_env_to_vec_env_v1`` + ``concat_vec_envs_v1`` over several copies of
the ParallelEnv in several processes, masks intact. SuperSuit hands each worker a cloudpickled copy of the env."""

from __future__ import annotations

import numpy as np
import pytest
import supersuit as ss

from sixnimmt_env import parallel_env


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_concat_vec_envs_in_processes_masks_intact(backend: str) -> None:
    base = parallel_env(num_players=3, episode="round", backend=backend)
    first, _ = base.reset(seed=0)
    base.step({a: int(np.flatnonzero(first[a]["action_mask"])[0]) for a in base.agents})  # mid-episode
    assert base.agents  # the copies SuperSuit pickles from it must still work
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(base), 4, num_cpus=2, base_class="gymnasium")
    try:
        assert type(venv).__name__ == "ProcConcatVec" and venv.num_envs == 12  # 4 games x 3 agents
        obs, _ = venv.reset(seed=7)
        rng = np.random.default_rng(0)
        returns, episodes = np.zeros(12), 0
        for _ in range(45):  # a round is 10 to 20 steps
            masks = obs["action_mask"]
            assert masks.shape == (12, 109) and masks.dtype == np.int8
            assert (masks.sum(axis=1) >= 1).all()  # a card per hand card in "select", else the chooser's rows
            select = masks[:, 108] == 0
            assert set(masks[select].sum(axis=1).tolist()) <= set(range(1, 11))
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            obs, rewards, terminations, truncations, _ = venv.step(actions)
            returns += rewards
            episodes += int(terminations.sum())
            assert not truncations.any()
        assert episodes >= 24  # at least 2 rounds in each of the 12 slots
        assert (returns < 0).all() and returns.sum() <= -episodes / 3  # each round costs someone bullheads
    finally:
        venv.close()
