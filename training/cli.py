"""othello-train: reproducible training of the engine's evaluation weights.

    othello-train patterns --rules standard      # WTHOR games (../shared/data/wthor)
    othello-train patterns --rules reversed      # self-play games, solver labels
    othello-train az supervised|loop ...         # the AlphaZero network (papers/alphazero)
    othello-train mpc --rules standard           # Multi-ProbCut statistics of the weights
    othello-train heldout --rules standard       # error against deep-search values
    othello-train selfplay --games N --out DIR   # self-play data in resumable shards
    othello-train deviations --positions N --out DIR   # positions off the experts' lines
    othello-train patterns --data DIR ...        # ... added to a fit
    othello-train patterns --wthor-search 4      # WTHOR positions relabelled by searches
    othello-train patterns --save-state S ...    # ... keeping what the fit learnt, and later
    othello-train patterns --prior S --no-wthor --data NEW   # adding new data to it
    othello-train patterns --prior S --no-wthor --book FILE  # ... e.g. the book's values
    othello-train ranking --prior S --out W      # the experts' moves first among siblings

Every step is seeded; data sets are cached in --work so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from engine_server import __version__
from engine_server.game import Rules
from engine_server.game.wthor import DEFAULT_WTHOR


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="othello-train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("patterns", help="fit the pattern evaluation's weights")
    t.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    t.add_argument("--wthor", type=Path, default=DEFAULT_WTHOR,
                   help="directory of WTHOR .wtb files (standard rules)")
    t.add_argument("--no-wthor", action="store_true",
                   help="standard rules from self-play only (no WTHOR games)")
    t.add_argument("--games", type=int, default=None,
                   help="use only the first N WTHOR games (a quick run)")
    t.add_argument("--selfplay", type=int, default=0,
                   help="self-play games to add (the only data for reversed rules)")
    t.add_argument("--selfplay-agent", default="ab:depth=2,random=10",
                   help="the search that plays the self-play games (depth, random opening "
                        "plies)")
    t.add_argument("--generations", type=int, default=1,
                   help="self-play generations: the first plays at random, each next one "
                        "searches with the weights fitted on all games before it")
    t.add_argument("--solve-empties", type=int, default=14,
                   help="label positions from this many empties down with the exact solver")
    t.add_argument("--data", type=Path, action="append", default=[], metavar="DIR",
                   help="add the shards of this othello-train selfplay directory (repeatable)")
    t.add_argument("--label", default="target", metavar="target|value|mix:W",
                   help="what --data positions are fitted to: the game's final margin "
                        "(target), the search value found there (value), or W*value + "
                        "(1-W)*target (mix:W)")
    t.add_argument("--book", type=Path, action="append", default=[], metavar="FILE",
                   help="add the positions of this opening book (othello-book), each "
                        "labelled by its negamax value through the book (repeatable)")
    t.add_argument("--wthor-search", type=int, default=0, metavar="DEPTH",
                   help="relabel the WTHOR positions above --solve-empties with full-width "
                        "searches of this depth (0: keep the game outcomes); --wthor-label "
                        "says how the search value enters the target")
    t.add_argument("--wthor-search-from", type=int, default=25, metavar="EMPTIES",
                   help="with --wthor-search: relabel positions with at least this many "
                        "empties; below, the targets are exact or the game's theoretical score "
                        "(WTHOR's, 24 empties) and stay")
    t.add_argument("--wthor-label", default="value", metavar="target|value|mix:W",
                   help="with --wthor-search: fit the outcome (target), the search value "
                        "(value) or W*value + (1-W)*target (mix:W)")
    t.add_argument("--search-weights", type=Path, default=None, metavar="FILE",
                   help="the weights that --wthor-search searches with (default: the "
                        "package's for the rules)")
    t.add_argument("--prior", type=Path, default=None, metavar="STATE",
                   help="anchor the fit on an earlier one (a --save-state file): the data "
                        "behind it counts without being read again")
    t.add_argument("--prior-weight", type=float, default=2.0, metavar="K",
                   help="how much the --prior fit's data counts against the new data (its "
                        "precision times K; 2 matched a fit of all the data at once)")
    t.add_argument("--save-state", type=Path, default=None, metavar="STATE",
                   help="also write this fit's state (its weights in full precision and how "
                        "much data backs each one), for a later --prior")
    t.add_argument("--iterations", type=int, default=30, help="conjugate-gradient iterations")
    t.add_argument("--l2", type=float, default=5.0, help="L2 regularization")
    t.add_argument("--stages", type=int, default=15, choices=(15, 30, 60),
                   help="game stages with weights of their own (60 / stages plies each)")
    t.add_argument("--window", type=int, default=1,
                   help="neighbouring stages whose positions each stage also fits")
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--cluster", metavar="ADDRESS", default=None,
                   help="play the self-play games on the workers of this Dask scheduler "
                        "(tcp://HOST:8786), one task per 200 games; docs/match.md")
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--work", type=Path, default=Path("build/train"),
                   help="cache of data sets (resumable)")
    t.add_argument("--out", type=Path, default=None,
                   help="weights file (default: the package's file for the rules)")
    t.add_argument("--report", type=Path, default=None,
                   help="write the per-stage errors (JSON) and a plot next to it (.png)")
    from papers.alphazero.cli import add_parser as add_az

    from .deviations import add_parser as add_deviations
    from .heldout import add_parser as add_heldout
    from .mpc import add_parser as add_mpc
    from .ranking import add_parser as add_ranking
    from .selfplay_data import add_parser as add_selfplay

    add_az(sub)
    add_mpc(sub)
    add_heldout(sub)
    add_selfplay(sub)
    add_deviations(sub)
    add_ranking(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "az":
        from papers.alphazero.cli import main as az_main

        return az_main(args, argv)
    if args.cmd == "mpc":
        from .mpc import main as mpc_main

        return mpc_main(args, argv)
    if args.cmd == "heldout":
        from .heldout import main as heldout_main

        return heldout_main(args, argv)
    if args.cmd == "ranking":
        from .ranking import main as ranking_main

        return ranking_main(args, argv)
    if args.cmd == "deviations":
        from .deviations import main as deviations_main

        return deviations_main(args, argv)
    if args.cmd == "selfplay":
        from .selfplay_data import main as selfplay_main

        return selfplay_main(args, argv)
    from engine_server.eval import weights as wts

    from . import patterns

    rules = int(Rules.parse(args.rules))
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    prior = None
    if not args.prior_weight > 0:
        print(f"othello-train: --prior-weight {args.prior_weight}: must be above 0",
              file=sys.stderr)
        return 2
    if args.prior is not None:
        from .prior import FitState, StateError

        try:       # before any data is read: a bad file should not cost the WTHOR solves
            prior = FitState.load(args.prior, rules)
        except StateError as e:
            print(f"othello-train: --prior: {e}", file=sys.stderr)
            return 2
        if prior.stages != args.stages:
            print(f"othello-train: --prior {args.prior} has {prior.stages} stages, this fit "
                  f"{args.stages} (--stages): they must match", file=sys.stderr)
            return 2
    t0 = time.monotonic()
    parts = []
    sources = []
    if rules == int(Rules.STANDARD) and not args.no_wthor:
        name = "wthor" if args.games is None else f"wthor-{args.games}"
        cache = args.work / f"{name}-s{args.solve_empties}.npz"
        parts.append(patterns.wthor_dataset(args.wthor, cache, args.solve_empties,
                                            args.threads, args.games, log))
        sources.append(f"WTHOR {args.wthor} ({len(parts[-1])} positions)")
    try:
        label = _label(args.label)
        wthor_label = _label(args.wthor_label)
    except ValueError as e:
        print(f"othello-train: {e}", file=sys.stderr)
        return 2
    if args.wthor_search and parts:
        from engine_server.eval.mpc import fingerprint

        sw = wts.load_or_default(args.search_weights, rules)
        first = max(args.wthor_search_from, args.solve_empties + 1)
        cache = args.work / (f"{name}-s{args.solve_empties}-search-d{args.wthor_search}-"
                             f"from{first}-{fingerprint(sw)}")
        parts[0] = wthor_label(patterns.relabel(parts[0], rules, sw, args.wthor_search, first,
                                                args.threads, cache, log))
        sources[0] += (f", from {first} empties up relabelled by depth-{args.wthor_search} "
                       f"searches of weights {fingerprint(sw)} (label {args.wthor_label})")
    for directory in args.data:
        from .selfplay_data import load_dir

        try:
            d = load_dir(directory)
        except (OSError, ValueError) as e:
            print(f"othello-train: --data {e}", file=sys.stderr)
            return 2
        parts.append(label(d))
        sources.append(f"self-play {directory} ({len(d)} positions, label {args.label})")
    for path in args.book:
        from engine_server.eval.book import BookError

        try:
            d = patterns.book_dataset(path, rules)
        except BookError as e:
            print(f"othello-train: --book {e}", file=sys.stderr)
            return 2
        parts.append(d)
        sources.append(f"book {path} ({len(d)} positions, label: negamax value)")
    if not parts and not args.selfplay:
        print("othello-train: no data (reversed rules need --selfplay N or --data DIR)",
              file=sys.stderr)
        return 2
    weights = None
    if parts and args.selfplay:
        # the first self-play generation already searches with the weights of the WTHOR games
        weights, _ = patterns.train(patterns.Dataset.concat(parts), args.iterations, args.l2,
                                    args.window, log=log, n_stages=args.stages)
    for gen in range(max(1, args.generations) if args.selfplay else 0):
        from . import selfplay

        spec = args.selfplay_agent if gen > 0 or parts else "ab:depth=0,random=0"
        cache = args.work / (f"selfplay-{args.rules}-{args.selfplay}-gen{gen}-"
                             f"{spec.replace(':', '_').replace(',', '_')}-"
                             f"s{args.solve_empties}-seed{args.seed}.npz")
        w32 = None if weights is None else weights.astype("int32")
        parts.append(selfplay.dataset(spec, rules, args.selfplay, args.solve_empties,
                                      args.seed + 1000 * gen, cache, args.threads, log,
                                      weights=w32, cluster=args.cluster))
        sources.append(f"generation {gen}: {args.selfplay} self-play games of {spec} "
                       f"({len(parts[-1])} positions)")
        if gen < args.generations - 1:
            weights, _ = patterns.train(patterns.Dataset.concat(parts), args.iterations,
                                        args.l2, args.window, log=log, n_stages=args.stages)
    data = patterns.Dataset.concat(parts)
    weights, report, state = patterns.train_with_state(
        data, args.iterations, args.l2, args.window, log=log, n_stages=args.stages,
        prior=prior, rules=rules, prior_weight=args.prior_weight)
    out = args.out or wts.weights_path(rules)
    meta = {"command": "othello-train " + " ".join(sys.argv[1:] if argv is None else argv),
            "rules": args.rules, "data": sources, "solve_empties": args.solve_empties,
            "generations": args.generations, "iterations": args.iterations, "l2": args.l2,
            "window": args.window, "stages": args.stages, "seed": args.seed, "report": report}
    if prior is not None:
        meta["prior"] = {"file": str(args.prior), "positions": prior.meta.get("positions"),
                         "weight": args.prior_weight}
    wts.save(out, weights, rules, meta)
    if args.save_state:
        state.meta["fits"][-1].update(command=meta["command"], data=sources)
        state.save(args.save_state)
        log(f"wrote {args.save_state} ({args.save_state.stat().st_size / 2**20:.2f} MiB, "
            f"{state.meta['positions']} positions behind it)")
    log(f"wrote {out} ({out.stat().st_size / 2**20:.2f} MiB) in "
        f"{time.monotonic() - t0:.0f} s")
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(meta, indent=1) + "\n")
        patterns.plot_report(report, args.report.with_suffix(".png"),
                             f"held-out error per stage ({args.rules} rules)")
    return 0


def _label(spec: str):
    """The --label of --data positions as a function of their Dataset."""
    import numpy as np

    from .patterns import Dataset

    if spec == "target":
        w = 0.0
    elif spec == "value":
        w = 1.0
    elif spec.startswith("mix:"):
        try:
            w = float(spec[4:])
        except ValueError:
            w = -1.0
        if not 0.0 <= w <= 1.0:
            raise ValueError(f"--label {spec!r}: mix:W needs 0 <= W <= 1")
    else:
        raise ValueError(f"--label {spec!r}: expected target, value or mix:W")

    def apply(d: Dataset) -> Dataset:
        if w == 0.0 or d.value is None:
            return d
        t = w * d.value.astype(np.float64) + (1.0 - w) * d.target.astype(np.float64)
        return Dataset(d.P, d.O, d.empties, t, d.game, d.value)

    return apply


if __name__ == "__main__":
    sys.exit(main())
