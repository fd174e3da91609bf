"""The arena's report: the Markdown table, the league note, the plot, and the results folder.

:func:`markdown_table` and :func:`league_note` format a results dict (:func:`sixnimmt_env.arena.run.run_arena`,
:func:`sixnimmt_env.arena.league.run_league`); :func:`plot_results` draws ``results.png`` (matplotlib's Agg canvas,
imported on first use); :func:`write_results` writes ``results.json``, ``results.md`` and ``results.png`` into a new
folder. :func:`check_results_folder` and :func:`check_new_file` refuse, before any game is played, an output that
would replace results or cannot be written.
"""

from __future__ import annotations

import itertools
import json
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

__all__ = [
    "LABEL_WIDTH",
    "RESULT_FILES",
    "PlotDraft",
    "Plotter",
    "check_new_file",
    "check_results_folder",
    "draft_plot",
    "finish_plot",
    "league_note",
    "markdown_table",
    "new_results_folder",
    "plot_results",
    "short_labels",
    "write_results",
]


def _headline(results: dict[str, Any]) -> str:
    s = results["settings"]
    what = "single rounds" if s["episode"] == "round" else "whole games"
    extra = ", duplicate deals" if s.get("duplicate") else ""
    mode = "League: " if results["mode"] == "league" else ""
    return (
        f"{mode}{results['games']:,} games ({what}, {s['num_players']} players, variant {s['variant']}, "
        f"row choice {s['row_choice']}{extra}), seed {s['seed']}, {s['workers']} worker(s): "
        f"{results['games_per_s']:,.1f} games/s"
    )


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else spec.format(value)


def _num(value: float | None) -> float:
    return math.nan if value is None else value  # no bar, no whisker


def league_note(results: dict[str, Any]) -> str:
    """How to read a league table: how the ratings are made, and which neighbours in the ranking are not
    separated (their ``mu`` differ by less than twice the standard deviation of the difference,
    ``2 * sqrt(sigma_a**2 + sigma_b**2)``), with the plain statistics that order them."""
    rows = results["agents"]
    ranked = [rows[p] for p in results["ranking"]]
    lines = [
        "Ratings: OpenSkill Plackett-Luce updated game by game (tau 0: the agents do not change), ranked by "
        "ordinal = mu - 3 sigma; penalty, win share and mean rank are plain averages over each agent's games."
    ]
    for a, b in itertools.pairwise(ranked):
        gap = abs(a["mu"] - b["mu"])
        noise = 2.0 * math.sqrt(a["sigma"] ** 2 + b["sigma"] ** 2)
        if gap < noise:
            lines.append(
                f"- `{a['agent']}` (#{a['position']}) and `{b['agent']}` (#{b['position']}): ratings not separated "
                f"(mu {a['mu']:.2f} vs {b['mu']:.2f}, difference {gap:.2f} < {noise:.2f}); their order may change "
                f"with the seed or more games. Mean rank {_fmt(a['mean_rank'], '{:.3f}')} vs "
                f"{_fmt(b['mean_rank'], '{:.3f}')}, penalty {_fmt(a['mean_penalty'], '{:.2f}')} vs "
                f"{_fmt(b['mean_penalty'], '{:.2f}')}."
            )
    return "\n".join(lines) + "\n"


def markdown_table(results: dict[str, Any]) -> str:
    """The results as a Markdown headline plus table (arena: in listed order; league: ranked)."""
    per_game = results["settings"]["episode"] == "game"
    head = ["#", "agent", "penalty / round", "95% CI", "win share", "mean rank"]
    if per_game:
        head[4:4] = ["penalty / game", "95% CI (game)"]
    rows = results["agents"]
    if results["mode"] == "league":
        head = ["rank", "#", "agent", "ordinal", "mu", "sigma", "games", *head[2:]]
        rows = [rows[p] for p in results["ranking"]]
    align = [":---" if h == "agent" else "---:" for h in head]
    lines = [_headline(results), "", "| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for r in rows:
        cells = [str(r["position"]), f"`{r['agent']}`", _fmt(r["mean_penalty"], "{:.3f}"), _fmt(r["ci95"], "±{:.3f}")]
        if per_game:
            cells += [_fmt(r["mean_penalty_per_game"], "{:.2f}"), _fmt(r["ci95_per_game"], "±{:.2f}")]
        cells += [_fmt(r["win_share"], "{:.3f}"), _fmt(r["mean_rank"], "{:.3f}")]
        if results["mode"] == "league":
            rating = [f"{r['ordinal']:.2f}", f"{r['mu']:.2f}", f"{r['sigma']:.2f}", str(r["games"])]
            cells = [str(r["league_rank"]), *cells[:2], *rating, *cells[2:]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


LABEL_WIDTH = 30
"""Longest short label :func:`short_labels` gives (characters)."""


def _shorten(text: str, width: int = LABEL_WIDTH) -> str:
    """``text`` cut to ``width`` characters: a ``prefix:`` is kept and the end (the most telling part of a
    path) follows an ellipsis."""
    if len(text) <= width:
        return text
    prefix, sep, _ = text.partition(":")
    head = prefix + sep if sep and len(prefix) < width // 2 else ""
    return head + "…" + text[len(text) - (width - len(head) - 1) :]


def short_labels(specs: Sequence[str]) -> list[str]:
    """Short labels for agent specs, unique for distinct specs.

    ``prefix:PATH`` specs (checkpoints) become ``prefix:<file stem>``; where two distinct paths share a stem,
    the nearest folder that tells them apart is added (``ppo:run2/best_model``, ``ppo:ppo_4p_game/…/best_model``).
    Other specs stay as they are. A label longer than :data:`LABEL_WIDTH` is cut (the prefix and the end kept);
    if cutting makes distinct labels equal they are numbered ``#1``, ``#2``. Equal specs get equal labels (the
    table position tells them apart).
    """
    parsed: list[tuple[str | None, tuple[str, ...]]] = []
    for spec in specs:
        prefix, sep, rest = spec.partition(":")
        if sep and ("/" in rest or "\\" in rest or rest.endswith(".zip")):
            path = Path(rest)
            parsed.append((prefix, (*path.parent.parts, path.stem if rest.endswith(".zip") else path.name)))
        else:
            parsed.append((None, (spec,)))
    labels = [
        spec if prefix is None else f"{prefix}:{parts[-1]}" for spec, (prefix, parts) in zip(specs, parsed, strict=True)
    ]
    base = list(labels)
    groups: dict[str, set[str]] = {}
    for label, spec in zip(base, specs, strict=True):
        groups.setdefault(label, set()).add(spec)
    for i, (kind, parts) in enumerate(parsed):
        if kind is None or len(groups[base[i]]) == 1:
            continue
        rivals = [parsed[j][1] for j, spec in enumerate(specs) if base[j] == base[i] and spec != specs[i]]
        for k in range(2, len(parts) + 1):
            if all(len(r) < k or r[-k] != parts[-k] for r in rivals):
                middle = parts[-k] + ("/…/" if k > 2 else "/")
                labels[i] = f"{kind}:{middle}{parts[-1]}"
                break
    short = [_shorten(label) for label in labels]
    if len(set(short)) != len(set(specs)):  # still equal for distinct specs: number them
        numbers: dict[str, int] = {}
        for i, spec in enumerate(specs):
            if parsed[i][0] is not None:
                k = numbers.setdefault(spec, len(numbers) + 1)
                short[i] = _shorten(labels[i], LABEL_WIDTH - 4) + f" #{k}"
    return short


class PlotDraft:
    """The part of ``results.png`` that the agents' labels and the table size fix: the figure, its margins, the
    panels' titles, axis labels and agent names (:func:`draft_plot`); :func:`finish_plot` adds the bars and the
    headline and saves it.

    The arena's plot helper drafts while the games are played (:class:`~sixnimmt_env.arena.plotter.PlotProcess`,
    :meth:`~sixnimmt_env.arena.plotter.PlotProcess.draft`), so that only the measured part is left to draw.

    Attributes:
        labels: the agents' labels, in position order (the ``agent`` of each results row).
        positions: the agents' positions (``0, 1, ...`` unless given).
        num_players: players at a table (the dashed parity line of the win share panel is at ``1 / num_players``).
    """

    def __init__(self, labels: Sequence[str], num_players: int, positions: Sequence[int] | None = None) -> None:
        """Lay out an empty figure for agents ``labels`` at tables of ``num_players`` (see :func:`draft_plot`)."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure  # the Agg canvas; no pyplot, no display
        from matplotlib.font_manager import FontProperties

        self.labels, self.num_players = [str(a) for a in labels], int(num_players)
        self.positions = list(range(len(self.labels))) if positions is None else [int(p) for p in positions]
        short = short_labels(self.labels)
        names = [f"{p}: {label}" for p, label in zip(self.positions, short, strict=True)]
        legend = [
            f"{p}: {spec}" for p, spec, label in zip(self.positions, self.labels, short, strict=True) if spec != label
        ]
        legend = [line if len(line) <= 150 else line[:64] + "…" + line[-85:] for line in legend]
        self._width, self._height = 9.0, max(3.2, 1.6 + 0.38 * len(names) + 0.18 * len(legend))
        fig = self.figure = Figure(figsize=(self._width, self._height))
        renderer = FigureCanvasAgg(fig).get_renderer()
        name_font = FontProperties(size=9)
        widest = max((renderer.get_text_width_height_descent(s, name_font, ismath=False)[0] for s in names), default=0)
        self._left = 0.12 + widest / fig.dpi + 0.1  # the names, the ticks and their pad
        self._bottom = 0.62 + (7 * _LINE * len(legend) + 0.1 if legend else 0.0)  # tick labels, axis label (10 pt)
        self._headline_lines = 1
        self._adjust()
        self.axes = fig.subplots(1, 2, sharey=True)
        ax1, ax2 = self.axes
        y = np.arange(len(names))
        ax1.set_xlabel("bullheads per round (lower is better)")
        ax1.set_title("mean penalty, 95% CI", fontsize=10)
        ax2.axvline(1.0 / self.num_players, color="grey", linestyle="--", linewidth=1)
        ax2.set_xlabel("share of wins (dashed: 1 / players)")
        ax2.set_title("win share (ties split), 95% CI", fontsize=10)
        ax1.set_yticks(y, names, fontsize=9, parse_math=False)  # a $ in a path is a dollar, not TeX
        ax1.invert_yaxis()  # position 0 on top, as in the table
        if legend:
            fig.supxlabel(
                "\n".join(legend),
                fontsize=7,
                ha="left",
                va="bottom",
                x=0.01,
                y=0.06 / self._height,
                family="monospace",
                parse_math=False,
            )
        self._finished = False

    def _adjust(self) -> None:
        top = 0.08 + 8 * _LINE * self._headline_lines + 0.32  # the headline (8 pt), then the panels' titles (10 pt)
        w, h = self._width, self._height
        self.figure.subplots_adjust(
            left=self._left / w, right=1 - 0.2 / w, top=1 - top / h, bottom=self._bottom / h, wspace=0.14
        )

    def fits(self, results: dict[str, Any]) -> bool:
        """Whether this draft is for ``results`` (the same agents' labels and table size) and not yet used."""
        labels = [str(r["agent"]) for r in results["agents"]]
        positions = [r["position"] for r in results["agents"]]
        return (
            not self._finished
            and labels == self.labels
            and positions == self.positions
            and results["settings"]["num_players"] == self.num_players
        )

    def finish(self, results: dict[str, Any], path: str | Path) -> Path:
        """Add ``results``' bars (mean penalty and win share, 95 % whiskers) and headline, and save the figure as the
        PNG file ``path``; a draft is used once (:func:`finish_plot`).

        Raises:
            ValueError: this draft is not for ``results`` (:meth:`fits`) or was used already.
        """
        if not self.fits(results):
            raise ValueError(
                f"this plot draft is for agents {self.labels} at {self.num_players} players (or was used already), "
                f"not for {[r['agent'] for r in results['agents']]} at {results['settings']['num_players']}"
            )
        self._finished = True
        rows = results["agents"]
        headline = textwrap.wrap(_headline(results), 150)
        if len(headline) != self._headline_lines:
            self._headline_lines = len(headline)
            self._adjust()
        fig, (ax1, ax2) = self.figure, self.axes
        y = np.arange(len(rows))
        means, ci = [_num(r["mean_penalty"]) for r in rows], [_num(r["ci95"]) for r in rows]
        ax1.barh(y, means, xerr=ci, capsize=3, color="tab:red")
        shares, wci = [_num(r["win_share"]) for r in rows], [_num(r["win_share_ci95"]) for r in rows]
        ax2.barh(y, shares, xerr=wci, capsize=3, color="tab:green")
        for i, r in enumerate(rows):
            if r["mean_penalty"] is None:  # an agent of a league that no table drew
                for ax in (ax1, ax2):
                    ax.text(0, i, " no games", va="center", fontsize=8, color="grey", parse_math=False)
        fig.suptitle("\n".join(headline), fontsize=8, y=1 - 0.08 / self._height, va="top")
        path = Path(path)
        # zlib's fastest level: the same pixels, a file 2 % larger, 4 ms less of the arena command's last step
        fig.savefig(path, dpi=120, pil_kwargs={"compress_level": 1})
        return path


_LINE = 1.2 / 72  # inches per point of font size, at matplotlib's line spacing


def draft_plot(labels: Sequence[str], num_players: int, positions: Sequence[int] | None = None) -> PlotDraft:
    """The results-independent part of :func:`plot_results`'s figure for agents ``labels`` (the results rows'
    order; their ``positions``, ``0, 1, ...`` by default) at tables of ``num_players``; :func:`finish_plot`
    completes it."""
    return PlotDraft(labels, num_players, positions)


def finish_plot(draft: PlotDraft, results: dict[str, Any], path: str | Path) -> Path:
    """Add ``results``' bars (mean penalty and win share, 95 % whiskers) and headline to ``draft`` and save it as
    the PNG file ``path``; a draft is used once (:meth:`PlotDraft.finish`).

    Raises:
        ValueError: ``draft`` is not for ``results`` (:meth:`PlotDraft.fits`) or was used already.
    """
    return draft.finish(results, path)


def plot_results(results: dict[str, Any], path: str | Path) -> Path:
    """Save a PNG: mean penalty per round and win share, each with 95% whiskers, one horizontal bar per agent
    (:func:`draft_plot`, then :func:`finish_plot`).

    Agents are named ``position: short label`` (:func:`short_labels`); when a label differs from its spec
    (a ``ppo:PATH`` checkpoint), the full specs are listed under the plot. The margins are set from the measured
    widths of the agent names and the number of headline and legend lines (no layout engine: it would draw the
    figure twice, a third of the plot's time).
    """
    rows = results["agents"]
    labels, positions = [str(r["agent"]) for r in rows], [r["position"] for r in rows]
    return finish_plot(draft_plot(labels, results["settings"]["num_players"], positions), results, path)


RESULT_FILES = ("results.json", "results.md", "results.png")
"""The files :func:`write_results` writes into a results folder."""


def check_results_folder(out: str | Path, overwrite: bool = False, what: str = "--out") -> Path:
    """Check, before any game is played, that ``out`` can take a new set of results.

    ``out`` may exist (a folder without results) or not (its nearest existing parent must be a writable
    folder); nothing is created here, so an interrupted run leaves no empty folder.

    Raises:
        ValueError: naming ``what`` and the path: a file in the way, results already there (unless
            ``overwrite``), or a parent that is not a writable folder.
    """
    import os

    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise ValueError(f"{what} {str(out)!r} is a file, not a folder")
        old = [name for name in RESULT_FILES if (out / name).exists()]
        if old and not overwrite:
            raise ValueError(
                f"{what} {str(out)!r} already holds results ({', '.join(old)}); choose a new folder "
                "(or leave out --out for a new one per run), or pass --overwrite to replace them"
            )
        if not os.access(out, os.W_OK):
            raise ValueError(f"{what} {str(out)!r} is not writable")
        return out
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{what} {str(out)!r} cannot be created: {str(parent)!r} is a file, not a folder")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{what} {str(out)!r} cannot be created: {str(parent)!r} is not writable")
    return out


def new_results_folder(base: str | Path) -> Path:
    """A fresh folder name ``base/<YYYYmmdd-HHMMSS>`` (``-1``, ``-2``, ... appended if taken); not created."""
    from datetime import datetime

    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(base) / stamp
    k = 1
    while out.exists():
        out = Path(base) / f"{stamp}-{k}"
        k += 1
    return out


class Plotter(Protocol):
    """What :func:`write_results` asks of a plot helper (:class:`~sixnimmt_env.arena.plotter.PlotProcess`, which
    imports this module, not the other way round)."""

    def plot(self, results: dict[str, Any], path: str | Path) -> Path:
        """Draw ``results`` (a JSON-ready results dict) to the PNG file ``path``; return the path."""
        ...


def write_results(
    results: dict[str, Any],
    out: str | Path,
    overwrite: bool = False,
    plotter: Plotter | None = None,
    plot: bool = True,
) -> dict[str, Path]:
    """Write ``results.json``, ``results.md`` and ``results.png`` to directory ``out`` (created); returns the paths.

    The PNG is drawn by :func:`plot_results` in this process, or by ``plotter``, a helper process started before
    the games (:class:`~sixnimmt_env.arena.plotter.PlotProcess`). With ``plot=False`` it is not drawn (nor its
    path returned): the arena's command line draws it after printing the tables, or not at all (``--no-plot``).

    Raises:
        ValueError: if ``out`` already holds results and ``overwrite`` is false (see :func:`check_results_folder`).
        RuntimeError: the plot helper failed (the JSON and Markdown files are written by then).
    """
    out = check_results_folder(out, overwrite, "results folder")
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "md": out / "results.md"}
    paths["json"].write_text(json.dumps(results, indent=2) + "\n")
    note = "\n" + league_note(results) if results["mode"] == "league" else ""
    paths["md"].write_text(markdown_table(results) + note)
    if not plot:
        (out / "results.png").unlink(missing_ok=True)  # an overwritten folder keeps no plot of other results
        return paths
    paths["png"] = out / "results.png"
    if plotter is None:
        plot_results(results, paths["png"])
    else:
        plotter.plot(results, paths["png"])
    return paths


# --------------------------------------------------------------------------- command line


def check_new_file(path: str | Path, what: str, overwrite: bool = False) -> Path:
    """Check, before any work, that a result file can be created at ``path`` without replacing one.

    Raises:
        ValueError: naming ``what`` and the path: it exists (and ``overwrite`` is false) or is a folder, its
            folder does not exist or is not writable.
    """
    import os

    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a folder; give a file name, e.g. games.jsonl")
    if path.exists() and not overwrite:
        raise ValueError(f"{what} {str(path)!r} already exists; choose a new file (results are never overwritten)")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"{what} {str(path)!r}: the folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{what} {str(path)!r}: the folder {str(parent)!r} is not writable")
    return path
