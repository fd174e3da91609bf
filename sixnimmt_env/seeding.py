"""The arena's seeding tags (a leaf module: no imports), shared by :mod:`sixnimmt_env.arena` and its fast path
:mod:`sixnimmt_env.compiled.fast_arena`.

Each random stream of an arena game is seeded from ``(tag, seed, index)``: the reference path with
``numpy.random.default_rng([tag, seed, index])``, the fast path with the kernel's splitmix64 streams
(:func:`sixnimmt_env.compiled.fast_arena.streams`). The tag keeps the streams of one ``(seed, index)`` apart.
"""

from __future__ import annotations

DEAL_TAG = 0x6DEA1
"""First entropy word of every deal generator (index: the deal)."""
AGENT_TAG = 0x6A6E7
"""First entropy word of every per-game agent generator (index: the game)."""
TABLE_TAG = 0x67AB1
"""First entropy word of every league table draw (index: the game)."""
