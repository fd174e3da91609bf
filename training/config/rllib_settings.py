"""The ``algo`` and ``ray`` sections as RLlib's settings (``train.backend: rllib``): the keys allowed, the envs and the
train batch of an iteration, the CPUs a run reserves, and the PPO keyword arguments of the SB3 names.

Each function takes the sections it reads. :mod:`training.config.checks` checks a config with them before Ray
starts; :mod:`training.rllib.backend` builds the algorithm's config from them.
"""

from __future__ import annotations

from typing import Any

from training.config.schema import AlgoSection, RaySection

RLLIB_ALGO_KEYS = (
    "policy",
    "policy_kwargs",
    "learning_rate",
    "n_steps",
    "batch_size",
    "n_epochs",
    "gamma",
    "gae_lambda",
    "clip_range",
    "ent_coef",
    "vf_coef",
    "max_grad_norm",
)
"""Keys allowed in ``algo`` with ``train.backend: rllib`` (:data:`ALGO_TO_RLLIB` maps each to RLlib's)."""
RLLIB_POLICY_KWARGS = ("net_arch", "activation_fn")
"""Keys allowed in ``algo.policy_kwargs`` with ``train.backend: rllib``."""
RLLIB_POLICIES = ("card", "MlpPolicy")
"""Names allowed for ``algo.policy`` with ``train.backend: rllib`` (the RLModules of :mod:`training.rllib.module`)."""
DEFAULT_N_STEPS = 128
"""``algo.n_steps`` of ``train.backend: rllib`` when the config does not set it: steps per env per iteration."""


def num_envs(ray: RaySection) -> int:
    """Training envs of an RLlib run: ``max(num_env_runners, 1) * num_envs_per_env_runner``."""
    return max(ray.num_env_runners, 1) * ray.num_envs_per_env_runner


def n_steps(algo: AlgoSection) -> int:
    """Steps per env per iteration of an RLlib run (``algo.n_steps`` when set, else :data:`DEFAULT_N_STEPS`)."""
    return algo.n_steps if "n_steps" in algo.model_fields_set else DEFAULT_N_STEPS


def train_batch_size(algo: AlgoSection, ray: RaySection) -> int:
    """Env steps per training iteration: :func:`n_steps` x :func:`num_envs`."""
    return n_steps(algo) * num_envs(ray)


def rllib_policy(algo: AlgoSection) -> str:
    """``algo.policy`` of an RLlib run: the config's when set, else ``card``."""
    return algo.policy if "policy" in algo.model_fields_set else "card"


def cpus_needed(ray: RaySection) -> float:
    """CPUs the env runners and learners of an RLlib run reserve (``ray.num_*_per_*``)."""
    return ray.num_env_runners * ray.num_cpus_per_env_runner + ray.num_learners * ray.num_cpus_per_learner


def local_cpus(ray: RaySection) -> int:
    """CPUs given to a local Ray: ``ray.num_cpus``, or what the env runners and learners reserve (at least 1)."""
    if ray.num_cpus is not None:
        return ray.num_cpus
    return max(1, int(-(-cpus_needed(ray) // 1)))


ALGO_TO_RLLIB = {
    "learning_rate": "lr",
    "n_steps": "rollout_fragment_length",
    "batch_size": "minibatch_size",
    "n_epochs": "num_epochs",
    "gamma": "gamma",
    "gae_lambda": "lambda_",
    "clip_range": "clip_param",
    "ent_coef": "entropy_coeff",
    "vf_coef": "vf_loss_coeff",
    "max_grad_norm": "grad_clip",
}
"""``algo`` keys (SB3 names) and the RLlib PPO setting each sets (:func:`ppo_training_kwargs`).

The ``algo`` section keeps the SB3 names, each mapped to RLlib's PPO setting:

===================  ===========================  =========================================
``algo`` key         RLlib                        meaning
===================  ===========================  =========================================
``policy``           the RLModule                 ``card`` (default) or ``MlpPolicy``
                                                  (:mod:`training.rllib.module`)
``policy_kwargs``    ``model_config``             ``net_arch`` (list), ``activation_fn``
``learning_rate``    ``lr``
``n_steps``          ``rollout_fragment_length``  steps per env per iteration; the train
                                                  batch is ``n_steps`` x all envs
``batch_size``       ``minibatch_size``
``n_epochs``         ``num_epochs``
``gamma``            ``gamma``
``gae_lambda``       ``lambda_``
``clip_range``       ``clip_param``
``ent_coef``         ``entropy_coeff``
``vf_coef``          ``vf_loss_coeff``
``max_grad_norm``    ``grad_clip``
===================  ===========================  =========================================

A key left out takes MaskablePPO's default (the defaults of :class:`~training.config.schema.AlgoSection`), not
RLlib's (whose ``lr`` is 5e-5, ``lambda_`` 1.0, ``clip_param`` 0.3), but ``policy`` (``card``) and ``n_steps``
(:data:`DEFAULT_N_STEPS`); and the loss is SB3's (``use_kl_loss: False``, no value-loss clipping), so one ``algo``
section means the same on both backends.
"""


def model_config(algo: AlgoSection) -> dict[str, Any]:
    """The RLModule's ``model_config`` (:mod:`training.rllib.module`) from ``algo.policy`` / ``policy_kwargs``:
    ``{"policy", "net_arch", "activation"}``."""
    pk = algo.policy_kwargs
    return {
        "policy": rllib_policy(algo),
        "net_arch": [64, 64] if pk.net_arch is None else list(pk.net_arch),
        "activation": pk.activation_fn,
    }


def ppo_training_kwargs(algo: AlgoSection, ray: RaySection) -> dict[str, Any]:
    """``PPOConfig.training`` (or, with ``ray.algorithm: appo``, ``APPOConfig.training``) keyword arguments of
    ``algo`` (keys not set: SB3's defaults), the train batch per learner, and SB3's PPO loss: no KL penalty, no
    value-loss clipping."""
    per_learner = train_batch_size(algo, ray) // max(ray.num_learners, 1)
    out: dict[str, Any] = {"train_batch_size_per_learner": per_learner, "use_kl_loss": False, "vf_clip_param": 1e9}
    for key, name in ALGO_TO_RLLIB.items():
        if key != "n_steps":
            out[name] = getattr(algo, key)
    out["minibatch_size"] = min(out["minibatch_size"], per_learner)
    if ray.algorithm == "appo":  # APPO's value loss is never clipped (and it has no vf_clip_param)
        del out["vf_clip_param"]
    return out
