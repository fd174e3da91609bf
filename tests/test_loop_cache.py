"""The arena's compiled loop from numba's disk cache (sixnimmt_env/compiled/loop_cache.py), and the kernel's random
draws it deals with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sixnimmt_env.compiled import loop_cache
from sixnimmt_env.rules.params import first_states

LOAD = (
    "from sixnimmt_env.compiled.fast_arena import load, chunk_loop\n"
    "from sixnimmt_env.rules.engine import GameConfig\n"
    "load(GameConfig(num_players=5))\n"
    "stats = chunk_loop().stats\n"
    "print(len(stats.cache_hits), len(stats.cache_misses))\n"
)


def test_the_first_process_compiles_and_says_so_once_later_ones_load_the_cache(tmp_path: Path) -> None:
    """One line on stderr where the loop is compiled; none where numba's cache has it (a fresh cache folder)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [
        subprocess.run([sys.executable, "-c", LOAD], env=env, capture_output=True, text=True, check=True, timeout=300)
        for _ in range(2)
    ]
    first, second = runs
    assert first.stdout.split() == ["0", "1"]  # no cache hit, one compiled signature
    assert first.stderr.splitlines() == [
        f"sixnimmt: compiling the arena's game loop with numba (once: it is cached in {first_cache(tmp_path)})"
    ]
    assert second.stdout.split() == ["1", "0"] and second.stderr == ""
    assert (first_cache(tmp_path) / loop_cache.STAMP).read_text().strip() == loop_cache.source_key()


def test_numba_starts_without_looking_up_scipy_and_keeps_its_blas() -> None:
    """Loading the loop imports no SciPy and no PyYAML (numba's optional look-ups are skipped); numba's BLAS flag stays
    set, and a function that calls BLAS compiles and imports SciPy then; the loop plays the same games as in a
    process that imported SciPy first (and as before SciPy was hidden: the totals of 500 whole games)."""
    code = (
        "import sys\n"
        "if sys.argv[1] == 'scipy-first':\n"
        "    import scipy.linalg.cython_blas\n"
        "import numpy as np\n"
        "from sixnimmt_env.compiled.fast_arena import load, play_games\n"
        "from sixnimmt_env.rules.engine import GameConfig\n"
        "load(GameConfig())\n"
        "import numba\n"
        "from numba.np import arraymath\n"
        "print('scipy' in sys.modules, 'yaml' in sys.modules, arraymath._HAVE_BLAS)\n"
        "_, pen, rounds, _ = play_games(GameConfig(), ['greedy', 'lowest', 'random', 'random'], 7, 0, 500)\n"
        "print(pen.sum(axis=0).tolist(), rounds.sum())\n"
        "print(numba.njit(lambda a: np.dot(a, a))(np.arange(3.0)), 'scipy' in sys.modules)\n"
    )
    outs = [
        subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True, check=True, timeout=300)
        for how in ("plain", "scipy-first")
    ]
    plain, first = (o.stdout.splitlines() for o in outs)
    assert plain[0] == "False False True" and first[0] == "True False True"
    assert plain[1] == first[1] == "[25822, 25022, 25197, 25751] 1902"  # whole games: bullheads per seat, rounds
    assert plain[2] == first[2] == "5.0 True"


def first_cache(root: Path) -> Path:
    """The folder under ``$NUMBA_CACHE_DIR`` = ``root`` where numba put ``play_chunk``."""
    (index,) = root.rglob("_fused.play_chunk-*.nbi")
    return index.parent


def fake_caches(root: Path) -> tuple[Path, Path]:
    """A package and a training folder under ``root``, each with a numba index and data file and a ``.pyc``."""
    package = root / "sixnimmt_env"
    for folder in (package / "batched" / "__pycache__", root / "training" / "__pycache__"):
        folder.mkdir(parents=True)
        (folder / "kernel.play-1.py311.nbi").write_bytes(b"index")
        (folder / "kernel.play-1.py311.1.nbc").write_bytes(b"code")
        (folder / "kernel.cpython-311.pyc").write_bytes(b"bytecode")
    (package / "__init__.py").write_text("")
    (root / "training" / "__init__.py").write_text("")
    return package, package / "batched" / "__pycache__"


def test_edited_sources_clear_numba_caches_of_the_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stamp of other sources deletes every numba cache file of both packages (not the .pyc); then a stamp of
    the same sources deletes nothing."""
    package, cache = fake_caches(tmp_path)
    monkeypatch.setattr(loop_cache, "PACKAGE_DIR", package)
    (cache / loop_cache.STAMP).write_text("0123456789abcdef\n")
    assert loop_cache.check_stamp(cache, "fedcba9876543210") == 4
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".py") == [
        "kernel.cpython-311.pyc",
        "kernel.cpython-311.pyc",
        loop_cache.STAMP,
    ]
    assert (cache / loop_cache.STAMP).read_text() == "fedcba9876543210\n"
    (cache / "kernel.play-1.py311.nbi").write_bytes(b"index")
    assert loop_cache.check_stamp(cache, "fedcba9876543210") == 0
    assert (cache / "kernel.play-1.py311.nbi").exists()


def test_a_new_cache_folder_is_cleared_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No stamp yet (a new folder, or one of an older version): only that folder's numba files go."""
    package, _ = fake_caches(tmp_path)
    monkeypatch.setattr(loop_cache, "PACKAGE_DIR", package)
    elsewhere = tmp_path / "numba_cache"
    elsewhere.mkdir()
    (elsewhere / "_fused.play_chunk-86.py311.nbi").write_bytes(b"index")
    assert loop_cache.check_stamp(elsewhere, "fedcba9876543210") == 1
    assert len(list(tmp_path.rglob("*.nb?"))) == 4  # the packages' own caches stay
    assert (elsewhere / loop_cache.STAMP).read_text() == "fedcba9876543210\n"


def test_random_below_is_the_high_word_of_the_product() -> None:
    """random_below(k) == floor(x * k / 2**64) of the stream's next 64 bits x, computed with Python integers."""
    from numba import njit

    from sixnimmt_env.rules.kernel import next_random, random_below

    @njit
    def draws(rng: np.ndarray, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        bits = np.zeros(len(ks), np.uint64)
        below = np.zeros(len(ks), np.int64)
        copy = rng.copy()
        for i in range(len(ks)):
            bits[i] = next_random(copy, 0)
            below[i] = random_below(rng, 0, ks[i])
        return bits, below

    ks = np.random.default_rng(3).integers(1, 110, size=5000)
    bits, below = draws(np.array([12345], np.uint64), ks)
    assert [int(b) * int(k) >> 64 for b, k in zip(bits, ks, strict=True)] == below.tolist()
    assert ((below >= 0) & (below < ks)).all()


def test_dealt_cards_are_uniform_and_distinct() -> None:
    """shuffle_deck's first count cards: distinct cards of 1..size; every ordered deal equally likely (a small deck:
    all 60 ordered draws of 3 of 5 cards), and every card equally likely in the first and last slot of a real
    deal (44 of 104)."""
    from numba import njit

    from sixnimmt_env.rules.kernel import shuffle_deck

    @njit
    def deals(rng: np.ndarray, trials: int, size: int, count: int) -> tuple[np.ndarray, np.ndarray, int]:
        deck = np.zeros(104, np.int64)
        slots = np.zeros((count, size + 1), np.int64)
        codes = np.zeros(trials, np.int64)  # the ordered deal as a base-(size + 1) number
        bad = 0
        for t in range(trials):
            shuffle_deck(deck, size, count, rng, t)
            seen = np.zeros(size + 1, np.bool_)
            for i in range(count):
                c = deck[i]
                if c < 1 or c > size or seen[c]:
                    bad += 1
                    continue
                seen[c] = True
                slots[i, c] += 1
                codes[t] = codes[t] * (size + 1) + c
        return slots, codes, bad

    trials = 60_000
    _, codes, bad = deals(first_states(np.uint64(5), np.arange(trials)), trials, 5, 3)
    assert bad == 0
    _, counts = np.unique(codes, return_counts=True)
    assert len(counts) == 60  # 5 * 4 * 3 ordered deals; chi-square, 59 degrees of freedom: 99.9 % quantile 98.3
    assert ((counts - trials / 60) ** 2 / (trials / 60)).sum() < 100

    trials, size, count = 104_000, 104, 44
    slots, _, bad = deals(first_states(np.uint64(7), np.arange(trials)), trials, size, count)
    assert bad == 0
    for slot in (0, count - 1):  # chi-square over 104 cards, 103 degrees of freedom: 99.9 % quantile 153.1
        observed = slots[slot, 1:]
        expected = trials / size
        assert ((observed - expected) ** 2 / expected).sum() < 160
