"""``othello-reproduce ucb1|uct|ocba|dk``: the papers' competitions,
run by the referee, with the papers' numbers printed next to ours.

* ucb1 (the 2022 UCB1 paper), Table 1: round robin of Shallow Search (n=100), Min-Max Search
  (n=10, k=3) and MCTS with UCB1 (n=50, N=1200), 40 games per colour per pairing, average
  reward (win 1, draw 1/2).
* uct (the CS303 report, reversed rules) claims: random rollouts beat value-map and Roxanne
  rollouts, and c = 1.41 beats larger and smaller c; the report's UCT at a fixed iteration
  budget per move.
* ocba (the OCBA paper), Table 1: MCTS-OCBA against plain UCT (one child and one playout per
  iteration, c=1, reward (a-b)/(a+b)) at 50, 100 and 500 simulations per move, random and
  heuristic rollouts, 250 games per colour; plus OCBA with ``n0=1,sigma=equal`` under the
  heuristic rollout (why: docs/papers/ocba.md).  Both get the same per-move playout budget
  (``Limits(playouts=S)``).
* dk (the blog post with domain knowledge), Table 1: random and pseudo-random play against each
  other by colour, 10,000 games per cell, in the rollout kernel (``rollout.policy_games``) for both
  pseudo-random definitions, with a referee cross-check of the post's definition; Fig. 1: MCTS
  (black) against pseudo-random play (white) by iterations (max_iter 1 to 200, nSims 1 and 50),
  plain and with domain knowledge, with the post's pseudo-random (``avoid=x``: X-squares re-drawn)
  on both sides.

All games start from the standard position (the papers use no opening set), and the agents build
a new tree every move (the papers keep no tree between moves).  ``--games N`` scales every count:
games per colour per pairing (ucb1, uct, ocba), games per point of Fig. 1 and per cell of the
referee cross-check of Table 1 (dk).

One module per paper (``ucb1``, ``uct``, ``ocba``, ``dk``: its numbers, match configurations,
report, diagnostics and claims), ``common`` for the helpers they share, ``plots`` for the figures
and ``cli`` for the experiments by name and the command.
"""

from __future__ import annotations

from .cli import EXPERIMENTS, main
from .plots import write_plots

__all__ = ["EXPERIMENTS", "main", "write_plots"]
