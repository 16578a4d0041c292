"""The batch loop: :func:`run_batch` runs the iterations (selection with expansion on the way
down, simulation, back-up) for a few milliseconds at a time, and solves small leaves exactly
with the endgame solver when the policy asks for it."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine_server.game.bitboard import legal_moves, popcount
from engine_server.game.memory import NO_REFCOUNT

from ..endgame import ABORTED, LIMIT, NODES, solve_root
from .backup import backup, prove_up, proven_margin, proven_z, set_bounds, settled
from .leaf import reward, set_priors, simulate, uses_priors
from .minmax import minmax_iteration
from .nodes import (
    FIRST,
    FLAGS,
    HI,
    LO,
    MAX_MARGIN,
    NCHILD,
    NO_EXPAND,
    NOSOLVE,
    ROOT,
    SOLVED,
    STATUS_DONE,
    STATUS_FULL,
    STATUS_OK,
    TERMINAL,
    N,
    expand,
    is_terminal,
)
from .options import SELECT_MINMAX, SELECT_OCBA, SELECT_OCBA_EQUAL
from .select import select_child


@njit(cache=True, inline="always")
def solvable(bbs, links, node, solve_k):
    """An unexpanded, unproven node with few enough empties for the exact solver."""
    if links[node, NCHILD] >= 0 or links[node, FLAGS] & (SOLVED | TERMINAL | NOSOLVE):
        return False
    return 64 - popcount(bbs[node, 0] | bbs[node, 1]) <= solve_k


@njit(cache=True, **NO_REFCOUNT)
def solve_leaf(bbs, links, stats, node, rules, budget, tt, ctl):
    """Endgame solve of an unexpanded leaf within ``budget`` nodes; True when it tightened the
    node's bounds.

    The first solve only asks win/draw/loss (a window of (-1, 1): several times cheaper); a
    leaf the tree comes back to is solved for its exact margin inside the bounds it has.  A
    leaf too big for the budget is marked ``NOSOLVE`` and searched as usual from then on."""
    # bounds for the side to move at the node
    lo = -stats[node, HI]
    hi = -stats[node, LO]
    if lo == -MAX_MARGIN and hi == MAX_MARGIN:
        alpha, beta = np.int64(-1), np.int64(1)
    else:
        alpha, beta = np.int64(lo - 1.0), np.int64(hi + 1.0)
    ctl[LIMIT] = ctl[NODES] + budget
    v, _ = solve_root(bbs[node, 0], bbs[node, 1], alpha, beta, rules, tt, ctl)
    if ctl[ABORTED] != 0:
        links[node, FLAGS] |= NOSOLVE
        return False
    fv = float(v)
    if v <= alpha:
        hi = fv
    elif v >= beta:
        lo = fv
    else:
        lo = hi = fv
    return set_bounds(links, stats, node, -hi, -lo)


@njit(cache=True, nogil=True)
def run_batch(bbs, links, stats, meta, cfg, table, rng, max_iters, max_playouts, tt, ctl, W):
    """Run up to ``max_iters`` iterations / ``max_playouts`` playouts.

    ``tt``/``ctl`` are the endgame solver's table and control array (used when
    ``cfg.solve_empties > 0``).  Returns ``(iterations, playouts, status)``.
    """
    root = meta[ROOT]
    iters = 0
    playouts = 0
    mode = cfg.select
    expand_at = cfg.expand_at
    sims = cfg.sims
    sim_all = cfg.sim_all
    descend = cfg.descend
    ocba = mode == SELECT_OCBA or mode == SELECT_OCBA_EQUAL
    n0 = cfg.n0
    solver = cfg.solver
    solve_k = cfg.solve_empties if solver else 0
    solve_nodes = cfg.solve_nodes
    rules = cfg.rules
    use_priors = uses_priors(cfg)
    while iters < max_iters and playouts < max_playouts:
        if mode == SELECT_MINMAX:
            p, status = minmax_iteration(bbs, links, stats, meta, cfg, table, rng, W)
            if status != STATUS_OK:
                return iters, playouts, status
            playouts += p
            iters += 1
            continue
        if solver and links[root, FLAGS] & SOLVED and settled(links, stats, root):
            return iters, playouts, STATUS_DONE
        node = root
        # --- selection (and expansion on the way down) ---------------------------------------
        while True:
            if links[node, FLAGS] & TERMINAL:
                break
            # A solved root goes on until a child is proven to reach its value.
            if links[node, FLAGS] & SOLVED and node != root:
                break
            if links[node, NCHILD] < 0:
                if solve_k > 0 and solvable(bbs, links, node, solve_k):
                    break  # solved exactly below instead of expanded
                if stats[node, N] < expand_at or meta[NO_EXPAND] == 1:
                    break
                if not expand(bbs, links, stats, meta, node):
                    return iters, playouts, STATUS_FULL
                if use_priors:
                    set_priors(bbs, links, stats, node, cfg, table, W)
                if links[node, FLAGS] & TERMINAL:
                    break
                if sim_all or not descend:
                    break
            elif sim_all and links[node, NCHILD] > 0 and _children_unvisited(links, stats, node):
                break
            child = select_child(bbs, links, stats, node, cfg, rng)
            node = child
            if ocba and stats[node, N] < n0:
                break
        # --- simulation and back-propagation ----------------------------------------------
        if solve_k > 0 and solvable(bbs, links, node, solve_k) and not is_terminal(bbs, node):
            if solve_leaf(bbs, links, stats, node, rules, solve_nodes, tt, ctl):
                backup(links, stats, node, proven_z(stats, node), proven_margin(stats, node),
                       0.0, root)
                prove_up(links, stats, node, root)
                iters += 1
                playouts += 1
                continue
        if solver and links[node, FLAGS] & SOLVED:
            backup(links, stats, node, proven_z(stats, node), stats[node, LO], 0.0, root)
            iters += 1
            playouts += 1
            continue
        if links[node, FLAGS] & TERMINAL or (links[node, NCHILD] < 0 and is_terminal(bbs, node)):
            P = bbs[node, 0]
            O = bbs[node, 1]
            z, margin = reward(popcount(P), popcount(O), cfg)
            backup(links, stats, node, -z, -margin, 0.0, root)
            if solver:
                set_bounds(links, stats, node, -margin, -margin)
                prove_up(links, stats, node, root)
            iters += 1
            playouts += 1
            continue
        if sim_all and links[node, NCHILD] > 0:
            first = links[node, FIRST]
            for i in range(first, first + links[node, NCHILD]):
                if stats[i, N] == 0.0:
                    z, margin = simulate(bbs, i, cfg, table, rng, W)
                    backup(links, stats, i, z, margin, 0.0, root)
                    playouts += 1
                    if solver and is_terminal(bbs, i):
                        # the margin is already exact here: the rollout had no move to make
                        set_bounds(links, stats, i, margin, margin)
                        prove_up(links, stats, i, root)
            iters += 1
            continue
        mobility = float(popcount(legal_moves(bbs[node, 0], bbs[node, 1])))
        for _ in range(sims):
            z, margin = simulate(bbs, node, cfg, table, rng, W)
            backup(links, stats, node, z, margin, mobility, root)
            playouts += 1
        iters += 1
    return iters, playouts, STATUS_OK


@njit(cache=True, **NO_REFCOUNT)
def _children_unvisited(links, stats, node):
    first = links[node, FIRST]
    for i in range(first, first + links[node, NCHILD]):
        if stats[i, N] == 0.0:
            return True
    return False
