"""``othello-cs303``: tools for the SUSTech CS303 judge.

``othello-cs303 check FILE.py`` runs the local usability check (see :mod:`.checker`) and exits 0
when every check passes, 1 otherwise, 2 on bad arguments.  ``othello-cs303 player`` prints the
path of the ready-made player file that uses this engine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine_server.log import configure_logging


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="othello-cs303",
                                description="SUSTech CS303 Reversed Reversi tools")
    # The report is the output; engine warnings (e.g. a full tree) would only clutter it.
    p.add_argument("--log-level", default="error",
                   choices=["debug", "info", "warning", "error", "critical"])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="check a player file the way the course's platform does")
    c.add_argument("file", type=Path, help="the player .py file (defines class AI)")
    c.add_argument("--time-out", type=float, default=5.0, metavar="SECONDS",
                   help="time_out given to AI() and enforced on every go (default 5, the "
                        "platform's)")
    c.add_argument("--positions", type=int, default=4, metavar="N",
                   help="random positions per colour, besides the fixed ones (default 4)")
    c.add_argument("--seed", type=int, default=0, help="seed of the position sampler")
    c.add_argument("--rules", default="reversed", choices=["reversed", "standard"])
    c.add_argument("--game", action="store_true",
                   help="also play a whole game of the file against itself in this process")
    c.add_argument("--cases", metavar="FILE", help="course case file for black (testcases.txt)")
    c.add_argument("--cases-white", metavar="FILE",
                   help="course case file for white (testcases_white.txt)")
    c.add_argument("--quiet", action="store_true", help="print only the final report")
    sub.add_parser("player", help="print the path of the ready-made player file")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(args.log_level)
    if args.command == "player":
        print(Path(__file__).resolve().with_name("player.py"))
        return 0
    if not args.time_out > 0:
        print("othello-cs303: --time-out must be > 0", file=sys.stderr)
        return 2
    if args.positions < 0:
        print("othello-cs303: --positions must be >= 0", file=sys.stderr)
        return 2
    if not args.file.is_file():
        print(f"othello-cs303: no such file: {args.file}", file=sys.stderr)
        return 2
    from engine_server.game import Color

    from .checker import run_check

    case_files = {}
    if args.cases:
        case_files[Color.BLACK] = args.cases
    if args.cases_white:
        case_files[Color.WHITE] = args.cases_white
    echo = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    report = run_check(args.file, time_out=args.time_out, per_colour=args.positions,
                       seed=args.seed, rules=args.rules, game=args.game, case_files=case_files,
                       echo=echo)
    print(report.render())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
