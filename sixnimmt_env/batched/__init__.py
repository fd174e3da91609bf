"""The batched engine and its uses: B games in lockstep in compiled array code (issue 5).

- :mod:`sixnimmt_env.batched.core`: :class:`BatchedGames`, the engine (same rules as :mod:`sixnimmt_env.engine`).
- :mod:`sixnimmt_env.batched.agents`: the heuristic agents vectorised over a batch.
- :mod:`sixnimmt_env.batched.arena`: the fast arena path for heuristic agents.
"""

from __future__ import annotations

from sixnimmt_env.batched.core import BatchedGames, reference_deals

__all__ = ["BatchedGames", "reference_deals"]
