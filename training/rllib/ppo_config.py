"""Translation of a config for ``train.backend: rllib`` (Ray RLlib's PPO, new API stack).

Its checks run in :func:`training.train_config.load_config`, before Ray starts: a bad key or an impossible
combination is a :class:`~training.train_config.ConfigError` naming the file and the key.

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

A key left out takes MaskablePPO's default (the defaults of :class:`training.train_config.AlgoSection`), not RLlib's
(whose ``lr`` is 5e-5, ``lambda_`` 1.0, ``clip_param`` 0.3), but ``policy`` (``card``) and ``n_steps``
(:data:`training.train_config.DEFAULT_N_STEPS`); and the loss is SB3's
(``use_kl_loss: False``, no value-loss clipping), so one ``algo`` section means the same on both backends.

The ``ray`` section (:class:`training.train_config.RaySection`):

=============================  ==============================================================
key                            meaning
=============================  ==============================================================
``address``                    ``null`` (default): start a local Ray inside the process;
                               ``auto`` or ``HOST:PORT`` (or ``ray://HOST:PORT``): join a
                               running cluster (``ray start --head`` / ``ray start --address``)
``num_cpus``                   CPUs of the local Ray (default: what the runners and learners
                               ask for); not with ``address``
``object_store_mb``            object store of the local Ray in MB (default 200); not with
                               ``address`` unless left at 200
``num_env_runners``            remote env runners (0: sample in the training process)
``num_envs_per_env_runner``    envs stepped together by each runner (one forward per step)
``num_learners``               remote learners (0: learn in the training process)
``num_cpus_per_env_runner``,   resources each runner / learner reserves
``num_gpus_per_env_runner``,
``num_cpus_per_learner``,
``num_gpus_per_learner``
=============================  ==============================================================

With ``rllib`` the envs are ``max(num_env_runners, 1) x num_envs_per_env_runner``, so the
SB3-only keys ``train.n_envs``, ``train.vec_env``, ``train.n_workers`` and
``train.normalize_obs`` must stay at their defaults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from training.train_config import cpus_needed, rllib_policy, train_batch_size

if TYPE_CHECKING:
    from training.train_config import TrainConfig

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
"""``algo`` keys (SB3 names) and the RLlib PPO setting each sets."""


def local_cpus(cfg: TrainConfig) -> int:
    """CPUs given to a local Ray: ``ray.num_cpus``, or what the env runners and learners reserve (at least 1)."""
    if cfg.ray.num_cpus is not None:
        return cfg.ray.num_cpus
    return max(1, int(-(-cpus_needed(cfg) // 1)))


def model_config(cfg: TrainConfig) -> dict[str, Any]:
    """The RLModule's ``model_config`` (:mod:`training.rllib.module`) from ``algo.policy`` / ``policy_kwargs``."""
    pk = cfg.algo.policy_kwargs
    return {
        "policy": rllib_policy(cfg),
        "net_arch": [64, 64] if pk.net_arch is None else list(pk.net_arch),
        "activation": pk.activation_fn,
    }


def ppo_training_kwargs(cfg: TrainConfig) -> dict[str, Any]:
    """``PPOConfig.training`` keyword arguments of ``cfg.algo`` (keys not set: SB3's defaults), the train
    batch, and SB3's PPO loss: no KL penalty, no value-loss clipping."""
    per_learner = train_batch_size(cfg) // max(cfg.ray.num_learners, 1)
    out: dict[str, Any] = {"train_batch_size_per_learner": per_learner, "use_kl_loss": False, "vf_clip_param": 1e9}
    for key, name in ALGO_TO_RLLIB.items():
        if key != "n_steps":
            out[name] = getattr(cfg.algo, key)
    out["minibatch_size"] = min(out["minibatch_size"], per_learner)
    return out
