"""Saved games at the play table (issue 39): the database, a game continued exactly after a restart (in process and
with the server killed), memory bounded without losing a game in play, the history and its export."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import play_server
import pytest
from starlette.testclient import TestClient
from test_play import _new

from sixnimmt_env.play.history import history
from sixnimmt_env.play.saved import GameDB, restore
from sixnimmt_env.play.server import create_app
from sixnimmt_env.play.settings import PlaySettings
from sixnimmt_env.play.table import Table
from sixnimmt_env.records import read_records, replay
from sixnimmt_env.rules import engine as E
from sixnimmt_env.stats import Z95

BASE = "http://127.0.0.1"
FOUR = E.GameConfig(num_players=4)
SPECS = ("human", "random", "mc:4", "greedy")


def _client(settings: PlaySettings, db: GameDB | None) -> TestClient:
    app = create_app(settings, db=db)
    return TestClient(app, base_url=BASE, headers={"X-Sixnimmt-Token": app.state.token})


def _move(client: TestClient, gid: str, tab: dict, table: dict, pick: int = 0) -> dict:
    d = table["decision"]
    body = {"version": table["version"], "kind": d["kind"], "value": d["options"][pick]}
    r = client.post(f"/api/games/{gid}/act", headers=tab, json=body)
    assert r.status_code == 200, r.text
    return r.json()["table"]


def _play_out(table: Table, pick: int = 0) -> None:
    while not table.state.done:
        d = table.snapshot()["decision"]
        table.act(table.version, d["kind"], d["options"][pick])


# --------------------------------------------------------------------------- the table's record and streams


def test_a_table_continued_from_its_record_and_streams_plays_the_same_game():
    a = Table(FOUR, SPECS, seed=5)
    b = Table(FOUR, SPECS, seed=5)
    while a.state.round < 1 or a.state.turn < 3:  # into round 2, whose deal comes from the re-played deal stream
        d = a.snapshot()["decision"]
        a.act(a.version, d["kind"], d["options"][-1])
        b.act(b.version, d["kind"], d["options"][-1])
    a.coach(a.version)  # the coach's stream moves too: asked before the save, it must continue from there
    b.coach(b.version)
    saved = json.loads(json.dumps({"record": a.record().to_dict(), "rngs": a.rng_states()}))  # through JSON
    from sixnimmt_env.play.saved import SavedGame
    from sixnimmt_env.records import GameRecord

    record = GameRecord.from_dict(saved["record"])
    c = restore(SavedGame("g", "t", 0.0, 0.0, False, 0, a.version, a.coach_samples, record, saved["rngs"]))
    assert c.snapshot() == a.snapshot() and c.state == a.state  # the log, the last turn, the rounds: all of it
    for table in (b, c):
        d = table.snapshot()["decision"]
        table.act(table.version, d["kind"], d["options"][-1])
    assert c.coach(c.version) == b.coach(b.version)  # the coach's stream goes on from where it was
    _play_out(b, pick=-1)
    _play_out(c, pick=-1)
    assert c.record() == b.record() and c.state.totals == b.state.totals
    assert replay(c.record())  # the finished record replays through the engine
    # the random and mc:4 seats drew from the agents' stream: a fresh stream would play another game
    d = Table(FOUR, SPECS, seed=5, moves=[s.actions(4) for r in record.rounds for s in r.steps])
    _play_out(d, pick=-1)
    assert d.state.totals != b.state.totals


def test_an_unseeded_table_draws_a_seed_it_keeps():
    a, b = Table(FOUR, SPECS), Table(FOUR, SPECS)
    assert a.seed != b.seed and 0 <= a.seed < 2**63 and a.record().seed == a.seed
    again = Table(FOUR, SPECS, seed=a.seed)
    assert again.state == a.state


# --------------------------------------------------------------------------- the database


def test_database_file_wal_and_clear_errors(tmp_path):
    db = GameDB(tmp_path / "deep" / "folder" / "games.sqlite3")  # folders created
    mode = sqlite3.connect(db.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    table = Table(FOUR, SPECS, seed=1)
    _play_out(table)
    db.save("g1", "hash", table)
    loaded = db.load("g1")
    assert loaded.finished and loaded.record == table.record() and loaded.human == 0 and db.load("nope") is None
    assert db.next_index(1) == 1 and db.next_index(2) == 0
    db.close()
    bad = tmp_path / "not_a_db.sqlite3"
    bad.write_text("hello, I am a text file, not SQLite" * 10)
    with pytest.raises(ValueError, match=r"not_a_db\.sqlite3: not a database of saved games"):
        GameDB(bad)
    newer = tmp_path / "newer.sqlite3"
    sqlite3.connect(newer).execute("PRAGMA user_version=7")
    with pytest.raises(ValueError, match="schema version 7; this version reads only 1"):
        GameDB(newer)


def test_every_move_is_saved_and_a_new_server_continues_the_game(tmp_path):
    settings = PlaySettings(FOUR, SPECS, seed=3)
    db = GameDB(tmp_path / "g.sqlite3")
    client = _client(settings, db)
    gid, tab, table = _new(client)
    assert db.load(gid) is None  # not played yet: nothing saved
    for _ in range(7):
        table = _move(client, gid, tab, table)
        assert db.load(gid).version == table["version"]
    assert client.get("/api/unfinished").json()["games"][0]["id"] == gid
    # a second server on the same file (a restart): the tab goes on as before, or another tab claims the game
    again = _client(settings, GameDB(db.path))
    assert again.get(f"/api/games/{gid}", headers=tab).json()["table"] == table
    held = db.load(gid).tab
    r = again.post(f"/api/games/{gid}/claim", json={})
    new_tab = {"X-Tab": r.json()["tab"]}
    assert r.status_code == 200 and r.json()["table"] == table
    assert again.get(f"/api/games/{gid}", headers=tab).status_code == 409  # the old tab lost it, in the file too
    assert db.load(gid).tab != held
    while table["phase"] != "done":
        table = _move(again, gid, new_tab, table)
    reference = Table(FOUR, SPECS, seed=3, index=0)
    _play_out(reference)
    assert db.load(gid).record == reference.record() and table["totals"] == list(reference.state.totals)
    assert again.get("/api/unfinished").json()["games"] == []
    # the second server's next game is game 1 of seed 3, not a repeat of game 0
    _, _, t1 = _new(again)
    assert t1["hands"] == Table(FOUR, SPECS, seed=3, index=1).snapshot()["hands"]


def test_the_server_process_killed_mid_game_continues_the_same_game():
    """The restart figure of benchmarks/play_load.py (tests/play_server.py's driver), with 2 kills: a real server
    killed with SIGKILL mid-game, started again on its file, the game continued to its end and compared with the same
    game without restarts."""
    result = play_server.restarts(kills=2, seed=23)
    assert result["survived"] == 2 and result["same_game"] is True and result["moves"] >= 20


# --------------------------------------------------------------------------- memory


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _store(client: TestClient):
    return client.app.state.store


@pytest.mark.parametrize("saving", [False, True])
def test_memory_is_bounded_and_no_game_in_play_is_lost(tmp_path, saving):
    settings = PlaySettings(E.GameConfig(num_players=2), ("human", "greedy"), seed=1, max_games=3, idle_seconds=60)
    client = _client(settings, GameDB(tmp_path / "g.sqlite3") if saving else None)
    store = _store(client)
    store.clock = clock = _Clock()
    done = _new(client)
    while done[2]["phase"] != "done":
        done = (done[0], done[1], _move(client, *done))
    clock.now += 1
    games = []
    for moves in (1, 1, 0):  # three games in play (one never moved in yet): the finished game leaves for them
        gid, tab, table = _new(client)
        games.append((gid, tab, _move(client, gid, tab, table) if moves else table))
        clock.now += 1
    assert len(store) == 3 and done[0] not in store
    r = client.post("/api/games", json={})
    if not saving:  # nothing may leave: every place holds a game in play
        assert r.status_code == 503 and r.json()["code"] == "full" and len(store) == 3
        assert "all 3 places of this server hold a game in play" in r.json()["error"]
        clock.now += 60  # ... until they are idle
        assert client.post("/api/games", json={}).status_code == 200 and len(store) == 3
        assert client.get(f"/api/games/{games[0][0]}", headers=games[0][1]).status_code == 404
        assert client.get(f"/api/games/{done[0]}", headers=done[1]).status_code == 404
        return
    assert r.status_code == 200 and len(store) == 3  # the least recently used game left memory, saved
    for gid, tab, table in games:  # and every game goes on: read back from the file when asked for
        r = client.get(f"/api/games/{gid}", headers=tab)
        assert r.status_code == 200 and r.json()["table"] == table
        assert len(store) == 3
        _move(client, gid, tab, table)
    clock.now += 61
    _new(client)  # idle games leave memory when a game is created
    assert len(store) == 1
    r = client.get(f"/api/games/{done[0]}", headers=done[1])  # the finished game is in the file
    assert r.status_code == 200 and r.json()["table"] == done[2]


# --------------------------------------------------------------------------- history and export


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """A database with 3 finished one-round games against greedy,random and one unfinished game."""
    path = tmp_path_factory.mktemp("history") / "g.sqlite3"
    settings = PlaySettings(E.GameConfig(num_players=3, episode="round"), ("human", "greedy", "random"), seed=4)
    db = GameDB(path)
    client = _client(settings, db)
    for pick in (0, -1, 0):
        gid, tab, table = _new(client)
        while table["phase"] != "done":
            table = _move(client, gid, tab, table, pick)
    gid, tab, table = _new(client)
    _move(client, gid, tab, table)
    return client, db


def test_history_record_per_opponent(played):
    client, db = played
    h = client.get("/api/history").json()
    assert h["saving"] is True and len(h["games"]) == 4 and sum(g["finished"] for g in h["games"]) == 3
    totals = np.array([g.record.totals for g in db.games(finished=True)])  # (3 games, 3 seats), one round each
    shares = (totals == totals.min(axis=1, keepdims=True)) / (totals == totals.min(axis=1, keepdims=True)).sum(1)[
        :, None
    ]
    mine = shares[:, 0]
    half = Z95 * mine.std(ddof=1) / np.sqrt(3)
    rows = {r["spec"]: r for r in h["opponents"]}
    assert set(rows) == {"greedy", "random"}
    for spec, seat in (("greedy", 1), ("random", 2)):
        row = rows[spec]
        assert (row["games"], row["rounds"]) == (3, 3)
        assert row["bullheads_per_round"] == pytest.approx(totals[:, 0].mean())
        assert row["their_bullheads_per_round"] == pytest.approx(totals[:, seat].mean())
        assert row["win_share"] == pytest.approx(mine.mean()) and row["win_share_ci"] == pytest.approx(half)
    assert h["overall"]["games"] == 3
    assert history(db.games()) == {k: v for k, v in h.items() if k != "saving"}
    page = client.get("/history")
    assert page.status_code == 200 and '<meta name="sixnimmt-token"' in page.text and "history.js" in page.text


def test_export_reads_in_the_replay_tools_and_each_game_replays_at_the_table(played, tmp_path):
    client, db = played
    text = client.get("/api/history/records.jsonl").text
    path = tmp_path / "mine.jsonl"
    path.write_text(text)
    records = read_records(path)
    assert len(records) == 3 and all(replay(r) for r in records)
    out = subprocess.run([sys.executable, "-m", "sixnimmt_env.records_text", str(path), "--game", "0"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0 and "human (seat 0)" in out.stdout
    # each finished game replays at the table, turn by turn, to its recorded totals
    first = db.games(finished=True)[0]
    gid, tab, table = _new(client, saved=first.id)
    assert table["mode"] == "replay"
    while table["phase"] != "done":
        r = client.post(f"/api/games/{gid}/advance", headers=tab, json={"version": table["version"]})
        table = r.json()["table"]
    assert table["totals"] == list(first.record.totals)
    unfinished = db.games(finished=False)[0].id
    r = client.post("/api/games", json={"saved": unfinished})
    assert r.status_code == 400 and "is not over: continue it instead" in r.json()["error"]


def test_history_and_export_from_the_command_line(played, tmp_path):
    _, db = played
    cmd = [sys.executable, "-m", "sixnimmt_env.play", "--db", str(db.path)]
    out = subprocess.run([*cmd, "--history"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "4 games saved: 3 finished, 1 unfinished" in out.stdout
    assert [line.split()[:3] for line in out.stdout.splitlines() if line.startswith("  greedy ")] == [
        ["greedy", "3", "3"]
    ]
    path = tmp_path / "out.jsonl"
    out = subprocess.run([*cmd, "--export", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and f"3 finished games written to {path}" in out.stdout
    assert len(read_records(path)) == 3
    bad = subprocess.run([*cmd[:3], "--no-save", "--history"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--no-save saves nothing: it takes no --db, --history or --export" in bad.stderr


# --------------------------------------------------------------------------- one server per saved-games file


def test_a_file_is_claimed_by_one_server_at_a_time(tmp_path):
    """GameDB.claim_for_server: a second claim on the same file (here from another GameDB in this process, as from
    another process) is refused naming the file, the holder's pid and address; released, the file is free again."""
    from sixnimmt_env.play.saved import DatabaseInUse

    first, second = GameDB(tmp_path / "g.sqlite3"), GameDB(tmp_path / "g.sqlite3")
    claim = first.claim_for_server(command="sixnimmt play")
    claim.note(url="http://127.0.0.1:8066/")
    with pytest.raises(DatabaseInUse) as refused:
        second.claim_for_server()
    message = str(refused.value)
    path = tmp_path / "g.sqlite3"
    assert f"the saved games {path} are in use by another play server (pid {os.getpid()} on " in message
    assert "the table is at http://127.0.0.1:8066/" in message
    assert "start this one with another --db, or with --no-save and no --db" in message
    (tmp_path / "link.sqlite3").symlink_to(tmp_path / "g.sqlite3")  # another spelling of the same file
    with pytest.raises(DatabaseInUse, match="in use by another play server"):
        GameDB(tmp_path / "link.sqlite3").claim_for_server()
    assert GameDB(tmp_path / "other.sqlite3").claim_for_server().held  # another file is another claim
    claim.release()
    assert not (tmp_path / "g.sqlite3.lock.json").exists()
    again = second.claim_for_server()
    assert again.held
    again.release()


def _play_cmd(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "sixnimmt_env.play", "--no-browser", "--port", "0", "--db", str(db), *args]


def test_a_second_server_on_the_same_file_is_refused_and_the_first_goes_on(tmp_path):
    """Two `sixnimmt play` on one --db: the second exits 2 at start naming the file and the first table's address;
    the first still plays and saves; --history reads the file beside it; a killed server's file is served again at
    once, its unfinished game offered."""
    db = tmp_path / "games.sqlite3"
    args = ("--opponents", "greedy,random,random", "--seed", "5")
    first = play_server.start_server(*args, "--db", str(db))
    try:
        client = play_server.Client(first)
        gid, tab, table = client.new_game()
        second = subprocess.run(_play_cmd(db, *args), capture_output=True, text=True, timeout=120)
        assert second.returncode == 2 and second.stdout == ""
        assert f"the saved games {db} are in use by another play server (pid {first.proc.pid} on " in second.stderr
        assert f"the table is at {first.origin}/" in second.stderr
        for _ in range(3):  # the first server is unharmed: it plays and saves every move
            status, d = client.move(gid, tab, table)
            assert status == 200, d
            table = d["table"]
        saved = GameDB(db).load(gid)
        assert saved is not None and saved.version == table["version"] and not saved.finished
        history = subprocess.run(
            [sys.executable, "-m", "sixnimmt_env.play", "--db", str(db), "--history"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert history.returncode == 0, history.stderr
        assert f"saved games: {db}" in history.stdout and "1 games saved: 0 finished, 1 unfinished" in history.stdout
        missing = tmp_path / "typo" / "games.sqlite3"  # a reader never creates a database
        history = subprocess.run(
            [sys.executable, "-m", "sixnimmt_env.play", "--db", str(missing), "--history"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert history.returncode == 2 and "no saved games there (the file does not exist)" in history.stderr
        assert not missing.parent.exists()
        other = play_server.start_server(*args, "--db", str(tmp_path / "other.sqlite3"))  # another file: starts
        other.stop()
        throwaway = play_server.start_server(*args, "--no-save")  # saves nothing: starts
        throwaway.stop()
        first.kill()  # SIGKILL: no clean-up; the operating system drops the claim with the process
        third = play_server.start_server(*args, "--db", str(db))
        try:
            status, d = play_server.Client(third).request("GET", f"/api/games/{gid}", tab=tab)
            assert status == 200 and d["table"] == table
        finally:
            third.stop()
    finally:
        first.stop()
