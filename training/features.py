"""Card features for the policy as SB3 features extractors: what each card would do on the current rows.

The observation (:mod:`sixnimmt_env.observation`) holds the hand, the rows and
the cards seen, but an MLP has to learn from scratch which row a card goes to
(`RULES.md` R7), whether it would take a full row (R8) or be a low card (R9).
The features are computed from the observation itself by the numba kernels of
:mod:`sixnimmt_env.card_features` (which take the target row from the rules kernel,
:func:`sixnimmt_env.rules.kernel.target_row`); the table of the 8 per-card
features (``CARD_FEATURES``) and of the held-card ``value`` is in that module. Only the
raw observation is read (so not with ``train.normalize_obs``).

Two extractors, neither with parameters of its own:

- :class:`HandFeatures`: the features of the (at most 10) held cards, read by the card
  policy (:class:`training.policy.CardPolicy`, ``algo.policy: card``, the shipped configs).
- :class:`CardFeatures` (``algo.policy_kwargs.features_extractor_class: card_features``
  with ``MlpPolicy``): the observation followed by the features of all 104 cards.

The features are a function of the observation without gradient: the extractors copy the
batch to numpy, call the kernels and return a tensor on the observation's device.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from sixnimmt_env.card_features import CARD_FEATURES, HAND_FEATURES, card_features, hand_features
from sixnimmt_env.observation import OBS_SIZE
from sixnimmt_env.rules.engine import HAND_SIZE, NUM_CARDS

__all__ = [
    "CARD_FEATURES",
    "FEATURES_SIZE",
    "FEATURE_EXTRACTORS",
    "GLOBAL_SIZE",
    "HAND_FEATURES",
    "HAND_OUTPUT_SIZE",
    "CardFeatures",
    "HandFeatures",
    "card_features_numpy",
    "hand_features_numpy",
]

FEATURES_SIZE = OBS_SIZE + NUM_CARDS * len(CARD_FEATURES)
"""Width of :class:`CardFeatures`' output: the observation, then 104 x 8 card features (card-major)."""
GLOBAL_SIZE = OBS_SIZE + HAND_SIZE * len(HAND_FEATURES)
"""The observation and the held cards' features (626): the input width of the card policy's MLPs."""
HAND_OUTPUT_SIZE = GLOBAL_SIZE + HAND_SIZE
"""Width of :class:`HandFeatures`' output (636): :data:`GLOBAL_SIZE`, then the 10 held card indices."""

_ALL_CARDS = np.arange(NUM_CARDS)[None]


def card_features_numpy(obs: np.ndarray) -> np.ndarray:
    """``float32 (batch, 1338)``: the observations ``(batch, 506)`` followed by their card features (card-major)."""
    obs = np.asarray(obs, np.float32)
    feats = card_features(obs, np.repeat(_ALL_CARDS, len(obs), axis=0))
    return np.concatenate([obs, feats.reshape(len(obs), -1)], axis=1)


def hand_features_numpy(obs: np.ndarray) -> np.ndarray:
    """``float32 (batch, 636)``: the observations ``(batch, 506)``, their held cards' features ``(10 x 12)`` and the
    held card indices (card - 1, as floats), as :class:`HandFeatures` gives them."""
    obs = np.asarray(obs, np.float32)
    feats, held = hand_features(obs)
    return np.concatenate([obs, feats.reshape(len(obs), -1), held.astype(np.float32)], axis=1)


def _check_space(name: str, observation_space: gymnasium.Space[Any]) -> None:
    """Raise ``ValueError`` unless ``observation_space`` is the flat ``(506,)`` observation."""
    if observation_space.shape != (OBS_SIZE,):
        raise ValueError(f"{name} needs the flat ({OBS_SIZE},) observation, got shape {observation_space.shape}")


def _from_numpy(out: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    """``out`` as a tensor of ``like``'s dtype on ``like``'s device."""
    return torch.from_numpy(out).to(device=like.device, dtype=like.dtype)


class CardFeatures(BaseFeaturesExtractor):
    """SB3 features extractor: the observation (506) followed by 8 features for each card 1..104 (module docstring).

    Input ``float32 (batch, 506)``; output ``float32 (batch, 1338)`` (:func:`card_features_numpy`).
    """

    def __init__(self, observation_space: gymnasium.Space[Any]) -> None:
        _check_space("CardFeatures", observation_space)
        super().__init__(observation_space, FEATURES_SIZE)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return _from_numpy(card_features_numpy(obs.detach().cpu().numpy()), obs)


FEATURE_EXTRACTORS = {"card_features": CardFeatures}
"""Names allowed for ``algo.policy_kwargs.features_extractor_class`` in configs."""


class HandFeatures(BaseFeaturesExtractor):
    """Features extractor of the card policy: the :data:`HAND_FEATURES` of the held cards only.

    Input ``float32 (batch, 506)``; output ``float32 (batch, 636)`` (:func:`hand_features_numpy`): the
    observation, then the 12 features of each of up to 10 held cards in ascending card order (zero rows
    after the last held card), then those cards' indices (card - 1, as floats; distinct cards not in hand
    for the zero rows). Ten cards instead of 104 keep the policy's update cheap.

    An input of ``(batch, 636)`` is taken as features already computed and passed through: the learner of a run
    with rollout processes computes a rollout's features once, for its critic's values and for the update
    (:func:`training.rollouts.critic_values`).
    """

    def __init__(self, observation_space: gymnasium.Space[Any]) -> None:
        _check_space("HandFeatures", observation_space)
        super().__init__(observation_space, HAND_OUTPUT_SIZE)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.shape[-1] == HAND_OUTPUT_SIZE:  # features already (module docstring of training.rollouts)
            return obs
        return _from_numpy(hand_features_numpy(obs.detach().cpu().numpy()), obs)
