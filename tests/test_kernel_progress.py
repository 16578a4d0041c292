"""Progress while kernels compile: lines only when something compiles, a heartbeat while a group
goes on, and one line at an engine's cold start, to a terminal only.

The compilations are real (a small kernel of this test, never cached, so it compiles every
time); the heartbeat's interval is a parameter, and the slow group waits for heartbeat lines
rather than for a time, so no assertion depends on the machine's speed.
"""

from __future__ import annotations

import re
import threading
import time

from numba import njit

from engine_server.kernel_progress import CompileProgress, announce_first_compile, duration


def _compile_something() -> None:
    """A fresh kernel each call: numba compiles it (no cache), announcing it."""
    def add_one(x):
        return x + 1

    assert njit(add_one)(1) == 2


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.changed = threading.Condition()

    def write(self, line: str) -> None:
        with self.changed:
            self.lines.append(line)
            self.changed.notify_all()

    def wait_for(self, predicate, timeout: float = 60.0) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: predicate(self.lines), timeout), self.lines


def test_a_slow_group_gets_a_line_when_it_starts_and_heartbeats_while_it_compiles():
    out = Lines()
    beats = lambda lines: [ln for ln in lines if "still compiling" in ln]  # noqa: E731
    with CompileProgress(prog="othello-engine", write=out.write, heartbeat=0.01) as progress:
        with progress.group("the modules", counted=False):
            _compile_something()
        progress.groups = 3              # known once the modules have loaded
        with progress.group("warm"):
            pass                         # loads from the cache: compiles nothing
        with progress.group("slow"):
            _compile_something()
            # a long compile: heartbeats come
            out.wait_for(lambda lines: len([ln for ln in beats(lines) if "slow" in ln]) >= 3)
        after_slow = len(out.lines)
        with progress.group("quick"):
            _compile_something()
    lines = out.lines
    assert all(ln.startswith("othello-engine: ") for ln in lines)
    assert "the cache is empty for these sources" in lines[0]
    assert lines[1].startswith("othello-engine: compiling the modules (")
    assert next(ln for ln in lines if "slow" in ln).startswith(
        "othello-engine: compiling [2/3] slow (")
    slow_beats = [ln for ln in beats(lines[:after_slow]) if "the modules" not in ln]
    assert len(slow_beats) >= 3
    for beat in slow_beats:
        assert re.fullmatch(r"othello-engine: still compiling \[2/3\] slow: \d+ functions? so "
                            r"far, \d+ s elapsed", beat), beat
    assert not any("warm" in ln for ln in lines)      # nothing compiled, nothing said
    assert lines[after_slow].startswith("othello-engine: compiling [3/3] quick (")
    assert re.fullmatch(r"othello-engine: compiled \d+ functions? in \d+ s; later starts load "
                        r"them from the cache", lines[-1]), lines[-1]
    assert progress.compiled >= 2
    # the heartbeat has stopped with the block: nothing more is written
    n = len(lines)
    time.sleep(0.05)
    assert len(out.lines) == n


def test_a_warm_cache_says_nothing():
    out = Lines()
    with CompileProgress(2, write=out.write, heartbeat=0.01) as progress:
        for name in ("a", "b"):
            with progress.group(name):
                time.sleep(0.03)        # long enough for heartbeats, had anything compiled
    assert out.lines == [] and progress.compiled == 0


def test_a_cold_start_says_so_once_and_only_to_a_terminal():
    shown, hidden = Lines(), Lines()
    notices = [announce_first_compile("othello-web", shown.write, tty=True),
               announce_first_compile("othello-engine", hidden.write, tty=False)]
    try:
        _compile_something()
        _compile_something()
    finally:
        for n in notices:
            n.close()
    assert len(shown.lines) == 1 and shown.lines[0].startswith(
        "othello-web: compiling the search kernels into the cache")
    assert hidden.lines == [] and all(n.fired for n in notices)


def test_durations_read_as_minutes_and_seconds():
    assert [duration(s) for s in (0.2, 42, 59.6, 125)] == ["0 s", "42 s", "1 min 00 s",
                                                             "2 min 05 s"]

