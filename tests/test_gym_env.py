"""The Gymnasium single-seat environment (`sixnimmt_env.gym_env`): API conformance, seats, rewards, masks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import sixnimmt_env  # registers sixnimmt/SixNimmt-v0
from sixnimmt_env.agents import GreedyAgent
from sixnimmt_env.gym_env import ENV_ID, SingleSeatEnv, make_env, opponent_actions, seated
from sixnimmt_env.observation import OBS_SIZE, SLICES
from sixnimmt_env.pettingzoo_env import ILLEGAL_ACTION_PENALTY
from sixnimmt_env.rules.engine import CHOOSE_ROW, NOOP, ROW_ACTION


def _first_legal(env: Any) -> int:
    return int(np.flatnonzero(env.unwrapped.action_masks())[0])


def _play(env: Any, seed: int, policy: str = "first") -> tuple[list[np.ndarray], list[float], dict]:
    """One episode with the first (or a random masked) legal action; returns observations, rewards, last info."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    observations, rewards = [obs], []
    while True:
        mask = env.unwrapped.action_masks()
        legal = np.flatnonzero(mask)
        a = int(legal[0]) if policy == "first" else int(rng.choice(legal))
        obs, r, terminated, truncated, info = env.step(a)
        observations.append(obs)
        rewards.append(r)
        if terminated or truncated:
            return observations, rewards, info


def test_make_with_mixed_opponents_passes_both_checkers() -> None:
    env = gymnasium.make(ENV_ID, num_players=4, opponents=["greedy", "random", "mc:8"], episode="round")
    check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env.unwrapped, warn=False)
    assert env.observation_space.shape == (OBS_SIZE,)
    assert env.action_space.n == 109


def test_every_game_config_field_is_a_keyword() -> None:
    env = gymnasium.make(
        ENV_ID,
        num_players=3,
        variant="tactics",
        row_choice="cheapest",
        end_score=20,
        end_rule="more_than",
        max_rounds=2,
        episode="game",
        opponents="lowest",
        learner_seat=1,
    )
    obs, info = env.reset(seed=0)
    assert info["learner_seat"] == 1
    # tactics deck for 3 players: cards 1..34 only (V1)
    assert obs[SLICES["hand"]][34:].sum() == 0
    assert obs[SLICES["num_players"]][0] == pytest.approx(0.3)
    _, rewards, last = _play(env, 0)
    assert last["totals"][1] == -sum(rewards)
    assert len(last["totals"]) == 3


def test_round_reward_is_minus_the_learners_round_penalty_and_masks_never_offer_noop() -> None:
    env = make_env(num_players=4, episode="round", opponents=["lowest", "lowest", "greedy"], learner_seat=2)
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        total, steps, row_choices = 0.0, 0, 0
        while True:
            mask = env.action_masks()
            assert mask.dtype == bool and mask.shape == (109,)
            assert not mask[NOOP] and mask.any()
            phase = obs[SLICES["phase"]]
            if phase[1] == 1.0:  # choose_row: exactly the four row actions
                row_choices += 1
                assert np.flatnonzero(mask).tolist() == list(range(ROW_ACTION, ROW_ACTION + 4))
            obs, r, terminated, truncated, info = env.step(int(np.flatnonzero(mask)[-1]))
            total += r
            steps += 1
            if terminated:
                break
        assert not truncated and not info["illegal_action"]
        assert total == -info["round_penalties"][2] == -info["totals"][2]
        assert steps == 10 + row_choices  # 10 cards; asked again only for its own low-card row choices
        assert info["rank"] == 1 + sum(t < info["totals"][2] for t in info["totals"])


def test_same_seed_same_episode_and_random_seats_vary() -> None:
    a = make_env(num_players=5, episode="round", opponents=["random", "mc:4", "greedy", "random"])
    b = make_env(num_players=5, episode="round", opponents=["random", "mc:4", "greedy", "random"])
    obs_a, rew_a, info_a = _play(a, 11, "random")
    obs_b, rew_b, info_b = _play(b, 11, "random")
    assert rew_a == rew_b and data_equivalence(info_a, info_b)
    assert all(np.array_equal(x, y) for x, y in zip(obs_a, obs_b, strict=True))
    seats = {a.reset(seed=s)[1]["learner_seat"] for s in range(40)}
    assert seats == {0, 1, 2, 3, 4}


def test_illegal_action_terminates_with_the_documented_penalty() -> None:
    env = make_env(num_players=4, episode="round")
    env.reset(seed=3)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    obs, r, terminated, truncated, info = env.step(illegal)
    assert (r, terminated, truncated, info["illegal_action"]) == (-ILLEGAL_ACTION_PENALTY, True, False, True)
    assert obs.shape == (OBS_SIZE,)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(illegal)


def test_illegal_action_raise_gives_the_parallel_envs_error() -> None:
    env = make_env(num_players=4, episode="round", illegal_action="raise")
    env.reset(seed=3)
    with pytest.raises(ValueError, match=r"player_\d: action 108 is not legal in phase 'select'"):
        env.step(NOOP)


class _Spy:
    """Greedy, but records every view it is asked on."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, bool]] = []

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        self.asked.append((view["phase"], view["must_act"]))
        return GreedyAgent().act(view, rng)


def test_opponent_objects_are_asked_only_with_a_decision() -> None:
    spy = _Spy()
    env = make_env(num_players=4, episode="round", opponents=[spy, "lowest", "lowest"], learner_seat=0)
    for seed in range(3):
        _play(env, seed)
    assert spy.asked and all(must for _, must in spy.asked)
    selects = sum(phase == "select" for phase, _ in spy.asked)
    assert selects == 30  # 10 cards in each of 3 rounds
    assert all(phase in ("select", CHOOSE_ROW) for phase, _ in spy.asked)


def test_logic_variant_asks_the_learner_for_draft_picks() -> None:
    env = make_env(num_players=3, variant="logic", episode="round", opponents="greedy", learner_seat=1)
    obs, _ = env.reset(seed=0)
    assert obs[SLICES["phase"]][2] == 1.0  # draft
    picks = 0
    while obs[SLICES["phase"]][2] == 1.0:
        legal = np.flatnonzero(env.action_masks())
        assert legal.max() < 34  # display cards of the 3-player tactics deck
        obs, *_ = env.step(int(legal[0]))
        picks += 1
    assert picks == 10
    assert obs[SLICES["hand"]].sum() == 10


def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(ValueError, match=r"opponents must name 3 agents \(num_players=4\)"):
        make_env(num_players=4, opponents=["greedy", "greedy"])
    with pytest.raises(ValueError, match="unknown agent spec 'gredy'"):
        make_env(num_players=4, opponents="gredy")
    with pytest.raises(ValueError, match="learner_seat"):
        make_env(num_players=4, learner_seat=4)
    with pytest.raises(ValueError, match="illegal_action"):
        make_env(num_players=4, illegal_action="ignore")
    with pytest.raises(ValueError, match="num_players"):
        make_env(num_players=11)


def test_sampler_draws_opponents_per_episode_from_the_env_rng() -> None:
    drawn: list[list[str]] = []

    def sampler(rng: np.random.Generator, k: int) -> list[Any]:
        names = [str(rng.choice(["greedy", "random", "lowest"])) for _ in range(k)]
        drawn.append(names)
        from sixnimmt_env.agents import make_agent

        return [make_agent(n) for n in names]

    env = SingleSeatEnv(make_env(num_players=4).parallel, opponents=sampler)
    env.reset(seed=1)
    env.reset()
    first = list(drawn)
    drawn.clear()
    env.reset(seed=1)
    env.reset()
    assert drawn == first and len(first) == 2 and all(len(d) == 3 for d in first)


class _ViewRecorder:
    """Greedy; records, at every decision, its view as a dict next to the engine's own view of the same state."""

    def __init__(self, env: SingleSeatEnv) -> None:
        self.env = env
        self.pairs: list[tuple[dict, dict]] = []

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        from sixnimmt_env.rules.engine import view as engine_view

        expected = dict(engine_view(self.env.parallel.game_state, view["seat"]))
        self.pairs.append(({k: view[k] for k in view}, expected))
        return GreedyAgent().act(view, rng)


def test_opponent_views_equal_the_engines_views_key_for_key() -> None:
    env = make_env(num_players=4, episode="round", learner_seat=0)
    recorders = [_ViewRecorder(env) for _ in range(3)]
    env.set_opponents(recorders)
    for seed in range(3):
        _play(env, seed, "random")
    pairs = [p for r in recorders for p in r.pairs]
    assert len(pairs) >= 90  # 3 opponents x 10 cards x 3 rounds, plus their low-card row choices
    for got, expected in pairs:
        assert set(got) == set(expected) and len(got) == 19  # 18 keys and the draft picks (V2, `drafted`)
        assert got == expected
    assert {got["seat"] for r in recorders for got, _ in r.pairs} == {1, 2, 3}


class _ObservationSpy:
    """Plays its lowest legal action from the mask; records the observation and mask it was handed."""

    def __init__(self, env: SingleSeatEnv) -> None:
        self.env = env
        self.checked = 0

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        raise AssertionError("an ObservationAgent opponent is asked through act_observation")

    def act_observation(self, observation: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        from sixnimmt_env.observation import action_mask, encode

        state = self.env.parallel.game_state
        seats = [s for s in range(4) if np.array_equal(encode(state, s), observation)]
        assert len(seats) == 1 and np.array_equal(action_mask(state, seats[0]).astype(bool), mask.astype(bool))
        self.checked += 1
        return int(np.flatnonzero(mask)[0])


def test_observation_agents_get_their_seats_encoded_observation_and_mask() -> None:
    from sixnimmt_env.gym_env import ObservationAgent

    env = make_env(num_players=4, episode="round", learner_seat=1)
    spy = _ObservationSpy(env)
    assert isinstance(spy, ObservationAgent)
    env.set_opponents([spy, "lowest", "lowest"])
    _play(env, 5)
    assert spy.checked >= 10  # its 10 cards, plus any low-card row choice


def test_non_integer_actions_are_refused_and_change_nothing():
    from sixnimmt_env.gym_env import make_env

    env = make_env(num_players=3, opponents="greedy", learner_seat=0, episode="round")
    obs, _ = env.reset(seed=1)
    legal = int(np.flatnonzero(env.action_masks())[0])
    for bad in (legal + 0.9, str(legal), None, np.array([legal, legal])):
        with pytest.raises(ValueError, match=r"^player_0: action .* is not an integer; legal actions: \["):
            env.step(bad)
        np.testing.assert_array_equal(env.unwrapped._obs, obs)
    _, reward, _, _, info = env.step(np.array(legal))  # what MaskablePPO.predict returns
    assert not info.get("illegal_action") and reward <= 0


class _HighestOnMask:
    """An observation agent (:class:`sixnimmt_env.gym_env.ObservationAgent`) that plays its highest legal action;
    its ``act`` must not be called."""

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        raise AssertionError("an observation agent decides on its observation")

    def act_observation(self, observation: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        assert observation.shape == (OBS_SIZE,)
        return int(np.flatnonzero(mask)[-1])


def test_opponent_actions_fill_the_deciders_of_the_joint_action() -> None:
    """The one opponent turn: view agents get their seat's view, observation agents their observation and mask;
    a seat without a decision (its no-op legal) keeps the no-op; the learner's entry is left as it is."""
    par = sixnimmt_env.parallel_env(num_players=3, row_choice="player", illegal_action="raise")
    hands = [[51, 90], [61, 91], [5, 92]]
    observations, _ = par.reset(options={"hands": hands, "rows": [[10, 11, 12, 13, 14], [50], [60], [70]]})
    opponents = seated(par.possible_agents, [(1, GreedyAgent()), (2, _HighestOnMask())])
    assert [(o.seat, o.name) for o in opponents] == [(1, "player_1"), (2, "player_2")]
    assert opponents[0].act_observation is None and opponents[1].act_observation is not None
    rng = np.random.default_rng(0)
    actions = opponent_actions(par, observations, opponents, {"player_0": 50, "player_1": NOOP, "player_2": NOOP}, rng)
    greedy = GreedyAgent().act(par.view("player_1"), rng)
    assert actions == {"player_0": 50, "player_1": greedy, "player_2": 91}  # card 92 is action 91
    assert greedy in (60, 90)
    # player_2's 5 is lower than every row (R9): only player_2 chooses a row, the others keep the no-op
    observations, _, _, _, _ = par.step({"player_0": 50, "player_1": 60, "player_2": 4})
    assert par.game_state.phase == CHOOSE_ROW
    opponents = seated(par.possible_agents, [(1, GreedyAgent()), (2, GreedyAgent())])
    actions = opponent_actions(par, observations, opponents, dict.fromkeys(par.possible_agents, NOOP), rng)
    assert actions["player_0"] == actions["player_1"] == NOOP and ROW_ACTION <= actions["player_2"] < ROW_ACTION + 4
