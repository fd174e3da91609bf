"""PettingZoo's own test suite on the environments with default keyword arguments (issue 9's table, PettingZoo row).

The stock checkers sample actions without masks; with the default ``illegal_action="terminate"`` an illegal
sample ends the episode with -171 for its agent (PettingZoo classic's convention), so every checker runs.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from pettingzoo.test import (
    api_test,
    parallel_api_test,
    parallel_seed_test,
    performance_benchmark,
    render_test,
    seed_test,
)
from pettingzoo.utils.conversions import aec_to_parallel, parallel_to_aec

from sixnimmt_env import env, parallel_env, sixnimmt_v0


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_parallel_api_test(backend: str) -> None:
    parallel_api_test(parallel_env(backend=backend), num_cycles=200)


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_api_test(backend: str) -> None:
    api_test(env(backend=backend), num_cycles=200)
    api_test(sixnimmt_v0.env(backend=backend), num_cycles=50)


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_seed_tests_with_default_arguments(backend: str) -> None:
    """Both used to crash: the default was illegal_action="raise" and the samples ignore the masks."""
    parallel_seed_test(lambda: parallel_env(backend=backend))
    seed_test(lambda: env(backend=backend))


def test_unmasked_sampling_ends_the_episode_with_the_documented_penalty() -> None:
    par = parallel_env(num_players=4)
    par.reset(seed=42)
    for i, agent in enumerate(par.agents):
        par.action_space(agent).seed(42 + i)
    actions = {agent: par.action_space(agent).sample() for agent in par.agents}
    _, rewards, terminations, _, _ = par.step(actions)
    assert all(terminations.values()) and par.agents == []
    # the first seat (in seat order) whose card is not in its hand pays; 10 of 109 actions are legal
    assert sorted(rewards.values()) == [-171.0, 0.0, 0.0, 0.0]


def test_render_test_every_mode() -> None:
    render_test(lambda render_mode=None: env(num_players=3, episode="round", render_mode=render_mode))


def test_performance_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    performance_benchmark(env(backend="compiled"))  # PettingZoo runs it for 5 s
    turns = float(re.search(r"([\d.]+) turns per second", capsys.readouterr().out).group(1))
    assert turns > 2_000, turns  # ~50,000 on an idle core; the AEC wrapper dominates


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_aec_to_parallel_round_trip(backend: str) -> None:
    par = parallel_env(num_players=3, backend=backend)
    assert aec_to_parallel(parallel_to_aec(par)) is par
    # and through the AEC env built directly: a parallel env that plays the same games
    twin = aec_to_parallel(env(num_players=3, backend=backend))
    obs_a, _ = par.reset(seed=5)
    obs_b, _ = twin.reset(seed=5)
    while par.agents:
        actions = {a: int(np.flatnonzero(obs_a[a]["action_mask"])[0]) for a in par.agents}
        obs_a, rew_a, term_a, _, _ = par.step(actions)
        obs_b, rew_b, term_b, _, _ = twin.step(actions)
        assert rew_a == rew_b and term_a == term_b
        for a in obs_a:
            np.testing.assert_array_equal(obs_a[a]["observation"], obs_b[a]["observation"])
    assert twin.agents == []
