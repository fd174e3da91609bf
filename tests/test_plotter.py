"""The arena's plot helper process (sixnimmt_env.arena.plotter): the same PNG as in-process, errors reported,
never left running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

import sixnimmt_env.arena
from sixnimmt_env.arena import run_arena
from sixnimmt_env.arena.plotter import PlotProcess
from sixnimmt_env.arena.report import draft_plot, finish_plot, plot_results, write_results

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; forks only on Linux")


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


def test_a_draft_made_during_the_games_gives_the_same_png(results: dict, tmp_path: Path) -> None:
    here = plot_results(results, tmp_path / "here.png")
    with PlotProcess() as plotter:
        plotter.draft(["greedy", "lowest", "random", "random"], 4)
        there = plotter.plot(json.loads(json.dumps(results)), tmp_path / "there.png")
    assert np.array_equal(imread(here), imread(there))


def test_a_draft_for_other_agents_is_dropped_and_the_plot_drawn_whole(results: dict, tmp_path: Path) -> None:
    here = plot_results(results, tmp_path / "here.png")
    for labels, players in ((["greedy", "lowest", "random", "mc:8"], 4), (["greedy", "lowest", "random", "random"], 5)):
        with PlotProcess() as plotter:
            plotter.draft(labels, players)
            there = plotter.plot(json.loads(json.dumps(results)), tmp_path / "there.png")
        assert np.array_equal(imread(here), imread(there))


def test_a_second_draft_is_refused_and_the_first_still_plots(results: dict, tmp_path: Path) -> None:
    with PlotProcess() as plotter:
        plotter.draft(["greedy", "lowest", "random", "random"], 4)
        with pytest.raises(RuntimeError, match="has its draft already"):
            plotter.draft(["greedy", "lowest", "random", "random"], 4)
        there = plotter.plot(json.loads(json.dumps(results)), tmp_path / "there.png")
    assert np.array_equal(imread(plot_results(results, tmp_path / "here.png")), imread(there))


def test_the_helper_imports_matplotlib_without_its_3d_axes_and_no_warning() -> None:
    """The helper's import leaves out matplotlib's 3-D projection (unused by the plot), silently; the 2-D
    projections stay, and a later import of the 3-D axes works."""
    code = (
        "import sys, warnings\n"
        "warnings.simplefilter('error')\n"
        "from sixnimmt_env.arena.plotter import _import_matplotlib\n"
        "_import_matplotlib()\n"
        "from matplotlib import projections\n"
        "print('mpl_toolkits.mplot3d' in sys.modules, sorted(projections.get_projection_names()))\n"
        "from mpl_toolkits.mplot3d import Axes3D\n"
        "print(Axes3D.name)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.splitlines() == [
        "False ['aitoff', 'hammer', 'lambert', 'mollweide', 'polar', 'rectilinear']",
        "3d",
    ]
    assert out.stderr == ""


def test_a_dollar_in_a_spec_is_drawn_as_a_dollar_not_parsed_as_tex(results: dict, tmp_path: Path) -> None:
    odd = json.loads(json.dumps(results))
    odd["agents"][0]["agent"] = "ppo:runs/d$x$/m$a^2$.zip"  # unbalanced or odd TeX made matplotlib raise
    draft = draft_plot([r["agent"] for r in odd["agents"]], 4)
    finish_plot(draft, odd, tmp_path / "odd.png")
    texts = [t.get_text() for t in draft.axes[0].get_yticklabels()] + [draft.figure._supxlabel.get_text()]
    assert texts[0] == "0: ppo:m$a^2$" and texts[-1] == "0: ppo:runs/d$x$/m$a^2$.zip"
    assert all(not t.get_parse_math() for t in draft.axes[0].get_yticklabels())


def test_finish_plot_refuses_a_draft_for_other_agents_or_used_twice(results: dict, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"for agents \['greedy', 'lowest', 'random', 'mc:8'\] at 4 players"):
        finish_plot(draft_plot(["greedy", "lowest", "random", "mc:8"], 4), results, tmp_path / "a.png")
    assert not (tmp_path / "a.png").exists()
    draft = draft_plot(["greedy", "lowest", "random", "random"], 4)
    finish_plot(draft, results, tmp_path / "b.png")
    with pytest.raises(ValueError, match="used already"):
        finish_plot(draft, results, tmp_path / "c.png")
    assert (tmp_path / "b.png").exists() and not (tmp_path / "c.png").exists()


def test_a_headline_of_two_lines_moves_the_panels_down(results: dict, tmp_path: Path) -> None:
    wide = json.loads(json.dumps(results))
    wide["settings"]["seed"] = 10**90  # the headline wraps to two lines of at most 150 characters
    labels = ["greedy", "lowest", "random", "random"]
    one, two = draft_plot(labels, 4), draft_plot(labels, 4)
    finish_plot(one, results, tmp_path / "one.png")
    finish_plot(two, wide, tmp_path / "two.png")
    height = one.figure.get_figheight()  # 3.2 inches: four agents, no legend
    tops = [d.axes[0].get_position().y1 * height for d in (one, two)]
    line = 8 * 1.2 / 72  # one 8-point headline line, in inches
    assert height == 3.2 and tops[0] == pytest.approx(3.2 - 0.4 - line) and tops[1] == pytest.approx(tops[0] - line)


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
    assert proc is not None and proc.is_alive()  # running, waiting for its request
    plotter.close()
    assert proc.exitcode is not None  # ended
    with pytest.raises(RuntimeError, match="already used or closed"):
        plotter.plot(results, tmp_path / "late.png")
    assert not (tmp_path / "late.png").exists()


def test_the_helper_ends_by_itself_when_its_request_pipe_closes_unused() -> None:
    plotter = PlotProcess()
    proc = plotter._proc
    assert proc is not None and proc.is_alive()
    plotter._requests.close()  # the arena died before asking for a plot
    proc.join(60)
    assert proc.exitcode == 0
    plotter._proc = None


@linux_only
def test_a_single_threaded_process_forks_its_helper_and_both_ways_draw_the_same(results: dict, tmp_path: Path) -> None:
    """The helper is forked from a process with one thread (the command line's case) and spawned otherwise."""
    code = (
        "import sys, json\n"
        "from sixnimmt_env.arena.plotter import PlotProcess\n"
        "with PlotProcess() as p:\n"
        "    forked = p.forked\n"
        "    p.plot(json.load(open(sys.argv[1])), sys.argv[2])\n"
        "print(forked)\n"
    )
    (tmp_path / "r.json").write_text(json.dumps(results))
    args = [sys.executable, "-c", code, str(tmp_path / "r.json"), str(tmp_path / "forked.png")]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}  # as the command line sets it: numpy starts no thread
    assert subprocess.run(args, env=env, capture_output=True, text=True, check=True, timeout=120).stdout.split() == [
        "True"
    ]
    with PlotProcess(fork=False) as plotter:
        assert not plotter.forked
        plotter.plot(results, tmp_path / "here.png")
    if len(os.listdir("/proc/self/task")) > 1:  # pytest's process with numpy's thread pool: spawned by default
        with PlotProcess() as plotter:
            assert not plotter.forked
    assert np.array_equal(imread(tmp_path / "forked.png"), imread(tmp_path / "here.png"))


def _processes_with(marker: str) -> list[int]:
    """Pids of the running processes whose environment holds ``marker`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # ended meanwhile, or not ours
                pass
    return found


def test_importing_the_packages_loads_no_numpy() -> None:
    """``python -m sixnimmt_env.arena`` imports both packages before its __main__ can set numpy's environment."""
    code = (
        "import sys, sixnimmt_env, sixnimmt_env.arena, sixnimmt_env.arena.plotter\n"
        "print('numpy' in sys.modules)\n"
        "from sixnimmt_env import GameConfig\n"
        "from sixnimmt_env.arena import run_arena, write_results\n"
        "print(GameConfig.__module__, run_arena.__module__, write_results.__module__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert out == ["False", "sixnimmt_env.rules.engine", "sixnimmt_env.arena.run", "sixnimmt_env.arena.report"]
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = sixnimmt_env.arena.nope  # type: ignore[attr-defined]


@linux_only
def test_the_command_loads_numpy_with_one_blas_thread() -> None:
    """``python -m sixnimmt_env.arena`` sets OPENBLAS_NUM_THREADS=1 before numpy loads (numpy's OpenBLAS then starts
    no thread pool; the plot helper is forked with it), unless the user set it."""
    code = (
        "import os, runpy, sys\n"
        "sys.argv = ['arena', '--help']\n"
        "try:\n"
        "    runpy.run_module('sixnimmt_env.arena', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules, len(os.listdir('/proc/self/task')))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.split()[-3:] == ["1", "True", "1"]  # numpy loaded, and this process still runs one thread
    env["OPENBLAS_NUM_THREADS"] = "2"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.split()[-3:-1] == ["2", "True"]


@linux_only
def test_a_refused_command_leaves_no_helper_running(tmp_path: Path) -> None:
    """``python -m sixnimmt_env.arena`` starts its plot helper first; --help and a refused --out stop it."""
    marker = f"SIXNIMMT_TEST_MARK={uuid.uuid4().hex}"
    env = {**os.environ, marker.split("=")[0]: marker.split("=")[1]}
    (tmp_path / "results.json").write_text("{}")  # a folder that already holds results
    runs = [["--help"], ["--agents", "greedy,random", "--games", "10", "--out", str(tmp_path)]]
    codes = []
    for args in runs:
        done = subprocess.run(
            [sys.executable, "-m", "sixnimmt_env.arena", *args], env=env, capture_output=True, timeout=120
        )
        codes.append(done.returncode)
        assert _processes_with(marker) == []
    assert codes == [0, 2]
    assert (tmp_path / "results.json").read_text() == "{}" and not (tmp_path / "results.png").exists()


def test_the_two_panels_tick_labels_do_not_overlap(
    results: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The penalty panel's last x tick label ("14" here, at the panel's edge) and the win-share panel's first
    ("0.00") sit apart."""
    import copy

    from matplotlib.figure import Figure

    figures: list[Figure] = []
    save = Figure.savefig

    def keep(self: Figure, *args: object, **kwargs: object) -> None:
        figures.append(self)
        save(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    shaped = copy.deepcopy(results)  # the figures of a make train evaluation against three mc:64
    for row, (mean, ci, share) in zip(
        shaped["agents"],
        [(9.94, 0.33, 0.351), (12.83, 0.36, 0.225), (13.03, 0.36, 0.208), (12.66, 0.35, 0.217)],
        strict=True,
    ):
        row.update(mean_penalty=mean, ci95=ci, win_share=share, win_share_ci95=0.02)
    plot_results(shaped, tmp_path / "p.png")
    (fig,) = figures
    renderer = fig.canvas.get_renderer()
    left, right = fig.axes[0], fig.axes[1]
    low, high = left.get_xlim()
    shown = [t for t in left.get_xticklabels() if t.get_text() and low <= t.get_position()[0] <= high]
    assert shown[-1].get_text() == "14"
    last = shown[-1].get_window_extent(renderer)
    first = next(t for t in right.get_xticklabels() if t.get_text()).get_window_extent(renderer)
    assert last.x1 + 5 < first.x0, (last.x1, first.x0)


def test_an_agent_without_games_has_no_bar_and_says_so(results: dict, tmp_path: Path) -> None:
    empty = json.loads(json.dumps(results))
    for key in ("mean_penalty", "ci95", "win_share", "win_share_ci95"):
        empty["agents"][2][key] = None  # a league member that no table drew
    draft = draft_plot([r["agent"] for r in empty["agents"]], 4)
    finish_plot(draft, empty, tmp_path / "empty.png")
    for ax, key in zip(draft.axes, ("mean_penalty", "win_share"), strict=True):
        widths = [bar.get_width() for bar in ax.patches]
        assert np.isnan(widths[2]) and widths[0] == pytest.approx(empty["agents"][0][key])
        assert [(t.get_text(), t.get_position()) for t in ax.texts] == [(" no games", (0, 2))]


class _Spy:
    """A plot helper that records the command's draft and results and draws in-process."""

    def __init__(self) -> None:
        self.drafts: list[tuple[list[str], int]] = []
        self.results: dict | None = None

    def draft(self, labels: list[str], num_players: int) -> None:
        self.drafts.append((labels, num_players))

    def plot(self, results: dict, path: Path) -> Path:
        self.results = results
        return plot_results(results, path)


@pytest.mark.parametrize(
    "args",
    [
        ["--agents", "greedy, lowest,random ,random", "--games", "40"],
        ["--agents", "greedy,lowest,random,mc:2,highest", "--league", "--players", "4", "--games", "20"],
        ["--agents", "greedy,random", "--episode", "game", "--games", "4"],
    ],
    ids=["arena", "league", "games"],
)
def test_the_commands_draft_fits_its_results(args: list[str], tmp_path: Path) -> None:
    from sixnimmt_env.arena.command import main

    spy = _Spy()
    main([*args, "--quiet", "--out", str(tmp_path / "out")], plotter=spy)  # type: ignore[arg-type]
    assert spy.results is not None and len(spy.drafts) == 1
    labels, players = spy.drafts[0]
    assert labels == [r["agent"] for r in spy.results["agents"]] and players == spy.results["settings"]["num_players"]
    assert draft_plot(labels, players).fits(spy.results)
