"""Card features and the card policy (training/features.py, training/policy.py)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch

from sixnimmt_env.observation import OBS_SIZE, encode
from sixnimmt_env.rules import engine as E
from training.features import (
    CARD_FEATURES,
    FEATURES_SIZE,
    HAND_FEATURES,
    CardFeatures,
    HandFeatures,
    card_features_numpy,
)
from training.policy import CardPolicy, MaskedCategorical

SPACE = gymnasium.spaces.Box(-np.inf, np.inf, (OBS_SIZE,), np.float32)


def _position_obs() -> np.ndarray:
    # RULES.md E2-like rows: row 0 is full (11 bullheads), rows 1..3 hold one card each (3 bullheads each)
    cfg = E.GameConfig(num_players=3, episode="round")
    state = E.from_position(cfg, [[51, 15, 3], [61, 79, 2], [16, 100, 104]], [[10, 11, 12, 13, 14], [50], [60], [70]])
    return encode(state, 0)[None]


def _card(feats: np.ndarray, card: int) -> dict[str, float]:
    row = feats[0, OBS_SIZE:].reshape(104, len(CARD_FEATURES))[card - 1]
    return dict(zip(CARD_FEATURES, row.tolist(), strict=True))


def test_card_features_on_a_known_position():
    feats = card_features_numpy(_position_obs())
    assert feats.shape == (1, FEATURES_SIZE) and feats.dtype == np.float32
    low = _card(feats, 3)  # below every row end: a low card (R9); cheapest row costs 3; unseen below 3: cards 1, 2
    assert low == pytest.approx(
        {
            "in_hand": 1,
            "low": 1,
            "full": 0,
            "length": 0,
            "bullheads": 0,
            "unseen": 0.2,
            "cost": 0.3,
            "distance": 3 / 104,
        }
    )
    full = _card(feats, 15)  # goes on 14, whose row holds 5 cards: takes 11 bullheads (R8)
    assert full == pytest.approx(
        {
            "in_hand": 1,
            "low": 0,
            "full": 1,
            "length": 1,
            "bullheads": 1.1,
            "unseen": 0,
            "cost": 1.1,
            "distance": 1 / 104,
        }
    )
    free = _card(feats, 100)  # goes on 70 (R7); 71..99 are all unseen by seat 0
    assert free == pytest.approx(
        {
            "in_hand": 0,
            "low": 0,
            "full": 0,
            "length": 0.2,
            "bullheads": 0.3,
            "unseen": 2.9,
            "cost": 0,
            "distance": 30 / 104,
        }
    )
    np.testing.assert_array_equal(feats[:, :OBS_SIZE], _position_obs())


def _real_observations() -> np.ndarray:
    rng = np.random.default_rng(0)
    obs = []
    for variant in ("standard", "tactics", "logic"):
        state = E.new_game(E.GameConfig(num_players=5, variant=variant, episode="round"), rng)
        while not state.done:
            obs.extend(encode(state, seat) for seat in range(5))
            actions = [int(rng.choice(E.legal_actions(state, s))) for s in range(5)]
            state, _ = E.step(state, actions, rng)
    return np.stack(obs)


def test_torch_extractor_equals_numpy_on_real_observations():
    batch = _real_observations()
    torch_out = CardFeatures(SPACE)(torch.as_tensor(batch)).numpy()
    np.testing.assert_allclose(torch_out, card_features_numpy(batch), atol=1e-6)


def test_hand_features_give_the_held_cards_in_order_then_zero_rows():
    obs = _position_obs()  # seat 0 holds 3, 15 and 51
    out = HandFeatures(SPACE)(torch.as_tensor(obs)).numpy()
    assert out.shape == (1, OBS_SIZE + 10 * len(HAND_FEATURES) + 10)
    np.testing.assert_array_equal(out[0, :OBS_SIZE], obs[0])
    rows = out[0, OBS_SIZE : OBS_SIZE + 10 * len(HAND_FEATURES)].reshape(10, len(HAND_FEATURES))
    held = out[0, OBS_SIZE + 10 * len(HAND_FEATURES) :]
    np.testing.assert_array_equal(held[:3], [2, 14, 50])  # card - 1, lowest first
    all_cards = card_features_numpy(obs)
    # own_below, own_above, take_risk: 3 is low and 15 goes to the full row (R8, R9): risk 1; 51 goes to a row
    # of 1 card, which 2 other players cannot fill: risk 0; no two held cards share a target row
    for k, card in enumerate((3, 15, 51)):
        expected = [*_card(all_cards, card).values(), card / 104, 0.0, 0.0, 1.0 if card < 50 else 0.0]
        np.testing.assert_allclose(rows[k], expected, atol=1e-6)
    assert rows[1].tolist()[2] == 1.0 and rows[1].tolist()[6] == pytest.approx(1.1)  # 15 takes the full row: 11
    np.testing.assert_array_equal(rows[3:], 0.0)


def test_hand_features_look_at_the_rest_of_the_hand_and_the_table_size():
    # 4 players; row 0 holds 4 cards (one free place before R8), rows 1..3 one card each; seat 0 holds 5 and 7
    # (low, R9), 22 and 25 (both go to row 0) and 45 (row 1)
    cfg = E.GameConfig(num_players=4, episode="round")
    hands = [[5, 7, 22, 25, 45], [1, 2, 3, 4, 6], [8, 9, 13, 14, 15], [16, 17, 18, 19, 26]]
    state = E.from_position(cfg, hands, [[10, 11, 12, 20], [40], [60], [80]])
    obs = encode(state, 0)[None]
    rows = HandFeatures(SPACE)(torch.as_tensor(obs)).numpy()[0, OBS_SIZE : OBS_SIZE + 10 * len(HAND_FEATURES)]
    rows = rows.reshape(10, len(HAND_FEATURES))[:, len(CARD_FEATURES) + 1 :]  # own_below, own_above, take_risk
    unseen = 104 - 7 - 5  # 7 cards on the table, 5 in the own hand
    # 22 is taken if one of 3 other players plays 21 (the one unseen card between 20 and 22);
    # 25 if one plays 21, 23 or 24
    risk_22 = 1 - (1 - 1 / unseen) ** 3
    risk_25 = 1 - (1 - 3 / unseen) ** 3
    expected = [[0, 0.1, 1], [0.1, 0, 1], [0, 0.1, risk_22], [0.1, 0, risk_25], [0, 0, 0]]
    np.testing.assert_allclose(rows[:5], expected, atol=1e-6)
    np.testing.assert_array_equal(rows[5:], 0.0)


def test_take_risk_is_the_binomial_tail_for_a_row_of_two_free_places():
    # 6 players (5 others), row 0 holds 3 cards (2 free places): P(at least 2 of 5 draws in the gap)
    cfg = E.GameConfig(num_players=6, episode="round")
    hands = [[40, 90], [1, 2], [3, 4], [5, 6], [7, 8], [9, 13]]
    state = E.from_position(cfg, hands, [[10, 11, 30], [50], [60], [70]])
    obs = encode(state, 0)[None]
    rows = HandFeatures(SPACE)(torch.as_tensor(obs)).numpy()[0, OBS_SIZE : OBS_SIZE + 10 * len(HAND_FEATURES)]
    risk = rows.reshape(10, len(HAND_FEATURES))[0, -1]  # card 40: unseen 31..39 between 30 and 40
    p = 9 / (104 - 6 - 2)  # 6 cards on the table, 2 in the own hand
    expected = 1 - (1 - p) ** 5 - 5 * p * (1 - p) ** 4
    assert risk == pytest.approx(expected, abs=1e-6)


def test_hand_features_match_the_card_features_of_every_held_card():
    batch = _real_observations()
    out = HandFeatures(SPACE)(torch.as_tensor(batch)).numpy()
    all_cards = card_features_numpy(batch)[:, OBS_SIZE:].reshape(len(batch), 104, len(CARD_FEATURES))
    rows = out[:, OBS_SIZE : OBS_SIZE + 10 * len(HAND_FEATURES)].reshape(len(batch), 10, len(HAND_FEATURES))
    held = out[:, OBS_SIZE + 10 * len(HAND_FEATURES) :].astype(int)
    for i in range(len(batch)):
        cards = np.flatnonzero(batch[i, :104])
        n = len(cards)
        np.testing.assert_array_equal(held[i, :n], cards)
        np.testing.assert_allclose(rows[i, :n, :8], all_cards[i, cards], atol=1e-6)
        np.testing.assert_allclose(rows[i, :n, 8], (cards + 1) / 104, atol=1e-7)
        np.testing.assert_array_equal(rows[i, n:], 0.0)


def test_masked_categorical_equals_sb3_contrib_and_samples_only_legal_actions(monkeypatch):
    from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution

    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 109, generator=gen) * 3
    masks = torch.rand(64, 109, generator=gen) < 0.2
    masks[:, 5] = True  # at least one legal action per row
    ours = MaskedCategorical(109).proba_distribution(logits)
    ours.apply_masking(masks.numpy())
    ref = MaskableCategoricalDistribution(109).proba_distribution(logits)
    ref.apply_masking(masks.numpy())
    for column in (0, 3, 7):  # the column-th legal action of each row (or action 5)
        legal = torch.where(masks, torch.arange(109), 200).sort(dim=1).values[:, column]
        actions = torch.where(legal < 109, legal, 5)
        np.testing.assert_allclose(ours.log_prob(actions), ref.log_prob(actions), atol=1e-5)
    np.testing.assert_allclose(ours.entropy(), ref.entropy(), atol=1e-5)
    np.testing.assert_array_equal(ours.mode(), ref.mode())
    # sampling: only legal actions, with the masked probabilities
    torch.manual_seed(1)
    one = MaskedCategorical(109).proba_distribution(logits[:1].expand(200_000, -1))
    one.apply_masking(masks[:1].expand(200_000, -1))
    counts = np.bincount(one.sample().numpy(), minlength=109) / 200_000
    probs = ref.distribution.probs[0].numpy()
    assert counts[~masks[0].numpy()].sum() == 0
    np.testing.assert_allclose(counts, probs, atol=0.005)
    # the end points of the uniform draw give the first and the last legal action
    legal = np.flatnonzero(masks[0].numpy())
    for u, expected in ((0.0, legal[0]), (1.0, legal[-1])):
        monkeypatch.setattr(torch, "rand", lambda shape, dtype=None, u=u: torch.full(shape, u, dtype=dtype))
        assert one.sample()[:3].tolist() == [expected] * 3


def test_card_policy_scores_only_through_legal_actions_and_survives_save_load(tmp_path):
    from sb3_contrib import MaskablePPO

    from training.vec_env import SixNimmtVecEnv

    env = SixNimmtVecEnv(8, opponents=["greedy", "greedy", "greedy"], seed=0, num_players=4, episode="round")
    model = MaskablePPO(CardPolicy, env, n_steps=16, batch_size=64, n_epochs=1, seed=0)
    model.learn(128)
    obs = env.reset()
    masks = env.action_masks()
    actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert all(masks[i, a] for i, a in enumerate(actions))
    model.save(tmp_path / "card.zip")
    loaded = MaskablePPO.load(tmp_path / "card.zip")
    assert type(loaded.policy) is CardPolicy
    again, _ = loaded.predict(obs, action_masks=masks, deterministic=True)
    np.testing.assert_array_equal(actions, again)
    env.close()


def test_a_checkpoint_saved_as_training_features_card_policy_loads(tmp_path, monkeypatch):
    # checkpoints written while CardPolicy lived in training.features pickle that class reference
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    import training.features
    from training.policy import custom_objects
    from training.ppo_agents import load_policy_agent

    env = gym.make("sixnimmt/SixNimmt-v0", num_players=4, opponents=["greedy"] * 3, episode="round")
    model = MaskablePPO(CardPolicy, env, seed=0, policy_kwargs={"net_arch": [16]})
    with monkeypatch.context() as m:
        m.setattr(CardPolicy, "__module__", "training.features")
        m.setattr(training.features, "CardPolicy", CardPolicy, raising=False)
        model.save(tmp_path / "old.zip")
    model.save(tmp_path / "new.zip")
    assert custom_objects(tmp_path / "old.zip") == {"policy_class": CardPolicy}
    assert custom_objects(tmp_path / "new.zip") == {}
    agent = load_policy_agent(f"ppo:{tmp_path / 'old.zip'}")
    assert type(agent.policy) is CardPolicy
    env.close()


def test_numpy_actor_matches_torch_for_card_features_mlp(tmp_path):
    from sb3_contrib import MaskablePPO

    from training.ppo_agents import PolicyAgent
    from training.vec_env import SixNimmtVecEnv

    env = SixNimmtVecEnv(4, opponents=["random", "random", "random"], seed=1, num_players=4, episode="round")
    model = MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=8,
        batch_size=32,
        policy_kwargs={"features_extractor_class": CardFeatures, "net_arch": [32, 32]},
    )
    agent = PolicyAgent(model.policy)
    assert agent.layers is not None  # the numpy path
    obs = env.reset()
    with torch.no_grad():
        t = torch.as_tensor(obs)
        expected = model.policy.action_net(model.policy.mlp_extractor.forward_actor(model.policy.extract_features(t)))
    np.testing.assert_allclose(agent.logits(obs), expected.numpy(), atol=1e-4)
    env.close()


def test_config_names_the_policy_and_rejects_unknown_ones(tmp_path):
    from training.config import ConfigError, load_config
    from training.policy import algo_kwargs

    cfg = load_config("configs/smoke.yaml", ["algo.policy=card"])
    assert algo_kwargs(cfg.algo)["policy"] is CardPolicy
    with pytest.raises(ConfigError, match=r"algo\.policy' must be one of MlpPolicy, card"):
        load_config("configs/smoke.yaml", ["algo.policy=transformer"])
    with pytest.raises(ConfigError, match="features_extractor_class' must be one of card_features"):
        load_config("configs/smoke.yaml", ["algo.policy=MlpPolicy", "algo.policy_kwargs.features_extractor_class=x"])
    with pytest.raises(ConfigError, match=r"does not go with 'algo\.policy: card'"):
        load_config("configs/smoke.yaml", ["algo.policy_kwargs.features_extractor_class=card_features"])


@pytest.mark.parametrize("net_arch", [None, [32], []], ids=["default", "one-layer", "no-hidden-layer"])
def test_numpy_card_actor_matches_the_torch_card_policy(net_arch: list[int] | None):
    from sb3_contrib import MaskablePPO

    from training.ppo_agents import PolicyAgent
    from training.vec_env import SixNimmtVecEnv

    env = SixNimmtVecEnv(16, opponents=["greedy", "random", "lowest"], seed=2, num_players=4, episode="round")
    kwargs = {} if net_arch is None else {"policy_kwargs": {"net_arch": net_arch}}
    model = MaskablePPO(CardPolicy, env, n_steps=16, batch_size=64, n_epochs=1, seed=3, **kwargs)
    model.learn(256)  # move the weights away from their initial values
    agent = PolicyAgent(model.policy)
    assert agent.card_actor is not None
    obs = env.reset()
    for _ in range(12):
        masks = env.action_masks()
        with torch.no_grad():
            t = torch.as_tensor(obs)
            latent = model.policy.mlp_extractor.forward_actor(model.policy.extract_features(t))
            expected = model.policy.action_net(latent).numpy()
        np.testing.assert_allclose(agent.logits(obs), expected, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(agent.choose(obs, masks), np.where(masks, expected, -np.inf).argmax(axis=1))
        obs, _, _, _ = env.step(agent.choose(obs, masks))
    env.close()


def test_card_policy_rejects_a_net_arch_it_cannot_honour_and_exposes_probs():
    from sb3_contrib import MaskablePPO

    from training.vec_env import SixNimmtVecEnv

    env = SixNimmtVecEnv(2, opponents=["greedy", "greedy", "greedy"], seed=0, num_players=4, episode="round")
    for arch in ({"pi": [16], "vf": [64]}, 32):
        with pytest.raises(ValueError, match="net_arch must be a list of layer sizes"):
            MaskablePPO(CardPolicy, env, policy_kwargs={"net_arch": arch})
    model = MaskablePPO(CardPolicy, env, n_steps=8, batch_size=16, policy_kwargs={"net_arch": [16]})
    obs, masks = env.reset(), env.action_masks()
    with torch.no_grad():
        probs = model.policy.get_distribution(torch.as_tensor(obs), action_masks=masks).distribution.probs
    assert probs.shape == (2, 109)
    np.testing.assert_allclose(probs.sum(dim=1).numpy(), 1.0, atol=1e-6)
    assert float(probs[torch.as_tensor(~masks)].sum()) == 0.0
    env.close()


def test_hand_attention_policy_starts_as_the_weights_it_loads_and_learns_to_differ(tmp_path):
    from sb3_contrib import MaskablePPO

    from sixnimmt_env.champion import WEIGHTS, load_champion
    from training.policy import HandAttentionHead, load_actor
    from training.ppo_agents import PolicyAgent
    from training.vec_env import SixNimmtVecEnv

    env = SixNimmtVecEnv(16, opponents=["greedy", "random", "lowest"], seed=4, num_players=4, episode="round")
    kwargs = {"net_arch": [64, 64], "hand_attention_heads": 2}
    model = MaskablePPO(CardPolicy, env, n_steps=16, batch_size=64, n_epochs=1, seed=5, policy_kwargs=kwargs)
    head = model.policy.action_net
    assert isinstance(head, HandAttentionHead) and head.heads == 2
    assert float(head.attention.out_proj.weight.detach().abs().sum()) == 0.0  # silent until trained
    load_actor(model.policy, WEIGHTS)
    obs, masks = env.reset(), env.action_masks()
    champion = load_champion()
    np.testing.assert_array_equal(PolicyAgent(model.policy).choose(obs, masks), champion.choose(obs, masks))
    with torch.no_grad():
        for p in head.attention.parameters():
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(6)) * 0.5)
    agent = PolicyAgent(model.policy)
    assert agent.card_actor is not None  # the numpy path, attention included
    with torch.no_grad():
        latent = model.policy.mlp_extractor.forward_actor(model.policy.extract_features(torch.as_tensor(obs)))
        expected = head(latent).numpy()
    np.testing.assert_allclose(agent.logits(obs), expected, rtol=1e-4, atol=1e-4)
    moved = np.abs(np.where(masks, agent.logits(obs) - champion.actor.logits(obs), 0.0)).max(axis=1)
    assert (moved > 0.05).all()  # the attention now moves every decision's logits
    model.save(tmp_path / "attention.zip")
    loaded = MaskablePPO.load(tmp_path / "attention.zip")
    assert isinstance(loaded.policy.action_net, HandAttentionHead) and loaded.policy.hand_attention_heads == 2
    np.testing.assert_allclose(PolicyAgent(loaded.policy).logits(obs), expected, rtol=1e-4, atol=1e-4)
    env.close()


def test_hand_attention_needs_the_card_policy_and_heads_that_divide_its_units():
    from training.config import ConfigError, load_config
    from training.policy import HandAttentionHead, algo_kwargs

    cfg = load_config("configs/smoke.yaml", ["algo.policy=card", "algo.policy_kwargs.hand_attention_heads=4"])
    assert algo_kwargs(cfg.algo)["policy_kwargs"]["hand_attention_heads"] == 4
    with pytest.raises(ConfigError, match=r"hand_attention_heads' must divide 32 .* got 3"):
        load_config("configs/smoke.yaml", ["algo.policy=card", "algo.policy_kwargs.hand_attention_heads=3"])
    with pytest.raises(ConfigError, match=r"goes with 'algo.policy: card'; got 2 with algo.policy: MlpPolicy"):
        load_config("configs/smoke.yaml", ["algo.policy=MlpPolicy", "algo.policy_kwargs.hand_attention_heads=2"])
    with pytest.raises(ConfigError, match=r"hand_attention_heads' must be an integer >= 0, got -1"):
        load_config("configs/smoke.yaml", ["algo.policy=card", "algo.policy_kwargs.hand_attention_heads=-1"])
    with pytest.raises(ValueError, match="hand_attention_heads must be >= 1 and divide 32, got 5"):
        HandAttentionHead(64, heads=5)
