"""Batched PUCT with virtual loss: the tree asks an evaluator for many leaves at once.

A network costs nearly as much for one position as for eight, so one step of this search
collects up to ``k`` leaves, evaluates them in a single call and backs them all up:

1. :func:`collect_leaves` descends from the root ``k`` times by PUCT,
   ``Q + c * P * sqrt(N) / (1 + n)`` (Alphello Zero's rule, with the tree's proven-bound pruning).
   Each descent adds a virtual loss along its path, so the next one prefers other branches.
   It stops at

   * an unexpanded node: the node is expanded (its children's priors wait for the evaluator),
     marked ``PENDING`` and returned as a leaf with its side to move's colour (the root's
     colour flipped once per edge; passes are edges too);
   * a node already ``PENDING`` in this batch (a collision): its virtual loss is taken back and
     nothing is counted;
   * a terminal, solved or exactly solvable node (``cfg.solve_empties``, the tree's leaf
     solver as in ``run_batch``): the exact result is backed up at once, no evaluation.

2. Python encodes the leaves and calls the evaluator once (``BatchedTreeSearch._step``).
3. :func:`apply_leaves` sets the leaves' children's priors, takes the virtual loss back and
   backs up each value.

The virtual loss lives in the MOB column (``INFLIGHT``: descents in flight through the node),
which PUCT does not use otherwise: ``N`` and ``W`` stay the true counts at all times, so a
progress report between steps, tree reuse and the first-play value never see it.  A node
carries ``vloss * inflight`` extra lost visits while selection compares its children.

First-play value: a child without visits (real or virtual) takes its parent's mean value for
the side choosing (0 at a parent without visits), Leela's first-play urgency without its
reduction; the seed's own kernel (``tree.select_child``) uses 0, which makes an unvisited move
look like a draw and over-explores in won positions and under-explores in lost ones.

The driver's loop (clock, stop flag, limits, progress, tree reuse, growth) is unchanged;
:class:`BatchedTreeSearch` only replaces its batch step.  One iteration is one root visit:
a network evaluation, or an exact result from a terminal or proven node.  ``playouts`` counts
network evaluations.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np
from numba import njit

from engine_server.eval.evaluator import Evaluator
from engine_server.game import Color, Position
from engine_server.game.bitboard import popcount
from engine_server.log import get_logger

from ..limits import Limits, ProgressCallback, SearchResult
from .backup import (
    any_child_open,
    backup,
    best_child_lo,
    prove_up,
    proven_margin,
    proven_z,
    pruned,
    set_bounds,
    settled,
)
from .batch import solvable, solve_leaf
from .driver import DEFAULT_MEMORY, Budget, FinalChoice, TreeSearch, most_visits
from .leaf import reward
from .nodes import (
    FIRST,
    FLAGS,
    LO,
    MAX_MARGIN,
    MOB,
    MOVE,
    NCHILD,
    NO_EXPAND,
    PARENT,
    PRIOR,
    PROVEN_CHILD,
    ROOT,
    SOLVED,
    STATUS_DONE,
    STATUS_FULL,
    STATUS_OK,
    TERMINAL,
    N,
    W,
    expand,
    is_terminal,
)
from .options import TreeConfig, tree_config

log = get_logger("search")

INFLIGHT = MOB      # descents in flight through the node (see the module docstring)
PENDING = 32          # links flag: collected in this batch, waiting for its evaluation
NET_PRIORS = 64       # links flag: the children's priors came from the evaluator
MAX_ATTEMPTS = 2      # descents per wanted leaf before a batch is sent short (collisions)


@njit(cache=True, inline="always")
def _enter(stats, node):
    stats[node, INFLIGHT] += 1.0


@njit(cache=True)
def _leave_path(links, stats, node, root):
    """Take back one descent's virtual loss on ``node .. root``."""
    i = node
    while True:
        stats[i, INFLIGHT] -= 1.0
        if i == root:
            return
        i = links[i, PARENT]


@njit(cache=True)
def select_puct(links, stats, node, cfg, vloss):
    """The child PUCT visits next, counting in-flight descents as lost visits."""
    first = links[node, FIRST]
    count = links[node, NCHILD]
    if count == 1:
        return first
    solver = cfg.solver and (links[node, FLAGS] & PROVEN_CHILD) != 0
    best_lo = best_child_lo(stats, first, count) if solver else -MAX_MARGIN
    any_open = any_child_open(stats, first, count) if solver else False
    parent_n = stats[node, N]
    fpu = -stats[node, W] / parent_n if parent_n > 0 else 0.0
    sqrt_n = math.sqrt(max(1.0, parent_n + vloss * stats[node, INFLIGHT]))
    c = cfg.explore
    best = first
    best_v = -1e300
    for i in range(first, first + count):
        if solver and pruned(stats, i, best_lo, any_open):
            continue
        virtual = vloss * stats[i, INFLIGHT]
        n = stats[i, N] + virtual
        q = (stats[i, W] - virtual) / n if n > 0 else fpu
        v = q + c * stats[i, PRIOR] * sqrt_n / (1.0 + n)
        if v > best_v:
            best_v = v
            best = i
    return best


@njit(cache=True, nogil=True)
def collect_leaves(bbs, links, stats, meta, cfg, k, vloss, root_black, leaves, leaf_black,
                   tt, ctl):
    """Up to ``k`` descents from the root (see the module docstring).

    Fills ``leaves[:n]`` (rows) and ``leaf_black[:n]`` (Black to move there).  Returns
    ``(n, exact, status)``: ``exact`` descents ended in a result backed up at once."""
    root = meta[ROOT]
    solver = cfg.solver
    solve_k = cfg.solve_empties if solver else 0
    n_leaves = 0
    exact = 0
    attempts = 0
    while n_leaves + exact < k and attempts < MAX_ATTEMPTS * k:
        attempts += 1
        if solver and links[root, FLAGS] & SOLVED and settled(links, stats, root):
            return n_leaves, exact, STATUS_DONE
        node = root
        depth = 0
        _enter(stats, node)
        while True:
            fl = links[node, FLAGS]
            if fl & (PENDING | TERMINAL):
                break
            if fl & SOLVED and node != root:
                break
            if links[node, NCHILD] < 0 or not fl & NET_PRIORS:
                break  # a leaf (or the root as the driver expanded it, before its priors)
            node = select_puct(links, stats, node, cfg, vloss)
            depth += 1
            _enter(stats, node)
        fl = links[node, FLAGS]
        if fl & PENDING:
            _leave_path(links, stats, node, root)
            continue
        if solve_k > 0 and solvable(bbs, links, node, solve_k) \
                and not is_terminal(bbs, node):
            if solve_leaf(bbs, links, stats, node, cfg.rules, cfg.solve_nodes, tt, ctl):
                _leave_path(links, stats, node, root)
                backup(links, stats, node, proven_z(stats, node),
                         proven_margin(stats, node), 0.0, root)
                prove_up(links, stats, node, root)
                exact += 1
                continue
        fl = links[node, FLAGS]
        if solver and fl & SOLVED and node != root:
            _leave_path(links, stats, node, root)
            backup(links, stats, node, proven_z(stats, node), stats[node, LO], 0.0, root)
            exact += 1
            continue
        if fl & TERMINAL or (links[node, NCHILD] < 0 and is_terminal(bbs, node)):
            _leave_path(links, stats, node, root)
            z, margin = reward(popcount(bbs[node, 0]), popcount(bbs[node, 1]), cfg)
            backup(links, stats, node, -z, -margin, 0.0, root)
            if solver:
                set_bounds(links, stats, node, -margin, -margin)
                prove_up(links, stats, node, root)
            exact += 1
            continue
        if links[node, NCHILD] < 0 and meta[NO_EXPAND] == 0:
            if not expand(bbs, links, stats, meta, node):
                _leave_path(links, stats, node, root)
                return n_leaves, exact, STATUS_FULL
        links[node, FLAGS] |= PENDING
        leaves[n_leaves] = node
        leaf_black[n_leaves] = root_black != ((depth & 1) == 1)
        n_leaves += 1
    return n_leaves, exact, STATUS_OK


@njit(cache=True, nogil=True)
def apply_leaves(links, stats, meta, leaves, n, priors, values):
    """Give the leaves ``leaves[:n]`` their children's priors (``priors[j, move]``) and back up
    their values (``values[j]`` for the side to move there), ending their descents."""
    root = meta[ROOT]
    for j in range(n):
        node = leaves[j]
        links[node, FLAGS] &= ~PENDING
        count = links[node, NCHILD]
        if count > 0:
            first = links[node, FIRST]
            for c in range(first, first + count):
                stats[c, PRIOR] = priors[j, links[c, MOVE]]
            links[node, FLAGS] |= NET_PRIORS
        _leave_path(links, stats, node, root)
        # no margin estimate from an evaluator: the results show margins of proven moves only
        backup(links, stats, node, -float(values[j]), 0.0, 0.0, root)


@njit(cache=True, nogil=True)
def abandon_leaves(links, stats, meta, leaves, n):
    """End the descents to ``leaves[:n]`` without a value (the evaluator failed): the tree is
    as if they had not been made, except that an expanded leaf will be evaluated next time."""
    root = meta[ROOT]
    for j in range(n):
        links[leaves[j], FLAGS] &= ~PENDING
        _leave_path(links, stats, leaves[j], root)


class BatchedTreeSearch(TreeSearch):
    """A :class:`TreeSearch` whose batch step collects leaves for an :class:`Evaluator`.

    ``make_evaluator(rules)`` gives the evaluator for a position's rules, or None: then the
    search runs as a plain ``TreeSearch`` with ``fallback`` (the agent's configuration without
    an evaluator) for positions of those rules.  ``noise`` mixes Dirichlet(``noise_alpha``)
    noise into the root's priors for self-play; the clean priors are kept, so searching the
    same root again draws fresh noise instead of adding to the old.
    """

    def __init__(self, name: str, config: TreeConfig,
                 make_evaluator: Callable[[int], Evaluator | None],
                 fallback: TreeConfig, make_table: Callable[[int], np.ndarray], seed: int,
                 default_budget: Callable[[Position], Budget],
                 final_choice: FinalChoice = most_visits, memory: int = DEFAULT_MEMORY,
                 batch: int = 8, vloss: float = 1.0, noise: float = 0.0,
                 noise_alpha: float = 0.5,
                 make_weights: Callable[[int], np.ndarray] | None = None):
        super().__init__(name, config, make_table, seed, default_budget, final_choice, memory,
                         make_weights=make_weights)
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        if not 0.0 <= noise <= 1.0 or noise_alpha <= 0.0:
            raise ValueError(f"noise {noise} must be in [0, 1] and noise_alpha {noise_alpha} "
                             f"positive")
        self._net_config = self.config
        self._fallback = tree_config(fallback)
        self._make_evaluator = make_evaluator
        self._evaluators: dict[int, Evaluator | None] = {}
        self.evaluator: Evaluator | None = None
        self.batch = int(batch)
        self.vloss = float(vloss)
        self.noise = float(noise)
        self.noise_alpha = float(noise_alpha)
        self._noise_rng = np.random.default_rng(seed)
        self._noised = False
        self._clean_root: tuple[int, int, np.ndarray] | None = None
        self._leaf_seconds = 1e-4  # one leaf's share of a step, measured as the search goes
        self._leaves = np.zeros(self.batch, np.int64)
        self._leaf_black = np.zeros(self.batch, np.bool_)
        # where the time of the last search went (othello-bench net)
        self.eval_seconds = 0.0
        self.eval_calls = 0
        self.eval_positions = 0

    def evaluator_for(self, rules: int) -> Evaluator | None:
        r = int(rules)
        if r not in self._evaluators:
            self._evaluators[r] = self._make_evaluator(r)
        return self._evaluators[r]

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5) -> SearchResult:
        ev = self.evaluator_for(int(position.rules))
        config = self._net_config if ev is not None else self._fallback
        if config is not self.config:
            # A tree grown by the other mode has priors and counts of another meaning; a
            # change of mode is a change of rules, which drops the tree anyway.
            self.config = config
            self._cfg = None
            self.reset()
        self.evaluator = ev
        self._noised = False
        self.eval_seconds = 0.0
        self.eval_calls = 0
        self.eval_positions = 0
        return super().search(position, limits, progress, progress_interval)

    # --- the batch step ------------------------------------------------------------------------
    def _run_batch(self, cfg: TreeConfig, table: np.ndarray, n: int, it_left: int,
                   po_left: int, deadline: float | None) -> tuple[int, int, int]:
        if self.evaluator is None:
            return super()._run_batch(cfg, table, n, it_left, po_left, deadline)
        if not self._noised:
            self._noised = self._root_noise()
        done_i = done_p = 0
        status = STATUS_OK
        # Full batches (the driver's ``n`` only says how many steps fit its time slice), but
        # no step may run past the deadline: a batch of 32 leaves of a large network is tens
        # of milliseconds.
        while status == STATUS_OK and done_i < n:
            want = min(self.batch, it_left - done_i, po_left - done_p)
            if deadline is not None:
                # half the time left, as the driver sizes its slices: step times vary
                fit = int(0.5 * (deadline - time.monotonic()) / self._leaf_seconds)
                want = min(want, max(1, fit))
            if want <= 0:
                break
            t0 = time.monotonic()
            leaves, exact, status = self._step(cfg, want)
            if leaves > 0:
                self._leaf_seconds = 0.5 * self._leaf_seconds \
                    + 0.5 * (time.monotonic() - t0) / leaves
            done_i += leaves + exact
            done_p += leaves
            if not self._noised:  # the root got its priors in this step
                self._noised = self._root_noise()
            if leaves + exact == 0:
                break
        return done_i, done_p, status

    def _step(self, cfg: TreeConfig, k: int) -> tuple[int, int, int]:
        bbs, links, stats, meta = self._arrays
        assert self.root_position is not None and self.evaluator is not None
        root_black = self.root_position.side == Color.BLACK
        n, exact, status = collect_leaves(bbs, links, stats, meta, cfg, k, self.vloss,
                                          root_black, self._leaves, self._leaf_black,
                                          *self._solver_arrays)
        if n > 0:
            rows = self._leaves[:n]
            t0 = time.perf_counter()
            try:
                priors, values = self.evaluator.evaluate(bbs[rows, 0], bbs[rows, 1],
                                                         self._leaf_black[:n])
            except BaseException:
                # the tree outlives this search (reuse): leave no virtual loss in it
                abandon_leaves(links, stats, meta, self._leaves, n)
                raise
            self.eval_seconds += time.perf_counter() - t0
            self.eval_calls += 1
            self.eval_positions += n
            apply_leaves(links, stats, meta, self._leaves, n,
                         np.ascontiguousarray(priors, dtype=np.float32),
                         np.ascontiguousarray(values, dtype=np.float32))
        return int(n), int(exact), int(status)

    def _root_noise(self) -> bool:
        """Dirichlet noise on the root's priors once they are the evaluator's; False while
        they are not yet (the first step evaluates the root)."""
        bbs, links, stats, meta = self._arrays
        if self.noise <= 0.0:
            return True
        if not links[0, FLAGS] & NET_PRIORS:
            return False
        first, count = int(links[0, FIRST]), int(links[0, NCHILD])
        key = (int(bbs[0, 0]), int(bbs[0, 1]))
        rows = slice(first, first + count)
        clean = self._clean_root
        if clean is not None and (clean[0], clean[1]) == key and clean[2].shape[0] == count:
            stats[rows, PRIOR] = clean[2]
        self._clean_root = (key[0], key[1], stats[rows, PRIOR].copy())
        eta = self._noise_rng.dirichlet(np.full(count, self.noise_alpha))
        stats[rows, PRIOR] = (1.0 - self.noise) * stats[rows, PRIOR] + self.noise * eta
        return True

    def _result(self, position: Position, iters: int, playouts: int, t0: float,
                stopped_by: str, full: bool, final: bool = True) -> SearchResult:
        r = super()._result(position, iters, playouts, t0, stopped_by, full, final)
        if self.evaluator is not None:
            # leaves give values, not disc margins: only proven moves have one
            for m in r.moves:
                if not m.exact:
                    m.margin = None
        return r


__all__ = ["BatchedTreeSearch", "INFLIGHT", "NET_PRIORS", "PENDING", "abandon_leaves",
           "apply_leaves", "collect_leaves", "select_puct"]
