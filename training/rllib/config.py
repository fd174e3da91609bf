"""Config checks and translation for ``train.backend: rllib`` (Ray RLlib's PPO, new API stack).

Everything here runs before Ray starts: a bad key or an impossible combination is a
:class:`~training.config.ConfigError` naming the file and the key.

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

A key left out takes MaskablePPO's default (:data:`SB3_DEFAULTS`), not RLlib's, and the loss is SB3's
(``use_kl_loss: False``, no value-loss clipping), so one ``algo`` section means the same on both backends.

The ``ray`` section (:class:`training.config.RaySection`):

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

import re
from typing import TYPE_CHECKING, Any

from training.config import ALGO_NUMBERS, ConfigError, RaySection, TrainSection

if TYPE_CHECKING:
    from training.config import TrainConfig

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
ALGO_KEYS = ("policy", "policy_kwargs", *ALGO_TO_RLLIB)
"""Keys allowed in ``algo`` with ``train.backend: rllib``."""
POLICY_KWARGS = ("net_arch", "activation_fn")
"""Keys allowed in ``algo.policy_kwargs`` with ``train.backend: rllib``."""
DEFAULT_N_STEPS = 128
"""``algo.n_steps`` when not given: steps per env per iteration."""
_ADDRESS = re.compile(r"^(auto|(ray://)?[A-Za-z0-9_.\-]+:\d{1,5})$")


def num_envs(cfg: TrainConfig) -> int:
    """Training envs of an RLlib run: ``max(num_env_runners, 1) * num_envs_per_env_runner``."""
    return max(cfg.ray.num_env_runners, 1) * cfg.ray.num_envs_per_env_runner


def n_steps(cfg: TrainConfig) -> int:
    """Steps per env per iteration (``algo.n_steps``, default :data:`DEFAULT_N_STEPS`)."""
    return int(cfg.algo.get("n_steps", DEFAULT_N_STEPS))


def train_batch_size(cfg: TrainConfig) -> int:
    """Env steps per training iteration: ``n_steps`` x :func:`num_envs`."""
    return n_steps(cfg) * num_envs(cfg)


def local_cpus(cfg: TrainConfig) -> int:
    """CPUs given to a local Ray: ``ray.num_cpus``, or what the env runners and learners reserve (at least 1)."""
    if cfg.ray.num_cpus is not None:
        return cfg.ray.num_cpus
    return max(1, int(-(-_cpus_needed(cfg) // 1)))


def _cpus_needed(cfg: TrainConfig) -> float:
    r = cfg.ray
    return r.num_env_runners * r.num_cpus_per_env_runner + r.num_learners * r.num_cpus_per_learner


def model_config(cfg: TrainConfig) -> dict[str, Any]:
    """The RLModule's ``model_config`` (:mod:`training.rllib.module`) from ``algo.policy`` / ``policy_kwargs``."""
    pk = cfg.algo.get("policy_kwargs") or {}
    return {
        "policy": cfg.algo.get("policy", "card"),
        "net_arch": list(pk.get("net_arch", [64, 64])),
        "activation": pk.get("activation_fn", "tanh"),
    }


SB3_DEFAULTS: dict[str, Any] = {
    "learning_rate": 3e-4,
    "batch_size": 64,
    "n_epochs": 10,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "clip_range": 0.2,
    "ent_coef": 0.0,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
}
"""MaskablePPO's defaults of the ``algo`` keys: an ``algo`` section means the same on both backends (RLlib's own
defaults differ, e.g. ``lr`` 5e-5, ``lambda_`` 1.0, ``clip_param`` 0.3)."""


def ppo_training_kwargs(cfg: TrainConfig) -> dict[str, Any]:
    """``PPOConfig.training`` keyword arguments of ``cfg.algo`` (missing keys: :data:`SB3_DEFAULTS`), the train
    batch, and SB3's PPO loss: no KL penalty, no value-loss clipping."""
    per_learner = train_batch_size(cfg) // max(cfg.ray.num_learners, 1)
    out: dict[str, Any] = {"train_batch_size_per_learner": per_learner, "use_kl_loss": False, "vf_clip_param": 1e9}
    for key, name in ALGO_TO_RLLIB.items():
        if key != "n_steps":
            out[name] = cfg.algo.get(key, SB3_DEFAULTS[key])
    out["minibatch_size"] = min(out["minibatch_size"], per_learner)
    return out


def check_rllib(cfg: TrainConfig, source: str) -> None:
    """The checks of ``train.backend: rllib`` (module docstring), before Ray starts.

    Raises:
        ConfigError: naming ``source`` and the key.
    """
    from training.rllib.module import ACTIVATIONS, MODULE_POLICIES

    for k in cfg.algo:
        if k not in ALGO_KEYS:
            raise ConfigError(
                f"{source}: unknown key 'algo.{k}' for train.backend: rllib; allowed: {', '.join(ALGO_KEYS)}"
            )
    policy = cfg.algo.get("policy", "card")
    if policy not in MODULE_POLICIES:
        raise ConfigError(f"{source}: key 'algo.policy' must be one of {', '.join(MODULE_POLICIES)}, got {policy!r}")
    pk = cfg.algo.get("policy_kwargs")
    if pk is not None and not isinstance(pk, dict):
        raise ConfigError(f"{source}: key 'algo.policy_kwargs' must be a mapping, got {pk!r}")
    for k in pk or {}:
        if k not in POLICY_KWARGS:
            raise ConfigError(
                f"{source}: unknown key 'algo.policy_kwargs.{k}' for train.backend: rllib; "
                f"allowed: {', '.join(POLICY_KWARGS)}"
            )
    arch = (pk or {}).get("net_arch", [64, 64])
    if not (isinstance(arch, list) and all(isinstance(a, int) and not isinstance(a, bool) and a > 0 for a in arch)):
        raise ConfigError(f"{source}: key 'algo.policy_kwargs.net_arch' must be a list of layer sizes, got {arch!r}")
    act = (pk or {}).get("activation_fn", "tanh")
    if act not in ACTIVATIONS:
        raise ConfigError(
            f"{source}: key 'algo.policy_kwargs.activation_fn' must be one of {', '.join(ACTIVATIONS)}, got {act!r}"
        )
    for key, (kind, low) in ALGO_NUMBERS.items():
        value = cfg.algo.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, kind) or not value >= low:
            what = "an integer" if kind is int else "a number"
            raise ConfigError(f"{source}: key 'algo.{key}' must be {what} >= {low}, got {value!r}")

    defaults = TrainSection()
    for key in ("n_envs", "vec_env", "n_workers", "normalize_obs"):
        if getattr(cfg.train, key) != getattr(defaults, key):
            raise ConfigError(
                f"{source}: key 'train.{key}' does not apply to train.backend: rllib (got "
                f"{getattr(cfg.train, key)!r}); the envs are ray.num_env_runners x ray.num_envs_per_env_runner"
            )

    r = cfg.ray
    if r.address is not None and not _ADDRESS.match(r.address):
        raise ConfigError(
            f"{source}: key 'ray.address' must be null (a local Ray), 'auto' or HOST:PORT (ray://HOST:PORT), "
            f"got {r.address!r}"
        )
    for key, value, low in [
        ("ray.num_env_runners", r.num_env_runners, 0),
        ("ray.num_envs_per_env_runner", r.num_envs_per_env_runner, 1),
        ("ray.num_learners", r.num_learners, 0),
        ("ray.object_store_mb", r.object_store_mb, 80),
        ("ray.num_cpus_per_env_runner", r.num_cpus_per_env_runner, 0),
        ("ray.num_gpus_per_env_runner", r.num_gpus_per_env_runner, 0),
        ("ray.num_cpus_per_learner", r.num_cpus_per_learner, 0),
        ("ray.num_gpus_per_learner", r.num_gpus_per_learner, 0),
    ]:
        if value < low:
            raise ConfigError(f"{source}: key '{key}' must be >= {low}, got {value}")
    if r.num_cpus is not None and r.num_cpus < 1:
        raise ConfigError(f"{source}: key 'ray.num_cpus' must be >= 1 or null, got {r.num_cpus}")
    if r.address is not None:
        if r.num_cpus is not None:
            raise ConfigError(
                f"{source}: key 'ray.num_cpus' applies to a local Ray only (ray.address: null); "
                f"a cluster's CPUs are set by `ray start --num-cpus` on each node (ray.address is {r.address!r})"
            )
        if r.object_store_mb != RaySection().object_store_mb:
            raise ConfigError(
                f"{source}: key 'ray.object_store_mb' applies to a local Ray only (ray.address: null); "
                f"set it with `ray start --object-store-memory` (ray.address is {r.address!r})"
            )
    elif r.num_cpus is not None and _cpus_needed(cfg) > r.num_cpus:
        raise ConfigError(
            f"{source}: key 'ray.num_env_runners': {r.num_env_runners} runners x {r.num_cpus_per_env_runner} CPUs "
            f"+ {r.num_learners} learners x {r.num_cpus_per_learner} CPUs need {_cpus_needed(cfg):g} CPUs, "
            f"more than ray.num_cpus = {r.num_cpus}"
        )
    if r.address is None and (r.num_gpus_per_env_runner > 0 or r.num_gpus_per_learner > 0):
        import torch

        if not torch.cuda.is_available():
            key = "ray.num_gpus_per_learner" if r.num_gpus_per_learner > 0 else "ray.num_gpus_per_env_runner"
            raise ConfigError(f"{source}: key '{key}' asks for a GPU, and this machine has none (torch sees no CUDA)")
    if r.num_gpus_per_learner > 0 and r.num_learners == 0 and cfg.train.device == "cpu":
        raise ConfigError(
            f"{source}: key 'ray.num_gpus_per_learner' needs ray.num_learners >= 1 (the local learner uses "
            "train.device)"
        )
    batch = train_batch_size(cfg)
    minibatch = cfg.algo.get("batch_size")
    if minibatch is not None and minibatch > batch // max(r.num_learners, 1):
        raise ConfigError(
            f"{source}: key 'algo.batch_size' ({minibatch}) is larger than the train batch per learner "
            f"({batch // max(r.num_learners, 1)} = algo.n_steps {n_steps(cfg)} x {num_envs(cfg)} envs"
            f"{' / ' + str(r.num_learners) + ' learners' if r.num_learners > 1 else ''})"
        )
