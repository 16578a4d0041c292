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
from engine_server.search.limits import (
    Candidate,
    Limits,
    MoveStat,
    ProgressCallback,
    SearchResult,
    chain_stop,
    choose_under_bounds,
)
from engine_server.search.mcts.driver import TreeSearch

from .base import Agent


def merge_results(results: list[SearchResult], agent: str,
                  choose: Callable[[list[MoveStat]], int] | None = None) -> SearchResult:
    """One result from several trees: visits add up, means are visit-weighted, proven bounds
    intersect (every tree's proofs hold)."""
    by_move: dict[int, dict] = {}
    for r in results:
        for m in r.moves:
            e = by_move.setdefault(m.move, {"visits": 0, "value": 0.0, "margin": 0.0,
                                            "margin_n": 0, "prior": m.prior, "lower": -64,
                                            "upper": 64})
            e["visits"] += m.visits
            e["value"] += m.value * m.visits
            if m.margin is not None:
                e["margin"] += m.margin * m.visits
                e["margin_n"] += m.visits
            e["lower"] = max(e["lower"], m.lower)
            e["upper"] = min(e["upper"], m.upper)
    moves = []
    for mv, e in by_move.items():
        m = MoveStat(move=mv, visits=e["visits"],
                     value=e["value"] / e["visits"] if e["visits"] else 0.0, prior=e["prior"],
                     margin=e["margin"] / e["margin_n"] if e["margin_n"] else None)
        m.bound(e["lower"], e["upper"])
        moves.append(m)
    best = None
    if moves:
        candidates: list[Candidate] = [(m.move, m.lower, m.upper, m.visits, m.value)
                                       for m in moves]
        preferred = max(moves, key=lambda m: (m.visits, m.value)).move
        if choose is not None:
            # the knowledge-based pick only among moves the proofs leave open
            open_ = [m for m in moves if m.upper >= 0] or moves
            preferred = choose(open_)
        best = choose_under_bounds(candidates, preferred)
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
        final=all(r.final for r in results), lower=max(r.lower for r in results),
        upper=min(r.upper for r in results))


class ParallelAgent(Agent):
    def __init__(self, spec: str, params: dict, make_tree: Callable[[int], TreeSearch],
                 threads: int, name: str,
                 choose: Callable[[list[MoveStat], Position], int] | None = None):
        super().__init__(spec, params)
        self.name = name
        self.trees = [make_tree(i) for i in range(threads)]
        self._choose = choose

    @property
    def threads(self) -> int:
        return len(self.trees)

    @property
    def tree(self) -> TreeSearch:
        return self.trees[0]

    def preferred_moves(self, position: Position) -> list[int]:
        # the first tree's: it runs on the calling thread and is never lent to the root solver
        return self.trees[0].preferred_moves(position)

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5, threads: int | None = None) -> SearchResult:
        """Search with every tree, or with the first ``threads`` of them (a thread is lent to
        the root solver in the endgame)."""
        limits = limits or Limits()
        k = len(self.trees) if threads is None else max(1, min(threads, len(self.trees)))
        if k == 1 and self._choose is None:
            return self.trees[0].search(position, limits, progress, progress_interval)
        t0 = time.monotonic()
        stop = threading.Event()
        deadline = limits.absolute_deadline(t0)
        results: list[SearchResult | None] = [None] * k

        def share(n: int | None, j: int) -> int | None:
            return None if n is None else n // k + (1 if j < n % k else 0)

        def run(j: int) -> None:
            lim = Limits(deadline=deadline, iterations=share(limits.iterations, j),
                         playouts=share(limits.playouts, j), stop=stop,
                         analysis=limits.analysis)
            if not limits.has_budget():
                lim = Limits(stop=stop, analysis=limits.analysis)  # each: its default budget
            cb = progress if j == 0 else None
            r = self.trees[j].search(position, lim, cb, progress_interval)
            results[j] = r
            if r.stopped_by == "solved":
                stop.set()  # a proof in one tree settles the move for all

        workers = [threading.Thread(target=run, args=(j,), daemon=True) for j in range(1, k)]
        for t in workers:
            t.start()
        unchain = chain_stop(limits.stop, stop)
        try:
            run(0)
            for t in workers:  # every tree has the same deadline and its share of any budget
                t.join()
        finally:
            unchain()
        pick = self._choose
        choose = None if pick is None else (lambda ms: pick(ms, position))
        out = merge_results([r for r in results if r is not None], self.name, choose)
        out.elapsed = time.monotonic() - t0
        return out

    def advance(self, moves: list[int]) -> float:
        kept = [t.advance(list(moves)) for t in self.trees]
        return sum(kept) / len(kept)

    def reset(self) -> None:
        for t in self.trees:
            t.reset()
