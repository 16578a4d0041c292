"""Leaf evaluation: the value of a simulated leaf (a rollout, the pattern evaluation or a mix),
the reward of a finished game, and the children's priors (from the evaluation or the square
table)."""

from __future__ import annotations

import math

from numba import njit

from engine_server.eval.features import evaluate_raw
from engine_server.game.bitboard import REVERSED, disc_score
from engine_server.game.memory import NO_REFCOUNT

from .nodes import FIRST, MOVE, NCHILD, PRIOR
from .options import REWARD_RATIO, SELECT_PUCT
from .rollout import rollout


@njit(cache=True, **NO_REFCOUNT)
def reward(mine, theirs, cfg):
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


@njit(cache=True, **NO_REFCOUNT)
def _eval_value(P, O, cfg, W):
    """``(z, margin)`` of the pattern evaluation for the side to move at (P, O)."""
    margin = evaluate_raw(P, O, W) / 64.0
    if cfg.reward == REWARD_RATIO:
        z = min(1.0, max(-1.0, margin / 64.0))
    else:
        z = math.tanh(margin / cfg.eval_scale)
    return z, margin


@njit(cache=True, **NO_REFCOUNT)
def simulate(bbs, node, cfg, table, rng, W):
    """One leaf value for ``node``: ``(z, margin)`` for the player who moved into ``node``.

    A rollout, the pattern evaluation, or a mix of the two (``cfg.eval``)."""
    lam = cfg.eval
    if lam >= 1.0:
        z, margin = _eval_value(bbs[node, 0], bbs[node, 1], cfg, W)
        return -z, -margin
    mine, theirs = rollout(bbs[node, 0], bbs[node, 1], cfg.policy, cfg.rules, table, rng)
    z, margin = reward(mine, theirs, cfg)
    if lam > 0.0:
        ze, me = _eval_value(bbs[node, 0], bbs[node, 1], cfg, W)
        z = lam * ze + (1.0 - lam) * z
        margin = lam * me + (1.0 - lam) * margin
    return -z, -margin


@njit(cache=True, **NO_REFCOUNT)
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


@njit(cache=True, **NO_REFCOUNT)
def set_priors(bbs, links, stats, node, cfg, table, W):
    """Priors of a freshly expanded node: from the evaluation when it is on, else the table."""
    if cfg.eval > 0.0:
        eval_priors(bbs, links, stats, node, cfg, W)
    else:
        table_priors(links, stats, node, table)


@njit(cache=True, **NO_REFCOUNT)
def uses_priors(cfg):
    """Whether expansion sets priors: progressive bias always, PUCT when the evaluation gives
    them (the driver asks too, for the root it expands itself)."""
    return cfg.bias > 0.0 or (cfg.eval > 0.0 and cfg.select == SELECT_PUCT)


@njit(cache=True, **NO_REFCOUNT)
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
