"""The play table in a real browser: Debian's headless Chromium driven by Playwright plays a whole round by
clicking, and the scores on the page are checked against the engine (issue 14).

Playwright never downloads a browser here: it starts ``/usr/bin/chromium`` (Debian's ``chromium`` package, which
``.ci/run`` installs where missing). Set ``SIXNIMMT_SCREENSHOTS=DIR`` to keep the screenshots in ``DIR``:
``docs/play_table_phone.png`` and ``docs/play_table.png`` are ``play_table_phone.png`` and ``play_table_desktop.png``
of ``SIXNIMMT_SCREENSHOTS=DIR pytest tests/test_play_browser.py -k fits``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_play import _engine_game, _lowest_choice

from sixnimmt_env.play.server import BackgroundServer, create_app
from sixnimmt_env.play.settings import PlaySettings
from sixnimmt_env.rules import engine as E

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    if not shutil.which(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium package")
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium (CI installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _screenshot_dir(tmp_path: Path) -> Path:
    out = Path(os.environ.get("SIXNIMMT_SCREENSHOTS", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    return out


# one round against greedy, mc:16 and random; seed 1 deals you three low cards (three row choices)
ROUND_CONFIG = E.GameConfig(num_players=4, episode="round")
ROUND_SPECS = ("human", "greedy", "mc:16", "random")


def _round_app(coach_samples: int):
    return create_app(PlaySettings(ROUND_CONFIG, ROUND_SPECS, seed=1, coach_samples=coach_samples))


def test_a_whole_round_by_clicking(browser, tmp_path):
    app = _round_app(200)
    shots = _screenshot_dir(tmp_path)
    errors: list[str] = []
    with BackgroundServer(app) as url:
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url + "/?anim=0")  # no pause between placed cards
        page.wait_for_selector("button[data-card]:not([disabled])")
        page.check("#coach-box")
        clicks = row_clicks = 0
        while True:
            page.wait_for_selector("button[data-card]:not([disabled]), [data-row], #final:not([hidden])")
            if page.is_visible("#final"):
                break
            if page.query_selector("[data-row]"):
                page.wait_for_selector(".coach-row.best")  # the coach rates every row
                page.click("[data-row] >> nth=0")  # a low card: take row 1
                row_clicks += 1
            else:
                page.wait_for_selector(".ev.best")  # the coach has answered
                if clicks == 4:
                    page.screenshot(path=str(shots / "play_table_midgame.png"))
                page.click("button[data-card]:not([disabled]) >> nth=0")  # the lowest card
            clicks += 1
            assert clicks < 40
        page.screenshot(path=str(shots / "play_table_final.png"))
        expected = _engine_game(ROUND_CONFIG, list(ROUND_SPECS), 1, _lowest_choice).totals
        assert row_clicks == 3
        shown = [int(page.inner_text(f"[data-final='{s}']")) for s in range(4)]
        assert shown == list(expected)
        assert [int(page.inner_text(f"[data-total='{s}']").split()[0]) for s in range(4)] == list(expected)
        assert page.inner_text("#final-title").startswith("Game over:")
        # the same game opened in a second tab: a clear error, and the game is not touched
        game_url = page.url
        other = browser.new_page()
        other.goto(game_url)
        other.wait_for_selector("#error:not([hidden])")
        assert "open in another tab" in other.inner_text("#error-text")
        assert other.is_visible("#error-claim")
        other.close()
        page.close()
    assert errors == []
    assert (shots / "play_table_final.png").stat().st_size > 10_000


def test_watching_agents_play_on_by_themselves(browser):
    config = E.GameConfig(num_players=4, end_score=40)
    specs = ("mc:8", "greedy", "random", "lowest")
    app = create_app(PlaySettings(config, specs, seed=3))
    with BackgroundServer(app) as url:
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        page.goto(url + "/?anim=0")
        page.wait_for_selector("#step-btn:not([disabled])")
        assert page.is_hidden("#coach-toggle") and page.is_hidden("#hand-area")
        page.click("#step-btn")  # one turn by hand ...
        page.wait_for_function("document.querySelectorAll('#hands .card').length === 36")  # every hand, 9 left
        page.select_option("#speed", "120")
        page.click("#auto-btn")  # ... then the rest on their own
        page.wait_for_selector("#final:not([hidden])", timeout=60_000)
        expected = _engine_game(config, list(specs), 3, None).totals
        assert [int(page.inner_text(f"[data-final='{s}']")) for s in range(4)] == list(expected)
        page.close()


# The sizes the table is laid out for (issue 38): two phones, a tablet (all with touch, laid out by the page's
# viewport meta tag) and the desktop the table was first drawn for.
SCREENS = {
    "phone": (390, 844, True),
    "phone_360": (360, 740, True),
    "tablet": (768, 1024, True),
    "desktop": (1360, 900, False),
}

# the page's boxes as [left, top, width, height] in CSS pixels
_BOXES = """sel => Array.from(document.querySelectorAll(sel)).filter(e => e.offsetParent !== null).map(e => {
  const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })"""


def _assert_fits(page, width: int, when: str) -> None:
    """No horizontal scrolling: the layout viewport is the screen's width (a phone widens it when the page is too
    wide) and nothing reaches past it."""
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert (scroll, inner) == (width, width), f"{when}: scrollWidth {scroll}, innerWidth {inner}, screen {width}"


def _assert_inside(page, selector: str, width: int) -> list[list[float]]:
    boxes = page.evaluate(_BOXES, selector)
    assert boxes, f"no visible {selector}"
    for left, _, w, _ in boxes:
        assert left >= 0 and left + w <= width + 0.5, f"{selector} at x={left:.0f}..{left + w:.0f}, screen {width}"
    return boxes


@pytest.mark.parametrize("screen", list(SCREENS))
def test_the_table_fits_every_screen_and_plays_a_round_by_tapping(browser, tmp_path, screen):
    width, height, touch = SCREENS[screen]
    app = _round_app(100)
    shots = _screenshot_dir(tmp_path)
    errors: list[str] = []
    with BackgroundServer(app) as url:
        context = browser.new_context(
            viewport={"width": width, "height": height}, has_touch=touch, is_mobile=touch and width < 1000
        )
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        press = page.tap if touch else page.click
        page.goto(url + "/?anim=0")
        page.wait_for_selector("button[data-card]:not([disabled])")
        _assert_fits(page, width, "first turn")
        press("#coach-toggle")
        assert page.is_checked("#coach-box")
        # every control of the header is a tap target of at least 44 x 44 px on a touch screen
        if touch:
            for selector in ("#new-btn", "#coach-toggle", "#speed", "button[data-card]"):
                for _, _, w, h in _assert_inside(page, selector, width):
                    assert w >= 44 and h >= 44, f"{selector} is {w:.0f} x {h:.0f} px"
        # the cards are readable: at least 40 px wide, their numbers at least 16 px
        for _, _, w, _ in _assert_inside(page, ".row .card", width):
            assert w >= 40
        assert (
            min(
                page.evaluate(
                    "Array.from(document.querySelectorAll('.card .val')).map(e => "
                    "parseFloat(getComputedStyle(e).fontSize))"
                )
            )
            >= 16
        )
        _assert_inside(page, ".slot.sixth", width)  # every row's sixth slot is on the page
        turns = row_taps = 0
        while True:
            page.wait_for_selector("button[data-card]:not([disabled]), [data-row], #final:not([hidden])")
            if page.is_visible("#final"):
                break
            _assert_fits(page, width, f"decision {turns}")
            if page.query_selector("[data-row]"):
                page.wait_for_selector(".coach-row.best")  # the coach rates every row, on the screen
                assert len(_assert_inside(page, ".coach-row", width)) == 4
                for _, _, w, h in _assert_inside(page, "[data-row]", width):
                    assert w >= 44 and h >= 44
                press("[data-row] >> nth=0")  # a low card: take row 1
                row_taps += 1
            else:
                page.wait_for_selector(".ev.best")  # the coach rates every card, under the card
                assert len(_assert_inside(page, "#hand .ev", width)) == 10 - (turns - row_taps)
                if turns == 4:
                    page.screenshot(path=str(shots / f"play_table_{screen}.png"))
                press("button[data-card]:not([disabled]) >> nth=0")  # the lowest card
            turns += 1
            assert turns < 40
        _assert_fits(page, width, "game over")
        _assert_inside(page, ".final-card", width)
        final_buttons = _assert_inside(page, ".final-actions button", width)
        assert len(final_buttons) == 2
        if touch:
            assert all(w >= 44 and h >= 44 for _, _, w, h in final_buttons)
        expected = _engine_game(ROUND_CONFIG, list(ROUND_SPECS), 1, _lowest_choice).totals
        assert row_taps == 3 and turns == 13
        assert [int(page.inner_text(f"[data-final='{s}']")) for s in range(4)] == list(expected)
        context.close()
    assert errors == []
    assert (shots / f"play_table_{screen}.png").stat().st_size > 10_000
