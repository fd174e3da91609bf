"""Pictures of the table for the environments' ``render()``: text (``"ansi"``, ``"human"``) and RGB (``"rgb_array"``).

Only public information is drawn (`RULES.md` R4): the rows with their bullheads,
the cards revealed this turn, the scores, whose decision it is and what happened
in the last step (who took which row and why: a sixth card, R8, or a low card,
R9), plus, for the Gymnasium env, the learner's own hand. The RGB picture is
drawn with matplotlib's Agg canvas (no window, no pyplot state).

The description of a step (:func:`step_events`) reads the placements of the
engine's turn resolver (:func:`sixnimmt_env.rules.engine.resolve_turn`), the one
:func:`sixnimmt_env.rules.engine.step` places every turn with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sixnimmt_env.rules import engine
from sixnimmt_env.rules.engine import (
    BULLHEADS,
    CHOOSE_ROW,
    DRAFT,
    NUM_ROWS,
    ROW_ACTION,
    ROW_LIMIT,
    SELECT,
    State,
    row_bullheads,
)

__all__ = ["render_rgb", "render_table", "render_text", "step_events"]


def _bullheads(n: int) -> str:
    """``"1 bullhead"``, ``"7 bullheads"``."""
    return f"{n} bullhead{'' if n == 1 else 's'}"


def _names(state: State, names: Sequence[str] | None) -> list[str]:
    return list(names) if names is not None else [f"player_{i}" for i in range(state.config.num_players)]


def step_events(before: State, actions: Sequence[int], names: Sequence[str] | None = None) -> list[str]:
    """What one joint action did, one line per card, in the order the cards were placed (R6).

    Args:
        before: the state the joint action was applied to.
        actions: one legal action per seat (as given to :func:`engine.step`).
        names: the agents' names in seat order (default ``player_i``).

    Returns:
        Lines such as ``"player_2's 55 is the sixth card of row 1: takes 12 13 14 15 16 (7 bullheads)"``,
        ``"player_0's 3 is lower than every row: player_0 chooses the row it takes"``, ``"player_1 plays 40 on
        row 2"``; in a draft step the pick. Empty for a step without a decision.
    """
    who = _names(before, names)
    if before.phase == DRAFT:
        seat = before.chooser
        return [f"{who[seat]} takes {actions[seat] + 1} from the display"]
    if before.phase == SELECT:
        turn = engine.resolve_turn(before.rows, [a + 1 for a in actions])
        how = "cheapest row, R9b"
        first = turn.placements[0]
        if first.reason == "low" and before.config.row_choice == "player":  # the owner chooses first (R9)
            return [
                f"{who[first.seat]}'s {first.card} is lower than every row: {who[first.seat]} chooses the row it takes"
            ]
    elif before.phase == CHOOSE_ROW:
        seat = before.chooser
        turn = engine.resolve_turn(before.rows, before.revealed, actions[seat] - ROW_ACTION)
        how = "chosen"
    else:
        return []
    lines = []
    for p in turn.placements:
        taken = " ".join(map(str, p.taken))
        name = who[p.seat]
        if p.reason == "low":  # R9
            lines.append(f"{name}'s low card {p.card} takes row {p.row} ({how}): {taken} ({_bullheads(p.bullheads)})")
        elif p.reason == "full":  # R8
            lines.append(
                f"{name}'s {p.card} is the sixth card of row {p.row}: takes {taken} ({_bullheads(p.bullheads)})"
            )
        else:  # R7
            lines.append(f"{name} plays {p.card} on row {p.row}")
    return lines


def render_text(
    state: State,
    names: Sequence[str] | None = None,
    events: Sequence[str] = (),
    hand_of: int | None = None,
) -> str:
    """A plain-text picture of ``state``: round, turn, phase, rows with bullheads, scores and who decides.

    Args:
        state: the state to draw.
        names: the agents' names in seat order (default ``player_i``).
        events: lines describing the last step (:func:`step_events`), shown under ``last step:``.
        hand_of: a seat whose hand is shown (the Gymnasium env's learner); ``None`` shows no hand (R4).
    """
    n = state.config.num_players
    names = _names(state, names)
    lines = [f"6 nimmt! ({state.config.variant}) round {state.round + 1}, turn {state.turn}/10, phase {state.phase}"]
    if state.phase == SELECT:
        lines.append("decision: every player chooses a card")
    elif state.phase == CHOOSE_ROW:
        card = state.revealed[state.chooser]
        lines.append(f"decision: {names[state.chooser]} chooses the row its low card {card} takes")
    elif state.phase == DRAFT:
        lines.append(f"decision: {names[state.chooser]} takes a card from the display")
        lines.append("display: " + " ".join(map(str, state.display)))
    else:
        winners = ", ".join(names[s] for s in engine.winners(state))
        lines.append(f"game over; lowest total: {winners}")
    for r, row in enumerate(state.rows):
        cards = " ".join(f"{c:>3}" for c in row)
        lines.append(f"row {r}: {cards:<20}  ({_bullheads(row_bullheads(row))})")
    if any(state.revealed):
        lines.append("revealed: " + ", ".join(f"{names[s]} {c}" for s, c in enumerate(state.revealed) if c))
    if events:
        lines.append("last step:")
        lines.extend(f"  {line}" for line in events)
    for s in range(n):
        mark = " (you)" if s == hand_of else ""
        lines.append(f"{names[s]:>10}: total {state.totals[s]:>3} (this round {state.round_penalties[s]}){mark}")
    if hand_of is not None:
        lines.append(f"hand of {names[hand_of]}: " + " ".join(map(str, state.hands[hand_of])))
    return "\n".join(lines)


_CARD_COLOURS = {1: "#ffffff", 2: "#cfe8ff", 3: "#fff3b0", 5: "#ffc58a", 7: "#ff8a8a"}
"""Card face colour by bullheads (R2): the dearer the card, the warmer."""


def _card(ax: Any, x: float, y: float, card: int, w: float = 0.9, h: float = 1.0, edge: str = "#333333") -> None:
    from matplotlib.patches import FancyBboxPatch

    bull = BULLHEADS[card]
    ax.add_patch(
        FancyBboxPatch(
            (x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08", fc=_CARD_COLOURS[bull], ec=edge, lw=1.2
        )
    )
    ax.text(x + w / 2, y + h * 0.58, str(card), ha="center", va="center", fontsize=13, weight="bold")
    ax.text(x + w / 2, y + h * 0.2, f"{bull}\u2009bh", ha="center", va="center", fontsize=7, color="#7a1f1f")


def render_rgb(
    state: State,
    names: Sequence[str] | None = None,
    events: Sequence[str] = (),
    hand_of: int | None = None,
    size: tuple[int, int] = (960, 600),
) -> np.ndarray:
    """The table as an RGB picture: ``uint8 (H, W, 3)``, ``size = (W, H)`` pixels (default 960 × 600).

    Draws the four rows (cards coloured by bullheads, each row's bullheads on the right), the cards revealed
    this turn by player, the scores (total and this round; ``hand_of`` highlighted), what happened in the
    last step (:func:`step_events`) and, if ``hand_of`` is a seat, that seat's hand. Arguments as
    :func:`render_text`.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = _names(state, names)
    n = state.config.num_players
    width, height = size
    fig = Figure(figsize=(width / 100, height / 100), dpi=100, facecolor="#2e6b3f")
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 16)
    ax.set_ylim(0, 10)
    ax.axis("off")
    white = "#ffffff"
    title = f"6 nimmt!  round {state.round + 1}  ·  turn {state.turn}/10  ·  {state.phase}"
    ax.text(0.3, 9.55, title, color=white, fontsize=14, weight="bold", va="center")
    if state.phase == CHOOSE_ROW:
        decision = f"{names[state.chooser]} chooses the row its low card {state.revealed[state.chooser]} takes"
    elif state.phase == DRAFT:
        decision = f"{names[state.chooser]} takes a card from the display"
    elif state.phase == SELECT:
        decision = "every player chooses a card"
    else:
        decision = "game over · lowest total: " + ", ".join(names[s] for s in engine.winners(state))
    ax.text(0.3, 9.05, decision, color="#ffe9a8", fontsize=10, va="center")
    for r in range(NUM_ROWS):
        y = 7.6 - 1.25 * r
        row = state.rows[r] if r < len(state.rows) else ()
        ax.text(0.3, y + 0.5, f"row {r}", color=white, fontsize=10, va="center")
        for j in range(ROW_LIMIT):
            x = 1.2 + j
            if j < len(row):
                _card(ax, x, y, row[j])
            else:
                ax.add_patch(_slot(x, y))
        bull = row_bullheads(row)
        ax.text(6.35, y + 0.5, f"{bull} bh", color=white, fontsize=10, va="center")
    # revealed cards
    ax.text(7.4, 8.55, "revealed this turn", color=white, fontsize=10, weight="bold")
    shown = [(s, c) for s, c in enumerate(state.revealed) if c]
    for k, (s, c) in enumerate(shown):
        x, y = 7.4 + (k % 5) * 0.95, 7.3 - (k // 5) * 1.45
        _card(ax, x, y, c, w=0.85, h=0.95, edge="#ffd000" if s == hand_of else "#333333")
        ax.text(x + 0.42, y - 0.2, names[s].replace("player_", "p"), color=white, fontsize=7, ha="center")
    if not shown:
        ax.text(7.4, 7.7, "(none yet)", color="#cfd8cf", fontsize=9)
    # scores
    ax.text(12.35, 8.55, "player     total round", color=white, fontsize=8.5, weight="bold", family="monospace")
    for s in range(n):
        colour = "#ffd000" if s == hand_of else white
        line = f"{names[s]:<10}{state.totals[s]:>6}{state.round_penalties[s]:>6}"
        ax.text(12.35, 8.15 - 0.36 * s, line, color=colour, fontsize=8.5, family="monospace")
    # last step
    ax.text(0.3, 2.35, "last step", color=white, fontsize=10, weight="bold")
    for k, line in enumerate(list(events)[-6:] or ["(nothing yet)"]):
        ax.text(0.3, 1.98 - 0.31 * k, line, color="#e8f0e8", fontsize=8.5)
    # the learner's hand
    if hand_of is not None:
        hand = state.hands[hand_of]
        ax.text(7.4, 4.05, f"hand of {names[hand_of]} (you)", color="#ffd000", fontsize=10, weight="bold")
        for k, c in enumerate(hand):
            _card(ax, 7.4 + (k % 10) * 0.86, 2.85, c, w=0.8, h=0.95)
        if not hand:
            ax.text(7.4, 3.3, "(no cards left)", color="#cfd8cf", fontsize=9)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[:, :, :3].copy()


def _slot(x: float, y: float) -> Any:
    from matplotlib.patches import FancyBboxPatch

    return FancyBboxPatch(
        (x, y), 0.9, 1.0, boxstyle="round,pad=0.02,rounding_size=0.08", fc="none", ec="#6fa07c", lw=1, ls="--"
    )


def render_table(env: Any, render_mode: str | None, learner: int | None = None, events: Sequence[str] | None = None):
    """``render()`` of both environments: ``env`` is a ParallelEnv of this package (its ``game_state``,
    ``possible_agents`` and ``last_events()``).

    Returns:
        ``"ansi"``: the text; ``"rgb_array"``: ``uint8 (600, 960, 3)``; ``"human"``: prints the text and returns
        ``None``; ``None``: warns that no render mode was given and returns ``None``.
    """
    if render_mode is None:
        import gymnasium

        gymnasium.logger.warn("render() called without a render_mode: pass render_mode='ansi', 'human' or 'rgb_array'")
        return None
    state = env.game_state
    names = env.possible_agents
    events = env.last_events() if events is None else events
    if render_mode == "rgb_array":
        return render_rgb(state, names, events, learner)
    text = render_text(state, names, events, learner)
    if render_mode == "human":
        print(text)
        return None
    return text
