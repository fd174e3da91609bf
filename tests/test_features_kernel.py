"""The card features (sixnimmt_env/card_features.py, read by training/features.py) against the reference engine on
random positions: each card's target row, low-card and full-row flags, row length and bullheads, immediate cost and
distance (RULES.md R7-R9)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch

from sixnimmt_env.agents import immediate_cost
from sixnimmt_env.card_features import CARD_FEATURES, card_features
from sixnimmt_env.observation import OBS_SIZE, encode
from sixnimmt_env.rules import engine as E
from training.features import CardFeatures


def _approx(x: float) -> object:
    return pytest.approx(x, abs=1e-4)


def _positions(count: int, seed: int) -> list[E.State]:
    """Card-selection states met in random play (4 and 6 players, standard and tactics decks)."""
    rng = np.random.default_rng(seed)
    out: list[E.State] = []
    for cfg in (E.GameConfig(num_players=4, episode="round"), E.GameConfig(num_players=6, variant="tactics")):
        state = E.new_game(cfg, rng)
        while len(out) < count * (1 + (cfg.num_players == 6)):
            if state.phase == E.SELECT:
                out.append(state)
            acts = [int(rng.choice(E.legal_actions(state, s))) for s in range(cfg.num_players)]
            state, _ = E.step(state, acts, rng)
            if state.done:
                state = E.new_game(cfg, rng)
    return out


def test_card_features_match_the_engine_on_random_positions() -> None:
    positions = _positions(150, seed=3)
    obs = np.stack([encode(state, 0) for state in positions])
    cards = np.repeat(np.arange(104)[None], len(positions), axis=0)
    feats = card_features(obs, cards)
    space = gymnasium.spaces.Box(-np.inf, np.inf, (OBS_SIZE,), np.float32)
    torch_feats = CardFeatures(space)(torch.as_tensor(obs)).numpy()[:, OBS_SIZE:].reshape(feats.shape)
    np.testing.assert_allclose(torch_feats, feats, atol=1e-6)
    lows = fulls = 0
    for b, state in enumerate(positions):
        rows, costs = state.rows, [E.row_bullheads(r) for r in state.rows]
        on_table = {c for r in rows for c in r}
        for card in range(1, state.config.deck_size + 1):
            if card in on_table:
                continue
            f = dict(zip(CARD_FEATURES, feats[b, card - 1].tolist(), strict=True))
            target = E.row_for(rows, card)
            assert f["low"] == (target < 0)
            assert f["cost"] * 10 == _approx(immediate_cost(rows, costs, card))
            if target >= 0:
                assert f["full"] == (len(rows[target]) == E.ROW_LIMIT)
                assert f["length"] * 5 == _approx(len(rows[target]))
                assert f["bullheads"] * 10 == _approx(costs[target])
                assert f["distance"] * 104 == _approx(card - rows[target][-1])
                fulls += f["full"] == 1
            else:
                assert f["full"] == 0 and f["length"] == 0 and f["distance"] * 104 == _approx(card)
                lows += 1
    assert lows > 1000 and fulls > 500
