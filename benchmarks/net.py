"""``othello-bench net``: network evaluations per second by batch size, and where a PUCT
search's time goes (the evaluator call against the tree around it).

The network is ``--net PATH``, else the shipped one for ``--rules``, else a random 6x64 network
built with torch into a temporary file (``papers.alphazero``'s network and export; the speed of a
network does not depend on its weights).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .common import emit, median
from .evalbench import positions

BATCHES = (1, 8, 32)
MIDGAME = ["f5", "d6", "c3", "d3", "c4", "f4", "c5", "b3", "c2", "e6", "c6", "b4"]


def _network(path: str | None, rules: int, blocks: int, filters: int,
             tmp: Path) -> tuple[Path, str]:
    from engine_server.eval.net import default_net_path

    if path:
        return Path(path), "given"
    shipped = default_net_path(rules)
    if shipped.is_file():
        return shipped, "shipped"
    from papers.alphazero.export import export
    from papers.alphazero.model import NetConfig, build

    net = build(NetConfig(blocks=blocks, filters=filters, legal=True), seed=0)
    out = export(net, tmp / f"random-{blocks}x{filters}.onnx",
                 rules="reversed" if rules else "standard")
    return out, f"random {blocks}x{filters} (no shipped network)"


def bench_batches(path: Path, threads: int, seconds: float, repeat: int) -> list[dict[str, Any]]:
    from engine_server.eval import planes
    from engine_server.eval.evaluator import NetEvaluator
    from engine_server.eval.net import load_net

    model = load_net(path, threads)
    ev = NetEvaluator(model)
    P, O = positions(4096, 11)
    black = np.arange(P.shape[0]) % 2 == 0
    rows = []
    for b in BATCHES:
        ev.evaluate(P[:b], O[:b], black[:b])  # kernels and the session's buffers, untimed
        x = planes.encode(P[:b], O[:b], black[:b], model.legal)
        model.run(x)
        rates, raw = [], []
        for _ in range(repeat):
            n, i = 0, 0
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                j = (i * b) % (P.shape[0] - b)
                ev.evaluate(P[j:j + b], O[j:j + b], black[j:j + b])
                n += b
                i += 1
            rates.append(n / (time.perf_counter() - t0))
            n = 0
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < seconds / 2:
                model.run(x)
                n += b
            raw.append(n / (time.perf_counter() - t0))
        rows.append({"bench": "net", "batch": b, "threads": threads,
                     "positions_per_s": median(rates), "onnx_only_per_s": median(raw),
                     "ms_per_batch": 1000.0 * b / median(rates)})
    return rows


def bench_search(path: Path, batch: int, threads: int, seconds: float, repeat: int,
                 rules: int = 0) -> dict[str, Any]:
    from engine_server.agents import make_agent
    from engine_server.game import Game
    from engine_server.search.limits import Limits
    from engine_server.search.mcts.batched import BatchedTreeSearch

    pos = Game.from_moves(MIDGAME).position.with_rules("reversed" if rules else "standard")
    shares, rates = [], []
    for _ in range(repeat):
        agent = make_agent(f"puct:net={path},batch={batch},net_threads={threads},"
                           "root_solve=0", seed=1)
        agent.search(pos, Limits(iterations=64))  # the session and kernels, untimed
        agent.reset()
        r = agent.search(pos, Limits(time=seconds))
        tree = agent.tree
        assert isinstance(tree, BatchedTreeSearch)  # puct with a network
        shares.append(tree.eval_seconds / r.elapsed)
        rates.append(r.playouts / r.elapsed)
    share = median(shares)
    return {"bench": "net-search", "batch": batch, "threads": threads, "seconds": seconds,
            "evaluations_per_s": median(rates), "evaluator_share": share,
            "tree_share": 1.0 - share}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("net", help="network evaluations per second (batch 1, 8, 32) and the "
                       "evaluator's share of a puct search")
    p.add_argument("--net", help="an .onnx network (default: the shipped one, else a random "
                   "one built with torch)")
    p.add_argument("--rules", choices=["standard", "reversed"], default="standard")
    p.add_argument("--threads", type=int, default=1, help="ONNX Runtime threads")
    p.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--blocks", type=int, default=6, help="random network: residual blocks")
    p.add_argument("--filters", type=int, default=64, help="random network: filters")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    rules = 1 if args.rules == "reversed" else 0
    with tempfile.TemporaryDirectory(prefix="othello-bench-net-") as tmp:
        path, source = _network(args.net, rules, args.blocks, args.filters, Path(tmp))
        from engine_server.eval.net import NetError, load_net

        try:
            model = load_net(path, args.threads)
        except NetError as e:
            print(e, file=sys.stderr)
            return 2
        emit({"bench": "net-file", "net": str(path), "source": source, "planes": model.n_planes,
              "blocks": model.blocks, "filters": model.filters}, args.json)
        for row in bench_batches(path, args.threads, args.seconds, args.repeat):
            emit(row, args.json)
        for b in BATCHES:
            emit(bench_search(path, b, args.threads, args.seconds, args.repeat, rules),
                 args.json)
    return 0
