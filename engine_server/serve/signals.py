"""Signals handled on a thread of their own, so that a handler can never deadlock the process.

Python runs a signal handler in the main thread, between two bytecodes of whatever that thread
was doing.  A handler that takes a lock the main thread already holds waits forever: structlog's
``PrintLogger`` writes each line under a plain ``threading.Lock`` per file, and ``queue.Queue``
and the ZeroMQ server's wake pipe hold theirs, so a SIGTERM that arrived while the main thread
was logging a line left the server never draining and the process alive until SIGKILL (the
restarting ZeroMQ soak caught it: a server that had not exited 70 s after SIGTERM).

Here the Python-level handler does nothing at all; the interpreter's C-level handler writes the
signal's number into a pipe (``signal.set_wakeup_fd``) and a daemon thread reading that pipe
calls the callback.  That thread may log, take locks and put on queues like any other: the main
thread releases what it holds and the call goes on.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Callable, Iterable

from engine_server.log import get_logger

log = get_logger("signals")

_callbacks: dict[int, Callable[[int], None]] = {}
_lock = threading.Lock()
_watching = False


def _ignore(signum: int, frame: object) -> None:
    """The Python-level handler: nothing, so nothing can block (the pipe carries the signal)."""


def _watch(r: int) -> None:
    while True:
        try:
            data = os.read(r, 64)
        except InterruptedError:
            continue
        except OSError:
            return
        if not data:
            return
        for signum in data:
            fn = _callbacks.get(signum)
            if fn is None:
                continue   # a signal Python handles for someone else (SIGINT's KeyboardInterrupt)
            try:
                fn(signum)
            except Exception:
                log.exception("signal_handler_failed", signum=signum)


def handle_signals(signums: Iterable[int], on_signal: Callable[[int], None]) -> None:
    """From now on each of ``signums`` that arrives calls ``on_signal(signum)`` on the
    ``signals`` thread, once per delivery (a later call for the same signal replaces the
    callback).  Call from the main thread, as ``signal`` requires."""
    global _watching
    with _lock:
        for s in signums:
            try:
                signal.signal(s, _ignore)
            except (OSError, ValueError):   # a signal this platform lacks or refuses
                continue
            _callbacks[int(s)] = on_signal
        if _watching:
            return
        r, w = os.pipe()
        os.set_blocking(w, False)   # the C handler must never block on a full pipe
        # A burst that fills the pipe drops bytes, which is harmless (one is enough); the
        # warning would go to stderr, which NBoard reads as protocol.
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        threading.Thread(target=_watch, args=(r,), name="signals", daemon=True).start()
        _watching = True


__all__ = ["handle_signals"]
