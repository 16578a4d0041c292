"""Shipped evaluation weights: one compressed file per rule variant, loaded once per process.

Format (``numpy.savez_compressed``): ``weights`` int16 [stages, N_WEIGHTS] in 1/64 disc, with
``stages`` one of ``STAGE_COUNTS`` (15 stages of 4 plies, 30 of 2, or one per ply),
``layout`` (the pattern sizes, so a file made for other patterns is refused), ``rules`` and a
``meta`` JSON string (the training command, data and figures).  A missing, corrupt or
mismatched file raises :class:`WeightsError` naming the file and the problem.
"""

from __future__ import annotations

import json
import threading
import zipfile
from pathlib import Path

import numpy as np

from engine_server.game.bitboard import REVERSED, STANDARD

from .features import N_WEIGHTS, SIZES, STAGE_COUNTS

DATA_DIR = Path(__file__).parent / "data"
FILES = {STANDARD: "standard.npz", REVERSED: "reversed.npz"}


class WeightsError(RuntimeError):
    """Evaluation weights that cannot be used: missing, corrupt, or for other patterns."""


def weights_path(rules: int) -> Path:
    return DATA_DIR / FILES[int(rules)]


def save(path: str | Path, weights: np.ndarray, rules: int, meta: dict) -> None:
    w = np.asarray(weights)
    if not _shape_ok(w) or w.dtype != np.int16:
        raise WeightsError(f"weights must be int16 [stages, {N_WEIGHTS}] with stages one of "
                           f"{STAGE_COUNTS}, got {w.dtype} {w.shape}")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        np.savez_compressed(f, weights=w, layout=SIZES, rules=np.int64(rules),
                            meta=np.array(json.dumps(meta, sort_keys=True)))


def _shape_ok(w: np.ndarray) -> bool:
    return w.ndim == 2 and w.shape[0] in STAGE_COUNTS and w.shape[1] == N_WEIGHTS


def read_checked(path: str | Path, keys: tuple[str, ...], what: str, error: type[Exception],
                 hint: str, rules: int | None = None) -> tuple[dict[str, np.ndarray], int, dict]:
    """``(arrays, rules, meta)`` of a compressed file made for these patterns (the weights, or
    a fit state of training/prior.py); a file that is missing, unreadable, made for other
    patterns or, when ``rules`` is given, for other rules raises ``error`` naming ``what`` and
    the path (``hint``: how to get one)."""
    p = Path(path)
    if not p.is_file():
        raise error(f"{what} {p} not found ({hint})")
    try:
        with np.load(p, allow_pickle=False) as z:
            arrays = {k: z[k] for k in keys}
            layout = z["layout"]
            file_rules = int(z["rules"])
            meta = json.loads(str(z["meta"]))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
        raise error(f"{what} {p}: unreadable ({e})") from None
    if layout.shape != SIZES.shape or not np.array_equal(layout, SIZES):
        raise error(f"{what} {p}: made for other patterns")
    if rules is not None and file_rules != int(rules):
        raise error(f"{what} {p}: for rules {file_rules}, not {rules}")
    return arrays, file_rules, meta


def load(path: str | Path, rules: int | None = None) -> tuple[np.ndarray, dict]:
    """``(weights int32 [stages, N_WEIGHTS], meta)`` from ``path``."""
    arrays, _, meta = read_checked(path, ("weights",), "evaluation weights", WeightsError,
                                   "reinstall the package, or train them: othello-train "
                                   "patterns", rules)
    w = arrays["weights"]
    if not _shape_ok(w) or w.dtype != np.int16:
        raise WeightsError(f"evaluation weights {path} have shape {w.shape} {w.dtype}, "
                           f"expected int16 [stages, {N_WEIGHTS}] with stages one of "
                           f"{STAGE_COUNTS}")
    return np.ascontiguousarray(w, dtype=np.int32), meta


_cache: dict[int, np.ndarray] = {}
_lock = threading.Lock()


def default_weights(rules: int) -> np.ndarray:
    """The shipped weights for ``rules`` (loaded on first use, then shared)."""
    r = int(rules)
    with _lock:
        if r not in _cache:
            _cache[r] = load(weights_path(r), r)[0]
        return _cache[r]


def load_or_default(path: str | Path | None, rules: int) -> np.ndarray:
    """The weights in ``path``, or the shipped ones for ``rules`` when it is None."""
    return load(path, rules)[0] if path is not None else default_weights(rules)


__all__ = ["WeightsError", "weights_path", "save", "load", "load_or_default", "default_weights",
           "read_checked", "DATA_DIR"]
