"""othello-train mpc: fit the Multi-ProbCut statistics of the shipped (or given) weights.

Positions: for standard rules, seeded random positions of WTHOR games (12 to 56 empties); for
reversed rules (no expert games), positions of seeded self-play games of ab:depth=2 after 8
random plies.  Each position is searched full width (no probes) by iterative deepening to
--depth plies with a fresh table; every finished iteration's root value is recorded, and the
static evaluation is depth 0.  The residuals v(d) - v(shallow(d)) per empties bucket and depth
give sigma; a log-linear model of sigma (engine_server/eval/mpc.py) is fitted to them and
extrapolated to deeper searches.  The values are cached in --work (an interrupted run goes
on where it stopped); everything is seeded.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from engine_server.eval import mpc as M
from engine_server.game import PASS, Game, Position, Rules, positions_digest
from engine_server.game.wthor import DEFAULT_WTHOR

MIN_EMPTIES, MAX_EMPTIES = 12, 56


def wthor_positions(wthor: Path, n: int, seed: int) -> list[Position]:
    from engine_server.game.wthor import read_dir, read_file

    games = read_file(wthor) if wthor.is_file() else read_dir(wthor)
    rng = np.random.default_rng(seed)
    out: list[Position] = []
    tries = 0
    while len(out) < n and tries < 50 * n:
        tries += 1
        g = int(rng.integers(len(games)))
        moves = [int(m) for m in games.moves[g] if m >= 0]
        target = int(rng.integers(MIN_EMPTIES, MAX_EMPTIES + 1))
        game = Game()
        try:
            for m in moves:
                if game.position.must_pass():
                    game.play(PASS)
                if game.position.empties <= target:
                    break
                game.play(m)
        except ValueError:
            continue  # an illegal record
        p = game.position
        if p.empties == target and not p.must_pass() and not p.is_game_over():
            out.append(p)
    return out


def selfplay_positions(rules: int, n: int, seed: int) -> list[Position]:
    from engine_server.agents import make_agent
    from engine_server.search.limits import Limits

    rng = np.random.default_rng(seed)
    out: list[Position] = []
    game_no = 0
    while len(out) < n:
        agent = make_agent("ab:depth=2,random=8,book=off,root_solve=0,threads=1",
                           seed=seed * 100003 + game_no)
        game_no += 1
        game = Game(Position.start(Rules(rules)))
        while not game.is_over():
            p = game.position
            if MIN_EMPTIES <= p.empties <= MAX_EMPTIES and not p.must_pass() \
                    and 60 - p.empties >= 8 and rng.random() < 0.15:
                out.append(p)
            r = agent.search(p, Limits(depth=2))
            assert r.best_move is not None
            game.play(r.best_move)
    return out[:n]


def search_values(positions: list[Position], weights: np.ndarray, max_depth: int,
                  threads: int, log: Callable[[str], None], cache: Path | None = None
                  ) -> np.ndarray:
    """values[i, d] in discs (NaN where not searched): full-width iterative deepening."""
    from engine_server.search.alphabeta import SCALE, AlphaBeta, static_eval
    from training.pool import run_chunks

    n = len(positions)
    values = np.full((n, max_depth + 1), np.nan)
    done = np.zeros(n, bool)
    # The cache's name says the weights, the count and the depth, not which positions: another
    # seed or range of empties with as many positions must not resume from it.
    digest = positions_digest(positions)
    if cache is not None and cache.is_file():
        with np.load(cache) as z:
            same = "positions" in z.files and str(z["positions"]) == digest
            if same and z["values"].shape == values.shape:
                values, done = z["values"].copy(), z["done"].copy()
                log(f"resuming: {int(done.sum())} of {n} positions already searched")
            else:
                log(f"{cache} holds other positions' values; searching afresh")
    todo = np.flatnonzero(~done)
    if len(todo) == 0:
        return values
    t0 = time.monotonic()
    counter = {"n": 0, "shown": 0.0}

    def make_state() -> Any:
        return AlphaBeta(weights, table_bits=20)

    def work(ab: Any, start: int, stop: int) -> None:
        for i in todo[start:stop]:
            pos = positions[i]
            P, O = pos.bitboards()
            values[i, 0] = int(static_eval(P, O, weights, np.int64(int(pos.rules)))) / SCALE
            ab.clear()
            depth = min(max_depth, pos.empties)

            def on_iteration(r: Any, i: int = i) -> None:
                values[i, r.depth] = r.score

            ab.search(pos, max_depth=depth, on_iteration=on_iteration)
            done[i] = True

    def progress(k: int) -> None:
        # Chunks of 8 finish many times a second at small depths: a line and a save of the
        # cache (all values so far) every few seconds, and at the end.
        counter["n"] += k
        dt = time.monotonic() - t0
        if counter["n"] < len(todo) and dt - counter["shown"] < 5.0:
            return
        counter["shown"] = dt
        log(f"  {n - len(todo) + counter['n']}/{n} positions searched to depth {max_depth} "
            f"({dt:.0f} s, {counter['n'] / max(dt, 1e-9):.2f} positions/s)")
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.savez(cache, values=values, done=done, positions=np.str_(digest))

    run_chunks(len(todo), 8, threads, make_state, work, progress)
    return values


def fit_and_save(rules: int, weights: np.ndarray, positions: list[Position], max_depth: int,
                 threads: int, work: Path | None, out: Path, command: str, source: str,
                 log: Callable[[str], None], min_count: int = 20) -> dict[str, Any]:
    t0 = time.monotonic()
    cache = None if work is None else \
        work / f"mpc-{rules}-{M.fingerprint(weights)}-{len(positions)}-d{max_depth}.npz"
    values = search_values(positions, weights, max_depth, threads, log, cache)
    empties = np.array([p.empties for p in positions])
    coef, cells = M.fit(values, empties, min_count)
    model = M.sigma_model(coef, np.array([c["empties"] for c in cells]),
                          np.array([c["depth"] for c in cells]))
    worst = max(abs(m / c["sigma"] - 1) for m, c in zip(model, cells) if c["sigma"] > 0)
    meta = {"command": command, "data": source, "positions": len(positions),
            "max_depth": max_depth, "seconds": round(time.monotonic() - t0, 1),
            "cells": cells, "model_worst_ratio_error": round(float(worst), 3)}
    M.save(out, rules, weights, coef, max_depth, meta)
    log(f"wrote {out}: sigma(30 empties, depth 10/16/20) = "
        + "/".join(f"{float(M.sigma_model(coef, np.array(30), np.array(d))):.2f}"
                   for d in (10, 16, 20)) + " discs")
    return meta


def add_parser(sub: Any) -> None:
    m = sub.add_parser("mpc", help="fit the Multi-ProbCut statistics of the evaluation",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    m.add_argument("--positions", type=int, default=1200)
    m.add_argument("--depth", type=int, default=11, help="deepest search per position")
    m.add_argument("--wthor", type=Path, default=DEFAULT_WTHOR)
    m.add_argument("--weights", type=Path, default=None,
                   help="weights file (default: the package's for the rules)")
    m.add_argument("--threads", type=int, default=2)
    m.add_argument("--min-count", type=int, default=20,
                   help="positions an (empties, depth) cell needs to be fitted")
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--work", type=Path, default=Path("build/train"),
                   help="cache of searched values (resumable)")
    m.add_argument("--out", type=Path, default=None,
                   help="statistics file (default: the package's beside the weights)")


def main(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from engine_server.eval import weights as wts

    rules = int(Rules.parse(args.rules))
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    weights = wts.load_or_default(args.weights, rules)
    if rules == int(Rules.STANDARD):
        positions = wthor_positions(args.wthor, args.positions, args.seed)
        source = f"{len(positions)} positions of WTHOR games ({args.wthor}), seed {args.seed}"
    else:
        positions = selfplay_positions(rules, args.positions, args.seed)
        source = f"{len(positions)} positions of ab:depth=2 self-play, seed {args.seed}"
    log(f"{source}; searching to depth {args.depth} on {args.threads} threads")
    out = args.out or M.default_path(rules)
    command = "othello-train " + " ".join(sys.argv[1:] if argv is None else argv)
    meta = fit_and_save(rules, weights, positions, args.depth, args.threads, args.work, out,
                        command, source, log, args.min_count)
    log(json.dumps({k: v for k, v in meta.items() if k != "cells"}))
    return 0


__all__ = ["add_parser", "fit_and_save", "main", "search_values",
           "selfplay_positions", "wthor_positions"]
