"""Only the table's own page may drive the play API (issue 39): cross-origin requests, other content types and a
missing token are refused before anything changes; oversized bodies get 413; malformed or deeply nested JSON a
clear 400. In process (Starlette's test client) and against a real server (raw HTTP, as the issue's probes)."""

from __future__ import annotations

import play_server
import pytest
from starlette.testclient import TestClient

from sixnimmt_env.play.server import create_app
from sixnimmt_env.play.settings import PlaySettings
from sixnimmt_env.rules import engine as E

BASE = "http://127.0.0.1"
EVIL = "http://evil.example"


@pytest.fixture
def app():
    return create_app(PlaySettings(E.GameConfig(num_players=3), ("human", "greedy", "random"), seed=2))


@pytest.fixture
def client(app):
    return TestClient(app, base_url=BASE)


def _game(client: TestClient, app) -> tuple[str, dict, dict]:
    r = client.post("/api/games", json={}, headers={"X-Sixnimmt-Token": app.state.token, "Origin": BASE})
    assert r.status_code == 200, r.text
    d = r.json()
    return d["game"], {"X-Tab": d["tab"]}, d["table"]


def test_the_page_carries_the_token_and_cannot_be_framed(client, app):
    page = client.get("/")
    assert f'<meta name="sixnimmt-token" content="{app.state.token}">' in page.text
    assert (
        page.headers["x-frame-options"] == "DENY"
        and "frame-ancestors 'none'" in page.headers["content-security-policy"]
    )
    other = create_app(PlaySettings(E.GameConfig(num_players=2), ("human", "greedy")))
    assert other.state.token != app.state.token and len(app.state.token) >= 32  # one token per server


@pytest.mark.parametrize(
    ("headers", "status", "code", "message"),
    [
        (
            {"Origin": EVIL},
            403,
            "cross_origin",
            "requests from 'http://evil.example' are refused: only http://127.0.0.1",
        ),
        ({"Origin": "null"}, 403, "cross_origin", "requests from 'null' are refused"),
        ({"Origin": "http://127.0.0.1:9999"}, 403, "cross_origin", "requests from 'http://127.0.0.1:9999'"),
        ({"Referer": EVIL + "/page.html"}, 403, "cross_origin", "requests from 'http://evil.example' are refused"),
        ({"Origin": EVIL, "Content-Type": "text/plain"}, 403, "cross_origin", "evil.example"),
        ({"Content-Type": "text/plain"}, 415, "unsupported_media", "application/json bodies, got 'text/plain'"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media", "x-www-form-urlencoded"),
        ({"Content-Type": "multipart/form-data; boundary=x"}, 415, "unsupported_media", "multipart/form-data"),
        ({"X-Sixnimmt-Token": ""}, 403, "bad_token", "missing or wrong X-Sixnimmt-Token"),
        ({"X-Sixnimmt-Token": "guess"}, 403, "bad_token", "use the table's own page"),
    ],
)
def test_requests_from_other_pages_are_refused_and_create_nothing(client, app, headers, status, code, message):
    sent = {"Content-Type": "application/json", "X-Sixnimmt-Token": app.state.token, **headers}
    r = client.post("/api/games", content=b"{}", headers=sent)
    assert (r.status_code, r.json()["code"]) == (status, code) and message in r.json()["error"]
    assert len(app.state.store) == 0  # no game was created


def test_a_claim_or_a_move_from_another_page_changes_nothing(client, app):
    gid, tab, table = _game(client, app)
    token = {"X-Sixnimmt-Token": app.state.token}
    body = {"version": 0, "kind": "card", "value": table["hands"]["0"][0]}
    for headers in ({"Origin": EVIL}, {"Referer": EVIL + "/x"}, {}):  # the last: no token
        sent = {**tab, **headers, **(token if headers else {})}
        assert client.post(f"/api/games/{gid}/claim", json={}, headers=sent).status_code == 403
        assert client.post(f"/api/games/{gid}/act", json=body, headers=sent).status_code == 403
    r = client.post(f"/api/games/{gid}/act", content=b"{}", headers={**tab, **token, "Content-Type": "text/plain"})
    assert r.status_code == 415
    assert client.get(f"/api/games/{gid}", headers=tab).json()["table"] == table  # still the tab's, unchanged
    assert client.get("/api/history", headers={"Origin": EVIL}).status_code == 403  # nor read through a rebinding
    own = {**tab, **token, "Origin": BASE, "Referer": BASE + "/#game=" + gid}  # the page itself
    assert client.post(f"/api/games/{gid}/act", json=body, headers=own).status_code == 200


def test_oversized_malformed_and_nested_bodies_get_a_clear_error(client, app):
    gid, tab, table = _game(client, app)
    headers = {**tab, "X-Sixnimmt-Token": app.state.token, "Content-Type": "application/json"}
    act = f"/api/games/{gid}/act"
    cases = [
        (b"[" * 100_000, 413, "too_large", "the request body holds 100,000 bytes or more; at most 4,096 are taken"),
        (b'{"version": "' + b"x" * 5000 + b'"}', 413, "too_large", "at most 4,096 are taken"),
        (b"[" * 4000, 400, "bad_request", "nested too deeply: the API takes a flat JSON object"),
        (b'{"version": ' + b"[" * 1000 + b"]" * 1000 + b"}", 400, "bad_request", None),
        (b'{"version": {"a": 1}, "kind": "card", "value": 1}', 400, "bad_request", "version must be a number or a"),
        (b'{"version": 0, "kind": ', 400, "bad_request", "not valid JSON: Expecting value at line 1, column 24"),
        (b'{"kind": "\xff"}', 400, "bad_request", "must be a JSON object in UTF-8"),
        (b"", 400, "bad_request", "not valid JSON"),
        (b"[1, 2]", 400, "bad_request", "must be a JSON object, got list"),
        (b'{"version": 0, "x": 1}', 400, "bad_request", "unknown key(s) 'x' in the request body; allowed: version"),
    ]
    for body, status, code, message in cases:
        r = client.post(act, content=body, headers=headers)
        assert (r.status_code, r.json()["code"]) == (status, code), (body[:40], r.text)
        assert message is None or message in r.json()["error"], r.json()["error"]

    def chunks():  # no Content-Length: the limit holds as the body arrives
        for _ in range(10):
            yield b" " * 1000

    r = client.post(act, content=chunks(), headers=headers)
    assert r.status_code == 413 and "at most 4,096" in r.json()["error"]
    assert client.get(f"/api/games/{gid}", headers=tab).json()["table"] == table


def test_the_issues_probes_against_a_real_server():
    """The bad requests of tests/play_server.py (those of benchmarks/play_load.py), byte for byte over a socket to a
    running server: every one is refused with a clear error but the non-numeric Content-Length, which uvicorn's HTTP
    parser refuses (400, empty body) before the app sees it; the game is unchanged (checked inside
    ``bad_requests``)."""
    server = play_server.start_server("--no-save", "--opponents", "greedy,greedy,greedy")
    try:
        results = play_server.bad_requests(server)
    finally:
        server.stop()
    statuses = {what: status for what, status, _ in results}
    assert statuses["new game, text/plain, other origin"] == 403
    assert statuses["claim from another origin"] == 403
    assert statuses["100,000 nested ["] == 413 and statuses["2,000 nested [ (under the size limit)"] == 400
    assert statuses["1 MB body"] == 413
    unclear = [what for what, _, clear in results if not clear]
    assert unclear == ["Content-Length not a number"] and statuses[unclear[0]] == 400
    assert all(400 <= status < 500 for status in statuses.values()) and len(results) == 27
