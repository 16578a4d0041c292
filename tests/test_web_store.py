"""The web page's games outlive the web server (docs/web.md, "Restarts").

Unit level: ``WebHandler.snapshot``/``restore`` give back the same ``state``.  Over raw
WebSockets, against ``othello-engine --web`` subprocesses on one ``--store`` file: a game goes
on after the server is stopped with SIGTERM and after it is killed with -9, with the same moves
and the engine's same answers as a game that was never interrupted; a corrupt store file is
reported and the server serves without one.  In Chromium: the page itself comes back to its
game after both kinds of restart.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from engine_server.commands.web import WebHandler
from engine_server.session import Output, Session

from .loadsafe import WAIT
from .test_web_browser import (  # noqa: F401  (browser: a fixture)
    REPO,
    browser,
    run_async,
    start_web_server,
)
from .test_web_protocol import WebHarness

START_TIMEOUT = 60.0
ENGINE = "ab:depth=3"   # deterministic: a fresh agent answers as one that played all along


# --- unit level -----------------------------------------------------------------------------
def test_a_snapshot_restores_the_same_state():
    h = WebHarness(agent=ENGINE)
    try:
        h.send(type="new", black="human", white=ENGINE, time=0.5)
        for _ in range(3):
            st = h.settled()
            h.send(type="move", square=st["legal"][0])
        st = h.settled()
        h.send(type="set", black=ENGINE, white="random", time=0.25)
        h.send(type="stop")
        h.settled()
        h.send(type="evaluate", on=False)
        snap = h.run(h.handler.snapshot)
        before = h.send(type="state")[0]
        assert before["ply"] >= 6 and before["evals"], before
    finally:
        h.inbox.put(None)
    stored = json.loads(json.dumps(snap))   # what the store gives back
    lines: list[str] = []
    session = Session(h.session.options, Output(lines.append))
    handler = WebHandler(session, post=lambda fn: None)
    try:
        handler.restore(stored)
        after = handler.state()
        assert json.loads(json.dumps(after)) == json.loads(json.dumps(before))
        assert handler.snapshot() == stored
        assert after["players"]["black"]["agent"] == ENGINE and after["time"] == 0.25
        assert after["paused"]
    finally:
        handler.close()


def test_a_game_restored_on_the_engines_turn_gets_the_engines_move():
    """The store has the person's move but not the engine's answer (the server went away
    while it searched): the restored game's engine searches it again, on ``attach``."""
    h = WebHarness(agent=ENGINE)
    try:
        h.send(type="new", black="human", white=ENGINE, time=0)
        st = h.settled()
        h.send(type="move", square=st["legal"][0])
        st = h.settled()
        h.send(type="evaluate", on=False)
        snap = h.run(h.handler.snapshot)
        answer = st["moves"][-1]
    finally:
        h.inbox.put(None)
    snap["game"]["moves"] = snap["game"]["moves"][:-1]   # the engine's move was never kept
    r = WebHarness(agent="random")
    try:
        r.run(lambda: r.handler.restore(snap))
        assert r.send(type="state")[0]["thinking"] is None
        start = len(r.messages)
        r.run(r.handler.attach)
        moved = r.wait_for(lambda m: m["type"] == "move", start=start)
        assert moved["color"] == "white" and moved["square"] == answer
        assert r.settled()["moves"] == st["moves"]
    finally:
        r.inbox.put(None)


def test_a_failed_write_is_logged_once_and_the_game_goes_on_in_memory(tmp_path):
    from engine_server.serve import web_game
    from engine_server.serve.store import SessionStore, StoreError

    path = tmp_path / "sessions.sqlite3"
    h = WebHarness(agent=ENGINE)
    try:
        server = SessionStore(path, holder="test/1/x")
        assert server.acquire("web", "tok") is None
        setup = web_game.WorkerSetup(h.session.options, 65536, store_location=str(path),
                                     store_holder="test/1/x")
        cp = web_game._Checkpoints(setup, "tok", h.handler, server.fence("web", "tok"))
        assert cp.store is not None
        h.run(cp)
        reader = SessionStore(path)
        assert reader.load("web", "tok") == h.run(h.handler.snapshot)
        errors: list[str] = []
        saved = cp.store.save

        def full(*a: Any) -> None:
            raise StoreError("disk full")

        cp.store.save = full   # type: ignore[method-assign]
        logged = web_game.log.error
        web_game.log.error = lambda *a, **k: errors.append(a[0])   # type: ignore[method-assign]
        try:
            for _ in range(2):
                st = h.settled()
                h.send(type="move", square=st["legal"][0])
                h.run(cp)
        finally:
            web_game.log.error = logged   # type: ignore[method-assign]
        assert errors == ["store_failed"] and cp.failing
        st = h.settled()
        assert st["ply"] == 4   # the game went on
        cp.store.save = saved   # type: ignore[method-assign]
        h.run(cp)   # the disk has room again: the game as it is now
        assert not cp.failing and reader.load("web", "tok")["game"]["moves"] == \
            h.run(h.handler.snapshot)["game"]["moves"]
        cp.frozen.set()
        h.send(type="undo")
        h.run(cp)   # nothing after the end of its input
        assert len(reader.load("web", "tok")["game"]["moves"]) == 4
        reader.close()
        cp.close()
    finally:
        h.inbox.put(None)


# --- servers ----------------------------------------------------------------------------------
class Server:
    """``othello-engine --web 127.0.0.1:PORT --store STORE`` in a subprocess."""

    def __init__(self, tmp: Path, store: Path | str | None, port: int = 0, *args: str,
                 resume_timeout: float = 120, lease: float | None = None):
        tmp.mkdir(parents=True, exist_ok=True)
        cfg = tmp / "web.toml"
        # [remote] move_time: the tabs' cap of 10 s a move would cut a fixed-depth search short
        # on a busy machine, and the games compared move by move would part there
        leases = "" if lease is None else f"\n[store]\nlease = {lease}\n"
        cfg.write_text(f"[engine]\nwarmup = false\n\n[web]\nresume_timeout = {resume_timeout}\n"
                       f"\n[remote]\nmove_time = 600\n{leases}", encoding="utf-8")
        self.stderr = tmp / "stderr.log"
        self._err = open(self.stderr, "wb")
        store_args = ("--store", str(store)) if store is not None else ("--no-store",)
        self.proc, line = start_web_server(
            ["--config", str(cfg), "--web", f"127.0.0.1:{port}", *store_args, "--agent",
             "random", *args], self._err, self.err_text)
        self.line = line
        self.url = line.split("serving ", 1)[1].split()[0]
        self.port = int(self.url.rstrip("/").rsplit(":", 1)[1])
        self.ws_url = self.url.replace("http://", "ws://") + "ws"

    def err_text(self) -> str:
        return self.stderr.read_text(encoding="utf-8", errors="replace")

    def terminate(self) -> int:
        """SIGTERM, and the exit."""
        self.proc.send_signal(signal.SIGTERM)
        return self.wait()

    def wait(self) -> int:
        try:
            return self.proc.wait(WAIT)
        finally:
            self._err.close()

    def kill(self) -> None:
        """kill -9 (and reaped, so that its lease holder is seen gone)."""
        self.proc.kill()
        self.proc.wait()
        self._err.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()


async def _recv(ws: Any, kind: str) -> dict[str, Any]:
    while True:
        m = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
        if m["type"] == kind:
            return m
        assert m["type"] != "error", m


async def _connect(url: str, token: str = "") -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """A page's connection: its ``session`` message (``errors`` added: the errors before the
    first state) and that state."""
    import websockets

    ws = await websockets.connect(url + (f"?session={token}" if token else ""))
    hello = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
    assert hello["type"] == "session", hello
    hello["errors"] = []
    while (m := json.loads(await asyncio.wait_for(ws.recv(), WAIT)))["type"] != "state":
        if m["type"] == "error":
            hello["errors"].append(m)
    return ws, hello, m


async def _until_served(url: str, token: str, refusals: list[str]) -> tuple[Any, Any]:
    """A page with ``token`` connecting until a server serves it, as the page does (it tries
    again after a refusal); the connection and its ``session`` message.  ``refusals``: the
    refusals' messages, added to."""
    import websockets

    deadline = time.monotonic() + WAIT
    while True:
        page = await websockets.connect(f"{url}?session={token}")
        hello = json.loads(await asyncio.wait_for(page.recv(), WAIT))
        if hello["type"] == "session":
            return page, hello
        refusals.append(hello["message"])
        await page.close()
        assert time.monotonic() < deadline, refusals
        await asyncio.sleep(0.3)


async def _settled(ws: Any, st: dict[str, Any]) -> dict[str, Any]:
    """The state once the person is to move or the game is over."""
    while not (st["human_to_move"] or st["over"]) or st["thinking"]:
        st = await _recv(ws, "state")
    return st


async def _play(ws: Any, st: dict[str, Any], moves: int) -> dict[str, Any]:
    """The person plays ``moves`` moves (the first legal square in the state's order, or a
    pass), each answered by the engine; the state after the last answer."""
    for _ in range(moves):
        st = await _settled(ws, st)
        if st["over"]:
            return st
        if st["must_pass"]:
            await ws.send(json.dumps({"type": "pass"}))
        else:
            await ws.send(json.dumps({"type": "move", "square": st["legal"][0]}))
        ply = st["ply"]
        st = await _recv(ws, "state")
        while st["ply"] <= ply:
            st = await _recv(ws, "state")
    return await _settled(ws, st)


async def _new_game(url: str, black: str = "human") -> tuple[Any, str, dict[str, Any]]:
    ws, hello, st = await _connect(url)
    await ws.send(json.dumps({"type": "new", "black": black, "white": ENGINE, "time": 0}))
    st = await _recv(ws, "state")
    assert st["ply"] == 0 and st["players"]["white"]["agent"] == ENGINE
    return ws, hello["session"], st


async def _until_over(ws: Any, st: dict[str, Any]) -> dict[str, Any]:
    while not st["over"]:
        st = await _recv(ws, "state")
    return st


# Two engines playing each other, slower than ENGINE: a search is under way at most moments.
WATCHED = "ab:depth=9"


def _uninterrupted(tmp: Path) -> tuple[list[str], list[str]]:
    """The person's game and the engines' game played without a restart (the reference)."""
    s = Server(tmp / "plain", None)
    games: list[list[str]] = []

    async def run() -> None:
        ws, _, st = await _new_game(s.ws_url)
        st = await _play(ws, st, 80)
        assert st["over"]
        games.append(st["moves"])
        await ws.close()
        ws, _, st = await _new_game(s.ws_url, WATCHED)
        games.append((await _until_over(ws, st))["moves"])
        await ws.close()

    try:
        run_async(run)
    finally:
        s.close()
    return games[0], games[1]


@pytest.mark.slow  # two web servers in subprocesses
def test_a_page_sent_to_another_server_is_handed_its_game(tmp_path):
    """A balancer may send a page's reconnection to another server than its game's (a server
    back after a failover): that server is refused the lease, asks for it, and the game's
    server, whose page has left, hands the game over."""

    store = tmp_path / "sessions.sqlite3"
    a = Server(tmp_path / "a", store, 0, "--agent", ENGINE)
    b = Server(tmp_path / "b", store, 0, "--agent", ENGINE)
    refusals: list[str] = []

    async def run() -> None:
        ws, token, st = await _new_game(a.ws_url)
        st = await _play(ws, st, 2)
        await ws.close()
        page, hello = await _until_served(b.ws_url, token, refusals)
        assert hello["resumed"] and hello["session"] == token
        back = await _recv(page, "state")
        assert back["moves"] == st["moves"] and back["ply"] == 4
        await _play(page, back, 1)
        await page.close()

    try:
        run_async(run)
    finally:
        a.close()
        b.close()
    assert refusals and "served by another server" in refusals[0]


@pytest.mark.slow  # two web servers in subprocesses
def test_what_a_server_remembers_of_a_token_does_not_outlast_another_servers_game(tmp_path):
    """A page's first connection broke on one server before its first move (that server ends
    the empty game and remembers the token), and the page went on at another server: back at
    the first, it finds its game, not a new one."""
    import websockets

    store = tmp_path / "sessions.sqlite3"
    a = Server(tmp_path / "a", store, 0, "--agent", ENGINE)
    b = Server(tmp_path / "b", store, 0, "--agent", ENGINE)
    token = "page-made-token-0123456789"

    async def run() -> None:
        first = await websockets.connect(f"{a.ws_url}?session={token}&new=1")
        hello = json.loads(await asyncio.wait_for(first.recv(), WAIT))
        assert hello["session"] == token
        await first.close()                 # no move: a ends the game
        ws, hello, st = await _connect(b.ws_url, f"{token}&new=1")
        assert hello["session"] == token and not hello["errors"]
        await ws.send(json.dumps({"type": "new", "black": "human", "white": ENGINE,
                                  "time": 0}))
        st = await _play(ws, await _recv(ws, "state"), 1)
        await ws.close()
        # refused while b holds the game, then handed it
        page, hello = await _until_served(a.ws_url, token, [])
        assert hello == {"type": "session", "session": token, "resumed": True}
        assert (await _recv(page, "state"))["moves"] == st["moves"]
        await page.close()

    try:
        run_async(run)
    finally:
        a.close()
        b.close()


@pytest.mark.slow  # a web server and a PostgreSQL server in subprocesses
def test_no_game_begins_while_the_database_is_out_of_reach(tmp_path):
    """A game that could write nothing is not begun: the page is told and tries again, and
    gets its game once the database is back."""
    import websockets

    pytest.importorskip("psycopg")
    from benchmarks.pgserver import LocalPostgres, PostgresUnavailable

    try:
        pg = LocalPostgres().start()
    except PostgresUnavailable as e:
        pytest.skip(str(e))
    s = Server(tmp_path / "one", pg.create_db(), 0, "--agent", ENGINE)

    async def run() -> None:
        pg.halt()
        page = await websockets.connect(s.ws_url)
        told = json.loads(await asyncio.wait_for(page.recv(), WAIT))
        assert told["type"] == "error" and "session store is out of reach" in told["message"]
        await page.wait_closed()
        assert page.close_code == 1012          # the page tries again by itself
        pg.resume()
        ws, _, st = await _new_game(s.ws_url)
        st = await _play(ws, st, 1)
        assert st["ply"] == 2
        await ws.close()

    try:
        run_async(run)
    finally:
        s.close()
        pg.stop()


@pytest.mark.slow  # four web servers in subprocesses, two whole games
def test_games_go_on_after_sigterm_and_after_kill_9_as_if_never_interrupted(tmp_path):
    """A person's game against a deterministic engine and a game of two engines, each
    stopped by SIGTERM and then by kill -9 in the middle, end with the moves they would have
    had without a restart (the engines' search under way is searched again)."""
    import websockets

    person_ref, engines_ref = _uninterrupted(tmp_path)
    store = tmp_path / "sessions.sqlite3"
    s = Server(tmp_path / "one", store)
    assert f"kept in {store}" in s.line
    port = s.port
    tokens: dict[str, str] = {}
    seen: dict[str, Any] = {}
    done: dict[str, list[str]] = {}
    try:
        async def first() -> None:
            a, tokens["a"], st = await _new_game(s.ws_url)
            st = await _play(a, st, 4)
            await a.send(json.dumps({"type": "evaluate", "on": False}))
            seen.update(await _recv(a, "state"))
            b, tokens["b"], st = await _new_game(s.ws_url, WATCHED)
            while st["ply"] < 12 and not st["over"]:
                st = await _recv(b, "state")
            # SIGTERM with both pages open (b's engine searching): their connections close
            # with 1012, and the pages would connect again by themselves
            s.terminate()
            for ws in (a, b):
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    while True:
                        await asyncio.wait_for(ws.recv(), WAIT)
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012

        run_async(first)
        assert s.proc.returncode == 0   # drained and stopped
        assert "Traceback" not in s.err_text() and "error" not in s.err_text().lower(), \
            s.err_text()

        # A new server on the same store and port: the pages come back with their tokens.
        s = Server(tmp_path / "two", store, port)

        async def second() -> None:
            b, hello, st = await _connect(s.ws_url, tokens["b"])
            assert hello == {"type": "session", "session": tokens["b"], "resumed": True,
                             "errors": []}
            assert st["moves"] == engines_ref[:len(st["moves"])] and st["ply"] >= 12
            a, hello, st = await _connect(s.ws_url, tokens["a"])
            assert hello["resumed"] and not hello["errors"], hello
            for key in ("moves", "board", "players", "time", "evals", "rules", "evaluate"):
                assert st[key] == seen[key], key
            st = await _play(a, st, 4)
            await asyncio.sleep(0.3)
            s.kill()   # kill -9 in the middle of both games, the pages open

        run_async(second)
        s = Server(tmp_path / "three", store, port)

        async def third() -> None:
            a, hello, st = await _connect(s.ws_url, tokens["a"])
            assert hello["resumed"] and not hello["errors"], hello
            assert st["moves"] == person_ref[:len(st["moves"])] and st["ply"] >= 16
            b, hello, st_b = await _connect(s.ws_url, tokens["b"])
            assert hello["resumed"] and not hello["errors"], hello
            st = await _play(a, st, 80)
            assert st["over"]
            done["a"] = st["moves"]
            done["b"] = (await _until_over(b, st_b))["moves"]
            for ws in (a, b):
                await ws.close()

        run_async(third)
    finally:
        s.close()
    assert done["a"] == person_ref
    assert done["b"] == engines_ref


@pytest.mark.slow  # two web servers in subprocesses, a 2 s search
def test_sigterm_lets_the_engines_move_finish_and_refuses_new_pages(tmp_path):
    import websockets

    store = tmp_path / "sessions.sqlite3"
    s = Server(tmp_path / "one", store)
    token = ""
    try:
        async def first() -> None:
            nonlocal token
            a, hello, st = await _connect(s.ws_url)
            token = hello["session"]
            await a.send(json.dumps({"type": "new", "black": "human", "white": "mcts",
                                     "time": 2}))
            await _recv(a, "state")
            await a.send(json.dumps({"type": "move", "square": "f5"}))
            while (await _recv(a, "state"))["thinking"] != "white":
                pass
            s.proc.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.5)
            # a new page while the server drains: told why, and closed with 1012
            b = await websockets.connect(s.ws_url)
            told = json.loads(await asyncio.wait_for(b.recv(), WAIT))
            assert told["type"] == "error" and "server stopping" in told["message"], told
            assert not told.get("fatal")
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(b.recv(), WAIT)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012
            # the engine's move under way finishes, then the page is closed
            moved = await _recv(a, "move")
            assert moved["color"] == "white"
            with pytest.raises(websockets.ConnectionClosed):
                while True:
                    await asyncio.wait_for(a.recv(), WAIT)

        run_async(first)
        s.wait()
        s = Server(tmp_path / "two", store, s.port)

        async def second() -> None:
            a, hello, st = await _connect(s.ws_url, token)
            assert hello["resumed"] and st["ply"] == 2 and st["human_to_move"], st
            await a.close()

        run_async(second)
    finally:
        s.close()


@pytest.mark.slow  # two web servers in subprocesses
def test_resume_timeout_counts_the_time_no_server_ran(tmp_path):
    """A game whose page closed before the server stopped, not back within resume_timeout
    (the restart included), has ended; a token nobody knows gets a new game, said so."""
    store = tmp_path / "sessions.sqlite3"
    s = Server(tmp_path / "one", store, resume_timeout=2)
    token = ""
    try:
        async def first() -> None:
            nonlocal token
            ws, token, st = await _new_game(s.ws_url)
            await _play(ws, st, 1)
            await ws.close()   # parked: it waits 2 s for its page

        run_async(first)
        s.terminate()
        time.sleep(3)
        s = Server(tmp_path / "two", store, resume_timeout=2)

        async def second() -> None:
            ws, hello, st = await _connect(s.ws_url, token)
            assert not hello["resumed"] and st["ply"] == 0
            (err,) = hello["errors"]
            assert err["expired"] and ("closed 2 s after its page closed (resume_timeout; its "
                                       "server had stopped); this is a new game"
                                       ) in err["message"], err
            await ws.close()
            ws, hello, st = await _connect(s.ws_url, "no-such-token")
            assert not hello["resumed"] and st["ply"] == 0
            (err,) = hello["errors"]
            assert err["expired"] and "has no game for this page" in err["message"]
            await ws.close()

        run_async(second)
    finally:
        s.close()


@pytest.mark.slow  # a web server in a subprocess
def test_a_corrupt_store_is_reported_and_the_server_serves_without_one(tmp_path):
    store = tmp_path / "sessions.sqlite3"
    store.write_bytes(b"\x00garbage, not an SQLite file\xff" * 200)
    s = Server(tmp_path / "one", store)
    try:
        assert "no session store" in s.line
        err = s.err_text()
        assert str(store) in err and "Serving without a session store" in err, err

        async def run() -> None:
            ws, hello, st = await _connect(s.ws_url)
            assert hello["session"] and st["ply"] == 0
            await ws.send(json.dumps({"type": "move", "square": "f5"}))
            assert (await _recv(ws, "state"))["moves"][0] == "f5"
            await ws.close()

        run_async(run)
    finally:
        s.close()
    assert store.read_bytes().startswith(b"\x00garbage")   # left as it was


# --- the page in Chromium ---------------------------------------------------------------------
def _board(page: Any) -> dict[str, str | None]:
    return {sq: page.get_attribute(f'button[data-square="{sq}"]', "data-disc")
            for sq in (f"{c}{r}" for c in "abcdefgh" for r in range(1, 9))}


def _page_settled(page: Any, ply: int) -> None:
    page.wait_for_function(
        "() => document.body.dataset.phase === 'human' && "
        f"document.querySelector('[data-role=board]').dataset.ply === '{ply}'",
        timeout=WAIT * 1000)


def _page_plays(page: Any, url: str, moves: int) -> int:
    """Open the page at ``url`` and play ``moves`` moves against its engine; the ply."""
    page.goto(url)
    page.wait_for_selector('[data-role="agent"] option', state="attached")
    _page_settled(page, 0)
    ply = 0
    for _ in range(moves):
        page.locator('[data-legal="true"]').first.click()
        ply += 2
        _page_settled(page, ply)
    return ply


@pytest.mark.slow  # Chromium and three web servers
@pytest.mark.xdist_group("web_browser")   # one browser per worker, with test_web_browser's
def test_the_page_keeps_its_game_through_restarts(tmp_path, browser):  # noqa: F811
    store = tmp_path / "sessions.sqlite3"
    s = Server(tmp_path / "one", store, 0, "--agent", ENGINE)
    port = s.port
    page = browser.new_page()
    try:
        ply = _page_plays(page, s.url, 3)
        before = _board(page)
        assert sum(v is not None for v in before.values()) == 4 + ply

        for restart in ("sigterm", "kill"):
            if restart == "sigterm":
                s.terminate()
            else:
                s.kill()
            page.wait_for_function("() => document.body.dataset.phase === 'connecting'",
                                   timeout=WAIT * 1000)
            s = Server(tmp_path / restart, store, port, "--agent", ENGINE)
            _page_settled(page, ply)
            assert _board(page) == before, restart
            assert not page.locator('[data-role="error"]').count()
            page.locator('[data-legal="true"]').first.click()   # and the game goes on
            ply += 2
            _page_settled(page, ply)
            before = _board(page)
            time.sleep(0.3)
    finally:
        page.close()
        s.close()
