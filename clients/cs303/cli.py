"""``othello-cs303``: tools for the SUSTech CS303 judge.

``othello-cs303 check FILE.py`` runs the local usability check (see :mod:`.checker`) and exits 0
when every check passes, 1 otherwise, 2 on bad arguments.  ``othello-cs303 player`` prints the
path of the ready-made player file that uses this engine (local play only: it needs the engine).
``othello-cs303 export --agent SPEC -o player.py`` writes the uploadable one: a single file with
numpy as its only dependency (see :mod:`.export`); exit 0, or 2 when the agent cannot be
exported.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from engine_server import __version__
from engine_server.log import configure_logging
from engine_server.presets import ALPHA_BETA, presets_of


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="othello-cs303",
                                description="SUSTech CS303 Reversed Reversi tools")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
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
    c.add_argument("--quiet", action="store_true",
                   help="print only the checks that fail (or warn) and the verdict")
    sub.add_parser("player", help="print the path of the ready-made player file")
    e = sub.add_parser("export", help="write a self-contained player file to upload (numpy "
                                      "only, Python 3.7)")
    e.add_argument("--agent", default="best",
                   help=f"agent spec of the alpha-beta family: {' or '.join(ALPHA_BETA)}, "
                        f"with depth=, root_solve= (exact from N empties), weights= (default: "
                        f"best), or a preset of that family "
                        f"({', '.join(presets_of(ALPHA_BETA))})")
    e.add_argument("-o", "--output", type=Path, required=True, metavar="FILE",
                   help="the .py file to write (the course wants it named after your id)")
    e.add_argument("--rules", default="reversed", choices=["reversed", "standard"],
                   help="rules and weights (default reversed, as the course plays)")
    e.add_argument("--share", type=float, default=0.9, metavar="FRACTION",
                   help="internal deadline as a share of time_out (default 0.9: 4.5 s of 5)")
    e.add_argument("--weight-step", type=int, default=8, choices=[1, 2, 4, 8, 16, 32],
                   help="weights rounded to this many 1/64 disc (default 8; larger: smaller "
                        "file, coarser evaluation)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(args.log_level)
    if args.command == "player":
        print(Path(__file__).resolve().with_name("player.py"))
        return 0
    if args.command == "export":
        return _export(args)
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

    from .checker import Report, run_check

    case_files = {}
    if args.cases:
        case_files[Color.BLACK] = args.cases
    if args.cases_white:
        case_files[Color.WHITE] = args.cases_white
    # The report is written once, on stdout: check by check as they finish (a whole game
    # takes minutes), or with --quiet only what did not pass, at the end.  Progress on stderr
    # followed by the report on stdout printed every line twice on a terminal.
    def echo(text: str) -> None:
        print(text, flush=True)

    if not args.quiet:
        print(Report(args.file).header(), flush=True)
    report = run_check(args.file, time_out=args.time_out, per_colour=args.positions,
                       seed=args.seed, rules=args.rules, game=args.game, case_files=case_files,
                       echo=None if args.quiet else echo)
    print(report.render_quiet() if args.quiet else report.summary())
    return 0 if report.ok else 1


def _export(args: argparse.Namespace) -> int:
    from .export import ExportError, parse_agent, solve_text, write_cs303

    if not 0.1 <= args.share < 1.0:
        print("othello-cs303: --share must be in [0.1, 1)", file=sys.stderr)
        return 2
    from engine_server.agents import AgentSpecError
    from engine_server.config import ConfigError, resolve_agent

    try:
        spec = resolve_agent(args.agent)  # a preset name (any letter case) or a spec
    except (AgentSpecError, ConfigError) as e:
        print(f"othello-cs303: --agent: {e}", file=sys.stderr)
        return 2
    try:
        settings = parse_agent(spec, args.rules)
        settings.share = args.share
        settings.step = args.weight_step
        size = write_cs303(settings, args.output)
    except (ExportError, OSError) as e:
        print(f"othello-cs303: {e}", file=sys.stderr)
        return 2
    for note in settings.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {args.output} ({size / 1e6:.2f} MB, {args.rules} rules, depth cap "
          f"{settings.depth}, exact from {solve_text(settings)}); check it with: "
          f"{check_command(args.output)}")
    return 0


def check_command(player: Path, program: str | None = None) -> str:
    """The check the README gives after an export, for ``player``: the platform's checks at
    1 s a move, failures only.  ``program`` (default: how this command was started) keeps a
    path such as ``.venv/bin/othello-cs303`` so the line runs as printed."""
    program = sys.argv[0] if program is None else program
    if Path(program).name != "othello-cs303":  # python -m, or called from another program
        program = "othello-cs303"
    return f"{program} check {shlex.quote(str(player))} --time-out 1 --quiet"


if __name__ == "__main__":
    sys.exit(main())
