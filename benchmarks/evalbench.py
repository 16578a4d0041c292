"""``othello-bench eval``: pattern evaluations per second and the weights' load time."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from typing import Any

import numpy as np

from .common import emit, median

# the file's read, decompression and checks (the modules are imported first)
LOAD_PROBE = ("import time; from engine_server.eval.weights import load, weights_path; "
              "t = time.perf_counter(); load(weights_path({rules})); "
              "print(time.perf_counter() - t)")


def positions(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions of seeded random games (every stage, all different)."""
    from engine_server.game import Game

    rng = np.random.default_rng(seed)
    Ps, Os = [], []
    while len(Ps) < n:
        g = Game()
        while not g.position.is_game_over() and len(Ps) < n:
            P, O = g.position.bitboards()
            Ps.append(P)
            Os.append(O)
            legal = g.position.legal_moves()
            g.play(legal[rng.integers(len(legal))])
    return np.array(Ps, np.uint64), np.array(Os, np.uint64)


def bench_eval(n: int, repeat: int, rules: int) -> dict[str, Any]:
    from engine_server.eval.features import eval_tables, evaluate_batch, evaluate_fast_batch
    from engine_server.eval.weights import default_weights, weights_path

    P, O = positions(n, 7)
    W = default_weights(rules)
    E = eval_tables(W)
    out = np.zeros(n, np.int64)
    # compiled / loaded outside the timing
    evaluate_batch(P[:10], O[:10], W, out[:10])
    evaluate_fast_batch(P[:10], O[:10], E, out[:10])
    rates = []
    fast = []
    for _ in range(repeat):
        # the plain kernel (training, labels) and the one the searches call (merged tables)
        t0 = time.perf_counter()
        evaluate_batch(P, O, W, out)
        rates.append(n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        evaluate_fast_batch(P, O, E, out)
        fast.append(n / (time.perf_counter() - t0))
    loads = []
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", LOAD_PROBE.format(rules=rules)],
                           capture_output=True, text=True, check=True)
        loads.append(float(r.stdout.strip().splitlines()[-1]))
    path = weights_path(rules)
    return {"bench": "eval", "rules": "reversed" if rules else "standard", "positions": n,
            "runs": repeat, "evals_per_s": median(rates), "best_evals_per_s": max(rates),
            "search_evals_per_s": median(fast),
            "weights_file_mib": path.stat().st_size / 2 ** 20,
            "load_s_fresh_process": median(loads)}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="pattern evaluations per second (one core), weights load")
    p.add_argument("--positions", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--rules", choices=["standard", "reversed"], default="standard")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    emit(bench_eval(args.positions, args.repeat, 1 if args.rules == "reversed" else 0),
         args.json)
    return 0
