"""Run the Python code of the README and of the documentation site (docs/) as it is written: every library's
recipe on docs/tutorials/libraries.md as a script (each <= 15 lines, skrl's 24), once more for each variant its
``# or X`` comments name; the tutorials (training the default config, with configs/smoke.yaml in its place, then
evaluating the checkpoint it made; a bot at the play table) and every other ``python`` block of a page."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LIBRARIES = DOCS / "tutorials" / "libraries.md"
TRAINING = [DOCS / "tutorials" / "train.md", DOCS / "tutorials" / "evaluate.md"]  # one after the other

VARIANTS = {
    "SubprocVecEnv": "DummyVecEnv",
    "SubprocVectorEnv": "DummyVectorEnv",
    '"sync"': '"async"',
    "rllib_aec_env": "rllib_parallel_env",
}
"""``# or X`` in a recipe: the word ``VARIANTS[X]`` of the recipe, replaced by ``X`` everywhere, is the variant."""

LINES = {"skrl": 24}
"""Longer recipes: skrl's models are classes (a masked policy and a value function), and its IPPO needs a
workaround."""

RUNNER = """
import runpy, sys
if "tianshou" in sys.argv[1]:
    sys.path.insert(0, {tests!r})
    from conftest import cache_tianshou_kernels
    cache_tianshou_kernels()
runpy.run_path(sys.argv[1], run_name="__main__")
"""
"""Runs the script as ``python script.py`` would (``__main__``, its path as the main module's file, so that
worker processes started with spawn or forkserver import it as ``__mp_main__``). For Tianshou it lets numba
cache Tianshou's compiled helpers first (``conftest.cache_tianshou_kernels``), as the in-process tests do."""


def python_blocks(page: Path) -> list[str]:
    """The ``python`` code blocks of a Markdown page, in order."""
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.DOTALL | re.MULTILINE)


def recipes() -> dict[str, str]:
    """``{library: code}`` from the libraries page: each ``**Library**`` heading and the python block below it."""
    found = re.findall(r"\*\*([^*\n]+)\*\*[^\n]*\n\n```python\n(.*?)```", LIBRARIES.read_text(), flags=re.DOTALL)
    return {name: code for name, code in found}


def variants(code: str) -> dict[str, str]:
    """``{label: code}``: the recipe as written, and one script per ``# or X`` comment.

    Raises:
        KeyError: a ``# or X`` whose ``X`` is not in :data:`VARIANTS` (a variant this test would not run).
    """
    scripts = {"as written": code}
    for named in re.findall(r"# or (\S+)", code):
        written = VARIANTS[named]
        assert written in code, f"# or {named}: the recipe has no {written} to replace"
        scripts[named.strip('"')] = code.replace(written, named)
    return scripts


RECIPES = recipes()
CASES = [(name, label, script) for name, code in RECIPES.items() for label, script in variants(code).items()]
# every other page's blocks, as (page, index): the README's example, the environment page, the play tutorial, ...
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
BLOCKS = [
    (page, i) for page in PAGES if page != LIBRARIES and page not in TRAINING for i in range(len(python_blocks(page)))
]


def _run(code: str, name: str) -> None:
    exec(compile(code, name, "exec"), {"__name__": "__docs__"})


def test_one_recipe_per_library_each_at_most_15_lines() -> None:
    assert list(RECIPES) == [
        "PettingZoo",
        "SuperSuit",
        "Gymnasium",
        "Stable-Baselines3 / sb3-contrib",
        "TorchRL",
        "Tianshou",
        "Ray RLlib",
        "skrl",
        "OpenSpiel",
    ]
    for name, code in RECIPES.items():
        assert len(code.strip().splitlines()) <= LINES.get(name, 15), name
    # the pages hold python blocks where this module expects them (a page renamed or emptied fails here)
    assert [len(python_blocks(page)) for page in TRAINING] == [1, 1]
    names = {str(page.relative_to(ROOT)) for page, _ in BLOCKS}
    assert {"README.md", "docs/environment.md", "docs/tutorials/play.md"} <= names


def test_the_variants_named_are_those_run() -> None:
    """Each named variant changes the recipe; the list of runs is what the README names."""
    assert [(name, label) for name, label, _ in CASES if label != "as written"] == [
        ("Gymnasium", "sync"),
        ("Stable-Baselines3 / sb3-contrib", "SubprocVecEnv"),
        ("Tianshou", "SubprocVectorEnv"),
        ("Ray RLlib", "rllib_aec_env"),
    ]
    for name, label, script in CASES:
        if label != "as written":
            assert script != RECIPES[name] and label in script


@pytest.mark.parametrize(("name", "label", "script"), CASES, ids=[f"{n}-{lab}" for n, lab, _ in CASES])
def test_recipe_runs_as_a_script(name: str, label: str, script: str, tmp_path: Path) -> None:
    path = tmp_path / f"{re.sub(r'[^a-z0-9]+', '_', name.lower())}_recipe.py"
    path.write_text(script)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # tiny networks: torch's thread pool only slows a 2-core machine
    tests = str(Path(__file__).resolve().parent)
    run = subprocess.run(
        [sys.executable, "-c", RUNNER.format(tests=tests), str(path)],
        cwd=tmp_path,  # recipes may write files (videos/)
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"{name} ({label}) failed:\n{run.stderr[-3000:]}"
    if name == "Gymnasium":
        assert (tmp_path / "videos" / "rl-video-episode-0.mp4").stat().st_size > 10_000
    if name == "SuperSuit":
        assert run.stdout.split()[-4:] == ["(16,", "506)", "(16,", "109)"]
    if name == "Stable-Baselines3 / sb3-contrib":
        mean, std = map(float, re.findall(r"-?\d+\.\d+", run.stdout.splitlines()[-1]))  # (np.float64(-8.4), ...)
        assert mean < 0 and std >= 0  # minus the bullheads per round


@pytest.mark.parametrize(("page", "index"), BLOCKS, ids=[f"{p.relative_to(ROOT)}:{i}" for p, i in BLOCKS])
def test_page_block_runs(
    page: Path, index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_torch_thread: None
) -> None:
    monkeypatch.chdir(tmp_path)
    _run(python_blocks(page)[index], f"{page.name} block {index}")


def test_train_then_evaluate_tutorials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    # the default config's name with configs/smoke.yaml's content: the pages run as they are written, in seconds
    (tmp_path / "configs").mkdir()
    shutil.copy(ROOT / "configs" / "smoke.yaml", tmp_path / "configs" / "ppo_4p.yaml")
    monkeypatch.chdir(tmp_path)
    train, evaluate = (python_blocks(page)[0] for page in TRAINING)
    _run(train, "tutorials/train.md")
    runs = list((tmp_path / "runs" / "ppo_4p").iterdir())
    assert len(runs) == 1
    assert {"config.yaml", "final_model.zip", "report.md", "eval.csv"} <= {p.name for p in runs[0].iterdir()}
    assert "final_model.zip" in capsys.readouterr().out  # the listing the tutorial prints
    _run(evaluate, "tutorials/evaluate.md")
    (results,) = (runs[0] / "evaluations").iterdir()
    table = (results / "results.md").read_text()
    assert "greedy" in table and "ppo:" in table
    assert capsys.readouterr().out.rstrip("\n").endswith(table.rstrip("\n"))  # the tutorial prints the table last
