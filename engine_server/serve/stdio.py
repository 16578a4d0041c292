"""The stdin/stdout transport: a reader thread, the controller loop, clean exits.

The reader thread only reads and queues lines (with their arrival time, from which deadlines are
measured); it also makes a running search return at once when ``quit`` arrives, so that a
blocked ``genmove`` cannot keep the process alive.  At the end of input every command given is
still answered (``printf 'nboard 2\ngo\n' | othello-engine`` prints its ``===`` line), then the
process exits; SIGTERM, SIGHUP and a closed stdout end it at once.  The controller (main
thread) owns the protocol handler and the session.  stdout carries protocol lines only, each
flushed; any stray ``print`` from library code is redirected to stderr.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time
from typing import IO, Iterator

from engine_server.commands.controller import Controller, Request
from engine_server.log import get_logger
from engine_server.session import EngineOptions, Output, Session

from .signals import handle_signals

log = get_logger("stdio")

def serve_stdio(options: EngineOptions, protocol: str = "auto", stdin: IO[bytes] | None = None,
                stdout: IO[str] | None = None) -> int:
    out_stream = stdout or sys.stdout
    in_stream = stdin or sys.stdin.buffer
    if stdout is None:
        sys.stdout = sys.stderr  # the protocol keeps the real stdout for itself

    closed = threading.Event()

    def sink(line: str) -> None:
        if closed.is_set():
            return
        try:
            out_stream.write(line + "\n")
            out_stream.flush()
        except (OSError, ValueError):  # the reader of our output is gone: nothing to answer
            closed.set()
            log.info("output_closed")
            controller.stop_now()

    output = Output(sink)
    session = Session(options, output)
    controller = Controller(session, protocol)
    lines: queue.Queue[Request | None] = queue.Queue()

    def raw_lines() -> Iterator[str]:
        """Lines from the input.  A real file descriptor is read with os.read: a daemon thread
        blocked inside a buffered reader aborts the interpreter at exit."""
        try:
            fd = in_stream.fileno()
        except (AttributeError, OSError, ValueError):
            fd = None
        if fd is None:
            while True:
                raw = in_stream.readline()
                if not raw:
                    return
                yield raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        buf = b""
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                if buf:
                    yield buf.decode("utf-8", errors="replace")
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                yield line.decode("utf-8", errors="replace") + "\n"

    def reader() -> None:
        try:
            for text in raw_lines():
                controller.arrived(text)  # "quit" must not wait behind a long genmove
                lines.put(Request(text, time.monotonic()))
        except (OSError, ValueError):
            pass
        # the lines read so far are still answered, searches included
        lines.put(Request("", time.monotonic(), end_of_input=True))

    def on_term(signum: int) -> None:
        log.info("signal", signum=signum)
        controller.stop_now()
        lines.put(None)

    if threading.current_thread() is threading.main_thread():
        handle_signals([signal.SIGTERM, getattr(signal, "SIGHUP", signal.SIGTERM)], on_term)
    threading.Thread(target=reader, name="stdin-reader", daemon=True).start()
    if hasattr(in_stream, "isatty") and in_stream.isatty():
        print("othello-engine: type GTP commands (e.g. 'genmove black', 'showboard', "
              "'list_commands') or NBoard commands ('nboard 2', 'go'); 'quit' to leave.",
              file=sys.stderr, flush=True)

    log.info("engine_ready", agent=options.agent, rules=str(options.rules), protocol=protocol)
    try:
        # a bounded wait: a stop (SIGTERM's, from the signals thread) is seen within it
        controller.run(lines, poll=0.5)
    finally:
        log.info("engine_exit")
    return 0
