"""Training recipes (lab.recipe): the stages in one file, run in order by one command, done stages kept, weights
never replaced without --force; the shipped champion recipe names every weights file `champion` plays."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import lab.recipe as recipe_module
from lab.recipe import check_stages, load_recipe, main, overrides, stage_command, stage_status
from sixnimmt_env.champion import BASELINES, BY_TABLE, WEIGHTS, read_weights
from training.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "configs" / "smoke.yaml"
STAGE_1 = ROOT / "lab" / "weights" / "champion_v1.npz"
"""Stage 1's weights, written by ``lab/configs/champion.yaml``: a weights file that a smoke stage did not write."""
RECIPE = ROOT / "lab" / "configs" / "recipes" / "champion.yaml"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _two_stages(tmp_path: Path, steps: int = 1024) -> Path:
    """A recipe of two smoke stages; the second starts from the first's weights."""
    runs = tmp_path / "runs"
    return _write(
        tmp_path / "recipe.yaml",
        f"""stages:
  - name: first
    config: {SMOKE}
    set: [train.output_dir={runs}, train.total_timesteps={steps}]
    out: w/first.npz
  - name: second
    config: {SMOKE}
    set: [train.output_dir={runs}, train.total_timesteps={steps}, train.init_from={tmp_path / "w" / "first.npz"}]
    out: w/second.npz
""",
    )


def test_a_recipe_trains_its_stages_in_order_and_keeps_done_ones(tmp_path: Path, capsys) -> None:
    recipe = _two_stages(tmp_path)
    assert main([str(recipe)]) == 0
    first, second = tmp_path / "w" / "first.npz", tmp_path / "w" / "second.npz"
    meta = [read_weights(p)[1] for p in (first, second)]
    assert [m["steps"] for m in meta] == [1024, 1024]
    assert meta[1]["config"].endswith("smoke.yaml") and f"train.init_from={first}" in meta[1]["overrides"]
    err = capsys.readouterr().err
    assert "[1/2] stage first" in err and "[2/2] stage second" in err and "stages trained: first" in err
    stamps = [p.stat().st_mtime_ns for p in (first, second)]

    assert main([str(recipe)]) == 0  # both done: nothing trained, nothing replaced
    assert "done already (kept): first, second" in capsys.readouterr().err
    assert [p.stat().st_mtime_ns for p in (first, second)] == stamps

    assert main([str(recipe), "--from", "second"]) == 2  # a done stage again replaces its weights: --force
    assert "stage 'second'" in capsys.readouterr().err
    assert main([str(recipe), "--from", "second", "--force"]) == 0
    assert first.stat().st_mtime_ns == stamps[0] and second.stat().st_mtime_ns != stamps[1]


def test_weights_written_by_another_config_are_not_replaced_without_force(tmp_path: Path, capsys) -> None:
    recipe = _two_stages(tmp_path)
    folder = tmp_path / "w"
    folder.mkdir()
    stranger = STAGE_1.read_bytes()
    (folder / "second.npz").write_bytes(stranger)
    loaded, where = load_recipe(recipe)
    status = stage_status(loaded.stages[1], where)
    assert status.state == "other" and "champion.yaml" in status.detail
    assert stage_status(loaded.stages[0], where).state == "missing"
    assert main([str(recipe)]) == 2  # refused before any training: the first stage is not trained either
    err = capsys.readouterr().err
    assert "second.npz exists (other: written from configs/champion.yaml)" in err and "--force" in err  # its meta
    assert not (folder / "first.npz").exists() and (folder / "second.npz").read_bytes() == stranger


def test_a_bad_stage_config_stops_the_run_before_any_training(tmp_path: Path, capsys) -> None:
    recipe = _write(
        tmp_path / "r.yaml",
        f"stages:\n  - {{name: fine, config: {SMOKE}, out: fine.npz}}\n"
        f"  - {{name: bad, config: {SMOKE}, out: bad.npz, set: [train.total_timesteps=-5]}}\n"
        f"  - {{name: recipe, config: {RECIPE}, out: r.npz}}\n"
        f"  - {{name: nowhere, config: {SMOKE}, out: r.yaml/x.npz}}\n",
    )
    assert main([str(recipe)]) == 2
    err = capsys.readouterr().err
    assert "stage 'bad'" in err and "total_timesteps" in err
    assert "stage 'recipe'" in err and "a recipe of training stages, not a training config" in err
    assert f"stage 'nowhere': its out {tmp_path / 'r.yaml' / 'x.npz'} cannot be written: its folder" in err
    assert f"{str(tmp_path / 'r.yaml')!r} is a file, not a folder" in err
    assert "[1/" not in err and not (tmp_path / "fine.npz").exists()  # nothing trained


def test_a_file_an_earlier_stage_writes_may_be_missing_when_the_run_is_checked(tmp_path: Path) -> None:
    recipe, folder = load_recipe(_two_stages(tmp_path))
    assert check_stages(recipe.stages, folder) == []  # the second stage's init_from is the first's out
    problems = check_stages(recipe.stages[1:], folder)  # alone, its init_from is missing
    assert len(problems) == 1 and problems[0].startswith("stage 'second':") and "first.npz" in problems[0]


def test_a_failing_stage_stops_the_run_and_says_how_to_go_on(tmp_path: Path, monkeypatch, capsys) -> None:
    recipe = _two_stages(tmp_path)
    fail = [sys.executable, "-c", "raise SystemExit(3)"]  # a stage whose training process fails
    monkeypatch.setattr(recipe_module, "stage_command", lambda stage, folder, force=False: fail)
    assert main([str(recipe)]) == 3
    err = capsys.readouterr().err
    assert "[1/2] stage first" in err and "[2/2]" not in err
    assert f"stage 'first' failed (exit code 3); go on with: python -m lab.recipe {recipe}\n" in err  # plain again
    (tmp_path / "w").mkdir(exist_ok=True)  # made by the first run, for the locks
    (tmp_path / "w" / "second.npz").write_bytes(STAGE_1.read_bytes())
    assert main([str(recipe), "--only", "first,second", "--force"]) == 3  # an out that exists: --force in the hint
    assert f"go on with: python -m lab.recipe {recipe} --only first,second --force\n" in capsys.readouterr().err


def test_paths_in_overrides_are_relative_to_the_recipes_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    _write(
        tmp_path / "r.yaml",
        f"stages:\n  - {{name: a, config: {SMOKE}, out: w/a.npz, set: [train.total_timesteps=1024, "
        f"train.output_dir={tmp_path / 'runs'}]}}\n"
        f"  - {{name: b, config: {SMOKE}, out: w/b.npz, set: [train.total_timesteps=1024, "
        f"train.output_dir={tmp_path / 'runs'}, train.init_from=w/a.npz]}}\n",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    loaded, folder = load_recipe("../r.yaml")
    assert overrides(loaded.stages[1], folder)[2] == f'train.init_from="{tmp_path / "w" / "a.npz"}"'
    assert overrides(loaded.stages[0], folder) == loaded.stages[0].set  # no path: as written
    assert main(["../r.yaml"]) == 0
    assert read_weights(tmp_path / "w" / "b.npz")[1]["overrides"][2] == f'train.init_from="{tmp_path / "w" / "a.npz"}"'
    assert main(["../r.yaml"]) == 0 and "done already (kept): a, b" in capsys.readouterr().err


def test_a_second_run_into_the_same_weights_is_refused_while_the_first_trains(tmp_path: Path) -> None:
    recipe = _two_stages(tmp_path, steps=8192)
    first = subprocess.Popen([sys.executable, "-m", "lab.recipe", str(recipe)], cwd=ROOT, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while b"[1/2]" not in (line := first.stderr.readline()) and time.monotonic() < deadline:  # type: ignore[union-attr]
            assert line, "the first run ended before its first stage"
        second = subprocess.run(
            [sys.executable, "-m", "lab.recipe", str(recipe)], cwd=ROOT, capture_output=True, text=True
        )
        assert second.returncode == 2
        held = f"weights file {tmp_path / 'w' / 'first.npz'} is in use by another recipe run (pid {first.pid} on"
        assert held in second.stderr
    finally:
        first.communicate(timeout=120)
    assert first.returncode == 0 and (tmp_path / "w" / "second.npz").exists()


@pytest.mark.parametrize(
    ("stages", "message"),
    [
        ("  - {name: a, config: CFG, out: a.npz, outt: b}", "stages.0.outt: Extra inputs are not permitted"),
        ("  - {name: a, config: CFG}", "stages.0.out: Field required"),
        ("  - {name: a, config: CFG, out: a.npz}\n  - {name: a, config: CFG, out: b.npz}", "'a' names two stages"),
        ("  - {name: a, config: CFG, out: a.npz}\n  - {name: b, config: CFG, out: a.npz}", "also the out of stage 'a'"),
        ("  - {name: a, config: nowhere.yaml, out: a.npz}", "stages.0.config: 'nowhere.yaml' not found"),
        ("  - {name: a, config: CFG, out: a.npz, set: [train.seed]}", "KEY=VALUE (as --set takes): 'train.seed'"),
        ("  - {name: a b, config: CFG, out: a.npz}", "stages.0.name: Value error, a stage name is ASCII letters"),
        (" []", "stages: Value error, a recipe lists at least one stage"),
        ("  - {name: a, config: CFG, out: a.npz}\nstages: []", "the key 'stages' is given twice"),
    ],
)
def test_a_bad_recipe_is_an_error_naming_the_file_and_key(tmp_path: Path, stages: str, message: str) -> None:
    body = stages if stages.startswith(" [") else "\n" + stages  # a flow list on the key's line, else entries below
    path = _write(tmp_path / "bad.yaml", "stages:" + body.replace("CFG", str(SMOKE)) + "\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml") as err:
        load_recipe(path)
    assert message in str(err.value)
    assert main([str(path), "--list"]) == 2


def test_an_unknown_stage_name_lists_the_recipes_stages(tmp_path: Path, capsys) -> None:
    assert main([str(_two_stages(tmp_path)), "--only", "third"]) == 2
    assert "--only: no stage 'third'; the recipe's stages are first, second" in capsys.readouterr().err


def test_the_champion_recipe_names_every_weights_file_champion_plays_and_all_are_its_own(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    recipe, folder = load_recipe("lab/configs/recipes/champion.yaml")
    outs = [(folder / s.out).resolve() for s in recipe.stages]
    played = {WEIGHTS.resolve(), *(path.resolve() for path in BY_TABLE.values())}  # 4 players; 2, 3, 5..10
    shipped = {path.resolve() for path in BASELINES.values()}  # the above and default-ppo
    # stages 1 to 7 and the first table stage, kept in the lab; not the whole-game weights nor the exploiter, which
    # no stage of champion needs
    past = {ROOT / "lab/weights" / f"champion_v{i}.npz" for i in range(1, 8)} | {
        ROOT / "lab/weights/champion_tables_1.npz"
    }
    assert played < shipped and len(shipped) == 4
    assert len(outs) == len(set(outs)) == 12 and set(outs) == shipped | past
    for stage in recipe.stages:  # each config loads with its overrides; the shipped file is what it wrote
        load_config(folder / stage.config, stage.set)
        assert stage_status(stage, folder).state == "done", stage.name
    overrides = ["train.vec_env=batched", "train.max_minutes=null", "train.total_timesteps=9420800"]
    assert stage_command(recipe.stages[0], folder) == [
        sys.executable, "-m", "lab.train_champion", "configs/baseline_ppo_4p.yaml",
        *(x for o in overrides for x in ("--set", o)), "--out", "sixnimmt_env/weights/default_ppo_4p.npz",
    ]  # fmt: skip
    assert stage_command(recipe.stages[8], folder, force=True)[3:] == [
        "lab/configs/champion_features_league_2.yaml", "--out", "sixnimmt_env/champion.npz", "--force",
    ]  # fmt: skip


def test_training_a_recipe_as_a_config_says_how_to_run_it() -> None:
    with pytest.raises(ConfigError, match=r"a recipe of training stages, not a training config; run it with") as err:
        load_config(RECIPE)
    assert str(err.value).endswith("python -m lab.recipe " + str(RECIPE))


def test_an_empty_recipe_or_an_empty_only_is_an_error(tmp_path: Path, capsys) -> None:
    with pytest.raises(ConfigError, match="the recipe is empty"):
        load_recipe(_write(tmp_path / "empty.yaml", "# nothing\n"))
    recipe = str(_two_stages(tmp_path))
    for only in ("", ","):
        assert main([recipe, "--only", only]) == 2
        assert (
            "--only: give stage names, comma-separated; the recipe's stages are first, second"
            in capsys.readouterr().err
        )
