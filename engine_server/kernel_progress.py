"""What a user sees while numba compiles kernels into the cache (``kernel_cache.py``).

An empty cache costs minutes of compiling (a new install, an upgrade, an edited kernel source),
which used to pass in silence.  numba announces every compilation, that is every cache miss,
with its ``numba:compile`` event, and loading a cached kernel announces nothing; so the reports
below come only from work that compiles, and a warm cache prints nothing at all.

* :class:`CompileProgress`, for ``othello-engine --precompile`` (which ``make setup`` runs): once
  something compiles, a line naming the cache, then a line as each group of kernels starts
  compiling (``the search modules``, whose kernels declare their signatures and so compile as
  the modules load, then an agent a group: ``[3/12] uct``), a heartbeat every ``heartbeat``
  seconds while one goes on, and a summary at the end, on stderr.
* :func:`announce_first_compile`, for the engine's other starts: one line at the first
  compilation, and only when stderr is a terminal: NBoard merges stderr into the protocol it
  parses and scripts read it, so a program at the other end gets nothing.

Both must listen before the search modules are first imported, which is where most of the
compiling happens.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from numba.core import event

HEARTBEAT = 10.0   # seconds between two lines at most while a group compiles
COMPILE = "numba:compile"

Write = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def duration(seconds: float) -> str:
    """``42 s``, ``2 min 05 s``."""
    s = int(round(seconds))
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


def functions(n: int) -> str:
    return f"{n} function" if n == 1 else f"{n} functions"


def cache_dir() -> str:
    return os.environ.get("NUMBA_CACHE_DIR", "numba's default cache")


class CompileProgress(event.Listener):
    """Progress lines while groups of kernels compile (see the module docstring).

    ``with CompileProgress(n) as progress:`` listens to numba and runs the heartbeat;
    ``with progress.group(name):`` around each group's work, numbered ``[k/n]`` unless
    ``counted=False`` (``groups`` may be set once known).  ``write`` takes each line (stderr by
    default); ``heartbeat`` is the longest silence while a group compiles."""

    def __init__(self, groups: int = 0, prog: str = "othello-engine", write: Write = _stderr,
                 heartbeat: float = HEARTBEAT):
        self.groups = groups
        self.prog = prog
        self.write = write
        self.heartbeat = heartbeat
        self.compiled = 0                # functions compiled, all groups
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._beater: threading.Thread | None = None
        self._t0 = self._last = time.monotonic()
        self._index = 0
        self._name = ""                  # the group under way, as its lines name it
        self._in_group = 0               # functions it compiled so far

    # --- numba's listener (called in whichever thread compiles) -------------------------------
    def on_start(self, ev: Any) -> None:
        with self._lock:
            if not self.compiled:
                self._line(f"compiling the numba kernels into {cache_dir()}: the cache is "
                           "empty for these sources (a new install, an upgrade or an edit), "
                           "1-4 minutes, once")
            self.compiled += 1
            self._in_group += 1
            if self._name and self._in_group == 1:
                self._line(f"compiling {self._name} "
                           f"({duration(time.monotonic() - self._t0)} so far)")

    def on_end(self, ev: Any) -> None:
        pass

    # --- groups and the heartbeat -------------------------------------------------------------
    def __enter__(self) -> CompileProgress:
        self._t0 = self._last = time.monotonic()
        event.register(COMPILE, self)
        self._beater = threading.Thread(target=self._beat, name="compile-heartbeat",
                                        daemon=True)
        self._beater.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._beater is not None:
            self._beater.join()
        event.unregister(COMPILE, self)
        if self.compiled and exc[0] is None:
            with self._lock:
                self._line(f"compiled {functions(self.compiled)} in "
                           f"{duration(time.monotonic() - self._t0)}; later starts load them "
                           "from the cache")

    @contextmanager
    def group(self, name: str, counted: bool = True) -> Iterator[None]:
        with self._lock:
            if counted:
                self._index += 1
                name = f"[{self._index}/{self.groups}] {name}"
            self._name = name
            self._in_group = 0
        try:
            yield
        finally:
            with self._lock:
                self._name = ""

    def _line(self, text: str) -> None:
        """Write one line (the lock held)."""
        self._last = time.monotonic()
        self.write(f"{self.prog}: {text}")

    def _beat(self) -> None:
        while True:
            with self._lock:
                due = self._last + self.heartbeat
            if self._done.wait(max(0.0, due - time.monotonic())):
                return
            with self._lock:
                now = time.monotonic()
                if now < self._last + self.heartbeat:
                    continue  # a line went out meanwhile
                if self._name and self._in_group:
                    self._line(f"still compiling {self._name}: "
                               f"{functions(self._in_group)} so far, "
                               f"{duration(now - self._t0)} elapsed")
                else:
                    self._last = now  # nothing compiling: the next wait starts over


class FirstCompileNotice(event.Listener):
    """One line at the first compilation (see :func:`announce_first_compile`)."""

    def __init__(self, prog: str, write: Write | None):
        self.prog = prog
        self.write = write
        self.fired = False
        self._lock = threading.Lock()

    def on_start(self, ev: Any) -> None:
        with self._lock:
            if self.fired:
                return
            self.fired = True
        if self.write is not None:
            self.write(f"{self.prog}: compiling the search kernels into the cache (after an "
                       "install or an upgrade: a minute or two, once; "
                       "othello-engine --precompile compiles them all ahead)")

    def on_end(self, ev: Any) -> None:
        pass

    def close(self) -> None:
        event.unregister(COMPILE, self)


def announce_first_compile(prog: str = "othello-engine", write: Write | None = None,
                           tty: bool | None = None) -> FirstCompileNotice:
    """Listen for the first compilation of this process, and say it in one line (``write``,
    stderr by default) when ``tty`` (default: whether stderr is a terminal)."""
    if tty is None:
        tty = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    notice = FirstCompileNotice(prog, (write or _stderr) if tty else None)
    event.register(COMPILE, notice)
    return notice


__all__ = ["CompileProgress", "FirstCompileNotice", "HEARTBEAT", "announce_first_compile",
           "duration"]
