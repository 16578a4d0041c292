"""The network's input and output layout, shared by the engine (ONNX inference) and training.

Input ``planes``: float32 ``[N, C, 8, 8]``, ``plane[r][c]`` is square ``c + 8 * r`` (bit
``c + 8 * r`` of a bitboard, a1 = 0 at the top left):

* 0: the side to move's discs, 1: the opponent's discs (relative, so one network plays both
  colours);
* 2: the side to move, all ones when Black is to move (the seed's third plane);
* 3: the side to move's legal moves, when the network was made with ``legal`` planes.

Outputs: ``policy`` float32 ``[N, 65]`` logits (64 squares, then pass) and ``value`` float32
``[N, 1]`` in [-1, 1], the expected result for the side to move (win 1, draw 0, loss -1).
Illegal moves' logits are ignored by every consumer (masked before the softmax).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine_server.game.bitboard import U1, U, legal_moves

N_MOVES = 65          # 64 squares and pass
PASS_INDEX = 64
BASE_PLANES = 3       # own, opponent, side to move
INPUT_NAME = "planes"
POLICY_NAME = "policy"
VALUE_NAME = "value"
FORMAT_VERSION = "1"  # ONNX metadata othello.format: bumped when this layout changes


def n_planes(legal: bool) -> int:
    return BASE_PLANES + (1 if legal else 0)


@njit(cache=True)
def encode_into(Ps, Os, black, legal, rules, out):
    """Fill ``out[i]`` (``C x 8 x 8`` float32) for positions ``(Ps[i], Os[i])`` with
    ``black[i]`` true when Black is to move; ``legal`` adds the legal-move plane."""
    n = Ps.shape[0]
    for i in range(n):
        P = Ps[i]
        O = Os[i]
        M = legal_moves(P, O) if legal else U(0)
        side = 1.0 if black[i] else 0.0
        for sq in range(64):
            bit = U1 << U(sq)
            r = sq >> 3
            c = sq & 7
            out[i, 0, r, c] = 1.0 if P & bit else 0.0
            out[i, 1, r, c] = 1.0 if O & bit else 0.0
            out[i, 2, r, c] = side
            if legal:
                out[i, 3, r, c] = 1.0 if M & bit else 0.0


def encode(Ps: np.ndarray, Os: np.ndarray, black: np.ndarray, legal: bool,
           rules: int = 0) -> np.ndarray:
    """Planes for a batch of positions (uint64 arrays, bool array)."""
    Ps = np.ascontiguousarray(Ps, dtype=np.uint64)
    Os = np.ascontiguousarray(Os, dtype=np.uint64)
    black = np.ascontiguousarray(black, dtype=np.bool_)
    out = np.zeros((Ps.shape[0], n_planes(legal), 8, 8), np.float32)
    encode_into(Ps, Os, black, legal, rules, out)
    return out


@njit(cache=True)
def masked_softmax_into(logits, Ps, Os, out):
    """Priors over each position's legal moves (pass alone when there is none), from logits
    ``[N, 65]``; the rest are 0."""
    n = logits.shape[0]
    for i in range(n):
        M = legal_moves(Ps[i], Os[i])
        top = -1e30
        for k in range(64):
            if (M >> U(k)) & U1 and logits[i, k] > top:
                top = logits[i, k]
        for k in range(N_MOVES):
            out[i, k] = 0.0
        if M == U(0):
            out[i, PASS_INDEX] = 1.0
            continue
        total = 0.0
        for k in range(64):
            if (M >> U(k)) & U1:
                e = np.exp(logits[i, k] - top)
                out[i, k] = e
                total += e
        for k in range(64):
            out[i, k] /= total


def masked_softmax(logits: np.ndarray, Ps: np.ndarray, Os: np.ndarray) -> np.ndarray:
    out = np.zeros((logits.shape[0], N_MOVES), np.float32)
    masked_softmax_into(np.ascontiguousarray(logits, dtype=np.float32),
                        np.ascontiguousarray(Ps, dtype=np.uint64),
                        np.ascontiguousarray(Os, dtype=np.uint64), out)
    return out


__all__ = ["BASE_PLANES", "FORMAT_VERSION", "INPUT_NAME", "N_MOVES", "PASS_INDEX", "POLICY_NAME",
           "VALUE_NAME", "encode", "encode_into", "masked_softmax", "masked_softmax_into",
           "n_planes"]
