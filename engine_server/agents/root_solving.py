"""Perfect endgames for tree agents: the exact solver decides the root whenever it can.

:class:`RootSolvingAgent` wraps a tree agent (``best``, or ``uct`` with its solver on).  Once
the root has few enough empties it runs a
:class:`~engine_server.search.endgame.rootsolve.RootSolver` beside the tree search and merges
the two:

* exact root: the move with the best exact margin is played (the least bad loss when losing),
  and the search stops as soon as the proof is in;
* win/draw/loss proven but not the margin: the tree's move stands only if it is proven to keep
  that outcome, else the solver's move (a partial exact search never replaces a finished WLD);
* every move's proven bounds reach the result, so the protocols can show exact values.

With a clock and an agent of two or more ``threads``, the solver takes one of them; with one
(a single-threaded engine) or a budget without a clock (iterations, playouts: reproducible
runs), it runs first, on a share of the time or a node budget, and the tree gets the rest.
It uses only the agent protocol of the agent it wraps (``threads``, ``preferred_moves``,
``search(..., threads=)``).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from engine_server.game import Position
from engine_server.search.endgame.rootsolve import RootProof, RootSolver
from engine_server.search.limits import (
    Limits,
    MoveStat,
    ProgressCallback,
    SearchResult,
    chain_stop,
    choose_under_bounds,
)

from .base import Agent, AgentWrapper, Param

ROOT_PARAMS = (
    Param("root_solve", int, -1, "solve the root exactly at or below this many empties (-1: "
          "by the time per move, 23 at 1 s; 0: never)", min=-1, max=40),
    Param("root_nodes", int, 10_000_000, "node budget of the root solver when the search has "
          "no clock (iterations, playouts, NBoard depth)", min=1000),
)
SEQUENTIAL_SHARE = 0.6     # of the time, for the solver before a single tree searches
SEQUENTIAL_MAX = 10.0      # seconds: a long analysis still shows the tree's progress soon
PREFERRED_WAIT = 0.05     # seconds the solver lets the tree search before asking its favourites
FORCED_SECONDS = 0.05      # a forced move (or pass) waits this long at most for its value
FORCED_NODES = 300_000


def auto_empties(seconds: float | None) -> int:
    """How many empties the solver takes on in ``seconds``: 23 at 1 s, +1.5 per doubling.

    That is about three empties above where the exact margin usually finishes in time: there
    the win/draw/loss proof still does (and keeps the tree's move honest), which halved the
    non-maximal moves at 19-20 empties at 0.35 s a move
    (docs/notes/matches/root-solve-threshold.md).
    """
    if seconds is None:
        return 20
    return int(min(26, max(14, round(23 + 1.5 * math.log2(max(seconds, 1e-3))))))


def apply_proof(result: SearchResult, proof: RootProof) -> SearchResult:
    """Fold the solver's proof into a search result: bounds, the choice, PV and counts."""
    if not proof.proven and not proof.moves:
        result.solver_nodes += proof.nodes
        return result
    by_move = {m.move: m for m in result.moves}
    for mv, (lo, hi) in proof.moves.items():
        m = by_move.get(mv)
        if m is None:
            m = MoveStat(move=mv, visits=0, value=0.0)
            by_move[mv] = m
            result.moves.append(m)
        m.bound(lo, hi)
    result.lower = max(result.lower, proof.lower)
    result.upper = min(result.upper, proof.upper)
    if proof.exact:
        best = proof.move
    else:
        best = choose_under_bounds(
            [(m.move, m.lower, m.upper, m.visits, m.value) for m in result.moves],
            result.best_move if result.best_move is not None else proof.move)
    if best is not None:
        if best != result.best_move:
            result.pv = [best]
        result.best_move = best
    if proof.exact:
        if proof.pv:
            result.pv = list(proof.pv)
        result.stopped_by = "solved"
    result.moves.sort(key=lambda m: (m.move != result.best_move, -m.lower, -m.visits,
                                     -m.value))
    result.solver_nodes += proof.nodes
    return result


class RootSolvingAgent(AgentWrapper):
    """A tree agent with an exact root solver beside it (see the module docstring)."""

    def __init__(self, inner: Agent, spec: str, params: dict[str, Any],
                 table_bits: int = 20):
        super().__init__(inner, spec, params)
        self.root_solver = RootSolver(table_bits)
        self.root_empties = int(params.get("root_solve", -1))
        self.root_nodes = int(params.get("root_nodes", 10_000_000))

    def _threshold(self, seconds: float | None) -> int:
        if self.root_empties >= 0:
            return self.root_empties
        return auto_empties(seconds)

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5, threads: int | None = None) -> SearchResult:
        t0 = time.monotonic()
        limits = limits or Limits()
        deadline = limits.absolute_deadline(t0)
        seconds = None if deadline is None else deadline - t0
        if position.is_game_over() or position.empties > self._threshold(seconds):
            return self.inner.search(position, limits, progress, progress_interval, threads)
        forced = len(position.legal_moves()) <= 1
        available = self.threads if threads is None else max(1, min(threads, self.threads))
        if deadline is not None and available >= 2 and not forced:
            return self._beside(position, limits, deadline, progress, progress_interval,
                                available)
        return self._before(position, limits, deadline, progress, progress_interval, forced,
                            threads)

    def _solver_limits(self, deadline: float | None, t0: float, forced: bool
                       ) -> tuple[float | None, int | None]:
        if forced:  # nothing to choose: the value only, if it comes cheap
            return (t0 + min(FORCED_SECONDS, SEQUENTIAL_SHARE * (deadline - t0))
                    if deadline is not None else None), FORCED_NODES
        if deadline is None:
            return None, self.root_nodes
        return t0 + min(SEQUENTIAL_SHARE * (deadline - t0), SEQUENTIAL_MAX), None

    def _before(self, position: Position, limits: Limits, deadline: float | None,
                progress: ProgressCallback | None, interval: float,
                forced: bool = False, threads: int | None = None) -> SearchResult:
        """Solver first, then the tree with what is left (one thread)."""
        t0 = time.monotonic()
        solve_deadline, nodes = self._solver_limits(deadline, t0, forced)
        proof = self.root_solver.run(position, solve_deadline, limits.stop, nodes,
                                     all_moves=limits.analysis,
                                     preferred=lambda: self.inner.preferred_moves(position))
        if proof.exact or limits.stopped():
            # The tree only reports what it already knows (no iterations): the answer is in.
            inner = Limits(iterations=0, stop=limits.stop)
        else:
            # The solver has used part of the time: the tree gets what is left of the same
            # deadline (a fresh ``time`` would overrun the budget by the solver's share).
            inner = Limits(deadline=deadline,
                           iterations=limits.iterations, playouts=limits.playouts,
                           stop=limits.stop, depth=limits.depth, analysis=limits.analysis)
        wrapped = None
        if progress is not None:
            wrapped = lambda r: progress(apply_proof(r, proof))  # noqa: E731
        r = self.inner.search(position, inner, wrapped, interval, threads)
        r = apply_proof(r, proof)
        r.elapsed = time.monotonic() - t0
        return r

    def _beside(self, position: Position, limits: Limits, deadline: float,
                progress: ProgressCallback | None, interval: float,
                threads: int) -> SearchResult:
        """Solver in its own thread, the tree on the other ``threads - 1``, until either is
        done."""
        t0 = time.monotonic()
        tree_stop = threading.Event()
        solver_stop = threading.Event()
        unchain = [chain_stop(limits.stop, tree_stop), chain_stop(limits.stop, solver_stop)]
        proofs: list[RootProof] = []

        def preferred() -> list[int]:
            # the tree's favourites once it has searched a little (its root is synced first)
            time.sleep(min(PREFERRED_WAIT, max(0.0, (deadline - time.monotonic()) / 4)))
            return self.inner.preferred_moves(position)

        def solve() -> None:
            try:
                proofs.append(self.root_solver.run(
                    position, deadline, solver_stop, None, all_moves=limits.analysis,
                    preferred=preferred))
            finally:
                if proofs and proofs[0].exact:
                    tree_stop.set()  # the answer is in: the tree can stop

        worker = threading.Thread(target=solve, name="root-solver", daemon=True)
        worker.start()
        wrapped = None
        if progress is not None:
            wrapped = lambda r: progress(apply_proof(r, self.root_solver.snapshot()))  # noqa
        inner = Limits(deadline=deadline, iterations=limits.iterations,
                       playouts=limits.playouts, stop=tree_stop, depth=limits.depth,
                       analysis=limits.analysis)
        r = None
        try:
            r = self.inner.search(position, inner, wrapped, interval, threads=threads - 1)
        finally:
            # A tree that settled the move itself (unless every move's value is wanted), or
            # failed, ends the solver too; otherwise the solver goes on to its own end (proof,
            # deadline or stop).
            if r is None or (r.exact and not limits.analysis):
                solver_stop.set()
            worker.join()
            for f in unchain:
                f()
        proof = proofs[0] if proofs else self.root_solver.snapshot()
        r = apply_proof(r, proof)
        r.elapsed = time.monotonic() - t0
        return r


__all__ = ["RootSolvingAgent", "ROOT_PARAMS", "apply_proof", "auto_empties"]
