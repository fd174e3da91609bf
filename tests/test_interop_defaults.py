"""Regression tests of the seven defects of issue 9 (the RL libraries' paths are in ``test_interop_<library>.py``).

1. no module shadows a public name; PettingZoo's versioned module ``sixnimmt_v0``;
2. every environment survives ``pickle``, ``cloudpickle`` and ``copy.deepcopy`` mid-episode and the copy
   continues exactly as the original;
3. the default infos are empty (storable as tensors); the readable view on demand;
4. the Gymnasium id works in a process that never imported the package; render modes (see also the
   Gymnasium and SB3 interop tests);
5. the default illegal-action handling lets stock checkers run (see ``test_interop_pettingzoo.py``);
6. masks are never empty, also after an episode ends under Gymnasium's autoreset;
7. finite observation bounds; integer-like actions through ``__index__``.
"""

from __future__ import annotations

import copy
import pickle
import pkgutil
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import cloudpickle
import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import data_equivalence

import sixnimmt_env
from sixnimmt_env.compiled import BatchedGames
from sixnimmt_env.gym_env import make_env
from sixnimmt_env.observation import DECK_BULLHEADS, SLICES, observation_high
from sixnimmt_env.rules.engine import NOOP, GameConfig

COPIERS: dict[str, Callable[[Any], Any]] = {
    "pickle": lambda env: pickle.loads(pickle.dumps(env)),
    "cloudpickle": lambda env: cloudpickle.loads(cloudpickle.dumps(env)),
    "deepcopy": copy.deepcopy,
}

# --------------------------------------------------------------------------- 1. names


def test_no_submodule_shadows_a_public_name_and_env_stays_the_aec_factory() -> None:
    submodules = {m.name for m in pkgutil.iter_modules(sixnimmt_env.__path__)}
    assert not submodules & set(sixnimmt_env.__all__), submodules & set(sixnimmt_env.__all__)
    sixnimmt_env.parallel_env()
    gymnasium.make("sixnimmt/SixNimmt-v0")  # imports gym_env and pettingzoo_env
    aec = sixnimmt_env.env(num_players=3)  # was: TypeError: 'module' object is not callable
    aec.reset(seed=0)
    assert aec.possible_agents == ["player_0", "player_1", "player_2"]


def test_versioned_module_follows_pettingzoo_convention() -> None:
    from pettingzoo import AECEnv, ParallelEnv

    from sixnimmt_env import sixnimmt_v0

    par = sixnimmt_v0.parallel_env(num_players=2)
    aec = sixnimmt_v0.env(num_players=2)
    raw = sixnimmt_v0.raw_env(num_players=2)
    assert isinstance(par, ParallelEnv) and isinstance(aec, AECEnv) and isinstance(raw, AECEnv)
    assert isinstance(raw, sixnimmt_v0.raw_env) and aec.unwrapped.metadata["name"] == "sixnimmt_v0"
    raw.reset(seed=1)
    assert raw.agent_selection == "player_0" and raw.observe("player_1")["action_mask"].sum() == 10


# --------------------------------------------------------------------------- 2. copies


def _first_legal(observations: dict[str, Any], agents: list[str], pick: int) -> dict[str, int]:
    """A legal action per agent from its mask: the ``pick``-th legal one (cycling)."""
    out = {}
    for name in agents:
        legal = np.flatnonzero(observations[name]["action_mask"])
        out[name] = int(legal[pick % len(legal)])
    return out


@pytest.mark.parametrize("backend", ["reference", "compiled"])
@pytest.mark.parametrize("how", list(COPIERS))
@pytest.mark.parametrize("at", [0, 7, 13])
def test_parallel_env_copies_continue_exactly(backend: str, how: str, at: int) -> None:
    env = sixnimmt_env.parallel_env(num_players=3, episode="round", backend=backend, infos="view")
    observations, _ = env.reset(seed=4)
    for k in range(at):  # a round lasts 10 to 20 steps: 13 steps reach a low-card choice or a later turn
        if not env.agents:
            break
        observations, *_ = env.step(_first_legal(observations, env.agents, k))
    twin = COPIERS[how](env)
    assert twin.agents == env.agents and twin.game_state == env.game_state
    if not env.agents:
        observations, _ = env.reset()  # seeds continue their stream in the copy too
        assert data_equivalence(observations, twin.reset()[0])
    for k in range(40):
        if not env.agents:
            break
        actions = _first_legal(observations, env.agents, 3 * k + 1)
        out_a = env.step(actions)
        out_b = twin.step(actions)
        observations = out_a[0]
        assert data_equivalence(out_a[:4], out_b[:4])
        assert {a: dict(v) for a, v in out_a[4].items()} == {a: dict(v) for a, v in out_b[4].items()}
    assert not twin.agents and twin.game_state == env.game_state
    assert data_equivalence(env.reset(), twin.reset())  # the next deal from the copied generator too


@pytest.mark.parametrize("backend", ["reference", "compiled"])
@pytest.mark.parametrize("how", list(COPIERS))
def test_aec_env_copies_continue_exactly(backend: str, how: str) -> None:
    env = sixnimmt_env.env(num_players=3, episode="round", backend=backend)
    env.reset(seed=2)
    for _ in range(8):  # mid-turn: some agents have acted, the joint action is pending
        obs, *_ = env.last()
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    twin = COPIERS[how](env)
    for agent in env.agent_iter(200):
        obs, reward, term, trunc, info = env.last()
        assert twin.agent_selection == agent and data_equivalence(twin.last(), (obs, reward, term, trunc, info))
        action = None if term or trunc else int(np.flatnonzero(obs["action_mask"])[-1])
        env.step(action)
        twin.step(action)
    assert twin.agents == env.agents == []


@pytest.mark.parametrize("backend", ["reference", "compiled"])
@pytest.mark.parametrize("how", list(COPIERS))
def test_gymnasium_env_with_opponents_copies_continue_exactly(backend: str, how: str) -> None:
    env = make_env(num_players=4, episode="round", opponents=["greedy", "random", "mc:4"], backend=backend)
    env.reset(seed=6)
    for _ in range(4):
        env.step(int(np.flatnonzero(env.action_masks())[0]))
    twin = COPIERS[how](env)
    done = False
    while not done:
        action = int(np.flatnonzero(env.action_masks())[-1])
        out_a, out_b = env.step(action), twin.step(action)
        assert data_equivalence(out_a, out_b)
        done = out_a[2]
    assert data_equivalence(env.reset(), twin.reset())


@pytest.mark.parametrize("how", list(COPIERS))
def test_batched_engine_copies_continue_exactly(how: str) -> None:
    games = BatchedGames(GameConfig(num_players=3, episode="round"), 4, seed=3)
    games.reset()
    masks = games.legal_mask()
    for _ in range(5):
        games.step(masks.argmax(axis=-1))
        masks = games.legal_mask()
    twin = COPIERS[how](games)
    for _ in range(20):
        actions = (masks.cumsum(axis=-1) == masks.sum(axis=-1, keepdims=True)).argmax(axis=-1)  # last legal
        np.testing.assert_array_equal(games.step(actions), twin.step(actions))
        np.testing.assert_array_equal(games.observe(), twin.observe())
        masks = games.legal_mask()
        np.testing.assert_array_equal(masks, twin.legal_mask())
    games.reset()
    twin.reset()
    np.testing.assert_array_equal(games.observe(), twin.observe())


# --------------------------------------------------------------------------- 3. infos


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_default_infos_are_empty_and_the_view_is_on_demand(backend: str) -> None:
    env = sixnimmt_env.parallel_env(num_players=3, backend=backend)
    viewer = sixnimmt_env.parallel_env(num_players=3, backend=backend, infos="view")
    observations, infos = env.reset(seed=9)
    _, views = viewer.reset(seed=9)
    while env.agents:
        assert infos == {"player_0": {}, "player_1": {}, "player_2": {}}
        for name in env.agents:
            assert dict(env.view(name)) == dict(views[name])
        actions = _first_legal(observations, env.agents, 0)
        observations, _, _, _, infos = env.step(actions)
        _, _, _, _, views = viewer.step(actions)
    assert infos == {"player_0": {}, "player_1": {}, "player_2": {}}
    with pytest.raises(ValueError, match="infos must be one of 'empty', 'view', got 'all'"):
        sixnimmt_env.parallel_env(infos="all")
    with pytest.raises(ValueError, match="unknown agent 'player_7'"):
        env.view("player_7")


# --------------------------------------------------------------------------- 4. registration, render modes


def test_gymnasium_id_works_in_a_process_that_never_imported_the_package() -> None:
    """Gymnasium's ``"module:id"`` form imports ``sixnimmt_env`` (which registers the id) in a fresh process."""
    code = (
        "import sys, gymnasium; print('sixnimmt_env' in sys.modules); "
        "env = gymnasium.make('sixnimmt_env:sixnimmt/SixNimmt-v0', render_mode='rgb_array'); "
        "env.reset(seed=0); print(env.render().shape, 'sixnimmt_env' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split()[-5:] == ["False", "(600,", "960,", "3)", "True"]


def test_importing_the_package_before_gymnasium_registers_the_id() -> None:
    """``import sixnimmt_env`` imports no Gymnasium (nor numpy); the id is there once Gymnasium is imported."""
    code = (
        "import sys, sixnimmt_env; print('gymnasium' in sys.modules, 'numpy' in sys.modules); "
        "import gymnasium; print('sixnimmt/SixNimmt-v0' in gymnasium.registry)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "False", "True"]


@pytest.mark.parametrize("mode", ["ansi", "human", "rgb_array"])
def test_gymnasium_env_declares_and_renders_every_mode(mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    env = gymnasium.make("sixnimmt/SixNimmt-v0", render_mode=mode, num_players=3, learner_seat=1)
    assert env.metadata["render_modes"] == ["ansi", "human", "rgb_array"]
    env.reset(seed=0)
    hand = env.unwrapped.parallel.game_state.hands[1]
    out = env.render()
    if mode == "rgb_array":
        assert out.shape == (600, 960, 3) and out.dtype == np.uint8 and out.std() > 10
        return
    text = out if mode == "ansi" else capsys.readouterr().out
    assert (
        "hand of player_1: " + " ".join(map(str, hand)) in text and "player_1: total   0 (this round 0) (you)" in text
    )
    other = env.unwrapped.parallel.game_state.hands[0]
    assert not any(f" {c} " in f" {text.split('hand of')[1]} " for c in other)  # no other hand (R4)


def test_ansi_render_says_who_took_which_row_and_why() -> None:
    env = sixnimmt_env.parallel_env(num_players=3, render_mode="ansi", illegal_action="raise")
    env.reset(options={"hands": [[51, 90], [61, 91], [15, 92]], "rows": [[10, 11, 12, 13, 14], [50], [60], [70]]})
    env.step({"player_0": 50, "player_1": 60, "player_2": 14})  # RULES.md E2
    text = env.render()
    assert "player_2's 15 is the sixth card of row 0: takes 10 11 12 13 14 (11 bullheads)" in text
    assert "player_0 plays 51 on row 1" in text and "player_1 plays 61 on row 2" in text
    env.reset(options={"hands": [[5, 90], [71, 95], [20, 96]], "rows": [[50], [60], [70], [80]]})
    env.step({"player_0": 4, "player_1": 70, "player_2": 19})  # 5 is lower than every row (R9)
    assert "player_0's 5 is lower than every row: player_0 chooses the row it takes" in env.render()
    env.step({"player_0": 106, "player_1": 108, "player_2": 108})  # takes row 2: [70]
    text = env.render()
    assert "player_0's low card 5 takes row 2 (chosen): 70 (3 bullheads)" in text
    assert "player_2 plays 20 on row 2" in text and "player_1 plays 71 on row 1" in text


# --------------------------------------------------------------------------- 6. masks


def test_masks_are_never_empty_under_gymnasium_autoreset() -> None:
    """make_vec's default next-step autoreset reads the mask of a finished episode before resetting it."""
    envs = gymnasium.make_vec("sixnimmt/SixNimmt-v0", num_envs=2, vectorization_mode="sync", episode="round")
    _, infos = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(40):
        masks = np.stack(envs.call("action_masks"))
        assert masks.any(axis=1).all() and np.array_equal(masks, infos["action_mask"].astype(bool))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])  # crashed on an empty mask
        _, _, terminated, _, infos = envs.step(actions)
        for i in np.flatnonzero(terminated):
            finished += 1
            assert np.flatnonzero(masks_after := infos["action_mask"][i]).tolist() == [NOOP], masks_after
    assert finished >= 4
    envs.close()


def test_parallel_env_masks_after_the_end_hold_the_noop_alone() -> None:
    env = sixnimmt_env.parallel_env(num_players=2, episode="round")
    observations, _ = env.reset(seed=1)
    while env.agents:
        observations, *_ = env.step(_first_legal(observations, env.agents, 0))
    for ob in observations.values():
        assert np.flatnonzero(ob["action_mask"]).tolist() == [NOOP]


# --------------------------------------------------------------------------- 7. bounds, integer-like actions


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"num_players": 10, "end_score": 20, "end_rule": "more_than"},
        {"num_players": 2, "end_score": None, "max_rounds": 3},
        {"num_players": 5, "episode": "round", "end_score": None},
    ],
)
def test_observation_bounds_are_finite_and_hold(config: dict[str, Any]) -> None:
    env = sixnimmt_env.parallel_env(backend="compiled", **config)
    space = env.observation_space("player_0")["observation"]
    assert np.isfinite(space.high).all() and (space.low == 0).all()
    rng = np.random.default_rng(0)
    for seed in range(3):
        observations, _ = env.reset(seed=seed)
        while env.agents:
            for ob in observations.values():
                assert space.contains(ob["observation"])
            observations, *_ = env.step(
                {a: int(rng.choice(np.flatnonzero(observations[a]["action_mask"]))) for a in env.agents}
            )


def test_observation_bounds_follow_the_rules() -> None:
    high = observation_high(GameConfig())
    assert high[SLICES["totals"]][0] == np.float32((65 + DECK_BULLHEADS) / 66)  # 65 + a whole deck
    assert high[SLICES["round_penalties"]][0] == np.float32(171 / 66)
    assert high[SLICES["row_bullheads"]][0] == np.float32(2.7) and high[SLICES["round"]][0] == np.float32(26.2)
    with pytest.raises(ValueError, match=r"options\['totals'\] \[66, 0, 0, 0\] must be at most 65 bullheads"):
        sixnimmt_env.parallel_env().reset(options={"hands": [[1], [2], [3], [4]], "totals": [66, 0, 0, 0]})
    gym_env = gymnasium.make("sixnimmt/SixNimmt-v0")
    assert np.isfinite(gym_env.observation_space.high).all()


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_zero_dimensional_tensors_are_actions(backend: str) -> None:
    env = sixnimmt_env.parallel_env(num_players=2, backend=backend, illegal_action="raise")
    twin = sixnimmt_env.parallel_env(num_players=2, backend=backend, illegal_action="raise")
    observations, _ = env.reset(seed=3)
    twin.reset(seed=3)
    while env.agents:
        actions = _first_legal(observations, env.agents, 1)
        observations, rewards, *_ = env.step({a: torch.tensor(v) for a, v in actions.items()})
        assert rewards == twin.step(actions)[1]
    learner = make_env(num_players=3, illegal_action="raise")
    learner.reset(seed=0)
    action = int(np.flatnonzero(learner.action_masks())[0])
    assert learner.step(torch.tensor(action))[4]["illegal_action"] is False
    with pytest.raises(ValueError, match=r"player_\d: action 3\.0 of type float is not an integer; legal actions: \["):
        learner.step(3.0)
