"""Pattern-weight training: positions, labels, one fit per stage, the weights file and a report.

Standard rules: the positions of the WTHOR games, labelled (side to move's view) with

* the game's *theoretical* score (perfect play from the position with 24 empties reached in
  the game, computed by the federation's solver) above 24 empties;
* the exact value of the game's position at ``solve_empties`` empties (our solver) from there
  down: fewer of the players' own endgame errors than the real score;
* a game that ended before that is labelled with its final score.

Reversed rules (and standard rules with ``--selfplay``): games played by the engine itself (see
:mod:`training.selfplay`), labelled the same way with the solver.

Each stage (4 plies, or 2 or 1 with ``--stages 30`` or ``60``) is fitted on the positions of
its own plies and of the stages on either side (``window``), which smooths the weights from one
stage to the next; a game-wise held-out split (every 20th game) gives the error reported per
stage.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine_server.eval.features import N_STAGES, N_WEIGHTS, STAGE_COUNTS, WEIGHT_SCALE
from engine_server.game import wthor
from engine_server.game.bitboard import REVERSED, STANDARD

from . import fit, labels
from .prior import FitState


@dataclass
class Dataset:
    """Positions (side to move's view), targets in discs, and the game of each position;
    ``value``, where known, the search value the player found there (discs, side to move's
    view: ``othello-train selfplay``'s data)."""

    P: np.ndarray
    O: np.ndarray
    empties: np.ndarray
    target: np.ndarray
    game: np.ndarray
    value: np.ndarray | None = None

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        extra = {} if self.value is None else {"value": self.value}
        np.savez(tmp, P=self.P, O=self.O, empties=self.empties, target=self.target,
                 game=self.game, **extra)
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> "Dataset":
        with np.load(path) as z:
            return cls(z["P"], z["O"], z["empties"], z["target"], z["game"],
                       z["value"] if "value" in z.files else None)

    def __len__(self) -> int:
        return int(self.P.shape[0])

    @staticmethod
    def concat(parts: list["Dataset"]) -> "Dataset":
        off = 0
        games = []
        for d in parts:
            games.append(d.game + off)
            off += int(d.game.max()) + 1 if len(d) else 0
        values = [d.value for d in parts]
        value = None if any(v is None for v in values) else np.concatenate(values)
        return Dataset(*(np.concatenate([getattr(d, k) for d in parts])
                         for k in ("P", "O", "empties", "target")), np.concatenate(games),
                       value)


def label_games(pos: wthor.Positions, final: np.ndarray, early: np.ndarray | None,
                early_empties: int, solve_empties: int, rules: int, threads: int,
                progress=None) -> np.ndarray:
    """Targets (side to move's view) for the positions of some games.

    ``early[g]``: black's margin for positions above ``early_empties`` (WTHOR's theoretical
    score), or None to use the exact value at ``solve_empties`` for every position; ``final[g]``:
    black's final margin, used when a game never reached ``solve_empties`` empties."""
    n_games = len(final)
    at = np.nonzero(pos.empties == solve_empties)[0]
    exact_black = final.astype(np.int64).copy()
    v = labels.solve_many(pos.P[at], pos.O[at], rules, threads=threads, progress=progress)
    g = pos.game[at]
    exact_black[g] = np.where(pos.black[at], v, -v)
    black_target = exact_black[pos.game]
    if early is not None:
        black_target = np.where(pos.empties > early_empties, early[pos.game], black_target)
    assert n_games == len(exact_black)
    return np.where(pos.black, black_target, -black_target).astype(np.int8)


def book_dataset(path: Path, rules: int) -> Dataset:
    """The positions of an opening book (``othello-book``), each labelled by its negamax value
    through the book. That value backs the expert lines up from their leaf searches, taking at
    each position the better of the best move out of the book and the book's own moves: a
    label for the first third of the game that no single search of the evaluation gives
    (docs/evaluation.md, "The book's values as labels")."""
    from engine_server.eval.book import SCALE, load

    b = load(path, rules)
    value = b.value.astype(np.float32) / SCALE
    empties = (64 - np.bitwise_count(b.P | b.O)).astype(np.int8)
    # one "game" per position: the fit holds out every HOLDOUT-th of them and reports its error
    return Dataset(b.P.copy(), b.O.copy(), empties, value, np.arange(len(value)), value.copy())


def wthor_dataset(directory: Path, cache: Path, solve_empties: int = 14, threads: int = 2,
                  limit: int | None = None, log=print) -> Dataset:
    """The labelled WTHOR positions (cached in ``cache``: a second run reuses them)."""
    if cache.is_file():
        log(f"reusing {cache}")
        return Dataset.load(cache)
    games = wthor.read_dir(directory)
    if limit is not None:
        games = games.take(np.arange(min(limit, len(games))))
    pos, valid, final = wthor.replay(games)
    keep_games = valid & (final != 127)
    keep = keep_games[pos.game]
    log(f"{len(games)} games, {int(keep_games.sum())} complete and legal, "
        f"{int(keep.sum())} positions; solving each game at {solve_empties} empties")
    bar = _Bar(int(np.sum(pos.empties[keep] == solve_empties)), "solve", log)
    theo = 2 * games.theoretical - 64
    target = label_games(pos, final, theo, int(games.depth[0]), solve_empties, STANDARD,
                         threads, bar.update)
    bar.close()
    d = Dataset(pos.P[keep], pos.O[keep], pos.empties[keep].astype(np.int8), target[keep],
                pos.game[keep])
    d.save(cache)
    return d


def relabel(data: Dataset, rules: int, weights: np.ndarray, depth: int, min_empties: int,
            threads: int, cache: Path, log=print, block: int = 500_000) -> Dataset:
    """``data`` with ``value`` filled in: the full-width depth-``depth`` search value over
    ``weights`` for positions with at least ``min_empties`` empties, the target elsewhere (there
    it is exact).  Why: a human game's outcome is a noisy label of its early positions (the
    players' later errors decide it); a search value is a steadier one.  Computed in blocks of
    ``block`` positions, each cached as ``cache`` with the block's number, so an interrupted run
    resumes at its last unfinished block."""
    idx = np.nonzero(data.empties >= min_empties)[0]
    value = data.target.astype(np.float32)
    bar = _Bar(len(idx), f"search labels (depth {depth})", log)
    for b, s in enumerate(range(0, len(idx), block)):
        part = cache.with_name(f"{cache.stem}-{b}.npy")
        sel = idx[s:s + block]
        if part.is_file():
            v = np.load(part)
            bar.update(len(sel))
        else:
            v = labels.search_many(data.P[sel], data.O[sel], rules, weights, depth, threads,
                                   progress=bar.update).astype(np.float32)
            part.parent.mkdir(parents=True, exist_ok=True)
            tmp = part.with_suffix(".tmp.npy")
            np.save(tmp, v)
            tmp.replace(part)
        value[sel] = v
    bar.close()
    return Dataset(data.P, data.O, data.empties, data.target, data.game, value)


class _Bar:
    """A plain progress line on stderr (no dependency): count, rate, time left."""

    def __init__(self, total: int, what: str, log=print):
        self.total, self.what, self.done, self.t0 = max(1, total), what, 0, time.monotonic()
        self.last = 0.0
        self.log = log

    def update(self, k: int) -> None:
        import sys
        self.done += k
        t = time.monotonic()
        if t - self.last < 1.0 and self.done < self.total:
            return
        self.last = t
        rate = self.done / max(1e-9, t - self.t0)
        left = (self.total - self.done) / max(rate, 1e-9)
        sys.stderr.write(f"\r{self.what}: {self.done}/{self.total} {rate:,.0f}/s "
                         f"{left:,.0f} s left ")
        sys.stderr.flush()

    def close(self) -> None:
        import sys
        sys.stderr.write("\n")


def stage_rows(empties: np.ndarray, stage: int, window: int,
               n_stages: int = N_STAGES) -> np.ndarray:
    """The positions a stage is fitted on: its own plies and ``window`` stages either side."""
    per = 60 // n_stages
    ply = 60 - empties.astype(np.int64)
    lo = (stage - window) * per
    hi = (stage + 1 + window) * per
    if stage == n_stages - 1:
        hi = 61
    return (ply >= lo) & (ply < hi)


def train(data: Dataset, iterations: int = 30, l2: float = 5.0, window: int = 1,
          holdout: int = 20, log=print, n_stages: int = N_STAGES
          ) -> tuple[np.ndarray, list[dict]]:
    """Fit every stage; returns (int16 weights in 1/64 disc, per-stage report rows)."""
    weights, report, _ = train_with_state(data, iterations, l2, window, holdout, log, n_stages)
    return weights, report


def train_with_state(data: Dataset, iterations: int = 30, l2: float = 5.0, window: int = 1,
                     holdout: int = 20, log=print, n_stages: int = N_STAGES,
                     prior: FitState | None = None, rules: int = STANDARD,
                     prior_weight: float = 2.0) -> tuple[np.ndarray, list[dict], FitState]:
    """:func:`train`, anchored on an earlier fit's ``prior`` when given, and the state that
    carries this fit (and the prior's) forward.  ``prior_weight`` scales the prior's precision:
    its diagonal leaves out how the earlier positions tie weights together, so at 1 the anchored
    fit leans towards the new data more than a fit of all the data at once would; at 2 it
    matched such a fit on both data sets' held-out games (docs/evaluation.md, "Carrying a fit
    forward")."""
    if n_stages not in STAGE_COUNTS:
        raise ValueError(f"{n_stages} stages: expected one of {STAGE_COUNTS}")
    if prior is not None and prior.stages != n_stages:
        raise ValueError(f"the prior fit has {prior.stages} stages, this fit {n_stages}: "
                         f"they must match (--stages)")
    per = 60 // n_stages
    weights = np.zeros((n_stages, N_WEIGHTS), np.int16)
    mean = np.zeros((n_stages, N_WEIGHTS), np.float64)
    precision = np.zeros((n_stages, N_WEIGHTS), np.float64)
    test_game = (data.game % holdout) == 0 if holdout else np.zeros(len(data), bool)
    report = []
    for s in range(n_stages):
        t0 = time.monotonic()
        rows = stage_rows(data.empties, s, window, n_stages)
        own = stage_rows(data.empties, s, 0, n_stages)
        tr = np.nonzero(rows & ~test_game)[0]
        te = np.nonzero(own & test_game)[0]
        X = fit.features_of(data.P[tr], data.O[tr])
        d = fit.diagonal(X)
        anchor = None if prior is None else (prior.mean[s], prior_weight * prior.precision[s])
        w = fit.fit_stage(X, data.target[tr].astype(np.float64), iterations, l2,
                          prior=anchor, diag=d)
        del X
        mean[s] = w
        precision[s] = d if prior is None else d + prior.precision[s]
        q = fit.quantize(w)
        weights[s] = q
        last = 60 if s == n_stages - 1 else (s + 1) * per - 1
        row = {"stage": s, "plies": [s * per, last],
               "train_positions": int(len(tr)), "test_positions": int(len(te))}
        if len(te):
            Xt = fit.features_of(data.P[te], data.O[te])
            p = np.zeros(len(te))
            fit.predict(Xt, q.astype(np.float64) / WEIGHT_SCALE, p)
            err = p - data.target[te]
            row["test_mae"] = round(float(np.mean(np.abs(err))), 3)
            row["test_rmse"] = round(float(np.sqrt(np.mean(err ** 2))), 3)
            row["baseline_mae"] = round(float(np.mean(np.abs(data.target[te]
                                                             - data.target[tr].mean()))), 3)
        row["seconds"] = round(time.monotonic() - t0, 1)
        report.append(row)
        log(json.dumps(row))
    positions = int(np.count_nonzero(~test_game))
    fits = ([] if prior is None else list(prior.meta.get("fits", []))) + [
        {"positions": positions, "l2": l2, "window": window}
        | ({} if prior is None else {"prior_weight": prior_weight})]
    meta = {"fits": fits, "positions": sum(f["positions"] for f in fits)}
    return weights, report, FitState(mean, precision, int(rules), meta)


def plot_report(report: list[dict], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report if "test_mae" in r]
    x = [(r["plies"][0] + r["plies"][1]) / 2 for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(x, [r["test_mae"] for r in rows], "o-", label="pattern evaluation (held out)")
    ax.plot(x, [r["baseline_mae"] for r in rows], "s--", label="constant (mean target)")
    ax.set_xlabel("plies played")
    ax.set_ylabel("mean absolute error (discs)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


__all__ = ["Dataset", "book_dataset", "wthor_dataset", "relabel", "train", "train_with_state",
           "plot_report", "label_games", "REVERSED"]
