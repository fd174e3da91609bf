"""The sections of a training config: pydantic models, every key typed, with its default and its range.

A config file (YAML, read by :func:`training.config.loader.load_config`) has the sections below; every key is
optional (the models' defaults apply) but an unknown or misspelt key, or a value of the wrong type or out of range,
is a :class:`ConfigError` naming the file, the dotted key, what is allowed and the value given. Each section is a
pydantic model (``extra="forbid"``, strict types, field constraints); the checks across sections are
:mod:`training.config.checks`'s.

===========  ==================================================================
section      meaning
===========  ==================================================================
base         (optional) another config file, relative to this one: its keys
             apply first, then this file's (mappings merge key by key; a list
             or a value replaces the base's); ``name`` is never inherited
             (:mod:`training.config.files`)
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
             by a pool snapshot instead of the mixture), ``current`` (chance
             that it is played by the learner's current weights; default 0),
             ``pool`` (``newest``, default: the last ``pool_size`` snapshots;
             ``growing``: at most ``pool_size`` spread over the whole run)
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
             ``python -m lab.train_champion --export``, or the name of a shipped one,
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
distill      ``enabled`` (default false), ``teacher`` (``mc:N`` or a learned
             policy, ``champion[:NAME|PATH]``, ``ppo:PATH``; default
             ``mc:{samples}``), ``samples``, ``decisions``, ``games``,
             ``temperature``, ``epsilon``, ``epochs``, ``batch_size``,
             ``learning_rate``, ``fit_temperature``, ``value_coef``, ``workers``,
             ``fit_threads``: distillation into the policy before PPO
             (:class:`DistillSection`)
eval         ``every`` (steps), ``opponents`` (list of comma-separated line-ups,
             the first one picks ``best_model.zip``), ``games``, ``final_games``
checkpoint   ``every`` (steps)
ray          ``train.backend: rllib`` only (:data:`training.config.rllib_settings.ALGO_TO_RLLIB`):
             ``algorithm`` (``ppo`` or ``appo``), ``address``, ``num_cpus``, ``object_store_mb``,
             ``num_env_runners``, ``num_envs_per_env_runner``, ``num_learners``,
             CPUs/GPUs per env runner and per learner
===========  ==================================================================

``train.backend`` is ``sb3`` (default: MaskablePPO, :mod:`training.sb3_backend`) or ``rllib`` (Ray RLlib's PPO,
:mod:`training.rllib`); with ``rllib`` the ``algo`` keys set are a subset of MaskablePPO's, the names meaning
what they mean for SB3 (:mod:`training.config.rllib_settings` translates them).

Each part of training takes the sections it reads, never the whole :class:`TrainConfig`: the vector envs
``env`` and ``train``, the policy ``algo``, the evaluations ``eval``, the search distillation ``distill``. Only the
pipeline (:func:`training.train.train`), the two backends' entries and the loader hold the whole config.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any, ClassVar, Literal

import annotated_types
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from sixnimmt_env.rules.engine import GameConfig


class ConfigError(ValueError):
    """A bad training config: names the file, the dotted key, the value and what is allowed."""


TRAINING_GAME_DEFAULTS: dict[str, Any] = {"episode": "round"}
"""The env section's defaults that differ on purpose from :class:`~sixnimmt_env.rules.engine.GameConfig`'s: training
plays single rounds (``episode: round``; ``GameConfig``'s default is a whole game), the episode the shipped configs
train on."""


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


class EnvSection(Section):
    """The game and the learner's seat: every :class:`~sixnimmt_env.rules.engine.GameConfig` field, in its order,
    with its type (``int`` as ``Int``) and its default (but ``TRAINING_GAME_DEFAULTS``), ``num_players``
    possibly a list of table sizes; then ``learner_seat`` (``"random"`` or a seat index). The game's own rules
    (the player count, a variant's deck) are checked by :func:`training.config.checks.check_env`;
    ``tests/test_training.py`` pins the fields to ``GameConfig``'s."""

    num_players: Int | list[Int] = 4
    variant: Literal["standard", "tactics", "logic"] = "standard"
    row_choice: Literal["player", "cheapest"] = "player"
    end_score: Int | None = 66
    end_rule: Literal["at_least", "more_than"] = "at_least"
    max_rounds: Int | None = None
    episode: Literal["game", "round"] = TRAINING_GAME_DEFAULTS["episode"]
    learner_seat: Annotated[Int, annotated_types.Ge(0)] | Literal["random"] = "random"

    def table_sizes(self) -> list[int]:
        """``num_players`` as a list (a list of sizes spreads the training envs over table sizes)."""
        n = self.num_players
        return list(n) if isinstance(n, list) else [n]

    def game_kwargs(self, num_players: int | None = None) -> dict[str, Any]:
        """The :class:`~sixnimmt_env.rules.engine.GameConfig` keyword arguments of this section (for
        ``num_players``, default the first table size)."""
        out = {name: getattr(self, name) for name in GameConfig.field_names()}
        out["num_players"] = self.table_sizes()[0] if num_players is None else num_players
        return out


class OpponentEntry(Section):
    """One component of the opponent mixture: an agent spec and its weight (> 0)."""

    agent: str
    weight: Positive = 1.0


class SelfPlaySection(Section):
    """Snapshot the learner every ``snapshot_every`` steps into a pool of at most ``pool_size`` snapshots; each
    opponent draw (a seat, or a table with ``train.opponent_draw: table``) is the learner's current weights with
    probability ``current``, a random pool snapshot with probability ``prob`` (the mixture's while the pool is
    empty), else the ``opponents`` mixture; ``current + prob`` is at most 1
    (:class:`training.opponents.MixtureSampler`).

    ``pool``: ``newest`` (default) keeps the last ``pool_size`` snapshots; ``growing`` keeps the snapshots ``k`` (the
    ``k``-th ``snapshot_every``) that are multiples of a stride ``s``, a power of two doubled whenever more than
    ``pool_size`` would be kept: between ``pool_size / 2`` and ``pool_size`` snapshots spread evenly over the whole
    run (:class:`training.opponents.SnapshotPool`). ``current`` (``train.backend: sb3``; not with ``vec_env: subproc``
    or ``normalize_obs``): the opponents take the weights that collect the rollout, refreshed before each
    (:class:`training.opponents.CurrentSelf`)."""

    enabled: bool = False
    snapshot_every: Count = 50_000
    pool_size: Count = 5
    prob: float = Field(default=0.3, ge=0, le=1)
    current: float = Field(default=0.0, ge=0, le=1)
    pool: Literal["newest", "growing"] = "newest"


OpponentDraw = Literal["seat", "table"]
"""Values of ``train.opponent_draw``: each opponent seat draws on its own, or one draw fills the table."""
OPPONENT_DRAWS: tuple[str, ...] = typing.get_args(OpponentDraw)
"""The names of ``OpponentDraw`` (``seat``, ``table``)."""

Activation = Literal["tanh", "relu", "elu", "leaky_relu"]
"""Names of ``algo.policy_kwargs.activation_fn`` (the torch.nn classes Tanh, ReLU, ELU, LeakyReLU)."""
ACTIVATIONS: tuple[str, ...] = typing.get_args(Activation)
"""The names of ``Activation``, in order (``tanh``, ``relu``, ``elu``, ``leaky_relu``)."""
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
    they are scored (:class:`training.policy.HandAttentionHead`; a divisor of its 32 units). ``residual`` (``card``
    only; default false): each hidden layer after the first that is as wide as the layer before adds its input,
    ``h + act(W h + b)`` (:class:`training.policy.ResidualLayer`; ``net_arch: [512, 512]`` gives one such layer).
    """

    UNKNOWN_HINT: ClassVar[str | None] = "not a policy keyword argument"

    net_arch: list[Int] | dict[str, list[Int]] | None = Field(
        default=None, description="a list of layer sizes (e.g. [64, 64]; {pi: [...], vf: [...]} for MlpPolicy) or null"
    )
    activation_fn: Activation = "tanh"
    ortho_init: bool = True
    features_extractor_class: Extractor | None = Field(
        default=None, description="one of card_features (or null: SB3's FlattenExtractor)"
    )
    features_extractor_kwargs: dict[str, Any] | None = None
    share_features_extractor: bool = True
    normalize_images: bool = True
    optimizer_kwargs: dict[str, Any] | None = None
    hand_attention_heads: Int = Field(default=0, ge=0)
    residual: bool = False


class AlgoSection(Section):
    """``algo``: the MaskablePPO keyword arguments a config may set, with their types and SB3's defaults
    (``tests/test_training.py`` pins them to MaskablePPO's signature). ``seed``, ``device``, ``verbose`` and
    ``tensorboard_log`` are set by :mod:`training.sb3_backend` from the ``train`` section.

    With ``train.backend: rllib`` (:data:`training.config.rllib_settings.ALGO_TO_RLLIB`) a subset applies; there
    ``policy`` defaults to ``card`` and ``n_steps`` to :data:`training.config.rllib_settings.DEFAULT_N_STEPS` when the
    config does not set them.
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
    win_bonus: float = Field(default=0.0, ge=0, lt=1e6, description="in [0, 1e6) bullheads")
    reward: Literal["penalty", "relative"] = "penalty"
    opponent_draw: OpponentDraw = "seat"


class DistillSection(Section):
    """Distillation before PPO (:mod:`training.distill`): the ``teacher`` labels ``decisions`` decisions of games
    where each seat plays a sample of its ``softmax(-score / temperature)`` (``epsilon`` of them uniformly at
    random), then the policy learns them for ``epochs`` (Adam at ``learning_rate``, cosine decay, minibatches of
    ``batch_size``; actor to the teacher's distribution at ``fit_temperature``, critic to the bullheads to come
    with weight ``value_coef``). PPO then starts from the fitted policy. ``workers`` processes label (each its
    share, with its own seed) and as many threads fit (``fit_threads`` when set: on a machine shared with other
    jobs one thread fits faster than two).

    ``teacher``: ``null`` (the default) is the search ``mc:{samples}``; ``mc:N`` the search with N worlds per decision
    (``samples`` is then not read); or one of our own learned card policies, ``champion``, ``champion:NAME``,
    ``champion:PATH`` (a ``.npz``, relative to the config) or ``ppo:PATH``, whose score is minus its logits: the
    games are fresh self-play decisions of its own policy (at ``temperature`` 1) and the actor learns its softmax
    (at ``fit_temperature`` 1)."""

    enabled: bool = False
    teacher: str | None = None
    samples: Count = 64
    decisions: Count = 600_000
    games: Count = 256
    temperature: Positive = 1.0
    epsilon: float = Field(default=0.05, ge=0, le=1)
    epochs: Count = 10
    batch_size: Count = 4096
    learning_rate: Positive = 1e-3
    fit_temperature: Positive = 1.0
    value_coef: Rate = 0.05
    workers: Count = 1
    fit_threads: Count | None = None


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
    the one written at the end first (:func:`training.sb3_backend.spaced_checkpoints`,
    :func:`training.sb3_backend.average_checkpoints`); 1 keeps the last weights."""

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
    object_store_mb: Int = Field(default=200, ge=80)
    num_env_runners: Int = Field(default=1, ge=0)
    num_envs_per_env_runner: Count = 8
    sampler: Literal["env", "batched"] = "env"
    algorithm: Literal["ppo", "appo"] = "ppo"
    num_learners: Int = Field(default=0, ge=0)
    num_cpus_per_env_runner: Rate = 1.0
    num_gpus_per_env_runner: Rate = 0.0
    num_cpus_per_learner: Rate = 1.0
    num_gpus_per_learner: Rate = 0.0
    restart_failed_env_runners: bool = True
    env_runner_restart_delay_s: Rate = 10.0


class TrainConfig(Section):
    """A whole training config (see the module docstring for each section)."""

    name: str = "run"
    env: EnvSection = Field(default_factory=EnvSection)
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
