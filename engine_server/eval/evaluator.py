"""Evaluators: priors over the moves and a value, for a batch of positions at once.

The interface the batched tree search (``search/mcts/batched.py``) calls: an :class:`Evaluator`
takes positions as bitboards (side to move first) plus who is to move, and returns

* priors float32 [N, 65]: over each position's legal moves (index = square, 64 = pass),
  summing to 1, zero elsewhere; a position without a move has the pass alone;
* values float32 [N] in [-1, 1], the expected result for the side to move.

A batch is the unit because a network costs nearly as much for one position as for eight;
the pattern evaluation is cheap either way and implements the same interface so that the search
code has one path and tests can run without a network.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
from numba import njit

from engine_server.game.bitboard import U1, U, flips, legal_moves

from . import planes
from .features import evaluate_raw
from .net import NetError, NetModel


class Evaluator(Protocol):
    def evaluate(self, Ps: np.ndarray, Os: np.ndarray,
                 black: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(priors float32 [N, 65], values float32 [N])`` for positions ``(Ps[i], Os[i])``
        (uint64) with ``black[i]`` true when Black is to move."""
        ...


class NetEvaluator:
    """A network's priors (masked softmax of its logits over the legal moves) and values."""

    def __init__(self, model: NetModel, legal: bool | None = None):
        if legal is not None and legal != model.legal:
            raise NetError(f"network {model.path} was made {'with' if model.legal else 'without'}"
                           f" the legal-move plane; asked for legal={legal}")
        self.model = model
        self.legal = model.legal

    def evaluate(self, Ps: np.ndarray, Os: np.ndarray,
                 black: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Ps = np.ascontiguousarray(Ps, dtype=np.uint64)
        Os = np.ascontiguousarray(Os, dtype=np.uint64)
        n = Ps.shape[0]
        x = np.empty((n, planes.n_planes(self.legal), 8, 8), np.float32)
        planes.encode_into(Ps, Os, np.ascontiguousarray(black, dtype=np.bool_), self.legal, 0, x)
        logits, values = self.model.run(x)
        priors = np.empty((n, planes.N_MOVES), np.float32)
        planes.masked_softmax_into(logits, Ps, Os, priors)
        # a network's tanh can round to just outside [-1, 1] in float32 arithmetic
        return priors, np.clip(values, -1.0, 1.0)


class PatternEvaluator:
    """The pattern evaluation as an evaluator: value ``tanh(eval / scale)`` (eval in discs),
    priors a softmax over the children's values at ``scale`` discs per unit, as the tree's
    ``eval_priors`` gives them."""

    def __init__(self, W: np.ndarray, scale: float = 8.0):
        if scale <= 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.W = np.ascontiguousarray(W, dtype=np.int32)
        self.scale = float(scale)

    def evaluate(self, Ps: np.ndarray, Os: np.ndarray,
                 black: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Ps = np.ascontiguousarray(Ps, dtype=np.uint64)
        Os = np.ascontiguousarray(Os, dtype=np.uint64)
        n = Ps.shape[0]
        priors = np.empty((n, planes.N_MOVES), np.float32)
        values = np.empty(n, np.float32)
        pattern_batch(Ps, Os, self.W, self.scale, priors, values)
        return priors, values


@njit(cache=True, nogil=True)
def pattern_batch(Ps: np.ndarray, Os: np.ndarray, W: np.ndarray, scale: float,
                  priors: np.ndarray, values: np.ndarray) -> None:
    child = np.empty(64, np.float64)
    for i in range(Ps.shape[0]):
        P = Ps[i]
        O = Os[i]
        values[i] = math.tanh(evaluate_raw(P, O, W) / 64.0 / scale)
        for k in range(planes.N_MOVES):
            priors[i, k] = 0.0
        moves = legal_moves(P, O)
        if moves == U(0):
            priors[i, planes.PASS_INDEX] = 1.0
            continue
        best = -1e18
        for sq in range(64):
            if (moves >> U(sq)) & U1:
                m = U1 << U(sq)
                f = flips(P, O, m)
                v = -evaluate_raw(O ^ f, P ^ f ^ m, W) / 64.0
                child[sq] = v
                best = max(best, v)
        total = 0.0
        for sq in range(64):
            if (moves >> U(sq)) & U1:
                e = math.exp((child[sq] - best) / scale)
                child[sq] = e
                total += e
        for sq in range(64):
            if (moves >> U(sq)) & U1:
                priors[i, sq] = child[sq] / total


__all__ = ["Evaluator", "NetEvaluator", "PatternEvaluator", "pattern_batch"]
