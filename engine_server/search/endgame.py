"""Exact endgame solver: negamax alpha-beta in numba, with a transposition table.

Layers, by the number of empty squares ``n`` of a node:

* ``n > SHALLOW``: :func:`_deep` - transposition table probe/store, enhanced transposition
  cutoffs from ``ETC_MIN`` empties, moves sorted fastest-first (fewest opponent replies, corner
  replies counted twice, then corner stability, potential mobility and parity), principal
  variation search;
* ``4 <= n <= SHALLOW``: :func:`_shallow` - no table (its probes would cost more than these small
  subtrees), moves tried in odd-quadrant-first (parity) order, corners first;
* ``n <= 3``: straight-line solvers; the last move is scored by counting its flips.

Nodes with at least 4 empties first try a stability cutoff: discs that can never flip bound the
final score (:func:`_stable`).

Scores are final disc differences for the side to move as :func:`bitboard.disc_score` defines
them (empties to the winner, mirrored under reversed rules).  Every leaf goes through
``disc_score``, so negamax is right for both rule variants: the game is zero-sum either way.

The kernels cannot see a Python ``threading.Event`` or clock, so a search runs under a node
budget in ``ctl[LIMIT]``: past it every frame returns at once with ``ctl[ABORTED] = 1`` and
nothing is stored from the unfinished subtrees.  :func:`solve` calls the kernel in chunks, checks
its deadline and stop event between them, and keeps the table, so a later chunk re-walks the
finished part of the tree through table cutoffs instead of searching it again.

The table holds proven bounds of game-theoretic values.  They do not depend on the root, so one
table may serve many solves (and MCTS kernels calling :func:`solve_root` directly); entries carry
the rule variant, so standard and reversed entries never mix.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
from numba import njit, types

from engine_server.eval.features import eval_tables, evaluate
from engine_server.game import PASS, Position
from engine_server.game.bitboard import (
    REVERSED,
    U0,
    U1,
    U,
    disc_score,
    flips,
    legal_moves,
    lowest_square,
    popcount,
)
from engine_server.log import get_logger

from .bounds import table_cut

log = get_logger("endgame")

SHALLOW = 6          # nodes with at most this many empties skip the table and the sorting
ETC_MIN = 12         # nodes with at least this many empties look up their children first
EVAL_ORDER_MIN = 12  # nodes with at least this many empties also order moves by the evaluation
EVAL_ORDER_WEIGHT = 16  # key units per 1/64 disc of the child's evaluation (mobility: 4096)
INF = 65             # above any score (|score| <= 64)
NO_MOVE = -1000      # "the side to move has no legal move" from the side solvers

# ctl (int64 array) layout: counters shared with Python, then move-list scratch space per ply.
NODES = 0
LIMIT = 1
ABORTED = 2
BEST = 3
GENERATION = 4
SCRATCH = 16
KEYS = 64            # per ply: up to 64 moves, then their sort keys
SLOT = 2 * KEYS
CTL_SIZE = SCRATCH + 65 * SLOT  # plies are indexed by empties (0..63) and 64 for the root

# tt (uint64 array, shape (size, 4)) columns: the position, packed data, subtree node count.
TT_P = 0
TT_O = 1
TT_DATA = 2
TT_COST = 3
# data fields (int64 arithmetic after a cast, all values non-negative)
_LO_SHIFT = 0        # lower bound + 64
_UP_SHIFT = 8        # upper bound + 64
_MOVE_SHIFT = 16     # best move square, 64 = none
_RULES_SHIFT = 24
_GEN_SHIFT = 32
_VALID = 1 << 40     # marks a used entry (a zeroed row is empty)

_HASH_K1 = U(0x9E3779B97F4A7C15)
_HASH_K2 = U(0xC2B2AE3D27D4EB4F)
_HASH_SHIFT = U(32)

_CORNERS = U(0x8100000000000081)
# Quadrants, for parity: the last empty of a region is best played by whoever gets to it.
_Q0 = U(0x000000000F0F0F0F)
_Q1 = U(0x00000000F0F0F0F0)
_Q2 = U(0x0F0F0F0F00000000)
_Q3 = U(0xF0F0F0F000000000)
# Static preference inside a parity class: corners, then edges and centre, X/C squares last.
_GOOD = U(0x8100000000000081)
_BAD = U(0x42C300000000C342)
_MID = ~(_GOOD | _BAD)

_NO_SQ = 64
_NOT_A = U(0xFEFEFEFEFEFEFEFE)     # no disc on file a (the target of a step to file b..h)
_NOT_H = U(0x7F7F7F7F7F7F7F7F)
_FULL = U(0xFFFFFFFFFFFFFFFF)
_EDGE_H = U(0x8181818181818181)
_EDGE_V = U(0xFF000000000000FF)
_EDGE = U(0xFF818181818181FF)
_S1 = U(1)
_S7 = U(7)
_S8 = U(8)
_S9 = U(9)
_C_LO = U(0x0100000000000001)      # a1, a8: their right neighbours
_C_HI = U(0x8000000000000080)      # h1, h8: their left neighbours
_C_TOP = U(0x0000000000000081)     # a1, h1: the squares below
_C_BOTTOM = U(0x8100000000000000)  # a8, h8: the squares above


@njit(cache=True, inline="always")
def _around(X):
    """Squares next to a disc of X (a potential move of the other side needs one)."""
    l = X & _NOT_A
    r = X & _NOT_H
    return ((r << _S1) | (l >> _S1) | (X << _S8) | (X >> _S8) | (r << _S9) | (l >> _S9)
            | (l << _S7) | (r >> _S7))


@njit(cache=True, inline="always")
def _full_line(occ, s, lo_mask, hi_mask):
    # Spread the empties along direction s both ways; the squares no empty reaches lie on
    # full lines.  lo_mask / hi_mask stop a step from wrapping around a board edge.
    e = ~occ
    for _ in range(7):
        e |= ((e << s) & lo_mask) | ((e >> s) & hi_mask)
    return ~e


@njit(cache=True)
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


# --- the last three empties ------------------------------------------------------------------


@njit(cache=True)
def _last1(P, O, m, rules):
    """Score of the last empty ``m`` (a single bit): only flips need counting."""
    near = _around(m)
    f = flips(P, O, m) if near & O else U0
    if f != U0:
        mine = popcount(P) + popcount(f) + 1
        return disc_score(mine, 64 - mine, rules)
    f = flips(O, P, m) if near & P else U0
    if f != U0:
        theirs = popcount(O) + popcount(f) + 1
        return disc_score(64 - theirs, theirs, rules)
    return disc_score(popcount(P), popcount(O), rules)


@njit(cache=True)
def _side2(P, O, alpha, beta, a, b, rules):
    # Side to move plays one of the two empties a, b; NO_MOVE when it has neither.
    best = NO_MOVE
    f = flips(P, O, a) if _around(a) & O else U0
    if f != U0:
        best = -_last1(O ^ f, P ^ f ^ a, b, rules)
        if best >= beta:
            return best
    f = flips(P, O, b) if _around(b) & O else U0
    if f != U0:
        v = -_last1(O ^ f, P ^ f ^ b, a, rules)
        if v > best:
            best = v
    return best


@njit(cache=True)
def _solve2(P, O, alpha, beta, rules, ctl):
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


@njit(cache=True)
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


@njit(cache=True)
def _side3(P, O, alpha, beta, a, b, c, rules, ctl):
    best = NO_MOVE
    f = flips(P, O, a)
    if f != U0:
        best = -_child2(O ^ f, P ^ f ^ a, -beta, -alpha, b, c, rules, ctl)
        if best >= beta:
            return best
        if best > alpha:
            alpha = best
    f = flips(P, O, b)
    if f != U0:
        v = -_child2(O ^ f, P ^ f ^ b, -beta, -alpha, a, c, rules, ctl)
        if v > best:
            best = v
            if best >= beta:
                return best
            if best > alpha:
                alpha = best
    f = flips(P, O, c)
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
def _odd_quadrants(E):
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


@njit(cache=True)
def _solve3(P, O, alpha, beta, rules, ctl):
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


# --- shallow: 4..SHALLOW empties, no table ----------------------------------------------------

_SIG_SHALLOW = types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64,
                           types.int64, types.int64[::1])


@njit(_SIG_SHALLOW, cache=True)
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


# --- deep: transposition table, fastest-first ------------------------------------------------


@njit(cache=True, inline="always")
def _tt_index(tt, P, O):
    h = P * _HASH_K1 + O * _HASH_K2
    # two-entry buckets: index even, partner index + 1
    return np.int64(h >> _HASH_SHIFT) & (tt.shape[0] - 2)


@njit(cache=True, inline="always")
def _tt_find(tt, i, P, O, rules):
    """Row of (P, O) under ``rules`` in the bucket at ``i``, or -1."""
    for j in range(i, i + 2):
        if tt[j, TT_P] == P and tt[j, TT_O] == O:
            d = np.int64(tt[j, TT_DATA])
            if d & _VALID and ((d >> _RULES_SHIFT) & 1) == rules:
                return j
    return -1


@njit(cache=True)
def _tt_store(tt, P, O, rules, lower, upper, move, cost, gen):
    i = _tt_index(tt, P, O)
    j = _tt_find(tt, i, P, O, rules)
    if j >= 0:
        d = np.int64(tt[j, TT_DATA])
        # both old and new bounds are proven: keep their intersection
        lower = max(lower, ((d >> _LO_SHIFT) & 255) - 64)
        upper = min(upper, ((d >> _UP_SHIFT) & 255) - 64)
        if move == _NO_SQ:
            move = (d >> _MOVE_SHIFT) & 255
        cost += np.int64(tt[j, TT_COST])
    else:
        # replace the cheaper entry, preferring one left from an older solve
        j = i
        d0 = np.int64(tt[i, TT_DATA])
        d1 = np.int64(tt[i + 1, TT_DATA])
        old0 = (d0 & _VALID) == 0 or ((d0 >> _GEN_SHIFT) & 255) != gen
        old1 = (d1 & _VALID) == 0 or ((d1 >> _GEN_SHIFT) & 255) != gen
        if old0 != old1:
            j = i if old0 else i + 1
        elif tt[i + 1, TT_COST] < tt[i, TT_COST]:
            j = i + 1
    tt[j, TT_P] = P
    tt[j, TT_O] = O
    tt[j, TT_DATA] = U(_VALID | (gen << _GEN_SHIFT) | (rules << _RULES_SHIFT)
                       | (move << _MOVE_SHIFT) | ((upper + 64) << _UP_SHIFT)
                       | ((lower + 64) << _LO_SHIFT))
    tt[j, TT_COST] = U(cost)


_SIG_DEEP = types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64,
                        types.int64, types.uint64[:, ::1], types.int64[::1],
                        types.int16[:, ::1])


@njit(cache=True)
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


@njit(cache=True)
def _any(P, O, alpha, beta, n, rules, tt, ctl, W):
    if n > SHALLOW:
        return _deep(P, O, alpha, beta, n, rules, tt, ctl, W)
    return _small(P, O, alpha, beta, n, rules, ctl)


@njit(cache=True, inline="always")
def _corner_stability(X):
    # own corners and the edge squares next to them cannot be flipped
    s = (((_C_LO & X) << _S1) | ((_C_HI & X) >> _S1) | ((_C_TOP & X) << _S8)
         | ((_C_BOTTOM & X) >> _S8) | _CORNERS) & X
    return popcount(s)


@njit(cache=True)
def _order_key(P, O, m, f, odd):
    """Sort key of move ``m`` (flips ``f``): lower is tried first."""
    nP = O ^ f
    nO = P ^ f ^ m
    replies = legal_moves(nP, nO)
    key = (popcount(replies) + popcount(replies & _CORNERS)) << 12
    key += popcount(_around(nO) & ~(nP | nO)) << 4
    key -= _corner_stability(nO) << 8
    if m & odd:
        key -= 8
    return key


@njit(_SIG_DEEP, cache=True)
def _deep(P, O, alpha, beta, n, rules, tt, ctl, W):
    ctl[NODES] += 1
    if ctl[NODES] > ctl[LIMIT]:
        ctl[ABORTED] = 1
        return 0
    # Stable discs bound the score: the opponent's (standard) or our own (reversed rules) stay.
    X = P if rules == REVERSED else O
    if 64 - 2 * popcount(X) <= alpha:
        upper = 64 - 2 * popcount(_stable(X, P | O))
        if upper <= alpha:
            return upper
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            return disc_score(popcount(P), popcount(O), rules)
        return -_deep(O, P, -beta, -alpha, n, rules, tt, ctl, W)
    nodes0 = ctl[NODES]
    hash_move = _NO_SQ
    ti = _tt_index(tt, P, O)
    j = _tt_find(tt, ti, P, O, rules)
    if j >= 0:
        d = np.int64(tt[j, TT_DATA])
        cut, v, alpha, beta = table_cut(((d >> _LO_SHIFT) & 255) - 64,
                                        ((d >> _UP_SHIFT) & 255) - 64, alpha, beta)
        if cut:
            return v
        # mypy: an np.int64 where _NO_SQ gave an int; numba types both as int64
        hash_move = (d >> _MOVE_SHIFT) & 255  # type: ignore[assignment]
    alpha_in = alpha

    base = SCRATCH + n * SLOT
    count = 0
    odd = _odd_quadrants(~(P | O))
    use_eval = n >= EVAL_ORDER_MIN and W.shape[0] > 1
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        sq = lowest_square(m)
        f = flips(P, O, m)
        if n >= ETC_MIN:
            # enhanced transposition cutoff: a child already known to refute beta
            nP = O ^ f
            nO = P ^ f ^ m
            jc = _tt_find(tt, _tt_index(tt, nP, nO), nP, nO, rules)
            if jc >= 0:
                v = 64 - ((np.int64(tt[jc, TT_DATA]) >> _UP_SHIFT) & 255)
                if v >= beta:
                    _tt_store(tt, P, O, rules, v, 64, sq, ctl[NODES] - nodes0,
                              ctl[GENERATION])
                    return v
        if sq == hash_move:
            key = -1 << 30
        elif use_eval:
            key = _order_key(P, O, m, f, odd) + EVAL_ORDER_WEIGHT * \
                evaluate(O ^ f, P ^ f ^ m, W)
        else:
            key = _order_key(P, O, m, f, odd)
        ctl[base + count] = sq
        ctl[base + KEYS + count] = key
        count += 1

    best = -INF
    best_move = _NO_SQ
    child_n = n - 1
    for i in range(count):
        # selection sort: a cutoff usually comes early, so most of the list is never sorted
        k = i
        for t in range(i + 1, count):
            if ctl[base + KEYS + t] < ctl[base + KEYS + k]:
                k = t
        sq = ctl[base + k]
        if k != i:
            ctl[base + k] = ctl[base + i]
            ctl[base + KEYS + k] = ctl[base + KEYS + i]
            ctl[base + i] = sq
        m = U1 << U(sq)
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
        if child_n > SHALLOW:
            if best == -INF or beta - alpha <= 1:
                v = -_deep(nP, nO, -beta, -alpha, child_n, rules, tt, ctl, W)
            else:
                v = -_deep(nP, nO, -alpha - 1, -alpha, child_n, rules, tt, ctl, W)
                if alpha < v < beta and ctl[ABORTED] == 0:
                    v = -_deep(nP, nO, -beta, -alpha, child_n, rules, tt, ctl, W)
            if ctl[ABORTED] != 0:
                return 0
        elif best == -INF or beta - alpha <= 1:
            v = -_small(nP, nO, -beta, -alpha, child_n, rules, ctl)
        else:
            v = -_small(nP, nO, -alpha - 1, -alpha, child_n, rules, ctl)
            if alpha < v < beta:
                v = -_small(nP, nO, -beta, -alpha, child_n, rules, ctl)
        if v > best:
            best = v
            best_move = sq
            if v >= beta:
                break
            if v > alpha:
                alpha = v

    lower = -64
    upper = 64
    if best >= beta:
        lower = best
    elif best <= alpha_in:
        upper = best
    else:
        lower = best
        upper = best
    _tt_store(tt, P, O, rules, lower, upper, best_move, ctl[NODES] - nodes0, ctl[GENERATION])
    return best


# --- entry points -----------------------------------------------------------------------------

_SIG_ROOT = types.UniTuple(types.int64, 2)(types.uint64, types.uint64, types.int64, types.int64,
                                             types.int64, types.uint64[:, ::1], types.int64[::1])
_SIG_ROOT_EVAL = types.UniTuple(types.int64, 2)(
    types.uint64, types.uint64, types.int64, types.int64, types.int64, types.uint64[:, ::1],
    types.int64[::1], types.int16[:, ::1])
# no evaluation: move ordering by mobility, stability and parity only
_NO_W = np.zeros((1, 1), np.int16)


@njit(_SIG_ROOT_EVAL, cache=True, nogil=True)
def solve_root_eval(P, O, alpha, beta, rules, tt, ctl, W):
    """Fail-soft negamax value of (P, O) in the window (alpha, beta), and a best move.

    ``W``: pattern-evaluation weights for the rules, used to order moves at nodes with at
    least ``EVAL_ORDER_MIN`` empties (a (1, 1) array turns that off).

    For MCTS kernels and :func:`solve`: plain arguments, the table ``tt`` from :func:`new_table`
    and the control array ``ctl`` from :func:`new_control`.  Nodes are added to ``ctl[NODES]``;
    the search gives up once that count passes ``ctl[LIMIT]`` (an absolute count, so set it to
    ``ctl[NODES] + budget``), and ``ctl[GENERATION]`` tags new table entries.  A value ``v`` with
    ``alpha < v < beta`` is exact, ``v <= alpha`` an upper bound and ``v >= beta`` a lower
    bound.  The move is ``PASS`` when the side to move must pass and -1 when the game is over.
    When ``ctl[ABORTED]`` is set on return the node budget ran out and neither value means
    anything.
    """
    ctl[ABORTED] = 0
    n = 64 - popcount(P | O)
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            return disc_score(popcount(P), popcount(O), rules), -1
        v = -_any(O, P, -beta, -alpha, n, rules, tt, ctl, W)
        return v, PASS
    odd = _odd_quadrants(~(P | O))
    base = SCRATCH + 64 * SLOT
    count = 0
    hash_move = _NO_SQ
    j = _tt_find(tt, _tt_index(tt, P, O), P, O, rules)
    if j >= 0:
        # mypy: as in _deep
        hash_move = (np.int64(tt[j, TT_DATA]) >> _MOVE_SHIFT) & 255  # type: ignore[assignment]
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        sq = lowest_square(m)
        key = -1 << 20 if sq == hash_move else _order_key(P, O, m, flips(P, O, m), odd)
        # insertion sort: the root list is short and sorted once
        i = count
        while i > 0 and ctl[base + KEYS + i - 1] > key:
            ctl[base + i] = ctl[base + i - 1]
            ctl[base + KEYS + i] = ctl[base + KEYS + i - 1]
            i -= 1
        ctl[base + i] = sq
        ctl[base + KEYS + i] = key
        count += 1
    best = -INF
    best_move = np.int64(ctl[base])
    child_n = n - 1
    for i in range(count):
        sq = ctl[base + i]
        m = U1 << U(sq)
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
        if best == -INF or beta - alpha <= 1:
            v = -_any(nP, nO, -beta, -alpha, child_n, rules, tt, ctl, W)
        else:
            v = -_any(nP, nO, -alpha - 1, -alpha, child_n, rules, tt, ctl, W)
            if alpha < v < beta and ctl[ABORTED] == 0:
                v = -_any(nP, nO, -beta, -alpha, child_n, rules, tt, ctl, W)
        if ctl[ABORTED] != 0:
            ctl[BEST] = best_move if best > -INF else -1
            return best, best_move
        if v > best:
            best = v
            best_move = sq
            if v >= beta:
                break
            if v > alpha:
                alpha = v
    ctl[BEST] = best_move
    return best, best_move


@njit(_SIG_ROOT, cache=True, nogil=True)
def solve_root(P, O, alpha, beta, rules, tt, ctl):
    """Fail-soft negamax value of (P, O) in the window (alpha, beta), and a best move; see
    :func:`solve_root_eval` (this one orders moves without the evaluation)."""
    return solve_root_eval(P, O, alpha, beta, rules, tt, ctl, np.zeros((1, 1), np.int16))


@njit(cache=True)
def _table_move(tt, P, O, rules):
    j = _tt_find(tt, _tt_index(tt, P, O), P, O, rules)
    if j < 0:
        return -1
    m = (np.int64(tt[j, TT_DATA]) >> _MOVE_SHIFT) & 255
    return -1 if m == _NO_SQ else m


DEFAULT_TABLE_BITS = 20


def new_table(bits: int = DEFAULT_TABLE_BITS) -> np.ndarray:
    """A transposition table of ``2**bits`` entries, 32 bytes each (20 bits: 32 MiB)."""
    if not 4 <= bits <= 30:
        raise ValueError(f"table bits must be in 4..30, got {bits}")
    return np.zeros((1 << bits, 4), dtype=np.uint64)


def new_control() -> np.ndarray:
    """The control array of :func:`solve_root`, with no node limit."""
    ctl = np.zeros(CTL_SIZE, dtype=np.int64)
    ctl[LIMIT] = np.iinfo(np.int64).max
    return ctl


# --- Python API -------------------------------------------------------------------------------

MODES = ("exact", "wld")
CHUNK_SECONDS = 0.02     # a stop or deadline is noticed within about this long
FIRST_CHUNK = 100_000    # nodes of the first chunk, before the rate is measured
_NO_LIMIT = np.iinfo(np.int64).max


@dataclass(frozen=True)
class SolveResult:
    """Outcome of a solve.

    ``score``: mode ``exact``, the final disc difference for the side to move with perfect play
    (rules applied, empties to the winner); mode ``wld``, +1 / 0 / -1 for a win / draw / loss.
    It is None when the search stopped before proving it (``exact`` False).
    ``best_move``: a move reaching ``score`` (``PASS`` when the side to move must pass, None
    when the game is over); after a stop, the best root move proven so far, or None.
    """

    score: int | None
    best_move: int | None
    nodes: int
    seconds: float
    exact: bool
    mode: str = "exact"


@dataclass(frozen=True)
class WindowResult:
    """One fail-soft search in the window (``alpha``, ``beta``), side to move's view.

    Finished: ``value <= alpha`` is an upper bound of the position's score, ``value >= beta`` a
    lower bound reached by ``move``, anything between is exact and ``move`` reaches it.
    Stopped (``finished`` False): ``partial_value``, when not None, is a lower bound above
    ``alpha`` that ``partial_move`` reaches (the root moves searched before the stop).
    """

    finished: bool
    value: int | None
    move: int | None
    nodes: int
    alpha: int
    beta: int
    partial_value: int | None = None
    partial_move: int | None = None
    best_so_far: int | None = None   # the best root move searched so far, proven or not


class Solver:
    """A transposition table and a control array, kept from one solve to the next.

    Solves on one Solver are serialized by a lock; give each thread its own Solver to solve
    in parallel.
    """

    def __init__(self, table_bits: int = DEFAULT_TABLE_BITS):
        self.tt = new_table(table_bits)
        self.ctl = new_control()
        self._generation = 0
        self._lock = threading.Lock()
        self._w: dict[int, np.ndarray] = {}

    def _weights(self, rules: int) -> np.ndarray:
        # the shipped evaluation orders moves near the root; without it, mobility alone
        w = self._w.get(rules)
        if w is None:
            try:
                from engine_server.eval.weights import default_weights
                w = eval_tables(default_weights(rules))
            except Exception as e:  # a missing weights file must not stop the solver
                log.warning("solver_without_eval", error=str(e))
                w = _NO_W
            self._w[rules] = w
        return w

    def clear(self) -> None:
        """Forget every stored result (they stay valid; this only frees the table)."""
        with self._lock:
            self.tt.fill(0)

    def solve(self, position: Position, mode: str = "exact", deadline: float | None = None,
              stop: threading.Event | None = None,
              max_nodes: int | None = None) -> SolveResult:
        """See :func:`solve`."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; accepted: {', '.join(MODES)}")
        with self._lock:
            return self._solve(position, mode, deadline, stop, max_nodes)

    def _solve(self, position: Position, mode: str, deadline: float | None,
               stop: threading.Event | None, max_nodes: int | None) -> SolveResult:
        t0 = time.monotonic()
        lo, hi = (-1, 1) if mode == "wld" else (-INF, INF)
        w = self._window(position, lo, hi, deadline, stop, max_nodes)
        if w.finished:
            score = w.value
            assert score is not None  # a finished window has its value
            if mode == "wld":
                score = (score > 0) - (score < 0)
            return SolveResult(score, w.move, w.nodes, time.monotonic() - t0, True, mode)
        log.debug("solve_stopped", nodes=w.nodes, seconds=time.monotonic() - t0,
                  empties=position.empties)
        return SolveResult(None, w.best_so_far, w.nodes, time.monotonic() - t0, False, mode)

    def window(self, position: Position, alpha: int, beta: int,
               deadline: float | None = None, stop: threading.Event | None = None,
               max_nodes: int | None = None) -> "WindowResult":
        """One fail-soft search of ``position`` in the window (alpha, beta), anytime.

        Call with the lock free (it takes it).  See :class:`WindowResult` for what a finished
        and a stopped search tell."""
        with self._lock:
            return self._window(position, alpha, beta, deadline, stop, max_nodes)

    def _window(self, position: Position, alpha: int, beta: int, deadline: float | None,
                stop: threading.Event | None, max_nodes: int | None) -> "WindowResult":
        P, O = position.bitboards()
        rules = np.int64(int(position.rules))
        a, b = np.int64(alpha), np.int64(beta)
        # The generation only steers table replacement towards entries of earlier solves.
        self._generation = (self._generation + 1) & 255
        ctl = self.ctl
        ctl[GENERATION] = self._generation
        ctl[NODES] = 0
        ctl[BEST] = -1
        watched = deadline is not None or stop is not None
        cap = _NO_LIMIT if max_nodes is None else max(0, int(max_nodes))
        chunk = FIRST_CHUNK
        partial_value, partial_move = None, None
        forced = legal_moves(P, O) == U0
        while True:
            if stop is not None and stop.is_set():
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            done = int(ctl[NODES])
            if done >= cap:
                break
            # Unwatched searches run in one call; watched ones in chunks of ~CHUNK_SECONDS.
            # An aborted chunk leaves its finished subtrees in the table, so the next chunk
            # walks back to where it stopped through table cutoffs.
            ctl[LIMIT] = done + (min(cap - done, chunk) if watched else cap - done)
            tc = time.monotonic()
            score, move = solve_root_eval(P, O, a, b, rules, self.tt, ctl,
                                          self._weights(int(rules)))
            dt = time.monotonic() - tc
            if ctl[ABORTED] == 0:
                return WindowResult(True, int(score), None if move < 0 else int(move),
                                    int(ctl[NODES]), alpha, beta)
            if not forced and int(score) > alpha and int(move) >= 0:
                # the root moves searched to the end before the stop: a proven lower bound
                if partial_value is None or int(score) > partial_value:
                    partial_value, partial_move = int(score), int(move)
            used = int(ctl[NODES]) - done
            if used > 0 and dt > 0:
                target = CHUNK_SECONDS
                if deadline is not None:
                    target = min(target, max(0.001, deadline - time.monotonic()))
                chunk = int(min(max(10_000, used / dt * target), chunk * 4))
        best = int(ctl[BEST])
        return WindowResult(False, None, None, int(ctl[NODES]), alpha, beta, partial_value,
                            partial_move, None if best < 0 else best)

    def table_move(self, position: Position) -> int | None:
        """The best move the table holds for ``position`` (None when it has none)."""
        P, O = position.bitboards()
        m = int(_table_move(self.tt, P, O, np.int64(int(position.rules))))
        return None if m < 0 else m

    def move_scores(self, position: Position) -> dict[int, int]:
        """Exact score of every legal move (``PASS`` when forced), side to move's view."""
        out = {}
        for mv in position.legal_moves():
            r = self.solve(position.play(mv))
            assert r.score is not None  # no deadline, stop or node budget: always exact
            out[mv] = -int(r.score)
        return out


_default: Solver | None = None
_default_lock = threading.Lock()


def default_solver() -> Solver:
    """The module-wide Solver behind :func:`solve` (its table is allocated on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Solver()
        return _default


def solve(position: Position, mode: str = "exact", deadline: float | None = None,
          stop: threading.Event | None = None, max_nodes: int | None = None) -> SolveResult:
    """Solve ``position`` exactly (``mode='exact'``) or to win/draw/loss (``mode='wld'``).

    ``deadline`` is a ``time.monotonic()`` value and ``stop`` an event another thread may set;
    with either, the search runs in chunks of about ``CHUNK_SECONDS`` and returns soon after
    one of them fires.  ``max_nodes`` caps the nodes searched.  A search cut short returns
    ``exact=False`` and ``score=None``.  Uses :func:`default_solver`.
    """
    return default_solver().solve(position, mode, deadline, stop, max_nodes)


def solve_move_scores(position: Position) -> dict[int, int]:
    """Exact score of each legal move of ``position`` for its side to move."""
    return default_solver().move_scores(position)


__all__ = ["SolveResult", "WindowResult", "Solver", "solve", "solve_move_scores", "solve_root",
           "solve_root_eval",
           "default_solver", "new_table", "new_control", "MODES", "NODES", "LIMIT", "ABORTED",
           "BEST", "GENERATION", "SHALLOW"]
