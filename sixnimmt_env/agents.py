"""Baseline agents behind one small protocol: ``act(view, rng) -> action``.

Every agent decides on the readable per-seat view of the engine
(:func:`sixnimmt_env.rules.engine.view`, a read-only ``Mapping``; the environments put
the same view in ``infos``) and on the ``numpy.random.Generator`` it is given.
It never sees another seat's hand or the unused stock (`RULES.md` R4, E4). The
arena, the Gymnasium opponents and the play command all call agents the same
way.

Every agent handles every phase it can meet and returns one legal action
(encoding in :mod:`sixnimmt_env.rules.engine`: ``0..103`` card ``a + 1``, ``104..107``
row ``a - 104``, ``108`` no-op):

===========  ==========================  ======================  =======================================
spec         card selection (R5)         low-card row (R9)       logic-variant draft (V2)
===========  ==========================  ======================  =======================================
``random``   a uniformly random card     a uniformly random row  a uniformly random display card
``lowest``   its lowest card             the cheapest row        the lowest display card
``highest``  its highest card            the cheapest row        the highest display card
``greedy``   the lowest immediate cost   the cheapest row        balanced: the lowest display card
                                                                 while at most half of its hand is
                                                                 low (<= deck size / 2), else the
                                                                 highest
``mc:N``     Monte Carlo search over     Monte Carlo search      as ``greedy``
             N sampled worlds            over the 4 rows
===========  ==========================  ======================  =======================================

*Cheapest row*: the fewest bullheads, ties to the lowest row index (the rule of
R9b ``"cheapest"``). *Immediate cost* of a card (greedy): the bullheads it would
take now against the current rows, ignoring the other cards of the turn: a full
row's bullheads (R8), the cheapest row's for a low card (R9), else 0; ties go to
the lower card. The greedy draft rule builds a hand spread over both ends of
the deck. It was chosen with arena leagues in the logic variant (3,000 single
rounds each with 3, 4 and 5 players) among greedy players that differ only in
their draft rule: it had the lowest mean penalty with 3 and 4 players and the
third lowest with 5 (behind drafting the lowest cards), and beat drafting at
random and drafting the dearest card (most bullheads) at every table size.

Agents are named by spec strings so configs and command lines can list them:
:func:`make_agent` builds one, :func:`register_agent` adds a prefix from outside
(e.g. ``training`` registers ``ppo:PATH`` without this package importing
torch), :func:`known_agents` lists what is registered and :func:`known_specs` every spec,
plugins included; :func:`parse_lineup` reads a comma-separated line-up for every command line.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, Protocol, runtime_checkable

import numpy as np

from sixnimmt_env.rules.engine import (
    CHOOSE_ROW,
    DRAFT,
    NOOP,
    NUM_ROWS,
    ROW_ACTION,
    SELECT,
    cheapest_row_index,
    immediate_cost,
)

__all__ = [
    "Agent",
    "GreedyAgent",
    "HighestAgent",
    "LowestAgent",
    "MonteCarloAgent",
    "RandomAgent",
    "balanced_draft",
    "check_spec",
    "greedy_card",
    "immediate_cost",
    "known_agents",
    "known_specs",
    "make_agent",
    "parse_lineup",
    "register_agent",
    "sample_worlds",
    "unknown_spec",
]


@runtime_checkable
class Agent(Protocol):
    """Anything that picks one action for one seat from that seat's view.

    ``act(view, rng)`` gets the read-only view of :func:`sixnimmt_env.rules.engine.view`
    (keys ``seat``, ``num_players``, ``config``, ``phase``, ``must_act``,
    ``hand``, ``rows``, ``row_bullheads``, ``totals``, ``round_penalties``,
    ``revealed``, ``chooser``, ``seen``, ``piles``, ``display``, ``turn``,
    ``round``, ``legal_actions``) and a ``numpy.random.Generator`` that is its
    only source of randomness. It returns one of ``view["legal_actions"]``
    as an ``int`` in 0..108: the no-op 108 when the seat has no decision.
    """

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        """One legal action index 0..108 for the seat of ``view``."""
        ...


# --------------------------------------------------------------------------- shared rules of thumb


def greedy_card(hand: Sequence[int], rows: Sequence[Sequence[int]], row_costs: Sequence[int]) -> int:
    """The card of ``hand`` with the lowest :func:`~sixnimmt_env.rules.engine.immediate_cost` against ``rows`` (ties to
    the lower card).

    Args:
        hand: the cards 1..104, sorted ascending, at least one.
        rows: the 4 rows, each a non-empty ascending list of cards.
        row_costs: the bullheads of each row (R2).

    Returns:
        The card value (not the action index): the first card that takes nothing, else the cheapest.
    """
    best, best_cost = hand[0], 1 << 30
    for card in hand:
        cost = immediate_cost(rows, row_costs, card)
        if cost == 0:  # takes nothing: no card does better, and it is the lowest such card
            return card
        if cost < best_cost:
            best, best_cost = card, cost
    return best


def balanced_draft(display: Sequence[int], hand: Sequence[int], deck_size: int) -> int:
    """The greedy draft pick (V2): the lowest display card while at most half of ``hand`` is low, else the highest.

    A card is low when it is at most ``deck_size / 2``. With an empty hand this
    takes the lowest card. Returns a card value of ``display`` (sorted ascending).
    """
    low = sum(1 for c in hand if 2 * c <= deck_size)
    return display[0] if 2 * low <= len(hand) else display[-1]


# --------------------------------------------------------------------------- heuristic agents


class RandomAgent:
    """Uniformly random: a random card, a random row (R9), a random display card (V2)."""

    spec = "random"

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        """A uniformly random legal action (108 without a decision).

        One ``rng.random()`` draw per decision picks index ``floor(u * k)`` of
        the ``k`` choices.
        """
        phase = view["phase"]
        if phase == SELECT:
            hand = view["hand"]
            return hand[int(rng.random() * len(hand))] - 1
        if (phase != CHOOSE_ROW and phase != DRAFT) or view["chooser"] != view["seat"]:
            return NOOP
        if phase == CHOOSE_ROW:
            return ROW_ACTION + int(rng.random() * NUM_ROWS)
        display = view["display"]
        return display[int(rng.random() * len(display))] - 1

    def __repr__(self) -> str:
        return "RandomAgent()"


class _RuleAgent:
    """Shared phase dispatch of the deterministic heuristics: the cheapest row for a low card (R9)."""

    spec = ""

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        phase = view["phase"]
        if phase == SELECT:
            return self.select(view) - 1
        if (phase != CHOOSE_ROW and phase != DRAFT) or view["chooser"] != view["seat"]:
            return NOOP
        if phase == CHOOSE_ROW:
            return ROW_ACTION + cheapest_row_index(view["row_bullheads"])
        return self.draft(view) - 1

    def select(self, view: Mapping[str, Any]) -> int:
        raise NotImplementedError

    def draft(self, view: Mapping[str, Any]) -> int:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class LowestAgent(_RuleAgent):
    """Plays its lowest card, takes the cheapest row, drafts the lowest display card."""

    spec = "lowest"

    def select(self, view: Mapping[str, Any]) -> int:
        return view["hand"][0]

    def draft(self, view: Mapping[str, Any]) -> int:
        return view["display"][0]


class HighestAgent(_RuleAgent):
    """Plays its highest card, takes the cheapest row, drafts the highest display card."""

    spec = "highest"

    def select(self, view: Mapping[str, Any]) -> int:
        return view["hand"][-1]

    def draft(self, view: Mapping[str, Any]) -> int:
        return view["display"][-1]


class GreedyAgent(_RuleAgent):
    """Plays the card of lowest immediate cost (see :func:`greedy_card`), takes the cheapest row,
    drafts with :func:`balanced_draft`."""

    spec = "greedy"

    def select(self, view: Mapping[str, Any]) -> int:
        return greedy_card(view["hand"], view["rows"], view["row_bullheads"])

    def draft(self, view: Mapping[str, Any]) -> int:
        return balanced_draft(view["display"], view["hand"], view["config"].deck_size)


# --------------------------------------------------------------------------- Monte Carlo search


class MonteCarloAgent:
    """Determinized Monte Carlo search over ``samples`` sampled worlds (spec ``mc:N``).

    Card selection (R5): sample ``samples`` worlds by dealing the cards it has
    not seen (the deck minus its hand, the rows and the penalty piles; in the
    standard variant this includes the unused stock, R3) at random to the
    opponents, as many as its own hand holds each. In every world, for every
    card of its hand, the opponents play their greedy card (:func:`greedy_card`)
    this turn, then all players play greedily to the end of the round (a low
    card takes the cheapest row). It plays the card with the lowest mean of
    own penalty minus mean opponent penalty over the worlds (from now to the
    end of the round; ties to the lower card). Every card is scored on the same
    worlds. Scores are summed as integers, ``(n - 1)`` times the mean, so ties
    are exact.

    The rollouts run in compiled code (:func:`sixnimmt_env.compiled.mc.select_scores`
    and :func:`~sixnimmt_env.compiled.mc.row_scores`, on the rules kernel); the
    tests check their scores against rollouts through :func:`sixnimmt_env.rules.engine.step`.

    Low-card row choice (R9): the same search over the 4 rows, with the turn's
    revealed cards known (R9a). Draft (V2): the greedy rule
    (:func:`balanced_draft`). With one legal choice it plays it without searching.

    Only the round is searched, also with ``episode="game"``.

    Args:
        samples: worlds per decision, at least 1.

    Raises:
        ValueError: if ``samples`` is not a positive integer.
    """

    def __init__(self, samples: int = 64) -> None:
        if isinstance(samples, bool) or not isinstance(samples, int | np.integer) or samples < 1:
            raise ValueError(f"mc samples must be a positive integer, got {samples!r}")
        self.samples = int(samples)
        self.spec = f"mc:{self.samples}"

    def __repr__(self) -> str:
        return f"MonteCarloAgent(samples={self.samples})"

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        """The searched action (108 without a decision)."""
        if not view["must_act"]:
            return NOOP
        phase = view["phase"]
        if phase == SELECT:
            return self._select(view, rng) - 1
        if phase == CHOOSE_ROW:
            return ROW_ACTION + self._choose_row(view, rng)
        if phase == DRAFT:
            return balanced_draft(view["display"], view["hand"], view["config"].deck_size) - 1
        return NOOP

    def _worlds(self, view: Mapping[str, Any], hand: Sequence[int], rng: np.random.Generator) -> np.ndarray:
        """``samples`` deals of the unseen cards (:func:`sample_worlds`)."""
        return sample_worlds(view, hand, self.samples, rng)

    def _table(
        self, view: Mapping[str, Any], hand: list[int], rng: np.random.Generator
    ) -> tuple[list[int], list[int], list[int], np.ndarray]:
        """Row ends, lengths and bullheads (the kernel's light rows) and the sampled worlds of one decision."""
        rows = view["rows"]
        return [r[-1] for r in rows], [len(r) for r in rows], list(view["row_bullheads"]), self._worlds(view, hand, rng)

    def _select(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        hand = view["hand"]
        if len(hand) == 1:
            return hand[0]
        ends0, lens0, costs0, worlds = self._table(view, hand, rng)
        from sixnimmt_env.compiled import mc  # numba: loaded on the first search, not with this module

        scores = mc.select_scores(hand, ends0, lens0, costs0, worlds)
        return hand[int(np.argmin(scores))]  # the first lowest: ties to the lower card

    def _choose_row(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        seat = view["seat"]
        hand = view["hand"]
        revealed = view["revealed"]
        own = revealed[seat]
        others = [c for s, c in enumerate(revealed) if s != seat]
        ends0, lens0, costs0, worlds = self._table(view, hand, rng)
        from sixnimmt_env.compiled import mc

        return int(np.argmin(mc.row_scores(own, others, hand, ends0, lens0, costs0, worlds)))  # ties to the lower row


def sample_worlds(view: Mapping[str, Any], hand: Sequence[int], samples: int, rng: np.random.Generator) -> np.ndarray:
    """Deal the cards the seat of ``view`` has not seen to its opponents, ``samples`` times (the ``mc:N`` search's
    worlds; the play table's coach searches the same).

    The unseen cards are the deck (1..deck size) minus ``hand`` and the cards seen this round
    (``view["seen"]``: rows, penalty piles, a pending turn's cards); in the standard variant they include the
    unused stock (R3), so each opponent gets a uniform share of them.

    Returns:
        ``int64 (samples, n - 1, k)``: per world, each opponent's ``k = len(hand)`` cards, ascending, in local
        seat order; one empty world (``(1, n - 1, 0)``) when the hand is empty.

    Raises:
        ValueError: if fewer unseen cards exist than the opponents hold (an inconsistent view).
    """
    n, k = view["num_players"], len(hand)
    if k == 0:
        return np.zeros((1, n - 1, 0), np.int64)
    known = set(hand)
    known.update(view["seen"])
    unseen = np.array([c for c in range(1, view["config"].deck_size + 1) if c not in known], dtype=np.int64)
    need = (n - 1) * k
    if len(unseen) < need:
        raise ValueError(f"only {len(unseen)} unseen cards for {n - 1} opponents holding {k} each")
    picks = np.argsort(rng.random((samples, len(unseen))), axis=1)[:, :need]
    return np.sort(unseen[picks].reshape(samples, n - 1, k), axis=2)


# --------------------------------------------------------------------------- registry


def _build_plain(cls: type[RandomAgent | _RuleAgent], spec: str) -> Agent:
    if spec != cls.spec:
        raise ValueError(f"agent spec {spec!r}: {cls.spec!r} takes no argument")
    return cls()


def _plain(cls: type[RandomAgent | _RuleAgent]) -> Callable[[str], Agent]:
    return partial(_build_plain, cls)  # picklable, for the arena's worker processes


def _monte_carlo(spec: str) -> Agent:
    _, _, arg = spec.partition(":")
    try:
        samples = int(arg)
    except ValueError:
        raise ValueError(f"agent spec {spec!r}: expected mc:N with N a positive integer, e.g. 'mc:64'") from None
    if samples < 1:
        raise ValueError(f"agent spec {spec!r}: N must be a positive integer, e.g. 'mc:64'")
    return MonteCarloAgent(samples)


_REGISTRY: dict[str, tuple[Callable[[str], Agent], str]] = {
    "random": (_plain(RandomAgent), "random"),
    "lowest": (_plain(LowestAgent), "lowest"),
    "highest": (_plain(HighestAgent), "highest"),
    "greedy": (_plain(GreedyAgent), "greedy"),
    "mc": (_monte_carlo, "mc:N"),
}


def register_agent(prefix: str, factory: Callable[[str], Agent], usage: str | None = None) -> None:
    """Make specs starting with ``prefix`` (``"ppo"`` for ``"ppo:path/to/model.zip"``) build agents via ``factory``.

    Args:
        prefix: the part of a spec before the first ``":"``; letters, digits, ``_`` and ``-``.
        factory: called with the whole spec string, returns an :class:`Agent`;
            it should raise ``ValueError`` for a bad argument. A module-level
            function, so that arena worker processes can receive it.
        usage: how the spec is written, for :func:`known_agents` (default ``prefix``).

    Raises:
        ValueError: for an empty or malformed prefix, or a non-callable factory.
    """
    if not prefix or not all(ch.isalnum() or ch in "_-" for ch in prefix):
        raise ValueError(f"agent prefix must be a non-empty name of letters, digits, '_' or '-', got {prefix!r}")
    if not callable(factory):
        raise ValueError(f"agent factory for {prefix!r} must be callable, got {factory!r}")
    _REGISTRY[prefix] = (factory, usage or prefix)


def known_agents() -> tuple[str, ...]:
    """The spec patterns that :func:`make_agent` accepts, e.g. ``("random", ..., "mc:N")``."""
    return tuple(usage for _, usage in _REGISTRY.values())


def registered_factories() -> dict[str, tuple[Callable[[str], Agent], str]]:
    """A copy of the registry (prefix -> (factory, usage)), e.g. to hand to worker processes."""
    return dict(_REGISTRY)


PLUGIN_GROUP = "sixnimmt.agents"
"""Entry-point group of agent plugins: an entry named after a spec prefix (``ppo``) points to the module whose
import registers it (``training.ppo_agents``), so ``make_agent("ppo:model.zip")`` works without ``sixnimmt_env``
importing torch until such a spec is asked for."""


def _load_plugin(prefix: str) -> None:
    """Import the module that the installed entry point ``PLUGIN_GROUP``/``prefix`` names, if there is one, past a
    user's module of the same top-level name (:func:`past_shadowing_modules`)."""
    from importlib.metadata import entry_points

    for entry in entry_points(group=PLUGIN_GROUP, name=prefix):
        with past_shadowing_modules([entry.module.partition(".")[0]], f"the agent plugin {prefix!r}"):
            entry.load()


def shadowing_folders(package: str) -> list[str]:
    """The entries of ``sys.path`` that hold a plain module named ``package`` ahead of the package itself (a
    user's ``training.py`` in the working folder, which ``python -m`` and ``python script.py`` put first), in
    order; found without importing anything."""
    path = list(sys.path)
    shadows: list[str] = []
    while True:
        spec = importlib.machinery.PathFinder.find_spec(package, path)
        if spec is None or spec.submodule_search_locations is not None or spec.origin is None:
            return shadows
        folder = os.path.realpath(os.path.dirname(spec.origin))
        found = [entry for entry in path if os.path.realpath(entry or os.curdir) == folder]
        if not found:  # found through no folder of sys.path: nothing to step past
            return shadows
        shadows += found
        path = [entry for entry in path if entry not in found]


@contextlib.contextmanager
def past_shadowing_modules(packages: Iterable[str], needed_by: str) -> Iterator[None]:
    """Inside the block, ``sys.path`` lacks the folders of :func:`shadowing_folders` of each of ``packages`` (ours,
    such as ``training``): importing the package finds it (also through an editable install's finder, which
    Python asks after every folder of ``sys.path``), never the user's module. ``sys.path`` is restored after the
    block; an imported package stays. A process spawned inside the block starts with that path (its other modules
    in those folders are not importable there).

    Raises:
        ImportError: naming the clash (the module's file) when such a plain module is imported already, so that
            the package cannot be imported beside it under the same name; ``needed_by`` says who asked.
    """
    packages = list(packages)
    for package in packages:
        loaded = sys.modules.get(package)
        if loaded is not None and not hasattr(loaded, "__path__"):
            raise ImportError(
                f"{needed_by} needs sixnimmt's package {package!r}, but the module {package!r} imported here is "
                f"{getattr(loaded, '__file__', loaded)!r}, not a package: rename that module of yours"
            )
    saved = list(sys.path)
    shadows = list(dict.fromkeys(entry for package in packages for entry in shadowing_folders(package)))
    try:
        sys.path[:] = [entry for entry in saved if entry not in shadows]
        yield
    finally:
        sys.path[:] = saved


_BUILT_IN = ("random", "lowest", "highest", "greedy", "mc")


def known_specs() -> tuple[str, ...]:
    """Every agent spec pattern, the same whatever was imported before: the built-in ones, then every other
    registered prefix and installed plugin (:data:`PLUGIN_GROUP`, loaded here to read its usage) sorted by name.
    A plugin that does not load is named with the reason (e.g. ``ppo (not loadable: No module named 'torch')``).
    """
    from importlib.metadata import entry_points

    broken = {}
    for entry in entry_points(group=PLUGIN_GROUP):
        if entry.name not in _REGISTRY:
            try:
                entry.load()
            except Exception as e:  # a plugin's missing dependency must not hide the other specs
                broken[entry.name] = f"{entry.name} (not loadable: {e})"
    others = {prefix: usage for prefix, (_, usage) in _REGISTRY.items() if prefix not in _BUILT_IN}
    others.update((name, text) for name, text in broken.items() if name not in others)
    return tuple(_REGISTRY[p][1] for p in _BUILT_IN if p in _REGISTRY) + tuple(others[k] for k in sorted(others))


def unknown_spec(spec: str) -> ValueError:
    """The one error for an agent spec whose prefix nothing registers: it lists :func:`known_specs`."""
    return ValueError(f"unknown agent spec {spec!r}; known: {', '.join(known_specs())}")


def check_spec(spec: str) -> str:
    """``spec`` stripped, when its prefix names a registered agent or an installed plugin (loaded); the spec's
    argument is checked when the agent is built (:func:`make_agent`).

    Raises:
        ValueError: :func:`unknown_spec`'s.
    """
    spec = spec.strip()
    prefix = spec.partition(":")[0]
    if prefix not in _REGISTRY:
        _load_plugin(prefix)
    if prefix not in _REGISTRY:
        raise unknown_spec(spec)
    return spec


def parse_lineup(text: str, option: str = "agents") -> list[str]:
    """The agent specs of a comma-separated line-up (``"mc:64,champion,greedy"``: one per seat), each with a known
    prefix (:func:`check_spec`). The one parser of line-ups: the arena, ``training.evaluate``, the play table
    and training configs' ``eval.opponents`` use it.

    Raises:
        ValueError: naming ``option`` and ``text``: no spec, an empty entry, or an unknown spec (listing every
            known spec, :func:`unknown_spec`).
    """
    specs = [s.strip() for s in str(text).split(",")]
    example = "e.g. 'mc:64,champion,greedy'"
    if specs == [""]:
        raise ValueError(f"{option} {text!r} names no agent; give agent specs separated by commas, {example}")
    if not all(specs):
        raise ValueError(
            f"{option} {text!r} has an empty entry; give agent specs separated by single commas, {example}"
        )
    try:
        return [check_spec(s) for s in specs]
    except ValueError as e:
        raise ValueError(f"{option} {text!r}: {e}") from None


def make_agent(spec: str) -> Agent:
    """Build the agent named by ``spec`` (``"greedy"``, ``"mc:64"``, or a registered prefix).

    Raises:
        ValueError: for a spec that is not a string, an unknown prefix (the
            message lists the known specs, :func:`unknown_spec`) or a bad argument.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"agent spec must be a non-empty string, got {spec!r}; known: {', '.join(known_specs())}")
    spec = check_spec(spec)
    return _REGISTRY[spec.partition(":")[0]][0](spec)
