"""Kind codes of the heuristic agents that have a compiled version (a leaf module: no numba, cheap to import).

The kernels of :mod:`sixnimmt_env.compiled.heuristics` identify an agent by a small integer; :data:`KINDS` maps the
agent specs of :mod:`sixnimmt_env.agents` to those codes.
"""

from __future__ import annotations

EXTERNAL, RANDOM, LOWEST, HIGHEST, GREEDY = -1, 0, 1, 2, 3
"""Kind codes; ``EXTERNAL`` (-1) marks a seat whose action comes from elsewhere (a learner, a policy)."""
KINDS: dict[str, int] = {"random": RANDOM, "lowest": LOWEST, "highest": HIGHEST, "greedy": GREEDY}
"""Agent spec -> kind code of the ``kinds`` arrays."""
EXACT_AGENT_CLASSES: frozenset[str] = frozenset(
    f"sixnimmt_env.agents.{name}" for name in ("RandomAgent", "LowestAgent", "HighestAgent", "GreedyAgent")
)
"""Qualified names of the reference agent classes whose objects play exactly as a kind of :data:`KINDS` (named, not
imported, so that this leaf does not import :mod:`sixnimmt_env.agents`; subclasses have other names and do not
count; ``tests/test_import_graph.py`` checks the names resolve)."""
