"""``SixNimmtVecEnv`` (training/vec_env.py): the batched SB3 vector env of learner seats (issue 5).

Every episode is replayed in the reference engine from its first state with the same choices: the vector env
must give the same observations, masks, rewards (accumulated over opponent-only steps), ends and infos.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.vec_env import VecMonitor

from sixnimmt_env import agents as ref_agents
from sixnimmt_env.observation import OBS_SIZE, SLICES, action_mask, encode
from sixnimmt_env.pettingzoo_env import ILLEGAL_ACTION_PENALTY
from sixnimmt_env.rewards import rewards
from sixnimmt_env.rules.engine import DONE, NOOP, SELECT, GameConfig, State, step, view
from training.config import load_config
from training.opponents import MixtureSampler, mixture_sampler
from training.policy import algo_kwargs
from training.ppo_agents import PolicyAgent
from training.vec import build_vec_env
from training.vec_env import SixNimmtVecEnv

ROOT = Path(__file__).resolve().parents[1]


class SecondLowest(ref_agents.LowestAgent):
    """A deterministic agent the vec env plays through ``act(view, rng)`` (a subclass is not a batched kind)."""

    spec = "second-lowest"

    def select(self, view):  # type: ignore[no-untyped-def]
        hand = view["hand"]
        return hand[1] if len(hand) > 1 else hand[0]


def _tiny_policy(num_envs: int = 8) -> PolicyAgent:
    env = SixNimmtVecEnv(num_envs, seed=3, num_players=4, episode="round")
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=16, batch_size=64, n_epochs=1, seed=0, policy_kwargs={"net_arch": [16]}
    )
    model.learn(256)
    return PolicyAgent(model.policy)


def _replay(
    config: GameConfig, opponents: list, learner: ref_agents.Agent, num_envs: int, steps: int, seed: int
) -> int:
    """Play ``steps`` vector steps and replay every game in the reference engine, asserting parity.

    The opponents must be deterministic (the same choice from the same view). Returns the episodes finished.
    """
    env = SixNimmtVecEnv(
        num_envs,
        opponents=opponents,
        learner_seat="random",
        seed=seed,
        **{k: getattr(config, k) for k in GameConfig.field_names()},
    )
    obs = env.reset()
    n = config.num_players
    refs: list[State] = [env.tables.games.get_state(b) for b in range(num_envs)]
    seats = [int(s) for s in env.get_attr("learner_seat")]
    built = [ref_agents.make_agent(o) if isinstance(o, str) else o for o in opponents]
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(steps):
        masks = get_action_masks(env)
        actions = np.zeros(num_envs, np.int64)
        for b in range(num_envs):
            state, me = refs[b], seats[b]
            np.testing.assert_array_equal(obs[b], encode(state, me))
            np.testing.assert_array_equal(masks[b], action_mask(state, me).astype(bool))
            actions[b] = learner.act(view(state, me), rng)
        obs, rewards, dones, infos = env.step(actions)
        for b in range(num_envs):
            state, me = refs[b], seats[b]
            reward, first = 0.0, True
            while first or (state.phase != DONE and not (state.phase == SELECT or state.chooser == me)):
                joint = []
                for s in range(n):
                    if s == me:
                        joint.append(int(actions[b]) if first else NOOP)
                    else:
                        joint.append(built[(s - me - 1) % n].act(view(state, s), rng))
                state, pen = step(state, joint)
                reward -= pen[me]
                first = False
            assert rewards[b] == reward
            assert dones[b] == (state.phase == DONE)
            if dones[b]:
                episodes += 1
                info = infos[b]
                np.testing.assert_array_equal(info["terminal_observation"], encode(state, me))
                assert info["round_penalties"] == list(state.round_penalties)
                assert info["learner_seat"] == me and info["illegal_action"] is False
                assert info["rank"] == 1 + sum(t < state.totals[me] for t in state.totals)
                refs[b] = env.tables.games.get_state(b)
                seats[b] = int(env.get_attr("learner_seat", b)[0])
            else:
                assert infos[b] == {}
                refs[b] = state
    return episodes


@pytest.mark.parametrize(
    "config",
    [
        GameConfig(num_players=4, episode="round"),
        GameConfig(num_players=3, variant="logic", episode="round"),
        GameConfig(num_players=5, row_choice="cheapest", episode="round"),
    ],
    ids=["standard4", "logic3", "cheapest5"],
)
def test_heuristic_opponents_match_the_reference_engine(config: GameConfig) -> None:
    n = config.num_players
    opponents = (["greedy", "lowest", "highest", "greedy"] * 3)[: n - 1]
    episodes = _replay(config, opponents, ref_agents.GreedyAgent(), num_envs=12, steps=25, seed=1)
    assert episodes >= 12


def test_policy_and_python_opponents_match_the_reference_engine() -> None:
    policy = _tiny_policy()
    config = GameConfig(num_players=4, episode="round")
    episodes = _replay(
        config, [policy, SecondLowest(), "greedy"], ref_agents.LowestAgent(), num_envs=10, steps=22, seed=2
    )
    assert episodes >= 10


def test_policy_opponent_is_one_forward_per_engine_step() -> None:
    policy = _tiny_policy()
    calls: list[int] = []
    original = policy.choose

    def counting(obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        calls.append(len(obs))
        assert obs.shape == (len(mask), OBS_SIZE) and mask.dtype == np.bool_ and mask.any(axis=1).all()
        return original(obs, mask, rng)

    policy.choose = counting  # type: ignore[method-assign]
    env = SixNimmtVecEnv(64, opponents=[policy, policy, policy], learner_seat=0, seed=0, num_players=4, episode="round")
    env.reset()
    calls.clear()
    env.step((get_action_masks(env).cumsum(axis=1) == 1).argmax(axis=1))  # every game in card selection
    # the first engine step asks all 3 * 64 policy seats at once; then only low-card row choices, batched too
    assert calls[0] == 3 * 64
    assert len(calls) <= 1 + 3


def test_rewards_sum_to_the_round_penalty_and_auto_reset() -> None:
    env = SixNimmtVecEnv(32, opponents="random", seed=5, num_players=4, episode="round")
    env.reset()
    total = np.zeros(32)
    ended = 0
    for _ in range(40):
        masks = get_action_masks(env)
        obs, rewards, dones, infos = env.step((masks.cumsum(axis=1) == 1).argmax(axis=1))
        assert rewards.dtype == np.float32 and obs.shape == (32, OBS_SIZE) and dones.dtype == np.bool_
        total += rewards
        for b in np.flatnonzero(dones):
            info = infos[b]
            assert total[b] == -info["round_penalties"][info["learner_seat"]]
            assert info["terminal_observation"][SLICES["phase"]].tolist() == [0.0, 0.0, 0.0, 1.0]
            assert obs[b][SLICES["turn"]][0] == 0.0  # the new episode's first observation
            total[b] = 0.0
            ended += 1
    assert ended >= 2 * 32  # a round asks the learner 10 to 20 times (10 cards, at most 10 row choices)


def test_same_seed_same_episodes_and_sb3_seed() -> None:
    def run(env: SixNimmtVecEnv) -> list[np.ndarray]:
        out = [env.reset()]
        for _ in range(12):
            _, r, d, _ = env.step((get_action_masks(env).cumsum(axis=1) == 1).argmax(axis=1))
            out += [r, d, env.tables.seat.copy()]
        return out

    mixture = MixtureSampler(["greedy", "random"], [0.5, 0.5])
    a = run(SixNimmtVecEnv(16, opponents=mixture, seed=7, num_players=4, episode="round"))
    b = run(SixNimmtVecEnv(16, opponents=mixture, seed=7, num_players=4, episode="round"))
    c = SixNimmtVecEnv(16, opponents=mixture, seed=None, num_players=4, episode="round")
    c.seed(7)
    other = run(SixNimmtVecEnv(16, opponents=mixture, seed=8, num_players=4, episode="round"))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(a, run(c), strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], other[0])


def test_champion_sample_opponents_draw_from_the_env_generator() -> None:
    """``champion-sample`` opponents draw their cards with the env's generator, in one batched call: the same seed
    replays the same episodes; against the deterministic ``champion`` (same seed, same deals, same learner moves)
    their cards, and so the learner's observations, differ."""

    def run(spec: str, seed: int) -> list[np.ndarray]:
        env = SixNimmtVecEnv(64, opponents=[spec] * 3, seed=seed, num_players=4, episode="round")
        out = [env.reset()]
        for _ in range(9):
            obs, r, d, _ = env.step((get_action_masks(env).cumsum(axis=1) == 1).argmax(axis=1))
            out += [obs, r, d]
        return out

    first, again = run("champion-sample", 3), run("champion-sample", 3)
    for x, y in zip(first, again, strict=True):
        np.testing.assert_array_equal(x, y)
    argmax = run("champion", 3)
    np.testing.assert_array_equal(first[0], argmax[0])  # the same deals and seats
    assert not np.array_equal(first[1], argmax[1])  # the opponents' first cards differ in some games


def test_observe_into_writes_the_next_observations_in_place_and_plays_the_same_games() -> None:
    """``observe_into(out)``: the next step writes its observations into ``out`` and returns ``out`` itself; the
    games, rewards and terminal observations are those of an env that returns new arrays; it applies to one step
    only; a wrong buffer is a clear error and changes nothing."""
    mixture = MixtureSampler(["greedy", "random"], [0.5, 0.5])
    plain = SixNimmtVecEnv(16, opponents=mixture, seed=7, num_players=4, episode="round")
    inplace = SixNimmtVecEnv(16, opponents=mixture, seed=7, num_players=4, episode="round")
    np.testing.assert_array_equal(plain.reset(), inplace.reset())
    rows = np.zeros((17, 16, OBS_SIZE), np.float32)
    ended = 0
    for t in range(16):
        actions = (get_action_masks(plain).cumsum(axis=1) == 1).argmax(axis=1)
        np.testing.assert_array_equal(actions, (get_action_masks(inplace).cumsum(axis=1) == 1).argmax(axis=1))
        o1, r1, d1, i1 = plain.step(actions)
        out = rows[t + 1]
        inplace.observe_into(out)
        o2, r2, d2, i2 = inplace.step(actions)
        assert o2 is out
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(d1, d2)
        for b in np.flatnonzero(d1):
            np.testing.assert_array_equal(i1[b]["terminal_observation"], i2[b]["terminal_observation"])
        ended += int(d1.sum())
    assert ended >= 16  # every game ended a round (10 card choices and its row choices) inside the 16 steps
    assert rows[1:].any(axis=2).all() and not rows[0].any()
    actions = (get_action_masks(inplace).cumsum(axis=1) == 1).argmax(axis=1)
    o3 = inplace.step(actions)[0]  # without a new observe_into: a new array again
    assert not np.shares_memory(o3, rows)
    with pytest.raises(ValueError, match=r"float32 array of shape \(16, 506\), got float64 \(16, 506\)"):
        inplace.observe_into(np.zeros((16, OBS_SIZE)))
    with pytest.raises(ValueError, match="not C-contiguous"):
        inplace.observe_into(np.zeros((OBS_SIZE, 16), np.float32).T)
    assert inplace._out is None


def test_action_masks_as_maskable_ppo_reads_them() -> None:
    env = SixNimmtVecEnv(6, seed=0, num_players=4, episode="round")
    env.reset()
    assert is_masking_supported(env) and is_masking_supported(VecMonitor(env))
    masks = get_action_masks(VecMonitor(env))
    assert masks.shape == (6, 109) and masks.dtype == np.bool_
    np.testing.assert_array_equal(masks.sum(axis=1), [10] * 6)  # ten cards in hand, nothing else
    assert [m.shape for m in env.env_method("action_masks", indices=[1, 4])] == [(109,), (109,)]


def test_illegal_action_terminates_or_raises() -> None:
    env = SixNimmtVecEnv(3, seed=0, num_players=4, episode="round")
    env.reset()
    actions = (get_action_masks(env).cumsum(axis=1) == 1).argmax(axis=1)
    actions[1] = NOOP
    _, rewards, dones, infos = env.step(actions)
    assert rewards[1] == -ILLEGAL_ACTION_PENALTY and dones.tolist() == [False, True, False]
    assert infos[1]["illegal_action"] is True and "round_penalties" not in infos[1]
    assert rewards[0] <= 0 and infos[0] == {}
    strict = SixNimmtVecEnv(2, illegal_action="raise", seed=0, num_players=4, episode="round")
    strict.reset()
    with pytest.raises(
        ValueError, match=r"env 0 \(learner seat \d\): action 108 is not legal in phase 'select'; legal actions: \["
    ):
        strict.step(np.array([NOOP, 0]))
    with pytest.raises(ValueError, match=r"env 0 \(learner seat \d\): action \d+\.0 of type float is not an integer"):
        strict.step(np.array([actions[0], 3.5]))  # floats are refused (they were truncated to actions once)
    with pytest.raises(ValueError, match=r"env 0 \(learner seat \d\): action 109 is outside 0\.\.108"):
        strict.step(np.array([109, actions[1]]))
    masks = strict.action_masks().copy()
    assert strict.step(np.array([masks[0].argmax(), masks[1].argmax()]))[2].tolist() == [False, False]  # usable


def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="num_envs must be a positive integer, got 0"):
        SixNimmtVecEnv(0)
    with pytest.raises(ValueError, match=r"learner_seat must be 'random' or a seat 0..3 \(num_players=4\), got 4"):
        SixNimmtVecEnv(2, learner_seat=4, num_players=4)
    with pytest.raises(ValueError, match="opponents must name 3 agents"):
        SixNimmtVecEnv(2, opponents=["greedy"], num_players=4)
    with pytest.raises(ValueError, match="unknown agent spec 'nobody'"):
        SixNimmtVecEnv(2, opponents="nobody", num_players=4)


def test_mixture_draws_follow_the_weights_and_the_pool(tmp_path: Path) -> None:
    env = SixNimmtVecEnv(2000, opponents=MixtureSampler(["greedy", "random"], [0.75, 0.25]), seed=0, num_players=4)
    env.reset()
    kinds = env.tables.kinds[env.tables.kinds >= 0]
    assert len(kinds) == 3 * 2000
    share = np.mean(kinds == 3)  # greedy
    assert abs(share - 0.75) < 4 * np.sqrt(0.75 * 0.25 / len(kinds))
    assert np.bincount(env.tables.seat, minlength=4).min() > 400  # learner seat drawn per episode
    model = MaskablePPO("MlpPolicy", env, n_steps=1, batch_size=8, n_epochs=1, policy_kwargs={"net_arch": [8]})
    path = tmp_path / "snap.zip"
    model.save(path)
    env.env_method("set_opponents", MixtureSampler(["greedy"], [1.0], pool=[str(path)], pool_prob=1.0))
    env.reset()
    opp = np.ones_like(env.tables.ext, dtype=bool)
    opp[np.arange(2000), env.tables.seat] = False
    assert (env.tables.ext[opp] >= 0).all() and (env.tables.kinds[opp] == -1).all()
    _, rewards, _, _ = env.step((get_action_masks(env).cumsum(axis=1) == 1).argmax(axis=1))
    assert (rewards <= 0).all()


def test_table_draw_fills_every_opponent_seat_with_one_draw(tmp_path: Path) -> None:
    sampler = MixtureSampler(["greedy", "random"], [0.75, 0.25], draw="table")
    env = SixNimmtVecEnv(2000, opponents=sampler, seed=0, num_players=4)
    env.reset()
    opp = np.ones_like(env.tables.kinds, dtype=bool)
    opp[np.arange(2000), env.tables.seat] = False
    kinds = env.tables.kinds[opp].reshape(2000, 3)
    assert (kinds == kinds[:, :1]).all()  # one agent at every opponent seat of a table
    greedy_tables = np.mean(kinds[:, 0] == 3)
    assert abs(greedy_tables - 0.75) < 4 * np.sqrt(0.75 * 0.25 / 2000)
    # the Gymnasium path (train.vec_env: dummy/subproc) calls the sampler: three of one agent per episode
    rng = np.random.default_rng(1)
    tables = [sampler(rng, 3) for _ in range(400)]
    assert all(t[0] is t[1] is t[2] for t in tables)
    assert abs(np.mean([t[0].__class__.__name__ == "GreedyAgent" for t in tables]) - 0.75) < 0.1
    # a pool snapshot fills the table too: the same snapshot at every opponent seat
    model = MaskablePPO("MlpPolicy", env, n_steps=1, batch_size=8, n_epochs=1, policy_kwargs={"net_arch": [8]})
    paths = [tmp_path / "a.zip", tmp_path / "b.zip"]
    for path in paths:
        model.save(path)
    pool = MixtureSampler(["greedy"], [1.0], pool=[str(p) for p in paths], pool_prob=0.5, draw="table")
    env.env_method("set_opponents", pool)
    env.reset()
    opp = np.ones_like(env.tables.kinds, dtype=bool)
    opp[np.arange(2000), env.tables.seat] = False
    ext = env.tables.ext[opp].reshape(2000, 3)
    kinds = env.tables.kinds[opp].reshape(2000, 3)
    assert (ext == ext[:, :1]).all() and (kinds == kinds[:, :1]).all()
    assert abs(np.mean(kinds[:, 0] == -1) - 0.5) < 4 * np.sqrt(0.25 / 2000)
    assert len(np.unique(ext[kinds[:, 0] == -1, 0])) == 2
    with pytest.raises(ValueError, match=r"opponent draw must be one of \['seat', 'table'\], got 'game'"):
        MixtureSampler(["greedy"], [1.0], draw="game")


def test_opponent_draw_config_reaches_the_sampler() -> None:
    from training.config import ConfigError

    smoke = ROOT / "configs" / "smoke.yaml"
    for overrides, draw in (([], "seat"), (["train.opponent_draw=table"], "table")):
        cfg = load_config(smoke, overrides)
        assert mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw).draw == draw
    with pytest.raises(ConfigError, match=r"'train.opponent_draw' must be 'seat' or 'table', got 'game'"):
        load_config(smoke, ["train.opponent_draw=game"])
    with pytest.raises(ConfigError, match=r"'train.opponent_draw' 'table' applies to train.backend: sb3 only"):
        load_config(smoke, ["train.backend=rllib", "train.opponent_draw=table"])


def test_maskable_ppo_learns_on_the_batched_config(tmp_path: Path) -> None:
    cfg = load_config(
        ROOT / "configs" / "smoke.yaml",
        ["train.vec_env=batched", "train.n_envs=64", "algo.n_steps=16", "algo.batch_size=256"],
    )
    venv = build_vec_env(
        cfg.env, cfg.train, mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw), tmp_path / "monitor"
    )
    assert isinstance(venv, VecMonitor) and isinstance(venv.venv, SixNimmtVecEnv) and venv.num_envs == 64
    model = MaskablePPO(env=venv, seed=0, **algo_kwargs(cfg.algo))
    model.learn(2048)
    assert model.num_timesteps == 2048
    venv.close()  # the CSV is flushed once a second and on close (BatchedVecMonitor)
    lines = (tmp_path / "monitor" / "batched.monitor.csv").read_text().splitlines()
    assert len(lines) - 2 >= 64 * 2  # 32 steps per game: at least 2 rounds each, one CSV row per episode


def test_mixed_tables_join_one_batch_per_size_and_play_as_the_batches_alone() -> None:
    """A MixedTablesVecEnv of a 2-player and a 6-player batch steps exactly as the two batches stepped side by side
    (same seeds, same learner actions): observations, masks, rewards, dones and infos, in env order."""
    from training.vec_env import MixedTablesVecEnv

    def parts() -> list[SixNimmtVecEnv]:
        return [
            SixNimmtVecEnv(5, opponents="greedy", seed=7, num_players=2, episode="round"),
            SixNimmtVecEnv(3, opponents="lowest", seed=8, num_players=6, episode="round"),
        ]

    mixed, alone = MixedTablesVecEnv(parts()), parts()
    assert mixed.num_envs == 8 and mixed.num_players == [2, 6]
    assert mixed.players_of_envs().tolist() == [2] * 5 + [6] * 3
    assert mixed.get_attr("num_players", [4, 5]) == [2, 6]
    obs = mixed.reset()
    np.testing.assert_array_equal(obs, np.concatenate([env.reset() for env in alone]))
    assert obs.shape == (8, OBS_SIZE)
    np.testing.assert_allclose(obs[:, SLICES["num_players"]][:, 0], [0.2] * 5 + [0.6] * 3)  # count / 10
    pick = np.random.default_rng(0)
    into = np.zeros((8, OBS_SIZE), np.float32)
    episodes = 0
    for step_no in range(40):
        masks = mixed.action_masks()
        np.testing.assert_array_equal(masks, np.concatenate([env.action_masks() for env in alone]))
        assert masks.shape == (8, 109) and masks.any(axis=1).all()
        actions = np.array([pick.choice(np.flatnonzero(m)) for m in masks])
        if step_no % 2:
            mixed.observe_into(into)
        obs, rewards, dones, infos = mixed.step(actions)
        expected = [env.step(actions[a:b]) for env, (a, b) in zip(alone, [(0, 5), (5, 8)], strict=True)]
        assert (obs is into) == bool(step_no % 2)
        np.testing.assert_array_equal(obs, np.concatenate([e[0] for e in expected]))
        np.testing.assert_array_equal(rewards, np.concatenate([e[1] for e in expected]))
        np.testing.assert_array_equal(dones, np.concatenate([e[2] for e in expected]))
        assert len(infos) == 8
        for info, other in zip(infos, [i for e in expected for i in e[3]], strict=True):
            assert info.keys() == other.keys()
            if "totals" in info:
                assert info["totals"] == other["totals"] and len(info["totals"]) in (2, 6)
        episodes += int(dones.sum())
    assert episodes >= 8  # a round is 10 learner decisions: every game finished at least one
    with pytest.raises(ValueError, match=r"shape \(8, 506\), got float32 \(5, 506\)"):
        mixed.observe_into(np.zeros((5, OBS_SIZE), np.float32))


def test_a_config_with_several_table_sizes_trains_on_the_batched_engine(tmp_path: Path) -> None:
    from training.vec_env import MixedTablesVecEnv

    cfg = load_config(
        ROOT / "configs" / "smoke.yaml",
        ["train.vec_env=batched", "train.n_envs=12", "env.num_players=[2, 4, 10]", "algo.n_steps=8"],
    )
    venv = build_vec_env(
        cfg.env, cfg.train, mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw), tmp_path / "monitor"
    )
    inner = venv.venv
    assert isinstance(inner, MixedTablesVecEnv) and inner.num_players == [2, 4, 10]
    assert inner.players_of_envs().tolist() == [2] * 4 + [4] * 4 + [10] * 4
    assert [part.num_envs for part in inner.parts] == [4, 4, 4]
    model = MaskablePPO(env=venv, seed=0, **algo_kwargs(cfg.algo))
    model.learn(12 * 8 * 3)
    assert model.num_timesteps == 12 * 8 * 3
    # a rollout process's share starting at the run's game 5: games 5..9 seat 10, 2, 4, 10, 2 players
    share = cfg.train.model_copy(update={"n_envs": 5})
    part = build_vec_env(
        cfg.env, share, mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw), first_env=5
    ).venv
    assert part.num_players == [10, 2, 4] and [p.num_envs for p in part.parts] == [2, 2, 1]


def test_mc_opponents_search_in_one_batched_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from sixnimmt_env.compiled.mc import MonteCarloPlayers

    class ReferenceMC(ref_agents.MonteCarloAgent):
        """The same rule through act(view, rng), one decision at a time (a subclass is not batched)."""

    def learner_mean(opponents: object, seed: int) -> tuple[float, list[np.ndarray]]:
        env = SixNimmtVecEnv(64, opponents=opponents, seed=seed, num_players=4, episode="round")
        env.reset()
        taken, trace = [], []
        while len(taken) < 192:
            _, rewards, dones, infos = env.step((get_action_masks(env).cumsum(axis=1) == 1).argmax(axis=1))
            trace.append(rewards.copy())
            taken += [infos[b]["round_penalties"][infos[b]["learner_seat"]] for b in np.flatnonzero(dones)]
        return float(np.mean(taken)), trace

    reference, _ = learner_mean([ReferenceMC(16)] * 3, seed=3)
    calls: list[int] = []
    original = MonteCarloPlayers.act

    def counting(self: MonteCarloPlayers, out: np.ndarray, *args: object) -> np.ndarray:
        calls.append(int(self.seats.sum()))
        return original(self, out, *args)

    monkeypatch.setattr(MonteCarloPlayers, "act", counting)
    monkeypatch.setattr(ref_agents.MonteCarloAgent, "act", lambda *a: pytest.fail("mc:N decided one at a time"))
    batched, trace = learner_mean("mc:16", seed=3)
    again, trace_again = learner_mean("mc:16", seed=3)
    assert batched == again and all(np.array_equal(x, y) for x, y in zip(trace, trace_again, strict=True))
    assert max(calls) == 3 * 64  # the first card selection: every opponent seat of every game in one call
    random_opponents, _ = learner_mean("random", seed=3)
    # the learner always plays its lowest card: ~22 bullheads a round against mc:16 either way, ~13 against random
    assert abs(batched - reference) < 2.0 and random_opponents < reference - 5.0, (batched, reference, random_opponents)


def test_win_bonus_is_added_to_the_episode_a_learner_wins() -> None:
    """``win_bonus``: at an episode's end the learner gets w (w/k in a k-way tie for the lowest total), else 0."""
    plain = SixNimmtVecEnv(64, opponents="random", seed=3, num_players=4, episode="round")
    bonus = SixNimmtVecEnv(64, opponents="random", seed=3, num_players=4, episode="round", win_bonus=10.0)
    plain.reset()
    bonus.reset()
    shares: list[float] = []
    for _ in range(25):
        actions = (get_action_masks(plain).cumsum(axis=1) == 1).argmax(axis=1)
        _, r0, d0, infos = plain.step(actions)
        _, r1, d1, _ = bonus.step(actions)
        np.testing.assert_array_equal(d0, d1)  # the same games: the bonus changes only the reward
        expected = np.zeros(64)
        for b in np.flatnonzero(d0):
            pens = np.array(infos[b]["round_penalties"])
            mine = pens[infos[b]["learner_seat"]]
            share = float(mine == pens.min()) / np.count_nonzero(pens == pens.min())
            expected[b] = 10.0 * share
            shares.append(share)
        np.testing.assert_allclose(r1 - r0, expected, atol=1e-5)
    # wins, losses and ties all happened (random play: the learner wins about a quarter of the rounds)
    assert 0.0 in shares and 1.0 in shares and any(0.0 < s < 1.0 for s in shares)
    assert 0.15 < np.mean(shares) < 0.35
    with pytest.raises(ValueError, match=r"win_bonus must be a number of bullheads in \[0, 1e6\), got -1"):
        SixNimmtVecEnv(2, win_bonus=-1)


@pytest.mark.parametrize("episode", ["round", "game"])
def test_relative_reward_adds_the_mean_of_the_others_bullheads(episode: str) -> None:
    """``reward="relative"``: an episode's rewards sum to the mean of the others' bullheads minus one's own
    (``sixnimmt_env.rewards.rewards``), step by step the same games as the penalty reward."""
    kwargs = {"opponents": "random", "seed": 5, "num_players": 4, "episode": episode, "end_score": 30}
    plain = SixNimmtVecEnv(32, **kwargs)
    relative = SixNimmtVecEnv(32, reward="relative", **kwargs)
    plain.reset()
    relative.reset()
    sums, plain_sums = np.zeros(32), np.zeros(32)
    checked = 0
    for _ in range(150 if episode == "game" else 25):
        actions = (get_action_masks(plain).cumsum(axis=1) == 1).argmax(axis=1)
        _, r0, d0, infos = plain.step(actions)
        _, r1, d1, _ = relative.step(actions)
        np.testing.assert_array_equal(d0, d1)
        assert np.all(r1 - r0 >= -1e-5)  # the others' bullheads only add
        sums += r1
        plain_sums += r0
        for b in np.flatnonzero(d0):
            totals = infos[b]["totals"]
            me = infos[b]["learner_seat"]
            assert plain_sums[b] == pytest.approx(-totals[me])
            # rewards() is linear in the penalties: an episode's sum is its value on the episode's totals
            assert sums[b] == pytest.approx(rewards(totals, "relative")[me], abs=1e-3)
            checked += 1
        sums[d0] = 0.0
        plain_sums[d0] = 0.0
    assert checked >= 32
    with pytest.raises(ValueError, match=r"reward must be one of 'penalty', 'relative', got 'rank'"):
        SixNimmtVecEnv(2, reward="rank")


def test_win_bonus_config_is_batched_only() -> None:
    from training.config import ConfigError

    smoke = Path(__file__).parent.parent / "configs" / "smoke.yaml"
    cfg = load_config(smoke, ["train.vec_env=batched", "train.win_bonus=5"])
    assert cfg.train.win_bonus == 5.0
    with pytest.raises(ConfigError, match=r"'train.win_bonus' applies to train.vec_env: batched"):
        load_config(smoke, ["train.vec_env=dummy", "train.win_bonus=5"])
    with pytest.raises(ConfigError, match=r"'train.win_bonus' must be in \[0, 1e6\) bullheads, got -2"):
        load_config(smoke, ["train.vec_env=batched", "train.win_bonus=-2"])


def test_reward_config_reaches_the_batched_and_the_gymnasium_envs() -> None:
    from training.config import ConfigError
    from training.vec import build_vec_env

    smoke = Path(__file__).parent.parent / "configs" / "smoke.yaml"
    for vec_env in ("batched", "dummy"):
        cfg = load_config(smoke, [f"train.vec_env={vec_env}", "train.reward=relative", "train.n_envs=2"])
        venv = build_vec_env(
            cfg.env,
            cfg.train,
            mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw),
            wrap_normalize=False,
        )
        inner = venv.venv if vec_env == "batched" else venv.envs[0].unwrapped.parallel
        assert inner.reward_mode == "relative", vec_env
        venv.close()
    with pytest.raises(ConfigError, match=r"'train.reward' must be 'penalty' or 'relative', got 'rank'"):
        load_config(smoke, ["train.reward=rank"])
    with pytest.raises(ConfigError, match=r"'train.reward' 'relative' applies to train.backend: sb3 only"):
        load_config(smoke, ["train.backend=rllib", "train.reward=relative"])
