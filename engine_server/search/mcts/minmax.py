"""The UCB1 paper's min-max search (Alg. 3.3) as an iteration on the tree: each root child's line is
grown k layers deep, every node of a layer sampled n times before the mover's best is expanded."""

from __future__ import annotations

from numba import njit

from engine_server.game.memory import NO_REFCOUNT

from .backup import add_result, mean
from .leaf import simulate
from .nodes import (
    COMPLETE,
    FIRST,
    FLAGS,
    NCHILD,
    PARENT,
    ROOT,
    STATUS_DONE,
    STATUS_FULL,
    STATUS_OK,
    TERMINAL,
    N,
    expand,
)


@njit(cache=True, **NO_REFCOUNT)
def _minmax_pick_root_child(links, stats, root):
    first = links[root, FIRST]
    best = -1
    for i in range(first, first + links[root, NCHILD]):
        if links[i, FLAGS] & COMPLETE:
            continue
        if best < 0 or stats[i, N] < stats[best, N]:
            best = i
    return best


@njit(cache=True, **NO_REFCOUNT)
def _minmax_backup(links, stats, target, top, root, z, margin):
    """Alg. 3.3 compares each layer's nodes by their own n playouts, so a playout counts only at
    its start node; the root child and the root just count the work (for scheduling and the
    reported visits)."""
    i = target
    while True:
        if i == target or i == top or i == root:
            add_result(stats, i, z, margin)
        if i == root:
            break
        i = links[i, PARENT]
        z = -z
        margin = -margin


@njit(cache=True, **NO_REFCOUNT)
def minmax_iteration(bbs, links, stats, meta, cfg, table, rng, W):
    """One step of the UCB1 paper Alg. 3.3 on the tree.  Returns (playouts, status)."""
    root = meta[ROOT]
    top = _minmax_pick_root_child(links, stats, root)
    if top < 0:
        return 0, STATUS_DONE
    k = cfg.depth
    per_node = cfg.per_node
    node = top
    depth = 1
    while True:
        if links[node, NCHILD] < 0:
            if not expand(bbs, links, stats, meta, node):
                return 0, STATUS_FULL
        if links[node, FLAGS] & TERMINAL or depth >= k:
            links[top, FLAGS] |= COMPLETE
            return 0, STATUS_OK
        first = links[node, FIRST]
        count = links[node, NCHILD]
        target = -1
        for i in range(first, first + count):
            if stats[i, N] < per_node:
                target = i
                break
        if target >= 0:
            z, margin = simulate(bbs, target, cfg, table, rng, W)
            _minmax_backup(links, stats, target, top, root, z, margin)
            return 1, STATUS_OK
        # every child sampled n times: the mover expands its best child (max for us, min for
        # the opponent, which is the max of the opponent's own view stored in W)
        best = first
        for i in range(first + 1, first + count):
            if mean(stats, i) > mean(stats, best):
                best = i
        node = best
        depth += 1
