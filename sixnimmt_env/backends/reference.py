"""The reference backend of the ParallelEnv: the pure-Python engine (the specification) and its incremental encoder.

Implements :class:`sixnimmt_env.backends.Backend` with :func:`sixnimmt_env.rules.engine.step` (which checks every action
and changes nothing if one is illegal, `RULES.md` R5-R14, V2), deals from a ``numpy.random.Generator`` (R3) and
:class:`sixnimmt_env.observation.BatchEncoder` for the observations and masks.
"""

from __future__ import annotations

import numpy as np

from sixnimmt_env.backends import OK, OVER, PENALTIES
from sixnimmt_env.observation import BatchEncoder
from sixnimmt_env.rules import engine
from sixnimmt_env.rules.engine import DONE, GameConfig, IllegalActionError, State


class ReferenceBackend:
    """One game on :mod:`sixnimmt_env.rules.engine` (:class:`~sixnimmt_env.backends.Backend`).

    Args:
        config: the rules in force.

    Deals come from a ``numpy.random.Generator``: ``default_rng(seed)`` when a seed is given, else the one in
    use (created from fresh entropy on first need).
    """

    def __init__(self, config: GameConfig) -> None:
        self.config = config
        self._encoder = BatchEncoder(config.num_players)
        self._rng: np.random.Generator | None = None
        self._state: State | None = None
        self.observations = np.zeros((0, 0), np.float32)
        self.masks = np.zeros((0, 0), np.int8)
        self.penalties: tuple[int, ...] = ()

    def _seed(self, seed: int | None) -> np.random.Generator:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        elif self._rng is None:
            self._rng = np.random.default_rng()
        return self._rng

    def new_game(self, seed: int | None) -> None:
        """Deal a new game (R3) from the generator (restarted from ``seed`` if given)."""
        self._start(engine.new_game(self.config, self._seed(seed)))

    def load(self, state: State, seed: int | None) -> None:
        """Start from ``state``; later rounds are dealt from the generator (restarted from ``seed`` if given)."""
        self._seed(seed)
        self._start(state)

    def _start(self, state: State) -> None:
        self._state = state
        self._encoder.reset(state)
        self.observe()

    def step(self, actions: list[int]) -> int:
        """Apply the joint action with :func:`engine.step` (see :meth:`sixnimmt_env.backends.Backend.step`)."""
        try:
            new, penalties = engine.step(self._state, actions, self._rng)  # type: ignore[arg-type]
        except IllegalActionError as err:
            return err.seat
        self._state = new
        encoder = self._encoder
        encoder.update(new)
        self.observations = encoder.observations()
        self.masks = encoder.masks()
        self.penalties = penalties
        if new.phase == DONE:
            return OVER
        return PENALTIES if any(penalties) else OK

    def observe(self) -> None:
        """Fresh observations and masks of the current position (the encoder's buffers copied)."""
        self.observations = self._encoder.observations()
        self.masks = self._encoder.masks()

    def snapshot(self) -> State | None:
        """The current engine :class:`State` (immutable)."""
        return self._state

    def state(self) -> State | None:
        """The current engine :class:`State` (immutable)."""
        return self._state
