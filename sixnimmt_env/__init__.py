"""sixnimmt: *6 nimmt!* as a reinforcement-learning environment.

- :mod:`sixnimmt_env.rules`: the rules (`RULES.md`): the pure reference engine :mod:`sixnimmt_env.rules.engine`
  (no RL imports; also reachable as ``sixnimmt_env.engine``) and the compiled kernel beside it.
- :mod:`sixnimmt_env.observation`: the named observation layout and encoder.
- :func:`parallel_env` / :func:`env`: the PettingZoo parallel and AEC environments
  (:mod:`sixnimmt_env.pettingzoo_env`; PettingZoo's versioned module is :mod:`sixnimmt_env.sixnimmt_v0`).
- ``gymnasium.make("sixnimmt/SixNimmt-v0", ...)``: one learning seat against agents
  (:mod:`sixnimmt_env.gym_env`), registered once this package and Gymnasium are both imported;
  ``gymnasium.make("sixnimmt_env:sixnimmt/SixNimmt-v0", ...)`` imports this package first, in any process
  (:mod:`sixnimmt_env.registration`).

The environment modules are imported on first use, so importing the engine
imports neither PettingZoo nor Gymnasium: the id is registered right after
Gymnasium's own import, or at once if Gymnasium is imported already.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sixnimmt_env.rules.engine import GameConfig, State

__all__ = ["GameConfig", "State", "env", "parallel_env"]


def __getattr__(name: str) -> Any:
    """``GameConfig`` and ``State`` of :mod:`sixnimmt_env.rules.engine`, and ``engine``, that module (``from
    sixnimmt_env import engine`` as before it moved into :mod:`sixnimmt_env.rules`), imported on first access:
    importing this package (as ``python -m sixnimmt_env.arena`` does first) imports no numpy, so a command can set
    numpy's environment (:mod:`sixnimmt_env.arena.__main__`) before it loads."""
    if name in ("GameConfig", "State", "engine"):
        from sixnimmt_env.rules import engine

        return engine if name == "engine" else getattr(engine, name)
    raise AttributeError(f"module 'sixnimmt_env' has no attribute {name!r}")


def parallel_env(**config: Any) -> Any:
    """The PettingZoo ``ParallelEnv`` (see :class:`sixnimmt_env.pettingzoo_env.SixNimmtParallelEnv`).

    No submodule of this package is named like a public function, so importing one never replaces it."""
    from sixnimmt_env.pettingzoo_env import parallel_env as make

    return make(**config)


def env(**config: Any) -> Any:
    """The PettingZoo AEC environment (:func:`sixnimmt_env.pettingzoo_env.env`): each action is checked at its
    agent's own turn."""
    from sixnimmt_env.pettingzoo_env import env as make

    return make(**config)


from sixnimmt_env.registration import install as _register_gymnasium  # noqa: E402  (imports no numpy)

_register_gymnasium()
