"""``sixnimmt_v0``: the PettingZoo environment under PettingZoo's versioned-module convention.

>>> from sixnimmt_env import sixnimmt_v0
>>> par = sixnimmt_v0.parallel_env(num_players=4)     # ParallelEnv
>>> aec = sixnimmt_v0.env(num_players=4)              # AEC env (order enforced)
>>> raw = sixnimmt_v0.raw_env(num_players=4)          # AEC env without PettingZoo's order-enforcing wrapper

The same objects as :func:`sixnimmt_env.parallel_env` and :func:`sixnimmt_env.env`;
:mod:`sixnimmt_env.pettingzoo_env` documents spaces, rewards and keywords. The
suffix changes only when a change makes old results incomparable (spaces, rewards).
"""

from __future__ import annotations

from sixnimmt_env.pettingzoo_env import SixNimmtParallelEnv, env, parallel_env, raw_env

__all__ = ["SixNimmtParallelEnv", "env", "parallel_env", "raw_env"]
