"""TorchRL (issue 9's table): ``PettingZooWrapper`` around the ParallelEnv, ``check_env_specs`` and a masked
random rollout. Construction used to fail on the readable infos ("Could not infer dtype of GameConfig")."""

from __future__ import annotations

import pytest
import torch
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.envs.utils import check_env_specs

from sixnimmt_env import parallel_env

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_wrapper_with_default_arguments_passes_check_env_specs(backend: str) -> None:
    env = PettingZooWrapper(env=parallel_env(backend=backend))
    check_env_specs(env, seed=0)  # samples unmasked actions: the first illegal one ends the episode (-171)
    assert env.group_map == {"player": ["player_0", "player_1", "player_2", "player_3"]}
    spec = env.full_observation_spec["player", "observation", "observation"]
    assert spec.shape == (4, 506) and spec.dtype == torch.float32


def test_masked_random_rollout_plays_a_whole_game_legally() -> None:
    env = PettingZooWrapper(env=parallel_env(num_players=3), use_mask=True)
    check_env_specs(env, seed=0)
    env.set_seed(3)
    td = env.rollout(max_steps=500)  # a random policy drawing from the masked action spec
    actions = td["player", "action"]  # (steps, 3)
    masks = td["player", "action_mask"]  # (steps, 3, 109), the mask each action was drawn from
    assert masks.gather(-1, actions.unsqueeze(-1)).all()  # every action legal
    assert td["next", "done"][-1].all() and not td["next", "done"][:-1].any()  # one whole game
    rewards = td["next", "player", "reward"].sum(dim=0).squeeze(-1)
    assert (rewards > -171).all() and rewards.max() >= -66 * 3 and (rewards <= 0).all()
    assert rewards.min() <= -66  # a game ends when a total reaches 66 (RULES.md R12)
