"""Typed training configs loaded from YAML (``yaml.safe_load`` only, never ``eval``).

A config file has the sections below; every key is optional (the dataclass
defaults apply) but an unknown or misspelt key, a value of the wrong type or
an unknown agent spec is a :class:`ConfigError` naming the file and the dotted
key, raised by :func:`load_config` before anything starts.

===========  ==================================================================
section      meaning
===========  ==================================================================
env          every :class:`sixnimmt_env.engine.GameConfig` field, plus
             ``learner_seat`` (``"random"`` or a seat index); ``num_players``
             may be a list: training env ``i`` plays ``num_players[i % len]``
opponents    a weighted mixture ``[{agent: SPEC, weight: W}, ...]``: each
             opponent seat draws one entry per episode (``SPEC`` is any agent
             spec, ``ppo:PATH`` for a checkpoint)
self_play    ``enabled``, ``snapshot_every`` (steps), ``pool_size`` (last M
             snapshots kept), ``prob`` (chance that an opponent seat is played
             by a pool snapshot instead of the mixture)
algo         MaskablePPO keyword arguments as a plain mapping
             (``policy_kwargs`` included), checked against its signature
train        ``total_timesteps``, ``max_minutes`` (wall-time budget of
             ``learn``: training stops at whichever comes first), ``n_envs``, ``vec_env`` (``dummy`` |
             ``subproc`` | ``batched``, :data:`training.vec.VEC_ENV_BUILDERS`), ``n_workers`` (read by
             ``subproc`` only: ``null`` = SB3's ``SubprocVecEnv``, one process per
             env; ``k`` = :class:`training.vec.WorkerVecEnv`, the envs split
             over ``k`` processes), ``normalize_obs``,
             ``seed``, ``device``, ``output_dir`` (default ``runs``),
             ``torch_threads``, ``init_from`` (an SB3 checkpoint whose policy
             weights start a new run, e.g. a distilled policy of
             :mod:`training.distill`; ignored by ``--resume``)
distill      ``enabled`` (default false), ``samples``, ``decisions``, ``games``,
             ``temperature``, ``epsilon``, ``epochs``, ``batch_size``,
             ``learning_rate``, ``fit_temperature``, ``value_coef``, ``workers``: search
             distillation into the policy before PPO (:class:`DistillSection`)
eval         ``every`` (steps), ``opponents`` (list of comma-separated line-ups,
             the first one picks ``best_model.zip``), ``games``, ``final_games``
checkpoint   ``every`` (steps)
ray          ``train.backend: rllib`` only (:mod:`training.rllib.config`):
             ``address``, ``num_cpus``, ``object_store_mb``,
             ``num_env_runners``, ``num_envs_per_env_runner``, ``num_learners``,
             CPUs/GPUs per env runner and per learner
===========  ==================================================================

``train.backend`` is ``sb3`` (default: MaskablePPO) or ``rllib`` (Ray RLlib's PPO,
:mod:`training.rllib`); with ``rllib`` the ``algo`` keys are checked by
:func:`_check_rllib` instead of against MaskablePPO (the names mean what they mean for SB3;
:mod:`training.rllib.config` translates them).

``--set a.b=value`` overrides are parsed with ``yaml.safe_load`` and applied
to the raw mapping before validation, so they are checked the same way.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from sixnimmt_env.engine import GameConfig


class ConfigError(ValueError):
    """A bad training config: names the file, the dotted key, the value and what is allowed."""


@dataclass
class EnvSection:
    """The game (every :class:`GameConfig` field) and the learner's seat."""

    num_players: int | list[int] = 4
    variant: Literal["standard", "tactics", "logic"] = "standard"
    row_choice: Literal["player", "cheapest"] = "player"
    end_score: int | None = 66
    end_rule: Literal["at_least", "more_than"] = "at_least"
    max_rounds: int | None = None
    episode: Literal["game", "round"] = "round"
    learner_seat: int | Literal["random"] = "random"

    def table_sizes(self) -> list[int]:
        """``num_players`` as a list (a list of sizes spreads the training envs over table sizes)."""
        return list(self.num_players) if isinstance(self.num_players, list) else [self.num_players]

    def game_kwargs(self, num_players: int | None = None) -> dict[str, Any]:
        """The :class:`GameConfig` keyword arguments of this section (for ``num_players``, default the first size)."""
        out = {name: getattr(self, name) for name in GameConfig.field_names()}
        out["num_players"] = self.table_sizes()[0] if num_players is None else num_players
        return out


@dataclass
class OpponentEntry:
    """One component of the opponent mixture: an agent spec and its weight (> 0)."""

    agent: str
    weight: float = 1.0


@dataclass
class SelfPlaySection:
    """Snapshot the learner every ``snapshot_every`` steps into a pool of the last ``pool_size``
    snapshots; each opponent seat is played by a random pool snapshot with probability ``prob``."""

    enabled: bool = False
    snapshot_every: int = 50_000
    pool_size: int = 5
    prob: float = 0.3


@dataclass
class TrainSection:
    """Budget and machinery of one run."""

    total_timesteps: int = 1_000_000
    max_minutes: float | None = None
    n_envs: int = 8
    vec_env: Literal["dummy", "subproc", "batched"] = "dummy"
    n_workers: int | None = None
    normalize_obs: bool = False
    seed: int = 0
    device: str = "cpu"
    output_dir: str = "runs"
    torch_threads: int = 1
    backend: Literal["sb3", "rllib"] = "sb3"
    init_from: str | None = None


@dataclass
class DistillSection:
    """Search distillation before PPO (:mod:`training.distill`): ``mc:samples`` labels ``decisions`` decisions of
    games where each seat plays a sample of its ``softmax(-score / temperature)`` (``epsilon`` of them uniformly
    at random), then the policy learns them for ``epochs`` (Adam at ``learning_rate``, cosine decay, minibatches
    of ``batch_size``; actor to the teacher's distribution at ``fit_temperature``, critic to the bullheads to come
    with weight ``value_coef``). PPO then starts from the fitted policy. ``workers`` processes label (each its
    share, with its own seed) and as many threads fit."""

    enabled: bool = False
    samples: int = 64
    decisions: int = 600_000
    games: int = 256
    temperature: float = 1.0
    epsilon: float = 0.05
    epochs: int = 10
    batch_size: int = 4096
    learning_rate: float = 1e-3
    fit_temperature: float = 1.0
    value_coef: float = 0.05
    workers: int = 1


@dataclass
class EvalSection:
    """Arena evaluations during training; ``opponents[0]`` decides ``best_model.zip``."""

    every: int = 50_000
    opponents: list[str] = field(default_factory=lambda: ["greedy,greedy,greedy"])
    games: int = 200
    final_games: int = 2000


@dataclass
class CheckpointSection:
    """Periodic checkpoints (``checkpoints/model_<steps>_steps.zip``)."""

    every: int = 100_000


@dataclass
class RaySection:
    """Ray and RLlib resources (``train.backend: rllib``; see :mod:`training.rllib.config`)."""

    address: str | None = None
    num_cpus: int | None = None
    object_store_mb: int = 200
    num_env_runners: int = 1
    num_envs_per_env_runner: int = 8
    num_learners: int = 0
    num_cpus_per_env_runner: float = 1.0
    num_gpus_per_env_runner: float = 0.0
    num_cpus_per_learner: float = 1.0
    num_gpus_per_learner: float = 0.0


@dataclass
class TrainConfig:
    """A whole training config (see the module docstring for each section)."""

    name: str = "run"
    env: EnvSection = field(default_factory=EnvSection)
    opponents: list[OpponentEntry] = field(default_factory=lambda: [OpponentEntry("greedy", 1.0)])
    self_play: SelfPlaySection = field(default_factory=SelfPlaySection)
    algo: dict[str, Any] = field(default_factory=dict)
    train: TrainSection = field(default_factory=TrainSection)
    distill: DistillSection = field(default_factory=DistillSection)
    eval: EvalSection = field(default_factory=EvalSection)
    checkpoint: CheckpointSection = field(default_factory=CheckpointSection)
    ray: RaySection = field(default_factory=RaySection)

    def to_dict(self) -> dict[str, Any]:
        """A plain mapping (what ``config.yaml`` of a run holds)."""
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------- conversion


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " or ".join(repr(a) for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "null"
    if origin is list:
        return f"a list of {_type_name(typing.get_args(tp)[0])}"
    if origin is dict:
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return getattr(tp, "__name__", str(tp))


def _convert(value: Any, tp: Any, key: str, source: str) -> Any:
    """Check ``value`` against the annotation ``tp`` and build nested dataclasses."""
    origin = typing.get_origin(tp)
    bad = ConfigError(f"{source}: key '{key}' must be {_type_name(tp)}, got {value!r}")
    if origin is Literal:
        if value not in typing.get_args(tp) or isinstance(value, bool):
            raise bad
        return value
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(tp):
            try:
                return _convert(value, option, key, source)
            except ConfigError:
                continue
        raise bad
    if tp is type(None):
        if value is not None:
            raise bad
        return None
    if tp is bool:
        if not isinstance(value, bool):
            raise bad
        return value
    if tp is int:
        if isinstance(value, float) and value.is_integer():  # 1e6 in YAML or --set
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise bad
        return value
    if origin is list:
        if not isinstance(value, list):
            raise bad
        (item,) = typing.get_args(tp)
        return [_convert(v, item, f"{key}[{i}]", source) for i, v in enumerate(value)]
    if origin is dict or tp is Any:
        if origin is dict and not isinstance(value, dict):
            raise bad
        return value
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise bad
        return _build(tp, value, key, source)
    raise TypeError(f"unsupported config annotation {tp!r} at {key}")  # a bug in this module, not in a config


def _build(cls: type, data: Mapping[str, Any], prefix: str, source: str) -> Any:
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for k, v in data.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if k not in names:
            raise ConfigError(f"{source}: unknown key '{key}'; allowed keys here: {', '.join(names)}")
        kwargs[k] = _convert(v, hints[k], key, source)
    return cls(**kwargs)


# --------------------------------------------------------------------------- overrides


_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def _numbers(value: Any) -> Any:
    """Turn strings that are plain numbers in scientific notation (``"1e-4"``, which YAML 1.1 reads as a
    string) into floats, recursively through lists and mappings; everything else is returned as is."""
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        number = float(value)
        return int(number) if number.is_integer() and "e" not in value.lower() and "." not in value else number
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    return value


def yaml_problem(error: yaml.YAMLError) -> str:
    """A PyYAML error in one line: what is wrong and where (line and column, 1-based)."""
    problem = getattr(error, "problem", None) or getattr(error, "context", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def apply_override(raw: dict[str, Any], assignment: str, source: str = "--set") -> None:
    """Apply one ``a.b.c=value`` override to ``raw`` in place; ``value`` is parsed with ``yaml.safe_load``.

    Raises:
        ConfigError: without ``=``, a value that is not valid YAML, or when a key on the path is not a mapping.
    """
    if "=" not in assignment:
        raise ConfigError(f"{source}: override {assignment!r} must look like key.sub=value")
    path, text = assignment.split("=", 1)
    keys = path.strip().split(".")
    if not all(keys):
        raise ConfigError(f"{source}: override {assignment!r} has an empty key")
    try:
        value = _numbers(yaml.safe_load(text)) if text.strip() else None
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: the value of {path.strip()!r} is not valid YAML: {yaml_problem(e)}") from None
    node = raw
    for i, k in enumerate(keys[:-1]):
        node = node.setdefault(k, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{source}: key '{'.'.join(keys[: i + 1])}' is not a mapping; cannot set {path}")
    node[keys[-1]] = value


# --------------------------------------------------------------------------- validation


def _check_algo(algo: Mapping[str, Any], source: str) -> None:
    from sb3_contrib import MaskablePPO

    params = inspect.signature(MaskablePPO.__init__).parameters
    # train.py sets verbose itself (0: the progress bar reports instead)
    allowed = sorted(set(params) - {"self", "env", "_init_setup_model", "tensorboard_log", "seed", "device", "verbose"})
    for k in algo:
        if k not in allowed:
            raise ConfigError(
                f"{source}: unknown key 'algo.{k}' (not a MaskablePPO keyword argument, or set in another section: "
                f"seed and device belong in train); allowed: {', '.join(allowed)}"
            )
    policy = algo.get("policy", "MlpPolicy")
    if policy not in POLICIES:
        raise ConfigError(f"{source}: key 'algo.policy' must be one of {', '.join(POLICIES)}, got {policy!r}")
    pk = algo.get("policy_kwargs")
    if pk is not None and not isinstance(pk, dict):
        raise ConfigError(f"{source}: key 'algo.policy_kwargs' must be a mapping, got {pk!r}")
    extractor = (pk or {}).get("features_extractor_class")
    if extractor is not None and policy == "card":
        raise ConfigError(
            f"{source}: key 'algo.policy_kwargs.features_extractor_class' does not go with 'algo.policy: card' "
            f"(the card policy computes its own hand features); remove it or use algo.policy: MlpPolicy"
        )
    if extractor is not None and extractor not in EXTRACTORS:
        raise ConfigError(
            f"{source}: key 'algo.policy_kwargs.features_extractor_class' must be one of {', '.join(EXTRACTORS)}, "
            f"got {extractor!r}"
        )
    for key, (kind, low) in ALGO_NUMBERS.items():
        value = algo.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, kind) or not value >= low:
            what = "an integer" if kind is int else "a number"
            raise ConfigError(f"{source}: key 'algo.{key}' must be {what} >= {low}, got {value!r}")
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    policy_params = inspect.signature(MaskableActorCriticPolicy.__init__).parameters
    pk_allowed = sorted(set(policy_params) - {"self", "observation_space", "action_space", "lr_schedule"})
    for k in pk or {}:
        if k not in pk_allowed:
            raise ConfigError(
                f"{source}: unknown key 'algo.policy_kwargs.{k}' (not a policy keyword argument); "
                f"allowed: {', '.join(pk_allowed)}"
            )
    arch = (pk or {}).get("net_arch")
    if (
        policy == "card"
        and arch is not None
        and not (isinstance(arch, list) and all(isinstance(a, int) and not isinstance(a, bool) and a > 0 for a in arch))
    ):
        raise ConfigError(
            f"{source}: key 'algo.policy_kwargs.net_arch' must be a list of layer sizes for the card policy "
            f"(it sizes the actor and the critic alike), e.g. [64, 64]; got {arch!r}"
        )
    act = (pk or {}).get("activation_fn")
    if act is not None and act not in ACTIVATIONS:
        raise ConfigError(
            f"{source}: key 'algo.policy_kwargs.activation_fn' must be one of {', '.join(ACTIVATIONS)}, got {act!r}"
        )


ALGO_NUMBERS: dict[str, tuple[type | tuple[type, ...], float]] = {
    "learning_rate": ((int, float), 0.0),
    "n_steps": (int, 1),
    "batch_size": (int, 1),
    "n_epochs": (int, 1),
    "gamma": ((int, float), 0.0),
    "gae_lambda": ((int, float), 0.0),
    "clip_range": ((int, float), 0.0),
    "ent_coef": ((int, float), 0.0),
    "vf_coef": ((int, float), 0.0),
    "max_grad_norm": ((int, float), 0.0),
}
"""MaskablePPO keyword arguments checked as numbers: ``(type, lowest allowed value)``."""
ACTIVATIONS = ("tanh", "relu", "elu", "leaky_relu")
"""Names allowed for ``algo.policy_kwargs.activation_fn`` (the torch.nn classes Tanh, ReLU, ELU, LeakyReLU)."""
EXTRACTORS = ("card_features",)
"""Names allowed for ``algo.policy_kwargs.features_extractor_class`` (:mod:`training.features`)."""
POLICIES = ("MlpPolicy", "card")
"""Names allowed for ``algo.policy``: SB3's ``MlpPolicy`` or :class:`training.policy.CardPolicy` (``card``)."""


# --------------------------------------------------------------------------- train.backend: rllib

RLLIB_ALGO_KEYS = ("policy", "policy_kwargs", *ALGO_NUMBERS)
"""Keys allowed in ``algo`` with ``train.backend: rllib`` (:mod:`training.rllib.config` maps each to RLlib's)."""
RLLIB_POLICY_KWARGS = ("net_arch", "activation_fn")
"""Keys allowed in ``algo.policy_kwargs`` with ``train.backend: rllib``."""
RLLIB_POLICIES = ("card", "MlpPolicy")
"""Names allowed for ``algo.policy`` with ``train.backend: rllib`` (the RLModules of :mod:`training.rllib.module`)."""
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


def cpus_needed(cfg: TrainConfig) -> float:
    """CPUs the env runners and learners of an RLlib run reserve (``ray.num_*_per_*``)."""
    r = cfg.ray
    return r.num_env_runners * r.num_cpus_per_env_runner + r.num_learners * r.num_cpus_per_learner


def _check_rllib(cfg: TrainConfig, source: str) -> None:
    """The checks of ``train.backend: rllib`` (:mod:`training.rllib.config`), before Ray starts.

    Raises:
        ConfigError: naming ``source`` and the key.
    """
    for k in cfg.algo:
        if k not in RLLIB_ALGO_KEYS:
            raise ConfigError(
                f"{source}: unknown key 'algo.{k}' for train.backend: rllib; allowed: {', '.join(RLLIB_ALGO_KEYS)}"
            )
    policy = cfg.algo.get("policy", "card")
    if policy not in RLLIB_POLICIES:
        raise ConfigError(f"{source}: key 'algo.policy' must be one of {', '.join(RLLIB_POLICIES)}, got {policy!r}")
    pk = cfg.algo.get("policy_kwargs")
    if pk is not None and not isinstance(pk, dict):
        raise ConfigError(f"{source}: key 'algo.policy_kwargs' must be a mapping, got {pk!r}")
    for k in pk or {}:
        if k not in RLLIB_POLICY_KWARGS:
            raise ConfigError(
                f"{source}: unknown key 'algo.policy_kwargs.{k}' for train.backend: rllib; "
                f"allowed: {', '.join(RLLIB_POLICY_KWARGS)}"
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
    elif r.num_cpus is not None and cpus_needed(cfg) > r.num_cpus:
        raise ConfigError(
            f"{source}: key 'ray.num_env_runners': {r.num_env_runners} runners x {r.num_cpus_per_env_runner} CPUs "
            f"+ {r.num_learners} learners x {r.num_cpus_per_learner} CPUs need {cpus_needed(cfg):g} CPUs, "
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


def check_agent_spec(spec: str, key: str, source: str) -> None:
    """Raise :class:`ConfigError` naming ``key`` and ``source`` when ``spec`` is not a known agent spec.

    ``ppo:PATH`` specs are checked for an existing file only (loading waits until the run starts). Other
    prefixes are built by :func:`sixnimmt_env.agents.make_agent`, which imports an installed plugin's module
    (e.g. ``training.agent`` for ``ppo-sample:``) when its prefix is asked for.
    """
    from sixnimmt_env.agents import make_agent

    if spec.startswith("ppo:"):
        if not Path(spec[4:]).is_file():
            raise ConfigError(f"{source}: key '{key}': checkpoint {spec[4:]!r} of agent {spec!r} does not exist")
        return
    try:
        make_agent(spec)
    except ValueError as e:
        raise ConfigError(f"{source}: key '{key}': {e}") from None


def validate(cfg: TrainConfig, source: str) -> TrainConfig:
    """Semantic checks across sections: the game, weights, agent specs, counts, the vector env kind.

    Raises:
        ConfigError: naming ``source`` and the offending key.
    """
    sizes = cfg.env.table_sizes()
    if not sizes:
        raise ConfigError(f"{source}: key 'env.num_players' must not be an empty list")
    for n in sizes:
        try:
            GameConfig(**cfg.env.game_kwargs(n))
        except ValueError as e:
            raise ConfigError(f"{source}: section 'env': {e}") from None
        if isinstance(cfg.env.learner_seat, int) and not 0 <= cfg.env.learner_seat < n:
            raise ConfigError(
                f"{source}: key 'env.learner_seat' must be 'random' or 0..{n - 1}, got {cfg.env.learner_seat}"
            )
    if not cfg.opponents:
        raise ConfigError(f"{source}: key 'opponents' must list at least one agent")
    for i, entry in enumerate(cfg.opponents):
        if entry.weight <= 0:
            raise ConfigError(f"{source}: key 'opponents[{i}].weight' must be > 0, got {entry.weight}")
        check_agent_spec(entry.agent, f"opponents[{i}].agent", source)
    for i, lineup in enumerate(cfg.eval.opponents):
        specs = [s.strip() for s in lineup.split(",")]
        if not 1 <= len(specs) <= 9:
            raise ConfigError(
                f"{source}: key 'eval.opponents[{i}]' must name 1..9 opponents (the table is them plus the learner), "
                f"got {lineup!r}"
            )
        if len(specs) + 1 not in sizes:
            allowed = " or ".join(str(n - 1) for n in sizes)
            raise ConfigError(
                f"{source}: key 'eval.opponents[{i}]' seats {len(specs) + 1} players (the learner and {len(specs)} "
                f"opponents) but env.num_players is {cfg.env.num_players!r}: list {allowed} opponents"
            )
        for spec in specs:
            check_agent_spec(spec, f"eval.opponents[{i}]", source)
    for key, value in [
        ("train.total_timesteps", cfg.train.total_timesteps),
        ("train.n_envs", cfg.train.n_envs),
        ("train.torch_threads", cfg.train.torch_threads),
        ("train.n_workers", 1 if cfg.train.n_workers is None else cfg.train.n_workers),
        ("eval.every", cfg.eval.every),
        ("eval.games", cfg.eval.games),
        ("eval.final_games", cfg.eval.final_games),
        ("checkpoint.every", cfg.checkpoint.every),
        ("self_play.snapshot_every", cfg.self_play.snapshot_every),
        ("self_play.pool_size", cfg.self_play.pool_size),
    ]:
        if value < 1:
            raise ConfigError(f"{source}: key '{key}' must be >= 1, got {value}")
    if cfg.train.max_minutes is not None and cfg.train.max_minutes <= 0:
        raise ConfigError(f"{source}: key 'train.max_minutes' must be > 0 or null, got {cfg.train.max_minutes}")
    if cfg.train.init_from is not None and not Path(cfg.train.init_from).is_file():
        raise ConfigError(f"{source}: key 'train.init_from' {cfg.train.init_from!r}: no such checkpoint file")
    d = cfg.distill
    if d.enabled:
        if cfg.train.init_from is not None:
            raise ConfigError(f"{source}: keys 'train.init_from' and 'distill.enabled' exclude each other")
        if cfg.train.backend != "sb3":
            raise ConfigError(f"{source}: key 'distill.enabled' applies to train.backend: sb3 only")
        if cfg.env.episode != "round" or len(set(cfg.env.table_sizes())) > 1:
            raise ConfigError(f"{source}: key 'distill.enabled' needs env.episode: round and one env.num_players")
        for key in ("samples", "decisions", "games", "epochs", "batch_size", "workers"):
            if getattr(d, key) < 1:
                raise ConfigError(f"{source}: key 'distill.{key}' must be >= 1, got {getattr(d, key)}")
        for key in ("temperature", "learning_rate", "fit_temperature"):
            if not getattr(d, key) > 0:
                raise ConfigError(f"{source}: key 'distill.{key}' must be > 0, got {getattr(d, key)}")
        if not 0.0 <= d.epsilon <= 1.0 or d.value_coef < 0:
            raise ConfigError(f"{source}: keys 'distill.epsilon' must be in [0, 1] and 'distill.value_coef' >= 0")
    if not 0.0 <= cfg.self_play.prob <= 1.0:
        raise ConfigError(f"{source}: key 'self_play.prob' must be in [0, 1], got {cfg.self_play.prob}")
    if cfg.train.backend == "rllib":
        _check_rllib(cfg, source)
        return cfg
    if cfg.ray != RaySection():
        raise ConfigError(f"{source}: section 'ray' applies to train.backend: rllib only (train.backend is sb3)")
    _check_algo(cfg.algo, source)
    pk = cfg.algo.get("policy_kwargs") or {}
    if cfg.train.normalize_obs and (cfg.algo.get("policy") == "card" or pk.get("features_extractor_class")):
        raise ConfigError(
            f"{source}: key 'train.normalize_obs' must be false with card features (algo.policy: card or "
            "features_extractor_class: card_features): they read card values from the raw observation"
        )
    if cfg.train.vec_env == "batched" and len(set(cfg.env.table_sizes())) > 1:
        raise ConfigError(
            f"{source}: key 'env.num_players' must be one table size with train.vec_env: batched "
            f"(the batched engine plays one GameConfig), got {cfg.env.num_players!r}"
        )
    return cfg


def parse_config(raw: Any, source: str, overrides: Iterable[str] = ()) -> TrainConfig:
    """Build and validate a :class:`TrainConfig` from a raw mapping (as ``yaml.safe_load`` gives).

    Raises:
        ConfigError: naming ``source`` and the key; an empty (``None``) or non-mapping ``raw``.
    """
    if raw is None or raw == {}:
        raise ConfigError(
            f"{source}: the config is empty; give at least one section (env, opponents, self_play, algo, train, "
            "eval, checkpoint), e.g. copy configs/ppo_4p.yaml"
        )
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{source}: the top level must be a mapping of sections (env:, train:, ...), got a {type(raw).__name__}"
            f" ({str(raw)[:60]!r})"
        )
    raw = _numbers(dict(raw))
    for assignment in overrides:
        apply_override(raw, assignment, f"{source} (--set {assignment})")
    return validate(_build(TrainConfig, raw, "", source), source)


def load_config(path: str | Path, overrides: Iterable[str] = ()) -> TrainConfig:
    """Read, override, type-check and validate a YAML config.

    The run name defaults to the file's stem (``configs/ppo_4p.yaml`` -> ``ppo_4p``).

    Raises:
        ConfigError: a missing, unreadable, binary or empty file, bad YAML, or any error of :func:`parse_config`.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file (a YAML config is UTF-8 text)") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read: {e.strerror}") from None
    if "\x00" in text:
        raise ConfigError(f"{path}: not a text file (it holds NUL bytes; a YAML config is UTF-8 text)")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {yaml_problem(e)}") from None
    if raw == {}:
        raw = None  # an empty mapping is as empty as an empty file: parse_config refuses it
    if isinstance(raw, dict) and "name" not in raw:
        raw = {"name": path.stem, **raw}
    return parse_config(raw, str(path), overrides)


def dump_config(cfg: TrainConfig, path: str | Path) -> None:
    """Write the resolved config as YAML (reloadable with :func:`load_config`)."""
    Path(path).write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
