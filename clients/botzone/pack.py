"""``othello-botzone pack --agent SPEC -o bot.zip``: a Botzone package that needs no engine.

Botzone runs an uploaded zip with Python 3 and numpy (``docs/reference/judges.md`` section 2);
numba and this project are not there.  The zip holds one ``__main__.py`` generated from the
same plain-Python core and player module as the CS303 export (:mod:`clients.cs303.export`):
standard rules and the standard weights, JSON and simplified input, the long-running mode
(``--no-keep-running`` answers one turn per process), and a budget of ``--share`` (default
0.8) of the input's ``time_limit`` (``--time-limit`` when the input has none, default 1 s),
counted from the process start on the first turn.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clients.cs303.export import ExportError, parse_agent, write_botzone_zip
from engine_server.agents import AgentSpecError
from engine_server.config import ConfigError, resolve_agent
from engine_server.presets import ALPHA_BETA, presets_of


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="othello-botzone pack",
                                description="write a Botzone zip (numpy only, no engine)")
    p.add_argument("--agent", default="best",
                   help=f"agent spec of the alpha-beta family: {' or '.join(ALPHA_BETA)} "
                        f"(default best), or a preset of that family "
                        f"({', '.join(presets_of(ALPHA_BETA))})")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="ZIP")
    p.add_argument("--rules", default="standard", choices=["standard", "reversed"],
                   help="default standard, as Botzone's Reversi plays")
    p.add_argument("--time-limit", type=float, default=1.0, metavar="SECONDS",
                   help="budget base when the input gives no time_limit (default 1)")
    p.add_argument("--share", type=float, default=0.8, metavar="FRACTION",
                   help="share of the time limit a move may use (default 0.8)")
    p.add_argument("--no-keep-running", action="store_true",
                   help="one turn per process (the default mode keeps running)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.time_limit > 0 or not 0.1 <= args.share < 1.0:
        print("othello-botzone pack: --time-limit must be > 0 and --share in [0.1, 1)",
              file=sys.stderr)
        return 2
    try:
        spec = resolve_agent(args.agent)  # a preset name (any letter case) or a spec
    except (AgentSpecError, ConfigError) as e:
        print(f"othello-botzone pack: --agent: {e}", file=sys.stderr)
        return 2
    try:
        settings = parse_agent(spec, args.rules)
        settings.share = args.share
        settings.time_limit = args.time_limit
        settings.keep_running = not args.no_keep_running
        size = write_botzone_zip(settings, args.output)
    except (ExportError, OSError) as e:
        print(f"othello-botzone pack: {e}", file=sys.stderr)
        return 2
    for note in settings.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {args.output} ({size / 1e6:.2f} MB, {args.rules} rules); try it with: "
          f"echo '{{\"requests\":[{{\"x\":-1,\"y\":-1}}],\"responses\":[]}}' | "
          f"python {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
