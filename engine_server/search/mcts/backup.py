"""Back-up and proven bounds: adding a result along the path to the root, and score-bounded
MCTS (Cazenave and Saffidine 2010): the proven bounds of a node's margin, their back-up to the
ancestors, and the tests selection uses to skip children that proofs have decided."""

from __future__ import annotations

from numba import njit

from engine_server.game.memory import NO_REFCOUNT

from .nodes import (
    FIRST,
    FLAGS,
    HI,
    LO,
    MARGIN,
    MAX_MARGIN,
    MOB,
    NCHILD,
    PARENT,
    PROVEN_CHILD,
    SOLVED,
    TERMINAL,
    W2,
    N,
    W,
)


@njit(cache=True, inline="always")
def add_result(stats, i, z, margin):
    stats[i, N] += 1.0
    stats[i, W] += z
    stats[i, W2] += z * z
    stats[i, MARGIN] += margin


@njit(cache=True, **NO_REFCOUNT)
def backup(links, stats, node, z, margin, mobility, root):
    """Add one result along the path ``node .. root``; ``z`` is for the mover into ``node``."""
    i = node
    parity = 0
    while True:
        add_result(stats, i, z, margin)
        if parity == 0:
            # the MCTS blog post: mobility of the simulated node goes to the nodes with its side to
            # move
            stats[i, MOB] += mobility
        if i == root:
            break
        i = links[i, PARENT]
        z = -z
        margin = -margin
        parity ^= 1


@njit(cache=True, inline="always")
def mean(stats, i):
    n = stats[i, N]
    return stats[i, W] / n if n > 0 else 0.0


@njit(cache=True, inline="always")
def proven_z(stats, i):
    """The proven outcome of a decided node as a reward for the mover into it."""
    return 1.0 if stats[i, LO] > 0.0 else (-1.0 if stats[i, HI] < 0.0 else 0.0)


@njit(cache=True, inline="always")
def proven_margin(stats, i):
    """The margin to back up from a decided node: exact, or the bound nearest to zero."""
    lo = stats[i, LO]
    hi = stats[i, HI]
    if lo > 0.0:
        return lo
    if hi < 0.0:
        return hi
    return 0.0


@njit(cache=True, **NO_REFCOUNT)
def set_bounds(links, stats, node, lo, hi):
    """Intersect ``node``'s bounds with a new proven pair (mover-into view).  True if tighter."""
    lo = max(lo, stats[node, LO])
    hi = min(hi, stats[node, HI])
    if lo == stats[node, LO] and hi == stats[node, HI]:
        return False
    if lo > hi:  # both sides are proofs, so this cannot happen; keep the new lower bound
        lo = hi = min(max(lo, -MAX_MARGIN), MAX_MARGIN)
    stats[node, LO] = lo
    stats[node, HI] = hi
    if lo == hi:
        links[node, FLAGS] |= SOLVED
    p = links[node, PARENT]
    if p >= 0:
        links[p, FLAGS] |= PROVEN_CHILD
    return True


@njit(cache=True, **NO_REFCOUNT)
def prove_up(links, stats, node, root):
    """Score-bounded back-up: after ``node``'s bounds changed, tighten its ancestors.

    A parent's side to move takes the best child, so from the view of the mover into the parent
    ``LO = -max(children's HI)`` and ``HI = -max(children's LO)`` (unexpanded or unproven
    children count as [-64, 64]).  Stops at the first ancestor that does not change."""
    i = node
    while i != root:
        p = links[i, PARENT]
        first = links[p, FIRST]
        max_lo = -MAX_MARGIN - 1.0
        max_hi = -MAX_MARGIN - 1.0
        for c in range(first, first + links[p, NCHILD]):
            if stats[c, LO] > max_lo:
                max_lo = stats[c, LO]
            if stats[c, HI] > max_hi:
                max_hi = stats[c, HI]
        if not set_bounds(links, stats, p, -max_hi, -max_lo):
            return
        i = p


@njit(cache=True, **NO_REFCOUNT)
def settled(links, stats, node):
    """A solved, expanded node one of whose children is proven to reach its value (a root
    solved before its children were known is not settled: there is no move to play yet)."""
    if not links[node, FLAGS] & SOLVED:
        return False
    if links[node, FLAGS] & TERMINAL:
        return True
    count = links[node, NCHILD]
    if count <= 0:
        return False
    first = links[node, FIRST]
    return best_child_lo(stats, first, count) >= -stats[node, LO]


@njit(cache=True, inline="always")
def best_child_lo(stats, first, count):
    b = -MAX_MARGIN
    for i in range(first, first + count):
        if stats[i, LO] > b:
            b = stats[i, LO]
    return b


@njit(cache=True, inline="always")
def pruned(stats, i, best_lo, any_open):
    """A child not worth visiting: it cannot beat a sibling's proven margin (its upper bound is
    no higher), or it is a proven loss while a sibling may still draw or win."""
    hi = stats[i, HI]
    if hi <= best_lo and stats[i, LO] < hi:
        return True
    return hi < 0.0 and any_open


@njit(cache=True, inline="always")
def any_child_open(stats, first, count):
    """Some child is not a proven loss for the side choosing."""
    for i in range(first, first + count):
        if stats[i, HI] >= 0.0:
            return True
    return False
