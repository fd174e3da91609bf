"""Inputs the ParallelEnv accepts and refuses, on both backends."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sixnimmt_env import env
from sixnimmt_env import parallel_env as default_parallel_env
from sixnimmt_env.pettingzoo_env import SixNimmtParallelEnv


def parallel_env(**config: Any) -> SixNimmtParallelEnv:
    """The ParallelEnv with its readable infos (``infos="view"``) and the named error for illegal actions
    (``illegal_action="raise"``), which most tests here read; the defaults are tested by the conformance tests
    below (the real factory, ``default_parallel_env``) and ``tests/test_interop_defaults.py``."""
    return default_parallel_env(**{"infos": "view", "illegal_action": "raise", **config})


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_zero_dimensional_integer_arrays_are_actions(backend: str) -> None:
    a, b = parallel_env(num_players=3, backend=backend), parallel_env(num_players=3, backend=backend)
    _, infos = a.reset(seed=5)
    b.reset(seed=5)
    for _ in range(6):
        plain = {name: infos[name]["legal_actions"][-1] for name in a.agents}
        arrays = {name: np.array(action) for name, action in plain.items()}  # what MaskablePPO.predict gives
        obs_a, rew_a, _, _, infos = a.step(arrays)
        obs_b, rew_b, _, _, _ = b.step(plain)
        assert rew_a == rew_b
        for name in obs_a:
            np.testing.assert_array_equal(obs_a[name]["observation"], obs_b[name]["observation"])


@pytest.mark.parametrize("backend", ["reference", "compiled"])
@pytest.mark.parametrize("seed", [-1, 1.5, "7", True])
def test_bad_seeds_are_refused_by_name(backend: str, seed: object) -> None:
    env = parallel_env(num_players=2, backend=backend)
    with pytest.raises(ValueError, match="seed must be None or a non-negative integer"):
        env.reset(seed=seed)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_float_and_array_actions_are_still_refused(backend: str) -> None:
    env = parallel_env(num_players=2, backend=backend)
    _, infos = env.reset(seed=0)
    card = infos["player_0"]["legal_actions"][0]
    other = infos["player_1"]["legal_actions"][0]
    for bad in (card + 0.0, np.array([card, card]), np.array(float(card))):
        with pytest.raises(ValueError, match="player_0: action"):
            env.step({"player_0": bad, "player_1": other})
    assert env.agents == ["player_0", "player_1"]
    env.step({"player_0": card, "player_1": other})  # still usable


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_terminate_returns_fresh_arrays(backend: str) -> None:
    env = parallel_env(num_players=2, backend=backend, illegal_action="terminate")
    obs, _ = env.reset(seed=0)
    before = {name: o["observation"].copy() for name, o in obs.items()}
    for o in obs.values():
        o["observation"][:] = -1.0  # a user scribbling on what it was given
    final, rewards, terms, _, _ = env.step({"player_0": 107, "player_1": 108})  # both illegal in select
    assert rewards["player_0"] == -171.0 and all(terms.values())
    for name in final:
        np.testing.assert_array_equal(final[name]["observation"], before[name])


def _legal(aec: object) -> int:
    mask = aec.observe(aec.agent_selection)["action_mask"]  # type: ignore[attr-defined]
    return int(np.flatnonzero(mask)[0])


@pytest.mark.parametrize("backend", ["reference", "compiled"])
@pytest.mark.parametrize("bad", [500, -1, 3.5, "a", None])
def test_aec_env_rejects_a_bad_action_at_its_own_turn_and_plays_on(backend: str, bad: object) -> None:
    # was: stored silently, raised at the last agent's step and then on every later step until reset()
    aec = env(num_players=4, illegal_action="raise", backend=backend, episode="round")
    aec.reset(seed=0)
    assert aec.agent_selection == "player_0"
    before = aec.unwrapped.game_state
    with pytest.raises(ValueError, match=r"^player_0: action .* legal actions: \[") as err:
        aec.step(bad)
    assert repr(bad) in str(err.value) or str(bad) in str(err.value)
    assert aec.agent_selection == "player_0" and aec.unwrapped.game_state == before
    turns = 0
    while aec.agents:  # the whole round plays on with legal actions
        _, _, terminated, truncated, _ = aec.last()
        aec.step(None if terminated or truncated else _legal(aec))
        turns += 1
    # 10 card turns of 4 agents, a 4-agent step per low-card row choice, then each agent's dead step
    assert turns >= 4 * 10 + 4 and (turns - 4) % 4 == 0
    assert aec.unwrapped.game_state.phase == "done" and len(aec.unwrapped.game_state.hands[0]) == 0


@pytest.mark.parametrize("bad", [3.5, "a", None])
def test_aec_env_rejects_a_non_integer_in_terminate_mode_too(bad: object) -> None:
    aec = env(num_players=3, episode="round")  # illegal_action="terminate", the default
    aec.reset(seed=1)
    with pytest.raises(ValueError, match="is not an integer"):
        aec.step(bad)
    for _ in range(3):
        aec.step(_legal(aec))
    assert aec.agent_selection == "player_0" and all(r == 0 or r < 0 for r in aec.rewards.values())
    assert not any(aec.terminations.values())


def test_aec_env_ends_the_episode_for_an_illegal_integer_in_terminate_mode() -> None:
    aec = env(num_players=3, episode="round")
    aec.reset(seed=1)
    aec.step(500)  # stored: an integer, handled as an illegal action when the joint action is applied
    aec.step(_legal(aec))
    aec.step(_legal(aec))
    assert all(aec.terminations.values())
    assert aec.rewards["player_0"] == -171.0 and aec.rewards["player_1"] == 0.0
