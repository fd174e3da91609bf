"""Many arena games: the tables of a run, chunks of games on either engine, and the worker processes.

A run is cut into chunks of consecutive game indices; each chunk is played by :func:`play_range`, on the batched
engine (:mod:`sixnimmt_env.compiled.fast_arena`, one compiled call per chunk) when every agent has a batched version and
the engine allows it, else on the reference engine (:func:`sixnimmt_env.arena.play.play_game`, game by game).
Game ``g`` depends on ``(seed, g)`` only, so the results do not depend on the chunks or on the number of worker
processes (:func:`play_all`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from sixnimmt_env import agents as agents_module
from sixnimmt_env.agents import Agent, make_agent
from sixnimmt_env.arena.play import play_game, seat_positions
from sixnimmt_env.rules.engine import GameConfig
from sixnimmt_env.seeding import AGENT_TAG, DEAL_TAG, TABLE_TAG

if TYPE_CHECKING:  # the game records are imported where a run keeps them (Job.record); Connection: annotations
    from multiprocessing.connection import Connection

    from sixnimmt_env.records import GameRecord

__all__ = [
    "CHUNK",
    "ENGINES",
    "Chunk",
    "Job",
    "batched_games",
    "label",
    "play_all",
    "play_range",
    "resolve_agents",
    "tables_of",
    "usable_cores",
    "warn_workers",
    "workers_ignore_ctrl_c",
]

ENGINES = ("auto", "reference", "batched")
"""Which engine plays the games: ``"auto"`` (the batched engine when every agent is ``random``, ``lowest``,
``highest`` or ``greedy``, else the reference engine), ``"reference"`` or ``"batched"`` (an error if some agent has
no batched version). The batched engine deals from its own per-game streams (:mod:`sixnimmt_env.compiled.fast_arena`):
same rules and agents, other deals than the reference engine for the same seed; each path is reproducible from
``(seed, g)``."""


CHUNK = 8192
"""Most games per chunk on the batched engine (one compiled call each; the reference engine plays at most 250)."""


@dataclass(frozen=True)
class Job:
    """What every worker needs: the rules, the seed and how tables are formed.

    Attributes:
        config: the rules in force.
        seed: the run's seed (non-negative).
        num_agents: the listed agents (the league's pool size).
        duplicate: game ``g`` plays deal ``g // num_players`` (each deal replayed with the seats rotated).
        league: tables are drawn at random from the pool (:func:`tables_of`).
        engine: one of :data:`ENGINES`.
        record: keep a game record of every game (:mod:`sixnimmt_env.records`).
    """

    config: GameConfig
    seed: int
    num_agents: int
    duplicate: bool
    league: bool
    engine: str = "auto"
    record: bool = False


Chunk = tuple[int, np.ndarray, np.ndarray, np.ndarray, "list[GameRecord] | None"]
"""``(start, penalties, rounds, tables, records)`` of games ``start..start+k-1``: ``penalties[j, i]`` (int64,
bullheads over the episode) and ``tables[j, i]`` (the listed agent position) of seat ``i`` in game ``start + j``,
``rounds[j]`` the rounds it played, and the game records (``Job.record``) or ``None``."""


def tables_of(job: Job, start: int, stop: int) -> np.ndarray:
    """``int64 (stop - start, num_players)``: the listed agent position in each seat of games ``start..stop-1``.

    The arena rotates the seats (:func:`~sixnimmt_env.arena.play.seat_positions`); a league seats the first
    ``num_players`` of ``default_rng([TABLE_TAG, seed, g]).permutation(num_agents)``.
    """
    n = job.config.num_players
    games = np.arange(start, stop, dtype=np.int64)
    if job.league:
        return np.array(
            [np.random.default_rng([TABLE_TAG, job.seed, int(g)]).permutation(job.num_agents)[:n] for g in games],
            np.int64,
        ).reshape(stop - start, n)
    return (np.arange(n)[None, :] + games[:, None]) % job.num_agents


def play_range(job: Job, agents: Sequence[Agent], start: int, stop: int) -> Chunk:
    """Play games ``start..stop-1`` of the run (:data:`Chunk`), on the engine :attr:`Job.engine` selects."""
    if job.engine != "reference":
        from sixnimmt_env.compiled.fast_arena import supports

        if job.record and supports(agents):
            return _batched_recorded(job, agents, start, stop)
        fast = batched_games(job, agents, start, stop)
        if fast is not None:
            return (*fast, None)
    n = job.config.num_players
    count = stop - start
    penalties = np.zeros((count, n), dtype=np.int64)
    rounds = np.zeros(count, dtype=np.int64)
    tables = tables_of(job, start, stop) if job.league else None
    records: list[GameRecord] | None = [] if job.record else None
    if records is not None:
        from sixnimmt_env.records import GameRecorder
    out_tables = np.zeros((count, n), dtype=np.int64)
    for k, g in enumerate(range(start, stop)):
        table = tables[k].tolist() if tables is not None else seat_positions(n, g)
        deal = g // n if job.duplicate else g
        recorder = None
        if records is not None:
            specs = [label(agents[p]) for p in table]
            recorder = GameRecorder(job.config, specs, job.seed, g, deal, positions=table)
        result = play_game(job.config, [agents[p] for p in table], job.seed, g, deal, recorder)
        penalties[k] = result.penalties
        rounds[k] = result.rounds
        out_tables[k] = table
        if records is not None and recorder is not None:
            records.append(recorder.finish())
    return start, penalties, rounds, out_tables, records


def batched_games(
    job: Job, agents: Sequence[Agent | str], start: int, stop: int
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray] | None:
    """Games ``start..stop-1`` in one compiled call (:func:`sixnimmt_env.compiled.fast_arena.play_games`), or ``None``
    if some agent has no batched version (the caller then plays them on the reference engine).

    Returns:
        ``(start, penalties, rounds, tables)`` as in :data:`Chunk`; the tables are :func:`tables_of`.
    """
    from sixnimmt_env.compiled.fast_arena import play_games, spec_of, supports

    if not supports(agents):
        return None
    tables = tables_of(job, start, stop) if job.league else None
    specs = [spec_of(a) for a in agents]
    return play_games(job.config, specs, job.seed, start, stop, job.duplicate, tables)


def _batched_recorded(job: Job, agents: Sequence[Agent], start: int, stop: int) -> Chunk:
    """Games ``start..stop-1`` on the batched engine, as :func:`sixnimmt_env.compiled.fast_arena.play_games` plays
    them (the same deals, agents and random streams, so the same results), with a game record of each: the
    state of every unfinished game is read (:meth:`BatchedGames.get_state`) before and after every step."""
    from sixnimmt_env.compiled.core import BatchedGames
    from sixnimmt_env.compiled.fast_arena import spec_of, streams
    from sixnimmt_env.compiled.heuristics import KINDS, HeuristicPlayers
    from sixnimmt_env.records import GameRecorder

    config = job.config
    n = config.num_players
    count = stop - start
    games = np.arange(start, stop, dtype=np.int64)
    tables = tables_of(job, start, stop)
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


def label(entry: Any) -> str:
    """The name of an agent entry in results: a spec string stripped, else the object's ``spec`` or class name."""
    if isinstance(entry, str):
        return entry.strip()
    return str(getattr(entry, "spec", "") or type(entry).__name__)


def resolve_agents(entries: Sequence[Any] | str) -> tuple[list[Any], list[Agent], list[str]]:
    """The entries (a comma-separated string split), their agents and their labels (:func:`label`).

    Raises:
        ValueError: for no entry, an empty entry, an unknown spec (listing the known ones) or an object without
            ``act(view, rng)``.
    """
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
    return entries, built, [label(e) for e in entries]


@contextlib.contextmanager
def workers_ignore_ctrl_c() -> Iterator[None]:
    """Ignore SIGINT while worker processes start: they inherit the ignored signal (Python installs its
    KeyboardInterrupt handler only where SIGINT is not ignored at start-up), so Ctrl-C, which reaches the
    whole process group, stops only the parent, which then ends the workers; no worker prints a traceback."""
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


class _Results:
    """The run's results, filled chunk by chunk by every process: ``penalties``, ``rounds`` and ``tables`` (as in
    :data:`Chunk`, over all games) in shared memory (``multiprocessing.RawArray``), so that a worker writes its
    chunks in place and sends only a short note (:func:`_worker`)."""

    def __init__(self, ctx: Any, games: int, n: int, shared: bool) -> None:
        self.shape = (games, n)
        new = ctx.RawArray if shared else lambda _, size: np.zeros(size, np.int64)  # one process: plain arrays
        self.raw = (new("q", games * n), new("q", games), new("q", games * n))
        self.views()

    def views(self) -> None:
        """Set the numpy views of the shared arrays (again in a spawned worker, after unpickling)."""
        pen, rnd, tab = self.raw
        self.penalties = np.frombuffer(pen, np.int64).reshape(self.shape)
        self.rounds = np.frombuffer(rnd, np.int64)
        self.tables = np.frombuffer(tab, np.int64).reshape(self.shape)

    def store(self, part: Chunk) -> None:
        start, pen, rnd, tab, _ = part
        stop = start + len(rnd)
        self.penalties[start:stop] = pen
        self.rounds[start:stop] = rnd
        self.tables[start:stop] = tab

    def __getstate__(self) -> dict[str, Any]:
        return {"shape": self.shape, "raw": self.raw}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.shape, self.raw = state["shape"], state["raw"]
        self.views()


class _Counter:
    """The chunk counter of a run without worker processes: the ``value`` and ``get_lock()`` of the
    ``multiprocessing.Value`` the workers share, without its semaphore (making one starts multiprocessing's
    resource tracker, a Python process: about 30 ms of a command's start-up)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def get_lock(self) -> contextlib.nullcontext[None]:
        """No lock: nobody else takes chunks."""
        return contextlib.nullcontext()


def _next_chunk(counter: Any, chunks: Sequence[tuple[int, int]]) -> tuple[int, int] | None:
    """The next chunk nobody has taken yet (``counter``: a shared ``multiprocessing.Value``, or a :class:`_Counter`
    without workers), or ``None``."""
    with counter.get_lock():
        i = counter.value
        counter.value = i + 1
    return chunks[i] if i < len(chunks) else None


def _worker(
    conn: Any,
    counter: Any,
    chunks: Sequence[tuple[int, int]],
    results: _Results,
    job: Job,
    entries: Sequence[Any],
    registry: dict[str, tuple[Callable[[str], Agent], str]],
) -> None:
    """A worker process: take chunks until none is left, write each into ``results`` and send ``(start, stop,
    records)`` on ``conn``; an exception is sent as ``(None, None, exception)`` and ends the worker."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the parent, which ends the workers
    try:
        for prefix, (factory, usage) in registry.items():  # spawned: the parent's registered prefixes
            agents_module.register_agent(prefix, factory, usage)
        built = [make_agent(e) if isinstance(e, str) else e for e in entries]
        while (bounds := _next_chunk(counter, chunks)) is not None:
            part = play_range(job, built, *bounds)
            results.store(part)
            conn.send((*bounds, part[4]))
    except Exception as e:  # the parent raises it
        try:
            conn.send((None, None, e))
        except Exception:  # an exception that does not pickle: its text
            conn.send((None, None, RuntimeError(f"{type(e).__name__}: {e}")))
    finally:
        conn.close()


def play_all(
    entries: Sequence[Any],
    built: list[Agent],
    job: Job,
    games: int,
    workers: int,
    progress: bool,
    on_chunk: Callable[[int, np.ndarray, np.ndarray, np.ndarray], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, list[GameRecord] | None]:
    """Play games ``0..games-1`` of ``job``: in this process, and with ``workers > 1`` on ``workers - 1`` more.

    The chunks are taken in order by whichever process is free, this one included; workers write their results
    into shared memory. Worker processes are forked (Linux) when every game is played on the batched engine, after
    this process has loaded its compiled code (:func:`sixnimmt_env.compiled.fast_arena.load`), so they start at once;
    otherwise (other agents, which may hold threads or libraries that do not survive a fork) they are spawned and
    receive the entries (picklable agent objects) and the registered agent prefixes.

    Args:
        entries: the listed agent entries (spec strings or agent objects, sent to spawned workers).
        built: their agents, for the games played in this process.
        job: the run.
        games: how many games.
        workers: processes to play on, >= 1 (the results do not depend on it).
        progress: show a tqdm progress bar on stderr.
        on_chunk: called in this process with ``(start, penalties, rounds, tables)`` of each chunk (as in
            :data:`Chunk`) as soon as it is in, whichever process played it, while the other chunks are being
            played (the arena summarises the games chunk by chunk there). The chunks are the same for every
            ``workers``; with ``job.duplicate`` every chunk holds whole deals.

    Returns:
        ``(penalties, rounds, tables, seconds, records)`` over all games as in :data:`Chunk`, ``seconds`` the
        wall-clock time of the games (loading the batched engine's compiled loop left out), ``records`` (game
        order) with ``job.record``.

    Raises:
        ValueError: for a bad worker count or engine, or ``engine="batched"`` with an agent that has no batched
            version; any exception of a game, from whichever process played it.
    """
    from multiprocessing.connection import wait

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if job.engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {job.engine!r}")
    from sixnimmt_env.compiled.fast_arena import load, supports

    batched = job.engine != "reference" and supports(built)
    if job.engine == "batched" and not batched:
        raise ValueError(
            "engine='batched' needs every agent to be random, lowest, highest or greedy; "
            f"got {', '.join(label(e) for e in entries)}"
        )
    # The chunks depend on the games alone, not on the workers: every worker count cuts the same chunks, so that
    # the chunk-by-chunk summaries (on_chunk) add up to the same bits; at least 64 of them (or one per game), so
    # that a few workers share them out evenly.
    size = min(CHUNK, -(-games // 64)) if batched else max(1, min(250, games // 64))
    n = job.config.num_players
    if job.duplicate:  # whole deals per chunk
        size = max(n, size - size % n)
    chunks = [(a, min(a + size, games)) for a in range(0, games, size)]
    fork = batched and sys.platform == "linux" and workers > 1
    ctx = multiprocessing.get_context("fork") if fork else multiprocessing.get_context("spawn")
    results = _Results(ctx, games, n, shared=workers > 1)
    counter = ctx.Value("q", 0) if workers > 1 else _Counter()
    records: dict[int, list[GameRecord]] = {}
    done = [0]  # games played, in every process
    if batched:  # the compiled loop's loading is start-up, not games: the measured seconds leave it out
        load(job.config)
    t0 = time.perf_counter()
    if fork:
        sys.stdout.flush()  # a forked worker would write the parent's unwritten output again
        sys.stderr.flush()
    procs, conns = [], []
    try:
        # spawned workers import the registered agents' packages (the pickled factories) on the same sys.path
        modules = {getattr(f, "func", f).__module__ for f, _ in agents_module.registered_factories().values()}
        packages = {name.partition(".")[0] for name in modules if "." in name}
        with workers_ignore_ctrl_c(), agents_module.past_shadowing_modules(packages, "an arena worker"):
            for _ in range(workers - 1):
                reader, writer = ctx.Pipe(duplex=False)
                args = (writer, counter, chunks, results, job, list(entries), agents_module.registered_factories())
                proc = ctx.Process(target=_worker, args=args, daemon=True)
                proc.start()
                writer.close()
                procs.append(proc)
                conns.append(reader)
        with _progress_bar(games, progress) as bar:

            def note(start: int | None, stop: int | None, recs: Any) -> None:
                if start is None or stop is None:  # a worker's error: (None, None, exception)
                    raise recs
                if recs is not None:
                    records[start] = recs
                done[0] += stop - start
                if on_chunk is not None:
                    sl = slice(start, stop)
                    on_chunk(start, results.penalties[sl], results.rounds[sl], results.tables[sl])
                if bar is not None:
                    bar.update(stop - start)

            def receive(timeout: float | None) -> None:
                for conn in cast("list[Connection]", wait(conns, timeout)):  # some of conns
                    try:
                        note(*conn.recv())
                    except EOFError:  # that worker is done (or died: the missing chunks tell)
                        conns.remove(conn)

            while (bounds := _next_chunk(counter, chunks)) is not None:
                part = play_range(job, built, *bounds)
                results.store(part)
                note(*bounds, part[4])
                receive(0)
            while conns:
                receive(None)
        if done[0] != games:
            raise RuntimeError(f"a worker process ended before its games were played ({done[0]:,} of {games:,} done)")
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
            proc.join()
    seconds = time.perf_counter() - t0
    ordered = [r for start in sorted(records) for r in records[start]] if job.record else None
    return results.penalties, results.rounds, results.tables, seconds, ordered


def _progress_bar(games: int, shown: bool) -> Any:
    """A tqdm bar over ``games`` on stderr (a context manager), or, not ``shown``, a context giving ``None``, without
    importing tqdm (about 0.07 s: its version lookup reads the installed distributions)."""
    if not shown:
        return contextlib.nullcontext()
    from tqdm import tqdm

    return tqdm(total=games, unit="game", file=sys.stderr, leave=False)


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
