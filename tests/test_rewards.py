"""The reward in one place (:func:`sixnimmt_env.rewards.seat_reward`): its modes, the ParallelEnv's rewards, and the
compiled learner kernel's reward (numba's compilation of the same function) checked against it on random steps."""

from __future__ import annotations

import numpy as np
import pytest

from sixnimmt_env.compiled.kinds import KINDS
from sixnimmt_env.compiled.learner import LearnerTables
from sixnimmt_env.pettingzoo_env import parallel_env
from sixnimmt_env.rewards import rewards, seat_reward
from sixnimmt_env.rules import engine
from sixnimmt_env.rules.engine import GameConfig


def test_reward_modes() -> None:
    assert rewards([0, 5, 0, 2], "penalty") == [0.0, -5.0, 0.0, -2.0]
    relative = rewards([0, 6, 0, 3], "relative")
    assert relative == [3.0, -5.0, 3.0, -1.0] and sum(relative) == 0.0
    assert all(type(r) is float for r in rewards([0, 1], "penalty") + rewards([0, 1], "relative"))
    with pytest.raises(ValueError, match="reward mode must be one of 'penalty', 'relative', got 'score'"):
        rewards([0, 1], "score")


def test_seat_reward_is_each_seats_entry_of_rewards() -> None:
    assert seat_reward(5, 7, 4, False) == -5.0 and seat_reward(0, 7, 4, False) == 0.0
    assert seat_reward(1, 7, 3, True) == 2.0 and seat_reward(6, 6, 4, True) == -6.0
    penalties = [0, 7, 2, 4, 1]
    for mode in ("penalty", "relative"):
        expected = [seat_reward(p, sum(penalties), 5, mode == "relative") for p in penalties]
        assert rewards(penalties, mode) == expected


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_env_rewards_are_the_reward_mode_at_every_step(backend: str) -> None:
    """The ParallelEnv keeps the reward dicts it computed (by mode and bullheads): every step's rewards still equal
    :func:`rewards` of that step's bullheads, in the mode in force at that step, and each is a fresh dict."""
    env = parallel_env(num_players=4, backend=backend)
    rand = np.random.default_rng(5)
    seen: dict[int, dict[str, float]] = {}
    penalised = 0
    for game in range(6):
        env.reward_mode = ("penalty", "relative")[game % 2]  # the mode read at every step
        observations, _ = env.reset(seed=game)
        before = env.game_state.totals
        while env.agents:
            actions = {a: int(rand.choice(observations[a]["action_mask"].nonzero()[0])) for a in env.agents}
            observations, got, _, _, _ = env.step(actions)
            totals = env.game_state.totals
            taken = [a - b for a, b in zip(totals, before, strict=True)]
            assert list(got.values()) == rewards(taken, env.reward_mode)
            penalised += any(taken)
            assert id(got) not in seen  # a fresh dict (the earlier ones are alive: their ids are not reused)
            seen[id(got)] = got
            got["player_0"] = 99.0  # changing a returned dict changes no later one
            before = totals
    assert penalised > 50 and len(env._known_rewards) < penalised  # some vectors of bullheads came back


@pytest.mark.parametrize("mode", ["penalty", "relative"])
def test_learner_kernel_reward_is_the_reward_mode_on_random_steps(mode: str) -> None:
    # row_choice="cheapest", standard variant: no opponent-only step, so one play() call is one engine step
    config = GameConfig(num_players=4, row_choice="cheapest", max_rounds=2)
    B, n = 16, config.num_players
    tables = LearnerTables(config, B, seed=3, reward=mode)
    tables.seat[:] = np.arange(B) % n
    for b in range(B):
        tables.kinds[b] = KINDS["random"]
        tables.kinds[b, tables.seat[b]] = -1
    rng = np.random.default_rng(0)
    checked = penalised = 0
    for _ in range(120):
        before = [tables.games.get_state(b) for b in range(B)]
        masks = tables.games.legal_mask()
        actions = np.zeros((B, n), np.int64)
        for b in range(B):
            actions[b, tables.seat[b]] = rng.choice(np.flatnonzero(masks[b, tables.seat[b]]))
        reward = np.zeros(B, np.float32)
        tables.play(actions, np.ones(B, np.bool_), reward)
        for b in range(B):
            _, penalties = engine.step(before[b], actions[b].tolist(), np.random.default_rng(1))
            assert reward[b] == np.float32(rewards(penalties, mode)[tables.seat[b]])
            checked += 1
            penalised += reward[b] != 0
        tables.restart(tables.games.done)
    assert checked == 120 * B and penalised > 50


def test_learner_tables_refuse_an_unknown_reward_mode() -> None:
    with pytest.raises(ValueError, match="reward must be one of 'penalty', 'relative', got 'rank'"):
        LearnerTables(GameConfig(num_players=3), 2, reward="rank")
