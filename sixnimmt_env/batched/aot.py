"""The arena's compiled loop built ahead of time: an extension module that plays without loading numba.

:func:`sixnimmt_env.batched._fused.play_chunk` (the loop behind :func:`sixnimmt_env.batched.arena.play_games`) is
compiled by numba either just in time, from numba's disk cache (importing numba and loading the cached code costs
about a second per process), or ahead of time by ``numba.pycc`` into the extension module
``sixnimmt_env.batched._arena_aot``, which a process imports in milliseconds. It is the same Python source compiled
by numba (at install, by the numba of the build environment): the two give the same games (``tests/test_aot.py``).

The extension is built when the package is installed (``setup.py``; it needs numba and a C/C++ compiler, and
the install goes on without it if the build fails) or by hand::

    python -m sixnimmt_env.batched.aot             # builds it in place, beside this file, and clears numba's caches
    python -m sixnimmt_env.batched.aot --if-stale  # the same only if it is missing or stale (make install)

It is compiled for numba's generic CPU of the platform (no ``target_cpu``: a wheel runs on any machine of the
platform; compiling for the building machine's own CPU model measured no faster). It carries a hash of the
source files it was built from (:data:`SOURCES`): :func:`loop` uses it only while those files are unchanged, so an
edited kernel plays through numba's just-in-time path until the extension is built again. After such an edit,
numba's own disk caches are stale too (a cached caller keeps the old inlined kernel code): the command above
(and ``make install``, which runs it with ``--if-stale``) deletes them (:func:`clear_numba_caches`).
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

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
    "batched/aot.py",
)
"""The files (relative to :data:`PACKAGE_DIR`) whose code the extension compiles, directly or inlined, and this
one (its signature and build settings)."""

ARGUMENTS = (
    ("cfg", np.int64, 1),
    ("kinds", np.int8, 2),
    ("deal_rng", np.uint64, 1),
    ("agent_rng", np.uint64, 1),
    ("penalties", np.int64, 2),
    ("rounds", np.int64, 1),
)
"""``play_chunk``'s arguments as ``(name, dtype, ndim)``, C-contiguous arrays
(:func:`sixnimmt_env.batched._fused.play_chunk` documents them): the compiled signature, and checked before every
call, since the compiled entry point reads the arrays' memory as these types without a check of its own."""

SIGNATURE = "void({})".format(
    ", ".join(f"{np.dtype(dtype).name}[{', '.join([':'] * (ndim - 1) + ['::1'])}]" for _, dtype, ndim in ARGUMENTS)
)
"""The exported signature, numba's notation of :data:`ARGUMENTS`:
``void(int64[::1], int8[:, ::1], uint64[::1], uint64[::1], int64[:, ::1], int64[::1])``."""

_loaded: list[Callable[..., None] | None] = []


def source_key() -> int:
    """A 60-bit hash of the bytes of :data:`SOURCES`: what the extension was built from, or must be to be used."""
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update(name.encode())
        digest.update((PACKAGE_DIR / name).read_bytes())
    return int(digest.hexdigest()[:15], 16)


def loop() -> Callable[..., None] | None:
    """The ahead-of-time ``play_chunk`` (with its arguments checked, :func:`checked`), or ``None`` if the extension
    is not built, cannot be loaded, or was built from other sources.

    Decided once per process; importing the extension does not import numba.
    """
    if not _loaded:
        try:
            module: Any = importlib.import_module(MODULE)
            current = module.build_key() == source_key()
        except (ImportError, OSError, AttributeError):  # not built, a source file missing, not our extension
            current = False
        _loaded.append(checked(module.play_chunk) if current else None)
    return _loaded[0]


def checked(compiled: Callable[..., None]) -> Callable[..., None]:
    """``compiled`` behind a check of its arguments against :data:`ARGUMENTS`.

    Raises (from the returned function):
        TypeError: naming the argument, for a wrong count, dtype, dimension, a non-contiguous or read-only array.
    """

    def play_chunk(*args: np.ndarray) -> None:
        if len(args) != len(ARGUMENTS):
            raise TypeError(f"play_chunk takes {len(ARGUMENTS)} arrays, got {len(args)}")
        for arg, (name, dtype, ndim) in zip(args, ARGUMENTS, strict=True):
            ok = isinstance(arg, np.ndarray) and arg.dtype == dtype and arg.ndim == ndim
            if not (ok and arg.flags.c_contiguous and arg.flags.writeable):
                got = f"{arg.dtype} {arg.shape}" if isinstance(arg, np.ndarray) else type(arg).__name__
                raise TypeError(
                    f"play_chunk: {name} must be a writable C-contiguous {np.dtype(dtype).name} array with "
                    f"{ndim} dimension(s), got {got}"
                )
        compiled(*args)

    return play_chunk


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
    cc.verbose = False
    cc.export("play_chunk", SIGNATURE)(play_chunk.py_func)
    cc.export("build_key", "int64()")(build_key)
    return cc


def clear_numba_caches() -> int:
    """Delete numba's disk caches (``__pycache__/*.nbi``, ``*.nbc``) of ``sixnimmt_env`` and ``training``; return
    how many files.

    Numba checks a cached function against its own file only: after an edit of the kernel, a cached caller in
    another module (the just-in-time ``play_chunk`` among them) would keep playing the old, inlined code.
    """
    packages = [PACKAGE_DIR, PACKAGE_DIR.parent / "training"]
    removed = 0
    for package in packages:
        if not (package / "__init__.py").is_file():
            continue
        for cache in [*package.rglob("__pycache__/*.nbi"), *package.rglob("__pycache__/*.nbc")]:
            cache.unlink(missing_ok=True)
            removed += 1
    return removed


def build(output_dir: Path | None = None) -> Path:
    """Compile the extension into ``output_dir`` (default: beside this file) and return its path.

    Raises:
        numba's or the C compiler's errors if it cannot be built.
    """
    cc = compiler(output_dir)
    cc.compile()
    return Path(cc.output_dir) / cc.output_file


def main(argv: list[str] | None = None) -> int:
    """``python -m sixnimmt_env.batched.aot [--if-stale]``: build the extension and clear numba's caches.

    With ``--if-stale`` (what ``make install`` runs) it does nothing while the built extension matches the sources
    (:func:`loop`), and a failed build is a warning with exit status 0, as at install: the arena then plays the
    just-in-time loop.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m sixnimmt_env.batched.aot", description=main.__doc__)
    parser.add_argument("--if-stale", action="store_true", help="only if missing or built from other sources")
    args = parser.parse_args(argv)
    if args.if_stale and loop() is not None:
        return 0
    try:
        path = build()
    except Exception as exc:  # no compiler, or numba's own error: the extension is optional
        if not args.if_stale:
            raise
        print(f"sixnimmt: the arena's ahead-of-time loop is not built ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 0
    print(f"built {path}; cleared {clear_numba_caches()} numba cache files (they are compiled again on first use)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
