"""One game at the play table: a person against agents, agents watched, or a recorded game replayed.

:class:`Table` is free of any web or terminal code; the server (:mod:`sixnimmt_env.play.server`) and the
terminal mode (:mod:`sixnimmt_env.play.tui`) are thin shells around it. Every decision goes through the engine
(:func:`sixnimmt_env.rules.engine.step`, which validates it); the person's action is first checked against
:func:`sixnimmt_env.rules.engine.legal_actions`, so a rejected request changes nothing, not even an agent's random
stream. Each change of the game raises :attr:`Table.version`; a request made on an older version is stale and
rejected, so a double click or a request from an out-of-date page cannot play twice.

A turn is told as the engine played it: the cards revealed (R5), then placed one at a time in ascending order
(R6): which row each joins (R7), which sixth card takes a full row (R8), which low card takes the chosen row
(R9). :func:`narrate_turn` takes these placements from the engine's turn resolver
(:func:`sixnimmt_env.rules.engine.resolve_turn`, the one :func:`~sixnimmt_env.rules.engine.step` places the turn
with), and the table checks them against the rows and bullheads of the step it books.

Seeds: the game with index ``k`` of a table seeded ``S`` deals from ``numpy.random.default_rng([S, k])`` (the
engine's shuffles); its agents draw from ``default_rng([S, k, 1])`` and the coach from
``default_rng([S, k, 2])``. Without a seed the table draws a fresh ``S`` (63 random bits, :mod:`secrets`) and
keeps it in :attr:`Table.seed`, so every game can be played again.

A game is saved as its :meth:`Table.record` (the ``sixnimmt-game`` record of :mod:`sixnimmt_env.records`, the
round in progress included) and :meth:`Table.rng_states` (the agents' and the coach's random streams);
``Table(..., moves=..., rng_states=...)`` continues it exactly: the deal stream is re-drawn by re-playing the
recorded moves through the engine from ``default_rng([S, k])``, the two other streams are set to the saved states
(the agents' decisions, which drew from them, are not asked again).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sixnimmt_env.agents import Agent, make_agent
from sixnimmt_env.play.coach import CoachAdvice, advise
from sixnimmt_env.play.settings import HUMAN
from sixnimmt_env.records import GameRecord, GameRecorder
from sixnimmt_env.rules.engine import (
    BULLHEADS,
    CHOOSE_ROW,
    DONE,
    DRAFT,
    NOOP,
    ROW_ACTION,
    SELECT,
    GameConfig,
    IllegalActionError,
    Placement,
    State,
    legal_actions,
    new_game,
    resolve_turn,
    row_bullheads,
    step,
    view,
)

__all__ = ["Placement", "Table", "TableError", "narrate_turn"]

LOG_LIMIT = 400
"""Lines of the game log kept."""


class TableError(ValueError):
    """A request the table rejects; nothing changed.

    Attributes:
        status: the HTTP status the server answers with: 400 (a malformed or illegal request), 404 (an unknown
            game), 409 (a stale request, another tab, a finished game, not this seat's decision).
        code: a short name of the reason: ``"illegal"``, ``"bad_request"``, ``"stale"``, ``"over"``,
            ``"not_yours"``, ``"other_tab"``, ``"not_found"``.
    """

    def __init__(self, message: str, status: int = 400, code: str = "bad_request") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def narrate_turn(rows: Sequence[Sequence[int]], cards: Sequence[int], low_row: int | None = None) -> list[Placement]:
    """Place one turn's revealed cards one at a time in ascending order and say what each did (R6-R9).

    The placements of the engine's turn resolver, :func:`sixnimmt_env.rules.engine.resolve_turn`; each carries the rows
    after it (its ``rows``), for drawing the turn card by card.

    Args:
        rows: the 4 rows at the start of the turn.
        cards: the card each seat revealed (seat order).
        low_row: the row the lowest card takes if it is lower than every row's last card (R9: the owner's
            choice); ``None`` takes :func:`~sixnimmt_env.rules.engine.cheapest_row` (R9b ``"cheapest"``).

    Returns:
        One :class:`~sixnimmt_env.rules.engine.Placement` per card, in the order they are placed.
    """
    return list(resolve_turn(rows, cards, low_row).placements)


def _bullheads_text(count: int) -> str:
    return f"{count} bullhead" if count == 1 else f"{count} bullheads"


def _describe(p: Placement, names: Sequence[str]) -> str:
    who = names[p.seat]
    if p.kind == "placed":
        return f"{who}: {p.card} joins row {p.row + 1}"
    taken = " ".join(map(str, p.taken))
    if p.kind == "full":
        return f"{who}: {p.card} is the sixth card of row {p.row + 1}, takes {taken} ({_bullheads_text(p.bullheads)})"
    return f"{who}: {p.card} is lower than every row, takes row {p.row + 1}: {taken} ({_bullheads_text(p.bullheads)})"


def _seat_names(specs: Sequence[str]) -> list[str]:
    """``You`` for the person, else the spec; a spec used twice is numbered (``greedy 1``, ``greedy 2``)."""
    names = []
    for i, spec in enumerate(specs):
        if spec == HUMAN:
            names.append("You")
            continue
        label = spec.rsplit("/", 1)[-1] if spec.startswith(("ppo:", "ppo-sample:")) else spec
        if label != spec:
            label = f"{spec.partition(':')[0]}:{label}"
        same = [j for j, s in enumerate(specs) if s == spec]
        names.append(f"{label} {same.index(i) + 1}" if len(same) > 1 else label)
    return names


class Table:
    """One game of the play table (thread-safe: every public method holds the table's lock).

    Args:
        config: the rules in force.
        specs: one entry per seat: ``"human"`` for the person (at most one seat), else an agent spec that
            :func:`sixnimmt_env.agents.make_agent` accepts (``greedy``, ``mc:64``, ``ppo:PATH``, ...).
        seed: the table's seed (see the module docstring), or ``None`` for fresh randomness.
        index: the game's index under that seed.
        coach_samples: worlds the coach searches (``mc:N`` with this N).
        agents: already built agents by seat (optional, e.g. to share a loaded checkpoint between games);
            the others are built from ``specs``.
        start: a position to start from (e.g. :func:`~sixnimmt_env.rules.engine.from_position`) instead of a new deal;
            its config must be ``config``.
        moves: joint actions already played in this game (engine encoding, one list per engine step, e.g. a
            saved :meth:`record`'s): re-played through the engine from the deal before anyone is asked.
        rng_states: the saved :meth:`rng_states` to continue the agents' and the coach's streams from.

    Attributes:
        seed: the seed the game's streams derive from (drawn when ``seed`` is ``None``).
        index: the game's index under ``seed``.
        lock: the table's lock (re-entrant): held by every public method; hold it to act and save as one step.

    Raises:
        ValueError: a wrong number of specs, two human seats, an unknown agent spec (the message names it), a
            move the engine refuses, ``rng_states`` of the wrong form.
    """

    def __init__(
        self,
        config: GameConfig,
        specs: Sequence[str],
        *,
        seed: int | None = None,
        index: int = 0,
        coach_samples: int = 1000,
        agents: Mapping[int, Agent] | None = None,
        start: State | None = None,
        moves: Sequence[Sequence[int]] = (),
        rng_states: Mapping[str, Any] | None = None,
    ) -> None:
        n = config.num_players
        specs = [s.strip() for s in specs]
        if len(specs) != n:
            raise ValueError(f"expected {n} seats (num_players={n}), got {len(specs)}: {specs}")
        humans = [i for i, s in enumerate(specs) if s == HUMAN]
        if len(humans) > 1:
            raise ValueError(f"at most one seat can be the person ('human'), got seats {humans}")
        self.config = config
        self.specs = tuple(specs)
        self.names = _seat_names(specs)
        self.human: int | None = humans[0] if humans else None
        self.mode = "play" if self.human is not None else "watch"
        given = dict(agents or {})
        self.agents: dict[int, Agent] = {
            i: given[i] if i in given else make_agent(s) for i, s in enumerate(specs) if s != HUMAN
        }
        self.coach_samples = int(coach_samples)
        self.seed = secrets.randbits(63) if seed is None else int(seed)
        self.index = int(index)
        entropy = [self.seed, self.index]
        self._deal_rng = np.random.default_rng(entropy)
        self._agent_rng = np.random.default_rng([*entropy, 1])
        self._coach_rng = np.random.default_rng([*entropy, 2])
        if start is not None and start.config != config:
            raise ValueError(f"the start position's config {start.config} is not the table's {config}")
        self.state: State = new_game(config, self._deal_rng) if start is None else start
        self.version = 0
        self.turns = 0
        self.log: list[str] = []
        self.last_turn: dict[str, Any] | None = None
        self.rounds: list[dict[str, Any]] = []
        self._pending: tuple[tuple[tuple[int, ...], ...], tuple[int, ...]] | None = None
        self._coach: tuple[int, CoachAdvice | None] | None = None
        self._recorder = GameRecorder(config, self.specs, self.seed, self.index)
        self.lock = threading.RLock()
        self._note_round_start()
        for move in moves:
            self._apply([int(a) for a in move])
        if rng_states is not None:
            try:
                self._agent_rng.bit_generator.state = rng_states["agents"]
                self._coach_rng.bit_generator.state = rng_states["coach"]
            except (KeyError, TypeError, ValueError) as e:
                raise ValueError(f"rng_states must be Table.rng_states() of a saved game: {e!r}") from None
        self._run_agents()

    # ----------------------------------------------------------------------------------------- requests

    def act(self, version: object, kind: object, value: object) -> None:
        """The person's decision: ``kind`` ``"card"`` (play card ``value``, R5), ``"row"`` (take row ``value``
        0..3 with a low card, R9) or ``"draft"`` (take card ``value`` from the display, V2).

        The agents then play until the person has a decision again (or the game is over).

        Raises:
            TableError: (nothing changed) a stale ``version``, a finished game, a table without a person, a
                decision that is not the person's now, a malformed ``kind``/``value``, or an action the engine
                does not allow (the message lists what is allowed).
        """
        with self.lock:
            self._check_version(version)
            if self.human is None:
                raise TableError("nobody plays at this table: it is watched (use advance)", 409, "not_yours")
            seat = self.human
            state = self.state
            expected = {SELECT: "card", CHOOSE_ROW: "row", DRAFT: "draft"}[state.phase]  # not DONE: checked
            if state.phase != SELECT and state.chooser != seat:
                raise TableError(f"it is not your decision: {self.names[state.chooser]} decides now", 409, "not_yours")
            if kind != expected:
                raise TableError(f"expected a {expected!r} decision now (phase {state.phase}), got kind {kind!r}")
            if isinstance(value, bool) or not isinstance(value, int):
                raise TableError(f"{kind} must be an integer, got {value!r}")
            action = ROW_ACTION + value if kind == "row" else value - 1
            legal = legal_actions(state, seat)
            if action not in legal:
                allowed = [a - ROW_ACTION if kind == "row" else a + 1 for a in legal]
                what = {"card": "card", "row": "row", "draft": "display card"}[expected]
                raise TableError(f"{what} {value} is not allowed now; allowed: {allowed}", 400, "illegal")
            actions = self._agent_actions(skip=seat)
            actions[seat] = action
            self._apply(actions)
            self._run_agents()

    def advance(self, version: object) -> None:
        """A watched table's next move: one whole turn (every card, then a low card's row), or in the draft one
        pick by each seat (V2; fewer when the draft ends first).

        Raises:
            TableError: a stale ``version``, a finished game, or a table where a person plays.
        """
        with self.lock:
            self._check_version(version)
            if self.human is not None:
                raise TableError(
                    "a person plays at this table: the agents move when the person has decided", 409, "not_yours"
                )
            if self.state.phase == DRAFT:
                for _ in range(self.config.num_players):
                    self._apply(self._agent_actions())
                    if self.state.phase != DRAFT:
                        break
                return
            self._apply(self._agent_actions())
            if self.state.phase == CHOOSE_ROW:
                self._apply(self._agent_actions())

    def coach(self, version: object) -> CoachAdvice | None:
        """The coach's advice for the person's current decision (see :func:`sixnimmt_env.play.coach.advise`).

        Computed once per version (asking again gives the same answer); draws only from the coach's own
        random stream, so asking changes nothing in the game. ``None`` when the person has no card or row
        decision.

        Raises:
            TableError: a stale ``version``, a finished game, or a table without a person.
        """
        with self.lock:
            self._check_version(version)
            if self.human is None:
                raise TableError("the coach advises the person: nobody plays at this table", 409, "not_yours")
            if self._coach is None or self._coach[0] != self.version:
                self._coach = (self.version, advise(view(self.state, self.human), self.coach_samples, self._coach_rng))
            return self._coach[1]

    # ----------------------------------------------------------------------------------------- what is shown

    def snapshot(self) -> dict[str, Any]:
        """The table as the page shows it (plain JSON types).

        Holds the public state (rows, scores, revealed cards, placements of the last turn, the log) and the
        hand of the person only; at a watched table every hand (R4: a player's hand is private, so a person
        playing never receives another hand).
        """
        with self.lock:
            s = self.state
            n = self.config.num_players
            hands: dict[str, list[int]] = {}
            if self.human is None:
                hands = {str(i): list(h) for i, h in enumerate(s.hands)}
            else:
                hands = {str(self.human): list(s.hands[self.human])}
            decision = None
            if self.human is not None and s.phase != DONE:
                if s.phase == SELECT:
                    decision = {"kind": "card", "options": list(s.hands[self.human])}
                elif s.chooser == self.human:
                    kind = "row" if s.phase == CHOOSE_ROW else "draft"
                    options = [0, 1, 2, 3] if kind == "row" else list(s.display)
                    decision = {"kind": kind, "options": options}
            pending = None
            if s.phase == CHOOSE_ROW:
                pending = {"cards": list(s.revealed), "chooser": s.chooser}
            return {
                "version": self.version,
                "mode": self.mode,
                "config": {
                    "num_players": n,
                    "variant": self.config.variant,
                    "row_choice": self.config.row_choice,
                    "end_score": self.config.end_score,
                    "episode": self.config.episode,
                    "deck_size": self.config.deck_size,
                },
                "names": list(self.names),
                "specs": list(self.specs),
                "human": self.human,
                "phase": s.phase,
                "chooser": s.chooser,
                "round": s.round + 1,
                "turn": s.turn,
                "rows": [list(r) for r in s.rows],
                "row_bullheads": [row_bullheads(r) for r in s.rows],
                "display": list(s.display),
                "hands": hands,
                "hand_sizes": [len(h) for h in s.hands],
                "totals": list(s.totals),
                "round_penalties": list(s.round_penalties),
                "pending": pending,
                "decision": decision,
                "status": self._status(),
                "last_turn": self.last_turn,
                "turns": self.turns,
                "rounds": self.rounds,
                "ranking": self.ranking() if s.phase == DONE else None,
                "log": self.log[-80:],
            }

    def ranking(self) -> list[dict[str, Any]]:
        """Seats by total, lowest first, with their place (equal totals share a place; place 1 wins, R13)."""
        totals = self.state.totals
        order = sorted(range(len(totals)), key=lambda i: (totals[i], i))
        return [
            {"seat": i, "name": self.names[i], "total": totals[i], "place": 1 + sum(t < totals[i] for t in totals)}
            for i in order
        ]

    def record(self) -> GameRecord:
        """The game's ``sixnimmt-game`` record so far (:mod:`sixnimmt_env.records`): seed :attr:`seed`, game
        :attr:`index`, every engine step played, the round in progress included."""
        with self.lock:
            return self._recorder.record()

    def rng_states(self) -> dict[str, Any]:
        """The agents' and the coach's random streams now (``{"agents": ..., "coach": ...}``, each a
        ``numpy.random.PCG64`` state: plain JSON types), to continue the game with ``Table(rng_states=...)``."""
        with self.lock:
            return {"agents": self._agent_rng.bit_generator.state, "coach": self._coach_rng.bit_generator.state}

    def _status(self) -> str:
        s = self.state
        if s.phase == DONE:
            best = [r["name"] for r in self.ranking() if r["place"] == 1]
            verb = "win" if best == ["You"] else "wins" if len(best) == 1 else "share the win"
            return f"Game over: {' and '.join(best)} {verb}."
        if s.phase == SELECT:
            return "Pick a card to play." if self.human is not None else "Every player picks a card."
        who = self.names[s.chooser]
        if s.phase == CHOOSE_ROW:
            card = s.revealed[s.chooser]
            if s.chooser == self.human:
                return f"Your {card} is lower than every row: choose the row you take."
            return f"{who}'s {card} is lower than every row: {who} chooses a row."
        return "Take a card from the display." if s.chooser == self.human else f"{who} takes a card from the display."

    # ----------------------------------------------------------------------------------------- internals

    def _check_version(self, version: object) -> None:
        if isinstance(version, bool) or not isinstance(version, int):
            raise TableError(f"version must be an integer, got {version!r}")
        if self.state.phase == DONE:
            raise TableError("the game is over: start a new one", 409, "over")
        if version != self.version:
            raise TableError(
                f"stale request: it was made on move {version}, the table is at move {self.version}; "
                "the page now shows the current table",
                409,
                "stale",
            )

    def _agent_actions(self, skip: int | None = None) -> list[int]:
        """Every agent's action in the current state (the no-op for seats without a decision)."""
        s = self.state
        actions = [NOOP] * self.config.num_players
        seats = range(self.config.num_players) if s.phase == SELECT else (s.chooser,)
        for seat in seats:
            if seat != skip:
                actions[seat] = int(self.agents[seat].act(view(s, seat), self._agent_rng))
        return actions

    def _run_agents(self) -> None:
        """Let the agents decide until the person has a decision (row choice or draft pick) or the game ends."""
        if self.human is None:
            return
        while self.state.phase in (CHOOSE_ROW, DRAFT) and self.state.chooser != self.human:
            self._apply(self._agent_actions())

    def _apply(self, actions: list[int]) -> None:
        before = self.state
        try:
            after, penalties = step(before, actions, self._deal_rng)
        except IllegalActionError as e:
            who = self.specs[e.seat]
            raise IllegalActionError(e.seat, e.action, e.legal, before.phase, agent=f"agent {who}") from None
        self.observe(before, actions, after, penalties)

    def observe(self, before: State, actions: Sequence[int], after: State, penalties: Sequence[int]) -> None:
        """Book one engine step (``before`` + ``actions`` gave ``after`` and ``penalties``): log it, tell the
        turn, and raise the version. :meth:`act` and :meth:`advance` call it; a replay calls it with the
        recorded steps."""
        self._recorder.observe(before, actions, penalties, after)
        self.state = after
        self.version += 1
        self._coach = None
        if before.phase == DRAFT:
            card = actions[before.chooser] + 1
            who = self.names[before.chooser]
            self._add_log(f"{who} {'take' if before.chooser == self.human else 'takes'} {card} from the display")
            if after.phase == SELECT:
                self._add_log(f"The draft is over: the rows start with {', '.join(str(r[0]) for r in after.rows)}")
            return
        if before.phase == SELECT:
            cards = tuple(a + 1 for a in actions)
            if after.phase == CHOOSE_ROW:  # a low card waits for its owner's row choice (R9)
                self._pending = (before.rows, cards)
                self._add_log(self._reveal_line(cards))
                return
            self._finish_turn(before, before.rows, cards, None, after, penalties, before.round_penalties)
            return
        if before.phase == CHOOSE_ROW and self._pending is not None:
            rows, cards = self._pending
            self._pending = None
            low = actions[before.chooser] - ROW_ACTION
            self._finish_turn(before, rows, cards, low, after, penalties, before.round_penalties, revealed=True)

    def _reveal_line(self, cards: Sequence[int]) -> str:
        return "Revealed: " + ", ".join(f"{self.names[i]} {c}" for i, c in enumerate(cards))

    def _finish_turn(
        self,
        before: State,
        rows: tuple[tuple[int, ...], ...],
        cards: tuple[int, ...],
        low_row: int | None,
        after: State,
        penalties: Sequence[int],
        round_before: Sequence[int],
        revealed: bool = False,
    ) -> None:
        placements = narrate_turn(rows, cards, low_row)
        took = [0] * len(cards)
        for p in placements:
            took[p.seat] += p.bullheads
        if tuple(took) != tuple(penalties):  # the engine is the rule; the narration must agree with it
            raise RuntimeError(f"turn narration {took} disagrees with the engine's penalties {list(penalties)}")
        round_over = after.phase == DONE or after.round != before.round
        if after.round == before.round and placements[-1].rows != after.rows:
            raise RuntimeError(f"turn narration ends with rows {placements[-1].rows}, the engine with {after.rows}")
        if not revealed:
            self._add_log(self._reveal_line(cards))
        for p in placements:
            if p.kind != "placed":
                self._add_log(_describe(p, self.names))
        self.turns += 1
        round_pen = [a + b for a, b in zip(round_before, penalties, strict=True)]
        self.last_turn = {
            "id": self.turns,
            "round": before.round + 1,
            "turn": before.turn + 1,
            "rows_before": [list(r) for r in rows],
            "cards": list(cards),
            "placements": [
                {
                    "seat": p.seat,
                    "card": p.card,
                    "row": p.row,
                    "kind": p.kind,
                    "taken": list(p.taken),
                    "bullheads": p.bullheads,
                    "rows": [list(r) for r in p.rows],
                    "text": _describe(p, self.names),
                }
                for p in placements
            ],
            "penalties": list(penalties),
            "round_over": round_over,
            "round_penalties": round_pen,
            "totals": list(after.totals),
        }
        if round_over:
            self.rounds.append({"round": before.round + 1, "penalties": round_pen, "totals": list(after.totals)})
            summary = ", ".join(f"{self.names[i]} {p}" for i, p in enumerate(round_pen))
            self._add_log(f"Round {before.round + 1} over. Bullheads this round: {summary}")
            if after.phase == DONE:
                self._add_log(self._status())
            else:
                self._note_round_start()

    def _note_round_start(self) -> None:
        s = self.state
        if s.phase == DRAFT:
            self._add_log(f"Round {s.round + 1}: the draft starts with {self.names[s.chooser]}")
        else:
            self._add_log(f"Round {s.round + 1}: the rows start with {', '.join(str(r[0]) for r in s.rows)}")

    def _add_log(self, line: str) -> None:
        self.log.append(line)
        del self.log[:-LOG_LIMIT]


def card_bullheads() -> list[int]:
    """``[0, bullheads(1), ..., bullheads(104)]`` for the page (R2)."""
    return list(BULLHEADS)
