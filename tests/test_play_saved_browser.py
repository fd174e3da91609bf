"""Saved games in a real browser (issue 39): a restarted server's page offers to continue the unfinished game and
continues it; the history page shows the record per opponent and replays a finished game at the table. Debian's
headless Chromium driven by Playwright, as in test_play_browser.py (``SIXNIMMT_SCREENSHOTS=DIR`` keeps the
screenshots)."""

from __future__ import annotations

from starlette.testclient import TestClient
from test_play_browser import _screenshot_dir, browser  # noqa: F401  (the fixture)

from sixnimmt_env.play.saved import GameDB, restore
from sixnimmt_env.play.server import BackgroundServer, create_app
from sixnimmt_env.play.settings import PlaySettings
from sixnimmt_env.rules import engine as E


def _play(client: TestClient, moves: int | None) -> str:
    """Play a game to its end, or ``moves`` moves and on to the next card to play; returns its id."""
    d = client.post("/api/games", json={}).json()
    gid, tab, table = d["game"], {"X-Tab": d["tab"]}, d["table"]
    done = 0
    while table["phase"] != "done" and (moves is None or done < moves or table["decision"]["kind"] != "card"):
        dec = table["decision"]
        body = {"version": table["version"], "kind": dec["kind"], "value": dec["options"][0]}
        table = client.post(f"/api/games/{gid}/act", headers=tab, json=body).json()["table"]
        done += 1
    return gid


def test_offer_to_continue_history_and_replay(browser, tmp_path):  # noqa: F811
    settings = PlaySettings(E.GameConfig(num_players=4, episode="round"), ("human", "greedy", "mc:8", "random"), seed=6)
    path = tmp_path / "g.sqlite3"
    first = create_app(settings, db=GameDB(path))  # the server before its restart
    client = TestClient(first, base_url="http://127.0.0.1", headers={"X-Sixnimmt-Token": first.state.token})
    finished = [_play(client, None), _play(client, None)]
    unfinished = _play(client, 4)
    before = GameDB(path).load(unfinished)
    shots = _screenshot_dir(tmp_path)
    errors: list[str] = []
    app = create_app(settings, db=GameDB(path))  # the restarted server
    with BackgroundServer(app) as url:
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url + "/?anim=0")
        page.wait_for_selector("#offer button[data-continue]")
        assert page.inner_text("#offer h2") == "1 unfinished game"
        page.screenshot(path=str(shots / "play_offer.png"))
        page.click(f"#offer button[data-continue='{unfinished}']")
        page.wait_for_selector("button[data-card]:not([disabled])")
        assert page.url.endswith("#game=" + unfinished)
        hand = [int(x) for x in page.locator("button[data-card]").evaluate_all("bs => bs.map(b => b.dataset.card)")]
        state = restore(before).state
        assert hand == list(state.hands[0]) and len(hand) < 10
        assert f"Turn {state.turn + 1}/10" in page.inner_text("#info")
        page.click("button[data-card] >> nth=0")  # the game goes on, and is saved
        page.wait_for_function(f"document.querySelectorAll('button[data-card]').length === {len(hand) - 1}")
        assert GameDB(path).load(unfinished).version > before.version
        page.goto(url + "/history")
        page.wait_for_selector("#record tr.total")
        assert page.inner_text("#note") == "3 games saved: 2 finished, 1 unfinished."
        assert page.locator("#record tr").count() == 1 + 3 + 1  # header, greedy/mc:8/random, all
        page.screenshot(path=str(shots / "play_history.png"), full_page=True)
        page.click(f"tr[data-game='{finished[0]}'] a")
        page.wait_for_selector("#auto-btn:not([hidden])")
        page.select_option("#speed", "120")
        page.click("#auto-btn")
        page.wait_for_selector("#final:not([hidden])", timeout=60_000)
        record = GameDB(path).load(finished[0]).record
        assert [int(page.inner_text(f"[data-final='{s}']")) for s in range(4)] == list(record.totals)
        page.close()
    assert errors == []
