"""The anytime search driver every tree agent runs on.

Python owns the clock, the stop flag, progress reports, tree reuse and memory growth; the
iterations themselves run in :func:`batch.run_batch` batches of a few milliseconds.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from engine_server.game import Position
from engine_server.game import bitboard as bb
from engine_server.log import get_logger

from .. import endgame as EG
from ..limits import Limits, MoveStat, ProgressCallback, SearchResult, choose_under_bounds
from .batch import run_batch
from .leaf import set_priors, uses_priors
from .nodes import (
    BYTES_PER_NODE,
    CAPACITY,
    FIRST,
    FLAGS,
    HI,
    LO,
    MARGIN,
    MAX_MARGIN,
    MOVE,
    NCHILD,
    NEXT_FREE,
    NO_EXPAND,
    PRIOR,
    ROOT,
    SOLVED,
    STATUS_DONE,
    STATUS_FULL,
    N,
    W,
    copy_subtree,
    count_subtree,
    expand,
    init_root,
    new_tree,
)
from .options import TreeConfig, tree_config

log = get_logger("search")

DEFAULT_MEMORY = 1 << 30  # 1 GiB
BATCH_SECONDS = 0.005     # target length of one numba batch
MAX_BATCH_SECONDS = 0.010
SOLVER_TABLE_BITS = 18    # 8 MiB per tree; proven bounds are reused across the whole game

# final choice: (links, stats, first, count, position) -> child row
FinalChoice = Callable[[np.ndarray, np.ndarray, int, int, Position], int]
# an agent's own figures of a root move: (links, stats, child row, position, its MoveStat)
DescribeMove = Callable[[np.ndarray, np.ndarray, int, Position, MoveStat], None]


def most_visits(links: np.ndarray, stats: np.ndarray, first: int, count: int,
                position: Position) -> int:
    rows = range(first, first + count)
    return max(rows, key=lambda i: (stats[i, N], _mean(stats, i)))


def best_mean(links: np.ndarray, stats: np.ndarray, first: int, count: int,
              position: Position) -> int:
    rows = range(first, first + count)
    return max(rows, key=lambda i: (_mean(stats, i) if stats[i, N] > 0 else -2.0,
                                    stats[i, N]))


def _solver_choice(links: np.ndarray, stats: np.ndarray, first: int, count: int,
                   chosen: int) -> int:
    """The final choice under the children's proven bounds (see ``choose_under_bounds``)."""
    return choose_under_bounds(
        [(i, float(stats[i, LO]), float(stats[i, HI]), float(stats[i, N]),
          _mean(stats, i)) for i in range(first, first + count)], chosen)


def _unassailable(links: np.ndarray, stats: np.ndarray, gained: float, t0: float,
                  deadline: float, now: float | None = None) -> bool:
    """Whether the root's most-visited child keeps the most visits even if every visit left
    before the deadline went to the runner-up; ``gained`` root visits since ``t0`` give the rate
    (visits, not iterations: an iteration that simulates every new child adds several).  Never true
    while a child has proven bounds: the solver's choice may still change.  ``now`` is the
    clock's reading (tests give their own, so that a pause cannot change the rate)."""
    first, count = int(links[0, FIRST]), int(links[0, NCHILD])
    if count < 2 or np.any(stats[first:first + count, LO] > -MAX_MARGIN) \
            or np.any(stats[first:first + count, HI] < MAX_MARGIN):
        return False
    n = np.sort(stats[first:first + count, N])
    if now is None:
        now = time.monotonic()
    left = gained / max(now - t0, 1e-6) * (deadline - now)
    return bool(n[-1] - n[-2] > left)


def _mean(stats: np.ndarray, i: int) -> float:
    n = stats[i, N]
    return float(stats[i, W] / n) if n > 0 else 0.0


@dataclass
class Budget:
    """The default budget of an agent when the caller gives no limit (its paper's numbers)."""

    iterations: int | None = None
    playouts: int | None = None


# a placeholder for agents without the evaluation (never read while cfg.eval is 0)
_NO_WEIGHTS = np.zeros((1, 1), np.int32)


class TreeSearch:
    """One search tree plus the loop that grows it.  Not thread-safe: one search at a time."""

    def __init__(self, name: str, config: TreeConfig,
                 make_table: Callable[[int], np.ndarray], seed: int,
                 default_budget: Callable[[Position], Budget],
                 final_choice: FinalChoice = most_visits,
                 memory: int = DEFAULT_MEMORY,
                 describe_move: DescribeMove | None = None,
                 early_stop: bool = False,
                 make_weights: Callable[[int], np.ndarray] | None = None):
        if memory < 1 << 20:
            raise ValueError(f"memory cap must be at least 1 MiB, got {memory} bytes")
        # Checked here, when the agent is built, so a bad option never waits for a search.
        config = tree_config(config)
        if config.eval > 0 and make_weights is None:
            raise ValueError(f"{name}: eval > 0 needs evaluation weights")
        self.name = name
        self.config = config
        self._make_table = make_table
        # pattern-evaluation weights for leaf values and priors (cfg.eval > 0)
        self._make_weights = make_weights
        self._weights = _NO_WEIGHTS
        self.rng = bb.make_rng(seed)
        self._default_budget = default_budget
        self._final = final_choice
        self._describe_move = describe_move
        # Stop before the deadline once the most-visited move cannot be caught (KataGo does the
        # same); only meaningful for agents whose final choice is the most visits.
        self.early_stop = early_stop
        self.max_nodes = max(1024, memory // BYTES_PER_NODE)
        # Zeroed arrays of the full cap cost nothing until touched (the OS maps pages lazily),
        # and growing by copying mid-search could overrun a deadline.
        self._arrays = new_tree(self.max_nodes)
        self.root_position: Position | None = None
        self._reused = 0.0
        self._cfg: TreeConfig | None = None  # ``config`` with the rules of the last search
        self._table: np.ndarray | None = None
        self._cfg_rules: int | None = None
        self._advanced = False  # advance() ran since the last search: keep its reuse figure
        # The endgame solver's table, allocated only for agents that solve leaves.
        self._solver_arrays = (EG.new_table(4), EG.new_control())

    # --- tree management ---------------------------------------------------------------------
    @property
    def nodes(self) -> int:
        return int(self._arrays[3][NEXT_FREE]) if self.root_position is not None else 0

    def reset(self, position: Position | None = None) -> None:
        """Drop the tree (and start a new one at ``position`` if given)."""
        self.root_position = None
        if position is not None:
            bbs, links, stats, meta = self._arrays
            meta[NO_EXPAND] = 0
            P, O = position.bitboards()
            init_root(bbs, links, stats, meta, P, O)
            self.root_position = position

    def advance(self, moves: list[int]) -> float:
        """Follow ``moves`` (both sides', passes included) from the root; keep that subtree.

        Returns the fraction of the tree's nodes kept.  Unknown or illegal continuations clear
        the tree.
        """
        if self.root_position is None:
            return 0.0
        self._advanced = True
        bbs, links, stats, meta = self._arrays
        before = self.nodes
        node = 0
        pos = self.root_position
        for mv in moves:
            if not pos.is_legal(mv):
                log.info("tree_cleared", reason="illegal continuation", move=mv)
                self.reset()
                return 0.0
            pos = pos.play(mv)
            nxt = -1
            if node >= 0 and links[node, NCHILD] > 0:
                f = int(links[node, FIRST])
                for i in range(f, f + int(links[node, NCHILD])):
                    if int(links[i, MOVE]) == mv:
                        nxt = i
                        break
            node = nxt
        if node < 0:
            self.reset(pos)
            self._reused = 0.0
            return 0.0
        self._reroot(node, pos, before)
        return self._reused

    def _reroot(self, node: int, pos: Position, before: int) -> None:
        bbs, links, stats, meta = self._arrays
        if node == 0:
            self._reused = 1.0 if before > 1 else 0.0
            return
        kept = int(count_subtree(links, node))
        cap = int(meta[CAPACITY])
        new = new_tree(cap)
        used = int(copy_subtree(bbs, links, stats, node, new[0], new[1], new[2]))
        new[3][NEXT_FREE] = used
        new[3][ROOT] = 0
        self._arrays = new
        self.root_position = pos
        self._reused = kept / before if before else 0.0

    def _sync_root(self, position: Position) -> None:
        """Make ``position`` the root, reusing the tree when it is the root or a descendant."""
        if self.root_position is not None and position.rules != self.root_position.rules:
            self.reset()
        if self.root_position == position:
            if not self._advanced:  # same root as the last search: the whole tree is kept
                self._reused = 1.0 if self.nodes > 1 else 0.0
            return
        if self.root_position is not None:
            found = self._find_descendant(position, max_depth=4)
            if found is not None:
                self._reroot(found, position, self.nodes)
                return
        self.reset(position)
        self._reused = 0.0

    def _find_descendant(self, position: Position, max_depth: int) -> int | None:
        bbs, links, stats, meta = self._arrays
        P, O = position.bitboards()
        frontier = [0]
        for _ in range(max_depth):
            nxt = []
            for n in frontier:
                c = int(links[n, NCHILD])
                if c <= 0:
                    continue
                f = int(links[n, FIRST])
                for i in range(f, f + c):
                    if bbs[i, 0] == P and bbs[i, 1] == O:
                        return i
                    nxt.append(i)
            frontier = nxt
        return None

    def preferred_moves(self, position: Position) -> list[int]:
        """The root moves by visits, most first, if the tree's root is ``position`` (else
        none).  Safe to call while another thread searches: it only reads."""
        if self.root_position != position:
            return []
        bbs, links, stats, meta = self._arrays
        first, count = int(links[0, FIRST]), int(links[0, NCHILD])
        if count <= 0:
            return []
        rows = sorted(range(first, first + count), key=lambda i: -stats[i, N])
        return [int(links[i, MOVE]) for i in rows if stats[i, N] > 0]

    def _grow(self) -> bool:
        bbs, links, stats, meta = self._arrays
        cap = int(meta[CAPACITY])
        if cap >= self.max_nodes:
            return False
        new_cap = min(self.max_nodes, cap * 2)
        nb, nl, ns, nm = new_tree(new_cap)
        used = int(meta[NEXT_FREE])
        nb[:used] = bbs[:used]
        nl[:used] = links[:used]
        ns[:used] = stats[:used]
        nm[:] = meta
        nm[CAPACITY] = new_cap
        self._arrays = (nb, nl, ns, nm)
        return True

    # --- searching ---------------------------------------------------------------------------
    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5) -> SearchResult:
        t0 = time.monotonic()
        limits = limits or Limits()
        self._sync_root(position)
        self._advanced = False
        if self._cfg is None or self._cfg_rules != int(position.rules):
            self._cfg = self.config._replace(rules=int(position.rules))
            self._table = self._make_table(int(position.rules))
            self._cfg_rules = int(position.rules)
            if self._cfg.eval > 0:
                assert self._make_weights is not None  # __init__ refuses eval without weights
                self._weights = self._make_weights(int(position.rules))
        cfg, table = self._cfg, self._table
        assert table is not None  # made with the config for these rules just above
        if cfg.solve_empties > 0 and self._solver_arrays[0].shape[0] < 1 << 10:
            self._solver_arrays = (EG.new_table(SOLVER_TABLE_BITS), EG.new_control())
        bbs, links, stats, meta = self._arrays
        if links[0, NCHILD] < 0:
            if not expand(bbs, links, stats, meta, 0):
                self._grow()
                bbs, links, stats, meta = self._arrays
                expand(bbs, links, stats, meta, 0)
        if uses_priors(cfg):
            set_priors(bbs, links, stats, 0, cfg, table, self._weights)
        count = int(links[0, NCHILD])
        if count == 0:  # game over: nothing to play
            return self._result(position, 0, 0, t0, "done", False)
        if count == 1:  # a forced move (or pass): answer at once
            return self._result(position, 0, 0, t0, "forced", False)

        deadline = limits.absolute_deadline(t0)
        max_iters, max_playouts = limits.iterations, limits.playouts
        if not limits.has_budget():
            b = self._default_budget(position)
            max_iters, max_playouts = b.iterations, b.playouts
        it_left = max_iters if max_iters is not None else 1 << 62
        po_left = max_playouts if max_playouts is not None else 1 << 62

        iters = playouts = 0
        root_n0 = float(stats[0, N])
        batch = 4
        full = False
        stopped_by = "done"
        last_progress = t0
        gc_was = gc.isenabled()
        gc.disable()  # a collection inside the loop could overrun a tight deadline
        try:
            while True:
                if limits.stopped():
                    stopped_by = "stop"
                    break
                if it_left <= 0:
                    stopped_by = "iterations"
                    break
                if po_left <= 0:
                    stopped_by = "playouts"
                    break
                now = time.monotonic()
                if deadline is not None and now >= deadline and iters > 0:
                    stopped_by = "time"
                    break
                n = min(batch, it_left)
                tb = time.monotonic()
                done_i, done_p, status = self._run_batch(cfg, table, n, it_left, po_left,
                                                         deadline)
                bbs, links, stats, meta = self._arrays
                dt = time.monotonic() - tb
                iters += done_i
                playouts += done_p
                it_left -= done_i
                po_left -= done_p
                if status == STATUS_FULL:
                    if not self._grow():
                        meta[NO_EXPAND] = 1
                        full = True
                        log.warning("tree_full", nodes=self.nodes, cap_nodes=self.max_nodes)
                elif status == STATUS_DONE:
                    solved = bool(links[0, FLAGS] & SOLVED)
                    stopped_by = "solved" if solved else "done"
                    break
                # Size the next batch to ~5 ms, never past the deadline.
                if done_i > 0:
                    per_iter = max(dt / done_i, 1e-7)
                    target = BATCH_SECONDS
                    if deadline is not None:
                        target = min(target, max(0.0, (deadline - time.monotonic()) * 0.5))
                    batch = int(min(max(1, target / per_iter), MAX_BATCH_SECONDS / per_iter,
                                    batch * 4))
                    batch = max(1, batch)
                if (self.early_stop and deadline is not None and iters >= 256
                        and _unassailable(links, stats, stats[0, N] - root_n0, t0, deadline)):
                    stopped_by = "unassailable"
                    break
                if progress is not None and time.monotonic() - last_progress >= progress_interval:
                    last_progress = time.monotonic()
                    progress(self._result(position, iters, playouts, t0, "", full, final=False))
        finally:
            if gc_was:
                gc.enable()
        return self._result(position, iters, playouts, t0, stopped_by, full)

    def _run_batch(self, cfg: TreeConfig, table: np.ndarray, n: int, it_left: int,
                   po_left: int, deadline: float | None) -> tuple[int, int, int]:
        """One batch of about ``n`` iterations (never more than ``it_left`` iterations or
        ``po_left`` playouts): ``(iterations, playouts, status)``.  The strategy hook of the
        loop above; a subclass may replace how a batch is run (``batched.py`` collects leaves
        for an evaluator) and keep the clock, limits, reuse and reporting.  ``deadline`` is the
        search's, for a hook whose steps are too long to size by ``n`` alone."""
        bbs, links, stats, meta = self._arrays
        return run_batch(bbs, links, stats, meta, cfg, table, self.rng, n, po_left,
                           *self._solver_arrays, self._weights)

    def _result(self, position: Position, iters: int, playouts: int, t0: float,
                stopped_by: str, full: bool, final: bool = True) -> SearchResult:
        bbs, links, stats, meta = self._arrays
        first, count = int(links[0, FIRST]), int(links[0, NCHILD])
        moves: list[MoveStat] = []
        best_move = None
        if count > 0:
            best_row = self._final(links, stats, first, count, position)
            if self.config.solver:
                best_row = _solver_choice(links, stats, first, count, best_row)
            for i in range(first, first + count):
                n = stats[i, N]
                m = MoveStat(
                    move=int(links[i, MOVE]), visits=int(n), value=_mean(stats, i),
                    prior=float(stats[i, PRIOR]),
                    margin=float(stats[i, MARGIN] / n) if n > 0 else None)
                if self._describe_move is not None:
                    self._describe_move(links, stats, i, position, m)
                m.bound(int(stats[i, LO]), int(stats[i, HI]))
                moves.append(m)
            best_move = int(links[best_row, MOVE])
            moves.sort(key=lambda m: (m.move != best_move, -m.visits, -m.value))
        root_n = stats[0, N]
        root_value = -float(stats[0, W] / root_n) if root_n > 0 else (
            moves[0].value if moves else 0.0)
        # the root's bounds are stored from the view of the player who moved into it
        lower, upper = -int(stats[0, HI]), -int(stats[0, LO])
        return SearchResult(
            best_move=best_move, moves=moves, pv=self._pv(best_move), root_value=root_value,
            iterations=iters, playouts=playouts, elapsed=time.monotonic() - t0,
            reused_fraction=self._reused, tree_nodes=self.nodes, tree_full=full,
            stopped_by=stopped_by, agent=self.name, final=final, lower=lower, upper=upper)

    def _pv(self, best_move: int | None, max_len: int = 30) -> list[int]:
        if best_move is None:
            return []
        bbs, links, stats, meta = self._arrays
        pv = [best_move]
        f, c = int(links[0, FIRST]), int(links[0, NCHILD])
        node = next(i for i in range(f, f + c) if int(links[i, MOVE]) == best_move)
        while len(pv) < max_len:
            c = int(links[node, NCHILD])
            if c <= 0:
                break
            f = int(links[node, FIRST])
            nxt = max(range(f, f + c), key=lambda i: stats[i, N])
            if stats[nxt, N] <= 0:
                break
            pv.append(int(links[nxt, MOVE]))
            node = nxt
        return pv


__all__ = ["TreeSearch", "Budget", "most_visits", "best_mean"]
