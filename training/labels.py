"""Exact labels from the endgame solver, for many positions at once (nogil kernels, threads)."""

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
