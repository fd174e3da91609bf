"""Installs ``sixnimmt_gymnasium.pth`` beside the packages and builds the arena's ahead-of-time compiled loop
(everything else is in pyproject.toml).

The ``.pth`` file registers ``sixnimmt/SixNimmt-v0`` with Gymnasium in processes that never import
``sixnimmt_env`` (see ``sixnimmt_gymnasium_hook.py``). setuptools has no declarative way to put a file in
site-packages itself, so it goes in as a data file at site-packages' path relative to the install prefix.

The extension ``sixnimmt_env.batched._arena_aot`` is the arena's game loop compiled by ``numba.pycc``
(``sixnimmt_env/batched/aot.py``): it lets ``python -m sixnimmt_env.arena`` play heuristic agents without
loading numba. It is optional: if numba or a C compiler is missing, the install goes on without it and the arena
uses numba's just-in-time compiled loop (the same games).
"""

import os
import sys
import sysconfig

from setuptools import setup


def aot_extensions() -> list:
    """The ahead-of-time extension to build, or none when numba cannot be imported here."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        from sixnimmt_env.batched.aot import compiler

        return [compiler().distutils_extension(optional=True)]
    except ImportError as exc:
        print(f"sixnimmt: not building the arena's ahead-of-time loop: {exc}", file=sys.stderr)
        return []


site_packages = os.path.relpath(sysconfig.get_path("purelib"), sysconfig.get_path("data"))
setup(data_files=[(site_packages, ["sixnimmt_gymnasium.pth"])], ext_modules=aot_extensions())
