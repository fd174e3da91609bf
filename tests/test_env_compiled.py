"""The ParallelEnv's compiled backend (``backend="compiled"``): parity with the reference backend, API, errors.

The contract: from the same position (and the same deals) with the same actions, both backends give identical
observations, masks, rewards, terminations, truncations, infos, game states and ``state()`` vectors after every
step; only the deals a seed produces differ (the compiled backend draws from the batched engine's generator).
"""

from __future__ import annotations

import copy
import itertools
import pickle
from typing import Any

import numpy as np
import pytest
from conftest import BAD_E2_ACTIONS
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test

from sixnimmt_env.backends import OK, OVER, PENALTIES
from sixnimmt_env.compiled import BatchedGames, reference_deals, single
from sixnimmt_env.observation import OBS_SIZE, action_mask, encode
from sixnimmt_env.pettingzoo_env import (
    ILLEGAL_ACTION_PENALTY,
    SixNimmtParallelEnv,
    env,
)
from sixnimmt_env.pettingzoo_env import parallel_env as default_parallel_env
from sixnimmt_env.rules import engine
from sixnimmt_env.rules.engine import DRAFT, GameConfig


def parallel_env(**config: Any) -> SixNimmtParallelEnv:
    """The ParallelEnv with its readable infos (``infos="view"``) and the named error for illegal actions
    (``illegal_action="raise"``), which most tests here read; the defaults are tested by the conformance tests
    below (the real factory, ``default_parallel_env``) and ``tests/test_interop_defaults.py``."""
    return default_parallel_env(**{"infos": "view", "illegal_action": "raise", **config})


NAMES3 = ["player_0", "player_1", "player_2"]
E2 = {"hands": [[51, 90], [61, 91], [15, 92]], "rows": [[10, 11, 12, 13, 14], [50], [60], [70]]}
"""RULES.md E2: player_2's 14 is the sixth card of row 0 (11 bullheads: 10, 11, 12, 13, 14 = 3 + 5 + 1 + 1 + 1)."""

# (env kwargs, games): every variant and option, several table sizes; a few hundred games in all.
CONFIGS: list[tuple[dict[str, Any], int]] = [
    ({"num_players": 2, "episode": "round"}, 40),
    ({"num_players": 3, "variant": "tactics", "reward": "relative"}, 10),
    ({"num_players": 4}, 12),
    ({"num_players": 4, "row_choice": "cheapest", "episode": "round", "reward": "relative"}, 40),
    ({"num_players": 5, "variant": "logic", "episode": "round"}, 20),
    ({"num_players": 6, "end_rule": "more_than", "end_score": 30}, 10),
    ({"num_players": 7, "variant": "tactics", "row_choice": "cheapest", "max_rounds": 2}, 10),
    ({"num_players": 8, "end_score": None, "max_rounds": 2, "reward": "relative"}, 8),
    ({"num_players": 9, "variant": "logic", "row_choice": "cheapest", "end_score": 25}, 5),
    ({"num_players": 10, "episode": "round"}, 20),
    ({"num_players": 3, "variant": "logic", "max_rounds": 2, "end_score": None}, 8),
    ({"num_players": 4, "episode": "round", "illegal_action": "terminate"}, 30),
]
ROUNDS = 40


def _config(kwargs: dict[str, Any]) -> GameConfig:
    return GameConfig(**{k: v for k, v in kwargs.items() if k in GameConfig.field_names()})


def _assert_same_step(ref: SixNimmtParallelEnv, comp: SixNimmtParallelEnv, out_ref: tuple, out_comp: tuple) -> None:
    """Both backends' step/reset outputs and states are identical (the ``infos`` read in full)."""
    assert len(out_ref) == len(out_comp)
    for a, b in zip(out_ref[1:-1], out_comp[1:-1], strict=True):  # rewards, terminations, truncations
        assert a == b and all(type(v) is type(b[k]) for k, v in a.items())
    obs_ref, obs_comp = out_ref[0], out_comp[0]
    assert list(obs_ref) == list(obs_comp)
    for name, o in obs_ref.items():
        for key in ("observation", "action_mask"):
            got = obs_comp[name][key]
            assert got.shape == o[key].shape and got.dtype == o[key].dtype, (name, key)
            np.testing.assert_array_equal(got, o[key], err_msg=f"{name} {key}")
    assert dict(out_ref[-1]) == dict(out_comp[-1])  # every agent's info in full
    for name, info in out_ref[-1].items():  # ... and each is the agent's view (env.view), keys in its order
        assert list(info) == list(engine.PlayerView._KEYS)
        assert info == dict(ref.view(name)) == dict(comp.view(name))
    assert ref.agents == comp.agents
    assert comp.game_state == ref.game_state  # piles in taken order, stock, everything
    np.testing.assert_array_equal(comp.state(), ref.state())


def play_both(kwargs: dict[str, Any], games: int, seed: int, illegal_rate: float = 0.0) -> int:
    """Play ``games`` random games on both backends with the same deals and actions; return the steps compared.

    Even games start from the reference deal given as ``reset`` options (hands, rows, totals) and replay the
    later rounds' deals; odd games replay every deal from round 0. With ``illegal_rate``, some steps give a
    random (often illegal) action to check that errors and terminations agree too.
    """
    config = _config(kwargs)
    ref, comp = parallel_env(**kwargs), parallel_env(backend="compiled", **kwargs)
    choose = np.random.default_rng(seed)
    steps = 0
    for g in range(games):
        out_ref = ref.reset(seed=seed * 1000 + g)
        deals_from = None if config.variant == "logic" else np.random.default_rng(seed * 1000 + g)
        if g % 2 == 0:
            state = ref.game_state
            options: dict[str, Any] = {"hands": [list(h) for h in state.hands], "totals": [g % 7] * len(state.hands)}
            if config.variant == "logic":
                options["display"] = list(state.display)
            else:
                options["rows"] = [list(r) for r in state.rows]
            out_ref = ref.reset(options=options)
            out_comp = comp.reset(seed=g, options=options)
            if deals_from is not None:
                engine.new_game(config, deals_from)  # round 0 is the position; queue rounds 1, 2, ...
                comp._backend._game.queue_deals(reference_deals(config, [deals_from], ROUNDS)[0])
        else:
            if deals_from is not None:
                comp._backend._game.queue_deals(reference_deals(config, [deals_from], ROUNDS)[0])
            out_comp = comp.reset(seed=g)
        _assert_same_step(ref, comp, out_ref, out_comp)
        while ref.agents:
            observations = out_ref[0]
            actions = {}
            for name in ref.agents:
                legal = np.flatnonzero(observations[name]["action_mask"])
                actions[name] = int(choose.choice(legal))
            if illegal_rate and choose.random() < illegal_rate:
                actions[ref.agents[int(choose.integers(len(ref.agents)))]] = int(choose.integers(109))
            try:
                out_ref = ref.step(actions)
            except ValueError as err:
                with pytest.raises(ValueError) as got:
                    comp.step(actions)
                assert str(got.value) == str(err)
                assert comp.game_state == ref.game_state
                continue
            out_comp = comp.step(actions)
            _assert_same_step(ref, comp, out_ref, out_comp)
            steps += 1
    return steps


@pytest.mark.parametrize(("kwargs", "games"), CONFIGS, ids=[str(i) for i in range(len(CONFIGS))])
def test_same_position_same_actions_same_everything(kwargs: dict[str, Any], games: int) -> None:
    steps = play_both(kwargs, games, seed=len(str(kwargs)), illegal_rate=0.05)
    assert steps >= 10 * games  # every game played at least a round (10 turns, R11)


def test_illegal_actions_raise_identically_mid_game() -> None:
    # many illegal tries at every phase, including row choices (R9) and the logic draft (V2)
    assert play_both({"num_players": 3}, 4, seed=5, illegal_rate=0.5) >= 40
    assert play_both({"num_players": 3, "variant": "logic", "episode": "round"}, 2, seed=6, illegal_rate=0.5) >= 20


# --------------------------------------------------------------------------- PettingZoo conformance


@pytest.mark.parametrize(
    "config",
    [
        {"backend": "compiled"},
        {"backend": "compiled", "num_players": 2, "variant": "logic", "episode": "round"},
        {"backend": "compiled", "num_players": 10, "row_choice": "cheapest", "end_score": 20},
    ],
)
def test_parallel_api(config: dict[str, Any]) -> None:
    parallel_api_test(default_parallel_env(**config), num_cycles=300)


def test_aec_api_render_and_seed_tests() -> None:
    api_test(env(num_players=3, backend="compiled"), num_cycles=300)
    render_test(lambda render_mode=None: env(backend="compiled", render_mode=render_mode))
    seed_test(lambda: env(backend="compiled"))
    parallel_seed_test(lambda: default_parallel_env(backend="compiled", illegal_action="terminate"))


def test_backend_is_validated_and_codes_agree() -> None:
    with pytest.raises(ValueError, match="backend must be one of 'reference', 'compiled', got 'numba'"):
        parallel_env(backend="numba")
    assert parallel_env().backend == "reference" and parallel_env(backend="compiled").backend == "compiled"
    assert (OK, OVER) == (single.OK, single.OVER)


# --------------------------------------------------------------------------- seeds and deals


def _trace(par_env: SixNimmtParallelEnv, seed: int | None, pick: np.random.Generator) -> list[Any]:
    observations, _ = par_env.reset(seed=seed)
    trace: list[Any] = [par_env.game_state]
    while par_env.agents:
        actions = {n: int(pick.choice(np.flatnonzero(observations[n]["action_mask"]))) for n in par_env.agents}
        observations, rewards, _, _, _ = par_env.step(actions)
        trace.append((actions, rewards, par_env.game_state))
    return trace


def test_same_seed_same_whole_games_resets_continue_the_stream() -> None:
    def games(seed: int) -> list[list[Any]]:
        par_env = parallel_env(num_players=4, end_score=40, backend="compiled")
        return [_trace(par_env, seed, np.random.default_rng(1)), _trace(par_env, None, np.random.default_rng(2))]

    first, again, other = games(7), games(7), games(8)
    assert first == again and len(first[0]) > 20
    assert first[0][0].hands != first[1][0].hands  # the seedless reset continued the stream
    assert other[0][0].hands != first[0][0].hands


def test_deals_are_the_batched_engines_not_the_reference_engines() -> None:
    config = GameConfig(num_players=4)
    comp, ref = parallel_env(num_players=4, backend="compiled"), parallel_env(num_players=4)
    comp.reset(seed=3)
    ref.reset(seed=3)
    assert comp.game_state == BatchedGames(config, 1, seed=3).get_state(0)
    assert comp.game_state.hands != ref.game_state.hands  # documented: the backends deal differently


# --------------------------------------------------------------------------- step contract


def test_returned_arrays_are_fresh_and_never_changed_later() -> None:
    par_env = parallel_env(num_players=4, backend="compiled", episode="round")
    observations, infos = par_env.reset(seed=0)
    kept = [(observations, copy.deepcopy({n: {k: v.copy() for k, v in o.items()} for n, o in observations.items()}))]
    first_hand = infos["player_1"]["hand"]
    pick = np.random.default_rng(0)
    while par_env.agents:
        actions = {n: int(pick.choice(np.flatnonzero(observations[n]["action_mask"]))) for n in par_env.agents}
        observations, _, _, _, infos = par_env.step(actions)
        kept.append((observations, {n: {k: v.copy() for k, v in o.items()} for n, o in observations.items()}))
    for live, frozen in kept:
        for name in live:
            for key in ("observation", "action_mask"):
                np.testing.assert_array_equal(live[name][key], frozen[name][key])
    assert len(first_hand) == 10 and infos["player_1"]["hand"] == []
    assert kept[0][0]["player_0"]["observation"].shape == (OBS_SIZE,)
    assert kept[0][0]["player_0"]["action_mask"].dtype == np.int8


def test_infos_are_plain_dicts_of_that_steps_view() -> None:
    par_env = parallel_env(num_players=3, backend="compiled")
    _, infos0 = par_env.reset(options=E2)
    _, rewards, _, _, infos1 = par_env.step({"player_0": 50, "player_1": 60, "player_2": 14})
    assert rewards == {"player_0": 0.0, "player_1": 0.0, "player_2": -11.0}
    # read after the step: infos0 still shows the position before it
    assert infos0["player_2"]["rows"] == [[10, 11, 12, 13, 14], [50], [60], [70]]
    assert infos0["player_2"]["hand"] == [15, 92] and infos0["player_2"]["legal_actions"] == [14, 91]
    assert infos1["player_2"]["rows"] == [[15], [50, 51], [60, 61], [70]]
    assert infos1["player_2"]["piles"] == [[], [], [10, 11, 12, 13, 14]]
    assert infos1["player_0"]["round_penalties"] == [0, 0, 11] and infos1["player_0"]["totals"] == [0, 0, 11]
    assert infos1["player_0"]["revealed"] == [51, 61, 15] and infos1["player_0"]["phase"] == "select"
    assert set(infos1) == set(NAMES3) and len(infos1) == 3
    assert dict(infos1["player_1"]) == dict(engine.view(par_env.game_state, 1))
    assert pickle.loads(pickle.dumps(infos1)) == {
        n: dict(engine.view(par_env.game_state, i)) for i, n in enumerate(NAMES3)
    }
    assert "player_3" not in infos1 and infos1.get("player_3") is None


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_each_agents_info_is_its_own(backend: str) -> None:
    """The view infos share no list between agents or steps: changing one agent's info changes nothing else."""
    par_env = parallel_env(num_players=3, backend=backend)
    _, infos = par_env.reset(options=E2)
    for key in ("hand", "rows", "row_bullheads", "totals", "seen", "piles", "display", "drafted", "legal_actions"):
        infos["player_0"][key].append(0)
    infos["player_0"]["rows"][1].append(0)
    infos["player_0"]["piles"][0].append(0)
    for i, name in enumerate(NAMES3[1:], start=1):
        assert infos[name] == dict(engine.view(par_env.game_state, i))
    assert infos["player_1"]["rows"] == [[10, 11, 12, 13, 14], [50], [60], [70]]
    assert par_env.view("player_0")["rows"] == [[10, 11, 12, 13, 14], [50], [60], [70]]
    _, _, _, _, after = par_env.step({"player_0": 50, "player_1": 60, "player_2": 14})
    assert after["player_0"]["piles"] == [[], [], [10, 11, 12, 13, 14]]


def test_observations_and_masks_match_the_reference_encoder() -> None:
    par_env = parallel_env(num_players=5, backend="compiled", variant="logic", episode="round")
    observations, _ = par_env.reset(seed=1)
    pick = np.random.default_rng(1)
    seen_draft = False
    while par_env.agents:
        state = par_env.game_state
        seen_draft |= state.phase == DRAFT
        for seat, name in enumerate(par_env.possible_agents):
            np.testing.assert_array_equal(observations[name]["observation"], encode(state, seat))
            np.testing.assert_array_equal(observations[name]["action_mask"], action_mask(state, seat))
        actions = {n: int(pick.choice(np.flatnonzero(observations[n]["action_mask"]))) for n in par_env.agents}
        observations, _, _, _, _ = par_env.step(actions)
    assert seen_draft


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        *BAD_E2_ACTIONS,
        ({"player_0": 2**70, "player_1": 60, "player_2": 14}, r"player_0: action 1180591620717411303424 is outside"),
        (
            {"player_0": 50, "player_1": np.int64(61), "player_2": 14},
            r"player_1: action 61 is not legal in phase 'select'; legal actions: \[60, 90\]",
        ),
    ],
)
def test_bad_actions_raise_and_change_nothing(actions: Any, message: str) -> None:
    par_env = parallel_env(num_players=3, backend="compiled")
    observations, _ = par_env.reset(options=E2)
    state = par_env.game_state
    with pytest.raises(ValueError, match=message):
        par_env.step(actions)
    assert par_env.game_state is state and par_env.agents == NAMES3
    # still usable: numpy integer scalars are valid actions
    _, rewards, _, _, _ = par_env.step({"player_0": np.int64(50), "player_1": np.int32(60), "player_2": 14})
    assert rewards["player_2"] == -11.0
    np.testing.assert_array_equal(observations["player_0"]["observation"], encode(state, 0))


@pytest.mark.parametrize(
    ("actions", "error", "message"),
    [
        ([2**70, 60, 14], OverflowError, r"action 1180591620717411303424 does not fit int64"),
        ([50, np.uint64(2**63 + 5), 14], OverflowError, r"action np.uint64\(9223372036854775813\) does not fit int64"),
        ([50, 60], ValueError, r"expected 3 actions \(one per seat\), got 2"),
        ([50, 60, 14, 0], ValueError, r"expected 3 actions \(one per seat\), got 4"),
        ([50, 60.0, 14], TypeError, r"action 60.0 is not an integer"),
    ],
)
def test_backend_step_rejects_a_malformed_joint_action_and_continues(
    actions: list[Any], error: type, message: str
) -> None:
    par_env = parallel_env(num_players=3, backend="compiled")
    par_env.reset(options=E2)
    backend = par_env._backend
    state = backend.state()
    with pytest.raises(error, match=message):
        backend.step(actions)
    assert backend.state() == state
    assert backend.step([50, np.int32(60), 14]) == PENALTIES  # cards 51, 61, 15: player_2 takes row 0 (E2)
    assert backend.penalties == [0, 0, 11]


def test_illegal_action_terminate_and_finished_episode() -> None:
    par_env = parallel_env(num_players=3, backend="compiled", illegal_action="terminate")
    before, _ = par_env.reset(options=E2)
    state = par_env.game_state
    observations, rewards, terminations, _, infos = par_env.step({"player_0": 50, "player_1": 0, "player_2": 14})
    assert rewards == {"player_0": 0.0, "player_1": -ILLEGAL_ACTION_PENALTY, "player_2": 0.0}
    assert all(terminations.values()) and par_env.agents == [] and par_env.game_state is state
    np.testing.assert_array_equal(observations["player_0"]["observation"], before["player_0"]["observation"])
    assert infos["player_1"]["hand"] == [61, 91]
    with pytest.raises(ValueError, match="the episode is over"):
        par_env.step({"player_0": 50, "player_1": 60, "player_2": 14})
    with pytest.raises(ValueError, match=r"call reset\(\) first"):
        parallel_env(backend="compiled").step({})


def test_options_are_copied_unknown_keys_ignored_bad_positions_explained() -> None:
    hands = [[51, 90], [61, 91], [15, 92]]
    rows = [[10, 11, 12, 13, 14], [50], [60], [70]]
    par_env = parallel_env(num_players=3, backend="compiled")
    par_env.reset(seed=4, options={"hands": hands, "rows": rows, "totals": [1, 2, 3], "speed": "fast"})
    hands[0].append(99)
    rows[1][0] = 49
    state = par_env.game_state
    assert state.hands[0] == (51, 90) and state.rows[1] == (50,) and state.totals == (1, 2, 3)
    with pytest.raises(ValueError, match="duplicate cards"):
        par_env.reset(options={"hands": [[1], [1], [2]], "rows": [[10], [20], [30], [40]]})
    with pytest.raises(ValueError, match=r"needs options\['hands'\]"):
        par_env.reset(options={"rows": [[10], [20], [30], [40]]})


def test_render_shows_the_table() -> None:
    par_env = parallel_env(num_players=3, backend="compiled", render_mode="ansi")
    par_env.reset(options=E2)
    text = par_env.render()
    assert "row 0:  10  11  12  13  14" in text and "(11 bullheads)" in text
    assert "decision: every player chooses a card" in text


# --------------------------------------------------------------------------- the bare compiled game


def test_play_random_counts_decisions_and_games() -> None:
    # cheapest-row rule (R9b): every step is a select step with 4 decisions; a round is 10 steps (R11)
    game = single.SingleGame(GameConfig(num_players=4, row_choice="cheapest", episode="round"), seed=0)
    game.new_game()
    decisions, finished = game.play_random(100, np.array([7], np.uint64))
    assert (decisions, finished) == (400, 9)
    assert game.done and int(game.turn[0]) == 10  # the 10th game has just played its last turn
    # with row choices (R9), a choose_row step is one decision
    game = single.SingleGame(GameConfig(num_players=4, episode="round"), seed=0)
    game.new_game()
    decisions, _ = game.play_random(1000, np.array([7], np.uint64))
    assert 2 * 1000 < decisions < 4 * 1000


def test_queue_deals_is_validated() -> None:
    game = single.SingleGame(GameConfig(num_players=2), seed=0)
    with pytest.raises(ValueError, match=r"deals must have shape \(rounds, 10 \* n \+ 4 = 24\)"):
        game.queue_deals(np.zeros((1, 23), np.int16))
    with pytest.raises(ValueError, match=r"deals\[1\] must hold 24 distinct cards of 1..104"):
        game.queue_deals(np.stack([np.arange(1, 25), np.full(24, 3)]))


@pytest.mark.parametrize("n", range(2, 11))
def test_the_buffer_layout_read_from_unpack_tiles_the_buffer(n: int) -> None:
    """The Python side reads the buffer's layout from the compiled ``_unpack`` (its one spelling): every array of
    ``PIECES`` is a view into the buffer, no two overlap, and the buffer is as long as it was when the layout was
    written twice (992 bytes for 2 seats, 40 to 48 more per seat)."""
    sizes = {2: 992, 3: 1032, 4: 1072, 5: 1112, 6: 1160, 7: 1200, 8: 1248, 9: 1288, 10: 1336}
    game = single.SingleGame(GameConfig(num_players=n), seed=0)
    assert single.buffer_size(n) == len(game.buffer) == sizes[n]
    base = game.buffer.ctypes.data
    spans = []
    for name in single.PIECES:
        view = getattr(game, name)
        assert np.shares_memory(view, game.buffer), name
        start = view.ctypes.data - base
        spans.append((start, start + view.nbytes, name))
    spans.sort()
    assert spans[0][:2] == (0, 64)  # the config vector first: _unpack reads the seat count there
    assert all(end <= nxt for (_, end, _), (nxt, _, _) in itertools.pairwise(spans))
    assert spans[-1][1] <= len(game.buffer) < spans[-1][1] + 8
    assert game.cfg[0] == n and game.hand.shape == (1, n, 10) and game.rows.shape == (1, 4, 5)
    assert game.rng.dtype == np.uint64 and game.display.dtype == np.bool_ and game.taken_at.shape == (105,)
