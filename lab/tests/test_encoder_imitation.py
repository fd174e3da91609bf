"""lab/benchmarks/encoder_imitation.py: the card tokens read the observation, and every variant fits and scores only
legal actions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from benchmark_scripts import load_benchmark

from sixnimmt_env import parallel_env
from sixnimmt_env.card_features import card_features
from sixnimmt_env.rules.engine import GameConfig
from training.distill import Labels, label_positions


@pytest.fixture(scope="module")
def ei():  # the benchmark script as a module
    return load_benchmark("encoder_imitation")


def test_card_tokens_mark_hand_seen_and_unseen_cards(ei) -> None:
    observations, _ = parallel_env(num_players=4).reset(seed=3)
    obs = np.stack([o["observation"] for o in observations.values()])
    tokens = ei.card_tokens(obs)
    assert tokens.shape == (4, 104, 12) and tokens.dtype == np.float32
    np.testing.assert_array_equal(tokens[:, :, :8], card_features(obs, np.repeat(np.arange(104)[None], 4, axis=0)))
    in_hand, seen, unseen = tokens[:, :, 8], tokens[:, :, 9], tokens[:, :, 10]
    assert (in_hand.sum(axis=1) == 10).all() and (seen.sum(axis=1) == 4).all()  # the four starting row cards
    assert (unseen.sum(axis=1) == 90).all() and ((in_hand + seen + unseen) == 1).all()
    np.testing.assert_allclose(tokens[0, [0, 103], 11], [1 / 104, 1.0])


def test_every_variant_fits_and_scores_only_legal_actions(ei, capsys, tmp_path) -> None:
    labels = label_positions(GameConfig(num_players=4, episode="round"), 600, 4, batch_size=8, seed=5)
    labels.save(tmp_path / "labels.npz")
    assert ei.main(["--labels", str(tmp_path / "labels.npz"), "--variants", "mlp64,hand,tokens", "--epochs", "0"]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| `")]
    assert [line.split("|")[1].strip() for line in table] == ["`mlp64`", "`hand`", "`tokens`"]
    params = [int(line.split("|")[2].replace(",", "")) for line in table]
    assert params[0] == sum(t.numel() for t in ei.make_policy("mlp64", 0).parameters()) and params[0] < params[1]
    loaded = Labels.load(tmp_path / "labels.npz")
    for variant in ei.VARIANTS:
        policy = ei.make_policy(variant, 1)
        with torch.no_grad():
            probs = policy.get_distribution(torch.as_tensor(loaded.obs[:64]), action_masks=loaded.mask[:64])
        p = probs.distribution.probs.numpy()
        assert p.shape == (64, 109) and float(p[~loaded.mask[:64]].sum()) == 0.0
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="unknown variant 'wide'"):
        ei.make_policy("wide", 0)
