"""RLlib checkpoints as agents: the ``rllib:PATH`` and ``rllib-sample:PATH`` specs.

Importing this module registers both prefixes with :func:`sixnimmt_env.agents.register_agent`
(the entry points ``sixnimmt.agents`` of ``pyproject.toml`` import it on first use), so the
arena, ``training.evaluate``, the Gymnasium env's opponents and self-play pools accept RLlib
checkpoints:

=========================  =================================================================
spec                       agent
=========================  =================================================================
``rllib:PATH``             the :class:`~training.rllib.module.CardRLModule` at ``PATH``, greedy
                           over the masked logits
``rllib-sample:PATH``      the same, sampling from the masked policy with the ``rng`` it is given
=========================  =================================================================

``PATH`` is an RLlib algorithm checkpoint (a folder with ``learner_group/``, e.g. a run's
``checkpoints/checkpoint_<steps>_steps``) or an RLModule checkpoint folder (e.g. a run's
``final_model`` or ``best_model``). The module is loaded with ``RLModule.from_checkpoint`` and its
actor runs in this process (in numpy for the card policy): Ray is imported, never started.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from sixnimmt_env.agents import register_agent
from sixnimmt_env.observation import OBS_SIZE
from sixnimmt_env.rules.engine import NUM_ACTIONS
from training.ppo_agents import PolicyAgent

__all__ = ["RLlibAgent", "load_module", "load_rllib_agent", "module_dir"]

MODULE_ID = "default_policy"
"""The RLModule id of a single-policy RLlib run."""


def module_dir(path: str | Path) -> Path:
    """The RLModule checkpoint folder of ``path`` (an algorithm checkpoint, a learner's ``rl_module`` folder or
    the module folder itself).

    Raises:
        ValueError: ``path`` is missing or holds no RLModule checkpoint.
    """
    p = Path(path)
    if not p.exists():
        raise ValueError(f"rllib checkpoint {str(path)!r} not found")
    # the deepest first: an algorithm checkpoint's top folder also holds a class_and_ctor_args.pkl (the algorithm's)
    for candidate in (
        p / "learner_group" / "learner" / "rl_module" / MODULE_ID,
        p / "rl_module" / MODULE_ID,
        p / MODULE_ID,
        p,
    ):
        if (candidate / "module_state.pt").is_file() or (candidate / "class_and_ctor_args.pkl").is_file():
            return candidate
    raise ValueError(
        f"rllib checkpoint {str(path)!r} holds no RLModule (expected a module folder with module_state.pt, "
        "or an algorithm checkpoint with learner_group/learner/rl_module/default_policy)"
    )


_CACHE: dict[tuple[str, float], Any] = {}
"""Per-process cache of loaded modules, keyed by (resolved module folder, modification time)."""


def load_module(path: str | Path) -> Any:
    """Load the :class:`~training.rllib.module.CardRLModule` of a checkpoint (cached per process), without Ray.

    Raises:
        ValueError: no module at ``path``, a damaged one, or one of another observation or action size.
    """
    folder = module_dir(path)
    key = (str(folder.resolve()), folder.stat().st_mtime)
    if key in _CACHE:
        return _CACHE[key]
    from ray.rllib.core.rl_module.rl_module import RLModule

    from training.rllib.module import CardRLModule

    try:
        module = RLModule.from_checkpoint(str(folder.resolve()))
    except Exception as e:  # RLlib raises many kinds for a damaged folder
        raise ValueError(f"rllib checkpoint {str(path)!r} could not be loaded as an RLModule: {e}") from None
    if not isinstance(module, CardRLModule):
        raise ValueError(
            f"rllib checkpoint {str(path)!r} holds a {type(module).__name__}, not training.rllib.module.CardRLModule"
        )
    n = getattr(module.action_space, "n", None)
    if n != NUM_ACTIONS:
        raise ValueError(f"rllib checkpoint {str(path)!r} has {n} actions, this environment {NUM_ACTIONS}")
    module.eval()
    _CACHE[key] = module
    return module


class RLlibAgent(PolicyAgent):
    """An :class:`~sixnimmt_env.agents.Agent` backed by a trained :class:`~training.rllib.module.CardRLModule`.

    The same decisions as :class:`training.ppo_agents.PolicyAgent` (masked argmax, or a Gumbel-max sample
    from the masked softmax with ``sample=True``); the card policy's actor is copied to numpy
    (:class:`training.policy.NumpyCardActor`), the MLP runs through torch.

    Args:
        module: a loaded :class:`~training.rllib.module.CardRLModule`.
        sample: sample instead of taking the argmax.
        name: the spec shown by the arena.
    """

    def __init__(self, module: Any, sample: bool = False, name: str = "rllib") -> None:
        from training.policy import NumpyCardActor

        self.policy = module
        self.obs_norm = None
        self.sample = sample
        self.spec = name
        self.layers = None
        self.card_features = False
        self.card_actor = NumpyCardActor(module) if module.card else None

    def __repr__(self) -> str:
        return f"RLlibAgent({self.spec!r})"

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Unmasked logits ``float32 (batch, 109)`` (or ``(109,)``) for observations ``(batch, 506)``
        (or ``(506,)``)."""
        x = np.asarray(obs, np.float32)
        if self.card_actor is not None:
            return self.card_actor.logits(x).reshape(*x.shape[:-1], -1)
        with torch.no_grad():
            out = self.policy.logits(torch.as_tensor(x.reshape(-1, OBS_SIZE)))
        return out.numpy().reshape(*x.shape[:-1], -1)


def load_rllib_agent(spec: str) -> RLlibAgent:
    """Build the agent of an ``rllib:PATH`` or ``rllib-sample:PATH`` spec (the registered factory).

    Raises:
        ValueError: a spec without a path, or any error of :func:`load_module`.
    """
    prefix, _, path = spec.partition(":")
    if prefix not in ("rllib", "rllib-sample") or not path:
        raise ValueError(
            f"agent spec {spec!r}: expected rllib:PATH or rllib-sample:PATH, e.g. 'rllib:runs/x/<stamp>/final_model'"
        )
    return RLlibAgent(load_module(path), sample=prefix == "rllib-sample", name=spec)


register_agent("rllib", load_rllib_agent, "rllib:PATH")
register_agent("rllib-sample", load_rllib_agent, "rllib-sample:PATH")
