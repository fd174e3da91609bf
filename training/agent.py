"""Trained policies as agents: the ``ppo:PATH`` and ``ppo-sample:PATH`` specs.

Importing this module registers both prefixes with
:func:`sixnimmt_env.agents.register_agent`, so the arena, the Gymnasium
opponents and the configs accept checkpoints wherever they accept ``greedy``:

=====================  ==========================================================
spec                   agent
=====================  ==========================================================
``ppo:PATH``           the MaskablePPO checkpoint at ``PATH`` (a ``.zip``), greedy
                       over the masked logits (deterministic)
``ppo-sample:PATH``    the same, sampling from the masked policy with the ``rng``
                       it is given (Gumbel-max), e.g. for self-play opponents
=====================  ==========================================================

A checkpoint trained with observation normalisation carries its statistics in
a sibling file ``<stem>.obsnorm.npz`` (written by :func:`save_obs_norm`), which
is applied before the policy sees the observation.

Only legal actions are ever chosen: the logits of illegal actions are masked
out, so an evaluation through these agents sees no illegal action.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sixnimmt_env.agents import register_agent
from sixnimmt_env.engine import NOOP, NUM_ACTIONS, State
from sixnimmt_env.observation import OBS_SIZE, encode

__all__ = [
    "ObsNorm",
    "PolicyAgent",
    "load_policy_agent",
    "obs_norm_path",
    "observation_from_view",
    "save_obs_norm",
]


class ObsNorm:
    """Observation normalisation as VecNormalize applies it: ``clip((obs - mean) / sqrt(var + eps), -clip, clip)``.

    Args:
        mean, var: float arrays of shape ``(402,)``.
        clip: the clip bound (VecNormalize's ``clip_obs``).
        epsilon: VecNormalize's ``epsilon``.
    """

    def __init__(self, mean: np.ndarray, var: np.ndarray, clip: float, epsilon: float) -> None:
        self.mean = np.asarray(mean, np.float32)
        self.std = np.sqrt(np.asarray(var, np.float32) + np.float32(epsilon))
        self.clip = float(clip)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """The normalised ``obs`` (any leading batch shape, last axis 402), ``float32``."""
        return np.clip((obs - self.mean) / self.std, -self.clip, self.clip).astype(np.float32)


def obs_norm_path(checkpoint: str | Path) -> Path:
    """Where the normalisation statistics of ``checkpoint`` live: ``<dir>/<stem>.obsnorm.npz``."""
    p = Path(checkpoint)
    return p.with_name(p.stem + ".obsnorm.npz")


def save_obs_norm(checkpoint: str | Path, vec_normalize: Any) -> Path:
    """Write the observation statistics of a ``VecNormalize`` beside ``checkpoint``; returns the file path."""
    path = obs_norm_path(checkpoint)
    rms = vec_normalize.obs_rms
    np.savez(path, mean=rms.mean, var=rms.var, clip=vec_normalize.clip_obs, epsilon=vec_normalize.epsilon)
    return path


def _load_obs_norm(checkpoint: Path) -> ObsNorm | None:
    path = obs_norm_path(checkpoint)
    if not path.is_file():
        return None
    with np.load(path) as f:
        return ObsNorm(f["mean"], f["var"], float(f["clip"]), float(f["epsilon"]))


def observation_from_view(view: Mapping[str, Any]) -> np.ndarray:
    """The seat's observation vector (``float32 (402,)``) rebuilt from its readable view.

    The view holds everything the observation shows (own hand, rows, penalty
    piles, revealed cards, scores, phase, chooser, display, turn, round; R4), so
    a :class:`~sixnimmt_env.engine.State` with only this seat's hand is enough
    for the reference encoder :func:`sixnimmt_env.observation.encode`: the result
    equals the environments' observation of that seat.
    """
    config = view["config"]
    seat = view["seat"]
    hands: list[tuple[int, ...]] = [()] * config.num_players
    hands[seat] = tuple(view["hand"])
    state = State(
        config=config,
        phase=view["phase"],
        hands=tuple(hands),
        rows=tuple(tuple(r) for r in view["rows"]),
        piles=tuple(tuple(p) for p in view["piles"]),
        round_penalties=tuple(view["round_penalties"]),
        totals=tuple(view["totals"]),
        stock=(),
        display=tuple(view["display"]),
        revealed=tuple(view["revealed"]),
        chooser=view["chooser"],
        turn=view["turn"],
        round=view["round"],
    )
    return encode(state, seat)


class PolicyAgent:
    """An :class:`~sixnimmt_env.agents.Agent` backed by a MaskablePPO policy (a live one during training,
    or a loaded checkpoint).

    It encodes the seat's observation from the view (:func:`observation_from_view`),
    masks the illegal actions and takes the best (or, with ``sample=True``, a
    sampled) action.

    Args:
        policy: a ``MaskableActorCriticPolicy`` with a flat 402-float observation.
        obs_norm: normalisation applied first, if the policy was trained with it.
        sample: sample from the masked policy instead of taking its argmax.
        name: the spec shown by the arena.
    """

    def __init__(self, policy: Any, obs_norm: ObsNorm | None = None, sample: bool = False, name: str = "ppo") -> None:
        self.policy = policy
        self.obs_norm = obs_norm
        self.sample = sample
        self.spec = name

    def __repr__(self) -> str:
        return f"PolicyAgent({self.spec!r})"

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Unmasked action logits, ``float32`` of shape ``(batch, 109)``, for observations ``(batch, 402)``."""
        if self.obs_norm is not None:
            obs = self.obs_norm(obs)
        policy = self.policy
        with torch.no_grad():
            t = torch.as_tensor(obs, dtype=torch.float32, device=policy.device)
            features = policy.extract_features(t, policy.pi_features_extractor)
            latent = policy.mlp_extractor.forward_actor(features)
            return policy.action_net(latent).cpu().numpy()

    def choose(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """Masked best (or sampled) actions, ``int64 (batch,)``, for ``obs (batch, 402)`` and ``mask (batch, 109)``."""
        logits = self.logits(obs).astype(np.float64)
        if self.sample:
            if rng is None:
                raise ValueError("a sampling PolicyAgent needs an rng")
            logits = logits + rng.gumbel(size=logits.shape)
        logits[~mask.astype(bool)] = -np.inf
        return logits.argmax(axis=-1)

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        """One legal action for the seat of ``view`` (108 without a decision)."""
        if not view["must_act"]:
            return NOOP
        obs = observation_from_view(view)
        mask = np.zeros(NUM_ACTIONS, bool)
        mask[view["legal_actions"]] = True
        return int(self.choose(obs[None], mask[None], rng)[0])


_CACHE: dict[tuple[str, float], tuple[Any, ObsNorm | None]] = {}
"""Per-process cache of loaded policies, keyed by (resolved path, modification time)."""


def load_policy(path: str | Path) -> tuple[Any, ObsNorm | None]:
    """Load the policy of a MaskablePPO checkpoint (cached per process) and its normalisation statistics.

    Raises:
        ValueError: a missing file, a file that is not a MaskablePPO checkpoint,
            or one trained for another observation or action size.
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"ppo checkpoint {str(path)!r} not found")
    key = (str(p.resolve()), p.stat().st_mtime)
    if key in _CACHE:
        return _CACHE[key]
    from sb3_contrib import MaskablePPO

    if not zipfile.is_zipfile(p):
        raise ValueError(f"ppo checkpoint {str(path)!r} is not a MaskablePPO .zip checkpoint (not a zip archive)")
    try:
        model = MaskablePPO.load(p, device="cpu")
    except Exception as e:  # SB3 raises many kinds for a damaged archive
        raise ValueError(f"ppo checkpoint {str(path)!r} could not be loaded as MaskablePPO: {e}") from None
    obs_shape = tuple(model.observation_space.shape or ())
    if obs_shape != (OBS_SIZE,):
        raise ValueError(
            f"ppo checkpoint {str(path)!r} was trained for observations of shape {obs_shape}, "
            f"this environment gives ({OBS_SIZE},)"
        )
    n_actions = getattr(model.action_space, "n", None)
    if n_actions != NUM_ACTIONS:
        raise ValueError(f"ppo checkpoint {str(path)!r} has {n_actions} actions, this environment {NUM_ACTIONS}")
    model.policy.set_training_mode(False)
    entry = (model.policy, _load_obs_norm(p))
    _CACHE[key] = entry
    return entry


def load_policy_agent(spec: str) -> PolicyAgent:
    """Build the agent of a ``ppo:PATH`` or ``ppo-sample:PATH`` spec (the registered factory).

    Raises:
        ValueError: a spec without a path, or any error of :func:`load_policy`.
    """
    prefix, _, path = spec.partition(":")
    if prefix not in ("ppo", "ppo-sample") or not path:
        raise ValueError(f"agent spec {spec!r}: expected ppo:PATH or ppo-sample:PATH, e.g. 'ppo:runs/x/best_model.zip'")
    policy, norm = load_policy(path)
    return PolicyAgent(policy, norm, sample=prefix == "ppo-sample", name=spec)


register_agent("ppo", load_policy_agent, "ppo:PATH")
register_agent("ppo-sample", load_policy_agent, "ppo-sample:PATH")
