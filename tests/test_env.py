"""The PettingZoo parallel environment: API conformance, determinism, rewards, masks, no leak, illegal actions."""

from __future__ import annotations

import copy
import pickle
import random
import warnings
from collections.abc import MutableMapping
from typing import Any

import numpy as np
import pytest
from conftest import BAD_E2_ACTIONS
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test

from sixnimmt_env.observation import OBS_SIZE, encode, pieces
from sixnimmt_env.pettingzoo_env import (
    ILLEGAL_ACTION_PENALTY,
    STATE_SIZE,
    SixNimmtParallelEnv,
    ViewInfo,
    env,
)
from sixnimmt_env.pettingzoo_env import parallel_env as default_parallel_env
from sixnimmt_env.rules import engine
from sixnimmt_env.rules.engine import CHOOSE_ROW, DRAFT, SELECT


def parallel_env(**config: Any) -> SixNimmtParallelEnv:
    """The ParallelEnv with its readable infos (``infos="view"``) and the named error for illegal actions
    (``illegal_action="raise"``), which most tests here read; the defaults are tested by the conformance tests
    below (the real factory, ``default_parallel_env``) and ``tests/test_interop_defaults.py``."""
    return default_parallel_env(**{"infos": "view", "illegal_action": "raise", **config})


NAMES3 = ["player_0", "player_1", "player_2"]


def random_actions(par_env: SixNimmtParallelEnv, infos: dict[str, Any], pick: random.Random) -> dict[str, int]:
    """A uniformly random legal action per live agent, read from the readable infos."""
    return {name: pick.choice(infos[name]["legal_actions"]) for name in par_env.agents}


def play(par_env: SixNimmtParallelEnv, seed: int | None, pick: random.Random) -> list[tuple[Any, ...]]:
    """Play one episode; return every step's (actions, observations, rewards, terminations, infos)."""
    observations, infos = par_env.reset(seed=seed)
    trace: list[tuple[Any, ...]] = [(None, observations, None, None, dict(infos["player_0"]))]
    while par_env.agents:
        actions = random_actions(par_env, infos, pick)
        observations, rewards, terminations, truncations, infos = par_env.step(actions)
        assert not any(truncations.values())
        trace.append((actions, observations, rewards, terminations, dict(infos["player_0"])))
    return trace


def assert_same_trace(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> None:
    assert len(a) == len(b)
    for (act_a, obs_a, rew_a, term_a, info_a), (act_b, obs_b, rew_b, term_b, info_b) in zip(a, b, strict=True):
        assert act_a == act_b and rew_a == rew_b and term_a == term_b and info_a == info_b
        for name, o in obs_a.items():
            np.testing.assert_array_equal(o["observation"], obs_b[name]["observation"])
            np.testing.assert_array_equal(o["action_mask"], obs_b[name]["action_mask"])


# --------------------------------------------------------------------------- PettingZoo conformance


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"num_players": 2, "variant": "logic", "episode": "round"},
        {"num_players": 10, "row_choice": "cheapest", "end_score": 20},
    ],
)
def test_parallel_api(config: dict[str, Any]) -> None:
    parallel_api_test(default_parallel_env(**config), num_cycles=300)


def test_aec_api() -> None:
    api_test(env(num_players=3), num_cycles=300)


def test_render() -> None:
    render_test(env)


def test_pettingzoo_seed_tests() -> None:
    seed_test(env)
    # PettingZoo's parallel seed test samples actions without their masks, so most are illegal:
    # under illegal_action="terminate" both copies must end identically on the first step.
    parallel_seed_test(lambda: default_parallel_env(illegal_action="terminate"))


def test_metadata_spaces_and_agents() -> None:
    par_env = parallel_env(num_players=3)
    assert par_env.metadata["name"] == "sixnimmt_v0" and par_env.metadata["is_parallelizable"]
    assert par_env.metadata["render_modes"] == ["ansi", "human", "rgb_array"]
    assert par_env.possible_agents == NAMES3 and par_env.agents == []
    space = par_env.observation_space("player_1")
    assert space["observation"].shape == (OBS_SIZE,) and space["observation"].dtype == np.float32
    assert space["action_mask"].shape == (109,) and space["action_mask"].dtype == np.int8
    assert par_env.action_space("player_2").n == 109
    observations, _ = par_env.reset(seed=0)
    assert par_env.agents == NAMES3
    for name in NAMES3:
        assert space.contains(observations[name]) or par_env.observation_space(name).contains(observations[name])
    with pytest.raises(ValueError, match="unknown agent 'player_3'"):
        par_env.action_space("player_3")


def test_parallel_env_declares_the_spaces_dicts() -> None:
    """``observation_spaces`` / ``action_spaces`` (PettingZoo's ``ParallelEnv`` attributes, read by skrl's
    ``wrap_env``): one entry per possible agent, the very objects the methods return; the AEC env has them too."""
    par_env = parallel_env(num_players=5)
    names = [f"player_{i}" for i in range(5)]
    assert list(par_env.observation_spaces) == names and list(par_env.action_spaces) == names
    for name in names:
        assert par_env.observation_spaces[name] is par_env.observation_space(name)
        assert par_env.action_spaces[name] is par_env.action_space(name)
        assert par_env.action_spaces[name].n == 109
        assert par_env.observation_spaces[name]["action_mask"].shape == (109,)
    observations, _ = par_env.reset(seed=3)
    assert all(par_env.observation_spaces[name].contains(observations[name]) for name in names)
    aec = env(num_players=5)
    assert aec.observation_spaces == par_env.observation_spaces and aec.action_spaces == par_env.action_spaces


def test_unknown_and_bad_keywords_are_named() -> None:
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['players'\]; allowed: num_players, variant"):
        parallel_env(players=4)
    with pytest.raises(ValueError, match="reward must be one of 'penalty', 'relative', got 'mean'"):
        parallel_env(reward="mean")
    with pytest.raises(ValueError, match="illegal_action must be one of"):
        parallel_env(illegal_action="ignore")
    with pytest.raises(ValueError, match="render_mode must be None or one of 'ansi', 'human', 'rgb_array', got 'rgb'"):
        parallel_env(render_mode="rgb")
    with pytest.raises(ValueError, match="variant"):
        env(variant="chaos")


# --------------------------------------------------------------------------- determinism


def test_same_seed_same_whole_games_and_resets_continue_the_stream() -> None:
    a, b = parallel_env(num_players=4, end_score=40), parallel_env(num_players=4, end_score=40)
    games_a = [play(a, 7, random.Random(1)), play(a, None, random.Random(2))]
    games_b = [play(b, 7, random.Random(1)), play(b, None, random.Random(2))]
    for ga, gb in zip(games_a, games_b, strict=True):
        assert_same_trace(ga, gb)
        assert len(ga) > 10 and all(ga[-1][3].values())
    # the second reset continued the stream: a different deal than the first
    assert games_a[0][0][4]["hand"] != games_a[1][0][4]["hand"]
    other = play(parallel_env(num_players=4, end_score=40), 8, random.Random(1))
    assert other[0][4]["hand"] != games_a[0][0][4]["hand"]


def test_logic_variant_draft_is_seeded_through_the_env() -> None:
    a = play(parallel_env(num_players=3, variant="logic", episode="round"), 3, random.Random(0))
    b = play(parallel_env(num_players=3, variant="logic", episode="round"), 3, random.Random(0))
    assert_same_trace(a, b)


# --------------------------------------------------------------------------- episodes and rewards


def test_episode_ends_with_all_terminations_and_returns_equal_minus_the_penalties() -> None:
    par_env = parallel_env(num_players=5, end_score=30)
    _, infos = par_env.reset(seed=11)
    pick = random.Random(11)
    returns = dict.fromkeys(par_env.possible_agents, 0.0)
    steps = 0
    while par_env.agents:
        _, rewards, terminations, truncations, infos = par_env.step(random_actions(par_env, infos, pick))
        steps += 1
        for name, r in rewards.items():
            returns[name] += r
        if par_env.agents:
            assert not any(terminations.values())
    assert all(terminations.values()) and not any(truncations.values()) and par_env.agents == []
    final = par_env.game_state
    assert final.phase == "done" and max(final.totals) >= 30
    assert [-returns[name] for name in par_env.possible_agents] == list(final.totals)
    with pytest.raises(ValueError, match="the episode is over"):
        par_env.step({})


def test_episode_round_ends_after_ten_turns() -> None:
    par_env = parallel_env(num_players=4, row_choice="cheapest", episode="round")
    _, infos = par_env.reset(seed=0)
    pick = random.Random(0)
    steps = 0
    while par_env.agents:
        _, _, terminations, _, infos = par_env.step(random_actions(par_env, infos, pick))
        steps += 1
    assert steps == 10 and all(terminations.values())


E2 = {"hands": [[51, 90], [61, 91], [15, 92]], "rows": [[10, 11, 12, 13, 14], [50], [60], [70]]}


@pytest.mark.parametrize(
    ("reward", "expected"),
    [("penalty", [0.0, 0.0, -11.0]), ("relative", [5.5, 5.5, -11.0])],
)
def test_rewards_on_rules_E2(reward: str, expected: list[float]) -> None:
    par_env = parallel_env(num_players=3, reward=reward)
    par_env.reset(options=E2)
    _, rewards, _, _, infos = par_env.step({"player_0": 50, "player_1": 60, "player_2": 14})
    assert [rewards[name] for name in NAMES3] == expected
    assert infos["player_2"]["round_penalties"] == [0, 0, 11]
    assert infos["player_0"]["rows"] == [[15], [50, 51], [60, 61], [70]]


def test_row_choice_through_the_env_rules_E1() -> None:
    par_env = parallel_env(num_players=2)
    observations, _ = par_env.reset(options={"hands": [[5, 90], [71, 95]], "rows": [[50], [60], [70], [80]]})
    observations, rewards, _, _, infos = par_env.step({"player_0": 4, "player_1": 70})
    assert rewards == {"player_0": 0.0, "player_1": 0.0}
    assert infos["player_0"]["phase"] == CHOOSE_ROW and infos["player_0"]["legal_actions"] == [104, 105, 106, 107]
    assert infos["player_1"]["legal_actions"] == [108] and infos["player_1"]["revealed"] == [5, 71]
    assert np.flatnonzero(observations["player_0"]["action_mask"]).tolist() == [104, 105, 106, 107]
    assert np.flatnonzero(observations["player_1"]["action_mask"]).tolist() == [108]
    observations, rewards, _, _, infos = par_env.step({"player_0": 106, "player_1": 108})
    assert rewards == {"player_0": -3.0, "player_1": 0.0}
    assert infos["player_1"]["rows"] == [[50], [60, 71], [5], [80]]
    assert infos["player_0"]["hand"] == [90] and infos["player_0"]["totals"] == [3, 0]
    np.testing.assert_array_equal(observations["player_0"]["observation"], encode(par_env.game_state, 0))


def test_logic_variant_draft_through_the_env() -> None:
    par_env = parallel_env(num_players=2, variant="logic", episode="round")
    observations, infos = par_env.reset(seed=0)
    assert infos["player_0"]["phase"] == DRAFT and infos["player_0"]["display"] == list(range(1, 25))
    picks = 0
    while infos["player_0"]["phase"] == DRAFT:
        chooser = infos["player_0"]["chooser"]
        assert chooser == picks % 2  # seat order from seat 0 in the first round (V2)
        picker, other = f"player_{chooser}", f"player_{1 - chooser}"
        assert np.flatnonzero(observations[picker]["action_mask"]).tolist() == [c - 1 for c in infos[picker]["display"]]
        assert np.flatnonzero(observations[other]["action_mask"]).tolist() == [108]
        card = infos[picker]["display"][-1]  # take the highest card on display
        observations, rewards, _, _, infos = par_env.step({picker: card - 1, other: 108})
        assert card in infos[picker]["hand"] and card not in infos[picker]["display"]
        assert rewards == {"player_0": 0.0, "player_1": 0.0}
        picks += 1
    assert picks == 20
    assert infos["player_0"]["phase"] == SELECT
    assert infos["player_0"]["hand"] == list(range(24, 4, -2))[::-1]  # seat 0 took 24, 22, ..., 6
    assert infos["player_1"]["hand"] == list(range(23, 3, -2))[::-1]
    assert infos["player_0"]["rows"] == [[1], [2], [3], [4]]


# --------------------------------------------------------------------------- observations, masks, infos, state


def test_masks_and_infos_give_exactly_the_legal_actions_for_a_whole_game() -> None:
    par_env = parallel_env(num_players=4, end_score=30)
    observations, infos = par_env.reset(seed=4)
    pick = random.Random(4)
    while par_env.agents:
        state = par_env.game_state
        for seat, name in enumerate(par_env.agents):
            legal = list(engine.legal_actions(state, seat))
            assert legal and infos[name]["legal_actions"] == legal
            assert np.flatnonzero(observations[name]["action_mask"]).tolist() == legal
            np.testing.assert_array_equal(observations[name]["observation"], encode(state, seat))
        observations, _, _, _, infos = par_env.step(random_actions(par_env, infos, pick))


def test_no_leak_of_other_hands_rules_E4() -> None:
    """Player 0's observation and info are the same whatever the others hold (the rest lies in the stock)."""
    rows = [[20], [40], [60], [80]]
    mine = [3, 33, 63, 93]
    free = [c for c in range(1, 105) if c not in mine and c not in (20, 40, 60, 80)]
    traces = []
    for seed in range(3):
        shuffled = random.Random(seed).sample(free, len(free))
        # the other players play the same first cards (21 and 41), then hold different hidden cards
        rest = [c for c in shuffled if c not in (21, 41)]
        hands = [mine, [21, *rest[0:3]], [41, *rest[3:6]]]
        par_env = parallel_env(num_players=3)
        observations, infos = par_env.reset(options={"hands": hands, "rows": rows})
        trace = [(observations["player_0"]["observation"], dict(infos["player_0"]))]
        observations, _, _, _, infos = par_env.step({"player_0": 62, "player_1": 20, "player_2": 40})
        trace.append((observations["player_0"]["observation"], dict(infos["player_0"])))
        traces.append(trace)
    for trace in traces[1:]:
        for (obs, info), (obs0, info0) in zip(trace, traces[0], strict=True):
            np.testing.assert_array_equal(obs, obs0)
            assert info == info0
    assert traces[0][1][1]["revealed"] == [63, 21, 41]


def test_view_infos_read_as_dicts() -> None:
    par_env = parallel_env(num_players=3)
    _, infos = par_env.reset(options=E2)
    info = infos["player_2"]
    assert type(info) is ViewInfo and isinstance(info, MutableMapping) and type(infos) is dict
    with pytest.raises(TypeError, match=r"ViewInfo\.infos\(names, position\)"):
        ViewInfo()
    assert info["hand"] == [15, 92] and info.get("phase") == SELECT and info.get("nope", 1) == 1
    assert "rows" in info and "nope" not in info
    view = dict(engine.view(par_env.game_state, 2))
    assert dict(info) == view and info == view and len(info) == len(view) and set(info) == set(view)
    assert copy.copy(infos["player_1"]) == dict(engine.view(par_env.game_state, 1))
    assert pickle.loads(pickle.dumps(infos["player_0"])) == dict(engine.view(par_env.game_state, 0))
    info["note"] = "mine"
    assert info["note"] == "mine" and info["legal_actions"] == [14, 91]
    with pytest.raises(KeyError):
        infos["player_1"]["nope"]
    # copies and pickles are plain dicts of the agent's view alone (R4): no other seat's hand travels with them
    for made in (copy.copy(info), copy.deepcopy(info), pickle.loads(pickle.dumps(info)), dict(info), info.copy()):
        assert type(made) is dict and made == {**view, "note": "mine"}
    # the pickle is the dict's and a call of `dict` (24 bytes): the step's state (about 480 bytes) is not in it
    assert len(pickle.dumps(info)) <= len(pickle.dumps(dict(info))) + 24 and repr(info) == repr(dict(info))
    del info["note"]
    assert "note" not in info and info == view and info.pop("hand") == [15, 92] and "hand" not in info
    assert infos["player_1"]["hand"] == [61, 91]  # one agent's changes stay in its own dict


def test_view_infos_are_built_when_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step whose infos nobody reads builds no view; the first read builds every seat's once (both backends),
    and infos read late still show their own step."""
    built: list[int] = []
    views = engine.views

    def counted(state: engine.State) -> list[dict[str, Any]]:
        built.append(state.turn)
        return views(state)

    monkeypatch.setattr(engine, "views", counted)
    for backend in ("reference", "compiled"):
        par_env = parallel_env(num_players=4, backend=backend)
        _, infos = par_env.reset(seed=3)
        for _ in range(4):
            built.clear()
            actions = {name: infos[name]["legal_actions"][0] for name in par_env.agents}
            assert len(built) == 1  # the first read built every seat's view, the next ones none
            observations, _, _, _, infos = par_env.step(actions)
            assert len(built) == 1  # the new step's infos are not read yet
        late, state = infos, par_env.game_state
        for _ in range(2):  # acting on the masks: the infos stay unread
            masks = {name: observations[name]["action_mask"] for name in par_env.agents}
            observations, *_ = par_env.step({name: int(m.nonzero()[0][-1]) for name, m in masks.items()})
        assert len(built) == 1
        assert [dict(late[name]) for name in par_env.agents] == [dict(engine.view(state, s)) for s in range(4)]
        assert len(built) == 2 and built[-1] == state.turn
        assert late["player_0"]["turn"] == state.turn != par_env.game_state.turn


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_api_tests_with_view_infos(backend: str) -> None:
    """PettingZoo's checkers pass with ``infos="view"``; the AEC env hands out plain dicts (its API asks for them)."""
    parallel_api_test(default_parallel_env(num_players=3, infos="view", backend=backend), num_cycles=100)
    aec = env(num_players=3, infos="view", backend=backend)
    api_test(aec, num_cycles=100)
    aec.reset(seed=0)
    for agent in aec.agents:
        info = aec.infos[agent]
        assert type(info) is dict and info == dict(engine.view(aec.unwrapped.game_state, int(agent[-1])))


def test_state_holds_every_hand_and_seat_0s_observation() -> None:
    par_env = parallel_env(num_players=3)
    par_env.reset(options=E2)
    state = par_env.state()
    assert state.shape == (STATE_SIZE,) == (1546,) and state.dtype == np.float32
    assert par_env.state_space.contains(state)
    for seat, hand in enumerate(E2["hands"]):
        assert (np.flatnonzero(state[seat * 104 : (seat + 1) * 104]) + 1).tolist() == hand
    assert not state[3 * 104 : 1040].any()
    np.testing.assert_array_equal(state[1040:], encode(par_env.game_state, 0))


# --------------------------------------------------------------------------- reset options


def test_options_are_copied_and_unknown_keys_ignored() -> None:
    hands = [[51, 90], [61, 91], [15, 92]]
    rows = [[10, 11, 12, 13, 14], [50], [60], [70]]
    totals = [1, 2, 3]
    par_env = parallel_env(num_players=3)
    observations, _ = par_env.reset(options={"hands": hands, "rows": rows, "totals": totals, "speed": "fast"})
    before = observations["player_0"]["observation"].copy()
    hands[0].append(99)
    rows[1][0] = 49
    totals[0] = 60
    state = par_env.game_state
    assert state.hands[0] == (51, 90) and state.rows[1] == (50,) and state.totals == (1, 2, 3)
    _, _, _, _, infos = par_env.step({"player_0": 50, "player_1": 60, "player_2": 14})
    assert infos["player_0"]["rows"] == [[15], [50, 51], [60, 61], [70]]
    np.testing.assert_array_equal(before, encode(state, 0))


def test_bad_start_positions_are_explained() -> None:
    par_env = parallel_env(num_players=3)
    with pytest.raises(ValueError, match="duplicate cards"):
        par_env.reset(options={"hands": [[1], [1], [2]], "rows": [[10], [20], [30], [40]]})
    with pytest.raises(ValueError, match=r"needs options\['hands'\]"):
        par_env.reset(options={"rows": [[10], [20], [30], [40]]})


# --------------------------------------------------------------------------- illegal actions


@pytest.fixture
def e2_env() -> SixNimmtParallelEnv:
    par_env = parallel_env(num_players=3)
    par_env.reset(options=E2)
    return par_env


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        *BAD_E2_ACTIONS,
        (
            {"player_0": 50, "player_1": 61, "player_2": 14},
            r"player_1: action 61 is not legal in phase 'select'; legal actions: \[60, 90\]",
        ),
    ],
)
def test_bad_actions_raise_and_change_nothing(e2_env: SixNimmtParallelEnv, actions: Any, message: str) -> None:
    state = e2_env.game_state
    with pytest.raises(ValueError, match=message):
        e2_env.step(actions)
    assert e2_env.game_state is state and e2_env.agents == NAMES3
    # still usable: numpy integer scalars are valid actions
    _, rewards, _, _, _ = e2_env.step({"player_0": np.int64(50), "player_1": np.int32(60), "player_2": 14})
    assert rewards["player_2"] == -11.0


def test_illegal_action_terminate_ends_the_episode_with_the_documented_penalty() -> None:
    par_env = parallel_env(num_players=3, illegal_action="terminate")
    par_env.reset(options=E2)
    state = par_env.game_state
    observations, rewards, terminations, truncations, _ = par_env.step({"player_0": 50, "player_1": 0, "player_2": 14})
    assert rewards == {"player_0": 0.0, "player_1": -ILLEGAL_ACTION_PENALTY, "player_2": 0.0}
    assert ILLEGAL_ACTION_PENALTY == 171.0
    assert all(terminations.values()) and not any(truncations.values()) and par_env.agents == []
    assert par_env.game_state is state
    np.testing.assert_array_equal(observations["player_0"]["observation"], encode(state, 0))
    with pytest.raises(ValueError, match="the episode is over"):
        par_env.step({"player_0": 50, "player_1": 60, "player_2": 14})
    # the terminal masks hold the no-op alone (never empty), like the masks after the last round
    for name in NAMES3:
        assert np.flatnonzero(observations[name]["action_mask"]).tolist() == [108]


@pytest.mark.parametrize("backend", ["reference", "compiled"])
@pytest.mark.parametrize("bad", [500, -1, 2**70, np.int64(109)])
def test_terminate_handles_out_of_range_integers_like_the_gymnasium_env(backend: str, bad: Any) -> None:
    """An integer outside 0..108 is an illegal action: under "terminate" it ends the episode (-171 for its agent),
    as the Gymnasium env does with its learner's action."""
    par_env = default_parallel_env(num_players=3, backend=backend)  # the default: illegal_action="terminate"
    par_env.reset(options=E2)
    _, rewards, terminations, _, _ = par_env.step({"player_0": 50, "player_1": 60, "player_2": bad})
    assert rewards == {"player_0": 0.0, "player_1": 0.0, "player_2": -ILLEGAL_ACTION_PENALTY}
    assert all(terminations.values()) and par_env.agents == []


@pytest.mark.parametrize("backend", ["reference", "compiled"])
@pytest.mark.parametrize("bad", [60.0, np.float32(60), "60", None, True, np.array([60, 60])])
def test_terminate_still_refuses_values_that_are_not_integers(backend: str, bad: Any) -> None:
    """A value that is not an integer is malformed input, not a move: a ValueError in both modes (and in the
    Gymnasium env); nothing changes and the env stays usable."""
    par_env = default_parallel_env(num_players=3, backend=backend)
    par_env.reset(options=E2)
    state = par_env.game_state
    with pytest.raises(ValueError, match=r"player_1: action .* is not an integer; legal actions: \[60, 90\]"):
        par_env.step({"player_0": 50, "player_1": bad, "player_2": 14})
    assert par_env.agents == NAMES3 and par_env.game_state == state
    _, rewards, _, _, _ = par_env.step({"player_0": 50, "player_1": 60, "player_2": 14})
    assert rewards["player_2"] == -11.0


def test_step_before_reset_is_explained() -> None:
    with pytest.raises(ValueError, match=r"call reset\(\) first"):
        parallel_env().step({})


# --------------------------------------------------------------------------- rendering


def test_render_ansi_shows_rows_bullheads_scores_and_the_decision() -> None:
    par_env = parallel_env(num_players=2, render_mode="ansi")
    par_env.reset(options={"hands": [[5, 90], [71, 95]], "rows": [[50], [60], [70], [80]], "totals": [4, 9]})
    par_env.step({"player_0": 4, "player_1": 70})
    text = par_env.render()
    assert isinstance(text, str)
    assert "decision: player_0 chooses the row its low card 5 takes" in text
    assert "row 2:  70" in text and "(3 bullheads)" in text
    assert "player_1: total   9" in text and "revealed: player_0 5, player_1 71" in text
    assert "95" not in text  # hands stay hidden (R4)


def test_render_human_prints_and_none_warns(capsys: pytest.CaptureFixture[str]) -> None:
    par_env = parallel_env(render_mode="human")
    par_env.reset(seed=0)
    assert par_env.render() is None
    assert "decision: every player chooses a card" in capsys.readouterr().out
    quiet = parallel_env()
    quiet.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert quiet.render() is None
    assert any("render_mode" in str(w.message) for w in caught)


def test_observation_pieces_are_seat_relative_through_the_env() -> None:
    par_env = parallel_env(num_players=3)
    observations, _ = par_env.reset(options={**E2, "totals": [6, 12, 18]})
    for seat, name in enumerate(NAMES3):
        totals = pieces(observations[name]["observation"])["totals"][:3]
        expected = [[6, 12, 18][(seat + k) % 3] / 66 for k in range(3)]
        np.testing.assert_array_equal(totals, np.asarray(expected, np.float32))
