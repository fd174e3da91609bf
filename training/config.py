"""Typed training configs loaded from YAML (``yaml.safe_load`` only, never ``eval``).

A config file has the sections below; every key is optional (the dataclass
defaults apply) but an unknown or misspelt key, a value of the wrong type or
an unknown agent spec is a :class:`ConfigError` naming the file and the dotted
key, raised by :func:`load_config` before anything starts.

===========  ==================================================================
section      meaning
===========  ==================================================================
env          every :class:`sixnimmt_env.engine.GameConfig` field with its
             default (but :data:`TRAINING_GAME_DEFAULTS`: ``episode: round``), plus
             ``learner_seat`` (``"random"`` or a seat index); ``num_players``
             may be a list: training env ``i`` plays ``num_players[i % len]``
opponents    a weighted mixture ``[{agent: SPEC, weight: W}, ...]``: each
             opponent seat draws one entry per episode (``SPEC`` is any agent
             spec, ``ppo:PATH`` for a checkpoint); ``train.opponent_draw:
             table`` makes one draw per episode for all of them
self_play    ``enabled``, ``snapshot_every`` (steps), ``pool_size`` (last M
             snapshots kept), ``prob`` (chance that an opponent seat is played
             by a pool snapshot instead of the mixture)
algo         MaskablePPO keyword arguments (:class:`AlgoSection`, SB3's defaults;
             ``policy_kwargs``: :class:`PolicyKwargs`); a key left out takes
             the backend's default, and ``config.yaml`` holds the keys set
train        ``total_timesteps``, ``max_minutes`` (wall-time budget of
             ``learn``: training stops at whichever comes first), ``n_envs``, ``vec_env`` (``dummy`` |
             ``subproc`` | ``batched``, :data:`training.vec.VEC_ENV_BUILDERS`), ``n_workers`` (read by
             ``subproc`` only: ``null`` = SB3's ``SubprocVecEnv``, one process per
             env; ``k`` = :class:`training.vec.WorkerVecEnv`, the envs split
             over ``k`` processes), ``workers`` (processes the run trains with,
             the learner included: ``W`` >= 2 runs ``W - 1`` rollout processes
             beside the learner's updates, :mod:`training.rollouts`; 1 is
             synchronous MaskablePPO; ``null``, the default: the usable
             cores, at most 4), ``normalize_obs``,
             ``seed``, ``device``, ``output_dir`` (default ``runs``),
             ``torch_threads``, ``init_from`` (an SB3 checkpoint whose policy
             weights start a new run, e.g. a distilled policy of
             :mod:`training.distill`, or a ``.npz`` actor written by
             :func:`training.champion.export`; ignored by ``--resume``),
             ``win_bonus`` (bullheads added to the learner's reward at the end
             of an episode it wins, a tie for lowest split; ``vec_env: batched``
             only; default 0), ``reward`` (``penalty``, default: minus the
             learner's bullheads; ``relative``: plus the mean of the other
             seats' bullheads, :func:`sixnimmt_env.rewards.rewards`; sb3 only),
             ``opponent_draw`` (``seat``, default: each opponent seat draws
             from ``opponents`` and the pool on its own; ``table``: one draw
             per episode fills every opponent seat, like the arena's line-ups;
             :class:`training.opponents.MixtureSampler`)
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
:mod:`training.rllib`); with ``rllib`` the ``algo`` keys set are checked by
:func:`_check_rllib` (a subset of MaskablePPO's; the names mean what they mean for SB3;
:mod:`training.rllib.config` translates them).

``--set a.b=value`` overrides are parsed with ``yaml.safe_load`` and applied
to the raw mapping before validation, so they are checked the same way.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml

from sixnimmt_env.engine import GameConfig


class ConfigError(ValueError):
    """A bad training config: names the file, the dotted key, the value and what is allowed."""


TRAINING_GAME_DEFAULTS: dict[str, Any] = {"episode": "round"}
"""The env section's defaults that differ on purpose from :class:`GameConfig`'s: training plays single rounds
(``episode: round``; ``GameConfig``'s default is a whole game), the episode the shipped configs train on."""


def _env_fields() -> list[tuple[str, Any, Any]]:
    """The env section's fields: every :class:`GameConfig` field with its type and default (but
    :data:`TRAINING_GAME_DEFAULTS`; ``num_players`` may also be a list of table sizes), then ``learner_seat``."""
    hints = typing.get_type_hints(GameConfig)
    out: list[tuple[str, Any, Any]] = []
    for f in dataclasses.fields(GameConfig):
        tp = int | list[int] if f.name == "num_players" else hints[f.name]
        out.append((f.name, tp, field(default=TRAINING_GAME_DEFAULTS.get(f.name, f.default))))
    out.append(("learner_seat", int | Literal["random"], field(default="random")))
    return out


def _table_sizes(self: Any) -> list[int]:
    """``num_players`` as a list (a list of sizes spreads the training envs over table sizes)."""
    return list(self.num_players) if isinstance(self.num_players, list) else [self.num_players]


def _game_kwargs(self: Any, num_players: int | None = None) -> dict[str, Any]:
    """The :class:`GameConfig` keyword arguments of this section (for ``num_players``, default the first size)."""
    out = {name: getattr(self, name) for name in GameConfig.field_names()}
    out["num_players"] = self.table_sizes()[0] if num_players is None else num_players
    return out


EnvSection = dataclasses.make_dataclass(
    "EnvSection",
    _env_fields(),
    namespace={
        "__doc__": "The game (every :class:`GameConfig` field, ``num_players`` possibly a list) and the learner's "
        'seat (``"random"`` or a seat index).',
        "table_sizes": _table_sizes,
        "game_kwargs": _game_kwargs,
        "__module__": __name__,
    },
)
"""The env section, built from :class:`GameConfig`'s own fields (:func:`_env_fields`)."""


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


OpponentDraw = Literal["seat", "table"]
"""Values of ``train.opponent_draw``: each opponent seat draws on its own, or one draw fills the table."""
OPPONENT_DRAWS: tuple[str, ...] = typing.get_args(OpponentDraw)

Activation = Literal["tanh", "relu", "elu", "leaky_relu"]
"""Names of ``algo.policy_kwargs.activation_fn`` (the torch.nn classes Tanh, ReLU, ELU, LeakyReLU)."""
ACTIVATIONS: tuple[str, ...] = typing.get_args(Activation)
Extractor = Literal["card_features"]
"""Names of ``algo.policy_kwargs.features_extractor_class`` (:data:`training.features.FEATURE_EXTRACTORS`)."""
CARD_HIDDEN = 32
"""Hidden units of the card policy's per-card network (``training.policy.CARD_HIDDEN``, which is this value)."""
POLICIES = ("MlpPolicy", "card")
"""Names allowed for ``algo.policy``: SB3's ``MlpPolicy`` or :class:`training.policy.CardPolicy` (``card``)."""


def _at_least(low: float, default: Any) -> Any:
    """A number field that must be ``>= low``: an integer when ``low`` is an ``int``, else any number."""
    kind = "an integer" if isinstance(low, int) else "a number"
    return field(default=default, metadata={"min": low, "means": f"{kind} >= {low}"})


@dataclass
class _GivenKeys:
    """A section that remembers the keys its config sets (``given``): the keys of the file or ``--set``, and every
    field whose value differs from its default. :meth:`given_items` is what ``config.yaml`` holds and what the
    backend receives; a key left out takes the backend's own default."""

    given: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        defaults = {
            f.name: f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            for f in dataclasses.fields(self)
            if f.init
        }
        self.given = frozenset(name for name, default in defaults.items() if getattr(self, name) != default)

    def given_items(self) -> dict[str, Any]:
        """The keys set, in field order, as plain data (nested sections as mappings)."""
        out = {}
        for f in dataclasses.fields(self):
            if f.name in self.given:
                value = getattr(self, f.name)
                out[f.name] = value.given_items() if isinstance(value, _GivenKeys) else value
        return out


@dataclass
class PolicyKwargs(_GivenKeys):
    """``algo.policy_kwargs``: keyword arguments of the policy (SB3's ``MaskableActorCriticPolicy`` and
    :class:`training.policy.CardPolicy`), with SB3's defaults; classes are named by strings.

    ``net_arch``: ``null`` (SB3's default MLP), a list of layer sizes, or ``{pi: [...], vf: [...]}``
    (``MlpPolicy`` only). ``features_extractor_class``: ``null`` (SB3's ``FlattenExtractor``) or
    ``card_features`` (:class:`training.features.CardFeatures`, ``MlpPolicy`` only). ``hand_attention_heads``
    (``card`` only; 0, the default, for none): the held cards attend to each other with this many heads before
    they are scored (:class:`training.policy.HandAttentionHead`; a divisor of its 32 units).
    """

    UNKNOWN_HINT: ClassVar[str] = "not a policy keyword argument"

    net_arch: list[int] | dict[str, list[int]] | None = field(
        default=None,
        metadata={"means": "a list of layer sizes (e.g. [64, 64]; {pi: [...], vf: [...]} for MlpPolicy) or null"},
    )
    activation_fn: Activation = "tanh"
    ortho_init: bool = True
    features_extractor_class: Extractor | None = field(
        default=None, metadata={"means": "one of card_features (or null: SB3's FlattenExtractor)"}
    )
    features_extractor_kwargs: dict[str, Any] | None = None
    share_features_extractor: bool = True
    normalize_images: bool = True
    optimizer_kwargs: dict[str, Any] | None = None
    hand_attention_heads: int = _at_least(0, 0)


@dataclass
class AlgoSection(_GivenKeys):
    """``algo``: the MaskablePPO keyword arguments a config may set, with their types and SB3's defaults
    (``tests/test_training.py`` pins them to MaskablePPO's signature). ``seed``, ``device``, ``verbose`` and
    ``tensorboard_log`` are set by :mod:`training.train` from the ``train`` section.

    With ``train.backend: rllib`` (:mod:`training.rllib.config`) a subset applies; there ``policy`` defaults to
    ``card`` and ``n_steps`` to :data:`DEFAULT_N_STEPS` when the config does not set them.
    """

    UNKNOWN_HINT: ClassVar[str] = (
        "not a MaskablePPO keyword argument, or set in another section: seed and device belong in train"
    )

    policy: str = "MlpPolicy"
    learning_rate: float = _at_least(0.0, 3e-4)
    n_steps: int = _at_least(1, 2048)
    batch_size: int = _at_least(1, 64)
    n_epochs: int = _at_least(1, 10)
    gamma: float = _at_least(0.0, 0.99)
    gae_lambda: float = _at_least(0.0, 0.95)
    clip_range: float = _at_least(0.0, 0.2)
    clip_range_vf: float | None = None
    normalize_advantage: bool = True
    ent_coef: float = _at_least(0.0, 0.0)
    vf_coef: float = _at_least(0.0, 0.5)
    max_grad_norm: float = _at_least(0.0, 0.5)
    rollout_buffer_kwargs: dict[str, Any] | None = None
    target_kl: float | None = None
    stats_window_size: int = _at_least(1, 100)
    policy_kwargs: PolicyKwargs = field(default_factory=PolicyKwargs)


@dataclass
class TrainSection:
    """Budget and machinery of one run."""

    total_timesteps: int = 1_000_000
    max_minutes: float | None = None
    n_envs: int = 8
    vec_env: Literal["dummy", "subproc", "batched"] = "dummy"
    n_workers: int | None = None
    workers: int | None = None
    normalize_obs: bool = False
    seed: int = 0
    device: str = "cpu"
    output_dir: str = "runs"
    torch_threads: int = 1
    backend: Literal["sb3", "rllib"] = "sb3"
    init_from: str | None = None
    win_bonus: float = 0.0
    reward: Literal["penalty", "relative"] = "penalty"
    opponent_draw: OpponentDraw = "seat"


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
    algo: AlgoSection = field(default_factory=AlgoSection)
    train: TrainSection = field(default_factory=TrainSection)
    distill: DistillSection = field(default_factory=DistillSection)
    eval: EvalSection = field(default_factory=EvalSection)
    checkpoint: CheckpointSection = field(default_factory=CheckpointSection)
    ray: RaySection = field(default_factory=RaySection)

    def to_dict(self) -> dict[str, Any]:
        """A plain mapping (what ``config.yaml`` of a run holds; ``algo``: the keys the config sets)."""
        return {**dataclasses.asdict(self), "algo": self.algo.given_items()}


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


def _convert_field(value: Any, tp: Any, metadata: Mapping[str, Any], key: str, source: str) -> Any:
    """:func:`_convert`, then a field's ``metadata``: ``min`` (lowest allowed number) and ``means`` (what the
    error message says is allowed, instead of the type's name)."""
    means = metadata.get("means")
    try:
        out = _convert(value, tp, key, source)
    except ConfigError:
        if means is None:
            raise
        raise ConfigError(f"{source}: key '{key}' must be {means}, got {value!r}") from None
    low = metadata.get("min")
    if low is not None and out is not None and not out >= low:
        raise ConfigError(f"{source}: key '{key}' must be {means}, got {value!r}")
    return out


def _build(cls: type, data: Mapping[str, Any], prefix: str, source: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs = {}
    for k, v in data.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if k not in fields:
            hint = getattr(cls, "UNKNOWN_HINT", None)
            if hint is None:
                raise ConfigError(f"{source}: unknown key '{key}'; allowed keys here: {', '.join(fields)}")
            raise ConfigError(f"{source}: unknown key '{key}' ({hint}); allowed: {', '.join(fields)}")
        kwargs[k] = _convert_field(v, hints[k], fields[k].metadata, key, source)
    out = cls(**kwargs)
    if isinstance(out, _GivenKeys):
        out.given |= frozenset(kwargs)
    return out


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


def _check_algo(algo: AlgoSection, source: str) -> None:
    """The checks of ``algo`` with ``train.backend: sb3`` that its types do not express.

    Raises:
        ConfigError: naming ``source`` and the key.
    """
    if algo.policy not in POLICIES:
        raise ConfigError(f"{source}: key 'algo.policy' must be one of {', '.join(POLICIES)}, got {algo.policy!r}")
    pk = algo.policy_kwargs
    if pk.features_extractor_class is not None and algo.policy == "card":
        raise ConfigError(
            f"{source}: key 'algo.policy_kwargs.features_extractor_class' does not go with 'algo.policy: card' "
            f"(the card policy computes its own hand features); remove it or use algo.policy: MlpPolicy"
        )
    if pk.hand_attention_heads and (algo.policy != "card" or CARD_HIDDEN % pk.hand_attention_heads):
        raise ConfigError(
            f"{source}: key 'algo.policy_kwargs.hand_attention_heads' must divide {CARD_HIDDEN} and goes with "
            f"'algo.policy: card'; got {pk.hand_attention_heads!r} with algo.policy: {algo.policy}"
        )
    if algo.policy == "card" and pk.net_arch is not None and not _layer_sizes(pk.net_arch):
        raise ConfigError(
            f"{source}: key 'algo.policy_kwargs.net_arch' must be a list of layer sizes for the card policy "
            f"(it sizes the actor and the critic alike), e.g. [64, 64]; got {pk.net_arch!r}"
        )


def _layer_sizes(arch: Any) -> bool:
    """Whether ``arch`` is a list of positive layer sizes."""
    return isinstance(arch, list) and all(a > 0 for a in arch)


# --------------------------------------------------------------------------- train.backend: rllib

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
"""Keys allowed in ``algo`` with ``train.backend: rllib`` (:mod:`training.rllib.config` maps each to RLlib's)."""
RLLIB_POLICY_KWARGS = ("net_arch", "activation_fn")
"""Keys allowed in ``algo.policy_kwargs`` with ``train.backend: rllib``."""
RLLIB_POLICIES = ("card", "MlpPolicy")
"""Names allowed for ``algo.policy`` with ``train.backend: rllib`` (the RLModules of :mod:`training.rllib.module`)."""
DEFAULT_N_STEPS = 128
"""``algo.n_steps`` of ``train.backend: rllib`` when the config does not set it: steps per env per iteration."""
_ADDRESS = re.compile(r"^(auto|(ray://)?[A-Za-z0-9_.\-]+:\d{1,5})$")


def num_envs(cfg: TrainConfig) -> int:
    """Training envs of an RLlib run: ``max(num_env_runners, 1) * num_envs_per_env_runner``."""
    return max(cfg.ray.num_env_runners, 1) * cfg.ray.num_envs_per_env_runner


def n_steps(cfg: TrainConfig) -> int:
    """Steps per env per iteration of an RLlib run (``algo.n_steps`` when set, else :data:`DEFAULT_N_STEPS`)."""
    return cfg.algo.n_steps if "n_steps" in cfg.algo.given else DEFAULT_N_STEPS


def train_batch_size(cfg: TrainConfig) -> int:
    """Env steps per training iteration: ``n_steps`` x :func:`num_envs`."""
    return n_steps(cfg) * num_envs(cfg)


def rllib_policy(cfg: TrainConfig) -> str:
    """``algo.policy`` of an RLlib run: the config's when set, else ``card``."""
    return cfg.algo.policy if "policy" in cfg.algo.given else "card"


def cpus_needed(cfg: TrainConfig) -> float:
    """CPUs the env runners and learners of an RLlib run reserve (``ray.num_*_per_*``)."""
    r = cfg.ray
    return r.num_env_runners * r.num_cpus_per_env_runner + r.num_learners * r.num_cpus_per_learner


def _check_rllib(cfg: TrainConfig, source: str) -> None:
    """The checks of ``train.backend: rllib`` (:mod:`training.rllib.config`), before Ray starts.

    Raises:
        ConfigError: naming ``source`` and the key.
    """
    for k in cfg.algo.given:
        if k not in RLLIB_ALGO_KEYS:
            raise ConfigError(
                f"{source}: unknown key 'algo.{k}' for train.backend: rllib; allowed: {', '.join(RLLIB_ALGO_KEYS)}"
            )
    policy = rllib_policy(cfg)
    if policy not in RLLIB_POLICIES:
        raise ConfigError(f"{source}: key 'algo.policy' must be one of {', '.join(RLLIB_POLICIES)}, got {policy!r}")
    pk = cfg.algo.policy_kwargs
    for k in pk.given:
        if k not in RLLIB_POLICY_KWARGS:
            raise ConfigError(
                f"{source}: unknown key 'algo.policy_kwargs.{k}' for train.backend: rllib; "
                f"allowed: {', '.join(RLLIB_POLICY_KWARGS)}"
            )
    if pk.net_arch is not None and not _layer_sizes(pk.net_arch):
        raise ConfigError(
            f"{source}: key 'algo.policy_kwargs.net_arch' must be a list of layer sizes, got {pk.net_arch!r}"
        )

    defaults = TrainSection()
    for key in ("n_envs", "vec_env", "n_workers", "workers", "normalize_obs"):
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
    minibatch = cfg.algo.batch_size
    if "batch_size" in cfg.algo.given and minibatch > batch // max(r.num_learners, 1):
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


def _is_sb3_checkpoint(path: str) -> bool:
    """Whether ``path`` is a zip archive holding ``policy.pth``, as SB3's ``save`` writes."""
    import zipfile

    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        return "policy.pth" in z.namelist()


def _check_init_weights(cfg: TrainConfig, source: str) -> None:
    """``train.init_from`` names a ``.npz`` actor: it must read, and its hidden layers (sizes, activations) must fit
    the card policy's ``net_arch`` and ``activation_fn``: same count and activations, each layer at least as wide
    (``CardActor.fits``; checked here, before a run folder is made)."""
    from sixnimmt_env.champion import read_weights

    key = f"{source}: key 'train.init_from' {cfg.train.init_from!r}"
    if cfg.algo.policy != "card" or cfg.train.backend != "sb3":
        raise ConfigError(f"{key}: a .npz actor starts a card policy (algo.policy: card, train.backend: sb3)")
    try:
        actor, _ = read_weights(cfg.train.init_from)
    except ValueError as e:
        raise ConfigError(f"{key}: {e}") from None
    theirs = actor.hidden_layers()
    arch = cfg.algo.policy_kwargs.net_arch
    # CardPolicy reads {pi: A, vf: A} as A, and None as SB3's default, pi and vf [64, 64]
    sizes = list(arch.get("pi") or []) if isinstance(arch, dict) else [64, 64] if arch is None else list(arch)
    ours = [(size, cfg.algo.policy_kwargs.activation_fn) for size in sizes]
    if not actor.fits(ours):
        raise ConfigError(
            f"{key}: hidden layers (size, activation) {theirs}, but algo.policy_kwargs gives {ours}; set net_arch "
            "and activation_fn to match (same count and activations, each layer at least as wide: a wider layer "
            "starts with the file's units and zero weights out of the extra ones)"
        )


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
        ("train.workers", 1 if cfg.train.workers is None else cfg.train.workers),
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
    if not 0.0 <= cfg.train.win_bonus < 1e6:
        raise ConfigError(f"{source}: key 'train.win_bonus' must be in [0, 1e6) bullheads, got {cfg.train.win_bonus}")
    if cfg.train.win_bonus and (cfg.train.vec_env != "batched" or cfg.train.backend != "sb3"):
        raise ConfigError(
            f"{source}: key 'train.win_bonus' applies to train.vec_env: batched with train.backend: sb3 only, got "
            f"vec_env {cfg.train.vec_env!r}, backend {cfg.train.backend!r}"
        )
    for key, value, default, why in (
        ("reward", cfg.train.reward, "penalty", "the RLlib env's reward is the penalty"),
        ("opponent_draw", cfg.train.opponent_draw, "seat", "the RLlib league draws each opponent seat on its own"),
    ):
        if value != default and cfg.train.backend != "sb3":
            raise ConfigError(
                f"{source}: key 'train.{key}' {value!r} applies to train.backend: sb3 only ({why}), "
                f"got backend {cfg.train.backend!r}"
            )
    if cfg.train.init_from is not None and not Path(cfg.train.init_from).is_file():
        raise ConfigError(f"{source}: key 'train.init_from' {cfg.train.init_from!r}: no such checkpoint file")
    if cfg.train.init_from is not None and Path(cfg.train.init_from).suffix == ".npz":
        _check_init_weights(cfg, source)
    elif cfg.train.init_from is not None and not _is_sb3_checkpoint(cfg.train.init_from):
        raise ConfigError(
            f"{source}: key 'train.init_from' {cfg.train.init_from!r}: neither an SB3 checkpoint (a .zip holding "
            "policy.pth) nor a .npz actor (python -m training.champion --export)"
        )
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
    pk = cfg.algo.policy_kwargs
    if cfg.train.normalize_obs and (cfg.algo.policy == "card" or pk.features_extractor_class is not None):
        raise ConfigError(
            f"{source}: key 'train.normalize_obs' must be false with card features (algo.policy: card or "
            "features_extractor_class: card_features): they read card values from the raw observation"
        )
    workers = cfg.train.workers
    if workers is not None and workers > 1:
        if cfg.train.normalize_obs:
            raise ConfigError(
                f"{source}: key 'train.workers' must be 1 (or null) with train.normalize_obs: the observation "
                f"statistics live in the learner's process; got {workers}"
            )
        if cfg.train.vec_env == "subproc":
            raise ConfigError(
                f"{source}: key 'train.workers' must be 1 (or null) with train.vec_env: subproc (its envs already "
                f"run one per process); use vec_env batched or dummy with workers, got {workers}"
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
