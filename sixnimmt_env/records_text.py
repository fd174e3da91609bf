"""Print a recorded game move by move in the terminal.

Command line::

    python -m sixnimmt_env.arena --agents greedy,lowest,random,random --games 20 --save-games games.jsonl
    python -m sixnimmt_env.records_text games.jsonl              # lists the games of the file
    python -m sixnimmt_env.records_text games.jsonl --game 3     # game 3, move by move

For every turn it shows the rows with their bullheads (R2), the card each agent played (R5), and in the order
the cards are placed (R6) where each went and who took which row and why: the sixth card of a full row (R8)
or a low card whose owner took a row (R9). The game is replayed through the engine first
(:func:`sixnimmt_env.records.replay`), so what is printed is what the rules give.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sixnimmt_env.records import GameRecord, ReplayError, iter_turns, read_records, replay
from sixnimmt_env.rules.engine import DRAFT, row_bullheads

__all__ = ["format_game", "format_rows", "main"]


def _who(record: GameRecord, seat: int) -> str:
    return f"{record.agents[seat]} (seat {seat})"


def _bh(count: int) -> str:
    return f"{count} bullhead" + ("" if count == 1 else "s")


def format_rows(rows: Sequence[Sequence[int]], indent: str = "    ") -> list[str]:
    """One line per row: its cards and its bullheads (R2)."""
    lines = []
    for r, row in enumerate(rows):
        cards = " ".join(f"{c:>3}" for c in row)
        lines.append(f"{indent}row {r}: {cards:<20}  {_bh(row_bullheads(row))}")
    return lines


def _settings(record: GameRecord) -> str:
    c = record.config
    what = "a single round" if c.episode == "round" else f"a whole game to {c.end_score}"
    if c.episode == "game" and c.max_rounds is not None:
        what += f" or {c.max_rounds} rounds"
    return f"{c.num_players} players, variant {c.variant}, row choice {c.row_choice}, {what}"


def format_game(record: GameRecord) -> str:
    """The whole game as text: settings, seats, and per round the deal and every turn.

    Raises:
        ReplayError: if the record does not replay through the engine.
    """
    seed = "?" if record.seed is None else record.seed
    lines = [f"Game {record.game} (seed {seed}, deal {record.deal}): {_settings(record)}"]
    lines.append("Seats: " + ", ".join(_who(record, s) for s in range(len(record.agents))))
    drafts: dict[int, list[tuple[int, int | None]]] = {}  # per round: (seat, card) of each pick
    for frame in replay(record):
        step = frame.step
        if step.phase == DRAFT and step.seat is not None:  # a draft step names its seat (replay checked it)
            drafts.setdefault(frame.round, []).append((step.seat, step.card))
    current = None
    for frame, placements, rows_after in iter_turns(record):
        if frame.round != current:
            current = frame.round
            rnd = next(r for r in record.rounds if r.round == current)
            lines += ["", f"Round {current + 1}"]
            if current in drafts:
                picks = ", ".join(f"{record.agents[seat]} {card}" for seat, card in drafts[current])
                lines.append(f"  draft (V2) from the display 1..{len(rnd.display)}: {picks}")
            lines.append("  hands:")
            for s, hand in enumerate(rnd.hands):
                lines.append(f"    {_who(record, s)}: {' '.join(map(str, hand))}")
            lines.append("  rows:")
            lines += format_rows(frame.before.rows)
        cards = frame.step.cards or ()
        played = ", ".join(f"{record.agents[s]} {cards[s]}" for s in range(len(cards)))
        lines += ["", f"  Turn {frame.before.turn + 1}: {played}"]
        for p in placements:
            who = _who(record, p.seat)
            if p.reason == "low":
                how = "chose" if record.config.row_choice == "player" else "was given (cheapest, R9b)"
                lines.append(
                    f"    {p.card:>3} {who}: lower than every row, {how} row {p.row}, "
                    f"takes {list(p.taken)} = {_bh(p.bullheads)} (low card, R9)"
                )
            elif p.reason == "full":
                lines.append(
                    f"    {p.card:>3} {who}: sixth card of row {p.row}, "
                    f"takes {list(p.taken)} = {_bh(p.bullheads)} (full row, R8)"
                )
            else:
                lines.append(f"    {p.card:>3} {who}: goes to row {p.row}")
        lines += format_rows(rows_after)
        if len(frame.before.hands[0]) == 1:  # the round's last turn
            rnd = next(r for r in record.rounds if r.round == frame.round)
            took = ", ".join(f"{record.agents[s]} {b}" for s, b in enumerate(rnd.penalties))
            lines += ["", f"  Round {frame.round + 1} bullheads: {took}"]
    best = min(record.totals)
    totals = ", ".join(f"{_who(record, s)} {t}" + (" (wins)" if t == best else "") for s, t in enumerate(record.totals))
    lines += ["", f"Totals: {totals}"]
    return "\n".join(lines)


def _listing(records: Sequence[GameRecord]) -> str:
    lines = [f"{len(records)} game(s); show one with --game N"]
    for i, r in enumerate(records):
        who = ", ".join(f"{a} {t}" for a, t in zip(r.agents, r.totals, strict=True))
        lines.append(f"  --game {i}: game {r.game}, {len(r.rounds)} round(s): {who}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (2 for bad input)."""
    from sixnimmt_env.cli import parser_kwargs

    p = argparse.ArgumentParser(**parser_kwargs("sixnimmt_env.records_text"), description=__doc__.split("\n\n")[0])
    p.add_argument("file", help="a game records file (JSON Lines) written with --save-games")
    p.add_argument("--game", type=int, help="the game to show: its line number in the file, counted from 0")
    args = p.parse_args(argv)
    try:
        records = read_records(args.file)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not records:
        print(f"error: {args.file} holds no games", file=sys.stderr)
        return 2
    if args.game is None:
        print(_listing(records))
        return 0
    if not 0 <= args.game < len(records):
        print(f"error: --game must be 0..{len(records) - 1} ({args.file} holds {len(records)} games)", file=sys.stderr)
        return 2
    try:
        print(format_game(records[args.game]))
    except ReplayError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
