"""Register ``sixnimmt/SixNimmt-v0`` with Gymnasium in every Python process of an environment where sixnimmt is
installed, including worker processes that never import :mod:`sixnimmt_env` (SB3's ``SubprocVecEnv``, Gymnasium's
``AsyncVectorEnv`` with ``spawn`` or ``forkserver``).

Gymnasium 1.x has no plugin entry points, so ``sixnimmt_gymnasium.pth`` (installed beside the packages) imports
this module at interpreter start. It costs nothing until Gymnasium is imported: it only puts a one-shot finder
in front of ``sys.meta_path`` that registers the id (entry point ``sixnimmt_env.gym_env:make_env``, imported on
``make``) right after ``gymnasium`` has finished importing. ``import sixnimmt_env`` registers the same id itself
(:func:`sixnimmt_env._register_gymnasium`), so the hook only matters where the package was not imported.
"""

from __future__ import annotations

import contextlib
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

ENV_ID = "sixnimmt/SixNimmt-v0"
ENTRY_POINT = "sixnimmt_env.gym_env:make_env"


def register() -> None:
    """Register :data:`ENV_ID` with the imported Gymnasium, unless it is registered already."""
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point=ENTRY_POINT)


class _AfterGymnasium:
    """A ``sys.meta_path`` finder that finds nothing itself: on the first import of ``gymnasium`` it removes
    itself, lets the other finders find the module and makes its loader call :func:`register` after running it."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name != "gymnasium":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            with contextlib.suppress(Exception):  # never break the import of gymnasium itself
                register()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Register now if Gymnasium is already imported, else when it is."""
    if "gymnasium" in sys.modules:
        register()
    elif not any(isinstance(f, _AfterGymnasium) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasium())  # type: ignore[arg-type]
