"""Training callbacks: progress bar, checkpoints, self-play snapshots and the current self, arena evaluation.

Each fires on the number of environment steps (``model.num_timesteps``), so
the schedule does not depend on ``n_envs``.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecNormalize
from tqdm import tqdm

from sixnimmt_env.agents import Agent, make_agent
from training.lifecycle import EvalRecord, IdleGate, signals_deferred
from training.opponents import CurrentSelf, SnapshotPool
from training.ppo_agents import save_obs_norm


def _vec_normalize(model: Any) -> VecNormalize | None:
    env = model.get_env()
    return env if isinstance(env, VecNormalize) else None


def save_model(model: Any, path: Path) -> Path:
    """Save ``model`` to ``path`` (a ``.zip``) and, under VecNormalize, its observation statistics beside it.

    The file is written whole or not at all: first as ``.<name>.partial.zip`` in the same folder, then renamed
    over ``path``; Ctrl-C and SIGTERM wait until both files are in place (:func:`training.lifecycle.signals_deferred`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.stem}.partial.zip")
    with signals_deferred():
        try:
            model.save(partial)
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)
        norm = _vec_normalize(model)
        if norm is not None:
            save_obs_norm(path, norm)
    return path


class _Every(BaseCallback):
    """Calls :meth:`fire` whenever ``every`` more environment steps have passed."""

    def __init__(self, every: int) -> None:
        super().__init__()
        self.every = every
        self.last = 0

    def _on_training_start(self) -> None:
        self.last = self.num_timesteps - self.num_timesteps % self.every

    def _on_step(self) -> bool:
        if self.num_timesteps - self.last >= self.every:
            self.last = self.num_timesteps - self.num_timesteps % self.every
            self.fire()
        return True

    def fire(self) -> None:
        raise NotImplementedError


class CheckpointEvery(_Every):
    """Saves ``<folder>/model_<steps>_steps.zip`` every ``every`` steps."""

    def __init__(self, every: int, folder: Path) -> None:
        super().__init__(every)
        self.folder = folder

    def fire(self) -> None:
        save_model(self.model, self.folder / f"model_{self.num_timesteps}_steps.zip")


class SelfPlaySnapshots(_Every):
    """Every ``every`` steps: saves the learner into ``pool`` (:class:`training.opponents.SnapshotPool`) and gives
    the training envs a new sampler (``make_sampler(pool.paths)``) through ``env_method("set_opponents", ...)``;
    it takes effect at their next reset. An evicted snapshot is deleted only after that call returns: from then
    on no env draws it (opponents already playing keep their loaded policy). A snapshot a growing pool would not
    keep (:meth:`~training.opponents.SnapshotPool.keeps`) is not taken.
    """

    def __init__(self, every: int, pool: SnapshotPool, make_sampler: Callable[[list[str]], Any]) -> None:
        super().__init__(every)
        self.pool, self.make_sampler = pool, make_sampler

    def fire(self) -> None:
        if self.pool.keeps(self.num_timesteps):
            self.pool.add(save_model(self.model, self.pool.path_for(self.num_timesteps)))
            self.training_env.env_method("set_opponents", self.make_sampler(self.pool.paths))
            self.pool.prune()
        self.logger.record("self_play/pool_size", len(self.pool.paths))


class CurrentSelfSync(BaseCallback):
    """``self_play.current`` in the learner's process (``train.workers: 1``, the envs beside the model): before
    training and before every rollout, ``current`` (:class:`training.opponents.CurrentSelf`, the object the envs
    play) takes the model's policy weights, so the current-self opponents play the weights that collect the rollout.
    (With rollout processes each process refreshes its own from the weights it collects with,
    :mod:`training.rollouts`.) A refresh copies the actor to numpy: well under a millisecond for the card policy.
    """

    def __init__(self, current: CurrentSelf) -> None:
        super().__init__()
        self.current = current

    def _on_training_start(self) -> None:
        self.current.refresh(self.model.policy)

    def _on_rollout_start(self) -> None:
        self.current.refresh(self.model.policy)

    def _on_step(self) -> bool:
        return True


class ArenaEval(_Every):
    """Every ``every`` steps: the current model (saved to ``last_eval.zip``) plays each evaluation line-up in the
    arena; rows go to ``eval.csv``; the best score on the first line-up is copied to ``best_model.zip``.

    With a ``gate`` (the rollout processes' :class:`training.lifecycle.IdleGate`, ``train.workers >= 2``) the games
    are played in a background thread of the learner, and only while the learner waits for its rollout processes:
    neither the updates nor the rollouts wait for an evaluation. The saved model is loaded in the learner's thread
    (the ``ppo:`` agent; loading leaves the global random generators alone), so the thread touches no state of the
    training: the run is the same whenever the thread plays. Its rows are written once it is done, still under the
    step at which the model was saved, with the CPU seconds of its games; an evaluation still running when the next
    one is due, when training ends or when it is stopped (:meth:`finish`) is finished first (the gate held open).
    The results are those of the same evaluation in the foreground: the games depend only on the saved model and
    the seed.

    Args:
        every: steps between evaluations.
        run_dir: the run folder.
        evaluate: ``evaluate(learner, pause) -> list of result rows`` (dicts with at least ``lineup`` and
            ``mean_penalty``; the first row is the first line-up), ``learner`` the saved model's ``ppo:`` agent;
            ``pause`` is ``None`` in the foreground, else a function to call before each decision
            (:func:`training.evaluate.evaluate_lineups`).
        gate: evaluate in the background, while this gate is open; ``None``: in the foreground, at once.
    """

    def __init__(
        self,
        every: int,
        run_dir: Path,
        evaluate: Callable[[Agent, Callable[[], object] | None], list[dict[str, Any]]],
        gate: IdleGate | None = None,
    ) -> None:
        super().__init__(every)
        self.run_dir = run_dir
        self.evaluate = evaluate
        self.gate = gate
        self.record = EvalRecord(run_dir)
        self._thread: threading.Thread | None = None
        self._outcome: tuple[int, Path, float, list[dict[str, Any]] | BaseException] | None = None

    @property
    def best(self) -> float:
        """The lowest first-line-up mean penalty so far (:class:`training.lifecycle.EvalRecord`)."""
        return self.record.best

    @property
    def latest(self) -> float | None:
        """The latest first-line-up mean penalty, ``None`` before any evaluation."""
        return self.record.latest

    def fire(self) -> None:
        self.finish()
        path = save_model(self.model, self.run_dir / "last_eval.zip")
        start = time.perf_counter()
        learner = make_agent(f"ppo:{path}")
        if self.gate is None:
            rows = self.evaluate(learner, None)
            self._write(self.num_timesteps, path, time.perf_counter() - start, rows)
            return
        args = (self.num_timesteps, path, learner, self.gate)
        self._thread = threading.Thread(target=self._background, args=args, daemon=True, name="sixnimmt-eval")
        self._thread.start()

    def _background(self, step: int, path: Path, learner: Agent, gate: IdleGate) -> None:
        gate.pause()
        start = time.thread_time()
        try:
            rows: list[dict[str, Any]] | BaseException = self.evaluate(learner, gate.pause)
        except BaseException as e:  # raised again in the learner's thread (finish)
            rows = e
        self._outcome = (step, path, time.thread_time() - start, rows)

    def finish(self) -> None:
        """Finish the evaluation running in the background, if any (the gate held open), and write its rows. The
        training calls it when it ends or is stopped (Ctrl-C, SIGTERM), so that no evaluation of a saved model is lost.

        Raises:
            Exception: what the evaluation raised, raised again here in the learner's thread.
        """
        if self._thread is None:
            return
        if self._thread.is_alive():
            assert self.gate is not None
            with self.gate.opened():
                self._thread.join()
        self._thread = None
        outcome, self._outcome = self._outcome, None
        assert outcome is not None
        step, path, seconds, rows = outcome
        if isinstance(rows, BaseException):
            raise rows
        self._write(step, path, seconds, rows)

    def _on_step(self) -> bool:
        if self._thread is not None and not self._thread.is_alive():
            self.finish()
        return super()._on_step()

    def _on_training_end(self) -> None:
        self.finish()

    def _write(self, step: int, path: Path, seconds: float, rows: list[dict[str, Any]]) -> None:
        improved = self.record.add(step, seconds, rows)
        for row in rows:
            self.logger.record(f"eval/{row['lineup']}/mean_penalty", row["mean_penalty"])
            self.logger.record(f"eval/{row['lineup']}/win_share", row["win_share"])
        if improved:
            shutil.copyfile(path, self.run_dir / "best_model.zip")
            norm = path.with_name(path.stem + ".obsnorm.npz")
            if norm.is_file():
                shutil.copyfile(norm, self.run_dir / "best_model.obsnorm.npz")


class Progress(BaseCallback):
    """A tqdm bar over the step budget with steps/s and the latest evaluation score (mean bullheads);
    stops training once ``max_seconds`` of wall time have passed (``None``: no limit)."""

    def __init__(
        self, total: int, evaluator: ArenaEval | None, disable: bool = False, max_seconds: float | None = None
    ) -> None:
        super().__init__()
        self.total, self.evaluator, self.disable = total, evaluator, disable
        self.max_seconds = max_seconds
        self.timed_out = False
        self.bar: tqdm | None = None

    def _on_training_start(self) -> None:
        self.bar = tqdm(
            total=self.total, initial=self.num_timesteps, unit="step", dynamic_ncols=True, disable=self.disable
        )
        self.t0, self.s0 = time.perf_counter(), self.num_timesteps
        self.shown = self.num_timesteps

    def _on_step(self) -> bool:
        if self.max_seconds is not None and time.perf_counter() - self.t0 > self.max_seconds:
            self.timed_out = True
            return False
        if self.bar is None or self.num_timesteps - self.shown < 2048:
            return True
        self.bar.update(self.num_timesteps - self.shown)
        self.shown = self.num_timesteps
        rate = (self.num_timesteps - self.s0) / max(time.perf_counter() - self.t0, 1e-9)
        post = {"steps/s": f"{rate:,.0f}"}
        if self.evaluator is not None and self.evaluator.latest is not None:
            post["eval"] = f"{self.evaluator.latest:.2f}"
        self.bar.set_postfix(post, refresh=False)
        return True

    def _on_training_end(self) -> None:
        if self.bar is not None:
            self.bar.update(self.num_timesteps - self.shown)
            self.bar.close()

    def rate(self) -> float:
        """Environment steps per second since training started."""
        return (self.num_timesteps - self.s0) / max(time.perf_counter() - self.t0, 1e-9)
