"""*6 nimmt!* as an OpenSpiel Python game: ``pyspiel.load_game("python_sixnimmt")`` after importing this module.

Importing this module registers the game with ``pyspiel`` (the ``open-spiel`` package, ``interop`` extra);
``import sixnimmt_env`` never imports it. The rules are those of :mod:`sixnimmt_env.rules.engine`: an OpenSpiel
state wraps an engine :class:`~sixnimmt_env.rules.engine.State` and every move goes through
:func:`sixnimmt_env.rules.engine.step`; actions keep the engine's encoding.

=================  =====================================================================================
node               OpenSpiel node (``current_player()``) and its actions
=================  =====================================================================================
deal (R3, R14)     ``CHANCE``, one node per card: 10 cards to seat 0, then to seat 1, ..., then the 4
                   row cards; outcomes are the undealt cards ``1..deck_size`` as actions ``card - 1``,
                   uniform. The cards never dealt are the round's unused stock.
card choice (R5)   ``SIMULTANEOUS``: every seat plays a card of its hand, action ``card - 1`` (0..103)
low card (R9)      sequential, the owner of the low card: action ``104 + row`` (only with
                   ``row_choice="player"``; ``"cheapest"`` takes the row in the engine)
draft (V2)         sequential, the picking seat: action ``card - 1`` of a display card. The logic
                   variant's display is the whole tactics deck face up, so it has no chance node.
=================  =====================================================================================

Game parameters (those of :class:`~sixnimmt_env.rules.engine.GameConfig`, with 0 for ``None``):
``players`` (4), ``variant`` ("standard"), ``row_choice`` ("player"), ``episode`` ("game"),
``end_score`` (66; 0 = no end score), ``end_rule`` ("at_least"), ``max_rounds`` (0 = no limit), and
``reward`` ("penalty" or "relative", :func:`sixnimmt_env.rewards.rewards`). Rewards are given at every
step (``RewardModel.REWARDS``); a terminal return is minus the seat's bullheads ("penalty", general-sum)
or the mean of the others' bullheads minus its own ("relative", zero-sum).

Observations hold the observing seat's hand and public information only (`RULES.md` R4, E4):

- observation tensor: :data:`sixnimmt_env.observation.PIECES` (:data:`~sixnimmt_env.observation.OBS_SIZE`
  floats, named pieces in the observer's ``dict``); during a deal, the cards dealt so far to the seat and
  the rows, the totals, the round and the player count, with no phase set.
- information-state tensor: the observation, then ``plays`` (10 turns x 10 seat-relative slots: the card
  each seat revealed in each turn of this round / 104) and ``rows_taken`` (10 turns x 4: the row a low
  card took). Earlier rounds are summarised by the totals (a round's deal is independent of them).
- observation string: the seat's readable view; information-state string: the view, the seat's own hand
  at the start of every round and every public event of the game (perfect recall).

ISMCTS and the other sequential-only algorithms play the turn-based form
``pyspiel.convert_to_turn_based(game)``; :func:`resampler` gives ISMCTS the worlds consistent with a
seat's information, and :func:`play` plays either form with bots that only ``step``. :class:`AgentBot`
plays any agent spec of :func:`sixnimmt_env.agents.make_agent` (``champion`` included) as a ``pyspiel.Bot``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyspiel

from sixnimmt_env import observation
from sixnimmt_env.agents import Agent, make_agent
from sixnimmt_env.rewards import check_reward_mode, rewards
from sixnimmt_env.rules import engine
from sixnimmt_env.rules.engine import (
    CHOOSE_ROW,
    DONE,
    DRAFT,
    HAND_SIZE,
    NOOP,
    NUM_CARDS,
    NUM_ROWS,
    ROW_ACTION,
    SELECT,
    GameConfig,
    State,
)

__all__ = [
    "SHORT_NAME",
    "AgentBot",
    "SixNimmtGame",
    "SixNimmtState",
    "config_of",
    "play",
    "resampler",
    "simultaneous_state",
]

SHORT_NAME = "python_sixnimmt"
"""The name OpenSpiel loads the game by."""

_DEFAULTS: dict[str, Any] = {
    "players": 4,
    "variant": "standard",
    "row_choice": "player",
    "episode": "game",
    "end_score": 66,
    "end_rule": "at_least",
    "max_rounds": 0,
    "reward": "penalty",
}
_DECK_BULLHEADS = 171  # every card of the deck (R2): the most one round can hand out
_TURN_PIECES = (("plays", HAND_SIZE * observation.MAX_SEATS), ("rows_taken", HAND_SIZE * NUM_ROWS))


def _game_type(utility: pyspiel.GameType.Utility) -> pyspiel.GameType:
    """The game type of ``python_sixnimmt`` with the utility of its reward mode."""
    return pyspiel.GameType(
        short_name=SHORT_NAME,
        long_name="6 nimmt! (sixnimmt)",
        dynamics=pyspiel.GameType.Dynamics.SIMULTANEOUS,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=utility,
        reward_model=pyspiel.GameType.RewardModel.REWARDS,
        max_num_players=engine.MAX_PLAYERS,
        min_num_players=engine.MIN_PLAYERS,
        provides_information_state_string=True,
        provides_information_state_tensor=True,
        provides_observation_string=True,
        provides_observation_tensor=True,
        provides_factored_observation_string=False,
        parameter_specification=_DEFAULTS,
    )


_GAME_TYPE = _game_type(pyspiel.GameType.Utility.GENERAL_SUM)
"""The registered type (reward "penalty"); reward "relative" makes a zero-sum game."""
_ZERO_SUM_TYPE = _game_type(pyspiel.GameType.Utility.ZERO_SUM)


def config_of(params: Mapping[str, Any]) -> tuple[GameConfig, str]:
    """The engine config and reward mode of OpenSpiel game parameters (missing ones take their defaults).

    Raises:
        ValueError: an unknown parameter (naming it and the known ones), or a value :class:`GameConfig` or
            :func:`~sixnimmt_env.rewards.check_reward_mode` refuses (naming the field, the value and what is
            allowed).
    """
    unknown = sorted(set(params) - set(_DEFAULTS))
    if unknown:
        raise ValueError(f"{SHORT_NAME}: unknown parameters {unknown}; known: {sorted(_DEFAULTS)}")
    p = {**_DEFAULTS, **params}
    check_reward_mode(p["reward"])
    try:
        config = GameConfig(
            num_players=p["players"],
            variant=p["variant"],
            row_choice=p["row_choice"],
            end_score=p["end_score"] or None,
            end_rule=p["end_rule"],
            max_rounds=p["max_rounds"] or None,
            episode=p["episode"],
        )
    except ValueError as error:  # in the names and values of the OpenSpiel parameters
        text = str(error).replace("num_players", "players").replace(" or None", " or 0 (none)")
        raise ValueError(f"{SHORT_NAME}: {text.replace('both be None', 'both be 0')}") from None
    return config, p["reward"]


def _max_rounds(config: GameConfig) -> int:
    """An upper bound on the rounds of a game: every round hands out at least one bullhead (10 cards per seat
    do not fit in 4 rows without a full row or a low card), so some total reaches the end score within
    ``players * end_score`` rounds (R12)."""
    if config.episode == "round":
        return 1
    bounds = [] if config.max_rounds is None else [config.max_rounds]
    if config.end_score is not None:
        bounds.append(config.num_players * (config.end_score + 1))
    return min(bounds)


class _Shared:
    """An immutable value that ``copy.deepcopy`` shares instead of copying: OpenSpiel clones a Python state by
    deep-copying its ``__dict__``, and engine states and configs never change in place."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __deepcopy__(self, memo: dict[int, Any]) -> _Shared:
        return self

    def __getstate__(self) -> tuple[Any]:
        return (self.value,)

    def __setstate__(self, state: tuple[Any]) -> None:
        (self.value,) = state


_DISCARD_RNG = np.random.default_rng(0)
"""Passed to :func:`engine.step` when a round ends: the engine deals the next round at once, and this state
keeps only its totals and round index, replacing the deal by chance nodes."""


class SixNimmtGame(pyspiel.Game):
    """The OpenSpiel game ``python_sixnimmt`` (parameters in the module docstring).

    ``num_distinct_actions`` is 108 (cards ``0..103``, rows ``104..107``); ``max_chance_outcomes`` 104.

    Raises:
        ValueError: for a bad parameter (see :func:`config_of`).
    """

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        params = dict(params or {})
        self.config, self.reward = config_of(params)
        config = self.config
        n = config.num_players
        bound = float(_DECK_BULLHEADS * _max_rounds(config))
        if config.end_score is not None and config.episode == "game":
            last = config.end_score - (1 if config.end_rule == "at_least" else 0)
            bound = min(bound, float(last + _DECK_BULLHEADS))
        relative = self.reward == "relative"
        decisions = HAND_SIZE * (2 + (n if config.variant == "logic" else 0))  # selections, row choices, picks
        super().__init__(
            _ZERO_SUM_TYPE if relative else _GAME_TYPE,
            pyspiel.GameInfo(
                num_distinct_actions=ROW_ACTION + NUM_ROWS,
                max_chance_outcomes=NUM_CARDS,
                num_players=n,
                min_utility=-bound,
                max_utility=bound if relative else 0.0,
                utility_sum=0.0 if relative else None,
                max_game_length=decisions * _max_rounds(config),
            ),
            {**_DEFAULTS, **params},
        )

    def new_initial_state(self) -> SixNimmtState:
        """The start of a game: the first deal's chance node (the logic variant: the first draft pick)."""
        return SixNimmtState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: Mapping[str, Any] | None = None
    ) -> SixNimmtObserver:
        """The observer of ``iig_obs_type`` (default: the observation; ``perfect_recall=True``: the
        information state). Only the observing seat's private information is ever included."""
        return SixNimmtObserver(iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False), params)


class SixNimmtState(pyspiel.State):
    """One position of ``python_sixnimmt``: an engine state plus the deal in progress and the public record. The
    attributes are read-only for users.

    Attributes:
        engine_state: the :class:`~sixnimmt_env.rules.engine.State` being played; during a deal, ``None`` (the
            first deal) or a state with empty hands and rows holding the new round's totals and round index.
        dealt: the cards dealt so far in a deal in progress, in slot order, else ``None``.
    """

    def __init__(self, game: SixNimmtGame) -> None:
        super().__init__(game)
        config = game.config
        self._config = _Shared(config)
        self._reward = game.reward
        n = config.num_players
        self._rewards = [0.0] * n
        self._returns = [0.0] * n
        self._plays: tuple[tuple[int, ...], ...] = ()  # this round: the cards revealed per turn, by seat
        self._taken: tuple[int, ...] = ()  # this round: the row the turn's low card took, -1 for none
        self._events: tuple[str, ...] = ()  # public events of the whole game (information-state strings)
        self._own: tuple[tuple[tuple[int, ...], ...], ...] = ()  # per round: every seat's hand after the deal
        if config.variant == "logic":  # V2: no shuffle, the draft starts at once
            self._state = _Shared(engine.new_game(config, _DISCARD_RNG))
            self.dealt: tuple[int, ...] | None = None
            self._start_round()
        else:
            self._state = _Shared(None)
            self.dealt = ()

    # ------------------------------------------------------------------ OpenSpiel API

    @property
    def engine_state(self) -> State | None:
        """The wrapped engine state (see the class docstring)."""
        return self._state.value

    def _playing(self) -> State:
        """The engine state outside a deal, where it is never ``None``."""
        s = self._state.value
        if s is None:
            raise ValueError(f"{SHORT_NAME}: no engine state during the first deal")
        return s

    def current_player(self) -> int:
        """``CHANCE`` during a deal, ``SIMULTANEOUS`` for the card choice, the chooser for a row choice or a
        draft pick, ``TERMINAL`` once the game (or the round, ``episode="round"``) is over."""
        if self.dealt is not None:
            return int(pyspiel.PlayerId.CHANCE)
        s = self._state.value
        if s.phase == SELECT:
            return int(pyspiel.PlayerId.SIMULTANEOUS)
        if s.phase == DONE:
            return int(pyspiel.PlayerId.TERMINAL)
        return s.chooser

    def _legal_actions(self, player: int) -> list[int]:
        """The engine's legal actions of ``player`` (:func:`sixnimmt_env.rules.engine.legal_actions`), without the
        no-op: a seat with no decision has no legal action."""
        actions = engine.legal_actions(self._state.value, player)
        return [] if actions == (NOOP,) else list(actions)

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The undealt cards (action ``card - 1``), each with the same probability (R3, R14)."""
        dealt = set(self.dealt or ())
        left = [c - 1 for c in range(1, self._config.value.deck_size + 1) if c not in dealt]
        p = 1.0 / len(left)
        return [(a, p) for a in left]

    def _apply_action(self, action: int) -> None:
        """Deal one card (chance), or apply the chooser's row choice (R9) or draft pick (V2) through
        :func:`sixnimmt_env.rules.engine.step`; the engine raises ``IllegalActionError`` for an illegal action."""
        if self.dealt is not None:
            self._deal(self.dealt, int(action))
            return
        s = self._state.value
        joint = [NOOP] * len(s.hands)
        joint[s.chooser] = int(action)
        self._step(joint)

    def _apply_actions(self, actions: Sequence[int]) -> None:
        """Apply the card choice of every seat (R5-R9) through :func:`sixnimmt_env.rules.engine.step`."""
        s = self._state.value
        if s.phase != SELECT:  # a simultaneous-move caller (e.g. rl_environment) at a sequential node
            self._apply_action(actions[s.chooser])
            return
        self._step([int(a) for a in actions])

    def _action_to_string(self, player: int, action: int) -> str:
        """``"deal 17"``, ``"play 17"``, ``"take row 2"`` or ``"draft 17"``."""
        if player == pyspiel.PlayerId.CHANCE:
            return f"deal {action + 1}"
        if action >= ROW_ACTION:
            return f"take row {action - ROW_ACTION}"
        s = self._state.value
        return f"draft {action + 1}" if s is not None and s.phase == DRAFT else f"play {action + 1}"

    def is_terminal(self) -> bool:
        """Whether the game (or the round, ``episode="round"``) is over (R12)."""
        s = self._state.value
        return self.dealt is None and s.phase == DONE

    def rewards(self) -> list[float]:
        """Each seat's reward for the last decision: a chance move (a deal) keeps it, as OpenSpiel sums the
        rewards seen at decision nodes and at the end."""
        return list(self._rewards)

    def returns(self) -> list[float]:
        """Each seat's rewards summed over the game so far: minus its bullheads ("penalty") or the others'
        mean bullheads minus its own ("relative")."""
        return list(self._returns)

    def __str__(self) -> str:
        s = self._state.value
        if self.dealt is not None:
            return f"dealing round {0 if s is None else s.round}: {' '.join(map(str, self.dealt))}"
        return _table_text(s)

    # ------------------------------------------------------------------ moves

    def _deal(self, dealt: tuple[int, ...], action: int) -> None:
        """Deal card ``action + 1`` after the cards ``dealt`` (:attr:`dealt`, a deal in progress)."""
        config = self._config.value
        card = action + 1
        if not 1 <= card <= config.deck_size or card in dealt:
            legal = [a for a, _ in self.chance_outcomes()]
            raise ValueError(f"{SHORT_NAME}: chance outcome {action} is not an undealt card; legal: {legal}")
        self.dealt = dealt = (*dealt, card)
        n = config.num_players
        if len(dealt) < n * HAND_SIZE + NUM_ROWS:
            return
        before = self._state.value
        totals = None if before is None else before.totals
        round_index = 0 if before is None else before.round
        self._state = _Shared(engine.deal_round(config, dealt, totals, round_index))  # R3: in deal order
        self.dealt = None
        self._start_round()

    def _start_round(self) -> None:
        s = self._state.value
        self._plays, self._taken = (), ()
        self._own = (*self._own, s.hands)
        if s.phase == SELECT:
            rows = " ".join(str(r[0]) for r in s.rows)
            self._events = (*self._events, f"round {s.round}: rows {rows}")
        else:
            self._events = (*self._events, f"round {s.round}: draft from seat {s.chooser}")

    def _step(self, joint: list[int]) -> None:
        s = self._state.value
        new, penalties = engine.step(s, joint, _DISCARD_RNG)
        r = rewards(penalties, self._reward)
        self._rewards = r
        self._returns = [a + b for a, b in zip(self._returns, r, strict=True)]
        if s.phase == SELECT and new.phase == CHOOSE_ROW:  # R9a: the low card's owner chooses next
            self._events = (*self._events, "plays " + " ".join(map(str, new.revealed)))
        elif s.phase == SELECT:
            self._events = (*self._events, "plays " + " ".join(map(str, _joint_cards(joint))))
            self._record_turn(_joint_cards(joint))
        elif s.phase == CHOOSE_ROW:
            row = joint[s.chooser] - ROW_ACTION
            self._events = (*self._events, f"seat {s.chooser} takes row {row}")
            self._record_turn(s.revealed, row)
        else:
            self._events = (*self._events, f"seat {s.chooser} drafts {joint[s.chooser] + 1}")
        if new.round != s.round and new.phase != DONE:  # the round ended and the game goes on
            if new.phase == DRAFT:  # V2: the next draft needs no chance node
                self._state = _Shared(new)
                self._start_round()
            else:
                self._state = _Shared(new._replace(hands=((),) * len(new.hands), rows=(), stock=()))
                self.dealt = ()
                self._plays, self._taken = (), ()
            return
        self._state = _Shared(new)
        if s.phase == DRAFT and new.phase == SELECT:  # V2: the draft is over, the 4 cards left start the rows
            rows = " ".join(str(r[0]) for r in new.rows)
            self._events = (*self._events, f"rows {rows}")
            self._own = (*self._own[:-1], new.hands)

    def _record_turn(self, cards: Sequence[int], row: int = -1) -> None:
        """Add a finished turn to this round's record: the cards revealed by seat, the row a low card took."""
        self._plays, self._taken = (*self._plays, tuple(cards)), (*self._taken, row)

    # ------------------------------------------------------------------ views for observers

    def public_events(self) -> tuple[str, ...]:
        """Every public event of the game so far, oldest first (rows dealt, cards revealed, rows taken, picks)."""
        return self._events

    def own_hands(self, seat: int) -> tuple[tuple[int, ...], ...]:
        """``seat``'s hand at the start of play of each round so far (private to that seat)."""
        return tuple(hands[seat] for hands in self._own)


def _joint_cards(joint: Sequence[int]) -> tuple[int, ...]:
    """The cards of a joint card-choice action (action ``a`` is card ``a + 1``)."""
    return tuple(a + 1 for a in joint)


def _cards(cards: Sequence[int]) -> str:
    return " ".join(map(str, cards)) or "-"


def _table_text(s: State) -> str:
    """The public table of an engine state, one line (rows, totals, phase)."""
    rows = " | ".join(_cards(r) for r in s.rows) or "-"
    return (
        f"round {s.round} turn {s.turn} phase {s.phase} chooser {s.chooser} rows [{rows}] "
        f"totals {_cards(s.totals)} revealed {_cards(s.revealed)} display [{_cards(s.display)}]"
    )


class SixNimmtObserver:
    """The PyObserver of ``python_sixnimmt`` (the observation and information-state tensors and strings).

    ``tensor`` is one flat ``float32`` vector; ``dict`` maps the name of each piece to its view in it
    (:data:`sixnimmt_env.observation.PIECES`, then for the information state ``plays`` of shape ``(10, 10)``
    and ``rows_taken`` of shape ``(10, 4)``). Only the observing seat's hand is ever written (R4, E4).

    Raises:
        ValueError: for observer parameters (none are supported) or an observation type that asks for
            other seats' private information.
    """

    def __init__(self, iig_obs_type: pyspiel.IIGObservationType, params: Mapping[str, Any] | None) -> None:
        if params:
            raise ValueError(f"{SHORT_NAME} observer: parameters are not supported, got {dict(params)}")
        if iig_obs_type.private_info == pyspiel.PrivateInfoType.ALL_PLAYERS:
            raise ValueError(f"{SHORT_NAME} observer: private_info=ALL_PLAYERS is not supported (hands are private)")
        self.perfect_recall = bool(iig_obs_type.perfect_recall)
        self.private = iig_obs_type.private_info == pyspiel.PrivateInfoType.SINGLE_PLAYER
        pieces = list(observation.PIECES) + (list(_TURN_PIECES) if self.perfect_recall else [])
        self.tensor = np.zeros(sum(size for _, size in pieces), np.float32)
        self.dict: dict[str, np.ndarray] = {}
        start = 0
        for name, size in pieces:
            view = self.tensor[start : start + size]
            if name == "rows":
                view = view.reshape(NUM_ROWS, engine.ROW_LIMIT)
            elif name == "plays":
                view = view.reshape(HAND_SIZE, observation.MAX_SEATS)
            elif name == "rows_taken":
                view = view.reshape(HAND_SIZE, NUM_ROWS)
            self.dict[name] = view
            start += size

    def set_from(self, state: SixNimmtState, player: int) -> None:
        """Write ``player``'s tensor of ``state`` into :attr:`tensor`."""
        obs = self.tensor[: observation.OBS_SIZE]
        if state.dealt is not None:
            _encode_deal(state, state.dealt, player, obs)
        else:
            observation.encode(state._playing(), player, out=obs)
        if not self.private:
            observation.pieces(obs)["hand"][:] = 0.0
        if self.perfect_recall:
            self.tensor[observation.OBS_SIZE :] = 0.0
            n = len(state.returns())
            for t, cards in enumerate(state._plays):
                for k in range(n):
                    self.dict["plays"][t, k] = cards[(player + k) % n] / observation.CARD_SCALE
            for t, row in enumerate(state._taken):
                if row >= 0:
                    self.dict["rows_taken"][t, row] = 1.0

    def string_from(self, state: SixNimmtState, player: int) -> str:
        """``player``'s view as text; with perfect recall also its hands of every round and the public events."""
        s = state.engine_state
        if state.dealt is not None:
            config = state._config.value
            own = state.dealt[player * HAND_SIZE : (player + 1) * HAND_SIZE]
            rows = state.dealt[config.num_players * HAND_SIZE :]
            round_index = 0 if s is None else s.round
            totals = (0,) * config.num_players if s is None else s.totals
            text = f"p{player} dealing round {round_index} rows [{_cards(rows)}] totals {_cards(totals)}"
            hand = own
        else:
            s = state._playing()
            text = f"p{player} " + _table_text(s) + f" piles [{' | '.join(_cards(p) for p in s.piles)}]"
            text += f" drafted [{' | '.join(_cards(p) for p in s.drafted)}]"
            hand = s.hands[player]
        if self.private:
            text += f" hand [{_cards(hand)}]"
        if self.perfect_recall:
            if self.private:
                text += " own hands " + " / ".join(_cards(h) for h in state.own_hands(player))
            text += " events: " + "; ".join(state.public_events())
        return text


def _encode_deal(state: SixNimmtState, dealt: tuple[int, ...], seat: int, out: np.ndarray) -> None:
    """The observation during a deal (``dealt``: ``state.dealt``): the cards dealt so far to ``seat`` and to the
    rows, the totals, the round and the seats (the phase one-hot stays 0)."""
    config = state._config.value
    n = config.num_players
    out[:] = 0.0
    v = observation.pieces(out)
    for c in dealt[seat * HAND_SIZE : (seat + 1) * HAND_SIZE]:
        v["hand"][c - 1] = 1.0
    for r, c in enumerate(dealt[n * HAND_SIZE :]):
        v["rows"][r * engine.ROW_LIMIT] = c / observation.CARD_SCALE
        v["row_lengths"][r] = 1 / engine.ROW_LIMIT
        v["row_ends"][r] = c / observation.CARD_SCALE
        v["row_bullheads"][r] = engine.BULLHEADS[c] / observation.BULLHEAD_ROW_SCALE
        v["seen"][c - 1] = 1.0
    before = state.engine_state
    for k in range(n):
        v["seat_present"][k] = 1.0
        if before is not None:
            v["totals"][k] = before.totals[(seat + k) % n] / observation.SCORE_SCALE
    v["round"][0] = (0 if before is None else before.round) / 10.0
    v["num_players"][0] = n / 10.0


pyspiel.register_game(_GAME_TYPE, SixNimmtGame)


# --------------------------------------------------------------------------- turn-based form, ISMCTS, bots


def simultaneous_state(state: pyspiel.State) -> tuple[SixNimmtState, list[int]]:
    """The ``python_sixnimmt`` state behind a state of the game or of its turn-based form.

    For a state of ``pyspiel.convert_to_turn_based(game)``, its history is replayed on the simultaneous
    game: a card choice is applied once every seat has chosen.

    Returns:
        ``(state, pending)``: the simultaneous state and the cards (actions) chosen so far, by seats
        ``0, 1, ...``, in a card choice still in progress (not yet applied; empty for a simultaneous state).

    Raises:
        ValueError: for a state of another game.
    """
    if isinstance(state, SixNimmtState):
        return state, []
    game = state.get_game()
    params = game.get_parameters().get("game")
    if not isinstance(params, dict) or params.get("name") != SHORT_NAME:
        raise ValueError(f"expected a state of {SHORT_NAME!r} or of its turn-based form, got game {game}")
    inner = SixNimmtGame({k: v for k, v in params.items() if k != "name"})
    return _replay(inner, state.history())


def _replay(game: SixNimmtGame, history: Sequence[int]) -> tuple[SixNimmtState, list[int]]:
    """Apply a turn-based history to a new simultaneous state; return it and the pending card choices."""
    sim = game.new_initial_state()
    n = game.config.num_players
    i = 0
    while i < len(history):
        if sim.current_player() == pyspiel.PlayerId.SIMULTANEOUS:
            if len(history) - i < n:
                return sim, list(history[i:])
            sim.apply_actions(list(history[i : i + n]))
            i += n
        else:
            sim.apply_action(history[i])
            i += 1
    return sim, []


def resampler(seed: int | None = None) -> Callable[[pyspiel.State, int], pyspiel.State]:
    """A world sampler for OpenSpiel's Python ``ISMCTSBot`` on the turn-based game (``bot.set_resampler``).

    Given a turn-based state and the seat to move, it returns a turn-based state with the same information
    for that seat: the other seats' hands and the unused stock of the current round are redealt at random
    among themselves (the cards they revealed stay theirs), and the cards other seats chose in the card
    choice in progress are redrawn from their new hands. The history before this round is kept.

    Args:
        seed: seeds the ``numpy.random.Generator`` it draws from.
    """
    rng = np.random.default_rng(seed)

    def resample(state: pyspiel.State, player: int) -> pyspiel.State:
        sim, pending = simultaneous_state(state)
        s = sim._playing()
        config = sim._config.value
        history = list(state.history())
        hands = [list(h) for h in s.hands]
        if config.variant != "logic":  # R4: the others' hands and the stock are unknown to `player`
            pool = [c for seat, h in enumerate(s.hands) if seat != player for c in h] + list(s.stock)
            rng.shuffle(pool)
            start = _last_deal_start(state)
            slots = history[start : start + config.num_players * HAND_SIZE]
            for seat in range(config.num_players):
                if seat == player:
                    continue
                k = len(s.hands[seat])
                hands[seat], pool = sorted(pool[:k]), pool[k:]
                played = [a for a in slots[seat * HAND_SIZE : (seat + 1) * HAND_SIZE] if a + 1 not in s.hands[seat]]
                for j, a in enumerate(played + [c - 1 for c in hands[seat]]):
                    history[start + seat * HAND_SIZE + j] = a
        cut = len(history) - len(pending)
        for seat in range(len(pending)):
            history[cut + seat] = pending[seat] if seat == player else int(rng.choice(hands[seat])) - 1
        new = state.get_game().new_initial_state()
        for a in history:
            new.apply_action(a)
        return new

    return resample


def _last_deal_start(state: pyspiel.State) -> int:
    """Index in ``state.history()`` of the first card of the current round's deal (a run of chance moves)."""
    players = [pa.player for pa in state.full_history()]
    end = max(i for i, p in enumerate(players) if p == pyspiel.PlayerId.CHANCE)
    start = end
    while start > 0 and players[start - 1] == pyspiel.PlayerId.CHANCE:
        start -= 1
    return start


def play(state: pyspiel.State, bots: Sequence[pyspiel.Bot], rng: np.random.RandomState) -> list[float]:
    """Play ``state`` to its end with one bot per seat; return the returns (bullheads, see the module docstring).

    Like OpenSpiel's ``evaluate_bots`` for the turn-based form, but it asks nothing of a bot besides ``step``
    (OpenSpiel's Python ``ISMCTSBot`` has no ``restart_at``) and checks every action before applying it. Chance
    outcomes are drawn from ``rng``. ``state`` is advanced in place.

    Raises:
        ValueError: a bot chose an illegal action (naming the seat, the action and the legal actions).
    """
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
            continue
        seats = range(len(bots)) if state.is_simultaneous_node() else [state.current_player()]
        actions = []
        for seat in seats:
            legal = state.legal_actions(seat)
            action = int(bots[seat].step(state)) if legal else 0
            if legal and action not in legal:
                raise ValueError(f"the bot of seat {seat} chose action {action}, not legal; legal actions: {legal}")
            actions.append(action)
        if state.is_simultaneous_node():
            state.apply_actions(actions)
        else:
            state.apply_action(actions[0])
    return list(state.returns())


class AgentBot(pyspiel.Bot):
    """One of our agents (any spec of :func:`sixnimmt_env.agents.make_agent`, ``champion`` included) as a
    ``pyspiel.Bot`` for one seat of ``python_sixnimmt`` or of its turn-based form.

    ``step(state)`` asks the agent for its action on the seat's view (:func:`sixnimmt_env.rules.engine.view`);
    OpenSpiel's ``evaluate_bots`` calls it for every seat at a simultaneous node.

    Args:
        agent: an agent spec (``"greedy"``, ``"mc:64"``, ``"champion"``, ...) or an :class:`Agent`.
        player_id: the seat it plays, ``0..players-1``.
        seed: seeds the ``numpy.random.Generator`` given to the agent.

    Raises:
        ValueError: for an unknown agent spec (naming it and the known specs) or a negative ``player_id``.
    """

    def __init__(self, agent: str | Agent, player_id: int, seed: int | None = None) -> None:
        super().__init__()
        if isinstance(player_id, bool) or not isinstance(player_id, int) or player_id < 0:
            raise ValueError(f"AgentBot: player_id must be a seat 0..9, got {player_id!r}")
        self.agent = make_agent(agent) if isinstance(agent, str) else agent
        self.player_id = player_id
        self._rng = np.random.default_rng(seed)

    def step(self, state: pyspiel.State) -> int:
        """The agent's action for its seat in ``state`` (a decision node where the seat has legal actions).

        Raises:
            ValueError: the seat has no decision in ``state`` (naming the seat and the node).
        """
        sim, _ = simultaneous_state(state)
        if sim.dealt is not None or sim.is_terminal() or not sim.legal_actions(self.player_id):
            raise ValueError(f"AgentBot({self.agent!r}): seat {self.player_id} has no decision in {sim}")
        return int(self.agent.act(engine.view(sim._playing(), self.player_id), self._rng))

    def restart_at(self, state: pyspiel.State) -> None:
        """Nothing to reset: the agents decide on the current view only."""

    def inform_action(self, state: pyspiel.State, player_id: int, action: int) -> None:
        """Ignored (the agents read the view)."""

    def inform_actions(self, state: pyspiel.State, actions: Sequence[int]) -> None:
        """Ignored (the agents read the view)."""
