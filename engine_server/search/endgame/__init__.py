"""Exact endgame solver: negamax alpha-beta in numba, with a transposition table.

Layers, by the number of empty squares ``n`` of a node:

* ``n > SHALLOW``: :func:`_deep` - transposition table probe/store, enhanced transposition
  cutoffs from ``ETC_MIN`` empties, moves sorted fastest-first (fewest opponent replies, corner
  replies counted twice, then corner stability, potential mobility and parity), principal
  variation search;
* ``SHALLOW < n <= SIMPLE`` with a null window: :func:`simple` - each thread's small tables in
  its control array instead of the big one, children looked up there while they are keyed,
  moves sorted by the opponent's replies and parity;
* ``4 <= n <= SHALLOW``: :func:`shallow` - no table (its probes would cost more than these small
  subtrees), moves tried in odd-quadrant-first (parity) order, corners first; at 4 empties
  :func:`_solve4` tries the empties in that order without generating the moves;
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

Several threads may share one table (``Solver(threads=N)``): each searches the whole tree, and
with ``ctl[SHARED]`` set, nodes from ``SHARED_MIN`` empties (and the root) take a move that
another thread is searching (its busy mark, :func:`busy_mark`, is set) after their other moves
(Weill's ABDADA).  Entries keep the position xor-ed with their data word, so an entry torn by two
threads writing it at once matches nothing.

Modules, one per layer of the solver:

* ``table.py`` - the control array's layout (``NODES``, ``LIMIT``, ``ABORTED``, ...,
  ``CTL_SIZE``) and the transposition table (``tt_index``, ``tt_probe``, ``tt_store``,
  :func:`new_table`);
* ``last.py`` - the last three empties (``last1``, ``solve2``, ``solve3``, ...) and the
  parity quadrants the other layers share (``odd_quadrants``);
* ``shallow.py`` - 4 to ``SHALLOW`` empties (``shallow``, ``_solve4``, ``small``) and the
  stability bound (``_stable``);
* ``simple.py`` - null windows up to ``SIMPLE`` empties (``simple``, its small tables, and the
  sort keys ``child_key`` the deep layer uses too);
* ``deep.py`` - above ``SHALLOW`` empties (``_deep``, ``solve_node``, ``order_key``);
* ``guess.py`` - the quick selective search whose estimate centres an exact solve's windows from
  ``ASPIRATION_MIN`` empties (width 2, each moved to the bound the last returned);
* ``solver.py`` - the root (:func:`solve_root_eval`, :func:`solve_root`, ``_table_move``) and
  the Python API (:class:`Solver`, :func:`solve`, ...);
* ``rootsolve.py`` - anytime solving of a search's root (:class:`RootSolver`): win/draw/loss
  first, then the exact margin.

The midgame search (``..alphabeta``) finishes its null-window nodes that reach the end with at
most ``SIMPLE`` empties through ``small`` and ``simple``, while ``guess.py`` runs the midgame
search: ``guess.py`` imports ``..alphabeta`` when it first builds that search, not when it is
imported, so either package may be imported first.

What callers may use is listed below; tests of private helpers import them from the module that
defines them.
"""

from __future__ import annotations

from .guess import Estimator, even_score, window_around
from .rootsolve import RootProof, RootSolver
from .solver import (
    ASPIRATION_MIN,
    MODES,
    Solver,
    SolveResult,
    WindowResult,
    default_solver,
    new_control,
    solve,
    solve_move_scores,
    solve_root,
    solve_root_eval,
)
from .table import ABORTED, DEFAULT_TABLE_BITS, LIMIT, NODES, SHARED, new_table

__all__ = [
    "ABORTED",
    "ASPIRATION_MIN",
    "DEFAULT_TABLE_BITS",
    "Estimator",
    "LIMIT",
    "MODES",
    "NODES",
    "RootProof",
    "RootSolver",
    "SHARED",
    "SolveResult",
    "Solver",
    "WindowResult",
    "default_solver",
    "even_score",
    "new_control",
    "new_table",
    "solve",
    "solve_move_scores",
    "solve_root",
    "solve_root_eval",
    "window_around",
]
