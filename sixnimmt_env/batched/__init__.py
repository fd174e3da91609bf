"""The compiled fast paths: the rules kernel and everything that plays through it.

- :mod:`sixnimmt_env.batched.kernel`: the rules in compiled code, over named state arrays (the one twin of
  :mod:`sixnimmt_env.engine`).
- :mod:`sixnimmt_env.batched.core`: :class:`BatchedGames`, B games in lockstep.
- :mod:`sixnimmt_env.batched.single`: one game per compiled call (the ParallelEnv's compiled backend).
- :mod:`sixnimmt_env.batched.agents`, :mod:`sixnimmt_env.batched.mc`: the heuristic agents and ``mc:N``.
- :mod:`sixnimmt_env.batched.fast_arena`: the arena's heuristic games, a chunk per compiled call.
- :mod:`sixnimmt_env.batched.learner`: one learner seat per game for the vectorised training env.

``BatchedGames`` and ``reference_deals`` are loaded on first access, so that importing a light submodule
(:mod:`.fast_arena`, :mod:`.kinds`) does not load numba.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BatchedGames", "reference_deals"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from sixnimmt_env.batched import core

        return getattr(core, name)
    raise AttributeError(f"module 'sixnimmt_env.batched' has no attribute {name!r}")
