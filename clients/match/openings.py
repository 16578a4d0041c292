"""Start positions for matches: short openings, unique up to board symmetry, roughly balanced.

The board has eight symmetries (the dihedral group of the square).  Four of them (identity,
half turn, the two diagonal reflections) map the start position to itself; the other four
(quarter turns, the two axis reflections) map it to the start with the colours swapped.  Boards
are compared *side-relative* (discs of the side to move, discs of the other side), so the second
kind is a symmetry too: a position and its image with colours swapped are the same game with
the players' colours exchanged, and every opening is played with both colour assignments anyway.

``openings.txt`` (next to this module) was made by ``python -m clients.match.openings`` with the
parameters written in its header; the header also says how balance was judged.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from engine_server.game import PASS, Game, Position, Rules, parse_move, square_name

DATA_FILE = "openings.txt"


def _perm(f) -> tuple[int, ...]:
    """Square permutation of a transform given on (row, col)."""
    out = []
    for sq in range(64):
        r, c = f(sq // 8, sq % 8)
        out.append(c + 8 * r)
    return tuple(out)


SYMMETRIES: dict[str, tuple[int, ...]] = {
    "identity": _perm(lambda r, c: (r, c)),
    "rot90": _perm(lambda r, c: (c, 7 - r)),
    "rot180": _perm(lambda r, c: (7 - r, 7 - c)),
    "rot270": _perm(lambda r, c: (7 - c, r)),
    "mirror": _perm(lambda r, c: (r, 7 - c)),
    "flip": _perm(lambda r, c: (7 - r, c)),
    "transpose": _perm(lambda r, c: (c, r)),
    "antitranspose": _perm(lambda r, c: (7 - c, 7 - r)),
}


def transform_board(bits: int, perm: tuple[int, ...]) -> int:
    out = 0
    while bits:
        low = bits & -bits
        out |= 1 << perm[low.bit_length() - 1]
        bits ^= low
    return out


def transform_move(move: int, perm: tuple[int, ...]) -> int:
    return move if move == PASS else perm[move]


def canonical_key(position: Position) -> tuple[int, int]:
    """The smallest side-relative ``(mover, other)`` pair over the eight symmetries."""
    p, o = position.player, position.opponent
    return min((transform_board(p, t), transform_board(o, t)) for t in SYMMETRIES.values())


def same_opening(a: Position, b: Position) -> bool:
    return canonical_key(a) == canonical_key(b)


@dataclass(frozen=True)
class Opening:
    index: int
    moves: tuple[int, ...]
    value: float | None = None  # evaluation recorded in the data file (side to move's view)

    @property
    def text(self) -> str:
        return " ".join(square_name(m) for m in self.moves)

    def position(self, rules: str = "standard") -> Position:
        return Game.from_moves(self.moves, rules=rules).position


START = Opening(0, ())


def enumerate_unique(plies: int) -> list[tuple[int, ...]]:
    """Every move sequence of ``plies`` moves from the start, one per symmetry class (the first
    in square order), in square order.  Sequences whose game ends or passes early are skipped:
    an opening hands both players an ordinary position."""
    seen: set[tuple[int, int]] = set()
    out: list[tuple[int, ...]] = []

    def walk(pos: Position, line: tuple[int, ...]) -> None:
        if len(line) == plies:
            key = canonical_key(pos)
            if key not in seen:
                seen.add(key)
                out.append(line)
            return
        for mv in pos.legal_moves():
            if mv == PASS:
                continue
            walk(pos.play(mv), line + (mv,))

    walk(Position.start(), ())
    return out


def dedup(lines: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Keep the first sequence of each symmetry class, in the given order."""
    seen: set[tuple[int, int]] = set()
    out = []
    for line in lines:
        key = canonical_key(Game.from_moves(line).position)
        if key not in seen:
            seen.add(key)
            out.append(line)
    return out


def evaluate(lines: list[tuple[int, ...]], agent_spec: str, playouts: int, seed: int,
             progress=None) -> list[float]:
    """Each position's value for the side to move, in [-1, 1], from one search per position."""
    from engine_server.agents import make_agent
    from engine_server.search.limits import Limits

    values = []
    for i, line in enumerate(lines):
        agent = make_agent(agent_spec, seed=seed + i)
        r = agent.search(Game.from_moves(line).position, Limits(playouts=playouts))
        values.append(float(r.moves[0].value) if r.moves else 0.0)
        if progress is not None:
            progress(i + 1, len(lines))
    return values


def parse_line(text: str) -> tuple[tuple[int, ...], float | None] | None:
    """``f5 d6 c3 [| value]``; blank lines and ``#`` comments give None."""
    body = text.split("#", 1)[0].strip()
    if not body:
        return None
    moves_text, _, value_text = body.partition("|")
    moves = tuple(parse_move(t) for t in moves_text.split())
    value = float(value_text) if value_text.strip() else None
    return moves, value


BOOK_DEFAULTS = {"ply": 8, "within": 2.0}


def book_openings(spec: str, rules: str = "standard") -> list[Opening]:
    """``book[:ply=N,within=D,file=PATH]``: every position ``N`` plies from the start along the
    opening book's moves that the book values within ``D`` discs of even (the side to move's
    view), one per symmetry class, in the order a walk by square order meets them.  Their
    ``value`` is the book's, in discs."""
    from engine_server.eval import book as B

    _, _, rest = spec.partition(":")
    opts: dict[str, str] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key not in ("ply", "within", "file"):
            raise ValueError(f"book openings: expected ply=N, within=D or file=PATH, "
                             f"got {item!r}")
        opts[key] = value
    try:
        ply = int(opts.get("ply", BOOK_DEFAULTS["ply"]))
        within = float(opts.get("within", BOOK_DEFAULTS["within"]))
    except ValueError:
        raise ValueError(f"book openings: bad number in {spec!r}") from None
    if not 1 <= ply <= 40 or within < 0:
        raise ValueError(f"book openings: ply must be 1..40 and within >= 0 in {spec!r}")
    code = int(Rules.parse(rules))
    try:
        book = B.load(opts["file"], code) if "file" in opts else B.load(B.default_path(code),
                                                                         code)
    except B.BookError as e:
        raise ValueError(f"book openings: {e}") from None
    out: list[Opening] = []
    seen: set[tuple[int, int]] = set()
    frontier: list[tuple[Position, tuple[int, ...]]] = [(Position.start(rules), ())]
    for _ in range(ply):
        nxt = []
        for pos, line in frontier:
            for m in sorted(book.moves(pos), key=lambda m: m.move):
                child = pos.play(m.move)
                if child.must_pass():
                    continue  # an opening hands both players an ordinary position
                key = canonical_key(child)
                if key not in seen:
                    seen.add(key)
                    nxt.append((child, line + (m.move,)))
        frontier = nxt
    for pos, line in frontier:
        v = book.entry_value(pos)
        if v is not None and abs(v) <= within:
            out.append(Opening(len(out), line, v))
    if not out:
        raise ValueError(f"book openings: no book position {ply} plies deep within {within} "
                         f"discs of even")
    return out


def load(path: str | Path | None = None, rules: str = "standard") -> list[Opening]:
    """Openings from a file (one per line, ``f5 d6 c3 d3`` with an optional ``| value``), or the
    package's own set.  ``start`` means the start position only; ``book[:ply=N,within=D]``
    draws them from the opening book (:func:`book_openings`)."""
    if path == "start":
        return [START]
    if isinstance(path, str) and (path == "book" or path.startswith("book:")):
        return book_openings(path, rules)
    if path is None or path == "builtin":
        text = resources.files(__package__).joinpath(DATA_FILE).read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    out = []
    for raw in text.splitlines():
        parsed = parse_line(raw)
        if parsed is None:
            continue
        moves, value = parsed
        Game.from_moves(moves)  # raises on an illegal line
        out.append(Opening(len(out), moves, value))
    if not out:
        raise ValueError(f"no openings in {path or DATA_FILE}")
    return out


def generate(plies: int, agent_spec: str, playouts: int, keep: int, seed: int,
             progress=None) -> tuple[list[tuple[tuple[int, ...], float]], int]:
    """The ``keep`` most balanced unique openings of ``plies`` moves, shuffled by ``seed`` so
    that any prefix of the list mixes opening families.  Returns them and the class count."""
    lines = enumerate_unique(plies)
    values = evaluate(lines, agent_spec, playouts, seed, progress)
    ranked = sorted(zip(lines, values), key=lambda lv: (abs(lv[1]), lv[0]))[:keep]
    random.Random(seed).shuffle(ranked)
    return ranked, len(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m clients.match.openings",
                                description="Generate the balanced opening set.")
    p.add_argument("--plies", type=int, default=6)
    p.add_argument("--agent", default="uct:rollout=roxanne",
                   help="agent spec that judges balance")
    p.add_argument("--playouts", type=int, default=4000, help="playouts per evaluation")
    p.add_argument("--keep", type=int, default=200, help="how many openings to keep")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=str(Path(__file__).with_name(DATA_FILE)))
    args = p.parse_args(argv)

    def progress(done: int, total: int) -> None:
        if done % 50 == 0 or done == total:
            sys.stderr.write(f"\revaluated {done}/{total}")
            sys.stderr.flush()

    ranked, classes = generate(args.plies, args.agent, args.playouts, args.keep, args.seed,
                               progress)
    sys.stderr.write("\n")
    header = [
        f"# {len(ranked)} openings of {args.plies} plies from the standard start, one per",
        f"# symmetry class ({classes} classes in all, passes excluded), the most balanced by a",
        f"# {args.agent} search of {args.playouts} playouts each (value = mean reward of the",
        "# best move for the side to move, in [-1, 1]), shuffled with seed "
        f"{args.seed}.",
        "# Made by: python -m clients.match.openings --plies "
        f"{args.plies} --agent {args.agent} --playouts {args.playouts} --keep {args.keep} "
        f"--seed {args.seed}",
        "# Format: moves | value",
    ]
    body = [" ".join(square_name(m) for m in line) + f" | {value:+.3f}"
            for line, value in ranked]
    Path(args.out).write_text("\n".join(header + body) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
