"""Monte Carlo tree search, the search of the papers' agents: the tree in preallocated numpy
arrays, and the numba kernels that grow and search it.

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

Modules, one per concern:

* ``options.py`` - :class:`TreeConfig`, :func:`tree_config`, the ``SELECT_*`` and ``REWARD_*``
  ids;
* ``nodes.py`` - the columns, flags and status codes, and node storage (``new_tree``,
  ``init_root``, ``expand``, ``count_subtree``, ``copy_subtree``);
* ``rollout.py`` - the rollout (playout) policies;
* ``leaf.py`` - leaf evaluation (``simulate``, ``reward``, ``_eval_value``) and priors;
* ``backup.py`` - back-up and proven bounds (``backup``, ``set_bounds``, ``prove_up``,
  ``settled``, ``proven_z``, ``proven_margin``, ``pruned``);
* ``select.py`` - selection (``select_child``, ``_select_ocba``);
* ``minmax.py`` - the 2022 UCB1 paper's min-max iteration (its Alg. 3.3);
* ``batch.py`` - the batch loop (``run_batch``) and the endgame solve of small leaves;
* ``driver.py`` - :class:`TreeSearch`, the anytime driver every tree agent runs on;
* ``batched.py`` - :class:`BatchedTreeSearch`, PUCT with virtual loss and a batched evaluator.

What callers may use is listed below; tests of private helpers import them from the module that
defines them.
"""

from __future__ import annotations

from .backup import prove_up, set_bounds, settled
from .batch import run_batch
from .batched import BatchedTreeSearch
from .driver import DEFAULT_MEMORY, Budget, FinalChoice, TreeSearch, best_mean, most_visits
from .leaf import set_priors
from .nodes import (
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
    copy_subtree,
    count_subtree,
    expand,
    init_root,
    new_tree,
)
from .options import (
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
    tree_config,
)
from .select import select_child

__all__ = [
    "BYTES_PER_NODE",
    "BatchedTreeSearch",
    "Budget",
    "CAPACITY",
    "COMPLETE",
    "DEFAULT_MEMORY",
    "FIRST",
    "FLAGS",
    "FinalChoice",
    "HI",
    "LO",
    "MARGIN",
    "MAX_MARGIN",
    "MOB",
    "MOVE",
    "N",
    "NCHILD",
    "NEVER_EXPAND",
    "NEXT_FREE",
    "NOSOLVE",
    "NO_EXPAND",
    "PARENT",
    "PRIOR",
    "PROVEN_CHILD",
    "REWARD_NAMES",
    "REWARD_RATIO",
    "REWARD_WIN",
    "ROOT",
    "SELECT_MINMAX",
    "SELECT_NAMES",
    "SELECT_OCBA",
    "SELECT_OCBA_EQUAL",
    "SELECT_PUCT",
    "SELECT_ROUND_ROBIN",
    "SELECT_UCB1",
    "SOLVED",
    "STATUS_DONE",
    "STATUS_FULL",
    "STATUS_OK",
    "TERMINAL",
    "TreeConfig",
    "TreeSearch",
    "W",
    "W2",
    "best_mean",
    "copy_subtree",
    "count_subtree",
    "expand",
    "init_root",
    "most_visits",
    "new_tree",
    "prove_up",
    "run_batch",
    "select_child",
    "set_bounds",
    "set_priors",
    "settled",
    "tree_config",
]
