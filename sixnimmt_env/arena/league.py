"""The league: tables drawn at random from a pool of agents, OpenSkill ratings updated game by game.

:func:`run_league` plays the games as the arena does (:func:`sixnimmt_env.arena.pool.play_all`; game ``g``'s
table is drawn from ``default_rng([TABLE_TAG, seed, g])``), rates the finishing orders with OpenSkill's
Plackett-Luce model and ranks the pool by the ordinal ``mu - 3 sigma``. :func:`sixnimmt_env.arena.report.league_note`
names the neighbours in that ranking whose ratings are not separated.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sixnimmt_env.arena.play import check_seed
from sixnimmt_env.arena.pool import Job, play_all, resolve_agents
from sixnimmt_env.arena.report import check_new_file
from sixnimmt_env.arena.run import check_games, game_config
from sixnimmt_env.arena.summary import league_rows, settings
from sixnimmt_env.rules.engine import GameConfig
from sixnimmt_env.stats import fractional_ranks

__all__ = ["run_league"]


def run_league(
    agents: Sequence[Any] | str,
    games: int,
    seed: int = 0,
    config: GameConfig | None = None,
    *,
    workers: int = 1,
    progress: bool = False,
    engine: str = "auto",
    save_games: str | Path | None = None,
) -> dict[str, Any]:
    """A league: each game seats ``config.num_players`` agents of the pool at random; OpenSkill ratings.

    Ratings are OpenSkill Plackett-Luce (``openskill.models.PlackettLuce``),
    updated game by game in game order with the finishing order by penalty
    (equal penalties share a place). The ranking sorts by the ordinal
    ``mu - 3 sigma``.

    The model's dynamics factor ``tau`` is 0: OpenSkill's default (25/300)
    adds variance before every update for players whose skill drifts, which
    fixed agents do not; with it sigma never falls below about 1.6 and the
    final ratings follow the last few hundred games, so close agents swapped
    places from one seed to the next (2,000 games of the league in docs/agents.md put
    ``highest`` above ``greedy`` although greedy finished ahead of it in 648
    of their 1,184 decided meetings). Online ratings still depend on the game
    order a little: :func:`~sixnimmt_env.arena.report.league_note` flags neighbours in the ranking whose
    ratings are not separated.

    Args:
        agents: the pool (specs or agent objects), at least ``num_players``.
        games: games to play, >= 2.
        seed: the run's seed; game ``g``'s table and play depend on ``(seed, g)`` only.
        config: the rules; default ``GameConfig(num_players=min(4, len(agents)), episode="round")``.
        workers: processes to play on (results do not depend on it).
        progress: show a tqdm progress bar on stderr.
        engine: ``"auto"``, ``"reference"`` or ``"batched"`` (:data:`~sixnimmt_env.arena.pool.ENGINES`).
        save_games: as for :func:`run_arena`.

    Returns:
        Like :func:`run_arena` (``agents`` in the listed order, statistics over
        the games each agent played), each entry also with ``games``, ``mu``,
        ``sigma``, ``ordinal`` and ``league_rank`` (an agent seated in fewer than
        2 games has ``None`` for the statistics it lacks); plus ``ranking`` (the
        positions, best first).

    Raises:
        ValueError: for an unknown spec, a pool smaller than the table, a bad
            game count, seed or worker count.
    """
    from openskill.models import PlackettLuce

    entries, built, labels = resolve_agents(agents)
    if len(built) < 2:
        raise ValueError(f"a league needs at least 2 agents, got {len(built)} ({', '.join(labels)})")
    config = game_config(config, min(4, len(built)))
    n = config.num_players
    if n > len(built):
        raise ValueError(f"the league pool ({len(built)} agents: {', '.join(labels)}) is smaller than num_players={n}")
    games = check_games(games)
    seed = check_seed(seed)
    if save_games is not None:
        check_new_file(save_games, "save_games")
    job = Job(config, seed, len(built), False, True, engine, save_games is not None)
    seat_pen, rounds, tables, seconds, records = play_all(entries, built, job, games, workers, progress)
    if records is not None and save_games is not None:  # records are kept only to be saved
        from sixnimmt_env.records import write_records

        write_records(save_games, records)
    model = PlackettLuce(tau=0.0)  # fixed agents: no skill drift between games (see the docstring)
    ratings = [model.rating(name=f"{p}:{labels[p]}") for p in range(len(built))]
    for g in range(games):
        table = tables[g].tolist()
        ranks = fractional_ranks(seat_pen[g : g + 1])[0].tolist()
        rated = model.rate([[ratings[p]] for p in table], ranks=ranks)
        for p, team in zip(table, rated, strict=True):
            ratings[p] = team[0]
    rows = league_rows(seat_pen, rounds, tables, labels)
    for p, row in enumerate(rows):
        r = ratings[p]
        row.update(mu=float(r.mu), sigma=float(r.sigma), ordinal=float(r.ordinal()))
    ranking = sorted(range(len(built)), key=lambda p: -rows[p]["ordinal"])
    for place, p in enumerate(ranking, start=1):
        rows[p]["league_rank"] = place
    return {
        "mode": "league",
        "settings": settings(
            labels,
            config,
            games,
            seed,
            workers,
            rating_model="openskill PlackettLuce",
            save_games=None if save_games is None else str(save_games),
        ),
        "agents": rows,
        "ranking": ranking,
        "games": games,
        "rounds": int(rounds.sum()),
        "seconds": seconds,
        "games_per_s": games / max(seconds, 1e-9),
    }
