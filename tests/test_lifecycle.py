"""A training run's lifecycle (training/lifecycle.py), shared by the SB3 and RLlib backends: stop signals and the
record of the evaluations during training."""

from __future__ import annotations

import csv
import os
import signal
from pathlib import Path

import pytest

from training.lifecycle import EVAL_FIELDS, EvalRecord, StopSignals, Terminated


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
