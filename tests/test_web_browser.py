"""The web page in a real browser, and the web server's limits over real WebSockets.

The browser is Debian's ``chromium`` driven by Playwright for Python with the system
executable (Playwright's own browser download is not used).  Without chromium or Playwright
the browser tests skip and say how to install them (``.ci/run`` installs chromium); the server
tests below them need neither.

``python tests/test_web_browser.py docs/web.png`` takes the screenshot in the docs.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Callable

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:   # run as a script for the screenshot
    sys.path.insert(0, str(REPO))

from clients.channels import engine_command, engine_env  # noqa: E402
from engine_server.commands.web import parse_move_list  # noqa: E402
from engine_server.game import Position  # noqa: E402

from .loadsafe import WAIT  # noqa: E402

# Chromium, and web server processes; one pytest-xdist worker runs the module (one browser)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("web_browser")]

START_TIMEOUT = 60.0


# --- the server ---------------------------------------------------------------------------
def start_web_server(args: list[str], stderr: IO[bytes], written: Callable[[], str]
                     ) -> tuple[subprocess.Popen[str], str]:
    """``othello-engine ARGS`` (a web server) in a subprocess, and the line it prints once it
    listens; when that line does not come, the process is killed and RuntimeError says what
    it wrote on stderr (``written()``)."""
    proc = subprocess.Popen(engine_command(*args), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=stderr, env=engine_env(),
                            cwd=str(REPO), text=True)
    first: list[str] = []
    out = proc.stdout
    assert out is not None
    reader = threading.Thread(target=lambda: first.append(out.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    if not first or "serving http://" not in first[0]:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"the web server did not start: {first}\n{written()}")
    return proc, first[0]


class WebServerProcess:
    """``othello-engine --web 127.0.0.1:0`` in a subprocess; ``url`` once it listens.
    ``presets``: added to the configuration's (e.g. ``analyst``, the agent behind hints)."""

    def __init__(self, tmp: Path, *args: str, web: str = "",
                 presets: dict[str, str] | None = None):
        cfg = tmp / "web.toml"
        extra = "".join(f'{k} = "{v}"\n' for k, v in (presets or {}).items())
        cfg.write_text(f"[engine]\nwarmup = false\n\n[web]\n{web}\n\n[presets]\n{extra}",
                       encoding="utf-8")
        self.log = tmp / "web.log"
        self._log_file = open(self.log, "wb")
        self.proc, line = start_web_server(
            ["--config", str(cfg), "--web", "127.0.0.1:0", *args], self._log_file,
            lambda: self.log.read_text(errors="replace")[-2000:])
        self.url = line.split("serving ", 1)[1].split()[0]
        self.ws_url = self.url.replace("http://", "ws://") + "ws"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log_file.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[WebServerProcess]:
    s = WebServerProcess(tmp_path_factory.mktemp("web"), "--agent", "random")
    yield s
    s.close()


# --- the browser --------------------------------------------------------------------------
def chromium_path() -> str | None:
    env = os.environ.get("OTHELLO_CHROMIUM")
    if env:
        return env
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = chromium_path()
    if exe is None:
        pytest.skip("no chromium: install Debian's package (apt-get install -y chromium; "
                    ".ci/run does) or set OTHELLO_CHROMIUM to a Chromium binary")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: pip install -e '.[dev]'")
    with sync_playwright() as pw:
        try:
            # --no-sandbox: CI runs as root, where Chromium refuses its sandbox.
            b = pw.chromium.launch(executable_path=exe, headless=True,
                                   args=["--no-sandbox", "--disable-dev-shm-usage"])
        except Exception as e:   # a broken install is the machine's problem, said plainly
            pytest.skip(f"chromium at {exe} does not start under Playwright: {e}")
        yield b
        b.close()


def phase(page: Any) -> str:
    return str(page.evaluate("document.body.dataset.phase"))


def ply(page: Any) -> int:
    return int(page.get_attribute('[data-role="board"]', "data-ply") or 0)


def wait_settled(page: Any, old_ply: int | None = None, timeout: float = WAIT) -> str:
    """Until it is the person's turn (or the game is over), past ``old_ply`` if given."""
    # Predicates are functions: the page's CSP forbids eval, which expressions would need.
    cond = ("() => ['human','over','paused'].includes(document.body.dataset.phase)"
            if old_ply is None else
            "() => ['human','over','paused'].includes(document.body.dataset.phase) && "
            f"document.querySelector('[data-role=board]').dataset.ply !== '{old_ply}'")
    page.wait_for_function(cond, timeout=timeout * 1000)
    return phase(page)


def start_game(page: Any, url: str, agent: str, time_s: str, color: str = "black") -> None:
    page.goto(url)
    page.wait_for_selector('[data-role="agent"] option', state="attached")
    wait_settled(page)
    page.select_option('[data-role="color"]', color)
    page.select_option('[data-role="agent"]', agent)
    page.select_option('[data-role="time"]', time_s)
    page.locator('[data-action="new"]').first.click()
    page.wait_for_function("() => document.querySelector('[data-role=board]').dataset.ply "
                           "=== '0' "
                           "&& document.body.dataset.phase === 'human'")


def open_record(page: Any) -> None:
    """Open the export/import box as a person would (it starts folded)."""
    if not page.locator('[data-role="record"]').is_visible():
        page.locator("summary", has_text="Export / import").click()


def click_a_move(page: Any, rng: random.Random) -> None:
    if page.locator('[data-action="pass"]').is_enabled():
        page.locator('[data-action="pass"]').click()
        return
    legal = page.locator('[data-legal="true"]')
    n = legal.count()
    assert n > 0, "the person's turn without a legal square or an enabled pass"
    legal.nth(rng.randrange(n)).click()


def test_a_full_game_in_the_browser_ends_with_the_rules_core_score(server, browser):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    start_game(page, server.url, "agent:random", "0")
    assert page.locator("[data-square]").count() == 64
    assert sorted(page.eval_on_selector_all('[data-legal="true"]',
                                            "els => els.map(e => e.dataset.square)")) == \
        ["c4", "d3", "e6", "f5"]
    assert page.get_attribute('[data-square="d4"]', "data-disc") == "white"
    assert page.get_attribute('[data-square="e4"]', "data-disc") == "black"
    rng = random.Random(17)
    clicks = 0
    while phase(page) != "over":
        before = ply(page)
        click_a_move(page, rng)
        clicks += 1
        wait_settled(page, before)
        assert clicks < 64
    status = page.inner_text('[data-role="status"]')
    open_record(page)
    page.locator('[data-action="export-moves"]').click()
    page.wait_for_function("() => document.querySelector('[data-role=record]').value.length")
    moves = page.input_value('[data-role="record"]')
    res = parse_move_list(moves, Position.start()).result()
    black = page.locator('[data-disc="black"]').count()
    white = page.locator('[data-disc="white"]').count()
    assert (black, white) == (res.black_discs, res.white_discs)
    score = page.locator('[data-role="score"]')
    assert score.get_attribute("data-black") == str(res.black_discs)
    assert score.get_attribute("data-white") == str(res.white_discs)
    assert f"{res.black_discs}-{res.white_discs}" in status
    assert ("Draw" in status) if res.winner is None else \
        (f"{str(res.winner).capitalize()} wins" in status)
    assert errors == []
    page.close()


def test_bad_input_shows_an_error_on_the_page_and_keeps_the_game(server, browser):
    page = browser.new_page()
    start_game(page, server.url, "agent:random", "0")
    page.locator('[data-square="f5"]').click()
    wait_settled(page, 0)
    board_before = page.eval_on_selector_all("[data-square]", "els => els.map(e => "
                                                              "e.dataset.disc || '-').join('')")
    open_record(page)
    page.fill('[data-role="record"]', "f5 d6 zz")
    page.locator('[data-action="import"]').click()
    err = page.locator('[data-role="error"]')
    err.wait_for(state="visible")
    assert "cannot import" in err.inner_text()
    page.fill('[data-role="record"]', "x" * 70000)    # over the server's message limit
    page.locator('[data-action="import"]').click()
    page.wait_for_function("() => document.querySelector('[data-role=error]').textContent"
                           ".includes('limit')")
    assert ply(page) == 2 and phase(page) == "human"
    assert page.eval_on_selector_all("[data-square]", "els => els.map(e => "
                                                      "e.dataset.disc || '-').join('')") \
        == board_before
    page.close()


def test_a_reloaded_tab_resumes_its_game(server, browser):
    page = browser.new_page()
    page.goto(server.url)
    page.wait_for_selector('[data-role="agent"] option', state="attached")
    wait_settled(page)
    # White against the engine: not the page's defaults, so that the controls after the
    # reload show whether they come from the game.
    page.select_option('[data-role="color"]', "white")
    page.select_option('[data-role="agent"]', "agent:random")
    page.select_option('[data-role="time"]', "0")
    page.locator('[data-action="new"]').first.click()
    page.wait_for_function("() => document.querySelector('[data-role=board]').dataset.ply "
                           "=== '1' && document.body.dataset.phase === 'human'")
    click_a_move(page, random.Random(3))
    wait_settled(page, 1)   # the engine has replied
    before = ply(page)
    board = page.eval_on_selector_all("[data-square]", "els => els.map(e => "
                                                       "e.dataset.disc || '-').join('')")
    token = page.evaluate("() => sessionStorage.getItem('othello-session')")
    assert token and before == 3
    page.reload()
    page.wait_for_function(f"() => document.querySelector('[data-role=board]').dataset.ply "
                           f"=== '{before}'")
    wait_settled(page)
    assert ply(page) == before and phase(page) == "human"
    assert page.eval_on_selector_all("[data-square]", "els => els.map(e => "
                                                      "e.dataset.disc || '-').join('')") == board
    assert page.evaluate("() => sessionStorage.getItem('othello-session')") == token
    assert page.input_value('[data-role="color"]') == "white"   # the game's, not the default
    click_a_move(page, random.Random(4))   # and it goes on
    wait_settled(page, before)
    assert ply(page) >= before + 2 or phase(page) == "over"
    # another tab has its own game
    other = browser.new_page()
    other.goto(server.url)
    other.wait_for_selector('[data-role="agent"] option', state="attached")
    wait_settled(other)
    assert ply(other) == 0
    other.close()
    page.close()


def test_the_page_fits_a_phone_screen(server, browser):
    page = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True,
                            has_touch=True, device_scale_factor=2)
    start_game(page, server.url, "agent:random", "0")
    board = page.locator('[data-role="board"]').bounding_box()
    assert board is not None and board["x"] >= 0 and board["x"] + board["width"] <= 390
    assert board["width"] >= 300   # squares big enough for a finger: > 37 px
    for action in ("new", "undo", "pass", "hint"):
        box = page.locator(f'[data-action="{action}"]').first.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 390, action
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.locator('[data-square="d3"]').tap()
    wait_settled(page, 0)
    assert ply(page) == 2
    page.close()


def take_screenshot(url: str, path: Path, browser: Any, plies: int = 24,
                    agent: str = "preset:seed004-dk", follow_hints: bool = True) -> None:
    """A game in progress against the MCTS blog post's agent: the person plays the hint's best move
    (a close game), then asks for one more hint, so the squares carry evaluations."""
    page = browser.new_page(viewport={"width": 1100, "height": 860})
    start_game(page, url, agent, "0")
    rng = random.Random(4)
    while ply(page) < plies and phase(page) == "human":
        before = ply(page)
        if follow_hints and not page.locator('[data-action="pass"]').is_enabled():
            page.locator('[data-action="hint"]').click()
            best = page.locator(".sq .hint.best")
            best.wait_for(state="attached", timeout=30000)
            page.locator(".sq:has(.hint.best)").click()
        else:
            click_a_move(page, rng)
        wait_settled(page, before, timeout=30)
    page.locator('[data-action="hint"]').click()
    page.wait_for_selector(".sq .hint", timeout=30000)
    page.locator('[data-role="params-box"] summary').click()
    page.screenshot(path=str(path), full_page=True)
    page.close()


def test_a_game_with_hints_and_the_graph_can_be_photographed(server, browser, tmp_path):
    shot = tmp_path / "web.png"
    take_screenshot(server.url, shot, browser, plies=6, agent="agent:uct",
                    follow_hints=False)
    assert shot.stat().st_size > 10_000


# --- the server's limits, over real sockets (no browser) ------------------------------------
def test_the_page_and_its_files_are_served_with_a_content_policy(server):
    with urllib.request.urlopen(server.url, timeout=10) as r:
        html = r.read().decode()
        assert 'data-role="board"' in html and "default-src 'self'" in \
            r.headers["Content-Security-Policy"]
    for name in ("app.js", "style.css"):
        with urllib.request.urlopen(server.url + "static/" + name, timeout=10) as r:
            assert r.status == 200 and len(r.read()) > 1000
    # the docs the page links to, as plain text; nothing else of the checkout
    with urllib.request.urlopen(server.url + "docs/web.md", timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain") and b"analyst" in r.read()
    for bad in ("docs/%2e%2e/README.md", "docs/../pyproject.toml", "docs/img/page-phone.png",
                "docs/nothing.md"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(server.url + bad, timeout=10)
        assert e.value.code == 404, bad


def run_async(main: Any) -> None:
    """``asyncio.run(main())`` on a thread of its own: Playwright's sync API keeps an event
    loop running on this one while the browser fixture lives."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(main())
        except BaseException as e:   # handed to the test's thread
            failure.append(e)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(2 * WAIT)
    assert not t.is_alive(), f"the WebSocket client did not finish within {2 * WAIT:g} s"
    if failure:
        raise failure[0]


async def _recv_until(ws: Any, kind: str, timeout: float = WAIT) -> dict[str, Any]:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        m = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if m["type"] == kind:
            return m
    raise AssertionError(f"no {kind} message")


def test_sessions_and_message_sizes_are_limited_and_errors_keep_the_session(tmp_path):
    import websockets

    s = WebServerProcess(tmp_path, "--agent", "random",
                         web="max_sessions = 2\nmax_message_bytes = 2048")

    async def run() -> None:
        a = await websockets.connect(s.ws_url)
        b = await websockets.connect(s.ws_url)
        await _recv_until(a, "state")
        await _recv_until(b, "state")
        c = await websockets.connect(s.ws_url)
        full = json.loads(await c.recv())
        assert full["type"] == "error" and "server full: 2 games" in full["message"]
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await c.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        # bad input on a, which goes on playing: once the engine has answered f5 (the first
        # state after f5 may come while it thinks, and a move then is "not your turn")
        await a.send(json.dumps({"type": "move", "square": "f5", "id": 1}))
        while True:
            st = await _recv_until(a, "state")
            if st["ply"] >= 2 and st["human_to_move"]:
                break
        for raw, words in (("{nope", "malformed JSON"), ("x" * 3000, "limit of 2048 bytes"),
                           (json.dumps({"type": "move", "square": "a1"}), "illegal move a1")):
            await a.send(raw)
            err = await _recv_until(a, "error")
            assert words in err["message"]
        await a.send(json.dumps({"type": "state"}))
        st = await _recv_until(a, "state")
        assert st["moves"][0] == "f5" and st["human_to_move"]
        # far over the limit the WebSocket layer closes that one connection only
        # (on a busy machine the server's close can reach b while it is still sending: the
        # send then fails with the reset, before b could read the close frame)
        try:
            await b.send("y" * (2 << 20))
        except (websockets.ConnectionClosed, ConnectionResetError):
            pass
        else:
            with pytest.raises(websockets.ConnectionClosed) as big:
                while True:
                    await b.recv()
            assert big.value.rcvd is not None and big.value.rcvd.code == 1009
        # its slot is freed: a new tab gets a game
        t0 = time.monotonic()
        while True:
            d = await websockets.connect(s.ws_url)
            first = json.loads(await d.recv())
            if first["type"] == "session":   # a game: its token, then welcome and state
                break
            await d.close()
            assert time.monotonic() - t0 < WAIT, "the closed session's slot was never freed"
            await asyncio.sleep(0.1)
        await a.send(json.dumps({"type": "ping", "t": 1}))
        assert (await _recv_until(a, "pong"))["t"] == 1
        for ws in (a, d):
            await ws.close()

    try:
        run_async(run)
    finally:
        s.close()


def _log_events(s: WebServerProcess, event: str) -> list[dict[str, Any]]:
    out = []
    for line in s.log.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("event") == event:
            out.append(rec)
    return out


def _wait_for(cond: Any, what: str, limit: float = 30.0) -> None:
    """Until ``cond()``; the limit only turns a hang into a failure."""
    end = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < end, f"never: {what}"
        time.sleep(0.1)


def _process_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().split(") ", 1)[1].startswith("Z")   # exited, not yet reaped
    except OSError:
        return True


async def _open_game(url: str, token: str = "") -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """A page's connection: its ``session`` message (with ``errors``: the error messages
    before the game's first state) and that state."""
    import websockets

    ws = await websockets.connect(url + (f"?session={token}" if token else ""))
    hello = json.loads(await ws.recv())
    assert hello["type"] == "session", hello
    hello["errors"] = []
    while (m := json.loads(await asyncio.wait_for(ws.recv(), 10)))["type"] != "state":
        if m["type"] == "error":
            hello["errors"].append(m)
    return ws, hello, m


def test_a_page_comes_back_to_its_game_and_abandoned_games_are_reclaimed(tmp_path):
    s = WebServerProcess(tmp_path, "--agent", "random", "--log-level", "info",
                         web="max_sessions = 2\nresume_timeout = 2")

    async def run() -> None:
        import websockets

        # A fresh page that closes: its process ends at once (nothing to come back to).
        fresh, _, _ = await _open_game(s.ws_url)
        (opened,) = _log_events(s, "web_session_open")
        await fresh.close()
        _wait_for(lambda: _process_gone(opened["pid"]), "the fresh page's process exits")

        # A page in the middle of a game comes back with its token: same game.
        a, hello, _ = await _open_game(s.ws_url)
        token = hello["session"]
        pid = _log_events(s, "web_session_open")[-1]["pid"]
        await a.send(json.dumps({"type": "move", "square": "f5"}))
        st = await _recv_until(a, "state")
        while st["ply"] < 2:   # the engine's reply
            st = await _recv_until(a, "state")
        await a.close()
        a, hello, st2 = await _open_game(s.ws_url, token)
        assert hello == {"type": "session", "session": token, "resumed": True, "errors": []}
        assert st2["moves"] == st["moves"] and st2["human_to_move"]
        # The same game opened by a second page: the newest has it, the other is told.
        b, hello_b, st3 = await _open_game(s.ws_url, token)
        assert hello_b["resumed"] and st3["moves"] == st["moves"]
        told = await _recv_until(a, "error")
        assert told["fatal"] and "opened in another tab" in told["message"]
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await a.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4000
        await b.send(json.dumps({"type": "state"}))
        assert (await _recv_until(b, "state"))["moves"] == st["moves"]

        # With b playing, one slot is left: twenty pages in a row that make a move and go
        # away without a word never lock out the next one.
        gone = []
        for i in range(20):
            c, hello_c, _ = await _open_game(s.ws_url)
            await c.send(json.dumps({"type": "move", "square": ("f5", "d3", "c4", "e6")[i % 4]}))
            while (await _recv_until(c, "state"))["ply"] < 1:
                pass
            gone.append(hello_c["session"])
            await c.close()
        await b.send(json.dumps({"type": "state"}))
        assert (await _recv_until(b, "state"))["moves"] == st["moves"]   # never evicted
        # An evicted page that comes back is told why, and gets a new game.
        c, hello_c, st_c = await _open_game(s.ws_url, gone[0])
        assert not hello_c["resumed"] and st_c["ply"] == 0
        (err,) = hello_c["errors"]
        assert err.get("expired") and "closed for a new player when all 2 games were taken" \
            in err["message"]
        await c.close()

        # A game whose page stays away longer than resume_timeout ends, and its process too.
        await b.close()
        _wait_for(lambda: any(e["reason"] == "page gone" and e["pid"] == pid
                              for e in _log_events(s, "web_session_end")),
                  "the abandoned game ends")
        _wait_for(lambda: _process_gone(pid), "its process exits")
        d, hello_d, st_d = await _open_game(s.ws_url, token)
        assert not hello_d["resumed"] and st_d["ply"] == 0
        (err,) = hello_d["errors"]
        assert "closed 2 s after its page closed (resume_timeout)" in err["message"]
        await d.close()

    try:
        run_async(run)
    finally:
        s.close()


def test_another_sites_page_may_not_open_a_session(server):
    import websockets
    from websockets.typing import Origin

    async def run() -> None:
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(server.ws_url, origin=Origin("http://evil.example"))
        assert refused.value.response.status_code == 403
        host = server.url.split("//", 1)[1].rstrip("/")
        ok = await websockets.connect(server.ws_url, origin=Origin(f"http://{host}"))
        assert json.loads(await ok.recv())["type"] == "session"
        assert json.loads(await ok.recv())["type"] == "welcome"
        await ok.close()

    run_async(run)


if __name__ == "__main__":
    import tempfile

    from playwright.sync_api import sync_playwright

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/web.png")
    with tempfile.TemporaryDirectory() as d, sync_playwright() as pw:
        srv = WebServerProcess(Path(d), "--agent", "seed004-dk")
        exe = chromium_path() or "/usr/bin/chromium"
        b = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        try:
            take_screenshot(srv.url, out, b)
        finally:
            b.close()
            srv.close()
    print(out)
