"""Root parallelism: several independent trees searched by threads, merged at the root.

The numba batches release the GIL, so k trees on k cores each run at nearly full speed; Python
only runs between batches.  Each tree has its own seed; with a fixed iteration or playout budget
each gets its share, so results stay reproducible.  A proven result in any tree is final.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from engine_server.game import Position
from engine_server.search.driver import TreeSearch
from engine_server.search.limits import Limits, MoveStat, ProgressCallback, SearchResult

from .base import Agent


def merge_results(results: list[SearchResult], agent: str,
                  choose: Callable[[list[MoveStat]], int] | None = None) -> SearchResult:
    """One result from several trees: visits add up, means are visit-weighted."""
    by_move: dict[int, dict] = {}
    for r in results:
        for m in r.moves:
            e = by_move.setdefault(m.move, {"visits": 0, "value": 0.0, "margin": 0.0,
                                            "margin_n": 0, "prior": m.prior, "proven": None})
            e["visits"] += m.visits
            e["value"] += m.value * m.visits
            if m.margin is not None:
                e["margin"] += m.margin * m.visits
                e["margin_n"] += m.visits
            if m.proven is not None:
                e["proven"] = m.proven
    moves = [MoveStat(move=mv, visits=e["visits"],
                      value=e["value"] / e["visits"] if e["visits"] else 0.0,
                      prior=e["prior"],
                      margin=e["margin"] / e["margin_n"] if e["margin_n"] else None,
                      proven=e["proven"]) for mv, e in by_move.items()]
    best = None
    if moves:
        wins = [m for m in moves if m.proven == 1]
        candidates = wins or [m for m in moves if m.proven != -1] or moves
        best = (choose(candidates) if choose is not None and not wins
                else max(candidates, key=lambda m: (m.visits, m.value)).move)
        moves.sort(key=lambda m: (m.move != best, -m.visits, -m.value))
    first = results[0]
    pv = next((r.pv for r in results if r.pv and r.pv[0] == best), [best] if best is not None
              else [])
    total = sum(m.visits for m in moves)
    root_value = (sum(m.value * m.visits for m in moves) / total) if total else first.root_value
    stopped = "solved" if any(r.stopped_by == "solved" for r in results) else first.stopped_by
    return SearchResult(
        best_move=best, moves=moves, pv=pv, root_value=root_value,
        iterations=sum(r.iterations for r in results), playouts=sum(r.playouts for r in results),
        elapsed=max(r.elapsed for r in results),
        reused_fraction=sum(r.reused_fraction for r in results) / len(results),
        tree_nodes=sum(r.tree_nodes for r in results),
        tree_full=any(r.tree_full for r in results), stopped_by=stopped, agent=agent,
        final=all(r.final for r in results))


class ParallelAgent(Agent):
    def __init__(self, spec: str, params: dict, make_tree: Callable[[int], TreeSearch],
                 threads: int, name: str,
                 choose: Callable[[list[MoveStat], Position], int] | None = None):
        super().__init__(spec, params)
        self.name = name
        self.trees = [make_tree(i) for i in range(threads)]
        self._choose = choose

    @property
    def tree(self) -> TreeSearch:
        return self.trees[0]

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5) -> SearchResult:
        limits = limits or Limits()
        k = len(self.trees)
        if k == 1 and self._choose is None:
            return self.trees[0].search(position, limits, progress, progress_interval)
        t0 = time.monotonic()
        stop = threading.Event()
        outer = limits.stop
        deadline = limits.absolute_deadline(t0)
        results: list[SearchResult | None] = [None] * k

        def share(n: int | None, j: int) -> int | None:
            return None if n is None else n // k + (1 if j < n % k else 0)

        def run(j: int) -> None:
            lim = Limits(deadline=deadline, iterations=share(limits.iterations, j),
                         playouts=share(limits.playouts, j), stop=stop)
            if not limits.has_budget():
                lim = Limits(stop=stop)  # each tree: its default budget
            cb = progress if j == 0 else None
            r = self.trees[j].search(position, lim, cb, progress_interval)
            results[j] = r
            if r.stopped_by == "solved":
                stop.set()  # a proof in one tree settles the move for all

        threads = [threading.Thread(target=run, args=(j,), daemon=True) for j in range(1, k)]
        for t in threads:
            t.start()
        watcher = None
        if outer is not None:
            def watch() -> None:
                while not stop.is_set():
                    if outer.wait(0.005):
                        stop.set()
            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
        run(0)
        for t in threads:  # every tree has the same deadline and its share of any count budget
            t.join()
        stop.set()  # ends the watcher
        choose = (lambda ms: self._choose(ms, position)) if self._choose is not None else None
        out = merge_results([r for r in results if r is not None], self.name, choose)
        out.elapsed = time.monotonic() - t0
        return out

    def advance(self, moves: list[int]) -> float:
        kept = [t.advance(list(moves)) for t in self.trees]
        return sum(kept) / len(kept)

    def reset(self) -> None:
        for t in self.trees:
            t.reset()
