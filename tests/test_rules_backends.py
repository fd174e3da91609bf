"""The rule table of `tests/test_rules.py` on every backend: the same positions, plays and expected values.

`tests/test_rules.py` runs its cases on the reference engine (:mod:`sixnimmt_env.rules.engine`). Here the same
case lists (``CASES``, ``R12_CASES``, ``R13_CASES``, imported, not copied) run on

- ``env-reference``: :class:`SixNimmtParallelEnv` with ``backend="reference"``, started from the position with
  ``reset(options={"hands", "rows", "totals"})``, penalties read back from its rewards;
- ``env-compiled``: the same with ``backend="compiled"`` (:class:`sixnimmt_env.compiled.single.SingleGame`, one
  compiled call per step);
- ``batched``: :class:`sixnimmt_env.compiled.BatchedGames`, the position loaded with ``set_state`` and played with
  its ``step`` (the penalties it returns).

Each backend must give the expected rows, penalties, piles, totals and hands of the case. A case a backend
cannot express is listed in :data:`NOT_EXPRESSIBLE` with the reason, and checked to be listed there on purpose.
Today every case runs on every backend, so the list is empty.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from test_rules import CASES, E12_ROWS, R12_CASES, R13_CASES, R13_ROWS, Step, actions_for

from sixnimmt_env.compiled import BatchedGames
from sixnimmt_env.pettingzoo_env import SixNimmtParallelEnv
from sixnimmt_env.rules.engine import BULLHEADS, DONE, SELECT, GameConfig, State, from_position, winners

BACKENDS = ("env-reference", "env-compiled", "batched")

NOT_EXPRESSIBLE: dict[tuple[str, str], str] = {}
"""``(case id, backend) -> why the backend cannot play it``; empty: every case of the table runs everywhere."""

Played = tuple[State, list[int], list[list[int]]]
"""The last state, the penalties summed over the plays, and each step's penalties."""


def _env_runner(backend: str) -> Callable[..., Played]:
    def run(
        config: GameConfig, hands: list[list[int]], rows: list[list[int]], plays: Sequence[Step], totals=None
    ) -> Played:
        env = SixNimmtParallelEnv(backend=backend, **{f: getattr(config, f) for f in GameConfig.field_names()})
        options = {"hands": hands, "rows": rows} if totals is None else {"hands": hands, "rows": rows, "totals": totals}
        env.reset(seed=0, options=options)
        per_step = []
        for play in plays:
            acts = actions_for(env.game_state, play)
            _, rewards, terminations, _, _ = env.step(dict(zip(env.possible_agents, acts, strict=True)))
            penalties = [-rewards[name] for name in env.possible_agents]  # reward="penalty": minus the bullheads
            assert all(p == int(p) for p in penalties)
            per_step.append([int(p) for p in penalties])
            assert all(terminations.values()) == (env.game_state.phase == DONE)
        summed = [sum(col) for col in zip(*per_step, strict=True)]
        return env.game_state, summed, per_step

    return run


def _run_batched(
    config: GameConfig, hands: list[list[int]], rows: list[list[int]], plays: Sequence[Step], totals=None
) -> Played:
    games = BatchedGames(config, 1, seed=0)
    games.set_state(0, from_position(config, hands, rows, totals))
    per_step = []
    for play in plays:
        acts = np.array([actions_for(games.get_state(0), play)], np.int64)
        per_step.append(games.step(acts)[0].tolist())
    summed = [sum(col) for col in zip(*per_step, strict=True)]
    return games.get_state(0), summed, per_step


RUNNERS: dict[str, Callable[..., Played]] = {
    "env-reference": _env_runner("reference"),
    "env-compiled": _env_runner("compiled"),
    "batched": _run_batched,
}


def _skip_if_listed(request: pytest.FixtureRequest, backend: str) -> None:
    case = request.node.callspec.id.split("-", 1)[1]  # the id is "<backend>-<case id>"
    reason = NOT_EXPRESSIBLE.get((case, backend))
    if reason is not None:
        pytest.skip(f"{backend} cannot express {case}: {reason}")


def test_not_expressible_names_real_cases_and_backends() -> None:
    ids = {p.id for p in (*CASES, *R12_CASES, *R13_CASES)}
    for case, backend in NOT_EXPRESSIBLE:
        assert case in ids and backend in BACKENDS


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("config", "hands", "rows", "plays", "exp_rows", "exp_penalties", "exp_piles"), CASES)
def test_rule_table(
    request: pytest.FixtureRequest,
    backend: str,
    config: GameConfig,
    hands: list[list[int]],
    rows: list[list[int]],
    plays: list[Step],
    exp_rows: list[list[int]],
    exp_penalties: list[int],
    exp_piles: list[list[int]],
) -> None:
    _skip_if_listed(request, backend)
    state, penalties, per_step = RUNNERS[backend](config, hands, rows, plays)
    assert [list(r) for r in state.rows] == exp_rows
    assert penalties == exp_penalties
    assert [sorted(p) for p in state.piles] == exp_piles
    assert [sum(BULLHEADS[c] for c in p) for p in state.piles] == exp_penalties  # R11
    assert list(state.round_penalties) == exp_penalties
    assert list(state.totals) == exp_penalties
    played = [set(p) for p in zip(*[p for p in plays if not isinstance(p, int)], strict=True)]
    assert [set(h) for h in state.hands] == [set(h) - p for h, p in zip(hands, played, strict=True)]  # R10, E1
    assert len(per_step) == len(plays) and all(len(p) == config.num_players for p in per_step)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("end_rule", "start", "done"), R12_CASES)
def test_R12_end_score_comparison(
    request: pytest.FixtureRequest, backend: str, end_rule: str, start: int, done: bool
) -> None:
    _skip_if_listed(request, backend)
    config = GameConfig(num_players=2, end_rule=end_rule)
    state, penalties, _ = RUNNERS[backend](config, [[15], [71]], E12_ROWS, [[15, 71]], totals=[start, 0])
    assert penalties == [11, 0]
    assert state.totals == (start + 11, 0)
    if done:
        assert state.phase == DONE
        assert state.round == 0
    else:  # a new round is dealt (R14, from the backend's own generator) and the totals carry over
        assert state.phase == SELECT
        assert state.round == 1
        assert [len(h) for h in state.hands] == [10, 10]
        assert state.round_penalties == (0, 0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("totals", "plays", "expected"), R13_CASES)
def test_R13_lowest_total_wins(
    request: pytest.FixtureRequest, backend: str, totals: list[int], plays: list[int], expected: tuple[int, ...]
) -> None:
    _skip_if_listed(request, backend)
    config = GameConfig(num_players=4, episode="round")
    state, _, _ = RUNNERS[backend](config, [[c] for c in plays], R13_ROWS, [plays], totals=totals)
    assert state.phase == DONE
    assert winners(state) == expected
