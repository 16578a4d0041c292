"""The exact solver above SHALLOW empties: transposition table probe and store, enhanced
transposition cutoffs from ``ETC_MIN`` empties, moves sorted fastest-first (fewest opponent
replies, corner replies counted twice, then corner stability, potential mobility and parity, and
from ``EVAL_ORDER_MIN`` empties the evaluation), principal variation search."""

from __future__ import annotations

import numpy as np
from numba import njit, types

from engine_server.eval.features import evaluate
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

from .bounds import table_cut
from .endgame_last import _S1, _S8, _around, _odd_quadrants
from .endgame_shallow import SHALLOW, _small, _stable
from .endgame_table import (
    _LO_SHIFT,
    _MOVE_SHIFT,
    _NO_SQ,
    _UP_SHIFT,
    ABORTED,
    GENERATION,
    INF,
    KEYS,
    LIMIT,
    NODES,
    SCRATCH,
    SLOT,
    TT_DATA,
    _tt_find,
    _tt_index,
    _tt_store,
)

ETC_MIN = 12         # nodes with at least this many empties look up their children first
EVAL_ORDER_MIN = 12  # nodes with at least this many empties also order moves by the evaluation
EVAL_ORDER_WEIGHT = 16  # key units per 1/64 disc of the child's evaluation (mobility: 4096)

_CORNERS = U(0x8100000000000081)
_C_LO = U(0x0100000000000001)      # a1, a8: their right neighbours
_C_HI = U(0x8000000000000080)      # h1, h8: their left neighbours
_C_TOP = U(0x0000000000000081)     # a1, h1: the squares below
_C_BOTTOM = U(0x8100000000000000)  # a8, h8: the squares above


_SIG_DEEP = types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64,
                        types.int64, types.uint64[:, ::1], types.int64[::1],
                        types.int16[:, ::1])


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
