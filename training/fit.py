"""Fitting pattern weights: regularized least squares by preconditioned gradient descent (numba).

Why this method: the problem is linear in ~167k weights per stage with 91 active features per
position and a few million positions, so each pass over the data is a sparse gather/scatter that
numba runs in a fraction of a second on two cores; a dense solver (numpy/scipy normal
equations) would not fit in memory, and PyTorch would add a large dependency for no gain on a
linear model.  Conjugate gradients with a Jacobi preconditioner reach the least-squares fit in
20-40 passes (plain per-weight gradient steps, the Logistello update, diverge unless the step is
cut by the ~90 features every position shares).  L2 regularization pulls rare configurations
towards 0.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from engine_server.eval.features import N_FEATURES, N_WEIGHTS, WEIGHT_SCALE, feature_indices


@njit(cache=True, parallel=True)
def features_of(P, O):
    n = P.shape[0]
    out = np.empty((n, N_FEATURES), np.int32)
    for i in prange(n):
        buf = np.empty(N_FEATURES, np.int64)
        feature_indices(P[i], O[i], buf)
        for k in range(N_FEATURES):
            out[i, k] = buf[k]
    return out


@njit(cache=True)
def predict(X, w, out):
    for i in range(X.shape[0]):
        s = 0.0
        for k in range(X.shape[1]):
            s += w[X[i, k]]
        out[i] = s


@njit(cache=True, parallel=True)
def _normal_product(X, v, chunks, grads, u):
    """grads.sum(0) = X^T (X v), with u = X v (one buffer per chunk: no races)."""
    n = X.shape[0]
    for c in prange(chunks):
        g = grads[c]
        g[:] = 0.0
        lo = n * c // chunks
        hi = n * (c + 1) // chunks
        for i in range(lo, hi):
            s = 0.0
            for k in range(X.shape[1]):
                s += v[X[i, k]]
            u[i] = s
            for k in range(X.shape[1]):
                g[X[i, k]] += s


@njit(cache=True, parallel=True)
def _transpose_product(X, y, chunks, grads):
    n = X.shape[0]
    for c in prange(chunks):
        g = grads[c]
        g[:] = 0.0
        lo = n * c // chunks
        hi = n * (c + 1) // chunks
        for i in range(lo, hi):
            for k in range(X.shape[1]):
                g[X[i, k]] += y[i]


@njit(cache=True)
def _diagonal(X, n_weights):
    # diag(X^T X): a feature read twice in one position (a symmetric pattern) counts 4
    d = np.zeros(n_weights, np.float64)
    for i in range(X.shape[0]):
        for k in range(X.shape[1]):
            j = X[i, k]
            m = 0
            for q in range(X.shape[1]):
                if X[i, q] == j:
                    m += 1
            d[j] += m
    return d


def diagonal(X: np.ndarray) -> np.ndarray:
    """diag(X^T X) over the weights: how much the positions of ``X`` say about each weight (the
    preconditioner of :func:`fit_stage`, and the precision a fit state carries forward)."""
    return _diagonal(X, N_WEIGHTS)


def fit_stage(X: np.ndarray, y: np.ndarray, iterations: int = 40, l2: float = 2.0,
              w0: np.ndarray | None = None, callback=None,
              prior: tuple[np.ndarray, np.ndarray] | None = None,
              diag: np.ndarray | None = None) -> np.ndarray:
    """Weights (float64, discs) minimizing ``|y - Xw|^2 + l2 * |w|^2``: conjugate gradients on
    the normal equations, preconditioned by their diagonal (Jacobi).

    ``prior=(mean, precision)``: minimize ``|y - Xw|^2 + sum_i (l2 + precision_i)
    (w_i - mean_i)^2`` instead, the earlier fit a :class:`training.prior.FitState` carries
    (``w0`` defaults to its mean).  ``diag``: :func:`diagonal` of ``X`` when already known."""
    chunks = 8
    grads = np.zeros((chunks, N_WEIGHTS), np.float64)
    u = np.zeros(X.shape[0], np.float64)
    y = y.astype(np.float64)
    d = diagonal(X) if diag is None else diag
    if prior is None:
        lam: float | np.ndarray = l2
        start = w0
    else:
        mean, precision = prior
        lam = l2 + precision
        start = mean if w0 is None else w0
    w = np.zeros(N_WEIGHTS, np.float64) if start is None else start.astype(np.float64).copy()
    minv = 1.0 / (d + lam)

    def A(v):
        _normal_product(X, v, chunks, grads, u)
        return grads.sum(axis=0) + lam * v

    _transpose_product(X, y, chunks, grads)
    b = grads.sum(axis=0)
    if prior is not None:
        b += lam * prior[0]
    step = None if callback is None else \
        (lambda it: callback(it, float(np.sqrt(np.mean((y - u) ** 2)))))
    return conjugate_gradients(A, b, w, minv, iterations, step)


def quantize(w: np.ndarray) -> np.ndarray:
    """Weights in discs as the shipped files keep them: int16 in 1/WEIGHT_SCALE disc."""
    return np.clip(np.rint(w * WEIGHT_SCALE), -32767, 32767).astype(np.int16)


def conjugate_gradients(A, b: np.ndarray, w: np.ndarray, minv: np.ndarray, iterations: int,
                        callback=None) -> np.ndarray:
    """``iterations`` of conjugate gradients on ``A(w) = b`` from ``w`` (updated in place and
    returned), preconditioned by the inverse diagonal ``minv``; ``callback(it)`` after each."""
    r = b - A(w)
    z = minv * r
    p = z.copy()
    rz = float(r @ z)
    for it in range(iterations):
        if rz == 0.0:       # already exact: nothing to fit (no positions, or the prior fits)
            break
        Ap = A(p)
        alpha = rz / float(p @ Ap)
        w += alpha * p
        r -= alpha * Ap
        z = minv * r
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
        if callback is not None:
            callback(it)
    return w


__all__ = ["conjugate_gradients", "features_of", "predict", "diagonal", "fit_stage"]
