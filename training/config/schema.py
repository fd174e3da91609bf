"""Typed training configs loaded from YAML (``yaml.safe_load`` only, never ``eval``), validated by pydantic.

A config file has the sections below; every key is optional (the models' defaults apply) but an unknown or
misspelt key, a value of the wrong type or out of range, or an unknown agent spec is a :class:`ConfigError`
naming the file, the dotted key, what is allowed and the value given, raised by :func:`load_config` before
anything starts. Each section is a pydantic model (``extra="forbid"``, strict types, field constraints); the
checks across sections are :func:`validate`'s.

===========  ==================================================================
section      meaning
===========  ==================================================================
base         (optional) another config file, relative to this one: its keys
             apply first, then this file's (mappings merge key by key; a list
             or a value replaces the base's); ``name`` is never inherited
env          every :class:`sixnimmt_env.rules.engine.GameConfig` field with its
             default (but :data:`TRAINING_GAME_DEFAULTS`: ``episode: round``), plus
             ``learner_seat`` (``"random"`` or a seat index); ``num_players``
             may be a list: training env ``i`` plays ``num_players[i % len]``
             (``vec_env: batched``: the same number of games per size, one
             batch per size with its games in a row, joined by
             :class:`training.vec_env.MixedTablesVecEnv`); ``train.n_envs``
             must be at least the number of sizes
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
             ``seed``, ``device``, ``output_dir`` (default ``runs``, relative to
             the current folder),
             ``torch_threads``, ``init_from`` (an SB3 checkpoint whose policy
             weights start a new run, e.g. a distilled policy of
             :mod:`training.distill`, a ``.npz`` actor written by
             :func:`training.train_champion.export`, or the name of a shipped one,
             :data:`sixnimmt_env.champion.BASELINES`; ignored by ``--resume``),
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
ray          ``train.backend: rllib`` only (:data:`ALGO_TO_RLLIB`):
             ``algorithm`` (``ppo`` or ``appo``), ``address``, ``num_cpus``, ``object_store_mb``,
             ``num_env_runners``, ``num_envs_per_env_runner``, ``num_learners``,
             CPUs/GPUs per env runner and per learner
===========  ==================================================================

Paths in a config file (``train.init_from``, the ``PATH`` of agent specs such as ``champion:PATH`` or
``ppo:PATH`` in ``opponents`` and ``eval.opponents``) are relative to the folder of the file that names them
(a base config's to the base's), not to the current folder; :func:`load_config` makes them absolute, so the
``config.yaml`` saved in a run folder names the same files. An agent argument counts as a path when it holds a
``/`` or has a file suffix (``.npz``, ``.zip``); ``champion:NAME`` with a name of
:data:`sixnimmt_env.champion.BASELINES` plays shipped weights from any folder.

``train.backend`` is ``sb3`` (default: MaskablePPO) or ``rllib`` (Ray RLlib's PPO,
:mod:`training.rllib`); with ``rllib`` the ``algo`` keys set are checked by
:func:`_check_rllib` (a subset of MaskablePPO's; the names mean what they mean for SB3;
:data:`ALGO_TO_RLLIB` translates them).

``--set a.b=value`` overrides (:func:`apply_override`) are parsed as YAML and applied to the merged mapping
before validation, so they are checked the same way; their paths are relative to the current folder.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import annotated_types
import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model

from sixnimmt_env.agents import parse_lineup
from sixnimmt_env.rules.engine import GameConfig


class ConfigError(ValueError):
    """A bad training config: names the file, the dotted key, the value and what is allowed."""


TRAINING_GAME_DEFAULTS: dict[str, Any] = {"episode": "round"}
"""The env section's defaults that differ on purpose from :class:`GameConfig`'s: training plays single rounds
(``episode: round``; ``GameConfig``'s default is a whole game), the episode the shipped configs train on."""


def _whole(value: Any) -> Any:
    """An integral float (``1e6`` in YAML or ``--set``) as an ``int``; anything else as is (strict checks follow)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Int = Annotated[int, BeforeValidator(_whole)]
"""An integer config value: strict (``true`` and ``"4"`` are refused) but an integral float is accepted."""
Count = Annotated[Int, annotated_types.Ge(1)]
"""An integer >= 1 (steps, envs, games, processes)."""
Games = Annotated[Int, annotated_types.Ge(2)]
"""A number of arena games, an integer >= 2 (a 95 % interval needs two samples)."""
Rate = Annotated[float, annotated_types.Ge(0.0)]
"""A number >= 0.0 (a coefficient, a learning rate)."""
Positive = Annotated[float, annotated_types.Gt(0)]
"""A number > 0 (a temperature, a time budget)."""


class Section(BaseModel):
    """A config section: unknown keys and values of the wrong type are refused (no coercion but integral floats
    to integers); :attr:`UNKNOWN_HINT`, when set, says in the error why a key is unknown."""

    model_config = ConfigDict(extra="forbid", strict=True, validate_default=False)
    UNKNOWN_HINT: ClassVar[str | None] = None

    def given_items(self) -> dict[str, Any]:
        """The keys set (by the file, ``--set`` or the constructor), in field order, as plain data."""
        return self.model_dump(exclude_unset=True)


class _EnvMethods(Section):
    """The methods of :data:`EnvSection`."""

    def table_sizes(self) -> list[int]:
        """``num_players`` as a list (a list of sizes spreads the training envs over table sizes)."""
        n = self.num_players  # type: ignore[attr-defined]
        return list(n) if isinstance(n, list) else [n]

    def game_kwargs(self, num_players: int | None = None) -> dict[str, Any]:
        """The :class:`GameConfig` keyword arguments of this section (for ``num_players``, default the first size)."""
        out = {name: getattr(self, name) for name in GameConfig.field_names()}
        out["num_players"] = self.table_sizes()[0] if num_players is None else num_players
        return out


def _env_type(tp: Any) -> Any:
    """A :class:`GameConfig` field's annotation for the env section (``int`` as :data:`Int`)."""
    if tp is int:
        return Int
    args = typing.get_args(tp)
    return Int | None if args and int in args and type(None) in args else tp


EnvSection = create_model(
    "EnvSection",
    __base__=_EnvMethods,
    __module__=__name__,
    __doc__="The game (every :class:`GameConfig` field, ``num_players`` possibly a list) and the learner's seat "
    '(``"random"`` or a seat index).',
    **{
        f.name: (
            Int | list[Int] if f.name == "num_players" else _env_type(typing.get_type_hints(GameConfig)[f.name]),
            TRAINING_GAME_DEFAULTS.get(f.name, f.default),
        )
        for f in dataclasses.fields(GameConfig)
    },
    learner_seat=(Annotated[Int, annotated_types.Ge(0)] | Literal["random"], "random"),
)
"""The env section, built from :class:`GameConfig`'s own fields (their rules are checked by :func:`validate`)."""


class OpponentEntry(Section):
    """One component of the opponent mixture: an agent spec and its weight (> 0)."""

    agent: str
    weight: Positive = 1.0


class SelfPlaySection(Section):
    """Snapshot the learner every ``snapshot_every`` steps into a pool of the last ``pool_size``
    snapshots; each opponent seat is played by a random pool snapshot with probability ``prob``."""

    enabled: bool = False
    snapshot_every: Count = 50_000
    pool_size: Count = 5
    prob: float = Field(0.3, ge=0, le=1)


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


class PolicyKwargs(Section):
    """``algo.policy_kwargs``: keyword arguments of the policy (SB3's ``MaskableActorCriticPolicy`` and
    :class:`training.policy.CardPolicy`), with SB3's defaults; classes are named by strings.

    ``net_arch``: ``null`` (SB3's default MLP), a list of layer sizes, or ``{pi: [...], vf: [...]}``
    (``MlpPolicy`` only). ``features_extractor_class``: ``null`` (SB3's ``FlattenExtractor``) or
    ``card_features`` (:class:`training.features.CardFeatures`, ``MlpPolicy`` only). ``hand_attention_heads``
    (``card`` only; 0, the default, for none): the held cards attend to each other with this many heads before
    they are scored (:class:`training.policy.HandAttentionHead`; a divisor of its 32 units).
    """

    UNKNOWN_HINT: ClassVar[str | None] = "not a policy keyword argument"

    net_arch: list[Int] | dict[str, list[Int]] | None = Field(
        None, description="a list of layer sizes (e.g. [64, 64]; {pi: [...], vf: [...]} for MlpPolicy) or null"
    )
    activation_fn: Activation = "tanh"
    ortho_init: bool = True
    features_extractor_class: Extractor | None = Field(
        None, description="one of card_features (or null: SB3's FlattenExtractor)"
    )
    features_extractor_kwargs: dict[str, Any] | None = None
    share_features_extractor: bool = True
    normalize_images: bool = True
    optimizer_kwargs: dict[str, Any] | None = None
    hand_attention_heads: Int = Field(0, ge=0)


class AlgoSection(Section):
    """``algo``: the MaskablePPO keyword arguments a config may set, with their types and SB3's defaults
    (``tests/test_training.py`` pins them to MaskablePPO's signature). ``seed``, ``device``, ``verbose`` and
    ``tensorboard_log`` are set by :mod:`training.train` from the ``train`` section.

    With ``train.backend: rllib`` (:data:`ALGO_TO_RLLIB`) a subset applies; there ``policy`` defaults to
    ``card`` and ``n_steps`` to :data:`DEFAULT_N_STEPS` when the config does not set them.
    """

    UNKNOWN_HINT: ClassVar[str | None] = (
        "not a MaskablePPO keyword argument, or set in another section: seed and device belong in train"
    )

    policy: str = "MlpPolicy"
    learning_rate: Rate = 3e-4
    n_steps: Count = 2048
    batch_size: Count = 64
    n_epochs: Count = 10
    gamma: Rate = 0.99
    gae_lambda: Rate = 0.95
    clip_range: Rate = 0.2
    clip_range_vf: float | None = None
    normalize_advantage: bool = True
    ent_coef: Rate = 0.0
    vf_coef: Rate = 0.5
    max_grad_norm: Rate = 0.5
    rollout_buffer_kwargs: dict[str, Any] | None = None
    target_kl: float | None = None
    stats_window_size: Count = 100
    policy_kwargs: PolicyKwargs = Field(default_factory=PolicyKwargs)


class TrainSection(Section):
    """Budget and machinery of one run."""

    total_timesteps: Count = 1_000_000
    max_minutes: Positive | None = None
    n_envs: Count = 8
    vec_env: Literal["dummy", "subproc", "batched"] = "dummy"
    n_workers: Count | None = None
    workers: Count | None = None
    normalize_obs: bool = False
    seed: Int = 0
    device: str = "cpu"
    output_dir: str = "runs"
    torch_threads: Count = 1
    backend: Literal["sb3", "rllib"] = "sb3"
    init_from: str | None = None
    win_bonus: float = Field(0.0, ge=0, lt=1e6, description="in [0, 1e6) bullheads")
    reward: Literal["penalty", "relative"] = "penalty"
    opponent_draw: OpponentDraw = "seat"


class DistillSection(Section):
    """Search distillation before PPO (:mod:`training.distill`): ``mc:samples`` labels ``decisions`` decisions of
    games where each seat plays a sample of its ``softmax(-score / temperature)`` (``epsilon`` of them uniformly
    at random), then the policy learns them for ``epochs`` (Adam at ``learning_rate``, cosine decay, minibatches
    of ``batch_size``; actor to the teacher's distribution at ``fit_temperature``, critic to the bullheads to come
    with weight ``value_coef``). PPO then starts from the fitted policy. ``workers`` processes label (each its
    share, with its own seed) and as many threads fit."""

    enabled: bool = False
    samples: Count = 64
    decisions: Count = 600_000
    games: Count = 256
    temperature: Positive = 1.0
    epsilon: float = Field(0.05, ge=0, le=1)
    epochs: Count = 10
    batch_size: Count = 4096
    learning_rate: Positive = 1e-3
    fit_temperature: Positive = 1.0
    value_coef: Rate = 0.05
    workers: Count = 1


class EvalSection(Section):
    """Arena evaluations during training; ``opponents[0]`` decides ``best_model.zip``. Each entry is a line-up of
    comma-separated agent specs, one per other seat; a single spec (``"greedy"``) fills every other seat of the
    table when ``env.num_players`` is one size, so a config keeps its evaluations at another table size."""

    every: Count = 50_000
    opponents: list[str] = Field(default_factory=lambda: ["greedy,greedy,greedy"])
    games: Games = 200
    final_games: Games = 2000


class CheckpointSection(Section):
    """Periodic checkpoints (``checkpoints/model_<steps>_steps.zip``). ``average: K`` makes ``final_model.zip`` the
    element-wise mean of the policy weights of the run's last ``K`` checkpoints at least ``every / 2`` steps apart,
    the one written at the end first (:func:`training.train.spaced_checkpoints`,
    :func:`training.train.average_checkpoints`); 1 keeps the last weights."""

    every: Count = 100_000
    average: Count = 1


class RaySection(Section):
    """Ray and RLlib resources (``train.backend: rllib``), the ``ray`` section:

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
    ``sampler``                    ``env`` (default): RLlib's own env runners, one Python game per
                                   env (self-play: the league of :mod:`training.rllib.self_play`);
                                   ``batched``: :class:`training.rllib.batched_runner.BatchedEnvRunner`,
                                   the runner's envs as games of the batched engine with the opponents
                                   and self-play snapshots inside, one forward per step of all games
    ``algorithm``                  ``ppo`` (default): RLlib's PPO; ``appo``: RLlib's APPO
                                   (asynchronous: the runners sample while the learner updates;
                                   V-trace, target copies of the actor, the action mask on both)
    ``num_learners``               remote learners (0: learn in the training process; 2 or more:
                                   data-parallel, torch DDP, each with ``num_cpus_per_learner``)
    ``num_cpus_per_env_runner``,   resources each runner / learner reserves
    ``num_gpus_per_env_runner``,
    ``num_cpus_per_learner``,
    ``num_gpus_per_learner``
    =============================  ==============================================================

    Faults: ``restart_failed_env_runners`` (``true``, the default): an env runner that dies (its process
    killed, its node gone) is replaced and training goes on with the others meanwhile (RLlib's fault
    tolerance); ``false``: the run stops. ``env_runner_restart_delay_s``: seconds between two restarts of
    a runner (default 10).

    With ``rllib`` the envs are ``max(num_env_runners, 1) x num_envs_per_env_runner``, so the
    SB3-only keys ``train.n_envs``, ``train.vec_env``, ``train.n_workers`` and
    ``train.normalize_obs`` must stay at their defaults.
    """

    address: str | None = None
    num_cpus: Count | None = None
    object_store_mb: Int = Field(200, ge=80)
    num_env_runners: Int = Field(1, ge=0)
    num_envs_per_env_runner: Count = 8
    sampler: Literal["env", "batched"] = "env"
    algorithm: Literal["ppo", "appo"] = "ppo"
    num_learners: Int = Field(0, ge=0)
    num_cpus_per_env_runner: Rate = 1.0
    num_gpus_per_env_runner: Rate = 0.0
    num_cpus_per_learner: Rate = 1.0
    num_gpus_per_learner: Rate = 0.0
    restart_failed_env_runners: bool = True
    env_runner_restart_delay_s: Rate = 10.0


class TrainConfig(Section):
    """A whole training config (see the module docstring for each section)."""

    name: str = "run"
    env: EnvSection = Field(default_factory=EnvSection)  # type: ignore[valid-type]
    opponents: list[OpponentEntry] = Field(default_factory=lambda: [OpponentEntry(agent="greedy")], min_length=1)
    self_play: SelfPlaySection = Field(default_factory=SelfPlaySection)
    algo: AlgoSection = Field(default_factory=AlgoSection)
    train: TrainSection = Field(default_factory=TrainSection)
    distill: DistillSection = Field(default_factory=DistillSection)
    eval: EvalSection = Field(default_factory=EvalSection)
    checkpoint: CheckpointSection = Field(default_factory=CheckpointSection)
    ray: RaySection = Field(default_factory=RaySection)

    def to_dict(self) -> dict[str, Any]:
        """A plain mapping (what ``config.yaml`` of a run holds; ``algo``: the keys the config sets)."""
        return {**self.model_dump(), "algo": self.algo.given_items()}


# --------------------------------------------------------------------------- errors


def _describe(tp: Any, metadata: Iterable[Any] = ()) -> str:
    """What a field of annotation ``tp`` (and constraints ``metadata``) allows, in words: ``an integer >= 1``."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *more = typing.get_args(tp)
        return _describe(base, [*more, *metadata])
    bounds = [
        f"{op} {float(getattr(m, attr)) if tp is float else getattr(m, attr)!r}"  # Ge(0) and Ge(0.0) are cached alike
        for m in metadata
        for attr, op in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
        if hasattr(m, attr)
    ]
    bounds += [
        f"with at least {m.min_length} {'entry' if m.min_length == 1 else 'entries'}"
        for m in metadata
        if isinstance(m, annotated_types.MinLen)
    ]
    if origin is Literal:
        words = " or ".join(repr(a) for a in typing.get_args(tp))
    elif origin in (typing.Union, type(int | None)):
        words = " or ".join(_describe(a) for a in typing.get_args(tp))
    elif origin is list:
        words = f"a list ({_describe(typing.get_args(tp)[0])} each)"
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        words = f"a mapping of {', '.join(tp.model_fields)}"
    else:
        names = {int: "an integer", float: "a number", bool: "true or false", str: "a string", type(None): "null"}
        words = names.get(tp, "a mapping" if origin is dict else getattr(tp, "__name__", str(tp)))
    return " ".join([words, " and ".join(bounds)]).strip()


def _config_error(error: ValidationError, source: str) -> ConfigError:
    """The first error of a failed validation of :class:`TrainConfig` as a :class:`ConfigError`: the dotted key,
    what is allowed there (the field's type and constraints, or its description) and the value given; for an
    unknown key, the keys allowed (the closest one first when it looks like a typo)."""
    first = error.errors()[0]
    model: Any = TrainConfig
    tp: Any = TrainConfig
    info: Any = None
    key = ""
    for part in first["loc"]:
        if isinstance(part, int) and typing.get_origin(tp) is list:
            tp, info, key = typing.get_args(tp)[0], None, f"{key}[{part}]"
        elif isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
            model, key = tp, f"{key}.{part}" if key else part
            if part not in tp.model_fields:
                break  # an unknown key (extra_forbidden)
            info = tp.model_fields[part]
            tp = info.annotation
        else:
            break  # inside a union: the field as a whole is described
    if first["type"] == "extra_forbidden":
        allowed = list(model.model_fields)
        close = difflib.get_close_matches(key.rsplit(".", 1)[-1], allowed, n=1)
        guess = f"did you mean '{close[0]}'? " if close else ""
        why = f" ({model.UNKNOWN_HINT})" if model.UNKNOWN_HINT else ""
        return ConfigError(f"{source}: unknown key '{key}'{why}; {guess}allowed keys here: {', '.join(allowed)}")
    allowed_text = (info.description if info is not None else None) or _describe(
        tp, info.metadata if info is not None else ()
    )
    return ConfigError(f"{source}: key '{key}' must be {allowed_text}, got {first['input']!r}")


# --------------------------------------------------------------------------- files, inheritance, overrides


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that also reads ``1e-4`` and ``1e6`` as floats (YAML 1.2; YAML 1.1 wants a dot) and
    refuses a key given twice in one mapping (PyYAML would keep the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, typing.Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$"), list("-+0123456789.")
)


def _yaml(text: str) -> Any:
    """``text`` parsed by :class:`_Loader` (safe: plain data only)."""
    return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: plain data only


def yaml_problem(error: yaml.YAMLError) -> str:
    """A PyYAML error in one line: what is wrong and where (line and column, 1-based)."""
    problem = getattr(error, "problem", None) or getattr(error, "context", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def _absolute(value: str, folder: Path) -> str:
    """``value`` (a path as written in a config) made absolute against ``folder``; ``~`` is the home folder."""
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (folder / path).resolve())


def _spec_paths(spec: Any, folder: Path) -> Any:
    """An agent spec (or a comma-separated line-up) with each ``PREFIX:PATH`` argument made absolute against
    ``folder`` when it is a path (holds a ``/`` or has a file suffix); other values as given."""
    if not isinstance(spec, str):
        return spec
    out = []
    for part in spec.split(","):
        prefix, colon, arg = part.strip().partition(":")
        is_path = colon and ("/" in arg or "\\" in arg or re.search("[A-Za-z]", Path(arg).suffix))
        out.append(f"{prefix}:{_absolute(arg, folder)}" if is_path else part)
    return ",".join(out)


def resolve_paths(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The paths of a raw config mapping made absolute against ``folder`` (the module docstring's rule):
    ``train.init_from`` (but a baseline name of :data:`sixnimmt_env.champion.BASELINES`) and the agent specs of
    ``opponents`` and ``eval.opponents``. Values of the wrong shape are left for validation to refuse."""
    from sixnimmt_env.champion import BASELINES

    train = raw.get("train")
    if isinstance(train, dict) and isinstance(train.get("init_from"), str):
        init = train["init_from"]
        train["init_from"] = str(BASELINES[init]) if init in BASELINES else _absolute(init, folder)
    if isinstance(raw.get("opponents"), list):
        for entry in raw["opponents"]:
            if isinstance(entry, dict) and "agent" in entry:
                entry["agent"] = _spec_paths(entry["agent"], folder)
    ev = raw.get("eval")
    if isinstance(ev, dict) and isinstance(ev.get("opponents"), list):
        ev["opponents"] = [_spec_paths(lineup, folder) for lineup in ev["opponents"]]
    return raw


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` deep-merged onto ``base`` (a new mapping): mappings merge key by key, anything else replaces."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def read_yaml(path: Path, what: str = "a YAML config") -> Any:
    """The data of the YAML file ``path`` (a safe loader: plain data only, no key given twice).

    Raises:
        ConfigError: naming ``path``: it cannot be read, is not UTF-8 text (``what`` says what it should be), or
            is not valid YAML (where).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file ({what} is UTF-8 text)") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read: {e.strerror}") from None
    if "\x00" in text:
        raise ConfigError(f"{path}: not a text file (it holds NUL bytes; {what} is UTF-8 text)")
    try:
        return _yaml(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {yaml_problem(e)}") from None


def _read(path: Path, chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The raw mapping of the config file ``path``, its base configs merged under it, paths made absolute.

    Raises:
        ConfigError: a missing, unreadable, binary or empty file, bad YAML, a top level that is not a mapping, a
            ``base`` that is not a file name or that includes itself.
    """
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found" + (f" (the base of {chain[-1]})" if chain else ""))
    raw = read_yaml(path)
    if isinstance(raw, dict) and "stages" in raw:
        raise ConfigError(
            f"{path}: a recipe of training stages, not a training config; run it with python -m training.recipe {path}"
        )
    _check_top_level(raw, str(path))
    raw = resolve_paths(raw, path.parent.resolve())
    base = raw.pop("base", None)
    if base is None:
        return raw
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(f"{path}: key 'base' must be the file name of another config (relative to this one)")
    base_path = (path.parent / base).resolve()
    if base_path in (*chain, path.resolve()):
        raise ConfigError(f"{path}: key 'base' {base!r} includes {path.name} again (a cycle of base configs)")
    inherited = _read(base_path, (*chain, path.resolve()))
    inherited.pop("name", None)
    return merge(inherited, raw)


def _check_top_level(raw: Any, source: str) -> None:
    """Refuse an empty config and a top level that is not a mapping of sections."""
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


def _override(assignment: str, source: str) -> tuple[str, list[str], dict[str, Any]]:
    """An override ``a.b.c=value`` split: its dotted key, the keys, and the value parsed as YAML nested under the
    keys (``{"a": {"b": {"c": value}}}``).

    Raises:
        ConfigError: without ``=``, with an empty key, or a value that is not valid YAML.
    """
    if "=" not in assignment:
        raise ConfigError(f"{source}: override {assignment!r} must look like key.sub=value")
    path, text = assignment.split("=", 1)
    keys = path.strip().split(".")
    if not all(keys):
        raise ConfigError(f"{source}: override {assignment!r} has an empty key")
    try:
        value = _yaml(text) if text.strip() else None
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: the value of {path.strip()!r} is not valid YAML: {yaml_problem(e)}") from None
    nested: dict[str, Any] = {keys[-1]: value}
    for k in reversed(keys[:-1]):
        nested = {k: nested}
    return path.strip(), keys, nested


def apply_override(raw: dict[str, Any], assignment: str, source: str = "--set") -> None:
    """Apply one ``a.b.c=value`` override to ``raw`` in place: ``value`` is parsed as YAML (paths in it relative to
    the current folder) and replaces what ``a.b.c`` held.

    Raises:
        ConfigError: without ``=``, a value that is not valid YAML, or when a key on the path is not a mapping.
    """
    path, keys, nested = _override(assignment, source)
    nested = resolve_paths(nested, Path.cwd())
    node = raw
    for i, k in enumerate(keys[:-1]):
        node = node.setdefault(k, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{source}: key '{'.'.join(keys[: i + 1])}' is not a mapping; cannot set {path}")
        nested = nested[k]
    node[keys[-1]] = nested[keys[-1]]


def resolve_override(assignment: str, folder: Path) -> str:
    """``assignment`` (``key.sub=value``, as ``--set`` takes) with the paths in its value made absolute against
    ``folder`` (:func:`resolve_paths`: ``train.init_from``, the specs of ``opponents`` and ``eval.opponents``), the
    value then written as JSON (which YAML reads); returned as given when its value holds no path (a shipped
    baseline's name is no path) or it does not parse (:func:`apply_override` reports that)."""
    import copy

    from sixnimmt_env.champion import BASELINES

    try:
        path, keys, nested = _override(assignment, "--set")
    except ConfigError:
        return assignment
    init = nested["train"]["init_from"] if keys == ["train", "init_from"] else None
    if isinstance(init, str) and init in BASELINES:
        return assignment
    before = copy.deepcopy(nested)
    after = resolve_paths(nested, folder)
    if after == before:
        return assignment
    leaf: Any = after
    for k in keys:
        leaf = leaf[k]
    return f"{path}={json.dumps(leaf)}"


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
"""Keys allowed in ``algo`` with ``train.backend: rllib`` (:data:`ALGO_TO_RLLIB` maps each to RLlib's)."""
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
    return cfg.algo.n_steps if "n_steps" in cfg.algo.model_fields_set else DEFAULT_N_STEPS


def train_batch_size(cfg: TrainConfig) -> int:
    """Env steps per training iteration: ``n_steps`` x :func:`num_envs`."""
    return n_steps(cfg) * num_envs(cfg)


def rllib_policy(cfg: TrainConfig) -> str:
    """``algo.policy`` of an RLlib run: the config's when set, else ``card``."""
    return cfg.algo.policy if "policy" in cfg.algo.model_fields_set else "card"


def cpus_needed(cfg: TrainConfig) -> float:
    """CPUs the env runners and learners of an RLlib run reserve (``ray.num_*_per_*``)."""
    r = cfg.ray
    return r.num_env_runners * r.num_cpus_per_env_runner + r.num_learners * r.num_cpus_per_learner


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

A key left out takes MaskablePPO's default (the defaults of :class:`AlgoSection`), not RLlib's
(whose ``lr`` is 5e-5, ``lambda_`` 1.0, ``clip_param`` 0.3), but ``policy`` (``card``) and ``n_steps``
(:data:`DEFAULT_N_STEPS`); and the loss is SB3's
(``use_kl_loss: False``, no value-loss clipping), so one ``algo`` section means the same on both backends.
"""


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
    """``PPOConfig.training`` (or, with ``ray.algorithm: appo``, ``APPOConfig.training``) keyword arguments of
    ``cfg.algo`` (keys not set: SB3's defaults), the train batch, and SB3's PPO loss: no KL penalty, no value-loss
    clipping."""
    per_learner = train_batch_size(cfg) // max(cfg.ray.num_learners, 1)
    out: dict[str, Any] = {"train_batch_size_per_learner": per_learner, "use_kl_loss": False, "vf_clip_param": 1e9}
    for key, name in ALGO_TO_RLLIB.items():
        if key != "n_steps":
            out[name] = getattr(cfg.algo, key)
    out["minibatch_size"] = min(out["minibatch_size"], per_learner)
    if cfg.ray.algorithm == "appo":  # APPO's value loss is never clipped (and it has no vf_clip_param)
        del out["vf_clip_param"]
    return out


def _check_rllib(cfg: TrainConfig, source: str) -> None:
    """The checks of ``train.backend: rllib`` (:data:`ALGO_TO_RLLIB`), before Ray starts.

    Raises:
        ConfigError: naming ``source`` and the key.
    """
    for k in cfg.algo.model_fields_set:
        if k not in RLLIB_ALGO_KEYS:
            raise ConfigError(
                f"{source}: unknown key 'algo.{k}' for train.backend: rllib; allowed: {', '.join(RLLIB_ALGO_KEYS)}"
            )
    policy = rllib_policy(cfg)
    if policy not in RLLIB_POLICIES:
        raise ConfigError(f"{source}: key 'algo.policy' must be one of {', '.join(RLLIB_POLICIES)}, got {policy!r}")
    pk = cfg.algo.policy_kwargs
    for k in pk.model_fields_set:
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
        key = "ray.num_learners" if r.num_learners else "ray.num_env_runners"
        raise ConfigError(
            f"{source}: key '{key}': {r.num_env_runners} runners x {r.num_cpus_per_env_runner} CPUs "
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
    if "batch_size" in cfg.algo.model_fields_set and minibatch > batch // max(r.num_learners, 1):
        raise ConfigError(
            f"{source}: key 'algo.batch_size' ({minibatch}) is larger than the train batch per learner "
            f"({batch // max(r.num_learners, 1)} = algo.n_steps {n_steps(cfg)} x {num_envs(cfg)} envs"
            f"{' / ' + str(r.num_learners) + ' learners' if r.num_learners > 1 else ''})"
        )


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


def check_agent_spec(spec: str, key: str, source: str) -> None:
    """Raise :class:`ConfigError` naming ``key`` and ``source`` when ``spec`` is not a known agent spec.

    ``ppo:PATH`` specs are checked for an existing file only (loading waits until the run starts). Other
    prefixes are built by :func:`sixnimmt_env.agents.make_agent`, which imports an installed plugin's module
    (e.g. ``training.ppo_agents`` for ``ppo-sample:``) when its prefix is asked for.
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


_DEVICE = re.compile(r"^(cpu|auto|cuda(:\d+)?)$")


def _check_device(device: str, source: str) -> None:
    """``train.device``: ``cpu``, ``auto`` (a GPU when torch sees one), ``cuda`` or ``cuda:N`` (the learner's
    updates on that GPU; the rollouts' actor stays on the CPU); a GPU only where torch sees one.

    Raises:
        ConfigError: another value, or ``cuda``/``cuda:N`` where torch sees no such GPU (naming the key and value).
    """
    if not _DEVICE.match(device):
        raise ConfigError(f"{source}: key 'train.device' must be cpu, auto, cuda or cuda:N, got {device!r}")
    if not device.startswith("cuda"):
        return
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(
            f"{source}: key 'train.device' is {device!r}, but no GPU is visible here (torch.cuda.is_available() is "
            "False); use cpu (or auto: a GPU when there is one)"
        )
    index = int(device.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise ConfigError(
            f"{source}: key 'train.device' is {device!r}, but torch sees {torch.cuda.device_count()} GPU(s) "
            f"(cuda:0..cuda:{torch.cuda.device_count() - 1})"
        )


def validate(cfg: TrainConfig, source: str) -> TrainConfig:
    """Semantic checks across sections: the game, weights, agent specs, counts, the vector env kind.

    Raises:
        ConfigError: naming ``source`` and the offending key.
    """
    sizes = cfg.env.table_sizes()
    if not sizes:
        raise ConfigError(f"{source}: key 'env.num_players' must not be an empty list")
    if len(set(sizes)) > cfg.train.n_envs:
        raise ConfigError(
            f"{source}: key 'train.n_envs' must be at least the number of table sizes in env.num_players "
            f"({len(set(sizes))}: {sorted(set(sizes))}), got {cfg.train.n_envs}: some sizes would never be played"
        )
    for n in sizes:
        try:
            GameConfig(**cfg.env.game_kwargs(n))
        except ValueError as e:
            raise ConfigError(f"{source}: section 'env': {e}") from None
        if isinstance(cfg.env.learner_seat, int) and not 0 <= cfg.env.learner_seat < n:
            raise ConfigError(
                f"{source}: key 'env.learner_seat' must be 'random' or 0..{n - 1}, got {cfg.env.learner_seat}"
            )
    for i, entry in enumerate(cfg.opponents):
        check_agent_spec(entry.agent, f"opponents[{i}].agent", source)
    for i, lineup in enumerate(cfg.eval.opponents):
        try:
            specs = parse_lineup(lineup, "line-up")
        except ValueError as e:
            raise ConfigError(f"{source}: key 'eval.opponents[{i}]': {e}") from None
        if not 1 <= len(specs) <= 9:
            raise ConfigError(
                f"{source}: key 'eval.opponents[{i}]' must name 1..9 opponents (the table is them plus the learner), "
                f"got {lineup!r}"
            )
        if len(specs) == 1 and len(sizes) == 1:  # one spec fills every other seat of the table
            specs = specs * (sizes[0] - 1)
            cfg.eval.opponents[i] = ",".join(specs)
        if len(specs) + 1 not in sizes:
            allowed = " or ".join(str(n - 1) for n in sizes)
            raise ConfigError(
                f"{source}: key 'eval.opponents[{i}]' seats {len(specs) + 1} players (the learner and {len(specs)} "
                f"opponents) but env.num_players is {cfg.env.num_players!r}: list {allowed} opponents"
            )
        for spec in specs:
            check_agent_spec(spec, f"eval.opponents[{i}]", source)
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
            "policy.pth) nor a .npz actor (python -m training.train_champion --export)"
        )
    d = cfg.distill
    if d.enabled:
        if cfg.train.init_from is not None:
            raise ConfigError(f"{source}: keys 'train.init_from' and 'distill.enabled' exclude each other")
        if cfg.train.backend != "sb3":
            raise ConfigError(f"{source}: key 'distill.enabled' applies to train.backend: sb3 only")
        if cfg.env.episode != "round" or len(set(cfg.env.table_sizes())) > 1:
            raise ConfigError(f"{source}: key 'distill.enabled' needs env.episode: round and one env.num_players")
    if cfg.checkpoint.average > 1 and cfg.train.backend != "sb3":
        raise ConfigError(
            f"{source}: key 'checkpoint.average' {cfg.checkpoint.average} applies to train.backend: sb3 only, got "
            f"backend {cfg.train.backend!r}"
        )
    _check_device(cfg.train.device, source)
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
    return cfg


def parse_config(raw: Any, source: str, overrides: Iterable[str] = ()) -> TrainConfig:
    """Build and validate a :class:`TrainConfig` from a raw mapping (as ``yaml.safe_load`` gives; its paths
    already absolute, :func:`resolve_paths`), after the ``--set`` ``overrides``.

    Raises:
        ConfigError: naming ``source`` and the key; an empty (``None``) or non-mapping ``raw``.
    """
    _check_top_level(raw, source)
    raw = dict(raw)
    for assignment in overrides:
        apply_override(raw, assignment, f"{source} (--set {assignment})")
    try:
        cfg = TrainConfig.model_validate(raw)
    except ValidationError as e:
        raise _config_error(e, source) from None
    return validate(cfg, source)


def load_config(path: str | Path, overrides: Iterable[str] = ()) -> TrainConfig:
    """Read a YAML config (and its ``base`` configs), override, type-check and validate it.

    The run name defaults to the file's stem (``configs/ppo_4p.yaml`` -> ``ppo_4p``); paths in the file are
    relative to its folder (the module docstring).

    Raises:
        ConfigError: a missing, unreadable, binary or empty file, bad YAML, or any error of :func:`parse_config`.
    """
    path = Path(path)
    raw = _read(path)
    return parse_config({"name": path.stem, **raw}, str(path), overrides)


def dump_config(cfg: TrainConfig, path: str | Path) -> None:
    """Write the resolved config as YAML (reloadable with :func:`load_config` to an equal config)."""
    Path(path).write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
