"""Installs ``sixnimmt_gymnasium.pth`` beside the packages and builds the arena's ahead-of-time compiled loop
(everything else is in pyproject.toml).

The ``.pth`` file registers ``sixnimmt/SixNimmt-v0`` with Gymnasium in processes that never import
``sixnimmt_env`` (see ``sixnimmt_gymnasium_hook.py``). setuptools has no declarative way to put a file in
site-packages itself, so it goes in as a data file at site-packages' path relative to the install prefix.

The extension ``sixnimmt_env.batched._arena_aot`` is the arena's game loop compiled by ``numba.pycc``
(``sixnimmt_env/batched/aot.py``): it lets ``python -m sixnimmt_env.arena`` play heuristic agents without
loading numba. It is optional: if numba, a C/C++ compiler or the build itself fails, the install goes on without
it (with a warning) and the arena uses numba's just-in-time compiled loop, which plays the same games.
"""

import os
import sys
import sysconfig

import setuptools.command.build_ext as build_ext_module
from setuptools import Extension, setup

ROOT = os.path.dirname(os.path.abspath(__file__))


def warn(text: str) -> None:
    print(
        f"sixnimmt: the arena's ahead-of-time loop is not built ({text}); the arena plays numba's just-in-time loop",
        file=sys.stderr,
    )


def aot_extensions() -> list[Extension]:
    """The ahead-of-time extension to build, or none when numba or a compiler cannot be set up here."""
    sys.path.insert(0, ROOT)
    try:
        from sixnimmt_env.batched.aot import PACKAGE_DIR, SOURCES, compiler

        depends = [str(PACKAGE_DIR / name) for name in SOURCES]  # rebuilt when any compiled source changes
        return [compiler().distutils_extension(optional=True, depends=depends)]
    except Exception as exc:  # numba missing; no compiler: numba's toolchain raises RuntimeError
        warn(f"{type(exc).__name__}: {exc}")
        return []


extensions = aot_extensions()  # first: numba.pycc replaces setuptools' build_ext with its own subclass
base_build_ext = build_ext_module.build_ext


class OptionalBuildExt(base_build_ext):
    """build_ext that skips the optional extension on any error, numba's compile errors included."""

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # numba's own compile errors too, not only the compiler's
            if not getattr(ext, "optional", False):
                raise
            warn(f"{type(exc).__name__}: {exc}")


site_packages = os.path.relpath(sysconfig.get_path("purelib"), sysconfig.get_path("data"))
setup(
    data_files=[(site_packages, ["sixnimmt_gymnasium.pth"])],
    ext_modules=extensions,
    cmdclass={"build_ext": OptionalBuildExt},
)
