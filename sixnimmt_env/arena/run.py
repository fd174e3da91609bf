"""An arena run: ``games`` games with the seats rotating through the listed agents, summarised per position.

:func:`run_arena` checks its arguments before any game, plays the games (:func:`sixnimmt_env.arena.pool.play_all`),
writes the game records if asked (:func:`sixnimmt_env.records.write_records`) and summarises them
(:mod:`sixnimmt_env.arena.summary`) into a JSON-ready results dict.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sixnimmt_env.arena.play import check_seed
from sixnimmt_env.arena.pool import Job, play_all, resolve_agents
from sixnimmt_env.arena.report import check_new_file
from sixnimmt_env.arena.summary import by_position, part_summary, rows_from_parts, settings
from sixnimmt_env.rules.engine import GameConfig

__all__ = ["check_games", "game_config", "run_arena"]


def game_config(config: GameConfig | None, num_players: int) -> GameConfig:
    """``config``, or single rounds for ``num_players`` when it is ``None``; ValueError for anything else."""
    if config is None:
        return GameConfig(num_players=num_players, episode="round")
    if not isinstance(config, GameConfig):
        raise ValueError(f"config must be a GameConfig or None, got {config!r}")
    return config


def check_games(games: object) -> int:
    """``games`` as an ``int``; ValueError unless it is an integer >= 2 (an interval needs two samples)."""
    if isinstance(games, bool) or not isinstance(games, int | np.integer) or games < 2:
        raise ValueError(f"games must be an integer >= 2 (a 95% interval needs two samples), got {games!r}")
    return int(games)


def run_arena(
    agents: Sequence[Any] | str,
    games: int,
    seed: int = 0,
    config: GameConfig | None = None,
    *,
    workers: int = 1,
    duplicate: bool = False,
    progress: bool = False,
    keep_games: bool = False,
    engine: str = "auto",
    save_games: str | Path | None = None,
) -> dict[str, Any]:
    """Play ``games`` games with seats rotating through the listed agents and summarise them.

    Args:
        agents: one entry per seat: spec strings (``"greedy"``, ``"mc:64"``, a
            registered prefix) or :class:`~sixnimmt_env.agents.Agent` objects
            (picklable ones when ``workers > 1``); a comma-separated string is
            split.
        games: games to play, >= 2 (with ``duplicate``, a multiple of the player
            count holding at least two deals).
        seed: the run's seed, >= 0; game ``g`` depends on ``(seed, g)`` only.
        config: the rules; default ``GameConfig(num_players=len(agents), episode="round")``.
        workers: processes to play on (results do not depend on it).
        duplicate: replay each deal with the seats rotated through every position.
        progress: show a tqdm progress bar on stderr.
        engine: ``"auto"``, ``"reference"`` or ``"batched"`` (:data:`~sixnimmt_env.arena.pool.ENGINES`).
        save_games: a new ``.jsonl`` file for every game's record (:mod:`sixnimmt_env.records`), on either
            engine (the batched one reads every game's state at every step, which costs most of its speed).
            Checked before any game is played.
        keep_games: also return ``per_game``: ``penalties`` (games x agents,
            bullheads by listed position) and ``rounds`` (per game).

    Returns:
        A JSON-ready dict: ``agents`` (one entry per listed position, in order,
        with ``position``, ``agent``, ``mean_penalty`` (bullheads per round),
        ``ci95`` (half-width), ``win_share`` (0..1), ``win_share_ci95``,
        ``mean_rank`` (1..n), and with ``episode="game"`` also
        ``mean_penalty_per_game`` and ``ci95_per_game``), ``settings``,
        ``games``, ``rounds``, ``seconds``, ``games_per_s``.

    Raises:
        ValueError: for an unknown spec (listing the known ones), a player
            count that differs from the number of agents, a bad game count,
            seed or worker count.
    """
    entries, built, labels = resolve_agents(agents)
    config = game_config(config, len(built))
    n = config.num_players
    if n != len(built):
        raise ValueError(
            f"{len(built)} agents ({', '.join(labels)}) for num_players={n}: list exactly one agent per seat "
            f"(or use the league mode for a larger pool)"
        )
    games = check_games(games)
    seed = check_seed(seed)
    if duplicate and (games % n or games // n < 2):
        raise ValueError(
            f"with duplicate, games must be a multiple of num_players={n} covering >= 2 deals, got {games}"
        )
    if save_games is not None:
        check_new_file(save_games, "save_games")
    job = Job(config, seed, n, bool(duplicate), False, engine, save_games is not None)
    parts: dict[int, dict[str, np.ndarray]] = {}

    def summarise(start: int, seat_pen: np.ndarray, rounds: np.ndarray, tables: np.ndarray) -> None:
        parts[start] = part_summary(by_position(seat_pen, tables), rounds, config.episode, bool(duplicate))

    seat_pen, rounds, tables, seconds, records = play_all(
        entries, built, job, games, workers, progress, on_chunk=summarise
    )
    if records is not None and save_games is not None:  # records are kept only to be saved
        from sixnimmt_env.records import write_records

        write_records(save_games, records)
    results = {
        "mode": "arena",
        "settings": settings(
            labels,
            config,
            games,
            seed,
            workers,
            duplicate=bool(duplicate),
            engine=engine,
            save_games=None if save_games is None else str(save_games),
        ),
        "agents": rows_from_parts([parts[s] for s in sorted(parts)], labels, config.episode),
        "games": games,
        "rounds": int(rounds.sum()),
        "seconds": seconds,
        "games_per_s": games / max(seconds, 1e-9),
    }
    if keep_games:
        results["per_game"] = {"penalties": by_position(seat_pen, tables).tolist(), "rounds": rounds.tolist()}
    return results
