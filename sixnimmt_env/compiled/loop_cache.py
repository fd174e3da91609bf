"""The arena's compiled loop from numba's disk cache: checked against its sources, warmed ahead, announced when
it has to be compiled.

:func:`sixnimmt_env.compiled._fused.play_chunk` (the loop behind :func:`sixnimmt_env.compiled.fast_arena.play_games`) is
compiled by numba just in time with ``cache=True``: the first process compiles it (several seconds) and saves the
machine code in numba's cache (``__pycache__`` beside the source, or numba's per-user cache folder where the
package folder is read-only, or ``$NUMBA_CACHE_DIR``); every later process loads it from there (importing numba and
loading the code: a few tenths of a second). Numba supports this cache; nothing is built at install and no C
compiler is needed, so the package is one pure-Python wheel for every Python and platform.

Warm the cache ahead (``make install`` runs it) so that no arena command waits::

    python -m sixnimmt_env.compiled.loop_cache    # compiles into numba's cache now, unless it is there already

A process that has to compile says so on stderr, once (:func:`loop`). Numba checks a cached function against its
own file only: after an edit of the kernel, a cached caller in another module (``play_chunk`` among them) would
keep playing the old, inlined code. So :func:`loop` compares a hash of :data:`SOURCES` with the one stamped in the
cache folder, and deletes numba's caches of the packages when they differ (:func:`check_stamp`).

numba starts here without its optional look-ups of SciPy and PyYAML (:func:`optional_imports_hidden`), which would
add about 0.16 s to every arena command, for functions the loop does not call.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sixnimmt_env.rules.engine import GameConfig

PACKAGE_DIR = Path(__file__).resolve().parents[1]
"""The ``sixnimmt_env`` package directory."""

SOURCES = (
    "rules/engine.py",
    "rules/observation_layout.py",
    "rules/params.py",
    "rules/kernel.py",
    "compiled/kinds.py",
    "compiled/heuristics.py",
    "compiled/_fused.py",
    "rewards.py",
)
"""The files (relative to :data:`PACKAGE_DIR`) whose code numba compiles into a cached function of another file:
``play_chunk`` compiles all but the last, directly or inlined; the learner kernel compiles ``rewards.py``'s
``seat_reward``."""

STAMP = "play_chunk.sources"
"""The file, in ``play_chunk``'s cache folder, holding the :func:`source_key` its cached code was compiled from."""

_loaded: list[Callable[..., None]] = []


def source_key() -> str:
    """A hash (16 hex digits) of the bytes of :data:`SOURCES`."""
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update(name.encode())
        digest.update((PACKAGE_DIR / name).read_bytes())
    return digest.hexdigest()[:16]


def loop() -> Callable[..., None]:
    """numba's ``play_chunk``, its disk cache checked against :data:`SOURCES` and its compiled code loaded (decided
    once per process).

    numba is imported and its CPU target set up here without its optional look-ups (:func:`optional_imports_hidden`),
    and a call that plays no game loads the compiled code from numba's cache. When that cache holds no compiled
    ``play_chunk`` yet, one line on stderr says that the loop is compiled now and where it is cached: the only
    process that waits (several seconds) is the first.
    """
    if _loaded:
        return _loaded[0]
    import numpy as np

    from sixnimmt_env.rules.engine import GameConfig
    from sixnimmt_env.rules.params import config_vector

    with gc_paused(), optional_imports_hidden():
        from sixnimmt_env.compiled._fused import play_chunk

        stats = getattr(play_chunk, "stats", None)  # None: numba's compiler is off (NUMBA_DISABLE_JIT), plain Python
        cache = None if stats is None else Path(stats.cache_path)
        if cache is not None:
            check_stamp(cache, source_key())
        if cache is not None and not any(cache.glob("_fused.play_chunk-*.nbi")):
            print(
                f"sixnimmt: compiling the arena's game loop with numba (once: it is cached in {cache})",
                file=sys.stderr,
                flush=True,
            )
        # one signature for every rule set (the rules are the values of ``cfg``): zero games load its code
        none = np.zeros(0, np.uint64)
        play_chunk(
            config_vector(GameConfig()),
            np.zeros((0, 1), np.int8),
            none,
            none,
            np.zeros((0, 1), np.int64),
            none.view(np.int64),
        )
    _loaded.append(play_chunk)
    return play_chunk


def load(config: GameConfig) -> Callable[..., None]:
    """:func:`loop`: the compiled code, loaded (compiled the first time) for every rule set, ``config``'s included;
    a call that plays no game.

    Worker processes forked afterwards (:func:`sixnimmt_env.arena.pool.play_all`) start with it loaded.
    """
    del config  # the loop's one signature serves every rule set
    return loop()


@contextlib.contextmanager
def optional_imports_hidden() -> Iterator[None]:
    """numba's optional look-ups of other libraries skipped inside the block: ``import scipy`` (and ``import yaml``
    where no ``.numba_config.yaml`` is in the working folder) fails there as if the library were not installed,
    unless it is imported already.

    numba looks SciPy up twice while it starts: ``import numba`` checks SciPy's version if SciPy imports, and
    setting up numba's CPU target (on the first compiled call) imports ``scipy.linalg.cython_blas`` to decide
    whether ``np.dot`` and the like may call BLAS (``_HAVE_BLAS`` in ``numba.np.arraymath``); together about 0.15 s
    of a command's start-up, for functions the arena's loop does not use. ``import numba`` also imports PyYAML
    (about 10 ms) only to read a ``.numba_config.yaml`` in the working folder. numba supports both libraries'
    absence. After the block both import again; where SciPy is installed ``_HAVE_BLAS`` is set to ``True``, as
    numba sets it where SciPy's BLAS imports (numba imports that BLAS when it compiles a function that calls it,
    and checks it then). The compiled loop does not change: it calls no SciPy and no BLAS
    (``tests/test_loop_cache.py`` holds it to the same games).
    """
    hidden = [] if "numba.np.arraymath" in sys.modules else ["scipy"]  # too late to matter once numba is set up
    if "numba" not in sys.modules and not Path(".numba_config.yaml").exists():
        hidden.append("yaml")
    hidden = [name for name in hidden if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # its import raises ImportError
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
    arraymath = sys.modules.get("numba.np.arraymath")
    if arraymath is not None and "scipy" in hidden and getattr(arraymath, "_HAVE_BLAS", None) is False:
        import importlib.util

        if importlib.util.find_spec("scipy") is not None:
            arraymath._HAVE_BLAS = True  # type: ignore[attr-defined]  # numba's private flag, unknown to a ModuleType


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside the block (as it was after it). Importing numba and loading the
    cached loop make about 160,000 objects, none of them garbage, which the collector would walk through several
    times: about 30 ms of an arena command's start-up."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def check_stamp(cache: Path, key: str) -> int:
    """Make numba's caches agree with the sources of hash ``key``; return how many cache files were deleted.

    ``cache`` is ``play_chunk``'s cache folder. A stamp of another key (an edited source) deletes numba's caches of
    the packages and of ``cache``; no stamp (a new folder) deletes those of ``cache`` only. Then the stamp is
    ``key``. A read-only folder is left as it is (numba cannot save there either: it compiles in every process).
    """
    stamp = cache / STAMP
    try:
        old: str | None = stamp.read_text().strip()
    except OSError:
        old = None
    if old == key:
        return 0
    removed = clear_numba_caches(cache) if old is not None else clear_folders([cache])
    try:
        cache.mkdir(parents=True, exist_ok=True)
        stamp.write_text(key + "\n")
    except OSError:
        pass
    return removed


def clear_numba_caches(*folders: Path) -> int:
    """Delete numba's disk caches (``*.nbi``, ``*.nbc``) in the ``__pycache__`` folders of ``sixnimmt_env`` and
    ``training`` and in ``folders``; return how many files.

    Numba checks a cached function against its own file only: after an edit of the kernel, a cached caller in
    another module (``play_chunk`` among them) would keep playing the old, inlined code.
    """
    roots = [PACKAGE_DIR, PACKAGE_DIR.parent / "training"]
    caches = [cache for root in roots if (root / "__init__.py").is_file() for cache in root.rglob("__pycache__")]
    return clear_folders([*caches, *folders])


def clear_folders(folders: list[Path]) -> int:
    """Delete numba's cache files (``*.nbi``, ``*.nbc``) in ``folders``; return how many (unwritable ones stay)."""
    removed = 0
    for folder in set(folders):
        for path in [*folder.glob("*.nbi"), *folder.glob("*.nbc")]:
            try:
                path.unlink(missing_ok=True)
                removed += 1
            except OSError:  # a read-only install: its caches are not there
                pass
    return removed


def main(argv: list[str] | None = None) -> int:
    """``python -m sixnimmt_env.compiled.loop_cache``: compile the arena's loop into numba's cache (warm it).

    Prints where the cache is and whether it was compiled now or loaded.
    """
    import argparse

    from sixnimmt_env.rules.engine import GameConfig

    parser = argparse.ArgumentParser(prog="python -m sixnimmt_env.compiled.loop_cache", description=main.__doc__)
    parser.parse_args(argv)
    stats = getattr(load(GameConfig()), "stats", None)  # None: numba's compiler is off (NUMBA_DISABLE_JIT)
    if stats is None:
        print("the arena's game loop: not compiled (numba's compiler is off: NUMBA_DISABLE_JIT)")
        return 0
    how = "compiled now" if stats.cache_misses else "loaded from the cache"
    print(f"the arena's game loop: {how} ({stats.cache_path})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
