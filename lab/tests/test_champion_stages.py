"""The champion's past weights, kept in the lab (``lab/weights/``, ``champion:PATH``): the package's reader widens
the inputs of weights trained before the observation's last piece and the held cards' last features; the exploiter
beats three ``champion``; the whole-game weights come from their config and play every phase; the stage configs
check their starting weights when they load."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from sixnimmt_env import parallel_env
from sixnimmt_env.agents import make_agent
from sixnimmt_env.arena import run_arena
from sixnimmt_env.champion import BASELINES, WEIGHTS, read_weights
from sixnimmt_env.rules.engine import CHOOSE_ROW, DRAFT, NOOP, SELECT, GameConfig, legal_actions, new_game, step, view
from training.config import ConfigError, dump_config, load_config

ROOT = Path(__file__).resolve().parents[2]
LAB_WEIGHTS = ROOT / "lab" / "weights"
CONFIGS = ROOT / "lab" / "configs"
LEAGUE = CONFIGS / "champion_league.yaml"  # stage 2: starts from stage 1's weights
GAMES_WEIGHTS = LAB_WEIGHTS / "champion_games.npz"  # stage 8 continued on whole games (champion_games.yaml)
EXPLOITER = LAB_WEIGHTS / "exploiter_1.npz"  # a fresh learner trained only against champion-sample
DEFAULT_POLICY = f"champion:{BASELINES['default-ppo']}"  # the default-config policy

VARIANTS = [
    GameConfig(num_players=4, episode="round"),
    GameConfig(num_players=2, episode="game"),
    GameConfig(num_players=10, episode="round"),
    GameConfig(num_players=5, variant="tactics", episode="game"),
    GameConfig(num_players=3, variant="logic", episode="round"),
    GameConfig(num_players=6, variant="logic", row_choice="cheapest", episode="round"),
    GameConfig(num_players=4, row_choice="cheapest", episode="game", end_rule="more_than"),
]
"""The game configs of tests/test_champion.py's legal-move test, played here by the whole-game weights."""


@pytest.mark.parametrize("config", VARIANTS, ids=lambda c: f"{c.variant}-{c.num_players}p-{c.row_choice}-{c.episode}")
def test_the_whole_game_weights_play_legal_moves_in_every_phase(config: GameConfig) -> None:
    agent = make_agent(f"champion:{GAMES_WEIGHTS}")
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


def test_the_shipped_exploiter_beats_three_champions_and_names_its_recipe() -> None:
    """The exploiter (a fresh learner trained only against ``champion-sample``, lab/docs/champion_log.md) wins more
    than parity against three ``champion`` and takes fewer bullheads than each, beyond the intervals: 600 rounds,
    seed 6, 8.58 +- 0.59 against 10.79-11.36 and 36.2 % of the wins (33.5 % on 4,000 rounds); its weights file
    names the probe config and the overrides that made it."""
    meta = read_weights(EXPLOITER)[1]
    assert meta["config"] == "configs/champion_probe.yaml" and meta["steps"] == 123_551_744
    assert 'opponents=[{agent: "champion-sample", weight: 1.0}]' in meta["overrides"]
    results = run_arena([f"champion:{EXPLOITER}", "champion", "champion", "champion"], games=600, seed=6)
    me, *others = results["agents"]
    assert 8.0 < me["mean_penalty"] < 9.2
    for other in others:
        assert me["mean_penalty"] + me["ci95"] < other["mean_penalty"] - other["ci95"]
    assert me["win_share"] - me["win_share_ci95"] > 0.25


def _raw_logits(arrays: dict[str, np.ndarray], obs: np.ndarray) -> np.ndarray:
    """The card actor's forward pass (as :class:`CardActor`) on the raw arrays, in the layout they were trained on:
    the observation's first 402 or all 506 values, and the first 9 held-card features."""
    from sixnimmt_env.card_features import hand_features

    feats, held = hand_features(obs)
    feats = feats[:, :, : arrays["card_in_w"].shape[0]]  # the held-card features the file was trained on
    glob = np.concatenate([obs[:, : arrays["hidden_w0"].shape[0] - feats[0].size], feats.reshape(len(obs), -1)], axis=1)
    for i, tanh in enumerate(arrays["hidden_tanh"]):
        glob = glob @ arrays[f"hidden_w{i}"] + arrays[f"hidden_b{i}"]
        glob = np.tanh(glob) if tanh else np.maximum(glob, 0.0)
    hidden = np.maximum(feats @ arrays["card_in_w"] + arrays["card_in_b"] + (glob @ arrays["global_in_w"])[:, None], 0)
    scores = (hidden @ arrays["card_out_w"] + arrays["card_out_b"])[:, :, 0] * feats[:, :, 0]
    logits = glob @ arrays["linear_w"] + arrays["linear_b"]
    logits[np.arange(len(obs))[:, None], held] += scores
    return logits


STAGE1 = LAB_WEIGHTS / "champion_v1.npz"
"""The stage-1 champion (the shipped weights before the league stage), kept as trained: 402 + 90 inputs wide."""


def test_402_wide_weights_are_widened_with_zeros_for_drafted_by() -> None:
    with np.load(STAGE1) as f:
        raw = {k: f[k] for k in f.files if k != "meta"}
    assert raw["hidden_w0"].shape[0] == 402 + 90
    actor, _ = read_weights(STAGE1)
    assert actor.layers[0][0].shape[0] == 506 + 120
    np.testing.assert_array_equal(actor.layers[0][0][402:506], 0.0)
    cards = actor.layers[0][0][506:].reshape(10, 12, -1)
    np.testing.assert_array_equal(cards[:, 9:], 0.0)
    np.testing.assert_array_equal(cards[:, :9].reshape(90, -1), raw["hidden_w0"][402:])
    for config in (GameConfig(num_players=4), GameConfig(num_players=6, variant="tactics")):
        par = parallel_env(**{"num_players": config.num_players, "variant": config.variant})
        observations, _ = par.reset(seed=4)
        obs = np.stack([o["observation"] for o in observations.values()])
        assert not obs[:, 402:].any()  # drafted_by is 0 outside the logic variant
        np.testing.assert_allclose(actor.logits(obs), _raw_logits(raw, obs), rtol=1e-5, atol=1e-5)


STAGE4 = LAB_WEIGHTS / "champion_v4.npz"
"""Stage 4, trained on 9 features per held card: 506 + 90 inputs wide."""


def test_weights_of_9_held_card_features_get_zero_weights_for_the_later_three() -> None:
    with np.load(STAGE4) as f:
        raw = {k: f[k] for k in f.files if k != "meta"}
    assert raw["hidden_w0"].shape[0] == 506 + 90 and raw["card_in_w"].shape[0] == 9
    actor, _ = read_weights(STAGE4)
    assert actor.layers[0][0].shape[0] == 506 + 120 and actor.card_in_w.shape[0] == 12
    np.testing.assert_array_equal(actor.card_in_w[9:], 0.0)
    np.testing.assert_array_equal(actor.layers[0][0][506:].reshape(10, 12, -1)[:, 9:], 0.0)
    for variant in ("standard", "logic"):  # the logic variant's drafted_by is read by these weights
        par = parallel_env(num_players=5, variant=variant)
        observations, _ = par.reset(seed=8)
        obs = np.stack([o["observation"] for o in observations.values()])
        np.testing.assert_allclose(actor.logits(obs), _raw_logits(raw, obs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "algo.policy_kwargs.net_arch=[32]",
            r"hidden layers \(size, activation\) \[\(64, 'tanh'\), \(64, 'tanh'\)\], "
            r"but algo.policy_kwargs gives \[\(32, 'tanh'\)\]",
        ),
        ("algo.policy_kwargs.activation_fn=relu", r"but algo.policy_kwargs gives \[\(64, 'relu'\), \(64, 'relu'\)\]"),
        (
            "algo.policy_kwargs.net_arch=[128, 32]",
            r"but algo.policy_kwargs gives \[\(128, 'tanh'\), \(32, 'tanh'\)\]; .* each layer at least as wide",
        ),
        ("algo.policy=MlpPolicy", r"a .npz actor starts a card policy \(algo.policy: card"),
        ("train.init_from=lab/configs/champion.yaml.npz", "no such checkpoint file"),
    ],
)
def test_league_config_checks_its_init_weights_before_training(override: str, message: str) -> None:
    assert load_config(LEAGUE).train.init_from == str(LAB_WEIGHTS / "champion_v1.npz")
    wide = load_config(LEAGUE, ["algo.policy_kwargs.net_arch=[256, 256]"])
    assert wide.algo.policy_kwargs.net_arch == [256, 256]  # a wider policy than the file's 64-64 loads it
    with pytest.raises(ConfigError, match=message):
        load_config(LEAGUE, [override])


def test_an_init_from_that_is_not_a_checkpoint_is_refused_when_the_config_loads() -> None:
    readme = Path.cwd() / "README.md"  # --set paths are relative to the current folder
    with pytest.raises(ConfigError, match=rf"'{readme}': neither an SB3 checkpoint \(a .zip holding policy.pth\)"):
        load_config(LEAGUE, ["train.init_from=README.md"])


def test_whole_game_weights_load_and_come_from_their_config() -> None:
    """lab/weights/champion_games.npz: stage 8 continued on whole games (lab/configs/champion_games.yaml)."""
    actor, meta = read_weights(GAMES_WEIGHTS)
    assert meta["config"] == "configs/champion_games.yaml" and meta["steps"] == 43_379_712
    assert actor.linear_w.shape[1] == 109 and actor.attention is None
    config = load_config(CONFIGS / "champion_games.yaml")
    assert config.env.episode == "game" and config.env.end_score == 66
    assert config.train.init_from == str(WEIGHTS)  # init_from: stage-8, the shipped champion
    assert config.train.win_bonus == 60 and config.algo.gamma == 0.995
    assert config.train.total_timesteps == meta["steps"]


@pytest.mark.slow
def test_whole_game_weights_win_more_matches_than_the_champion() -> None:
    """The score-aware measurement of docs/champion.md: whole games to 66 against three default-config policies,
    8,000 games, seed 4: the whole-game weights win 60.3 % of the matches, the shipped champion 56.7 % (each
    +- 1.1). All games are fixed by the seed."""
    bar = DEFAULT_POLICY
    config = GameConfig(num_players=4, episode="game")
    games = run_arena([f"champion:{GAMES_WEIGHTS}", bar, bar, bar], games=8000, seed=4, config=config, workers=2)
    round_trained = run_arena(["champion", bar, bar, bar], games=8000, seed=4, config=config, workers=2)
    me, base = games["agents"][0], round_trained["agents"][0]
    assert me["win_share"] - me["win_share_ci95"] > base["win_share"] + 0.01
    assert me["win_share"] > 0.59 and base["win_share"] < 0.58


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_stage_config_loads_and_its_saved_copy_reloads_from_a_run_folder(path: Path, tmp_path: Path) -> None:
    """As tests/test_config.py checks every config of configs/: each of the lab's loads (its base chain and its
    weights files found), and the resolved copy a run saves reloads the same from another folder."""
    cfg = load_config(path)
    assert cfg.name == path.stem
    run_dir = tmp_path / "runs" / cfg.name / "20260101-000000"  # another folder than the config's
    run_dir.mkdir(parents=True)
    dump_config(cfg, run_dir / "config.yaml")
    assert "base" not in yaml.safe_load((run_dir / "config.yaml").read_text())  # saved resolved, inheritance done
    again = load_config(run_dir / "config.yaml")
    assert again == cfg
    assert again.algo.model_fields_set == cfg.algo.model_fields_set


def test_stage_configs_find_their_weights_from_any_folder(tmp_path: Path) -> None:
    """Issue 37's case: a stage config loaded in a fresh interpreter from another folder finds its weights, a path
    against the config's folder (``init_from: ../weights/champion_v1.npz``) or a shipped name (``stage-8``)."""
    code = (
        "from training.config import load_config\n"
        f"print(load_config({str(CONFIGS / 'champion_short.yaml')!r}).train.init_from)\n"
        f"print(load_config({str(CONFIGS / 'champion_tables.yaml')!r}).train.init_from)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [str(LAB_WEIGHTS / "champion_v1.npz"), str(WEIGHTS)]


def test_a_stage_config_holds_only_its_differences_and_inherits_the_rest() -> None:
    """The stages' ``base:`` chain (training.config's inheritance): stage 2 holds what it changes of stage 1."""
    stage1 = load_config(CONFIGS / "champion.yaml")
    stage2 = load_config(CONFIGS / "champion_league.yaml")
    raw = yaml.safe_load((CONFIGS / "champion_league.yaml").read_text())
    assert raw["base"] == "champion.yaml" and set(raw) == {"base", "opponents", "distill", "train", "eval"}
    assert stage2.algo == stage1.algo and stage2.env == stage1.env and stage2.self_play == stage1.self_play
    assert stage2.train.n_envs == 1024 and stage2.train.vec_env == "batched"  # inherited
    assert (stage2.train.seed, stage2.train.total_timesteps) == (21, 28_286_976)  # its own
    assert not stage2.distill.enabled and stage2.distill.samples == 64  # a mapping merges key by key
    stage_1 = f"champion:{LAB_WEIGHTS / 'champion_v1.npz'}"  # champion:../weights/champion_v1.npz, made absolute
    assert [o.agent for o in stage2.opponents][:2] == ["greedy", stage_1]  # a list replaces
    assert len(stage2.opponents) == 6
    assert stage2.name == "champion_league"  # never inherited
    games = load_config(CONFIGS / "champion_games.yaml")  # four levels down the chain of stages
    assert (games.env.episode, games.env.end_score, games.algo.gamma, games.train.win_bonus) == ("game", 66, 0.995, 60)
    assert games.train.opponent_draw == "table" and games.algo.policy_kwargs.net_arch == [64, 64]
