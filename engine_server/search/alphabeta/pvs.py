"""The midgame search's kernels: negamax principal variation search with fail-soft bounds
(:func:`_pvs`), its leaves (the evaluation in score units, finished games by their exact margin),
and the root (:func:`search_root`); threads that share a search (``ctl[SHARED]``) defer the moves
another one is searching (ABDADA).  The search is described in
engine_server/search/alphabeta/__init__.py."""

from __future__ import annotations

import numpy as np
from numba import njit, types

from engine_server.eval.features import (
    N_READS,
    child_eval,
    evaluate_moves,
    evaluate_raw,
    stage_of,
)
from engine_server.game import PASS
from engine_server.game.bitboard import (
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
from engine_server.game.memory import NO_REFCOUNT, prefetch

from ..bounds import table_cut
from ..endgame.shallow import SHALLOW, small
from ..endgame.simple import SIMPLE, simple
from ..endgame.table import NODES as EXACT_NODES
from ..leaf_order import next_leaf_move
from .probcut import MPC_MIN_DEPTH, PC_MAX_NEST, SEL_EXACT, probe_depth
from .table import (
    ABORTED,
    EXACT,
    FEAT,
    GEN,
    HALT,
    INF,
    KILLER,
    LIMIT,
    NO_MOVE,
    NODES,
    PC_NEST,
    POLL,
    ROOT_BEST,
    ROOT_DONE,
    ROOT_SCORE,
    SEL,
    SHARED,
    SLOT,
    STOP,
    busy_mark,
    entry_depth,
    entry_lower,
    entry_move,
    entry_sel,
    entry_upper,
    ply_scratch,
    probe,
    slot,
    store,
)

SCALE = 4                 # score units per disc
RAW_SHIFT = 4             # evaluate_raw is in 1/64 disc: >> 4 gives quarter discs
EVAL_MAX = 64 * SCALE - 1  # an evaluation never claims a certain wipe-out

_CORNERS = U(0x8100000000000081)
SORT_MOBILITY_DEPTH = 4   # up to this depth moves are sorted by mobility alone
ETC_DEPTH = 4             # from this depth children are looked up in the table first
DEFER_DEPTH = 5           # threads sharing a search (ctl[SHARED]) defer busy moves from here
# A null-window node that searches to the end of the game with at most this many empties is
# solved by the exact solver's small-node kernels instead: no evaluation at the leaves, the
# solver's parity order and stability cuts (Edax hands such nodes to its endgame search below 15
# empties).  To the end at 74% from 24-26 empties that is much faster than without, and faster
# than from 8 empties; from 14 empties, through the solver's table-using layer with a table of
# its own, it was slower: above SIMPLE the probes cut more than the solver saves
# (docs/search.md, "Near the end").
ENDGAME_EMPTIES = SIMPLE
# a ply's slot holds its moves and keys (130 words), then the reply view and one child's indices
assert FEAT >= 130 and FEAT + 2 * N_READS <= KILLER and KILLER + 2 <= SLOT


@njit(cache=True, inline="always")
def _clamp(e):
    if e > EVAL_MAX:
        return EVAL_MAX
    if e < -EVAL_MAX:
        return -EVAL_MAX
    return e


@njit(cache=True, inline="always")
def _leaf(P, O, W, moves):
    """The evaluation in score units; ``moves``: the mover's legal moves."""
    return _clamp(evaluate_moves(P, O, W, moves) >> RAW_SHIFT)


@njit(cache=True, inline="always")
def _exact(P, O, alpha, beta, n, rules, ctl, moves):
    """The fail-soft value (score units) of a node with ``n`` <= ENDGAME_EMPTIES empties, found by
    the exact solver (in discs) against the window of whole discs around (alpha, beta); a null
    window stays one.  Its nodes count as the search's."""
    a = alpha // SCALE
    b = -((-beta) // SCALE)
    if a >= 64:
        return SCALE * 64
    if b <= -64:
        return -SCALE * 64
    a = max(a, -65)
    b = min(b, 65)
    e = ctl[EXACT:]
    n0 = e[EXACT_NODES]
    if n <= SHALLOW:
        v = small(P, O, a, b, n, rules, e)
    else:
        v = simple(P, O, a, n, rules, e, moves)
    ctl[NODES] += e[EXACT_NODES] - n0
    return SCALE * v


@njit(cache=True, inline="always")
def _final(P, O, rules):
    return SCALE * disc_score(popcount(P), popcount(O), rules)


@njit(cache=True, inline="always")
def _poll(ctl):
    ctl[NODES] += 1
    if (ctl[NODES] & POLL) == 0:
        # STOP: the clock or the caller; HALT: this thread's speculative work is not needed
        if ctl[STOP] != 0 or ctl[HALT] != 0 or ctl[NODES] >= ctl[LIMIT]:
            ctl[ABORTED] = 1
    return ctl[ABORTED] != 0


@njit(cache=True, inline="always")
def _etc(P, O, moves, beta, depth, sel, rules, keys, data):
    """Enhanced transposition cutoff: (True, value) when the table already refutes a child
    enough to cut the node.  The children's lines are requested together first, so that their
    waits overlap."""
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        f = flips(P, O, m)
        j = slot(keys, O ^ f, P ^ f ^ m)
        prefetch(keys, j)
        prefetch(data, j)
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
        dj = probe(keys, data, slot(keys, nP, nO), nP, nO, rules)
        if dj != 0 and entry_depth(dj) >= depth - 1 and entry_sel(dj) >= sel:
            cu = entry_upper(dj)
            if -cu >= beta:
                return True, -cu
    return False, np.int64(0)


@njit(cache=True, inline="always")
def _sort_moves(P, O, moves, depth, base, W, keys, data, ctl):
    """Sort the moves into the ply's scratch slot at ``base`` (squares at +0, keys at +64) and
    return how many there are.  Fastest first: the opponent's mobility after the move, corners
    counted twice; up to SORT_MOBILITY_DEPTH, then the empties next to our discs (the
    opponent's potential mobility, a quarter of a move each); deeper, plus the evaluation of the
    move (a move of the opponent ~ 4 discs)."""
    n = 0
    fb = base + FEAT
    w = W[0]
    if depth > SORT_MOBILITY_DEPTH:
        # the children's stage, for their evaluations below (shallower nodes sort without)
        w = W[stage_of(63 - popcount(P | O), W.shape[0])]
    have = 0
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
        if depth == 3:
            # (deeper, the ETC has asked for the children's lines already)
            j = slot(keys, nP, nO)
            prefetch(keys, j)
            prefetch(data, j)
        om = legal_moves(nP, nO)
        key = popcount(om) + popcount(om & _CORNERS) - 4 * np.int64((m & _CORNERS) != U0)
        if depth > SORT_MOBILITY_DEPTH:
            e, have = child_eval(ctl, fb, have, w, m, f, nP, nO, om)
            key = 256 * key + e
        else:
            key = 4 * key + min(popcount(neighbours(nO) & ~(nP | nO)), 31)
        j = n
        while j > 0 and ctl[base + 64 + j - 1] > key:
            ctl[base + j] = ctl[base + j - 1]
            ctl[base + 64 + j] = ctl[base + 64 + j - 1]
            j -= 1
        ctl[base + j] = lowest_square(m)
        ctl[base + 64 + j] = key
        n += 1
    return n


_SIG = types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64,
                   types.int64, types.int16[:, ::1], types.int64, types.uint64[:, ::1],
                   types.int64[::1], types.int64[::1], types.int64[:, ::1])


@njit(_SIG, cache=True, nogil=True, **NO_REFCOUNT)
def _pvs(P, O, alpha, beta, depth, ply, W, rules, keys, data, ctl, mpc):
    if _poll(ctl):
        return 0
    i = 0
    if depth >= 2:
        # the table is read below: ask for its lines now, while the moves are generated
        i = slot(keys, P, O)
        prefetch(keys, i)
        prefetch(data, i)
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            return _final(P, O, rules)
        return -_pvs(O, P, -beta, -alpha, depth, ply + 1, W, rules, keys, data, ctl, mpc)
    if depth > 0:
        n = 64 - popcount(P | O)
        if n <= ENDGAME_EMPTIES and depth >= n and (beta - alpha == 1 or n <= SHALLOW):
            return _exact(P, O, alpha, beta, n, rules, ctl, moves)
    if depth <= 0:
        return _leaf(P, O, W, moves)
    if depth == 1:
        # children are leaves: score them directly (a table costs more than it saves here),
        # each from the pattern indices of the one before
        best = -INF
        fb = ply_scratch(ply) + FEAT
        w = W[stage_of(63 - popcount(P | O), W.shape[0])]
        have = 0
        # the last two moves that cut a depth-1 node at this ply first (killer moves), if legal
        ks = ply_scratch(ply) + KILLER
        killer = (U1 << U(ctl[ks])) & moves
        killer2 = (U1 << U(ctl[ks + 1])) & moves
        while moves != U0:
            if killer != U0:
                m = killer
                killer = U0
            elif (killer2 & moves) != U0:
                m = killer2
                killer2 = U0
            else:
                m = next_leaf_move(moves, rules)
            moves ^= m
            f = flips(P, O, m)
            nP = O ^ f
            nO = P ^ f ^ m
            om = legal_moves(nP, nO)
            if om != U0:
                # a leaf with moves, scored here: what the call below would do, without the call
                if _poll(ctl):
                    return 0
                e, have = child_eval(ctl, fb, have, w, m, f, nP, nO, om)
                v = -_clamp(e >> RAW_SHIFT)
            else:
                # depth - 1, never a literal 0: a recursive call typed with a literal argument
                # breaks numba's cache in the next process (numba #6061)
                v = -_pvs(nP, nO, -beta, -alpha, depth - 1, ply + 1, W, rules, keys, data, ctl,
                          mpc)
            if v > best:
                best = v
                if v > alpha:
                    alpha = v
                    if alpha >= beta:
                        sq = lowest_square(m)
                        if sq != ctl[ks]:
                            ctl[ks + 1] = ctl[ks]
                            ctl[ks] = sq
                        break
        return 0 if ctl[ABORTED] != 0 else best
    # transposition table
    hash_move = NO_MOVE
    sel = ctl[SEL]
    # a node of the principal variation (an open window) is searched whatever its own entry or
    # ProbCut says, as Edax's PVS_midgame does: its value is the one the root reports, and a
    # selective cut or an entry of another window there bends it
    pv = beta - alpha > 1
    d = probe(keys, data, i, P, O, rules)
    if d != 0:
        hash_move = entry_move(d)
        # bounds found at least as deep and with at least this confidence decide
        if not pv and entry_depth(d) >= depth and entry_sel(d) >= sel:
            cut, v, alpha, beta = table_cut(entry_lower(d), entry_upper(d), alpha, beta)
            if cut:
                return v
    if not pv and depth >= MPC_MIN_DEPTH and sel < SEL_EXACT and ctl[PC_NEST] < PC_MAX_NEST:
        margin = mpc[depth, 64 - popcount(P | O)]
        if margin > 0:
            ds = probe_depth(depth)
            ctl[PC_NEST] += 1
            cut = 0
            hi = beta + margin
            if hi < EVAL_MAX:
                v = _pvs(P, O, hi - 1, hi, ds, ply, W, rules, keys, data, ctl, mpc)
                if v >= hi:
                    cut = 1
            lo = alpha - margin
            if cut == 0 and lo > -EVAL_MAX:
                v = _pvs(P, O, lo, lo + 1, ds, ply, W, rules, keys, data, ctl, mpc)
                if v <= lo:
                    cut = -1
            ctl[PC_NEST] -= 1
            if ctl[ABORTED] != 0:
                return 0
            if cut == 1:
                return beta
            if cut == -1:
                return alpha
    alpha0 = alpha
    best = -INF
    best_move = NO_MOVE
    if depth >= ETC_DEPTH:
        cut, v = _etc(P, O, moves, beta, depth, sel, rules, keys, data)
        if cut:
            return v
    if hash_move != NO_MOVE and (moves >> U(hash_move)) & U1:
        # the table's move first, before the others are sorted: at a cut node it usually
        # ends the node alone, and their keys (an evaluation each) are never needed
        m = U1 << U(hash_move)
        moves ^= m
        f = flips(P, O, m)
        best = -_pvs(O ^ f, P ^ f ^ m, -beta, -alpha, depth - 1, ply + 1, W, rules, keys, data,
                     ctl, mpc)
        if ctl[ABORTED] != 0:
            return 0
        best_move = hash_move
        if best > alpha:
            alpha = best
    # the others, fastest first (:func:`_sort_moves`)
    base = ply_scratch(ply)
    n = 0
    if alpha < beta:
        n = _sort_moves(P, O, moves, depth, base, W, keys, data, ctl)
    # threads sharing the search (ABDADA): a move another thread is searching goes last,
    # appended to the list (the keys' half of the slot is free by now)
    shared = ctl[SHARED] != 0 and depth >= DEFER_DEPTH
    total = n
    k = 0
    bi = 0
    tag = 0
    while k < total:
        sq = ctl[base + k]
        k += 1
        m = U1 << U(sq)
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
        if shared:
            bi, tag = busy_mark(keys, nP, nO)
            if k <= n and best != -INF and data[bi] == tag:
                ctl[base + total] = sq
                total += 1
                continue
            data[bi] = tag
        if best == -INF:
            v = -_pvs(nP, nO, -beta, -alpha, depth - 1, ply + 1, W, rules, keys, data, ctl, mpc)
        else:
            v = -_pvs(nP, nO, -alpha - 1, -alpha, depth - 1, ply + 1, W, rules, keys, data, ctl,
                      mpc)
            if alpha < v < beta:
                v = -_pvs(nP, nO, -beta, -v, depth - 1, ply + 1, W, rules, keys, data, ctl, mpc)
        if shared and data[bi] == tag:
            data[bi] = 0
        if ctl[ABORTED] != 0:
            return 0
        if v > best:
            best = v
            best_move = sq
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    store(keys, data, P, O, rules, alpha0, beta, best, depth, best_move, ctl[GEN], sel)
    return best


@njit(cache=True, nogil=True)
def search_root(P, O, alpha, beta, depth, W, rules, keys, data, ctl, order, scores, kinds,
                analysis, mpc):
    """Search the root moves ``order`` (squares, PASS alone when forced) to ``depth``.

    ``scores[k]``/``kinds[k]`` receive each finished move's fail-soft value and whether it is
    exact (0), an upper bound (-1) or a lower bound (+1); unfinished moves get kind -2.  With
    ``analysis`` every move is searched with the full window (exact values for all).  Returns
    the best value; ``ctl[ROOT_BEST]`` holds the best finished move."""
    ctl[ABORTED] = 0
    best = -INF
    a = alpha
    n = order.shape[0]
    for k in range(n):
        kinds[k] = -2
    # the moves by their index in ``order``; with ctl[SHARED], busy ones (ABDADA) go last
    todo = np.empty(2 * n, np.int64)
    for k in range(n):
        todo[k] = k
    total = n
    t = 0
    bi = 0
    tag = 0
    while t < total:
        k = todo[t]
        t += 1
        sq = order[k]
        if sq == PASS:
            nP, nO = O, P
        else:
            m = U1 << U(sq)
            f = flips(P, O, m)
            nP = O ^ f
            nO = P ^ f ^ m
        if ctl[SHARED] != 0:
            bi, tag = busy_mark(keys, nP, nO)
            if t <= n and k > 0 and data[bi] == tag:
                todo[total] = k
                total += 1
                continue
            data[bi] = tag
        if k == 0 or analysis:
            v = -_pvs(nP, nO, -beta, -a, depth - 1, 1, W, rules, keys, data, ctl, mpc)
        else:
            v = -_pvs(nP, nO, -a - 1, -a, depth - 1, 1, W, rules, keys, data, ctl, mpc)
            if a < v < beta and ctl[ABORTED] == 0:
                v = -_pvs(nP, nO, -beta, -v, depth - 1, 1, W, rules, keys, data, ctl, mpc)
        if ctl[SHARED] != 0 and data[bi] == tag:
            data[bi] = 0
        if ctl[ABORTED] != 0:
            return best
        scores[k] = v
        if v <= a:
            kinds[k] = -1
        elif v >= beta:
            kinds[k] = 1
        else:
            kinds[k] = 0
        if v > best:
            best = v
            ctl[ROOT_BEST] = sq
            ctl[ROOT_SCORE] = v
            if v > a and not analysis:
                a = v
                if a >= beta:
                    break
    ctl[ROOT_DONE] = 1
    store(keys, data, P, O, rules, alpha, beta, best, depth, ctl[ROOT_BEST], ctl[GEN],
           ctl[SEL])
    return best


@njit(cache=True)
def static_eval(P, O, W, rules):
    """What the search scores a leaf, from the raw weights ``W`` through ``evaluate_raw`` (the
    search itself reads the merged tables: tests compare the two): quarter discs, or the exact
    margin of a finished game."""
    if legal_moves(P, O) == U0 and legal_moves(O, P) == U0:
        return _final(P, O, rules)
    e = evaluate_raw(P, O, W) >> RAW_SHIFT
    return min(max(e, -EVAL_MAX), EVAL_MAX)


@njit(cache=True, nogil=True)
def values_to_depth(Ps, Os, depth, W, rules, keys, data, ctl, mpc, out):
    """Full-width search values (score units, side to move's view) of many positions to
    ``depth`` (the end where nearer), by iterative deepening; the table is the caller's.  For
    training labels: no clock, no node limit."""
    for i in range(Ps.shape[0]):
        ctl[LIMIT] = 1 << 62
        ctl[STOP] = 0
        ctl[ABORTED] = 0
        ctl[HALT] = 0
        ctl[SEL] = SEL_EXACT
        ctl[PC_NEST] = 0
        lo = np.int64(-INF)
        hi = np.int64(INF)
        v = np.int64(0)
        for d in range(1, depth + 1):
            v = _pvs(Ps[i], Os[i], lo, hi, np.int64(d), np.int64(0), W, rules, keys, data, ctl,
                     mpc)
        out[i] = v
