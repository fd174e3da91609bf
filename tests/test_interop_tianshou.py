"""Tianshou (issue 9's table): ``PettingZooEnv`` around the AEC env, Tianshou's multi-agent DQN example shape
(one DQN learner, masked random opponents, ``MultiAgentOffPolicyAlgorithm``), one short epoch with
``DummyVectorEnv`` and with ``SubprocVectorEnv``. The replay buffer used to fail at its first collect on the
readable infos (lists whose length changes as the hand shrinks)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import cache_tianshou_kernels
from tianshou.algorithm import DQN, MARLRandomDiscreteMaskedOffPolicyAlgorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv, SubprocVectorEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net

from sixnimmt_env import sixnimmt_v0

cache_tianshou_kernels()


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def get_env() -> PettingZooEnv:
    return PettingZooEnv(sixnimmt_v0.env(num_players=3, episode="round"))


@pytest.mark.parametrize("vector_env", [DummyVectorEnv, SubprocVectorEnv])
def test_multi_agent_dqn_one_short_epoch(vector_env: type) -> None:
    env = get_env()
    observation_space = env.observation_space["observation"]
    net = Net(state_shape=observation_space.shape, action_shape=env.action_space.n, hidden_sizes=[64])
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.1)
    learner = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), target_update_freq=50)
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[learner, opponent, opponent], env=env)
    train_envs = vector_env([get_env for _ in range(2)])
    test_envs = vector_env([get_env for _ in range(2)])
    try:
        train_envs.seed(0)
        test_envs.seed(1)
        buffer = VectorReplayBuffer(2000, len(train_envs))
        train_collector = Collector(algorithm, train_envs, buffer, exploration_noise=True)
        test_collector = Collector(algorithm, test_envs, exploration_noise=True)
        train_collector.reset()
        first = train_collector.collect(n_step=64)  # the readable infos used to break the buffer here
        assert first.n_collected_steps == 64 and len(buffer) == 64
        stored = buffer.sample(0)[0]
        assert np.asarray(stored.info).size == 64 and stored.obs.mask.shape == (64, 109)
        assert (stored.obs.mask.sum(axis=1) >= 1).all()  # a legal action every time
        result = algorithm.run_training(
            OffPolicyTrainerParams(
                training_collector=train_collector,
                test_collector=test_collector,
                max_epochs=1,
                epoch_num_steps=150,
                collection_step_num_env_steps=30,
                test_step_num_episodes=2,
                batch_size=32,
                update_step_num_gradient_steps_per_sample=0.2,
                multi_agent_return_reduction=lambda returns: returns[:, 0],  # the learner, player_0
                show_progress=False,
                verbose=False,
            )
        )
        assert result.timing.total_time > 0 and result.best_reward <= 0  # returns are minus bullheads
        assert result.best_reward > -171  # masked opponents never play an illegal card
        assert len(buffer) >= 64 + 150
    finally:
        train_envs.close()
        test_envs.close()
