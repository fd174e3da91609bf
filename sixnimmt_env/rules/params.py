"""The kernel's constants that need no numba: the rules as a config vector, the games' first random states and the
step codes.

:mod:`sixnimmt_env.rules.kernel` re-exports everything here. It lives apart so that a caller can build the
compiled loops' arguments and read their results without importing numba.
"""

from __future__ import annotations

import numpy as np

from sixnimmt_env.rules.engine import GameConfig

C_N, C_DECK, C_LOGIC, C_CHEAPEST, C_END_SCORE, C_MORE_THAN, C_MAX_ROUNDS, C_ROUND_EPISODE = range(8)
"""Entries of the ``int64`` config vector (:func:`config_vector`)."""

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)
S30, S27, S31 = np.uint64(30), np.uint64(27), np.uint64(31)
"""splitmix64's increment, multipliers and shifts (:func:`sixnimmt_env.rules.kernel.next_random`)."""
S32, LOW32 = np.uint64(32), np.uint64(0xFFFFFFFF)
"""The halves of a 64-bit word (:func:`sixnimmt_env.rules.kernel.random_below`)."""

OK = -1
"""Step code: the joint action was applied, nobody took bullheads, the game goes on."""
PENALTIES = -2
"""Step code: the joint action was applied and some seat took bullheads (R8, R9); the game goes on."""
OVER = -3
"""Step code: the joint action was applied and ended the game (or the round, with ``episode="round"``, R12)."""


def config_vector(config: GameConfig) -> np.ndarray:
    """The rules of ``config`` as an ``int64 (8,)`` vector for the kernels (entries ``C_*``; -1 for ``None``)."""
    cfg = np.zeros(8, np.int64)
    cfg[C_N] = config.num_players
    cfg[C_DECK] = config.deck_size
    cfg[C_LOGIC] = config.variant == "logic"
    cfg[C_CHEAPEST] = config.row_choice == "cheapest"
    cfg[C_END_SCORE] = -1 if config.end_score is None else config.end_score
    cfg[C_MORE_THAN] = config.end_rule == "more_than"
    cfg[C_MAX_ROUNDS] = -1 if config.max_rounds is None else config.max_rounds
    cfg[C_ROUND_EPISODE] = config.episode == "round"
    return cfg


def first_states(key: np.uint64, ids: np.ndarray) -> np.ndarray:
    """``uint64 (len(ids),)``: one generator state per id, ``key ^ id`` advanced once by
    :func:`~sixnimmt_env.rules.kernel.next_random`'s step and mixed (the returned 64 bits become the state).
    Plain numpy, so that no compiled function has to be loaded for it; ``uint64`` arithmetic wraps around as in
    ``next_random``."""
    z = (np.uint64(key) ^ np.asarray(ids, np.int64).astype(np.uint64)) + GOLDEN
    z = (z ^ (z >> S30)) * MIX1
    z = (z ^ (z >> S27)) * MIX2
    return z ^ (z >> S31)
