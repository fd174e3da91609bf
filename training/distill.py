"""Search distillation: label positions with ``mc:N`` and train the card policy to imitate it (issue 13).

The batched ``mc:N`` player (:class:`sixnimmt_env.compiled.mc.MonteCarloPlayers`) scores every candidate of a
decision (each held card in card selection, R5; each row for a low card, R9) by the mean over N sampled worlds of
the bullheads its seat takes to the end of the round minus the opponents' mean. Two steps turn those scores into a
policy that searches nothing:

1. :func:`label_positions` plays batches of games in which every seat is labelled by ``mc:N`` and plays a sample
   of the teacher's distribution ``softmax(-score / temperature)`` (with a small share of uniformly random legal
   actions), and keeps, for every real decision, the seat's observation, its legal-action mask, the candidates'
   scores and the bullheads the seat went on to take to the end of the round.
2. :func:`fit_policy` trains a :class:`training.policy.CardPolicy` on them: the actor by cross-entropy to the
   teacher's distribution over the legal actions, the critic by regression on minus the bullheads still to come
   (the return of a round episode, as the PPO reward counts it).

A training config's ``distill:`` section (:class:`training.config.schema.DistillSection`) runs both steps on the
run's fresh policy before PPO (:func:`distill_into`, called by :func:`training.sb3_backend.train_sb3`); the labels and
the figures go to ``RUN/distill/``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sixnimmt_env.compiled.core import BatchedGames
from sixnimmt_env.compiled.mc import MonteCarloPlayers
from sixnimmt_env.observation import OBS_SIZE
from sixnimmt_env.rules.engine import NUM_ACTIONS, GameConfig

if TYPE_CHECKING:
    from training.config.schema import DistillSection


@dataclass
class Labels:
    """Labelled decisions, one row each (M rows).

    Attributes:
        obs: ``float32 (M, OBS_SIZE)``: the deciding seat's observation.
        mask: ``bool (M, 109)``: its legal actions.
        scores: ``float32 (M, 109)``: the teacher's mean score per legal action, in bullheads (own minus the
            opponents' mean, to the end of the round; lower is better); ``nan`` for illegal actions.
        returns: ``float32 (M,)``: minus the bullheads the seat took from this decision to the end of the round.
    """

    obs: np.ndarray
    mask: np.ndarray
    scores: np.ndarray
    returns: np.ndarray

    def __len__(self) -> int:
        return len(self.returns)

    def save(self, path: str | Path) -> Path:
        """Write the labels to ``path`` (``.npz``, compressed) and return it."""
        path = Path(path)
        np.savez_compressed(path, obs=self.obs, mask=self.mask, scores=self.scores, returns=self.returns)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Labels:
        """Read labels written by :meth:`save`."""
        with np.load(path) as f:
            return cls(f["obs"], f["mask"], f["scores"], f["returns"])


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
        The :class:`Labels` of the decisions in play order.

    Raises:
        ValueError: ``decisions`` < 1, or a config whose episodes are whole games.
    """
    if decisions < 1:
        raise ValueError(f"decisions must be >= 1, got {decisions}")
    if config.episode != "round":
        raise ValueError(f"distillation labels one-round episodes; got episode={config.episode!r}")
    n, B = config.num_players, batch_size
    streams = np.random.SeedSequence(seed).spawn(3)
    games = BatchedGames(config, B, seed=int(streams[0].generate_state(1)[0]))
    teacher = MonteCarloPlayers(games, np.ones(n, np.bool_), samples, seed=int(streams[1].generate_state(1)[0]))
    rng = np.random.default_rng(streams[2])
    obs = np.empty((B, n, OBS_SIZE), np.float32)
    mask = np.empty((B, n, NUM_ACTIONS), np.int8)
    scores = np.empty((B, n, NUM_ACTIONS), np.float64)
    own = np.empty((B, n, NUM_ACTIONS), np.float64)
    actions = np.empty((B, n), np.int64)
    kept_obs, kept_mask, kept_scores, kept_episode, kept_seat, kept_before = [], [], [], [], [], []
    episode = np.arange(B)  # the episode id of each slot
    next_episode = B
    finals: dict[int, np.ndarray] = {}
    count = 0
    while count < decisions or not games.done.all():  # past the count, the games in play are finished
        games.observe(obs)
        games.legal_mask(mask)
        scores.fill(np.nan)
        teacher.act(actions, scores, own)
        labelled = np.isfinite(scores).any(axis=2)
        b_idx, s_idx = np.nonzero(labelled)
        if len(b_idx):
            sc = scores[b_idx, s_idx]
            p = teacher_probs(sc, temperature)
            cdf = p.cumsum(axis=1)
            drawn = np.minimum((cdf < rng.random((len(p), 1)) * cdf[:, -1:]).sum(axis=1), NUM_ACTIONS - 1)
            legal = mask[b_idx, s_idx].astype(bool)
            drawn = np.where(legal[np.arange(len(drawn)), drawn], drawn, np.nanargmin(sc, axis=1))
            uniform = rng.random(len(p)) < epsilon
            for i in np.flatnonzero(uniform):
                drawn[i] = rng.choice(np.flatnonzero(legal[i]))
            actions[b_idx, s_idx] = drawn
            kept_obs.append(obs[b_idx, s_idx].copy())
            kept_mask.append(legal)
            kept_scores.append(sc.astype(np.float32))
            kept_episode.append(episode[b_idx])
            kept_seat.append(s_idx)
            kept_before.append(games.round_pen[b_idx, s_idx].astype(np.int64))
            count += len(b_idx)
        games.step(actions, check=False)
        done = np.flatnonzero(games.done)
        for b in done:
            finals[int(episode[b])] = games.round_pen[b].astype(np.int64).copy()
        if len(done) and count < decisions:
            episode[done] = np.arange(next_episode, next_episode + len(done))
            next_episode += len(done)
            games.reset_done()
        if progress is not None:
            progress(count)
    ep = np.concatenate(kept_episode)
    seat = np.concatenate(kept_seat)
    before = np.concatenate(kept_before)
    final = np.array([finals[e][s] for e, s in zip(ep.tolist(), seat.tolist(), strict=True)], np.int64)
    return Labels(
        np.concatenate(kept_obs),
        np.concatenate(kept_mask),
        np.concatenate(kept_scores),
        -(final - before).astype(np.float32),
    )


def label_in_parallel(
    config: GameConfig,
    decisions: int,
    samples: int,
    batch_size: int = 256,
    temperature: float = 1.0,
    epsilon: float = 0.05,
    seed: int = 0,
    workers: int = 1,
    log: Callable[[str], None] | None = None,
) -> Labels:
    """:func:`label_positions` split over ``workers`` processes, each labelling ``decisions / workers`` decisions
    with its own seed (``[seed, k]`` for shard k); the shards are concatenated in order. With one worker, the
    labels of :func:`label_positions` with ``seed``. Same arguments and workers, same labels.

    Raises:
        ValueError: ``workers`` < 1, and the errors of :func:`label_positions`.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if workers == 1:
        last = [time.perf_counter()]

        def progress(count: int) -> None:
            if log is not None and time.perf_counter() - last[0] > 60:
                last[0] = time.perf_counter()
                log(f"labelled {count:,} of {decisions:,} decisions with mc:{samples}")

        return label_positions(config, decisions, samples, batch_size, temperature, epsilon, seed, progress)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    share = -(-decisions // workers)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(label_positions, config, share, samples, batch_size, temperature, epsilon, [seed, k])
            for k in range(workers)
        ]
        shards = []
        for k, future in enumerate(futures):
            shards.append(future.result())
            if log is not None:
                log(f"labelled shard {k + 1} of {workers}: {len(shards[-1]):,} decisions with mc:{samples}")
    return Labels(*(np.concatenate([getattr(x, f) for x in shards]) for f in ("obs", "mask", "scores", "returns")))


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
    probs = teacher_probs(labels.scores, temperature).astype(np.float32)
    best = np.nanargmin(labels.scores, axis=1)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)  # type: ignore[attr-defined]
    steps = epochs * (len(train) // batch_size)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max(steps, 1))

    def losses(idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        obs = torch.as_tensor(labels.obs[idx])
        dist = policy.get_distribution(obs, action_masks=labels.mask[idx])  # type: ignore[attr-defined]
        log_p = dist.log_p
        target = torch.as_tensor(probs[idx])
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
    """The ``distill:`` stage of a training run: label positions with ``mc:N``, fit ``policy`` on them in place.

    Args:
        policy: the run's fresh :class:`training.policy.CardPolicy` (or any masked actor-critic policy).
        d: the config's ``distill`` section (the settings).
        game: the game the run trains on (one table size, single rounds).
        seed: the run's seed (``train.seed``), for the labelling and the fit.
        out_dir: created; receives ``labels.npz`` and ``distill.json`` (the settings and the held-out figures).
        log: where each progress line goes.

    Returns:
        The figures of :func:`fit_policy`, with ``settings`` (the section), ``labels`` (count) and ``label_seconds``.
    """
    import json

    import torch

    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    labels = label_in_parallel(
        game,
        d.decisions,
        d.samples,
        d.games,
        d.temperature,
        d.epsilon,
        seed,
        d.workers,
        log=lambda line: log(f"distill: {line}"),
    )
    labels.save(out_dir / "labels.npz")
    label_seconds = time.perf_counter() - start
    log(f"distill: {len(labels):,} decisions labelled by mc:{d.samples} in {label_seconds:.0f} s")
    threads = torch.get_num_threads()
    torch.set_num_threads(d.workers)  # the fit gets the cores the labelling had
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
    info = {"settings": d.model_dump(), "labels": len(labels), "label_seconds": label_seconds, **figures}
    (out_dir / "distill.json").write_text(json.dumps(info, indent=2) + "\n")
    log(
        f"distill: held-out agreement with mc:{d.samples} {figures['agreement']:.3f}, "
        f"cross-entropy {figures['cross_entropy']:.3f}, value RMSE {figures['value_rmse']:.2f} bullheads"
    )
    return info
