"""The shipped ``champion`` agent (sixnimmt_env/champion.py; issue 13). How its weights are trained and exported,
and its past stages' weights, are tested in lab/tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from sixnimmt_env import parallel_env
from sixnimmt_env.agents import make_agent
from sixnimmt_env.arena import run_arena
from sixnimmt_env.champion import BASELINES, WEIGHTS, ChampionAgent, load_champion, read_weights
from sixnimmt_env.observation import SLICES
from sixnimmt_env.rules.engine import CHOOSE_ROW, DRAFT, NOOP, SELECT, GameConfig, legal_actions, new_game, step, view

WEIGHTS_DIR = Path(__file__).parent.parent / "sixnimmt_env" / "weights"
DEFAULT_POLICY = f"champion:{WEIGHTS_DIR / 'default_ppo_4p.npz'}"  # the default-config policy

VARIANTS = [
    GameConfig(num_players=4, episode="round"),
    GameConfig(num_players=2, episode="game"),
    GameConfig(num_players=10, episode="round"),
    GameConfig(num_players=5, variant="tactics", episode="game"),
    GameConfig(num_players=3, variant="logic", episode="round"),
    GameConfig(num_players=6, variant="logic", row_choice="cheapest", episode="round"),
    GameConfig(num_players=4, row_choice="cheapest", episode="game", end_rule="more_than"),
]


def test_shipped_weights_load_as_the_champion_spec() -> None:
    agent = make_agent("champion")
    assert isinstance(agent, ChampionAgent)
    actor, meta = read_weights(WEIGHTS)
    assert meta["format"] == "sixnimmt-card-actor-1"
    assert meta["steps"] > 1_000_000  # a trained policy, not a fresh network
    assert actor.linear_w.shape[1] == 109
    assert WEIGHTS.stat().st_size < 1_000_000  # small package data


def test_the_package_ships_only_the_weights_champion_plays_and_the_default_policy() -> None:
    """Package data holds four weights files: stage 8 (``champion`` at 4 players), the table and 2-player weights
    (``champion`` at the other sizes) and the default-config policy (``champion:default-ppo``), each a name of
    :data:`BASELINES`; the champion's past stages are the repository's (lab/weights/), played as ``champion:PATH``."""
    package = Path(__file__).resolve().parents[1] / "sixnimmt_env"
    shipped = sorted(str(p.relative_to(package)) for p in package.rglob("*.npz"))
    assert shipped == [
        "champion.npz",
        "weights/champion_2p.npz",
        "weights/champion_tables.npz",
        "weights/default_ppo_4p.npz",
    ]
    assert sorted(str(p.relative_to(package)) for p in BASELINES.values()) == shipped
    assert list(BASELINES) == ["default-ppo", "stage-8", "tables", "2p"] and BASELINES["stage-8"] == WEIGHTS


def test_playing_the_champion_imports_neither_torch_nor_sb3() -> None:
    code = (
        "import sys, numpy as np; from sixnimmt_env.agents import make_agent; from sixnimmt_env.rules.engine import *;"
        "a = make_agent('champion'); c = GameConfig(num_players=4); s = new_game(c, np.random.default_rng(0));"
        "a.act(view(s, 0), np.random.default_rng(0));"
        "bad = [m for m in ('torch', 'stable_baselines3', 'sb3_contrib') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("config", VARIANTS, ids=lambda c: f"{c.variant}-{c.num_players}p-{c.row_choice}-{c.episode}")
def test_legal_moves_in_every_phase(config: GameConfig) -> None:
    agent = make_agent("champion")
    rng = np.random.default_rng(3)
    decisions = {SELECT: 0, CHOOSE_ROW: 0, DRAFT: 0}
    for _ in range(3):
        state, selects_before = new_game(config, rng), decisions[SELECT]
        while not state.done:
            actions = []
            for seat in range(config.num_players):
                action = agent.act(view(state, seat), rng)
                legal = legal_actions(state, seat)
                assert action in legal
                if action != NOOP:
                    decisions[state.phase] += 1
                actions.append(action)
            state, _ = step(state, actions, rng)
        # every round: 10 cards from each seat
        assert decisions[SELECT] - selects_before == 10 * config.num_players * (state.round + 1)
        if config.episode == "game":
            assert state.round >= 1 and max(state.totals) >= 66  # a game ends when a total reaches 66 (R12)
    assert decisions[SELECT] >= 3 * 10 * config.num_players
    if config.variant == "logic":
        assert decisions[DRAFT] > 0
    if config.row_choice == "player":
        assert decisions[CHOOSE_ROW] > 0


def test_act_act_observation_and_choose_agree_with_the_env_observation() -> None:
    agent = make_agent("champion")
    par = parallel_env(num_players=4, row_choice="player", infos="view")
    observations, infos = par.reset(seed=5)
    rng = np.random.default_rng(0)
    checked = 0
    while par.agents:
        actions = {}
        for name in par.agents:
            ob = observations[name]
            a = agent.act(infos[name], rng)
            assert a == agent.act_observation(ob["observation"], ob["action_mask"], rng)
            assert a == int(agent.choose(ob["observation"][None], ob["action_mask"][None])[0])
            checked += a != NOOP
            actions[name] = a
        observations, _, _, _, infos = par.step(actions)
    assert checked >= 40


def _positions(num_players: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every seat's observation ``(n, 506)`` and mask ``(n, 109)`` at the first decision of a round."""
    observations, _ = parallel_env(num_players=num_players).reset(seed=seed)
    obs = np.stack([o["observation"] for o in observations.values()])
    return obs, np.stack([o["action_mask"] for o in observations.values()]).astype(bool)


def test_the_champion_plays_the_weights_of_each_table_size() -> None:
    """``champion``: stage 8 at 4 players, the 2-player weights at 2, the table weights at the others, row by row in
    a batch mixing table sizes; ``champion:stage-8``, ``champion:2p`` and ``champion:tables`` play their one file
    everywhere."""
    champion, stage8, tables, two = (
        make_agent(s) for s in ("champion", "champion:stage-8", "champion:tables", "champion:2p")
    )
    assert set(champion.by_table) == {2, 3, 5, 6, 7, 8, 9, 10} and not stage8.by_table and not tables.by_table
    assert champion.actor_for(4) is stage8.actor and champion.actor_for(6) is tables.actor
    assert champion.actor_for(2) is two.actor and not two.by_table
    batches = {n: [_positions(n, seed) for seed in range(6)] for n in (2, 4, 6, 10)}
    for n, positions in batches.items():
        obs, masks = (np.concatenate(x) for x in zip(*positions, strict=True))
        assert np.allclose(obs[:, SLICES["num_players"].start], n / 10)
        same = {2: two, 4: stage8}.get(n, tables)
        np.testing.assert_array_equal(champion.choose(obs, masks), same.choose(obs, masks))
        if n != 4:  # the weights files disagree on some first cards at these tables
            assert (same.choose(obs, masks) != stage8.choose(obs, masks)).sum() >= 2
    # one batch holding rows of 2, 4, 6 and 10 players: each row as in its own table's batch
    mixed = [(o, m) for positions in batches.values() for o, m in positions]
    obs, masks = np.concatenate([o for o, _ in mixed]), np.concatenate([m for _, m in mixed])
    order = np.random.default_rng(0).permutation(len(obs))
    expected = np.concatenate([champion.choose(o, m) for o, m in mixed])
    np.testing.assert_array_equal(champion.choose(obs[order], masks[order]), expected[order])


def test_the_champion_reads_one_observation_a_batch_of_one_and_lists_as_the_one_file_specs_do() -> None:
    """``choose`` on a ``(506,)`` observation or nested lists, ``act_observation`` on a ``(1, 506)`` row: the table
    size is read after the input is made a batch (found by a helper session: IndexError, TypeError)."""
    obs, masks = _positions(6, 1)
    x, m = obs[0], masks[0]
    tables, champion, rng = make_agent("champion:tables"), make_agent("champion"), np.random.default_rng(0)
    expected = int(tables.choose(x[None], m[None])[0])
    assert list(champion.choose(x, m)) == [expected]
    assert list(champion.choose([x.tolist()], [m.tolist()])) == [expected]
    assert champion.act_observation(x[None], m[None], rng) == expected == champion.act_observation(x, m, rng)


def test_champion_sample_draws_from_the_policy_reproducibly_from_the_rng() -> None:
    """``champion-sample``: the shipped weights of each table, each action drawn from the masked softmax with one
    uniform number of ``rng`` per decision; the same generator state gives the same actions, other states other legal
    ones, and the highest-logit action is the most frequent draw; without an ``rng`` it says what it needs."""
    sampler, champion = make_agent("champion-sample"), make_agent("champion")
    assert sampler.sample and not champion.sample and sampler.actor_for(6) is champion.actor_for(6)
    assert make_agent("champion-sample:stage-8").sample
    obs, masks = _positions(4, 2)
    first = sampler.choose(obs, masks, np.random.default_rng(7))
    np.testing.assert_array_equal(first, sampler.choose(obs, masks, np.random.default_rng(7)))
    many = np.stack([sampler.choose(obs, masks, np.random.default_rng(s)) for s in range(200)])
    assert masks[np.arange(4)[None, :], many].all()
    best = champion.choose(obs, masks)
    for seat in range(4):
        values, counts = np.unique(many[:, seat], return_counts=True)
        assert values[counts.argmax()] == best[seat]
    assert len(np.unique(many)) > 4  # it does not always play the best card
    with pytest.raises(ValueError, match="champion-sample: a sampling champion needs an rng"):
        sampler.choose(obs, masks)


def test_champion_sample_arena_games_repeat_with_their_seed() -> None:
    """Every draw of ``champion-sample`` comes from the arena's seeded generators: the same seed, the same results;
    against three greedy it still takes fewer bullheads than each (400 rounds, beyond the intervals)."""
    lineup = ["champion-sample", "greedy", "greedy", "greedy"]
    first, again = run_arena(lineup, games=400, seed=4), run_arena(lineup, games=400, seed=4)
    assert [a["mean_penalty"] for a in first["agents"]] == [a["mean_penalty"] for a in again["agents"]]
    me, *others = first["agents"]
    for other in others:
        assert me["mean_penalty"] + me["ci95"] < other["mean_penalty"] - other["ci95"]


def test_gymnasium_opponents_accept_the_spec() -> None:
    env = gymnasium.make("sixnimmt/SixNimmt-v0", num_players=4, opponents=["champion"] * 3, episode="round")
    env.reset(seed=0)
    done, total = False, 0.0
    while not done:
        legal = np.flatnonzero(env.unwrapped.action_masks())
        _, reward, terminated, truncated, _ = env.step(int(legal[0]))
        total += reward
        done = terminated or truncated
    assert total <= 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("champion:", r"expected 'champion', 'champion:NAME' \(one of default-ppo, stage-8, tables, 2p\) or 'cha"),
        ("champion:stage-3", r"champion weights 'stage-3' not found; shipped names: default-ppo, stage-8, tables, 2p"),
        ("champion:/no/such.npz", "not found"),
    ],
)
def test_bad_specs_name_the_problem(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_agent(spec)


def test_a_foreign_npz_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "w.npz"
    np.savez(path, x=np.zeros(3))
    with pytest.raises(ValueError, match="format None, expected 'sixnimmt-card-actor-1'"):
        load_champion(f"champion:{path}")


def test_beats_greedy_quickly() -> None:
    """A short statistical check (CI): against three greedy, fewer bullheads than each, beyond the intervals, and a
    win share above parity's 95 % range at 400 games (25 % + 1.96 * 2.2 % = 29.3 %)."""
    results = run_arena(["champion", "greedy", "greedy", "greedy"], games=400, seed=11)
    me, *others = results["agents"]
    for other in others:
        assert me["mean_penalty"] + me["ci95"] < other["mean_penalty"] - other["ci95"]
    assert me["win_share"] > 0.30


def test_at_two_players_the_champion_beats_mc64() -> None:
    """A short check (CI) of the 2-player weights: against ``mc:64``, 600 single rounds (seed 13), ``champion`` takes
    5.30 +- 0.35 bullheads a round against 7.91 +- 0.34 and wins 64.2 % (docs/champion.md: 64.4 % on 2,000, seed 9)."""
    results = run_arena(["champion", "mc:64"], games=600, seed=13, config=GameConfig(num_players=2, episode="round"))
    me, mc = results["agents"]
    assert 4.9 < me["mean_penalty"] < 5.7
    assert me["mean_penalty"] + me["ci95"] < mc["mean_penalty"] - mc["ci95"]
    assert me["win_share"] - me["win_share_ci95"] > 0.5


def test_at_six_players_the_table_weights_take_fewer_bullheads_than_stage_8() -> None:
    """A short check (CI) that ``champion`` away from 4 players is the table-trained policy and that it is stronger
    there: one ``champion`` among five ``champion:stage-8`` at 6 players, 1,200 single rounds (seed 13), takes 11.74 +-
    0.46 bullheads a round against 13.18-14.04 for each stage 8 (docs/champion.md has the figures against mc:64)."""
    stage8 = "champion:stage-8"
    results = run_arena(
        ["champion", *[stage8] * 5], games=1200, seed=13, config=GameConfig(num_players=6, episode="round")
    )
    me, *others = results["agents"]
    assert 11.2 < me["mean_penalty"] < 12.3
    assert all(me["mean_penalty"] + me["ci95"] < o["mean_penalty"] - o["ci95"] for o in others)


@pytest.mark.slow
def test_strength_against_greedy_mc64_and_the_default_policy() -> None:
    """The strength run of docs/champion.md (shipped weights, 4,000 games each): 8.49 +- 0.20 against greedy's;
    9.20 +- 0.23 against mc:64's, winning 37.6 %; 7.59 +- 0.20 against the default-config policy's, winning
    38.1 %. The issue's targets, not all met, are in the doc; this pins what the shipped weights reach (all
    games are fixed by the seed)."""
    greedy = run_arena(["champion", "greedy", "greedy", "greedy"], games=4000, seed=1, workers=2)
    me, *others = greedy["agents"]
    assert me["mean_penalty"] <= 8.5  # the target
    assert me["mean_penalty"] + me["ci95"] < 8.7
    assert all(me["mean_penalty"] + me["ci95"] < o["mean_penalty"] - o["ci95"] for o in others)
    mc = run_arena(["champion", "mc:64", "mc:64", "mc:64"], games=4000, seed=2, workers=2)
    me, *others = mc["agents"]
    assert me["win_share"] > 0.37  # parity is 0.25; the target is 0.38
    assert all(me["mean_penalty"] + me["ci95"] < o["mean_penalty"] - o["ci95"] for o in others)
    bar = DEFAULT_POLICY
    default = run_arena(["champion", bar, bar, bar], games=4000, seed=3, workers=2)
    me, *others = default["agents"]
    assert me["mean_penalty"] + me["ci95"] < 8.5  # the target
    assert me["win_share"] >= 0.38  # the target


def test_a_training_config_can_train_against_the_champion(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from sb3_contrib.common.maskable.utils import get_action_masks

    from training.config import load_config
    from training.opponents import mixture_sampler
    from training.vec import build_vec_env

    cfg = load_config(
        "configs/ppo_4p_batched.yaml",
        ["opponents=[{agent: champion, weight: 1.0}]", "self_play.enabled=false", "train.n_envs=8"],
    )
    assert [o.agent for o in cfg.opponents] == ["champion"]
    sampler = mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw)
    venv = build_vec_env(cfg.env, cfg.train, sampler, tmp_path / "monitor")
    venv.reset()
    _, rewards, _, _ = venv.step((get_action_masks(venv).cumsum(axis=1) == 1).argmax(axis=1))
    assert rewards.shape == (8,) and (rewards <= 0).all()
    venv.close()


@pytest.mark.parametrize("net_arch", [[64, 64], [96, 80]])
def test_init_from_a_weights_file_starts_with_its_logits(tmp_path: Path, net_arch: list[int]) -> None:
    """``train.init_from: X.npz`` (the second stage of lab/configs/champion_league.yaml): the new policy's actor plays
    the file's logits and its critic's MLP starts as the actor's. A wider policy (96-80 from a 64-64 file) takes the
    file's units first and zero weights out of the extra ones; fewer or narrower layers are a clear error."""
    pytest.importorskip("torch")
    import torch
    from sb3_contrib import MaskablePPO

    from training.config import ConfigError
    from training.policy import CardPolicy
    from training.ppo_agents import PolicyAgent
    from training.sb3_backend import init_policy
    from training.vec_env import SixNimmtVecEnv

    env = SixNimmtVecEnv(1, seed=0, num_players=4, episode="round")
    model = MaskablePPO(CardPolicy, env, policy_kwargs={"net_arch": net_arch}, seed=3, n_steps=16, batch_size=16)
    init_policy(model, WEIGHTS)
    obs, _ = _positions(4, 6)
    actor, _ = read_weights(WEIGHTS)
    np.testing.assert_allclose(PolicyAgent(model.policy).logits(obs), actor.logits(obs), rtol=1e-4, atol=1e-4)
    pi, vf = model.policy.mlp_extractor.policy_net, model.policy.mlp_extractor.value_net
    head = model.policy.action_net
    assert torch.equal(pi[0].weight[:64], vf[0].weight[:64]) and torch.equal(pi[2].bias[:64], vf[2].bias[:64])
    assert pi[0].weight.shape == (net_arch[0], 626) and pi[2].weight.shape == (net_arch[1], net_arch[0])
    assert torch.equal(pi[0].weight[:64], torch.as_tensor(actor.layers[0][0].T))
    assert not pi[2].weight[:64, 64:].any()  # extra first-layer units feed nothing the file's units read
    assert not head.linear.weight[:, 64:].any() and not head.global_in.weight[:, 64:].any()
    if net_arch[1] > 64:
        assert pi[2].weight[64:].abs().sum() > 0  # extra second-layer units keep their initial weights
    for other, match in [
        ([32], r"hidden layers \(size, activation\) \[\(64, 'tanh'\), \(64, 'tanh'\)\] do not fit"),
        ([64, 32], r"do not fit the policy's \[\(64, 'tanh'\), \(32, 'tanh'\)\]"),
    ]:
        narrow = MaskablePPO(CardPolicy, env, policy_kwargs={"net_arch": other}, n_steps=16, batch_size=16)
        with pytest.raises(ConfigError, match=match):
            init_policy(narrow, WEIGHTS)
    with pytest.raises(ConfigError, match="not found"):
        init_policy(model, tmp_path / "missing.npz")
