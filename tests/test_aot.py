"""The arena's ahead-of-time compiled loop (sixnimmt_env/batched/aot.py) against numba's just-in-time one, and the
kernel's random draws it deals with.

These tests need the extension built: the project's install (``make install``) builds it, and a build that failed
quietly would put the arena on its slow path, so they fail rather than skip."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_kernel import CONFIGS

from sixnimmt_env import engine as E
from sixnimmt_env.batched import aot
from sixnimmt_env.batched.kinds import KINDS
from sixnimmt_env.batched.params import config_vector, first_states


@pytest.fixture(autouse=True)
def built_extension() -> None:
    """One clear failure when the extension is missing or stale, instead of each test's own symptom."""
    if aot.loop() is None:
        pytest.fail(
            "the ahead-of-time extension is missing or built from other sources: `make install` (or "
            "`.venv/bin/python -m sixnimmt_env.batched.aot`) rebuilds it and clears numba's stale caches"
        )


def test_the_install_built_the_extension_from_these_sources() -> None:
    """``make install`` (setup.py) builds it; a missing or stale extension would put the arena on the slow path."""
    module = importlib.import_module(aot.MODULE)
    assert module.build_key() == aot.source_key()
    assert aot.loop() is not None


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.num_players}p-{c.variant}-{c.row_choice}-{c.episode}")
def test_ahead_of_time_loop_plays_the_games_of_the_just_in_time_loop(config: E.GameConfig) -> None:
    from sixnimmt_env.batched._fused import play_chunk as jit_loop

    n, games = config.num_players, 400
    rng = np.random.default_rng(n)
    kinds = rng.integers(0, len(KINDS), size=(games, n)).astype(np.int8)
    outputs = []
    for loop in (aot.loop(), jit_loop):
        deal_rng = first_states(np.uint64(11), np.arange(games))
        agent_rng = first_states(np.uint64(12), np.arange(games))
        penalties, rounds = np.zeros((games, n), np.int64), np.zeros(games, np.int64)
        loop(config_vector(config), kinds, deal_rng, agent_rng, penalties, rounds)
        outputs.append((penalties, rounds, deal_rng, agent_rng))
    for ahead, just in zip(*outputs, strict=True):
        np.testing.assert_array_equal(ahead, just)
    penalties, rounds = outputs[0][:2]
    assert (rounds >= 1).all() and penalties.sum() > 0
    if config.episode == "round":
        assert (rounds == 1).all()


def test_a_stale_extension_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """Built from other sources (an edited kernel): ``loop()`` is None and the arena plays the just-in-time loop."""
    from sixnimmt_env.batched import arena
    from sixnimmt_env.batched._fused import play_chunk as jit_loop

    monkeypatch.setattr(aot, "_loaded", [])
    monkeypatch.setattr(aot, "source_key", lambda: -1)
    assert aot.loop() is None
    assert arena.chunk_loop() is jit_loop
    monkeypatch.setattr(aot, "_loaded", [])
    monkeypatch.setattr(aot, "MODULE", "sixnimmt_env.batched._no_such_extension")
    assert aot.loop() is None


def test_the_arena_command_plays_without_loading_numba(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from sixnimmt_env.arena.cli import main\n"
        "main(['--agents', 'greedy,lowest,random,random', '--games', '2000', '--workers', '2', '--quiet',"
        f" '--out', {str(tmp_path)!r}])\n"
        "print('numba loaded:', 'numba' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.splitlines()[-1] == "numba loaded: False"
    assert json.loads((tmp_path / "results.json").read_text())["games"] == 2000


def test_random_below_is_the_high_word_of_the_product() -> None:
    """random_below(k) == floor(x * k / 2**64) of the stream's next 64 bits x, computed with Python integers."""
    from numba import njit

    from sixnimmt_env.batched.kernel import next_random, random_below

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

    from sixnimmt_env.batched.kernel import shuffle_deck

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


def test_the_checked_loop_refuses_wrong_arrays() -> None:
    """The compiled entry point reads memory as its signature's types: a wrong array is a TypeError naming it."""
    config = E.GameConfig(num_players=4, episode="round")
    games = 8
    good = [
        config_vector(config),
        np.zeros((games, 4), np.int8),
        first_states(np.uint64(1), np.arange(games)),
        first_states(np.uint64(2), np.arange(games)),
        np.zeros((games, 4), np.int64),
        np.zeros(games, np.int64),
    ]
    loop = aot.loop()
    assert loop is not None
    for index, bad, word in [
        (1, np.zeros((games, 4), np.int64), "kinds"),
        (4, np.zeros((games, 4), np.int32), "penalties"),
        (1, np.zeros((games, 8), np.int8)[:, ::2], "kinds"),
        (5, np.zeros(games, np.int64)[None, :], "rounds"),
    ]:
        args = list(good)
        args[index] = bad
        with pytest.raises(TypeError, match=word):
            loop(*args)
    with pytest.raises(TypeError, match="6 arrays"):
        loop(*good[:5])
    loop(*good)
    assert (good[5] == 1).all() and good[4].sum() > 0


def test_rebuilding_clears_numba_caches_of_the_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "sixnimmt_env"
    for folder in (package / "batched" / "__pycache__", tmp_path / "training" / "__pycache__"):
        folder.mkdir(parents=True)
        (folder / "kernel.play-1.py311.nbi").write_bytes(b"index")
        (folder / "kernel.play-1.py311.1.nbc").write_bytes(b"code")
        (folder / "kernel.cpython-311.pyc").write_bytes(b"bytecode")
    (package / "__init__.py").write_text("")
    (tmp_path / "training" / "__init__.py").write_text("")
    monkeypatch.setattr(aot, "PACKAGE_DIR", package)
    assert aot.clear_numba_caches() == 4
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".py") == [
        "kernel.cpython-311.pyc",
        "kernel.cpython-311.pyc",
    ]


def test_if_stale_builds_only_a_stale_extension_and_a_failed_build_is_a_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``make install`` runs ``python -m sixnimmt_env.batched.aot --if-stale``."""

    def no_build() -> Path:
        raise RuntimeError("no C compiler here")

    monkeypatch.setattr(aot, "build", no_build)
    assert aot.main(["--if-stale"]) == 0  # built from these sources: nothing to do, build() not called
    monkeypatch.setattr(aot, "_loaded", [None])  # now stale
    assert aot.main(["--if-stale"]) == 0
    assert "not built (RuntimeError: no C compiler here)" in capsys.readouterr().err
    with pytest.raises(RuntimeError, match="no C compiler"):
        aot.main([])
