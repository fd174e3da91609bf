"""*6 nimmt!* as a PettingZoo parallel environment (``sixnimmt_v0``).

(The module is ``pettingzoo_env``, not ``env``: a submodule named ``env`` would
replace the package's :func:`sixnimmt_env.env` factory once imported.)

A thin shell over a backend (:class:`sixnimmt_env.backends.Backend`: the
pure rules engine :mod:`sixnimmt_env.rules.engine` or its compiled twin) that holds
one game and plays it (`RULES.md`): the environment holds agent names, spaces,
the dicts, rewards, rendering and error reporting; every rule lives in the
backend.

>>> from sixnimmt_env import parallel_env
>>> env = parallel_env(num_players=4)
>>> observations, infos = env.reset(seed=0)

=====================  ==============================================================
agents                 ``player_0 … player_{n-1}`` (seat order, n = ``num_players``)
action space           ``Discrete(109)`` for every agent (below)
observation space      ``Dict({"observation": Box(float32, (506,)),
                       "action_mask": Box(0, 1, (109,), int8)})``
state space            ``Box(float32, (1546,))`` (:data:`STATE_PIECES`)
rewards                ``reward="penalty"`` (default) or ``"relative"`` (below)
=====================  ==============================================================

**Actions** (the engine's encoding, stable): ``0..103`` the card ``a + 1``
(play it in the ``select`` phase; in the logic-variant ``draft`` take it from
the open display); ``104..107`` take row ``a - 104`` (the low-card choice,
`RULES.md` R9); ``108`` no-op, the only legal action of every agent that has
no decision in the current phase. Every live agent gives an action at every
step: in ``select`` all agents choose a card at once (R5); in ``choose_row``
and ``draft`` only one agent decides and the others give ``108``.

**Observations**: ``"observation"`` is the named layout of
:mod:`sixnimmt_env.observation` (own hand, rows, seen cards, the cards
revealed this turn, phase, draft display, seat-relative scores, ...; 506
``float32`` values whatever the table size); ``"action_mask"`` (``int8``)
is 1 exactly at the agent's legal actions, never all zero for a live agent.
Only public information and the agent's own hand go in (R4, E4). The
arrays of one step are fresh (never changed later) but are views into one
block per step. Like ``state()`` and :attr:`game_state`, which hold every
hand by design, that block is reachable by code that digs (``obs.base``):
give untrusted agents copies (``obs.copy()``).

**Infos**: by default (``infos="empty"``) ``infos[agent]`` is an empty
``dict``, so libraries that store infos as tensors (TorchRL, Tianshou) take
them as they are. With ``infos="view"``, ``infos[agent]`` is the agent's
readable view (the same as :meth:`SixNimmtParallelEnv.view`), a mutable mapping
(:class:`ViewInfo`) with the keys of :class:`sixnimmt_env.rules.engine.PlayerView`:
``hand`` (sorted cards), ``rows`` (4 lists of cards), ``totals`` and
``round_penalties`` (bullheads, seat order), ``phase``, ``revealed`` (cards
revealed this turn, by seat), ``legal_actions`` (action indices), ``must_act``,
``chooser``, ``seen``, ``piles``, ``display``, ``turn``, ``round``, ... The
first read of a step's info builds every agent's view of that step as a plain
``dict`` (:func:`engine.views <sixnimmt_env.rules.engine.views>`: the public
values computed once, about 18 µs for 4 agents; on the compiled backend the
engine state is rebuilt first, about 40 µs); a step whose infos nobody reads
builds none. ``dict(info)``, copies and pickles are plain dicts. The AEC env
(:func:`env`), which hands every info out with ``last()``, builds plain dicts
at the step, as PettingZoo's AEC API asks; the default ``"empty"`` builds
nothing.

**Rewards** (per step, in bullheads): ``reward="penalty"`` gives each agent
minus the bullheads it took in that step (R8, R9), so an episode's return is
minus its penalty; ``reward="relative"`` gives
``mean(bullheads the others took) - own bullheads`` (own penalty minus the mean
of the others', negated so that higher is better; the rewards of a step sum to
0; both defined by :func:`sixnimmt_env.rewards.rewards`). An illegal action
under ``illegal_action="terminate"`` (the default, as PettingZoo classic's
``TerminateIllegalWrapper``, so checkers that sample unmasked actions run)
ends the episode: the offender (the first illegal seat in seat order) gets
``-ILLEGAL_ACTION_PENALTY`` (-171, the bullheads of the whole deck, worse than
any round), every other agent 0. An integer outside 0..108 is illegal like any
other; a value that is not an integer is a ``ValueError`` in every mode.
``illegal_action="raise"`` gives a ``ValueError`` naming the agent, the action
and the legal actions instead (nothing changes). When the episode ends, every
agent's final ``action_mask`` holds the no-op 108 alone: a mask is never all
zero, so masked samplers never see an empty choice. This contract (illegal
actions, their reward, the end of an episode) is written once, in
:mod:`sixnimmt_env.rules.learner_step`, for every environment of the package.

**Episodes** end after the last round of the game (R12), or after one round
with ``episode="round"``: then every termination is ``True`` and ``agents`` is
empty. Truncations are always ``False`` (no time limit of our own).

**Backends** (``backend=`` keyword):

- ``"reference"`` (default): the pure-Python engine :mod:`sixnimmt_env.rules.engine`,
  the readable specification, with an incremental observation encoder.
- ``"compiled"``: the numba kernels of :mod:`sixnimmt_env.compiled` on one game
  (:class:`sixnimmt_env.compiled.single.SingleGame`): each :meth:`step` is one
  compiled call that checks the actions against the masks (an illegal action
  raises before anything changes), plays the step and writes fresh
  observation and mask arrays; :attr:`game_state` is rebuilt from a snapshot
  of that step only when read (``infos="view"`` reads it at every step). About
  twice the throughput of the reference backend (``benchmarks/env_throughput.py``)
  for code that reads observations and masks; reading a view or :attr:`game_state`
  costs about 40 µs per step (the engine state is rebuilt), so code that reads
  them at every step (e.g. view-based opponents) is faster on the reference backend.
  The first use compiles the kernels (cached on disk afterwards). From the same position
  (``reset(options=...)``) with the same actions, both backends give
  identical observations, masks, rewards, terminations, infos, states and
  errors (``tests/test_env_compiled.py``). **Only the deals differ**: the
  compiled backend draws each new round from the batched engine's splitmix64
  generator (seeded from ``reset(seed=...)``; same seed, same games within
  the backend), not from a ``numpy.random.Generator``, so a seed does not
  give the reference backend's games.

>>> env = parallel_env(num_players=4, backend="compiled")

**Rendering** (``render_mode=``): ``"ansi"`` returns the table as text,
``"human"`` prints it, ``"rgb_array"`` returns it as a ``uint8 (600, 960, 3)``
picture (:mod:`sixnimmt_env.render`): rows with their bullheads, the cards
revealed, scores, whose decision it is and what the last step did (who took
which row and why: a sixth card, R8, or a low card, R9). No hand is shown.

**Copies**: every environment here (both backends, and the AEC env around it)
survives ``pickle``, ``cloudpickle`` and ``copy.deepcopy`` at any point of an
episode, and the copy continues exactly as the original with the same actions
(same observations, rewards, deals).

**PettingZoo's conventions**: :mod:`sixnimmt_env.sixnimmt_v0` offers
``parallel_env``, ``env`` and ``raw_env``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from sixnimmt_env.backends import OK, OVER, Backend
from sixnimmt_env.backends.recorded import RecordedBackend
from sixnimmt_env.backends.reference import ReferenceBackend
from sixnimmt_env.observation import (
    MAX_SEATS,
    OBS_SIZE,
    encode,
    observation_high,
    start_total_limit,
)
from sixnimmt_env.render import render_table, step_events
from sixnimmt_env.rewards import check_reward_mode, rewards
from sixnimmt_env.rules import engine
from sixnimmt_env.rules.engine import (
    NUM_ACTIONS,
    NUM_CARDS,
    GameConfig,
    PlayerView,
    State,
)
from sixnimmt_env.rules.learner_step import ILLEGAL_ACTION_MODES as ILLEGAL_ACTION_MODES
from sixnimmt_env.rules.learner_step import ILLEGAL_ACTION_PENALTY as ILLEGAL_ACTION_PENALTY
from sixnimmt_env.rules.learner_step import (
    TRUNCATED,
    check_illegal_action,
    end_masks,
    first_illegal,
    illegal_action_error,
    illegal_rewards,
    integer_action,
    joint_actions,
)
from sixnimmt_env.rules.learner_step import action_index as action_index

if TYPE_CHECKING:
    from sixnimmt_env.backends.compiled import LazyState

RENDER_MODES = ("ansi", "human", "rgb_array")
INFO_MODES = ("empty", "view")

STATE_PIECES: tuple[tuple[str, int], ...] = (
    ("hands", MAX_SEATS * NUM_CARDS),
    ("observation", OBS_SIZE),
)
"""Layout of :meth:`SixNimmtParallelEnv.state` (``float32``):

- ``hands`` (1040): seat ``s``'s hand at ``104 s + c - 1`` (1 where it holds
  card ``c``), absolute seat order, 0 for seats beyond ``num_players``;
- ``observation`` (506): seat 0's observation (:mod:`sixnimmt_env.observation`),
  so its seat-relative pieces are in absolute seat order.

The unused stock is implied: cards of the deck in no hand, row, pile or display.
"""
STATE_SIZE = sum(size for _, size in STATE_PIECES)
"""Length of the state vector (1546)."""

BACKENDS = ("reference", "compiled")
ENV_OPTIONS = ("reward", "illegal_action", "render_mode", "backend", "infos")
"""Keyword arguments of the environment besides the :class:`GameConfig` fields."""

_POSITION_KEYS = ("hands", "rows", "totals", "display", "drafted")
_REWARDS_KEPT = 4096
"""The most reward dicts an environment keeps (:meth:`SixNimmtParallelEnv._rewards`; then it starts afresh)."""


# --------------------------------------------------------------------------- infos


class ViewInfo(MutableMapping[str, Any]):
    """One agent's info with ``infos="view"``: its readable view of the step's position, a mutable mapping with
    the keys and values of :class:`~sixnimmt_env.rules.engine.PlayerView` (``hand``, ``rows``, ``totals``,
    ``legal_actions``, ...; only public information and the agent's own hand, R4, E4).

    The first read of any agent's info of a step builds every seat's view of it (:func:`engine.views
    <sixnimmt_env.rules.engine.views>`: the public values computed once), so a step whose infos nobody reads
    builds none. Reads, writes (``info["note"] = ...``), ``==`` with a ``dict`` and the other
    :class:`~collections.abc.MutableMapping` methods act on the agent's own ``dict``; ``dict(info)``,
    :meth:`copy`, ``copy.copy``, ``copy.deepcopy`` and ``pickle`` give a plain ``dict`` of the view (and
    nothing of the other seats). Not a ``dict`` itself: code that needs one (PettingZoo's AEC API, which the
    AEC env serves plain dicts for) takes ``dict(info)``. Until it is read, the object refers to the step's
    state (every hand), like an observation's ``.base``: give untrusted agents ``dict(info)``.

    :meth:`infos` makes a step's infos (there is no other constructor).
    """

    __slots__ = ("_seat", "_src")

    _src: list[Any] | dict[str, Any]
    """The step's shared one-item list ``[position]`` until the first read, then the agent's own ``dict``."""
    _seat: int
    """The agent's seat."""

    @classmethod
    def infos(cls, names: Sequence[str], position: State | LazyState) -> dict[str, MutableMapping[str, Any]]:
        """The infos of one step: ``{names[seat]: ViewInfo}`` for every seat, all reading ``position``.

        Args:
            names: the agents' names in seat order.
            position: the step's position: the engine :class:`State` or the compiled backend's
                :class:`~sixnimmt_env.backends.compiled.LazyState` (rebuilt when read, about 40 µs). The first
                read of any of the infos builds every seat's view from it and drops it.

        The objects are made with ``object.__new__`` and their two slots set here (no ``__init__`` call: 4
        agents' infos in about 0.6 µs instead of 0.9; the env makes them at every step).
        """
        step = [position]
        new = object.__new__
        infos: dict[str, MutableMapping[str, Any]] = {}
        seat = 0
        for name in names:
            info: ViewInfo = new(cls)
            info._src = step
            info._seat = seat
            infos[name] = info
            seat += 1  # noqa: SIM113 (enumerate is slower here)
        return infos

    def __init__(self) -> None:
        """Not a constructor: a step's infos come from :meth:`infos`.

        Raises:
            TypeError: always (an info without a step has no view to read).
        """
        raise TypeError("ViewInfo objects are made by ViewInfo.infos(names, position), one per agent of a step")

    def _view(self) -> dict[str, Any]:
        """The agent's own ``dict`` (built with the step's other views on first use)."""
        src = self._src
        if type(src) is dict:
            return src
        step = cast(list[Any], src)
        if len(step) == 1:  # the step's first read: every seat's view
            position = step[0]
            step[0] = None
            step.append(engine.views(position if type(position) is State else position.get()))
        view: dict[str, Any] = step[1][self._seat]
        self._src = view  # the step's list (every seat's view) is no longer reachable from here
        return view

    def __getitem__(self, key: str) -> Any:
        view = self._src  # every read (get, in, ==, dict(info)) comes here: one Python call per key, not two
        return (view if type(view) is dict else self._view())[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._view()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._view()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view())

    def __len__(self) -> int:
        return len(self._view())

    def __repr__(self) -> str:
        return repr(self._view())

    def __reduce__(self) -> tuple[type[dict[str, Any]], tuple[dict[str, Any]]]:
        """Copies and pickles are plain ``dict`` s of the view."""
        return dict, (self._view(),)

    def copy(self) -> dict[str, Any]:
        """A plain ``dict`` of the view (shallow, as ``dict.copy``: the lists are shared)."""
        return self._view().copy()


# --------------------------------------------------------------------------- environment


class SixNimmtParallelEnv(ParallelEnv):
    """*6 nimmt!* for 2..10 agents acting simultaneously (see the module docstring for spaces and rewards).

    Keyword args:
        num_players, variant, row_choice, end_score, end_rule, max_rounds,
            episode: the :class:`GameConfig` fields (`RULES.md` R3, R9b, R12,
            V1, V2), validated there.
        reward: ``"penalty"`` (default: minus the bullheads taken this step)
            or ``"relative"`` (mean of the others' bullheads minus one's own).
        illegal_action: ``"terminate"`` (default, PettingZoo classic's
            convention: an integer action that is not legal, including one
            outside 0..108, ends the episode; the offender gets
            ``-ILLEGAL_ACTION_PENALTY``, the others 0) or ``"raise"`` (a
            ``ValueError`` naming the agent, the action and the legal actions;
            nothing changes). In both modes a value that is not an integer
            (a float, a string, a ``bool``) is a ``ValueError`` and changes
            nothing, as in the Gymnasium env.
        infos: ``"empty"`` (default: ``infos[agent] == {}``, which every
            tensor-based library can store) or ``"view"`` (the agent's
            readable view, a :class:`~sixnimmt_env.pettingzoo_env.ViewInfo` mapping built when first read;
            a plain ``dict`` in the AEC env); :meth:`view` gives the same
            view on demand.
        render_mode: ``None``, ``"ansi"`` (:meth:`render` returns the table as
            text), ``"human"`` (:meth:`render` prints it) or ``"rgb_array"``
            (:meth:`render` returns a ``uint8 (600, 960, 3)`` picture).
        backend: ``"reference"`` (default: the pure-Python engine) or
            ``"compiled"`` (numba kernels, one compiled call per step; the
            same rules, observations, masks, rewards and infos, but its own
            deals: see the module docstring).

    Attributes:
        observation_spaces: ``{agent: space}`` for every agent of
            ``possible_agents``, the dict PettingZoo's ``ParallelEnv`` declares
            (skrl's ``wrap_env`` reads it); the same space objects
            :meth:`observation_space` returns.
        action_spaces: ``{agent: Discrete(109)}``, likewise; the objects
            :meth:`action_space` returns.

    Raises:
        ValueError: an unknown keyword (the message lists the allowed ones) or
            a bad value (naming the field and the allowed values).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "sixnimmt_v0",
        "render_modes": list(RENDER_MODES),
        "is_parallelizable": True,
    }

    def __init__(self, **config: Any) -> None:
        allowed = (*GameConfig.field_names(), *ENV_OPTIONS)
        unknown = sorted(set(config) - set(allowed))
        if unknown:
            raise ValueError(f"unknown option(s) {unknown}; allowed: {', '.join(allowed)}")
        reward = config.pop("reward", "penalty")
        illegal_action = config.pop("illegal_action", "terminate")
        render_mode = config.pop("render_mode", None)
        backend = config.pop("backend", "reference")
        info_mode = config.pop("infos", "empty")
        check_reward_mode(reward)
        check_illegal_action(illegal_action)
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(
                f"render_mode must be None or one of {', '.join(map(repr, RENDER_MODES))}, got {render_mode!r}"
            )
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
        if info_mode not in INFO_MODES:
            raise ValueError(f"infos must be one of {', '.join(map(repr, INFO_MODES))}, got {info_mode!r}")
        self.config = GameConfig(**config)
        self.info_mode: str = info_mode
        self._view_infos = info_mode == "view"
        self._dict_infos = False  # True in the AEC env (raw_env): plain dicts instead of ViewInfo
        self.backend: str = backend
        self.reward_mode: str = reward
        self.illegal_action: str = illegal_action
        self.render_mode: str | None = render_mode
        n = self.config.num_players
        self.possible_agents: list[str] = [f"player_{i}" for i in range(n)]
        self.agents: list[str] = []
        self._names = tuple(self.possible_agents)
        self._seat_of = {name: i for i, name in enumerate(self._names)}
        high = observation_high(self.config)
        self.observation_spaces = {
            name: spaces.Dict(
                {
                    "observation": spaces.Box(0.0, high, (OBS_SIZE,), np.float32),
                    "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
                }
            )
            for name in self._names
        }
        self.action_spaces: dict[str, spaces.Discrete] = {name: spaces.Discrete(NUM_ACTIONS) for name in self._names}
        self.state_space = spaces.Box(
            0.0, np.concatenate([np.ones(MAX_SEATS * NUM_CARDS, np.float32), high]), (STATE_SIZE,), np.float32
        )
        if backend == "compiled":
            from sixnimmt_env.backends.compiled import CompiledBackend  # imports numba: only when asked for

            self._backend: Backend = CompiledBackend(self.config)
        else:
            self._backend = ReferenceBackend(self.config)
        if render_mode is not None:  # the narrators need each step's position and actions: recorded by the backend
            self._backend = RecordedBackend(self._backend)
        self._zero_rewards = dict.fromkeys(self._names, 0.0)
        self._known_rewards: dict[tuple[Any, ...], dict[str, float]] = {}  # see _rewards
        self._all_true = dict.fromkeys(self._names, True)
        self._all_false = dict.fromkeys(self._names, False)
        self._truncations = dict.fromkeys(self._names, TRUNCATED)

    # ------------------------------------------------------------------ spaces

    def observation_space(self, agent: str) -> spaces.Dict:
        """The observation space of ``agent`` (the same object at every call)."""
        try:
            return self.observation_spaces[agent]
        except KeyError:
            raise ValueError(f"unknown agent {agent!r}; agents: {self.possible_agents}") from None

    def action_space(self, agent: str) -> spaces.Discrete:
        """``Discrete(109)`` for ``agent`` (the same object at every call)."""
        try:
            return self.action_spaces[agent]
        except KeyError:
            raise ValueError(f"unknown agent {agent!r}; agents: {self.possible_agents}") from None

    # ------------------------------------------------------------------ episode

    @property
    def game_state(self) -> State:
        """The engine's current :class:`State` (immutable). Raises ``ValueError`` before :meth:`reset`."""
        state = self._backend.state()
        if state is None:
            raise ValueError("the environment has no game yet: call reset() first")
        return state

    def view(self, agent: str) -> PlayerView:
        """``agent``'s readable view of the current state (what ``infos="view"`` puts in ``infos[agent]``).

        A read-only mapping with the keys of :class:`~sixnimmt_env.rules.engine.PlayerView` (``hand``, ``rows``,
        ``totals``, ``legal_actions``, ...): only public information and the agent's own hand (R4).

        Raises:
            ValueError: an unknown agent, or no game yet (before :meth:`reset`).
        """
        seat = self._seat_of.get(agent)
        if seat is None:
            raise ValueError(f"unknown agent {agent!r}; agents: {self.possible_agents}")
        return PlayerView(self.game_state, seat)

    def reset(
        self, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, MutableMapping[str, Any]]]:
        """Start a new episode.

        Args:
            seed: seeds the environment's ``numpy.random.Generator`` (the
                compiled backend: its game's splitmix64 stream); later resets
                without a seed continue its stream (same seed, same games).
            options: ``{"hands": [[...] per seat], "rows": [[...] × 4],
                "totals": [...], "display": [...], "drafted": [[...] per seat]}``
                starts from that position (:func:`engine.from_position`; the lists
                are copied, never kept); ``"display"`` (logic variant) starts in the
                draft, ``"drafted"`` (logic variant) gives each seat's draft picks.
                Other keys are ignored.

        Returns:
            ``(observations, infos)`` keyed by agent.

        Raises:
            ValueError: an invalid position (saying what is wrong), position
                keys without ``"hands"``, or a seed that is not a non-negative integer.
        """
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0):
            raise ValueError(f"seed must be None or a non-negative integer, got {seed!r}")
        position = {k: options[k] for k in _POSITION_KEYS if k in options} if options else None
        if position:
            if "hands" not in position:
                raise ValueError(f"a start position needs options['hands'] (got only {sorted(position)})")
            limit = start_total_limit(self.config)
            totals = position.get("totals")
            if totals is not None and any(isinstance(t, int | np.integer) and t > limit for t in totals):
                raise ValueError(
                    f"options['totals'] {list(totals)} must be at most {limit} bullheads: a higher total would "
                    f"have ended the game (end_score={self.config.end_score}, end_rule={self.config.end_rule!r}, "
                    f"max_rounds={self.config.max_rounds}, RULES.md R12)"
                )
            state = engine.from_position(
                self.config,
                position["hands"],
                position.get("rows", ()),
                totals=position.get("totals"),
                display=position.get("display"),
                drafted=position.get("drafted"),
            )
            self._backend.load(state, seed)
        else:
            self._backend.new_game(seed)
        self.agents = list(self._names)
        return self._observations(), self._infos(self._backend.snapshot())  # type: ignore[arg-type]

    def _observations(self) -> dict[str, dict[str, np.ndarray]]:
        """The backend's current observations and masks as ``{agent: {"observation", "action_mask"}}``."""
        backend = self._backend
        return {
            name: {"observation": o, "action_mask": m}
            for name, o, m in zip(self._names, backend.observations, backend.masks)  # noqa: B905
        }  # (the compiled backend's observations have extra rows below the n seats': its snapshot)

    def _infos(self, state: State | LazyState) -> dict[str, MutableMapping[str, Any]]:
        """The infos of a step: ``{agent: {}}`` (``infos="empty"``) or each agent's readable view of ``state``
        (``"view"``: :class:`~sixnimmt_env.rules.engine.PlayerView`'s keys and values), a :class:`ViewInfo` built
        when read (the AEC env: a plain ``dict`` built now)."""
        if self._view_infos:
            if self._dict_infos:  # the AEC env's: PettingZoo's AEC API asks for dict infos
                views = engine.views(state if isinstance(state, State) else state.get())
                return dict(zip(self._names, views, strict=True))
            return ViewInfo.infos(self._names, state)
        return {name: {} for name in self._names}

    def _legal(self, seat: int) -> tuple[int, ...]:
        """``seat``'s legal actions now (for error messages and the offender of a joint action)."""
        return engine.legal_actions(self.game_state, seat)

    def check_action(self, agent: str, action: Any) -> int:
        """Check one agent's action before the joint step (the AEC env calls it at that agent's turn).

        Returns:
            The action as a plain ``int`` (0..108 under ``illegal_action="raise"``; any integer otherwise, the
            joint step then ends the episode for an illegal one).

        Raises:
            ValueError: ``agent`` is not live; ``action`` is not an integer (every mode); or, with
                ``illegal_action="raise"``, it is outside 0..108 or not legal now (naming the agent, the action
                and the legal actions: :mod:`sixnimmt_env.rules.learner_step`). Nothing changes.
        """
        if agent not in self._seat_of or agent not in self.agents:
            raise ValueError(f"{agent!r} is not a live agent; live agents: {list(self.agents)}")
        seat = self._seat_of[agent]
        a = integer_action(agent, action, partial(self._legal, seat))
        if self.illegal_action == "raise":
            legal = self._legal(seat)
            if a not in legal:
                raise illegal_action_error(agent, a, legal, self.game_state.phase)
        return a

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[
        dict[str, dict[str, np.ndarray]],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, MutableMapping[str, Any]],
    ]:
        """Apply one joint action: one action per live agent (integers: :func:`~.learner_step.action_index`).

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, each
            keyed by every agent that was live before the step.

        Raises:
            ValueError: missing or extra agents, an action that is not an
                integer, an illegal one (outside 0..108 or not legal now) with
                ``illegal_action="raise"`` (naming the agent, the action, the
                phase and the legal actions), or stepping a finished episode.
                The environment is unchanged and stays usable.
        """
        if not self.agents:
            if self._backend.snapshot() is None:
                raise ValueError("the environment has no game yet: call reset() first")
            raise ValueError("the episode is over (agents is empty): call reset() to start a new one")
        names = self._names
        backend = self._backend
        try:  # the joint action as handed in (Python or numpy integers: every step of a typical caller)
            values = list(map(actions.__getitem__, names))
            if len(actions) != len(names):
                raise KeyError
            code = backend.step(values)  # checks every action; nothing changes if one is bad
        except (KeyError, TypeError, IndexError, OverflowError, AttributeError, ValueError):
            code = None
        if code is None or code >= 0:  # refused: converted by the contract, then stepped, or illegal
            values, code = self._step_converted(actions)
            if code >= 0:
                return self._illegal(code, values[code])
        masks = backend.masks
        observations = {
            name: {"observation": o, "action_mask": m}
            for name, o, m in zip(names, backend.observations, masks)  # noqa: B905
        }  # (the compiled backend's observations have extra rows below the n seats': its snapshot)
        if not self._view_infos:
            infos: dict[str, MutableMapping[str, Any]] = {name: {} for name in names}
        elif self._dict_infos:
            infos = self._infos(backend.snapshot())  # type: ignore[arg-type]
        else:  # (self._infos's own branch, one Python call fewer: the ParallelEnv's every step)
            infos = ViewInfo.infos(names, backend.snapshot())  # type: ignore[arg-type]
        if code == OK:
            return observations, self._zero_rewards.copy(), self._all_false.copy(), self._truncations.copy(), infos
        rewards = self._rewards(backend.penalties)
        if code == OVER:
            self.agents = []
            end_masks(masks)
            return observations, rewards, self._all_true.copy(), self._truncations.copy(), infos
        return observations, rewards, self._all_false.copy(), self._truncations.copy(), infos

    def _step_converted(self, actions: Any) -> tuple[list[int], int]:
        """A joint action the backend refused as handed in: as plain ints (:func:`~.learner_step.joint_actions`,
        a ``ValueError`` for malformed input), then stepped if every one is in 0..108 (the backend's code: the
        first illegal seat or a step code), else the first illegal seat (:func:`~.learner_step.first_illegal`)."""
        values = joint_actions(self._names, actions, self._legal)
        if not all(0 <= a < NUM_ACTIONS for a in values):
            seat = first_illegal(values, self._legal)
            if seat is not None:  # (always: some value is outside 0..108)
                return values, seat
        return values, self._backend.step(values)

    def _illegal(self, seat: int, action: int) -> tuple[Any, ...]:
        """``seat``'s illegal integer ``action`` (the first in seat order): raise (``"raise"``), or end the episode
        (``"terminate"``) with :func:`~.learner_step.illegal_rewards`, the no-op alone in every mask and the
        infos of the unchanged position."""
        name = self._names[seat]
        if self.illegal_action == "raise":
            raise illegal_action_error(name, action, self._legal(seat), self.game_state.phase)
        self.agents = []
        backend = self._backend
        backend.observe()  # fresh arrays: the arrays of the last step were handed out already
        end_masks(backend.masks)
        rewards = dict(zip(self._names, illegal_rewards(len(self._names), seat), strict=True))
        infos = self._infos(backend.snapshot())  # type: ignore[arg-type]
        return self._observations(), rewards, self._all_true.copy(), self._truncations.copy(), infos

    def _rewards(self, penalties: Sequence[int]) -> dict[str, float]:
        """Rewards of one step from the bullheads each seat took: :func:`sixnimmt_env.rewards.rewards`.

        The dicts of the steps where one seat alone took bullheads recur (a few hundred of them: seat, bullheads,
        mode) and are kept, at most ``_REWARDS_KEPT``, a copy handed out (4 players: 0.33 µs a step where
        computing them took 0.59). When several seats took some (most such steps at 10 players) the vector
        seldom recurs and the dict is computed.
        """
        if not any(penalties):
            return self._zero_rewards.copy()
        mode = self.reward_mode
        if penalties.count(0) != len(penalties) - 1:
            return dict(zip(self._names, rewards(penalties, mode), strict=True))
        key = (mode, *penalties)
        known = self._known_rewards.get(key)
        if known is None:
            if len(self._known_rewards) >= _REWARDS_KEPT:
                self._known_rewards.clear()
            known = self._known_rewards[key] = dict(zip(self._names, rewards(penalties, mode), strict=True))
        return known.copy()

    # ------------------------------------------------------------------ state and rendering

    def state(self) -> np.ndarray:
        """The full state for centralised critics: ``float32 (STATE_SIZE,)`` laid out as :data:`STATE_PIECES`."""
        state = self.game_state
        out = np.zeros(STATE_SIZE, np.float32)
        for seat, hand in enumerate(state.hands):
            out[[seat * NUM_CARDS + c - 1 for c in hand]] = 1.0
        encode(state, 0, out[MAX_SEATS * NUM_CARDS :])
        return out

    def render(self) -> str | np.ndarray | None:
        """The table: rows with their bullheads, the cards revealed, scores, whose decision it is and what the
        last step did (who took which row and why: a sixth card, R8, or a low card, R9). Public information
        only (R4): no hand is shown.

        Returns:
            the text with ``render_mode="ansi"``; an RGB picture ``uint8 (600, 960, 3)`` with ``"rgb_array"``;
            ``None`` with ``"human"`` (the text is printed) and without a render mode (with a warning).
        """
        return render_table(self, self.render_mode)

    def last_step(self) -> tuple[State, list[int]] | None:
        """The state the last applied step was applied to and its joint action (one int per seat), recorded only
        with a render mode (:class:`~sixnimmt_env.backends.recorded.RecordedBackend`); ``None`` without one and
        after :meth:`reset` until a step is applied. An illegal or refused action applies nothing and records
        nothing."""
        backend = self._backend
        last = backend.last_step if isinstance(backend, RecordedBackend) else None
        if last is None:
            return None
        before, actions = last
        return (before if isinstance(before, State) else before.get()), actions

    def last_events(self) -> list[str]:
        """What the last step did, one line per card (:func:`sixnimmt_env.render.step_events`); an empty list
        when :meth:`last_step` is ``None``."""
        last = self.last_step()
        return [] if last is None else step_events(last[0], last[1], self._names)

    def close(self) -> None:
        """Nothing to release."""


def parallel_env(**config: Any) -> SixNimmtParallelEnv:
    """The PettingZoo ``ParallelEnv``; keyword args as :class:`SixNimmtParallelEnv`."""
    return SixNimmtParallelEnv(**config)


class raw_env(parallel_to_aec_wrapper):  # PettingZoo's name for the unwrapped AEC env
    """The AEC environment without PettingZoo's order-enforcing wrapper: ``parallel_to_aec_wrapper`` around
    :class:`SixNimmtParallelEnv` (keyword args as there). Agents act one after another; the joint action is
    applied when the last live agent has acted.

    Each action is checked at its agent's own :meth:`step` (:meth:`SixNimmtParallelEnv.check_action`): a value
    that is not an integer, or with ``illegal_action="raise"`` an illegal one, raises there and is not stored,
    so the env is unchanged and the same agent acts again. Under ``"terminate"`` an illegal integer ends the
    episode (−171 for that agent) when the joint action is applied.
    """

    def __init__(self, **config: Any) -> None:
        parallel = SixNimmtParallelEnv(**config)
        parallel._dict_infos = True  # every agent's info is handed out by last(): built at the step, plain dicts
        super().__init__(parallel)

    def step(self, action: Any) -> None:
        """Record ``action`` for the selected agent (``None`` for a finished one); see the class docstring.

        Raises:
            ValueError: as :meth:`SixNimmtParallelEnv.check_action`; nothing is stored or changed.
        """
        agent = self.agent_selection
        if not (self.terminations[agent] or self.truncations[agent]):
            action = self.env.check_action(agent, action)
        super().step(action)


def env(**config: Any) -> Any:
    """The PettingZoo AEC environment: :class:`raw_env` inside PettingZoo's ``OrderEnforcingWrapper`` (what
    ``parallel_to_aec`` builds, with each action checked at its own agent's step)."""
    return OrderEnforcingWrapper(raw_env(**config))
