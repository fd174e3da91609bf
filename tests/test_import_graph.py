"""The import graph of ``sixnimmt_env`` and ``training`` (``benchmarks/import_graph.py``): no cycle, no upward edge."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from sixnimmt_env import agents
from sixnimmt_env.batched.fast_arena import supports
from sixnimmt_env.batched.kinds import EXACT_AGENT_CLASSES, KINDS

_SPEC = importlib.util.spec_from_file_location(
    "import_graph", Path(__file__).resolve().parent.parent / "benchmarks" / "import_graph.py"
)
import_graph = sys.modules["import_graph"] = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
_SPEC.loader.exec_module(import_graph)  # type: ignore[union-attr]


def test_every_module_has_a_layer() -> None:
    modules, edges, _ = import_graph.build()
    assert len(modules) >= 50
    assert {import_graph.LAYERS[import_graph.layer_of(m)][0] for m in modules} == {n for n, _ in import_graph.LAYERS}
    assert any(e.source == "sixnimmt_env.arena.play" and e.target == "sixnimmt_env.seeding" for e in edges)


def test_no_cycle_and_no_upward_edge() -> None:
    modules, edges, _ = import_graph.build()
    assert import_graph.cycles(list(modules), edges) == []
    upward = {
        (e.source, e.target)
        for e in edges
        if e.kind != "typing" and import_graph.layer_of(e.target) > import_graph.layer_of(e.source)
    }
    assert upward == set()
    lines, violations = import_graph.report()
    assert violations == 0
    assert lines[-1].endswith("at module level: 0")


def test_training_config_is_a_leaf_of_training() -> None:
    _, edges, _ = import_graph.build()
    assert [e.target for e in edges if e.source == "training.config" and e.target.startswith("training")] == []


def test_cycles_finds_a_cycle() -> None:
    edges = [import_graph.Edge("a", "b", 1, "top"), import_graph.Edge("b", "a", 1, "lazy")]
    assert import_graph.cycles(["a", "b", "c"], edges) == [["a", "b", "a"]]
    assert import_graph.cycles(["a", "b"], [edges[0], import_graph.Edge("b", "a", 1, "typing")]) == []


def test_exact_agent_classes_name_the_heuristic_agents() -> None:
    classes = {getattr(importlib.import_module(n.rsplit(".", 1)[0]), n.rsplit(".", 1)[1]) for n in EXACT_AGENT_CLASSES}
    assert classes == {agents.RandomAgent, agents.LowestAgent, agents.HighestAgent, agents.GreedyAgent}
    assert {c().spec for c in classes} == set(KINDS)

    class Sub(agents.GreedyAgent):
        pass

    assert supports([agents.GreedyAgent(), "lowest", agents.RandomAgent()])
    assert not supports([Sub(), "lowest"])
    assert not supports([agents.MonteCarloAgent(4)])
