"""Multi-ProbCut statistics: how far a shallow search's value strays from a deep one's.

For a search of depth d the alpha-beta probes at the shallow depth ``shallow(d)`` (about d/2,
same parity) and cuts when the shallow value lies beyond the window by ``t * sigma(empties, d)``
(``t`` from the selectivity level).  ``sigma`` is fitted by ``othello-train mpc`` from the
engine's own searches with these very weights (Buro's recipe, as NTest does it), and stored
beside the weights as ``mpc-<rules>.json`` with the fingerprint of the weights it was fitted
for: statistics of other weights are refused (:class:`MpcError`), so that a retrained evaluation
never cuts with stale ones (``othello-train patterns`` refits them in the same run).

File format (JSON): ``version``, ``rules``, ``weights`` (fingerprint), ``model`` (the sigma
model's coefficients, see :func:`sigma_model`), ``sigma`` (a [61][65] table in discs, depth by
empties, 0 where no cut is made), ``meta`` (command, data, figures of the fit).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from pathlib import Path
from typing import Any

import numpy as np

from .weights import DATA_DIR

VERSION = 1
DEPTHS = 61        # depth 0..60
EMPTIES = 65       # empties 0..64
MIN_DEPTH = 3      # no probe below this depth (as NTest: none below height 3)
FILES = {0: "mpc-standard.json", 1: "mpc-reversed.json"}


class MpcError(RuntimeError):
    """Statistics that cannot be used: missing, corrupt, or fitted for other weights."""


def shallow(depth: int) -> int:
    """The probe depth for ``depth``: 2*floor(d/4) + d mod 2 (Edax; 8 -> 4, 9 -> 5, 12 -> 6)."""
    return 2 * (depth // 4) + (depth & 1)


def fingerprint(weights: np.ndarray) -> str:
    """The identity of a weight set (its int16 values)."""
    w = np.ascontiguousarray(np.asarray(weights), dtype=np.int16)
    return hashlib.blake2b(w.tobytes() + str(w.shape).encode(), digest_size=12).hexdigest()


SIGMA_FLOOR = 1.0  # discs: no cut is ever trusted to be finer than this


def sigma_model(coef: list[float], empties: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """sigma in discs = exp(c0 + c1*e + c2*d + c3*ds) with e = empties / 64, d = depth / 60,
    ds = shallow(depth) / 60 (the model is fitted on the logarithms of measured deviations)."""
    e = np.asarray(empties, dtype=np.float64) / 64.0
    d = np.asarray(depth, dtype=np.float64)
    ds = (2 * (d // 4) + d % 2) / 60.0
    d = d / 60.0
    c = coef
    return np.exp(c[0] + c[1] * e + c[2] * d + c[3] * ds)


def sigma_table(coef: list[float], fitted_depth: int) -> np.ndarray:
    """[61, 65] sigma in discs; 0 below MIN_DEPTH and where the depth exceeds the empties.
    Depths beyond ``fitted_depth`` (the deepest measured) take the value of the fitted depth
    of the same residue mod 4 (same probe parity): the deviation is not assumed to shrink
    where it was not measured.  Never below SIGMA_FLOOR."""
    d, e = np.meshgrid(np.arange(DEPTHS), np.arange(EMPTIES), indexing="ij")
    over = np.maximum(0, d - fitted_depth)
    d_eff = d - 4 * ((over + 3) // 4)
    t = np.maximum(sigma_model(coef, e, d_eff), SIGMA_FLOOR)
    t[(d < MIN_DEPTH) | (d > e)] = 0.0
    return t


class MpcStats:
    def __init__(self, sigma: np.ndarray, meta: dict[str, Any], path: str = ""):
        self.sigma = np.asarray(sigma, dtype=np.float64)
        self.meta = meta
        self.path = path
        self._margins: dict[tuple[float, int], np.ndarray] = {}
        self._lock = threading.Lock()

    def margins(self, t: float, scale: int) -> np.ndarray:
        """int64 [61, 65] margins ``ceil(t * sigma * scale)`` in score units (0: no cut)."""
        key = (float(t), int(scale))
        with self._lock:
            m = self._margins.get(key)
            if m is None:
                m = np.ascontiguousarray(np.ceil(t * self.sigma * scale).astype(np.int64))
                self._margins[key] = m
        return m


def save(path: str | Path, rules: int, weights: np.ndarray, coef: list[float],
         fitted_depth: int, meta: dict[str, Any]) -> None:
    sigma = sigma_table(coef, fitted_depth)
    doc = {"version": VERSION, "rules": int(rules), "weights": fingerprint(weights),
           "model": [float(c) for c in coef],
           "sigma": [[round(float(x), 4) for x in row] for row in sigma], "meta": meta}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, sort_keys=True) + "\n")


def load(path: str | Path, weights: np.ndarray, rules: int | None = None) -> MpcStats:
    p = Path(path)
    if not p.is_file():
        raise MpcError(f"Multi-ProbCut statistics {p} not found (fit them: othello-train mpc)")
    try:
        doc = json.loads(p.read_text())
        sigma = np.array(doc["sigma"], dtype=np.float64)
        version, file_rules, fp = int(doc["version"]), int(doc["rules"]), str(doc["weights"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise MpcError(f"Multi-ProbCut statistics {p} are unreadable: {e}") from None
    if version != VERSION or sigma.shape != (DEPTHS, EMPTIES) or \
            not np.all(np.isfinite(sigma)) or (sigma < 0).any():
        raise MpcError(f"Multi-ProbCut statistics {p} are not a version {VERSION} table of "
                       f"[{DEPTHS}][{EMPTIES}] non-negative numbers")
    if rules is not None and file_rules != int(rules):
        raise MpcError(f"Multi-ProbCut statistics {p} are for rules {file_rules}, not {rules}")
    if fp != fingerprint(weights):
        raise MpcError(f"Multi-ProbCut statistics {p} were fitted for other weights: refit "
                       "them with othello-train mpc")
    return MpcStats(sigma, doc.get("meta", {}), str(p))


def file_rules(path: str | Path) -> int:
    """The rules a statistics file was fitted for."""
    try:
        return int(json.loads(Path(path).read_text())["rules"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise MpcError(f"Multi-ProbCut statistics {path} are unreadable: {e}") from None


def default_path(rules: int) -> Path:
    return DATA_DIR / FILES[int(rules)]


_cache: dict[tuple[int, str], MpcStats | MpcError] = {}
_cache_lock = threading.Lock()


def shipped(rules: int, weights: np.ndarray) -> MpcStats:
    """The package's statistics for ``rules`` and the shipped ``weights`` (loaded once)."""
    key = (int(rules), fingerprint(weights))
    with _cache_lock:
        got = _cache.get(key)
        if got is None:
            try:
                got = load(default_path(rules), weights, rules)
            except MpcError as e:
                got = e
            _cache[key] = got
    if isinstance(got, MpcError):
        raise got
    return got


def fit(values: np.ndarray, empties: np.ndarray, min_count: int = 20
        ) -> tuple[list[float], list[dict[str, Any]]]:
    """The sigma model from searched values: ``values[i, d]`` the value (discs) of position i
    at depth d (NaN where not searched), ``empties[i]`` its empties.  Returns the model's
    coefficients and the measured cells (empties bucket, depth, n, mean, sigma) it was fitted
    to: per cell the residual deviation, then a least-squares fit of its logarithm weighted by
    the cell's count."""
    rows, cells = [], []
    n_pos, n_depth = values.shape
    for d in range(MIN_DEPTH, n_depth):
        ds = shallow(d)
        r = values[:, d] - values[:, ds]
        ok = np.isfinite(r)
        for lo in range(0, 64, 4):
            sel = ok & (empties >= lo) & (empties < lo + 4) & (empties >= d)
            k = int(sel.sum())
            if k < min_count:
                continue
            res = r[sel]
            sigma = float(np.sqrt(np.mean((res - res.mean()) ** 2)))
            e_mid = float(np.mean(empties[sel]))
            cells.append({"empties": e_mid, "depth": d, "n": k, "mean": float(res.mean()),
                          "sigma": sigma})
            if sigma > 0:
                ds_ = shallow(d)
                rows.append((k, e_mid / 64.0, d / 60.0, ds_ / 60.0, math.log(sigma)))
    if len(rows) < 5:
        raise MpcError(f"too few measured cells ({len(rows)}) to fit the sigma model")
    arr = np.array(rows)
    w = np.sqrt(arr[:, 0])
    X = np.column_stack([np.ones(len(arr)), arr[:, 1], arr[:, 2], arr[:, 3]])
    coef, *_ = np.linalg.lstsq(X * w[:, None], arr[:, 4] * w, rcond=None)
    return [float(c) for c in coef], cells


__all__ = ["MIN_DEPTH", "MpcError", "MpcStats", "default_path", "file_rules", "fingerprint",
           "fit", "load",
           "save", "shallow", "shipped", "sigma_model", "sigma_table"]
