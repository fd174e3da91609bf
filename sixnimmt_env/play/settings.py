"""What every game of one play-table server (or terminal session) is: :class:`PlaySettings` (no web imports)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sixnimmt_env.rules.engine import GameConfig

__all__ = ["HUMAN", "PlaySettings"]

HUMAN = "human"
"""The spec of the person's seat."""


@dataclass(frozen=True)
class PlaySettings:
    """What every new game at this server is.

    Attributes:
        config: the rules in force.
        specs: per seat, ``"human"`` for the person or an agent spec; with no ``"human"`` seat the table is
            watched.
        seed: the server's seed: game ``k`` (0, 1, ... in the order they are started) is seeded ``[seed, k]``
            (see :mod:`sixnimmt_env.play.table`); ``None`` for fresh randomness.
        coach_samples: worlds the coach searches (``mc:N``).
        records: game records that can be replayed (:mod:`sixnimmt_env.records`), in file order.
        max_games: games held in memory at once (:class:`sixnimmt_env.play.server.GameStore` says which leave
            beyond it; a game in play never does).
        idle_seconds: a game not asked for in this many seconds is idle: it may leave memory (a saved game stays
            in the database and is read back when asked for).
    """

    config: GameConfig
    specs: tuple[str, ...]
    seed: int | None = None
    coach_samples: int = 1000
    records: tuple[Any, ...] = field(default=())
    max_games: int = 256
    idle_seconds: float = 600.0

    @property
    def mode(self) -> str:
        """``"replay"`` with records, ``"play"`` with a person, else ``"watch"``."""
        if self.records:
            return "replay"
        return "play" if HUMAN in self.specs else "watch"
