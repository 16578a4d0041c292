"""The web page as a player uses it, in Chromium at a desktop and a phone size.

Each feature of the page is checked by its effect on what a player sees: colours, the board
after stepping back, the position a link opens, what survives a new tab.  The server and
browser fixtures are those of ``tests/test_web_browser.py`` (the tests skip the same way without
chromium or Playwright).

``python -m tests.test_web_page docs/img`` takes the screenshots in the docs (desktop and phone).
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:   # run as a script for the screenshots
    sys.path.insert(0, str(REPO))

from engine_server.commands.web import parse_move_list  # noqa: E402
from engine_server.game import PASS, Color, Game, Position, square_name  # noqa: E402

from .test_web_browser import (  # noqa: E402
    WebServerProcess,
    browser,  # noqa: F401  (a fixture)
    click_a_move,
    open_record,
    phase,
    ply,
    wait_settled,
)

SIZES = {
    "desktop": {"viewport": {"width": 1200, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
              "device_scale_factor": 2},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[WebServerProcess]:
    s = WebServerProcess(tmp_path_factory.mktemp("web-page"), "--agent", "random")
    yield s
    s.close()


@pytest.fixture(params=sorted(SIZES))
def size(request) -> str:
    return str(request.param)


@pytest.fixture
def context(browser, size) -> Iterator[Any]:  # noqa: F811
    """A fresh browser profile (its own localStorage) at the size under test."""
    ctx = browser.new_context(**SIZES[size])
    yield ctx
    ctx.close()


def board_text(page: Any) -> str:
    return str(page.eval_on_selector_all(
        "[data-square]", "els => els.map(e => ({black: 'b', white: 'w'})[e.dataset.disc] || '.')"
                         ".join('')"))


def game_board(game: Game) -> str:
    pos = game.position
    return "".join("b" if pos.black >> i & 1 else "w" if pos.white >> i & 1 else "."
                   for i in range(64))


def open_page(ctx: Any, url: str) -> Any:
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.js_errors = errors
    page.goto(url)
    page.wait_for_selector('[data-role="agent"] option', state="attached")
    wait_settled(page)
    return page


def new_game(page: Any, agent: str = "agent:random", color: str = "black",
             time_s: str = "0") -> None:
    page.select_option('[data-role="color"]', color)
    page.select_option('[data-role="agent"]', agent)
    page.select_option('[data-role="time"]', time_s)
    page.locator('[data-action="new"]').first.click()
    want = 0 if color != "white" else 1
    page.wait_for_function("() => document.querySelector('[data-role=board]').dataset.ply "
                           f"=== '{want}' && document.body.dataset.phase === 'human'")


def click(page: Any, selector: str) -> None:
    """A click, or a tap on a touch screen (as a person would)."""
    loc = page.locator(selector).first
    if page.context.pages and page.evaluate("() => navigator.maxTouchPoints > 0"):
        loc.tap()
    else:
        loc.click()


def play_moves(page: Any, n: int, seed: int) -> None:
    """The person plays ``n`` moves against the engine (each answered)."""
    rng = random.Random(seed)
    for _ in range(n):
        if phase(page) == "over":
            return
        before = ply(page)
        click_a_move(page, rng)
        wait_settled(page, before)


def moves_of(page: Any) -> list[str]:
    return list(page.eval_on_selector_all(".moves .mv[data-ply]", "els => els.map(e => "
                                          "e.textContent.replace(/[?]+$/, ''))"))


def background(page: Any, square: str) -> str:
    return str(page.eval_on_selector(f'[data-square="{square}"]',
                                      "e => getComputedStyle(e).backgroundColor"))


# --- the hover bug ------------------------------------------------------------------------
def test_a_square_that_is_not_legal_keeps_its_colour_under_the_pointer(server, context, size):
    page = open_page(context, server.url)
    new_game(page)
    green = background(page, "a1")
    for square in ("a1", "d4", "e4", "h8"):   # empty and occupied squares, none legal
        if size == "phone":
            page.locator(f'[data-square="{square}"]').tap()
        else:
            page.locator(f'[data-square="{square}"]').hover()
        assert background(page, square) == green, square
        assert page.get_attribute(f'[data-square="{square}"]', "data-legal") is None
    assert ply(page) == 0   # nothing was played
    if size == "desktop":   # the check sees a change where there is one: a legal square
        page.locator('[data-square="f5"]').hover()
        assert background(page, "f5") != green
    assert page.js_errors == []


# --- names a player reads -----------------------------------------------------------------
def test_the_opponents_have_player_names_and_the_internals_are_under_advanced(server, context):
    page = open_page(context, server.url)
    labels = page.eval_on_selector_all('[data-role="agent"] option', "els => els.map(e => "
                                       "e.textContent)")
    assert {"Beginner", "Easy", "Medium", "Strong", "Strongest"} <= set(labels)
    for text in labels:   # no registry names, sources, specs or doc paths in the menu
        for internal in (":", "seed", "Alg", "docs/", "=", "ours"):
            assert internal not in text, text
    page.select_option('[data-role="agent"]', "preset:seed004-dk")
    blurb = page.inner_text('[data-role="agent-blurb"]')
    assert "corners" in blurb
    advanced = page.locator('[data-role="params-box"]')
    assert advanced.get_attribute("open") is None
    assert not page.locator('[data-role="spec"]').is_visible()
    advanced.locator("summary").click()
    assert page.inner_text('[data-role="spec"]') == "seed004-dk"
    assert "dk:avoid=x" in page.inner_text('[data-role="agent-summary"]')
    # a parameter's help is written out, not only in a tooltip
    page.select_option('[data-role="agent"]', "agent:uct")
    assert "solve the root exactly" in page.inner_text('[data-role="params"]')


# --- the move list: stepping back, keys, play from here -----------------------------------
def test_the_move_list_steps_through_the_game_and_play_from_here_branches(server, context):
    page = open_page(context, server.url)
    new_game(page)
    play_moves(page, 3, seed=5)
    moves = moves_of(page)
    n = len(moves)
    assert n == ply(page) and n >= 6
    click(page, '.moves .mv[data-ply="2"]')
    board = page.locator('[data-role="board"]')
    assert board.get_attribute("data-view") == "2"
    assert board_text(page) == game_board(parse_move_list("".join(moves[:2]), Position.start()))
    assert page.locator('[data-legal="true"]').count() == 0   # no playing an old board
    page.keyboard.press("ArrowLeft")
    assert board.get_attribute("data-view") == "1"
    assert board_text(page) == game_board(parse_move_list(moves[0], Position.start()))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert board.get_attribute("data-view") == "3"
    page.keyboard.press("End")
    assert board.get_attribute("data-reviewing") == "false"
    assert board_text(page) == game_board(parse_move_list("".join(moves), Position.start()))
    page.keyboard.press("Home")
    assert board_text(page) == game_board(Game(Position.start()))
    # play from ply 2: the later moves are gone, black (the person) is to move there
    click(page, '.moves .mv[data-ply="2"]')
    click(page, '[data-action="branch"]')
    page.wait_for_function("() => document.querySelector('[data-role=board]').dataset.ply "
                           "=== '2' && document.body.dataset.phase === 'human'")
    assert moves_of(page) == moves[:2]
    assert board_text(page) == game_board(parse_move_list("".join(moves[:2]), Position.start()))
    # and a different move than the one played before goes on from there
    legal = page.eval_on_selector_all('[data-legal="true"]', "els => els.map(e => "
                                      "e.dataset.square)")
    other = [sq for sq in legal if sq != moves[2]]
    page.locator(f'[data-square="{other[0]}"]').click()
    wait_settled(page, 2)
    assert moves_of(page)[:3] == moves[:2] + [other[0]]
    assert page.js_errors == []


# --- last-move marks ----------------------------------------------------------------------
def test_the_last_move_of_each_side_is_marked(server, context):
    page = open_page(context, server.url)
    new_game(page)
    play_moves(page, 2, seed=8)
    moves = moves_of(page)
    marks = dict(page.eval_on_selector_all(
        "[data-last]", "els => els.map(e => [e.dataset.last, e.dataset.square])"))
    black_moves = [m for m in moves[0::2] if m != "pass"]
    white_moves = [m for m in moves[1::2] if m != "pass"]
    assert marks == {"black": black_moves[-1], "white": white_moves[-1]}
    assert page.get_attribute(f'[data-square="{moves[-1]}"]', "class").split().count("last") == 1
    assert page.locator(".sq.last").count() == 1


# --- the evaluation bar and one series per engine -----------------------------------------
def test_two_engines_have_a_series_each_and_the_bar_follows_the_evaluation(server, context):
    page = open_page(context, server.url)
    page.select_option('[data-role="color"]', "watch")
    page.select_option('[data-role="agent"]', "preset:easy")
    page.select_option('[data-role="agent2"]', "preset:medium")
    page.select_option('[data-role="time"]', "0")
    page.locator('[data-action="new"]').first.click()
    page.wait_for_function("() => document.querySelectorAll('.graph polyline').length === 2 "
                           "&& document.querySelector('.graph polyline.white')"
                           ".dataset.points >= 3")
    # Easy and medium finish a game in under a second: Stop pauses it if it still runs (it is
    # enabled only while an engine thinks), else the game is over, which settles it as well.
    page.evaluate("() => { const b = document.querySelector('[data-action=\"stop\"]');"
                  " if (!b.disabled) b.click(); }")
    wait_settled(page)
    series = page.get_attribute('[data-role="graph"]', "data-series")
    assert series == "black,white"
    # the bar shows the latest evaluation, black's discs, and leans the same way
    value = page.get_attribute('[data-role="evalbar"]', "data-eval")
    assert value not in (None, "")
    v = float(value)
    # the fill eases to its height in 0.3 s (a game that has just ended has just set it)
    page.wait_for_function("() => document.getAnimations().length === 0")
    share = page.evaluate("() => { const f = document.querySelector('[data-role=evalfill]');"
                          " return f.getBoundingClientRect().height / "
                          "f.parentElement.getBoundingClientRect().height; }")
    assert (share > 0.5) == (v > 0) or v == 0
    legend = page.inner_text('[data-role="legend"]')
    assert "Black (Easy)" in legend and "White (Medium)" in legend
    # stepping back moves the bar to the evaluation known at that ply (the graph's dots)
    dots = dict(page.eval_on_selector_all(
        ".graph .dot title", "els => els.map(e => e.textContent.match(/ply (\\d+): (.*)/)"
                             ".slice(1).map(Number))"))
    page.keyboard.press("Home")
    assert float(page.get_attribute('[data-role="evalbar"]', "data-eval") or "nan") == dots[0]
    page.keyboard.press("ArrowRight")
    assert float(page.get_attribute('[data-role="evalbar"]', "data-eval") or "nan") == dots[1]
    assert page.js_errors == []


# --- settings and the game remembered -----------------------------------------------------
def test_settings_and_the_game_in_progress_survive_a_new_tab(server, context):
    page = open_page(context, server.url)
    new_game(page, color="white", agent="agent:random")
    page.select_option('[data-role="rules"]', "standard")
    play_moves(page, 2, seed=11)
    moves = moves_of(page)
    board = board_text(page)
    page.close()   # the tab is gone, and its sessionStorage with it
    again = open_page(context, server.url)
    again.wait_for_function(f"() => document.querySelector('[data-role=board]').dataset.ply "
                            f"=== '{len(moves)}'")
    wait_settled(again)
    assert moves_of(again) == moves and board_text(again) == board
    assert again.input_value('[data-role="color"]') == "white"
    assert again.input_value('[data-role="agent"]') == "agent:random"
    play_moves(again, 1, seed=12)   # and it goes on
    assert ply(again) >= len(moves) + 2 or phase(again) == "over"
    assert again.js_errors == []


# --- the link -----------------------------------------------------------------------------
def test_a_link_reproduces_the_game(server, browser, size):  # noqa: F811
    ctx = browser.new_context(**SIZES[size])
    page = open_page(ctx, server.url)
    new_game(page)
    play_moves(page, 3, seed=21)
    moves = moves_of(page)
    open_record(page)
    page.locator('[data-action="share"]').click()
    link = page.input_value('[data-role="link"]')
    assert "#moves=" + "".join(m for m in moves if m != "pass") in link
    ctx.close()
    fresh = browser.new_context(**SIZES[size])   # another person, nothing stored
    other = open_page(fresh, link)
    other.wait_for_function(f"() => document.querySelector('[data-role=board]').dataset.ply "
                            f"=== '{len(moves)}'")
    assert moves_of(other) == moves
    assert board_text(other) == game_board(parse_move_list("".join(moves), Position.start()))
    fresh.close()


# --- rematch and swap colours -------------------------------------------------------------
def finished_game(seed: int) -> str:
    rng = random.Random(seed)
    game = Game(Position.start())
    while not game.is_over():
        game.play(rng.choice(game.position.legal_moves()))
    return "".join(square_name(m) for m in game.moves if m != PASS)


def test_rematch_and_swap_colours_after_a_game(server, context):
    page = open_page(context, server.url)
    new_game(page)
    assert not page.locator('[data-action="rematch"]').is_visible()
    open_record(page)
    page.fill('[data-role="record"]', finished_game(3))
    page.locator('[data-action="import"]').click()
    page.wait_for_function("() => document.body.dataset.phase === 'over'")
    assert page.locator('[data-action="rematch"]').is_visible()
    page.locator('[data-action="swap"]').click()
    # the person now plays white: the engine (black) opens
    page.wait_for_function("() => document.querySelector('[data-role=board]').dataset.ply "
                           "=== '1' && document.body.dataset.phase === 'human'")
    assert page.input_value('[data-role="color"]') == "white"
    assert page.get_attribute('[data-role="status"]', "data-turn") == "white"
    assert not page.locator('[data-action="rematch"]').is_visible()


# --- whole-game analysis -------------------------------------------------------------------
def test_whole_game_analysis_marks_the_moves_that_lost_discs(server, context):
    page = open_page(context, server.url)
    new_game(page)
    open_record(page)
    page.fill('[data-role="record"]', finished_game(5))
    page.locator('[data-action="import"]').click()
    page.wait_for_function("() => document.body.dataset.phase === 'over'")
    n = ply(page)
    page.locator('[data-action="analyze"]').click()
    page.wait_for_function("() => document.querySelector('[data-role=analysis]')"
                           ".dataset.done === 'true'", timeout=180_000)
    marked = int(page.get_attribute('[data-role="analysis"]', "data-marked") or 0)
    assert marked >= 1
    in_list = page.locator(".moves .mv.mistake, .moves .mv.blunder")
    assert in_list.count() == marked
    first = in_list.first
    title = first.get_attribute("title") or ""
    assert title.startswith("lost ") and "best " in title
    assert float(first.get_attribute("data-loss") or 0) >= 2
    assert page.locator(".graph .mark").count() == marked
    assert page.locator(".graph polyline.analysis").count() == 1
    # the value of each move is known: the bar at a marked move shows the analysis
    target = int(first.get_attribute("data-ply") or 0)
    first.click()
    assert page.get_attribute('[data-role="board"]', "data-view") == str(target)
    assert page.get_attribute('[data-role="evalbar"]', "data-eval") not in (None, "")
    assert ply(page) == n and page.js_errors == []


# --- dark theme and reduced motion --------------------------------------------------------
def test_dark_theme_and_reduced_motion_follow_the_system(server, browser, size):  # noqa: F811
    def luminance(rgb: str) -> float:
        r, g, b = (int(x) for x in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    looks = {}
    for scheme, motion in (("light", "no-preference"), ("dark", "reduce")):
        ctx = browser.new_context(color_scheme=scheme, reduced_motion=motion, **SIZES[size])
        page = open_page(ctx, server.url)
        new_game(page)
        page.locator('[data-square="f5"]').click()
        wait_settled(page, 0)
        flipped = page.locator(".sq.flip")
        assert flipped.count() >= 1   # e5 turned black (and the reply's flips)
        anim = flipped.first.evaluate(
            "e => getComputedStyle(e.querySelector('.disc')).animationName")
        bg = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        looks[scheme] = (anim, luminance(bg))
        ctx.close()
    assert looks["light"][0] == "flip" and looks["dark"][0] == "none"
    assert looks["light"][1] > 180 > 60 > looks["dark"][1]


# --- the phone: New game brings the board back ---------------------------------------------
def test_new_game_from_the_panel_brings_the_board_into_view(server, context, size):
    page = open_page(context, server.url)
    new_game(page)
    panel_new = page.locator('.panel [data-action="new"]')
    panel_new.scroll_into_view_if_needed()
    panel_new.click()
    wait_settled(page)
    box = page.locator('[data-role="board"]').bounding_box()
    height = SIZES[size]["viewport"]["height"]
    assert box is not None and box["y"] >= -1 and box["y"] + box["height"] <= height + 1


# --- the clock ----------------------------------------------------------------------------
def test_the_clock_runs_for_the_side_to_move_and_shows_both(server, context):
    page = open_page(context, server.url)
    page.select_option('[data-role="clock"]', "180+2")
    new_game(page)
    clocks = page.locator('[data-role="clocks"]')
    assert clocks.is_visible()
    assert "Black 3:00" in page.inner_text('[data-role="clock-black"]') or \
        "Black 2:5" in page.inner_text('[data-role="clock-black"]')
    assert page.get_attribute('[data-role="clock-black"]', "data-running") == "true"
    assert page.get_attribute('[data-role="clock-white"]', "data-running") == "false"
    # black's time runs down while black thinks; white's does not move
    page.wait_for_function("() => Number(document.querySelector('[data-role=clock-black]')"
                           ".dataset.ms) < 179000")
    assert page.get_attribute('[data-role="clock-white"]', "data-ms") == "180000"
    t0 = time.monotonic()
    black_before = int(page.get_attribute('[data-role="clock-black"]', "data-ms") or 0)
    play_moves(page, 1, seed=2)
    black_after = int(page.get_attribute('[data-role="clock-black"]', "data-ms") or 0)
    elapsed_ms = (time.monotonic() - t0) * 1000
    # the move earned black its 2 s: its clock lost at most the time that passed, less 2 s
    assert black_after >= black_before - elapsed_ms + 2000 - 250
    assert int(page.get_attribute('[data-role="clock-white"]', "data-ms") or 0) <= 182000
    assert page.get_attribute('[data-role="clock-black"]', "data-running") == "true"
    # and the setting is remembered with the others
    assert page.evaluate("() => JSON.parse(localStorage.getItem('othello-settings')).clock") \
        == "180+2"


def test_a_side_whose_clock_runs_out_loses_and_the_board_stops(server, context):
    page = open_page(context, server.url)
    page.select_option('[data-role="clock"]', "15+0")
    new_game(page)
    # the person (black) does not move: black's 15 s run out
    page.wait_for_function("() => document.body.dataset.phase === 'over'", timeout=120_000)
    assert page.get_attribute('[data-role="clock-black"]', "data-flagged") == "true"
    assert page.get_attribute('[data-role="clock-black"]', "data-ms") == "0"
    assert page.get_attribute('[data-role="clock-white"]', "data-ms") == "15000"
    assert "Black ran out of time: White wins." in page.inner_text('[data-role="status"]')
    assert page.locator('[data-legal="true"]').count() == 0
    assert page.locator('[data-action="hint"]').is_disabled()
    assert page.locator('[data-action="rematch"]').is_visible()
    page.locator('[data-action="rematch"]').click()   # a new game, a new clock
    page.wait_for_function("() => document.body.dataset.phase === 'human'")
    assert page.get_attribute('[data-role="clock-black"]', "data-flagged") == "false"
    assert ply(page) == 0 and page.js_errors == []


# --- the board editor ---------------------------------------------------------------------
def test_the_board_editor_sets_up_a_position_the_engine_plays_from(server, context):
    page = open_page(context, server.url)
    new_game(page)
    page.locator("summary", has_text="Set up a position").click()
    page.locator('[data-action="edit"]').click()
    page.locator('[data-action="edit-clear"]').click()
    assert board_text(page) == "." * 64
    # black c3 d4, white e5 f6 g7 ... a diagonal black can capture along: h8 closes it
    for square, taps in (("c3", 1), ("d4", 2), ("e5", 2), ("h8", 1), ("a1", 2), ("b1", 1)):
        for _ in range(taps):
            page.locator(f'[data-square="{square}"]').click()
    page.select_option('[data-role="edit-side"]', "black")
    edited = board_text(page)
    page.locator('[data-action="edit-done"]').click()
    page.wait_for_function("() => document.querySelector('[data-role=board]')"
                           ".dataset.editing === 'false' && document.body.dataset.phase "
                           "=== 'human'")
    assert board_text(page) == edited
    legal = sorted(page.eval_on_selector_all('[data-legal="true"]',
                                             "els => els.map(e => e.dataset.square)"))
    black = sum(1 << i for i, c in enumerate(edited) if c == "b")
    white = sum(1 << i for i, c in enumerate(edited) if c == "w")
    pos = Position(black, white, Color.BLACK)
    assert legal == sorted(square_name(m) for m in pos.legal_moves() if m != PASS)
    assert legal   # the position is playable
    page.locator(f'[data-square="{legal[0]}"]').click()
    wait_settled(page, 0)
    assert ply(page) >= 1 and moves_of(page)[0] == legal[0]
    assert page.js_errors == []


# --- screenshots for the docs -------------------------------------------------------------
def take_screenshots(url: str, out: Path, browser: Any, plies: int = 20) -> list[Path]:  # noqa: F811
    """A game against the Easy level, the person mostly playing the hint's best move (a close
    game), analysed, with one more hint on the board: desktop (the whole page) and phone (its
    first screen)."""
    paths = []
    for size in ("desktop", "phone"):
        ctx = browser.new_context(**SIZES[size])
        page = open_page(ctx, url)
        new_game(page, agent="preset:easy")
        rng = random.Random(6)
        while ply(page) < plies and phase(page) == "human":
            before = ply(page)
            if rng.random() < 0.75 and not page.locator('[data-action="pass"]').is_enabled():
                page.locator('[data-action="hint"]').click()
                page.locator(".sq .hint.best").wait_for(state="attached", timeout=60000)
                page.locator(".sq:has(.hint.best)").click()
            else:
                click_a_move(page, rng)
            wait_settled(page, before, timeout=60)
        page.locator('[data-action="analyze"]').click()
        page.wait_for_function("() => document.querySelector('[data-role=analysis]')"
                               ".dataset.done === 'true'", timeout=180_000)
        page.locator('[data-action="hint"]').click()
        page.wait_for_selector(".sq .hint", timeout=60000)
        page.evaluate("() => window.scrollTo(0, 0)")
        path = out / f"page-{size}.png"
        page.screenshot(path=str(path), full_page=size == "desktop")
        paths.append(path)
        ctx.close()
    return paths


def test_the_screenshots_can_be_taken(server, browser, tmp_path):  # noqa: F811
    for path in take_screenshots(server.url, tmp_path, browser, plies=4):
        assert path.stat().st_size > 10_000


if __name__ == "__main__":
    import tempfile

    from playwright.sync_api import sync_playwright

    from tests.test_web_browser import chromium_path

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d, sync_playwright() as pw:
        srv = WebServerProcess(Path(d), "--agent", "easy")
        b = pw.chromium.launch(executable_path=chromium_path() or "/usr/bin/chromium",
                               args=["--no-sandbox"])
        try:
            for p in take_screenshots(srv.url, out, b):
                print(p)
        finally:
            b.close()
            srv.close()
