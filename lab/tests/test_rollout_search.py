"""lab/benchmarks/rollout_search.py: the search over the champion's rollouts scores what the round gives, and its
distillation mode writes a weights file that plays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from benchmark_scripts import load_benchmark

from sixnimmt_env.champion import WEIGHTS, read_weights
from sixnimmt_env.compiled.core import BatchedGames
from sixnimmt_env.rules.engine import NOOP, ROW_ACTION
from sixnimmt_env.rules.kernel import CHOOSE_ROW, SELECT


@pytest.fixture(scope="module")
def rs():  # the benchmark script as a module
    return load_benchmark("rollout_search")


def _after_first_turn(rs, batch: int, seed: int) -> tuple[BatchedGames, object]:
    actor = read_weights(WEIGHTS)[0]
    games = BatchedGames(rs.CONFIG, batch, seed=seed)
    games.step(rs.policy_actions(actor, games.observe(), games.legal_mask()))
    return games, actor


def test_perfect_information_scores_are_the_rounds_outcome(rs) -> None:
    games, actor = _after_first_turn(rs, 8, seed=3)
    before = [a.copy() for a in games.arrays]
    index, seats = np.arange(8), np.arange(8) % 4
    mask = games.legal_mask()[index, seats] != 0
    hands = games.hand.copy()
    scores = rs.search_scores(games, index, seats, actor, 4, np.random.default_rng(0), hands=hands)
    assert scores.shape == (8, 109)
    assert np.array_equal(np.isfinite(scores), mask)  # a score at each legal action, nan elsewhere
    for a, b in zip(before, games.arrays, strict=True):
        assert np.array_equal(a, b)  # the searched games are unchanged
    chosen = rs.policy_actions(actor, games.observe(), games.legal_mask())[index, seats]
    start = games.round_pen.astype(np.float64)
    while not games.done.all():  # the real rounds, every seat playing the policy
        games.step(rs.policy_actions(actor, games.observe(), games.legal_mask()))
    taken = games.round_pen - start
    own = taken[index, seats]
    outcome = own - (taken.sum(axis=1) - own) / 3
    assert np.array_equal(scores[index, chosen], outcome)
    assert (np.nanmin(scores, axis=1) <= outcome).all()


def test_dealt_worlds_depend_on_the_generator_only(rs) -> None:
    games, actor = _after_first_turn(rs, 4, seed=5)
    index, seats = np.arange(4), np.zeros(4, np.int64)
    a = rs.search_scores(games, index, seats, actor, 3, np.random.default_rng(1))
    b = rs.search_scores(games, index, seats, actor, 3, np.random.default_rng(1))
    c = rs.search_scores(games, index, seats, actor, 3, np.random.default_rng(2))
    assert np.array_equal(a, b, equal_nan=True)
    assert not np.array_equal(a, c, equal_nan=True)
    mask = games.legal_mask()[index, seats] != 0
    assert np.array_equal(np.isfinite(a), mask)
    select = games.phase == SELECT  # card selection: the nine cards left in the hand (else a row choice is pending)
    assert select.any() and (np.isfinite(a[select]).sum(axis=1) == 9).all()


def test_a_row_choice_is_searched_over_the_rows(rs) -> None:
    actor = read_weights(WEIGHTS)[0]
    games = BatchedGames(rs.CONFIG, 64, seed=11)
    while True:  # play until some game waits for a low card's row (R9)
        waiting = np.flatnonzero(games.phase == CHOOSE_ROW)
        if len(waiting):
            break
        games.step(rs.policy_actions(actor, games.observe(), games.legal_mask()))
    b = int(waiting[0])
    chooser = int(games.chooser[b])
    scores = rs.search_scores(games, [b], [chooser], actor, 2, np.random.default_rng(0))
    assert np.flatnonzero(np.isfinite(scores[0])).tolist() == [ROW_ACTION + r for r in range(4)]


def test_choose_keeps_to_the_legal_actions(rs) -> None:
    scores = np.full((2, 109), np.nan)
    scores[0, [3, 7]] = [2.0, -1.0]
    scores[1, [ROW_ACTION, ROW_ACTION + 2]] = [0.0, 1.0]
    logits = np.zeros((2, 109))
    logits[0, 3], logits[1, ROW_ACTION + 2], logits[:, NOOP] = 1.0, 3.0, 100.0
    assert rs.choose(scores, logits, 0).tolist() == [7, ROW_ACTION]  # the lowest score
    assert rs.choose(scores, logits, 6.0).tolist() == [3, ROW_ACTION + 2]  # 1 - 2/6 > 0 + 1/6; 3 - 1/6 > 0
    assert rs.choose(scores, logits, 0.5).tolist() == [7, ROW_ACTION + 2]  # 1 - 4 < 0 + 2; 3 - 2 > 0


def test_distill_mode_writes_weights_that_play(rs, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "distilled.npz"
    argv = ["--distill", "192", "--worlds", "1", "--epochs", "1", "--batch-size", "256", "--out", str(out)]
    assert rs.main(argv) == 0
    printed = capsys.readouterr().out
    assert "searched decisions in 192 games" in printed and f"wrote {out}" in printed
    actor, meta = read_weights(out)
    assert "rollout-search labels" in meta["source"]
    shipped = read_weights(WEIGHTS)[0]
    assert [w.shape for w, _, _ in actor.layers] == [w.shape for w, _, _ in shipped.layers]
    assert not np.array_equal(actor.layers[0][0], shipped.layers[0][0])  # fitted
    assert rs.main(argv) == 2  # an existing file is not replaced without --force
    assert "exists; give --force" in capsys.readouterr().err
    pen = rs.play_batch(actor, 8, 0, np.zeros(8, np.int64), 1, None)  # plays legal actions (checked steps)
    assert pen.shape == (8, 4) and (pen >= 0).all()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--worlds", "0"], "--worlds must be at least 1, got 0"),
        (["--games", "1"], "--games must be at least 2, got 1"),
        (["--temperature", "-1"], "--temperature must be >= 0"),
        (["--distill", "0"], "--distill must be at least 1 game, got 0"),
        (["--weights", "nope.npz"], "champion weights 'nope.npz' not found"),
        (["--distill", "192", "--temperature", "0"], "--temperature must be > 0 in distill mode"),
        (["--distill", "192", "--lr", "nan"], "--lr must be a positive number, got nan"),
        (["--distill", "192", "--out", "weights"], "--out must name a .npz file, got 'weights'"),
        (["--distill", "192"], "--batch-size 4096 may exceed the labels of 192 games"),
    ],
)
def test_bad_arguments_are_named(rs, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        rs.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
