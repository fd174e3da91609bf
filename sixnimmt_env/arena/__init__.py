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
if it already holds results unless ``--overwrite``; checked before any game),
printing the table before the plot is drawn (``--no-plot``: no ``results.png``, and
matplotlib is not loaded). ``--save-games FILE`` writes every game as a JSON line
(:mod:`sixnimmt_env.records`; shown move by move by ``python -m
sixnimmt_env.records_text FILE --game N``). Ctrl-C prints one line and writes
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

The modules, bottom up:

- :mod:`.play`: one game on the reference engine (:func:`play_game`) and the seat rotation;
- :mod:`.pool`: the tables of a run, chunks of games on either engine (the batched one through
  :mod:`sixnimmt_env.compiled.fast_arena`), the worker processes;
- :mod:`.summary`: the statistics per listed position (:mod:`sixnimmt_env.stats`);
- :mod:`.report`: the Markdown table, the league note, the plot, the results folder and its checks;
- :mod:`.run` (:func:`run_arena`) and :mod:`.league` (:func:`run_league`, OpenSkill);
- :mod:`.cli`: the command line (``python -m sixnimmt_env.arena`` runs :mod:`.__main__`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sixnimmt_env.arena.command import main
    from sixnimmt_env.arena.league import run_league
    from sixnimmt_env.arena.play import GameResult, play_game, seat_positions
    from sixnimmt_env.arena.report import markdown_table, write_results
    from sixnimmt_env.arena.run import run_arena

_HOMES = {
    "GameResult": "play",
    "main": "command",
    "markdown_table": "report",
    "play_game": "play",
    "run_arena": "run",
    "run_league": "league",
    "seat_positions": "play",
    "write_results": "report",
}
__all__ = [
    "GameResult",
    "main",
    "markdown_table",
    "play_game",
    "run_arena",
    "run_league",
    "seat_positions",
    "write_results",
]


def __getattr__(name: str) -> Any:
    """The public names above, imported from their module on first access: importing the package alone (as
    ``python -m sixnimmt_env.arena`` and its plot helper do first) imports no numpy."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sixnimmt_env.arena' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"sixnimmt_env.arena.{home}"), name)
