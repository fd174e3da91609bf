"""skrl (issue 37's "More libraries"): ``wrap_env(parallel_env())`` with skrl's own PettingZoo wrapper, and IPPO.

skrl has no action masking: its stock categorical policies sample any of the 109 actions, so a game ends on an
illegal card at once. A policy that reads the mask from the observation (skrl hands the model the flattened
observation dict: ``unflatten_tensorized_space`` gives ``{"action_mask", "observation"}`` back) plays legal games:
the README's recipe, and here with every stored action checked against its stored mask.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from skrl.envs.wrappers.torch import wrap_env
from skrl.memories.torch import RandomMemory
from skrl.models.torch import CategoricalMixin, DeterministicMixin, Model
from skrl.multi_agents.torch.ippo import IPPO
from skrl.trainers.torch import SequentialTrainer
from skrl.utils.spaces.torch import unflatten_tensorized_space

from sixnimmt_env import parallel_env
from sixnimmt_env.pettingzoo_env import ILLEGAL_ACTION_PENALTY

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class MaskedPolicy(CategoricalMixin, Model):
    """Logits of a linear layer on the observation, ``-1e9`` where the mask (in the observation dict) is 0."""

    def __init__(self, **spaces: Any) -> None:
        Model.__init__(self, **spaces)
        CategoricalMixin.__init__(self)
        self.net = torch.nn.Linear(506, 109)

    def compute(self, inputs: dict[str, torch.Tensor], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        obs = unflatten_tensorized_space(self.observation_space, inputs["observations"])
        return self.net(obs["observation"]).masked_fill(obs["action_mask"] == 0, -1e9), {}


class Value(DeterministicMixin, Model):
    def __init__(self, **spaces: Any) -> None:
        Model.__init__(self, **spaces)
        DeterministicMixin.__init__(self)
        self.net = torch.nn.Linear(615, 1)

    def compute(self, inputs: dict[str, torch.Tensor], role: str = "") -> tuple[torch.Tensor, dict[str, Any]]:
        return self.net(inputs["observations"]), {}


def test_wrap_env_reads_the_spaces_dicts() -> None:
    env = wrap_env(parallel_env(num_players=3), wrapper="pettingzoo")
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    assert env.action_spaces["player_1"].n == 109
    observations, _ = env.reset()
    assert observations["player_0"].shape == (1, 615)  # the dict flattened: action_mask (109), observation (506)
    obs = unflatten_tensorized_space(env.observation_spaces["player_0"], observations["player_0"])
    assert obs["action_mask"].shape == (1, 109) and int(obs["action_mask"].sum()) == 10
    env.close()


def test_a_stock_unmasked_policy_plays_an_illegal_card_at_once() -> None:
    """Uniform over the 109 actions, as skrl's categorical policies start: the first turn ends the game (-171)."""
    torch.manual_seed(0)
    env = wrap_env(parallel_env(num_players=3), wrapper="pettingzoo")
    env.reset()
    actions = {u: torch.randint(0, 109, (1, 1)) for u in env.possible_agents}
    _, rewards, terminated, _, _ = env.step(actions)
    assert all(bool(t.all()) for t in terminated.values())
    assert -ILLEGAL_ACTION_PENALTY in [float(r) for r in rewards.values()]


def test_ippo_with_a_masked_policy_plays_only_legal_cards(tmp_path: Path) -> None:
    """64 steps of skrl's IPPO on 3 players (``illegal_action="raise"``: an illegal card would stop the run); every
    action in the agents' memories is legal under the mask stored beside it, and whole rounds were played. skrl's
    experiment folder goes to ``tmp_path`` (its default is ``runs/`` in the working folder)."""
    torch.manual_seed(0)
    env = wrap_env(parallel_env(num_players=3, episode="round", illegal_action="raise"), wrapper="pettingzoo")
    spaces = {
        u: {"observation_space": env.observation_spaces[u], "action_space": env.action_spaces[u]}
        for u in env.possible_agents
    }
    models = {u: {"policy": MaskedPolicy(**spaces[u]), "value": Value(**spaces[u])} for u in spaces}
    memories = {u: RandomMemory(memory_size=16) for u in spaces}
    # skrl 2.1.1 refuses its own default (empty) per-agent kwargs dicts: one empty dict per agent
    kwargs = {
        f"{k}_kwargs": {uid: {} for uid in spaces}
        for k in ("learning_rate_scheduler", "observation_preprocessor", "state_preprocessor", "value_preprocessor")
    }
    agent = IPPO(
        possible_agents=env.possible_agents,
        models=models,
        memories=memories,
        observation_spaces=env.observation_spaces,
        state_spaces=env.state_spaces,
        action_spaces=env.action_spaces,
        cfg={
            "rollouts": 16,
            "learning_epochs": 1,
            "experiment": {"directory": str(tmp_path), "write_interval": 0, "checkpoint_interval": 0},
            **kwargs,
        },
    )
    SequentialTrainer(
        env=env,
        agents=agent,
        cfg={"timesteps": 64, "headless": True, "disable_progressbar": True, "close_environment_at_exit": False},
    ).train()
    for uid, memory in memories.items():
        observations = memory.get_tensor_by_name("observations").view(-1, 615)
        actions = memory.get_tensor_by_name("actions").view(-1).long()
        masks = unflatten_tensorized_space(env.observation_spaces[uid], observations)["action_mask"]
        assert masks.shape == (16, 109)
        assert bool(masks.gather(1, actions[:, None]).all()), uid  # legal: the mask is 1 at the action taken
        terminated = memory.get_tensor_by_name("terminated").view(-1)
        assert int(terminated.sum()) >= 1  # a round has 10 turns: the last 16 steps hold an end
    env.close()
