"""othello-train deviations: positions off the experts' lines, each valued by a search.

    othello-train deviations --positions 120000 --depth 8 --seed 5 --out data/dev-d8
    othello-train patterns --prior STATE --no-wthor --data data/dev-d8 --label value ...

Most positions a search evaluates follow a move nobody would play, and the fits' data (expert
games; self-play, which records only the moves its players chose) shows few of them: our
evaluation orders such positions worse than the games' own, and worse than a strong engine's
evaluation does (``othello-train heldout --deviate``).  Each position here is one of a WTHOR
game that the fits train on (never a held-out one: ``training.heldout.HOLDOUT``), at
``--min-empties``+1 to ``--max-empties``+1 empties, followed by a random legal move other than
the one the game played (``training.heldout.draw_positions``), and labelled by a full-width
alpha-beta search of ``--depth`` plies of ``--weights`` (the package's by default), an exact
value where fewer empties remain.

Output: an ``othello-train selfplay`` directory (one shard, ``target`` and ``value`` both the
search value rounded to discs, ``game`` the WTHOR game's index) that ``othello-train patterns
--data DIR`` reads.  Seeded; the searched values are cached in the directory as they come, so an
interrupted run resumes and a finished one is not searched again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from engine_server.game import Rules
from engine_server.game.wthor import DEFAULT_WTHOR

from .heldout import HOLDOUT, draw_positions

FORMAT = "othello-deviations 1"


def run(out: Path, n: int, depth: int, seed: int, min_empties: int, max_empties: int,
        weights_file: Path, threads: int, wthor: Path,
        log: Callable[[str], None]) -> dict[str, Any]:
    """Draw, search and write the positions; returns the manifest."""
    from engine_server.eval import weights as wts
    from engine_server.game.wthor import read_dir, read_file

    from .mpc import search_values
    from .selfplay_data import MANIFEST, sha256, shard_path, write_json, write_shard

    weights, _ = wts.load(weights_file, int(Rules.STANDARD))
    params = {"format": FORMAT, "positions": n, "depth": depth, "seed": seed,
              "min_empties": min_empties, "max_empties": max_empties,
              "weights_sha256": sha256(weights_file), "wthor_holdout": HOLDOUT}
    out.mkdir(parents=True, exist_ok=True)
    mpath = out / MANIFEST
    if mpath.is_file():
        old = json.loads(mpath.read_text())
        if old.get("parameters") != params:
            raise ValueError(f"{out} holds positions of other parameters "
                             f"({old.get('parameters')}); choose another --out")
        log(f"{out}: already complete")
        return dict(old)
    games = read_file(wthor) if wthor.is_file() else read_dir(wthor)
    pool = np.array([g for g in range(len(games)) if g % HOLDOUT], np.int64)
    drawn = draw_positions(games, pool, n, seed, min_empties, max_empties, deviate=True)
    log(f"{len(drawn)} positions after a move the game did not play; searching to depth {depth}")
    positions = [p for _, p in drawn]
    t0 = time.monotonic()
    values = search_values(positions, weights, depth, threads, log, out / "values-cache.npz")
    label = np.array([values[i, min(depth, p.empties)] for i, p in enumerate(positions)])
    label = np.clip(np.floor(label + 0.5), -64, 64).astype(np.int8)
    arrays = {"P": np.array([p.bitboards()[0] for p in positions], np.uint64),
              "O": np.array([p.bitboards()[1] for p in positions], np.uint64),
              "empties": np.array([p.empties for p in positions], np.int8),
              "target": label, "value": label,
              "game": np.array([g for g, _ in drawn], np.int64),
              "games": np.array([0, len(drawn)], np.int64)}
    write_shard(shard_path(out, 0), arrays)
    manifest = {"format": FORMAT, "parameters": params,
                "shards": {"0": {"games": len(drawn), "positions": len(drawn),
                                 "seconds": round(time.monotonic() - t0, 1)}}}
    write_json(mpath, manifest)
    return manifest


def add_parser(sub: Any) -> None:
    d = sub.add_parser("deviations", help="positions after moves the experts did not play, "
                       "valued by searches", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("--positions", type=int, required=True)
    d.add_argument("--depth", type=int, default=8, help="the label's search depth")
    d.add_argument("--min-empties", type=int, default=20)
    d.add_argument("--max-empties", type=int, default=50)
    d.add_argument("--seed", type=int, default=1)
    d.add_argument("--weights", type=Path, default=None,
                   help="the weights that search (default: the package's standard weights)")
    d.add_argument("--wthor", type=Path, default=DEFAULT_WTHOR)
    d.add_argument("--threads", type=int, default=2)
    d.add_argument("--out", type=Path, required=True, help="the data directory (resumable)")


def main(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from engine_server.eval import weights as wts

    def fail(msg: str) -> int:
        print(f"othello-train deviations: {msg}", file=sys.stderr)
        return 2

    if args.positions < 1 or args.threads < 1 or args.depth < 1:
        return fail("--positions, --threads and --depth must be at least 1")
    if not 1 <= args.min_empties <= args.max_empties <= 58:
        return fail("need 1 <= --min-empties <= --max-empties <= 58")
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    weights_file = args.weights if args.weights is not None \
        else wts.weights_path(int(Rules.STANDARD))
    try:
        manifest = run(args.out, args.positions, args.depth, args.seed, args.min_empties,
                       args.max_empties, weights_file, args.threads, args.wthor, log)
    except (ValueError, wts.WeightsError) as e:
        return fail(str(e))
    except KeyboardInterrupt:
        print(f"\nothello-train deviations: interrupted; the values so far are in {args.out}, "
              f"the same command goes on", file=sys.stderr)
        return 130
    shard = manifest["shards"]["0"]
    print(f"{shard['positions']} positions in {args.out}", flush=True)
    return 0


__all__ = ["add_parser", "main", "run"]
