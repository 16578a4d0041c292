"""The exact solver's null-window nodes from SHALLOW + 1 to SIMPLE empties, with small tables
of their own instead of the transposition table (as Egaroucid's ``nega_alpha_end_simple_nws``).

Table nodes of 7 to 11 empties were a small share of a solve's nodes and a large share of its
time, much of it in probes of the big table that miss the cache and in the sort keys.
Here each thread keeps, for each number of empties from SHALLOW + 1 (6) to SIMPLE (11), a
table of ``LOCAL_SIZE`` entries in its control array (144 KiB in all, which stays in the
core's cache); the nodes of 6 empties, sorted here instead of in parity order, cost more each
but are fewer (FFO #40-#44: fewer nodes than with ``SHALLOW = 6``, and a little faster).  A
node looks its children up there while it keys them: a child already known to fail high ends
the node at once, and one known to fail low is not searched again.  A child that leaves the
opponent one reply or none is searched at once (it is likely the refutation); the others are
sorted by the opponent's replies (corners counted twice), odd quadrants first among equals.
The child's replies, found for its key, are handed to it, so that it does not generate them
again.  Only null windows come here; a node on the principal variation keeps the big table
(``_deep``).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

from engine_server.game.bitboard import (
    S1,
    S8,
    U0,
    U1,
    U,
    disc_score,
    flips,
    legal_moves,
    lowest_square,
    neighbours,
    popcount,
)
from engine_server.game.memory import NO_REFCOUNT

from .last import odd_quadrants
from .shallow import SHALLOW, shallow, stable_upper
from .table import (
    FLIPS,
    INF,
    KEYS,
    LOCAL,
    LOCAL_BITS,
    LOCAL_LEVELS,
    LOCAL_SIZE,
    LOCAL_WORDS,
    NODES,
    REPLIES,
    SCRATCH,
    SLOT,
    pick,
)

SIMPLE = 11   # null-window nodes with at most this many empties come here
# one small table for each number of empties of this layer
assert LOCAL_LEVELS == SIMPLE - SHALLOW

_CORNERS = U(0x8100000000000081)
_C_LO = U(0x0100000000000001)      # a1, a8: their right neighbours
_C_HI = U(0x8000000000000080)      # h1, h8: their left neighbours
_C_TOP = U(0x0000000000000081)     # a1, h1: the squares below
_C_BOTTOM = U(0x8100000000000000)  # a8, h8: the squares above

_K1 = U(0x9DDA1C54CFE6B6E9)
_K2 = U(0xA2E6C0300831E05A)
_LOCAL_SHIFT = U(64 - LOCAL_BITS)


@njit(cache=True, inline="always")
def _corner_stability(X):
    # own corners and the edge squares next to them cannot be flipped
    s = (((_C_LO & X) << S1) | ((_C_HI & X) >> S1) | ((_C_TOP & X) << S8)
         | ((_C_BOTTOM & X) >> S8) | _CORNERS) & X
    return popcount(s)


@njit(cache=True, inline="always")
def child_key(nP, nO, m, odd, replies):
    # the sort key of the move m to (nP, nO), whose side to move has the moves ``replies``:
    # fewest replies (corners counted twice), then corner stability, potential mobility, parity
    key = (popcount(replies) + popcount(replies & _CORNERS)) << 12
    key += popcount(neighbours(nO) & ~(nP | nO)) << 4
    key -= _corner_stability(nO) << 8
    if m & odd:
        key -= 8
    return key


@njit(cache=True, inline="always")
def _local(P, O, n):
    """Where the entry of (P, O), a node with ``n`` empties, lives in the control array."""
    h = (P * _K1 + O * _K2) >> _LOCAL_SHIFT
    return LOCAL + ((n - SHALLOW - 1) * LOCAL_SIZE + np.int64(h)) * LOCAL_WORDS


@njit(cache=True, inline="always")
def _local_store(ctl, e, P, O, rules, lower, upper):
    ctl[e] = np.int64(P)
    ctl[e + 1] = np.int64(O)
    ctl[e + 2] = (lower + 64) | ((upper + 64) << 8) | ((rules + 1) << 16)


@njit(cache=True, inline="always")
def _child(nP, nO, alpha, child_n, rules, ctl, replies):
    # a move's value (its parent's view) against the null window (alpha, alpha + 1)
    if child_n > SHALLOW:
        v = -simple(nP, nO, -alpha - 1, child_n, rules, ctl, replies)
        # the child's own bounds: it failed low (v > alpha) or high
        if v > alpha:
            _local_store(ctl, _local(nP, nO, child_n), nP, nO, rules, -64, -v)
        else:
            _local_store(ctl, _local(nP, nO, child_n), nP, nO, rules, -v, 64)
        return v
    # child_n == SHALLOW: the replies, found for the move's key, are handed on here too
    return -shallow(nP, nO, -alpha - 1, -alpha, child_n, rules, ctl, replies)


_SIG_SIMPLE = types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64,
                          types.int64[::1], types.uint64)


@njit(_SIG_SIMPLE, cache=True, **NO_REFCOUNT)
def simple(P, O, alpha, n, rules, ctl, moves):
    """Fail-soft value of (P, O) against the null window (alpha, alpha + 1); ``moves`` are the
    legal moves of P, ``n`` (SHALLOW < n <= SIMPLE) the empties."""
    ctl[NODES] += 1
    upper = stable_upper(P, O, alpha, rules)
    if upper <= alpha:
        return upper
    if moves == U0:
        replies = legal_moves(O, P)
        if replies == U0:
            return disc_score(popcount(P), popcount(O), rules)
        return -simple(O, P, -alpha - 1, n, rules, ctl, replies)
    child_n = n - 1
    odd = odd_quadrants(~(P | O))
    base = SCRATCH + n * SLOT
    best = -INF
    count = 0
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
        if child_n > SHALLOW:
            e = _local(nP, nO, child_n)
            d = ctl[e + 2]
            if ctl[e] == np.int64(nP) and ctl[e + 1] == np.int64(nO) and (d >> 16) == rules + 1:
                # the child's bounds, negated, bound this move's value
                lo = 64 - ((d >> 8) & 255)
                if lo > alpha:
                    return lo
                hi = 64 - (d & 255)
                if hi <= alpha:
                    if hi > best:
                        best = hi
                    continue
        replies = legal_moves(nP, nO)
        mob = popcount(replies) + popcount(replies & _CORNERS)
        if mob <= 1:
            # the opponent has one move or none: likely the refutation, searched at once
            v = _child(nP, nO, alpha, child_n, rules, ctl, replies)
            if v > best:
                best = v
                if v > alpha:
                    return best
            continue
        ctl[base + count] = lowest_square(m)
        key = mob << 12
        if m & odd:
            key -= 8
        ctl[base + KEYS + count] = key
        ctl[base + FLIPS + count] = np.int64(f)
        ctl[base + REPLIES + count] = np.int64(replies)
        count += 1
    for i in range(count):
        pick(ctl, base, i, count)
        sq = ctl[base + i]
        f = U(ctl[base + FLIPS + i])
        replies = U(ctl[base + REPLIES + i])
        m = U1 << U(sq)
        nP = O ^ f
        nO = P ^ f ^ m
        v = _child(nP, nO, alpha, child_n, rules, ctl, replies)
        if v > best:
            best = v
            if v > alpha:
                return best
    return best
