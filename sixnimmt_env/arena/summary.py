"""The statistics of an arena run: per listed agent position, means with 95% intervals, win shares and ranks.

The functions take the games as :func:`sixnimmt_env.arena.pool.play_all` returns them: ``seat_penalties``
(``int64 (games, num_players)``, bullheads per seat over the episode), ``rounds`` (``int64 (games,)``) and
``tables`` (``int64 (games, num_players)``, the listed position in each seat), and return JSON-ready rows (one dict
per listed position) built with :mod:`sixnimmt_env.stats`: the win share splits a tie for the lowest penalty (R13),
ties share the mean of their ranks.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from sixnimmt_env.rules.engine import GameConfig
from sixnimmt_env.stats import (
    fractional_ranks,
    mean_ci95,
    mean_ranks,
    merge_moments,
    moments,
    moments_ci95,
    win_shares,
)

__all__ = ["arena_rows", "by_position", "league_rows", "part_summary", "rows_from_parts", "settings"]


def by_position(seat_penalties: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """``int64 (games, num_players)``: the penalties reordered by listed position (seat ``i`` holds position
    ``tables[g, i]``; every row of ``tables`` is a permutation of the positions, as in the arena's rotation)."""
    out = np.empty_like(seat_penalties)
    out[np.arange(len(tables))[:, None], tables] = seat_penalties
    return out


def arena_rows(
    penalties: np.ndarray, rounds: np.ndarray, labels: list[str], episode: str, duplicate: bool
) -> list[dict[str, Any]]:
    """One row per listed position: ``position``, ``agent``, ``mean_penalty`` (bullheads per round) with its
    ``ci95`` (half-width), ``win_share`` (0..1) with ``win_share_ci95``, ``mean_rank`` (1..n), and with
    ``episode="game"`` also ``mean_penalty_per_game`` and ``ci95_per_game``.

    The same as :func:`rows_from_parts` over :func:`part_summary` of any cut of the games into parts (whole deals
    each with ``duplicate``), up to rounding.

    Args:
        penalties: ``(games, n)`` by listed position (:func:`by_position`).
        rounds: ``(games,)`` rounds per game.
        labels: the agents' names, one per position.
        episode: ``"round"`` or ``"game"`` (R12).
        duplicate: game ``g`` played deal ``g // n``: the intervals are over deals (the mean of each deal's ``n``
            games is one sample).
    """
    return rows_from_parts([part_summary(penalties, rounds, episode, duplicate)], labels, episode)


def part_summary(penalties: np.ndarray, rounds: np.ndarray, episode: str, duplicate: bool) -> dict[str, np.ndarray]:
    """The statistics of some of a run's games, to be merged by :func:`rows_from_parts`: the
    :func:`~sixnimmt_env.stats.moments` of the penalty per round, the win share and (``episode="game"``) the
    penalty per game, each ``(3, n)``, and ``rank_sum`` (``(n,)``, the fractional ranks summed) with ``games``.

    Args:
        penalties: ``(k, n)`` by listed position (:func:`by_position`), ``k >= 1``.
        rounds: ``(k,)`` rounds per game.
        episode, duplicate: as in :func:`arena_rows`; with ``duplicate`` the ``k`` games are whole deals
            (``k`` a multiple of ``n``, the first game of a deal first).
    """
    games, n = penalties.shape
    per_round = penalties / rounds[:, None]
    wins = win_shares(penalties)

    def units(x: np.ndarray) -> np.ndarray:
        return x.reshape(games // n, n, -1).mean(axis=1) if duplicate else x

    part = {
        "games": np.array(games, np.float64),
        "penalty": moments(units(per_round)),
        "win": moments(units(wins)),
        "rank_sum": mean_ranks(penalties) * games,
    }
    if episode == "game":
        part["per_game"] = moments(units(penalties.astype(np.float64)))
    return part


def rows_from_parts(parts: list[dict[str, np.ndarray]], labels: list[str], episode: str) -> list[dict[str, Any]]:
    """The rows of :func:`arena_rows` from the :func:`part_summary` of every part of the run (in any order)."""
    mean, ci = moments_ci95(merge_moments([p["penalty"] for p in parts]))
    win_mean, win_ci = moments_ci95(merge_moments([p["win"] for p in parts]))
    ranks = np.asarray(sum(p["rank_sum"] for p in parts)) / sum(float(p["games"]) for p in parts)
    if episode == "game":
        gmean, gci = moments_ci95(merge_moments([p["per_game"] for p in parts]))
    rows = []
    for p in range(len(labels)):
        row = {
            "position": p,
            "agent": labels[p],
            "mean_penalty": float(mean[p]),
            "ci95": float(ci[p]),
            "win_share": float(win_mean[p]),
            "win_share_ci95": float(win_ci[p]),
            "mean_rank": float(ranks[p]),
        }
        if episode == "game":
            row["mean_penalty_per_game"] = float(gmean[p])
            row["ci95_per_game"] = float(gci[p])
        rows.append(row)
    return rows


def league_rows(
    seat_penalties: np.ndarray, rounds: np.ndarray, tables: np.ndarray, labels: list[str]
) -> list[dict[str, Any]]:
    """One row per agent of a league pool, over the games it was seated in: ``position``, ``agent``, ``games``,
    ``mean_penalty``, ``ci95``, ``win_share``, ``win_share_ci95`` and ``mean_rank`` as in :func:`arena_rows`.

    An agent seated in fewer than 2 games has ``None`` (JSON ``null``) for the intervals, and for every statistic
    if it played no game.
    """
    per_round = seat_penalties / rounds[:, None]
    wins = win_shares(seat_penalties)
    ranks_all = fractional_ranks(seat_penalties)
    rows = []
    for p in range(len(labels)):
        mask = tables == p
        played = mask.sum()
        row: dict[str, Any] = {"position": p, "agent": labels[p], "games": int(played)}
        if played >= 2:
            mean, ci = mean_ci95(per_round[mask])
            wmean, wci = mean_ci95(wins[mask])
            row.update(mean_penalty=float(mean), ci95=float(ci), win_share=float(wmean), win_share_ci95=float(wci))
        else:  # too few games for an interval (or any statistic): None, which JSON writes as null
            row.update(
                mean_penalty=float(per_round[mask].mean()) if played else None,
                ci95=None,
                win_share=float(wins[mask].mean()) if played else None,
                win_share_ci95=None,
            )
        row["mean_rank"] = float(ranks_all[mask].mean()) if played else None
        rows.append(row)
    return rows


def settings(labels: list[str], config: GameConfig, games: int, seed: int, workers: int, **extra: Any) -> dict:
    """The ``settings`` entry of a results dict: the agents, the run, the rules (and ``extra`` keys)."""
    return {
        "agents": labels,
        "games": games,
        "seed": seed,
        "num_players": config.num_players,
        "variant": config.variant,
        "row_choice": config.row_choice,
        "episode": config.episode,
        "workers": workers,
        **extra,
        "config": asdict(config),
    }
