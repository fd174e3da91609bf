"""Search distillation (training/distill.py): mc:N labels, the teacher's distribution, the fit, train.init_from."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sixnimmt_env.compiled import BatchedGames
from sixnimmt_env.compiled.mc import MonteCarloPlayers
from sixnimmt_env.observation import OBS_SIZE, SLICES
from sixnimmt_env.rules.engine import CHOOSE_ROW, NOOP, ROW_ACTION, SELECT, GameConfig
from training.distill import Labels, fit_policy, label_positions, teacher_probs

CONFIG = GameConfig(num_players=4, episode="round", row_choice="player")


def test_mc_scores_are_the_searched_candidates_and_the_action_is_their_minimum() -> None:
    games = BatchedGames(CONFIG, 64, seed=5)
    mc = MonteCarloPlayers(games, np.ones(4, bool), 16, seed=6)
    actions = np.zeros((64, 4), np.int64)
    scores = np.empty((64, 4, 109))
    own = np.empty((64, 4, 109))
    masks = np.empty((64, 4, 109), np.int8)
    seen_rows = 0
    while not games.done.all():
        scores.fill(np.nan)
        own.fill(np.nan)
        games.legal_mask(masks)
        mc.act(actions, scores, own)
        for b in range(64):
            for s in range(4):
                finite = np.isfinite(scores[b, s])
                legal = masks[b, s].astype(bool)
                phase, hand_len = games.phase[b], games.hand_len[b, s]
                decides = (phase == 0 and hand_len > 1) or (phase == 1 and games.chooser[b] == s)
                if not decides:
                    assert not finite.any()
                    continue
                assert np.array_equal(finite, legal)  # every legal card (or row) is scored, nothing else
                assert actions[b, s] == np.flatnonzero(finite)[np.argmin(scores[b, s][finite])]  # ties: lower
                assert (own[b, s][finite] >= 0).all()
                if phase == 1:
                    seen_rows += 1
                    assert np.flatnonzero(finite).tolist() == [ROW_ACTION + r for r in range(4)]
        games.step(actions)
    assert seen_rows > 0


def test_mc_scores_must_come_in_pairs_of_the_right_shape() -> None:
    games = BatchedGames(CONFIG, 2, seed=0)
    mc = MonteCarloPlayers(games, np.ones(4, bool), 2, seed=0)
    out = np.zeros((2, 4), np.int64)
    with pytest.raises(ValueError, match="both scores and own"):
        mc.act(out, scores=np.zeros((2, 4, 109)))
    with pytest.raises(ValueError, match=r"scores must be a float64 array of shape \(2, 4, 109\)"):
        mc.act(out, scores=np.zeros((2, 4, 108)), own=np.zeros((2, 4, 109)))


def test_teacher_probs() -> None:
    scores = np.array([[0.0, np.nan, 1.0, np.nan], [2.0, 2.0, np.nan, np.nan]])
    p = teacher_probs(scores, 1.0)
    e = np.exp(-1.0)
    assert np.allclose(p[0], [1 / (1 + e), 0, e / (1 + e), 0])
    assert np.allclose(p[1], [0.5, 0.5, 0, 0])
    assert np.allclose(teacher_probs(scores, 0.01)[0], [1, 0, 0, 0])
    with pytest.raises(ValueError, match="temperature must be > 0"):
        teacher_probs(scores, 0.0)
    with pytest.raises(ValueError, match="at least one finite score"):
        teacher_probs(np.full((1, 3), np.nan), 1.0)


def test_labels_hold_real_decisions_and_their_returns(tmp_path: Path) -> None:
    labels = label_positions(CONFIG, 1500, 4, batch_size=16, seed=3)
    assert len(labels) >= 1500
    assert labels.obs.shape == (len(labels), OBS_SIZE) and labels.obs.dtype == np.float32
    assert np.array_equal(labels.mask, np.isfinite(labels.scores))  # scored exactly where legal
    assert not labels.mask[:, NOOP].any()
    hand = labels.obs[:, SLICES["hand"]]
    phase = labels.obs[:, SLICES["phase"]].argmax(axis=1)
    select = phase == 0
    assert np.array_equal(labels.mask[select, :104], hand[select] > 0)  # card selection: the held cards
    assert (hand[select].sum(axis=1) >= 2).all()  # a forced last card is no decision
    assert (labels.mask[phase == 1, ROW_ACTION : ROW_ACTION + 4]).all()
    assert {SELECT, CHOOSE_ROW} == {("select", "choose_row")[p] for p in set(phase.tolist())}
    assert (labels.returns <= 0).all()
    # the first decision of a round: the return is minus the whole round's penalty, which is at most 171 (R2)
    first = select & (hand.sum(axis=1) == 10)
    assert first.sum() % 4 == 0 and first.sum() >= 16 * 4  # each episode: one first decision per seat
    assert (labels.returns[first] >= -171).all() and labels.returns[first].mean() < -3
    path = labels.save(tmp_path / "labels.npz")
    again = Labels.load(path)
    assert np.array_equal(again.scores, labels.scores, equal_nan=True) and np.array_equal(again.obs, labels.obs)
    same = label_positions(CONFIG, 1500, 4, batch_size=16, seed=3)
    assert np.array_equal(same.obs, labels.obs) and np.array_equal(same.returns, labels.returns)


def test_fit_learns_the_teacher(tmp_path: Path) -> None:
    from sb3_contrib import MaskablePPO

    from training.policy import CardPolicy
    from training.vec_env import SixNimmtVecEnv

    labels = label_positions(CONFIG, 6000, 16, batch_size=32, seed=1)  # a held-out part large enough for the margins
    env = SixNimmtVecEnv(1, seed=0, num_players=4, episode="round", row_choice="player")
    model = MaskablePPO(CardPolicy, env, policy_kwargs={"net_arch": [64, 64]}, seed=0, n_steps=16, batch_size=16)
    before = fit_policy(model.policy, labels, epochs=0, batch_size=256, log=lambda _: None)
    with pytest.raises(ValueError, match=r"fit_policy: \d+ training labels .* fewer than batch_size=100000"):
        fit_policy(model.policy, labels, epochs=1, batch_size=100_000, log=lambda _: None)
    after = fit_policy(model.policy, labels, epochs=15, batch_size=256, learning_rate=3e-3, log=lambda _: None)
    # held-out figures (measured: cross-entropy 1.66 -> 1.57, agreement 0.20 -> 0.32, value RMSE 13.1 -> 6.4)
    assert after["cross_entropy"] < before["cross_entropy"] - 0.03
    assert after["agreement"] > before["agreement"] + 0.08
    assert after["value_rmse"] < before["value_rmse"] - 2.0
    # the distilled weights start a new run (train.init_from)
    path = tmp_path / "distilled.zip"
    model.save(path)
    from training.sb3_backend import init_policy

    fresh = MaskablePPO(CardPolicy, env, policy_kwargs={"net_arch": [64, 64]}, seed=5, n_steps=16, batch_size=16)
    init_policy(fresh, path)
    for (name, a), b in zip(model.policy.state_dict().items(), fresh.policy.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    from training.config import ConfigError

    other = MaskablePPO(CardPolicy, env, policy_kwargs={"net_arch": [32]}, n_steps=16, batch_size=16)
    with pytest.raises(ConfigError, match="its policy differs from the config's"):
        init_policy(other, path)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (["distill.enabled=true", "distill.sample=8"], "unknown key 'distill.sample'"),
        (["distill.enabled=true", "distill.samples=0"], "key 'distill.samples' must be an integer >= 1, got 0"),
        (["distill.enabled=true", "distill.workers=0"], "key 'distill.workers' must be an integer >= 1, got 0"),
        (["distill.enabled=true", "distill.temperature=0"], "key 'distill.temperature' must be a number > 0.0, got 0"),
        (["distill.enabled=true", "env.episode=game"], "'distill.enabled' needs env.episode: round"),
        (["distill.enabled=true", "train.backend=rllib"], "'distill.enabled' applies to train.backend: sb3 only"),
        (
            ["train.init_from=no/such.zip"],
            f"key 'train.init_from' '{Path.cwd() / 'no/such.zip'}': no such checkpoint file",
        ),
    ],
)
def test_distill_config_errors_name_the_key(override: list[str], message: str) -> None:
    from training.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=message):
        load_config(Path(__file__).parent.parent / "configs" / "smoke.yaml", override)


def test_a_run_with_a_distill_stage_starts_ppo_from_the_fitted_policy(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    root = Path(__file__).parent.parent
    sets = [
        f"train.output_dir={tmp_path}", "distill.enabled=true", "distill.samples=4", "distill.decisions=2000",
        "distill.games=32", "distill.epochs=2", "distill.batch_size=256", "self_play.enabled=false",
    ]  # fmt: skip
    args = [sys.executable, "-m", "training.train", str(root / "configs" / "smoke.yaml"), "--no-progress"]
    result = subprocess.run([*args, *(x for s in sets for x in ("--set", s))], capture_output=True, text=True, cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    (run,) = (tmp_path / "smoke").iterdir()
    info = json.loads((run / "distill" / "distill.json").read_text())
    assert info["labels"] >= 2000 and info["settings"]["samples"] == 4 and 0 <= info["agreement"] <= 1
    assert Labels.load(run / "distill" / "labels.npz").obs.shape == (info["labels"], OBS_SIZE)
    assert (run / "distill" / "distilled.zip").is_file() and (run / "final_model.zip").is_file()
    assert "distill: held-out agreement with mc:4" in result.stderr


def test_parallel_labelling_is_two_seeded_shards() -> None:
    from training.distill import label_in_parallel

    one = label_in_parallel(CONFIG, 600, 2, batch_size=8, seed=4, workers=1)
    same = label_positions(CONFIG, 600, 2, batch_size=8, seed=4)
    assert np.array_equal(one.obs, same.obs) and np.array_equal(one.returns, same.returns)
    two = label_in_parallel(CONFIG, 600, 2, batch_size=8, seed=4, workers=2)
    shard0 = label_positions(CONFIG, 300, 2, batch_size=8, seed=[4, 0])
    shard1 = label_positions(CONFIG, 300, 2, batch_size=8, seed=[4, 1])
    assert len(two) == len(shard0) + len(shard1) >= 600
    assert np.array_equal(two.obs, np.concatenate([shard0.obs, shard1.obs]))
    assert np.array_equal(two.scores, np.concatenate([shard0.scores, shard1.scores]), equal_nan=True)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        label_in_parallel(CONFIG, 600, 2, workers=0)
