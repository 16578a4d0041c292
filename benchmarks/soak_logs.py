"""What the ZeroMQ soak and failover benchmarks read back from their servers' logs, and how they
sum up a list of timings.

* :func:`log_records`: every JSON record of the servers' log files (``--log-file``, one file per
  server process);
* :func:`log_counts`: sessions opened, closed (by reason), restored and interrupted, and the
  errors logged, over every process;
* :func:`summary`: the median and the maximum of a list of seconds.

Used by ``benchmarks/zmq_soak.py`` and ``benchmarks/zmq_failover.py``.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any, Iterator


def log_records(paths: list[Path]) -> Iterator[tuple[Path, str, dict[str, Any]]]:
    """Every JSON record in the servers' log files: (file, line, record)."""
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                yield path, line, rec


def log_counts(paths: list[Path]) -> dict[str, Any]:
    """Sessions opened, closed (by reason) and restored, and the errors logged, in the logs of
    every server process."""
    opened, restored, interrupted, closes = 0, 0, 0, Counter[str]()
    errors: list[str] = []
    n_errors = 0
    for path, line, rec in log_records(paths):
        event = rec.get("event")
        if event == "session_open":
            opened += 1
        elif event == "session_close":
            closes[str(rec.get("reason"))] += 1
        elif event == "session_ended":
            closes["quit"] += 1
        elif event == "session_restored":
            restored += 1
        elif event == "session_interrupted":
            interrupted += 1
        if rec.get("level") in ("error", "critical"):
            n_errors += 1
            if len(errors) < 10:
                errors.append(f"{path.name}: {line[:300]}")
    return {"sessions_opened": opened, "sessions_closed": dict(closes),
            "sessions_restored": restored, "sessions_interrupted": interrupted,
            "server_errors_logged": n_errors, "server_errors": errors}


def summary(xs: list[float]) -> dict[str, float] | None:
    return {"median": round(statistics.median(xs), 3), "max": round(max(xs), 3)} if xs else None
