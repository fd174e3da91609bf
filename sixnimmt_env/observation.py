"""The observation vector: one table of named pieces (`RULES.md` R4, E4).

Every observation is a flat ``float32`` vector of :data:`OBS_SIZE` values built
from the pieces of :data:`PIECES`, in that order. Its size does not depend on
the number of players (room for 10 seats), so one policy can serve every table
size. Seat-relative pieces put the observing seat first, then the next seats
in turn order (relative seat ``k`` is absolute seat ``(seat + k) % n``); slots
of seats beyond ``num_players`` are 0.

=================  ====  ==========================================================
piece              size  meaning (scale)
=================  ====  ==========================================================
hand               104   1 where the card ``i + 1`` is in the own hand
rows               20    row ``r`` slot ``j`` at ``5 r + j``: card value / 104, 0 = empty
row_lengths        4     cards in each row / 5
row_ends           4     last card of each row / 104 (0 during the draft)
row_bullheads      4     bullheads in each row / 10
seen               104   1 where the card was revealed this round (rows, penalty piles,
                         the cards of a pending turn)
revealed           10    seat-relative: the card revealed this turn (pending low-card
                         choice) or in the last completed turn of the round / 104
phase              4     one-hot: select, choose_row, draft, done
must_act           1     1 if this agent has a real decision now
chooser            10    seat-relative one-hot of the seat choosing a row / drafting
display            104   1 where the card is on the open draft display (logic variant)
totals             10    seat-relative game totals / 66
round_penalties    10    seat-relative bullheads taken this round / 66
seat_present       10    seat-relative: 1 for seats in the game
turn               1     turns completed this round / 10
round              1     rounds completed / 10
num_players        1     players / 10
=================  ====  ==========================================================

:func:`encode` is the readable reference encoder; every other encoder (the
environments' fast paths, the batched engine) must agree with it value for
value.
"""

from __future__ import annotations

import numpy as np

from sixnimmt_env.engine import (
    BULLHEADS,
    CHOOSE_ROW,
    DRAFT,
    NUM_ACTIONS,
    NUM_CARDS,
    NUM_ROWS,
    PHASES,
    ROW_LIMIT,
    SELECT,
    State,
    legal_actions,
    seen_cards,
)

MAX_SEATS = 10
CARD_SCALE = float(NUM_CARDS)
BULLHEAD_ROW_SCALE = 10.0
SCORE_SCALE = 66.0

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
)
"""``(name, size)`` of each piece, in vector order."""


def _offsets() -> dict[str, slice]:
    out, start = {}, 0
    for name, size in PIECES:
        out[name] = slice(start, start + size)
        start += size
    return out


SLICES: dict[str, slice] = _offsets()
"""Where each named piece sits in the vector."""
OBS_SIZE: int = sum(size for _, size in PIECES)
"""Length of the observation vector (402)."""


def pieces(obs: np.ndarray) -> dict[str, np.ndarray]:
    """Named views into one observation vector (or a batch, last axis), e.g. ``pieces(obs)["hand"]``."""
    return {name: obs[..., sl] for name, sl in SLICES.items()}


def encode(state: State, seat: int, out: np.ndarray | None = None) -> np.ndarray:
    """The observation of ``seat``: ``float32`` array of shape ``(OBS_SIZE,)``.

    Only public information and the seat's own hand go in (R4, E4).
    ``out``, if given, is zeroed and filled in place.
    """
    obs = np.zeros(OBS_SIZE, np.float32) if out is None else out
    if out is not None:
        obs[:] = 0.0
    v = pieces(obs)
    n = state.config.num_players
    for c in state.hands[seat]:
        v["hand"][c - 1] = 1.0
    for r, row in enumerate(state.rows):
        for j, c in enumerate(row):
            v["rows"][r * ROW_LIMIT + j] = c / CARD_SCALE
        v["row_lengths"][r] = len(row) / ROW_LIMIT
        v["row_ends"][r] = row[-1] / CARD_SCALE
        v["row_bullheads"][r] = sum(BULLHEADS[c] for c in row) / BULLHEAD_ROW_SCALE
    for c in seen_cards(state):
        v["seen"][c - 1] = 1.0
    for k in range(n):
        s = (seat + k) % n
        v["revealed"][k] = state.revealed[s] / CARD_SCALE
        v["totals"][k] = state.totals[s] / SCORE_SCALE
        v["round_penalties"][k] = state.round_penalties[s] / SCORE_SCALE
        v["seat_present"][k] = 1.0
    v["phase"][PHASES.index(state.phase)] = 1.0
    must_act = state.phase == SELECT or (state.phase in (CHOOSE_ROW, DRAFT) and state.chooser == seat)
    v["must_act"][0] = float(must_act)
    if state.chooser >= 0:
        v["chooser"][(state.chooser - seat) % n] = 1.0
    for c in state.display:
        v["display"][c - 1] = 1.0
    v["turn"][0] = state.turn / 10.0
    v["round"][0] = state.round / 10.0
    v["num_players"][0] = n / 10.0
    return obs


def action_mask(state: State, seat: int) -> np.ndarray:
    """``int8`` array of shape ``(109,)``: 1 exactly at the legal actions of ``seat``."""
    mask = np.zeros(NUM_ACTIONS, np.int8)
    mask[list(legal_actions(state, seat))] = 1
    return mask
