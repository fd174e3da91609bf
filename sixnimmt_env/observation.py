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
drafted_by         104   seat-relative: (k + 1) / 10 where card ``i + 1`` was taken in this
                         round's draft by relative seat ``k`` (logic variant, public picks;
                         kept after the card is played), 0 = not drafted this round
=================  ====  ==========================================================

:func:`encode` is the readable reference encoder; the compiled encoder
(:func:`sixnimmt_env.rules.kernel.encode_all`) must agree with it value for
value. Both write the layout of :mod:`sixnimmt_env.rules.observation_layout`
(pieces, offsets, scales), defined once there and re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sixnimmt_env.rules import observation_layout as layout  # the offsets: layout.O_<PIECE>
from sixnimmt_env.rules.engine import (
    BULLHEADS,
    CHOOSE_ROW,
    DRAFT,
    NUM_ACTIONS,
    NUM_CARDS,
    NUM_ROWS,
    PHASES,
    ROW_LIMIT,
    SELECT,
    GameConfig,
    State,
    choices,
    legal_actions,
    seen_cards,
)
from sixnimmt_env.rules.observation_layout import (  # the layout: pieces, scales (re-exported)
    BULLHEAD_ROW_SCALE,
    CARD_SCALE,
    COUNT_SCALE,
    MAX_SEATS,
    ROW_LENGTH_SCALE,
    SCORE_SCALE,
)

PIECES: tuple[tuple[str, int], ...] = layout.PIECES
"""``(name, size)`` of each piece, in vector order (:data:`sixnimmt_env.rules.observation_layout.PIECES`)."""
SLICES: dict[str, slice] = layout.SLICES
"""Where each named piece sits in the vector (:data:`sixnimmt_env.rules.observation_layout.SLICES`)."""
OBS_SIZE: int = layout.OBS_SIZE
"""Length of the observation vector (506)."""

__all__ = [
    "BULLHEAD_ROW_SCALE",
    "CARD_SCALE",
    "COUNT_SCALE",
    "MAX_SEATS",
    "OBS_SIZE",
    "PIECES",
    "ROW_LENGTH_SCALE",
    "SCORE_SCALE",
    "SLICES",
    "BatchEncoder",
    "action_mask",
    "encode",
    "observation_from_view",
    "observation_high",
    "pieces",
    "start_total_limit",
]


def pieces(obs: np.ndarray) -> dict[str, np.ndarray]:
    """Named views into one observation vector (or a batch, last axis), e.g. ``pieces(obs)["hand"]``."""
    return {name: obs[..., sl] for name, sl in SLICES.items()}


# --------------------------------------------------------------------------- the pieces, written once
# Each writer puts pieces of one seat's vector into ``v``, a flat float32 buffer (a ``float32`` array or a
# memoryview of one) that ``v[i] = value`` rounds to float32: at offset ``at``, or at the start for the public
# pieces (BatchEncoder writes them into seat 0's vector and copies them). :func:`encode` writes a vector with them
# and :class:`BatchEncoder` every seat's; the value tables and ``_*_value`` are the layout's scales applied.

_CARD_VALUE = [c / CARD_SCALE for c in range(NUM_CARDS + 1)]
"""Card ``c`` (0 = none) as a value: ``c / CARD_SCALE``."""
_LENGTH_VALUE = [k / ROW_LENGTH_SCALE for k in range(ROW_LIMIT + 1)]
_PHASE_INDEX = {p: i for i, p in enumerate(PHASES)}


def _score_value(bullheads: int) -> float:
    """A total or a round's penalties as a value (``totals``, ``round_penalties``)."""
    return bullheads / SCORE_SCALE


def _count_value(k: int) -> float:
    """A count (turn, round, players, a relative seat + 1) as a value."""
    return k / COUNT_SCALE


_ROW_AT = [layout.O_ROWS + r * ROW_LIMIT for r in range(NUM_ROWS)]
_O_ROW_LEN, _O_ROW_END, _O_ROW_BULL = layout.O_ROW_LEN, layout.O_ROW_END, layout.O_ROW_BULL


def _write_row(v: Any, r: int, row: tuple[int, ...], start: int = 0, bull: int = 0, old: int = 0) -> int:
    """Row ``r``'s pieces (``rows``, ``row_lengths``, ``row_ends``, ``row_bullheads``) at the start of ``v``;
    returns its bullheads.

    Cards ``row[start:]`` are written (the first ``start``, of ``bull`` bullheads, are in place), the slots
    ``len(row)..old - 1`` of a row that held ``old`` cards are cleared."""
    base = _ROW_AT[r]
    for j in range(start, len(row)):
        c = row[j]
        v[base + j] = _CARD_VALUE[c]
        bull += BULLHEADS[c]
    for j in range(len(row), old):
        v[base + j] = 0.0
    if row:
        v[_O_ROW_LEN + r] = _LENGTH_VALUE[len(row)]
        v[_O_ROW_END + r] = _CARD_VALUE[row[-1]]
        v[_O_ROW_BULL + r] = bull / BULLHEAD_ROW_SCALE
    else:
        v[_O_ROW_LEN + r] = v[_O_ROW_END + r] = v[_O_ROW_BULL + r] = 0.0
    return bull


def _write_public(v: Any, state: State) -> list[int]:
    """The pieces every seat sees alike (rows, seen, display, seat_present, turn, round, num_players) at the start
    of ``v``; returns the rows' bullheads."""
    n = state.config.num_players
    bulls = [_write_row(v, r, row) for r, row in enumerate(state.rows)]
    for c in seen_cards(state):
        v[layout.O_SEEN + c - 1] = 1.0
    for c in state.display:
        v[layout.O_DISPLAY + c - 1] = 1.0
    for k in range(n):
        v[layout.O_SEAT_PRESENT + k] = 1.0
    v[layout.O_TURN] = _count_value(state.turn)
    v[layout.O_ROUND] = _count_value(state.round)
    v[layout.O_NUM_PLAYERS] = _count_value(n)
    return bulls


def _write_phase(v: Any, at: int, phase: str, chooser: int, seat: int, n: int) -> None:
    """``phase`` (one-hot), ``must_act`` and ``chooser`` (seat-relative one-hot) of ``seat``."""
    v[at + layout.O_PHASE + _PHASE_INDEX[phase]] = 1.0
    must_act = phase == SELECT or (phase in (CHOOSE_ROW, DRAFT) and chooser == seat)
    v[at + layout.O_MUST_ACT] = float(must_act)
    if chooser >= 0:
        v[at + layout.O_CHOOSER + (chooser - seat) % n] = 1.0


def _write_hand(v: Any, at: int, hand: tuple[int, ...]) -> None:
    """The ``hand`` piece (its ones)."""
    at += layout.O_HAND - 1
    for c in hand:
        v[at + c] = 1.0


def _write_drafted(v: Any, at: int, drafted: tuple[tuple[int, ...], ...], seat: int, n: int) -> None:
    """The ``drafted_by`` piece of ``seat``: each card the relative seat ``k`` drafted is ``(k + 1) / 10``."""
    at += layout.O_DRAFTED_BY - 1
    for s, cards in enumerate(drafted):
        value = _count_value((s - seat) % n + 1)
        for c in cards:
            v[at + c] = value


def encode(state: State, seat: int, out: np.ndarray | None = None) -> np.ndarray:
    """The observation of ``seat``: ``float32`` array of shape ``(OBS_SIZE,)``.

    Only public information and the seat's own hand go in (R4, E4).
    ``out``, if given, is zeroed and filled in place.
    """
    obs = np.zeros(OBS_SIZE, np.float32) if out is None else out
    if out is not None:
        obs[:] = 0.0
    v: Any = obs
    if obs.dtype == np.float32 and obs.ndim == 1 and obs.flags.c_contiguous:
        v = obs.data.cast("B").cast("f")  # the same float32 rounding, faster item writes
    n = state.config.num_players
    _write_public(v, state)
    _write_hand(v, 0, state.hands[seat])
    for k in range(n):
        s = (seat + k) % n
        v[layout.O_REVEALED + k] = _CARD_VALUE[state.revealed[s]]
        v[layout.O_TOTALS + k] = _score_value(state.totals[s])
        v[layout.O_ROUND_PEN + k] = _score_value(state.round_penalties[s])
    _write_phase(v, 0, state.phase, state.chooser, seat, n)
    _write_drafted(v, 0, state.drafted, seat, n)
    return obs


DECK_BULLHEADS = 171
"""Bullheads of the whole deck (R2): no player can take more in one round."""
DEAREST_ROW = 27
"""Bullheads of the dearest possible row, 11 22 33 44 55 (R2)."""


def start_total_limit(config: GameConfig) -> int:
    """The largest game total (bullheads) a seat can hold at the start of a round under ``config``.

    With an end score, a total that reached it ends the game (R12): ``end_score - 1`` (``end_rule="at_least"``)
    or ``end_score`` (``"more_than"``). Else with ``max_rounds``, ``DECK_BULLHEADS * (max_rounds - 1)``. Else
    (one-round episodes without an end score) 0: every episode starts a new game.
    """
    if config.end_score is not None:
        return config.end_score - (1 if config.end_rule == "at_least" else 0)
    if config.max_rounds is not None:
        return DECK_BULLHEADS * (config.max_rounds - 1)
    return 0


def observation_high(config: GameConfig) -> np.ndarray:
    """Upper bounds of the observation vector under ``config``: ``float32 (OBS_SIZE,)``, lower bounds are 0.

    1 for every piece except: ``row_bullheads`` 27 / 10 (the dearest row, R2); ``round_penalties``
    171 / 66 (the deck, R2); ``totals`` (:func:`start_total_limit` + 171) / 66; ``round``
    (the most rounds a game can last) / 10. A game lasts at most ``max_rounds`` rounds, and with an end
    score at most ``n * start_total_limit + 2``: every full round takes at least one bullhead (10 n >= 20
    cards go onto 4 rows that hold only 16 more before a sixth card takes one, R8), so the sum of the totals
    grows by one a round and passes ``n * start_total_limit`` within that many rounds (one more for a
    started position with short hands). One-round episodes stay at round 0 (bound: 1 / 10).
    """
    high = np.ones(OBS_SIZE, np.float32)
    high[SLICES["row_bullheads"]] = np.float32(DEAREST_ROW / BULLHEAD_ROW_SCALE)
    high[SLICES["round_penalties"]] = np.float32(DECK_BULLHEADS / SCORE_SCALE)
    high[SLICES["totals"]] = np.float32((start_total_limit(config) + DECK_BULLHEADS) / SCORE_SCALE)
    if config.episode == "round":
        rounds = 1  # always 0 rounds done; 1 keeps the bound above the lower bound, as Gymnasium's checker asks
    else:
        limits = []
        if config.max_rounds is not None:
            limits.append(config.max_rounds)
        if config.end_score is not None:
            limits.append(config.num_players * start_total_limit(config) + 2)
        rounds = min(limits)
    high[SLICES["round"]] = np.float32(rounds / COUNT_SCALE)
    return high


def action_mask(state: State, seat: int) -> np.ndarray:
    """``int8`` array of shape ``(109,)``: 1 exactly at the legal actions of ``seat``."""
    mask = np.zeros(NUM_ACTIONS, np.int8)
    mask[list(legal_actions(state, seat))] = 1
    return mask


# --------------------------------------------------------------------------- fast batched encoder

# The public pieces rows..seen are contiguous: they are written to seat 0's vector and copied to the others at once.
_PUBLIC_BLOCK = slice(layout.O_ROWS, SLICES["seen"].stop)
_SEEN_AT = layout.O_SEEN - 1  # card c is seen at _SEEN_AT + c
# phase, must_act and chooser are contiguous too.
_PHASE_BLOCK = slice(layout.O_PHASE, SLICES["chooser"].stop)
assert SLICES["row_lengths"].start == SLICES["rows"].stop and SLICES["seen"].start == SLICES["row_bullheads"].stop
assert SLICES["must_act"].start == SLICES["phase"].stop and SLICES["chooser"].start == SLICES["must_act"].stop


_OPTION_MASKS_KEPT = 64
"""The most masks :meth:`BatchEncoder.masks` keeps for options other than the hands (then it starts afresh): the
choose-row options repeat (one object per chooser), a draft display is a new object at every call."""


class BatchEncoder:
    """Observations and action masks of every seat at once, kept up to date step by step.

    A fast equivalent of calling :func:`encode` and :func:`action_mask` for each
    seat: :meth:`reset` builds the vectors of a state from scratch,
    :meth:`update` moves them to the state that one :func:`engine.step
    <sixnimmt_env.rules.engine.step>` produced from the previous one, writing only
    what changed (cards played, rows changed, scores, phase, turn); a new round
    or a draft pick is rebuilt from scratch. Values agree with :func:`encode`
    bit for bit (tested).

    Args:
        num_players: seats at the table, 2..10.

    The internal buffers are reused: :meth:`observations` and :meth:`masks`
    return fresh arrays that callers may keep.
    """

    def __init__(self, num_players: int) -> None:
        n = num_players
        self.num_players = n
        self._obs = np.zeros((n, OBS_SIZE), np.float32)
        self._flat = self._obs.data.cast("B").cast("f")
        self._hand_mask = np.zeros((n, NUM_ACTIONS), np.int8)
        self._mflat = self._hand_mask.data.cast("B").cast("b")
        self._bases = [i * OBS_SIZE for i in range(n)]
        self._mbases = [i * NUM_ACTIONS for i in range(n)]
        self._seats = range(n)
        self._hand_at = [b + layout.O_HAND - 1 for b in self._bases]  # card c of seat i is at _hand_at[i] + c
        self._mask_at = [b - 1 for b in self._mbases]
        self._turn_at = [b + layout.O_TURN for b in self._bases]
        # Seat-relative pieces: a doubled vector v + v viewed as an (n, n) matrix whose row i is v rotated by i,
        # copied into the observations at once. totals and round_penalties are adjacent: one (2, 2n) buffer.
        self._rev_buf = np.zeros(2 * n, np.float32)
        self._rev_flat = self._rev_buf.data.cast("B").cast("f")
        size = self._rev_buf.itemsize
        self._rev_rotated = np.lib.stride_tricks.as_strided(self._rev_buf, (n, n), (size, size))
        self._rev_target = self._obs[:, layout.O_REVEALED : layout.O_REVEALED + n]
        self._score_buf = np.zeros((2, 2 * n), np.float32)
        self._score_flat = self._score_buf.data.cast("B").cast("f")
        self._score_rotated = np.lib.stride_tricks.as_strided(self._score_buf, (n, 2, n), (size, 2 * n * size, size))
        self._score_target = self._obs[:, layout.O_TOTALS : layout.O_TOTALS + 2 * MAX_SEATS].reshape(n, 2, MAX_SEATS)[
            :, :, :n
        ]
        # Every seat's copy of seat 0's public pieces; phase, must_act and chooser, contiguous, are one precomputed
        # (n, 15) block per (phase, chooser). The blocks are written through views made here, as `view[...] = x`:
        # about 0.1 µs each where `np.copyto` or slicing at every step took 0.25-0.35 µs (measured).
        self._public_copies = self._obs[1:, _PUBLIC_BLOCK]
        self._public_seat0 = self._obs[0, _PUBLIC_BLOCK]
        self._phase_target = self._obs[:, _PHASE_BLOCK]
        self._phase_blocks: dict[tuple[str, int], np.ndarray] = {}
        for phase in PHASES:
            for chooser in range(-1, n):
                block = np.zeros((n, _PHASE_BLOCK.stop - _PHASE_BLOCK.start), np.float32)
                for i in range(n):
                    _write_phase(block[i], -layout.O_PHASE, phase, chooser, i, n)
                self._phase_blocks[phase, chooser] = block
        self._row_bull = [0] * NUM_ROWS
        self._option_masks: dict[int, tuple[Sequence[tuple[int, ...]], int, np.ndarray]] = {}  # masks()
        self._state: State | None = None

    # ------------------------------------------------------------------ copies

    def __getstate__(self) -> dict[str, Any]:
        """Pickle (and deep-copy) only the seat count and the current state: the buffers and their memoryviews
        are rebuilt by :meth:`__setstate__` (:meth:`reset` gives the same values bit for bit)."""
        return {"num_players": self.num_players, "state": self._state}

    def __setstate__(self, saved: dict[str, Any]) -> None:
        """Rebuild the encoder and its vectors from a pickled seat count and state."""
        self.__init__(saved["num_players"])  # type: ignore[misc]  # on purpose: the buffers anew (no subclass)
        if saved["state"] is not None:
            self.reset(saved["state"])

    # ------------------------------------------------------------------ output

    def observations(self) -> np.ndarray:
        """A fresh ``float32`` array ``(num_players, OBS_SIZE)``: row ``i`` is ``encode(state, i)``."""
        return self._obs.copy()

    def masks(self) -> np.ndarray:
        """A fresh ``int8`` array ``(num_players, 109)``: row ``i`` is ``action_mask(state, i)``, the actions the
        legality rule (:func:`engine.choices <sixnimmt_env.rules.engine.choices>`) allows seat ``i``.

        When the rule's options are the hands (``select``, R5), the hands' masks kept up to date step by step are
        copied; other options (the chooser's rows and the others' no-op, R9; a draft display, V2; nothing once
        done) are written once and kept with the options object they were written for (found by identity, which
        holding the object keeps valid: the rule hands out the same object for the same rows and no-ops), up to
        ``_OPTION_MASKS_KEPT`` (64) of them.

        Raises:
            ValueError: before :meth:`reset`.
        """
        state = self._state
        if state is None:
            raise ValueError("BatchEncoder has no state: call reset(state) first")
        options, shift = choices(state)
        if options is state.hands:
            return self._hand_mask.copy()
        kept = self._option_masks.get(id(options))
        if kept is None or kept[0] is not options or kept[1] != shift:
            mask = np.zeros((self.num_players, NUM_ACTIONS), np.int8)
            flat = mask.data.cast("B")
            for b, seat_options in zip(self._mbases, options, strict=True):
                for o in seat_options:
                    flat[b + o - shift] = 1  # seat i's option o is action o - shift
            if len(self._option_masks) >= _OPTION_MASKS_KEPT:
                self._option_masks.clear()
            kept = self._option_masks[id(options)] = (options, shift, mask)
        return kept[2].copy()

    # ------------------------------------------------------------------ building

    def _set_revealed(self, revealed: tuple[int, ...]) -> None:
        n, flat = self.num_players, self._rev_flat
        for s in range(n):
            flat[s] = flat[s + n] = _CARD_VALUE[revealed[s]]
        self._rev_target[...] = self._rev_rotated

    def _set_scores(self, totals: tuple[int, ...], round_penalties: tuple[int, ...], seats: range | list[int]) -> None:
        n, flat = self.num_players, self._score_flat
        for s in seats:
            flat[s] = flat[s + n] = _score_value(totals[s])
            flat[2 * n + s] = flat[3 * n + s] = _score_value(round_penalties[s])
        self._score_target[...] = self._score_rotated

    def reset(self, state: State) -> None:
        """Build every seat's observation and mask of ``state`` from scratch."""
        n = state.config.num_players
        if n != self.num_players:
            raise ValueError(f"this BatchEncoder serves {self.num_players} players, the state has {n}")
        obs, flat = self._obs, self._flat
        obs.fill(0.0)
        self._row_bull = _write_public(flat, state) + [0] * (NUM_ROWS - len(state.rows))
        obs[1:] = obs[0]  # every piece written so far is public
        self._phase_target[...] = self._phase_blocks[state.phase, state.chooser]
        self._set_revealed(state.revealed)
        self._set_scores(state.totals, state.round_penalties, range(n))
        self._hand_mask.fill(0)
        mflat = self._mflat
        for i, hand in enumerate(state.hands):
            _write_hand(flat, self._bases[i], hand)
            mb = self._mbases[i]
            for c in hand:
                mflat[mb + c - 1] = 1
        if any(state.drafted):  # draft picks change only in a draft step, which resets
            for i in self._seats:
                _write_drafted(flat, self._bases[i], state.drafted, i, n)
        self._state = state

    def update(self, state: State) -> None:
        """Move to ``state``, which :func:`engine.step <sixnimmt_env.rules.engine.step>` made from the previous state.

        Falls back to :meth:`reset` for a new round, a draft step or when there is no previous state.
        """
        old = self._state
        if old is None or state is old:
            self.reset(state)
            return
        if (
            state.round != old.round
            or state.phase == DRAFT
            or old.phase == DRAFT
            or state.turn < old.turn
            or state.config is not old.config
        ):
            self.reset(state)
            return
        flat, n = self._flat, self.num_players
        if old.phase == SELECT:  # every seat played the card it revealed (R5); each is now seen (R4)
            mflat, rev_flat, card_value = self._mflat, self._rev_flat, _CARD_VALUE
            for i, hand_at, mask_at, c in zip(self._seats, self._hand_at, self._mask_at, state.revealed, strict=True):
                flat[hand_at + c] = 0.0
                mflat[mask_at + c] = 0
                flat[_SEEN_AT + c] = 1.0
                rev_flat[i] = rev_flat[i + n] = card_value[c]
            self._rev_target[...] = self._rev_rotated
        old_rows = old.rows
        for r, row in enumerate(() if state.rows is old_rows else state.rows):
            prev = old_rows[r]
            if row is not prev and row != prev:
                k = len(prev)
                if len(row) > k and row[k - 1] == prev[-1]:
                    # Cards were appended: a card still in place proves the row was not taken (R8, R10).
                    self._row_bull[r] = _write_row(flat, r, row, k, self._row_bull[r])
                else:
                    self._row_bull[r] = _write_row(flat, r, row, 0, 0, k)
        self._public_copies[...] = self._public_seat0
        if state.round_penalties != old.round_penalties:
            old_pen = old.round_penalties
            self._set_scores(
                state.totals, state.round_penalties, [s for s, p in enumerate(state.round_penalties) if p != old_pen[s]]
            )
        if state.phase != old.phase or state.chooser != old.chooser:
            self._phase_target[...] = self._phase_blocks[state.phase, state.chooser]
        if state.turn != old.turn:
            value = _count_value(state.turn)
            for at in self._turn_at:  # seat by seat: a third of the time of a numpy column assignment
                flat[at] = value
        self._state = state


def observation_from_view(view: Mapping[str, Any]) -> np.ndarray:
    """The seat's observation vector (``float32 (OBS_SIZE,)``) rebuilt from its readable view.

    The view holds everything the observation shows (own hand, rows, penalty piles, revealed
    cards, scores, phase, chooser, display, draft picks, turn, round; R4), so a
    :class:`~sixnimmt_env.rules.engine.State` with only this seat's hand is enough for the reference
    encoder :func:`sixnimmt_env.observation.encode`: the result equals the environments'
    observation of that seat (tested in ``tests/test_training.py``). Used by the ``ppo:`` agents and ``champion``.
    """
    config = view["config"]
    seat = view["seat"]
    hands: list[tuple[int, ...]] = [()] * config.num_players
    hands[seat] = tuple(view["hand"])
    state = State(
        config=config,
        phase=view["phase"],
        hands=tuple(hands),
        rows=tuple(tuple(r) for r in view["rows"]),
        piles=tuple(tuple(p) for p in view["piles"]),
        round_penalties=tuple(view["round_penalties"]),
        totals=tuple(view["totals"]),
        stock=(),
        display=tuple(view["display"]),
        revealed=tuple(view["revealed"]),
        chooser=view["chooser"],
        turn=view["turn"],
        round=view["round"],
        drafted=tuple(tuple(p) for p in view["drafted"]),
    )
    return encode(state, seat)
