"""The arena's compiled loop built ahead of time: an extension module that plays without loading numba.

:func:`sixnimmt_env.batched._fused.play_chunk` (the loop behind :func:`sixnimmt_env.batched.arena.play_games`) is
compiled by numba either just in time, from numba's disk cache (importing numba and loading the cached code costs
about a second per process), or ahead of time by ``numba.pycc`` into the extension module
``sixnimmt_env.batched._arena_aot``, which a process imports in milliseconds. It is the same Python source compiled
by the same compiler: the two give the same games (``tests/test_aot.py``).

The extension is built when the package is installed (``setup.py``; it needs numba and a C compiler, and the
install goes on without it if the build fails) or by hand::

    python -m sixnimmt_env.batched.aot          # builds it in place, beside this file

It is compiled for the CPU of the machine that builds it (``target_cpu = "host"``). It carries a hash of the
source files it was built from (:data:`SOURCES`): :func:`loop` uses it only while those files are unchanged, so an
edited kernel plays through numba's just-in-time path until the extension is built again.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parents[1]
"""The ``sixnimmt_env`` package directory."""

MODULE = "sixnimmt_env.batched._arena_aot"
"""The extension module's import name."""

SOURCES = (
    "engine.py",
    "observation.py",
    "batched/kinds.py",
    "batched/params.py",
    "batched/kernel.py",
    "batched/agents.py",
    "batched/_fused.py",
)
"""The files (relative to :data:`PACKAGE_DIR`) whose code the extension compiles, directly or inlined."""

SIGNATURE = "void(int64[::1], int8[:, ::1], uint64[::1], uint64[::1], int64[:, ::1], int64[::1])"
"""``play_chunk``'s argument types: ``cfg``, ``kinds``, ``deal_rng``, ``agent_rng``, ``penalties``, ``rounds``
(C-contiguous arrays; :func:`sixnimmt_env.batched._fused.play_chunk` documents them)."""

_loaded: list[Callable[..., None] | None] = []


def source_key() -> int:
    """A 60-bit hash of the bytes of :data:`SOURCES`: what the extension was built from, or must be to be used."""
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update(name.encode())
        digest.update((PACKAGE_DIR / name).read_bytes())
    return int(digest.hexdigest()[:15], 16)


def loop() -> Callable[..., None] | None:
    """The ahead-of-time ``play_chunk``, or ``None`` if the extension is not built or was built from other sources.

    Decided once per process; importing the extension does not import numba.
    """
    if not _loaded:
        try:
            module: Any = importlib.import_module(MODULE)
        except ImportError:
            _loaded.append(None)
        else:
            _loaded.append(module.play_chunk if module.build_key() == source_key() else None)
    return _loaded[0]


def compiler(output_dir: Path | None = None) -> Any:
    """A ``numba.pycc.CC`` that builds the extension (into ``output_dir``, default beside this file).

    Its exports: ``play_chunk`` (:data:`SIGNATURE`) and ``build_key() -> int64`` (:func:`source_key` of the
    sources compiled).
    """
    import warnings

    with warnings.catch_warnings():  # numba marks pycc as pending deprecation; it is what builds the extension
        warnings.simplefilter("ignore")
        from numba.pycc import CC

    from sixnimmt_env.batched._fused import play_chunk

    key = source_key()

    def build_key() -> int:
        return key

    cc = CC(MODULE.rsplit(".", 1)[1])
    cc.output_dir = str(output_dir or Path(__file__).resolve().parent)
    cc.target_cpu = "host"
    cc.verbose = False
    cc.export("play_chunk", SIGNATURE)(play_chunk.py_func)
    cc.export("build_key", "int64()")(build_key)
    return cc


def build(output_dir: Path | None = None) -> Path:
    """Compile the extension into ``output_dir`` (default: beside this file) and return its path.

    Raises:
        numba's or the C compiler's errors if it cannot be built.
    """
    cc = compiler(output_dir)
    cc.compile()
    return Path(cc.output_dir) / cc.output_file


if __name__ == "__main__":
    print(f"built {build()}")
