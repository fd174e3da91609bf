"""A training run's lifecycle, written once for both backends (SB3, :mod:`training.sb3_backend`; Ray RLlib,
:mod:`training.rllib.backend`): how a stop signal ends the run, the record of the evaluations during training, and
what a backend hands back to the pipeline (:func:`training.train.train`).

- :class:`StopSignals`: SIGTERM (``timeout``, a job scheduler) and Ctrl-C while the run trains. Either way the run
  saves a checkpoint and writes its report; the backend says whether the signal stops it at once (SB3's loop can
  stop anywhere) or after the current iteration (RLlib's iteration runs on Ray's workers).
- :class:`IdleGate`: background work (an evaluation during training) that runs only while the learner waits for
  its rollout processes, so that it takes no time from either side.
- :class:`EvalRecord`: ``eval.csv`` of the run folder (one row per line-up and evaluation), the latest and the
  best mean penalty of the first line-up (read back on ``--resume``), and whether a new evaluation is the best so
  far (the backend then keeps that model as ``best_model``).
- :class:`Trained`: a backend's summary of the session, the report's lines about the run and the final model as an
  agent spec, from which the pipeline writes ``report.md``.

The networks both backends build are :mod:`training.policy`'s (:func:`training.policy.mlp`).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EVAL_FIELDS = (
    "step",
    "lineup",
    "games",
    "mean_penalty",
    "ci95",
    "opponents_mean_penalty",
    "opponents_ci95",
    "win_share",
    "mean_rank",
    "illegal_actions",
    "seconds",
)
"""Columns of a run's ``eval.csv`` (both backends): one row per evaluation line-up and evaluation step."""


@contextlib.contextmanager
def signals_deferred() -> Any:
    """Hold Ctrl-C (SIGINT) and SIGTERM back while the block runs (a checkpoint being written), then let them in.

    A signal that arrives inside the block is noted, and raised again (``signal.raise_signal``, to the handlers in
    place before) when the block ends: its ``KeyboardInterrupt`` comes after the file is whole, never inside the
    writer (a zip half-written, and torch's writer replacing the interrupt with an error of its own). Outside the
    main thread, where Python cannot set signal handlers, the block runs as is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        held.append(signum)

    previous = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if held:
            signal.raise_signal(held[0])


class Terminated(KeyboardInterrupt):
    """SIGTERM received by a run that stops at once: handled like Ctrl-C (a checkpoint is saved)."""


class StopSignals:
    """Ctrl-C (SIGINT) and SIGTERM while a run trains, handled in the main thread (elsewhere left alone).

    Args:
        at_once: ``True`` (the SB3 backend): SIGTERM raises :class:`Terminated`, a ``KeyboardInterrupt``, where the
            run is, and Ctrl-C keeps Python's own ``KeyboardInterrupt``. ``False`` (the RLlib backend): the first
            of either sets ``requested`` (the run stops after its current iteration; a line on stderr says
            so) and a second raises ``KeyboardInterrupt`` at once.

    Attributes:
        requested: a stop was asked for (``at_once=False`` only).
    """

    def __init__(self, at_once: bool) -> None:
        self.at_once = at_once
        self.requested = False
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self.at_once:
            raise Terminated()
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        name = signal.Signals(signum).name
        print(f"\n{name}: stopping after this iteration with a checkpoint (again to stop at once)", file=sys.stderr)

    def __enter__(self) -> StopSignals:
        signals = (signal.SIGTERM,) if self.at_once else (signal.SIGINT, signal.SIGTERM)
        with contextlib.suppress(ValueError):  # not the main thread
            for sig in signals:
                self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()


class IdleGate:
    """A gate for background work that may run only while the learner would otherwise wait.

    The learner opens it around its waits for the rollout processes (:meth:`opened`,
    :class:`training.rollouts.RolloutWorkers`); a background thread calls :meth:`pause` between its small steps (the
    evaluation: before each decision of an arena game) and blocks there, holding no lock and no CPU, while the gate
    is closed. The work itself is unchanged, only the times at which it runs: an evaluation's results do not depend
    on the gate.
    """

    def __init__(self) -> None:
        self._open = threading.Event()

    @contextlib.contextmanager
    def opened(self) -> Any:
        """Open the gate while the block runs (the learner waits, or wants the background work done now)."""
        self._open.set()
        try:
            yield
        finally:
            self._open.clear()

    def pause(self) -> None:
        """Block until the gate is open (returns at once when it is)."""
        self._open.wait()


class EvalRecord:
    """The evaluations during training: rows appended to ``run_dir/eval.csv`` (:data:`EVAL_FIELDS`) and the
    scores of the first line-up (mean bullheads per game, lower is better).

    Attributes:
        csv_path: ``run_dir/eval.csv``.
        best: the lowest first-line-up mean penalty so far (``inf`` before any), read from ``eval.csv`` on resume.
        latest: the latest first-line-up mean penalty (``None`` before any).
    """

    def __init__(self, run_dir: Path) -> None:
        self.csv_path = run_dir / "eval.csv"
        self.best = float("inf")
        self.latest: float | None = None
        if self.csv_path.is_file():  # resume: keep the best score so far
            with self.csv_path.open() as f:
                rows = list(csv.DictReader(f))
            firsts = [float(r["mean_penalty"]) for r in rows if r["lineup"] == rows[0]["lineup"]] if rows else []
            if firsts:
                self.best, self.latest = min(firsts), firsts[-1]

    def add(self, step: int, seconds: float, rows: Sequence[dict[str, Any]]) -> bool:
        """Append one evaluation's ``rows`` (result rows with at least ``lineup`` and ``mean_penalty``, the first
        line-up first) at env step ``step``, which took ``seconds``; returns whether the first line-up's score is
        the best so far (lower than every earlier one)."""
        new = not self.csv_path.is_file()
        with self.csv_path.open("a", newline="") as f:
            writer = csv.DictWriter(f, EVAL_FIELDS, extrasaction="ignore")
            if new:
                writer.writeheader()
            for row in rows:
                writer.writerow({"step": step, "seconds": round(seconds, 2), **row})
        self.latest = float(rows[0]["mean_penalty"])
        if self.latest < self.best:
            self.best = self.latest
            return True
        return False


def checkpoint_steps(path: Path) -> int:
    """The steps of a run's checkpoint from its name: ``model_<steps>_steps.zip`` (SB3) or
    ``checkpoint_<steps>_steps`` (RLlib)."""
    return int(path.stem.split("_")[1])


@dataclasses.dataclass
class Trained:
    """What a backend's training session returns to the pipeline (:func:`training.train.train`).

    Attributes:
        summary: the session's figures (``run_dir``, ``steps``, ``start_steps``, ``session_steps``, ``seconds``,
            ``steps_per_second``, ``interrupted``, ``timed_out``, ``checkpoint``, and the backend's own; with
            ``final_model`` and ``best_model`` when the run was not interrupted).
        report: the report's lines about the run (title, steps, speed, model), empty when interrupted.
        agent: the final model as an agent spec (``ppo:PATH``, ``rllib:PATH``) for the final evaluations, ``None``
            when interrupted (no report is written).
    """

    summary: dict[str, Any]
    report: list[str] = dataclasses.field(default_factory=list)
    agent: str | None = None
