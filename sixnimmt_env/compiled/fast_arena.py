"""The arena's fast path: whole chunks of games between heuristic agents in one compiled loop.

:func:`play_games` plays games ``start..stop-1`` of an arena run (every seat a ``random``, ``lowest``, ``highest``
or ``greedy`` agent) in ONE compiled call, :func:`sixnimmt_env.compiled._fused.play_chunk`: for each game it deals,
asks the agents and plays every turn through the kernel's functions on the light rows
(:mod:`sixnimmt_env.rules.kernel`: ``shuffle_deck``, ``hand_out``, the draft's functions, ``play_turn``,
``game_over``; the agents of :mod:`sixnimmt_env.compiled.heuristics`) until the game is over, with no Python in between.
It returns what :mod:`sixnimmt_env.arena` needs: per-seat penalties, rounds played and the listed agent position of
every seat. The arena's pool (:func:`sixnimmt_env.arena.pool.batched_games`) calls it when every agent of the run has a
batched version (:func:`supports`). The compiled code is cached on disk (numba ``cache=True``, checked against its
sources by :mod:`sixnimmt_env.compiled.loop_cache`): after the first run, a new process loads it instead of
compiling.

Reproducibility: game ``g`` depends on ``(seed, g)`` only, as in the reference path, but its deals and the
random agents' choices come from the kernel's splitmix64 streams (seeded from ``(DEAL_TAG, seed, deal)`` and
``(AGENT_TAG, seed, g)``), not from ``numpy.random.default_rng``: the fast path plays other deals than the
reference path for the same seed, with the same rules and the same agents. The games are those that
:class:`~sixnimmt_env.compiled.core.BatchedGames` stepped with
:class:`~sixnimmt_env.compiled.heuristics.HeuristicPlayers` plays from the same streams (tested).

Importing this module is cheap (numpy only): the compiled loop is loaded by the first :func:`play_games` (or by
:func:`load`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sixnimmt_env.compiled.kinds import EXACT_AGENT_CLASSES, KINDS
from sixnimmt_env.rules.engine import GameConfig
from sixnimmt_env.rules.params import config_vector, first_states
from sixnimmt_env.seeding import AGENT_TAG, DEAL_TAG


def supports(specs: Sequence[object]) -> bool:
    """Whether every entry is a heuristic agent with a batched version (a spec string or a reference agent object).

    Reference agent objects count only if they are exactly :class:`sixnimmt_env.agents.RandomAgent`,
    ``LowestAgent``, ``HighestAgent`` or ``GreedyAgent`` (not subclasses, which may decide differently).
    """
    return all((isinstance(s, str) and s.strip() in KINDS) or _class_name(s) in EXACT_AGENT_CLASSES for s in specs)


def _class_name(entry: object) -> str:
    return f"{type(entry).__module__}.{type(entry).__qualname__}"


def spec_of(entry: object) -> str:
    """The spec string of a supported entry (a spec string or a reference heuristic agent); another entry as text."""
    return entry.strip() if isinstance(entry, str) else str(getattr(entry, "spec", entry))


def streams(tag: int, seed: int, ids: np.ndarray) -> np.ndarray:
    """``uint64`` generator states, one per id: a hash of ``(tag, seed, id)``, independent of any batch."""
    key = np.random.SeedSequence([tag, seed]).generate_state(1, np.uint64)[0]
    return first_states(key, ids)


def chunk_loop() -> Callable[..., None]:
    """The compiled ``play_chunk``: numba's, its disk cache checked against the sources
    (:func:`sixnimmt_env.compiled.loop_cache.loop`)."""
    from sixnimmt_env.compiled.loop_cache import loop

    return loop()


def load(config: GameConfig) -> None:
    """Load the compiled loop without playing a game (:func:`sixnimmt_env.compiled.loop_cache.load`; one compiled
    signature serves ``config`` and every other rule set): it reads numba's cache on disk (or compiles, the first
    time, and says so on stderr), as the first :func:`play_games` would; worker processes forked afterwards
    (:func:`sixnimmt_env.arena.pool.play_all`) start with it loaded."""
    from sixnimmt_env.compiled import loop_cache

    loop_cache.load(config)


def play_games(
    config: GameConfig,
    specs: Sequence[str],
    seed: int,
    start: int,
    stop: int,
    duplicate: bool = False,
    tables: np.ndarray | None = None,
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Play arena games ``start..stop-1`` in one batch.

    Args:
        config: the rules in force.
        specs: the listed agents (``random``, ``lowest``, ``highest``, ``greedy``), one per position.
        seed: the run's seed.
        start, stop: the game indices to play.
        duplicate: game ``g`` plays deal ``g // n`` (each deal replayed with the seats rotated).
        tables: optional ``(stop - start, n)`` listed positions per seat (league tables); default the arena's
            rotation: position ``(i + g) mod n`` in seat ``i``.

    Returns:
        ``(start, penalties, rounds, tables)``: ``penalties[k, i]`` (int64, bullheads over the episode) and
        ``tables[k, i]`` (listed position) of seat ``i`` in game ``start + k``; ``rounds[k]`` rounds played.

    Raises:
        ValueError: for a spec without a batched version, or a table of the wrong shape.
    """
    n = config.num_players
    count = stop - start
    games = np.arange(start, stop, dtype=np.int64)
    if tables is None:
        tables = (np.arange(n)[None, :] + games[:, None]) % len(specs)
    tables = np.asarray(tables, np.int64)
    if tables.shape != (count, n):
        raise ValueError(f"tables must have shape ({count}, {n}), got {tables.shape}")
    kinds_of = np.array([KINDS.get(spec_of(s), -2) for s in specs], np.int8)
    if (kinds_of < 0).any():
        bad = [spec_of(s) for s, k in zip(specs, kinds_of, strict=True) if k < 0]
        raise ValueError(f"agents {bad} have no batched version; batched agents: {', '.join(KINDS)}")
    penalties = np.zeros((count, n), np.int64)
    rounds = np.zeros(count, np.int64)
    chunk_loop()(
        config_vector(config),
        np.ascontiguousarray(kinds_of[tables]),
        streams(DEAL_TAG, seed, games // n if duplicate else games),
        streams(AGENT_TAG, seed, games),
        penalties,
        rounds,
    )
    return start, penalties, rounds, tables
