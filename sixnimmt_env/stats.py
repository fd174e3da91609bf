"""Arena statistics: means with 95% confidence intervals, win shares and ranks.

All functions take per-game penalties as a ``(games, players)`` array of
bullheads (lower is better) and return ``float64`` numpy arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

Z95 = NormalDist().inv_cdf(0.975)
"""Two-sided 95% normal quantile (1.959964...)."""

__all__ = [
    "Z95",
    "fractional_ranks",
    "mean_ci95",
    "mean_ranks",
    "merge_moments",
    "moments",
    "moments_ci95",
    "win_shares",
]


def mean_ci95(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and the half-widths of their 95% confidence intervals.

    The interval is the normal approximation ``mean ± 1.96 * s / sqrt(k)``
    with ``s`` the sample standard deviation (``ddof=1``) over the ``k`` rows,
    which are taken as independent samples (games, or deals in duplicate mode).
    Equal to ``moments_ci95(moments(values))``.

    Args:
        values: shape ``(k,)`` or ``(k, m)``, ``k >= 2``.

    Returns:
        ``(mean, half_width)``, each of shape ``()`` or ``(m,)``.

    Raises:
        ValueError: with fewer than 2 rows (no spread can be estimated).
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim not in (1, 2) or x.shape[0] < 2:
        raise ValueError(f"a 95% interval needs at least 2 samples (rows), got shape {x.shape}")
    return moments_ci95(moments(x))


def moments(values: np.ndarray) -> np.ndarray:
    """The count, mean and sum of squared deviations from the mean (``M2``) of each column, for
    :func:`merge_moments` and :func:`moments_ci95`: the statistics of a run gathered part by part.

    Args:
        values: shape ``(k,)`` or ``(k, m)``, ``k >= 1`` rows (samples).

    Returns:
        ``float64``, shape ``(3,)`` or ``(3, m)``: ``[count, mean, M2]``.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim not in (1, 2) or x.shape[0] < 1:
        raise ValueError(f"moments need at least 1 sample (row), got shape {x.shape}")
    cols = np.ascontiguousarray(x.T)  # one contiguous row per column: numpy reduces along a row fastest
    mean = cols.mean(axis=-1)
    dev = cols - mean[..., None]
    np.square(dev, out=dev)
    return np.stack([np.full_like(mean, x.shape[0]), mean, dev.sum(axis=-1)])


def merge_moments(parts: Sequence[np.ndarray]) -> np.ndarray:
    """The :func:`moments` of the rows of all ``parts`` together, from each part's moments (Chan, Golub and
    LeVeque's pairwise update: no sum of squares that cancels)."""
    if not parts:
        raise ValueError("merge_moments needs at least one part")
    total = np.array(parts[0], dtype=np.float64)
    for part in parts[1:]:
        na, nb = total[0], part[0]
        n = na + nb
        delta = part[1] - total[1]
        total = np.stack([n, total[1] + delta * (nb / n), total[2] + part[2] + delta**2 * (na * nb / n)])
    return total


def moments_ci95(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, half_width)`` of the 95% interval of :func:`mean_ci95` from :func:`moments` ``m``.

    Raises:
        ValueError: from fewer than 2 samples.
    """
    count = m[0]
    if np.any(count < 2):
        raise ValueError(f"a 95% interval needs at least 2 samples (rows), got {int(np.min(count))}")
    std = np.sqrt(m[2] / (count - 1))
    return m[1], Z95 * std / np.sqrt(count)


def win_shares(penalties: np.ndarray) -> np.ndarray:
    """Per game and player, the share of the win: ``1/k`` for each of the ``k`` lowest penalties, else 0 (R13).

    Args:
        penalties: shape ``(games, players)``.

    Returns:
        Shape ``(games, players)``; every row sums to 1.
    """
    p = np.asarray(penalties)
    low = p[:, :1].copy()
    for j in range(1, p.shape[1]):  # column by column: a reduction over a short axis is slow in numpy
        np.minimum(low, p[:, j : j + 1], out=low)
    best = p == low
    winners = np.zeros_like(low, dtype=np.int64)
    for j in range(p.shape[1]):
        winners += best[:, j : j + 1]
    return best / winners


def fractional_ranks(penalties: np.ndarray) -> np.ndarray:
    """Per game and player, the rank 1..players by penalty (1 = lowest); ties get the mean of the ranks they span.

    Example: penalties ``[0, 0, 5, 3]`` give ranks ``[1.5, 1.5, 4, 3]``; every
    row sums to ``players * (players + 1) / 2``.

    Args:
        penalties: shape ``(games, players)``.

    Returns:
        Shape ``(games, players)``, ``float64``.
    """
    p = np.asarray(penalties)
    # twice[g, i] = 2 * below + equal: below counts the players j with p[g, j] < p[g, i], equal those with
    # p[g, j] == p[g, i] (i included); the rank 1 + below + (equal - 1) / 2 is then (twice + 1) / 2
    twice = np.zeros(p.shape, np.int32)
    for j in range(p.shape[1]):
        other = p[:, j : j + 1]
        twice += other < p
        twice += other <= p
    return (twice + 1) / 2.0


def mean_ranks(penalties: np.ndarray) -> np.ndarray:
    """Each player's mean fractional rank over the games: ``fractional_ranks(penalties).mean(axis=0)``, counted
    pair by pair without the per-game array.

    Player ``i``'s rank in a game is ``1 + #{j: p_j < p_i} + #{j != i: p_j == p_i} / 2``.

    Args:
        penalties: shape ``(games, players)``, ``games >= 1``.

    Returns:
        Shape ``(players,)``, ``float64``, each in ``1..players``.
    """
    cols = np.ascontiguousarray(np.asarray(penalties).T)
    games, players = cols.shape[1], cols.shape[0]
    twice = np.zeros(players, np.int64)  # sum over games of 2 * below + (equal - 1), equal counting i itself
    for i in range(players):
        for j in range(players):
            if j != i:
                twice[i] += 2 * np.count_nonzero(cols[j] < cols[i]) + np.count_nonzero(cols[j] == cols[i])
    return 1.0 + twice / (2.0 * games)
