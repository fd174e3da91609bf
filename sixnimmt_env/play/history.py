"""A player's history at the play table: the saved games (:mod:`sixnimmt_env.play.saved`), the record against each
opponent spec, and the export of the finished games as a records file (issue 39).

The record against a spec counts the person's finished games in which that spec held at least one seat: games,
rounds, the person's bullheads per round (total bullheads over total rounds, R11), the spec's seats' bullheads per
round, and the person's win share (R13: ``1/k`` for each of the ``k`` lowest totals,
:func:`sixnimmt_env.stats.win_shares`) with its 95% interval over the games (:func:`sixnimmt_env.stats.mean_ci95`;
none below 2 games). ``python -m sixnimmt_env.play --history`` prints it (:func:`format_history`); the page
``/history`` shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from sixnimmt_env.play.saved import SavedGame
from sixnimmt_env.play.table import _seat_names
from sixnimmt_env.records import write_records
from sixnimmt_env.stats import mean_ci95, win_shares

__all__ = ["export_records", "format_history", "game_summary", "history"]


def game_summary(saved: SavedGame) -> dict[str, Any]:
    """One game for the history and the offer to continue (plain JSON types): id, times (Unix seconds), seats'
    names and specs, the person's seat, the rules, rounds played, totals, and once finished the person's place
    (1 = won or shared the win, R13)."""
    record = saved.record
    c = record.config
    totals = list(record.totals)
    place = None
    if saved.finished and saved.human is not None:
        place = 1 + sum(t < totals[saved.human] for t in totals)
    return {
        "id": saved.id,
        "created": saved.created,
        "updated": saved.updated,
        "finished": saved.finished,
        "human": saved.human,
        "names": _seat_names(list(record.agents)),
        "specs": list(record.agents),
        "config": {"num_players": c.num_players, "variant": c.variant, "episode": c.episode,
                   "end_score": c.end_score, "row_choice": c.row_choice},
        "rounds": len(record.rounds),
        "totals": totals,
        "place": place,
        "seed": record.seed,
        "game": record.game,
    }  # fmt: skip


def history(games: Sequence[SavedGame]) -> dict[str, Any]:
    """The history of ``games`` (plain JSON types).

    The result, a ``dict``:
        ``{"games": [game_summary, ...] newest first, "opponents": [row, ...] by games played then spec,
        "overall": row or None}``; a row is ``{"spec", "games", "rounds", "bullheads_per_round",
        "their_bullheads_per_round", "win_share", "win_share_ci"}`` (``win_share_ci``: the 95% half-width, ``None``
        below 2 games). ``overall`` covers every finished game with a person.
    """
    played = [g for g in games if g.finished and g.human is not None and g.record.rounds]
    specs: dict[str, list[SavedGame]] = {}
    for g in played:
        for spec in dict.fromkeys(s for seat, s in enumerate(g.record.agents) if seat != g.human):
            specs.setdefault(spec, []).append(g)
    rows = [_row(spec, gs) for spec, gs in specs.items()]
    rows.sort(key=lambda r: (-r["games"], r["spec"]))
    return {
        "games": [game_summary(g) for g in sorted(games, key=lambda g: (-g.updated, g.id)) if g.record.rounds],
        "opponents": rows,
        "overall": _row("all", played) if played else None,
    }


def _person(game: SavedGame) -> int:
    """The person's seat of ``game`` (the history counts only games with a person)."""
    if game.human is None:
        raise ValueError(f"game {game.id} has no person")
    return game.human


def _row(spec: str, games: Sequence[SavedGame]) -> dict[str, Any]:
    rounds = sum(len(g.record.rounds) for g in games)
    mine = sum(g.record.totals[_person(g)] for g in games)
    theirs, seats = 0.0, 0
    for g in games:
        for seat, s in enumerate(g.record.agents):
            if s == spec and seat != g.human:
                theirs += g.record.totals[seat] / len(g.record.rounds)
                seats += 1
    shares = np.array([win_shares(np.array([g.record.totals]))[0, _person(g)] for g in games])
    ci = float(mean_ci95(shares)[1]) if len(games) >= 2 else None
    return {
        "spec": spec,
        "games": len(games),
        "rounds": rounds,
        "bullheads_per_round": mine / rounds,
        "their_bullheads_per_round": theirs / seats if seats else None,
        "win_share": float(shares.mean()),
        "win_share_ci": ci,
    }


def export_records(games: Sequence[SavedGame], path: str | Path) -> int:
    """Write the finished ones of ``games`` to the records file ``path`` (:func:`sixnimmt_env.records.write_records`,
    oldest first), which ``python -m sixnimmt_env.records_text`` and ``python -m sixnimmt_env.play --replay`` read.

    Returns:
        The number of games written.
    """
    done = [g.record for g in sorted(games, key=lambda g: (g.created, g.id)) if g.finished]
    write_records(path, done)
    return len(done)


def _share(row: dict[str, Any]) -> str:
    ci = row["win_share_ci"]
    return f"{100 * row['win_share']:.1f}%" + ("" if ci is None else f" ± {100 * ci:.1f}")


def format_history(h: dict[str, Any], limit: int = 30) -> str:
    """The text of ``python -m sixnimmt_env.play --history``: the record per opponent spec, then the ``limit``
    latest games."""
    lines = []
    games = h["games"]
    done = sum(g["finished"] for g in games)
    lines.append(f"{len(games)} games saved: {done} finished, {len(games) - done} unfinished")
    if h["opponents"]:
        lines.append("")
        lines.append("Your record against each opponent (finished games; win share: 95% interval)")
        lines.append(f"  {'opponent':<28} {'games':>5} {'rounds':>6} {'you/round':>9} {'they/round':>10}  win share")
        for row in [*h["opponents"], h["overall"]]:
            theirs = row["their_bullheads_per_round"]
            lines.append(
                f"  {row['spec']:<28} {row['games']:>5} {row['rounds']:>6} {row['bullheads_per_round']:>9.2f} "
                f"{'' if theirs is None else f'{theirs:.2f}':>10}  {_share(row)}"
            )
    if games:
        lines.append("")
        lines.append(f"Latest games{'' if len(games) <= limit else f' ({limit} of {len(games)})'}")
        for g in games[:limit]:
            when = datetime.fromtimestamp(g["updated"]).strftime("%Y-%m-%d %H:%M")
            seats = ", ".join(f"{n} {t}" for n, t in zip(g["names"], g["totals"], strict=True))
            state = "unfinished" if not g["finished"] else ("watched" if g["place"] is None else f"place {g['place']}")
            lines.append(f"  {when}  {g['id']}  {g['rounds']} round(s), {state}: {seats}")
    return "\n".join(lines)
