"""othello-train selfplay: training data the engine makes itself, at scale, in resumable shards.

    othello-train selfplay --rules standard --games 100000 --out data/sp-std \\
        --depth 6 --solve-empties 20 --openings random:4-20 --threads 2

Each game starts from an opening (``random:MIN-MAX``: that many uniformly random plies from
the start; ``book`` or ``book:MIN-MAX``: a position of the engine's opening book that games
reached, drawn uniformly among those MIN..MAX plies deep; ``book:A-B+random:C-D``: a book
position and then random plies), then both sides play a full-width alpha-beta search of
``--depth`` plies over ``--weights`` until ``--solve-empties`` empties, from where the exact
solver plays perfectly.  Recorded per position, side to move's view, from the first position
after the random plies (those moves are not labelled: their outcome follows a random, usually
bad, move): the bitboards, empties, ``target`` (the game's final disc margin under this play:
the exact value at and below the solve point, the same value above it, or the final score of a
game over before it), ``value`` (the search value found there, rounded to discs, or the exact
value), and the game's index.

Output: ``DIR/shard-NNNNN.npz`` holds games ``N*chunk`` to ``(N+1)*chunk`` (written whole,
atomically) and ``DIR/manifest.json`` the parameters, the weights' sha256 and per shard its
games, positions and seconds.  A shard depends on the seed, its index and the parameters only
(every game starts from fresh tables, seeded by (seed, game index)): not on threads, machine or
cluster.  Running the same command again keeps the shards there and plays the missing ones;
``--games`` may grow (or shrink) between runs; any other parameter that differs is refused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

FORMAT = "othello-selfplay 1"
MANIFEST = "manifest.json"
TABLE_BITS = 20       # midgame and endgame tables per thread (56 MiB together)
FIELDS = ("P", "O", "empties", "target", "value", "game")
SHARD = (*FIELDS, "games")   # and the range of games the shard holds


@dataclass(frozen=True)
class Openings:
    """How games start: a book position ``book`` plies deep (None: the start position), then
    ``random`` uniformly random plies, each range inclusive and drawn uniformly per game."""

    book: tuple[int, int] | None
    random: tuple[int, int]

    @classmethod
    def parse(cls, text: str) -> "Openings":
        book: tuple[int, int] | None = None
        rnd = (0, 0)
        for part in text.strip().lower().split("+"):
            m = re.fullmatch(r"(book|random)(?::(\d+)-(\d+))?", part.strip())
            if m is None:
                raise ValueError(f"openings {text!r}: expected random:MIN-MAX, book, "
                                 f"book:MIN-MAX or book:A-B+random:C-D")
            lo, hi = (int(m[2]), int(m[3])) if m[2] is not None else (0, 60)
            if m[1] == "random" and m[2] is None:
                raise ValueError(f"openings {text!r}: random needs a range (random:4-20)")
            if not 0 <= lo <= hi <= 60:
                raise ValueError(f"openings {text!r}: need 0 <= MIN <= MAX <= 60")
            if m[1] == "book":
                book = (lo, hi)
            else:
                rnd = (lo, hi)
        return cls(book, rnd)

    def __str__(self) -> str:
        parts = [] if self.book is None else [f"book:{self.book[0]}-{self.book[1]}"]
        if self.random != (0, 0) or self.book is None:
            parts.append(f"random:{self.random[0]}-{self.random[1]}")
        return "+".join(parts)


def book_starts(rules: int, plies: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, str]:
    """The shipped book's positions that games reached, ``plies`` deep (side to move's view,
    in the book's canonical orientation), and the book file's sha256."""
    from engine_server.eval import book as B

    book = B.shipped(rules)
    if book is None:
        raise ValueError(f"no opening book for {'reversed' if rules else 'standard'} rules")
    discs = np.array([bin(int(p) | int(o)).count("1") for p, o in zip(book.P, book.O)])
    ply = discs - 4
    keep = (book.games > 0) & (ply >= plies[0]) & (ply <= plies[1])
    if not keep.any():
        raise ValueError(f"the opening book has no positions {plies[0]}-{plies[1]} plies deep")
    return book.P[keep], book.O[keep], sha256(B.default_path(rules))


def game_starts(seed: int, first: int, stop: int, openings: Openings,
                book: tuple[np.ndarray, np.ndarray] | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per game ``first..stop-1``: start (P, O), random plies and the kernel's seed, each drawn
    from (seed, game index) alone."""
    from engine_server.game.bitboard import START_BLACK, START_WHITE

    n = stop - first
    P = np.full(n, START_BLACK, np.uint64)
    O = np.full(n, START_WHITE, np.uint64)
    n_random = np.zeros(n, np.int64)
    seeds = np.zeros(n, np.uint64)
    for i in range(n):
        rng = np.random.default_rng([seed, first + i])
        if book is not None:
            j = int(rng.integers(len(book[0])))
            P[i], O[i] = book[0][j], book[1][j]
        n_random[i] = rng.integers(openings.random[0], openings.random[1] + 1)
        seeds[i] = rng.integers(1, 2**63)
    return P, O, n_random, seeds


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def new_state() -> tuple:
    """One thread's tables: midgame keys, data and control; endgame table and control."""
    from engine_server.search import alphabeta as AB
    from engine_server.search.endgame import new_control, new_table

    return (*AB.new_table(TABLE_BITS), np.zeros(AB.CTL_SIZE, np.int64), new_table(TABLE_BITS),
            new_control())


def solver_tables(W: np.ndarray) -> np.ndarray:
    """The solver orders its moves with int16 evaluation tables; none when they need int32."""
    return W if W.dtype == np.int16 else np.zeros((1, 1), np.int16)


def play_shard(state: tuple, weights: np.ndarray, rules: int, depth: int, solve_empties: int,
               first: int, starts: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
               on_game: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
    """The recorded positions of the games ``first, first+1, ...`` from ``starts``;
    ``on_game(positions)`` after each game."""
    from engine_server.eval.features import eval_tables
    from engine_server.search import alphabeta as AB

    from .selfplay import play_labelled

    keys, data, ctl, stt, sctl = state
    W = eval_tables(weights)
    Ws = solver_tables(W)
    sP, sO, n_random, seeds = starts
    n = len(sP)
    cap = 64 * n
    P = np.zeros(cap, np.uint64)
    O = np.zeros(cap, np.uint64)
    e = np.zeros(cap, np.int64)
    t = np.zeros(cap, np.int64)
    v = np.zeros(cap, np.int64)
    g = np.zeros(cap, np.int64)
    k = 0
    for i in range(n):
        k1 = play_labelled(sP[i], sO[i], np.int64(n_random[i]), seeds[i], W, Ws,
                           np.int64(rules), np.int64(depth), np.int64(solve_empties), keys,
                           data, ctl, stt, sctl, P, O, e, t, v, np.int64(k), AB.NO_MPC)
        g[k:k1] = first + i
        if on_game is not None:
            on_game(k1 - k)
        k = k1
    return {"P": P[:k], "O": O[:k], "empties": e[:k].astype(np.int8),
            "target": t[:k].astype(np.int8), "value": v[:k].astype(np.int8), "game": g[:k],
            "games": np.array([first, first + n], np.int64)}


def _cluster_shard(job: tuple, weights: np.ndarray) -> tuple[dict[str, np.ndarray], float]:
    """A shard as one Dask task: ``job`` is ``(rules, depth, solve_empties, first, starts)``;
    the weights are sent to each worker once; tables are allocated per task."""
    t0 = time.monotonic()
    rules, depth, solve_empties, first, starts = job
    out = play_shard(new_state(), weights, rules, depth, solve_empties, first, starts)
    return out, time.monotonic() - t0


def write_shard(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """An ``.npz`` whose bytes depend on the arrays only (fixed zip timestamps), written to a
    temporary name and renamed, so that a shard is there whole or not at all."""
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
        for name in SHARD:
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.ascontiguousarray(arrays[name]),
                                          allow_pickle=False)
    os.replace(tmp, path)


def shard_path(out: Path, index: int) -> Path:
    return out / f"shard-{index:05d}.npz"


def write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


class ParameterMismatch(ValueError):
    """The output directory holds self-play of other parameters."""


@dataclass
class Summary:
    games: int            # games in the directory
    positions: int        # positions in the directory
    played_games: int     # games this run played
    played_positions: int
    seconds: float        # this run's wall time
    missing: int = 0      # games still to play (a run stopped by its time budget)

    def line(self) -> str:
        rate = self.played_positions / max(self.seconds, 1e-9)
        rest = (f"; {self.missing} games left for the same command" if self.missing else "")
        return (f"selfplay: {self.games} games, {self.positions} positions; this run played "
                f"{self.played_games} games, {self.played_positions} positions in "
                f"{self.seconds:.1f} s: {rate:.1f} positions/s, "
                f"{self.played_games / max(self.seconds, 1e-9):.3f} games/s{rest}")


class _Progress:
    """games done/total, positions/s and time left on stderr, at most once a second (every
    30 s when stderr is not a terminal)."""

    def __init__(self, total: int, done: int, log: Callable[[str], None] | None):
        self.total, self.done, self.todo = total, done, total - done
        self.games = self.positions = 0
        self.t0 = self.last = time.monotonic()
        self.lock = threading.Lock()
        self.log = log
        self.tty = log is None and sys.stderr.isatty()

    def add(self, games: int, positions: int) -> None:
        with self.lock:
            self.games += games
            self.positions += positions
            now = time.monotonic()
            if now - self.last < (1.0 if self.tty else 30.0) and self.games < self.todo:
                return
            self.last = now
            dt = max(now - self.t0, 1e-9)
            left = (self.todo - self.games) * dt / max(self.games, 1)
            text = (f"self-play: {self.done + self.games}/{self.total} games, "
                    f"{self.positions / dt:,.1f} positions/s, {left:,.0f} s left")
            if self.log is not None:
                self.log(text)
            elif self.tty:
                sys.stderr.write("\r" + text + " ")
                sys.stderr.flush()
            else:
                print(text, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty and self.games:
            sys.stderr.write("\n")


def run(out: Path, rules: int, games: int, depth: int, solve_empties: int, openings: Openings,
        weights_file: Path, seed: int, chunk: int, threads: int = 2,
        cluster: str | None = None, log: Callable[[str], None] | None = None,
        seconds: float | None = None) -> Summary:
    """Play the missing shards of ``out`` (see the module's doc); raises
    :class:`ParameterMismatch` when ``out`` holds a run of other parameters.  With
    ``seconds``, no shard starts after that many seconds (those under way finish): a run on a
    machine lent for a while ends cleanly, and the same call later plays the rest."""
    from engine_server.eval import weights as wts

    t0 = time.monotonic()
    weights = wts.load(weights_file, rules)[0]
    params: dict[str, Any] = {
        "format": FORMAT, "rules": "reversed" if rules else "standard", "depth": depth,
        "solve_empties": solve_empties, "openings": str(openings), "seed": seed,
        "chunk": chunk, "weights_sha256": sha256(weights_file)}
    book = None
    if openings.book is not None:
        bP, bO, params["book_sha256"] = book_starts(rules, openings.book)
        book = (bP, bO)
    out.mkdir(parents=True, exist_ok=True)
    mpath = out / MANIFEST
    manifest: dict[str, Any] = {"params": params, "games": games, "weights": str(weights_file),
                                "shards": {}, "runs": []}
    if mpath.is_file():
        old = json.loads(mpath.read_text())
        if old.get("params") != params:
            theirs = old.get("params", {})
            diff = ", ".join(f"{k} {theirs.get(k)!r} there, {params.get(k)!r} here"
                             for k in sorted(set(theirs) | set(params))
                             if theirs.get(k) != params.get(k))
            raise ParameterMismatch(f"{out} holds self-play of other parameters ({diff}); "
                                    f"rerun with its parameters or use another --out")
        manifest["shards"] = old.get("shards", {})
        manifest["runs"] = old.get("runs", [])
    elif any(out.glob("shard-*.npz")):
        raise ParameterMismatch(f"{out} holds shards but no {MANIFEST}: use another --out")
    manifest["games"] = games
    n_shards = (games + chunk - 1) // chunk
    # a shard is kept when its file is there and holds the games its index stands for now
    todo: list[int] = []
    for i in range(n_shards):
        want = [i * chunk, min(games, (i + 1) * chunk)]
        entry = manifest["shards"].get(f"{i:05d}")
        path = shard_path(out, i)
        if path.is_file() and entry is None:
            # written just before an interruption, before the manifest was
            with np.load(path) as z:
                entry = {"games": [int(x) for x in z["games"]],
                         "positions": int(len(z["P"])), "seconds": None}
            manifest["shards"][f"{i:05d}"] = entry
        if entry is None or entry["games"] != want or not path.is_file():
            todo.append(i)
    for key in [k for k in manifest["shards"] if int(k) >= n_shards]:
        del manifest["shards"][key]
    write_json(mpath, manifest)
    done_games = games - sum(min(games, (i + 1) * chunk) - i * chunk for i in todo)
    if todo:
        (log or (lambda s: print(s, file=sys.stderr, flush=True)))(
            f"self-play into {out}: {len(todo)} of {n_shards} shards to play "
            f"({games - done_games} games), {done_games} games there")
    progress = _Progress(games, done_games, log)
    lock = threading.Lock()
    played = {"games": 0, "positions": 0}

    def out_of_time() -> bool:
        return seconds is not None and time.monotonic() - t0 >= seconds

    def starts(i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return game_starts(seed, i * chunk, min(games, (i + 1) * chunk), openings, book)

    def finish(i: int, arrays: dict[str, np.ndarray], took: float) -> None:
        write_shard(shard_path(out, i), arrays)
        n = min(games, (i + 1) * chunk) - i * chunk
        with lock:
            manifest["shards"][f"{i:05d}"] = {
                "games": [i * chunk, i * chunk + n], "positions": int(len(arrays["P"])),
                "seconds": round(took, 2)}
            played["games"] += n
            played["positions"] += int(len(arrays["P"]))
            write_json(mpath, manifest)

    try:
        if cluster is not None:
            from clients.match.cluster import run_cluster

            jobs = [(i, (rules, depth, solve_empties, i * chunk, starts(i))) for i in todo]

            def cluster_finish(i: int, got: tuple[dict[str, np.ndarray], float]) -> None:
                finish(i, *got)
                progress.add(min(games, (i + 1) * chunk) - i * chunk, len(got[0]["P"]))

            run_cluster(jobs, cluster, cluster_finish, lambda _: out_of_time(),
                        work=_cluster_shard, shared=weights)
        else:
            from .pool import run_chunks

            def work(state: tuple, s: int, _e: int) -> None:
                i = todo[s]
                t1 = time.monotonic()
                arrays = play_shard(state, weights, rules, depth, solve_empties, i * chunk,
                                    starts(i), lambda k: progress.add(1, k))
                finish(i, arrays, time.monotonic() - t1)

            run_chunks(len(todo), 1, min(threads, max(1, len(todo))), new_state, work,
                       halt=out_of_time)
    finally:
        progress.close()
    wall = time.monotonic() - t0
    if todo:
        with lock:
            manifest["runs"].append({"played_games": played["games"],
                                     "played_positions": played["positions"],
                                     "seconds": round(wall, 1), "threads": threads,
                                     "cluster": cluster, "budget": seconds})
            write_json(mpath, manifest)
    total_pos = sum(int(s["positions"]) for s in manifest["shards"].values())
    left = games - done_games - played["games"]
    return Summary(games - left, total_pos, played["games"], played["positions"], wall, left)


def load_dir(directory: Path) -> Any:
    """The positions of a directory's shards (those its manifest lists), in game order, as a
    :class:`training.patterns.Dataset` with ``value``."""
    from .patterns import Dataset

    mpath = directory / MANIFEST
    if not mpath.is_file():
        raise FileNotFoundError(f"{directory}: no {MANIFEST} (not an othello-train selfplay "
                                f"directory)")
    manifest = json.loads(mpath.read_text())
    parts = []
    for key in sorted(manifest["shards"], key=int):
        path = shard_path(directory, int(key))
        if path.is_file():
            with np.load(path) as z:
                parts.append({k: z[k] for k in FIELDS})
    if not parts:
        raise ValueError(f"{directory}: no shards yet")
    cat = {k: np.concatenate([p[k] for p in parts]) for k in FIELDS}
    return Dataset(cat["P"], cat["O"], cat["empties"], cat["target"], cat["game"],
                   cat["value"])


def add_parser(sub: Any) -> None:
    s = sub.add_parser("selfplay", help="self-play training data in resumable shards",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    s.add_argument("--games", type=int, required=True)
    s.add_argument("--out", type=Path, required=True, help="directory of shards (resumable)")
    s.add_argument("--depth", type=int, default=6, help="midgame search depth (plies)")
    s.add_argument("--solve-empties", type=int, default=20,
                   help="the exact solver plays (and labels) from this many empties down")
    s.add_argument("--openings", default="random:4-20",
                   help="random:MIN-MAX, book, book:MIN-MAX or book:A-B+random:C-D")
    s.add_argument("--weights", type=Path, default=None,
                   help="the weights searched (default: the package's for the rules)")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--chunk", type=int, default=100, help="games per shard")
    s.add_argument("--seconds", type=float, default=None,
                   help="start no shard after this many seconds (those under way finish; "
                        "the same command later plays the rest): for a machine lent for a "
                        "while")
    s.add_argument("--cluster", metavar="ADDRESS", default=None,
                   help="play the shards on the workers of this Dask scheduler "
                        "(tcp://HOST:8786), one task per shard; docs/match.md")


def main(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from engine_server.eval import weights as wts
    from engine_server.game import Rules

    rules = int(Rules.parse(args.rules))

    def fail(msg: str) -> int:
        print(f"othello-train selfplay: {msg}", file=sys.stderr)
        return 2

    if args.games < 1 or args.chunk < 1 or args.threads < 1:
        return fail("--games, --chunk and --threads must be at least 1")
    if args.seconds is not None and not args.seconds > 0:
        return fail("--seconds must be above 0")
    if args.depth < 1:
        return fail("--depth must be at least 1")
    if not 0 <= args.solve_empties <= 60:
        return fail("--solve-empties must be in 0..60")
    try:
        openings = Openings.parse(args.openings)
        weights_file = args.weights if args.weights is not None else wts.weights_path(rules)
        summary = run(args.out, rules, args.games, args.depth, args.solve_empties, openings,
                      weights_file, args.seed, args.chunk, args.threads, args.cluster,
                      seconds=args.seconds)
    except (ValueError, wts.WeightsError) as e:
        return fail(str(e))
    except KeyboardInterrupt:
        print(f"\nothello-train selfplay: interrupted; the finished shards are in {args.out}, "
              f"the same command plays the rest", file=sys.stderr)
        return 130
    print(summary.line(), flush=True)
    return 0


__all__ = ["Openings", "ParameterMismatch", "Summary", "add_parser", "game_starts",
           "load_dir", "main", "play_shard", "run", "write_shard"]
