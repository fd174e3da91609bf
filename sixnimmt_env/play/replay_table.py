"""A recorded game at the play table: the arena's ``--save-games`` records (:mod:`sixnimmt_env.records`), shown
move by move with the same view as a watched game (every hand visible).

The record is first re-played through the engine by :func:`sixnimmt_env.records.replay`, which checks every
recorded step's bullheads; the table then books those engine steps one turn at a time, so what is shown is what
the rules give.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sixnimmt_env.play.table import Table
from sixnimmt_env.records import GameRecord, replay
from sixnimmt_env.rules.engine import CHOOSE_ROW, DRAFT

__all__ = ["ReplayTable"]


class _Recorded:
    """The agent of a replayed seat: its decisions come from the record, it is never asked."""

    def __init__(self, spec: str) -> None:
        self.spec = spec

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        raise RuntimeError(f"{self.spec}: a replayed seat does not decide; its moves come from the record")


class ReplayTable(Table):
    """The table of one recorded game; :meth:`advance` shows the next recorded turn (or one draft pick by each
    seat).

    Args:
        record: the game (:func:`sixnimmt_env.records.read_records` gives them).
        index: the record's position in its file (shown by the page), if known.

    Attributes:
        replayed: ``record``, the whole game (:meth:`~sixnimmt_env.play.table.Table.record`, as on every table,
            is the record of the steps shown so far); ``record_index``: ``index``.

    Raises:
        sixnimmt_env.records.ReplayError: (a ``ValueError``) if the record does not replay through the engine,
            naming the game, round and step.
        ValueError: a record without any step.
    """

    def __init__(self, record: GameRecord, index: int | None = None) -> None:
        frames = replay(record)
        if not frames:
            raise ValueError(f"game {record.game}: the record holds no step to replay")
        agents = {i: _Recorded(spec) for i, spec in enumerate(record.agents)}
        super().__init__(record.config, record.agents, agents=agents, start=frames[0].before)
        self.mode = "replay"
        self.replayed = record
        self.record_index = index
        self._frames = frames
        self._next = 0

    def advance(self, version: object) -> None:
        """The next recorded turn (its cards, then a low card's row), or one recorded draft pick by each seat.

        Raises:
            TableError: a stale ``version`` or a finished replay.
        """
        with self.lock:
            self._check_version(version)
            first = self._frames[self._next]
            picks = self.config.num_players if first.before.phase == DRAFT else 1
            for _ in range(picks):
                self._book()
                if self.state.phase != DRAFT:
                    break
            if self.state.phase == CHOOSE_ROW:
                self._book()

    def snapshot(self) -> dict[str, Any]:
        """As :meth:`Table.snapshot`, with ``record``: the record's index in its file and its game number."""
        snap = super().snapshot()
        snap["record"] = {"index": self.record_index, "game": self.replayed.game}
        return snap

    def _book(self) -> None:
        frame = self._frames[self._next]
        self._next += 1
        self.observe(frame.before, frame.step.actions(self.config.num_players), frame.after, frame.penalties)
