"""Run every recipe of README.md's "Use it from your RL library" section as it is written (each <= 15 lines)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from conftest import cache_tianshou_kernels

README = Path(__file__).resolve().parent.parent / "README.md"


def recipes() -> dict[str, str]:
    """``{library: code}`` from the section: each ``**Library**`` heading and the python block below it."""
    text = README.read_text()
    section = text.split("## Use it from your RL library", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"\*\*([^*\n]+)\*\*[^\n]*\n\n```python\n(.*?)```", section, flags=re.DOTALL)
    return {name: code for name, code in found}


RECIPES = recipes()


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
    exec(compile(RECIPES[name], f"README recipe {name}", "exec"), {"__name__": "__readme__"})
    if name == "Gymnasium":
        assert (tmp_path / "videos" / "rl-video-episode-0.mp4").stat().st_size > 10_000
