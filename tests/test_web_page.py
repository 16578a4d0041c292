"""The web page as a player uses it, in Chromium at a desktop and a phone size (each test whose
subject does not depend on the layout at one of them).

Each feature of the page is checked by its effect on what a player sees: colours, the board
after stepping back, the position a link opens, what survives a new tab.  The server and
browser fixtures are those of ``tests/test_web_browser.py`` (the tests skip the same way without
chromium or Playwright).

The server's analyst (the agent behind hints, the evaluation bar and the whole-game analysis) is
the strongest agent at a fixed depth on one thread, so that a test can compute what it must say
without a clock a busy machine could miss.

``python -m tests.test_web_page docs/img`` takes the screenshots in the docs (desktop and phone,
light and dark).
"""

from __future__ import annotations

import random
import re
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:   # run as a script for the screenshots
    sys.path.insert(0, str(REPO))

from engine_server.agents import make_agent  # noqa: E402
from engine_server.commands.web import parse_move_list  # noqa: E402
from engine_server.game import PASS, Color, Game, Position, square_name  # noqa: E402
from engine_server.search.limits import Limits  # noqa: E402

from .test_web_browser import (  # noqa: E402
    WebServerProcess,
    browser,  # noqa: F401  (a fixture)
    click_a_move,
    open_record,
    phase,
    ply,
    wait_settled,
)

# Chromium and a web server process; one pytest-xdist worker runs the module (one browser)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("web_page")]

SIZES = {
    "desktop": {"viewport": {"width": 1200, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
              "device_scale_factor": 2},
}


# The analyst at a fixed depth on one thread: its answers do not depend on the machine's speed.
# Exact from 14 empties (the default, 20 with a 10M-node budget, is most of an analysis's time).
ANALYST = "best:depth=5,threads=1,root_solve=14"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[WebServerProcess]:
    s = WebServerProcess(tmp_path_factory.mktemp("web-page"), "--agent", "random",
                         presets={"analyst": ANALYST})
    yield s
    s.close()


@pytest.fixture(params=sorted(SIZES))
def size(request) -> str:
    return str(request.param)


# A test whose subject does not depend on the layout (rules, storage, links, what the engines
# say) runs at one size, half of them at each, so that every size is still driven through
# every kind of control; the layout's own tests (pointer and touch, scrolling, contrast, errors
# beside their controls) run at both.
ON_A_PHONE = pytest.mark.parametrize("size", ["phone"])
ON_A_DESKTOP = pytest.mark.parametrize("size", ["desktop"])


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
@ON_A_DESKTOP
def test_the_opponents_have_player_names_and_the_internals_are_under_advanced(server, context):
    page = open_page(context, server.url)
    labels = page.eval_on_selector_all('[data-role="agent"] option', "els => els.map(e => "
                                       "e.textContent)")
    # one entry per level, weakest first; the strongest level is the engine's best agent, so
    # that agent is not listed a second time (the list had "Strong" and "Strongest", the same)
    groups = dict(page.eval_on_selector_all(
        '[data-role="agent"] optgroup', "gs => gs.map(g => [g.label, Array.from(g.children)"
                                        ".map(o => o.textContent)])"))
    assert groups["Levels"] == ["Beginner", "Easy", "Medium", "Hard", "Strongest"]
    assert "Monte Carlo with Othello sense" in groups["From the papers"]
    assert len(labels) == len(set(labels))   # no name twice
    for text in labels:   # no registry names, sources, specs or doc paths in the menu
        for internal in (":", "seed", "Alg", "docs/", "=", "ours", "analyst"):
            assert internal not in text, text
    page.select_option('[data-role="agent"]', "preset:seed004-dk")
    blurb = page.inner_text('[data-role="agent-blurb"]')
    assert "corners" in blurb
    advanced = page.locator('[data-role="params-box"]')
    assert advanced.get_attribute("open") is None
    assert not page.locator('[data-role="spec"]').is_visible()
    advanced.locator("summary").click()
    assert page.inner_text('[data-role="spec"]') == "seed004-dk"
    # plain words and a link to the docs, not the preset's spec and the agent's sources (the
    # summary used to read "preset seed004-dk = dk:avoid=x; dk [MCTS blog post ...]"); the
    # preset's settings are in the inputs below it
    summary = page.inner_text('[data-role="agent-summary"]')
    assert "corners" in summary and "More about it" in summary
    for internal in ("=", "preset ", "[", "ours", "source code", "docs/", "lost its match"):
        assert internal not in summary, summary
    assert page.input_value('[data-role="params"] [data-param="avoid"]') == "x"
    helps = page.inner_text('[data-role="params"]')
    for internal in ("ours", "source code", "docs/", "lost its match"):
        assert internal not in helps
    href = page.get_attribute('[data-role="agent-summary"] a', "href") or ""
    with urllib.request.urlopen(server.url.rstrip("/") + href, timeout=10) as r:
        assert r.status == 200 and "dk" in r.read().decode()
    # a parameter's help is written out, not only in a tooltip
    page.select_option('[data-role="agent"]', "agent:uct")
    assert "solve the root exactly" in page.inner_text('[data-role="params"]')


@ON_A_DESKTOP
def test_a_newcomer_starts_against_beginner_and_the_last_choice_is_remembered(server,
                                                                             context):
    page = open_page(context, server.url)   # a fresh profile: nothing remembered
    assert page.input_value('[data-role="agent"]') == "preset:beginner"
    # the server's game follows (it started with the server's default agent)
    page.wait_for_function("() => { const g = JSON.parse(localStorage.getItem('othello-game'));"
                           " return g && g.players.white.agent === 'beginner'; }")
    page.select_option('[data-role="agent"]', "preset:medium")
    page.close()
    again = open_page(context, server.url)
    assert again.input_value('[data-role="agent"]') == "preset:medium"
    assert again.js_errors == []


# --- the move list: stepping back, keys, play from here -----------------------------------
@ON_A_PHONE
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
@ON_A_DESKTOP
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
@ON_A_PHONE
def test_two_engines_have_a_series_each_and_the_bar_follows_the_evaluation(server, context):
    page = open_page(context, server.url)
    page.select_option('[data-role="color"]', "watch")
    page.select_option('[data-role="agent"]', "preset:easy")
    page.select_option('[data-role="agent2"]', "preset:medium")
    page.select_option('[data-role="time"]', "0")
    page.locator('[data-action="new"]').first.click()
    page.wait_for_function("() => document.querySelectorAll('.graph polyline.black, "
                           ".graph polyline.white').length === 2 "
                           "&& document.querySelector('.graph polyline.white')"
                           ".dataset.points >= 3")
    # Easy and medium finish a game in under a second: Stop pauses it if it still runs (it is
    # enabled only while an engine thinks), else the game is over, which settles it as well.
    page.evaluate("() => { const b = document.querySelector('[data-action=\"stop\"]');"
                  " if (!b.disabled) b.click(); }")
    wait_settled(page)
    series = page.get_attribute('[data-role="graph"]', "data-series")
    assert series == "black,white"
    # the bar shows the analyst's value of the position (black's discs), never an engine's
    # own view (it showed the engines' before): the analyst values a paused or ended game
    page.wait_for_function("() => document.querySelector('[data-role=evalbar]').dataset.ply "
                           "=== document.querySelector('[data-role=board]').dataset.ply")
    value = page.get_attribute('[data-role="evalbar"]', "data-eval")
    assert value not in (None, "")
    v = float(value)
    judged = analyst_points(page)
    assert judged[ply(page)] == v
    # the fill eases to its height in 0.3 s (a game that has just ended has just set it)
    page.wait_for_function("() => document.getAnimations().length === 0")
    share = page.evaluate("() => { const f = document.querySelector('[data-role=evalfill]');"
                          " return f.getBoundingClientRect().height / "
                          "f.parentElement.getBoundingClientRect().height; }")
    assert (share > 0.5) == (v > 0) or v == 0
    legend = page.inner_text('[data-role="legend"]')
    assert "Black (Easy)" in legend and "White (Medium)" in legend
    assert "own view" in legend and "Analyst" in legend
    # stepping back moves the bar to the analyst's value known at that ply (the graph's dots
    # of its series): at the ply itself, else the last ply before it it valued (the start: 0)
    page.keyboard.press("Home")
    assert float(page.get_attribute('[data-role="evalbar"]', "data-eval") or "nan") == \
        judged.get(0, 0.0)
    page.keyboard.press("ArrowRight")
    before = [p for p in judged if p <= 1]
    assert float(page.get_attribute('[data-role="evalbar"]', "data-eval") or "nan") == \
        (judged[max(before)] if before else 0.0)
    assert page.js_errors == []


def analyst_points(page: Any) -> dict[int, float]:
    """The analyst's series in the graph: ply -> black's discs."""
    return {int(p): float(v) for p, v in page.eval_on_selector_all(
        ".graph .dot.analysis", "els => els.map(e => [e.dataset.ply, e.dataset.value])")}


# --- settings and the game remembered -----------------------------------------------------
@ON_A_PHONE
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
@ON_A_DESKTOP
def test_a_link_reproduces_the_game(server, browser, size):  # noqa: F811
    ctx = browser.new_context(**SIZES[size])
    page = open_page(ctx, server.url)
    new_game(page)
    play_moves(page, 3, seed=21)
    moves = moves_of(page)
    ctx.grant_permissions(["clipboard-read", "clipboard-write"])
    share = page.locator('[data-action="share"]')
    assert share.is_visible()   # with the game, not folded away
    share.click()
    page.wait_for_function("() => document.querySelector('[data-role=share-status]')"
                           ".dataset.copied === 'true'")
    assert page.inner_text('[data-role="share-status"]') == "Link copied."
    link = page.input_value('[data-role="link"]')
    assert page.evaluate("() => navigator.clipboard.readText()") == link
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


@ON_A_DESKTOP
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
@ON_A_DESKTOP
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


def marks_of(page: Any) -> list[tuple[int, str, str, str]]:
    """The move list after an analysis: (ply, move as shown, its mark, its loss)."""
    return [(int(p), t, m, loss) for p, t, m, loss in page.eval_on_selector_all(
        ".moves .mv[data-ply]", "els => els.map(e => [e.dataset.ply, e.textContent, "
        "e.dataset.mark || '', e.dataset.loss || ''])")]


def analyse_on_page(page: Any) -> list[tuple[int, str, str, str]]:
    page.locator('[data-action="analyze"]').click()
    page.wait_for_function("() => document.querySelector('[data-role=analysis]')"
                           ".dataset.done === 'true'", timeout=180_000)
    return marks_of(page)


@ON_A_DESKTOP
def test_a_live_game_analysed_after_a_hint_has_the_marks_of_the_same_moves_from_a_link(
        server, browser, size):  # noqa: F811
    ctx = browser.new_context(**SIZES[size])
    page = open_page(ctx, server.url)
    new_game(page, agent="preset:easy")
    play_moves(page, 3, seed=8)
    show_hint(page)   # a hint before the analysis, as a player asks for one
    play_moves(page, 9, seed=9)
    live = analyse_on_page(page)
    assert live[0][2] == "" and live[0][3] == "0" and not live[0][1].endswith("?")
    assert all(loss != "" for _, t, _, loss in live if t != "pass")
    note = page.inner_text('[data-role="analysis"]')
    assert "book moves never" in note and "marked from a loss of" in note   # the threshold
    page.locator('[data-action="share"]').click()
    link = page.input_value('[data-role="link"]')
    ctx.close()
    fresh = browser.new_context(**SIZES[size])
    other = open_page(fresh, link)
    other.wait_for_function("() => document.querySelector('[data-role=board]').dataset.ply "
                            f"=== '{len(live)}'")
    assert analyse_on_page(other) == live
    assert other.js_errors == []
    fresh.close()


# --- dark theme and reduced motion --------------------------------------------------------
@ON_A_DESKTOP
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


# --- disc icons and the bar's value: read in both themes, at both sizes ----------------------
# WCAG's relative luminance of an [r, g, b] colour and the contrast ratio of two, for the
# scripts below that measure the page's colours.
LUMINANCE_JS = """
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
"""

ICONS_JS = """() => {
  const rgb = (t) => (t.match(/rgba?\\([^)]*\\)/g) || [])
    .map((c) => c.match(/[\\d.]+/g).map(Number));
/*LUMINANCE*/
  const behind = (el) => {
    for (let e = el.parentElement; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor)[0];
      if (c && (c.length < 4 || c[3] > 0)) return c;
    }
    return [255, 255, 255];
  };
  return Array.from(document.querySelectorAll(".chip")).map((el) => {
    const cs = getComputedStyle(el);
    const stops = rgb(cs.backgroundImage);
    const fill = stops.length ? stops[stops.length - 1] : rgb(cs.backgroundColor)[0];
    const ring = rgb(cs.borderTopColor)[0];
    const bg = behind(el);
    return {black: el.classList.contains("black"), fill: lum(fill),
            edge: Math.max(ratio(fill, bg), parseFloat(cs.borderTopWidth) >= 1.5
                           ? ratio(ring, bg) : 0),
            size: el.getBoundingClientRect().width};
  });
}""".replace("/*LUMINANCE*/", LUMINANCE_JS)


def test_every_disc_icon_and_the_bars_value_read_in_light_and_dark(server, browser, size):  # noqa: F811
    ctx = browser.new_context(**SIZES[size])
    page = open_page(ctx, server.url)
    new_game(page)
    play_moves(page, 2, seed=4)
    page.wait_for_function("() => document.querySelector('[data-role=evaltext]')"
                           ".textContent !== ''", timeout=60_000)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        icons = page.evaluate(ICONS_JS)
        assert sorted(i["black"] for i in icons) == [False, True]   # the counter's two
        for icon in icons:
            # its colour: a black disc near black, a white one near white, whatever the theme
            assert (icon["fill"] < 0.05) if icon["black"] else (icon["fill"] > 0.6), icon
            # and its outline stands out from what is behind it (3:1, WCAG's for graphics)
            assert icon["edge"] >= 3, (scheme, icon)
            assert icon["size"] >= 14
        text = page.locator('[data-role="evaltext"]')
        look = text.evaluate("e => [getComputedStyle(e).transform, getComputedStyle(e).fontSize,"
                             " getComputedStyle(document.body).fontSize]")
        # level (a translation at most) and at least the body's size
        assert look[0] == "none" or look[0].startswith("matrix(1, 0, 0, 1,"), look
        assert float(look[1].rstrip("px")) >= float(look[2].rstrip("px")), look
        box = text.bounding_box()
        bar = page.locator('[data-role="evalbar"]').bounding_box()
        assert box is not None and bar is not None and box["width"] <= bar["width"] + 0.5
        assert [x for x in low_contrast(page) if "evaltext" in x or "count" in x] == []
    assert page.js_errors == []
    ctx.close()


# --- the graph's axis fits the game -------------------------------------------------------
@ON_A_DESKTOP
def test_the_graph_spans_the_game_so_far(server, context):
    page = open_page(context, server.url)
    new_game(page)
    play_moves(page, 5, seed=2)
    n = ply(page)
    page.wait_for_function("() => document.querySelector('.graph .dot.analysis') !== null",
                           timeout=60_000)
    assert page.get_attribute('[data-role="graph"]', "data-plies") == str(max(8, n))
    right = max(page.eval_on_selector_all(".graph .dot", "els => els.map(e => Number("
                                          "e.getAttribute('cx')))"))
    assert right >= 300 * (n - 1) / max(8, n) - 1   # the last point near the right edge
    ticks = page.eval_on_selector_all(".graph .tick", "els => els.map(e => e.textContent)")
    assert ticks and all(0 < int(t) < max(8, n) for t in ticks)


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
@ON_A_DESKTOP
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


# (the wait is 15 s of a real clock)
@ON_A_PHONE
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
@ON_A_PHONE
def test_the_board_editor_sets_up_a_position_the_engine_plays_from(server, context):
    page = open_page(context, server.url)
    new_game(page)
    open_record(page)   # an earlier import's error, which the new position must clear
    page.fill('[data-role="record"]', "f5 zz")
    page.locator('[data-action="import"]').click()
    page.locator('[data-role="error"]').wait_for(state="visible")
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
    assert page.locator('[data-role="error"]').count() == 0
    box = page.locator('[data-role="board"]').bounding_box()   # back in view
    height = page.viewport_size["height"] if page.viewport_size else 900
    assert box is not None and box["y"] < height and box["y"] + box["height"] > 0
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


# --- hints and the bar come from the analyst -------------------------------------------------
# Black to move; at depth 5 c5 is 7 discs ahead of the next move, so the transposition table the
# analyst keeps between searches cannot turn the answer.
OPENING = "f5d6c3d3c4f4f6f3e6e7d7c6"


def analyst_result(moves: str) -> Any:
    """What the page's analyst finds in the position after ``moves`` (a fresh agent)."""
    pos = parse_move_list(moves, Position.start()).position
    return make_agent(ANALYST).search(pos, Limits(analysis=True))


def open_position(page: Any, moves: str, agent: str = "preset:beginner") -> None:
    """A game against ``agent`` from the position after ``moves`` (the person to move), the
    time per move (and so the hint's clock) at the server's 10 s: far more than the analyst's
    fixed depth needs."""
    new_game(page, agent=agent)
    open_record(page)
    page.fill('[data-role="record"]', moves)
    page.locator('[data-action="import"]').click()
    n = len(moves) // 2
    page.wait_for_function("() => document.querySelector('[data-role=board]').dataset.ply "
                           f"=== '{n}' && document.body.dataset.phase === 'human'")
    page.select_option('[data-role="time"]', "10")
    page.locator('[data-action="apply"]').click()


def show_hint(page: Any) -> None:
    page.locator('[data-action="hint"]').click()
    page.locator(".sq .hint.best").wait_for(state="attached", timeout=60_000)


@ON_A_PHONE
def test_a_hint_against_beginner_is_the_analysts_best_move(server, context):
    r = analyst_result(OPENING)
    ranked = sorted((m.eval for m in r.moves), reverse=True)
    assert ranked[0] - ranked[1] >= 2   # the position has no near tie at this depth
    page = open_page(context, server.url)
    open_position(page, OPENING)
    show_hint(page)
    best = page.get_attribute(".sq:has(.hint.best)", "data-square")
    assert best == r.best_name
    values = dict(page.eval_on_selector_all(
        ".sq[data-eval]", "els => els.map(e => [e.dataset.square, Number(e.dataset.eval)])"))
    assert set(values) == {square_name(m.move) for m in r.moves}
    assert max(values, key=lambda sq: values[sq]) == best   # the best marked is the highest
    # the labels say who searched, how, and whose discs the numbers count
    note = page.inner_text('[data-role="hint-note"]')
    assert "analyst (Strongest, depth 5" in note and f"Best: {best}" in note
    assert "your disc margin" in note
    title = page.get_attribute(".sq .hint.best", "title") or ""
    assert "discs for Black" in title and "depth 5" in title and "visits" not in title
    # the bar shows the analyst's value of this position, Beginner's view is a series apart
    page.wait_for_function("() => document.querySelector('[data-role=evalbar]').dataset.ply "
                           "=== '12'")
    assert float(page.get_attribute('[data-role="evalbar"]', "data-eval") or "nan") == \
        analyst_points(page)[12]
    assert "analyst (Strongest" in (page.get_attribute('[data-role="evalbar"]', "title") or "")
    page.locator(f'[data-square="{best}"]').click()   # the person plays it; Beginner answers
    wait_settled(page, 12)
    assert "White (Beginner)'s own view" in page.inner_text('[data-role="legend"]')
    assert page.js_errors == []


# --- errors beside their controls ----------------------------------------------------------
def test_an_error_shows_beside_its_control_until_a_success_there_clears_it(server, context,
                                                                          size):
    page = open_page(context, server.url)
    new_game(page)
    open_record(page)
    page.fill('[data-role="record"]', "f5 d6 zz")
    click(page, '[data-action="import"]')
    err = page.locator('[data-role="error"]')
    err.wait_for(state="visible")
    assert "cannot import" in err.inner_text()
    # right after the row of the Import button, and on screen without scrolling
    assert page.evaluate("() => document.querySelector('[data-role=error]')"
                         ".previousElementSibling.contains("
                         "document.querySelector('[data-action=import]'))")
    box = err.bounding_box()
    height = SIZES[size]["viewport"]["height"]
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height
    # it stays while the person does something elsewhere (it used to hide after 8 s)
    click(page, '[data-action="export-moves"]')
    page.wait_for_function("() => document.querySelector('[data-role=record]').dataset.moves "
                           "!== undefined")
    if size == "phone":
        page.wait_for_timeout(9000)
    assert err.is_visible() and "cannot import" in err.inner_text()
    # the next action there that succeeds clears it
    page.fill('[data-role="record"]', "f5d6")
    click(page, '[data-action="import"]')
    page.wait_for_function("() => document.querySelector('[data-role=board]').dataset.ply "
                           "=== '2'")
    assert page.locator('[data-role="error"]').count() == 0
    assert page.js_errors == []


# --- contrast and numbers ------------------------------------------------------------------
# Every element with text of its own that is shown: its colour against the background it is
# drawn on (the backgrounds of it and its ancestors composited), as WCAG 2 computes contrast.
CONTRAST_JS = """
(limit) => {
  const parse = (c) => {
    const m = String(c).match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const blend = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3]))
    .concat([1]);
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (const l of layers.reverse()) bg = blend(l, bg);
    return bg;
  };
/*LUMINANCE*/
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    const own = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim())
      || (["INPUT", "TEXTAREA"].includes(el.tagName) && el.value);
    if (!own || !el.checkVisibility()) continue;
    if (el.closest("svg title, option, optgroup, select")) continue;
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    const cs = getComputedStyle(el);
    const svg = el instanceof SVGElement;
    const bg = background(svg ? el.ownerSVGElement : el);
    let fg = parse(svg ? cs.fill : cs.color);
    if (fg[3] < 1) fg = blend(fg, bg);
    const v = ratio(fg, bg);
    if (v < limit) {
      out.push(`${el.tagName.toLowerCase()}.${String(el.className.baseVal ?? el.className)}`
               + ` "${(el.value || el.textContent).trim().slice(0, 24)}": `
               + `${v.toFixed(2)} (${cs.color} on rgb(${bg.slice(0, 3).map(Math.round)}))`);
    }
  }
  return out;
}
""".replace("/*LUMINANCE*/", LUMINANCE_JS)


def low_contrast(page: Any, limit: float = 4.5) -> list[str]:
    return list(page.evaluate(CONTRAST_JS, limit))


# What the style sheet can tell two buttons apart by: their classes, whether one is the move
# shown and whether it is disabled (the move list's rules select on nothing else).
BUTTON_LOOK_JS = """els => els.map(e => e.classList.contains('mv')
    ? ['mv', [...e.classList].sort().join(' '), e.getAttribute('aria-current'), e.disabled]
      .join('|')
    : null)"""


def check_every_state(page: Any, where: str) -> list[str]:
    """The page as it is, then each button under the pointer: every control, and one move of
    each look (a game's sixty moves in the list share a handful of looks, and each hover
    measures the whole page)."""
    bad = [f"{where}: {b}" for b in low_contrast(page)]
    buttons = page.locator("button:not(.sq):visible")
    looks = buttons.evaluate_all(BUTTON_LOOK_JS)
    seen: set[str] = set()
    for i in range(buttons.count()):
        b = buttons.nth(i)
        look = looks[i] if i < len(looks) else None
        if look in seen or not b.is_visible():
            continue
        if look is not None:
            seen.add(look)
        b.hover()
        label = (b.text_content() or "").strip()
        bad += [f"{where}, {label!r} hovered: {x}" for x in low_contrast(page)]
    return bad


def rich_page(page: Any) -> None:
    """A game with a hint on the board, an error under the import box, a disabled button or
    two, and a finished game analysed with its marked moves: every state a text can be in."""
    open_position(page, OPENING)
    show_hint(page)
    page.fill('[data-role="record"]', "f5 d6 zz")
    page.locator('[data-action="import"]').click()
    page.locator('[data-role="error"]').wait_for(state="visible")


def analysed_page(page: Any) -> None:
    page.fill('[data-role="record"]', finished_game(5))
    page.locator('[data-action="import"]').click()
    page.wait_for_function("() => document.body.dataset.phase === 'over'")
    page.locator('[data-action="analyze"]').click()
    page.wait_for_function("() => document.querySelector('[data-role=analysis]')"
                           ".dataset.done === 'true'", timeout=180_000)
    page.locator(".moves .mv.mistake, .moves .mv.blunder").first.click()   # selected + marked


def test_every_text_reads_at_4_5_to_1_in_every_state_light_and_dark(server, browser,  # noqa: F811
                                                                     size):
    # one page, its system theme switched under it: the page must follow a change of theme
    # while it is open, and each state is set up once for both themes
    bad: list[str] = []
    ctx = browser.new_context(color_scheme="light", **SIZES[size])
    page = open_page(ctx, server.url)
    page.locator('[data-role="params-box"] summary').click()   # Advanced, with its link

    def both_schemes(where: str) -> list[str]:
        found, backgrounds = [], set()
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            backgrounds.add(page.evaluate("() => getComputedStyle(document.body).backgroundColor"))
            found += check_every_state(page, f"{scheme}, {where}")
        assert len(backgrounds) == 2, backgrounds   # the theme did change
        return found

    rich_page(page)
    bad += both_schemes("a hint and an error")
    analysed_page(page)
    assert page.locator('.moves .mv[aria-current="true"].mistake, '
                        '.moves .mv[aria-current="true"].blunder').count() == 1
    bad += both_schemes("analysed")
    assert page.js_errors == []
    ctx.close()
    assert bad == []


def test_the_selected_move_stays_readable_under_the_pointer(server, context):
    page = open_page(context, server.url)
    new_game(page)
    play_moves(page, 2, seed=3)
    click(page, '.moves .mv[data-ply="2"]')
    current = page.locator('.moves .mv[aria-current="true"]')
    current.hover()
    colours = current.evaluate("e => [getComputedStyle(e).color, "
                               "getComputedStyle(e).backgroundColor]")
    assert colours[0] != colours[1]
    assert [x for x in low_contrast(page) if '"' + moves_of(page)[1] in x] == []


@ON_A_DESKTOP
def test_no_number_on_the_page_has_more_than_two_decimals_or_reads_minus_zero(server, context):
    page = open_page(context, server.url)
    rich_page(page)
    texts_hint = page_texts(page)
    analysed_page(page)
    for text in texts_hint + page_texts(page):
        assert not re.search(r"(?<![\d.])[+\u2212-]?1 discs", text), text   # "1 disc"
        assert not re.search(r"\d\.\d{3,}", text), text
        assert not re.search(r"(?<![\w.])[-\u2212]0(\.0+)?(?![\d.])", text), text
    assert page.js_errors == []


def page_texts(page: Any) -> list[str]:
    """What a person reads: the page's text, tooltips and the graph's labels."""
    return list(page.evaluate(
        "() => [document.body.innerText, ...Array.from(document.querySelectorAll('[title]'))"
        ".map(e => e.title), ...Array.from(document.querySelectorAll('svg title, svg text'))"
        ".map(e => e.textContent)]"))


# --- screenshots for the docs -------------------------------------------------------------
def take_screenshots(url: str, out: Path, browser: Any, plies: int = 20,  # noqa: F811
                     schemes: tuple[str, ...] = ("light", "dark")) -> list[Path]:
    """A game against the Easy level, the person mostly playing the hint's best move (a close
    game), analysed, with one more hint on the board: desktop (the whole page) and phone (its
    first screen), each in the light and the dark theme (``page-phone-dark.png``)."""
    paths = []
    for size in ("desktop", "phone"):
        for scheme in schemes:
            ctx = browser.new_context(color_scheme=scheme, **SIZES[size])
            page = open_page(ctx, url)
            new_game(page, agent="preset:easy")
            rng = random.Random(6)
            while ply(page) < plies and phase(page) == "human":
                before = ply(page)
                if rng.random() < 0.75 and not page.locator('[data-action="pass"]').is_enabled():
                    show_hint(page)
                    page.locator(".sq:has(.hint.best)").click()
                else:
                    click_a_move(page, rng)
                wait_settled(page, before, timeout=60)
            page.locator('[data-action="analyze"]').click()
            page.wait_for_function("() => document.querySelector('[data-role=analysis]')"
                                   ".dataset.done === 'true'", timeout=180_000)
            show_hint(page)
            page.evaluate("() => window.scrollTo(0, 0)")
            name = f"page-{size}" + ("" if scheme == "light" else f"-{scheme}")
            path = out / f"{name}.png"
            page.screenshot(path=str(path), full_page=size == "desktop")
            paths.append(path)
            ctx.close()
    return paths


def test_the_screenshots_can_be_taken(server, browser, tmp_path):  # noqa: F811
    paths = take_screenshots(server.url, tmp_path, browser, plies=2)
    assert [p.name for p in paths] == ["page-desktop.png", "page-desktop-dark.png",
                                       "page-phone.png", "page-phone-dark.png"]
    for path in paths:
        assert 10_000 < path.stat().st_size < 300_000


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
