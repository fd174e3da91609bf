"""``python -m sixnimmt_env.play``: the play table in the browser (or, with ``--tui``, in the terminal).

Examples::

    python -m sixnimmt_env.play                                        # you against mc:64, greedy, greedy; to 66
    python -m sixnimmt_env.play --opponents ppo:runs/ppo_4p/<stamp>/best_model.zip,mc:64,greedy
    python -m sixnimmt_env.play --opponents greedy --players 6 --variant logic --episode round
    python -m sixnimmt_env.play --watch --agents mc:64,greedy,random,lowest
    python -m sixnimmt_env.play --replay runs/arena/games.jsonl       # an arena's --save-games file
    python -m sixnimmt_env.play --tui                                  # in the terminal
    python -m sixnimmt_env.play --history                              # your saved games and record, then exit
    python -m sixnimmt_env.play --export my_games.jsonl                # your finished games as a records file

The server listens on 127.0.0.1 (``--host`` to change it) at ``--port`` (default 8066; 0 picks a free port) and
stops with Ctrl-C. It saves every game as it is played (:mod:`sixnimmt_env.play.saved`) to ``--db`` (default: the
user's data folder, :func:`~sixnimmt_env.play.saved.default_db_path`), so a restarted server offers to continue
every unfinished game; ``--no-save`` saves nothing. The terminal mode saves nothing. One server serves a saved-games
file at a time: a second server on the same ``--db`` stops at start (:class:`~sixnimmt_env.play.saved.DatabaseInUse`,
naming the running table's address), while ``--history`` and ``--export`` read it beside the running server.
"""

from __future__ import annotations

import argparse
import shlex
import socket
import sqlite3
import sys
import threading
import webbrowser
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sixnimmt_env.agents import parse_lineup
from sixnimmt_env.play.settings import PlaySettings
from sixnimmt_env.rules.engine import GameConfig

if TYPE_CHECKING:
    from sixnimmt_env.play.saved import GameDB

DEFAULT_OPPONENTS = "mc:64,greedy,greedy"


def _port(text: str) -> int:
    """``--port``: an integer 0..65535 (argparse turns the ``ValueError`` into a one-line usage error)."""
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0..65535, got {port}")
    return port


def _parser() -> argparse.ArgumentParser:
    from sixnimmt_env.cli import parser_kwargs

    p = argparse.ArgumentParser(
        **parser_kwargs("sixnimmt_env.play"),
        description="Play 6 nimmt! against agents, watch agents play, or replay a recorded game, in the browser "
        "(a local web server) or in the terminal (--tui).",
    )
    p.add_argument(
        "--opponents",
        default=None,
        help=f"comma-separated agent specs, one per opponent seat, e.g. mc:64,ppo:model.zip,greedy "
        f"(default {DEFAULT_OPPONENTS}); a single spec fills every opponent seat of --players",
    )
    p.add_argument("--players", type=int, default=None, help="players at the table, you included (2..10)")
    p.add_argument("--variant", default="standard", help="standard | tactics | logic (RULES.md V1, V2)")
    p.add_argument("--row-choice", default="player", help="player | cheapest: who picks a low card's row (R9b)")
    p.add_argument("--episode", default="game", help="game (to the end score, default) | round (one round)")
    p.add_argument("--end-score", type=int, default=66, help="a game ends after a round reaching this (R12, 66)")
    p.add_argument("--seed", type=int, default=None, help="seed: the same seed and choices give the same game")
    p.add_argument("--watch", action="store_true", help="watch agents only (give them with --agents)")
    p.add_argument("--agents", default=None, help="with --watch: comma-separated agent specs, one per seat")
    p.add_argument("--replay", default=None, metavar="FILE", help="replay the game records of FILE (--save-games)")
    p.add_argument("--coach-samples", type=int, default=1000, help="worlds the coach searches (mc:N, default 1000)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine)")
    p.add_argument("--port", type=_port, default=8066, help="port 0..65535 (default 8066; 0 picks a free one)")
    p.add_argument("--no-browser", action="store_true", help="do not open the browser")
    p.add_argument("--tui", action="store_true", help="play (or watch) in the terminal instead of the browser")
    p.add_argument("--db", default=None, metavar="PATH", help="the saved games' SQLite file (default: in the user's "
                   "data folder, e.g. ~/.local/share/sixnimmt/play.sqlite3)")  # fmt: skip
    p.add_argument("--no-save", action="store_true", help="a throw-away table: save no game (no history, no resume)")
    p.add_argument("--history", action="store_true", help="print your saved games and record per opponent, then exit")
    p.add_argument("--export", default=None, metavar="FILE", help="write your finished games to the records file FILE "
                   "(read by python -m sixnimmt_env.records_text and --replay), then exit")  # fmt: skip
    return p


def settings_from_args(args: argparse.Namespace) -> PlaySettings:
    """The :class:`~sixnimmt_env.play.server.PlaySettings` the options describe.

    Raises:
        ValueError: a message naming the option and the value: contradicting options, a player count that does
            not fit the agents, a bad rule setting, an unreadable records file.
    """
    records: tuple = ()
    if args.replay is not None:
        if args.watch or args.opponents or args.agents:
            raise ValueError("--replay shows recorded games: it takes no --watch, --agents or --opponents")
        from sixnimmt_env.records import read_records

        try:
            records = tuple(read_records(args.replay))
        except OSError as e:
            raise ValueError(f"--replay {args.replay!r}: {e.strerror or e}") from None
        if not records:
            raise ValueError(f"--replay {args.replay!r}: the file holds no game records")
        first = records[0]
        return PlaySettings(first.config, tuple(first.agents), None, args.coach_samples, records)
    if args.watch:
        if args.opponents:
            raise ValueError("--watch seats agents only: give them with --agents, not --opponents")
        if not args.agents:
            raise ValueError("--watch needs --agents, e.g. --agents mc:64,greedy,random,lowest")
        specs = parse_lineup(args.agents, "--agents")
        if args.players is not None and args.players != len(specs):
            raise ValueError(f"--players {args.players} does not match the {len(specs)} agents of --agents")
    else:
        if args.agents:
            raise ValueError("--agents is for --watch; to play, name your opponents with --opponents")
        opponents = parse_lineup(args.opponents or DEFAULT_OPPONENTS, "--opponents")
        if args.players is not None:
            if len(opponents) == 1:
                opponents = opponents * max(args.players - 1, 1)
            elif len(opponents) != args.players - 1:
                raise ValueError(
                    f"--players {args.players} needs {args.players - 1} opponents, --opponents names "
                    f"{len(opponents)} ({','.join(opponents)}); give one spec to fill every seat"
                )
        specs = ["human", *opponents]
    config = GameConfig(
        num_players=len(specs),
        variant=args.variant,
        row_choice=args.row_choice,
        end_score=args.end_score,
        episode=args.episode,
    )
    if isinstance(args.coach_samples, bool) or args.coach_samples < 1:
        raise ValueError(f"--coach-samples must be a positive integer, got {args.coach_samples}")
    return PlaySettings(config, tuple(specs), args.seed, args.coach_samples)


def open_db(args: argparse.Namespace) -> GameDB | None:
    """The saved games of ``--db`` (default :func:`~sixnimmt_env.play.saved.default_db_path`); ``None`` with
    ``--no-save``.

    Raises:
        ValueError: contradicting options, a file that cannot be opened as saved games, or (``--history``,
            ``--export``) no file at all (the message names it).
    """
    from sixnimmt_env.play.saved import GameDB, default_db_path

    if args.no_save:
        if args.db or args.history or args.export:
            raise ValueError("--no-save saves nothing: it takes no --db, --history or --export")
        return None
    path = Path(args.db) if args.db else default_db_path()
    if (args.history or args.export) and not path.exists():  # a reader never creates the file (a typo in --db)
        raise ValueError(f"--db {str(path)!r}: no saved games there (the file does not exist)")
    try:
        return GameDB(path)
    except (OSError, sqlite3.Error) as e:
        raise ValueError(f"--db {str(path)!r}: cannot open it ({e})") from None


def _history(args: argparse.Namespace, db: GameDB) -> None:
    """``--history`` and ``--export``: print the history, or write the records file."""
    from sixnimmt_env.play.history import export_records, format_history, history

    games = db.games()
    if args.export:
        count = export_records(games, args.export)
        print(f"{count} finished games written to {args.export} (from {db.path})")
    if args.history:
        print(f"saved games: {db.path}")
        print(format_history(history(games)))


def main(argv: Sequence[str] | None = None) -> None:
    """Run the play table from the command line (blocks until Ctrl-C, or the terminal app quits)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.history or args.export:
        try:
            db = open_db(args)
            assert db is not None  # open_db refuses --no-save with --history or --export
            _history(args, db)
        except (ValueError, OSError) as e:
            parser.error(str(e))
        return
    try:
        settings = settings_from_args(args)
    except ValueError as e:
        parser.error(str(e))
    try:
        if args.tui:
            from sixnimmt_env.play.tui import run_tui
        else:
            from sixnimmt_env.play.server import LOCAL_HOSTS, bind, create_app, make_server
    except ImportError as e:
        parser.error(f"the play table needs the 'play' extra ({e}): pip install -e '.[play]' (make install does)")
    from sixnimmt_env.play.coach import warm_up

    threading.Thread(target=warm_up, daemon=True).start()  # compile the coach's kernels while the page loads
    if args.tui:
        try:
            run_tui(settings)
        except ValueError as e:
            parser.error(str(e))
        return
    # A local server answers only requests addressed to a local name (against DNS rebinding); one told to listen
    # on another address answers every name it is reached by.
    local = args.host in LOCAL_HOSTS
    try:
        db = None if settings.mode == "replay" else open_db(args)
        # Claimed before the port is bound, so that a second server on the default port and database is told about
        # the first table rather than about a port in use.
        command = shlex.join(["sixnimmt", "play", *(sys.argv[1:] if argv is None else argv)])
        claim = None if db is None else db.claim_for_server(command=command)
        app = create_app(settings, allowed_hosts=LOCAL_HOSTS if local else ["*"], db=db)
    except ValueError as e:
        parser.error(str(e))
    try:
        sock = bind(args.host, args.port)
    except OSError as e:
        what = "check --host" if isinstance(e, socket.gaierror) else "pick another --port (0: any free)"
        parser.error(f"cannot listen on {args.host}:{args.port} ({e.strerror or e}); {what}")
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    if claim is not None:
        claim.note(url=url)
    server = make_server(app)
    print(f"6 nimmt! play table ({settings.mode}) at {url}  (Ctrl-C stops it)", flush=True)
    if not local:
        print(f"listening on {args.host}: anyone who can reach this address can open the table", flush=True)
    if db is not None:
        unfinished = sum(1 for g in db.games(finished=False) if g.record.rounds)
        offer = f"; {unfinished} unfinished game(s): the page offers to continue them" if unfinished else ""
        print(f"games are saved to {db.path}{offer}", flush=True)
    if not args.no_browser:

        def open_when_ready() -> None:
            while not server.started and not server.should_exit:
                threading.Event().wait(0.05)
            if server.started:
                webbrowser.open(url)

        threading.Thread(target=open_when_ready, daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        if claim is not None:
            claim.release()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
