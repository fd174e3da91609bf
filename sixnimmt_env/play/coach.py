"""The play table's coach: what the ``mc:N`` search thinks of every card in hand and every row (issue 14).

The search is the one of :class:`sixnimmt_env.agents.MonteCarloAgent` (its docstring is the definition): deal the
cards the player has not seen to the opponents in ``samples`` sampled worlds, play each candidate (a card of the
hand, R5, or a row for a low card, R9) against greedy opponents this turn and greedy play by everyone to the end of
the round, and score it by the player's bullheads minus the opponents' mean. The agent keeps only the best
candidate; the coach returns every candidate's expected score, computed by the compiled kernels
:func:`sixnimmt_env.compiled.mc.select_scores` and :func:`sixnimmt_env.compiled.mc.row_scores` (about 30 ms for
1,000 worlds and 10 cards on one core, once numba has compiled them; :func:`warm_up` does that ahead).

The coach decides on the player's own view only (hand, rows, cards seen this round, `RULES.md` R4): it never
reads another hand or the unused stock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from sixnimmt_env.agents import sample_worlds
from sixnimmt_env.rules.engine import CHOOSE_ROW, NUM_ROWS, SELECT

__all__ = ["CoachAdvice", "advise", "sample_worlds", "warm_up"]  # sample_worlds: :mod:`sixnimmt_env.agents`'s


class CoachAdvice(NamedTuple):
    """The coach's answer for one decision.

    Attributes:
        kind: ``"card"`` (card selection, R5) or ``"row"`` (the row a low card takes, R9).
        options: the candidates: cards 1..104 of the hand (ascending), or rows 0..3.
        expected: per option, the expected bullheads of the player minus the mean of the opponents' from this
            turn to the end of the round (``float``; lower is better, negative means better than the table).
        bullheads: per option, the expected bullheads the player takes from this turn to the end of the round
            (``float``, the row itself included for a row choice; the same rollouts as ``expected``).
        best: the option the ``mc:N`` agent would play: the lowest ``expected``, ties to the lower card or row.
        take_now: for rows, the bullheads the row holds now (taken for certain, R9); for cards, ``None``.
        samples: worlds searched.
    """

    kind: str
    options: tuple[int, ...]
    expected: tuple[float, ...]
    bullheads: tuple[float, ...]
    best: int
    take_now: tuple[int, ...] | None
    samples: int


def advise(view: Mapping[str, Any], samples: int, rng: np.random.Generator) -> CoachAdvice | None:
    """The coach's advice for the seat of ``view`` (a :class:`~sixnimmt_env.rules.engine.PlayerView`).

    Args:
        view: the seat's view; advice exists in phase ``select`` (every card of the hand) and in ``choose_row``
            when this seat chooses (every row).
        samples: worlds to search (>= 1).
        rng: draws the worlds (not the game's generator: asking the coach changes nothing in the game).

    Returns:
        A :class:`CoachAdvice`, or ``None`` when the seat has no card or row decision (draft, done, another
        seat's row choice).

    Raises:
        ValueError: if ``samples`` is not a positive integer.
    """
    if isinstance(samples, bool) or not isinstance(samples, int | np.integer) or samples < 1:
        raise ValueError(f"coach samples must be a positive integer, got {samples!r}")
    from sixnimmt_env.compiled import mc  # numba: imported on first use

    phase = view["phase"]
    if phase not in (SELECT, CHOOSE_ROW) or not view["must_act"]:
        return None
    rows = view["rows"]
    ends = [r[-1] for r in rows]
    lens = [len(r) for r in rows]
    costs = list(view["row_bullheads"])
    hand = view["hand"]
    n = view["num_players"]
    worlds = sample_worlds(view, hand, samples, rng)
    scale = len(worlds) * (n - 1)  # the kernels sum n * own - sum(all) = (n - 1) * (own - mean opponent)
    own = np.zeros(len(hand) if phase == SELECT else NUM_ROWS, np.int64)
    if phase == SELECT:
        scores = mc.select_scores(hand, ends, lens, costs, worlds, own)
        take_now = None
        options = tuple(hand)
    else:
        seat = view["seat"]
        revealed = view["revealed"]
        others = [c for s, c in enumerate(revealed) if s != seat]
        scores = mc.row_scores(revealed[seat], others, hand, ends, lens, costs, worlds, own)
        take_now = tuple(costs)
        options = tuple(range(NUM_ROWS))
    best = options[int(np.argmin(scores))]  # the first lowest: ties to the lower card or row
    expected = tuple(round(float(s) / scale, 3) for s in scores)
    bullheads = tuple(round(float(b) / len(worlds), 3) for b in own)
    kind = "card" if phase == SELECT else "row"
    return CoachAdvice(kind, options, expected, bullheads, best, take_now, len(worlds))


def warm_up() -> None:
    """Compile (or load from numba's cache) the search kernels, so that the first advice is fast."""
    from sixnimmt_env.compiled import mc

    worlds = np.array([[[3, 4]]], np.int64)
    mc.select_scores([1, 2], [10, 20, 30, 40], [1, 1, 1, 1], [3, 3, 3, 3], worlds)
    mc.row_scores(1, [2], [5], [10, 20, 30, 40], [1, 1, 1, 1], [3, 3, 3, 3], np.array([[[6]]], np.int64))
