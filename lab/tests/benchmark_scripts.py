"""The lab's benchmark scripts (``lab/benchmarks/*.py``) imported as modules, for the lab's tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

FOLDER = Path(__file__).resolve().parents[1] / "benchmarks"
"""``lab/benchmarks/``: scripts, not a package."""


def load_benchmark(name: str) -> ModuleType:
    """The script ``lab/benchmarks/<name>.py`` imported as the module ``name``.

    Raises:
        FileNotFoundError: no such script.
    """
    path = FOLDER / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise FileNotFoundError(f"no benchmark script {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module
