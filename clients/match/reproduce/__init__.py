"""``othello-match reproduce seed000|seed001|seed002|seed004``: the seed papers' competitions,
run by the referee, with the papers' numbers printed next to ours.

* seed000 Table 1: round robin of Shallow Search (n=100), Min-Max Search (n=10, k=3) and MCTS
  with UCB1 (n=50, N=1200), 40 games per colour per pairing, average reward (win 1, draw 1/2).
* seed001 (reversed rules) claims: random rollouts beat value-map and Roxanne rollouts, and
  c = 1.41 beats larger and smaller c; seed 001's UCT at a fixed iteration budget per move.
* seed002 Table 1: MCTS-OCBA against plain UCT (one child and one playout per iteration, c=1,
  reward (a-b)/(a+b)) at 50, 100 and 500 simulations per move, random and heuristic rollouts,
  250 games per colour; plus OCBA with ``n0=1,sigma=equal`` under the heuristic rollout (why:
  docs/reproduce-seed002.md).  Both get the same per-move playout budget
  (``Limits(playouts=S)``).
* seed004 Table 1: random and pseudo-random play against each other by colour, 10,000 games per
  cell, in the rollout kernel (``rollout.policy_games``) for both pseudo-random definitions, with
  a referee cross-check of the post's definition; Fig. 1: MCTS (black) against pseudo-random
  play (white) by iterations (max_iter 1 to 200, nSims 1 and 50), plain and with domain
  knowledge, with the post's pseudo-random (``avoid=x``: X-squares re-drawn) on both sides.

All games start from the standard position (the papers use no opening set), and the agents build
a new tree every move (the papers keep no tree between moves).  ``--games N`` scales every count:
games per colour per pairing (seed000, seed001, seed002), games per point of Fig. 1 and per cell
of the referee cross-check of Table 1 (seed004).

One module per seed (``seed000`` ... ``seed004``: its paper's numbers, match configurations,
report, diagnostics and claims), ``common`` for the helpers they share, ``plots`` for the figures
and ``cli`` for the experiments by name and the command; this package re-exports their names.
"""

from __future__ import annotations

from .cli import EXPERIMENTS, main
from .common import _by_name, _pair, _score, _table_text, _tc, _verdict
from .plots import write_plots
from .seed000 import SEED000_LONG, SEED000_PAPER, SEED000_PLAYERS, seed000_configs, seed000_report
from .seed001 import (
    SEED001_C,
    SEED001_GAMES,
    SEED001_ITERATIONS,
    SEED001_RANDOM_COST_RATIO,
    SEED001_ROLLOUTS,
    seed001_configs,
    seed001_report,
)
from .seed002 import (
    SEED002_FIX,
    SEED002_GAMES,
    SEED002_PAPER,
    SEED002_ROLLOUTS,
    SEED002_SETTINGS,
    SEED002_SIMS,
    SEED002_UCT,
    seed002_configs,
    seed002_diagnostics,
    seed002_report,
)
from .seed004 import (
    SEED004_AVOID,
    SEED004_GAMES,
    SEED004_ITERS,
    SEED004_LONG_GAMES,
    SEED004_NSIMS,
    SEED004_POLICIES,
    SEED004_PSEUDO,
    SEED004_TABLE,
    SEED004_TABLE_GAMES,
    SEED004_VARIANTS,
    seed004_configs,
    seed004_report,
    seed004_table1,
)

__all__ = [
    "EXPERIMENTS", "main", "write_plots",
    "_by_name", "_pair", "_score", "_table_text", "_tc", "_verdict",
    "SEED000_LONG", "SEED000_PAPER", "SEED000_PLAYERS", "seed000_configs", "seed000_report",
    "SEED001_C", "SEED001_GAMES", "SEED001_ITERATIONS", "SEED001_RANDOM_COST_RATIO",
    "SEED001_ROLLOUTS", "seed001_configs", "seed001_report",
    "SEED002_FIX", "SEED002_GAMES", "SEED002_PAPER", "SEED002_ROLLOUTS", "SEED002_SETTINGS",
    "SEED002_SIMS", "SEED002_UCT", "seed002_configs", "seed002_diagnostics", "seed002_report",
    "SEED004_AVOID", "SEED004_GAMES", "SEED004_ITERS", "SEED004_LONG_GAMES", "SEED004_NSIMS",
    "SEED004_POLICIES", "SEED004_PSEUDO", "SEED004_TABLE", "SEED004_TABLE_GAMES",
    "SEED004_VARIANTS", "seed004_configs", "seed004_report", "seed004_table1",
]
