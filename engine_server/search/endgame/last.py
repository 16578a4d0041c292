"""The last three empties of the exact solver: straight-line solvers, the last move scored by
counting its flips; and the bit-board helpers the deeper layers share (the squares next to a
disc, the quadrants of parity).

``last1``, ``_side2`` and ``_child2`` are inlined where they are called (numba's
``inline="always"``): a call between kernels passes every argument and costs about as much as
these small bodies (inlined, FFO #40-#44 is measurably faster).  Inlining ``_side3`` and
``solve3`` as well multiplied the solver's compile time for no measurable gain."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine_server.game.bitboard import (
    U0,
    U1,
    U,
    disc_score,
    flips,
    lowest_square,
    neighbours,
    popcount,
)
from engine_server.game.memory import NO_REFCOUNT

from .table import NODES

NO_MOVE = -1000      # "the side to move has no legal move" from the side solvers

# Quadrants, for parity: the last empty of a region is best played by whoever gets to it.
_Q0 = U(0x000000000F0F0F0F)
_Q1 = U(0x00000000F0F0F0F0)
_Q2 = U(0x0F0F0F0F00000000)
_Q3 = U(0xF0F0F0F000000000)


def _line_counts() -> np.ndarray:
    # COUNT[i, b]: discs flipped on a full line of 8 by a move at place i, where the mover
    # owns the places set in b (bit i clear) and the opponent every other one.  Places off a
    # shorter line read as 0 bits: a walk that reaches them finds no disc of the mover's
    # beyond, so flips nothing, as it should.
    count = np.zeros((8, 256), dtype=np.int64)
    for i in range(8):
        for b in range(256):
            if b >> i & 1:
                continue
            n = 0
            for step in (1, -1):
                j = i + step
                while 0 <= j < 8 and not b >> j & 1:
                    j += step
                if 0 <= j < 8:
                    n += abs(j - i) - 1
            count[i, b] = n
    return count


def _diagonal_masks() -> np.ndarray:
    # DIAGS[x]: the a1-h8 and the a8-h1 diagonal through square x
    d = np.zeros((64, 2), dtype=np.uint64)
    for x in range(64):
        r, c = divmod(x, 8)
        for y in range(64):
            ry, cy = divmod(y, 8)
            if ry - cy == r - c:
                d[x, 0] |= np.uint64(1 << y)
            if ry + cy == r + c:
                d[x, 1] |= np.uint64(1 << y)
    return d


_COUNT = _line_counts()
_DIAGS = _diagonal_masks()
_FILE_A = U(0x0101010101010101)
_GATHER_DIAG = U(0x0101010101010101)     # a line with one square per file -> top byte by file
_GATHER_FILE = U(0x0102040810204080)     # file a's squares -> top byte by row
_S56 = U(56)
_BYTE = U(0xFF)


@njit(cache=True, inline="always")
def _count_last_flips(X, sq):
    """Discs X flips by playing ``sq`` on an otherwise full board (Edax's count_last_flip):
    each line through sq gathered into a byte, the count read from a table."""
    r = sq >> 3
    c = sq & 7
    row = np.int64((X >> U(8 * r)) & _BYTE)
    col = np.int64((((X >> U(c)) & _FILE_A) * _GATHER_FILE) >> _S56)
    d1 = np.int64(((X & _DIAGS[sq, 0]) * _GATHER_DIAG) >> _S56)
    d2 = np.int64(((X & _DIAGS[sq, 1]) * _GATHER_DIAG) >> _S56)
    return _COUNT[c, row] + _COUNT[r, col] + _COUNT[c, d1] + _COUNT[c, d2]


@njit(cache=True, inline="always", **NO_REFCOUNT)
def last1(P, O, m, rules):
    """Score of the last empty ``m`` (a single bit): only flips need counting."""
    sq = lowest_square(m)
    n = _count_last_flips(P, sq)
    if n != 0:
        mine = popcount(P) + n + 1
        return disc_score(mine, 64 - mine, rules)
    n = _count_last_flips(O, sq)
    if n != 0:
        theirs = popcount(O) + n + 1
        return disc_score(64 - theirs, theirs, rules)
    return disc_score(popcount(P), popcount(O), rules)


@njit(cache=True, inline="always", **NO_REFCOUNT)
def _side2(P, O, alpha, beta, a, b, rules):
    # Side to move plays one of the two empties a, b; NO_MOVE when it has neither.
    best = NO_MOVE
    f = flips(P, O, a) if neighbours(a) & O else U0
    if f != U0:
        best = -last1(O ^ f, P ^ f ^ a, b, rules)
        if best >= beta:
            return best
    f = flips(P, O, b) if neighbours(b) & O else U0
    if f != U0:
        v = -last1(O ^ f, P ^ f ^ b, a, rules)
        if v > best:
            best = v
    return best


@njit(cache=True, **NO_REFCOUNT)
def solve2(P, O, alpha, beta, rules, ctl):
    ctl[NODES] += 1
    E = ~(P | O)
    a = E & (~E + U1)
    b = E ^ a
    v = _side2(P, O, alpha, beta, a, b, rules)
    if v != NO_MOVE:
        return v
    v = _side2(O, P, -beta, -alpha, a, b, rules)
    if v != NO_MOVE:
        return -v
    return disc_score(popcount(P), popcount(O), rules)


@njit(cache=True, inline="always", **NO_REFCOUNT)
def _child2(P, O, alpha, beta, a, b, rules, ctl):
    # A position with exactly the empties a and b (single bits), solved for the side to move.
    ctl[NODES] += 1
    v = _side2(P, O, alpha, beta, a, b, rules)
    if v != NO_MOVE:
        return v
    v = _side2(O, P, -beta, -alpha, a, b, rules)
    if v != NO_MOVE:
        return -v
    return disc_score(popcount(P), popcount(O), rules)


@njit(cache=True, **NO_REFCOUNT)
def _side3(P, O, alpha, beta, a, b, c, rules, ctl):
    best = NO_MOVE
    # an empty square with no opponent's disc next to it flips nothing: not tried
    f = flips(P, O, a) if neighbours(a) & O else U0
    if f != U0:
        best = -_child2(O ^ f, P ^ f ^ a, -beta, -alpha, b, c, rules, ctl)
        if best >= beta:
            return best
        if best > alpha:
            alpha = best
    f = flips(P, O, b) if neighbours(b) & O else U0
    if f != U0:
        v = -_child2(O ^ f, P ^ f ^ b, -beta, -alpha, a, c, rules, ctl)
        if v > best:
            best = v
            if best >= beta:
                return best
            if best > alpha:
                alpha = best
    f = flips(P, O, c) if neighbours(c) & O else U0
    if f != U0:
        v = -_child2(O ^ f, P ^ f ^ c, -beta, -alpha, a, b, rules, ctl)
        if v > best:
            best = v
    return best


@njit(cache=True, inline="always")
def _same_quadrant(x, others):
    return ((x & _Q0 and others & _Q0) or (x & _Q1 and others & _Q1)
            or (x & _Q2 and others & _Q2) or (x & _Q3 and others & _Q3))


@njit(cache=True, inline="always")
def odd_quadrants(E):
    odd = U0
    if popcount(E & _Q0) & 1:
        odd |= _Q0
    if popcount(E & _Q1) & 1:
        odd |= _Q1
    if popcount(E & _Q2) & 1:
        odd |= _Q2
    if popcount(E & _Q3) & 1:
        odd |= _Q3
    return odd


@njit(cache=True, **NO_REFCOUNT)
def solve3(P, O, alpha, beta, rules, ctl):
    ctl[NODES] += 1
    E = ~(P | O)
    a = E & (~E + U1)
    E ^= a
    b = E & (~E + U1)
    c = E ^ b
    # Parity: a square alone in its quadrant goes first (it is the region's last move).
    if _same_quadrant(a, b | c):
        if not _same_quadrant(b, a | c):
            a, b = b, a
        elif not _same_quadrant(c, a | b):
            a, c = c, a
    v = _side3(P, O, alpha, beta, a, b, c, rules, ctl)
    if v != NO_MOVE:
        return v
    v = _side3(O, P, -beta, -alpha, a, b, c, rules, ctl)
    if v != NO_MOVE:
        return -v
    return disc_score(popcount(P), popcount(O), rules)
