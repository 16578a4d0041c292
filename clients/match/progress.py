"""The progress bar of a tournament run."""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO

from .record import GameRecord


class Progress:
    """A one-line bar on stderr (redrawn on a terminal, a line every few seconds otherwise)."""

    def __init__(self, total: int, enabled: bool = True, stream: TextIO | None = None):
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.monotonic()
        self.last = 0.0
        self.tally = [0, 0, 0]
        self.tallied = False

    def update(self, record: GameRecord | None, first_label: str | None = None) -> None:
        """Count a finished game (None: one that failed); ``first_label``'s score is shown."""
        self.done += 1
        outcome = (record.outcome_for(first_label)
                   if record is not None and first_label is not None else None)
        if outcome is not None:
            self.tallied = True
            self.tally[("win", "draw", "loss").index(outcome)] += 1
        now = time.monotonic()
        if not self.enabled or (not self.tty and now - self.last < 5.0 and
                                self.done < self.total):
            return
        self.last = now
        width = 30
        filled = int(width * self.done / self.total)
        rate = self.done / max(now - self.t0, 1e-9)
        eta = (self.total - self.done) / rate if rate > 0 else math.inf
        w, d, l = self.tally
        tally = f"  first player +{w} ={d} -{l}" if self.tallied else ""
        text = (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} games"
                f"{tally}  {rate * 60:.1f}/min  eta {_fmt_secs(eta)}")
        self.stream.write(("\r" + text) if self.tty else (text + "\n"))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _fmt_secs(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"
