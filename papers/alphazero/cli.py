"""othello-train az: Alphello Zero's network, supervised from WTHOR or by the AlphaGo Zero loop.

    othello-train az supervised --blocks 6 --filters 64 --steps 16000 \
        --out engine_server/eval/data/net-standard.onnx
    othello-train az loop --generations 3 --games-per-gen 40 --gate-games 20

Both keep everything in --work (checkpoints, logs, data) and resume from it when run again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from engine_server.game.wthor import DEFAULT_WTHOR

DOCS = Path("docs/net")


def add_parser(sub: Any) -> None:
    az = sub.add_parser("az", help="Alphello Zero's policy/value network (AlphaGo Zero)",
                        description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    azs = az.add_subparsers(dest="az_cmd", required=True)

    s = azs.add_parser("supervised", help="train on WTHOR expert moves and results")
    _net_args(s)
    _train_args(s, steps=16000, lr=0.05)
    s.add_argument("--wthor", type=Path, default=DEFAULT_WTHOR,
                   help="directory of .wtb files, or one file")
    s.add_argument("--games", type=int, default=None, help="only the first N games")
    s.add_argument("--positions", type=int, default=None,
                   help="train on a random subset of N training positions")
    s.add_argument("--final-eval", type=int, default=None,
                   help="held-out positions for the final figures (default: all)")
    s.add_argument("--work", type=Path, default=Path("build/az/supervised"))
    s.add_argument("--out", type=Path, default=None, help="ONNX file to write")
    s.add_argument("--rules", default="standard", choices=["standard"],
                   help="WTHOR games are standard Othello")
    s.add_argument("--plot", type=Path, default=None,
                   help="loss plot (.png) and figures (.json beside it)")

    b = azs.add_parser("bench", help="inference and training speed of network sizes")
    b.add_argument("--sizes", default="4x48,6x64,8x96",
                   help="comma-separated BLOCKSxFILTERS")
    b.add_argument("--no-legal", action="store_true")
    b.add_argument("--json", type=Path, default=None, help="also write the rows here")

    m = azs.add_parser("match", help="two networks play from balanced openings (PUCT)")
    m.add_argument("a", type=Path)
    m.add_argument("b", type=Path)
    m.add_argument("--games", type=int, default=40)
    m.add_argument("--iterations", type=int, default=100, help="PUCT iterations per move")
    m.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    m.add_argument("--workers", type=int, default=2)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--log", type=Path, default=None,
                   help="game results, one JSON line each (a rerun skips the games there)")
    m.add_argument("--json", type=Path, default=None, help="write the result here")
    _cluster_arg(m)

    lp = azs.add_parser("loop", help="the AlphaGo Zero loop: self-play, train, gate")
    _net_args(lp)
    _train_args(lp, steps=300, lr=0.01)
    lp.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    lp.add_argument("--generations", type=int, default=3)
    lp.add_argument("--games-per-gen", type=int, default=40)
    lp.add_argument("--gate-games", type=int, default=20)
    lp.add_argument("--gate-threshold", type=float, default=0.55)
    lp.add_argument("--iterations", type=int, default=100,
                    help="PUCT iterations per self-play move")
    lp.add_argument("--gate-iterations", type=int, default=None,
                    help="PUCT iterations per gate move (default: --iterations)")
    lp.add_argument("--temp-moves", type=int, default=15,
                    help="moves played in proportion to visits (temperature 1); then most "
                         "visited")
    lp.add_argument("--noise", type=float, default=0.25, help="Dirichlet noise share at the root")
    lp.add_argument("--noise-alpha", type=float, default=0.5)
    lp.add_argument("--buffer-gens", type=int, default=4,
                    help="replay buffer: the self-play of the last N generations")
    lp.add_argument("--workers", type=int, default=2, help="self-play processes (max 2)")
    lp.add_argument("--init", type=Path, default=None,
                    help="start from this checkpoint's network (default: random, tabula rasa)")
    lp.add_argument("--wthor", type=Path, default=DEFAULT_WTHOR,
                    help="WTHOR games to measure each generation's expert-move accuracy on "
                         "(standard rules; not trained on)")
    lp.add_argument("--no-wthor-eval", action="store_true")
    lp.add_argument("--work", type=Path, default=Path("build/az/loop"))
    lp.add_argument("--out", type=Path, default=None, help="ONNX of the final best network")
    lp.add_argument("--plot", type=Path, default=None,
                    help="loss and Elo plots (.png) and generations (.json) with this stem")
    _cluster_arg(lp)


def _cluster_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", metavar="ADDRESS", default=None,
                   help="play the games on the workers of this Dask scheduler (tcp://HOST:8786; "
                        "--workers is then ignored; the work directory must be shared with the "
                        "workers at the same path); docs/match.md")


def _net_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--blocks", type=int, default=6)
    p.add_argument("--filters", type=int, default=64)
    p.add_argument("--no-legal", action="store_true", help="no legal-move input plane")


def _train_args(p: argparse.ArgumentParser, steps: int, lr: float) -> None:
    p.add_argument("--steps", type=int, default=steps,
                   help="optimizer steps (per generation for the loop)")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--lr", type=float, default=lr)
    p.add_argument("--lr-end", type=float, default=None, help="default: lr / 100")
    p.add_argument("--warmup", type=int, default=None, help="default: min(200, steps / 10)")
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--value-weight", type=float, default=1.0)
    p.add_argument("--fp32", action="store_true", help="no bfloat16 autocast")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 leaves a core)")
    p.add_argument("--eval-every", type=int, default=1000)
    p.add_argument("--eval-positions", type=int, default=20000)
    p.add_argument("--checkpoint-every", type=int, default=500)
    p.add_argument("--seed", type=int, default=1)


def train_config(args: argparse.Namespace) -> Any:
    from .train import TrainConfig

    return TrainConfig(steps=args.steps, batch=args.batch, lr=args.lr,
                       lr_end=args.lr / 100 if args.lr_end is None else args.lr_end,
                       warmup=min(200, args.steps // 10) if args.warmup is None
                       else args.warmup,
                       weight_decay=args.weight_decay, value_weight=args.value_weight,
                       seed=args.seed, bf16=not args.fp32, threads=args.threads,
                       eval_every=args.eval_every, eval_positions=args.eval_positions,
                       checkpoint_every=args.checkpoint_every)


def net_config(args: argparse.Namespace) -> Any:
    from .model import NetConfig

    return NetConfig(blocks=args.blocks, filters=args.filters, legal=not args.no_legal)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def command_line(argv: list[str] | None) -> str:
    return "othello-train " + " ".join(sys.argv[1:] if argv is None else argv)


def supervised(args: argparse.Namespace, argv: list[str] | None) -> int:
    import torch

    from . import data, export, plots
    from .model import n_params, set_memory_format
    from .train import Trainer, evaluate, onnx_predictor

    t_start = time.monotonic()
    cache_name = "wthor-all" if args.games is None else f"wthor-{args.games}"
    cache = None if args.wthor.is_file() else Path("build/az") / f"{cache_name}.npz"
    s, stats = data.wthor_samples(args.wthor, args.games, cache)
    train_idx, test_idx = data.split(s)
    if args.positions is not None and args.positions < len(train_idx):
        pick = np.random.default_rng([args.seed, 1234])
        train_idx = np.sort(pick.choice(train_idx, args.positions, replace=False))
    _log(f"{stats['games']} games ({stats['complete_legal_games']} complete and legal), "
         f"{len(s)} positions ({stats['pass_positions']} forced passes); training on "
         f"{len(train_idx)}, {len(test_idx)} held out (every {data.HOLDOUT}th game)")
    tr = Trainer(net_config(args), train_config(args), args.work)
    if tr.load():
        _log(f"resumed {tr.checkpoint_path} at step {tr.step}")
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "command.txt").write_text(command_line(argv) + "\n")
    seconds0 = float(tr.extra.get("train_seconds", 0.0))
    t_fit = time.monotonic()

    def note_time(_row: dict[str, Any]) -> None:
        tr.extra["train_seconds"] = seconds0 + time.monotonic() - t_fit

    tr.fit(s, train_idx, test_idx, what="supervised", on_eval=note_time)
    note_time({})
    tr.save()
    train_seconds = float(tr.extra["train_seconds"])

    # the shipped figures come from the exported file itself, through onnxruntime
    out = args.out or (args.work / "net.onnx")
    net = set_memory_format(tr.net, torch.contiguous_format)
    export.export(net, out, "standard", {"command": command_line(argv)})
    rows = test_idx
    if args.final_eval is not None and args.final_eval < len(rows):
        pick = np.random.default_rng([args.seed, 99])
        rows = np.sort(pick.choice(rows, args.final_eval, replace=False))
    t_ev = time.monotonic()
    figures = evaluate(onnx_predictor(out), s, rows, tr.net_cfg.legal)
    _log(f"held out ({len(rows)} positions, {time.monotonic() - t_ev:.0f} s): "
         f"{json.dumps(figures)}")
    meta = {
        "command": command_line(argv),
        "data": {"source": str(args.wthor), **stats, "train_positions": int(len(train_idx)),
                 "test_positions": int(len(test_idx)), "holdout": f"every {data.HOLDOUT}th game",
                 "value_target": "the game's real result for the side to move (+1/0/-1)",
                 "augmentation": "a random one of the 8 symmetries per sample"},
        "network": {**tr.net_cfg.as_dict(), "parameters": n_params(net)},
        "training": {**tr.state()["cfg"], "positions_seen": tr.step * tr.cfg.batch,
                     "train_seconds": round(train_seconds, 1),
                     "torch": torch.__version__},
        "figures": figures,
    }
    export.export(net, out, "standard", meta)
    size = out.stat().st_size
    _log(f"wrote {out} ({size / 2**20:.2f} MiB) after {tr.step} steps, "
         f"{train_seconds:.0f} s of training, {time.monotonic() - t_start:.0f} s in all")
    report = {**meta, "onnx": str(out), "onnx_bytes": size, "history": tr.history}
    (args.work / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    if args.plot is not None:
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        args.plot.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
        plots.losses(tr.history, args.plot.with_suffix(".png"),
                     f"supervised, WTHOR, {tr.net_cfg.blocks}x{tr.net_cfg.filters}")
    return 0


def bench(args: argparse.Namespace, argv: list[str] | None) -> int:
    from . import bench as bench_mod

    sizes = [tuple(int(v) for v in s.lower().split("x")) for s in args.sizes.split(",")]
    rows = bench_mod.run([(b, f) for b, f in sizes], legal=not args.no_legal)
    for r in rows:
        print(json.dumps(r))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"command": command_line(argv), "rows": rows},
                                        indent=1) + "\n")
    return 0


def match(args: argparse.Namespace, argv: list[str] | None) -> int:
    from . import selfplay

    res = selfplay.match(args.a, args.b, args.games, args.iterations, args.rules, args.workers,
                         args.seed, args.log, f"{args.a.name} vs {args.b.name}",
                         cluster=args.cluster)
    res = {"command": command_line(argv), "a": str(args.a), "b": str(args.b), **res}
    print(json.dumps(res))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0


def main(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    if args.az_cmd == "supervised":
        return supervised(args, argv)
    if args.az_cmd == "bench":
        return bench(args, argv)
    if args.az_cmd == "match":
        return match(args, argv)
    from . import loop

    return loop.main(args, command_line(argv), net_config(args), train_config(args))


__all__ = ["add_parser", "main"]
