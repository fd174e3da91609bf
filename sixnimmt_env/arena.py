"""The arena: who is better, with 95% confidence intervals.

Command line::

    python -m sixnimmt_env.arena --agents greedy,lowest,random,random --games 20000 --seed 0
    python -m sixnimmt_env.arena --agents mc:64,greedy,greedy,greedy --games 1000 --workers 2
    python -m sixnimmt_env.arena --agents greedy,lowest,highest,random,mc:16 --players 4 --league --games 2000

It plays the rules as configured (by default single rounds, the standard deck
and the player's own low-card row choice, `RULES.md` R9b, so each agent's row
rule is what gets measured) and reports, per listed agent position: the mean
penalty per round in bullheads with its 95% interval (and per game with
``--episode game``), the win share (a tie for the lowest penalty splits the
win, R13), the mean rank (ties share the mean of their ranks) and games per
second overall. It writes ``results.json``, ``results.md`` and ``results.png``
to a new folder per run (``runs/arena/<stamp>/``, or ``--out``, which is refused
if it already holds results unless ``--overwrite``; checked before any game)
and prints the table. ``--save-games FILE`` writes every game as a JSON line
(:mod:`sixnimmt_env.records`; shown move by move by ``python -m
sixnimmt_env.replay FILE --game N``). Ctrl-C prints one line and writes
nothing; ``--workers`` above the usable cores is warned about.

Reproducibility and seats: in game ``g`` the agent listed at position
``(i + g) mod n`` sits in seat ``i``. The deal of game ``g`` is drawn from
``numpy.random.default_rng([DEAL_TAG, seed, g])`` and the agents of that game
draw from one ``default_rng([AGENT_TAG, seed, g])`` (called in seat order), so
every game is reproducible from ``(seed, g)`` alone, whatever the number of
worker processes. ``--duplicate`` plays deal ``g // n`` in game ``g``: each deal
is replayed with the seats rotated through all ``n`` positions, and intervals
are computed over deals (variance reduction).

``--league``: the listed agents form a pool; game ``g`` seats ``--players`` of
them drawn at random (from ``default_rng([TABLE_TAG, seed, g])``) and the
finishing order updates OpenSkill Plackett-Luce ratings (``tau = 0``) in game
order; the table is ranked by the ordinal ``mu - 3 sigma``, and
:func:`league_note` names neighbours whose ratings are not separated.

Python API: :func:`play_game` (one game, per-seat penalties), :func:`run_arena`
and :func:`run_league` (a results dict), :func:`markdown_table`,
:func:`write_results`. Agents are spec strings (:func:`sixnimmt_env.agents.make_agent`,
including prefixes registered from outside) or :class:`~sixnimmt_env.agents.Agent`
objects.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from sixnimmt_env import agents as agents_module
from sixnimmt_env.agents import Agent, make_agent
from sixnimmt_env.engine import DONE, NOOP, SELECT, GameConfig, IllegalActionError, PlayerView, new_game, step
from sixnimmt_env.records import GameRecord, GameRecorder, write_records
from sixnimmt_env.seeding import AGENT_TAG, DEAL_TAG, TABLE_TAG
from sixnimmt_env.stats import fractional_ranks, mean_ci95, win_shares

__all__ = [
    "AGENT_TAG",
    "DEAL_TAG",
    "TABLE_TAG",
    "GameResult",
    "main",
    "markdown_table",
    "play_game",
    "run_arena",
    "run_league",
    "seat_positions",
    "write_results",
]

ENGINES = ("auto", "reference", "batched")
"""Which engine plays the games: ``"auto"`` (the batched engine when every agent
is ``random``, ``lowest``, ``highest`` or ``greedy``, else the reference
engine), ``"reference"`` or ``"batched"`` (an error if some agent has no batched
version). The batched engine deals from its own per-game streams
(:mod:`sixnimmt_env.batched.arena`): same rules and agents, other deals than the
reference engine for the same seed; each path is reproducible from ``(seed, g)``."""


class GameResult(NamedTuple):
    """The outcome of one game (or one round with ``episode="round"``).

    Attributes:
        penalties: per seat, bullheads taken over the episode (R11, R12).
        rounds: rounds played, >= 1.
    """

    penalties: tuple[int, ...]
    rounds: int


def seat_positions(num_agents: int, game_index: int) -> tuple[int, ...]:
    """For each seat ``i``, the listed agent position ``(i + game_index) mod num_agents`` that sits there."""
    return tuple((i + game_index) % num_agents for i in range(num_agents))


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _play(
    config: GameConfig,
    agents: Sequence[Agent],
    deal_rng: np.random.Generator,
    rng: np.random.Generator,
    game_index: int | None = None,
    recorder: GameRecorder | None = None,
) -> GameResult:
    """Play one episode with ``agents[seat]`` in each seat; only seats with a decision are asked.

    ``recorder`` (optional) observes every step (:class:`sixnimmt_env.records.GameRecorder`).

    Raises:
        IllegalActionError: an agent's illegal action, naming the agent (its spec), the seat and the game.
    """
    state = new_game(config, deal_rng)
    n = config.num_players
    seats = range(n)
    while True:
        phase = state.phase
        if phase == SELECT:
            actions = [agents[s].act(PlayerView(state, s), rng) for s in seats]
        elif phase == DONE:
            return GameResult(state.totals, state.round + 1)
        else:
            actions = [NOOP] * n
            c = state.chooser
            actions[c] = agents[c].act(PlayerView(state, c), rng)
        try:
            before = state
            state, penalties = step(state, actions, deal_rng)
            if recorder is not None:
                recorder.observe(before, actions, penalties, state)
        except IllegalActionError as e:
            agent = agents[e.seat]
            name = f"agent {getattr(agent, 'spec', None) or type(agent).__name__}"
            if game_index is not None:
                name += f" in game {game_index}"
            raise IllegalActionError(e.seat, e.action, e.legal, state.phase, agent=name) from None


def play_game(
    config: GameConfig,
    agents: Sequence[Agent],
    seed: int,
    game_index: int,
    deal_index: int | None = None,
    recorder: GameRecorder | None = None,
) -> GameResult:
    """Play game ``game_index`` of a run seeded with ``seed``; ``agents[i]`` sits in seat ``i``.

    Args:
        config: the rules in force (``episode="round"`` for single rounds).
        agents: one :class:`~sixnimmt_env.agents.Agent` per seat, in seat order.
        seed: the run's seed (non-negative).
        game_index: the game's index in the run (the agents' random stream).
        deal_index: the deal to play (default ``game_index``; duplicate runs
            replay one deal in several games).
        recorder: if given, it observes every step (:class:`sixnimmt_env.records.GameRecorder`);
            call its ``finish()`` afterwards for the game record.

    Returns:
        A :class:`GameResult`: per-seat penalties in bullheads and rounds played.

    Raises:
        ValueError: for a wrong number of agents, a bad seed, or an agent's illegal action
            (:class:`~sixnimmt_env.engine.IllegalActionError` names the seat and the legal actions).
    """
    if len(agents) != config.num_players:
        raise ValueError(f"play_game needs one agent per seat: num_players={config.num_players}, got {len(agents)}")
    seed = _check_seed(seed)
    deal = game_index if deal_index is None else deal_index
    deal_rng = np.random.default_rng([DEAL_TAG, seed, deal])
    rng = np.random.default_rng([AGENT_TAG, seed, game_index])
    return _play(config, agents, deal_rng, rng, game_index, recorder)


# --------------------------------------------------------------------------- running many games


@dataclass(frozen=True)
class _Job:
    """What every worker needs: the rules, the seed and how tables are formed."""

    config: GameConfig
    seed: int
    num_agents: int
    duplicate: bool
    league: bool
    engine: str = "auto"
    record: bool = False


_Chunk = tuple[int, np.ndarray, np.ndarray, np.ndarray, "list[GameRecord] | None"]


def _games(job: _Job, agents: Sequence[Agent], start: int, stop: int) -> _Chunk:
    """Play games ``start..stop-1``: returns ``(start, penalties, rounds, tables, records)``.

    ``penalties[k, i]`` and ``tables[k, i]`` are the bullheads and the listed
    agent position of seat ``i`` in game ``start + k``; ``records`` the game
    records (``job.record``) or ``None``.
    """
    if job.engine != "reference":
        from sixnimmt_env.batched.arena import arena_chunk, supports

        if job.record and supports(agents):
            return _batched_recorded(job, agents, start, stop)
        fast = arena_chunk(job, agents, start, stop)
        if fast is not None:
            return (*fast, None)
    n = job.config.num_players
    count = stop - start
    penalties = np.zeros((count, n), dtype=np.int64)
    rounds = np.zeros(count, dtype=np.int64)
    tables = np.zeros((count, n), dtype=np.int64)
    records: list[GameRecord] | None = [] if job.record else None
    for k, g in enumerate(range(start, stop)):
        if job.league:
            table = np.random.default_rng([TABLE_TAG, job.seed, g]).permutation(job.num_agents)[:n].tolist()
        else:
            table = seat_positions(n, g)
        deal = g // n if job.duplicate else g
        recorder = None
        if records is not None:
            specs = [_label(agents[p]) for p in table]
            recorder = GameRecorder(job.config, specs, job.seed, g, deal, positions=table)
        result = play_game(job.config, [agents[p] for p in table], job.seed, g, deal, recorder)
        penalties[k] = result.penalties
        rounds[k] = result.rounds
        tables[k] = table
        if recorder is not None:
            records.append(recorder.finish())
    return start, penalties, rounds, tables, records


def _batched_recorded(job: _Job, agents: Sequence[Agent], start: int, stop: int) -> _Chunk:
    """Games ``start..stop-1`` on the batched engine, as :func:`sixnimmt_env.batched.arena.play_games` plays
    them (the same deals, agents and random streams, so the same results), with a game record of each: the
    state of every unfinished game is read (:meth:`BatchedGames.get_state`) before and after every step."""
    from sixnimmt_env.batched.agents import KINDS, HeuristicPlayers
    from sixnimmt_env.batched.arena import spec_of, streams
    from sixnimmt_env.batched.core import BatchedGames

    config = job.config
    n = config.num_players
    count = stop - start
    games = np.arange(start, stop, dtype=np.int64)
    if job.league:
        tables = np.array(
            [np.random.default_rng([TABLE_TAG, job.seed, g]).permutation(job.num_agents)[:n] for g in games], np.int64
        ).reshape(count, n)
    else:
        tables = (np.arange(n)[None, :] + games[:, None]) % job.num_agents
    specs = [spec_of(a) for a in agents]
    kinds_of = np.array([KINDS[s] for s in specs], np.int8)
    deals = games // n if job.duplicate else games
    batch = BatchedGames(config, count, seed=0)
    batch.reset(streams=streams(DEAL_TAG, job.seed, deals))
    players = HeuristicPlayers(batch, kinds_of[tables])
    players.rng[:] = streams(AGENT_TAG, job.seed, games)
    recorders = [
        GameRecorder(config, [specs[p] for p in tables[k]], job.seed, int(g), int(deals[k]), tables[k].tolist())
        for k, g in enumerate(games)
    ]
    actions = np.zeros((count, n), np.int64)
    while not batch.done.all():
        live = np.flatnonzero(~batch.done).tolist()
        before = [batch.get_state(b) for b in live]
        players.act(actions)
        chosen = actions.copy()
        penalties = batch.step(actions, check=False)
        for b, state in zip(live, before, strict=True):
            recorders[b].observe(state, chosen[b].tolist(), penalties[b].tolist(), batch.get_state(b))
    records = [r.finish() for r in recorders]
    return start, batch.totals.astype(np.int64), batch.round.astype(np.int64) + 1, tables, records


_WORKER: dict[str, Any] = {}


@contextlib.contextmanager
def _workers_ignore_ctrl_c() -> Iterator[None]:
    """Ignore SIGINT while worker processes start: they inherit the ignored signal (Python installs its
    KeyboardInterrupt handler only where SIGINT is not ignored at start-up), so Ctrl-C, which reaches the
    whole process group, stops only the parent, which then ends the pool; no worker prints a traceback."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _init_worker(registry: dict[str, tuple[Callable[[str], Agent], str]], entries: Sequence[Any], job: _Job) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the parent, which ends the pool
    for prefix, (factory, usage) in registry.items():
        agents_module.register_agent(prefix, factory, usage)
    _WORKER["agents"] = [make_agent(e) if isinstance(e, str) else e for e in entries]
    _WORKER["job"] = job


def _worker_games(bounds: tuple[int, int]) -> _Chunk:
    return _games(_WORKER["job"], _WORKER["agents"], *bounds)


def _label(entry: Any) -> str:
    if isinstance(entry, str):
        return entry.strip()
    return str(getattr(entry, "spec", "") or type(entry).__name__)


def _resolve(entries: Sequence[Any] | str) -> tuple[list[Any], list[Agent], list[str]]:
    """The entries (a comma-separated string split), their agents (ValueError for unknown specs) and labels."""
    if isinstance(entries, str):
        entries = entries.split(",")
    entries = [e.strip() if isinstance(e, str) else e for e in entries]
    if len(entries) == 0 or entries == [""]:
        raise ValueError("agents must list at least one agent spec, e.g. 'greedy,lowest,random,random'")
    if any(isinstance(e, str) and not e for e in entries):
        raise ValueError(
            f"agents {list(entries)} has an empty entry: list one agent spec per seat, e.g. 'greedy,lowest'"
        )
    built: list[Agent] = []
    for e in entries:
        if isinstance(e, str):
            built.append(make_agent(e))
        elif callable(getattr(e, "act", None)):
            built.append(e)
        else:
            raise ValueError(f"agent {e!r} is neither a spec string nor an object with act(view, rng)")
    return entries, built, [_label(e) for e in entries]


def _run(
    entries: Sequence[Any],
    built: list[Agent],
    job: _Job,
    games: int,
    workers: int,
    progress: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, list[GameRecord] | None]:
    """Play ``games`` games in order (in-process or on ``workers`` processes).

    Returns ``(penalties, rounds, tables, seconds, records)``; ``records`` (game order) with ``job.record``.
    """
    from tqdm import tqdm

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    n = job.config.num_players
    penalties = np.zeros((games, n), dtype=np.int64)
    rounds = np.zeros(games, dtype=np.int64)
    tables = np.zeros((games, n), dtype=np.int64)
    if job.engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {job.engine!r}")
    from sixnimmt_env.batched.arena import CHUNK, supports

    batched = job.engine != "reference" and supports(built)
    if job.engine == "batched" and not batched:
        raise ValueError(
            "engine='batched' needs every agent to be random, lowest, highest or greedy; "
            f"got {', '.join(_label(e) for e in entries)}"
        )
    size = min(CHUNK, -(-games // workers)) if batched else max(1, min(250, games // (8 * workers)))
    chunks = [(a, min(a + size, games)) for a in range(0, games, size)]
    bar = tqdm(total=games, unit="game", disable=not progress, file=sys.stderr, leave=False)
    t0 = time.perf_counter()

    records: dict[int, list[GameRecord]] = {}

    def store(part: _Chunk) -> None:
        start, pen, rnd, tab, recs = part
        if recs is not None:
            records[start] = recs
        penalties[start : start + len(rnd)] = pen
        rounds[start : start + len(rnd)] = rnd
        tables[start : start + len(rnd)] = tab
        bar.update(len(rnd))

    try:
        if workers == 1:
            for a, b in chunks:
                store(_games(job, built, a, b))
        else:
            ctx = multiprocessing.get_context("spawn")
            init = (agents_module.registered_factories(), list(entries), job)
            with _workers_ignore_ctrl_c():
                pool = ctx.Pool(workers, initializer=_init_worker, initargs=init)
            with pool:
                for part in pool.imap_unordered(_worker_games, chunks):
                    store(part)
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    ordered = [r for start in sorted(records) for r in records[start]] if job.record else None
    return penalties, rounds, tables, seconds, ordered


def check_new_file(path: str | Path, what: str, overwrite: bool = False) -> Path:
    """Check, before any work, that a result file can be created at ``path`` without replacing one.

    Raises:
        ValueError: naming ``what`` and the path: it exists (and ``overwrite`` is false) or is a folder, its
            folder does not exist or is not writable.
    """
    import os

    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a folder; give a file name, e.g. games.jsonl")
    if path.exists() and not overwrite:
        raise ValueError(f"{what} {str(path)!r} already exists; choose a new file (results are never overwritten)")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"{what} {str(path)!r}: the folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{what} {str(path)!r}: the folder {str(parent)!r} is not writable")
    return path


def usable_cores() -> int:
    """CPU cores this process may run on (``os.sched_getaffinity`` where available, else ``os.cpu_count``)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (macOS, Windows)
        return os.cpu_count() or 1


def warn_workers(workers: int) -> str | None:
    """Print (to stderr) and return a warning when ``workers`` exceeds the usable cores, else ``None``."""
    cores = usable_cores()
    if isinstance(workers, int) and workers > cores:
        text = (
            f"warning: --workers {workers} is more than the {cores} CPU core(s) available: the processes will "
            f"take turns on the cores and run slower than --workers {cores}"
        )
        print(text, file=sys.stderr)
        return text
    return None


def _config(config: GameConfig | None, num_players: int) -> GameConfig:
    if config is None:
        return GameConfig(num_players=num_players, episode="round")
    if not isinstance(config, GameConfig):
        raise ValueError(f"config must be a GameConfig or None, got {config!r}")
    return config


def _check_games(games: object) -> int:
    if isinstance(games, bool) or not isinstance(games, int | np.integer) or games < 2:
        raise ValueError(f"games must be an integer >= 2 (a 95% interval needs two samples), got {games!r}")
    return int(games)


def _settings(labels: list[str], config: GameConfig, games: int, seed: int, workers: int, **extra: Any) -> dict:
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
        engine: ``"auto"``, ``"reference"`` or ``"batched"`` (:data:`ENGINES`).
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
    entries, built, labels = _resolve(agents)
    config = _config(config, len(built))
    n = config.num_players
    if n != len(built):
        raise ValueError(
            f"{len(built)} agents ({', '.join(labels)}) for num_players={n}: list exactly one agent per seat "
            f"(or use the league mode for a larger pool)"
        )
    games = _check_games(games)
    seed = _check_seed(seed)
    if duplicate and (games % n or games // n < 2):
        raise ValueError(
            f"with duplicate, games must be a multiple of num_players={n} covering >= 2 deals, got {games}"
        )
    if save_games is not None:
        check_new_file(save_games, "save_games")
    job = _Job(config, seed, n, bool(duplicate), False, engine, save_games is not None)
    seat_pen, rounds, tables, seconds, records = _run(entries, built, job, games, workers, progress)
    if records is not None:
        write_records(save_games, records)  # type: ignore[arg-type]
    # by listed position: seat i holds position tables[g, i]
    order = np.argsort(tables, axis=1)
    pen = np.take_along_axis(seat_pen, order, axis=1)
    per_round = pen / rounds[:, None]
    wins = win_shares(pen)
    ranks = fractional_ranks(pen)

    def units(x: np.ndarray) -> np.ndarray:
        return x.reshape(games // n, n, -1).mean(axis=1) if duplicate else x

    mean, ci = mean_ci95(units(per_round))
    win_mean, win_ci = mean_ci95(units(wins))
    if config.episode == "game":
        gmean, gci = mean_ci95(units(pen.astype(np.float64)))
    rows = []
    for p in range(n):
        row = {
            "position": p,
            "agent": labels[p],
            "mean_penalty": float(mean[p]),
            "ci95": float(ci[p]),
            "win_share": float(win_mean[p]),
            "win_share_ci95": float(win_ci[p]),
            "mean_rank": float(ranks[:, p].mean()),
        }
        if config.episode == "game":
            row["mean_penalty_per_game"] = float(gmean[p])
            row["ci95_per_game"] = float(gci[p])
        rows.append(row)
    results = {
        "mode": "arena",
        "settings": _settings(
            labels,
            config,
            games,
            seed,
            workers,
            duplicate=bool(duplicate),
            engine=engine,
            save_games=None if save_games is None else str(save_games),
        ),
        "agents": rows,
        "games": games,
        "rounds": int(rounds.sum()),
        "seconds": seconds,
        "games_per_s": games / max(seconds, 1e-9),
    }
    if keep_games:
        results["per_game"] = {"penalties": pen.tolist(), "rounds": rounds.tolist()}
    return results


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
    places from one seed to the next (2,000 games of the README's league put
    ``highest`` above ``greedy`` although greedy finished ahead of it in 648
    of their 1,184 decided meetings). Online ratings still depend on the game
    order a little: :func:`league_note` flags neighbours in the ranking whose
    ratings are not separated.

    Args:
        agents: the pool (specs or agent objects), at least ``num_players``.
        games: games to play, >= 2.
        seed: the run's seed; game ``g``'s table and play depend on ``(seed, g)`` only.
        config: the rules; default ``GameConfig(num_players=min(4, len(agents)), episode="round")``.
        workers: processes to play on (results do not depend on it).
        progress: show a tqdm progress bar on stderr.
        engine: ``"auto"``, ``"reference"`` or ``"batched"`` (:data:`ENGINES`).
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

    entries, built, labels = _resolve(agents)
    if len(built) < 2:
        raise ValueError(f"a league needs at least 2 agents, got {len(built)} ({', '.join(labels)})")
    config = _config(config, min(4, len(built)))
    n = config.num_players
    if n > len(built):
        raise ValueError(f"the league pool ({len(built)} agents: {', '.join(labels)}) is smaller than num_players={n}")
    games = _check_games(games)
    seed = _check_seed(seed)
    if save_games is not None:
        check_new_file(save_games, "save_games")
    job = _Job(config, seed, len(built), False, True, engine, save_games is not None)
    seat_pen, rounds, tables, seconds, records = _run(entries, built, job, games, workers, progress)
    if records is not None:
        write_records(save_games, records)  # type: ignore[arg-type]
    model = PlackettLuce(tau=0.0)  # fixed agents: no skill drift between games (see the docstring)
    ratings = [model.rating(name=f"{p}:{labels[p]}") for p in range(len(built))]
    for g in range(games):
        table = tables[g].tolist()
        ranks = fractional_ranks(seat_pen[g : g + 1])[0].tolist()
        rated = model.rate([[ratings[p]] for p in table], ranks=ranks)
        for p, team in zip(table, rated, strict=True):
            ratings[p] = team[0]
    per_round = seat_pen / rounds[:, None]
    wins = win_shares(seat_pen)
    ranks_all = fractional_ranks(seat_pen)
    rows = []
    for p in range(len(built)):
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
        r = ratings[p]
        row.update(mu=float(r.mu), sigma=float(r.sigma), ordinal=float(r.ordinal()))
        rows.append(row)
    ranking = sorted(range(len(built)), key=lambda p: -rows[p]["ordinal"])
    for place, p in enumerate(ranking, start=1):
        rows[p]["league_rank"] = place
    return {
        "mode": "league",
        "settings": _settings(
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


# --------------------------------------------------------------------------- reporting


def _headline(results: dict[str, Any]) -> str:
    s = results["settings"]
    what = "single rounds" if s["episode"] == "round" else "whole games"
    extra = ", duplicate deals" if s.get("duplicate") else ""
    mode = "League: " if results["mode"] == "league" else ""
    return (
        f"{mode}{results['games']:,} games ({what}, {s['num_players']} players, variant {s['variant']}, "
        f"row choice {s['row_choice']}{extra}), seed {s['seed']}, {s['workers']} worker(s): "
        f"{results['games_per_s']:,.1f} games/s"
    )


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else spec.format(value)


def _num(value: float | None) -> float:
    return 0.0 if value is None else value


def league_note(results: dict[str, Any]) -> str:
    """How to read a league table: how the ratings are made, and which neighbours in the ranking are not
    separated (their ``mu`` differ by less than twice the standard deviation of the difference,
    ``2 * sqrt(sigma_a**2 + sigma_b**2)``), with the plain statistics that order them."""
    rows = results["agents"]
    ranked = [rows[p] for p in results["ranking"]]
    lines = [
        "Ratings: OpenSkill Plackett-Luce updated game by game (tau 0: the agents do not change), ranked by "
        "ordinal = mu - 3 sigma; penalty, win share and mean rank are plain averages over each agent's games."
    ]
    for a, b in itertools.pairwise(ranked):
        gap = abs(a["mu"] - b["mu"])
        noise = 2.0 * math.sqrt(a["sigma"] ** 2 + b["sigma"] ** 2)
        if gap < noise:
            lines.append(
                f"- `{a['agent']}` (#{a['position']}) and `{b['agent']}` (#{b['position']}): ratings not separated "
                f"(mu {a['mu']:.2f} vs {b['mu']:.2f}, difference {gap:.2f} < {noise:.2f}); their order may change "
                f"with the seed or more games. Mean rank {_fmt(a['mean_rank'], '{:.3f}')} vs "
                f"{_fmt(b['mean_rank'], '{:.3f}')}, penalty {_fmt(a['mean_penalty'], '{:.2f}')} vs "
                f"{_fmt(b['mean_penalty'], '{:.2f}')}."
            )
    return "\n".join(lines) + "\n"


def markdown_table(results: dict[str, Any]) -> str:
    """The results as a Markdown headline plus table (arena: in listed order; league: ranked)."""
    per_game = results["settings"]["episode"] == "game"
    head = ["#", "agent", "penalty / round", "95% CI", "win share", "mean rank"]
    if per_game:
        head[4:4] = ["penalty / game", "95% CI (game)"]
    rows = results["agents"]
    if results["mode"] == "league":
        head = ["rank", "#", "agent", "ordinal", "mu", "sigma", "games", *head[2:]]
        rows = [rows[p] for p in results["ranking"]]
    align = [":---" if h == "agent" else "---:" for h in head]
    lines = [_headline(results), "", "| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for r in rows:
        cells = [str(r["position"]), f"`{r['agent']}`", _fmt(r["mean_penalty"], "{:.3f}"), _fmt(r["ci95"], "±{:.3f}")]
        if per_game:
            cells += [_fmt(r["mean_penalty_per_game"], "{:.2f}"), _fmt(r["ci95_per_game"], "±{:.2f}")]
        cells += [_fmt(r["win_share"], "{:.3f}"), _fmt(r["mean_rank"], "{:.3f}")]
        if results["mode"] == "league":
            rating = [f"{r['ordinal']:.2f}", f"{r['mu']:.2f}", f"{r['sigma']:.2f}", str(r["games"])]
            cells = [str(r["league_rank"]), *cells[:2], *rating, *cells[2:]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


LABEL_WIDTH = 30
"""Longest short label :func:`short_labels` gives (characters)."""


def _shorten(text: str, width: int = LABEL_WIDTH) -> str:
    """``text`` cut to ``width`` characters: a ``prefix:`` is kept and the end (the most telling part of a
    path) follows an ellipsis."""
    if len(text) <= width:
        return text
    prefix, sep, _ = text.partition(":")
    head = prefix + sep if sep and len(prefix) < width // 2 else ""
    return head + "…" + text[len(text) - (width - len(head) - 1) :]


def short_labels(specs: Sequence[str]) -> list[str]:
    """Short labels for agent specs, unique for distinct specs.

    ``prefix:PATH`` specs (checkpoints) become ``prefix:<file stem>``; where two distinct paths share a stem,
    the nearest folder that tells them apart is added (``ppo:run2/best_model``, ``ppo:ppo_4p_game/…/best_model``).
    Other specs stay as they are. A label longer than :data:`LABEL_WIDTH` is cut (the prefix and the end kept);
    if cutting makes distinct labels equal they are numbered ``#1``, ``#2``. Equal specs get equal labels (the
    table position tells them apart).
    """
    parsed: list[tuple[str | None, tuple[str, ...]]] = []
    for spec in specs:
        prefix, sep, rest = spec.partition(":")
        if sep and ("/" in rest or "\\" in rest or rest.endswith(".zip")):
            path = Path(rest)
            parsed.append((prefix, (*path.parent.parts, path.stem if rest.endswith(".zip") else path.name)))
        else:
            parsed.append((None, (spec,)))
    labels = [
        spec if prefix is None else f"{prefix}:{parts[-1]}" for spec, (prefix, parts) in zip(specs, parsed, strict=True)
    ]
    base = list(labels)
    groups: dict[str, set[str]] = {}
    for label, spec in zip(base, specs, strict=True):
        groups.setdefault(label, set()).add(spec)
    for i, (prefix, parts) in enumerate(parsed):
        if prefix is None or len(groups[base[i]]) == 1:
            continue
        rivals = [parsed[j][1] for j, spec in enumerate(specs) if base[j] == base[i] and spec != specs[i]]
        for k in range(2, len(parts) + 1):
            if all(len(r) < k or r[-k] != parts[-k] for r in rivals):
                middle = parts[-k] + ("/…/" if k > 2 else "/")
                labels[i] = f"{prefix}:{middle}{parts[-1]}"
                break
    short = [_shorten(label) for label in labels]
    if len(set(short)) != len(set(specs)):  # still equal for distinct specs: number them
        numbers: dict[str, int] = {}
        for i, spec in enumerate(specs):
            if parsed[i][0] is not None:
                k = numbers.setdefault(spec, len(numbers) + 1)
                short[i] = _shorten(labels[i], LABEL_WIDTH - 4) + f" #{k}"
    return short


def plot_results(results: dict[str, Any], path: str | Path) -> Path:
    """Save a PNG: mean penalty per round and win share, each with 95% whiskers, one horizontal bar per agent.

    Agents are named ``position: short label`` (:func:`short_labels`); when a label differs from its spec
    (a ``ppo:PATH`` checkpoint), the full specs are listed under the plot.
    """
    import textwrap

    from matplotlib.figure import Figure  # the Agg canvas; no pyplot, no display

    rows = results["agents"]
    specs = [str(r["agent"]) for r in rows]
    labels = short_labels(specs)
    names = [f"{r['position']}: {label}" for r, label in zip(rows, labels, strict=True)]
    legend = [f"{r['position']}: {spec}" for r, spec, label in zip(rows, specs, labels, strict=True) if spec != label]
    y = np.arange(len(rows))
    height = 1.6 + 0.38 * len(rows) + 0.18 * len(legend)
    fig = Figure(figsize=(9.0, max(3.2, height)), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2, sharey=True)
    means, ci = [_num(r["mean_penalty"]) for r in rows], [_num(r["ci95"]) for r in rows]
    ax1.barh(y, means, xerr=ci, capsize=3, color="tab:red")
    ax1.set_xlabel("bullheads per round (lower is better)")
    ax1.set_title("mean penalty, 95% CI", fontsize=10)
    shares, wci = [_num(r["win_share"]) for r in rows], [_num(r["win_share_ci95"]) for r in rows]
    ax2.barh(y, shares, xerr=wci, capsize=3, color="tab:green")
    ax2.axvline(1.0 / results["settings"]["num_players"], color="grey", linestyle="--", linewidth=1)
    ax2.set_xlabel("share of wins (dashed: 1 / players)")
    ax2.set_title("win share (ties split), 95% CI", fontsize=10)
    ax1.set_yticks(y, names, fontsize=9)
    ax1.invert_yaxis()  # position 0 on top, as in the table
    fig.suptitle("\n".join(textwrap.wrap(_headline(results), 150)), fontsize=8)
    if legend:
        text = "\n".join(line if len(line) <= 150 else line[:64] + "…" + line[-85:] for line in legend)
        fig.supxlabel(text, fontsize=7, ha="left", x=0.01, family="monospace")
    path = Path(path)
    fig.savefig(path, dpi=120)
    return path


RESULT_FILES = ("results.json", "results.md", "results.png")
"""The files :func:`write_results` writes into a results folder."""


def check_results_folder(out: str | Path, overwrite: bool = False, what: str = "--out") -> Path:
    """Check, before any game is played, that ``out`` can take a new set of results.

    ``out`` may exist (a folder without results) or not (its nearest existing parent must be a writable
    folder); nothing is created here, so an interrupted run leaves no empty folder.

    Raises:
        ValueError: naming ``what`` and the path: a file in the way, results already there (unless
            ``overwrite``), or a parent that is not a writable folder.
    """
    import os

    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise ValueError(f"{what} {str(out)!r} is a file, not a folder")
        old = [name for name in RESULT_FILES if (out / name).exists()]
        if old and not overwrite:
            raise ValueError(
                f"{what} {str(out)!r} already holds results ({', '.join(old)}); choose a new folder "
                "(or leave out --out for a new one per run), or pass --overwrite to replace them"
            )
        if not os.access(out, os.W_OK):
            raise ValueError(f"{what} {str(out)!r} is not writable")
        return out
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{what} {str(out)!r} cannot be created: {str(parent)!r} is a file, not a folder")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{what} {str(out)!r} cannot be created: {str(parent)!r} is not writable")
    return out


def new_results_folder(base: str | Path) -> Path:
    """A fresh folder name ``base/<YYYYmmdd-HHMMSS>`` (``-1``, ``-2``, ... appended if taken); not created."""
    from datetime import datetime

    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(base) / stamp
    k = 1
    while out.exists():
        out = Path(base) / f"{stamp}-{k}"
        k += 1
    return out


def write_results(results: dict[str, Any], out: str | Path, overwrite: bool = False) -> dict[str, Path]:
    """Write ``results.json``, ``results.md`` and ``results.png`` to directory ``out`` (created); returns the paths.

    Raises:
        ValueError: if ``out`` already holds results and ``overwrite`` is false (see :func:`check_results_folder`).
    """
    out = check_results_folder(out, overwrite, "results folder")
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "md": out / "results.md", "png": out / "results.png"}
    paths["json"].write_text(json.dumps(results, indent=2) + "\n")
    note = "\n" + league_note(results) if results["mode"] == "league" else ""
    paths["md"].write_text(markdown_table(results) + note)
    plot_results(results, paths["png"])
    return paths


# --------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m sixnimmt_env.arena",
        description="Play baseline (or registered) agents against each other and report penalties with 95% CIs.",
    )
    p.add_argument("--agents", required=True, help="comma-separated agent specs, one per seat (the pool with --league)")
    p.add_argument("--games", type=int, default=1000, help="games to play (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="run seed; game g depends on (seed, g) only (default 0)")
    p.add_argument("--players", type=int, default=None, help="players per table (default: number of agents; league: 4)")
    p.add_argument("--variant", default="standard", help="standard | tactics | logic (RULES.md V1, V2)")
    p.add_argument("--row-choice", default="player", help="player | cheapest (RULES.md R9b; default player)")
    p.add_argument("--episode", default="round", help="round | game: a game is one round or a whole game (R12)")
    p.add_argument("--end-score", type=int, default=66, help="end score of a whole game (R12, default 66)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (results do not depend on it)")
    p.add_argument(
        "--out",
        default=None,
        help="new folder for results.json/.md/.png (default: a new runs/arena/<stamp>/ per run); "
        "a folder that already holds results is refused unless --overwrite",
    )
    p.add_argument("--overwrite", action="store_true", help="replace the results already in --out")
    p.add_argument(
        "--save-games",
        metavar="FILE",
        help="write every game to FILE (JSON Lines, sixnimmt_env.records); "
        "view one with python -m sixnimmt_env.replay FILE --game N",
    )
    p.add_argument("--duplicate", action="store_true", help="replay each deal with seats rotated through all positions")
    p.add_argument("--league", action="store_true", help="random tables from the pool, OpenSkill ratings")
    p.add_argument(
        "--engine",
        default="auto",
        choices=ENGINES,
        help="auto (batched engine when every agent is a heuristic one; default) | reference | batched",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the arena from the command line; prints the table and returns the results dict."""
    parser = _parser()
    args = parser.parse_args(argv)
    specs = [s.strip() for s in args.agents.split(",")]
    out = Path(args.out) if args.out is not None else new_results_folder("runs/arena")
    try:  # fail before playing, not after
        check_results_folder(out, args.overwrite)
        if args.save_games is not None:
            check_new_file(args.save_games, "--save-games")
        warn_workers(args.workers)
    except ValueError as e:
        parser.error(str(e))
    try:
        default_players = min(4, len(specs)) if args.league else len(specs)
        config = GameConfig(
            num_players=args.players if args.players is not None else default_players,
            variant=args.variant,
            row_choice=args.row_choice,
            episode=args.episode,
            end_score=args.end_score,
        )
        progress = not args.quiet and sys.stderr.isatty()
        if args.league:
            if args.duplicate:
                raise ValueError("--duplicate and --league cannot be combined (league tables are random)")
            results = run_league(
                specs,
                args.games,
                args.seed,
                config,
                workers=args.workers,
                progress=progress,
                engine=args.engine,
                save_games=args.save_games,
            )
        else:
            results = run_arena(
                specs,
                args.games,
                args.seed,
                config,
                workers=args.workers,
                duplicate=args.duplicate,
                progress=progress,
                engine=args.engine,
                save_games=args.save_games,
            )
    except ValueError as e:
        parser.error(str(e))
    except KeyboardInterrupt:
        print("\ninterrupted: no results written", file=sys.stderr)
        raise SystemExit(130) from None
    if args.out is None and out.exists():  # another run took this stamped name meanwhile: the next free one
        out = new_results_folder(out.parent)
    paths = write_results(results, out, overwrite=args.overwrite)
    print(markdown_table(results))
    if results["mode"] == "league":
        print(league_note(results))
    print(f"wrote {paths['json']}, {paths['md']}, {paths['png']}")
    if args.save_games is not None:
        print(f"wrote {results['games']:,} game records to {args.save_games}")
    return results


if __name__ == "__main__":
    main()
