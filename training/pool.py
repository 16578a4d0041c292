"""Chunks of a long numba job spread over a few threads (the kernels release the GIL)."""

from __future__ import annotations

import threading
from typing import Any, Callable


def run_chunks(n: int, chunk: int, threads: int, make_state: Callable[[], Any],
               work: Callable[[Any, int, int], Any],
               on_done: Callable[[int], None] | None = None,
               halt: Callable[[], bool] | None = None) -> dict[int, Any]:
    """``work(state, start, stop)`` for each chunk of ``range(n)``, on ``threads`` threads,
    each with its own ``make_state()`` (tables, scratch arrays).  Returns the results by chunk
    start; ``on_done(count)`` is called (under a lock) as chunks finish.  Once ``halt()`` is
    true no further chunk starts (those under way finish)."""
    starts = list(range(0, n, chunk))
    results: dict[int, Any] = {}
    lock = threading.Lock()

    def loop() -> None:
        state = make_state()
        while True:
            with lock:
                if not starts or (halt is not None and halt()):
                    return
                s = starts.pop(0)
            e = min(n, s + chunk)
            r = work(state, s, e)
            with lock:
                results[s] = r
                if on_done is not None:
                    on_done(e - s)

    ts = [threading.Thread(target=loop, daemon=True) for _ in range(max(1, threads))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return results
