"""A backend that remembers its last applied step, for rendering (:class:`RecordedBackend`).

The ParallelEnv wraps its backend in one only when it has a render mode: its narrators
(:func:`sixnimmt_env.render.step_events`) need the position a step was applied to and the joint action, and a
backend keeps only the position after it. Without a render mode nothing is recorded and the step costs nothing
more.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sixnimmt_env.backends import Backend
from sixnimmt_env.rules.engine import State

if TYPE_CHECKING:
    from sixnimmt_env.backends.compiled import LazyState


class RecordedBackend:
    """``inner`` (a :class:`~sixnimmt_env.backends.Backend`) with ``last_step``: every call goes to ``inner``.

    Attributes:
        inner: the backend that plays.
        last_step: ``(position, actions)`` of the last step applied since the last :meth:`new_game` or
            :meth:`load`: the position it was applied to (:meth:`~sixnimmt_env.backends.Backend.snapshot`) and
            the joint action (one ``int`` per seat); ``None`` before one. A refused step (an illegal seat) records
            nothing.
    """

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.last_step: tuple[State | LazyState, list[int]] | None = None

    @property
    def observations(self) -> np.ndarray:
        """``inner``'s observations."""
        return self.inner.observations

    @property
    def masks(self) -> np.ndarray:
        """``inner``'s masks."""
        return self.inner.masks

    @property
    def penalties(self) -> Sequence[int]:
        """``inner``'s penalties of the last step."""
        return self.inner.penalties

    def new_game(self, seed: int | None) -> None:
        """:meth:`~sixnimmt_env.backends.Backend.new_game`; forgets the last step."""
        self.last_step = None
        self.inner.new_game(seed)

    def load(self, state: State, seed: int | None) -> None:
        """:meth:`~sixnimmt_env.backends.Backend.load`; forgets the last step."""
        self.last_step = None
        self.inner.load(state, seed)

    def step(self, actions: list[int]) -> int:
        """:meth:`~sixnimmt_env.backends.Backend.step`, recording the position and the actions of an applied step."""
        before = self.inner.snapshot()
        code = self.inner.step(actions)
        if code < 0 and before is not None:
            self.last_step = (before, [int(a) for a in actions])
        return code

    def observe(self) -> None:
        """:meth:`~sixnimmt_env.backends.Backend.observe`."""
        self.inner.observe()

    def snapshot(self) -> State | LazyState | None:
        """:meth:`~sixnimmt_env.backends.Backend.snapshot`."""
        return self.inner.snapshot()

    def state(self) -> State | None:
        """:meth:`~sixnimmt_env.backends.Backend.state`."""
        return self.inner.state()
