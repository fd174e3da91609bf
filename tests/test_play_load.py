"""The play table under load (issue 39): clients on a real server (a subprocess on a free 127.0.0.1 port, games
saved to a temporary database) create games and play them to the end, driven by tests/play_server.py (as
benchmarks/play_load.py drives it). No request may fail and no game in play may be lost (before, 100 clients lost
13,461 of 31,112 moves to ``404 not_found``: the store dropped games still being played). CI runs 50 clients for 20 s;
``-m slow`` adds 100 clients for 60 s."""

from __future__ import annotations

import play_server
import pytest


@pytest.mark.parametrize(
    ("clients", "seconds", "saving"),
    [
        (50, 20, True),
        pytest.param(100, 60, True, marks=pytest.mark.slow),
        pytest.param(100, 60, False, marks=pytest.mark.slow),
    ],
)
def test_no_error_and_no_game_lost_under_load(tmp_path, clients, seconds, saving):
    save = ["--db", str(tmp_path / "games.sqlite3")] if saving else ["--no-save"]
    server = play_server.start_server("--opponents", "greedy,greedy,greedy", *save)
    try:
        result = play_server.run_load(server, clients, seconds)
        assert server.proc.poll() is None  # still serving
    finally:
        server.stop()
    assert (result.errors, result.lost) == (0, 0), result.error_samples
    assert result.moves >= 10 * clients and result.games_finished >= 1, result.line()
    if saving:
        from sixnimmt_env.play.saved import GameDB

        games = GameDB(tmp_path / "games.sqlite3").games()
        assert sum(g.finished for g in games) == result.games_finished  # every finished game is in the file
