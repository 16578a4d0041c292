"""The midgame search's helper threads: from ``PARALLEL_DEPTH`` every thread searches the
iteration over the shared table (ABDADA, :func:`shared_root`).  The search is described in
engine_server/search/alphabeta/__init__.py and docs/search.md."""

from __future__ import annotations

import threading

import numpy as np

from .pvs import search_root
from .table import ABORTED, HALT, ROOT_BEST, ROOT_DONE, ROOT_SCORE, SHARED

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
    won: list[tuple[int, int]] = []   # (thread, value) of the first to finish
    lock = threading.Lock()
    ctls = [ctl] + helpers
    parts = [(scores, kinds)] + [(np.zeros(len(order), np.int64), np.zeros(len(order), np.int64))
                                 for _ in helpers]

    def search(i: int) -> int:
        sc, kd = parts[i]
        v = int(search_root(P, O, np.int64(lo), np.int64(hi), np.int64(depth), W, rules, keys,
                            data, ctls[i], o, sc, kd, analysis, mpc))
        with lock:
            if ctls[i][ROOT_DONE] == 1 and not won:
                won.append((i, v))
                for j, other in enumerate(ctls):
                    if j != i:
                        other[HALT] = 1
        return v

    for c in ctls:
        c[HALT] = 0
        c[ROOT_DONE] = 0
        c[SHARED] = 1
    threads = [threading.Thread(target=search, args=(i,), daemon=True)
               for i in range(1, len(ctls))]
    for t in threads:
        t.start()
    try:
        v = search(0)
    finally:
        for c in helpers:
            c[HALT] = 1
        for t in threads:
            t.join()
        for c in ctls:
            c[HALT] = 0
            c[SHARED] = 0
    if not won:   # stopped (the clock, the caller or the node limit) before any finished
        _merge_stopped(order, ctls, parts)
        return v
    i, v = won[0]
    if i > 0:
        scores[:], kinds[:] = parts[i]
    ctl[ABORTED] = 0
    ctl[ROOT_BEST], ctl[ROOT_SCORE], ctl[ROOT_DONE] = ctls[i][ROOT_BEST], v, 1
    return v


def _merge_stopped(order: list[int], ctls: list[np.ndarray],
                   parts: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """An iteration stopped before any thread finished: what every thread proved of the root
    moves it finished goes into the main thread's scores/kinds (an exact value before a
    bound), and the best move with an exact value, whichever thread found it, becomes
    ROOT_BEST (the caller plays it when it beats the last finished iteration's move).  The
    threads divide the root moves between them, so the main thread alone knows about half."""
    scores, kinds = parts[0]
    for sc, kd in parts[1:]:
        for k in range(len(order)):
            if kd[k] != -2 and (kinds[k] == -2 or (kd[k] == 0 and kinds[k] != 0)):
                scores[k], kinds[k] = sc[k], kd[k]
    ctl = ctls[0]
    best_k = -1
    for k in range(len(order)):
        if kinds[k] == 0 and (best_k < 0 or scores[k] > scores[best_k]):
            best_k = k
    if best_k >= 0:
        rb = int(ctl[ROOT_BEST])
        mine = order.index(rb) if rb in order else -1
        if mine < 0 or kinds[mine] != 0 or scores[best_k] > scores[mine]:
            ctl[ROOT_BEST], ctl[ROOT_SCORE] = order[best_k], scores[best_k]
