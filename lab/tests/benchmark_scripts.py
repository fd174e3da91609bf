"""The lab's benchmark scripts (``lab/benchmarks/*.py``) imported as modules, for the lab's tests."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from benchmarks.tests.script_modules import load_script

FOLDER = Path(__file__).resolve().parents[1] / "benchmarks"
"""``lab/benchmarks/``: scripts, not a package."""


def load_benchmark(name: str) -> ModuleType:
    """The script ``lab/benchmarks/<name>.py`` imported as the module ``name`` (:func:`load_script`).

    Raises:
        FileNotFoundError: no such script.
    """
    return load_script(FOLDER, name)
