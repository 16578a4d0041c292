"""othello-book: build the opening book from WTHOR (or self-play) and look positions up.

    othello-book build --rules standard -o book-standard.npz     # WTHOR games
    othello-book build --rules reversed -o book-reversed.npz     # self-play games only
    othello-book show f5d6c3                                     # a move list from the start
    othello-book learn games.ggf -o book.npz                     # add played games' lines
    othello-book deepen --depth 20 --seconds 3600 -o book.npz    # deeper leaves, resumable
    othello-book show -- "<64 squares X/O/-> X"                   # a board and the side to move

Building (every step seeded and deterministic):

1. positions: every position of the source games up to --max-ply plies, merged by the eight
   symmetries, kept when at least --min-games games reached it.  Standard rules read the
   WTHOR database; reversed rules play --selfplay-games games of the engine's alpha-beta
   (a --selfplay-depth search, a move drawn among those within --selfplay-spread discs
   of the best), since expert games of the standard game say nothing about the reversed one;
2. leaves: for every position, an alpha-beta search of depth --leaf-depth over the learned
   evaluation values the moves that leave the book (only those moves: the rest are valued by
   the book itself);
3. extension: where a search found a move better than every book move (in a position reached by
   at least --extend-games games), the position after it joins the book and is searched in
   turn, --extend rounds deep, so the book holds the engine's own improvements on the
   experts' lines and does not send the engine out of book exactly where it matters;
4. negamax: values are propagated from the leaves up (engine_server.eval.book.negamax).

Learning (othello-book learn): the positions of played games (GGF records: an othello-match
run's games.ggf, NBoard's saved games) up to --max-ply join an existing book, each with a
leaf search at the book's own depth; the positions whose moves out of the book changed are
searched again, and the negamax runs over the grown tree. A line the engine lost on is then
valued by searches of the positions the game went through, not only by the search at the
point where it left the book, so the next game can turn off before the mistake. Deterministic:
the same book and games give the same file.

Deepening (othello-book deepen): the leaves shallower than --depth are searched again at that
depth (Multi-ProbCut at --selectivity), the most played positions first, and the negamax runs
again.  The file records each position's depth, so a run stopped by --seconds (or killed: the
book so far is written every --save-every seconds) is continued by running it again with
--book set to its output; the searches are deterministic, so the pieces give the file one run would.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from engine_server import __version__
from engine_server.eval import book as B
from engine_server.eval import mpc as M
from engine_server.eval.weights import default_weights
from engine_server.game import PASS, Color, Game, Position, Rules, parse_move, square_name
from engine_server.game.bitboard import U1, U, legal_moves
from engine_server.game.wthor import DEFAULT_WTHOR
from engine_server.search.alphabeta import SCALE as AB_SCALE
from engine_server.search.alphabeta import SEL_EXACT, SELECTIVITY_PCT, SELECTIVITY_T, AlphaBeta

LEAF_TABLE_BITS = 16      # a small table, cleared before every leaf search (see _leaf_values)


# --- positions ----------------------------------------------------------------------------------

def count_positions(P: np.ndarray, O: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Canonical positions with the number of times each occurs."""
    cP = np.empty_like(P)
    cO = np.empty_like(O)
    B.canonical_many(P, O, cP, cO)
    keys = np.stack([cP, cO], 1)
    uniq, counts = np.unique(keys, axis=0, return_counts=True)
    return uniq[:, 0].copy(), uniq[:, 1].copy(), counts.astype(np.uint32)


def wthor_positions(directory: Path, max_ply: int, games: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    from engine_server.game.wthor import read_dir, replay

    g = read_dir(directory)
    if games is not None:
        g = g.take(np.arange(min(games, len(g))))
    pos, valid, _ = replay(g)
    keep = (60 - pos.empties) <= max_ply
    P, O, counts = count_positions(pos.P[keep], pos.O[keep])
    return P, O, counts, int(valid.sum())


def selfplay_positions(rules: int, games: int, max_ply: int, depth: int, spread: float,
                       seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Positions of ``games`` games of the alpha-beta against itself for their first
    ``max_ply`` plies, each move drawn among those within ``spread`` discs of the best."""
    rng = random.Random(seed)
    ab = AlphaBeta(default_weights(rules), 18)
    Ps: list[int] = []
    Os: list[int] = []
    for _ in range(games):
        pos = Position.start(Rules(rules))
        for _ply in range(max_ply + 1):
            if pos.is_game_over():
                break
            legal = pos.legal_moves()
            if legal == [PASS]:
                pos = pos.play(PASS)
                continue
            P, O = pos.bitboards()
            Ps.append(int(P))
            Os.append(int(O))
            if _ply == max_ply:
                break
            r = ab.search(pos, max_depth=depth, analysis=True)
            best = max(v[0] for v in r.moves.values())
            pool = sorted(m for m, v in r.moves.items() if v[0] >= best - spread)
            pos = pos.play(rng.choice(pool))
    P_arr = np.array(Ps, np.uint64)
    O_arr = np.array(Os, np.uint64)
    cP, cO, counts = count_positions(P_arr, O_arr)
    return cP, cO, counts, games


# --- leaves -------------------------------------------------------------------------------------

@njit(cache=True)
def leaving_moves(Ps, Os):
    """Per position, the legal moves that lead out of the book (to a position it does not
    hold, or to the end of the game)."""
    out = np.zeros(Ps.shape[0], np.uint64)
    for i in range(Ps.shape[0]):
        moves = legal_moves(Ps[i], Os[i])
        mask = U(0)
        for sq in range(64):
            if (moves >> U(sq)) & U1:
                cP, cO, s = B.child_key(Ps[i], Os[i], sq)
                if s == 0 or B.find(Ps, Os, cP, cO) < 0:
                    mask |= U1 << U(sq)
        out[i] = mask
    return out


_WORKER: dict[str, Any] = {}


def _leaf_chunk(args: tuple[int, int, int, np.ndarray, np.ndarray, np.ndarray]
                ) -> tuple[np.ndarray, np.ndarray]:
    rules, depth, level, P, O, masks = args
    ab = _WORKER.get("ab")
    if ab is None or _WORKER.get("rules") != rules:
        w = default_weights(rules)
        ab = _WORKER["ab"] = AlphaBeta(w, LEAF_TABLE_BITS)
        _WORKER["rules"] = rules
        _WORKER["mpc"] = M.shipped(rules, w)
    margins = None if level == SEL_EXACT else \
        _WORKER["mpc"].margins(SELECTIVITY_T[level], AB_SCALE)
    values = np.full(P.shape[0], B.LEAF_NONE, np.int16)
    moves = np.full(P.shape[0], B.NO_MOVE, np.int8)
    for i in range(P.shape[0]):
        mask = int(masks[i])
        if not mask:
            continue
        only = [sq for sq in range(64) if mask >> sq & 1]
        # A search over some of the root's moves stores the root in the table as if it were
        # the position's value; a clean table keeps that from reaching the next search.
        ab.clear()
        r = ab.search(Position(int(P[i]), int(O[i]), Color.BLACK, Rules(rules)),
                      max_depth=depth, moves=only, selectivity=level, mpc=margins)
        v = int(round(r.score * AB_SCALE)) * B.SCALE // AB_SCALE
        values[i] = max(-64 * B.SCALE, min(64 * B.SCALE, v))
        moves[i] = -1 if r.move is None else int(r.move)
    return values, moves


def leaf_values(P: np.ndarray, O: np.ndarray, masks: np.ndarray, rules: int, depth: int,
                jobs: int, progress: Any = None, level: int = SEL_EXACT,
                until: float | None = None, chunk: int = 256,
                on_chunk: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Searches of depth ``depth`` at selectivity ``level`` of the moves ``masks`` of each
    position: values (``B.SCALE``), moves, and which positions were searched.  Chunks of
    ``chunk`` positions start in order until ``time.monotonic()`` reaches ``until``; the
    results are taken in order, so a run cut short has searched a prefix, and ``on_chunk`` is
    called with the three arrays after each chunk."""
    n = P.shape[0]
    values = np.full(n, B.LEAF_NONE, np.int16)
    moves = np.full(n, B.NO_MOVE, np.int8)
    searched = np.zeros(n, np.bool_)
    starts = iter(range(0, n, chunk))

    def part(s: int) -> tuple[int, int, int, np.ndarray, np.ndarray, np.ndarray]:
        return rules, depth, level, P[s:s + chunk], O[s:s + chunk], masks[s:s + chunk]

    def next_start() -> int | None:
        if until is not None and time.monotonic() >= until:
            return None
        return next(starts, None)

    def take(s: int, got: tuple[np.ndarray, np.ndarray]) -> None:
        k = got[0].shape[0]
        values[s:s + k] = got[0]
        moves[s:s + k] = got[1]
        searched[s:s + k] = True
        if progress is not None:
            progress(int(searched.sum()), n)
        if on_chunk is not None:
            on_chunk(values, moves, searched)

    if jobs <= 1:
        while (s := next_start()) is not None:
            take(s, _leaf_chunk(part(s)))
        return values, moves, searched
    with ProcessPoolExecutor(jobs) as ex:
        pending: deque[tuple[int, Future[tuple[np.ndarray, np.ndarray]]]] = deque()
        while True:
            while len(pending) < 2 * jobs and (s := next_start()) is not None:
                pending.append((s, ex.submit(_leaf_chunk, part(s))))
            if not pending:
                break
            s, fut = pending.popleft()
            take(s, fut.result())
    return values, moves, searched


# --- the whole build ----------------------------------------------------------------------------

def grow(arrays: dict[str, np.ndarray], masks: np.ndarray, add_P: np.ndarray,
         add_O: np.ndarray, add_games: np.ndarray, rules: int, leaf_depth: int, jobs: int,
         progress: Any = None) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The book ``arrays`` (sorted, without ``value``) with the canonical positions ``add_*``
    merged in: a position already held adds its games, a new one gets a leaf search, and every
    position whose moves out of the book changed (``masks``: those moves before) is searched
    again, at ``leaf_depth``.  Returns the arrays, the new masks and which entries are new."""
    P, O, games = arrays["P"], arrays["O"], arrays["games"].astype(np.int64)
    leaf, leaf_move, depth = arrays["leaf"], arrays["leaf_move"], arrays[B.DEPTH]
    n_old = P.shape[0]
    keys, inverse = np.unique(np.stack([add_P, add_O], 1), axis=0, return_inverse=True)
    counts = np.zeros(keys.shape[0], np.int64)
    np.add.at(counts, inverse.reshape(-1), add_games.astype(np.int64))
    at = np.array([B.find(P, O, k[0], k[1]) for k in keys], np.int64) if n_old else \
        np.full(keys.shape[0], -1, np.int64)
    held = at >= 0
    np.add.at(games, at[held], counts[held])
    fresh = keys[~held]
    P = np.concatenate([P, fresh[:, 0]])
    O = np.concatenate([O, fresh[:, 1]])
    games = np.concatenate([games, counts[~held]])
    leaf = np.concatenate([leaf, np.full(fresh.shape[0], B.LEAF_NONE, np.int16)])
    leaf_move = np.concatenate([leaf_move, np.full(fresh.shape[0], B.NO_MOVE, np.int8)])
    depth = np.concatenate([depth, np.full(fresh.shape[0], leaf_depth, np.uint8)])
    new = np.concatenate([np.zeros(n_old, np.bool_), np.ones(fresh.shape[0], np.bool_)])
    order = np.lexsort((O, P))
    P, O, games, leaf, leaf_move, depth, new = (
        a[order] for a in (P, O, games, leaf, leaf_move, depth, new))
    new_masks = leaving_moves(P, O)
    old_masks = np.zeros_like(new_masks)
    old_index = np.argsort(order)   # where each entry of the previous arrays went
    old_masks[old_index[:n_old]] = masks
    redo = np.nonzero(new | (new_masks != old_masks))[0]
    v, m, _ = leaf_values(P[redo], O[redo], new_masks[redo], rules, leaf_depth, jobs, progress)
    leaf[redo] = v
    leaf_move[redo] = m
    depth[redo] = leaf_depth
    games = np.minimum(games, np.iinfo(np.uint32).max).astype(np.uint32)
    return ({"P": P, "O": O, "games": games, "leaf": leaf, "leaf_move": leaf_move,
             B.DEPTH: depth}, new_masks, new)


def build(P: np.ndarray, O: np.ndarray, games: np.ndarray, rules: int, leaf_depth: int,
          extend: int = 0, extend_games: int = 50, jobs: int = 1,
          progress: Any = None) -> dict[str, np.ndarray]:
    """Leaf searches, extension rounds and negamax over the given canonical positions."""
    order = np.lexsort((O, P))
    P, O, games = P[order], O[order], games[order]
    masks = leaving_moves(P, O)
    leaf, leaf_move, _ = leaf_values(P, O, masks, rules, leaf_depth, jobs, progress)
    depth = np.full(P.shape[0], leaf_depth, np.uint8)
    extend_from = games >= extend_games
    for _round in range(extend):
        value = B.negamax(P, O, leaf.astype(np.int64), B.disc_order(P, O))
        new_P: list[int] = []
        new_O: list[int] = []
        for i in np.nonzero(extend_from & (leaf_move >= 0))[0]:
            # the search's move is the position's best: follow it into the book
            if int(leaf[i]) < int(value[i]):
                continue
            cP, cO, s = B.child_key(P[i], O[i], int(leaf_move[i]))
            if s != 0:
                new_P.append(int(cP))
                new_O.append(int(cO))
        if not new_P:
            break
        # positions the book already holds gain no games and no search in grow
        grown, masks, new = grow({"P": P, "O": O, "games": games, "leaf": leaf,
                                  "leaf_move": leaf_move, B.DEPTH: depth}, masks,
                                 np.array(new_P, np.uint64),
                                 np.array(new_O, np.uint64), np.zeros(len(new_P), np.uint32),
                                 rules, leaf_depth, jobs, progress)
        P, O, games = grown["P"], grown["O"], grown["games"]
        leaf, leaf_move, depth = grown["leaf"], grown["leaf_move"], grown[B.DEPTH]
        if not new.any():
            break
        extend_from = new
    value = B.negamax(P, O, leaf.astype(np.int64), B.disc_order(P, O))
    return {"P": P, "O": O, "value": value.astype(np.int16), "leaf": leaf,
            "leaf_move": leaf_move, "games": games, B.DEPTH: depth}


# --- learning from played games ----------------------------------------------------------------

def game_positions(texts: list[str], rules: int, max_ply: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Canonical positions (with how many games reached each) of the GGF games in ``texts``
    (one file's text each; a file may hold many games) that start from the start position and
    are played under ``rules``, up to ``max_ply`` plies; positions where the side to move must
    pass or the game is over are left out.  Also returns how many games were read."""
    from engine_server.game import ggf

    start = Position.start(Rules(rules))
    Ps: list[int] = []
    Os: list[int] = []
    n = 0
    for text in texts:
        for chunk in text.split("(;")[1:]:
            try:
                rec = ggf.parse("(;" + chunk)
                moves = rec.game().moves
            except (ValueError, KeyError) as e:
                raise ValueError(f"a game record that cannot be read: {e}") from None
            if int(rec.rules) != int(rules) or rec.start.bitboards() != start.bitboards() \
                    or rec.start.side != start.side:
                continue
            n += 1
            pos = start
            for ply, m in enumerate(moves):
                if ply > max_ply:
                    break
                if m != PASS and not pos.is_game_over():
                    P, O = pos.bitboards()
                    Ps.append(int(P))
                    Os.append(int(O))
                pos = pos.play(m)
    if not Ps:
        empty = np.zeros(0, np.uint64)
        return empty, empty.copy(), np.zeros(0, np.uint32), n
    P_arr, O_arr, counts = count_positions(np.array(Ps, np.uint64), np.array(Os, np.uint64))
    return P_arr, O_arr, counts, n


def learn(book: B.Book, P: np.ndarray, O: np.ndarray, games: np.ndarray, jobs: int = 1,
          progress: Any = None) -> dict[str, np.ndarray]:
    """``book`` grown by the canonical positions ``P``, ``O`` (reached by ``games`` games each):
    new positions searched at the book's leaf depth, the leaves whose moves out of the book
    changed searched again, the negamax run over the whole tree."""
    arrays = {"P": book.P, "O": book.O, "games": book.games, "leaf": book.leaf.copy(),
              "leaf_move": book.leaf_move.copy(), B.DEPTH: book.depth.copy()}
    masks = leaving_moves(book.P, book.O)
    grown, _, _ = grow(arrays, masks, P, O, games, book.rules, book.leaf_depth, jobs, progress)
    value = B.negamax(grown["P"], grown["O"], grown["leaf"].astype(np.int64),
                      B.disc_order(grown["P"], grown["O"]))
    return dict(grown, value=value.astype(np.int16))


# --- deepening ----------------------------------------------------------------------------------

def deepen_order(book: B.Book, depth: int, min_games: int = 0, limit: int | None = None,
                 masks: np.ndarray | None = None) -> np.ndarray:
    """The entries whose leaf search is shallower than ``depth`` (and that some move leaves),
    reached by at least ``min_games`` games: the most played first, then the earliest; the
    first ``limit`` of them.  ``masks``: the book's :func:`leaving_moves`, when known."""
    if masks is None:
        masks = leaving_moves(book.P, book.O)
    todo = np.nonzero((masks != 0) & (book.depth < depth)
                      & (book.games.astype(np.int64) >= min_games))[0]
    discs = np.bitwise_count(book.P[todo] | book.O[todo])
    key = np.lexsort((discs, -book.games[todo].astype(np.int64)))
    return todo[key][:limit]


def deepen(book: B.Book, depth: int, level: int = SEL_EXACT, min_games: int = 0,
           limit: int | None = None, until: float | None = None, jobs: int = 1,
           progress: Any = None, checkpoint: Any = None
           ) -> tuple[dict[str, np.ndarray], int, int]:
    """``book`` with the leaves of :func:`deepen_order` searched again at ``depth`` and
    selectivity ``level``, in that order until ``until`` (``time.monotonic()``), and the
    negamax run again.  ``checkpoint(arrays, searched, left)`` is offered the book so far (a
    function that makes it) after each chunk.  Returns the arrays, the positions searched and
    those still shallower than ``depth``: a second call goes on where the first stopped (its
    positions are at ``depth`` now)."""
    masks = leaving_moves(book.P, book.O)
    every = deepen_order(book, depth, min_games, masks=masks)
    todo = every[:limit]
    leaf, leaf_move, d = book.leaf.copy(), book.leaf_move.copy(), book.depth.copy()

    def arrays_with(values: np.ndarray, moves: np.ndarray, searched: np.ndarray
                    ) -> dict[str, np.ndarray]:
        at = todo[searched]
        leaf[at] = values[searched]
        leaf_move[at] = moves[searched]
        d[at] = depth
        value = B.negamax(book.P, book.O, leaf.astype(np.int64), B.disc_order(book.P, book.O))
        return {"P": book.P, "O": book.O, "games": book.games, "leaf": leaf,
                "leaf_move": leaf_move, B.DEPTH: d, "value": value.astype(np.int16)}

    def on_chunk(values: np.ndarray, moves: np.ndarray, searched: np.ndarray) -> None:
        if checkpoint is not None:
            done = int(searched.sum())
            checkpoint(lambda: arrays_with(values, moves, searched), done,
                       int(every.shape[0]) - done)

    v, m, searched = leaf_values(book.P[todo], book.O[todo], masks[todo], book.rules, depth,
                                 jobs, progress, level, until, chunk=32, on_chunk=on_chunk)
    done = int(searched.sum())
    return arrays_with(v, m, searched), done, int(every.shape[0]) - done


# --- show ---------------------------------------------------------------------------------------

def parse_position(text: str, rules: Rules) -> Position:
    """A move list from the start (``f5d6c3``, ``f5 d6 c3``) or a board: 64 squares of
    ``X``/``O``/``-`` and the side to move (``X`` or ``O``)."""
    compact = "".join(text.split())
    squares = compact.replace("*", "X")
    if len(squares) in (64, 65) and set(squares[:64]) <= set("XxOo-.") \
            and not any(ch.isdigit() for ch in squares):
        side = squares[64] if len(squares) == 65 else "X"
        return Position.from_string(squares[:64].upper().replace(".", "-"), side.upper(), rules)
    if len(compact) % 2:
        raise ValueError(f"not a move list or a board: {text!r}")
    moves = [parse_move(compact[i:i + 2]) for i in range(0, len(compact), 2)]
    return Game.from_moves(moves, rules=rules).position


def show(book: B.Book, position: Position) -> str:
    lines = [str(position)]
    v = book.entry_value(position)
    i = book.index(position)
    if i >= 0:
        lines.append(f"in the book: value {v:+.2f} discs, {int(book.games[i])} games")
    else:
        lines.append("not in the book")
    moves = book.moves(position, lines=True)
    if moves:
        lines.append(f"{'move':<6}{'value':>8}{'games':>8}{'depth':>7}  line")
        for m in moves:
            line = "-".join(square_name(x) for x in m.line)
            lines.append(f"{square_name(m.move):<6}{m.value:>+8.2f}{m.games:>8}"
                         f"{m.leaf_depth:>7}  {line}")
    leaf = book.leaf_of(position)
    if leaf is not None:
        lines.append(f"best move out of the book: {square_name(leaf[0])} {leaf[1]:+.2f} "
                     f"(depth-{int(book.depth[i])} search)")
    choice = book.choose(position)
    lines.append(f"book move: {square_name(choice.move)}" if choice is not None
                 else "book move: none (the search decides)")
    return "\n".join(lines)


# --- command line -------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="othello-book", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build a book file")
    b.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    b.add_argument("-o", "--out", type=Path, required=True)
    b.add_argument("--wthor", type=Path, default=DEFAULT_WTHOR,
                   help="directory of WTHOR .wtb files (standard rules)")
    b.add_argument("--wthor-games", type=int, default=None,
                   help="use only the first N WTHOR games (a quick build)")
    b.add_argument("--selfplay-games", type=int, default=4000,
                   help="self-play games (reversed rules: the only source)")
    b.add_argument("--selfplay-depth", type=int, default=4)
    b.add_argument("--selfplay-spread", type=float, default=2.0,
                   help="discs: self-play draws among moves this close to the best")
    b.add_argument("--max-ply", type=int, default=24)
    b.add_argument("--min-games", type=int, default=4)
    b.add_argument("--leaf-depth", type=int, default=8)
    b.add_argument("--extend", type=int, default=2, help="extension rounds (plies)")
    b.add_argument("--extend-games", type=int, default=50,
                   help="extend positions reached by at least this many games")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    b.add_argument("--seed", type=int, default=1)
    lr = sub.add_parser("learn", help="add the positions of played games to a book")
    lr.add_argument("games", nargs="+", type=Path,
                    help="GGF files (an othello-match run's games.ggf, NBoard's saved games)")
    lr.add_argument("-o", "--out", type=Path, required=True)
    lr.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    lr.add_argument("--book", type=Path, default=None,
                    help="the book to grow (default: the shipped book of the rules)")
    lr.add_argument("--max-ply", type=int, default=None,
                    help="add positions up to this ply (default: the book's own --max-ply)")
    lr.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    dp = sub.add_parser("deepen", help="search a book's leaves again, deeper (resumable)")
    dp.add_argument("-o", "--out", type=Path, required=True,
                    help="the deepened book (may be --book itself; written as it goes)")
    dp.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    dp.add_argument("--book", type=Path, default=None,
                    help="the book to deepen (default: the shipped book of the rules)")
    dp.add_argument("--depth", type=int, default=20)
    dp.add_argument("--selectivity", type=int, default=74, choices=[*SELECTIVITY_PCT, 100],
                    help="Multi-ProbCut level of the searches, percent (100: full width)")
    dp.add_argument("--min-games", type=int, default=0,
                    help="only positions reached by at least this many games")
    dp.add_argument("--positions", type=int, default=None,
                    help="only the first N positions of the order (most played first)")
    dp.add_argument("--seconds", type=float, default=None,
                    help="stop starting searches after this long (then run again to go on)")
    dp.add_argument("--save-every", type=float, default=300.0,
                    help="seconds between the writes of the book so far")
    dp.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    s = sub.add_parser("show", help="the book's moves for a position")
    s.add_argument("position", nargs="+",
                   help="moves from the start (f5d6c3) or 64 squares X/O/- and the side")
    s.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    s.add_argument("--book", type=Path, default=None, help="book file (default: shipped)")
    return p


def _progress(t0: float) -> Any:
    """A progress callback for the leaf searches: a line to stderr every 10 s and at the end."""
    last = [0.0]

    def progress(done: int, total: int) -> None:
        if time.monotonic() - last[0] > 10 or done == total:
            last[0] = time.monotonic()
            print(f"  leaves {done}/{total} ({time.monotonic() - t0:.0f} s)", file=sys.stderr)

    return progress


def _load_book(args: argparse.Namespace, rules: int) -> B.Book | None:
    """The book of ``--book`` (default: the shipped one of ``rules``); None after saying why
    it cannot be used."""
    try:
        return B.load(args.book or B.default_path(rules), rules)
    except B.BookError as e:
        print(f"othello-book {args.cmd}: {e}", file=sys.stderr)
        return None


def _build(args: argparse.Namespace) -> int:
    rules = int(Rules.parse(args.rules))
    t0 = time.monotonic()
    if rules == int(Rules.STANDARD):
        P, O, counts, n_games = wthor_positions(args.wthor, args.max_ply, args.wthor_games)
        source = f"WTHOR {args.wthor.name}: {n_games} games"
    else:
        P, O, counts, n_games = selfplay_positions(rules, args.selfplay_games, args.max_ply,
                                                   args.selfplay_depth, args.selfplay_spread,
                                                   args.seed)
        source = (f"self-play: {n_games} games of ab depth {args.selfplay_depth}, moves "
                  f"within {args.selfplay_spread} discs of the best, seed {args.seed}")
    keep = counts >= args.min_games
    print(f"{int(keep.sum())} positions of {P.shape[0]} reached by >= {args.min_games} games "
          f"({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    progress = _progress(t0)
    arrays = build(P[keep], O[keep], counts[keep], rules, args.leaf_depth, args.extend,
                   args.extend_games, args.jobs, progress)
    meta = {"rules": rules, "source": source, "max_ply": args.max_ply,
            "min_games": args.min_games, "leaf_depth": args.leaf_depth,
            "extend": args.extend, "extend_games": args.extend_games, "seed": args.seed,
            "added": int((arrays["games"] == 0).sum()),
            "command": "othello-book " + " ".join(sys.argv[1:]),
            "seconds": round(time.monotonic() - t0, 1)}
    B.save(args.out, arrays, meta)
    print(json.dumps(dict(meta, positions=int(arrays["P"].shape[0]),
                          bytes=args.out.stat().st_size)), file=sys.stderr)
    return 0


def _learn(args: argparse.Namespace) -> int:
    rules = int(Rules.parse(args.rules))
    t0 = time.monotonic()
    book = _load_book(args, rules)
    if book is None:
        return 2
    max_ply = int(args.max_ply if args.max_ply is not None else book.meta.get("max_ply", 24))
    texts = []
    for path in args.games:
        try:
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
        except OSError as e:
            print(f"othello-book learn: {path}: {e.strerror or e}", file=sys.stderr)
            return 2
    try:
        P, O, counts, n_games = game_positions(texts, rules, max_ply)
    except ValueError as e:
        print(f"othello-book learn: {e}", file=sys.stderr)
        return 2
    progress = _progress(t0)
    arrays = learn(book, P, O, counts, args.jobs, progress)
    learned = list(book.meta.get("learned", []))
    learned.append({"games": n_games, "positions": int(P.shape[0]),
                    "added": int(arrays["P"].shape[0] - len(book)), "max_ply": max_ply,
                    "command": "othello-book " + " ".join(sys.argv[1:])})
    meta = dict(book.meta, learned=learned)
    meta.pop("format", None)
    meta.pop("positions", None)
    B.save(args.out, arrays, meta)
    print(json.dumps(dict(learned[-1], positions=int(arrays["P"].shape[0]),
                          seconds=round(time.monotonic() - t0, 1),
                          bytes=args.out.stat().st_size)), file=sys.stderr)
    return 0


def _deepen(args: argparse.Namespace, argv: list[str]) -> int:
    rules = int(Rules.parse(args.rules))
    t0 = time.monotonic()
    book = _load_book(args, rules)
    if book is None:
        return 2
    if not 1 <= args.depth <= 60:
        print(f"othello-book deepen: --depth {args.depth} is not 1..60", file=sys.stderr)
        return 2
    level = SEL_EXACT if args.selectivity == 100 else SELECTIVITY_PCT.index(args.selectivity)
    step = {"depth": args.depth, "selectivity": args.selectivity, "min_games": args.min_games,
            "command": "othello-book " + " ".join(argv)}
    earlier = list(book.meta.get("deepened", []))
    meta = dict(book.meta)
    meta.pop("format", None)
    meta.pop("positions", None)
    last = [t0]
    progress = _progress(t0)

    def write(arrays: dict[str, np.ndarray], searched: int, left: int) -> None:
        steps = earlier + [dict(step, searched=searched, left=left,
                                seconds=round(time.monotonic() - t0, 1))]
        tmp = args.out.with_name(args.out.name + ".tmp")
        B.save(tmp, arrays, dict(meta, deepened=steps))
        os.replace(tmp, args.out)   # a run killed while writing leaves the last good file

    def checkpoint(arrays: Any, searched: int, left: int) -> None:
        if time.monotonic() - last[0] >= args.save_every:
            last[0] = time.monotonic()
            write(arrays(), searched, left)

    until = None if args.seconds is None else t0 + args.seconds
    arrays, searched, left = deepen(book, args.depth, level, args.min_games, args.positions,
                                    until, args.jobs, progress, checkpoint)
    write(arrays, searched, left)
    print(json.dumps(dict(step, searched=searched, left=left,
                          positions=int(arrays["P"].shape[0]),
                          seconds=round(time.monotonic() - t0, 1),
                          bytes=args.out.stat().st_size)), file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "build":
        return _build(args)
    if args.cmd == "learn":
        return _learn(args)
    if args.cmd == "deepen":
        return _deepen(args, sys.argv[1:] if argv is None else argv)
    rules = Rules.parse(args.rules)
    try:
        book = B.load(args.book or B.default_path(int(rules)), int(rules))
        position = parse_position(" ".join(args.position), rules)
    except (B.BookError, ValueError) as e:
        print(f"othello-book: {e}", file=sys.stderr)
        return 2
    print(show(book, position))
    return 0


if __name__ == "__main__":
    sys.exit(main())
