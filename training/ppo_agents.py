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
                       it is given (one uniform draw per decision), e.g. for
                       self-play opponents
=====================  ==========================================================

A checkpoint trained with observation normalisation carries its statistics in
a sibling file ``<stem>.obsnorm.npz`` (written by :func:`save_obs_norm`), which
is applied before the policy sees the observation.

Only legal actions are ever chosen: the logits of illegal actions are masked
out, so an evaluation through these agents sees no illegal action.
"""

from __future__ import annotations

import contextlib
import random
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sixnimmt_env.agents import register_agent
from sixnimmt_env.champion import pick_masked
from sixnimmt_env.observation import OBS_SIZE, observation_from_view
from sixnimmt_env.rules.engine import NOOP, NUM_ACTIONS
from training.features import GLOBAL_SIZE

__all__ = [
    "ObsNorm",
    "PolicyAgent",
    "actor_layers",
    "load_policy_agent",
    "obs_norm_path",
    "observation_from_view",
    "save_obs_norm",
]


class ObsNorm:
    """Observation normalisation as VecNormalize applies it: ``clip((obs - mean) / sqrt(var + eps), -clip, clip)``.

    Args:
        mean, var: float arrays of shape ``(506,)``.
        clip: the clip bound (VecNormalize's ``clip_obs``).
        epsilon: VecNormalize's ``epsilon``.
    """

    def __init__(self, mean: np.ndarray, var: np.ndarray, clip: float, epsilon: float) -> None:
        self.mean = np.asarray(mean, np.float32)
        self.std = np.sqrt(np.asarray(var, np.float32) + np.float32(epsilon))
        self.clip = float(clip)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """The normalised ``obs`` (any leading batch shape, last axis 506), ``float32``."""
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


_ACTIVATIONS: dict[type, Callable[[np.ndarray], np.ndarray]] = {
    torch.nn.Tanh: np.tanh,
    torch.nn.ReLU: lambda x: np.maximum(x, 0.0, out=x),
    torch.nn.Identity: lambda x: x,
}
"""numpy versions of the activation modules SB3's MLP policies use."""


def actor_layers(policy: Any) -> list[tuple[np.ndarray, np.ndarray, Callable[[np.ndarray], np.ndarray]]] | None:
    """The actor of a MaskablePPO MLP policy as numpy layers ``(W.T float32 (in, out), b float32 (out,), activation)``,
    the last one the action head (identity); ``None`` if the policy is not an MLP over the flat observation or its
    card features (:mod:`training.features`) (then :class:`PolicyAgent` runs it through torch)."""
    from stable_baselines3.common.torch_layers import FlattenExtractor

    from training.features import CardFeatures

    if not isinstance(policy.pi_features_extractor, FlattenExtractor | CardFeatures):
        return None
    modules = [*policy.mlp_extractor.policy_net, policy.action_net]
    layers: list[tuple[np.ndarray, np.ndarray, Callable[[np.ndarray], np.ndarray]]] = []
    for module in modules:
        if isinstance(module, torch.nn.Linear):
            weight = module.weight.detach().cpu().numpy().astype(np.float32)
            bias = module.bias.detach().cpu().numpy().astype(np.float32)
            layers.append((np.ascontiguousarray(weight.T), bias, _ACTIVATIONS[torch.nn.Identity]))
        elif type(module) in _ACTIVATIONS and layers:
            w, b, _ = layers[-1]
            layers[-1] = (w, b, _ACTIVATIONS[type(module)])
        else:
            return None
    return layers


def _card_actor(policy: Any) -> Any:
    """A numpy copy of a :class:`training.policy.CardPolicy`'s actor, or ``None`` for other policies."""
    from training.policy import CardPolicy, NumpyCardActor

    if not isinstance(policy, CardPolicy):
        return None
    try:
        return NumpyCardActor(policy)
    except ValueError:  # an activation numpy does not mirror: torch it is
        return None


class PolicyAgent:
    """An :class:`~sixnimmt_env.agents.Agent` backed by a MaskablePPO policy: a frozen snapshot of its actor.

    It masks the illegal actions and takes the best (or, with ``sample=True``,
    a sampled) action. As an opponent inside :class:`sixnimmt_env.gym_env.SingleSeatEnv`
    it decides on the environment's own observation of its seat
    (:meth:`act_observation`); in the arena, on the observation rebuilt from
    its view (:func:`observation_from_view`, the same vector).

    The actor's weights are copied to numpy when the agent is built (for the
    MLP policies of ``"MlpPolicy"``: Tanh/ReLU layers over the flat
    observation), and the forward pass runs in numpy: one decision costs tens of
    microseconds instead of a torch call's overhead. Other policy shapes run
    through torch. Later changes to ``policy`` are not seen.

    Args:
        policy: a ``MaskableActorCriticPolicy`` with a flat 506-float observation.
        obs_norm: normalisation applied first, if the policy was trained with it.
        sample: sample from the masked policy instead of taking its argmax.
        name: the spec shown by the arena.
    """

    def __init__(self, policy: Any, obs_norm: ObsNorm | None = None, sample: bool = False, name: str = "ppo") -> None:
        self.policy = policy
        self.obs_norm = obs_norm
        self.sample = sample
        self.spec = name
        self.layers = actor_layers(policy)
        self.card_features = type(policy.pi_features_extractor).__name__ == "CardFeatures"
        self.card_actor = _card_actor(policy)

    def __repr__(self) -> str:
        return f"PolicyAgent({self.spec!r})"

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Unmasked action logits, ``float32`` of shape ``(batch, 109)`` (or ``(109,)`` for one observation),
        for observations ``(batch, 506)`` (or ``(506,)``)."""
        if self.obs_norm is not None:
            obs = self.obs_norm(obs)
        if self.card_actor is not None:
            x = np.asarray(obs, np.float32)
            return self.card_actor.logits(x).reshape(*x.shape[:-1], -1)
        if self.layers is not None:
            x = np.asarray(obs, np.float32)
            if self.card_features:
                from training.features import card_features_numpy

                x = card_features_numpy(x.reshape(-1, x.shape[-1])).reshape(*x.shape[:-1], -1)
            for weight, bias, activation in self.layers:
                x = activation(x @ weight + bias)
            return x
        policy = self.policy
        with torch.no_grad():
            t = torch.as_tensor(obs, dtype=torch.float32, device=policy.device)
            features = policy.extract_features(t, policy.pi_features_extractor)
            latent = policy.mlp_extractor.forward_actor(features)
            return policy.action_net(latent).cpu().numpy()

    def choose(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """Masked best (or sampled) actions, ``int64 (batch,)``, for ``obs (batch, 506)`` and ``mask (batch, 109)``
        (nonzero at the legal actions).

        Sampling draws one uniform number per row from ``rng`` and picks the legal action where the masked
        softmax's cumulative probability reaches it (:func:`sixnimmt_env.champion.pick_masked`).

        Raises:
            ValueError: a sampling agent without ``rng``.
        """
        return pick_masked(self.logits(obs), mask, rng, sample=self.sample, who=f"{self.spec}: a sampling PolicyAgent")

    def act_observation(self, observation: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        """The action for one seat's encoded observation (``float32 (506,)``) and mask (``(109,)``, nonzero at the
        legal actions): what :meth:`act` gives on that seat's view (108 when only the no-op is legal)."""
        return int(self.choose(observation[None], mask[None], rng)[0])

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


@contextlib.contextmanager
def _random_state_kept() -> Iterator[None]:
    """Restore the global generators of ``random``, numpy and torch (CPU) after the block: ``MaskablePPO.load``
    seeds them all with the checkpoint's seed, which would reset a training process's minibatch shuffles and
    sampling every time it loads a policy (an evaluation, a self-play snapshot)."""
    state = random.getstate(), np.random.get_state(), torch.get_rng_state()
    try:
        yield
    finally:
        random.setstate(state[0])
        np.random.set_state(state[1])
        torch.set_rng_state(state[2])


def load_policy(path: str | Path) -> tuple[Any, ObsNorm | None]:
    """Load the policy of a MaskablePPO checkpoint (cached per process) and its normalisation statistics.

    The process's global random generators (``random``, numpy, torch) are left as they were (SB3's ``load`` would
    seed them with the checkpoint's seed).

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

    from training.policy import custom_objects

    if not zipfile.is_zipfile(p):
        raise ValueError(f"ppo checkpoint {str(path)!r} is not a MaskablePPO .zip checkpoint (not a zip archive)")
    try:
        with _random_state_kept():
            model = MaskablePPO.load(p, device="cpu", custom_objects=custom_objects(p))
    except Exception as e:  # SB3 raises many kinds for a damaged archive
        hint = ""
        if "size mismatch" in str(e) and "CardPolicy" in str(e):
            hint = (
                f"\n(this version's card policy reads {GLOBAL_SIZE} inputs, the {OBS_SIZE}-wide observation and the "
                "held cards' features; a checkpoint of another layout must be trained again, see CHANGELOG.md)"
            )
        raise ValueError(f"ppo checkpoint {str(path)!r} could not be loaded as MaskablePPO: {e}{hint}") from None
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
