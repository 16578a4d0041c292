"""Selection: the child an expanded node visits next under the tree policy (UCB1 and its
variants, PUCT, round robin, OCBA), skipping children that proven bounds rule out."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .backup import any_child_open, best_child_lo, mean, pruned
from .nodes import FIRST, FLAGS, MAX_MARGIN, NCHILD, PRIOR, PROVEN_CHILD, W2, N, W
from .options import SELECT_OCBA, SELECT_OCBA_EQUAL, SELECT_PUCT, SELECT_ROUND_ROBIN


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
    best_lo = best_child_lo(stats, first, count) if solver else -MAX_MARGIN
    any_open = any_child_open(stats, first, count) if solver else False
    if mode == SELECT_PUCT:
        sqrt_n = math.sqrt(max(1.0, stats[node, N]))
        c = cfg.explore
        best = first
        best_v = -1e300
        for i in range(first, first + count):
            if solver and pruned(stats, i, best_lo, any_open):
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
        if solver and pruned(stats, i, best_lo, any_open):
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
        m = mean(stats, i)
        if m > top:
            top = m
    n_best = 0
    least = first
    for i in range(first, first + count):
        if mean(stats, i) == top:
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
        if mean(stats, first + j) != top:
            ref = j
            break
    d_ref = top - mean(stats, first + ref)
    ref_term = sig[ref] / d_ref
    sum_sq = 0.0
    for j in range(count):
        i = first + j
        m = mean(stats, i)
        if m != top:
            t = (sig[j] / (top - m)) / ref_term
            ratios[j] = t * t
            sum_sq += ratios[j] * ratios[j] / (sig[j] * sig[j])
    for j in range(count):
        if mean(stats, first + j) == top:
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
