"""Labels for many positions at once (nogil kernels, threads): exact values from the endgame
solver, and full-width search values of the midgame search (to relabel noisy game outcomes)."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine_server.search.endgame import LIMIT, NODES, new_control, new_table, solve_root

from .pool import run_chunks

INF = 65


@njit(cache=True, nogil=True)
def _solve_many(Ps, Os, rules, tt, ctl, out, done):
    for i in range(Ps.shape[0]):
        if done[i]:
            continue
        ctl[NODES] = 0
        ctl[LIMIT] = 1 << 62
        v, _ = solve_root(Ps[i], Os[i], np.int64(-INF), np.int64(INF), rules, tt, ctl)
        out[i] = v
        done[i] = True


def solve_many(P: np.ndarray, O: np.ndarray, rules: int, threads: int = 2,
               table_bits: int = 18, chunk: int = 2000, progress=None) -> np.ndarray:
    """Exact final margins (side to move's view) of positions (P, O); ``threads`` solvers."""
    n = len(P)
    out = np.zeros(n, np.int64)
    done = np.zeros(n, np.bool_)

    def work(state, s: int, e: int) -> None:
        tt, ctl = state
        _solve_many(P[s:e], O[s:e], np.int64(rules), tt, ctl, out[s:e], done[s:e])

    run_chunks(n, chunk, threads, lambda: (new_table(table_bits), new_control()), work,
               progress)
    return out


def search_many(P: np.ndarray, O: np.ndarray, rules: int, weights: np.ndarray, depth: int,
                threads: int = 2, chunk: int = 5000, table_bits: int = 16,
                progress=None) -> np.ndarray:
    """Full-width depth-``depth`` search values (discs, side to move's view, quarter-disc
    steps) of positions (P, O) over ``weights``.  Each chunk of ``chunk`` positions starts from
    an empty table, so a value depends on the positions and the chunk size, never on the
    thread count or the order chunks run in."""
    from engine_server.eval.features import eval_tables
    from engine_server.search import alphabeta as AB

    if depth < 1:
        raise ValueError(f"search labels need a depth of at least 1, got {depth}")
    W = eval_tables(np.asarray(weights)).copy()
    n = len(P)
    out = np.zeros(n, np.int64)

    def state():
        return (*AB.new_table(table_bits), np.zeros(AB.CTL_SIZE, np.int64))

    def work(st, s: int, e: int) -> None:
        keys, data, ctl = st
        keys[:] = 0
        data[:] = 0
        ctl[:] = 0
        AB.values_to_depth(P[s:e], O[s:e], np.int64(depth), W, np.int64(rules), keys, data, ctl,
                           AB.NO_MPC, out[s:e])

    run_chunks(n, chunk, threads, state, work, progress)
    return out / AB.SCALE
