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
"""

from __future__ import annotations

import difflib
import math
from typing import Any, NamedTuple, get_type_hints

import numpy as np
from numba import njit

from engine_server.eval.features import evaluate_raw
from engine_server.game.bitboard import (
    PASS,
    REVERSED,
    S32,
    STANDARD,
    U0,
    U1,
    U,
    disc_score,
    flips,
    legal_moves,
    popcount,
    rng_next,
)

from .endgame import ABORTED, LIMIT, NODES, solve_root
from .rollout import POLICY_NAMES, rollout

# links columns
PARENT, FIRST, NCHILD, MOVE, FLAGS = 0, 1, 2, 3, 4
N_LINKS = 5
# stats columns
N, W, W2, MARGIN, PRIOR, MOB, LO, HI = 0, 1, 2, 3, 4, 5, 6, 7
N_STATS = 8
MAX_MARGIN = 64.0
# flags
TERMINAL = 1
COMPLETE = 2  # min-max: this root child's principal line is finished
SOLVED = 4    # the bounds LO and HI have met: the exact margin is known
NOSOLVE = 8   # the endgame solver ran out of nodes here once: do not try again
PROVEN_CHILD = 16  # some child has proven bounds (selection only then checks them)
# meta
NEXT_FREE, CAPACITY, ROOT, NO_EXPAND = 0, 1, 2, 3

BYTES_PER_NODE = 16 + 4 * N_LINKS + 8 * N_STATS

SELECT_UCB1 = 0
SELECT_OCBA = 1
SELECT_PUCT = 2
SELECT_ROUND_ROBIN = 3  # least-visited child (shallow search)
SELECT_MINMAX = 4       # seed 000 Alg. 3.3
# OCBA with one standard deviation for all siblings: the allocation follows the gaps to the best
# mean alone.  Per-child sample deviations are meaningless when rollouts are (nearly)
# deterministic, as seed 002's greedy heuristic rollout is (docs/reproduce-seed002.md).
SELECT_OCBA_EQUAL = 5
# every rule select_child knows: tree_config refuses other ids (the names are for its errors)
SELECT_NAMES = {SELECT_UCB1: "ucb1", SELECT_OCBA: "ocba", SELECT_PUCT: "puct",
                SELECT_ROUND_ROBIN: "round-robin", SELECT_MINMAX: "minmax",
                SELECT_OCBA_EQUAL: "ocba-equal"}

REWARD_WIN = 0     # +1 / 0 / -1 (a win rate of 1 / 0.5 / 0)
REWARD_RATIO = 1   # (a - b) / (a + b), a = own discs (seed 002); negated under reversed rules
REWARD_NAMES = {REWARD_WIN: "win", REWARD_RATIO: "ratio"}

NEVER_EXPAND = 1 << 62  # an ``expand_at`` no leaf reaches


class TreeConfig(NamedTuple):
    """The tree policy: one typed field per option, with its default.  Build it with
    :func:`tree_config`.

    numba compiles a kernel once per tuple of field *types* (values are run-time data), so a
    config must hold exactly these Python types or every kernel compiles again for it, and the
    names and types are checked when the agent is built rather than when it first searches.
    ``rules`` belongs to the driver, which replaces it with the position's rules.

    numba's key for a NamedTuple is the class plus the field *types*, so two same-typed fields
    reordered would match stale cached code under numba's own per-file check; the cache
    directory named by every kernel source (engine_server/kernel_cache.py) rules that out
    wherever the class lives.
    """

    select: int = SELECT_UCB1       # selection rule, see SELECT_*
    explore: float = math.sqrt(2)   # exploration constant c
    logk: float = 1.0               # UCB1: c * sqrt(LOGK * ln(N) / n)
    q01: bool = False               # UCB1 uses win rates in [0, 1] instead of z in [-1, 1]
    parent_sum: bool = False        # UCB1's N is the sum of the children's counts (seed 000)
    expand_at: int = 0              # a leaf is expanded once it has this many visits
    sim_all: bool = False           # expand a leaf and simulate every new child once (seed 001)
    descend: bool = False           # after expanding, descend to a child before simulating
    sims: int = 1                   # playouts per iteration at the chosen leaf
    policy: int = 0                 # rollout policy id (rollout.py; 0 is random)
    reward: int = REWARD_WIN        # REWARD_*
    rules: int = STANDARD           # set by the driver from the position searched
    n0: int = 0                     # OCBA: initial samples per child
    sigma0: float = 0.0             # OCBA: standard deviation assumed below two samples
    depth: int = 0                  # min-max: layers k
    per_node: int = 0               # min-max: playouts n per node
    solver: bool = False            # score-bounded MCTS-Solver back-ups (proven moves decide)
    solve_empties: int = 0          # endgame solve at leaves with at most this many empties
    solve_nodes: int = 0            # node budget of one endgame solve inside a batch
    bias: float = 0.0               # progressive bias: + BIAS * prior / (n + 1) in UCB1
    eval: float = 0.0               # share of the pattern evaluation in a leaf's value
    eval_scale: float = 8.0         # discs of evaluation per unit of tanh (its steepness)


# options whose integer stands for one of a few named values
_CHOICES = {"select": SELECT_NAMES, "reward": REWARD_NAMES,
            "rules": {STANDARD: "standard", REVERSED: "reversed"},
            "policy": {v: "/".join(k for k in POLICY_NAMES if POLICY_NAMES[k] == v)
                       for v in sorted(set(POLICY_NAMES.values()))}}


# as classes: under ``from __future__ import annotations`` the class holds only their names
_TYPES: dict[str, type] = get_type_hints(TreeConfig)


def _coerce(name: str, kind: type, value: object) -> bool | int | float:
    """``value`` as exactly ``kind``, or a TypeError naming the option."""
    is_bool = isinstance(value, (bool, np.bool_))
    if kind is bool and is_bool:
        return bool(value)
    if kind is int and isinstance(value, (int, np.integer)) and not is_bool:
        return int(value)
    if kind is float and isinstance(value, (int, float, np.integer, np.floating)) \
            and not is_bool:
        return float(value)
    raise TypeError(f"tree option {name}={value!r} must be {kind.__name__}, "
                    f"not {type(value).__name__}")


def tree_config(base: TreeConfig | None = None, **options: Any) -> TreeConfig:
    """A checked :class:`TreeConfig`: ``base`` (default: all defaults) with ``options`` set.

    Unknown option names raise ValueError listing the valid ones, values of the wrong type
    TypeError (an int is accepted for a float), and an id outside its known set ValueError."""
    if base is not None and not isinstance(base, TreeConfig):
        raise TypeError(f"expected a TreeConfig (see tree_config), got {type(base).__name__}")
    fields = TreeConfig._fields
    for key in options:
        if key not in fields:
            close = difflib.get_close_matches(key, fields, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown tree option {key!r}{hint}; valid options: "
                             + ", ".join(fields))
    cfg = (base if base is not None else TreeConfig())._replace(**options)
    values: dict[str, Any] = {}  # each of its field's type, checked by _coerce
    for name in fields:
        value = _coerce(name, _TYPES[name], getattr(cfg, name))
        choices = _CHOICES.get(name)
        if choices is not None and value not in choices:
            raise ValueError(f"tree option {name}={value!r} is not one of "
                             + ", ".join(f"{k} ({v})" for k, v in choices.items()))
        values[name] = value
    return TreeConfig(**values)


STATUS_OK = 0
STATUS_FULL = 1    # no room to expand: Python grows the arrays or sets NO_EXPAND
STATUS_DONE = 2    # the policy has nothing left to do (e.g. min-max lines complete, solved root)


def new_tree(capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    bbs = np.zeros((capacity, 2), dtype=np.uint64)
    links = np.zeros((capacity, N_LINKS), dtype=np.int32)
    stats = np.zeros((capacity, N_STATS), dtype=np.float64)
    meta = np.array([0, capacity, 0, 0], dtype=np.int64)
    return bbs, links, stats, meta


@njit(cache=True)
def init_root(bbs, links, stats, meta, P, O):
    bbs[0, 0] = P
    bbs[0, 1] = O
    links[0, PARENT] = -1
    links[0, FIRST] = -1
    links[0, NCHILD] = -1
    links[0, MOVE] = -1
    links[0, FLAGS] = 0
    for k in range(N_STATS):
        stats[0, k] = 0.0
    stats[0, LO] = -MAX_MARGIN
    stats[0, HI] = MAX_MARGIN
    meta[NEXT_FREE] = 1
    meta[ROOT] = 0


@njit(cache=True)
def expand(bbs, links, stats, meta, node):
    """Create all children of ``node`` (a pass is an explicit child).  False when out of room."""
    P = bbs[node, 0]
    O = bbs[node, 1]
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            links[node, FLAGS] |= TERMINAL
            links[node, NCHILD] = 0
            links[node, FIRST] = -1
            return True
        count = 1
    else:
        count = popcount(moves)
    start = meta[NEXT_FREE]
    if start + count > meta[CAPACITY]:
        return False
    meta[NEXT_FREE] = start + count
    links[node, FIRST] = start
    links[node, NCHILD] = count
    prior = 1.0 / count
    i = start
    if moves == U0:
        bbs[i, 0] = O
        bbs[i, 1] = P
        _init_child(links, stats, i, node, PASS, prior)
        return True
    mm = moves
    while mm:
        m = mm & (~mm + U1)
        mm ^= m
        f = flips(P, O, m)
        bbs[i, 0] = O ^ f
        bbs[i, 1] = P ^ f ^ m
        _init_child(links, stats, i, node, popcount(m - U1), prior)
        i += 1
    return True


@njit(cache=True, inline="always")
def _init_child(links, stats, i, parent, move, prior):
    links[i, PARENT] = parent
    links[i, FIRST] = -1
    links[i, NCHILD] = -1
    links[i, MOVE] = move
    links[i, FLAGS] = 0
    stats[i, N] = 0.0
    stats[i, W] = 0.0
    stats[i, W2] = 0.0
    stats[i, MARGIN] = 0.0
    stats[i, PRIOR] = prior
    stats[i, MOB] = 0.0
    stats[i, LO] = -MAX_MARGIN
    stats[i, HI] = MAX_MARGIN


@njit(cache=True)
def _is_terminal(bbs, node):
    P = bbs[node, 0]
    O = bbs[node, 1]
    return legal_moves(P, O) == U0 and legal_moves(O, P) == U0


@njit(cache=True)
def _reward(mine, theirs, cfg):
    """``(z, margin)`` for the side owning ``mine`` at the end of a game."""
    rules = cfg.rules
    score = disc_score(mine, theirs, rules)
    if cfg.reward == REWARD_RATIO:
        total = mine + theirs
        d = (theirs - mine) if rules == REVERSED else (mine - theirs)
        z = d / total if total > 0 else 0.0
    else:
        z = 1.0 if score > 0 else (-1.0 if score < 0 else 0.0)
    return z, float(score)


@njit(cache=True)
def _eval_value(P, O, cfg, W):
    """``(z, margin)`` of the pattern evaluation for the side to move at (P, O)."""
    margin = evaluate_raw(P, O, W) / 64.0
    if cfg.reward == REWARD_RATIO:
        z = min(1.0, max(-1.0, margin / 64.0))
    else:
        z = math.tanh(margin / cfg.eval_scale)
    return z, margin


@njit(cache=True)
def simulate(bbs, node, cfg, table, rng, W):
    """One leaf value for ``node``: ``(z, margin)`` for the player who moved into ``node``.

    A rollout, the pattern evaluation, or a mix of the two (``cfg.eval``)."""
    lam = cfg.eval
    if lam >= 1.0:
        z, margin = _eval_value(bbs[node, 0], bbs[node, 1], cfg, W)
        return -z, -margin
    mine, theirs = rollout(bbs[node, 0], bbs[node, 1], cfg.policy, cfg.rules, table, rng)
    z, margin = _reward(mine, theirs, cfg)
    if lam > 0.0:
        ze, me = _eval_value(bbs[node, 0], bbs[node, 1], cfg, W)
        z = lam * ze + (1.0 - lam) * z
        margin = lam * me + (1.0 - lam) * margin
    return -z, -margin


@njit(cache=True)
def eval_priors(bbs, links, stats, node, cfg, W):
    """Children's priors from the pattern evaluation: a softmax over the children's values
    (for the side to move at ``node``) at ``cfg.eval_scale`` discs per unit."""
    first = links[node, FIRST]
    count = links[node, NCHILD]
    if count <= 0:
        return
    best = -1e18
    for i in range(first, first + count):
        v = -evaluate_raw(bbs[i, 0], bbs[i, 1], W) / 64.0
        stats[i, PRIOR] = v
        best = max(best, v)
    total = 0.0
    for i in range(first, first + count):
        e = math.exp((stats[i, PRIOR] - best) / cfg.eval_scale)
        stats[i, PRIOR] = e
        total += e
    for i in range(first, first + count):
        stats[i, PRIOR] /= total


@njit(cache=True)
def set_priors(bbs, links, stats, node, cfg, table, W):
    """Priors of a freshly expanded node: from the evaluation when it is on, else the table."""
    if cfg.eval > 0.0:
        eval_priors(bbs, links, stats, node, cfg, W)
    else:
        table_priors(links, stats, node, table)


@njit(cache=True)
def uses_priors(cfg):
    """Whether expansion sets priors: progressive bias always, PUCT when the evaluation gives
    them (the driver asks too, for the root it expands itself)."""
    return cfg.bias > 0.0 or (cfg.eval > 0.0 and cfg.select == SELECT_PUCT)


@njit(cache=True, inline="always")
def _add_result(stats, i, z, margin):
    stats[i, N] += 1.0
    stats[i, W] += z
    stats[i, W2] += z * z
    stats[i, MARGIN] += margin


@njit(cache=True)
def backup(links, stats, node, z, margin, mobility, root):
    """Add one result along the path ``node .. root``; ``z`` is for the mover into ``node``."""
    i = node
    parity = 0
    while True:
        _add_result(stats, i, z, margin)
        if parity == 0:
            # seed 004: mobility of the simulated node goes to the nodes with its side to move
            stats[i, MOB] += mobility
        if i == root:
            break
        i = links[i, PARENT]
        z = -z
        margin = -margin
        parity ^= 1


@njit(cache=True, inline="always")
def _mean(stats, i):
    n = stats[i, N]
    return stats[i, W] / n if n > 0 else 0.0


@njit(cache=True)
def table_priors(links, stats, node, table):
    """Children's priors from the square table, scaled to [0, 1] among the siblings (a pass or
    equal values: all 1), for progressive bias."""
    first = links[node, FIRST]
    count = links[node, NCHILD]
    if count <= 0:
        return
    lo = 1 << 60
    hi = -(1 << 60)
    for i in range(first, first + count):
        mv = links[i, MOVE]
        v = table[mv] if mv < 64 else 0
        lo = min(lo, v)
        hi = max(hi, v)
    for i in range(first, first + count):
        mv = links[i, MOVE]
        v = table[mv] if mv < 64 else 0
        stats[i, PRIOR] = (v - lo) / (hi - lo) if hi > lo else 1.0


@njit(cache=True, inline="always")
def _solvable(bbs, links, node, solve_k):
    """An unexpanded, unproven node with few enough empties for the exact solver."""
    if links[node, NCHILD] >= 0 or links[node, FLAGS] & (SOLVED | TERMINAL | NOSOLVE):
        return False
    return 64 - popcount(bbs[node, 0] | bbs[node, 1]) <= solve_k


@njit(cache=True, inline="always")
def proven_z(stats, i):
    """The proven outcome of a decided node as a reward for the mover into it."""
    return 1.0 if stats[i, LO] > 0.0 else (-1.0 if stats[i, HI] < 0.0 else 0.0)


@njit(cache=True, inline="always")
def proven_margin(stats, i):
    """The margin to back up from a decided node: exact, or the bound nearest to zero."""
    lo = stats[i, LO]
    hi = stats[i, HI]
    if lo > 0.0:
        return lo
    if hi < 0.0:
        return hi
    return 0.0


@njit(cache=True)
def set_bounds(links, stats, node, lo, hi):
    """Intersect ``node``'s bounds with a new proven pair (mover-into view).  True if tighter."""
    lo = max(lo, stats[node, LO])
    hi = min(hi, stats[node, HI])
    if lo == stats[node, LO] and hi == stats[node, HI]:
        return False
    if lo > hi:  # both sides are proofs, so this cannot happen; keep the new lower bound
        lo = hi = min(max(lo, -MAX_MARGIN), MAX_MARGIN)
    stats[node, LO] = lo
    stats[node, HI] = hi
    if lo == hi:
        links[node, FLAGS] |= SOLVED
    p = links[node, PARENT]
    if p >= 0:
        links[p, FLAGS] |= PROVEN_CHILD
    return True


@njit(cache=True)
def prove_up(links, stats, node, root):
    """Score-bounded back-up: after ``node``'s bounds changed, tighten its ancestors.

    A parent's side to move takes the best child, so from the view of the mover into the parent
    ``LO = -max(children's HI)`` and ``HI = -max(children's LO)`` (unexpanded or unproven
    children count as [-64, 64]).  Stops at the first ancestor that does not change."""
    i = node
    while i != root:
        p = links[i, PARENT]
        first = links[p, FIRST]
        max_lo = -MAX_MARGIN - 1.0
        max_hi = -MAX_MARGIN - 1.0
        for c in range(first, first + links[p, NCHILD]):
            if stats[c, LO] > max_lo:
                max_lo = stats[c, LO]
            if stats[c, HI] > max_hi:
                max_hi = stats[c, HI]
        if not set_bounds(links, stats, p, -max_hi, -max_lo):
            return
        i = p


@njit(cache=True)
def settled(links, stats, node):
    """A solved, expanded node one of whose children is proven to reach its value (a root
    solved before its children were known is not settled: there is no move to play yet)."""
    if not links[node, FLAGS] & SOLVED:
        return False
    if links[node, FLAGS] & TERMINAL:
        return True
    count = links[node, NCHILD]
    if count <= 0:
        return False
    first = links[node, FIRST]
    return _best_lo(stats, first, count) >= -stats[node, LO]


@njit(cache=True, inline="always")
def _best_lo(stats, first, count):
    b = -MAX_MARGIN
    for i in range(first, first + count):
        if stats[i, LO] > b:
            b = stats[i, LO]
    return b


@njit(cache=True, inline="always")
def _pruned(stats, i, best_lo, any_open):
    """A child not worth visiting: it cannot beat a sibling's proven margin (its upper bound is
    no higher), or it is a proven loss while a sibling may still draw or win."""
    hi = stats[i, HI]
    if hi <= best_lo and stats[i, LO] < hi:
        return True
    return hi < 0.0 and any_open


@njit(cache=True, inline="always")
def _any_open(stats, first, count):
    """Some child is not a proven loss for the side choosing."""
    for i in range(first, first + count):
        if stats[i, HI] >= 0.0:
            return True
    return False


@njit(cache=True)
def select_child(bbs, links, stats, node, cfg, rng):
    """The child of an expanded ``node`` that the tree policy visits next."""
    first = links[node, FIRST]
    count = links[node, NCHILD]
    if count == 1:
        return first
    mode = cfg.select
    if mode == SELECT_OCBA or mode == SELECT_OCBA_EQUAL:
        return _select_ocba(links, stats, first, count, cfg)
    if mode == SELECT_ROUND_ROBIN:
        best = first
        for i in range(first + 1, first + count):
            if stats[i, N] < stats[best, N]:
                best = i
        return best
    solver = cfg.solver and (links[node, FLAGS] & PROVEN_CHILD) != 0
    best_lo = _best_lo(stats, first, count) if solver else -MAX_MARGIN
    any_open = _any_open(stats, first, count) if solver else False
    if mode == SELECT_PUCT:
        sqrt_n = math.sqrt(max(1.0, stats[node, N]))
        c = cfg.explore
        best = first
        best_v = -1e300
        for i in range(first, first + count):
            if solver and _pruned(stats, i, best_lo, any_open):
                continue
            n = stats[i, N]
            q = stats[i, W] / n if n > 0 else 0.0
            v = q + c * stats[i, PRIOR] * sqrt_n / (1.0 + n)
            if v > best_v:
                best_v = v
                best = i
        return best
    # UCB1 family; unvisited children first, in move order
    total = 0.0
    for i in range(first, first + count):
        if stats[i, N] == 0.0:
            return i
        total += stats[i, N]
    parent_n = total if cfg.parent_sum else max(stats[node, N], 1.0)
    log_term = cfg.logk * math.log(parent_n)
    c = cfg.explore
    bias = cfg.bias
    q01 = cfg.q01
    best = first
    best_v = -1e300
    for i in range(first, first + count):
        if solver and _pruned(stats, i, best_lo, any_open):
            continue
        n = stats[i, N]
        q = stats[i, W] / n
        if q01:
            q = 0.5 * (q + 1.0)
        v = q + c * math.sqrt(log_term / n) + bias * stats[i, PRIOR] / (n + 1.0)
        if v > best_v:
            best_v = v
            best = i
    return best


@njit(cache=True)
def _select_ocba(links, stats, first, count, cfg):
    """OCBA (docs/reference/design-notes.md section 3): sample every child n0 times, then the child
    whose OCBA target count is furthest above its current count ("most starving")."""
    n0 = cfg.n0
    best = -1
    for i in range(first, first + count):
        if stats[i, N] < n0 and (best < 0 or stats[i, N] < stats[best, N]):
            best = i
    if best >= 0:
        return best
    sigma0 = cfg.sigma0
    equal = cfg.select == SELECT_OCBA_EQUAL
    # best mean (ties: keep the set; if all tie, least visited)
    top = -1e300
    for i in range(first, first + count):
        m = _mean(stats, i)
        if m > top:
            top = m
    n_best = 0
    least = first
    for i in range(first, first + count):
        if _mean(stats, i) == top:
            n_best += 1
        if stats[i, N] < stats[least, N]:
            least = i
    if n_best == count:
        return least
    ratios = np.empty(count)
    sig = np.empty(count)
    for j in range(count):
        i = first + j
        n = stats[i, N]
        m = stats[i, W] / n
        var = stats[i, W2] / n - m * m
        s = math.sqrt(var) if (n >= 2 and var > 0.0) else sigma0
        # equal: the ratios below depend on the deviations only relative to each other
        sig[j] = 1.0 if equal else max(s, 1e-3)
    # reference: the first non-best child
    ref = -1
    for j in range(count):
        if _mean(stats, first + j) != top:
            ref = j
            break
    d_ref = top - _mean(stats, first + ref)
    ref_term = sig[ref] / d_ref
    sum_sq = 0.0
    for j in range(count):
        i = first + j
        m = _mean(stats, i)
        if m != top:
            t = (sig[j] / (top - m)) / ref_term
            ratios[j] = t * t
            sum_sq += ratios[j] * ratios[j] / (sig[j] * sig[j])
    for j in range(count):
        if _mean(stats, first + j) == top:
            ratios[j] = sig[j] * math.sqrt(sum_sq)
    total_ratio = 0.0
    total_n = 1.0
    for j in range(count):
        total_ratio += ratios[j]
        total_n += stats[first + j, N]
    best = first
    best_gap = -1e300
    for j in range(count):
        gap = total_n * ratios[j] / total_ratio - stats[first + j, N]
        if gap > best_gap:
            best_gap = gap
            best = first + j
    return best


@njit(cache=True)
def _minmax_pick_root_child(links, stats, root):
    first = links[root, FIRST]
    best = -1
    for i in range(first, first + links[root, NCHILD]):
        if links[i, FLAGS] & COMPLETE:
            continue
        if best < 0 or stats[i, N] < stats[best, N]:
            best = i
    return best


@njit(cache=True)
def _minmax_backup(links, stats, target, top, root, z, margin):
    """Alg. 3.3 compares each layer's nodes by their own n playouts, so a playout counts only at
    its start node; the root child and the root just count the work (for scheduling and the
    reported visits)."""
    i = target
    while True:
        if i == target or i == top or i == root:
            _add_result(stats, i, z, margin)
        if i == root:
            break
        i = links[i, PARENT]
        z = -z
        margin = -margin


@njit(cache=True)
def _minmax_iteration(bbs, links, stats, meta, cfg, table, rng, W):
    """One step of seed 000 Alg. 3.3 on the tree.  Returns (playouts, status)."""
    root = meta[ROOT]
    top = _minmax_pick_root_child(links, stats, root)
    if top < 0:
        return 0, STATUS_DONE
    k = cfg.depth
    per_node = cfg.per_node
    node = top
    depth = 1
    while True:
        if links[node, NCHILD] < 0:
            if not expand(bbs, links, stats, meta, node):
                return 0, STATUS_FULL
        if links[node, FLAGS] & TERMINAL or depth >= k:
            links[top, FLAGS] |= COMPLETE
            return 0, STATUS_OK
        first = links[node, FIRST]
        count = links[node, NCHILD]
        target = -1
        for i in range(first, first + count):
            if stats[i, N] < per_node:
                target = i
                break
        if target >= 0:
            z, margin = simulate(bbs, target, cfg, table, rng, W)
            _minmax_backup(links, stats, target, top, root, z, margin)
            return 1, STATUS_OK
        # every child sampled n times: the mover expands its best child (max for us, min for
        # the opponent, which is the max of the opponent's own view stored in W)
        best = first
        for i in range(first + 1, first + count):
            if _mean(stats, i) > _mean(stats, best):
                best = i
        node = best
        depth += 1


@njit(cache=True)
def _solve_leaf(bbs, links, stats, node, rules, budget, tt, ctl):
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
            p, status = _minmax_iteration(bbs, links, stats, meta, cfg, table, rng, W)
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
                if solve_k > 0 and _solvable(bbs, links, node, solve_k):
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
        if solve_k > 0 and _solvable(bbs, links, node, solve_k) and not _is_terminal(bbs, node):
            if _solve_leaf(bbs, links, stats, node, rules, solve_nodes, tt, ctl):
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
        if links[node, FLAGS] & TERMINAL or (links[node, NCHILD] < 0 and _is_terminal(bbs, node)):
            P = bbs[node, 0]
            O = bbs[node, 1]
            z, margin = _reward(popcount(P), popcount(O), cfg)
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
                    if solver and _is_terminal(bbs, i):
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


@njit(cache=True)
def _children_unvisited(links, stats, node):
    first = links[node, FIRST]
    for i in range(first, first + links[node, NCHILD]):
        if stats[i, N] == 0.0:
            return True
    return False


@njit(cache=True)
def count_subtree(links, node):
    """Number of nodes in the subtree of ``node`` (explicit stack, no recursion)."""
    stack = np.empty(64 * 64, dtype=np.int64)
    total = 0
    top = 0
    stack[0] = node
    top = 1
    while top > 0:
        top -= 1
        i = stack[top]
        total += 1
        n = links[i, NCHILD]
        if n > 0:
            f = links[i, FIRST]
            if top + n > stack.shape[0]:
                bigger = np.empty(stack.shape[0] * 2 + n, dtype=np.int64)
                bigger[:top] = stack[:top]
                stack = bigger
            for c in range(f, f + n):
                stack[top] = c
                top += 1
    return total


@njit(cache=True)
def copy_subtree(src_bbs, src_links, src_stats, node, dst_bbs, dst_links, dst_stats):
    """Copy the subtree of ``node`` into empty arrays with ``node`` as row 0 (breadth first,
    so children stay contiguous).  Returns the number of rows used."""
    # queue of (source row, destination row); children get their rows when the parent is copied
    queue = np.empty(dst_bbs.shape[0], dtype=np.int64)
    dst_of = np.empty(dst_bbs.shape[0], dtype=np.int64)
    queue[0] = node
    dst_of[0] = 0
    head = 0
    tail = 1
    next_free = 1
    while head < tail:
        s = queue[head]
        d = dst_of[head]
        head += 1
        dst_bbs[d, 0] = src_bbs[s, 0]
        dst_bbs[d, 1] = src_bbs[s, 1]
        for k in range(src_stats.shape[1]):
            dst_stats[d, k] = src_stats[s, k]
        dst_links[d, MOVE] = src_links[s, MOVE]
        dst_links[d, FLAGS] = src_links[s, FLAGS]
        n = src_links[s, NCHILD]
        dst_links[d, NCHILD] = n
        if n > 0:
            f = src_links[s, FIRST]
            dst_links[d, FIRST] = next_free
            for c in range(n):
                queue[tail] = f + c
                dst_of[tail] = next_free + c
                tail += 1
            for c in range(n):
                dst_links[next_free + c, PARENT] = d
            next_free += n
        else:
            dst_links[d, FIRST] = -1
    dst_links[0, PARENT] = -1
    dst_links[0, MOVE] = -1
    return next_free


@njit(cache=True)
def rng_pick(rng, n):
    return np.int64(((rng_next(rng) >> S32) * U(n)) >> S32)
