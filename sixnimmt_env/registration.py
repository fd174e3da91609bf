"""Registers ``sixnimmt/SixNimmt-v0`` with Gymnasium when :mod:`sixnimmt_env` is imported, without importing
Gymnasium (and so numpy) before the user does.

Gymnasium 1.x has no plugin entry points: an id exists in a process once a module registered it there. For
processes that never import this package (``AsyncVectorEnv`` and ``SubprocVecEnv`` workers started with
``spawn`` or ``forkserver``), Gymnasium's own ``"module:id"`` form names the module to import first::

    gymnasium.make("sixnimmt_env:sixnimmt/SixNimmt-v0")   # imports sixnimmt_env, which registers the id

Importing :mod:`sixnimmt_env` calls :func:`install`: it registers at once if Gymnasium is imported, else it puts a
one-shot finder in front of ``sys.meta_path`` that registers right after Gymnasium's import has finished. Nothing is
installed outside this process.
"""

from __future__ import annotations

import contextlib
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

ENV_ID = "sixnimmt/SixNimmt-v0"
"""The id (namespace ``sixnimmt``)."""

ENTRY_POINT = "sixnimmt_env.gym_env:make_env"
"""The id's entry point, imported by ``gymnasium.make``."""

MODULE_ENV_ID = f"sixnimmt_env:{ENV_ID}"
"""The id in Gymnasium's ``"module:id"`` form: works in a process that never imported this package."""


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

        loader.exec_module = exec_module  # type: ignore[method-assign]  # on purpose: this loader object only
        return spec


def install() -> None:
    """Register now if Gymnasium is already imported, else right after it is."""
    if "gymnasium" in sys.modules:
        register()
    elif not any(isinstance(f, _AfterGymnasium) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasium())
