"""The play table in the terminal (``python -m sixnimmt_env.play --tui``), built on Textual.

The same :class:`~sixnimmt_env.play.table.Table` as the web page: you play seat 0 against the agents (or watch
them, or replay a record), every decision validated by the engine. Keys:

==============  ==============================================================
``←`` ``→``     move over your hand (or the draft display)
``enter``       play the marked card (take it, in the draft)
``1``-``4``     take that row with a low card (R9)
``c``           coach on/off: every card's (or row's) expected bullheads
``space``       watch/replay: the next turn
``a``           watch/replay: play on by itself, or pause
``n``           a new game (replay: from the start)
``q``           quit
==============  ==============================================================
"""

from __future__ import annotations

from typing import Any

from rich.table import Table as RichTable
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Header, Static

from sixnimmt_env.agents import make_agent
from sixnimmt_env.play.settings import HUMAN, PlaySettings
from sixnimmt_env.play.table import Table, TableError
from sixnimmt_env.rules.engine import BULLHEADS, CHOOSE_ROW, DONE, DRAFT

__all__ = ["PlayApp", "run_tui"]

_CARD_STYLE = {1: "black on grey93", 2: "black on light_sky_blue1", 3: "black on khaki1", 5: "black on light_salmon1",
               7: "black on plum2"}  # fmt: skip


def card_text(card: int, style: str = "") -> Text:
    """One card as ``[ 55·7]``: its value and bullheads (R2), coloured by bullheads."""
    b = BULLHEADS[card]
    return Text(f"[{card:>3}·{b}]", style=f"{_CARD_STYLE[b]} {style}".strip())


class PlayApp(App):
    """The terminal play table for ``settings`` (see :class:`~sixnimmt_env.play.server.PlaySettings`)."""

    TITLE = "6 nimmt!"
    CSS = """
    Screen { layout: vertical; }
    #status { padding: 0 1; height: 3; content-align: left middle; background: $boost; text-style: bold; }
    #main { height: 1fr; }
    #board { width: 2fr; padding: 0 1; }
    #side { width: 1fr; min-width: 36; padding: 0 1; }
    #rows, #reveal, #hand, #scores, #log { border: round $primary; padding: 0 1; }
    #rows { height: auto; }
    #reveal { height: auto; min-height: 4; }
    #hand { height: auto; min-height: 5; }
    #log { height: 1fr; }
    """
    BINDINGS = [  # noqa: RUF012 (Textual's class attribute)
        Binding("left", "move(-1)", "◀", show=False),
        Binding("right", "move(1)", "▶", show=False),
        Binding("enter", "choose", "play"),
        *(Binding(str(r + 1), f"row({r})", f"row {r + 1}", show=False) for r in range(4)),
        Binding("c", "coach", "coach"),
        Binding("space", "step", "next turn"),
        Binding("a", "auto", "auto-play"),
        Binding("n", "new_game", "new game"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, settings: PlaySettings, auto_delay: float = 1.0) -> None:
        super().__init__()
        self.settings = settings
        self.agents = {i: make_agent(s) for i, s in enumerate(settings.specs) if s != HUMAN}
        self.games = 0
        self.cursor = 0
        self.coach_on = False
        self.error = ""
        self.auto_delay = auto_delay
        self._auto: Any = None
        self.table: Any = self._new_table()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Show (and allow) only the keys of this table's mode: playing keys to a person, stepping keys when
        watching or replaying."""
        table = getattr(self, "table", None)
        if table is None:
            return True
        watched = table.human is None
        if action in ("step", "auto"):
            return watched
        if action in ("coach", "choose", "move", "row"):
            return not watched
        return True

    def _new_table(self) -> Any:
        s = self.settings
        if s.mode == "replay":
            from sixnimmt_env.play.replay_table import ReplayTable

            return ReplayTable(s.records[0])
        index = self.games
        self.games += 1
        return Table(s.config, s.specs, seed=s.seed, index=index, coach_samples=s.coach_samples, agents=self.agents)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="status")
        with Horizontal(id="main"):
            with Vertical(id="board"):
                yield Static(id="rows")
                yield Static(id="reveal")
                yield Static(id="hand")
            with Vertical(id="side"):
                yield Static(id="scores")
                yield Static(id="log")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_table()

    # ------------------------------------------------------------------------------------------ drawing

    def refresh_table(self) -> None:
        """Redraw every panel from the table's snapshot."""
        snap = self.table.snapshot()
        c = snap["config"]
        goal = "one round" if c["episode"] == "round" else f"game to {c['end_score']}"
        self.sub_title = f"round {snap['round']} · turn {min(snap['turn'] + 1, 10)}/10 · {goal} · {snap['mode']}"
        status = Text(snap["status"], style="bold")
        if self.error:
            status.append(f"\n{self.error}", style="bold red")
        self.query_one("#status", Static).update(status)
        self.query_one("#rows", Static).update(self._rows(snap))
        self.query_one("#reveal", Static).update(self._reveal(snap))
        self.query_one("#hand", Static).update(self._hand(snap))
        self.query_one("#scores", Static).update(self._scores(snap))
        self.query_one("#log", Static).update(Text("\n".join(reversed(snap["log"][-30:]))))

    def _advice(self, snap: dict[str, Any]) -> Any:
        if not self.coach_on or snap["mode"] != "play" or not snap["decision"]:
            return None
        if snap["decision"]["kind"] not in ("card", "row"):
            return None
        try:
            return self.table.coach(snap["version"])
        except TableError:
            return None

    def _rows(self, snap: dict[str, Any]) -> Text:
        out = Text()
        advice = self._advice(snap)
        choosing = snap["decision"] is not None and snap["decision"]["kind"] == "row"
        for r, row in enumerate(snap["rows"]):
            out.append(f"{r + 1} ", style="bold")
            for card in row:
                out.append_text(card_text(card))
                out.append(" ")
            out.append("[  ·  ] " * (5 - len(row)), style="dim")
            b = snap["row_bullheads"][r]
            out.append(f" {b:>2} bullhead{'' if b == 1 else 's'}", style="bold red" if len(row) == 5 else "")
            if choosing:
                out.append(f"   press {r + 1}", style="bold yellow")
            if advice is not None and advice.kind == "row":
                star = "★" if advice.best == r else " "
                out.append(f"  {star}{advice.bullheads[r]:.1f}", style="bold yellow" if star == "★" else "")
            out.append("\n")
        if not snap["rows"]:
            out.append("(the rows start when the draft is over)\n", style="dim")
        return out

    def _reveal(self, snap: dict[str, Any]) -> Text:
        out = Text()
        names = snap["names"]
        if snap["phase"] == DRAFT:
            out.append("Display: ", style="bold")
            for i, card in enumerate(snap["display"]):
                mine = snap["decision"] is not None and i == self.cursor
                out.append_text(card_text(card, "reverse" if mine else ""))
                out.append(" ")
            return out
        if snap["phase"] == CHOOSE_ROW and snap["pending"]:
            out.append("Revealed: ", style="bold")
            out.append(", ".join(f"{names[s]} {c}" for s, c in enumerate(snap["pending"]["cards"])))
            return out
        turn = snap["last_turn"]
        if turn is None:
            return Text("The cards of each turn are revealed here, then placed from the lowest up.", style="dim")
        out.append(f"Round {turn['round']}, turn {turn['turn']}: ", style="bold")
        out.append(", ".join(f"{names[s]} {c}" for s, c in enumerate(turn["cards"])) + "\n")
        for p in turn["placements"]:
            out.append(f"  {p['text']}\n", style="red" if p["kind"] != "placed" else "")
        if turn["round_over"]:
            pen = ", ".join(f"{names[s]} {x}" for s, x in enumerate(turn["round_penalties"]))
            out.append(f"Round {turn['round']} over: {pen}", style="bold")
        return out

    def _hand(self, snap: dict[str, Any]) -> Text:
        if snap["mode"] != "play":
            out = Text()
            for s, name in enumerate(snap["names"]):
                out.append(f"{name:>14} ", style="bold")
                for card in snap["hands"].get(str(s), []):
                    out.append_text(card_text(card))
                    out.append(" ")
                out.append("\n")
            return out
        hand = snap["hands"][str(snap["human"])]
        d = snap["decision"]
        advice = self._advice(snap)
        out = Text("Your hand" + (" (←/→, enter plays)" if d and d["kind"] == "card" else "") + "\n", style="bold")
        self.cursor = min(self.cursor, max(len(hand) - 1, 0))
        evs = Text()
        for i, card in enumerate(hand):
            marked = d is not None and d["kind"] == "card" and i == self.cursor
            out.append_text(card_text(card, "reverse bold" if marked else ""))
            out.append(" ")
            if advice is not None and advice.kind == "card":
                x = advice.bullheads[advice.options.index(card)]
                star = "★" if advice.best == card else " "
                evs.append(f"{star}{x:5.1f}  "[:8], style="bold yellow" if star == "★" else "")
        out.append("\n")
        out.append_text(evs)
        if self.coach_on:
            out.append(
                "\ncoach: bullheads you can expect to take to the end of the round (★ the search's choice)",
                style="dim",
            )
        return out

    def _scores(self, snap: dict[str, Any]) -> RichTable:
        t = RichTable(title="Scores", expand=True, show_edge=False)
        t.add_column("player")
        t.add_column("round", justify="right")
        t.add_column("total", justify="right")
        ranking = {r["seat"]: r["place"] for r in snap["ranking"] or []}
        for s, name in enumerate(snap["names"]):
            place = f" ({ranking[s]}.)" if s in ranking else ""
            style = "bold magenta" if s == snap["human"] else ""
            t.add_row(Text(name + place, style=style), str(snap["round_penalties"][s]), str(snap["totals"][s]))
        return t

    # ------------------------------------------------------------------------------------------ actions

    def _do(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
            self.error = ""
        except TableError as e:
            self.error = str(e)
        self.refresh_table()

    def action_move(self, delta: int) -> None:
        """Move the marker over the hand (or the draft display)."""
        snap = self.table.snapshot()
        d = snap["decision"]
        if d is not None and d["kind"] in ("card", "draft"):
            self.cursor = max(0, min(len(d["options"]) - 1, self.cursor + delta))
            self.refresh_table()

    def action_choose(self) -> None:
        """Play (or draft) the marked card."""
        snap = self.table.snapshot()
        d = snap["decision"]
        if d is None or d["kind"] == "row":
            self.error = "choose a row with 1-4" if d else "it is not your decision now"
            self.refresh_table()
            return
        card = d["options"][min(self.cursor, len(d["options"]) - 1)]
        self._do(self.table.act, snap["version"], d["kind"], card)

    def action_row(self, row: int) -> None:
        """Take row ``row`` with your low card."""
        snap = self.table.snapshot()
        self._do(self.table.act, snap["version"], "row", row)

    def action_coach(self) -> None:
        """Coach on or off."""
        self.coach_on = not self.coach_on
        self.refresh_table()

    def action_step(self) -> None:
        """Watch or replay: the next turn."""
        if self.table.human is not None:
            return
        self._do(self.table.advance, self.table.version)
        if self.table.state.phase == DONE and self._auto is not None:
            self._auto.stop()
            self._auto = None

    def action_auto(self) -> None:
        """Watch or replay: play on by itself (one turn per ``auto_delay`` seconds), or pause."""
        if self.table.human is not None:
            return
        if self._auto is None:
            self._auto = self.set_interval(self.auto_delay, self.action_step)
        else:
            self._auto.stop()
            self._auto = None

    def action_new_game(self) -> None:
        """A new game (a replay starts again)."""
        self.table = self._new_table()
        self.cursor = 0
        self.error = ""
        self.refresh_table()


def run_tui(settings: PlaySettings) -> None:
    """Run the terminal play table until the person quits (``q``)."""
    PlayApp(settings).run()
