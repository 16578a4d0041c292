"""othello-train heldout: how far the evaluation is from deep-search values, on positions no fit
has seen: the held-out yardstick of the evaluation.

Game outcomes are noisy labels (a won position is often lost later by a human), so the errors
the pattern fit reports measure the players as much as the evaluation.  Here each position is
labelled by a full-width alpha-beta search of ``--depth`` plies (an exact solve where no more
empties remain), and the static evaluation (depth 0) and shallow searches (depths 2 and 4) are
scored against that label: mean absolute error in discs, per bucket of empties; beside it,
how much of that error is spread (values too far from zero, or not far enough) and how much is
order: the factor that fits the label best in each bucket, the error left after it, and the
correlation (:func:`_spread`).

Positions: seeded random positions with ``--min-empties`` to ``--max-empties`` empties of the
WTHOR games that ``othello-train patterns`` holds out of its fit (game index divisible by
``HOLDOUT``, in the order the games are read); reversed rules: positions of seeded self-play of
ab:depth=2 (as ``othello-train mpc``).  ``--deviate`` takes, for each drawn position, the one
after a random legal move other than the game's: most positions of a search's tree are off
the experts' lines, and an evaluation fitted to games may order them worse.  The search values
are cached in ``--work`` (resumable).

The labels come from the same evaluation they judge, searched deeper: a better evaluation
lowers its shallow error against its own deep values as well as against a stronger judge's.
``--judge SPEC`` takes the labels from another engine instead, the independent check: any
player of ``othello-match`` that reports an evaluation with its move: an NBoard engine,
``nboard:/path/to/ntest``, sent ``set depth`` ``--depth`` (GTP answers carry no value; an
in-process ``agent:`` searches ``--judge-time`` seconds); its value of each position, the side
to move's view, is the label.  Its answers are cached in ``--work`` as
well, so a long labelling resumes.

Every judge agrees best with itself, so WTHOR positions (standard rules, not ``--deviate``) are
also scored against what their games record, labels no engine made: the ``outcomes`` of the
report give, per band, the correlation with the score of perfect play from the game's position
at 24 empties (``theoretical``) and with the players' final score (``final``), for our shallow
values and for the report's label (the judge's values, or our deep search's).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from clients.match.outside_judge import JudgeError, judge_values
from engine_server.game import PASS, Game, Position, Rules
from engine_server.game.wthor import DEFAULT_WTHOR

HOLDOUT = 20          # patterns.train holds out every game whose index is divisible by this
SHALLOW = (0, 2, 4)   # the depths scored against the label
BUCKET = 5            # empties per row of the report (``--band``)


def heldout_positions(wthor: Path, n: int, seed: int, min_empties: int, max_empties: int,
                      skip: Callable[[Position], bool] | None = None,
                      deviate: bool = False) -> list[Position]:
    """``n`` positions of held-out WTHOR games, one per drawn game, side to move not passing;
    a game whose drawn position ``skip`` refuses gives none (e.g. a book position, which the
    engine plays from its book without evaluating it).  ``deviate``: instead of the game's
    position, the one after a legal move other than the move the game played there, drawn by
    the seed: a position off the experts' lines, of the kind that fills a search's tree."""
    _, drawn = _held_draw(wthor, n, seed, min_empties, max_empties, skip, deviate)
    return [p for _, p in drawn]


def _held_draw(wthor: Path, n: int, seed: int, min_empties: int, max_empties: int,
               skip: Callable[[Position], bool] | None, deviate: bool
               ) -> tuple[Any, list[tuple[int, Position]]]:
    """The WTHOR games and ``draw_positions`` over those the fit holds out."""
    from engine_server.game.wthor import read_dir, read_file

    games = read_file(wthor) if wthor.is_file() else read_dir(wthor)
    held = np.arange(0, len(games), HOLDOUT)
    return games, draw_positions(games, held, n, seed, min_empties, max_empties, skip, deviate)


def heldout_outcomes(wthor: Path, n: int, seed: int, min_empties: int, max_empties: int,
                     skip: Callable[[Position], bool] | None = None
                     ) -> tuple[list[Position], dict[str, np.ndarray]]:
    """``heldout_positions`` (never deviated) with what WTHOR records of each position's game,
    in discs from the side to move's view: ``theoretical``, the score of perfect play from the
    game's position at WTHOR's theoretical depth (24 empties), and ``final``, the score the
    players reached.  Neither engine's search made these labels, so they judge ours and an
    outside judge's values alike; the players' moves down to 24 empties make them noisy."""
    from engine_server.game.position import Color

    games, drawn = _held_draw(wthor, n, seed, min_empties, max_empties, skip, False)
    g = np.array([i for i, _ in drawn], np.int64)
    sign = np.array([1 if p.side == Color.BLACK else -1 for _, p in drawn], np.int64)
    return [p for _, p in drawn], {
        "theoretical": sign * (2 * games.theoretical[g].astype(np.int64) - 64),
        "final": sign * (2 * games.real[g].astype(np.int64) - 64)}


def draw_positions(games: Any, pool: np.ndarray, n: int, seed: int, min_empties: int,
                   max_empties: int, skip: Callable[[Position], bool] | None = None,
                   deviate: bool = False) -> list[tuple[int, Position]]:
    """``heldout_positions`` over the games ``pool`` (indices into ``games``), with the index
    of the game each position comes from."""
    rng = np.random.default_rng(seed)
    out: list[tuple[int, Position]] = []
    for g in rng.permutation(pool):
        if len(out) >= n:
            break
        target = int(rng.integers(min_empties, max_empties + 1)) + int(deviate)
        game = Game()
        played = -1
        try:
            for m in (int(x) for x in games.moves[g] if x >= 0):
                if game.position.must_pass():
                    game.play(PASS)
                if game.position.empties <= target:
                    played = m
                    break
                game.play(m)
        except ValueError:
            continue   # an illegal record
        p = game.position
        if p.empties != target or p.must_pass() or p.is_game_over():
            continue
        if deviate:
            others = [m for m in p.legal_moves() if m != played]
            if played < 0 or not others:
                continue
            p = p.play(others[int(rng.integers(len(others)))])
            if p.must_pass() or p.is_game_over():
                continue
        if not (skip is not None and skip(p)):
            out.append((int(g), p))
    return out


def errors(values: np.ndarray, empties: np.ndarray, depth: int,
           labels: np.ndarray | None = None, band: int = BUCKET) -> list[dict[str, Any]]:
    """MAE of each shallow depth of ``values`` against the label, per band of ``band``
    empties (from a multiple of it: 24-29, 30-35... for 6); a row per band that has positions,
    then one for all of them.  The label is ``labels``' value at ``depth`` (``values``' own
    when not given), or at the end when fewer empties remain."""
    label = _at_depth(values if labels is None else labels, empties, depth)
    # a search that reaches the end is the label itself
    cols = {d: _at_depth(values, empties, d) for d in SHALLOW}
    rows = []
    for lo, hi, sel in _bands(empties, band):
        row: dict[str, Any] = {"empties": [lo, hi], "positions": int(sel.sum())}
        for d, shallow in cols.items():
            row[f"mae_depth{d}"] = round(float(np.mean(np.abs(shallow[sel] - label[sel]))), 3)
        for d, shallow in cols.items():
            row.update(_spread(shallow[sel], label[sel], f"depth{d}"))
        rows.append(row)
    return rows


def _at_depth(values: np.ndarray, empties: np.ndarray, depth: int) -> np.ndarray:
    """Each position's value at ``depth`` (at the end when fewer empties remain); values with
    one column, an outside judge's, are that value whatever the depth."""
    if values.ndim == 1:
        return values
    return values[np.arange(len(values)), np.minimum(depth, empties)]


def _bands(empties: np.ndarray, band: int) -> list[tuple[int, int, np.ndarray]]:
    """(lo, hi, mask) of each band of ``band`` empties that has positions (from a multiple of
    it), then of all of them."""
    lo_all, hi_all = int(empties.min()), int(empties.max())
    buckets = [(lo, min(lo + band - 1, hi_all))
               for lo in range(lo_all - lo_all % band, hi_all + 1, band)]
    out = []
    for lo, hi in [*buckets, (lo_all, hi_all)]:
        sel = (empties >= lo) & (empties <= hi)
        if sel.any():
            out.append((lo, hi, sel))
    return out


def outcome_rows(values: np.ndarray, empties: np.ndarray, outcome: np.ndarray,
                 label: np.ndarray | None = None, band: int = BUCKET) -> list[dict[str, Any]]:
    """How well each shallow depth of ``values`` (and ``label``, the report's own label: an
    outside judge's values or our deep search's, as ``*_label``) orders the positions by an
    outcome no search made (``heldout_outcomes``): per band, the correlation, and the factor
    and the error after it as in :func:`_spread`.  The outcome is far noisier than a deep
    search, so what means much is the comparison of two evaluations on the same positions,
    not either number alone."""
    cols = {d: _at_depth(values, empties, d) for d in SHALLOW}
    y = outcome.astype(np.float64)
    rows = []
    for lo, hi, sel in _bands(empties, band):
        row: dict[str, Any] = {"empties": [lo, hi], "positions": int(sel.sum())}
        for d, shallow in cols.items():
            row.update(_spread(shallow[sel], y[sel], f"depth{d}"))
        if label is not None:
            row.update(_spread(label[sel], y[sel], "label"))
        rows.append(row)
    return rows


def _spread(x: np.ndarray, y: np.ndarray, name: str) -> dict[str, Any]:
    """What of the error is spread and what is order: ``scale_{name}``, the factor k that
    fits the label best as k * value (least squares), ``scaled_mae_{name}``, the error left
    after it, and ``corr_{name}``, the correlation of value and label (None where it is not
    defined).  A factor for a band of empties changes no choice of a search among positions of
    that band, so the scaled error and the correlation are what a better evaluation for play
    must lower; the factor is fitted on the band it scores (one number per band, so a little
    optimistic)."""
    xx = float(x @ x)
    k = float(x @ y) / xx if xx > 0 else 1.0
    ok = len(x) > 1 and float(x.std()) > 0 and float(y.std()) > 0
    return {f"scale_{name}": round(k, 3),
            f"scaled_mae_{name}": round(float(np.mean(np.abs(k * x - y))), 3),
            f"corr_{name}": round(float(np.corrcoef(x, y)[0, 1]), 3) if ok else None}


def _searched(rules: int, positions: list[Position], w: np.ndarray, d: int, threads: int,
              work: Path | None, log: Callable[[str], None], tag: str = "") -> np.ndarray:
    """``search_values`` with its cache in ``work``, named by the weights, count and depth."""
    from engine_server.eval import mpc as M

    from .mpc import search_values

    cache = None if work is None else \
        work / f"heldout-{tag}{rules}-{M.fingerprint(w)}-{len(positions)}-d{d}.npz"
    return search_values(positions, w, d, threads, log, cache)


def report(rules: int, weights: np.ndarray, positions: list[Position], depth: int, threads: int,
           work: Path | None, log: Callable[[str], None],
           label_weights: np.ndarray | None = None, judge: np.ndarray | None = None,
           band: int = BUCKET, outcomes: dict[str, np.ndarray] | None = None
           ) -> dict[str, Any]:
    """The errors of ``weights``' shallow values against depth-``depth`` values of
    ``label_weights`` (the same weights when not given), so that two evaluations are judged
    by one set of labels; or against ``judge``, one outside value per position.  With
    ``outcomes`` (``heldout_outcomes``), the report's ``outcomes`` also scores our values and
    the label against each of them (:func:`outcome_rows`)."""
    def searched(w: np.ndarray, d: int) -> np.ndarray:
        return _searched(rules, positions, w, d, threads, work, log)

    t0 = time.monotonic()
    if judge is not None:
        labels = judge
        values = searched(weights, max(SHALLOW))
    else:
        labels = searched(weights if label_weights is None else label_weights, depth)
        same = label_weights is None or np.array_equal(label_weights, weights)
        values = labels if same else searched(weights, max(SHALLOW))
    empties = np.array([p.empties for p in positions])
    result = {"rules": str(Rules(rules)), "positions": len(positions), "label_depth": depth,
              "seconds": round(time.monotonic() - t0, 1),
              "rows": errors(values, empties, depth, labels, band)}
    if outcomes is not None:
        label = _at_depth(labels, empties, depth)
        result["outcomes"] = {name: outcome_rows(values, empties, y, label, band)
                              for name, y in outcomes.items()}
    return result


def children(positions: list[Position]) -> tuple[list[Position], np.ndarray, np.ndarray,
                                                 np.ndarray, np.ndarray]:
    """Every legal move of every position, as the searches and the judge need it: ``kids``, the
    positions to value (after the move, or after the opponent's forced pass too), and per move
    its parent's index, its index in ``kids`` (-1 where the game is over), the sign that turns
    a kid's value into the parent's mover's view, and the exact final score where the game is
    over (NaN elsewhere); moves in ``legal_moves`` order."""
    kids: list[Position] = []
    parent, kid, sign, exact = [], [], [], []
    for i, pos in enumerate(positions):
        for m in pos.legal_moves():
            c = pos.play(m)
            parent.append(i)
            if c.is_game_over():
                kid.append(-1)
                sign.append(-1.0)
                exact.append(-float(c.score()))
                continue
            if c.must_pass():
                c, s = c.play(PASS), 1.0
            else:
                s = -1.0
            kid.append(len(kids))
            kids.append(c)
            sign.append(s)
            exact.append(np.nan)
    return (kids, np.array(parent, np.int64), np.array(kid, np.int64), np.array(sign),
            np.array(exact))


def move_values(kid_values: np.ndarray, kid: np.ndarray, sign: np.ndarray, exact: np.ndarray
                ) -> np.ndarray:
    """Each move's value from its parent's mover's view, given one value per kid."""
    out = exact.copy()
    live = kid >= 0
    out[live] = sign[live] * kid_values[kid[live]]
    return out


def regrets(ours: np.ndarray, judged: np.ndarray, parent: np.ndarray, n: int) -> np.ndarray:
    """Per position, how much worse by the judge the move is that ``ours`` ranks first (the
    first of equals, in move order) than the judge's best: 0 where we pick a best move."""
    out = np.zeros(n)
    for i in range(n):
        sel = np.flatnonzero(parent == i)
        pick = sel[int(np.argmax(ours[sel]))]
        out[i] = judged[sel].max() - judged[pick]
    return out


def regret_report(rules: int, weights: np.ndarray, positions: list[Position], depth: int,
                  threads: int, work: Path | None, log: Callable[[str], None],
                  judge: np.ndarray, kids: list[Position], parent: np.ndarray,
                  kid: np.ndarray, sign: np.ndarray, exact: np.ndarray,
                  band: int = BUCKET) -> dict[str, Any]:
    """Scores moves, not values: ``judge`` holds the outside engine's depth-``depth`` value of
    every kid. A search of depth d ranks the moves by our depth-d values of the kids; its
    regret is the judge's value of its best move less that of ours.  The positions' own values
    are scored too, against the judge's best move (a depth ``depth + 1`` value).  A search
    needs only the order of its moves' values, so an error the moves share, which costs the
    absolute error as much as any other, costs the regret nothing."""
    def searched(ps: list[Position], tag: str) -> np.ndarray:
        return _searched(rules, ps, weights, max(SHALLOW), threads, work, log, tag + "-")

    t0 = time.monotonic()
    judged = move_values(judge, kid, sign, exact)
    best = np.array([judged[parent == i].max() for i in range(len(positions))])
    empties = np.array([p.empties for p in positions])
    rows = errors(searched(positions, "pos"), empties, depth + 1, best, band)
    ours = searched(kids, "kids")
    kid_empties = np.array([k.empties for k in kids])
    per_depth = {}
    for d in SHALLOW:
        # a kid with fewer empties than d is searched to its end, the exact value
        col = ours[np.arange(len(kids)), np.minimum(d, kid_empties)]
        per_depth[d] = regrets(move_values(col, kid, sign, exact), judged, parent,
                               len(positions))
    for row in rows:
        sel = (empties >= row["empties"][0]) & (empties <= row["empties"][1])
        for d in SHALLOW:
            row[f"regret_depth{d}"] = round(float(per_depth[d][sel].mean()), 3)
    return {"rules": str(Rules(rules)), "positions": len(positions), "moves": len(parent),
            "label_depth": depth + 1, "judge_depth": depth,
            "seconds": round(time.monotonic() - t0, 1), "rows": rows}


def plot(result: dict[str, Any], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"][:-1]
    x = [(r["empties"][0] + r["empties"][1]) / 2 for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    for d in SHALLOW:
        line, = ax.plot(x, [r[f"mae_depth{d}"] for r in rows], "o-", label=f"depth {d}")
        if f"regret_depth{d}" in rows[0]:
            ax.plot(x, [r[f"regret_depth{d}"] for r in rows], "s--", color=line.get_color(),
                    label=f"depth {d}, regret of its move")
    ax.set_xlabel("empty squares")
    who = result.get("judge_name", "")
    ax.set_ylabel(f"mean |value - {who + ' ' if who else ''}depth-{result['label_depth']} "
                  "value| (discs)")
    ax.set_title(title)
    ax.invert_xaxis()
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def add_parser(sub: Any) -> None:
    h = sub.add_parser("heldout", help="the evaluation's error against deep-search values",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    h.add_argument("--positions", type=int, default=400)
    h.add_argument("--depth", type=int, default=10, help="the label's search depth")
    h.add_argument("--min-empties", type=int, default=15)
    h.add_argument("--max-empties", type=int, default=40)
    h.add_argument("--wthor", type=Path, default=DEFAULT_WTHOR)
    h.add_argument("--weights", type=Path, default=None,
                   help="the weights judged (default: the package's for the rules)")
    h.add_argument("--label-weights", type=Path, default=None,
                   help="the weights whose deep search gives the labels (default: the "
                        "package's), so that two evaluations meet the same labels")
    h.add_argument("--judge", default=None, metavar="SPEC",
                   help="take the labels from this engine (an othello-match player spec, e.g. "
                        "nboard:/path/to/ntest, sent 'set depth' --depth) instead of our search; "
                        "it must play the positions' rules (NTest knows standard rules only)")
    h.add_argument("--judge-time", type=float, default=60.0,
                   help="seconds the judge is given a position (generous: its depth ends it)")
    h.add_argument("--regret", action="store_true",
                   help="with --judge: the judge values every move (at --depth) and the report "
                        "adds each search depth's regret, the judge's value lost by the move "
                        "our search ranks first")
    h.add_argument("--outside-book", action="store_true",
                   help="only positions the package's opening book for the rules does not "
                        "hold: those the engine evaluates in play")
    h.add_argument("--deviate", action="store_true",
                   help="standard rules: each position is the one after a random legal move "
                        "other than the one the game played (seeded), off the experts' lines "
                        "as most positions of a search's tree are")
    h.add_argument("--band", type=int, default=BUCKET,
                   help="empties per row of the report, from a multiple of it (6: 24-29, "
                   "30-35, ...)")
    h.add_argument("--threads", type=int, default=2)
    h.add_argument("--seed", type=int, default=7)
    h.add_argument("--work", type=Path, default=Path("build/train"),
                   help="cache of searched values (resumable)")
    h.add_argument("--out", type=Path, default=None,
                   help="write the report (JSON) and a plot beside it (.png)")


def main(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from engine_server.eval import weights as wts

    from .mpc import selfplay_positions

    rules = int(Rules.parse(args.rules))
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    if not 1 <= args.min_empties <= args.max_empties <= 59:
        print("othello-train heldout: need 1 <= --min-empties <= --max-empties <= 59",
              file=sys.stderr)
        return 2
    if args.band < 1:
        print("othello-train heldout: --band must be at least 1", file=sys.stderr)
        return 2
    if args.judge is None and args.depth < max(SHALLOW):
        print(f"othello-train heldout: --depth {args.depth}: our own label must be at least as "
              f"deep as the depths it scores ({', '.join(map(str, SHALLOW))})", file=sys.stderr)
        return 2
    if args.deviate and rules != int(Rules.STANDARD):
        print("othello-train heldout: --deviate needs games to deviate from (standard rules)",
              file=sys.stderr)
        return 2
    if args.regret and args.judge is None:
        print("othello-train heldout: --regret needs --judge", file=sys.stderr)
        return 2
    if args.judge is not None and args.label_weights is not None:
        print("othello-train heldout: --judge and --label-weights both choose the labels; "
              "give one", file=sys.stderr)
        return 2
    weights = wts.load_or_default(args.weights, rules)
    label_weights = wts.load_or_default(args.label_weights, rules)
    skip = None
    if args.outside_book:
        from engine_server.eval.book import BookError, default_path, load

        try:
            book = load(default_path(rules), rules)
        except BookError as e:
            print(f"othello-train heldout: --outside-book: {e}", file=sys.stderr)
            return 2
        skip = lambda p: book.index(p) >= 0  # noqa: E731
    outcomes = None
    if rules == int(Rules.STANDARD) and not args.deviate:
        positions, outcomes = heldout_outcomes(args.wthor, args.positions, args.seed,
                                               args.min_empties, args.max_empties, skip)
        source = f"held-out WTHOR games ({args.wthor}), seed {args.seed}"
    elif rules == int(Rules.STANDARD):   # deviated: the games' outcomes are not theirs
        positions = heldout_positions(args.wthor, args.positions, args.seed, args.min_empties,
                                      args.max_empties, skip, deviate=True)
        source = (f"held-out WTHOR games ({args.wthor}), seed {args.seed}, each after a random "
                  f"move other than the game's")
    else:
        positions = [p for p in selfplay_positions(rules, 4 * args.positions, args.seed)
                     if args.min_empties <= p.empties <= args.max_empties
                     and not (skip is not None and skip(p))][:args.positions]
        source = f"ab:depth=2 self-play, seed {args.seed}"
    if skip is not None:
        source += f", outside the book {default_path(rules).name}"
    judged = None
    if args.judge is not None:
        log(f"{len(positions)} positions of {source}; labels: {args.judge} at depth "
            f"{args.depth}")
        if args.regret:
            kids, parent, kid, sign, exact = children(positions)
            log(f"{len(parent)} moves, {len(kids)} positions after them to judge")
        try:
            judged = judge_values(kids if args.regret else positions, args.judge, args.depth,
                                  args.judge_time, log, args.work)
        except ValueError as e:   # a bad spec
            print(f"othello-train heldout: --judge: {e}", file=sys.stderr)
            return 2
        except JudgeError as e:
            print(f"othello-train heldout: the judge failed: {e} (answers so far are kept in "
                  f"{args.work}; the same command resumes)", file=sys.stderr)
            return 1
    else:
        log(f"{len(positions)} positions of {source}; labels: depth {args.depth}")
    if args.regret:
        assert judged is not None
        result = regret_report(rules, weights, positions, args.depth, args.threads, args.work,
                               log, judged, kids, parent, kid, sign, exact, args.band)
    else:
        result = report(rules, weights, positions, args.depth, args.threads, args.work, log,
                        label_weights, judged, args.band, outcomes)
    if args.judge is not None:
        from clients.match.players import PlayerSpec

        result["judge"] = args.judge
        result["judge_name"] = PlayerSpec.parse(args.judge).name
    result["command"] = "othello-train " + " ".join(sys.argv[1:] if argv is None else argv)
    result["data"] = source
    text = json.dumps(result, indent=1)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
        whose = f"{result['judge_name']}'s " if args.judge is not None else ""
        plot(result, args.out.with_suffix(".png"),
             f"error against {whose}depth-{result['label_depth']} values "
             f"({args.rules} rules, held out)")
    print(text)
    return 0


__all__ = ["add_parser", "children", "draw_positions", "errors", "heldout_outcomes",
           "heldout_positions", "main", "move_values", "outcome_rows",
           "regret_report", "regrets", "report"]
