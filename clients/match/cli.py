"""``othello-match``: a referee and tournament runner for any engines.  (The papers'
experiments, which run matches through it, are ``othello-reproduce``, in the ``papers``
package above the clients.)

    othello-match PLAYER PLAYER [PLAYER...] [--games N] [--move-time S] [--clock MAIN/INC] ...
    othello-match cluster [--workers N] [--port 8786]    # a local Dask cluster for --cluster
    othello-match turns DIR [--from 22] [--exact 20]     # where a match's games were decided
    othello-match phases DIR --judge SPEC --depth D      # each side's moves judged by an engine

The results table goes to stdout; the progress bar and logs go to stderr.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from engine_server import __version__
from engine_server.log import configure_logging

from .config import FORMATS, MatchConfig, MatchError
from .elo import Sprt
from .players import CS303_MEMORY_MB, KINDS, SETUP_TIMEOUT, TimeControl
from .results import format_table
from .tournament import run_match

if TYPE_CHECKING:  # Dask is an optional extra, imported only for --cluster
    from .cluster import ClusterOptions

EPILOG = """\
players: agent:SPEC (in-process, e.g. agent:uct:c=1), gtp:COMMAND, nboard:COMMAND (engine
subprocesses, e.g. "gtp:edax -gtp"), zmq:ENDPOINT (a remote othello-engine), cs303:FILE.py
(a CS303 AI class; "cs303:DIR/*.py" seats every matching file, each named after its file).
Prefix NAME= to name a player, e.g. strong=agent:uct:iterations=2000.

Running again with the same arguments resumes from DIR/journal.jsonl.

other commands (each with its own --help):
  othello-match cluster                                     a local Dask scheduler and workers
  othello-match turns DIR                                   where a match's games were decided
  othello-match phases DIR --judge SPEC --depth D           each side's moves, by bands of empties

The papers' experiments, played through this referee, are a command of their own:
  othello-reproduce ucb1|uct|ocba|dk
"""


def parse_clock(text: str) -> tuple[float, float]:
    """``MAIN[/INC]`` in seconds, each also as ``m:ss`` or ``h:mm:ss``."""
    from engine_server.game.ggf import GgfError, parse_clock

    main, _, inc = text.partition("/")
    try:
        m, i = parse_clock(main), (parse_clock(inc) if inc.strip() else 0.0)
    except GgfError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if m <= 0 or i < 0:
        raise argparse.ArgumentTypeError("the clock needs MAIN > 0 and INC >= 0")
    return m, i


def parse_memory_limit(text: str) -> float | None:
    """``MB`` (a positive number) or ``off``."""
    if text.strip().lower() in ("off", "none"):
        return None
    try:
        mb = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MB or 'off', got {text!r}") from None
    if not mb > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 (or 'off'), got {text}")
    return mb


def _positive(kind):
    def check(text: str):
        v = kind(text)
        if v <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return v
    return check


def _match_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="othello-match", description="Play matches between Othello engines: round-robin "
        "or gauntlet, from balanced openings with colours swapped, under a referee that owns "
        "the rules and the clock.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("players", nargs="+", metavar="PLAYER",
                   help=f"player spec ({', '.join(k + ':...' for k in KINDS)})")
    p.add_argument("--games", type=_positive(int), default=2,
                   help="games per pairing, both colours together (default 2)")
    p.add_argument("--move-time", type=_positive(float), metavar="S",
                   help="hard limit per move in seconds (e.g. 5 as the CS303 judge)")
    p.add_argument("--clock", type=parse_clock, metavar="MAIN/INC",
                   help="game clock per player: MAIN seconds plus INC per move "
                        "(e.g. 180/0, 5:00/2)")
    p.add_argument("--grace", type=float, default=1.0, metavar="S",
                   help="lateness tolerated before a time loss (default 1 s)")
    p.add_argument("--setup-timeout", type=_positive(float), default=SETUP_TIMEOUT, metavar="S",
                   help="seconds an engine has for each step of its start-up and handshake "
                        f"before it loses the game on time (default {SETUP_TIMEOUT:g})")
    p.add_argument("--cs303-memory-limit", type=parse_memory_limit, default=CS303_MEMORY_MB,
                   metavar="MB|off",
                   help="memory a cs303: player's process may take beyond its start-up "
                        f"(default {CS303_MEMORY_MB:g}, the course's; past it the game is lost "
                        "with 'memory limit exceeded'; off: no limit)")
    p.add_argument("--playouts", type=_positive(int), metavar="N",
                   help="per-move playout budget for in-process agents (Limits(playouts=N))")
    p.add_argument("--rules", choices=["standard", "reversed"], default="standard")
    p.add_argument("--format", choices=FORMATS, default="round-robin",
                   help="round-robin, or gauntlet (the first player against each other one)")
    p.add_argument("--concurrency", type=_positive(int), default=os.cpu_count() or 1,
                   help="games in parallel, one process each (default: number of cores)")
    p.add_argument("--openings", default="builtin",
                   help="builtin (the package's balanced set), start (the start position "
                        "only), book[:ply=N,within=D] (book positions N plies deep valued "
                        "within D discs of even; default 8 and 2) or a file of move lines")
    p.add_argument("--no-swap", action="store_true",
                   help="play each opening once, the first player of the pairing as black")
    p.add_argument("--no-tree-reuse", action="store_true",
                   help="in-process agents build a new tree every move (as the papers)")
    p.add_argument("--nboard-depth", type=_positive(int), metavar="D",
                   help="send 'set depth D' to NBoard engines")
    p.add_argument("--sprt", metavar="ELO0,ELO1[,ALPHA,BETA]",
                   help="stop a two-player match once the SPRT decides (e.g. 0,10,0.05,0.05)")
    p.add_argument("--out", metavar="DIR",
                   help="output directory (default: othello-match-<hash of the match>)")
    p.add_argument("--seed", type=int, default=1, help="seed of every random choice")
    p.add_argument("--max-games", type=_positive(int), metavar="K",
                   help="play at most K more games in this run (resume later)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    c = p.add_argument_group("Dask cluster (the cluster extra; docs/match.md)")
    c.add_argument("--cluster", metavar="ADDRESS",
                   help="play the games on the workers of this Dask scheduler (tcp://HOST:8786, "
                        "tls://HOST:8786), one task per game; --concurrency is then ignored")
    _tls_args(c)
    p.add_argument("--log-level", default="warning",
                   choices=["debug", "info", "warning", "error"])
    return p


def _tls_args(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--tls-ca-file", metavar="PEM", help="CA certificate(s) the peers must be "
                   "signed by (with --tls-cert and --tls-key: TLS only, mutual)")
    g.add_argument("--tls-cert", metavar="PEM", help="this side's certificate")
    g.add_argument("--tls-key", metavar="PEM", help="this side's private key")


def _cluster_options(args: argparse.Namespace, address: str) -> ClusterOptions:
    try:
        from .cluster import ClusterOptions
    except ImportError as e:
        raise MatchError(f"--cluster needs Dask: pip install '.[cluster]' ({e})") from None
    opts = ClusterOptions(address, args.tls_ca_file, args.tls_cert, args.tls_key)
    opts.security()  # incomplete TLS settings fail here, before any game
    return opts


def cluster_main(argv: list[str]) -> int:
    """othello-match cluster: a scheduler and single-threaded workers on this machine until
    Ctrl-C or SIGTERM, for trying --cluster (other machines join with 'dask worker')."""
    p = argparse.ArgumentParser(prog="othello-match cluster", description=cluster_main.__doc__)
    p.add_argument("--workers", type=_positive(int), default=os.cpu_count() or 1,
                   help="worker processes, one thread each (default: number of cores)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default loopback; another one is reachable by "
                        "anyone who can reach it: use TLS, docs/match.md)")
    p.add_argument("--port", type=int, default=8786, help="scheduler port (0: any free one)")
    p.add_argument("--dashboard", metavar="ADDRESS",
                   help="serve Dask's dashboard here (e.g. 127.0.0.1:8787; needs bokeh)")
    p.add_argument("--log-level", default="warning",
                   choices=["debug", "info", "warning", "error"])
    _tls_args(p.add_argument_group("TLS"))
    args = p.parse_args(argv)
    configure_logging(args.log_level)
    _install_sigterm()
    try:
        from .cluster import start_local

        opts = _cluster_options(args, "")
        cluster = start_local(args.workers, args.host, args.port, args.dashboard, opts)
    except (MatchError, ImportError) as e:
        sys.stderr.write(f"othello-match cluster: {e}\n")
        return 2
    address = cluster.scheduler_address
    print(f"scheduler {address}, {args.workers} worker(s) with one thread each", flush=True)
    print(f"play on it: othello-match PLAYER PLAYER ... --cluster {address}", flush=True)
    try:
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        cluster.close()
    return 0


def default_out(config: MatchConfig) -> Path:
    digest = hashlib.sha1(json.dumps(config.identity(), sort_keys=True).encode()).hexdigest()
    return Path(f"othello-match-{digest[:10]}")


def _install_sigterm() -> None:
    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)


_NAME_OK = re.compile(r"^[A-Za-z0-9_.+#-]+$")


def expand_players(players: list[str]) -> list[str]:
    """``cs303:DIR/*.py`` (quoted or not: the shell leaves a pattern that starts with
    ``cs303:`` alone) becomes one player per matching file, in name order, each named after
    its file (a student id), or after its path when two files share a name."""
    out: list[str] = []
    for text in players:
        kind, sep, target = text.strip().partition(":")
        if kind.strip().lower() != "cs303" or not sep or not glob.has_magic(target):
            out.append(text)
            continue
        files = sorted(f for f in glob.glob(target.strip()) if os.path.isfile(f))
        if not files:
            raise MatchError(f"no file matches {text!r}")
        stems = [Path(f).stem for f in files]
        for f, stem in zip(files, stems):
            name = stem if stems.count(stem) == 1 else str(Path(f).with_suffix(""))
            out.append(f"{name}=cs303:{f}" if _NAME_OK.match(name) else f"cs303:{f}")
    return out


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "reproduce":
        print("othello-match: the papers' experiments are othello-reproduce now "
              "(othello-reproduce ucb1|uct|ocba|dk)", file=sys.stderr)
        return 2
    if args_list and args_list[0] == "cluster":
        return cluster_main(args_list[1:])
    if args_list and args_list[0] == "turns":
        from .turns import main as turns_main

        return turns_main(args_list[1:])
    if args_list and args_list[0] == "compare":
        from .compare import main as compare_main

        return compare_main(args_list[1:])
    if args_list and args_list[0] == "phases":
        from .phases import main as phases_main

        return phases_main(args_list[1:])
    parser = _match_parser()
    args = parser.parse_args(args_list)
    configure_logging(args.log_level)
    clock, inc = args.clock if args.clock else (None, 0.0)
    tc = TimeControl(move_time=args.move_time, clock=clock, increment=inc, grace=args.grace,
                     playouts=args.playouts, tree_reuse=not args.no_tree_reuse,
                     nboard_depth=args.nboard_depth, setup=args.setup_timeout,
                     cs303_memory_mb=args.cs303_memory_limit)
    try:
        sprt = Sprt.parse(args.sprt) if args.sprt else None
        config = MatchConfig(players=expand_players(args.players), out=Path(args.out or "."),
                             games=args.games,
                             format=args.format, rules=args.rules, tc=tc,
                             openings=args.openings, seed=args.seed, swap=not args.no_swap,
                             sprt=sprt)
        if args.out is None:
            config.out = default_out(config)
        config.specs()
        from . import openings as O

        O.load(args.openings, args.rules)
        cluster = _cluster_options(args, args.cluster) if args.cluster else None
    except (MatchError, ValueError, OSError) as e:
        parser.error(str(e))
    _install_sigterm()
    try:
        results = run_match(config, concurrency=args.concurrency, max_games=args.max_games,
                            progress=not args.no_progress, plots=not args.no_plots,
                            cluster=cluster)
    except KeyboardInterrupt:
        sys.stderr.write(f"\ninterrupted; run the same command again to resume "
                         f"({config.out / 'journal.jsonl'})\n")
        return 130
    except MatchError as e:
        sys.stderr.write(f"othello-match: {e}\n")
        return 2
    print(format_table(results))
    print(f"\nresults: {config.out / 'results.json'}  games: {config.out / 'games.ggf'}  "
          f"journal: {config.out / 'journal.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
