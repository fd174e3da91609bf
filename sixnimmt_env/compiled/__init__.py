"""The compiled tier: everything numba compiles that plays through the rules kernel (:mod:`sixnimmt_env.rules.kernel`,
the compiled twin of :mod:`sixnimmt_env.rules.engine`). No rule is written here.

- :mod:`sixnimmt_env.compiled.core`: :class:`BatchedGames`, B games in lockstep.
- :mod:`sixnimmt_env.compiled.single`: one game per compiled call (the ParallelEnv's compiled backend).
- :mod:`sixnimmt_env.compiled.heuristics`, :mod:`sixnimmt_env.compiled.mc`: the heuristic agents and ``mc:N``.
- :mod:`sixnimmt_env.compiled.fast_arena`: the arena's heuristic games, a chunk per compiled call.
- :mod:`sixnimmt_env.compiled.learner`: one learner seat per game for the vectorised training env.

``BatchedGames`` and ``reference_deals`` are loaded on first access, so that importing a light submodule
(:mod:`.fast_arena`, :mod:`.kinds`) does not load numba.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BatchedGames", "reference_deals"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from sixnimmt_env.compiled import core

        return getattr(core, name)
    raise AttributeError(f"module 'sixnimmt_env.compiled' has no attribute {name!r}")
