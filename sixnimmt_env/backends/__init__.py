"""The backend protocol of the ParallelEnv (:class:`sixnimmt_env.pettingzoo_env.SixNimmtParallelEnv`).

A backend holds one game and plays it: it deals or loads a position, applies joint actions and writes every seat's
observation and mask. The environment around it holds only agent names, spaces, dicts, rewards, rendering and
error reporting. Two backends implement :class:`Backend`:

- :class:`sixnimmt_env.backends.reference.ReferenceBackend`: the pure-Python engine :mod:`sixnimmt_env.rules.engine`
  (the specification) with the incremental encoder :class:`sixnimmt_env.observation.BatchEncoder`;
- :class:`sixnimmt_env.backends.compiled.CompiledBackend`: the numba kernels on one game
  (:class:`sixnimmt_env.compiled.single.SingleGame`), one compiled call per step.

:class:`sixnimmt_env.backends.recorded.RecordedBackend` wraps either to remember each applied step's position and
actions, which the ParallelEnv's narrators read when it renders.

This module loads no numba. The step codes :data:`OK`, :data:`PENALTIES` and :data:`OVER` that :meth:`Backend.step`
returns are defined beneath both backends, in :mod:`sixnimmt_env.rules.params` (the compiled kernel
:func:`sixnimmt_env.compiled.single.step_and_observe` returns them too), and re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from sixnimmt_env.rules.engine import State
from sixnimmt_env.rules.params import OK, OVER, PENALTIES

if TYPE_CHECKING:
    from sixnimmt_env.backends.compiled import LazyState

__all__ = ["OK", "OVER", "PENALTIES", "Backend"]


class Backend(Protocol):
    """One game of the ParallelEnv: dealing, loading, stepping, observing (`RULES.md` R3-R14, V1, V2).

    Attributes:
        observations: ``float32 (n + k, OBS_SIZE)``, row ``i < n`` is seat ``i``'s observation
            (:mod:`sixnimmt_env.observation`; ``k >= 0`` extra rows the backend may use) of the position after
            the last :meth:`new_game`, :meth:`load`, :meth:`step` or :meth:`observe`; a fresh array each time,
            never written again by the backend (callers may hand it out and change it).
        masks: ``int8 (n, 109)``, seat ``i``'s legal actions (:func:`sixnimmt_env.observation.action_mask`),
            fresh like :attr:`observations`.
        penalties: the bullheads each seat took in the last applied step (``n`` plain ``int``, seat order);
            read it only after a step whose code is :data:`PENALTIES` or :data:`OVER`.
    """

    @property
    def observations(self) -> np.ndarray: ...

    @property
    def masks(self) -> np.ndarray: ...

    @property
    def penalties(self) -> Sequence[int]: ...

    def new_game(self, seed: int | None) -> None:
        """Deal a new game (R3): from a fresh stream of ``seed``, else continuing the backend's own stream."""

    def load(self, state: State, seed: int | None) -> None:
        """Start from ``state`` (any phase, e.g. :func:`sixnimmt_env.rules.engine.from_position`); ``seed`` restarts
        the stream later rounds are dealt from (``None``: continue it)."""

    def step(self, actions: list[int]) -> int:
        """Apply one joint action (one Python or numpy integer per seat; the game must not be over).

        Returns:
            The first seat (``>= 0``, seat order) whose action is illegal (an integer out of range or not
            legal now): then nothing changed. Else :data:`OK`, :data:`PENALTIES` or :data:`OVER`.

        Raises:
            TypeError, ValueError, OverflowError: a value that is not a plain integer type (``bool``, float,
                array, ...) or does not fit (a backend may instead report such a value's seat as illegal);
                nothing changed. The caller converts and retries, or reports it.
        """

    def observe(self) -> None:
        """Write fresh :attr:`observations` and :attr:`masks` of the current, unchanged position."""

    def snapshot(self) -> State | LazyState | None:
        """The current position for infos and :meth:`~SixNimmtParallelEnv.last_step`: the engine
        :class:`State`, or an object whose ``get()`` builds it when first needed; ``None`` before the first
        game. Cheap; later steps never change it."""

    def state(self) -> State | None:
        """The engine :class:`State` of the current position (``None`` before the first game)."""
