"""The tree's node storage: the columns and flags of the three node arrays (their layout is
described in the package's docstring), the status codes the kernels return, and the kernels that
create, expand, count and copy nodes."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine_server.game.bitboard import PASS, U0, U1, flips, legal_moves, popcount
from engine_server.game.memory import NO_REFCOUNT

# links columns
PARENT, FIRST, NCHILD, MOVE, FLAGS = 0, 1, 2, 3, 4
N_LINKS = 5
# stats columns
N, W, W2, MARGIN, PRIOR, MOB, LO, HI = 0, 1, 2, 3, 4, 5, 6, 7
N_STATS = 8
MAX_MARGIN = 64.0
# flags
TERMINAL = 1
COMPLETE = 2  # min-max: this root child's principal line is finished
SOLVED = 4    # the bounds LO and HI have met: the exact margin is known
NOSOLVE = 8   # the endgame solver ran out of nodes here once: do not try again
PROVEN_CHILD = 16  # some child has proven bounds (selection only then checks them)
# meta
NEXT_FREE, CAPACITY, ROOT, NO_EXPAND = 0, 1, 2, 3

BYTES_PER_NODE = 16 + 4 * N_LINKS + 8 * N_STATS

STATUS_OK = 0
STATUS_FULL = 1    # no room to expand: Python grows the arrays or sets NO_EXPAND
STATUS_DONE = 2    # the policy has nothing left to do (e.g. min-max lines complete, solved root)


def new_tree(capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    bbs = np.zeros((capacity, 2), dtype=np.uint64)
    links = np.zeros((capacity, N_LINKS), dtype=np.int32)
    stats = np.zeros((capacity, N_STATS), dtype=np.float64)
    meta = np.array([0, capacity, 0, 0], dtype=np.int64)
    return bbs, links, stats, meta


@njit(cache=True, **NO_REFCOUNT)
def init_root(bbs, links, stats, meta, P, O):
    bbs[0, 0] = P
    bbs[0, 1] = O
    links[0, PARENT] = -1
    links[0, FIRST] = -1
    links[0, NCHILD] = -1
    links[0, MOVE] = -1
    links[0, FLAGS] = 0
    for k in range(N_STATS):
        stats[0, k] = 0.0
    stats[0, LO] = -MAX_MARGIN
    stats[0, HI] = MAX_MARGIN
    meta[NEXT_FREE] = 1
    meta[ROOT] = 0


@njit(cache=True, **NO_REFCOUNT)
def expand(bbs, links, stats, meta, node):
    """Create all children of ``node`` (a pass is an explicit child).  False when out of room."""
    P = bbs[node, 0]
    O = bbs[node, 1]
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            links[node, FLAGS] |= TERMINAL
            links[node, NCHILD] = 0
            links[node, FIRST] = -1
            return True
        count = 1
    else:
        count = popcount(moves)
    start = meta[NEXT_FREE]
    if start + count > meta[CAPACITY]:
        return False
    meta[NEXT_FREE] = start + count
    links[node, FIRST] = start
    links[node, NCHILD] = count
    prior = 1.0 / count
    i = start
    if moves == U0:
        bbs[i, 0] = O
        bbs[i, 1] = P
        _init_child(links, stats, i, node, PASS, prior)
        return True
    mm = moves
    while mm:
        m = mm & (~mm + U1)
        mm ^= m
        f = flips(P, O, m)
        bbs[i, 0] = O ^ f
        bbs[i, 1] = P ^ f ^ m
        _init_child(links, stats, i, node, popcount(m - U1), prior)
        i += 1
    return True


@njit(cache=True, inline="always")
def _init_child(links, stats, i, parent, move, prior):
    links[i, PARENT] = parent
    links[i, FIRST] = -1
    links[i, NCHILD] = -1
    links[i, MOVE] = move
    links[i, FLAGS] = 0
    stats[i, N] = 0.0
    stats[i, W] = 0.0
    stats[i, W2] = 0.0
    stats[i, MARGIN] = 0.0
    stats[i, PRIOR] = prior
    stats[i, MOB] = 0.0
    stats[i, LO] = -MAX_MARGIN
    stats[i, HI] = MAX_MARGIN


@njit(cache=True, **NO_REFCOUNT)
def is_terminal(bbs, node):
    P = bbs[node, 0]
    O = bbs[node, 1]
    return legal_moves(P, O) == U0 and legal_moves(O, P) == U0


@njit(cache=True)
def count_subtree(links, node):
    """Number of nodes in the subtree of ``node`` (explicit stack, no recursion)."""
    stack = np.empty(64 * 64, dtype=np.int64)
    total = 0
    top = 0
    stack[0] = node
    top = 1
    while top > 0:
        top -= 1
        i = stack[top]
        total += 1
        n = links[i, NCHILD]
        if n > 0:
            f = links[i, FIRST]
            if top + n > stack.shape[0]:
                bigger = np.empty(stack.shape[0] * 2 + n, dtype=np.int64)
                bigger[:top] = stack[:top]
                stack = bigger
            for c in range(f, f + n):
                stack[top] = c
                top += 1
    return total


@njit(cache=True)
def copy_subtree(src_bbs, src_links, src_stats, node, dst_bbs, dst_links, dst_stats):
    """Copy the subtree of ``node`` into empty arrays with ``node`` as row 0 (breadth first,
    so children stay contiguous).  Returns the number of rows used."""
    # queue of (source row, destination row); children get their rows when the parent is copied
    queue = np.empty(dst_bbs.shape[0], dtype=np.int64)
    dst_of = np.empty(dst_bbs.shape[0], dtype=np.int64)
    queue[0] = node
    dst_of[0] = 0
    head = 0
    tail = 1
    next_free = 1
    while head < tail:
        s = queue[head]
        d = dst_of[head]
        head += 1
        dst_bbs[d, 0] = src_bbs[s, 0]
        dst_bbs[d, 1] = src_bbs[s, 1]
        for k in range(src_stats.shape[1]):
            dst_stats[d, k] = src_stats[s, k]
        dst_links[d, MOVE] = src_links[s, MOVE]
        dst_links[d, FLAGS] = src_links[s, FLAGS]
        n = src_links[s, NCHILD]
        dst_links[d, NCHILD] = n
        if n > 0:
            f = src_links[s, FIRST]
            dst_links[d, FIRST] = next_free
            for c in range(n):
                queue[tail] = f + c
                dst_of[tail] = next_free + c
                tail += 1
            for c in range(n):
                dst_links[next_free + c, PARENT] = d
            next_free += n
        else:
            dst_links[d, FIRST] = -1
    dst_links[0, PARENT] = -1
    dst_links[0, MOVE] = -1
    return next_free
