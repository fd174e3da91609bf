"""A training run's lifecycle (training/lifecycle.py), shared by the SB3 and RLlib backends: stop signals and the
record of the evaluations during training."""

from __future__ import annotations

import csv
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from training.lifecycle import EVAL_FIELDS, EvalRecord, IdleGate, StopSignals, Terminated


def _rows(first: float, second: float) -> list[dict[str, object]]:
    return [
        {"lineup": "greedy,greedy,greedy", "mean_penalty": first, "win_share": 0.5, "games": 10},
        {"lineup": "random,random,random", "mean_penalty": second, "win_share": 0.7, "games": 10},
    ]


def test_eval_record_appends_rows_and_keeps_the_best_first_lineup_score(tmp_path: Path) -> None:
    record = EvalRecord(tmp_path)
    assert record.best == float("inf") and record.latest is None
    assert record.add(1000, 1.234, _rows(8.0, 3.0)) is True
    assert record.add(2000, 2.0, _rows(9.5, 1.0)) is False  # the second line-up never picks the best
    assert record.add(3000, 0.5, _rows(7.25, 4.0)) is True
    assert (record.best, record.latest) == (7.25, 7.25)
    with (tmp_path / "eval.csv").open() as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert tuple(reader.fieldnames or ()) == EVAL_FIELDS
    assert [(r["step"], r["lineup"], r["mean_penalty"], r["seconds"]) for r in rows[:2]] == [
        ("1000", "greedy,greedy,greedy", "8.0", "1.23"),
        ("1000", "random,random,random", "3.0", "1.23"),
    ]
    assert [r["step"] for r in rows] == ["1000", "1000", "2000", "2000", "3000", "3000"]
    resumed = EvalRecord(tmp_path)  # --resume reads the scores back
    assert (resumed.best, resumed.latest) == (7.25, 7.25)
    assert resumed.add(4000, 1.0, _rows(7.5, 0.0)) is False and resumed.latest == 7.5


def test_stop_signals_request_a_stop_then_interrupt() -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with StopSignals(at_once=False) as stop:
        assert not stop.requested
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.requested
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_stop_signals_at_once_raise_terminated_on_sigterm_only() -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(Terminated), StopSignals(at_once=True):
        assert signal.getsignal(signal.SIGINT) == before[1]  # Ctrl-C stays Python's KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGTERM)
    assert issubclass(Terminated, KeyboardInterrupt)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_an_idle_gate_holds_background_work_until_it_is_opened() -> None:
    """:class:`IdleGate`: ``pause`` blocks while the gate is closed and returns while it is open (``opened``)."""
    gate = IdleGate()
    passed: list[int] = []

    def work() -> None:
        for i in range(3):
            gate.pause()
            passed.append(i)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(0.2)
    assert passed == [] and thread.is_alive()  # closed: the work waits at its first pause
    with gate.opened():
        thread.join(5)
    assert passed == [0, 1, 2] and not thread.is_alive()


class _Model:
    """What ArenaEval needs of a model: ``save``, ``get_env`` (no VecNormalize) and a logger."""

    def __init__(self) -> None:
        from stable_baselines3.common.logger import configure

        self.logger = configure(None, [])
        self.num_timesteps = 0

    def save(self, path: Path) -> None:
        Path(path).write_bytes(f"weights at {self.num_timesteps}".encode())

    def get_env(self) -> None:
        return None


class _Learner:
    """What ArenaEval builds from the saved file (``make_agent("ppo:<path>")``), reduced to the file's text."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.weights = Path(spec.removeprefix("ppo:")).read_text()


def _arena_eval(tmp_path: Path, evaluate: Any, gate: IdleGate | None, monkeypatch: pytest.MonkeyPatch) -> Any:
    from training import callbacks

    monkeypatch.setattr(callbacks, "make_agent", _Learner)
    cb = callbacks.ArenaEval(100, tmp_path, evaluate, gate=gate)
    cb.init_callback(_Model())  # type: ignore[arg-type]
    return cb


def test_a_background_evaluation_runs_only_while_the_gate_is_open_and_keeps_its_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a gate, ArenaEval plays in a thread that waits at the gate; its row is written under the step at which
    the model was saved, with the agent built from the file saved then, even when training has moved on."""
    gate = IdleGate()
    seen: list[str] = []

    def evaluate(learner: _Learner, pause: Any) -> list[dict[str, Any]]:
        assert pause is not None
        pause()
        seen.append(learner.weights)
        return [{"lineup": "greedy,greedy,greedy", "mean_penalty": 7.5, "win_share": 0.4}]

    cb = _arena_eval(tmp_path, evaluate, gate, monkeypatch)
    cb.num_timesteps = cb.model.num_timesteps = 100
    cb.fire()
    cb._thread.join(0.2)
    assert seen == [] and not (tmp_path / "eval.csv").exists()  # the gate is closed: nothing played yet
    cb.num_timesteps = cb.model.num_timesteps = 150  # training goes on
    with gate.opened():
        cb._thread.join(5)
    assert cb._on_step()  # the next step writes the finished evaluation
    assert seen == ["weights at 100"]
    with (tmp_path / "eval.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["step"], r["mean_penalty"]) for r in rows] == [("100", "7.5")]
    assert cb.best == 7.5 and (tmp_path / "best_model.zip").read_text() == "weights at 100"


def test_training_end_finishes_a_background_evaluation_and_raises_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An evaluation still waiting at the gate when training ends is finished then (the gate held open); one that
    failed raises its exception in the learner's thread."""
    gate = IdleGate()
    cb = _arena_eval(
        tmp_path,
        lambda learner, pause: pause() or [{"lineup": "l", "mean_penalty": 3.0, "win_share": 0.5}],
        gate,
        monkeypatch,
    )
    cb.num_timesteps = cb.model.num_timesteps = 200
    cb.fire()
    cb.on_training_end()
    assert cb.latest == 3.0 and cb._thread is None

    def broken(learner: _Learner, pause: Any) -> list[dict[str, Any]]:
        pause()
        raise ValueError("unknown agent spec 'gredy'")

    cb = _arena_eval(tmp_path / "b", broken, gate, monkeypatch)
    cb.fire()
    with pytest.raises(ValueError, match="gredy"):
        cb.finish()


def test_without_a_gate_the_evaluation_runs_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    cb = _arena_eval(
        tmp_path,
        lambda learner, pause: (
            calls.append((learner.weights, pause)) or [{"lineup": "l", "mean_penalty": 2.0, "win_share": 0.5}]
        ),
        None,
        monkeypatch,
    )
    cb.num_timesteps = cb.model.num_timesteps = 300
    cb.fire()
    assert calls == [("weights at 300", None)] and cb.latest == 2.0
