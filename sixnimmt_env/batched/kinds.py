"""Kind codes of the heuristic agents that have a compiled version (a leaf module: no numba, cheap to import).

The kernels of :mod:`sixnimmt_env.batched.agents` identify an agent by a small integer; :data:`KINDS` maps the
agent specs of :mod:`sixnimmt_env.agents` to those codes.
"""

from __future__ import annotations

EXTERNAL, RANDOM, LOWEST, HIGHEST, GREEDY = -1, 0, 1, 2, 3
"""Kind codes; ``EXTERNAL`` (-1) marks a seat whose action comes from elsewhere (a learner, a policy)."""
KINDS: dict[str, int] = {"random": RANDOM, "lowest": LOWEST, "highest": HIGHEST, "greedy": GREEDY}
"""Agent spec -> kind code of the ``kinds`` arrays."""
