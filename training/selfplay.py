"""Self-play data: games of the alpha-beta search against itself, labelled by the exact solver.

The game loop runs inside numba (one call plays a whole chunk of games), two threads with a
table each.  A game opens with a random number of uniformly random plies (0..``random_plies``,
for variety), then both sides play a fixed-depth search over the current weights.  When the
game reaches ``solve_empties`` empties the position is solved exactly; that value labels every
position of the game at or above it (the outcome of perfect play from there), and each later
position is solved itself.  Reversed rules have no human games, so this is all their data:
generation 0 plays uniformly random games (all-zero weights), each next generation searches
with the weights fitted on the games before (tabula rasa, as Alphello Zero asks of its learner).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from engine_server.eval.features import N_STAGES, N_WEIGHTS, eval_tables
from engine_server.game.bitboard import (
    START_BLACK,
    START_WHITE,
    U0,
    U1,
    disc_score,
    legal_moves,
    lowest_square,
    make_move,
    nth_bit,
    popcount,
    rng_below,
)
from engine_server.search import alphabeta as AB
from engine_server.search.endgame import (
    LIMIT,
    NODES,
    new_control,
    new_table,
    solve_root,
    solve_root_eval,
)

from .patterns import Dataset
from .pool import run_chunks


@njit(cache=True, inline="always")
def _shuffled_moves(moves, rng, order):
    """The squares of ``moves`` into ``order`` in a random order (so that equal scores, as
    with zero weights, pick at random); returns how many."""
    n = 0
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        order[n] = lowest_square(m)
        n += 1
    for i in range(n - 1, 0, -1):
        j = rng_below(rng, i + 1)
        t = order[i]
        order[i] = order[j]
        order[j] = t
    return n


@njit(cache=True, nogil=True)
def _pick(P, O, W, rules, depth, keys, data, ctl, rng, order, scores, kinds, mpc):
    """The move of a fixed-depth search (ties broken at random); PASS when forced.  ``mpc``
    holds the ProbCut margins (zeros: full width, so that labels do not depend on them)."""
    moves = legal_moves(P, O)
    if moves == U0:
        return 64
    n = _shuffled_moves(moves, rng, order)
    if depth <= 0:
        return order[0]
    ctl[AB.LIMIT] = 1 << 62
    ctl[AB.STOP] = 0
    AB.search_root(P, O, np.int64(-AB.INF), np.int64(AB.INF), np.int64(depth), W, rules, keys,
                   data, ctl, order[:n], scores[:n], kinds[:n], False, mpc)
    return ctl[AB.ROOT_BEST]


@njit(cache=True, nogil=True)
def play_games(n_games, seed, W, rules, depth, random_plies, solve_empties, keys, data, ctl,
               stt, sctl, P_out, O_out, e_out, t_out, g_out, c_out, game0, mpc):
    """Play ``n_games``; returns the number of positions written to the output arrays.  ``W``:
    the merged evaluation tables of ``eval_tables``; ``mpc``: ProbCut margins (zeros: none)."""
    rng = np.zeros(1, np.uint64)
    rng[0] = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1)
    order = np.zeros(64, np.int64)
    scores = np.zeros(64, np.int64)
    kinds = np.zeros(64, np.int64)
    k = 0
    for g in range(n_games):
        P = START_BLACK
        O = START_WHITE
        start = k
        n_random = rng_below(rng, random_plies + 1)
        ply = 0
        label_at = -1
        black = True
        while True:
            moves = legal_moves(P, O)
            if moves == U0 and legal_moves(O, P) == U0:
                break
            e = 64 - popcount(P | O)
            if moves != U0:
                P_out[k] = P
                O_out[k] = O
                e_out[k] = e
                g_out[k] = game0 + g
                c_out[k] = black
                t_out[k] = 0
                if e <= solve_empties:
                    sctl[NODES] = 0
                    sctl[LIMIT] = 1 << 62
                    v, _ = solve_root(P, O, np.int64(-65), np.int64(65), rules, stt, sctl)
                    t_out[k] = v
                    if label_at < 0:
                        label_at = k
                k += 1
            if moves == U0:
                sq = 64
            elif ply < n_random:
                sq = lowest_square(nth_bit(moves, rng_below(rng, popcount(moves))))
            else:
                sq = _pick(P, O, W, rules, depth, keys, data, ctl, rng, order, scores, kinds, mpc)
            P, O = make_move(P, O, sq)
            black = not black
            ply += 1
        # positions above the solved one take its value, from their own side's view
        if label_at >= 0:
            v = t_out[label_at]
            for i in range(start, label_at):
                t_out[i] = v if c_out[i] == c_out[label_at] else -v
        else:
            # the game ended above solve_empties: its final score labels everything
            for i in range(start, k):
                t_out[i] = 0
            k = start
    return k


@njit(cache=True, nogil=True)
def _searched_move(P, O, W, rules, depth, keys, data, ctl, rng, order, scores, kinds, mpc):
    """(move, value in quarter discs) of a full-width search to ``depth`` by iterative
    deepening (the best move of each iteration searched first in the next); the root moves
    start in a random order, so that equal values pick at random.  PASS (64) and 0 when
    forced."""
    moves = legal_moves(P, O)
    if moves == U0:
        return 64, 0
    n = _shuffled_moves(moves, rng, order)
    best = order[0]
    v = 0
    for d in range(1, depth + 1):
        ctl[AB.LIMIT] = 1 << 62
        ctl[AB.STOP] = 0
        v = AB.search_root(P, O, np.int64(-AB.INF), np.int64(AB.INF), np.int64(d), W, rules,
                           keys, data, ctl, order[:n], scores[:n], kinds[:n], False, mpc)
        best = ctl[AB.ROOT_BEST]
        j = 0
        while order[j] != best:
            j += 1
        while j > 0:
            order[j] = order[j - 1]
            j -= 1
        order[0] = best
    return best, v


@njit(cache=True, nogil=True)
def play_labelled(P, O, n_random, seed, W, Ws, rules, depth, solve_empties, keys, data, ctl,
                  stt, sctl, P_out, O_out, e_out, t_out, v_out, k0, mpc):
    """One game from (P, O), side to move first: ``n_random`` uniformly random moves, then
    a full-width search of ``depth`` plies per move until ``solve_empties`` empties, from where
    the exact solver plays (perfect play).  Each position after the random moves where the
    side to move has a move is written from index ``k0`` on: P, O, empties, the target (the
    game's final margin under this play, side to move's view: the solved value at and below
    ``solve_empties``, the first solved value propagated above it, or the final score of a
    game that ended earlier) and the value the player found (the search's, rounded to discs,
    or the solver's).  The tables are cleared first, so the game depends on its arguments
    only.  ``Ws``: the evaluation tables that order the solver's moves (int16).  Returns the
    index after the last position written."""
    keys[:] = 0
    data[:] = 0
    ctl[:] = 0
    ctl[AB.SEL] = AB.SEL_EXACT
    stt[:] = 0
    sctl[:] = 0
    rng = np.zeros(1, np.uint64)
    rng[0] = np.uint64(seed) | U1
    order = np.zeros(64, np.int64)
    scores = np.zeros(64, np.int64)
    kinds = np.zeros(64, np.int64)
    side = np.zeros(64, np.bool_)
    k = k0
    left = n_random
    black = True
    label_at = -1
    while True:
        moves = legal_moves(P, O)
        if moves == U0 and legal_moves(O, P) == U0:
            break
        if moves == U0:
            sq = 64
        elif left > 0:
            sq = lowest_square(nth_bit(moves, rng_below(rng, popcount(moves))))
            left -= 1
        else:
            e = 64 - popcount(P | O)
            P_out[k] = P
            O_out[k] = O
            e_out[k] = e
            side[k - k0] = black
            if e <= solve_empties:
                sctl[NODES] = 0
                sctl[LIMIT] = 1 << 62
                v, sq = solve_root_eval(P, O, np.int64(-65), np.int64(65), rules, stt, sctl, Ws)
                t_out[k] = v
                v_out[k] = v
                if label_at < 0:
                    label_at = k
            else:
                sq, q = _searched_move(P, O, W, rules, depth, keys, data, ctl, rng, order,
                                       scores, kinds, mpc)
                # quarter discs to discs, rounded half up
                v_out[k] = min(64, max(-64, (q + 2) // 4))
            k += 1
        P, O = make_move(P, O, sq)
        black = not black
    if label_at >= 0:
        ref = label_at
        v = t_out[label_at]
        ref_black = side[label_at - k0]
    else:
        v = disc_score(popcount(P), popcount(O), rules)
        ref_black = black
        ref = k
    for i in range(k0, ref):
        t_out[i] = v if side[i - k0] == ref_black else -v
    return k


def _state() -> tuple:
    """One thread's search tables and scratch arrays."""
    return (*AB.new_table(18), np.zeros(AB.CTL_SIZE, np.int64), new_table(18), new_control())


def _chunk(st: tuple, s: int, e: int, seed: int, weights: np.ndarray, rules: int, depth: int,
           random_plies: int, solve_empties: int) -> Dataset:
    """Games ``s`` to ``e`` of a run; they depend on the seed and ``s`` only, not on the thread
    or machine that plays them."""
    keys, data, ctl, stt, sctl = st
    n = e - s
    cap = n * 64
    P = np.zeros(cap, np.uint64)
    O = np.zeros(cap, np.uint64)
    em = np.zeros(cap, np.int64)
    t = np.zeros(cap, np.int64)
    g = np.zeros(cap, np.int64)
    c = np.zeros(cap, np.bool_)
    k = play_games(n, seed * 1_000_003 + s, eval_tables(weights), np.int64(rules), depth,
                   random_plies, solve_empties, keys, data, ctl, stt, sctl, P, O, em, t, g, c, s,
                   AB.NO_MPC)
    return Dataset(P[:k], O[:k], em[:k].astype(np.int8), t[:k].astype(np.int8), g[:k])


def _cluster_chunk(job: tuple, weights: np.ndarray) -> Dataset:
    """A chunk as one Dask task (the job is ``(s, e, seed, rules, depth, random_plies,
    solve_empties)``, the weights sent to each worker once); tables are allocated per task."""
    s, e, seed, *rest = job
    return _chunk(_state(), s, e, seed, weights, *rest)


def dataset(agent_spec: str, rules: int, games: int, solve_empties: int, seed: int,
            cache: Path, threads: int = 2, log=print, weights: np.ndarray | None = None,
            depth: int | None = None, random_plies: int | None = None,
            cluster: str | None = None, chunk: int = 200) -> Dataset:
    """``games`` self-play games as a labelled data set (cached in ``cache``), played in chunks
    of ``chunk`` games on ``threads`` threads or, with ``cluster``, as one task per chunk on the
    workers of that Dask scheduler (each task carries the weight table)."""
    if cache.is_file():
        log(f"reusing {cache}")
        return Dataset.load(cache)
    spec_depth, spec_random = _parse(agent_spec)
    depth = spec_depth if depth is None else depth
    random_plies = spec_random if random_plies is None else random_plies
    if weights is None:
        weights = np.zeros((N_STAGES, N_WEIGHTS), np.int32)
    done = [0]
    args = (seed, weights, rules, depth, random_plies, solve_empties)
    small = (rules, depth, random_plies, solve_empties)  # what a cluster task carries

    def progress(count: int) -> None:
        done[0] += count
        log(f"self-play: {done[0]}/{games} games")

    if cluster is not None:
        from clients.match.cluster import run_cluster

        parts: dict[int, Dataset] = {}
        jobs = [(s, (s, min(games, s + chunk), seed, *small)) for s in range(0, games, chunk)]

        def finish(s: int, d: Dataset) -> None:
            parts[s] = d
            progress(min(games, s + chunk) - s)

        run_cluster(jobs, cluster, finish, lambda _: False, work=_cluster_chunk,
                    shared=weights)
    else:
        parts = run_chunks(games, chunk, threads, _state,
                           lambda st, s, e: _chunk(st, s, e, *args), progress)
    d = Dataset(*(np.concatenate([getattr(parts[s], k) for s in sorted(parts)])
                  for k in ("P", "O", "empties", "target", "game")))
    d.save(cache)
    return d


def _parse(spec: str) -> tuple[int, int]:
    """``ab:depth=D,random=R`` -> (D, R); only these two keys matter to the self-play loop."""
    name, _, rest = spec.partition(":")
    if name.strip() != "ab":
        raise ValueError(f"self-play plays with the ab search; got {spec!r}")
    depth, rnd = 2, 8
    for item in filter(None, rest.split(",")):
        k, _, v = item.partition("=")
        if k.strip() == "depth":
            depth = int(v)
        elif k.strip() == "random":
            rnd = int(v)
        else:
            raise ValueError(f"self-play: unknown key {k!r} in {spec!r}")
    return depth, rnd


__all__ = ["dataset", "play_games", "play_labelled"]
