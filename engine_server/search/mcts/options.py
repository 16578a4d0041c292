"""The tree policy as data: :class:`TreeConfig`, one typed field per option, the ids of its
selection rules and rewards, and :func:`tree_config`, which builds a checked one.  Every tree
kernel reads its policy from a ``TreeConfig`` (engine_server/search/mcts/__init__.py)."""

from __future__ import annotations

import difflib
import math
from typing import Any, NamedTuple, get_type_hints

import numpy as np

from engine_server.game.bitboard import REVERSED, STANDARD

from .rollout import POLICY_NAMES

SELECT_UCB1 = 0
SELECT_OCBA = 1
SELECT_PUCT = 2
SELECT_ROUND_ROBIN = 3  # least-visited child (shallow search)
SELECT_MINMAX = 4       # the UCB1 paper Alg. 3.3
# OCBA with one standard deviation for all siblings: the allocation follows the gaps to the best
# mean alone.  Per-child sample deviations are meaningless when rollouts are (nearly)
# deterministic, as the OCBA paper's greedy heuristic rollout is (docs/papers/ocba.md).
SELECT_OCBA_EQUAL = 5
# every rule select_child knows: tree_config refuses other ids (the names are for its errors)
SELECT_NAMES = {SELECT_UCB1: "ucb1", SELECT_OCBA: "ocba", SELECT_PUCT: "puct",
                SELECT_ROUND_ROBIN: "round-robin", SELECT_MINMAX: "minmax",
                SELECT_OCBA_EQUAL: "ocba-equal"}

REWARD_WIN = 0     # +1 / 0 / -1 (a win rate of 1 / 0.5 / 0)
REWARD_RATIO = 1   # (a - b) / (a + b), a = own discs (the OCBA paper); negated under reversed rules
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
    parent_sum: bool = False        # UCB1's N is the sum of the children's counts (the UCB1 paper)
    expand_at: int = 0              # a leaf is expanded once it has this many visits
    sim_all: bool = False           # expand a leaf, simulate each new child once (CS303 report)
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
