"""The arena's plot helper process (sixnimmt_env.arena.plotter): the same PNG as in-process, errors reported,
never left running."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from sixnimmt_env.arena import run_arena
from sixnimmt_env.arena.plotter import PlotProcess
from sixnimmt_env.arena.report import plot_results, write_results


@pytest.fixture(scope="module")
def results() -> dict:
    return run_arena("greedy,lowest,random,random", 400, seed=3)


def test_the_helper_draws_the_png_that_plot_results_draws(results: dict, tmp_path: Path) -> None:
    here = plot_results(results, tmp_path / "here.png")
    with PlotProcess() as plotter:
        there = plotter.plot(json.loads(json.dumps(results)), tmp_path / "there.png")
    assert there == tmp_path / "there.png"
    a, b = imread(here), imread(there)
    assert a.shape == b.shape and a.shape[2] == 4 and a.shape[1] == 9 * 120  # 9 inches at 120 dpi
    assert np.array_equal(a, b)


def test_write_results_with_the_helper_writes_all_three_files(results: dict, tmp_path: Path) -> None:
    with PlotProcess() as plotter:
        paths = write_results(results, tmp_path / "out", plotter=plotter)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["results.json", "results.md", "results.png"]
    assert json.loads(paths["json"].read_text())["games"] == 400
    assert imread(paths["png"]).shape[1] == 9 * 120


def test_a_failing_plot_raises_with_the_helpers_error(tmp_path: Path) -> None:
    with PlotProcess() as plotter, pytest.raises(RuntimeError) as err:
        plotter.plot({"agents": []}, tmp_path / "bad.png")  # no settings: plot_results fails
    text = str(err.value)
    assert "bad.png" in text and "KeyError" in text and "settings" in text
    assert not (tmp_path / "bad.png").exists()


def test_the_helper_is_used_once_and_closing_it_stops_it(results: dict, tmp_path: Path) -> None:
    plotter = PlotProcess()
    proc = plotter._proc
    assert proc is not None and proc.poll() is None  # running, waiting for its request
    plotter.close()
    assert proc.returncode is not None  # ended
    with pytest.raises(RuntimeError, match="already used or closed"):
        plotter.plot(results, tmp_path / "late.png")
    assert not (tmp_path / "late.png").exists()


def test_the_helper_ends_by_itself_when_its_input_closes_unused() -> None:
    plotter = PlotProcess()
    proc = plotter._proc
    assert proc is not None and proc.stdin is not None
    proc.stdin.close()  # the arena died before asking for a plot
    assert proc.wait(timeout=60) == 0
    plotter._proc = None
