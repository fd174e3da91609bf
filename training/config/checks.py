"""The checks of a training config that its types do not express: the game, the agent specs, the weights a run
starts from, the device, and what each backend allows. Each check takes the sections it reads;
:func:`training.config.loader.validate` runs them all, in a fixed order, before anything starts.

Every check raises :class:`~training.config.schema.ConfigError` naming ``source`` (the config file), the dotted key
and what is allowed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sixnimmt_env.agents import parse_lineup
from sixnimmt_env.rules.engine import GameConfig
from training.config.rllib_settings import (
    RLLIB_ALGO_KEYS,
    RLLIB_POLICIES,
    RLLIB_POLICY_KWARGS,
    cpus_needed,
    n_steps,
    num_envs,
    rllib_policy,
    train_batch_size,
)
from training.config.schema import (
    CARD_HIDDEN,
    POLICIES,
    AlgoSection,
    CheckpointSection,
    ConfigError,
    DistillSection,
    EnvSection,
    EvalSection,
    OpponentEntry,
    RaySection,
    SelfPlaySection,
    TrainSection,
)


def check_env(env: EnvSection, n_envs: int, source: str) -> None:
    """The game of every table size (:class:`~sixnimmt_env.rules.engine.GameConfig`'s rules), the learner's seat at
    each, and at least one training env (``train.n_envs``) per table size.

    Raises:
        ConfigError: an empty ``env.num_players``, fewer envs than sizes, a rule broken, a seat off the table.
    """
    sizes = env.table_sizes()
    if not sizes:
        raise ConfigError(f"{source}: key 'env.num_players' must not be an empty list")
    if len(set(sizes)) > n_envs:
        raise ConfigError(
            f"{source}: key 'train.n_envs' must be at least the number of table sizes in env.num_players "
            f"({len(set(sizes))}: {sorted(set(sizes))}), got {n_envs}: some sizes would never be played"
        )
    for n in sizes:
        try:
            GameConfig(**env.game_kwargs(n))
        except ValueError as e:
            raise ConfigError(f"{source}: section 'env': {e}") from None
        if isinstance(env.learner_seat, int) and not 0 <= env.learner_seat < n:
            raise ConfigError(
                f"{source}: key 'env.learner_seat' must be 'random' or 0..{n - 1}, got {env.learner_seat}"
            )


def check_agent_spec(spec: str, key: str, source: str) -> None:
    """Raise :class:`~training.config.schema.ConfigError` naming ``key`` and ``source`` when ``spec`` is not a known
    agent spec.

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


def check_opponents(opponents: list[OpponentEntry], source: str) -> None:
    """Every agent spec of the ``opponents`` mixture is known (:func:`check_agent_spec`)."""
    for i, entry in enumerate(opponents):
        check_agent_spec(entry.agent, f"opponents[{i}].agent", source)


def check_eval(ev: EvalSection, env: EnvSection, source: str) -> None:
    """Every line-up of ``eval.opponents`` seats a table size of ``env.num_players`` with known agents. A single spec
    fills every other seat when ``env.num_players`` is one size: ``ev.opponents`` is rewritten in place with the
    whole line-up (``"greedy"`` at 4 players becomes ``"greedy,greedy,greedy"``).

    Raises:
        ConfigError: a line-up that does not parse, of more than 9 or of no opponents, of a table size not trained,
            or with an unknown agent.
    """
    sizes = env.table_sizes()
    for i, lineup in enumerate(ev.opponents):
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
            ev.opponents[i] = ",".join(specs)
        if len(specs) + 1 not in sizes:
            allowed = " or ".join(str(n - 1) for n in sizes)
            raise ConfigError(
                f"{source}: key 'eval.opponents[{i}]' seats {len(specs) + 1} players (the learner and {len(specs)} "
                f"opponents) but env.num_players is {env.num_players!r}: list {allowed} opponents"
            )
        for spec in specs:
            check_agent_spec(spec, f"eval.opponents[{i}]", source)


def _is_sb3_checkpoint(path: str) -> bool:
    """Whether ``path`` is a zip archive holding ``policy.pth``, as SB3's ``save`` writes."""
    import zipfile

    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        return "policy.pth" in z.namelist()


def _check_init_weights(init_from: str, algo: AlgoSection, backend: str, source: str) -> None:
    """``train.init_from`` names a ``.npz`` actor: it must read, and its hidden layers (sizes, activations) must fit
    the card policy's ``net_arch`` and ``activation_fn``: same count and activations, each layer at least as wide
    (``CardActor.fits``; checked here, before a run folder is made)."""
    from sixnimmt_env.champion import read_weights

    key = f"{source}: key 'train.init_from' {init_from!r}"
    if algo.policy != "card" or backend != "sb3":
        raise ConfigError(f"{key}: a .npz actor starts a card policy (algo.policy: card, train.backend: sb3)")
    try:
        actor, _ = read_weights(init_from)
    except ValueError as e:
        raise ConfigError(f"{key}: {e}") from None
    theirs = actor.hidden_layers()
    arch = algo.policy_kwargs.net_arch
    # CardPolicy reads {pi: A, vf: A} as A, and None as SB3's default, pi and vf [64, 64]
    sizes = list(arch.get("pi") or []) if isinstance(arch, dict) else [64, 64] if arch is None else list(arch)
    ours: list[tuple[int, str]] = [(size, algo.policy_kwargs.activation_fn) for size in sizes]
    if not actor.fits(ours):
        raise ConfigError(
            f"{key}: hidden layers (size, activation) {theirs}, but algo.policy_kwargs gives {ours}; set net_arch "
            "and activation_fn to match (same count and activations, each layer at least as wide: a wider layer "
            "starts with the file's units and zero weights out of the extra ones)"
        )
    # training.policy.mlp: with residual, each layer after the first as wide as the one before adds its input
    residual = [algo.policy_kwargs.residual and i > 0 and size == sizes[i - 1] for i, size in enumerate(sizes)]
    if actor.residual != residual:
        raise ConfigError(
            f"{key}: residual hidden layers {actor.residual}, but algo.policy_kwargs gives {residual}; set "
            "algo.policy_kwargs.residual to match"
        )


def check_train(train: TrainSection, algo: AlgoSection, source: str) -> None:
    """The ``train`` keys that apply to one backend or one vector env only (``win_bonus``, ``reward``,
    ``opponent_draw``), and ``init_from``: an SB3 checkpoint, or a ``.npz`` actor that fits ``algo``'s card policy.

    Raises:
        ConfigError: a key set where it does not apply; an ``init_from`` that is missing, of another kind, or whose
            layers do not fit.
    """
    if train.win_bonus and (train.vec_env != "batched" or train.backend != "sb3"):
        raise ConfigError(
            f"{source}: key 'train.win_bonus' applies to train.vec_env: batched with train.backend: sb3 only, got "
            f"vec_env {train.vec_env!r}, backend {train.backend!r}"
        )
    for key, value, default, why in (
        ("reward", train.reward, "penalty", "the RLlib env's reward is the penalty"),
        ("opponent_draw", train.opponent_draw, "seat", "the RLlib league draws each opponent seat on its own"),
    ):
        if value != default and train.backend != "sb3":
            raise ConfigError(
                f"{source}: key 'train.{key}' {value!r} applies to train.backend: sb3 only ({why}), "
                f"got backend {train.backend!r}"
            )
    init = train.init_from
    if init is None:
        return
    if not Path(init).is_file():
        raise ConfigError(f"{source}: key 'train.init_from' {init!r}: no such checkpoint file")
    if Path(init).suffix == ".npz":
        _check_init_weights(init, algo, train.backend, source)
    elif not _is_sb3_checkpoint(init):
        raise ConfigError(
            f"{source}: key 'train.init_from' {init!r}: neither an SB3 checkpoint (a .zip holding "
            "policy.pth) nor a .npz actor (python -m lab.train_champion --export)"
        )


def check_self_play(self_play: SelfPlaySection, train: TrainSection, source: str) -> None:
    """``self_play.current + self_play.prob`` at most 1 (shares of the opponent draws); with self-play enabled,
    ``current`` > 0 on ``train.backend: sb3`` only, not with ``train.vec_env: subproc`` (the envs' processes never see
    the learner's weights) nor ``train.normalize_obs`` (the current self plays raw observations), and
    ``pool: growing`` on ``sb3`` only (the RLlib league keeps its snapshots in module slots).

    Raises:
        ConfigError: naming the key and what excludes it.
    """
    sp = self_play
    if sp.current + sp.prob > 1.0 + 1e-9:
        raise ConfigError(
            f"{source}: keys 'self_play.current' ({sp.current:g}) and 'self_play.prob' ({sp.prob:g}) are shares of "
            f"the opponent draws: their sum must be at most 1, got {sp.current + sp.prob:g}"
        )
    if not sp.enabled:
        return
    if sp.current > 0:
        why = (
            "train.backend: rllib (the RLlib league has its own self-play)"
            if train.backend != "sb3"
            else "train.vec_env: subproc (its env processes never get the learner's weights; use batched or dummy)"
            if train.vec_env == "subproc"
            else "train.normalize_obs (the current self plays raw observations)"
            if train.normalize_obs
            else None
        )
        if why is not None:
            raise ConfigError(f"{source}: key 'self_play.current' ({sp.current:g}) does not apply with {why}")
    if sp.pool != "newest" and train.backend != "sb3":
        raise ConfigError(
            f"{source}: key 'self_play.pool' {sp.pool!r} applies to train.backend: sb3 only (the RLlib league keeps "
            f"the newest self_play.pool_size snapshots), got backend {train.backend!r}"
        )


def check_distill(distill: DistillSection, train: TrainSection, env: EnvSection, source: str) -> None:
    """``distill.enabled`` starts a fresh SB3 policy (no ``train.init_from``) on single rounds of one table size;
    ``distill.teacher`` is ``mc:N`` (N >= 1) or one of our learned card policies, ``champion[:NAME|PATH]`` or
    ``ppo:PATH``, that loads (:func:`check_agent_spec`).

    Raises:
        ConfigError: naming the key that excludes it, or the teacher's problem.
    """
    teacher = distill.teacher
    if teacher is not None:
        prefix, _, arg = teacher.partition(":")
        if prefix == "mc":
            if not arg.isdigit() or int(arg) < 1:
                raise ConfigError(f"{source}: key 'distill.teacher' {teacher!r}: expected mc:N with an integer N >= 1")
        elif prefix in ("champion", "ppo"):
            check_agent_spec(teacher, "distill.teacher", source)
        else:
            raise ConfigError(
                f"{source}: key 'distill.teacher' {teacher!r}: expected 'mc:N' or one of our learned policies, "
                "'champion', 'champion:NAME', 'champion:PATH' (a .npz) or 'ppo:PATH'"
            )
    if not distill.enabled:
        return
    if train.init_from is not None:
        raise ConfigError(f"{source}: keys 'train.init_from' and 'distill.enabled' exclude each other")
    if train.backend != "sb3":
        raise ConfigError(f"{source}: key 'distill.enabled' applies to train.backend: sb3 only")
    if env.episode != "round" or len(set(env.table_sizes())) > 1:
        raise ConfigError(f"{source}: key 'distill.enabled' needs env.episode: round and one env.num_players")


def check_checkpoint(checkpoint: CheckpointSection, backend: str, source: str) -> None:
    """``checkpoint.average`` above 1 applies to ``train.backend: sb3`` only (``backend``).

    Raises:
        ConfigError: naming the key and the backend.
    """
    if checkpoint.average > 1 and backend != "sb3":
        raise ConfigError(
            f"{source}: key 'checkpoint.average' {checkpoint.average} applies to train.backend: sb3 only, got "
            f"backend {backend!r}"
        )


_DEVICE = re.compile(r"^(cpu|auto|cuda(:\d+)?)$")


def check_device(device: str, source: str) -> None:
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


def _layer_sizes(arch: Any) -> bool:
    """Whether ``arch`` is a list of positive layer sizes."""
    return isinstance(arch, list) and all(a > 0 for a in arch)


def _check_algo(algo: AlgoSection, source: str) -> None:
    """The checks of ``algo`` with ``train.backend: sb3`` that its types do not express."""
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
    if pk.residual and algo.policy != "card":
        raise ConfigError(
            f"{source}: key 'algo.policy_kwargs.residual' goes with 'algo.policy: card', got algo.policy: {algo.policy}"
        )


def check_sb3(algo: AlgoSection, train: TrainSection, ray: RaySection, source: str) -> None:
    """The checks of ``train.backend: sb3``: no ``ray`` section, a known ``algo.policy`` and its keyword arguments,
    raw observations for the card features, and ``train.workers`` only where rollout processes apply.

    Raises:
        ConfigError: naming ``source`` and the key.
    """
    if ray != RaySection():
        raise ConfigError(f"{source}: section 'ray' applies to train.backend: rllib only (train.backend is sb3)")
    _check_algo(algo, source)
    pk = algo.policy_kwargs
    if train.normalize_obs and (algo.policy == "card" or pk.features_extractor_class is not None):
        raise ConfigError(
            f"{source}: key 'train.normalize_obs' must be false with card features (algo.policy: card or "
            "features_extractor_class: card_features): they read card values from the raw observation"
        )
    workers = train.workers
    if workers is not None and workers > 1:
        if train.normalize_obs:
            raise ConfigError(
                f"{source}: key 'train.workers' must be 1 (or null) with train.normalize_obs: the observation "
                f"statistics live in the learner's process; got {workers}"
            )
        if train.vec_env == "subproc":
            raise ConfigError(
                f"{source}: key 'train.workers' must be 1 (or null) with train.vec_env: subproc (its envs already "
                f"run one per process); use vec_env batched or dummy with workers, got {workers}"
            )


_ADDRESS = re.compile(r"^(auto|(ray://)?[A-Za-z0-9_.\-]+:\d{1,5})$")


def check_rllib(algo: AlgoSection, train: TrainSection, ray: RaySection, source: str) -> None:
    """The checks of ``train.backend: rllib`` (:data:`~training.config.rllib_settings.ALGO_TO_RLLIB`), before Ray
    starts: the ``algo`` keys RLlib reads, the SB3-only ``train`` keys at their defaults, a Ray address, the CPUs and
    GPUs asked for, the minibatch within the train batch.

    Raises:
        ConfigError: naming ``source`` and the key.
    """
    for k in algo.model_fields_set:
        if k not in RLLIB_ALGO_KEYS:
            raise ConfigError(
                f"{source}: unknown key 'algo.{k}' for train.backend: rllib; allowed: {', '.join(RLLIB_ALGO_KEYS)}"
            )
    policy = rllib_policy(algo)
    if policy not in RLLIB_POLICIES:
        raise ConfigError(f"{source}: key 'algo.policy' must be one of {', '.join(RLLIB_POLICIES)}, got {policy!r}")
    pk = algo.policy_kwargs
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
        if getattr(train, key) != getattr(defaults, key):
            raise ConfigError(
                f"{source}: key 'train.{key}' does not apply to train.backend: rllib (got "
                f"{getattr(train, key)!r}); the envs are ray.num_env_runners x ray.num_envs_per_env_runner"
            )

    r = ray
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
    elif r.num_cpus is not None and cpus_needed(r) > r.num_cpus:
        key = "ray.num_learners" if r.num_learners else "ray.num_env_runners"
        raise ConfigError(
            f"{source}: key '{key}': {r.num_env_runners} runners x {r.num_cpus_per_env_runner} CPUs "
            f"+ {r.num_learners} learners x {r.num_cpus_per_learner} CPUs need {cpus_needed(r):g} CPUs, "
            f"more than ray.num_cpus = {r.num_cpus}"
        )
    if r.address is None and (r.num_gpus_per_env_runner > 0 or r.num_gpus_per_learner > 0):
        import torch

        if not torch.cuda.is_available():
            key = "ray.num_gpus_per_learner" if r.num_gpus_per_learner > 0 else "ray.num_gpus_per_env_runner"
            raise ConfigError(f"{source}: key '{key}' asks for a GPU, and this machine has none (torch sees no CUDA)")
    if r.num_gpus_per_learner > 0 and r.num_learners == 0 and train.device == "cpu":
        raise ConfigError(
            f"{source}: key 'ray.num_gpus_per_learner' needs ray.num_learners >= 1 (the local learner uses "
            "train.device)"
        )
    batch = train_batch_size(algo, r)
    minibatch = algo.batch_size
    if "batch_size" in algo.model_fields_set and minibatch > batch // max(r.num_learners, 1):
        raise ConfigError(
            f"{source}: key 'algo.batch_size' ({minibatch}) is larger than the train batch per learner "
            f"({batch // max(r.num_learners, 1)} = algo.n_steps {n_steps(algo)} x {num_envs(r)} envs"
            f"{' / ' + str(r.num_learners) + ' learners' if r.num_learners > 1 else ''})"
        )
