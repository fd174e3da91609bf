"""The compiled backend of the ParallelEnv: the numba kernels on one game (:class:`~.compiled.single.SingleGame`).

Implements :class:`sixnimmt_env.backends.Backend` with one compiled call per step
(:func:`sixnimmt_env.compiled.single.step_and_observe`): it checks the actions against the masks (nothing changes
if one is illegal), plays the step (`RULES.md` R5-R14, V2) and writes fresh observation and mask arrays with a
snapshot of the game below the observations, from which :class:`LazyState` rebuilds the engine
:class:`~sixnimmt_env.rules.engine.State` only when read. Deals come from the batched engine's splitmix64 generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sixnimmt_env.compiled.single import (
    SingleGame,
    new_game_and_observe,
    observe,
    state_from_snapshot,
    step_and_observe,
)
from sixnimmt_env.rules.engine import GameConfig, State

_INT_TYPES = frozenset({int, np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16, np.uint8})
_empty = np.empty


class LazyState(list):
    """The engine :class:`State` of one step of the compiled backend, rebuilt on first use from the snapshot
    stored below that step's observations (:func:`sixnimmt_env.compiled.single.state_from_snapshot`).

    Built as ``LazyState((config, observations))``: a ``list`` subclass, so that making one per step costs
    no Python-level ``__init__``; :meth:`get` appends the state once computed.
    """

    __slots__ = ()

    def get(self) -> State:
        """The engine :class:`State` (built on the first call, then kept)."""
        if len(self) == 2:
            self.append(state_from_snapshot(self[0], self[1]))
        return self[2]


class CompiledBackend:
    """One game on the numba kernels (:class:`~sixnimmt_env.backends.Backend`).

    Args:
        config: the rules in force.

    ``observations`` has extra rows below the ``n`` seats' rows: the snapshot, a copy of the game's buffer
    (:class:`~sixnimmt_env.compiled.single.SingleGame`).
    """

    _UNPICKLED = ("_action_row", "_action_cells", "_penalty_row")
    """Attributes rebuilt after unpickling: the views into the game's buffer."""

    def __init__(self, config: GameConfig) -> None:
        self.config = config
        self._game = SingleGame(config)
        self._link()
        self._lazy: LazyState | None = None
        self.observations = np.zeros((0, 0), np.float32)
        self.masks = np.zeros((0, 0), np.int8)

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the views into the game's buffer (the game pickles its buffer)."""
        return {k: v for k, v in self.__dict__.items() if k not in self._UNPICKLED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled backend; it continues exactly as the original (same deals, same results)."""
        self.__dict__.update(state)
        self._link()

    def _link(self) -> None:
        self._action_row = self._game.actions[0]  # the game's action buffer, filled in place
        self._action_cells = memoryview(self._action_row)  # the same cells: one int set in about 40 ns
        self._penalty_row = self._game.penalties[0]

    @property
    def penalties(self) -> list[int]:
        """The bullheads each seat took in the last applied step (plain ``int``, seat order)."""
        return self._penalty_row.tolist()

    def new_game(self, seed: int | None) -> None:
        """Deal a new game (R3) in one compiled call, from a fresh stream of ``seed`` if given."""
        game = self._game
        if seed is not None:
            game.seed(seed)
        obs = self.observations = _empty(game.obs_shape, np.float32)
        masks = self.masks = _empty(game.mask_shape, np.int8)
        new_game_and_observe(game.buffer, game.deals, obs, masks)
        self._lazy = LazyState((self.config, obs))

    def load(self, state: State, seed: int | None) -> None:
        """Start from ``state`` (:meth:`SingleGame.load`); ``seed`` restarts the deal stream if given."""
        game = self._game
        if seed is not None:
            game.seed(seed)
        self.observations, self.masks = game.load(state)
        self._lazy = LazyState((self.config, self.observations))

    def step(self, actions: list[int]) -> int:
        """Check, apply and observe the joint action in one compiled call (see
        :meth:`sixnimmt_env.backends.Backend.step`; a value of another type than a Python or numpy integer is a
        ``TypeError``, one that does not fit ``int64`` an ``OverflowError``)."""
        if not _INT_TYPES.issuperset(map(type, actions)):
            for a in actions:  # other numpy integer types are valid too; bool and the rest are not
                if isinstance(a, bool) or not isinstance(a, int | np.integer):
                    raise TypeError(f"action {a!r} is not an integer")
        cells = self._action_cells
        if len(actions) != len(cells):
            raise ValueError(f"expected {len(cells)} actions (one per seat), got {len(actions)}")
        seat = 0
        try:
            for a in actions:  # the memoryview's cells one by one: half the time of a numpy slice assignment
                cells[seat] = a
                seat += 1
        except ValueError:  # (the game reads the actions only in step_and_observe: a half-filled row is harmless)
            raise OverflowError(f"action {actions[seat]!r} does not fit int64") from None
        game = self._game
        obs = _empty(game.obs_shape, np.float32)  # fresh arrays every step: what was returned never changes
        masks = _empty(game.mask_shape, np.int8)
        code = step_and_observe(game.buffer, game.deals, obs, masks)
        if code >= 0:  # an illegal action of seat `code`; nothing changed
            return code
        self.observations, self.masks = obs, masks
        self._lazy = None  # made by snapshot() when asked for (most steps never are)
        return code

    def observe(self) -> None:
        """Fresh observations and masks of the current position (the snapshot unchanged)."""
        game = self._game
        self.observations = _empty(game.obs_shape, np.float32)
        self.masks = _empty(game.mask_shape, np.int8)
        observe(game.buffer, self.observations, self.masks)

    def snapshot(self) -> LazyState | None:
        """The current position as a :class:`LazyState` (the engine state is built only when read; one object
        per position), ``None`` before the first game."""
        lazy = self._lazy
        if lazy is None and self.observations.size:
            lazy = self._lazy = LazyState((self.config, self.observations))
        return lazy

    def state(self) -> State | None:
        """The engine :class:`State` of the current position (rebuilt from the snapshot, about 40 µs, once)."""
        lazy = self.snapshot()
        return None if lazy is None else lazy.get()
