"""The exact solver from 4 to SHALLOW empties, without the table (its probes would cost more
than these small subtrees), moves in odd-quadrant-first (parity) order, corners first; and the
stability bound every node from 4 empties tries first (:func:`_stable`, the deep nodes too)."""

from __future__ import annotations

from numba import njit, types

from engine_server.game.bitboard import (
    REVERSED,
    U0,
    U1,
    U,
    disc_score,
    flips,
    legal_moves,
    popcount,
)

from .endgame_last import (
    _NOT_A,
    _NOT_H,
    _S1,
    _S7,
    _S8,
    _S9,
    _last1,
    _odd_quadrants,
    _solve2,
    _solve3,
)
from .endgame_table import INF, NODES
from .memory import NO_REFCOUNT

SHALLOW = 6          # nodes with at most this many empties skip the table and the sorting

# Static preference inside a parity class: corners, then edges and centre, X/C squares last.
_GOOD = U(0x8100000000000081)
_BAD = U(0x42C300000000C342)
_MID = ~(_GOOD | _BAD)

_FULL = U(0xFFFFFFFFFFFFFFFF)
_EDGE_H = U(0x8181818181818181)
_EDGE_V = U(0xFF000000000000FF)
_EDGE = U(0xFF818181818181FF)


@njit(cache=True, inline="always")
def _full_line(occ, s, lo_mask, hi_mask):
    # Spread the empties along direction s both ways; the squares no empty reaches lie on
    # full lines.  lo_mask / hi_mask stop a step from wrapping around a board edge.
    e = ~occ
    for _ in range(7):
        e |= ((e << s) & lo_mask) | ((e >> s) & hi_mask)
    return ~e


@njit(cache=True, **NO_REFCOUNT)
def _stable(X, occ):
    """Discs of X that can never be flipped (corner-anchored chains and full lines)."""
    # A disc cannot be flipped along a line that is full, that leaves the board next to it, or
    # that holds a stable disc of its own colour next to it: a flip there would need an empty
    # square on the line or would flip that neighbour too.
    safe_h = _full_line(occ, _S1, _NOT_A, _NOT_H) | _EDGE_H
    safe_v = _full_line(occ, _S8, _FULL, _FULL) | _EDGE_V
    safe_9 = _full_line(occ, _S9, _NOT_A, _NOT_H) | _EDGE
    safe_7 = _full_line(occ, _S7, _NOT_H, _NOT_A) | _EDGE
    st = X & safe_h & safe_v & safe_9 & safe_7
    if st == U0:
        return st
    while True:
        nh = ((st << _S1) & _NOT_A) | ((st >> _S1) & _NOT_H)
        nv = (st << _S8) | (st >> _S8)
        n9 = ((st << _S9) & _NOT_A) | ((st >> _S9) & _NOT_H)
        n7 = ((st << _S7) & _NOT_H) | ((st >> _S7) & _NOT_A)
        new = X & (safe_h | nh) & (safe_v | nv) & (safe_9 | n9) & (safe_7 | n7)
        if new == st:
            return st
        st = new


_SIG_SHALLOW = types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64,
                           types.int64, types.int64[::1])


@njit(_SIG_SHALLOW, cache=True, **NO_REFCOUNT)
def _shallow(P, O, alpha, beta, n, rules, ctl):
    ctl[NODES] += 1
    # stability cutoff, as in _deep: cheap enough to pay off down to 4 empties
    X = P if rules == REVERSED else O
    if 64 - 2 * popcount(X) <= alpha:
        upper = 64 - 2 * popcount(_stable(X, P | O))
        if upper <= alpha:
            return upper
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            return disc_score(popcount(P), popcount(O), rules)
        return -_shallow(O, P, -beta, -alpha, n, rules, ctl)
    odd = _odd_quadrants(~(P | O))
    best = -INF
    child_n = n - 1
    for k in range(6):
        # odd quadrants first, each split corners / middle / X-and-C squares
        cand = moves & (odd if k < 3 else ~odd)
        if k == 0 or k == 3:
            cand &= _GOOD
        elif k == 1 or k == 4:
            cand &= _MID
        else:
            cand &= _BAD
        while cand != U0:
            m = cand & (~cand + U1)
            cand ^= m
            f = flips(P, O, m)
            nP = O ^ f
            nO = P ^ f ^ m
            if child_n == 3:
                v = -_solve3(nP, nO, -beta, -alpha, rules, ctl)
            else:
                v = -_shallow(nP, nO, -beta, -alpha, child_n, rules, ctl)
            if v > best:
                best = v
                if v >= beta:
                    return best
                if v > alpha:
                    alpha = v
    return best


@njit(cache=True, **NO_REFCOUNT)
def _small(P, O, alpha, beta, n, rules, ctl):
    """Solve a node with at most SHALLOW empties (no table, no node budget)."""
    if n > 3:
        return _shallow(P, O, alpha, beta, n, rules, ctl)
    if n == 3:
        return _solve3(P, O, alpha, beta, rules, ctl)
    if n == 2:
        return _solve2(P, O, alpha, beta, rules, ctl)
    ctl[NODES] += 1
    if n == 1:
        return _last1(P, O, ~(P | O), rules)
    return disc_score(popcount(P), popcount(O), rules)
