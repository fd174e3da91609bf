"""The contract of a learner's step, written once: what every environment does with an action it is handed, what
it pays for an illegal one and what it reports when an episode ends.

Every environment calls it: the PettingZoo ParallelEnv (every agent a learner,
:class:`sixnimmt_env.pettingzoo_env.SixNimmtParallelEnv`, and its AEC form), the Gymnasium env of one learner seat
(:class:`sixnimmt_env.gym_env.SingleSeatEnv`) and the batched SB3 vector env (``training.vec_env.SixNimmtVecEnv``).

**Actions** (`RULES.md`, "Actions"): an action is an integer ``0..108``. :func:`action_index` says what counts as an
integer (Python and numpy integers, anything with ``__index__``, a one-element integer array; never a ``bool``);
anything else is malformed input, a ``ValueError`` in every mode (:func:`integer_action`, :func:`joint_actions`).
An integer is *legal* when the seat's mask holds it (:func:`is_legal`, :func:`legal_in_masks`): a card of its hand
in ``select`` (R5), a row of the low card's owner in ``choose_row`` (R9), a display card of the drafter in ``draft``
(V2), the no-op 108 for a seat without a decision. An integer outside ``0..108`` is illegal like any other.

**Illegal actions** (:data:`ILLEGAL_ACTION_MODES`, checked by :func:`check_illegal_action`):

- ``"raise"``: :func:`illegal_action_error`, a ``ValueError`` naming who acted, the action, why (outside
  ``0..108``, or not legal in the phase) and the legal actions. The environment is unchanged and still usable:
  nothing was played, no random number drawn.
- ``"terminate"`` (PettingZoo classic's convention, so checkers that sample unmasked actions run): nothing is
  played, the episode ends (every agent terminated, none truncated), the offender's reward is
  :func:`illegal_reward` (``-ILLEGAL_ACTION_PENALTY``, the whole deck's 171 bullheads, R2, worse than any round
  can cost) and every other agent's 0 (:func:`illegal_rewards`); the offender is the first illegal seat in seat
  order (:func:`first_illegal`). Every mask then holds the no-op alone (:func:`end_masks`).

**Rewards** of a step that was played: each seat's is :func:`sixnimmt_env.rewards.rewards` of the bullheads the
seats took in it (R8, R9: minus one's own, or with ``reward="relative"`` the mean of the others' minus one's own).
That definition stays in :mod:`sixnimmt_env.rewards`, above this room, because numba compiles it into the batched
learner kernel. A learner that sits out opponent-only steps (a row choice of an opponent's low card, R9; an
opponent's draft pick, V2) is paid the sum of its rewards over its own step and those steps, up to its next
decision; both modes are linear, so that sum is the reward of the bullheads summed over the steps.

**The end of an episode** (R11, R12): after the last round of the game, or after one round with
``episode="round"``, or after an illegal action under ``"terminate"`` (:func:`ended`). Every agent is then
terminated; nothing is ever truncated (:data:`TRUNCATED`: no time limit of our own). Masks hold the no-op alone
(never all zero: a masked sampler always has a choice, and Gymnasium's next-step autoreset ignores the action it
draws). A one-seat learner's final info adds :func:`episode_summary` (``round_penalties``, ``totals``, ``rank``,
R13) unless the episode ended by an illegal action.

This module imports numpy and the engine's constants only.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from sixnimmt_env.rules.engine import NOOP, NUM_ACTIONS

__all__ = [
    "ILLEGAL_ACTION_MODES",
    "ILLEGAL_ACTION_PENALTY",
    "TRUNCATED",
    "action_index",
    "check_illegal_action",
    "end_masks",
    "ended",
    "episode_summary",
    "first_illegal",
    "illegal_action_error",
    "illegal_reward",
    "illegal_rewards",
    "integer_action",
    "is_legal",
    "joint_actions",
    "legal_in_masks",
    "rank",
]

ILLEGAL_ACTION_PENALTY = 171.0
"""Bullheads charged to an agent whose illegal action ends the episode under ``illegal_action="terminate"``: the
whole deck's bullheads (R2), more than any player can take in one round. The default of every environment (the
one-seat envs take another value as ``illegal_penalty``)."""

ILLEGAL_ACTION_MODES = ("terminate", "raise")
"""What an environment does with an illegal action (module docstring)."""

TRUNCATED = False
"""Every step's truncation flag, ``False``, since the environments have no time limit of their own (the game ends
by R12)."""


# --------------------------------------------------------------------------- options


def check_illegal_action(mode: object, penalty: object = ILLEGAL_ACTION_PENALTY) -> None:
    """Check an environment's ``illegal_action`` option and the bullheads it charges.

    Args:
        mode: one of :data:`ILLEGAL_ACTION_MODES`.
        penalty: the bullheads charged for an illegal action under ``"terminate"``, a number ``> 0``.

    Raises:
        ValueError: naming the option, the value given and what is allowed.
    """
    if mode not in ILLEGAL_ACTION_MODES:
        raise ValueError(f"illegal_action must be one of {', '.join(map(repr, ILLEGAL_ACTION_MODES))}, got {mode!r}")
    if isinstance(penalty, bool) or not isinstance(penalty, int | float | np.integer | np.floating) or not penalty > 0:
        raise ValueError(f"illegal_penalty must be a number > 0 bullheads, got {penalty!r}")


# --------------------------------------------------------------------------- the action handed in


def action_index(action: object) -> int:
    """``action`` as a plain ``int`` action index, if it is integer-like; the value is not range-checked here.

    Accepts Python and numpy integers and any object with ``__index__`` (a 0-d integer numpy array, a one-element
    integer tensor of torch or another library, without importing it), and one-element integer numpy arrays (what
    ``MaskablePPO.predict`` returns for one observation).

    Raises:
        TypeError: a ``bool``, a float, a string, a multi-element array or any other object that is not an integer.
    """
    if isinstance(action, bool | np.bool_):
        raise TypeError("a bool is not an action index")
    if isinstance(action, np.ndarray) and action.size == 1 and np.issubdtype(action.dtype, np.integer):
        return int(action.reshape(()))
    return operator.index(action)  # type: ignore[arg-type]


def integer_action(who: str, action: object, legal: Callable[[], Sequence[int]]) -> int:
    """``action`` as a plain ``int`` (:func:`action_index`), or a ``ValueError`` for malformed input.

    Args:
        who: who acted, for the message (an agent name, ``"env 3 (learner seat 1)"``).
        action: the value handed in.
        legal: called only to write the message: the legal actions now.

    Raises:
        ValueError: ``"{who}: action {action!r} of type {type} is not an integer; legal actions: [...]"``.
    """
    try:
        return action_index(action)
    except TypeError:
        raise ValueError(
            f"{who}: action {action!r} of type {type(action).__name__} is not an integer; "
            f"legal actions: {list(legal())}"
        ) from None


def joint_actions(names: Sequence[str], actions: object, legal: Callable[[int], Sequence[int]]) -> list[int]:
    """A joint action ``{agent: action}`` as one plain ``int`` per seat, in seat order (not range-checked).

    Args:
        names: the agents' names in seat order (every one must act, R5: seats without a decision give 108).
        actions: the joint action handed in.
        legal: ``legal(seat)``, the seat's legal actions, called only to write a message.

    Raises:
        ValueError: ``actions`` is not a mapping; an agent is missing or unknown; a value is not an integer
            (:func:`integer_action`, the first such seat in seat order). Each message names the agents or the value
            and what is allowed.
    """
    if not isinstance(actions, Mapping):
        raise ValueError(f"actions must be a dict {{agent: action}}, got {type(actions).__name__}")
    missing = [name for name in names if name not in actions]
    if missing:
        raise ValueError(f"missing actions for {missing}; every live agent must act: {list(names)}")
    extra = [k for k in actions if k not in names]
    if extra:
        raise ValueError(f"actions for unknown agents {extra}; live agents: {list(names)}")
    out: list[int] = []
    for seat, name in enumerate(names):
        a = actions[name]
        if type(a) is int or (isinstance(a, np.integer) and not isinstance(a, np.bool_)):
            out.append(int(a))
        else:
            out.append(integer_action(name, a, partial(legal, seat)))
    return out


# --------------------------------------------------------------------------- legality


def is_legal(action: int, mask: np.ndarray) -> bool:
    """Whether the integer ``action`` is legal for the seat whose mask is ``mask`` (``(109,)``, any dtype: nonzero
    at the legal actions): inside ``0..108`` and set in the mask."""
    return 0 <= action < NUM_ACTIONS and bool(mask[action])


def legal_in_masks(actions: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """:func:`is_legal` for a batch: ``bool (B,)``, whether ``actions[b]`` (``int64 (B,)``) is legal under
    ``masks[b]`` (``(B, 109)``, any dtype)."""
    legal = (actions >= 0) & (actions < NUM_ACTIONS)
    legal[legal] = masks[np.flatnonzero(legal), actions[legal]] != 0
    return legal


def first_illegal(actions: Sequence[int], legal: Callable[[int], Sequence[int]]) -> int | None:
    """The first seat, in seat order, whose integer action is illegal (outside ``0..108``, or not among
    ``legal(seat)``); ``None`` if every action is legal. The offender of a joint action."""
    for seat, a in enumerate(actions):
        if not 0 <= a < NUM_ACTIONS or a not in legal(seat):
            return seat
    return None


def illegal_action_error(who: str, action: int, legal: Sequence[int], phase: str | None = None) -> ValueError:
    """The error of an illegal integer action under ``illegal_action="raise"`` (returned, for the caller to raise).

    Args:
        who: who acted (an agent name, ``"env 3 (learner seat 1)"``).
        action: the integer given.
        legal: the legal actions now.
        phase: the game's phase (``"select"``, ``"choose_row"``, ``"draft"``), named in the message if given.

    Returns:
        ``ValueError("{who}: action {action} is outside 0..108; legal actions: [...]")``, or ``"... is not legal
        in phase 'select'; legal actions: [...]"``.
    """
    if not 0 <= action < NUM_ACTIONS:
        why = f"is outside 0..{NUM_ACTIONS - 1}"
    else:
        why = "is not legal" if phase is None else f"is not legal in phase {phase!r}"
    return ValueError(f"{who}: action {action} {why}; legal actions: {list(legal)}")


# --------------------------------------------------------------------------- rewards and the end


def illegal_reward(penalty: float = ILLEGAL_ACTION_PENALTY) -> float:
    """The offender's reward for an illegal action under ``"terminate"``: ``-penalty`` bullheads (a ``float``)."""
    return -float(penalty)


def illegal_rewards(num_players: int, offender: int, penalty: float = ILLEGAL_ACTION_PENALTY) -> list[float]:
    """Every seat's reward (seat order, ``float``) when ``offender``'s illegal action ends the episode:
    :func:`illegal_reward` for it, 0 for the others (nothing was played)."""
    out = [0.0] * num_players
    out[offender] = illegal_reward(penalty)
    return out


def ended(over: Any, illegal: Any) -> Any:
    """Whether an episode ended: the game (or round, ``episode="round"``) is over (R12), or an illegal action ended
    it. ``over | illegal``: plain ``bool`` s or ``bool (B,)`` arrays alike."""
    return over | illegal


def end_masks(masks: np.ndarray) -> np.ndarray:
    """Set the masks of an ended episode, in place, to the no-op 108 alone; ``masks``: ``(..., 109)``, any dtype.
    Returns ``masks``."""
    masks.fill(0)
    masks[..., NOOP] = 1
    return masks


def rank(totals: Sequence[int] | np.ndarray, seat: int) -> int:
    """``seat``'s place by its total (R13): 1 + the number of seats with a lower total, so tied seats share the
    better rank and every winner is 1."""
    own = totals[seat]
    return 1 + sum(1 for t in totals if t < own)


def episode_summary(
    totals: Sequence[int] | np.ndarray, round_penalties: Sequence[int] | np.ndarray, seat: int
) -> dict[str, Any]:
    """The end-of-episode keys of a one-seat learner's info (not after an illegal action).

    Args:
        totals: every seat's game total, seat order (bullheads).
        round_penalties: every seat's bullheads in the last round, seat order.
        seat: the learner's seat.

    Returns:
        ``{"round_penalties": [...], "totals": [...], "rank": int}`` with plain ``int`` lists (:func:`rank`).
    """
    totals = [int(t) for t in totals]
    return {
        "round_penalties": [int(p) for p in round_penalties],
        "totals": totals,
        "rank": rank(totals, seat),
    }
