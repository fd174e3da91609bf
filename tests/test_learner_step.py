"""The learner-step contract (:mod:`sixnimmt_env.rules.learner_step`): its functions on real values, and the three
environments that call it (the ParallelEnv, the Gymnasium env of one seat, the batched SB3 vector env) agreeing on
one seeded episode of the learner's seat."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sixnimmt_env import parallel_env
from sixnimmt_env.agents import make_agent
from sixnimmt_env.gym_env import make_env
from sixnimmt_env.rules import engine
from sixnimmt_env.rules.engine import NOOP, NUM_ACTIONS, GameConfig
from sixnimmt_env.rules.learner_step import (
    ILLEGAL_ACTION_PENALTY,
    action_index,
    check_illegal_action,
    end_masks,
    ended,
    episode_summary,
    first_illegal,
    illegal_action_error,
    illegal_reward,
    illegal_rewards,
    integer_action,
    is_legal,
    joint_actions,
    legal_in_masks,
    rank,
)

E2 = {"hands": [[51, 90], [61, 91], [15, 92]], "rows": [[10, 11, 12, 13, 14], [50], [60], [70]]}
"""RULES.md E2 at 3 players: cards 51, 61 and 15 (actions 50, 60, 14) make player_2 take 11 bullheads."""
E2_LEGAL = {0: [50, 89], 1: [60, 90], 2: [14, 91]}
NAMES = ("player_0", "player_1", "player_2")


# --------------------------------------------------------------------------- the contract's functions


def test_integer_actions_and_the_error_of_a_value_that_is_not_one() -> None:
    assert action_index(np.int16(7)) == 7 and action_index(np.array([5])) == 5 and action_index(np.array(3)) == 3
    for bad in (True, np.bool_(False), 3.0, "3", np.array([1, 2])):
        with pytest.raises(TypeError):
            action_index(bad)
    assert integer_action("player_1", np.int64(60), lambda: [60, 90]) == 60
    with pytest.raises(
        ValueError, match=r"^player_1: action 60\.5 of type float is not an integer; legal actions: \[60, 90\]$"
    ):
        integer_action("player_1", 60.5, lambda: [60, 90])


def test_joint_actions_name_the_agents_and_the_values() -> None:
    assert joint_actions(NAMES, {"player_0": 50, "player_1": np.int8(60), "player_2": np.array(14)}, E2_LEGAL.get) == [
        50,
        60,
        14,
    ]
    with pytest.raises(ValueError, match=r"^actions must be a dict \{agent: action\}, got list$"):
        joint_actions(NAMES, [50, 60, 14], E2_LEGAL.get)
    with pytest.raises(ValueError, match=r"^missing actions for \['player_2'\]; every live agent must act"):
        joint_actions(NAMES, {"player_0": 50, "player_1": 60}, E2_LEGAL.get)
    with pytest.raises(ValueError, match=r"^actions for unknown agents \['player_7'\]; live agents: \["):
        joint_actions(NAMES, {"player_0": 50, "player_1": 60, "player_2": 14, "player_7": 1}, E2_LEGAL.get)
    with pytest.raises(
        ValueError, match=r"^player_2: action 'x' of type str is not an integer; legal actions: \[14, 91\]"
    ):
        joint_actions(NAMES, {"player_0": 50, "player_1": 60, "player_2": "x"}, E2_LEGAL.get)


def test_legality_and_the_offender_of_a_joint_action() -> None:
    mask = np.zeros(NUM_ACTIONS, np.int8)
    mask[[60, 90]] = 1
    assert is_legal(60, mask) and not is_legal(61, mask) and not is_legal(-1, mask) and not is_legal(109, mask)
    masks = np.stack([mask, mask.astype(bool)])
    assert legal_in_masks(np.array([90, 109]), masks).tolist() == [True, False]
    assert legal_in_masks(np.array([-5, 60]), masks).tolist() == [False, True]
    assert first_illegal([50, 60, 14], E2_LEGAL.get) is None
    assert first_illegal([50, 60, 109], E2_LEGAL.get) == 2
    assert first_illegal([51, 60, 109], E2_LEGAL.get) == 0  # seat order: the first illegal seat, whatever its kind


def test_the_error_of_an_illegal_action() -> None:
    err = illegal_action_error("player_1", 61, [60, 90], "select")
    assert type(err) is ValueError
    assert str(err) == "player_1: action 61 is not legal in phase 'select'; legal actions: [60, 90]"
    assert str(illegal_action_error("env 3 (learner seat 1)", 109, (60, 90))) == (
        "env 3 (learner seat 1): action 109 is outside 0..108; legal actions: [60, 90]"
    )
    assert str(illegal_action_error("player_0", -1, [104, 105])) == (
        "player_0: action -1 is outside 0..108; legal actions: [104, 105]"
    )


def test_options_are_checked_with_named_errors() -> None:
    check_illegal_action("raise")
    check_illegal_action("terminate", 5)
    with pytest.raises(ValueError, match=r"^illegal_action must be one of 'terminate', 'raise', got 'ignore'$"):
        check_illegal_action("ignore")
    for bad in (0, -1.0, True, "171"):
        with pytest.raises(ValueError, match=r"^illegal_penalty must be a number > 0 bullheads, got"):
            check_illegal_action("terminate", bad)


def test_the_illegal_reward_and_the_end_of_an_episode() -> None:
    assert ILLEGAL_ACTION_PENALTY == 171.0  # the whole deck's bullheads (RULES.md R2)
    assert sum(engine.bullheads(card) for card in range(1, 105)) == ILLEGAL_ACTION_PENALTY
    assert illegal_reward() == -171.0 and illegal_reward(20) == -20.0
    assert illegal_rewards(3, 1) == [0.0, -171.0, 0.0]
    assert illegal_rewards(2, 0, 30.0) == [-30.0, 0.0]
    assert ended(False, True) is True and ended(True, False) is True and ended(False, False) is False
    assert ended(np.array([True, False, False]), np.array([False, True, False])).tolist() == [True, True, False]
    masks = np.ones((3, NUM_ACTIONS), np.int8)
    assert end_masks(masks) is masks
    assert (masks.sum(axis=1) == 1).all() and masks[:, NOOP].all()
    single = end_masks(np.zeros(NUM_ACTIONS, bool))
    assert np.flatnonzero(single).tolist() == [NOOP]


def test_rank_and_the_episode_summary() -> None:
    assert [rank([12, 3, 12, 40], seat) for seat in range(4)] == [2, 1, 2, 4]  # ties share the better rank (R13)
    summary = episode_summary(np.array([12, 3, 3, 40]), np.array([2, 3, 3, 9], np.int32), 2)
    assert summary == {"round_penalties": [2, 3, 3, 9], "totals": [12, 3, 3, 40], "rank": 1}
    assert all(type(v) is int for v in summary["totals"] + summary["round_penalties"])


# --------------------------------------------------------------------------- through the environments


@pytest.mark.parametrize("backend", ["reference", "compiled"])
@pytest.mark.parametrize(("reward", "expected"), [("penalty", [0.0, 0.0, -11.0]), ("relative", [5.5, 5.5, -11.0])])
def test_the_parallel_env_pays_each_agent_of_a_known_deal(backend: str, reward: str, expected: list[float]) -> None:
    """RULES.md E2, then the round's last turn: the rewards of each agent, and every agent terminated at the end with
    the no-op alone in its mask."""
    env = parallel_env(num_players=3, reward=reward, backend=backend, episode="round")
    env.reset(options=E2)
    _, rewards, terminations, truncations, _ = env.step({"player_0": 50, "player_1": 60, "player_2": 14})
    assert [rewards[name] for name in NAMES] == expected
    assert not any(terminations.values()) and not any(truncations.values())
    # rows [15] [50 51] [60 61] [70]: cards 90, 91, 92 go on 70 (90) then 90 (91, 92); nobody takes a row
    observations, rewards, terminations, truncations, _ = env.step({"player_0": 89, "player_1": 90, "player_2": 91})
    assert rewards == dict.fromkeys(NAMES, 0.0)
    assert all(terminations.values()) and not any(truncations.values()) and env.agents == []
    for ob in observations.values():
        assert np.flatnonzero(ob["action_mask"]).tolist() == [NOOP]


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_an_illegal_action_leaves_every_env_unchanged_under_raise(backend: str) -> None:
    env = parallel_env(num_players=3, backend=backend, illegal_action="raise")
    env.reset(options=E2)
    state = env.game_state
    with pytest.raises(ValueError, match=r"^player_0: action 51 is not legal in phase 'select'; legal actions"):
        env.step({"player_0": 51, "player_1": 60, "player_2": 109})  # the first illegal seat in seat order
    assert env.game_state == state
    assert env.step({"player_0": 50, "player_1": 60, "player_2": 14})[1]["player_2"] == -11.0
    # the one-seat env checks the learner's action before any opponent acts or draws a random number
    learner, twin = (
        make_env(num_players=4, opponents="random", learner_seat=0, illegal_action="raise", backend=backend)
        for _ in range(2)
    )
    learner.reset(seed=3)
    twin.reset(seed=3)
    with pytest.raises(ValueError, match=r"^player_0: action 108 is not legal in phase 'select'; legal actions: \["):
        learner.step(NOOP)
    with pytest.raises(ValueError, match=r"^player_0: action 200 is outside 0\.\.108; legal actions: \["):
        learner.step(200)
    for _ in range(10):
        action = int(np.flatnonzero(learner.action_masks())[-1])
        a, b = learner.step(action), twin.step(action)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
        if a[2]:
            break


def _learner_action(mask: np.ndarray) -> int:
    """The learner's deterministic policy: the middle one of its legal actions."""
    legal = np.flatnonzero(mask)
    return int(legal[len(legal) // 2])


def _parallel_episode(config: dict[str, Any], deal: dict[str, Any], illegal_at: int | None) -> list[tuple[Any, ...]]:
    """The learner (seat 0)'s steps through the ParallelEnv, the opponents played by ``greedy`` on their views: its
    reward summed from one decision to the next, and whether the episode ended."""
    env = parallel_env(**config)
    greedy, rng = make_agent("greedy"), np.random.default_rng(0)
    observations, _ = env.reset(options=deal)
    out = []
    while env.agents:
        me = observations["player_0"]["action_mask"]
        action = NOOP if len(out) == illegal_at else _learner_action(me)
        reward, done = 0.0, False
        while True:
            actions = {"player_0": action}
            for name in env.agents[1:]:
                mask = observations[name]["action_mask"]
                actions[name] = NOOP if mask[NOOP] else greedy.act(env.view(name), rng)
            observations, rewards, terminations, truncations, _ = env.step(actions)
            reward += rewards["player_0"]
            done = terminations["player_0"]
            assert not truncations["player_0"]
            mask = observations["player_0"]["action_mask"]
            if done or not mask[NOOP]:
                break
            action = NOOP
        out.append((reward, done))
    return out


@pytest.mark.parametrize("reward", ["penalty", "relative"])
def test_the_three_envs_agree_on_a_seeded_episode(reward: str) -> None:
    """One round dealt from a seed, the learner at seat 0 playing the same policy, greedy opponents: the
    ParallelEnv, the Gymnasium env and the batched vector env give the learner the same reward and termination at
    every step, and the same end of episode; an illegal action at its fourth step ends the episode with -171 in
    all three."""
    from sixnimmt_env.compiled.core import reference_deals
    from training.vec_env import SixNimmtVecEnv

    config = {"num_players": 4, "episode": "round", "row_choice": "player", "reward": reward}
    game = GameConfig(**{k: v for k, v in config.items() if k != "reward"})
    for illegal_at in (None, 3):
        state = engine.new_game(game, np.random.default_rng(11))
        deal = {"hands": [list(h) for h in state.hands], "rows": [list(r) for r in state.rows]}
        expected = _parallel_episode(config, deal, illegal_at)
        assert expected[-1][1] and not any(done for _, done in expected[:-1])
        assert len(expected) == 4 if illegal_at == 3 else len(expected) >= 10  # 10 turns (R11) and any row choices

        gym_env = make_env(opponents="greedy", learner_seat=0, **config)
        vec_env = SixNimmtVecEnv(1, opponents="greedy", learner_seat=0, **config)
        vec_env.tables.games.reset(deals=reference_deals(game, [np.random.default_rng(11)], 1))
        obs, _ = gym_env.reset(seed=0, options=deal)
        vec_obs = vec_env.reset()
        np.testing.assert_array_equal(obs, vec_obs[0])
        gym_steps, vec_steps = [], []
        final: list[dict[str, Any]] = []
        for k in range(len(expected)):
            assert (gym_env.action_masks() == vec_env.action_masks()[0]).all()
            action = NOOP if k == illegal_at else _learner_action(gym_env.action_masks())
            _, r, terminated, truncated, info = gym_env.step(action)
            gym_steps.append((r, terminated))
            assert truncated is False
            _, rewards, dones, infos = vec_env.step(np.array([action]))
            vec_steps.append((float(rewards[0]), bool(dones[0])))
            if terminated:
                final = [info, infos[0]]
        for steps in (gym_steps, vec_steps):
            assert [r for r, _ in steps] == pytest.approx([r for r, _ in expected], abs=1e-5)  # float32 in the vec env
            assert [done for _, done in steps] == [done for _, done in expected]
        gym_info, vec_info = final
        keys = ["learner_seat", "illegal_action", "round_penalties", "totals", "rank"]
        assert {k: gym_info.get(k) for k in keys} == {k: vec_info.get(k) for k in keys}
        if illegal_at is not None:
            assert expected[-1] == (-ILLEGAL_ACTION_PENALTY, True) and gym_info["illegal_action"] is True
            assert "rank" not in gym_info
        else:
            assert gym_info["illegal_action"] is False and 1 <= gym_info["rank"] <= 4
