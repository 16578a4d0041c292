"""The opening book: positions with negamax values, read by agents before they search.

A book is a set of positions, each stored once for its eight board symmetries (the smallest
side-relative ``(mover, other)`` bitboard pair, the same canonical form as
``clients.match.openings``), sorted so a lookup is a binary search.  Per position:

* ``games``: how many games of the source (WTHOR, or self-play for reversed rules) reached it;
  0 for positions the builder added from its own searches;
* ``leaf``: the value of the best move that does *not* lead to another book position, from a
  search of those moves alone (``LEAF_NONE`` when every move stays in the book), and that move;
* ``value``: the negamax over the stored tree, ``max(leaf, -value(child))`` over the children
  that are book positions (a child where the opponent must pass counts with its own sign);
* ``depth`` (optional): the depth of the search behind ``leaf``; without it every position's
  is the header's ``leaf_depth``.

Values are in quarter discs (``SCALE``), the side to move's view.  Moves are never stored: the
children of a position are found by playing each legal move and looking the result up, so a
position reached by transposition or in another orientation shares its entry.

The file is an ``.npz`` of plain arrays (no pickle) plus a JSON header; :func:`load` checks
every array and raises :class:`BookError` naming the file and the problem.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from engine_server.game import PASS, Position
from engine_server.game.bitboard import U1, U, flips, legal_moves, popcount
from engine_server.game.symmetry import symmetry
from engine_server.log import get_logger

log = get_logger("book")

FORMAT = "othello-book 1"
SCALE = 4                  # value units per disc
LEAF_NONE = -32768         # no move leaves the book
NO_MOVE = -1
DATA_DIR = Path(__file__).parent / "data"
FILES = {0: "book-standard.npz", 1: "book-reversed.npz"}
ARRAYS = {"P": np.uint64, "O": np.uint64, "value": np.int16, "leaf": np.int16,
          "leaf_move": np.int8, "games": np.uint32}
DEPTH = "depth"            # the optional array: each position's leaf search depth (uint8)


class BookError(ValueError):
    """A book file that cannot be used: missing, unreadable, corrupt or for other rules."""


# --- kernels ------------------------------------------------------------------------------------

@njit(cache=True)
def canonical(P, O):
    """The smallest ``(P, O)`` pair over the eight symmetries, and the symmetry giving it."""
    bp = P
    bo = O
    bk = 0
    for k in range(1, 8):
        p = symmetry(P, k)
        o = symmetry(O, k)
        if p < bp or (p == bp and o < bo):
            bp = p
            bo = o
            bk = k
    return bp, bo, bk


@njit(cache=True)
def canonical_many(P, O, outP, outO):
    for i in range(P.shape[0]):
        outP[i], outO[i], _ = canonical(P[i], O[i])


@njit(cache=True)
def find(Ps, Os, P, O):
    """Index of the canonical pair ``(P, O)`` in the sorted arrays, or -1."""
    i = np.searchsorted(Ps, P)
    while i < Ps.shape[0] and Ps[i] == P:
        if Os[i] == O:
            return i
        i += 1
    return -1


@njit(cache=True)
def child_key(P, O, sq):
    """The position after move ``sq`` as the book stores it: canonical pair and the sign its
    value takes for the mover (-1: the opponent moves next; +1: the opponent must pass, so the
    mover moves again; 0: the game is over and the book has no entry for it)."""
    m = U1 << U(sq)
    f = flips(P, O, m)
    nP = O ^ f
    nO = P ^ f ^ m
    sign = -1
    if legal_moves(nP, nO) == U(0):
        if legal_moves(nO, nP) == U(0):
            return U(0), U(0), 0
        nP, nO = nO, nP
        sign = 1
    cP, cO, _ = canonical(nP, nO)
    return cP, cO, sign


@njit(cache=True)
def children(Ps, Os, P, O, out_idx, out_sign):
    """Book children of ``(P, O)`` (any orientation): for each square, the child's index or -1
    and its sign; returns nothing, ``out_idx[sq] = -1`` for illegal moves."""
    moves = legal_moves(P, O)
    for sq in range(64):
        out_idx[sq] = -1
        out_sign[sq] = 0
        if (moves >> U(sq)) & U1:
            cP, cO, s = child_key(P, O, sq)
            if s != 0:
                out_idx[sq] = find(Ps, Os, cP, cO)
                out_sign[sq] = s


@njit(cache=True)
def negamax(Ps, Os, leaf, order):
    """Values of every position from the leaves up: ``order`` lists the entries by disc count,
    most discs first, so each child is done before its parents (a child, passed or not, has
    one disc more than its parent)."""
    n = Ps.shape[0]
    value = np.empty(n, np.int64)
    done = np.zeros(n, np.bool_)
    idx = np.empty(64, np.int64)
    sign = np.empty(64, np.int64)
    for j in range(n):
        i = order[j]
        best = np.int64(leaf[i])
        children(Ps, Os, Ps[i], Os[i], idx, sign)
        for sq in range(64):
            c = idx[sq]
            if c >= 0 and done[c]:
                v = value[c] * sign[sq]
                if v > best:
                    best = v
        value[i] = best
        done[i] = True
    return value


@njit(cache=True)
def _disc_counts(P, O, out):
    for i in range(P.shape[0]):
        out[i] = popcount(P[i] | O[i])


def disc_order(P: np.ndarray, O: np.ndarray) -> np.ndarray:
    """Entry indices by disc count, most discs first (the order :func:`negamax` needs)."""
    discs = np.zeros(P.shape[0], np.int64)
    _disc_counts(P, O, discs)
    return np.argsort(-discs, kind="stable").astype(np.int64)


# --- the book -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class BookMove:
    move: int
    value: float        # discs, the mover's view (negamax through the book)
    games: int          # games of the source that played it (0: added by the builder)
    leaf_depth: int     # depth of the leaf search behind the value: of the position the move
    #                     leads to, or with ``line``, of the position where the line ends
    line: tuple[int, ...] = ()   # the move and the book's best line after it, when asked


def _inverse_move(sq: int, k: int) -> int:
    """The square that symmetry ``k`` maps onto ``sq`` (moves stored in canonical orientation
    back to the board's own orientation)."""
    target = U(1) << U(sq)
    for s in range(64):
        if symmetry(U(1) << U(s), k) == target:
            return s
    raise AssertionError(sq)


class Book:
    """A loaded book: lookups by position, in any orientation."""

    def __init__(self, arrays: dict[str, np.ndarray], meta: dict[str, Any], path: str = ""):
        self.P = arrays["P"]
        self.O = arrays["O"]
        self.value = arrays["value"]
        self.leaf = arrays["leaf"]
        self.leaf_move = arrays["leaf_move"]
        self.games = arrays["games"]
        self.meta = meta
        self.path = path
        self.rules = int(meta["rules"])
        self.leaf_depth = int(meta.get("leaf_depth", 0))
        d = arrays.get(DEPTH)
        self.depth = d if d is not None else np.full(len(self.P), self.leaf_depth, np.uint8)
        self._idx = np.empty(64, np.int64)
        self._sign = np.empty(64, np.int64)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return int(self.P.shape[0])

    def index(self, position: Position) -> int:
        """The entry of ``position`` (side to move's view), or -1."""
        P, O = position.bitboards()
        cP, cO, _ = canonical(P, O)
        # canonical's tuple comes back as Python ints: typed again as uint64, or a board above
        # 2**63 meets the int64 version of find that a smaller one compiled first (OverflowError)
        return int(find(self.P, self.O, np.uint64(cP), np.uint64(cO)))

    def entry_value(self, position: Position) -> float | None:
        i = self.index(position)
        return None if i < 0 else float(self.value[i]) / SCALE

    def moves(self, position: Position, lines: bool = False) -> list[BookMove]:
        """Legal moves that lead to book positions, best first (then by games); ``lines``
        adds each move's book line."""
        if int(position.rules) != self.rules or position.is_game_over():
            return []
        P, O = position.bitboards()
        with self._lock:  # the scratch arrays are shared
            children(self.P, self.O, P, O, self._idx, self._sign)
            idx = self._idx.copy()
            sign = self._sign.copy()
        out = []
        for sq in range(64):
            c = int(idx[sq])
            if c >= 0:
                out.append(BookMove(sq, float(self.value[c]) * int(sign[sq]) / SCALE,
                                    int(self.games[c]), int(self.depth[c])))
        out.sort(key=lambda m: (-m.value, -m.games, m.move))
        if lines:
            out = [self._with_line(position, m) for m in out]
        return out

    def _with_line(self, position: Position, m: BookMove) -> BookMove:
        # The value of a move comes from the leaf search where its book line ends: show the
        # depth of that search.
        full = self.line(position, m.move, 60)
        end = position
        for x in full:
            end = end.play(x)
        j = self.index(end)
        depth = int(self.depth[j]) if j >= 0 and int(self.leaf[j]) != LEAF_NONE \
            else m.leaf_depth
        return replace(m, line=tuple(full[:12]), leaf_depth=depth)

    def leaf_of(self, position: Position) -> tuple[int, float] | None:
        """The best move leaving the book from ``position`` and its searched value, if any."""
        i = self.index(position)
        if i < 0 or int(self.leaf[i]) == LEAF_NONE or int(self.leaf_move[i]) < 0:
            return None
        P, O = position.bitboards()
        _, _, k = canonical(P, O)
        return _inverse_move(int(self.leaf_move[i]), int(k)), float(self.leaf[i]) / SCALE

    def choose(self, position: Position, spread: float = 0.0,
               rng: random.Random | None = None,
               moves: list[BookMove] | None = None) -> BookMove | None:
        """The book's move: one of the book moves within ``spread`` discs of the best (drawn by
        ``rng``; the best without one), or None when the position is not in the book or its
        best move leaves the book (then the search should decide).  ``moves``: the position's
        ``moves()``, when the caller has them already."""
        if moves is None:
            moves = self.moves(position)
        if not moves:
            return None
        i = self.index(position)
        best = moves[0].value
        if i >= 0 and int(self.leaf[i]) != LEAF_NONE and float(self.leaf[i]) / SCALE > best:
            return None
        pool = [m for m in moves if m.value >= best - spread]
        if rng is None or len(pool) == 1:
            return pool[0]
        return rng.choice(pool)

    def line(self, position: Position, first: int, length: int = 12) -> list[int]:
        """``first`` and then the book's best moves while they stay in the book."""
        out = [first]
        pos = position.play(first)
        while len(out) < length and not pos.is_game_over():
            if pos.must_pass():
                out.append(PASS)
                pos = pos.play(PASS)
                continue
            m = self.choose(pos)
            if m is None:
                break
            out.append(m.move)
            pos = pos.play(m.move)
        return out


def save(path: str | Path, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    order = np.lexsort((arrays["O"], arrays["P"]))
    # Any: numpy's stub types savez's keywords as arrays or its own allow_pickle flag
    out: dict[str, Any] = {k: np.ascontiguousarray(arrays[k][order], dtype=t)
                           for k, t in ARRAYS.items()}
    if DEPTH in arrays:
        out[DEPTH] = np.ascontiguousarray(arrays[DEPTH][order], dtype=np.uint8)
    header = dict(meta, format=FORMAT, positions=int(order.shape[0]))
    out["meta"] = np.frombuffer(json.dumps(header, sort_keys=True).encode(), np.uint8)
    with open(path, "wb") as f:
        np.savez_compressed(f, **out)


def load(path: str | Path, rules: int | None = None) -> Book:
    """Read and check a book file; :class:`BookError` says what is wrong with it."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise BookError(f"{path}: no such book file") from None
    except Exception as e:  # zip, npy or compression errors all mean a damaged file
        raise BookError(f"{path}: not a readable book file ({type(e).__name__}: {e})") from None
    try:
        meta = json.loads(bytes(data["meta"]).decode())
    except Exception:
        raise BookError(f"{path}: missing or unreadable header") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise BookError(f"{path}: not a {FORMAT!r} file (format {meta.get('format')!r})")
    if meta.get("rules") not in (0, 1):
        raise BookError(f"{path}: header names no rules")
    if rules is not None and int(meta["rules"]) != int(rules):
        raise BookError(f"{path}: a book for {'reversed' if meta['rules'] else 'standard'} "
                        f"rules, not {'reversed' if rules else 'standard'}")
    arrays = {}
    n = int(meta.get("positions", -1))
    for k, t in ARRAYS.items():
        a = data.get(k)
        if a is None or a.dtype != np.dtype(t) or a.ndim != 1 or a.shape[0] != n:
            raise BookError(f"{path}: array {k!r} is missing or malformed")
        arrays[k] = a
    d = data.get(DEPTH)
    if d is not None:
        if d.dtype != np.uint8 or d.ndim != 1 or d.shape[0] != n or np.any(d > 60):
            raise BookError(f"{path}: array {DEPTH!r} is malformed")
        arrays[DEPTH] = d
    P, O = arrays["P"], arrays["O"]
    if n and (np.any(P[1:] < P[:-1]) or np.any((P[1:] == P[:-1]) & (O[1:] <= O[:-1]))):
        raise BookError(f"{path}: positions are not sorted and unique")
    if np.any(P & O):
        raise BookError(f"{path}: a position has a square of both colours")
    v = arrays["value"].astype(np.int64)
    if np.any(np.abs(v) > 64 * SCALE):
        raise BookError(f"{path}: a value lies outside [-64, 64] discs")
    lm = arrays["leaf_move"]
    if np.any((lm < NO_MOVE) | (lm > 63)):
        raise BookError(f"{path}: a leaf move is not a square")
    return Book(arrays, meta, str(path))


def default_path(rules: int) -> Path:
    return DATA_DIR / FILES[int(rules)]


_SHIPPED: dict[int, Book | BookError] = {}
_SHIPPED_LOCK = threading.Lock()


def shipped(rules: int) -> Book | None:
    """The package's book for ``rules``, loaded once per process; None (with one warning) when
    it is missing or damaged, so the engine plays on by searching."""
    with _SHIPPED_LOCK:
        got = _SHIPPED.get(int(rules))
        if got is None:
            try:
                got = load(default_path(rules), rules)
            except BookError as e:
                log.warning("book_unavailable", error=str(e))
                got = e
            _SHIPPED[int(rules)] = got
    return got if isinstance(got, Book) else None


__all__ = ["DEPTH", "Book", "BookError", "BookMove", "LEAF_NONE", "NO_MOVE", "SCALE", "canonical",
           "canonical_many", "child_key", "children", "default_path", "disc_order", "find",
           "load", "negamax", "save", "shipped"]
