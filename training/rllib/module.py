"""The card policy and an MLP as RLlib ``RLModule`` classes with action masking (PPO, torch, new API stack).

:class:`CardRLModule` reads the adapted observation of :mod:`sixnimmt_env.rllib_env`
(``{"observations": float32 (B, 506), "action_mask": (B, 109)}``, 1 at the legal actions, any dtype) and gives

- ``action_dist_inputs``: logits ``(B, 109)``, illegal actions set to RLlib's ``FLOAT_MIN``
  (probability 0 under RLlib's ``TorchCategorical``);
- ``compute_values``: the critic's values ``(B,)`` (RLlib's ``ValueFunctionAPI``, PPO and APPO);
- ``forward_target``: the masked logits ``(B, 109)`` of the target copies of the actor (RLlib's
  ``TargetNetworkAPI``, which APPO's learner needs: it builds the copies with ``make_target_networks`` and
  moves them towards the trained networks every ``target_network_update_freq`` updates). PPO never builds them,
  so a PPO module's weights, state and checkpoints are those of a module without the API.

``model_config`` (a mapping, from ``algo.policy`` / ``algo.policy_kwargs`` of a config):

==============  ==========================================================================
key             meaning
==============  ==========================================================================
``policy``      ``"card"`` (default): :mod:`training.policy`'s card policy: the held
                cards' features (:class:`~training.features.HandFeatures`), actor and
                critic MLPs over 626 inputs (:class:`~training.policy.CardNetworks`),
                one small network scoring every held card alike
                (:class:`~training.policy.CardHead`); ``"MlpPolicy"``: actor and critic
                MLPs over the flat 506 observation, a linear head to 109 logits
``net_arch``    hidden layer sizes of the actor and of the critic (default ``[64, 64]``)
``activation``  ``"tanh"`` (default), ``"relu"``, ``"elu"`` or ``"leaky_relu"``
==============  ==========================================================================

The networks are the SB3 card policy's modules (same classes, same initialisation), so
:class:`training.policy.NumpyCardActor` runs a trained module's actor in numpy
(:mod:`training.rllib.rllib_agents`).
"""

from __future__ import annotations

from functools import partial
from typing import Any, TypeVar, cast

import numpy as np
import torch
from gymnasium import spaces
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical
from ray.rllib.core.learner.utils import make_target_network
from ray.rllib.core.rl_module.apis import (
    TARGET_NETWORK_ACTION_DIST_INPUTS,
    InferenceOnlyAPI,
    TargetNetworkAPI,
    ValueFunctionAPI,
)
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.utils.torch_utils import FLOAT_MIN

from sixnimmt_env.observation import OBS_SIZE
from sixnimmt_env.rllib_env import MASK_KEY, OBS_KEY
from sixnimmt_env.rules.engine import NUM_ACTIONS
from training.config.rllib_settings import RLLIB_POLICIES
from training.features import HandFeatures
from training.policy import ACTIVATION_CLASSES, CardHead, CardNetworks, mlp


def _init(module: torch.nn.Module, gain: float) -> None:
    """Orthogonal weights and zero biases (SB3's initialisation of its policies' linear layers)."""
    if isinstance(module, torch.nn.Linear):
        torch.nn.init.orthogonal_(module.weight, gain=gain)
        if module.bias is not None:
            module.bias.data.fill_(0.0)


_Net = TypeVar("_Net", bound=torch.nn.Module)


def _target(net: _Net) -> _Net:
    """RLlib's ``make_target_network`` (a frozen deep copy of ``net``), typed: RLlib annotates its argument and result
    with its ``NetworkType`` union, not the network's own class."""
    return cast(_Net, make_target_network(net))


class _MlpNetworks(torch.nn.Module):
    """Actor and critic MLPs over the flat observation (``policy: MlpPolicy``); the interface of
    :class:`~training.policy.CardNetworks` (``policy_net``, ``value_net``, ``forward_actor``, ``forward_critic``)."""

    def __init__(self, net_arch: list[int], activation_fn: type[torch.nn.Module]) -> None:
        super().__init__()
        self.policy_net = mlp(OBS_SIZE, net_arch, activation_fn)
        self.value_net = mlp(OBS_SIZE, net_arch, activation_fn)
        self.latent_dim_pi = self.latent_dim_vf = net_arch[-1] if net_arch else OBS_SIZE

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return self.policy_net(features)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.value_net(features)


class LazyCategorical(TorchCategorical):
    """RLlib's ``TorchCategorical`` (the same numbers) that builds torch's ``Categorical`` on first use.

    PPO's loss makes a distribution of the batch's behaviour logits on every minibatch and uses it for the KL term
    only; with ``use_kl_loss: False`` (SB3's loss, :func:`training.config.rllib_settings.ppo_training_kwargs`) it is
    never read, and normalising its ``(B, 109)`` logits took about 5 % of the learner's minibatch time.

    Raises:
        ValueError: neither or both of ``logits`` and ``probs`` given.
    """

    def __init__(self, logits: torch.Tensor | None = None, probs: torch.Tensor | None = None) -> None:
        if (logits is None) == (probs is None):
            raise ValueError("LazyCategorical takes exactly one of logits and probs")
        self.logits, self.probs = logits, probs
        self._one_hot = None
        self._built: torch.distributions.Categorical | None = None

    @property
    def _dist(self) -> torch.distributions.Categorical:
        if self._built is None:
            self._built = self._get_torch_distribution(logits=self.logits, probs=self.probs)
        return self._built


class CardRLModule(TorchRLModule, ValueFunctionAPI, TargetNetworkAPI, InferenceOnlyAPI):
    """PPO's and APPO's RLModule for the adapted 6 nimmt! observation: masked logits, values and the target
    actor's masked logits (module docstring).

    Raises:
        ValueError: an observation space other than the adapted ``Dict`` of :mod:`sixnimmt_env.rllib_env`,
            or a bad ``model_config`` entry (naming the key, the value and what is allowed).
    """

    def setup(self) -> None:
        space = self.observation_space
        if not (
            isinstance(space, spaces.Dict)
            and OBS_KEY in space.spaces
            and MASK_KEY in space.spaces
            and space[OBS_KEY].shape == (OBS_SIZE,)
        ):
            raise ValueError(
                f"CardRLModule needs the observation Dict({OBS_KEY!r}: Box({OBS_SIZE},), {MASK_KEY!r}: "
                f"Box({NUM_ACTIONS},)) of sixnimmt_env.rllib_env, got {space}"
            )
        if isinstance(self.model_config, DefaultModelConfig):  # RLlib's dataclass for its own default networks
            raise ValueError(
                "CardRLModule: model_config must be a dict of policy, net_arch and activation, got RLlib's "
                "DefaultModelConfig"
            )
        config: dict[str, Any] = dict(self.model_config or {})
        policy = config.get("policy", "card")
        arch = config.get("net_arch", [64, 64])
        activation = config.get("activation", "tanh")
        if policy not in RLLIB_POLICIES:
            raise ValueError(f"CardRLModule: model_config 'policy' must be one of {RLLIB_POLICIES}, got {policy!r}")
        if not (isinstance(arch, list | tuple) and all(isinstance(a, int) and a > 0 for a in arch)):
            raise ValueError(f"CardRLModule: model_config 'net_arch' must be a list of layer sizes, got {arch!r}")
        if activation not in ACTIVATION_CLASSES:
            raise ValueError(
                f"CardRLModule: model_config 'activation' must be one of {', '.join(ACTIVATION_CLASSES)}, "
                f"got {activation!r}"
            )
        self.card = policy == "card"
        act = ACTIVATION_CLASSES[activation]
        self.features = HandFeatures(space[OBS_KEY]) if self.card else torch.nn.Identity()
        self.mlp_extractor: CardNetworks | _MlpNetworks
        self.action_net: torch.nn.Module
        if self.card:
            self.mlp_extractor = CardNetworks(list(arch), act)
            self.action_net = CardHead(self.mlp_extractor.global_dim)
        else:
            self.mlp_extractor = _MlpNetworks(list(arch), act)
            self.action_net = torch.nn.Linear(self.mlp_extractor.latent_dim_pi, NUM_ACTIONS)
        self.value_net = torch.nn.Linear(self.mlp_extractor.latent_dim_vf, 1)
        self.mlp_extractor.apply(partial(_init, gain=np.sqrt(2)))
        self.action_net.apply(partial(_init, gain=np.sqrt(2)))
        if isinstance(self.action_net, CardHead):
            _init(self.action_net.card_out, 0.01)
            _init(self.action_net.linear, 0.01)
        else:
            _init(self.action_net, 0.01)
        _init(self.value_net, 1.0)

    def get_train_action_dist_cls(self) -> type[LazyCategorical]:
        """:class:`LazyCategorical` (RLlib's categorical, built on first use) for the loss."""
        return LazyCategorical

    def get_exploration_action_dist_cls(self) -> type[LazyCategorical]:
        """:class:`LazyCategorical` for sampling (and for the loss's behaviour distribution)."""
        return LazyCategorical

    def get_inference_action_dist_cls(self) -> type[LazyCategorical]:
        """:class:`LazyCategorical` for greedy play (``to_deterministic``: the argmax of the masked logits)."""
        return LazyCategorical

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        """Unmasked logits ``(B, 109)`` for flat observations ``float32 (B, 506)``."""
        return self.action_net(self.mlp_extractor.forward_actor(self.features(obs)))

    @staticmethod
    def _mask(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``logits (B, 109)`` with the actions where ``mask (B, 109)`` is not 1 set to ``FLOAT_MIN``."""
        return torch.where(mask > 0.5, logits, torch.full_like(logits, FLOAT_MIN))

    def _masked(self, batch: dict[str, Any]) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        features = self.features(obs[OBS_KEY])
        logits = self._mask(self.action_net(self.mlp_extractor.forward_actor(features)), obs[MASK_KEY])
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: features}

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        out = self._masked(batch)
        out.pop(Columns.EMBEDDINGS)
        return out

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        out = self._masked(batch)
        if hasattr(self, "_target_extractor"):  # APPO: its loss calls forward_target(batch) next, on this batch
            self._last_features: tuple[torch.Tensor, torch.Tensor] | None = (
                batch[Columns.OBS][OBS_KEY],
                out[Columns.EMBEDDINGS],
            )
        return out

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        """The critic's values ``(B,)`` (``embeddings``: the features of ``_forward_train``, if given)."""
        if embeddings is None:
            embeddings = self.features(batch[Columns.OBS][OBS_KEY])
        return self.value_net(self.mlp_extractor.forward_critic(embeddings)).squeeze(-1)

    # ------------------------------------------------------------------ TargetNetworkAPI (APPO)

    def make_target_networks(self) -> None:
        """Build the target copies of the actor (``mlp_extractor``, whose critic half goes along unused, and
        ``action_net``): frozen, with the trained networks' weights. Called by APPO's learner only."""
        self._target_extractor = _target(self.mlp_extractor)
        self._target_action_net = _target(self.action_net)

    def get_target_network_pairs(self) -> list[tuple[torch.nn.Module, torch.nn.Module]]:
        """``[(trained, target), ...]`` for the learner's target updates (after :meth:`make_target_networks`)."""
        return [(self.mlp_extractor, self._target_extractor), (self.action_net, self._target_action_net)]

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        """``{TARGET_NETWORK_ACTION_DIST_INPUTS: logits (B, 109)}``: the target actor's logits for the batch's
        observations, masked like the trained actor's (illegal actions at ``FLOAT_MIN``)."""
        obs = batch[Columns.OBS]
        last = getattr(self, "_last_features", None)
        self._last_features = None
        # the features _forward_train computed for this very batch, else computed here
        features = last[1] if last is not None and last[0] is obs[OBS_KEY] else self.features(obs[OBS_KEY])
        logits = self._target_action_net(self._target_extractor.forward_actor(features))
        return {TARGET_NETWORK_ACTION_DIST_INPUTS: self._mask(logits, obs[MASK_KEY])}

    def get_non_inference_attributes(self) -> list[str]:
        """The attributes an env runner's module does without: the target networks (RLlib's ``InferenceOnlyAPI``;
        the weights sent to the env runners leave them out)."""
        return ["_target_extractor", "_target_action_net"]
