"""A fit's state, carried forward so that later data can be added without the earlier data.

Why: the data behind a fit does not outlive the machine that made it (self-play sets of
millions of positions are made on lent machines that are wiped after the session, and the
package may not hold more than a few MiB), so a fit can only ever see what one session makes.
The state keeps what least squares needs to go on: the weights in full precision (the mean)
and, per weight, the diagonal of ``X^T X`` over every position fitted so far (the precision).
A later fit on new data only minimises

    |y - X w|^2 + sum_i (l2 + K * precision_i) (w_i - mean_i)^2

which is the joint fit with the earlier positions' quadratic replaced by its diagonal (a
Laplace approximation, as in elastic weight consolidation); ``K`` (``--prior-weight``, 2) makes
up part of the off-diagonal terms it leaves out.  On two halves of WTHOR the anchored fit kept
nearly all of what fitting both halves at once gains over one half, and WTHOR's state with
self-play positions came close to the joint fit on both data sets' held-out games
(docs/evaluation.md, "Carrying a fit forward").

Format (``numpy.savez_compressed``): ``mean`` and ``precision`` float32 [stages, N_WEIGHTS],
``layout`` (the pattern sizes), ``rules`` and a ``meta`` JSON string (what each fit added).  A
missing, corrupt or mismatched file raises :class:`StateError` naming the file and the problem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine_server.eval.features import N_WEIGHTS, SIZES, STAGE_COUNTS
from engine_server.eval.weights import read_checked


class StateError(RuntimeError):
    """A fit state that cannot be used: missing, corrupt, or for other patterns or rules."""


@dataclass
class FitState:
    mean: np.ndarray          # float [stages, N_WEIGHTS], discs
    precision: np.ndarray     # float [stages, N_WEIGHTS], sum of diag(X^T X) so far
    rules: int
    meta: dict = field(default_factory=dict)

    @property
    def stages(self) -> int:
        return int(self.mean.shape[0])

    def save(self, path: str | Path) -> None:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        with open(tmp, "wb") as f:
            np.savez_compressed(f, mean=self.mean.astype(np.float32),
                                precision=self.precision.astype(np.float32), layout=SIZES,
                                rules=np.int64(self.rules),
                                meta=np.array(json.dumps(self.meta, sort_keys=True)))
        tmp.replace(p)

    @classmethod
    def load(cls, path: str | Path, rules: int | None = None) -> "FitState":
        arrays, file_rules, meta = read_checked(
            path, ("mean", "precision"), "fit state", StateError,
            "make one with othello-train patterns --save-state", rules)
        mean, precision, p = arrays["mean"], arrays["precision"], Path(path)
        ok = (mean.ndim == 2 and mean.shape[0] in STAGE_COUNTS and mean.shape[1] == N_WEIGHTS
              and precision.shape == mean.shape)
        if not ok:
            raise StateError(f"fit state {p} has shapes {mean.shape} and {precision.shape}, "
                             f"expected two [stages, {N_WEIGHTS}] with stages one of "
                             f"{STAGE_COUNTS}")
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(precision))
                and np.all(precision >= 0)):
            raise StateError(f"fit state {p} holds non-finite values or negative precision")
        return cls(mean.astype(np.float64), precision.astype(np.float64), file_rules, meta)


__all__ = ["FitState", "StateError"]
