"""Game records: every game of an arena or evaluation run, one JSON object per line (JSON Lines).

A record holds everything needed to replay a game exactly through :mod:`sixnimmt_env.rules.engine`: the rules,
who sat where, the deal of every round and every decision. :func:`replay` re-plays it and checks that the
engine gives the recorded bullheads at every step; :func:`describe_turn` says who took which row and why
(full row, R8, or low card, R9), for printing (``python -m sixnimmt_env.records_text FILE``) or drawing.

Public API (stable; the play table's browser replay builds on it):

- :func:`write_records` ``(path, records)`` and :func:`read_records` ``(path) -> list[GameRecord]``;
- :func:`replay` ``(record) -> list[ReplayFrame]``: the engine state before and after every recorded step
  and the bullheads each seat took; a :class:`ReplayError` if a step does not match;
- :func:`describe_turn` ``(rows, cards, chosen_row) -> (list[Placement], rows_after)``: the placements of the engine's
  turn resolver (:func:`sixnimmt_env.rules.engine.resolve_turn`; :class:`~sixnimmt_env.rules.engine.Placement`);
- :class:`GameRecorder`: builds a :class:`GameRecord` while a game is played (used by the arena).

File format (``format: "sixnimmt-game"``, ``version: 1``)
----------------------------------------------------------

One game per line, UTF-8 JSON, keys in this order::

    {"format": "sixnimmt-game", "version": 1,
     "config": {"num_players": 4, "variant": "standard", "row_choice": "player", "end_score": 66,
                "end_rule": "at_least", "max_rounds": null, "episode": "round"},
     "seed": 0, "game": 17, "deal": 17,
     "agents": ["greedy", "random", "lowest", "highest"],
     "positions": [1, 2, 3, 0],
     "rounds": [
       {"round": 0,
        "display": [],
        "hands": [[3, 17, ...], ...],
        "rows": [[55], [12], [80], [101]],
        "steps": [
          {"phase": "select", "cards": [17, 40, 3, 99], "penalties": [0, 0, 0, 0]},
          {"phase": "choose_row", "seat": 2, "row": 1, "penalties": [0, 0, 1, 0]},
          ...],
        "penalties": [4, 0, 11, 2]}],
     "totals": [4, 0, 11, 2]}

==============  =============================================================================================
key             meaning
==============  =============================================================================================
``config``      every :class:`~sixnimmt_env.rules.engine.GameConfig` field (the rules, `RULES.md`)
``seed``        the run's seed (``null`` if unknown); with ``game`` and ``deal`` it names the game in its run
``game``        the game's index in its run (the agents' random stream, see :mod:`sixnimmt_env.arena`)
``deal``        the deal's index (equals ``game`` except in duplicate runs)
``agents``      the agent spec at each seat, seat 0 first
``positions``   the listed agent position (arena order) of each seat
``rounds``      one entry per round played, in order
``round``       rounds completed before this one (0-based)
``display``     logic variant (V2): the open display the round was drafted from; ``[]`` otherwise
``hands``       each seat's 10 cards (1..104) when the cards are first played: as dealt (R3), or after the
                draft in the logic variant
``rows``        the 4 starting rows (R3; the 4 cards left after the draft, V2)
``steps``       every decision in order. ``select``: ``cards[seat]`` the card each seat played (R5);
                ``choose_row``: ``seat`` chose row ``row`` 0..3 for its low card (R9); ``draft``: ``seat``
                took ``card`` from the display (V2). ``penalties[seat]``: bullheads the seat took in that
                step (R8, R9); with ``row_choice: cheapest`` a low card's row is taken within its
                ``select`` step
``penalties``   (round) bullheads each seat took in the round (R11)
``totals``      game totals per seat at the end (R12); the lowest wins (R13)
==============  =============================================================================================

Readers must reject a ``format`` other than ``"sixnimmt-game"`` and a ``version`` they do not know;
:func:`read_records` does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from sixnimmt_env.rules.engine import (
    CHOOSE_ROW,
    DONE,
    DRAFT,
    NOOP,
    NUM_ROWS,
    ROW_ACTION,
    SELECT,
    GameConfig,
    Placement,
    State,
    from_position,
    legal_actions,
    resolve_turn,
    step,
)

__all__ = [
    "FORMAT",
    "VERSION",
    "GameRecord",
    "GameRecorder",
    "Placement",
    "ReplayError",
    "ReplayFrame",
    "RoundRecord",
    "StepRecord",
    "describe_turn",
    "read_records",
    "replay",
    "write_records",
]

FORMAT = "sixnimmt-game"
"""The ``format`` tag of every record."""
VERSION = 1
"""The format version written by :func:`write_records`; the only one :func:`read_records` accepts."""


class ReplayError(ValueError):
    """A record that does not replay: names the game, the round, the step and what differs."""


@dataclass(frozen=True)
class StepRecord:
    """One recorded decision (a step of the engine).

    Attributes:
        phase: ``"select"``, ``"choose_row"`` or ``"draft"``.
        penalties: bullheads each seat took in this step (R8, R9), seat order.
        cards: ``select``: the card 1..104 each seat played (R5); else ``None``.
        seat: ``choose_row``/``draft``: the deciding seat; else ``None``.
        row: ``choose_row``: the row 0..3 the low card takes (R9); else ``None``.
        card: ``draft``: the card taken from the display (V2); else ``None``.
    """

    phase: str
    penalties: tuple[int, ...]
    cards: tuple[int, ...] | None = None
    seat: int | None = None
    row: int | None = None
    card: int | None = None

    def actions(self, num_players: int) -> list[int]:
        """The joint action (engine encoding, one per seat) of this step."""
        if self.phase == SELECT:
            return [c - 1 for c in self.cards or ()]
        actions = [NOOP] * num_players
        if self.phase == CHOOSE_ROW and self.seat is not None and self.row is not None:
            actions[self.seat] = ROW_ACTION + self.row
        elif self.phase == DRAFT and self.seat is not None and self.card is not None:
            actions[self.seat] = self.card - 1
        else:
            raise ValueError(f"a {self.phase!r} step without its seat and row or card: {self}")
        return actions

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (only the keys of its phase)."""
        out: dict[str, Any] = {"phase": self.phase}
        if self.phase == SELECT:
            out["cards"] = list(self.cards or ())
        elif self.phase == CHOOSE_ROW:
            out.update(seat=self.seat, row=self.row)
        else:
            out.update(seat=self.seat, card=self.card)
        out["penalties"] = list(self.penalties)
        return out


@dataclass(frozen=True)
class RoundRecord:
    """One round: its deal and its decisions.

    Attributes:
        round: rounds completed before this one (0-based).
        display: the open draft display (logic variant, V2), else empty.
        hands: each seat's cards when play starts (after the draft in the logic variant), ascending.
        rows: the 4 starting rows.
        steps: every decision of the round, in order.
        penalties: bullheads each seat took in the round (R11).
    """

    round: int
    display: tuple[int, ...]
    hands: tuple[tuple[int, ...], ...]
    rows: tuple[tuple[int, ...], ...]
    steps: tuple[StepRecord, ...]
    penalties: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "round": self.round,
            "display": list(self.display),
            "hands": [list(h) for h in self.hands],
            "rows": [list(r) for r in self.rows],
            "steps": [s.to_dict() for s in self.steps],
            "penalties": list(self.penalties),
        }


@dataclass(frozen=True)
class GameRecord:
    """One game (or one round with ``episode="round"``), replayable with :func:`replay`.

    Attributes:
        config: the rules in force.
        seed: the run's seed, or ``None``.
        game: the game's index in its run.
        deal: the deal's index in its run.
        agents: the agent spec at each seat.
        positions: the listed agent position of each seat (the arena's order).
        rounds: every round played.
        totals: game totals per seat in bullheads (R12).
    """

    config: GameConfig
    seed: int | None
    game: int
    deal: int
    agents: tuple[str, ...]
    positions: tuple[int, ...]
    rounds: tuple[RoundRecord, ...]
    totals: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (one line of a records file)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "config": asdict(self.config),
            "seed": self.seed,
            "game": self.game,
            "deal": self.deal,
            "agents": list(self.agents),
            "positions": list(self.positions),
            "rounds": [r.to_dict() for r in self.rounds],
            "totals": list(self.totals),
        }

    @classmethod
    def from_dict(cls, data: Any) -> GameRecord:
        """Build a record from its JSON form.

        Raises:
            ValueError: a wrong ``format`` or ``version``, a missing key or a value of the wrong kind.
        """
        if not isinstance(data, dict):
            raise ValueError(f"a game record must be a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise ValueError(f"not a game record: format is {data.get('format')!r}, expected {FORMAT!r}")
        if data.get("version") != VERSION:
            raise ValueError(f"game record version {data.get('version')!r} is not supported (only {VERSION})")
        try:
            config = GameConfig(**data["config"])
            rounds = tuple(_round_from(r) for r in data["rounds"])
            return cls(
                config=config,
                seed=None if data["seed"] is None else int(data["seed"]),
                game=int(data["game"]),
                deal=int(data["deal"]),
                agents=tuple(str(a) for a in data["agents"]),
                positions=tuple(int(p) for p in data["positions"]),
                rounds=rounds,
                totals=tuple(int(t) for t in data["totals"]),
            )
        except KeyError as e:
            raise ValueError(f"game record lacks the key {e.args[0]!r}") from None
        except (TypeError, AttributeError) as e:
            raise ValueError(f"game record has a value of the wrong kind: {e}") from None


def _ints(values: Iterable[Any]) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _round_from(data: dict[str, Any]) -> RoundRecord:
    steps = []
    for s in data["steps"]:
        phase = s["phase"]
        pen = _ints(s["penalties"])
        if phase == SELECT:
            steps.append(StepRecord(phase, pen, cards=_ints(s["cards"])))
        elif phase == CHOOSE_ROW:
            steps.append(StepRecord(phase, pen, seat=int(s["seat"]), row=int(s["row"])))
        elif phase == DRAFT:
            steps.append(StepRecord(phase, pen, seat=int(s["seat"]), card=int(s["card"])))
        else:
            raise ValueError(f"step phase must be select, choose_row or draft, got {phase!r}")
    return RoundRecord(
        round=int(data["round"]),
        display=_ints(data["display"]),
        hands=tuple(_ints(h) for h in data["hands"]),
        rows=tuple(_ints(r) for r in data["rows"]),
        steps=tuple(steps),
        penalties=_ints(data["penalties"]),
    )


# --------------------------------------------------------------------------- files


def write_records(path: str | Path, records: Iterable[GameRecord], append: bool = False) -> Path:
    """Write ``records`` to ``path``, one JSON object per line (UTF-8).

    Args:
        path: the ``.jsonl`` file.
        records: the games, in the order to write them.
        append: add to an existing file instead of replacing it.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    with path.open("a" if append else "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record.to_dict(), separators=(",", ":")) + "\n")
    return path


def read_records(path: str | Path) -> list[GameRecord]:
    """Read every game of a records file (blank lines are skipped).

    Raises:
        ValueError: naming the file and the line: not JSON, or not a valid record (see :meth:`GameRecord.from_dict`).
        OSError: the file cannot be read.
    """
    path = Path(path)
    out = []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                out.append(GameRecord.from_dict(json.loads(line)))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}, line {number}: not JSON ({e.msg})") from None
            except ValueError as e:
                raise ValueError(f"{path}, line {number}: {e}") from None
    return out


# --------------------------------------------------------------------------- recording


class GameRecorder:
    """Builds a :class:`GameRecord` from the steps of a game as it is played.

    Call :meth:`observe` after every engine step with the state before, the joint action, the penalties
    and the state after, then :meth:`finish`.

    Args:
        config: the rules in force.
        agents: the agent spec at each seat.
        seed: the run's seed (or ``None``).
        game: the game's index in its run.
        deal: the deal's index (default ``game``).
        positions: the listed position of each seat (default ``0..n-1``).
    """

    def __init__(
        self,
        config: GameConfig,
        agents: Sequence[str],
        seed: int | None,
        game: int,
        deal: int | None = None,
        positions: Sequence[int] | None = None,
    ) -> None:
        self.config = config
        self.agents = tuple(agents)
        self.seed, self.game = seed, game
        self.deal = game if deal is None else deal
        self.positions = tuple(range(config.num_players) if positions is None else positions)
        self.rounds: list[RoundRecord] = []
        self._open: dict[str, Any] | None = None
        self._totals: tuple[int, ...] = (0,) * config.num_players

    @staticmethod
    def _open_round(o: dict[str, Any]) -> RoundRecord:
        return RoundRecord(o["round"], o["display"], o["hands"], o["rows"], tuple(o["steps"]), tuple(o["penalties"]))

    def _close(self) -> None:
        if self._open is not None:
            self.rounds.append(self._open_round(self._open))
            self._open = None

    def observe(self, before: State, actions: Sequence[int], penalties: Sequence[int], after: State) -> None:
        """Record one step: ``after, penalties = step(before, actions, rng)``."""
        n = self.config.num_players
        if self._open is None or self._open["round"] != before.round:
            self._close()
            self._open = {
                "round": before.round,
                "display": tuple(before.display),
                "hands": tuple(before.hands),
                "rows": tuple(before.rows),
                "steps": [],
                "penalties": [0] * n,
            }
        o = self._open
        pen = tuple(int(p) for p in penalties)
        if before.phase == SELECT:
            o["steps"].append(StepRecord(SELECT, pen, cards=tuple(int(a) + 1 for a in actions)))
        elif before.phase == CHOOSE_ROW:
            c = before.chooser
            o["steps"].append(StepRecord(CHOOSE_ROW, pen, seat=c, row=int(actions[c]) - ROW_ACTION))
        elif before.phase == DRAFT:
            c = before.chooser
            o["steps"].append(StepRecord(DRAFT, pen, seat=c, card=int(actions[c]) + 1))
            if after.round == before.round and after.phase == SELECT:  # the draft is over: the hands and rows
                o["hands"], o["rows"] = tuple(after.hands), tuple(after.rows)
        o["penalties"] = [a + b for a, b in zip(o["penalties"], pen, strict=True)]
        self._totals = tuple(int(t) for t in after.totals)

    def finish(self) -> GameRecord:
        """The finished record (call after the last step)."""
        self._close()
        return self.record()

    def record(self) -> GameRecord:
        """The record of the steps observed so far, the round in progress included (the recorder goes on; a game
        still in play does not :func:`replay`, which wants a finished one)."""
        rounds = [*self.rounds, self._open_round(self._open)] if self._open is not None else self.rounds
        return GameRecord(
            self.config, self.seed, self.game, self.deal, self.agents, self.positions, tuple(rounds), self._totals
        )


# --------------------------------------------------------------------------- replay


class ReplayFrame(NamedTuple):
    """One replayed step.

    Attributes:
        round: rounds completed before this step's round.
        index: the step's index within its round.
        step: the recorded decision.
        before: the engine state the decision was made in.
        after: the engine state after it (after a round's last step in a game that goes on: the next round
            as recorded).
        penalties: bullheads each seat took in the step, as the engine computed them (equal to the record's).
    """

    round: int
    index: int  # type: ignore[assignment]  # the field shadows tuple.index on purpose (public name); mypy flags any such field
    step: StepRecord
    before: State
    after: State
    penalties: tuple[int, ...]


def _start_state(record: GameRecord, rnd: RoundRecord, totals: tuple[int, ...]) -> State:
    config = record.config
    if config.variant == "logic":
        empty: list[list[int]] = [[] for _ in range(config.num_players)]
        return from_position(config, empty, (), totals, display=rnd.display, round_index=rnd.round)
    return from_position(config, rnd.hands, rnd.rows, totals, round_index=rnd.round)


def replay(record: GameRecord) -> list[ReplayFrame]:
    """Re-play ``record`` through :func:`sixnimmt_env.rules.engine.step` and check every step.

    Each round starts from its recorded deal (:func:`~sixnimmt_env.rules.engine.from_position`); every recorded
    decision is applied as a joint action; the engine's penalties must equal the recorded ones at every
    step, the round totals and the final totals too.

    Returns:
        One :class:`ReplayFrame` per recorded step, in order.

    Raises:
        ReplayError: naming the game, the round and the step: an illegal recorded action, a penalty that
            differs, a round or game that ends elsewhere than recorded, or totals that differ.
    """
    where = f"game {record.game}"
    frames: list[ReplayFrame] = []
    totals = (0,) * record.config.num_players
    placeholder = np.random.default_rng(0)  # only for the engine's next deal, which the record replaces
    state: State | None = None
    for k, rnd in enumerate(record.rounds):
        try:
            start = _start_state(record, rnd, totals)
        except ValueError as e:
            raise ReplayError(f"{where}, round {rnd.round}: the recorded deal is not valid: {e}") from None
        if state is not None and frames:
            frames[-1] = frames[-1]._replace(after=start)
        state = start
        round_pen = [0] * record.config.num_players
        for i, srec in enumerate(rnd.steps):
            at = f"{where}, round {rnd.round}, step {i} ({srec.phase})"
            if state.phase != srec.phase:
                raise ReplayError(f"{at}: the engine is in phase {state.phase!r}, the record has {srec.phase!r}")
            if state.round != rnd.round:
                raise ReplayError(f"{at}: the engine is in round {state.round}, the record in round {rnd.round}")
            acts = srec.actions(record.config.num_players)
            try:
                after, pen = step(state, acts, placeholder)
            except ValueError as e:
                raise ReplayError(f"{at}: {_illegal_in_record_terms(state, acts) or e}") from None
            if tuple(pen) != srec.penalties:
                raise ReplayError(f"{at}: the engine gives penalties {list(pen)}, the record {list(srec.penalties)}")
            drafted = state.phase == DRAFT and after.phase == SELECT and after.round == rnd.round
            if drafted and (after.hands != rnd.hands or after.rows != rnd.rows):
                raise ReplayError(f"{at}: the draft ends with other hands or rows than recorded")
            frames.append(ReplayFrame(rnd.round, i, srec, state, after, tuple(pen)))
            round_pen = [a + b for a, b in zip(round_pen, pen, strict=True)]
            state = after
        if tuple(round_pen) != rnd.penalties:
            raise ReplayError(
                f"{where}, round {rnd.round}: the steps add up to {round_pen}, the record {rnd.penalties}"
            )
        totals = tuple(a + b for a, b in zip(totals, round_pen, strict=True))
        last = k == len(record.rounds) - 1
        if last and state.phase != DONE:
            raise ReplayError(f"{where}: the record ends in round {rnd.round} but the game goes on")
        if not last and state.round != rnd.round + 1:
            raise ReplayError(f"{where}: round {rnd.round} does not end where the record says")
    if totals != record.totals:
        raise ReplayError(f"{where}: the replay ends with totals {list(totals)}, the record {list(record.totals)}")
    return frames


# --------------------------------------------------------------------------- explaining a turn


def describe_turn(
    rows: Sequence[Sequence[int]], cards: Sequence[int], chosen_row: int | None = None
) -> tuple[list[Placement], list[tuple[int, ...]]]:
    """Place one turn's revealed cards in ascending order and say what each did (R6-R9).

    The placements of the engine's turn resolver, :func:`sixnimmt_env.rules.engine.resolve_turn`.

    Args:
        rows: the 4 rows at the start of the turn.
        cards: the card each seat revealed, seat order.
        chosen_row: the row a low card takes (R9; the owner's choice, or
            :func:`~sixnimmt_env.rules.engine.cheapest_row` of ``rows`` if ``None``).

    Returns:
        ``(placements, rows_after)``: one :class:`~sixnimmt_env.rules.engine.Placement` per card, in placement order
        (ascending), and the 4 rows after the turn.
    """
    turn = resolve_turn(rows, cards, chosen_row)
    return list(turn.placements), list(turn.rows)


def iter_turns(record: GameRecord) -> Iterator[tuple[ReplayFrame, list[Placement], list[tuple[int, ...]]]]:
    """Each turn of a replayed record with its placements: ``(frame of the select step, placements, rows after)``.

    The frame is that of the turn's ``select`` step; a low-card choice (a following ``choose_row`` step) is
    folded into the placements. Draft steps are skipped.

    Raises:
        ReplayError: as :func:`replay`, or if the placements disagree with the engine's penalties.
    """
    frames = replay(record)
    n = record.config.num_players
    for i, frame in enumerate(frames):
        if frame.step.phase != SELECT:
            continue
        penalties = list(frame.penalties)
        chosen = None
        if frame.after.phase == CHOOSE_ROW and frame.after.round == frame.round:
            follow = frames[i + 1]
            chosen = follow.step.row
            penalties = [a + b for a, b in zip(penalties, follow.penalties, strict=True)]
        placements, rows_after = describe_turn(frame.before.rows, frame.step.cards or (), chosen)
        mine = [0] * n
        for p in placements:
            mine[p.seat] += p.bullheads
        if mine != penalties:
            raise ReplayError(
                f"game {record.game}, round {frame.round}, step {frame.index}: the placements give {mine}, "
                f"the engine {penalties}"
            )
        yield frame, placements, rows_after


def _action_text(action: int, phase: str) -> str:
    """An action index in the record's terms: ``card 17`` in card selection and the draft, ``row 2`` (rows 0..3)
    for a row choice, ``no-op``."""
    if action == NOOP:
        return "no-op"
    if phase == CHOOSE_ROW and ROW_ACTION <= action < ROW_ACTION + NUM_ROWS:
        return f"row {action - ROW_ACTION}"
    return f"card {action + 1}" if phase != CHOOSE_ROW else f"action {action}"


def _illegal_in_record_terms(state: State, actions: Sequence[int]) -> str | None:
    """``"seat 3: card 999 is not legal; legal: card 2, card 3, ..."`` for the first seat whose recorded action the
    engine refuses, or ``None`` if every action is legal (the error was something else)."""
    for seat, a in enumerate(actions):
        legal = legal_actions(state, seat)
        if a not in legal:
            shown = ", ".join(_action_text(x, state.phase) for x in legal)
            return f"seat {seat}: {_action_text(a, state.phase)} is not legal; legal: {shown}"
    return None
