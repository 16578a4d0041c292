"""Midgame alpha-beta: iterative-deepening principal variation search over the pattern evaluation.

Kernels (numba, nogil): negamax PVS with fail-soft bounds, a transposition table of depth-tagged
bounds kept from one search (and move) to the next, moves ordered by the table's move first and
then by the evaluation of the position after the move (the opponent's view, so ascending), leaves
scored by :func:`engine_server.eval.features.evaluate_moves` (``evaluate_raw``'s value from the
merged tables of ``eval_tables``) and finished games by their exact margin; a null-window node
that searches to the end with few empties is the exact solver's (``endgame/simple.py``).
Scores are in quarter discs (``SCALE``): fine enough for the evaluation's precision, coarse
enough that null-window re-searches stay rare.

Control: the kernels cannot see a clock, so they poll ``ctl[STOP]`` (set by a timer thread at
the deadline or by the caller's stop event) and ``ctl[LIMIT]`` (a node budget) every 1024
nodes; after either every frame returns at once with ``ctl[ABORTED]`` set and stores nothing.
An aborted iteration still counts where it can be trusted: a root move whose full-window search
finished above the previous best replaces it (PVS proves that with a finished re-search).

Modules, one per concern:

* ``table.py`` - the control array's layout (``NODES``, ``STOP``, ``ROOT_BEST``, ...,
  ``CTL_SIZE``) and the transposition table: an entry's fields are read and written only through
  its accessors (``entry_*``, ``pack_entry``, ``probe``, ``store``);
* ``probcut.py`` - Multi-ProbCut's levels (``SELECTIVITY_T``, ``SEL_EXACT``), the margins
  table's shape (``MPC_SHAPE``, ``NO_MPC``) and the probe depth;
* ``pvs.py`` - the search proper: ``_pvs`` (the probes included), ``search_root``, the leaves,
  ``static_eval``;
* ``threads.py`` - the helper threads (``shared_root``: ABDADA over the shared table);
* ``search.py`` - iterative deepening with aspiration windows, :class:`AlphaBeta` and
  :class:`ABResult`.

What callers may use is listed below; tests of private helpers import them from the module that
defines them.
"""

from __future__ import annotations

from .probcut import MPC_SHAPE, NO_MPC, SEL_EXACT, SELECTIVITY_PCT, SELECTIVITY_T
from .pvs import DEFER_DEPTH, SCALE, search_root, static_eval, values_to_depth
from .search import ABResult, AlphaBeta, Iteration
from .table import (
    CTL_SIZE,
    INF,
    LIMIT,
    NODES,
    ROOT_BEST,
    ROOT_DONE,
    ROOT_SCORE,
    SEL,
    SHARED,
    STOP,
    known_children,
    new_table,
    table_move,
)

__all__ = [
    "ABResult",
    "AlphaBeta",
    "CTL_SIZE",
    "DEFER_DEPTH",
    "INF",
    "Iteration",
    "LIMIT",
    "MPC_SHAPE",
    "NODES",
    "NO_MPC",
    "ROOT_BEST",
    "ROOT_DONE",
    "ROOT_SCORE",
    "SCALE",
    "SEL",
    "SELECTIVITY_PCT",
    "SELECTIVITY_T",
    "SEL_EXACT",
    "SHARED",
    "STOP",
    "known_children",
    "new_table",
    "search_root",
    "static_eval",
    "table_move",
    "values_to_depth",
]
