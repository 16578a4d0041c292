"""Time in tests, on machines that are busy.

CI and shared machines run the suite beside other work, so a test that involves time checks
behaviour: a deadline or a stop ended a search that would otherwise run far longer, an answer came
at all, things happened in order.  How fast they happen is for the benchmarks, run on a quiet
machine (``othello-bench search``, ``endgame --latency``, ``timing``, ``ping``, ``zmq``, ``web``,
``cs303``, ``botzone``).  Upper bounds in tests are therefore far from anything a loaded 2-core
machine reaches, and the thing they bound would take much longer if the behaviour were broken;
lower bounds (a search used its time) stay tight, since load only makes things take longer.
"""

from __future__ import annotations

import time
from typing import Callable

# What a loaded machine may add to a deadline, a stop or a timer before the test calls it late.
SLACK = 5.0
# How long to wait for something that must happen (a reply, a thread's work, a process's exit).
WAIT = 60.0


def wait_until(predicate: Callable[[], object], timeout: float = WAIT, interval: float = 0.01,
               what: str = "the condition") -> None:
    """Poll ``predicate`` until it holds; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not hold within {timeout} s")
        time.sleep(interval)
