"""One game of the web page in its own process: its session, the I/O-free ``WebHandler`` and a
controller thread, talking length-prefixed frames with the server (``serve/web.py``) over a
socket pair.

Frames to the game: a kind (a page's message, a page took the game, the page left), the
arrival time and the WebSocket message's bytes.  Frames from it: one JSON message each, for the
page.  End of input (the game is over for the server, or the server stops) ends the process.
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
from typing import Any

from engine_server.commands.web import WebHandler
from engine_server.log import get_logger
from engine_server.session import EngineOptions, Output, SearchJob, Session
from protocol import web

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
MESSAGE, ATTACH, DETACH = 0, 1, 2    # a page's message; a page took the game; the page left


def _frame_in(kind: int, payload: bytes = b"") -> bytes:
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
    already in them), the message limit and the log settings."""

    options: EngineOptions
    max_message_bytes: int
    log_level: str = "warning"
    log_file: str | None = None


def tab_worker(sock: socket.socket, setup: WorkerSetup) -> None:
    """One game's process: its session, handler and controller, talking frames over ``sock``.

    Frames in: a kind (a page's message, a page attached, the page left), the arrival time and
    the WebSocket message's bytes; frames out: one JSON message each.  End of input (the game
    is over for the server, or the server stops) ends the process."""
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
            gone.set()   # the front end has closed this game; the reader ends the process

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
                else:
                    replies = handler.handle_text(raw, received)
                for msg in replies:
                    send(web.encode(msg))
            except Exception:
                log.exception("web_controller_error")
    finally:
        handler.close()
        sock.close()
