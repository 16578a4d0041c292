"""Drive the I/O-free protocol handlers as a GUI would, collecting every output line."""

from __future__ import annotations

import threading
import time
from typing import Any

from engine_server.commands.gtp import GtpHandler
from engine_server.commands.nboard import NBoardHandler
from engine_server.session import EngineOptions, Output, SearchJob, Session


class Harness:
    def __init__(self, protocol: str, agent: str = "uct:iterations=300", **opts):
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self.output = Output(self._sink)
        options = EngineOptions(agent=agent, warmup=False, **opts)
        self.session = Session(options, self.output)
        self.handler = NBoardHandler(self.session, hint_interval=0.05) if protocol == "nboard" \
            else GtpHandler(self.session)
        # Every job the session starts, and when the last line was handed over: a test reads
        # the budget a command gave its search (deadline - received) instead of timing it.
        self.jobs: list[SearchJob] = []
        self.received = 0.0
        start = self.session.start

        def recording_start(*args: Any, **kwargs: Any) -> SearchJob:
            job = start(*args, **kwargs)
            self.jobs.append(job)
            return job

        self.session.start = recording_start  # type: ignore[method-assign]

    def _sink(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)

    def send(self, *lines: str) -> list[str]:
        start = len(self.lines)
        for line in lines:
            self.received = time.monotonic()
            self.handler.handle_line(line, self.received)
        return self.lines[start:]

    def wait(self, timeout: float = 30.0) -> None:
        """Wait until the running search (not pondering) is over."""
        job = self.session.current_job
        if job is not None and job.thread is not None:
            job.thread.join(timeout)

    def wait_for(self, predicate, timeout: float = 30.0) -> list[str]:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            with self._lock:
                snapshot = list(self.lines)
            if predicate(snapshot):
                return snapshot
            time.sleep(0.01)
        raise AssertionError(f"timed out; output so far: {self.lines[-20:]}")

    def close(self) -> None:
        self.session.close()
