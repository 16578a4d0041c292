"""The exact solver above SHALLOW empties: transposition table probe and store, enhanced
transposition cutoffs from ``ETC_MIN`` empties, the table's move first (searched before the
others are sorted), the others sorted fastest-first (fewest opponent replies, corner replies
counted twice, then corner stability, potential mobility and parity, and from
``EVAL_ORDER_MIN`` empties the evaluation, from ``ORDER_SEARCH_MIN`` a shallow search over it),
principal variation search."""

from __future__ import annotations

import numpy as np
from numba import njit, types

from engine_server.eval.features import N_READS, child_eval, evaluate_moves, stage_of
from engine_server.game.bitboard import (
    U0,
    U1,
    U,
    disc_score,
    flips,
    legal_moves,
    lowest_square,
    popcount,
)
from engine_server.game.memory import NO_REFCOUNT, prefetch

from ..bounds import table_cut
from ..leaf_order import next_leaf_move
from .last import odd_quadrants
from .shallow import SHALLOW, small, stable_upper
from .simple import SIMPLE, child_key, simple
from .table import (
    ABORTED,
    EVAL_SCRATCH,
    EVAL_WORDS,
    FLIPS,
    GENERATION,
    INF,
    KEYS,
    LIMIT,
    NO_SQ,
    NODES,
    SCRATCH,
    SHARED,
    SLOT,
    claim,
    entry_lower,
    entry_move,
    entry_upper,
    pick,
    release,
    tt_index,
    tt_probe,
    tt_store,
)

SHARED_MIN = 10      # threads sharing a tree defer busy moves at nodes with this many empties
ETC_MIN = 12         # nodes with at least this many empties look up their children first
EVAL_ORDER_MIN = 12  # nodes with at least this many empties also order moves by the evaluation
EVAL_ORDER_WEIGHT = 16  # key units per 1/64 disc of the child's evaluation (mobility: 4096)

# From this many empties a child's evaluation is the value of a search of depth
# (n - ORDER_SEARCH_MIN) // 3 + 2 (Edax orders its big endgame nodes by shallow searches too):
# on FFO #40-#49 fewer nodes and less time than the static evaluation's order
# (docs/notes/2026-11-endgame-tuning.md, "Faster nodes, the table's move first, ...")
ORDER_SEARCH_MIN = 16
_BIG = 1 << 20
# A move's ordering search only needs to tell moves near the node's alpha apart: values more than
# this far below it (1/64 disc) stay bounds, as Edax's window alpha - 8 does (on FFO #40-#49 a
# few nodes fewer than with the full window; docs/notes/2026-11-endgame-tuning.md)
PROBE_MARGIN = 8 * 64
# where child_eval keeps its indices: after the first child's square and flips
_FB = EVAL_SCRATCH + 2
assert 2 + 2 * N_READS <= EVAL_WORDS


_SIG_DEEP = types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64,
                        types.int64, types.uint64[:, ::1], types.int64[::1],
                        types.int16[:, ::1])


@njit(cache=True, **NO_REFCOUNT)
def solve_node(P, O, alpha, beta, n, rules, tt, ctl, W):
    if n > SHALLOW:
        return _deep(P, O, alpha, beta, n, rules, tt, ctl, W)
    return small(P, O, alpha, beta, n, rules, ctl)


@njit(cache=True, **NO_REFCOUNT)
def order_key(P, O, m, f, odd):
    """Sort key of move ``m`` (flips ``f``): lower is tried first."""
    nP = O ^ f
    nO = P ^ f ^ m
    return child_key(nP, nO, m, odd, legal_moves(nP, nO))


@njit(cache=True, **NO_REFCOUNT)
def _probe(P, O, depth, alpha, beta, W, rules, ctl):
    """Fail-soft alpha-beta over the evaluation to ``depth`` (1/64 disc): a move's promise."""
    ctl[NODES] += 1
    moves = legal_moves(P, O)
    if depth <= 0:
        return evaluate_moves(P, O, W, moves)
    if moves == U0:
        if legal_moves(O, P) == U0:
            return 64 * disc_score(popcount(P), popcount(O), rules)
        return -_probe(O, P, depth, -beta, -alpha, W, rules, ctl)
    best = -_BIG
    if depth == 1:
        # the children's evaluations from one another's pattern indices (each counts as a node,
        # as the search of depth 0 it replaces)
        w = W[stage_of(63 - popcount(P | O), W.shape[0])]
        have = 0
        while moves != U0:
            m = next_leaf_move(moves, rules)
            moves ^= m
            f = flips(P, O, m)
            nP = O ^ f
            nO = P ^ f ^ m
            ctl[NODES] += 1
            e, have = child_eval(ctl, _FB, have, w, m, f, nP, nO, legal_moves(nP, nO))
            if -e > best:
                best = -e
                if best >= beta:
                    break
        return best
    while moves != U0:
        m = next_leaf_move(moves, rules)
        moves ^= m
        f = flips(P, O, m)
        v = -_probe(O ^ f, P ^ f ^ m, depth - 1, -beta, -alpha, W, rules, ctl)
        if v > best:
            best = v
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    return best


@njit(cache=True, inline="always")
def _etc(P, O, moves, beta, rules, tt, ctl, nodes0):
    """Enhanced transposition cutoff: (True, value) when a child is already known to refute
    beta, stored as the node's lower bound.  The children's rows are requested together first,
    so that their memory latencies overlap."""
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        f = flips(P, O, m)
        prefetch(tt, tt_index(tt, O ^ f, P ^ f ^ m))
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
        jc, dc = tt_probe(tt, tt_index(tt, nP, nO), nP, nO, rules)
        if jc >= 0:
            v = -entry_upper(dc)
            if v >= beta:
                tt_store(tt, P, O, rules, v, 64, lowest_square(m), ctl[NODES] - nodes0,
                          ctl[GENERATION])
                return True, v
    return False, np.int64(0)


@njit(cache=True, inline="always")
def _sort_keys(P, O, moves, n, alpha, base, rules, tt, ctl, W):
    """The moves' squares, sort keys and flips into the list at ``base``; returns how many.
    The keys: fastest first (:func:`order_key`), plus from EVAL_ORDER_MIN empties the
    evaluation after the move, and from ORDER_SEARCH_MIN a shallow search's value instead (a
    bound where it is more than PROBE_MARGIN below ``alpha``, the node's, in discs)."""
    child_n = n - 1
    count = 0
    odd = odd_quadrants(~(P | O))
    use_eval = n >= EVAL_ORDER_MIN and W.shape[0] > 1
    probe_depth = (n - ORDER_SEARCH_MIN) // 3 + 2 if n >= ORDER_SEARCH_MIN else 0
    # a runtime value, never a literal, into a recursive kernel (numba #6061)
    big = n - n + _BIG
    # the child's view of the window (alpha - PROBE_MARGIN, +inf)
    probe_beta = PROBE_MARGIN - 64 * alpha
    # the children's stage row of the tables, for child_eval
    w = W[stage_of(child_n, W.shape[0])] if use_eval else W[0]
    have = 0
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        f = flips(P, O, m)
        if child_n > SHALLOW:
            prefetch(tt, tt_index(tt, O ^ f, P ^ f ^ m))
        if use_eval and probe_depth > 0:
            key = order_key(P, O, m, f, odd) + EVAL_ORDER_WEIGHT * \
                _probe(O ^ f, P ^ f ^ m, probe_depth, -big, probe_beta, W, rules, ctl)
        elif use_eval:
            # the replies serve the key and the evaluation's mobility term alike
            nP = O ^ f
            nO = P ^ f ^ m
            replies = legal_moves(nP, nO)
            e, have = child_eval(ctl, _FB, have, w, m, f, nP, nO, replies)
            key = child_key(nP, nO, m, odd, replies) + EVAL_ORDER_WEIGHT * e
        else:
            key = order_key(P, O, m, f, odd)
        ctl[base + count] = lowest_square(m)
        ctl[base + KEYS + count] = key
        ctl[base + FLIPS + count] = np.int64(f)
        count += 1
    return count


@njit(_SIG_DEEP, cache=True, **NO_REFCOUNT)
def _deep(P, O, alpha, beta, n, rules, tt, ctl, W):
    if n <= SIMPLE and beta - alpha == 1:
        return simple(P, O, alpha, n, rules, ctl, legal_moves(P, O))
    ctl[NODES] += 1
    if ctl[NODES] > ctl[LIMIT]:
        ctl[ABORTED] = 1
        return 0
    ti = tt_index(tt, P, O)
    prefetch(tt, ti)
    upper = stable_upper(P, O, alpha, rules)
    if upper <= alpha:
        return upper
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            return disc_score(popcount(P), popcount(O), rules)
        return -_deep(O, P, -beta, -alpha, n, rules, tt, ctl, W)
    nodes0 = ctl[NODES]
    hash_move = NO_SQ
    j, d = tt_probe(tt, ti, P, O, rules)
    if j >= 0:
        cut, v, alpha, beta = table_cut(entry_lower(d), entry_upper(d), alpha, beta)
        if cut:
            return v
        hash_move = entry_move(d)
    alpha_in = alpha
    child_n = n - 1
    best = -INF
    best_move = NO_SQ

    if n >= ETC_MIN:
        cut, v = _etc(P, O, moves, beta, rules, tt, ctl, nodes0)
        if cut:
            return v

    if hash_move != NO_SQ and (moves >> U(hash_move)) & U1:
        # the table's move first, before the others are sorted: it often ends the node alone
        m = U1 << U(hash_move)
        moves ^= m
        f = flips(P, O, m)
        if child_n > SHALLOW:
            v = -_deep(O ^ f, P ^ f ^ m, -beta, -alpha, child_n, rules, tt, ctl, W)
            if ctl[ABORTED] != 0:
                return 0
        else:
            v = -small(O ^ f, P ^ f ^ m, -beta, -alpha, child_n, rules, ctl)
        best = v
        best_move = hash_move
        if v > alpha:
            alpha = v

    base = SCRATCH + n * SLOT
    count = 0
    if best < beta:
        count = _sort_keys(P, O, moves, n, alpha, base, rules, tt, ctl, W)

    # threads sharing the tree (ABDADA): a move another thread is searching goes after the
    # others, appended to the list (the keys are not read past ``count``)
    shared = ctl[SHARED] != 0 and n >= SHARED_MIN
    total = count
    row, col, tag = 0, 0, U0   # the busy mark of the move under search
    i = 0
    while i < total:
        if i < count:
            pick(ctl, base, i, count)
            sq = ctl[base + i]
            f = U(ctl[base + FLIPS + i])
        else:
            sq = ctl[base + i]
            f = flips(P, O, U1 << U(sq))
        i += 1
        m = U1 << U(sq)
        nP = O ^ f
        nO = P ^ f ^ m
        if shared:
            row, col, tag, total = claim(tt, ctl, base, nP, nO, sq,
                                          i <= count and best != -INF, total)
            if tag == U0:
                continue
        if child_n > SHALLOW:
            if best == -INF or beta - alpha <= 1:
                v = -_deep(nP, nO, -beta, -alpha, child_n, rules, tt, ctl, W)
            else:
                v = -_deep(nP, nO, -alpha - 1, -alpha, child_n, rules, tt, ctl, W)
                if alpha < v < beta and ctl[ABORTED] == 0:
                    v = -_deep(nP, nO, -beta, -alpha, child_n, rules, tt, ctl, W)
            if ctl[ABORTED] != 0:
                if shared:
                    release(tt, row, col, tag)
                return 0
        elif best == -INF or beta - alpha <= 1:
            v = -small(nP, nO, -beta, -alpha, child_n, rules, ctl)
        else:
            v = -small(nP, nO, -alpha - 1, -alpha, child_n, rules, ctl)
            if alpha < v < beta:
                v = -small(nP, nO, -beta, -alpha, child_n, rules, ctl)
        if shared:
            release(tt, row, col, tag)
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
    tt_store(tt, P, O, rules, lower, upper, best_move, ctl[NODES] - nodes0, ctl[GENERATION])
    return best
