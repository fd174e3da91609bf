"""Shared test data for the reference and compiled backends of ``sixnimmt_env.pettingzoo_env``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

BAD_E2_ACTIONS: list[tuple[Any, str]] = [
    ({"player_0": 50, "player_1": 60}, r"missing actions for \['player_2'\]"),
    ({"player_0": 50, "player_1": 60, "player_2": 14, "player_9": 1}, r"unknown agents \['player_9'\]"),
    ({"player_0": 50, "player_1": 60.0, "player_2": 14}, r"player_1: action 60.0 of type float .* \[60, 90\]"),
    ({"player_0": True, "player_1": 60, "player_2": 14}, r"player_0: action True of type bool"),
    ({"player_0": 50, "player_1": 60, "player_2": 109}, r"player_2: action 109 is outside 0..108.* \[14, 91\]"),
    ({"player_0": -1, "player_1": 60, "player_2": 14}, r"player_0: action -1 is outside"),
    ({"player_0": 50, "player_1": 60, "player_2": 108}, r"player_2: action 108 is not legal .* \[14, 91\]"),
    ([50, 60, 14], r"actions must be a dict"),
]
"""Malformed or illegal joint actions at the start of RULES.md E2 (3 players) and the ``ValueError`` message each
must raise in either backend; each test module adds its own backend-specific cases."""


def cache_tianshou_kernels() -> None:
    """Let numba cache Tianshou's compiled helpers on disk (Tianshou compiles them without a cache in every
    process that builds an algorithm or a replay buffer: about 15 s of each test process's time otherwise)."""
    from numba.core.registry import CPUDispatcher
    from tianshou.algorithm import algorithm_base
    from tianshou.data.buffer import manager
    from tianshou.data.utils import segtree

    for module in (algorithm_base, manager, segtree):
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher):
                value.enable_caching()


def like_a_terminal() -> None:
    """``preexec_fn`` for a command that a test interrupts with SIGINT: start it with SIGINT's default action and
    unblocked, as a shell in a terminal does. A child inherits an ignored or blocked SIGINT from the test process
    (some library a test used may have left it so), and then Python never raises ``KeyboardInterrupt``."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Tiny networks: torch's thread pool only fights the other processes of a 2-core machine (20x slower). Test
    modules of the RL libraries use it (``pytestmark = pytest.mark.usefixtures("one_torch_thread")``)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
