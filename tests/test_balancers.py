"""The balancer recipes of docs/scaling.md, run as they stand (their ports rewritten): HAProxy in
front of two ZeroMQ engine servers, nginx and HAProxy in front of two web servers, every server
on one PostgreSQL store and named as a machine of its own.  The server a game is on is killed
(-9), or frozen past its lease and woken; the game goes on through the balancer on the other
one: a GTP client's, a page's in Chromium, a page's over a raw WebSocket.  Without haproxy or
nginx (Debian's packages; ``.ci/run`` installs them) a test skips, saying so."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.common import free_port
from clients.remote import RemoteEngine

from .loadsafe import WAIT, wait_until
from .served_engine import ServedEngine
from .test_web_browser import browser, run_async  # noqa: F401  (browser: a fixture)
from .test_web_store import ENGINE, Server, _board, _page_plays, _page_settled, _play, _recv

pytestmark = pytest.mark.slow   # balancer and server processes, and a browser

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "docs" / "deploy"
LEASE = 2.0


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _recipe(name: str, ports: dict[int, int], tmp: Path) -> str:
    """The recipe's text with its example ports replaced, and its log folder in ``tmp``."""
    text = (DEPLOY / name).read_text(encoding="utf-8")
    text = re.sub(r"127\.0\.0\.1:(\d+)", lambda m: f"127.0.0.1:{ports[int(m.group(1))]}", text)
    return text.replace("/var/log/nginx/", f"{tmp}/")


def _holder(store: str, kind: str, key: str) -> str:
    import psycopg

    with psycopg.connect(store) as conn:
        row = conn.execute("SELECT holder FROM leases WHERE kind = %s AND key = %s",
                           (kind, key)).fetchone()
        every = conn.execute("SELECT kind, key, holder FROM leases").fetchall()
    assert row is not None, f"no lease for {kind}/{key}: {every}"
    return str(row[0])


def _haproxy() -> str:
    found = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy")
                                        .exists() else None)
    if found is None:
        pytest.skip("no haproxy: apt-get install haproxy (.ci/run does)")
    return found


def _start_haproxy(haproxy: str, recipe: str, ports: dict[int, int], tmp: Path
                   ) -> subprocess.Popen[str]:
    cfg = tmp / recipe
    cfg.write_text(_recipe(recipe, ports, tmp))
    check = subprocess.run([haproxy, "-c", "-f", str(cfg)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    return subprocess.Popen([haproxy, "-db", "-f", str(cfg)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def test_haproxy_in_front_of_zmq_servers_keeps_a_game_through_a_kill_9(tmp_path, postgres):
    haproxy = _haproxy()
    store = postgres.create_db()
    config = tmp_path / "config.toml"
    config.write_text(f"[store]\nlease = {LEASE}\n")
    ports = {p: free_port() for p in (5550, 5551, 5552, 5553)}
    engines: dict[str, ServedEngine] = {}
    for n in (1, 2):    # the third server of the recipe is not started: found down by checks
        e = ServedEngine(["--no-warmup", "--agent", "ab:depth=3", "--zmq",
                          f"tcp://127.0.0.1:{ports[5550 + n]}", "--no-stdio", "--store", store,
                          "--config", str(config), "--server-name", f"engine{n}"])
        assert "serving ZeroMQ" in e.line(0, WAIT), e.stacks()
        engines[f"engine{n}"] = e
    proxy = _start_haproxy(haproxy, "haproxy.cfg", ports, tmp_path)
    try:
        wait_until(lambda: _listening(ports[5550]), what="haproxy listening")
        c = RemoteEngine(f"tcp://127.0.0.1:{ports[5550]}", timeout=10, identity=b"behind-lb")
        c.gtp("play b f5")
        c.gtp("genmove w")
        board = c.gtp("showboard")
        name = _holder(store, "zmq", b"behind-lb".hex()).split("/")[0]
        victim = engines.pop(name)
        victim.proc.kill()
        victim.proc.wait(WAIT)
        # the client's connection drops; it reconnects through haproxy to the live server,
        # which takes the game over once the dead server's lease has run out
        assert c.gtp("showboard") == board
        c.gtp("genmove b")
        (survivor,) = engines
        assert _holder(store, "zmq", b"behind-lb".hex()).startswith(survivor + "/")
        c.close()
    finally:
        proxy.terminate()
        proxy.wait(WAIT)
        for e in engines.values():
            e.close()


def test_nginx_in_front_of_web_servers_keeps_the_pages_game_through_a_kill_9(
        tmp_path, postgres, browser):  # noqa: F811
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                      else None)
    if nginx is None:
        pytest.skip("no nginx: apt-get install nginx-light (.ci/run does)")
    store = postgres.create_db()
    ports = {p: free_port() for p in (8000, 8001, 8002, 8003)}
    servers: dict[str, Server] = {}
    for n in (1, 2):
        servers[f"web{n}"] = Server(tmp_path / f"web{n}", store, ports[8000 + n],
                                    "--server-name", f"web{n}", "--agent", "ab:depth=3",
                                    lease=LEASE)
    conf = tmp_path / "nginx.conf"
    conf.write_text(_recipe("nginx.conf", ports, tmp_path))
    args = [nginx, "-p", str(tmp_path), "-c", str(conf), "-g",
            f"daemon off; pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;"]
    check = subprocess.run([*args[:5], "-t", "-g", args[6]], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    proxy = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    page: Any = None
    try:
        wait_until(lambda: _listening(ports[8000]), what="nginx listening")
        page = browser.new_page()
        ply = _page_plays(page, f"http://127.0.0.1:{ports[8000]}/", 2)
        before = _board(page)
        token = page.evaluate("() => sessionStorage.getItem('othello-session')")
        name = _holder(store, "web", token).split("/")[0]
        servers.pop(name).kill()
        page.wait_for_function("() => document.body.dataset.phase === 'connecting'",
                               timeout=WAIT * 1000)
        # back through nginx, on the other server (refused while the dead server's lease
        # ran, the page trying again by itself), and the refusal no longer shown
        (survivor,) = servers
        wait_until(lambda: _holder(store, "web", token).startswith(survivor + "/"),
                   what="the survivor holding the game")
        page.wait_for_function("() => !document.querySelector('[data-role=error]')",
                               timeout=WAIT * 1000)
        _page_settled(page, ply)
        assert _board(page) == before
        page.locator('[data-legal="true"]').first.click()   # and the game goes on
        _page_settled(page, ply + 2)
        time.sleep(0.2)
    finally:
        if page is not None:
            page.close()
        proxy.terminate()
        proxy.wait(WAIT)
        for s in servers.values():
            s.close()


def test_haproxy_in_front_of_web_servers_moves_a_page_off_a_frozen_server_and_back(
        tmp_path, postgres):
    """A web server frozen (SIGSTOP) past its lease under a page: HAProxy's checks take it
    out and close the page's connection, and the page, reconnecting, gets its game on the
    other server.  Woken, the frozen server finds its copy taken over and drops it; a page
    sent back to it by the balancer is handed the game, with the moves played meanwhile."""
    import websockets

    haproxy = _haproxy()
    store = postgres.create_db()
    ports = {p: free_port() for p in (8000, 8001, 8002, 8003)}
    servers = {f"web{n}": Server(tmp_path / f"web{n}", store, ports[8000 + n], "--server-name",
                                 f"web{n}", "--agent", ENGINE, lease=LEASE) for n in (1, 2)}
    proxy = _start_haproxy(haproxy, "haproxy-web.cfg", ports, tmp_path)
    url = f"ws://127.0.0.1:{ports[8000]}/ws"
    token = secrets.token_urlsafe(18)

    async def page_on(query: str) -> tuple[Any, dict[str, Any]]:
        """The page connecting until a server serves it (refusals: it tries again)."""
        deadline = time.monotonic() + WAIT
        while True:
            try:
                ws = await websockets.connect(f"{url}?session={token}{query}")
                hello = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
            except (OSError, websockets.exceptions.WebSocketException) as e:
                hello = {"type": "unreachable", "error": repr(e)}
            if hello["type"] == "session":
                assert hello["session"] == token, (hello, query)
                return ws, await _recv(ws, "state")
            assert time.monotonic() < deadline, hello
            await asyncio.sleep(0.3)

    async def run() -> None:
        ws, st = await page_on("&new=1")
        await ws.send(json.dumps({"type": "new", "black": "human", "white": ENGINE,
                                  "time": 0}))
        st = await _play(ws, await _recv(ws, "state"), 1)
        name = _holder(store, "web", token).split("/")[0]
        frozen = servers[name].proc
        os.kill(frozen.pid, signal.SIGSTOP)
        try:
            # taken out by the checks: the page's connection is closed
            await asyncio.wait_for(ws.wait_closed(), WAIT)
            ws, back = await page_on("")
            assert back["moves"] == st["moves"]
            (other,) = set(servers) - {name}
            assert _holder(store, "web", token).startswith(other + "/")
            st = await _play(ws, back, 1)
            assert st["ply"] == 4
        finally:
            os.kill(frozen.pid, signal.SIGCONT)
        # woken, the frozen server drops its stale copy; once HAProxy has it back, the page
        # may be sent there again, and is handed its game
        wait_until(lambda: _listening(ports[8000 + int(name[-1])]), what="the woken server")
        time.sleep(3 * LEASE)
        await ws.close()
        ws, again = await page_on("")
        assert again["moves"] == st["moves"]
        await ws.close()

    try:
        wait_until(lambda: _listening(ports[8000]), what="haproxy listening")
        run_async(run)
    finally:
        proxy.terminate()
        proxy.wait(WAIT)
        for s in servers.values():
            s.close()
