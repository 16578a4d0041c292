"""``othello-reproduce EXPERIMENT``: the experiments by name, and the command that plays
one and writes its report and plots."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from clients.match.config import MatchError
from clients.match.tournament import run_matches
from engine_server import __version__
from engine_server.log import configure_logging

from .dk import DK_GAMES, dk_configs, dk_report
from .ocba import OCBA_GAMES, ocba_configs, ocba_report
from .plots import write_plots
from .ucb1 import ucb1_configs, ucb1_report
from .uct import UCT_GAMES, uct_configs, uct_report

EXPERIMENTS = {
    "ucb1": ("UCB for MCTS in Othello (2022), Table 1: Shallow Search, Min-Max Search and MCTS "
             "with UCB1", ucb1_configs, ucb1_report, 40),
    "uct": ("MCTS for Reversed Reversi (reversed rules): rollout policies and the exploration "
            "constant", uct_configs, uct_report, UCT_GAMES),
    "ocba": ("OCBA for MCTS in Othello, Table 1: MCTS-OCBA against MCTS-UCT", ocba_configs,
             ocba_report, OCBA_GAMES),
    "dk": ("A Reversi Playing Agent and the MCTS Algorithm, Fig. 1 and Table 1: MCTS against "
           "(pseudo-)random play", dk_configs, dk_report, DK_GAMES),
}
# The names these experiments had when the papers were numbered by their file in shared/seeds.
OLD_NAMES = {"seed000": "ucb1", "seed001": "uct", "seed002": "ocba", "seed004": "dk"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="othello-reproduce",
                                description="Run a paper's competition and compare.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("experiment", type=lambda name: OLD_NAMES.get(name, name),
                   choices=list(EXPERIMENTS))
    p.add_argument("--games", type=int, default=None,
                   help="games per colour per pairing (ucb1: 40, uct: 50, ocba: 250) "
                        "or per point of Fig. 1 and per referee cell of Table 1 (dk: 400; "
                        "its Table 1 itself is 10,000 games per cell in the kernel)")
    p.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    p.add_argument("--out", help="output directory (default othello-reproduce-EXPERIMENT)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-games", type=int, help="play at most this many games now")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--log-level", default="warning",
                   choices=["debug", "info", "warning", "error"])
    args = p.parse_args(argv)
    configure_logging(args.log_level)
    title, make, report, default_games = EXPERIMENTS[args.experiment]
    games = args.games or default_games
    out = Path(args.out or f"othello-reproduce-{args.experiment}")
    configs = make(out, games, args.seed)
    try:
        results = run_matches(configs, concurrency=args.concurrency, max_games=args.max_games,
                              progress=not args.no_progress, plots=False)
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted; run the same command again to resume\n")
        return 130
    except MatchError as e:
        sys.stderr.write(f"othello-match: {e}\n")
        return 2
    played = sum(r["games_played"] for r in results)
    scheduled = sum(r["games_scheduled"] for r in results)
    game_seconds = sum(r["game_seconds"] for r in results)
    first = min((r["first_start"] for r in results if r["first_start"]), default=None)
    last = max((r["last_end"] for r in results if r["last_end"]), default=None)
    span = (last - first) if first is not None else 0.0
    body, data = report(results, games, args.seed)
    command = "othello-reproduce " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[2:]))
    lines = [f"# {title}", "", f"Command: `{command}`", "",
             f"{played} of {scheduled} games, {game_seconds:.0f} s of game time in "
             f"{span:.0f} s of wall time with {args.concurrency} worker processes.", ""] + body
    complete = all(r["complete"] for r in results)
    if not complete:
        lines += ["", "**Incomplete**: run the same command again to play the rest."]
    text = "\n".join(lines)
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    pngs = write_plots(args.experiment, data, out)
    if args.experiment == "ucb1":
        from clients.match.plots import write_match_plots

        pngs += write_match_plots(results[0], out, prefix="reproduce-ucb1-")
    md = text + "\n" + "".join(f"\n![{p.stem}]({p.name})\n" for p in pngs)
    report_path = out / f"reproduce-{args.experiment}.md"
    report_path.write_text(md + "\n")
    sys.stderr.write(f"report: {report_path}\n")
    return 0
