"""The reward of one step, the one definition every environment uses (`RULES.md` R8, R9).

:func:`seat_reward` is the definition: one seat's reward from its own bullheads and the table's. :func:`rewards`
applies it to every seat of a step (:class:`sixnimmt_env.pettingzoo_env.SixNimmtParallelEnv` calls it at every
step; :class:`sixnimmt_env.gym_env.SingleSeatEnv` sums the ParallelEnv's rewards of its learner), and the compiled
learner kernel (:mod:`sixnimmt_env.compiled.learner`, behind ``training.vec_env``) compiles :func:`seat_reward`
itself with numba, for both modes; ``tests/test_rewards.py`` checks the two against each other.
:func:`check_reward_mode` is the environments' check of a mode.
"""

from __future__ import annotations

from collections.abc import Sequence

REWARD_MODES = ("penalty", "relative")
"""The reward modes of :func:`rewards`."""


def check_reward_mode(mode: object) -> None:
    """Check an environment's ``reward`` option.

    Raises:
        ValueError: ``mode`` is not one of :data:`REWARD_MODES`, naming the value and the modes allowed.
    """
    if mode not in REWARD_MODES:
        raise ValueError(f"reward must be one of {', '.join(map(repr, REWARD_MODES))}, got {mode!r}")


def seat_reward(own: int, total: int, num_players: int, relative: bool) -> float:
    """One seat's reward, in bullheads, for bullheads taken over one step or several (the modes are linear).

    Args:
        own: the bullheads this seat took into its penalty pile (R8, R9).
        total: the bullheads every seat of the table took, this seat's included.
        num_players: seats at the table (>= 2).
        relative: the ``"relative"`` mode (else ``"penalty"``, see :func:`rewards`).

    Returns:
        ``-own`` (``"penalty"``), or ``(total - own) / (num_players - 1) - own`` (``"relative"``: the mean of the
        others' bullheads minus one's own), a ``float``. Plain arithmetic, so that numba compiles it unchanged.
    """
    if relative:
        return (total - own) / (num_players - 1) - own
    return 0.0 - own


def rewards(penalties: Sequence[int], mode: str) -> list[float]:
    """Each seat's reward for one step, in bullheads (``float``, seat order).

    Args:
        penalties: the bullheads each seat took into its penalty pile in the step (R8, R9), ``n >= 2`` integers.
        mode: ``"penalty"``: minus one's own bullheads (an episode's return is minus its penalty);
            ``"relative"``: the mean of the others' bullheads minus one's own (the rewards of a step sum to 0).

    Raises:
        ValueError: an unknown ``mode``.
    """
    relative = mode == "relative"
    if relative:
        total, n = sum(penalties), len(penalties)
    elif mode == "penalty":
        total = n = 0  # the "penalty" mode reads only the seat's own bullheads
    else:
        raise ValueError(f"reward mode must be one of {', '.join(map(repr, REWARD_MODES))}, got {mode!r}")
    untouched = seat_reward(0, total, n, relative)  # every seat that took nothing (most seats of a step)
    return [seat_reward(p, total, n, relative) if p else untouched for p in penalties]
