"""Benchmark scripts (``benchmarks/*.py``, ``lab/benchmarks/*.py``: scripts, not packages) imported as modules, for
the tests beside them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(folder: Path, name: str) -> ModuleType:
    """The script ``folder/<name>.py`` imported as the module ``name``.

    Raises:
        FileNotFoundError: no such script.
    """
    path = folder / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise FileNotFoundError(f"no benchmark script {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module
