"""The observation layout, defined once beneath both encoders: the named pieces, where they sit, how values scale.

The reference encoder :func:`sixnimmt_env.observation.encode` and the compiled one
(:func:`sixnimmt_env.rules.kernel.encode_all`) both write the vector described here; neither writes an offset or a
scale of its own. The table of pieces and their meaning is in :mod:`sixnimmt_env.observation`. This module imports
only the engine's constants (no numpy, no numba), so that every tier can import it.

- :data:`PIECES`: ``(name, size)`` in vector order; :data:`SLICES`: where each piece sits; :data:`OBS_SIZE`: 506.
- ``O_<PIECE>``: the first index of each piece (one name per piece, for the compiled encoder: numba reads module
  integers as constants).
- The scales: :data:`CARD_SCALE` (card values), :data:`ROW_LENGTH_SCALE` (cards in a row),
  :data:`BULLHEAD_ROW_SCALE` (a row's bullheads), :data:`SCORE_SCALE` (totals and round penalties),
  :data:`COUNT_SCALE` (turn, round, players and the draft's relative seats).
"""

from __future__ import annotations

from sixnimmt_env.rules.engine import NUM_CARDS, NUM_ROWS, PHASES, ROW_LIMIT

MAX_SEATS = 10
"""The seat slots of every seat-relative piece, the most players a table can have (R3)."""

CARD_SCALE = float(NUM_CARDS)
"""Card values are written as ``card / 104``."""
ROW_LENGTH_SCALE = ROW_LIMIT
"""A row's length is written as ``cards / 5``."""
BULLHEAD_ROW_SCALE = 10.0
"""A row's bullheads are written as ``bullheads / 10``."""
SCORE_SCALE = 66.0
"""Game totals and round penalties are written as ``bullheads / 66`` (the default end score, R12)."""
COUNT_SCALE = 10.0
"""Turns, rounds, players and the draft's ``relative seat + 1`` are written as ``count / 10``."""

PIECES: tuple[tuple[str, int], ...] = (
    ("hand", NUM_CARDS),
    ("rows", NUM_ROWS * ROW_LIMIT),
    ("row_lengths", NUM_ROWS),
    ("row_ends", NUM_ROWS),
    ("row_bullheads", NUM_ROWS),
    ("seen", NUM_CARDS),
    ("revealed", MAX_SEATS),
    ("phase", len(PHASES)),
    ("must_act", 1),
    ("chooser", MAX_SEATS),
    ("display", NUM_CARDS),
    ("totals", MAX_SEATS),
    ("round_penalties", MAX_SEATS),
    ("seat_present", MAX_SEATS),
    ("turn", 1),
    ("round", 1),
    ("num_players", 1),
    ("drafted_by", NUM_CARDS),
)
"""``(name, size)`` of each piece, in vector order."""


def _slices() -> dict[str, slice]:
    out, start = {}, 0
    for name, size in PIECES:
        out[name] = slice(start, start + size)
        start += size
    return out


SLICES: dict[str, slice] = _slices()
"""Where each named piece sits in the vector."""
OBS_SIZE: int = sum(size for _, size in PIECES)
"""Length of the observation vector (506)."""

O_HAND = SLICES["hand"].start
O_ROWS = SLICES["rows"].start
O_ROW_LEN = SLICES["row_lengths"].start
O_ROW_END = SLICES["row_ends"].start
O_ROW_BULL = SLICES["row_bullheads"].start
O_SEEN = SLICES["seen"].start
O_REVEALED = SLICES["revealed"].start
O_PHASE = SLICES["phase"].start
O_MUST_ACT = SLICES["must_act"].start
O_CHOOSER = SLICES["chooser"].start
O_DISPLAY = SLICES["display"].start
O_TOTALS = SLICES["totals"].start
O_ROUND_PEN = SLICES["round_penalties"].start
O_SEAT_PRESENT = SLICES["seat_present"].start
O_TURN = SLICES["turn"].start
O_ROUND = SLICES["round"].start
O_NUM_PLAYERS = SLICES["num_players"].start
O_DRAFTED_BY = SLICES["drafted_by"].start
"""The first index of each piece of :data:`PIECES` (``O_HAND`` is ``SLICES["hand"].start``, and so on)."""
