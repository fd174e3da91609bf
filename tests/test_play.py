"""The play table (issue 14): the turn narration, the API through Starlette's test client, the coach, the
terminal mode (Textual's pilot) and the command line."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from importlib import resources

import numpy as np
import pytest
from starlette.testclient import TestClient

from sixnimmt_env.agents import MonteCarloAgent, make_agent
from sixnimmt_env.play.__main__ import _parser, settings_from_args
from sixnimmt_env.play.coach import advise, warm_up
from sixnimmt_env.play.server import BackgroundServer, create_app
from sixnimmt_env.play.settings import PlaySettings
from sixnimmt_env.play.table import Table, TableError, narrate_turn
from sixnimmt_env.rules import engine as E

BASE = "http://127.0.0.1"


def _client(settings: PlaySettings, **kwargs) -> TestClient:
    """A test client of the app, sending the server's token as the table's page does."""
    app = create_app(settings)
    return TestClient(app, base_url=BASE, headers={"X-Sixnimmt-Token": app.state.token}, **kwargs)


def _new(client: TestClient, **body) -> tuple[str, dict, dict]:
    r = client.post("/api/games", json=body)
    assert r.status_code == 200, r.text
    data = r.json()
    return data["game"], {"X-Tab": data["tab"]}, data["table"]


def _engine_game(config, specs, seed, choose, index=0):
    """Play the game the table plays for ``seed`` straight through the engine: the person's decisions from
    ``choose(state, seat, kind)``, the agents' from the same random streams in the same order."""
    deal_rng = np.random.default_rng([seed, index])
    agent_rng = np.random.default_rng([seed, index, 1])
    agents = {i: make_agent(s) for i, s in enumerate(specs) if s != "human"}
    human = specs.index("human") if "human" in specs else None
    state = E.new_game(config, deal_rng)
    while not state.done:
        n = config.num_players
        actions = [E.NOOP] * n
        seats = range(n) if state.phase == E.SELECT else (state.chooser,)
        for s in seats:
            if s != human:
                actions[s] = agents[s].act(E.view(state, s), agent_rng)
        if human in seats:
            kind = {E.SELECT: "card", E.CHOOSE_ROW: "row", E.DRAFT: "draft"}[state.phase]
            value = choose(state, human, kind)
            actions[human] = E.ROW_ACTION + value if kind == "row" else value - 1
        state, _ = E.step(state, actions, deal_rng)
    return state


def _lowest_choice(state, seat, kind):
    """The person's rule in these tests: the lowest card, row 1 (index 0) for a low card, the lowest display card."""
    if kind == "card":
        return state.hands[seat][0]
    if kind == "row":
        return 0
    return state.display[0]


# --------------------------------------------------------------------------- narration (R6-R9, E1, E2)


def test_narration_of_e1_and_e2():
    # E1: rows [50] [60] [70] [80]; A plays 5 (low, takes row [70]), B plays 71
    e1 = narrate_turn([[50], [60], [70], [80]], [5, 71], low_row=2)
    assert [(p.seat, p.card, p.row, p.kind, p.taken, p.bullheads) for p in e1] == [
        (0, 5, 2, "low", (70,), 3),
        (1, 71, 1, "placed", (), 0),
    ]
    assert e1[-1].rows == ((50,), (60, 71), (5,), (80,))
    # E2: rows [10..14] [50] [60] [70]; plays 51, 61, 15: the player of 15 takes 11 bullheads (R8)
    e2 = narrate_turn([[10, 11, 12, 13, 14], [50], [60], [70]], [51, 61, 15])
    assert [(p.card, p.kind, p.bullheads) for p in e2] == [(15, "full", 11), (51, "placed", 0), (61, "placed", 0)]
    assert e2[0].taken == (10, 11, 12, 13, 14)
    assert e2[-1].rows == ((15,), (50, 51), (60, 61), (70,))


def test_narration_matches_the_engine_on_random_turns():
    rng = np.random.default_rng(1)
    config = E.GameConfig(num_players=5, episode="round", row_choice="cheapest")
    for _ in range(200):
        state = E.new_game(config, rng)
        while not state.done:
            actions = [int(rng.choice(E.legal_actions(state, s))) for s in range(5)]
            after, pen = E.step(state, actions, rng)
            placements = narrate_turn(state.rows, [a + 1 for a in actions])
            took = [0] * 5
            for p in placements:
                took[p.seat] += p.bullheads
            assert tuple(took) == pen
            if not after.done:
                assert placements[-1].rows == after.rows
            state = after


# --------------------------------------------------------------------------- the API


def test_whole_game_to_66_through_the_api_against_greedy():
    config = E.GameConfig(num_players=4)
    specs = ("human", "greedy", "greedy", "greedy")
    client = _client(PlaySettings(config, specs, seed=11))
    gid, tab, table = _new(client)
    assert table["mode"] == "play" and table["names"] == ["You", "greedy 1", "greedy 2", "greedy 3"]
    requests = 0
    while table["phase"] != "done":
        d = table["decision"]
        value = d["options"][0]  # the lowest card, row 1, the lowest display card
        r = client.post(
            f"/api/games/{gid}/act", headers=tab, json={"version": table["version"], "kind": d["kind"], "value": value}
        )
        assert r.status_code == 200, r.text
        table = r.json()["table"]
        requests += 1
    expected = _engine_game(config, list(specs), 11, _lowest_choice)
    assert table["totals"] == list(expected.totals)
    assert max(table["totals"]) >= 66  # R12: a whole game, ended after the round that reached 66
    assert len(table["rounds"]) == expected.round + 1 > 1
    assert [r["round"] for r in table["rounds"]] == list(range(1, expected.round + 2))
    assert table["rounds"][-1]["totals"] == table["totals"]
    assert table["ranking"][0]["total"] == min(table["totals"])
    assert requests >= 10 * len(table["rounds"])  # a card for every turn of every round (and any row choices)
    # the game is over: one more decision is refused
    r = client.post(
        f"/api/games/{gid}/act", headers=tab, json={"version": table["version"], "kind": "card", "value": 1}
    )
    assert r.status_code == 409 and r.json()["code"] == "over"


def test_illegal_requests_are_rejected_and_change_nothing():
    config = E.GameConfig(num_players=3, episode="round")
    client = _client(PlaySettings(config, ("human", "random", "mc:8"), seed=4))
    gid, tab, table = _new(client)
    hand = table["hands"]["0"]
    absent = next(c for c in range(1, 105) if c not in hand)
    v = table["version"]
    bad = [
        ({"version": v, "kind": "card", "value": absent}, 400, "illegal", f"card {absent} is not allowed now"),
        ({"version": v, "kind": "card", "value": 0}, 400, "illegal", "card 0 is not allowed now"),
        ({"version": v, "kind": "card", "value": True}, 400, "bad_request", "card must be an integer"),
        ({"version": v, "kind": "card", "value": "12"}, 400, "bad_request", "card must be an integer"),
        ({"version": v, "kind": "row", "value": 0}, 400, "bad_request", "expected a 'card' decision now"),
        ({"version": v, "kind": "draft", "value": hand[0]}, 400, "bad_request", "expected a 'card' decision"),
        ({"version": v + 1, "kind": "card", "value": hand[0]}, 409, "stale", "stale request"),
        ({"version": v - 1, "kind": "card", "value": hand[0]}, 409, "stale", "stale request"),
        ({"version": "0", "kind": "card", "value": hand[0]}, 400, "bad_request", "version must be an integer"),
        ({"kind": "card", "value": hand[0]}, 400, "bad_request", "version must be an integer"),
        (
            {"version": v, "kind": "card", "value": hand[0], "card": hand[0]},
            400,
            "bad_request",
            "unknown key(s) 'card' in the request body; allowed: version, kind, value",
        ),
    ]
    for body, status, code, message in bad:
        r = client.post(f"/api/games/{gid}/act", headers=tab, json=body)
        assert (r.status_code, r.json()["code"]) == (status, code), (body, r.text)
        assert message in r.json()["error"]
        assert client.get(f"/api/games/{gid}", headers=tab).json()["table"] == table  # nothing changed
    # malformed bodies, unknown games, other tabs, a watched table's move
    r = client.post(f"/api/games/{gid}/act", headers={**tab, "Content-Type": "application/json"}, content=b"{not json")
    assert r.status_code == 400 and "JSON object" in r.json()["error"]
    r = client.post(f"/api/games/{gid}/act", headers=tab, json=[1, 2])
    assert r.status_code == 400 and "got list" in r.json()["error"]
    r = client.post("/api/games/nosuchgame/act", headers=tab, json={"version": v, "kind": "card", "value": hand[0]})
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    for headers in ({}, {"X-Tab": "guess"}):
        r = client.post(f"/api/games/{gid}/act", headers=headers, json={"version": v, "kind": "card", "value": hand[0]})
        assert r.status_code == 409 and r.json()["code"] == "other_tab"
        assert "open in another tab" in r.json()["error"]
    r = client.post(f"/api/games/{gid}/advance", headers=tab, json={"version": v})
    assert r.status_code == 409 and r.json()["code"] == "not_yours"
    assert client.get(f"/api/games/{gid}", headers=tab).json()["table"] == table
    # the legal request after all that: the game goes on exactly as if nothing had been tried
    r = client.post(f"/api/games/{gid}/act", headers=tab, json={"version": v, "kind": "card", "value": hand[0]})
    assert r.status_code == 200 and r.json()["table"]["version"] > v
    # the same request again (a double click) is stale
    r = client.post(f"/api/games/{gid}/act", headers=tab, json={"version": v, "kind": "card", "value": hand[1]})
    assert r.status_code == 409 and r.json()["code"] == "stale"


def test_rejected_requests_do_not_touch_the_agents_random_stream():
    config = E.GameConfig(num_players=3, episode="round")
    a = Table(config, ["human", "random", "random"], seed=9)
    b = Table(config, ["human", "random", "random"], seed=9)
    with pytest.raises(TableError, match="not allowed now"):
        a.act(a.version, "card", 105)
    for table in (a, b):
        while not table.state.done:
            d = table.snapshot()["decision"]
            table.act(table.version, d["kind"], d["options"][-1])
    assert a.state == b.state and a.log == b.log


def test_a_second_tab_gets_a_clear_error_and_can_take_the_game_over():
    client = _client(PlaySettings(E.GameConfig(num_players=2, episode="round"), ("human", "greedy"), seed=1))
    gid, tab, table = _new(client)
    r = client.get(f"/api/games/{gid}")  # a second tab: the id, but not the tab token
    assert r.status_code == 409 and r.json()["code"] == "other_tab"
    r = client.post(f"/api/games/{gid}/claim", json={})
    assert r.status_code == 200 and r.json()["table"] == table
    new_tab = {"X-Tab": r.json()["tab"]}
    r = client.get(f"/api/games/{gid}", headers=tab)  # the first tab has lost it
    assert r.status_code == 409 and r.json()["code"] == "other_tab"
    card = table["hands"]["0"][0]
    r = client.post(f"/api/games/{gid}/act", headers=new_tab, json={"version": 0, "kind": "card", "value": card})
    assert r.status_code == 200


def test_games_are_isolated_and_their_ids_unguessable():
    client = _client(PlaySettings(E.GameConfig(num_players=2, episode="round"), ("human", "greedy"), seed=2))
    (g1, t1, s1), (g2, t2, s2) = _new(client), _new(client)
    assert g1 != g2 and len(g1) >= 22 and len(t1["X-Tab"]) >= 22
    assert s1["hands"] != s2["hands"]  # game k is seeded [seed, k]
    assert client.get(f"/api/games/{g2}", headers=t1).status_code == 409  # one game's token opens no other game
    card = s1["hands"]["0"][0]
    assert client.post(f"/api/games/{g1}/act", headers=t1, json={"version": 0, "kind": "card", "value": card})
    assert client.get(f"/api/games/{g2}", headers=t2).json()["table"] == s2


def test_a_play_table_shows_no_other_hand():
    client = _client(PlaySettings(E.GameConfig(num_players=4), ("human", "greedy", "random", "lowest"), seed=3))
    table = _new(client)[2]
    assert set(table["hands"]) == {"0"} and table["hand_sizes"] == [10, 10, 10, 10]
    assert "stock" not in json.dumps(table)
    watch = _client(PlaySettings(E.GameConfig(num_players=3), ("greedy", "random", "lowest"), seed=3))
    _, _, wt = _new(watch)
    assert wt["mode"] == "watch" and set(wt["hands"]) == {"0", "1", "2"}  # watching: every hand is shown


def test_a_row_choice_through_the_api():
    # seat 0 holds 5, lower than every row (R9): the person chooses row 3, which holds 70 (3 bullheads, E1)
    config = E.GameConfig(num_players=2, episode="round")
    start = E.from_position(config, [[5, 90], [71, 72]], [[50], [60], [70], [80]])
    table = Table(config, ["human", "lowest"], seed=0, start=start)
    table.act(0, "card", 5)
    snap = table.snapshot()
    assert snap["phase"] == "choose_row" and snap["decision"] == {"kind": "row", "options": [0, 1, 2, 3]}
    assert snap["pending"] == {"cards": [5, 71], "chooser": 0}
    with pytest.raises(TableError, match="row 4 is not allowed now; allowed: \\[0, 1, 2, 3\\]"):
        table.act(snap["version"], "row", 4)
    table.act(snap["version"], "row", 2)
    turn = table.snapshot()["last_turn"]
    assert [(p["card"], p["row"], p["kind"], p["bullheads"]) for p in turn["placements"]] == [
        (5, 2, "low", 3),
        (71, 1, "placed", 0),
    ]
    assert turn["placements"][0]["text"] == "You: 5 is lower than every row, takes row 3: 70 (3 bullheads)"
    assert table.state.rows == ((50,), (60, 71), (5,), (80,)) and table.state.round_penalties == (3, 0)


def test_the_logic_draft_through_the_table():
    config = E.GameConfig(num_players=3, variant="logic", episode="round")
    table = Table(config, ["human", "greedy", "random"], seed=5)
    specs = ["human", "greedy", "random"]
    while not table.state.done:
        d = table.snapshot()["decision"]
        table.act(table.version, d["kind"], d["options"][0])
    assert table.state.totals == _engine_game(config, specs, 5, _lowest_choice).totals
    assert sum("from the display" in line for line in table.log) == 30  # every pick of the draft is told


def test_watching_agents_matches_the_engine():
    config = E.GameConfig(num_players=4, end_score=30)
    specs = ["random", "greedy", "mc:4", "random"]
    client = _client(PlaySettings(config, tuple(specs), seed=8))
    gid, tab, table = _new(client)
    steps = 0
    while table["phase"] != "done":
        r = client.post(f"/api/games/{gid}/advance", headers=tab, json={"version": table["version"]})
        assert r.status_code == 200, r.text
        table = r.json()["table"]
        steps += 1
        assert table["last_turn"]["id"] == steps  # one whole turn per step
    assert table["totals"] == list(_engine_game(config, specs, 8, None).totals)
    r = client.post(
        f"/api/games/{gid}/act", headers=tab, json={"version": table["version"], "kind": "card", "value": 1}
    )
    assert r.status_code == 409


def test_page_and_static_files_are_served_from_the_package_and_need_no_network():
    client = _client(PlaySettings(E.GameConfig(num_players=2), ("human", "greedy")))
    page = client.get("/")
    assert page.status_code == 200 and "<title>6 nimmt! · play table</title>" in page.text
    for name in ("table.js", "table.css"):
        r = client.get(f"/static/{name}")
        assert r.status_code == 200 and len(r.text) > 1000
    static = resources.files("sixnimmt_env.play") / "static"
    for name in ("index.html", "table.js", "table.css", "saved.js", "history.html", "history.js", "history.css"):
        text = (static / name).read_text()
        assert "http://" not in text and "https://" not in text and "//cdn" not in text  # works offline
    settings = client.get("/api/settings").json()
    assert settings["mode"] == "play" and settings["bullheads"][55] == 7 and len(settings["bullheads"]) == 105
    # a request addressed to another host name (DNS rebinding) is refused
    assert client.get("/api/settings", headers={"Host": "evil.example"}).status_code == 400


class _BrokenAgent:
    def act(self, view, rng):
        return 500  # not a legal action anywhere


def test_an_agents_illegal_action_is_reported_and_changes_nothing(monkeypatch):
    from sixnimmt_env import agents

    monkeypatch.setattr(agents, "_REGISTRY", agents.registered_factories())  # restored after the test
    agents.register_agent("broken-test", lambda spec: _BrokenAgent())
    client = _client(PlaySettings(E.GameConfig(num_players=2), ("human", "broken-test")), raise_server_exceptions=False)
    gid, tab, table = _new(client)
    body = {"version": 0, "kind": "card", "value": table["hands"]["0"][0]}
    r = client.post(f"/api/games/{gid}/act", headers=tab, json=body)
    assert r.status_code == 500 and r.json()["code"] == "internal"
    assert "agent broken-test (seat 1): action 500 is not legal" in r.json()["error"]
    assert client.get(f"/api/games/{gid}", headers=tab).json()["table"] == table


def test_unknown_agent_spec_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown agent spec 'grebby'; known: random, lowest"):
        create_app(PlaySettings(E.GameConfig(num_players=2), ("human", "grebby")))


# --------------------------------------------------------------------------- the coach


def test_coach_scores_every_card_and_marks_the_mc_agents_choice():
    warm_up()
    config = E.GameConfig(num_players=4, episode="round")
    state = E.new_game(config, np.random.default_rng(12))
    view = E.view(state, 0)
    advice = advise(view, 200, np.random.default_rng(3))
    assert advice.kind == "card" and advice.options == state.hands[0] and len(advice.expected) == 10
    assert advice.best == advice.options[int(np.argmin(advice.expected))]
    # the mc:200 agent, drawing its worlds from the same stream, plays the coach's best card
    assert MonteCarloAgent(200).act(view, np.random.default_rng(3)) == advice.best - 1
    # own minus the others' mean over the rest of the round: the scores of a turn sum to at most 0 on average
    assert min(advice.expected) < 0
    assert len(advice.bullheads) == 10 and all(b >= 0 for b in advice.bullheads)


def test_coach_reads_only_the_persons_view():
    config = E.GameConfig(num_players=3, episode="round")
    rows = [[10], [30], [50], [70]]
    a = E.from_position(config, [[1, 22, 45, 66, 90], [2, 3, 4, 5, 6], [7, 8, 9, 11, 12]], rows)
    b = E.from_position(config, [[1, 22, 45, 66, 90], [100, 101, 102, 103, 104], [95, 96, 97, 98, 99]], rows)
    advice_a = advise(E.view(a, 0), 300, np.random.default_rng(0))
    advice_b = advise(E.view(b, 0), 300, np.random.default_rng(0))
    assert advice_a == advice_b  # other hands differ, the advice does not (R4)


def test_coach_on_a_row_choice_and_within_a_second():
    warm_up()
    config = E.GameConfig(num_players=2, episode="round")
    start = E.from_position(config, [[5, 90], [71, 72]], [[50], [60], [70], [80]])
    table = Table(config, ["human", "lowest"], seed=0, start=start, coach_samples=1000)
    table.act(0, "card", 5)
    advice = table.coach(table.version)
    assert advice.kind == "row" and advice.options == (0, 1, 2, 3) and advice.take_now == (3, 3, 3, 3)
    # whichever row 5 takes (3 bullheads), 71 then 72 and 90 go on rows without a penalty: 3 bullheads in all
    assert advice.bullheads == (3.0, 3.0, 3.0, 3.0)
    assert advice is table.coach(table.version)  # asked again: the same answer, no new search
    # the time limit: 1,000 worlds on a full 10-player hand, well within a second on this machine
    big = Table(E.GameConfig(num_players=10), ["human", *["greedy"] * 9], seed=1, coach_samples=1000)
    t0 = time.perf_counter()
    advice = big.coach(big.version)
    elapsed = time.perf_counter() - t0
    assert len(advice.options) == 10 and advice.samples == 1000
    assert elapsed < 1.0, f"the coach took {elapsed:.2f} s"


def test_coach_through_the_api():
    client = _client(PlaySettings(E.GameConfig(num_players=3), ("human", "greedy", "greedy"), seed=6, coach_samples=64))
    gid, tab, table = _new(client)
    r = client.get(f"/api/games/{gid}/coach?version={table['version']}", headers=tab)
    advice = r.json()["advice"]
    assert r.status_code == 200 and advice["options"] == table["hands"]["0"] and advice["samples"] == 64
    assert advice["best"] in advice["options"] and advice["take_now"] is None
    assert client.get(f"/api/games/{gid}/coach?version=7", headers=tab).json()["code"] == "stale"
    assert client.get(f"/api/games/{gid}/coach?version=x", headers=tab).status_code == 400
    assert client.get(f"/api/games/{gid}", headers=tab).json()["table"] == table  # asking changed nothing


# --------------------------------------------------------------------------- terminal mode


@pytest.mark.parametrize("variant", ["standard", "logic"])
def test_tui_plays_one_round_with_the_pilot(variant):
    from sixnimmt_env.play.tui import PlayApp

    config = E.GameConfig(num_players=4, episode="round", variant=variant)
    specs = ("human", "greedy", "random", "mc:8")
    app = PlayApp(PlaySettings(config, specs, seed=21, coach_samples=50))

    async def play() -> tuple[int, str]:
        keys = 0
        async with app.run_test(size=(150, 48)) as pilot:
            await pilot.press("c")  # the coach on
            while not app.table.state.done:
                d = app.table.snapshot()["decision"]
                if d["kind"] == "draft":  # the open display is shown, the marker on its lowest card
                    assert str(app.query_one("#reveal").render()).startswith("Display: ")
                await pilot.press("1" if d["kind"] == "row" else "enter")  # row 1, or the marked (lowest) card
                keys += 1
            await pilot.pause()
            status = str(app.query_one("#status").render())
        return keys, status

    keys, status = asyncio.run(play())
    expected = _engine_game(config, list(specs), 21, _lowest_choice)
    assert app.table.state.totals == expected.totals
    assert keys >= 10 and status.startswith("Game over:")


# --------------------------------------------------------------------------- command line


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=2) as r:
        return json.loads(r.read())


def _args(*argv: str):
    return settings_from_args(_parser().parse_args(list(argv)))


def test_command_line_settings():
    s = _args("--opponents", "greedy", "--players", "6", "--variant", "logic", "--episode", "round", "--seed", "3")
    assert s.specs == ("human", *["greedy"] * 5) and s.config.variant == "logic" and s.seed == 3 and s.mode == "play"
    s = _args()
    assert s.specs == ("human", "mc:64", "greedy", "greedy") and s.config.end_score == 66 and s.config.episode == "game"
    s = _args("--watch", "--agents", "mc:64,greedy,random,lowest", "--end-score", "40")
    assert s.mode == "watch" and s.config.end_score == 40 and s.config.num_players == 4
    for argv, message in [
        (["--opponents", "greedy,random", "--players", "5"], "--players 5 needs 4 opponents"),
        (["--watch"], "--watch needs --agents"),
        (["--watch", "--agents", "greedy,random", "--opponents", "greedy"], "not --opponents"),
        (["--agents", "greedy,random"], "--agents is for --watch"),
        (["--opponents", "greedy,,random"], "--opponents 'greedy,,random' has an empty entry"),
        (["--variant", "chess"], "variant must be one of"),
        (["--coach-samples", "0"], "--coach-samples must be a positive integer"),
    ]:
        with pytest.raises(ValueError, match=message):
            _args(*argv)


def test_command_line_server_starts_on_a_free_port_and_stops():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "sixnimmt_env.play", "--no-browser", "--port", "0", "--opponents", "greedy,random"]
    cmd.append("--no-save")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert "6 nimmt! play table (play) at http://127.0.0.1:" in line, line + proc.stderr.read()
        url = line.split(" at ")[1].split()[0]
        for _ in range(100):  # uvicorn accepts once its loop runs
            try:
                settings = _get_json(url + "api/settings")
                break
            except urllib.error.URLError:
                time.sleep(0.05)
        assert settings["specs"] == ["human", "greedy", "random"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bad = subprocess.run(
        [*cmd[:3], "--no-save", "--opponents", "grebby"], capture_output=True, text=True, env=env, timeout=60
    )
    assert bad.returncode == 2 and "unknown agent spec 'grebby'" in bad.stderr


def test_background_server_serves_and_stops():
    app = create_app(PlaySettings(E.GameConfig(num_players=2), ("human", "greedy")))
    with BackgroundServer(app) as url:
        assert url.startswith("http://127.0.0.1:")
        assert _get_json(url + "/api/settings")["mode"] == "play"
    with pytest.raises(urllib.error.URLError):
        _get_json(url + "/api/settings")


# --------------------------------------------------------------------------- replay of recorded games


@pytest.fixture(scope="module")
def records_file(tmp_path_factory):
    from sixnimmt_env.arena import run_arena

    path = tmp_path_factory.mktemp("records") / "games.jsonl"
    config = E.GameConfig(num_players=4, end_score=40, episode="game")
    run_arena(["greedy", "random", "mc:4", "lowest"], 3, seed=2, config=config, save_games=path)
    return path


def test_replay_through_the_api_reproduces_the_recorded_penalties(records_file):
    from sixnimmt_env.records import read_records

    records = read_records(records_file)
    client = _client(PlaySettings(records[0].config, tuple(records[0].agents), records=tuple(records)))
    settings = client.get("/api/settings").json()
    assert settings["mode"] == "replay" and [r["index"] for r in settings["records"]] == [0, 1, 2]
    for i, record in enumerate(records):
        gid, tab, table = _new(client, record=i)
        assert table["mode"] == "replay" and table["names"] == _names(record.agents)
        assert table["hands"] == {str(s): list(h) for s, h in enumerate(record.rounds[0].hands)}  # every hand shown
        played = []
        while table["phase"] != "done":
            r = client.post(f"/api/games/{gid}/advance", headers=tab, json={"version": table["version"]})
            assert r.status_code == 200, r.text
            table = r.json()["table"]
            played.append(table["last_turn"]["cards"])
        recorded = [list(s.cards) for rnd in record.rounds for s in rnd.steps if s.phase == "select"]
        assert played == recorded  # every recorded turn, in order
        assert table["totals"] == list(record.totals)
        assert [r["penalties"] for r in table["rounds"]] == [list(r.penalties) for r in record.rounds]
    r = client.post("/api/games", json={"record": 3})
    assert r.status_code == 400 and "record must be an index 0..2, got 3" in r.json()["error"]
    r = client.post("/api/games", json={})
    assert (
        r.status_code == 400 and r.json()["error"] == 'this server replays records: send {"record": i} with i in 0..2'
    )
    # a record whose bullheads the engine does not reproduce is refused, naming the step
    first = records[0].rounds[0]
    bad_step = dataclasses.replace(first.steps[0], penalties=(9, 0, 0, 0))
    bad = dataclasses.replace(records[0], rounds=(dataclasses.replace(first, steps=(bad_step, *first.steps[1:])),))
    client = _client(PlaySettings(bad.config, tuple(bad.agents), records=(bad,)))
    r = client.post("/api/games", json={"record": 0})
    assert r.status_code == 400 and "record 0 cannot be replayed: game 0, round 0, step 0" in r.json()["error"]


def _names(specs):
    from sixnimmt_env.play.table import _seat_names

    return _seat_names(list(specs))


def test_replay_of_a_logic_draft_and_from_the_command_line(tmp_path):
    from sixnimmt_env.arena import run_arena
    from sixnimmt_env.play.replay_table import ReplayTable
    from sixnimmt_env.records import read_records

    path = tmp_path / "logic.jsonl"
    config = E.GameConfig(num_players=3, variant="logic", episode="round")
    run_arena(["greedy", "random", "lowest"], 2, seed=1, config=config, save_games=path)
    s = _args("--replay", str(path))
    assert s.mode == "replay" and len(s.records) == 2 and s.config.variant == "logic"
    record = read_records(path)[1]
    table = ReplayTable(record)
    advances = 0
    while not table.state.done:
        table.advance(table.version)
        advances += 1
    assert advances == 10 + 10  # the draft: 30 picks, 3 per step; then the 10 turns
    assert table.state.totals == record.totals and sum("from the display" in line for line in table.log) == 30
    with pytest.raises(ValueError, match="--replay shows recorded games: it takes no --watch"):
        _args("--replay", str(path), "--watch")
    with pytest.raises(ValueError, match="No such file"):
        _args("--replay", str(tmp_path / "missing.jsonl"))


def test_tui_replays_a_record(records_file):
    from sixnimmt_env.play.tui import PlayApp
    from sixnimmt_env.records import read_records

    records = read_records(records_file)
    app = PlayApp(PlaySettings(records[0].config, tuple(records[0].agents), records=tuple(records)))

    async def watch() -> None:
        async with app.run_test(size=(150, 48)) as pilot:
            while not app.table.state.done:
                await pilot.press("space")

    asyncio.run(watch())
    assert app.table.state.totals == records[0].totals


def test_a_trained_checkpoint_plays_at_the_table(tmp_path):
    from test_training import _tiny_model

    path = _tiny_model(tmp_path)
    config = E.GameConfig(num_players=3, episode="round")
    specs = ("human", f"ppo:{path}", "greedy")
    client = _client(PlaySettings(config, specs, seed=7))
    gid, tab, table = _new(client)
    assert table["names"] == ["You", "ppo:tiny.zip", "greedy"]
    while table["phase"] != "done":
        d = table["decision"]
        body = {"version": table["version"], "kind": d["kind"], "value": d["options"][0]}
        table = client.post(f"/api/games/{gid}/act", headers=tab, json=body).json()["table"]
    assert table["totals"] == list(_engine_game(config, list(specs), 7, _lowest_choice).totals)
