"""The web page: HTTP for the static files, one WebSocket per browser tab (docs/web.md).

Starlette routes, uvicorn serves.  Each game gets its own process, forked by a fork server,
holding its own ``Session`` (game, agent, tree), built with the configuration's presets and the
``[remote]`` policy, and a controller thread that feeds the I/O-free ``WebHandler``
(engine_server/commands/web.py); that process's side is ``serve/web_game.py``.  The event loop
only moves frames between WebSockets and the games' socket pairs, so no tab's search can delay
another tab's messages beyond what the CPU itself costs.

A game outlives its WebSocket for a while: the server hands the page a token (a ``session``
message), the page keeps it in ``sessionStorage`` and presents it when it connects again
(``/ws?session=TOKEN``: a reload, a dropped connection), and finds its game.  A game whose page
has gone waits ``resume_timeout`` seconds without searching, then ends; one without a move ends
at once.  When all ``max_sessions`` games are taken, a new page takes the slot of the game
quiet longest among those not searching whose page has gone or that have no move yet (open but
untouched for a few seconds); a page in the middle of a game is never closed for another.  An
open page that sends nothing for ``idle_timeout`` seconds (and has no search running) is closed
with a message.  A page that comes back to a game that ended is told why, and starts a new one.

With a session store (``serve/store.py``; on unless ``--no-store``) the games outlive the
server: each game's process writes its game to the store on every change, and a page that
comes back with a token this server does not know finds its game restored from the store, in a
new process, as if it came back to a live game.  The leases, the restoring, the handing over and
the store's housekeeping are ``serve/web_leases.py``'s (a mixin, ``StoreSide``).  SIGTERM drains:
new pages are told to come back in a moment, an engine's move under way may finish (up to
``drain_timeout``), then the server stops and the store keeps every game for the next one.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import multiprocessing
import re
import secrets
import socket
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from engine_server.agents.policy import AgentPolicy
from engine_server.commands.web import DEFAULT_MAX_MESSAGE_BYTES
from engine_server.log import get_logger
from engine_server.session import EngineOptions
from protocol import web

from .store import SessionStore, StoreError, store_from_settings
from .web_game import (
    ATTACH,
    CLOSE_EXPIRED,
    CLOSE_RESTART,
    CLOSE_TAKEN_OVER,
    DETACH,
    DRAIN,
    FRAME,
    MESSAGE,
    STORE_KIND,
    WORKER_EXIT_S,
    Tab,
    WorkerSetup,
    frame_in,
    tab_worker,
)
from .web_leases import StoreSide

if TYPE_CHECKING:
    from engine_server.config import Config

log = get_logger("web")

STATIC = Path(__file__).resolve().parent / "static"
# The docs the page links to ("More about it"), served as plain text from a source checkout
# (an installed package without them answers 404).
DOCS = Path(__file__).resolve().parents[2] / "docs"
DOC_NAME = re.compile(r"[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*\.md")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 16
DEFAULT_RESUME_TIMEOUT = 60.0
DEFAULT_IDLE_TIMEOUT = 1800.0
# An open page without a move is closed for a newcomer only once it has been quiet this long:
# a page that has just loaded is being looked at, not abandoned.
EVICT_NEW_AFTER = 5.0
# Tokens of ended games remembered to tell a returning page why (oldest forgotten).
EXPIRED_MEMORY = 4096
REAP_INTERVAL = 1.0
# A new page that finds every game in use waits this long before "server full": a page that
# has just closed may not be seen gone yet.
FULL_WAIT_S = 2.0
DEFAULT_DRAIN_TIMEOUT = 10.0
# The form of a token a page makes for its new game (18 random bytes in base64url, as the
# server's own).
PAGE_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,100}")
STOPPING = ("server stopping (a restart or a shutdown): this page connects again by itself in "
            "a few seconds")
# Messages over the protocol's limit but under this one are answered with an error and the
# session goes on; only larger ones make the WebSocket layer drop the connection.
WS_MAX_SIZE_FACTOR = 16
WS_MAX_SIZE_MIN = 1 << 20
# The page's scripts and styles come from this server only; the socket goes back to it.
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
       "connect-src 'self'; frame-ancestors 'none'")


@dataclass
class WebConfig:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_sessions: int = DEFAULT_MAX_SESSIONS
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    resume_timeout: float = DEFAULT_RESUME_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    # A stop with draining (SIGTERM) lets an engine's move under way finish for this long.
    drain_timeout: float = DEFAULT_DRAIN_TIMEOUT
    # What a tab may choose (agents, threads, memory, time per move): the [remote] limits.
    remote_policy: AgentPolicy = field(default_factory=AgentPolicy)


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_address(text: str, default_host: str, default_port: int) -> tuple[str, int]:
    """``HOST:PORT``, ``[::1]:PORT``, ``:PORT`` or ``HOST``; ValueError when unreadable."""
    t = text.strip()
    if not t:
        return default_host, default_port
    if t.startswith("["):
        host, _, rest = t[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else rest
    elif t.count(":") == 1:
        host, _, port_text = t.partition(":")
    elif ":" in t:
        host, port_text = t, ""   # a bare IPv6 address
    else:
        host, port_text = t, ""
    host = host or default_host
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"bad port in {text!r}: expected HOST:PORT with PORT 0..65535")
    return host, int(port_text)


class WebServer(StoreSide):
    """The Starlette app and the games' processes.

    Each game's session runs in a process of its own, forked by a fork server that has the
    engine imported: a search holds its process's GIL between its numba batches, and with
    twenty searches in one process the threads that carry other tabs' messages would queue
    behind them for hundreds of milliseconds.  Apart, a tab's messages wait only for its own
    search, and the server's event loop for nobody."""

    config: WebConfig

    def __init__(self, options: EngineOptions, config: WebConfig, log_level: str = "warning",
                 log_file: str | None = None, store: SessionStore | None = None):
        """``store``: where the games are written to outlive this server (None: in memory
        only)."""
        self.options = options
        self.config = config
        # Every tab starts with the default agent: it must pass the remote policy.
        config.remote_policy.admit(options.agent, options.catalog.presets)
        self.store = store
        self.store_failing = False
        self.setup = WorkerSetup(replace(options, warmup=False, policy=config.remote_policy),
                                 config.max_message_bytes, log_level, log_file,
                                 store_location=None if store is None else store.location,
                                 store_holder=None if store is None else store.holder)
        self.games: dict[str, Tab] = {}
        # Tokens of ended games -> what to tell a page that comes back ("": nothing was lost).
        self.expired: OrderedDict[str, str] = OrderedDict()
        self.evictions = 0
        self.restored = 0
        self._restoring: dict[str, asyncio.Event] = {}   # tokens being restored now
        self.draining = False   # SIGTERM: new pages are told to come back in a moment
        self.stopping = False   # the pages are being closed; the games stay in the store
        self._reaper: asyncio.Task[None] | None = None
        self._ctx: Any = None
        self.app = Starlette(routes=[
            Route("/", self._index),
            Route("/docs/{path:path}", self._doc),
            WebSocketRoute("/ws", self._websocket),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ])

    @property
    def tabs(self) -> int:
        """Games held (their pages connected or not)."""
        return len(self.games)

    def _context(self) -> Any:
        if self._ctx is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload([__name__])
            self._ctx = ctx
        return self._ctx

    def start_fork_server(self) -> None:
        """Start the fork server now (it imports the engine once) instead of at the first
        tab."""
        from multiprocessing import forkserver

        self._context()
        forkserver.ensure_running()

    async def _index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={
            "Content-Security-Policy": CSP, "Cache-Control": "no-cache",
            "X-Content-Type-Options": "nosniff"})

    @staticmethod
    async def _doc(request: Request) -> Response:
        """A page of the docs as plain text (Markdown reads well as it is)."""
        name = str(request.path_params["path"])
        path = DOCS / name
        if not DOC_NAME.fullmatch(name) or not path.is_file():
            return PlainTextResponse("no such page of the docs", status_code=404)
        return PlainTextResponse(path.read_text(encoding="utf-8", errors="replace"), headers={
            "Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"})

    @staticmethod
    def _same_origin(ws: WebSocket) -> bool:
        """A browser always sends Origin: another site's page may not drive this engine.
        Clients that send none (scripts, benchmarks) are not browsers and pass."""
        origin = ws.headers.get("origin")
        if origin is None:
            return True
        return urlsplit(origin).netloc.lower() == ws.headers.get("host", "").lower()

    @staticmethod
    async def _send(ws: WebSocket, msg: dict[str, Any]) -> None:
        try:
            await ws.send_text(web.encode(msg))
        except Exception:
            pass   # that page has gone already

    async def _websocket(self, ws: WebSocket) -> None:
        if not self._same_origin(ws):
            log.warning("web_origin_refused", origin=ws.headers.get("origin"))
            await ws.close(code=1008)
            return
        await ws.accept()
        if self.draining:
            await self._refuse(ws, STOPPING, "server stopping")
            return
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_loop())
        token = ws.query_params.get("session", "")[:100]
        # A page's first connection names its new game (so that a balancer hashing the token
        # sends every connection of the game to one server): a token of the right form that
        # no server knows becomes the new game's.
        fresh = ws.query_params.get("new") == "1" and PAGE_TOKEN.fullmatch(token) is not None
        tab = self.games.get(token) if token else None
        if tab is not None and not await self._still_held(tab):
            tab = None   # taken over while this server was frozen or cut off
        notice = None
        adopt = None   # the page's own token for its new game
        resumed = tab is not None
        if token and tab is None:
            # With a store, how the game ended is the store's to tell (below): what this
            # server remembers may be stale, another server having served the page since.
            remembered = self.expired.pop(token, None)
            why = remembered if self.store is None else None
            if why is None and token in self._restoring:
                # A second page with the same token while its game is being restored (a
                # duplicated tab): the game once it is back.
                await self._restoring[token].wait()
                tab = self.games.get(token)
                resumed = tab is not None
            elif why is None and self.store is not None:
                if not await self._slot():
                    await self._full(ws)
                    return
                tab, why, refused = await self._restore_once(token)
                if refused is not None:
                    await self._refuse(ws, refused, "served by another server")
                    return
                resumed = tab is not None
            if not why and tab is None and fresh:
                # (why "": a game of this token ended with nothing to tell, as the first
                # connection of a page that broke before its first move: it tries again.)
                adopt = token
            elif why is None and tab is None:
                why = ("this server has no game for this page (it has restarted, or the "
                       "game ended long ago)")
            if why:
                notice = f"session expired: {why}; this is a new game"
        if tab is None:
            if not await self._slot():
                await self._full(ws)
                return
            spawned = await self._spawn(adopt)
            if isinstance(spawned, str):
                await self._refuse(ws, spawned, "session store unavailable")
                return
            tab = spawned
        elif tab.ws is not None:
            # The game is opened again (a reload seen before the old socket's close, or a
            # duplicated tab): the newest page has it.
            old, tab.ws = tab.ws, None
            await self._send(old, web.error("this game was opened in another tab", fatal=True))
            try:
                await old.close(code=CLOSE_TAKEN_OVER, reason="opened in another tab")
            except Exception:
                pass
        tab.ws = ws
        tab.parked_since = None
        tab.last_seen = time.monotonic()
        await self._send(ws, {"type": "session", "session": tab.token, "resumed": resumed})
        if notice is not None:
            await self._send(ws, web.error(notice, expired=True))
        log.info("web_page_attach", sessions=self.tabs, pid=tab.proc.pid, resumed=resumed)
        try:
            tab.writer.write(frame_in(ATTACH))
            while True:
                m = await ws.receive()
                if m["type"] == "websocket.disconnect" or tab.ws is not ws:
                    break
                tab.last_seen = time.monotonic()
                text = m.get("text")
                raw = text.encode("utf-8", "replace") if text is not None else \
                    (m.get("bytes") or b"")
                tab.writer.write(frame_in(MESSAGE, raw))
                await tab.writer.drain()
        except (WebSocketDisconnect, ConnectionError, RuntimeError):
            pass
        finally:
            if tab.ws is ws:
                await self._leave(tab)

    async def _full(self, ws: WebSocket) -> None:
        await self._send(ws, web.error(
            f"server full: {self.config.max_sessions} games at once; try again later",
            fatal=True))
        await ws.close(code=1013, reason="server full")

    async def _refuse(self, ws: WebSocket, message: str, reason: str) -> None:
        """Not now: the page is told why and connects again by itself (close code 1012)."""
        await self._send(ws, web.error(message))
        try:
            await ws.close(code=CLOSE_RESTART, reason=reason)
        except Exception:
            pass

    async def _leave(self, tab: Tab) -> None:
        """The page has gone: a game without a move ends now, any other waits for it."""
        tab.ws = None
        if tab.ended or self.stopping:
            return   # a stopping server: the game waits in the store for the next one
        if tab.ply == 0:
            await self._end(tab, "page closed", "")
            return
        tab.parked_since = time.monotonic()
        tab.searching = False   # the process stops its searches on DETACH
        try:
            tab.writer.write(frame_in(DETACH))
        except (ConnectionError, RuntimeError):
            pass
        # Its resume_timeout counts from now, also for a server restarted meanwhile.
        self._store_call(lambda store: store.touch(STORE_KIND, [tab.token]))
        log.info("web_page_detach", sessions=self.tabs, pid=tab.proc.pid)

    async def _spawn(self, token: str | None = None,
                     state: dict[str, Any] | None = None) -> Tab | str:
        """A game's process: a new game, or (``state``) the game of ``token`` as the store
        kept it.  The tab, or why not: the stored game could not be taken back (its process
        has ended then), or a new game's lease could not be taken."""
        token = token or secrets.token_urlsafe(18)
        refused = self._new_lease(token) if state is None else None
        if refused is not None:
            return refused
        fence = self._fence(token)
        ours, theirs = socket.socketpair()
        try:
            proc = self._context().Process(target=tab_worker,
                                           args=(theirs, self.setup, token, state, fence),
                                           name="web-tab", daemon=True)
            proc.start()
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        reader, writer = await asyncio.open_connection(sock=ours)
        if state is not None:
            failed = await self._restored(reader)
            if failed is not None:
                writer.close()
                await self._reap_process(proc)
                return failed
        tab = Tab(token, proc, reader, writer, time.monotonic())
        self.games[tab.token] = tab
        tab.pump = asyncio.create_task(self._pump(tab))
        log.info("web_session_open", sessions=self.tabs, pid=proc.pid,
                 restored=state is not None)
        return tab

    # --- stopping -----------------------------------------------------------------------------
    async def drain(self, force: Callable[[], bool] = lambda: False) -> None:
        """SIGTERM: new pages are told to come back in a moment; the games start nothing new
        and an engine's move under way gets up to ``drain_timeout`` to finish (a move cut
        short is searched again after the restart: it was never kept)."""
        if self.draining:
            return
        self.draining = True
        log.info("web_draining", sessions=self.tabs, store=self.store is not None)
        for tab in list(self.games.values()):
            if tab.ws is not None and not tab.ended:
                try:
                    tab.writer.write(frame_in(DRAIN))
                except (ConnectionError, RuntimeError):
                    pass
        end = time.monotonic() + self.config.drain_timeout
        while time.monotonic() < end and not force() and any(
                t.searching for t in self.games.values() if t.ws is not None and not t.ended):
            await asyncio.sleep(0.05)
        # The pages still open are closed next: their games' resume_timeout counts from now.
        self.stopping = True
        self._touch_open_pages()

    async def close(self) -> None:
        """After the pages are closed: the games' processes end (the store keeps their
        games), the leases are given back."""
        self.stopping = True
        if self._reaper is not None:
            self._reaper.cancel()
        pumps = [t.pump for t in self.games.values() if t.pump is not None]
        for tab in list(self.games.values()):
            tab.writer.close()   # end of input: the process stops its search and exits
        if pumps:
            await asyncio.wait(pumps, timeout=WORKER_EXIT_S + 1)
        self._release_all()

    async def _end(self, tab: Tab, reason: str, expired: str | None,
                   tell: str | None = None) -> None:
        """End a game: its process stops its search and exits (end of its input).  ``expired``
        is what a page that comes back with its token is told ("": nothing); ``tell`` what an
        open page is told as it is closed."""
        if tab.ended:
            return
        tab.ended = True
        self.games.pop(tab.token, None)
        ended = self._store_call(lambda store: store.end(STORE_KIND, tab.token, expired))
        if expired is not None and ended is not False:
            # (False: the store refused, another server serves the game now: not ended.)
            self.expired[tab.token] = expired
            while len(self.expired) > EXPIRED_MEMORY:
                self.expired.popitem(last=False)
        ws, tab.ws = tab.ws, None
        if ws is not None:
            await self._send(ws, web.error(tell or f"this game was closed: {reason}",
                                           fatal=True, expired=True))
            try:
                await ws.close(code=CLOSE_EXPIRED, reason=reason[:100])
            except Exception:
                pass
        tab.writer.close()
        log.info("web_session_end", reason=reason, sessions=self.tabs, pid=tab.proc.pid)

    async def _slot(self) -> bool:
        """A slot for a new game: free, taken from an abandoned game, or freed within
        ``FULL_WAIT_S`` (a page that has just closed)."""
        end = time.monotonic() + FULL_WAIT_S
        while self.tabs >= self.config.max_sessions and not await self._evict():
            if time.monotonic() >= end:
                return False
            await asyncio.sleep(0.05)
        return True

    async def _evict(self) -> bool:
        """Free a slot for a new page: the game quiet longest among those not searching whose
        page has gone or that have no move yet.  False when every game is in use."""
        now = time.monotonic()
        best: Tab | None = None
        for tab in self.games.values():
            if tab.ended or tab.searching:
                continue
            if tab.ws is not None and (tab.ply > 0 or now - tab.last_seen < EVICT_NEW_AFTER):
                continue   # a page at its game, or one just opened
            if best is None or tab.last_seen < best.last_seen:
                best = tab
        if best is None:
            return False
        why = "its page had closed" if best.ws is None else "it had no move"
        self.evictions += 1
        msg = (f"closed for a new player when all {self.config.max_sessions} games were taken, "
               f"after {now - best.last_seen:.0f} s without a message ({why})")
        await self._end(best, "evicted", msg, f"this game was {msg}")
        return True

    async def _reap_loop(self) -> None:
        cfg = self.config
        last_housekeeping = time.monotonic()
        while True:
            await asyncio.sleep(REAP_INTERVAL)
            now = time.monotonic()
            if self.stopping:
                continue
            if self.store is not None and now - last_housekeeping >= \
                    self.housekeeping_interval():
                await self._housekeeping()
                last_housekeeping = now
            if self.store is not None:
                await self._hand_over()
            for tab in list(self.games.values()):
                if tab.ws is None and tab.parked_since is not None and \
                        now - tab.parked_since > cfg.resume_timeout:
                    await self._end(tab, "page gone", (
                        f"closed {cfg.resume_timeout:g} s after its page closed "
                        "(resume_timeout)"))
                elif tab.ws is not None and not tab.searching and \
                        now - tab.last_seen > cfg.idle_timeout:
                    msg = f"closed after {cfg.idle_timeout:g} s without a message (idle_timeout)"
                    await self._end(tab, "idle", msg, f"this game was {msg}; reload to play")

    @staticmethod
    def _observe(tab: Tab, line: bytes) -> None:
        """What the server needs of a game (has it a move, does it search) from the messages
        its process sends the page."""
        if line.startswith(b'{"type":"state"'):
            try:
                state = json.loads(line)
            except ValueError:
                return
            tab.ply = int(state.get("ply") or 0)
            # Without a page the process searches nothing (DETACH stopped it): a state that
            # was on its way when the page left says otherwise.
            tab.searching = tab.ws is not None and bool(state.get("thinking")
                                                        or state.get("hinting"))
        elif line.startswith(b'{"type":"thinking"'):
            tab.searching = tab.ws is not None

    async def _pump(self, tab: Tab) -> None:
        """The game process's messages to its page, for as long as the process lives."""
        try:
            while True:
                head = await tab.reader.readexactly(FRAME.size)
                line = await tab.reader.readexactly(FRAME.unpack(head)[0])
                self._observe(tab, line)
                page = tab.ws   # none: the next page gets welcome and state on attaching
                if page is not None:
                    try:
                        await page.send_text(line.decode("utf-8"))
                    except Exception:
                        pass   # that page has gone; its handler parks the game
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        # The process has ended (the game was ended, or it died): an open page must learn
        # that its game is gone rather than wait for answers.
        if not tab.ended and not self.stopping:
            tab.ended = True
            self.games.pop(tab.token, None)
            log.warning("web_tab_died", pid=tab.proc.pid)
            why = "its process ended unexpectedly"
            self.expired[tab.token] = why
            self._store_call(lambda store: store.end(STORE_KIND, tab.token, why))
        ws, tab.ws = tab.ws, None
        if ws is not None:
            try:
                await ws.close(code=1011, reason="the game's process ended")
            except Exception:
                pass
        tab.writer.close()
        await self._reap_process(tab.proc)

    async def _reap_process(self, proc: Any) -> None:
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()

        def exited() -> None:
            if not ended.done():
                ended.set_result(None)

        loop.add_reader(proc.sentinel, exited)
        try:
            await asyncio.wait_for(asyncio.shield(ended), WORKER_EXIT_S)
        except asyncio.TimeoutError:
            log.warning("web_tab_kill", pid=proc.pid)
            proc.kill()
            await ended
        finally:
            loop.remove_reader(proc.sentinel)
            proc.join(0)
            log.info("web_process_exit", pid=proc.pid, sessions=self.tabs)

    def bind(self) -> socket.socket:
        host, port = self.config.host, self.config.port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        # Listening before the address is printed: a client that reads it may connect at
        # once, and waits in the backlog until uvicorn accepts.
        sock.listen(2048)
        return sock

    def serve(self, sock: socket.socket) -> None:
        """Serve until SIGINT/SIGTERM: then drain, close the pages, end the games' processes
        (the store keeps their games) and give back the leases."""
        import signal

        import uvicorn

        web_server = self

        class Server(uvicorn.Server):
            def handle_exit(self, sig: int, frame: Any) -> None:
                # uvicorn's, without raising the signal again once stopped: a drained stop
                # exits with status 0, as the ZeroMQ server's does.
                if self.should_exit and sig == signal.SIGINT:
                    self.force_exit = True
                else:
                    self.should_exit = True

            async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
                await web_server.drain(lambda: self.force_exit)
                await super().shutdown(sockets)
                await web_server.close()

        if self.store is not None:
            self._sweep_gone()   # games nobody came back to while no server ran
        ws_max = max(WS_MAX_SIZE_MIN, WS_MAX_SIZE_FACTOR * self.config.max_message_bytes)
        cfg = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                             ws_max_size=ws_max, ws_per_message_deflate=False)
        Server(cfg).run(sockets=[sock])


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve_web(cfg: Config, options: EngineOptions, address: str | None = None) -> int:
    """Serve the page at ``address`` (``HOST:PORT``; empty parts from the ``[web]`` table)
    until SIGINT/SIGTERM.  Prints the page's address on stdout once it listens."""
    from engine_server.agents import AgentSpecError

    w = cfg.web
    try:
        host, port = parse_address(address or "", w["host"], w["port"])
    except ValueError as e:
        print(f"othello-web: {e}", file=sys.stderr)
        return 2
    config = WebConfig(host=host, port=port, max_sessions=w["max_sessions"],
                       max_message_bytes=w["max_message_bytes"],
                       resume_timeout=w["resume_timeout"], idle_timeout=w["idle_timeout"],
                       drain_timeout=float(cfg.store["drain_timeout"]),
                       remote_policy=cfg.remote.policy())
    try:
        store = store_from_settings(cfg.store, "othello-web")
    except StoreError as e:
        print(f"othello-web: {e}", file=sys.stderr)
        return 2
    try:
        server = WebServer(options, config, cfg.log["level"], cfg.log["file"], store=store)
        sock = server.bind()
    except AgentSpecError as e:
        print(f"othello-web: the default agent is refused by [remote]: {e}", file=sys.stderr)
        if store is not None:
            store.close()
        return 2
    except OSError as e:
        print(f"othello-web: cannot listen on {host}:{port}: {e.strerror or e}",
              file=sys.stderr)
        if store is not None:
            store.close()
        return 2
    if not is_loopback_host(host):
        log.warning("web_public_bind", host=host,
                    note="anyone who can reach this address can play (within [remote])")
    server.start_fork_server()
    kept = f"kept in {store.where}" if store is not None else "no session store"
    print(f"othello-web: serving {url_of(sock)} (at most {config.max_sessions} games, {kept})",
          flush=True)
    server.serve(sock)
    return 0


__all__ = ["WebConfig", "WebServer", "WorkerSetup", "is_loopback_host",
           "parse_address", "serve_web", "tab_worker", "url_of"]
