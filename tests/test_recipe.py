"""Training recipes (training.recipe): the stages in one file, run in order by one command, done stages kept, weights
never replaced without --force; the shipped champion recipe names every weights file `champion` plays."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sixnimmt_env.champion import BASELINES, BY_TABLE, WEIGHTS, read_weights
from training.recipe import load_recipe, main, stage_command, stage_status
from training.train_config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"


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
    stranger = (ROOT / "sixnimmt_env" / "weights" / "champion_v1.npz").read_bytes()
    (folder / "second.npz").write_bytes(stranger)
    loaded, where = load_recipe(recipe)
    status = stage_status(loaded.stages[1], where)
    assert status.state == "other" and "champion.yaml" in status.detail
    assert stage_status(loaded.stages[0], where).state == "missing"
    assert main([str(recipe)]) == 2  # refused before any training: the first stage is not trained either
    err = capsys.readouterr().err
    assert "second.npz exists (other: written from configs/champion.yaml)" in err and "--force" in err
    assert not (folder / "first.npz").exists() and (folder / "second.npz").read_bytes() == stranger


def test_a_failing_stage_stops_the_run_and_says_how_to_go_on(tmp_path: Path, capsys) -> None:
    recipe = _write(
        tmp_path / "r.yaml",
        f"stages:\n  - {{name: bad, config: {SMOKE}, out: bad.npz, set: [train.total_timesteps=-5]}}\n"
        f"  - {{name: after, config: {SMOKE}, out: after.npz}}\n",
    )
    assert main([str(recipe)]) == 2
    err = capsys.readouterr().err
    assert "total_timesteps" in err and "--from bad --force" in err and "[2/2]" not in err
    assert not (tmp_path / "bad.npz").exists() and not (tmp_path / "after.npz").exists()


@pytest.mark.parametrize(
    ("stages", "message"),
    [
        ("  - {name: a, config: CFG, out: a.npz, outt: b}", "stages.0.outt: Extra inputs are not permitted"),
        ("  - {name: a, config: CFG}", "stages.0.out: Field required"),
        ("  - {name: a, config: CFG, out: a.npz}\n  - {name: a, config: CFG, out: b.npz}", "'a' names two stages"),
        ("  - {name: a, config: CFG, out: a.npz}\n  - {name: b, config: CFG, out: a.npz}", "also the out of stage 'a'"),
        ("  - {name: a, config: nowhere.yaml, out: a.npz}", "stages.0.config: 'nowhere.yaml' not found"),
        ("  - {name: a, config: CFG, out: a.npz, set: [train.seed]}", "KEY=VALUE (as --set takes), got 'train.seed'"),
        ("  - {name: a b, config: CFG, out: a.npz}", "stages.0.name: Value error, a stage name is letters"),
        (" []", "stages: Value error, a recipe lists at least one stage"),
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
    recipe, folder = load_recipe("configs/champion_recipe.yaml")
    outs = [(folder / s.out).resolve() for s in recipe.stages]
    played = {WEIGHTS.resolve(), *(path.resolve() for path in BY_TABLE.values())}  # 4 players; 2, 3, 5..10
    kept = {BASELINES[name].resolve() for name in BASELINES if name != "games"}  # the stages and default-ppo
    assert len(outs) == len(set(outs)) == 12 and set(outs) == played | kept | {
        ROOT / "sixnimmt_env/weights/champion_tables_1.npz"
    }
    for stage in recipe.stages:  # each config loads with its overrides; the shipped file is what it wrote
        load_config(folder / stage.config, stage.set)
        assert stage_status(stage, folder).state == "done", stage.name
    overrides = ["train.vec_env=batched", "train.max_minutes=null", "train.total_timesteps=9420800"]
    assert stage_command(recipe.stages[0], folder) == [
        sys.executable, "-m", "training.train_champion", "configs/baseline_ppo_4p.yaml",
        *(x for o in overrides for x in ("--set", o)), "--out", "sixnimmt_env/weights/default_ppo_4p.npz",
    ]  # fmt: skip
    assert stage_command(recipe.stages[8], folder, force=True)[3:] == [
        "configs/champion_features_league_2.yaml", "--out", "sixnimmt_env/champion.npz", "--force",
    ]  # fmt: skip


def test_training_a_recipe_as_a_config_says_how_to_run_it() -> None:
    with pytest.raises(ConfigError, match=r"a recipe of training stages, not a training config; run it with") as err:
        load_config(ROOT / "configs" / "champion_recipe.yaml")
    assert str(err.value).endswith("python -m training.recipe " + str(ROOT / "configs" / "champion_recipe.yaml"))
