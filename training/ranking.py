"""Fitting the evaluation to the experts' choices: the move an expert played should value better
than its siblings.

Every other fit here asks for values (a game's outcome, a search's value, the book's negamax).
Values brought the early stages closer to a strong engine's numbers without better moves: the
moves a search chooses depend on how siblings compare, and the positions of games say nothing
about the siblings nobody played. WTHOR holds what the experts chose at each position; that is
information no search of our own weights has.

The loss, per stage, anchored on an earlier fit (its mean and precision, as ``--prior``):

    lam * sum_pairs max(0, margin - (e(alt) - e(played)))^2 + sum_i (l2 + K * precision_i)
    (w_i - mean_i)^2

where ``e`` values a child from its mover's (the opponent's) view, so the played move's child
should value at least ``margin`` discs lower than each alternative's. Siblings have the same
number of empties, so a pair lives in one stage. The squared hinge is convex; it is minimized by
rounds of least squares over the pairs that still violate the margin (an active set, each round
conjugate gradients from the last round's weights).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit, prange

from engine_server.eval.features import N_FEATURES, N_WEIGHTS, WEIGHT_SCALE, feature_indices
from engine_server.game import wthor
from engine_server.game.bitboard import U0, U1, U, legal_moves, lowest_square, make_move, popcount

from . import fit
from .patterns import stage_rows
from .prior import FitState, StateError


@njit(cache=True)
def _expert_children(P, O, move, keep, aP, aO, eP, eO, emp, parent):
    """For each kept position whose played move leaves the opponent a move: every other legal
    move's child (``aP``/``aO``) beside the played move's (``eP``/``eO``), both from the
    opponent's view; children after which the opponent must pass are left out."""
    k = 0
    for i in range(P.shape[0]):
        if not keep[i]:
            continue
        mv = move[i]
        if mv < 0 or mv > 63:
            continue
        moves = legal_moves(P[i], O[i])
        if (moves >> U(mv)) & U1 == U0:
            continue
        xP, xO = make_move(P[i], O[i], mv)
        if legal_moves(xP, xO) == U0:
            continue
        rest = moves & ~(U1 << U(mv))
        while rest != U0:
            sq = lowest_square(rest)
            rest &= rest - U1
            yP, yO = make_move(P[i], O[i], sq)
            if legal_moves(yP, yO) == U0:
                continue
            aP[k] = yP
            aO[k] = yO
            eP[k] = xP
            eO[k] = xO
            emp[k] = 63 - popcount(P[i] | O[i])   # the children's empties
            parent[k] = i
            k += 1
    return k


@njit(cache=True, parallel=True)
def _pair_rows(aP, aO, eP, eO, idx, coef):
    """Row k: the alternative's features (+1) less the played child's (-1), equal indices
    merged (most patterns of two siblings are the same and cancel); unused slots coef 0."""
    n = aP.shape[0]
    for k in prange(n):
        buf = np.empty(2 * N_FEATURES, np.int64)
        sgn = np.empty(2 * N_FEATURES, np.int64)
        tmp = np.empty(N_FEATURES, np.int64)
        feature_indices(aP[k], aO[k], tmp)
        for q in range(N_FEATURES):
            buf[q] = tmp[q]
            sgn[q] = 1
        feature_indices(eP[k], eO[k], tmp)
        for q in range(N_FEATURES):
            buf[N_FEATURES + q] = tmp[q]
            sgn[N_FEATURES + q] = -1
        order = np.argsort(buf)
        out = 0
        last = -1
        acc = 0
        for q in range(2 * N_FEATURES + 1):
            j = buf[order[q]] if q < 2 * N_FEATURES else -2
            if j != last:
                if last >= 0 and acc != 0 and out < idx.shape[1]:
                    idx[k, out] = last
                    coef[k, out] = acc
                    out += 1
                last = j
                acc = 0
            if q < 2 * N_FEATURES:
                acc += sgn[order[q]]
        for q in range(out, idx.shape[1]):
            idx[k, q] = 0
            coef[k, q] = 0


@njit(cache=True, parallel=True)
def _row_values(idx, coef, w, out):
    for i in prange(idx.shape[0]):
        s = 0.0
        for q in range(idx.shape[1]):
            c = coef[i, q]
            if c != 0:
                s += c * w[idx[i, q]]
        out[i] = s


@njit(cache=True, parallel=True)
def _normal_product(idx, coef, rows, v, chunks, grads):
    """grads.sum(0) = R^T (R v) over ``rows``."""
    n = rows.shape[0]
    for c in prange(chunks):
        g = grads[c]
        g[:] = 0.0
        for r in range(n * c // chunks, n * (c + 1) // chunks):
            i = rows[r]
            s = 0.0
            for q in range(idx.shape[1]):
                s += coef[i, q] * v[idx[i, q]]
            for q in range(idx.shape[1]):
                g[idx[i, q]] += coef[i, q] * s


@njit(cache=True)
def _column_sums(idx, coef, rows, n_weights, power):
    """Per weight, the sum of its coefficients (``power`` 1: R^T 1) or of their squares (2:
    diag(R^T R), the preconditioner) over ``rows``."""
    g = np.zeros(n_weights, np.float64)
    for r in range(rows.shape[0]):
        i = rows[r]
        for q in range(idx.shape[1]):
            c = coef[i, q]
            g[idx[i, q]] += c if power == 1 else c * c
    return g


def pair_rows(aP: np.ndarray, aO: np.ndarray, eP: np.ndarray, eO: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """The difference rows of pairs (index and coefficient arrays, as narrow as the widest)."""
    idx = np.zeros((len(aP), 2 * N_FEATURES), np.int32)
    coef = np.zeros((len(aP), 2 * N_FEATURES), np.int8)
    _pair_rows(aP, aO, eP, eO, idx, coef)
    width = int(np.max(np.count_nonzero(coef, axis=1))) if len(aP) else 1
    return np.ascontiguousarray(idx[:, :max(1, width)]), \
        np.ascontiguousarray(coef[:, :max(1, width)])


class Pairs:
    """Sibling pairs: the children of the move played and of each alternative, with empties."""

    def __init__(self, aP, aO, eP, eO, empties, parent):
        self.aP, self.aO, self.eP, self.eO = aP, aO, eP, eO
        self.empties, self.parent = empties, parent

    def __len__(self) -> int:
        return int(self.aP.shape[0])


def expert_pairs(games: wthor.Games, min_empties: int, max_empties: int, every: int,
                 seed: int, holdout: int = 20, held_out: bool = False) -> Pairs:
    """Pairs from the positions of ``games`` with ``min_empties``..``max_empties`` empties, one
    position in ``every`` (drawn with ``seed``), leaving out every ``holdout``-th game (the
    games ``othello-train heldout`` draws its positions from); ``held_out``: those games
    only, to score a fit on."""
    pos, valid, _ = wthor.replay(games)
    rng = np.random.default_rng(seed)
    test_game = pos.game % holdout == 0
    keep = (valid[pos.game] & (pos.empties >= min_empties) & (pos.empties <= max_empties)
            & (test_game if held_out else ~test_game)
            & (rng.integers(0, every, len(pos)) == 0))
    cap = int(np.sum(keep)) * 33 + 1
    aP, aO, eP, eO = (np.zeros(cap, np.uint64) for _ in range(4))
    emp = np.zeros(cap, np.int8)
    parent = np.zeros(cap, np.int64)
    k = _expert_children(pos.P, pos.O, pos.move.astype(np.int64), keep, aP, aO, eP, eO, emp,
                         parent)
    return Pairs(aP[:k], aO[:k], eP[:k], eO[:k], emp[:k], parent[:k])


def fit_pairs(idx: np.ndarray, coef: np.ndarray, mean: np.ndarray, lam: np.ndarray,
              margin: float, weight: float, rounds: int = 4, iterations: int = 15,
              log=print) -> np.ndarray:
    """Weights minimizing ``weight * sum max(0, margin - r.w)^2 + sum lam (w - mean)^2`` over
    the rows ``r`` of (idx, coef): rounds of conjugate gradients on the rows that violate the
    margin at the round's start."""
    chunks = 8
    grads = np.zeros((chunks, N_WEIGHTS), np.float64)
    w = mean.astype(np.float64).copy()
    vals = np.zeros(idx.shape[0], np.float64)
    for rnd in range(rounds):
        _row_values(idx, coef, w, vals)
        rows = np.nonzero(vals < margin)[0].astype(np.int64)
        log(f"  round {rnd}: {len(rows)} of {len(vals)} pairs inside the margin "
            f"(mean shortfall {float(np.mean(np.maximum(0, margin - vals))):.3f})")
        if not len(rows):
            break
        d = weight * _column_sums(idx, coef, rows, N_WEIGHTS, 2)
        minv = 1.0 / (d + lam)

        def A(v, rows=rows):
            _normal_product(idx, coef, rows, v, chunks, grads)
            return weight * grads.sum(axis=0) + lam * v

        b = weight * margin * _column_sums(idx, coef, rows, N_WEIGHTS, 1) + lam * mean
        w = fit.conjugate_gradients(A, b, w, minv, iterations)
    _row_values(idx, coef, w, vals)
    log(f"  after: {int(np.sum(vals < margin))} inside the margin, mean shortfall "
        f"{float(np.mean(np.maximum(0, margin - vals))):.3f}")
    return w


def ordered(pairs: Pairs, sel: np.ndarray, *stage_weights: np.ndarray) -> list[float]:
    """For each int16 stage weights, the share of the pairs ``sel`` whose played move they rank
    above the sibling (its child values lower for the opponent); the rows are built once."""
    idx, coef = pair_rows(pairs.aP[sel], pairs.aO[sel], pairs.eP[sel], pairs.eO[sel])
    v = np.zeros(len(sel))
    shares = []
    for w in stage_weights:
        _row_values(idx, coef, w.astype(np.float64) / WEIGHT_SCALE, v)
        shares.append(float(np.mean(v > 0)))
    return shares


def train_ranking(pairs: Pairs, prior: FitState, base: np.ndarray, margin: float,
                  weight: float, prior_weight: float = 2.0, l2: float = 5.0, window: int = 1,
                  rounds: int = 4, log=print, test: Pairs | None = None
                  ) -> tuple[np.ndarray, list[dict]]:
    """int16 weights: each stage with pairs refitted on ``prior``; the others ``base``.
    ``test``: pairs of held-out games, on which each stage's report gives the share of
    pairs ranked the experts' way before and after."""
    weights = base.copy()
    report = []
    n_stages = prior.stages
    for s in range(n_stages):
        own = stage_rows(pairs.empties, s, 0, n_stages)
        if not np.any(own):
            continue
        t0 = time.monotonic()
        sel = np.nonzero(stage_rows(pairs.empties, s, window, n_stages))[0]
        idx, coef = pair_rows(pairs.aP[sel], pairs.aO[sel], pairs.eP[sel], pairs.eO[sel])
        lam = l2 + prior_weight * prior.precision[s]
        log(f"stage {s}: {len(sel)} pairs ({int(own.sum())} of its own), width {idx.shape[1]}")
        w = fit_pairs(idx, coef, prior.mean[s], lam, margin, weight, rounds, log=log)
        weights[s] = fit.quantize(w)
        row = {"stage": s, "pairs": int(len(sel)),
               "changed_weights": int(np.count_nonzero(weights[s] != base[s])),
               "seconds": round(time.monotonic() - t0, 1)}
        if test is not None:
            own_test = np.nonzero(stage_rows(test.empties, s, 0, n_stages))[0]
            if len(own_test):
                row["test_pairs"] = int(len(own_test))
                before, after = ordered(test, own_test, base[s], weights[s])
                row["test_ordered_before"] = round(before, 4)
                row["test_ordered"] = round(after, 4)
        report.append(row)
        log(json.dumps(row))
    return weights, report


def add_parser(sub: Any) -> None:
    r = sub.add_parser("ranking", help="refit the weights so that the experts' moves rank "
                       "first among their siblings", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--prior", type=Path, required=True, metavar="STATE",
                   help="the fit to start from and anchor on (a --save-state file); stages "
                        "without pairs keep its weights")
    r.add_argument("--prior-weight", type=float, default=2.0, metavar="K",
                   help="how much the prior's data counts (as othello-train patterns)")
    r.add_argument("--base", type=Path, default=None, metavar="WEIGHTS",
                   help="weights for the stages without pairs, and whose description the "
                        "output keeps (default: the prior's, rounded)")
    r.add_argument("--margin", type=float, default=1.0,
                   help="discs by which the expert's move should value above each sibling")
    r.add_argument("--weight", type=float, default=4.0,
                   help="how much a pair counts against a position of the prior's data")
    r.add_argument("--every", type=int, default=10,
                   help="use one position in this many")
    r.add_argument("--min-empties", type=int, default=20)
    r.add_argument("--max-empties", type=int, default=56)
    r.add_argument("--rounds", type=int, default=4,
                   help="least-squares rounds over the pairs that still fall short")
    r.add_argument("--wthor", type=Path, default=wthor.DEFAULT_WTHOR)
    r.add_argument("--games", type=int, default=None,
                   help="use only the first N WTHOR games (a quick run)")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--out", type=Path, required=True, help="weights file to write")


def main(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from engine_server.eval import weights as wts
    from engine_server.game.bitboard import STANDARD

    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    for name in ("every", "rounds"):
        if getattr(args, name) < 1:
            log(f"othello-train ranking: --{name} must be at least 1")
            return 2
    if not (args.weight > 0 and args.prior_weight > 0):
        log("othello-train ranking: --weight and --prior-weight must be above 0")
        return 2
    try:
        prior = FitState.load(args.prior, STANDARD)
    except StateError as e:
        log(f"othello-train ranking: --prior: {e}")
        return 2
    games = wthor.read_dir(args.wthor)
    if args.games is not None:
        games = games.take(np.arange(min(args.games, len(games))))
    pairs = expert_pairs(games, args.min_empties, args.max_empties, args.every, args.seed)
    test = expert_pairs(games, args.min_empties, args.max_empties, 1, args.seed, held_out=True)
    log(f"{len(pairs)} pairs from {len(np.unique(pairs.parent))} positions of "
        f"{len(games)} WTHOR games ({len(test)} pairs of the held-out games to score on)")
    if args.base is not None:
        try:
            base, base_meta = wts.load(args.base, STANDARD)
        except wts.WeightsError as e:
            log(f"othello-train ranking: --base: {e}")
            return 2
    else:
        base = fit.quantize(prior.mean)
        base_meta = {}
    weights, report = train_ranking(pairs, prior, base.astype(np.int16), args.margin,
                                    args.weight, args.prior_weight, rounds=args.rounds,
                                    log=log, test=test)
    command = "othello-train " + " ".join(sys.argv[1:] if argv is None else argv)
    meta = {"command": command, "pairs": len(pairs), "prior": str(args.prior),
            "margin": args.margin, "weight": args.weight, "report": report,
            "base": {"file": None if args.base is None else str(args.base)} | base_meta}
    wts.save(args.out, weights, STANDARD, meta)
    log(f"wrote {args.out}")
    return 0


__all__ = ["Pairs", "add_parser", "expert_pairs", "fit_pairs", "main", "ordered", "pair_rows",
           "train_ranking"]
