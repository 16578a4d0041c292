"""The web page: HTTP for the static files, one WebSocket per browser tab (docs/web.md).

Starlette routes, uvicorn serves.  Each WebSocket gets its own process, forked by a fork server,
holding its own ``Session`` (game, agent, tree), built with the configuration's presets and the
``[remote]`` policy, and a controller thread that feeds the I/O-free ``WebHandler``
(engine_server/protocol/web.py).  The event loop only moves frames between WebSockets and the
tabs' socket pairs, so no tab's search can delay another tab's messages beyond what the CPU
itself costs.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import multiprocessing
import os
import queue
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from engine_server.agents.policy import AgentPolicy
from engine_server.log import get_logger
from engine_server.protocol.web import DEFAULT_MAX_MESSAGE_BYTES, WebHandler
from engine_server.session import EngineOptions, Output, SearchJob, Session

if TYPE_CHECKING:
    from engine_server.config import Config

log = get_logger("web")

STATIC = Path(__file__).resolve().parent / "static"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 16
# A tab that sends faster than its session answers gets errors instead of an ever longer queue.
MAX_QUEUED = 64
# A closed tab's process has this long to stop its search and exit before it is killed.
WORKER_EXIT_S = 10.0
# Messages over the protocol's limit but under this one are answered with an error and the
# session goes on; only larger ones make the WebSocket layer drop the connection.
WS_MAX_SIZE_FACTOR = 16
WS_MAX_SIZE_MIN = 1 << 20
# Search threads run at this niceness (Linux; a thread inherits it from the one that starts it):
# when every core is busy searching, the event loop and the tabs' controllers, which only move
# messages, still get a core at once instead of waiting their turn behind twenty searches.
SEARCH_NICE = 10
# In a tab's process, the controller waiting for the GIL asks its search thread to drop it
# after this long (Python's default: 5 ms).
SWITCH_INTERVAL = 0.001
# The page's scripts and styles come from this server only; the socket goes back to it.
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
       "connect-src 'self'; frame-ancestors 'none'")


@dataclass
class WebConfig:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_sessions: int = DEFAULT_MAX_SESSIONS
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
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


def lower_priority(job: SearchJob) -> None:
    """Run a search thread (and the helpers it starts from now on) at ``SEARCH_NICE``."""
    tid = job.thread.native_id if job.thread is not None else None
    if tid is None or not hasattr(os, "setpriority"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, tid, SEARCH_NICE)   # Linux: one thread's nice
    except OSError:
        pass   # the thread has ended already, or the platform says no: nothing to gain


FRAME = struct.Struct("!I")          # length of what follows
STAMP = struct.Struct("!d")          # a message's arrival time (CLOCK_MONOTONIC: one clock for
                                     # every process of the machine)


def _send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(FRAME.pack(len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv_frame(sock: socket.socket) -> bytes | None:
    head = _recv_exact(sock, FRAME.size)
    if head is None:
        return None
    return _recv_exact(sock, FRAME.unpack(head)[0])


@dataclass
class WorkerSetup:
    """What a tab's process needs: the session's options (presets and the remote policy
    already in them), the message limit and the log settings."""

    options: EngineOptions
    max_message_bytes: int
    log_level: str = "warning"
    log_file: str | None = None


def tab_worker(sock: socket.socket, setup: WorkerSetup) -> None:
    """One tab's process: its session, handler and controller, talking frames over ``sock``.

    Frames in: the arrival time and the WebSocket message's bytes; frames out: one JSON
    message each.  End of input (the tab has gone, or the server stops) ends the process."""
    import signal

    from engine_server.log import configure_logging

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the server's to handle
    configure_logging(setup.log_level, setup.log_file)
    sys.setswitchinterval(SWITCH_INTERVAL)
    send_lock = threading.Lock()
    gone = threading.Event()

    def send(line: str) -> None:
        if gone.is_set():
            return
        try:
            with send_lock:
                _send_frame(sock, line.encode("utf-8"))
        except OSError:
            gone.set()   # the front end has closed this tab; the reader ends the process

    session = Session(setup.options, Output(send))
    inbox: queue.Queue[Any] = queue.Queue()
    handler = WebHandler(session, post=inbox.put, max_message_bytes=setup.max_message_bytes,
                         on_search=lower_priority)

    def read() -> None:
        try:
            while True:
                frame = _recv_frame(sock)
                if frame is None:
                    break
                if inbox.qsize() >= MAX_QUEUED:
                    send(json.dumps({"type": "error", "message": f"more than {MAX_QUEUED} "
                                     "messages wait for this game; slow down"}))
                    continue
                received = STAMP.unpack_from(frame)[0]
                inbox.put((frame[STAMP.size:], received))
        except OSError:
            pass
        finally:
            handler.interrupt()   # a long search must not keep the process
            inbox.put(None)

    threading.Thread(target=read, name="web-reader", daemon=True).start()
    try:
        for msg in handler.welcome():
            send(json.dumps(msg, separators=(",", ":")))
        while True:
            item = inbox.get()
            if item is None:
                break
            try:
                if callable(item):
                    item()   # posted by the handler: a finished search, an engine turn
                    continue
                raw, received = item
                for msg in handler.handle_text(raw, received):
                    send(json.dumps(msg, separators=(",", ":")))
            except Exception:
                log.exception("web_controller_error")
    finally:
        handler.close()
        sock.close()


class WebServer:
    """The Starlette app and the tabs' processes.

    Each tab's session runs in a process of its own, forked by a fork server that has the
    engine imported: a search holds its process's GIL between its numba batches, and with
    twenty searches in one process the threads that carry other tabs' messages would queue
    behind them for hundreds of milliseconds.  Apart, a tab's messages wait only for its own
    search, and the server's event loop for nobody."""

    def __init__(self, options: EngineOptions, config: WebConfig, log_level: str = "warning",
                 log_file: str | None = None):
        self.options = options
        self.config = config
        # Every tab starts with the default agent: it must pass the remote policy.
        config.remote_policy.admit(options.agent, options.catalog.presets)
        self.setup = WorkerSetup(replace(options, warmup=False, policy=config.remote_policy),
                                 config.max_message_bytes, log_level, log_file)
        self.tabs = 0
        self._ctx: Any = None
        self.app = Starlette(routes=[
            Route("/", self._index),
            WebSocketRoute("/ws", self._websocket),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ])

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
    def _same_origin(ws: WebSocket) -> bool:
        """A browser always sends Origin: another site's page may not drive this engine.
        Clients that send none (scripts, benchmarks) are not browsers and pass."""
        origin = ws.headers.get("origin")
        if origin is None:
            return True
        return urlsplit(origin).netloc.lower() == ws.headers.get("host", "").lower()

    async def _websocket(self, ws: WebSocket) -> None:
        if not self._same_origin(ws):
            log.warning("web_origin_refused", origin=ws.headers.get("origin"))
            await ws.close(code=1008)
            return
        await ws.accept()
        if self.tabs >= self.config.max_sessions:
            await ws.send_text(json.dumps({
                "type": "error", "fatal": True,
                "message": f"server full: {self.config.max_sessions} games at once; try "
                           "again later"}))
            await ws.close(code=1013, reason="server full")
            return
        self.tabs += 1   # until the tab's process has ended: the slot is its memory
        ours, theirs = socket.socketpair()
        try:
            proc = self._context().Process(target=tab_worker, args=(theirs, self.setup),
                                           name="web-tab", daemon=True)
            proc.start()
        except BaseException:
            self.tabs -= 1
            ours.close()
            raise
        finally:
            theirs.close()
        log.info("web_session_open", sessions=self.tabs, pid=proc.pid)
        reader, writer = await asyncio.open_connection(sock=ours)
        sender = asyncio.create_task(self._send_loop(ws, reader))
        try:
            while True:
                m = await ws.receive()
                if m["type"] == "websocket.disconnect":
                    break
                text = m.get("text")
                raw = text.encode("utf-8", "replace") if text is not None else \
                    (m.get("bytes") or b"")
                writer.write(FRAME.pack(STAMP.size + len(raw)) + STAMP.pack(time.monotonic())
                             + raw)
                await writer.drain()
        except (WebSocketDisconnect, ConnectionError):
            pass
        finally:
            writer.close()   # end of input: the tab's process stops its search and exits
            await self._reap(proc, sender)

    async def _reap(self, proc: Any, sender: asyncio.Task[None]) -> None:
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
            sender.cancel()
            self.tabs -= 1
            log.info("web_session_close", sessions=self.tabs, pid=proc.pid)

    @staticmethod
    async def _send_loop(ws: WebSocket, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                head = await reader.readexactly(FRAME.size)
                line = await reader.readexactly(FRAME.unpack(head)[0])
                try:
                    await ws.send_text(line.decode("utf-8"))
                except Exception:
                    continue   # the tab has gone; read on until its process has ended
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        try:
            # The game's process has ended (the tab closed, or it died): a tab still open
            # must learn that its game is gone rather than wait for answers.
            await ws.close(code=1011, reason="the game's process ended")
        except Exception:
            pass

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
        import uvicorn

        ws_max = max(WS_MAX_SIZE_MIN, WS_MAX_SIZE_FACTOR * self.config.max_message_bytes)
        cfg = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                             ws_max_size=ws_max, ws_per_message_deflate=False)
        uvicorn.Server(cfg).run(sockets=[sock])


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
                       remote_policy=cfg.remote.policy())
    try:
        server = WebServer(options, config, cfg.log["level"], cfg.log["file"])
        sock = server.bind()
    except AgentSpecError as e:
        print(f"othello-web: the default agent is refused by [remote]: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"othello-web: cannot listen on {host}:{port}: {e.strerror or e}",
              file=sys.stderr)
        return 2
    if not is_loopback_host(host):
        log.warning("web_public_bind", host=host,
                    note="anyone who can reach this address can play (within [remote])")
    server.start_fork_server()
    print(f"othello-web: serving {url_of(sock)} (at most {config.max_sessions} games)",
          flush=True)
    server.serve(sock)
    return 0


__all__ = ["WebConfig", "WebServer", "WorkerSetup", "is_loopback_host",
           "parse_address", "serve_web", "tab_worker", "url_of"]
