"""Distillation: label positions with a teacher and train the card policy to imitate it (issues 13 and 58).

The teacher (``distill.teacher``, :func:`parse_teacher`) is one of the project's own agents:

- ``mc:N``, the batched search (:class:`sixnimmt_env.compiled.mc.MonteCarloPlayers`): it scores every candidate of a
  decision (each held card in card selection, R5; each row for a low card, R9) by the mean over N sampled worlds of
  the bullheads its seat takes to the end of the round minus the opponents' mean; its distribution is
  ``softmax(-score / temperature)``.
- a learned card policy: ``champion``, ``champion:NAME`` (e.g. ``champion:stage-8``), ``champion:PATH`` (a ``.npz``
  of :class:`sixnimmt_env.champion.CardActor`) or ``ppo:PATH`` (a MaskablePPO checkpoint); its distribution is the
  softmax of its masked logits. Its labels store ``scores = -logits``, so the same ``softmax(-score / T)`` is the
  teacher's own policy at ``T = 1`` (and its policy at temperature T otherwise).

Two steps turn a teacher into a policy that is cheap to play:

1. :func:`label_positions` (``mc:N``) or :func:`label_policy_positions` (a learned policy) plays batches of games on
   the compiled engine in which every seat is the teacher and plays a sample of the teacher's distribution (with a
   small share of uniformly random legal actions): fresh self-play decisions. For every real decision (two legal
   actions or more) it keeps the seat's observation, its legal-action mask, the candidates' scores and the
   bullheads the seat went on to take to the end of the round.
2. :func:`fit_policy` trains a :class:`training.policy.CardPolicy` on them: the actor by cross-entropy to the
   teacher's distribution over the legal actions, the critic by regression on minus the bullheads still to come
   (the return of a round episode, as the PPO reward counts it).

A training config's ``distill:`` section (:class:`training.config.schema.DistillSection`) runs both steps on the
run's fresh policy before PPO (:func:`distill_into`, called by :func:`training.sb3_backend.train_sb3`); the labels and
the figures go to ``RUN/distill/``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sixnimmt_env.compiled.core import BatchedGames
from sixnimmt_env.compiled.mc import MonteCarloPlayers
from sixnimmt_env.observation import OBS_SIZE
from sixnimmt_env.rules.engine import HAND_SIZE, NUM_ACTIONS, GameConfig

if TYPE_CHECKING:
    from training.config.schema import DistillSection

POLICY_TEACHERS = ("champion", "ppo")
"""The prefixes of the learned teachers' specs (:func:`parse_teacher`): ``champion[:NAME|PATH]`` and ``ppo:PATH``."""

Teacher = int | str
"""A teacher as the labellers read it, an ``int`` N for the search ``mc:N`` or a learned policy's spec."""

Scorer = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
"""One step of a teacher inside the labelling loop, ``scorer(obs, mask, actions)``, with every seat's observation
``float32 (B, n, OBS_SIZE)`` and mask ``int8 (B, n, 109)``; it fills ``actions`` (``int64 (B, n)``) with an action
for every seat of every unfinished game and returns the labelled decisions ``(games, seats, scores)``: two
``int64 (k,)`` index arrays and the scores ``float64 (k, 109)`` (``nan`` off the legal actions; lower is better)."""


@dataclass
class Labels:
    """Labelled decisions, one row each (M rows).

    Attributes:
        obs: ``float32 (M, OBS_SIZE)``: the deciding seat's observation.
        mask: ``bool (M, 109)``: its legal actions.
        scores: ``float32 (M, 109)``: the teacher's score per legal action, lower is better; ``nan`` for illegal
            actions. For ``mc:N``, the mean score in bullheads (own minus the opponents' mean, to the end of the
            round); for a learned teacher, minus its logits (so ``softmax(-scores)`` is its policy).
        returns: ``float32 (M,)``: minus the bullheads the seat took from this decision to the end of the round.
        teacher: the teacher's spec (``"mc:64"``, ``"champion:stage-8"``); ``""`` when unknown (older files).
    """

    obs: np.ndarray
    mask: np.ndarray
    scores: np.ndarray
    returns: np.ndarray
    teacher: str = ""

    def __len__(self) -> int:
        return len(self.returns)

    def save(self, path: str | Path) -> Path:
        """Write the labels to ``path`` (``.npz``, compressed) and return it."""
        path = Path(path)
        np.savez_compressed(
            path, obs=self.obs, mask=self.mask, scores=self.scores, returns=self.returns, teacher=np.array(self.teacher)
        )
        return path

    @classmethod
    def load(cls, path: str | Path) -> Labels:
        """Read labels written by :meth:`save`."""
        with np.load(path) as f:
            teacher = str(f["teacher"]) if "teacher" in f.files else ""
            return cls(f["obs"], f["mask"], f["scores"], f["returns"], teacher)


def teacher_probs(scores: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(-scores / temperature)`` over the finite entries of each row: ``float64`` of the shape of ``scores``.

    Raises:
        ValueError: a temperature that is not > 0, or a row without a finite score.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    finite = np.isfinite(scores)
    if not finite.any(axis=-1).all():
        raise ValueError("every row needs at least one finite score")
    z = np.where(finite, -np.asarray(scores, np.float64) / temperature, -np.inf)
    z -= z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=-1, keepdims=True)


def parse_teacher(teacher: Teacher) -> Teacher:
    """A teacher as the labellers take it: ``N`` (an ``int``) for ``mc:N`` or ``N`` itself, else the learned policy's
    spec unchanged (``champion``, ``champion:NAME``, ``champion:PATH``, ``ppo:PATH``; the weights are read when the
    labelling starts, :func:`policy_logits`).

    Raises:
        ValueError: N < 1, an ``mc:`` argument that is not an integer, or another kind of agent (the teachers are the
            project's own: the search or a learned card policy).
    """
    if isinstance(teacher, bool) or not isinstance(teacher, int | np.integer | str):
        raise ValueError(f"teacher must be 'mc:N' or a learned policy's spec, got {teacher!r}")
    if not isinstance(teacher, str):
        if teacher < 1:
            raise ValueError(f"teacher mc:N needs N >= 1, got {teacher}")
        return int(teacher)
    prefix, colon, arg = teacher.partition(":")
    if prefix == "mc":
        if not arg.isdigit() or int(arg) < 1:
            raise ValueError(f"teacher {teacher!r}: expected mc:N with an integer N >= 1 (worlds per decision)")
        return int(arg)
    if prefix in POLICY_TEACHERS and (prefix == "champion" or arg) and (arg or not colon):
        return teacher
    raise ValueError(
        f"teacher {teacher!r}: expected 'mc:N' or a learned policy: 'champion', 'champion:NAME', 'champion:PATH' "
        "(a .npz of weights) or 'ppo:PATH' (a MaskablePPO checkpoint)"
    )


def teacher_name(teacher: Teacher) -> str:
    """The spec of a teacher of :func:`parse_teacher` (``8`` gives ``"mc:8"``)."""
    return f"mc:{teacher}" if isinstance(teacher, int | np.integer) else str(teacher)


def policy_logits(spec: str, num_players: int) -> Callable[[np.ndarray], np.ndarray]:
    """The logits of a learned teacher at a table of ``num_players``: a function from observations ``float32 (k,
    OBS_SIZE)`` to logits ``float32 (k, 109)`` (unmasked), in numpy.

    ``champion`` gives the weights it plays at that table size (:meth:`sixnimmt_env.champion.ChampionAgent.actor_for`),
    ``champion:NAME`` and ``champion:PATH`` their one file; ``ppo:PATH`` the checkpoint's actor
    (:meth:`training.ppo_agents.PolicyAgent.logits`, with its observation normalisation if it has one).

    Raises:
        ValueError: not a learned teacher's spec, or weights that do not load.
    """
    prefix = spec.partition(":")[0]
    if prefix == "champion":
        from sixnimmt_env.champion import load_champion

        return load_champion(spec).actor_for(num_players).logits
    if prefix == "ppo":
        from training.ppo_agents import load_policy_agent

        agent = load_policy_agent(spec)
        return lambda obs: np.asarray(agent.logits(obs), np.float32)
    raise ValueError(f"teacher {spec!r}: not a learned policy (expected champion[:NAME|PATH] or ppo:PATH)")


class _Rows:
    """A growing array of rows filled in order: ``capacity`` rows at first, half as many again when it runs out
    (labels of millions of decisions are kept once, not as a list of pieces and their concatenation)."""

    def __init__(self, capacity: int, shape: tuple[int, ...], dtype: type) -> None:
        self.data: np.ndarray = np.empty((max(capacity, 1), *shape), dtype)
        self.size = 0

    def extend(self, rows: np.ndarray) -> None:
        end = self.size + len(rows)
        if end > len(self.data):
            bigger = np.empty((max(end, len(self.data) * 3 // 2), *self.data.shape[1:]), self.data.dtype)
            bigger[: self.size] = self.data[: self.size]
            self.data = bigger
        self.data[self.size : end] = rows
        self.size = end

    def rows(self) -> np.ndarray:
        """The rows filled so far (a view)."""
        return self.data[: self.size]


def _play_and_label(
    config: GameConfig,
    decisions: int,
    batch_size: int,
    temperature: float,
    epsilon: float,
    seed: int | list[int],
    progress: Callable[[int], None] | None,
    make_scorer: Callable[[BatchedGames, int], Scorer],
    teacher: str,
) -> Labels:
    """The labelling loop of both teachers: ``batch_size`` games in lockstep, every seat the teacher
    (``make_scorer(games, teacher_seed)``), each labelled decision played by a draw of ``softmax(-score /
    temperature)`` (``epsilon`` of them uniformly at random among the legal actions) until ``decisions`` are labelled
    and the games in play are over. See :func:`label_positions` for the arguments and the errors."""
    if decisions < 1:
        raise ValueError(f"decisions must be >= 1, got {decisions}")
    if config.episode != "round":
        raise ValueError(f"distillation labels one-round episodes; got episode={config.episode!r}")
    n, B = config.num_players, batch_size
    streams = np.random.SeedSequence(seed).spawn(3)
    games = BatchedGames(config, B, seed=int(streams[0].generate_state(1)[0]))
    score = make_scorer(games, int(streams[1].generate_state(1)[0]))
    rng = np.random.default_rng(streams[2])
    obs = np.empty((B, n, OBS_SIZE), np.float32)
    mask = np.empty((B, n, NUM_ACTIONS), np.int8)
    actions = np.empty((B, n), np.int64)
    # past the count, the games in play still decide: at most 2 decisions per seat and turn (a card, a row)
    capacity = decisions + B * n * (2 * HAND_SIZE + 1)
    kept_obs = _Rows(capacity, (OBS_SIZE,), np.float32)
    kept_mask = _Rows(capacity, (NUM_ACTIONS,), np.bool_)
    kept_scores = _Rows(capacity, (NUM_ACTIONS,), np.float32)
    kept_episode, kept_seat, kept_before = (_Rows(capacity, (), np.int64) for _ in range(3))
    episode = np.arange(B)  # the episode id of each slot
    next_episode = B
    finals = _Rows(2 * B, (n,), np.int64)  # row e: the round penalties at the end of episode e
    finals.extend(np.zeros((B, n), np.int64))
    count = 0
    while count < decisions or not games.done.all():  # past the count, the games in play are finished
        games.observe(obs)
        games.legal_mask(mask)
        b_idx, s_idx, sc = score(obs, mask, actions)
        if len(b_idx):
            p = teacher_probs(sc, temperature)
            cdf = p.cumsum(axis=1)
            drawn = np.minimum((cdf < rng.random((len(p), 1)) * cdf[:, -1:]).sum(axis=1), NUM_ACTIONS - 1)
            legal = mask[b_idx, s_idx].astype(bool)
            drawn = np.where(legal[np.arange(len(drawn)), drawn], drawn, np.nanargmin(sc, axis=1))
            uniform = rng.random(len(p)) < epsilon
            for i in np.flatnonzero(uniform):
                drawn[i] = rng.choice(np.flatnonzero(legal[i]))
            actions[b_idx, s_idx] = drawn
            kept_obs.extend(obs[b_idx, s_idx])
            kept_mask.extend(legal)
            kept_scores.extend(sc.astype(np.float32))
            kept_episode.extend(episode[b_idx])
            kept_seat.extend(s_idx)
            kept_before.extend(games.round_pen[b_idx, s_idx].astype(np.int64))
            count += len(b_idx)
        games.step(actions, check=False)
        done = np.flatnonzero(games.done)
        finals.data[episode[done]] = games.round_pen[done].astype(np.int64)
        if len(done) and count < decisions:
            episode[done] = np.arange(next_episode, next_episode + len(done))
            next_episode += len(done)
            finals.extend(np.zeros((len(done), n), np.int64))
            games.reset_done()
        if progress is not None:
            progress(count)
    final = finals.rows()[kept_episode.rows(), kept_seat.rows()]
    return Labels(
        kept_obs.rows(),
        kept_mask.rows(),
        kept_scores.rows(),
        -(final - kept_before.rows()).astype(np.float32),
        teacher,
    )


def label_positions(
    config: GameConfig,
    decisions: int,
    samples: int,
    batch_size: int = 256,
    temperature: float = 1.0,
    epsilon: float = 0.05,
    seed: int | list[int] = 0,
    progress: Callable[[int], None] | None = None,
) -> Labels:
    """Play games with every seat labelled by ``mc:samples`` until at least ``decisions`` decisions are labelled.

    Args:
        config: the rules (one-round episodes: the returns end with the round).
        decisions: how many labelled decisions to collect (>= 1); the games in play when the count is reached are
            played to their end (and labelled), so up to ``40 * batch_size`` more may come.
        samples: N of the teacher ``mc:N`` (worlds per decision).
        batch_size: games played in lockstep.
        temperature: each seat plays a sample of ``softmax(-score / temperature)`` (bullheads).
        epsilon: the share of decisions played uniformly at random among the legal actions instead.
        seed: seeds the deals, the teacher's worlds and the behaviour's draws.
        progress: called with the number of decisions labelled so far after each step.

    Returns:
        The :class:`Labels` of the decisions in play order (``teacher`` ``"mc:samples"``).

    Raises:
        ValueError: ``decisions`` < 1, or a config whose episodes are whole games.
    """

    def make_scorer(games: BatchedGames, teacher_seed: int) -> Scorer:
        teacher = MonteCarloPlayers(games, np.ones(config.num_players, np.bool_), samples, seed=teacher_seed)
        scores = np.empty((games.batch_size, config.num_players, NUM_ACTIONS), np.float64)
        own = np.empty_like(scores)

        def score(obs: np.ndarray, mask: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            scores.fill(np.nan)
            teacher.act(actions, scores, own)
            b_idx, s_idx = np.nonzero(np.isfinite(scores).any(axis=2))
            return b_idx, s_idx, scores[b_idx, s_idx]

        return score

    return _play_and_label(
        config, decisions, batch_size, temperature, epsilon, seed, progress, make_scorer, f"mc:{samples}"
    )


def label_policy_positions(
    config: GameConfig,
    decisions: int,
    teacher: str | Callable[[np.ndarray], np.ndarray],
    batch_size: int = 256,
    temperature: float = 1.0,
    epsilon: float = 0.05,
    seed: int | list[int] = 0,
    progress: Callable[[int], None] | None = None,
) -> Labels:
    """Fresh self-play decisions of a learned teacher: games where every seat plays a sample of the teacher's policy,
    until at least ``decisions`` decisions are labelled with its logits.

    Every seat with two legal actions or more decides (the same decisions as ``mc:N``'s in the standard game: a
    card from a hand of two or more, the chooser's row; in the logic variant the draft picks too); a forced action is
    played and not kept. The labels' ``scores`` are minus the teacher's logits at the legal actions (``nan``
    elsewhere), so :func:`teacher_probs` at temperature 1 is exactly the teacher's masked softmax.

    Args:
        config: the rules (one-round episodes: the returns end with the round).
        decisions: how many labelled decisions to collect (>= 1); the games in play when the count is reached are
            played to their end (and labelled), as in :func:`label_positions`.
        teacher: a learned policy's spec (:func:`parse_teacher`: ``champion``, ``champion:NAME``, ``champion:PATH``,
            ``ppo:PATH``), or its logits function (``float32 (k, OBS_SIZE)`` to ``float32 (k, 109)``).
        batch_size: games played in lockstep (one batched forward pass of the teacher per step).
        temperature: each seat plays a sample of ``softmax(logits / temperature)``; 1 is the teacher's own policy.
        epsilon: the share of decisions played uniformly at random among the legal actions instead.
        seed: seeds the deals and the behaviour's draws (the teacher itself draws nothing).
        progress: called with the number of decisions labelled so far after each step.

    Returns:
        The :class:`Labels` of the decisions in play order; ``teacher`` is the spec (``""`` for a function).

    Raises:
        ValueError: ``decisions`` < 1, a config whose episodes are whole games, or a spec that is not a learned
            teacher or does not load (:func:`policy_logits`).
    """
    logits_of = policy_logits(teacher, config.num_players) if isinstance(teacher, str) else teacher

    def make_scorer(games: BatchedGames, teacher_seed: int) -> Scorer:
        def score(obs: np.ndarray, mask: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            np.argmax(mask, axis=2, out=actions)  # a forced action (or the no-op) where a seat does not decide
            b_idx, s_idx = np.nonzero((mask != 0).sum(axis=2) >= 2)
            if not len(b_idx):  # no seat decides this step (every hand down to its forced last card)
                return b_idx, s_idx, np.empty((0, NUM_ACTIONS))
            logits = np.asarray(logits_of(obs[b_idx, s_idx]), np.float32).astype(np.float64)
            return b_idx, s_idx, np.where(mask[b_idx, s_idx] != 0, -logits, np.nan)

        return score

    name = teacher if isinstance(teacher, str) else ""
    return _play_and_label(config, decisions, batch_size, temperature, epsilon, seed, progress, make_scorer, name)


def label_teacher(
    config: GameConfig,
    decisions: int,
    teacher: Teacher,
    batch_size: int = 256,
    temperature: float = 1.0,
    epsilon: float = 0.05,
    seed: int | list[int] = 0,
    progress: Callable[[int], None] | None = None,
) -> Labels:
    """:func:`label_positions` for ``mc:N`` (``teacher`` N or ``"mc:N"``), :func:`label_policy_positions` for a learned
    policy's spec; the same arguments and errors, and those of :func:`parse_teacher`."""
    parsed = parse_teacher(teacher)
    if isinstance(parsed, int):
        return label_positions(config, decisions, parsed, batch_size, temperature, epsilon, seed, progress)
    return label_policy_positions(config, decisions, parsed, batch_size, temperature, epsilon, seed, progress)


_FIELDS = ("obs", "mask", "scores", "returns")


def _label_shard(folder: str, *args: Any) -> int:
    """A worker's shard: :func:`label_teacher` with ``args``, each field written to ``folder/FIELD.npy`` (the shard
    goes back through a file rather than a pickle, which would hold a second copy in both processes); its length."""
    labels = label_teacher(*args)
    for field in _FIELDS:
        np.save(Path(folder, f"{field}.npy"), getattr(labels, field))
    return len(labels)


def label_in_parallel(
    config: GameConfig,
    decisions: int,
    teacher: Teacher,
    batch_size: int = 256,
    temperature: float = 1.0,
    epsilon: float = 0.05,
    seed: int = 0,
    workers: int = 1,
    log: Callable[[str], None] | None = None,
) -> Labels:
    """:func:`label_teacher` split over ``workers`` processes, each labelling ``decisions / workers`` decisions
    with its own seed (``[seed, k]`` for shard k); the shards are concatenated in order. With one worker, the
    labels of :func:`label_teacher` with ``seed``. Same arguments and workers, same labels.

    ``teacher`` is N (an ``int``) or ``"mc:N"`` for the search, or a learned policy's spec (:func:`parse_teacher`).
    The shards come back through temporary ``.npy`` files and are copied once into the result, so the labels of
    millions of decisions take their own size in memory (``obs`` alone: 2,024 bytes per decision), not twice it.

    Raises:
        ValueError: ``workers`` < 1, and the errors of :func:`label_teacher`.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    teacher = parse_teacher(teacher)
    name = teacher_name(teacher)
    if workers == 1:
        last = [time.perf_counter()]

        def progress(count: int) -> None:
            if log is not None and time.perf_counter() - last[0] > 60:
                last[0] = time.perf_counter()
                log(f"labelled {count:,} of {decisions:,} decisions with {name}")

        return label_teacher(config, decisions, teacher, batch_size, temperature, epsilon, seed, progress)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    share = -(-decisions // workers)
    with tempfile.TemporaryDirectory(prefix="sixnimmt-labels-") as tmp:
        folders = [Path(tmp, str(k)) for k in range(workers)]
        for folder in folders:
            folder.mkdir()
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [
                pool.submit(
                    _label_shard, str(folder), config, share, teacher, batch_size, temperature, epsilon, [seed, k]
                )
                for k, folder in enumerate(folders)
            ]
            sizes = []
            for k, future in enumerate(futures):
                sizes.append(future.result())
                if log is not None:
                    log(f"labelled shard {k + 1} of {workers}: {sizes[-1]:,} decisions with {name}")
        out = []
        for field in _FIELDS:
            parts = [np.load(Path(folder, f"{field}.npy"), mmap_mode="r") for folder in folders]
            whole = np.empty((sum(sizes), *parts[0].shape[1:]), parts[0].dtype)
            np.concatenate(parts, out=whole)
            del parts
            out.append(whole)
    return Labels(out[0], out[1], out[2], out[3], name)


def fit_policy(
    policy: object,
    labels: Labels,
    epochs: int = 4,
    batch_size: int = 4096,
    learning_rate: float = 1e-3,
    temperature: float = 1.0,
    value_coef: float = 0.05,
    holdout: float = 0.05,
    seed: int = 0,
    log: Callable[[str], None] = print,
) -> dict[str, float]:
    """Train ``policy`` (a :class:`training.policy.CardPolicy`) on ``labels``: actor and critic, in place.

    The actor's loss is the cross-entropy from the teacher's distribution (:func:`teacher_probs` at
    ``temperature``) to the policy's masked distribution; the critic's is ``value_coef`` times the squared error
    to ``labels.returns`` (bullheads). A ``holdout`` share of the labels is kept out to report how often the
    policy's most likely action is the teacher's best (``agreement``) and the held-out cross-entropy.

    Returns:
        ``{"agreement", "cross_entropy", "value_rmse", "seconds"}`` on the held-out labels.

    Raises:
        ValueError: ``epochs`` > 0 with fewer training labels (after the holdout) than ``batch_size``: no full
            batch to train on.
    """
    import torch

    start = time.perf_counter()
    gen = np.random.default_rng(seed)
    order = gen.permutation(len(labels))
    n_hold = max(1, int(len(labels) * holdout))
    hold, train = order[:n_hold], order[n_hold:]
    if epochs > 0 and len(train) < batch_size:
        raise ValueError(
            f"fit_policy: {len(train)} training labels ({len(labels)} less the {n_hold} held out) are fewer than "
            f"batch_size={batch_size}; label more decisions or give a smaller batch_size"
        )
    teacher_probs(labels.scores[:1], temperature)  # a bad temperature fails before any work
    best = np.full(len(labels), -1, np.int64)  # the teacher's best action, wanted on the held-out rows only
    best[hold] = np.nanargmin(labels.scores[hold], axis=1)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)  # type: ignore[attr-defined]
    steps = epochs * (len(train) // batch_size)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max(steps, 1))

    def losses(idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        obs = torch.as_tensor(labels.obs[idx])
        dist = policy.get_distribution(obs, action_masks=labels.mask[idx])  # type: ignore[attr-defined]
        log_p = dist.log_p
        # the targets of each minibatch (row by row, the numbers of one call on all labels), not of all M at once
        target = torch.as_tensor(teacher_probs(labels.scores[idx], temperature).astype(np.float32))
        ce = -(target * log_p.clamp(min=-1e4)).sum(dim=1).mean()
        values = policy.predict_values(obs).squeeze(1)  # type: ignore[attr-defined]
        mse = ((values - torch.as_tensor(labels.returns[idx])) ** 2).mean()
        return ce, mse, log_p

    policy.train()  # type: ignore[attr-defined]
    for epoch in range(epochs):
        gen.shuffle(train)
        for i in range(len(train) // batch_size):
            idx = np.sort(train[i * batch_size : (i + 1) * batch_size])
            ce, mse, _ = losses(idx)
            loss = ce + value_coef * mse
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
        log(f"distill epoch {epoch + 1}/{epochs}: train cross-entropy {ce.item():.4f}, value mse {mse.item():.2f}")
    policy.eval()  # type: ignore[attr-defined]
    with torch.no_grad():
        ce_sum, mse_sum, agree = 0.0, 0.0, 0
        for i in range(0, n_hold, batch_size):
            idx = hold[i : i + batch_size]
            ce, mse, log_p = losses(idx)
            ce_sum += ce.item() * len(idx)
            mse_sum += mse.item() * len(idx)
            agree += int((log_p.argmax(dim=1).numpy() == best[idx]).sum())
    return {
        "agreement": agree / n_hold,
        "cross_entropy": ce_sum / n_hold,
        "value_rmse": float(np.sqrt(mse_sum / n_hold)),
        "seconds": time.perf_counter() - start,
    }


def distill_into(
    policy: object,
    d: DistillSection,
    game: GameConfig,
    seed: int,
    out_dir: Path,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The ``distill:`` stage of a training run: label positions with the section's teacher (``distill.teacher``, by
    default ``mc:{samples}``), fit ``policy`` on them in place.

    Args:
        policy: the run's fresh :class:`training.policy.CardPolicy` (or any masked actor-critic policy).
        d: the config's ``distill`` section (the settings).
        game: the game the run trains on (one table size, single rounds).
        seed: the run's seed (``train.seed``), for the labelling and the fit.
        out_dir: created; receives ``labels.npz`` and ``distill.json`` (the settings and the held-out figures).
        log: where each progress line goes.

    Returns:
        The figures of :func:`fit_policy`, with ``settings`` (the section), ``teacher`` (its spec), ``labels``
        (count), ``label_seconds`` (the labelling, without writing ``labels.npz``), ``save_seconds`` (writing it),
        ``label_rate`` (decisions labelled per second) and ``fit_rate`` (decisions fitted per second: labels times
        epochs over the fit's seconds).

    Raises:
        ValueError: the errors of :func:`label_in_parallel` and :func:`fit_policy`.
    """
    import json

    import torch

    out_dir.mkdir(parents=True, exist_ok=True)
    teacher = teacher_name(parse_teacher(d.teacher or d.samples))
    start = time.perf_counter()
    labels = label_in_parallel(
        game,
        d.decisions,
        teacher,
        d.games,
        d.temperature,
        d.epsilon,
        seed,
        d.workers,
        log=lambda line: log(f"distill: {line}"),
    )
    label_seconds = time.perf_counter() - start
    labels.save(out_dir / "labels.npz")
    save_seconds = time.perf_counter() - start - label_seconds
    log(
        f"distill: {len(labels):,} decisions labelled by {teacher} in {label_seconds:.0f} s "
        f"({len(labels) / label_seconds:,.0f} per second; written in {save_seconds:.0f} s)"
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(d.fit_threads or d.workers)  # by default the fit gets the cores the labelling had
    try:
        figures = fit_policy(
            policy,
            labels,
            d.epochs,
            d.batch_size,
            d.learning_rate,
            d.fit_temperature,
            d.value_coef,
            seed=seed,
            log=lambda line: log(f"distill: {line}"),
        )
    finally:
        torch.set_num_threads(threads)
    info = {
        "settings": d.model_dump(),
        "teacher": teacher,
        "labels": len(labels),
        "label_seconds": label_seconds,
        "save_seconds": save_seconds,
        "label_rate": len(labels) / label_seconds,
        "fit_rate": len(labels) * d.epochs / figures["seconds"],
        **figures,
    }
    (out_dir / "distill.json").write_text(json.dumps(info, indent=2) + "\n")
    log(
        f"distill: held-out agreement with {teacher} {figures['agreement']:.3f}, "
        f"cross-entropy {figures['cross_entropy']:.3f}, value RMSE {figures['value_rmse']:.2f} bullheads "
        f"(fit: {info['fit_rate']:,.0f} decisions per second)"
    )
    return info
