"""Perft (move-path counts) in two conventions, used as the rules core's correctness check.

* Bik: a pass uses one ply; a position where neither side can move is one leaf whatever depth is
  left.  perft(10) = 24,571,284.
* Edax (OEIS A124004): a pass uses one ply; games that end before the target depth count 0.

Both bulk-count the last ply (popcount of the move mask).  The recursion passes ``depth - 1``
(never a literal), which keeps the cached kernels loadable in a second process (numba #6061).
"""

from __future__ import annotations

from numba import njit, types

from .bitboard import U0, U1, flips, legal_moves, popcount

_SIG = types.int64(types.uint64, types.uint64, types.int64)


@njit(_SIG, cache=True)
def perft_bik(P, O, depth):
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            return 1
        if depth == 1:
            return 1
        return perft_bik(O, P, depth - 1)
    if depth == 1:
        return popcount(moves)
    n = 0
    while moves:
        m = moves & (~moves + U1)
        moves ^= m
        f = flips(P, O, m)
        n += perft_bik(O ^ f, P ^ f ^ m, depth - 1)
    return n


@njit(_SIG, cache=True)
def perft_edax(P, O, depth):
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            return 0
        if depth == 1:
            return 1
        return perft_edax(O, P, depth - 1)
    if depth == 1:
        return popcount(moves)
    n = 0
    while moves:
        m = moves & (~moves + U1)
        moves ^= m
        f = flips(P, O, m)
        n += perft_edax(O ^ f, P ^ f ^ m, depth - 1)
    return n
