"""One game of the web page in its own process: its session, the I/O-free ``WebHandler`` and a
controller thread, talking length-prefixed frames with the server (``serve/web.py``) over a
socket pair.

Frames to the game: a kind (a page's message, a page took the game, the page left, the server
is stopping), the arrival time and the WebSocket message's bytes.  Frames from it: one JSON
message each, for the page; a game restored from the session store first sends one frame of
its own, for the server (``{"type": "restore", "ok": ...}``).  End of input (the game is over
for the server, or the server stops) ends the process.  The server's handle on such a process
(and on the page connected to it) is a ``Tab``.

With a session store the process writes its game there (``WebHandler.snapshot``, one
transaction) whenever it has changed: after each message it handles, and before anything the
controller sends the page, so the store has every change before the page sees it.  It has a
connection of its own to the store's file.  From the end of its input on it writes nothing: a
search interrupted because the server went away is not a move.
"""

from __future__ import annotations

import os
import queue
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine_server.agents import AgentSpecError
from engine_server.commands.web import WebError, WebHandler
from engine_server.log import get_logger
from engine_server.session import EngineOptions, Output, SearchJob, Session
from protocol import web

from .store import SessionStore, StoreError

if TYPE_CHECKING:
    import asyncio

    from starlette.websockets import WebSocket

log = get_logger("web")

# A tab that sends faster than its session answers gets errors instead of an ever longer queue.
MAX_QUEUED = 64
# Search threads run at this niceness (Linux; a thread inherits it from the one that starts it):
# when every core is busy searching, the event loop and the tabs' controllers, which only move
# messages, still get a core at once instead of waiting their turn behind twenty searches.
SEARCH_NICE = 10
# In a tab's process, the controller waiting for the GIL asks its search thread to drop it
# after this long (Python's default: 5 ms).
SWITCH_INTERVAL = 0.001


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
KIND = struct.Struct("!B")           # server -> game process: what the frame is
STAMP = struct.Struct("!d")          # a message's arrival time (CLOCK_MONOTONIC: one clock for
                                     # every process of the machine)
MESSAGE, ATTACH, DETACH, DRAIN = 0, 1, 2, 3   # a page's message; a page took the game; the
                                             # page left; the server is stopping
MOVED = ("this game was taken over by another server while this one was not answering (its "
         "lease ran out); reload the page to go on where it is served now")
# WebSocket close codes of our own (4000-4999 are the application's), with which the server
# closes a page's connection.
CLOSE_TAKEN_OVER = 4000   # the game was opened by another page
CLOSE_EXPIRED = 4001      # the game was closed (idle, or for a newcomer)
CLOSE_RESTART = 1012      # the server is stopping, or another one serves the game: the page
                          # comes back by itself
# A closed tab's process has this long to stop its search and exit before it is killed.
WORKER_EXIT_S = 10.0
# The games' kind in the session store (their key: the page's token).
STORE_KIND = "web"


def frame_in(kind: int, payload: bytes = b"") -> bytes:
    """A frame to a game's process: kind, arrival time, payload."""
    body = KIND.pack(kind) + STAMP.pack(time.monotonic()) + payload
    return FRAME.pack(len(body)) + body


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
    already in them), the message limit, the log settings and the session store (its file
    and the server's lease-holder name; None: no store)."""

    options: EngineOptions
    max_message_bytes: int
    log_level: str = "warning"
    log_file: str | None = None
    store_location: str | None = None   # an SQLite file or a postgresql:// address
    store_holder: str | None = None


@dataclass(eq=False)
class Tab:
    """A game as the server holds it: its process and the page connected to it, if any."""

    token: str
    proc: Any
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    last_seen: float                   # the last message from a page
    ws: WebSocket | None = None
    parked_since: float | None = None  # when its page left
    ply: int = 0                       # from the state messages the process sends
    searching: bool = False
    ended: bool = False
    pump: asyncio.Task[None] | None = None


class _Checkpoints:
    """The game's writes to the store: only when the snapshot has changed, a failure logged
    once (the game goes on in memory and the next change tries again), nothing after
    ``freeze``."""

    def __init__(self, setup: WorkerSetup, token: str, handler: WebHandler,
                 fence: int | None = None):
        self.token = token
        self.handler = handler
        self.frozen = threading.Event()
        self.lost = False    # another server took the game over
        self.told = False    # and the page was told
        self.failing = False
        self.saved: dict[str, Any] | None = None
        self.store: SessionStore | None = None
        if setup.store_location and token:
            try:
                self.store = SessionStore(setup.store_location, holder=setup.store_holder)
            except StoreError as e:
                log.error("store_failed", error=str(e))
        if self.store is not None and fence is not None:
            # Its writes are fenced by the lease its server took for it.
            self.store.adopt(STORE_KIND, token, fence)

    def __call__(self) -> None:
        if self.store is None or self.frozen.is_set():
            return
        state = self.handler.snapshot()
        if state == self.saved:
            return
        try:
            kept = self.store.save(STORE_KIND, self.token, state)
        except StoreError as e:
            if not self.failing:
                log.error("store_failed", error=str(e))
            self.failing = True
            return
        if self.failing:
            log.warning("store_recovered", store=self.store.where)
        self.failing = False
        if not kept:
            # Another server took the game over (this one failed to renew its lease in time):
            # its state wins, this process writes nothing more.
            log.warning("store_taken_over", store=self.store.where)
            self.lost = True
            self.frozen.set()
            return
        self.saved = state

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def tab_worker(sock: socket.socket, setup: WorkerSetup, token: str = "",
               restore: dict[str, Any] | None = None, fence: int | None = None) -> None:
    """One game's process: its session, handler and controller, talking frames over ``sock``.

    Frames in: a kind (a page's message, a page attached, the page left, the server stops),
    the arrival time and the WebSocket message's bytes; frames out: one JSON message each.
    End of input (the game is over for the server, or the server stops) ends the process.
    ``token``: the game's key in the store; ``restore``: the state it kept, taken back
    before anything else (the first frame out says whether that worked; if not, the process
    ends); ``fence``: the token of the lease its server took for it, carried by its writes."""
    import signal

    from engine_server.log import configure_logging

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the server's to handle
    configure_logging(setup.log_level, setup.log_file)
    sys.setswitchinterval(SWITCH_INTERVAL)
    send_lock = threading.Lock()
    gone = threading.Event()

    controller = threading.get_ident()

    def send(line: str) -> None:
        if gone.is_set():
            return
        if threading.get_ident() == controller:
            checkpoint()   # the store has the change before the page is told of it
        if checkpoint.lost:
            # Taken over: what this copy would say next was never kept; the page is told
            # once, and reloading it finds the game where it is served now.
            if checkpoint.told:
                return
            checkpoint.told = True
            line = web.encode(web.error(MOVED, fatal=True))
        try:
            with send_lock:
                _send_frame(sock, line.encode("utf-8"))
        except OSError:
            gone.set()   # the front end has closed this game; the reader ends the process

    session = Session(setup.options, Output(send))
    inbox: queue.Queue[Any] = queue.Queue()
    handler = WebHandler(session, post=inbox.put, max_message_bytes=setup.max_message_bytes,
                         on_search=lower_priority)
    checkpoint = _Checkpoints(setup, token, handler, fence)
    if restore is not None:
        try:
            handler.restore(restore)
        except (ValueError, KeyError, TypeError, WebError, AgentSpecError) as e:
            log.error("web_restore_failed", error=str(e))
            checkpoint.frozen.set()   # the store keeps what it had (the server ends it)
            send(web.encode({"type": "restore", "ok": False, "error": str(e)}))
            handler.close()
            checkpoint.close()
            sock.close()
            return
        checkpoint.saved = handler.snapshot()   # what the store has
        send(web.encode({"type": "restore", "ok": True}))

    def read() -> None:
        try:
            while True:
                frame = _recv_frame(sock)
                if frame is None:
                    break
                kind = KIND.unpack_from(frame)[0]
                received = STAMP.unpack_from(frame, KIND.size)[0]
                if kind == MESSAGE and inbox.qsize() >= MAX_QUEUED:
                    send(web.encode(web.error(f"more than {MAX_QUEUED} messages wait for this "
                                              "game; slow down")))
                    continue
                inbox.put((kind, frame[KIND.size + STAMP.size:], received))
        except OSError:
            pass
        finally:
            checkpoint.frozen.set()   # what a search stopped now would give is not a move
            handler.interrupt()   # a long search must not keep the process
            inbox.put(None)

    threading.Thread(target=read, name="web-reader", daemon=True).start()
    try:
        while True:
            item = inbox.get()
            if item is None:
                break
            try:
                if callable(item):
                    item()   # posted by the handler: a finished search, an engine turn
                    continue
                kind, raw, received = item
                if kind == ATTACH:
                    replies = handler.attach(received)
                elif kind == DETACH:
                    handler.detach()
                    replies = []
                elif kind == DRAIN:
                    replies = handler.drain()
                else:
                    replies = handler.handle_text(raw, received)
                checkpoint()
                for msg in replies:
                    send(web.encode(msg))
            except Exception:
                log.exception("web_controller_error")
            finally:
                checkpoint()
    finally:
        checkpoint.frozen.set()
        handler.close()
        checkpoint.close()
        sock.close()
