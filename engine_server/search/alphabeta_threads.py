"""The midgame search's helper threads: from ``PARALLEL_DEPTH`` every thread searches the
iteration over the shared table (ABDADA, :func:`shared_root`).  The search is described in
engine_server/search/alphabeta.py and docs/search.md."""

from __future__ import annotations

import threading

import numpy as np

from .alphabeta_pvs import search_root
from .alphabeta_table import ABORTED, HALT, ROOT_BEST, ROOT_DONE, ROOT_SCORE, SHARED

PARALLEL_DEPTH = 5        # from this iteration the helper threads join the search


def shared_root(W: np.ndarray, keys: np.ndarray, data: np.ndarray, P: np.uint64,
                O: np.uint64, rules: np.int64, order: list[int], depth: int, lo: int,
                hi: int, analysis: bool, mpc: np.ndarray, ctl: np.ndarray,
                helpers: list[np.ndarray], scores: np.ndarray, kinds: np.ndarray) -> int:
    """Every thread searches the whole iteration over the shared table (Weill's ABDADA): the
    first move of every node by all of them, the others by one, a move that another thread
    is searching taken last (``ctl[SHARED]``, busy marks beside the table).  The first thread
    to finish answers and halts the others.  Each thread searches every root move, so its
    scores cover them all (with ``analysis``, exact values).  Fills scores/kinds and ctl's
    ROOT_BEST, ROOT_SCORE and ROOT_DONE as search_root does; returns the best value."""
    data[keys.shape[0]:] = 0
    o = np.array(order, np.int64)
    won: list[tuple[int, np.ndarray, np.ndarray, int]] = []
    lock = threading.Lock()
    ctls = [ctl] + helpers

    def finished(i: int, v: int, sc: np.ndarray, kd: np.ndarray) -> None:
        c = ctls[i]
        with lock:
            if c[ROOT_DONE] != 1 or won:
                return
            won.append((v, sc, kd, int(c[ROOT_BEST])))
            for j, other in enumerate(ctls):
                if j != i:
                    other[HALT] = 1

    def helper(i: int) -> None:
        sc = np.zeros(len(order), np.int64)
        kd = np.zeros(len(order), np.int64)
        v = int(search_root(P, O, np.int64(lo), np.int64(hi), np.int64(depth), W, rules, keys,
                            data, ctls[i], o, sc, kd, analysis, mpc))
        finished(i, v, sc, kd)

    for c in ctls:
        c[HALT] = 0
        c[ROOT_DONE] = 0
        c[SHARED] = 1
    threads = [threading.Thread(target=helper, args=(i,), daemon=True)
               for i in range(1, len(ctls))]
    for t in threads:
        t.start()
    try:
        v = int(search_root(P, O, np.int64(lo), np.int64(hi), np.int64(depth), W, rules, keys,
                            data, ctl, o, scores, kinds, analysis, mpc))
        finished(0, v, scores, kinds)
    finally:
        for c in helpers:
            c[HALT] = 1
        for t in threads:
            t.join()
        for c in ctls:
            c[HALT] = 0
            c[SHARED] = 0
    if not won:   # stopped (the clock, the caller or the node limit) before any finished
        return v
    v, sc, kd, rb = won[0]
    if sc is not scores:
        scores[:] = sc
        kinds[:] = kd
    ctl[ABORTED] = 0
    ctl[ROOT_BEST], ctl[ROOT_SCORE], ctl[ROOT_DONE] = rb, v, 1
    return v
