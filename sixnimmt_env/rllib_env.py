"""Ray RLlib adapters: the observation layout RLlib's action-masking modules read.

RLlib's action-masking RLModules (its example ``ActionMaskingTorchRLModule`` and
``training.rllib.module.CardRLModule``) read a ``Dict`` observation with the keys
``"observations"`` (the model's input) and ``"action_mask"`` (``Box(0, 1, (n,))``,
1 at the legal actions). Our PettingZoo envs give ``"observation"`` and the mask
(PettingZoo classic's convention), the Gymnasium env a flat vector and
``action_masks()``. The wrappers here rename, nothing else; the mask stays
``int8`` (PettingZoo's and Gymnasium's masked ``sample`` want ``int8``; RLlib's
modules take ``log`` of it or compare it, either works):

==============================  =============================================================
name                            what
==============================  =============================================================
:class:`ActionMaskParallelEnv`  a PettingZoo ``ParallelEnv`` wrapper: each agent's observation
                                ``{"observations": float32 (506,), "action_mask": int8 (109,)}``
:func:`masked_parallel_env`     :func:`sixnimmt_env.parallel_env` wrapped in it
:func:`masked_aec_env`          the AEC version (PettingZoo's ``parallel_to_aec``)
:class:`ActionMaskObservation`  a Gymnasium wrapper of the single-seat env
                                (:mod:`sixnimmt_env.gym_env`): the same dict for the learner
:func:`rllib_parallel_env`      an RLlib env creator: ``ParallelPettingZooEnv(masked_parallel_env(**config))``
:func:`rllib_aec_env`           an RLlib env creator: ``PettingZooEnv(masked_aec_env(**config))``
:func:`rllib_single_seat_env`   an RLlib env creator: the single-seat env in :class:`ActionMaskObservation`
==============================  =============================================================

The observation itself (506 floats, :mod:`sixnimmt_env.observation`), the
actions (``Discrete(109)``), rewards (bullheads, R8 and R9 of ``RULES.md``) and
infos are the wrapped env's. This module imports neither torch nor Ray at import
time; the ``rllib_*`` creators import Ray's wrappers when called.

Usage with RLlib's documented few lines::

    from ray.tune.registry import register_env
    from sixnimmt_env.rllib_env import rllib_parallel_env

    register_env("sixnimmt", rllib_parallel_env)
    config = PPOConfig().environment("sixnimmt", env_config={"num_players": 4})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo.utils.conversions import parallel_to_aec
from pettingzoo.utils.wrappers import BaseParallelWrapper

from sixnimmt_env.rules.engine import NUM_ACTIONS

__all__ = [
    "MASK_KEY",
    "OBS_KEY",
    "ActionMaskObservation",
    "ActionMaskParallelEnv",
    "masked_aec_env",
    "masked_parallel_env",
    "masked_space",
    "rllib_aec_env",
    "rllib_parallel_env",
    "rllib_single_seat_env",
]

OBS_KEY = "observations"
"""Key of the model's input in the adapted observation (RLlib's action-masking convention)."""
MASK_KEY = "action_mask"
"""Key of the action mask in the adapted observation: ``int8 (109,)``, 1 at the legal actions."""


def masked_space(observation: spaces.Space) -> spaces.Dict:
    """The adapted observation space:
    ``Dict({"observations": observation, "action_mask": Box(0, 1, (109,), int8)})``."""
    return spaces.Dict({OBS_KEY: observation, MASK_KEY: spaces.Box(0, 1, (NUM_ACTIONS,), np.int8)})


def _adapt(observation: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One PettingZoo observation dict (``"observation"``, ``int8`` ``"action_mask"``) in RLlib's layout."""
    return {OBS_KEY: observation["observation"], MASK_KEY: np.asarray(observation["action_mask"], np.int8)}


class ActionMaskParallelEnv(BaseParallelWrapper):
    """A PettingZoo ``ParallelEnv`` whose observations use RLlib's action-masking keys.

    Each agent's observation is ``{"observations": float32 (506,), "action_mask": int8 (109,)}``
    (the wrapped ``"observation"``, and its ``int8`` ``"action_mask"`` as 0.0/1.0). Actions, rewards,
    terminations, truncations and infos pass through unchanged; so do errors (e.g. an illegal action's
    ``ValueError`` under ``illegal_action="raise"``).

    Args:
        env: a ParallelEnv of this package (:func:`sixnimmt_env.parallel_env`).
    """

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self._spaces = {a: masked_space(env.observation_space(a)["observation"]) for a in env.possible_agents}

    def observation_space(self, agent: str) -> spaces.Dict:
        """``Dict({"observations": Box(506,), "action_mask": Box(0, 1, (109,), int8)})`` of ``agent``."""
        return self._spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """The wrapped reset with adapted observations."""
        obs, infos = self.env.reset(seed=seed, options=options)
        return {agent: _adapt(o) for agent, o in obs.items()}, infos

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """The wrapped step with adapted observations."""
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        return {agent: _adapt(o) for agent, o in obs.items()}, rewards, terminations, truncations, infos


def masked_parallel_env(**config: Any) -> ActionMaskParallelEnv:
    """:func:`sixnimmt_env.parallel_env` (same keywords, same errors) in :class:`ActionMaskParallelEnv`."""
    from sixnimmt_env.pettingzoo_env import parallel_env

    return ActionMaskParallelEnv(parallel_env(**config))


def masked_aec_env(**config: Any) -> Any:
    """The AEC env (PettingZoo's ``parallel_to_aec``) of :func:`masked_parallel_env`."""
    return parallel_to_aec(masked_parallel_env(**config))


class ActionMaskObservation(gym.ObservationWrapper):
    """The single-seat Gymnasium env (:class:`sixnimmt_env.gym_env.SingleSeatEnv`) with the learner's
    observation as ``{"observations": float32 (506,), "action_mask": int8 (109,)}``.

    The mask is the env's ``action_masks()`` after each reset and step (never empty while the learner
    has a decision). Everything else passes through.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = masked_space(env.observation_space)

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        """The flat observation and the current mask as a dict."""
        mask = np.asarray(self.env.unwrapped.action_masks(), np.int8)  # type: ignore[attr-defined]  # gymnasium types it Env
        return {OBS_KEY: np.asarray(observation, np.float32), MASK_KEY: mask}


def _kwargs(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """RLlib hands env creators an ``EnvContext`` (a dict with extra attributes): its items only."""
    return dict(config or {})


def rllib_parallel_env(config: Mapping[str, Any] | None = None) -> Any:
    """RLlib env creator: ``ParallelPettingZooEnv(masked_parallel_env(**config))`` (a ``MultiAgentEnv``)."""
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    return ParallelPettingZooEnv(masked_parallel_env(**_kwargs(config)))


def rllib_aec_env(config: Mapping[str, Any] | None = None) -> Any:
    """RLlib env creator: ``PettingZooEnv(masked_aec_env(**config))`` (a ``MultiAgentEnv``, one agent per step)."""
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    return PettingZooEnv(masked_aec_env(**_kwargs(config)))


def rllib_single_seat_env(config: Mapping[str, Any] | None = None) -> gym.Env:
    """RLlib env creator: :func:`sixnimmt_env.gym_env.make_env` (same keywords) in :class:`ActionMaskObservation`."""
    from sixnimmt_env.gym_env import make_env

    return ActionMaskObservation(make_env(**_kwargs(config)))
