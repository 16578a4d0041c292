"""othello-bench: speed figures of the engine, printed as text or one JSON object per line."""

from __future__ import annotations

import argparse
import sys

from engine_server import __version__
from engine_server.log import configure_logging


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="othello-bench", description=__doc__)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    pp = sub.add_parser("perft", help="perft from the start position (Bik convention by default)")
    pp.add_argument("depth", type=int)
    pp.add_argument("--edax", action="store_true",
                    help="Edax/OEIS A124004 convention (finished games before the depth count 0)")
    pp.add_argument("--repeat", type=int, default=5, help="timed runs; the median is reported")
    pp.add_argument("--no-c", action="store_true", help="skip the C reference")
    pp.add_argument("--json", action="store_true")

    pl = sub.add_parser("playouts", help="uniform random games per second, numba vs C -O2")
    pl.add_argument("--games", type=int, default=200_000)
    pl.add_argument("--repeat", type=int, default=5)
    pl.add_argument("--no-c", action="store_true", help="skip the C reference")
    pl.add_argument("--json", action="store_true")

    _add_later_subcommands(sub)
    return p


def _add_later_subcommands(sub: argparse._SubParsersAction) -> None:
    import importlib

    # Each benchmark module adds its own subcommand; the list grows with the project.
    for name in ("search", "timing", "zmq_latency", "zmq_load", "zmq_soak", "zmq_failover",
                 "zmq_store_cost", "endgame", "fuzz", "evalbench", "net", "web", "book",
                 "cluster", "midgame", "judges", "turning", "decisions", "startup", "analysis"):
        try:
            module = importlib.import_module(f"benchmarks.{name}")
        except ImportError:
            continue
        module.add_parser(sub)


def main(argv: list[str] | None = None) -> int:
    configure_logging("warning")
    args = _parser().parse_args(argv)
    from .common import emit

    if args.cmd == "perft":
        from .rules import bench_perft

        if args.depth < 1:
            print("perft depth must be >= 1", file=sys.stderr)
            return 2
        emit(bench_perft(args.depth, "edax" if args.edax else "bik", args.repeat,
                         not args.no_c), args.json)
        return 0
    if args.cmd == "playouts":
        from .rules import bench_playouts

        emit(bench_playouts(args.games, args.repeat, not args.no_c), args.json)
        return 0
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
