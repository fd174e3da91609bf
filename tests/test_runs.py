"""Runs and results you can trust (issue 11): locks, per-run result folders, evaluation on the trained rules,
config and path errors before work, legible plots, Monitor headers, stop/resume, arena interrupts, the league."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import like_a_terminal
from sb3_contrib import MaskablePPO

from sixnimmt_env.arena import main as arena_main
from sixnimmt_env.arena import run_league
from sixnimmt_env.arena.pool import warn_workers
from sixnimmt_env.arena.report import LABEL_WIDTH, league_note, plot_results, short_labels
from sixnimmt_env.gym_env import make_env
from sixnimmt_env.records import read_records, replay
from training import evaluate as evaluate_module
from training.config import ConfigError, load_config
from training.train import run_lock

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"


def _run(*args: str, timeout: float = 240, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def run3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder trained (128 steps) for 3 players, logic variant, whole games to 30: config.yaml + final_model.zip,
    without checkpoint metadata (as checkpoints written before training stored the rules)."""
    run = tmp_path_factory.mktemp("run3")
    env_section = {"num_players": 3, "variant": "logic", "episode": "game", "end_score": 30}
    (run / "config.yaml").write_text(yaml.safe_dump({"name": "run3", "env": env_section}))
    env = make_env(num_players=3, variant="logic", episode="game", end_score=30, opponents="greedy")
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, policy_kwargs={"net_arch": [8]}
    )
    model.learn(128)
    model.save(run / "final_model.zip")
    return run


# --------------------------------------------------------------------------- 1. run-folder lock


_HOLD = """
import sys, time
from pathlib import Path
from training.train import run_lock
with run_lock(Path(sys.argv[1]), "python -m training.train --resume " + sys.argv[1]):
    print("locked", flush=True)
    time.sleep(120)
"""


def _hold_lock(run: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(run)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_run_in_use_is_refused_and_a_killed_holder_leaves_no_lock(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(SMOKE.read_text())
    holder = _hold_lock(run)
    try:
        result = _run("-m", "training.train", "--resume", str(run), "--no-progress", timeout=120)
        assert result.returncode == 2, result.stderr[-2000:]
        assert f"error: run folder {run} is in use by another training (pid {holder.pid} on " in result.stderr
        assert "wait for it to end or stop it first" in result.stderr and "Traceback" not in result.stderr
        assert not (run / "command.txt").exists()  # nothing was written by the refused process
    finally:
        holder.kill()  # SIGKILL: no clean-up runs, run.lock and run.lock.json stay behind
        holder.wait()
    assert (run / "run.lock").exists() and (run / "run.lock.json").exists()
    with run_lock(run, "test"):  # the operating system released the dead process's lock
        assert json.loads((run / "run.lock.json").read_text())["pid"] == os.getpid()
    assert not (run / "run.lock.json").exists()


def test_run_lock_is_exclusive_within_a_process(tmp_path: Path) -> None:
    from training.train import RunInUse

    with (
        run_lock(tmp_path, "first"),
        pytest.raises(RunInUse, match=r"in use by another training \(pid \d+"),
        run_lock(tmp_path, "second"),
    ):
        pass


# --------------------------------------------------------------------------- 2. no silent overwrite


def test_each_evaluation_gets_its_own_folder_and_an_existing_one_is_refused(run3: Path) -> None:
    ckpt = run3 / "final_model.zip"
    before = set((run3 / "evaluations").iterdir()) if (run3 / "evaluations").exists() else set()
    for _ in range(2):
        assert evaluate_module.main([str(ckpt), "--games", "4", "--quiet"]) == 0
        time.sleep(0.01)
    made = set((run3 / "evaluations").iterdir()) - before
    assert len(made) == 2 and all((d / "results.json").is_file() for d in made)
    target = sorted(made)[0]
    text = (target / "results.json").read_text()
    assert evaluate_module.main([str(ckpt), "--games", "4", "--quiet", "--out", str(target)]) == 2
    assert (target / "results.json").read_text() == text  # untouched
    assert evaluate_module.main([str(ckpt), "--games", "4", "--quiet", "--out", str(target), "--overwrite"]) == 0


def test_each_arena_run_gets_its_own_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for _ in range(2):
            arena_main(["--agents", "greedy,random,random", "--games", "6", "--quiet"])
        folders = sorted((tmp_path / "runs" / "arena").iterdir())
        assert len(folders) == 2 and all((f / "results.md").is_file() for f in folders)
        md = (folders[0] / "results.md").read_text()
        with pytest.raises(SystemExit) as exit_info:
            arena_main(["--agents", "greedy,lowest,lowest", "--games", "6", "--quiet", "--out", str(folders[0])])
        assert exit_info.value.code == 2
        assert "already holds results (results.json, results.md, results.png)" in capsys.readouterr().err
        assert (folders[0] / "results.md").read_text() == md
    finally:
        os.chdir(cwd)


# --------------------------------------------------------------------------- 3. evaluate knows its run


def _settings(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())["settings"]


def test_evaluate_plays_the_rules_the_run_trained_on(run3: Path, tmp_path: Path, capsys) -> None:
    ckpt = str(run3 / "final_model.zip")
    assert evaluate_module.main([ckpt, "--games", "4", "--quiet", "--out", str(tmp_path / "a")]) == 0
    s = _settings(tmp_path / "a")
    assert (s["num_players"], s["variant"], s["episode"], s["config"]["end_score"]) == (3, "logic", "game", 30)
    assert s["agents"] == [f"ppo:{ckpt}", "greedy", "greedy"]  # greedy in every other seat of the trained table
    assert f"rules: the training rules of {run3 / 'config.yaml'}" in capsys.readouterr().out
    # overrides
    args = [ckpt, "--games", "4", "--quiet", "--out", str(tmp_path / "b"), "--players", "4", "--variant", "standard"]
    assert evaluate_module.main([*args, "--episode", "round"]) == 0
    s = _settings(tmp_path / "b")
    assert (s["num_players"], s["variant"], s["episode"]) == (4, "standard", "round")
    assert "with num_players=4, variant=standard, episode=round from the command line" in s["rules_from"]
    # a line-up for another table size is refused unless --players confirms it
    capsys.readouterr()
    assert evaluate_module.main([ckpt, "--opponents", "greedy,greedy,greedy", "--games", "4", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "was trained for 3 players" in err and "4 seats are listed" in err and "--players 4" in err
    # --fill-seats repeats the opponents to fill the trained table
    args = [ckpt, "--opponents", "random,lowest,highest", "--fill-seats", "--games", "4", "--quiet"]
    assert evaluate_module.main([*args, "--out", str(tmp_path / "c")]) == 0
    assert _settings(tmp_path / "c")["agents"] == [f"ppo:{ckpt}", "random", "lowest"]


def test_makefile_evaluation_follows_the_trained_config() -> None:
    make = (ROOT / "Makefile").read_text()
    lines = [line for line in make.splitlines() if "-m training.evaluate" in line]
    # the mixed table, mc:64 in every other seat; greedy (and random) in every other seat are the training's own
    # final evaluation (eval.opponents of the default config), printed from report.md, not played twice (issue 34)
    assert len(lines) == 2
    assert all("--episode" not in line and "--variant" not in line and "--players" not in line for line in lines)
    assert "--opponents greedy,greedy,greedy" not in make and "--fill-seats" in lines[0]
    assert "--opponents mc:64 --fill-seats" in lines[1]
    assert "report.md" in make
    assert load_config(ROOT / "configs" / "ppo_4p.yaml").eval.opponents[0] == "greedy,greedy,greedy"


# --------------------------------------------------------------------------- 4, 9: config files


@pytest.mark.parametrize("text", ["", "# only a comment\n", "{}\n", "---\n"])
def test_an_empty_config_is_an_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"empty.yaml: the config is empty; give at least one section"):
        load_config(path)
    result = _run("-m", "training.train", str(path), "--set", f"train.output_dir={tmp_path / 'out'}", timeout=120)
    assert result.returncode == 2 and "the config is empty" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- env\n- train\n", "the top level must be a mapping of sections (env:, train:, ...), got a list"),
        ("just words\n", "the top level must be a mapping of sections (env:, train:, ...), got a str"),
        ("env: {num_players: 4\n", "not valid YAML: expected ',' or '}', but got '<stream end>' at line 2, column 1"),
    ],
)
def test_non_mapping_and_broken_yaml_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_set_syntax_errors_and_binary_configs_are_one_line_errors(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    result = _run(
        "-m", "training.train", str(SMOKE), "--set", "algo.learning_rate=[1,", "--set", f"train.output_dir={out}"
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"config error: {SMOKE} (--set algo.learning_rate=[1,): the value of 'algo.learning_rate' is not valid YAML: "
        "expected the node content, but found '<stream end>' at line 1, column 4"
    ]
    binary = tmp_path / "model.yaml"
    binary.write_bytes(bytes(range(256)) * 4)
    result = _run("-m", "training.train", str(binary), "--set", f"train.output_dir={out}")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"config error: {binary}: not a text file (a YAML config is UTF-8 text)"
    ]


# --------------------------------------------------------------------------- 5. output paths before work


def test_bad_output_paths_fail_before_any_game(run3: Path, tmp_path: Path, capsys) -> None:
    taken = tmp_path / "README.md"
    taken.write_text("keep me\n")
    start = time.perf_counter()
    code = evaluate_module.main([str(run3 / "final_model.zip"), "--games", "3000", "--out", str(taken), "--quiet"])
    assert code == 2 and time.perf_counter() - start < 5  # 3,000 games would take minutes
    assert f"error: --out '{taken}' is a file, not a folder" in capsys.readouterr().err
    assert taken.read_text() == "keep me\n"
    games = tmp_path / "games.jsonl"
    games.write_text("old\n")
    assert evaluate_module.main([str(run3 / "final_model.zip"), "--games", "3000", "--save-games", str(games)]) == 2
    assert "already exists" in capsys.readouterr().err and games.read_text() == "old\n"


def test_train_output_dir_on_a_file_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = _run("-m", "training.train", str(SMOKE), "--set", f"train.output_dir={blocker}/runs", timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"config error: train.output_dir '{blocker}/runs': '{blocker}' is a file, not a folder" in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any folder")
def test_train_output_dir_not_writable_is_a_config_error(tmp_path: Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir(mode=0o500)
    result = _run("-m", "training.train", str(SMOKE), "--set", f"train.output_dir={locked}/runs", timeout=120)
    assert result.returncode == 2 and "is not writable" in result.stderr


# --------------------------------------------------------------------------- 6. legible results.png


LONG = "ppo:/home/someone/experiments/sixnimmt/a_rather_long_experiment_name/runs/ppo_selfplay/20261201-063802"


def test_short_labels_are_short_and_unique() -> None:
    specs = [f"{LONG}/best_model.zip", f"{LONG}/checkpoints/model_9400000_steps.zip", "greedy", "greedy", "mc:64"]
    assert short_labels(specs) == ["ppo:best_model", "ppo:model_9400000_steps", "greedy", "greedy", "mc:64"]
    two = ["ppo:runs/ppo_4p/20261201-063802/best_model.zip", "ppo:runs/ppo_4p_game/20261201-063802/best_model.zip"]
    assert short_labels(two) == ["ppo:ppo_4p/…/best_model", "ppo:ppo_4p_game/…/best_model"]
    labels = short_labels([f"{LONG}-{k}/final_model.zip" for k in range(3)])
    assert len(set(labels)) == 3 and all(len(label) <= LABEL_WIDTH for label in labels)


def test_results_png_with_long_checkpoint_names_is_legible(tmp_path: Path) -> None:
    """Every tick label, the title and the legend of full specs lie inside the picture and do not overlap."""
    from matplotlib.figure import Figure

    specs = [f"{LONG}/best_model.zip", f"{LONG}/checkpoints/model_9400000_steps.zip", "greedy", "random"]
    rows = [
        {"position": i, "agent": s, "mean_penalty": 8.0 + i, "ci95": 0.4, "win_share": 0.25, "win_share_ci95": 0.02}
        for i, s in enumerate(specs)
    ]
    settings = {"num_players": 4, "episode": "round", "variant": "standard", "row_choice": "player", "seed": 0}
    results = {
        "mode": "arena",
        "agents": rows,
        "games": 5000,
        "games_per_s": 50.0,
        "settings": {**settings, "workers": 1},
    }
    captured: list[Figure] = []
    original = Figure.savefig

    def keep(self: Figure, *args, **kwargs):  # the figure plot_results draws, to measure its texts
        captured.append(self)
        return original(self, *args, **kwargs)

    Figure.savefig = keep  # type: ignore[method-assign]
    try:
        path = plot_results(results, tmp_path / "results.png")
    finally:
        Figure.savefig = original  # type: ignore[method-assign]
    assert path.stat().st_size > 10_000
    (fig,) = captured
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    box = fig.bbox
    texts = [t for ax in fig.axes for t in ax.get_yticklabels() if t.get_text()]
    texts += [fig._suptitle, fig._supxlabel]  # type: ignore[attr-defined]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [
        "0: ppo:best_model", "1: ppo:model_9400000_steps", "2: greedy", "3: random"
    ]  # fmt: skip
    assert f"0: {specs[0]}" in fig._supxlabel.get_text()  # type: ignore[attr-defined]
    extents = [t.get_window_extent(renderer) for t in texts]
    for t, e in zip(texts, extents, strict=True):
        assert e.x0 >= box.x0 - 1 and e.x1 <= box.x1 + 1 and e.y0 >= box.y0 - 1 and e.y1 <= box.y1 + 1, t.get_text()
    ticks = extents[:4]
    assert all(not a.overlaps(b) for i, a in enumerate(ticks) for b in ticks[i + 1 :])
    for ax in fig.axes:  # both panels keep a usable width
        assert ax.get_window_extent(renderer).width > 0.25 * box.width


# --------------------------------------------------------------------------- 7. Monitor CSV headers


def test_monitor_csvs_load_with_sb3_load_results(tmp_path: Path) -> None:
    from stable_baselines3.common.monitor import load_results

    from training.opponents import mixture_sampler
    from training.vec import build_vec_env

    cfg = load_config(SMOKE, ["self_play.enabled=false", "train.n_envs=2"])
    episodes = 0
    for _session in range(2):  # a second session (like --resume) appends to the existing files
        venv = build_vec_env(
            cfg.env,
            cfg.train,
            mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw),
            tmp_path,
            wrap_normalize=False,
        )
        venv.reset()
        for _ in range(25):
            masks = np.array(venv.env_method("action_masks"))
            _, _, dones, _ = venv.step(np.array([int(np.flatnonzero(m)[0]) for m in masks]))
            episodes += int(dones.sum())
        venv.close()
        first = (tmp_path / "0.monitor.csv").read_text().splitlines()
        assert first[0].startswith('#{"t_start": ') and first[1] == "r,l,t"
        frame = load_results(str(tmp_path))
        assert list(frame.columns)[-3:] == ["r", "l", "t"]
        assert len(frame) == episodes >= 2 * (_session + 1)  # 25 steps: 1 or 2 rounds of 10+ decisions per env
        assert (frame["l"] >= 10).all() and (frame["r"] <= 0).all()


def test_the_batched_monitor_writes_every_episode_flushing_once_a_second_and_on_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batched env's VecMonitor flushes its CSV at most once a second (not after each of the ~100 episodes a
    vector step ends) and on close; the file then holds every episode of the infos, in SB3's format."""
    from stable_baselines3.common.monitor import load_results

    from training import vec
    from training.opponents import mixture_sampler

    clock = [1000.0]
    monkeypatch.setattr(vec._ResultsWriterFlushedEachSecond, "clock", staticmethod(lambda: clock[0]))
    cfg = load_config(SMOKE, ["self_play.enabled=false", "train.vec_env=batched", "train.n_envs=16"])
    venv = vec.build_vec_env(
        cfg.env,
        cfg.train,
        mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw),
        tmp_path,
        wrap_normalize=False,
    )
    assert isinstance(venv, vec.BatchedVecMonitor)
    path = tmp_path / "batched.monitor.csv"
    seen: list[tuple[float, int]] = []

    def play(steps: int) -> None:
        for _ in range(steps):
            masks = np.stack(venv.env_method("action_masks"))
            _, _, dones, infos = venv.step(masks.argmax(axis=1))
            seen.extend((infos[i]["episode"]["r"], infos[i]["episode"]["l"]) for i in np.flatnonzero(dones))

    venv.reset()
    play(25)
    assert len(seen) >= 16  # every game ended a round of 10+ decisions
    assert len(path.read_text().splitlines()) == 2  # the header lines only: no flush within the second
    clock[0] += 1.0
    play(12)  # more episodes end: the first row after the second flushes every row so far
    flushed = len(path.read_text().splitlines()) - 2
    assert 16 <= flushed <= len(seen)
    venv.close()
    frame = load_results(str(tmp_path))
    assert len(frame) == len(seen)
    assert [(float(r), int(n)) for r, n in zip(frame["r"], frame["l"], strict=True)] == [
        (pytest.approx(r), n) for r, n in seen
    ]


# --------------------------------------------------------------------------- 8. stopping and resuming


def _smoke(tmp_path: Path, *extra: str) -> Path:
    result = _run("-m", "training.train", str(SMOKE), "--no-progress", "--set", f"train.output_dir={tmp_path}", *extra)
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = (tmp_path / "smoke").iterdir()
    return run_dir


def test_sigterm_saves_a_checkpoint(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "training.train", str(SMOKE), "--no-progress"]
    args += ["--set", f"train.output_dir={tmp_path}", "--set", "train.total_timesteps=10000000"]
    proc = subprocess.Popen(args, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 90
    run_dirs: list[Path] = []
    while time.time() < deadline and not any((d / "checkpoints").is_dir() for d in run_dirs):
        time.sleep(0.5)
        run_dirs = list((tmp_path / "smoke").glob("*")) if (tmp_path / "smoke").is_dir() else []
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err[-2000:]
    assert "stopped by SIGTERM at " in err and "--resume" in err and "Traceback" not in err
    (run_dir,) = run_dirs
    stop = re.search(r"stopped by SIGTERM at ([\d,]+) steps: checkpoint (\S+);", err)
    assert stop, err[-2000:]
    assert int(stop.group(1).replace(",", "")) >= 2048  # at or after the periodic checkpoint of step 2048
    assert Path(stop.group(2)) == run_dir / "checkpoints" / f"model_{stop.group(1).replace(',', '')}_steps.zip"
    assert Path(stop.group(2)).is_file()
    assert not (run_dir / "run.lock.json").exists()  # the lock was released


def test_resume_falls_back_past_a_damaged_checkpoint_then_extends_the_run(tmp_path: Path) -> None:
    run_dir = _smoke(tmp_path)
    # the pool holds pool_size (2) snapshots, not every snapshot taken
    assert sorted(p.name for p in (run_dir / "pool").iterdir()) == ["snapshot_2048.zip", "snapshot_3072.zip"]
    (run_dir / "checkpoints" / "model_3072_steps.zip").write_bytes(b"cut short")  # damaged newest checkpoint
    (run_dir / "final_model.zip").unlink()
    result = _run("-m", "training.train", "--resume", str(run_dir), "--no-progress")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning: skipping damaged checkpoint model_3072_steps.zip" in result.stderr
    assert f"resuming from {run_dir / 'checkpoints' / 'model_2048_steps.zip'}" in result.stderr
    # timings count the resumed part only: 1,024 steps, not 3,072
    assert "1,024 steps in " in result.stderr and "(resumed at 2,048); 3,072 in all" in result.stderr
    # a finished run: resuming says so; raising the budget extends it
    result = _run("-m", "training.train", "--resume", str(run_dir), "--no-progress")
    assert (
        result.returncode == 2 and "the run is finished (3,072 of train.total_timesteps=3,072 steps)" in result.stderr
    )
    result = _run("-m", "training.train", "--resume", str(run_dir), "--set", "train.n_envs=2")
    assert result.returncode == 2 and "--set train.n_envs is not allowed" in result.stderr
    result = _run(
        "-m", "training.train", "--resume", str(run_dir), "--no-progress", "--set", "train.total_timesteps=4096"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "new budget: train.total_timesteps: 3072 -> 4096" in result.stderr
    assert "1,024 steps in " in result.stderr and "(resumed at 3,072); 4,096 in all" in result.stderr
    assert load_config(run_dir / "config.yaml").train.total_timesteps == 4096
    assert (run_dir / "checkpoints" / "model_4096_steps.zip").is_file()
    assert (run_dir / "report_3072_steps.md").is_file() and (run_dir / "final_eval_3072_steps.csv").is_file()
    assert "- steps: 4,096 (resumed at 3,072: this session 1,024 steps in" in (run_dir / "report.md").read_text()
    monitors = sorted(p.name for p in (run_dir / "monitor").iterdir())
    assert "0.monitor.csv" in monitors and "0.until_2048_steps.monitor.csv" in monitors
    assert len((run_dir / "command.txt").read_text().splitlines()) == 3  # the refused resumes wrote nothing
    # the rules travel in the checkpoint: evaluate reads them there
    rules = evaluate_module.checkpoint_rules(run_dir / "final_model.zip")
    assert rules is not None and rules[1].endswith("(checkpoint metadata)")
    assert rules[0]["num_players"] == 4 and rules[0]["episode"] == "round"


# --------------------------------------------------------------------------- 9. arena and evaluate details


def test_arena_ctrl_c_with_workers_is_short_and_leaves_no_folder(tmp_path: Path) -> None:
    out = tmp_path / "arena_out"
    args = [sys.executable, "-m", "sixnimmt_env.arena", "--agents", "mc:64,greedy,greedy,greedy"]
    # a few games first: on a fresh clone numba compiles mc:64's rollouts (minutes on a loaded machine, and
    # compiled code answers Ctrl-C only when it returns); only the answer to Ctrl-C is timed below
    warm = subprocess.run([*args, "--games", "8", "--out", str(tmp_path / "warm"), "--quiet"], cwd=ROOT, timeout=900)
    assert warm.returncode == 0
    args += ["--games", "100000", "--workers", "2", "--out", str(out), "--quiet"]
    proc = subprocess.Popen(
        args,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=like_a_terminal,
    )
    time.sleep(8)  # the workers are starting or playing
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: SIGINT to the whole process group
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # leave nothing running behind a failed test
        proc.communicate()
        raise
    assert proc.returncode == 130
    assert err.strip().splitlines() == ["interrupted: no results written"]
    assert not out.exists()
    # no process of the command is left (workers, plot helper; multiprocessing's resource tracker ends last)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("processes of the interrupted arena command were still running 15 s after it ended")


def test_more_workers_than_cores_warns(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import sixnimmt_env.arena.pool as arena

    monkeypatch.setattr(arena, "usable_cores", lambda: 2)
    assert warn_workers(2) is None
    text = warn_workers(12)
    assert text == (
        "warning: --workers 12 is more than the 2 CPU core(s) available: the processes will take turns on the "
        "cores and run slower than --workers 2"
    )
    assert text in capsys.readouterr().err


def test_arena_cli_prints_the_worker_warning(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    import sixnimmt_env.arena.pool as arena

    monkeypatch.setattr(arena, "usable_cores", lambda: 1)
    arena_main(["--agents", "greedy,random", "--games", "4", "--workers", "2", "--out", str(tmp_path / "o"), "--quiet"])
    assert "warning: --workers 2 is more than the 1 CPU core(s) available" in capsys.readouterr().err


def test_evaluate_shows_a_progress_bar_and_saves_games(run3: Path, tmp_path: Path, capsys) -> None:
    games = tmp_path / "games.jsonl"
    out = tmp_path / "e"
    assert (
        evaluate_module.main(
            [str(run3 / "final_model.zip"), "--games", "3", "--out", str(out), "--save-games", str(games)]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "0/3 [" in captured.err and "game/s]" in captured.err  # tqdm's bar on stderr
    assert f"wrote 3 game records to {games}" in captured.out
    records = read_records(games)
    assert [r.agents[(3 - r.game) % 3] for r in records] == [f"ppo:{run3 / 'final_model.zip'}"] * 3
    for r in records:
        assert r.config.variant == "logic" and r.config.episode == "game"
        replay(r)


@pytest.mark.parametrize("seed", [0])
def test_league_ranks_greedy_above_highest_and_explains_close_ratings(seed: int) -> None:
    """The league of docs/agents.md (2,000 games, seed 0) ranked highest above greedy: online OpenSkill with its default
    drift term tau followed the last games. With tau 0 greedy ranks above highest, and the note flags the pair."""
    results = run_league("greedy,lowest,highest,random,mc:16", 2000, seed)
    rank = {r["agent"]: r["league_rank"] for r in results["agents"]}
    assert rank["greedy"] < rank["highest"]
    assert all(r["sigma"] < 1.2 for r in results["agents"])  # with the default tau sigma stays above 1.6
    note = league_note(results)
    assert "tau 0" in note
    assert "`greedy` (#0) and `highest` (#2): ratings not separated" in note


def test_league_note_flags_only_unseparated_neighbours() -> None:
    def row(p: int, name: str, mu: float, sigma: float, rank: float) -> dict:
        return {"position": p, "agent": name, "mu": mu, "sigma": sigma, "mean_rank": rank, "mean_penalty": 10.0 + p}

    results = {"agents": [row(0, "a", 30.0, 1.0, 2.0), row(1, "b", 29.0, 1.0, 2.1), row(2, "c", 20.0, 1.0, 3.0)]}
    results["ranking"] = [0, 1, 2]
    lines = league_note(results).splitlines()
    assert len(lines) == 2
    assert lines[1].startswith(
        "- `a` (#0) and `b` (#1): ratings not separated (mu 30.00 vs 29.00, difference 1.00 < 2.83)"
    )


def test_evaluation_line_ups_must_fit_the_trained_table() -> None:
    with pytest.raises(ConfigError, match=r"'eval.opponents\[0\]' seats 4 players .* env.num_players is 3: list 2"):
        load_config(SMOKE, ["env.num_players=3"])
    cfg = load_config(SMOKE, ["env.num_players=3", "eval.opponents=['greedy,random']"])
    assert cfg.eval.opponents == ["greedy,random"]
