"""Run the Python code of the README and of the documentation site (docs/) as it is written: every library's
recipe on docs/tutorials/libraries.md (each <= 15 lines), the tutorials (training the default config, with
configs/smoke.yaml in its place, then evaluating the checkpoint it made; a bot at the play table) and every other
``python`` block of a page."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from conftest import cache_tianshou_kernels

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LIBRARIES = DOCS / "tutorials" / "libraries.md"
TRAINING = [DOCS / "tutorials" / "train.md", DOCS / "tutorials" / "evaluate.md"]  # one after the other


def python_blocks(page: Path) -> list[str]:
    """The ``python`` code blocks of a Markdown page, in order."""
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.DOTALL | re.MULTILINE)


def recipes() -> dict[str, str]:
    """``{library: code}`` from the libraries page: each ``**Library**`` heading and the python block below it."""
    found = re.findall(r"\*\*([^*\n]+)\*\*[^\n]*\n\n```python\n(.*?)```", LIBRARIES.read_text(), flags=re.DOTALL)
    return {name: code for name, code in found}


RECIPES = recipes()
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
        "OpenSpiel",
    ]
    for name, code in RECIPES.items():
        assert len(code.strip().splitlines()) <= 15, name
    # the pages hold python blocks where this module expects them (a page renamed or emptied fails here)
    assert [len(python_blocks(page)) for page in TRAINING] == [1, 1]
    names = {str(page.relative_to(ROOT)) for page, _ in BLOCKS}
    assert {"README.md", "docs/environment.md", "docs/tutorials/play.md"} <= names


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", list(RECIPES))
def test_recipe_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_torch_thread: None) -> None:
    monkeypatch.chdir(tmp_path)  # recipes may write files (videos/)
    if name == "Tianshou":
        cache_tianshou_kernels()
    _run(RECIPES[name], f"recipe {name}")
    if name == "Gymnasium":
        assert (tmp_path / "videos" / "rl-video-episode-0.mp4").stat().st_size > 10_000


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
