"""The search tree in preallocated numpy arrays, and the numba kernels that grow and search it.

One node per row of three arrays (row-major, so a node's fields sit together in memory):

* ``bbs[i] = (P, O)`` - uint64 bitboards, side to move first;
* ``links[i] = (parent, first_child, n_children, move, flags)`` - int32; children of a node are
  contiguous rows ``first_child .. first_child + n_children - 1``; ``n_children = -1`` means not
  expanded yet; ``move`` is the square that led here (64 = pass);
* ``stats[i] = (N, W, W2, MARGIN, PRIOR, MOB, LO, HI)`` - float64.  ``W`` and ``MARGIN`` are sums
  from the point of view of the player who moved *into* the node (the parent's side to move), so a
  parent picks the child with the best ``W / N``; rewards ``z`` are in [-1, 1].  ``LO``/``HI`` are
  proven bounds of the final disc margin from the same point of view (score-bounded MCTS,
  Cazenave and Saffidine 2010): [-64, 64] until the solver, a terminal position or the children's
  bounds say more; the node is ``SOLVED`` when they meet.

``meta = (next_free, capacity, root, no_expand)`` is an int64 array shared with Python.

Everything an iteration does - selection, expansion, rollouts, back-propagation - runs inside
:func:`run_batch`; Python calls it for batches of a few milliseconds and checks its clock between
them.  The policy is described by ``cfg``, a :class:`TreeConfig`, so that every agent shares these
kernels.

The kernels live in one module per concern, all re-exported here so that ``tree.X`` names them
as before:

* ``tree_options.py`` - :class:`TreeConfig`, :func:`tree_config`, the ``SELECT_*`` and
  ``REWARD_*`` ids;
* ``tree_nodes.py`` - the columns, flags and status codes, and node storage (``new_tree``,
  ``init_root``, ``expand``, ``count_subtree``, ``copy_subtree``);
* ``tree_leaf.py`` - leaf evaluation (``simulate``, ``_reward``, ``_eval_value``) and priors;
* ``tree_backup.py`` - back-up and proven bounds (``backup``, ``set_bounds``, ``prove_up``,
  ``settled``, ``proven_z``, ``proven_margin``, ``_pruned``);
* ``tree_select.py`` - selection (``select_child``, ``_select_ocba``);
* ``tree_minmax.py`` - seed 000's min-max iteration;
* ``tree_batch.py`` - the batch loop (``run_batch``) and the endgame solve of small leaves.
"""

from __future__ import annotations

from engine_server.game.bitboard import REVERSED, STANDARD  # T.STANDARD, T.REVERSED

from .tree_backup import (
    _add_result,
    _any_open,
    _best_lo,
    _mean,
    _pruned,
    backup,
    prove_up,
    proven_margin,
    proven_z,
    set_bounds,
    settled,
)
from .tree_batch import _children_unvisited, _solvable, _solve_leaf, run_batch
from .tree_leaf import (
    _eval_value,
    _reward,
    eval_priors,
    set_priors,
    simulate,
    table_priors,
    uses_priors,
)
from .tree_minmax import _minmax_backup, _minmax_iteration, _minmax_pick_root_child
from .tree_nodes import (
    BYTES_PER_NODE,
    CAPACITY,
    COMPLETE,
    FIRST,
    FLAGS,
    HI,
    LO,
    MARGIN,
    MAX_MARGIN,
    MOB,
    MOVE,
    N_LINKS,
    N_STATS,
    NCHILD,
    NEXT_FREE,
    NO_EXPAND,
    NOSOLVE,
    PARENT,
    PRIOR,
    PROVEN_CHILD,
    ROOT,
    SOLVED,
    STATUS_DONE,
    STATUS_FULL,
    STATUS_OK,
    TERMINAL,
    W2,
    N,
    W,
    _init_child,
    _is_terminal,
    copy_subtree,
    count_subtree,
    expand,
    init_root,
    new_tree,
)
from .tree_options import (
    _CHOICES,
    _TYPES,
    NEVER_EXPAND,
    REWARD_NAMES,
    REWARD_RATIO,
    REWARD_WIN,
    SELECT_MINMAX,
    SELECT_NAMES,
    SELECT_OCBA,
    SELECT_OCBA_EQUAL,
    SELECT_PUCT,
    SELECT_ROUND_ROBIN,
    SELECT_UCB1,
    TreeConfig,
    _coerce,
    tree_config,
)
from .tree_select import _select_ocba, rng_pick, select_child

# every name tree.py held before the split, for ``tree.X`` and ``from .tree import X``
__all__ = [
    "REVERSED", "STANDARD", "SELECT_UCB1", "SELECT_OCBA", "SELECT_PUCT", "SELECT_ROUND_ROBIN",
    "SELECT_MINMAX", "SELECT_OCBA_EQUAL", "SELECT_NAMES", "REWARD_WIN", "REWARD_RATIO",
    "REWARD_NAMES", "NEVER_EXPAND", "TreeConfig", "_CHOICES", "_TYPES", "_coerce",
    "tree_config", "PARENT", "FIRST", "NCHILD", "MOVE", "FLAGS", "N_LINKS", "N", "W", "W2",
    "MARGIN", "PRIOR", "MOB", "LO", "HI", "N_STATS", "MAX_MARGIN", "TERMINAL", "COMPLETE",
    "SOLVED", "NOSOLVE", "PROVEN_CHILD", "NEXT_FREE", "CAPACITY", "ROOT", "NO_EXPAND",
    "BYTES_PER_NODE", "STATUS_OK", "STATUS_FULL", "STATUS_DONE", "new_tree", "init_root",
    "expand", "_init_child", "_is_terminal", "count_subtree", "copy_subtree", "_reward",
    "_eval_value", "simulate", "eval_priors", "set_priors", "uses_priors", "table_priors",
    "_add_result", "backup", "_mean", "proven_z", "proven_margin", "set_bounds", "prove_up",
    "settled", "_best_lo", "_pruned", "_any_open", "select_child", "_select_ocba", "rng_pick",
    "_minmax_pick_root_child", "_minmax_backup", "_minmax_iteration", "_solvable",
    "_solve_leaf", "run_batch", "_children_unvisited",
]
