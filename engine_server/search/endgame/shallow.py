"""The exact solver from 4 to SHALLOW empties, without the table (its probes would cost more
than these small subtrees), moves in odd-quadrant-first (parity) order, corners first; and the
stability bound every node from 4 empties tries first (:func:`_stable`, the deep nodes too)."""

from __future__ import annotations

from numba import njit, types

from engine_server.game.bitboard import (
    NOT_A,
    NOT_H,
    REVERSED,
    S1,
    S7,
    S8,
    S9,
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

from .last import NO_MOVE, last1, odd_quadrants, solve2, solve3
from .table import INF, NODES

SHALLOW = 5          # nodes with at most this many empties skip the tables and the sorting

# Static preference inside a parity class: corners, then edges and centre, X/C squares last.
_GOOD = U(0x8100000000000081)
_BAD = U(0x42C300000000C342)
_MID = ~(_GOOD | _BAD)

_EDGE_H = U(0x8181818181818181)
_EDGE_V = U(0xFF000000000000FF)
_EDGE = U(0xFF818181818181FF)


_FILE_A = U(0x0101010101010101)
_COLS_1 = U(0xFEFEFEFEFEFEFEFE)     # files b-h: where a step of one file to the right lands
_COLS_2 = U(0xFCFCFCFCFCFCFCFC)     # files c-h: two files
_COLS_4 = U(0xF0F0F0F0F0F0F0F0)     # files e-h: four files
_COLS_1L = U(0x7F7F7F7F7F7F7F7F)    # files a-g: one file to the left
_COLS_2L = U(0x3F3F3F3F3F3F3F3F)
_COLS_4L = U(0x0F0F0F0F0F0F0F0F)
_S16 = U(16)
_S18 = U(18)
_S14 = U(14)
_S28 = U(28)
_S32 = U(32)
_S36 = U(36)
_S48 = U(48)
_S56 = U(56)
_BYTE_ALL = U(0xFF)


@njit(cache=True, inline="always")
def _full_lines(occ):
    """The squares on full rows, files, a1-h8 and h1-a8 diagonals.  The diagonals spread the
    empties along the line in three doubling steps each way (each step's mask keeps a shift
    from wrapping round a board edge), not seven single ones: the stability bound's first and
    largest cost, and FFO #40-#44 a little faster."""
    f = occ & (occ >> S1)
    f &= f >> U(2)
    f &= f >> U(4)
    h = (f & _FILE_A) * _BYTE_ALL
    v = occ & ((occ >> S8) | (occ << _S56))
    v &= (v >> _S16) | (v << _S48)
    v &= (v >> _S32) | (v << _S32)
    e = ~occ
    e |= ((e << S9) & _COLS_1) | ((e >> S9) & _COLS_1L)
    e |= ((e << _S18) & _COLS_2) | ((e >> _S18) & _COLS_2L)
    e |= ((e << _S36) & _COLS_4) | ((e >> _S36) & _COLS_4L)
    d9 = ~e
    e = ~occ
    e |= ((e << S7) & _COLS_1L) | ((e >> S7) & _COLS_1)
    e |= ((e << _S14) & _COLS_2L) | ((e >> _S14) & _COLS_2)
    e |= ((e << _S28) & _COLS_4L) | ((e >> _S28) & _COLS_4)
    d7 = ~e
    return h, v, d9, d7


@njit(cache=True, **NO_REFCOUNT)
def _stable(X, occ):
    """Discs of X that can never be flipped (corner-anchored chains and full lines)."""
    # A disc cannot be flipped along a line that is full, that leaves the board next to it, or
    # that holds a stable disc of its own colour next to it: a flip there would need an empty
    # square on the line or would flip that neighbour too.
    h, v, d9, d7 = _full_lines(occ)
    safe_h = h | _EDGE_H
    safe_v = v | _EDGE_V
    safe_9 = d9 | _EDGE
    safe_7 = d7 | _EDGE
    st = X & safe_h & safe_v & safe_9 & safe_7
    if st == U0:
        return st
    while True:
        nh = ((st << S1) & NOT_A) | ((st >> S1) & NOT_H)
        nv = (st << S8) | (st >> S8)
        n9 = ((st << S9) & NOT_A) | ((st >> S9) & NOT_H)
        n7 = ((st << S7) & NOT_H) | ((st >> S7) & NOT_A)
        new = X & (safe_h | nh) & (safe_v | nv) & (safe_9 | n9) & (safe_7 | n7)
        if new == st:
            return st
        st = new


_SIG_SHALLOW = types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64,
                           types.int64, types.int64[::1], types.uint64)
# ``moves`` of shallow when the caller has not generated them (no set of legal moves is full)
UNKNOWN_MOVES = ~U0


@njit(cache=True, inline="always")
def stable_upper(P, O, alpha, rules):
    """An upper bound of the score from the discs that can never flip (the opponent's under
    the standard rules, our own under reversed ones), or INF where it could not cut at alpha
    (then it is not computed)."""
    X = P if rules == REVERSED else O
    if 64 - 2 * popcount(X) <= alpha:
        return 64 - 2 * popcount(_stable(X, P | O))
    return INF


@njit(cache=True, inline="always")
def _order4(x, odd):
    # the place of the empty x in the order of shallow (odd quadrants first, then corners,
    # middle, X and C squares), the square breaking ties as shallow's lowest-first walk does
    k = 0 if x & odd else 3
    if x & _BAD:
        k += 2
    elif not x & _GOOD:
        k += 1
    return (k << 6) | lowest_square(x)


@njit(cache=True, inline="always", **NO_REFCOUNT)
def _try4(P, O, k, alpha, beta, rules, ctl):
    # the value of the empty square k (its _order4 key) for the side to move, or NO_MOVE
    x = U1 << U(k & 63)
    if neighbours(x) & O:
        f = flips(P, O, x)
        if f != U0:
            return -solve3(O ^ f, P ^ f ^ x, -beta, -alpha, rules, ctl)
    return NO_MOVE


@njit(cache=True, **NO_REFCOUNT)
def _solve4(P, O, alpha, beta, rules, ctl):
    """A node of 4 empties: shallow's order and values, without generating the moves (the four
    empties are tried in turn, each first for an opponent's disc next to it, as Edax's
    ``search_solve_4``)."""
    ctl[NODES] += 1
    upper = stable_upper(P, O, alpha, rules)
    if upper <= alpha:
        return upper
    E = ~(P | O)
    odd = odd_quadrants(E)
    x = E & (~E + U1)
    k1 = _order4(x, odd)
    E ^= x
    x = E & (~E + U1)
    k2 = _order4(x, odd)
    E ^= x
    x = E & (~E + U1)
    k3 = _order4(x, odd)
    k4 = _order4(E ^ x, odd)
    # a sorting network of four (the keys are distinct)
    if k1 > k2:
        k1, k2 = k2, k1
    if k3 > k4:
        k3, k4 = k4, k3
    if k1 > k3:
        k1, k3 = k3, k1
    if k2 > k4:
        k2, k4 = k4, k2
    if k2 > k3:
        k2, k3 = k3, k2
    # unrolled: a loop over the tuple of the keys was slower on FFO #40-#44
    best = -INF
    v = _try4(P, O, k1, alpha, beta, rules, ctl)
    if v != NO_MOVE:
        best = v
        if v >= beta:
            return v
        if v > alpha:
            alpha = v
    v = _try4(P, O, k2, alpha, beta, rules, ctl)
    if v != NO_MOVE and v > best:
        best = v
        if v >= beta:
            return v
        if v > alpha:
            alpha = v
    v = _try4(P, O, k3, alpha, beta, rules, ctl)
    if v != NO_MOVE and v > best:
        best = v
        if v >= beta:
            return v
        if v > alpha:
            alpha = v
    v = _try4(P, O, k4, alpha, beta, rules, ctl)
    if v != NO_MOVE and v > best:
        best = v
    if best != -INF:
        return best
    # no move: pass, or the game is over
    if legal_moves(O, P) == U0:
        return disc_score(popcount(P), popcount(O), rules)
    return -_solve4(O, P, -beta, -alpha, rules, ctl)


@njit(_SIG_SHALLOW, cache=True, **NO_REFCOUNT)
def shallow(P, O, alpha, beta, n, rules, ctl, moves):
    """``moves``: the legal moves of P, or UNKNOWN_MOVES (the parent of a null-window node has
    generated them for its move order, and they are not generated twice)."""
    ctl[NODES] += 1
    # stability cutoff, as in _deep: cheap enough to pay off down to 4 empties
    upper = stable_upper(P, O, alpha, rules)
    if upper <= alpha:
        return upper
    if moves == UNKNOWN_MOVES:
        moves = legal_moves(P, O)
    if moves == U0:
        replies = legal_moves(O, P)
        if replies == U0:
            return disc_score(popcount(P), popcount(O), rules)
        return -shallow(O, P, -beta, -alpha, n, rules, ctl, replies)
    odd = odd_quadrants(~(P | O))
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
            if child_n == 4:
                v = -_solve4(nP, nO, -beta, -alpha, rules, ctl)
            elif child_n == 3:
                v = -solve3(nP, nO, -beta, -alpha, rules, ctl)
            else:
                v = -shallow(nP, nO, -beta, -alpha, child_n, rules, ctl, UNKNOWN_MOVES)
            if v > best:
                best = v
                if v >= beta:
                    return best
                if v > alpha:
                    alpha = v
    return best


@njit(cache=True, **NO_REFCOUNT)
def small(P, O, alpha, beta, n, rules, ctl):
    """Solve a node with at most SHALLOW empties (no table, no node budget)."""
    if n > 4:
        return shallow(P, O, alpha, beta, n, rules, ctl, UNKNOWN_MOVES)
    if n == 4:
        return _solve4(P, O, alpha, beta, rules, ctl)
    if n == 3:
        return solve3(P, O, alpha, beta, rules, ctl)
    if n == 2:
        return solve2(P, O, alpha, beta, rules, ctl)
    ctl[NODES] += 1
    if n == 1:
        return last1(P, O, ~(P | O), rules)
    return disc_score(popcount(P), popcount(O), rules)
