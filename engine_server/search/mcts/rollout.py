"""Rollout (playout) policies, all inside numba, all seeded through the caller's RNG array.

Policy ids (``policy`` argument):

* ``RANDOM`` - uniform over legal moves (the UCB1 paper Alg. 3.1, the CS303 report "random").
* ``PSEUDO`` - the MCTS blog post's ``simRandPlus``: draw a move uniformly; if it is a "very bad"
  square, draw again, at most twice.  Very bad squares are the X- and C-squares under standard
  rules. Under reversed rules the roles turn around (the CS303 report: corners become worthless, X/C
  squares valuable), so the corners are the squares to avoid.  This choice is ours.
* ``PSEUDO_X`` - ``simRandPlus`` as the post's source code defines it: its ``veryBadPositions``
  are the four X-squares only (reversi.go: "positions that give corners away").  It matches the
  post's Table 1 where ``PSEUDO`` does not (docs/papers/dk.md); ``PSEUDO`` stays the
  default of our agents, whose tested moves depend on it.  Reversed rules: the corners.
* ``TABLE`` - greedy on a square-value table with uniform tie-breaking (the CS303 report's "value
  map" and "Roxanne" policies; the caller passes the table already signed for the rules).
* ``HEURISTIC`` - the OCBA paper's move evaluation: the move maximising
  ``400*(corners - opp corners) + 100*(opp X - own X) + 50*moves/opp moves + 80*pmob/opp pmob``
  measured after the move (ratios use ``max(1, .)`` denominators; potential mobility is the
  number of empty squares next to the other side's discs).  Under reversed rules the move
  minimising it is played.

Every rollout returns ``(mine, theirs)``: the final disc counts of the side to move at its start.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine_server.game.bitboard import (
    REVERSED,
    S32,
    U0,
    U1,
    U,
    flips,
    legal_moves,
    neighbours,
    popcount,
    rng_next,
)
from engine_server.game.memory import NO_REFCOUNT
from engine_server.game.valuemaps import C_SQUARES, CORNERS, X_SQUARES

RANDOM = 0
PSEUDO = 1
TABLE = 2
HEURISTIC = 3
PSEUDO_X = 4

POLICY_NAMES = {"random": RANDOM, "pseudo": PSEUDO, "pseudo-random": PSEUDO,
                "valuemap": TABLE, "roxanne": TABLE, "heuristic": HEURISTIC,
                "pseudo-x": PSEUDO_X}

_CORNERS = U(CORNERS)
_XC = U(X_SQUARES | C_SQUARES)
_X = U(X_SQUARES)


@njit(cache=True, inline="always")
def _pick_uniform(moves, rng):
    k = ((rng_next(rng) >> S32) * U(popcount(moves))) >> S32
    while k > U0:
        moves &= moves - U1
        k -= U1
    return moves & (~moves + U1)


@njit(cache=True)
def bad_squares_of(policy, rules):
    """The re-drawn squares of a pseudo-random ``policy`` (PSEUDO or PSEUDO_X) under ``rules``."""
    if rules == REVERSED:
        return _CORNERS
    return _X if policy == PSEUDO_X else _XC


@njit(cache=True, inline="always")
def pick_pseudo(moves, bad, rng):
    m = _pick_uniform(moves, rng)
    if m & bad:
        m = _pick_uniform(moves, rng)
        if m & bad:
            m = _pick_uniform(moves, rng)
    return m


@njit(cache=True, inline="always")
def _keep_best(v, m, best, chosen, count, rng):
    """One step of an argmax over moves; reservoir sampling keeps ties uniform in one pass."""
    if v > best:
        return v, m, 1
    if v == best:
        count += 1
        if ((rng_next(rng) >> S32) * U(count)) >> S32 == U0:
            chosen = m
    return best, chosen, count


@njit(cache=True, **NO_REFCOUNT)
def pick_table(moves, table, rng):
    best = -1 << 60
    count = 0
    chosen = U0
    mm = moves
    while mm:
        m = mm & (~mm + U1)
        mm ^= m
        best, chosen, count = _keep_best(table[popcount(m - U1)], m, best, chosen, count, rng)
    return chosen


@njit(cache=True)
def potential_mobility(own, opp):
    """Empty squares next to ``opp``'s discs (the OCBA paper's p-mob for the owner of ``own``)."""
    empty = ~(own | opp)
    return popcount(neighbours(opp) & empty)


@njit(cache=True)
def heuristic_eval(me, opp):
    """The OCBA paper's evaluation of a position from the point of view of the owner of ``me``."""
    my_moves = popcount(legal_moves(me, opp))
    op_moves = popcount(legal_moves(opp, me))
    v = 400.0 * (popcount(me & _CORNERS) - popcount(opp & _CORNERS))
    v += 100.0 * (popcount(opp & _X) - popcount(me & _X))
    v += 50.0 * my_moves / max(1, op_moves)
    v += 80.0 * potential_mobility(me, opp) / max(1, potential_mobility(opp, me))
    return v


@njit(cache=True)
def pick_heuristic(P, O, moves, rules, rng):
    best = -1e300
    count = 0
    chosen = U0
    sign = -1.0 if rules == REVERSED else 1.0
    mm = moves
    while mm:
        m = mm & (~mm + U1)
        mm ^= m
        f = flips(P, O, m)
        v = sign * heuristic_eval(P ^ f ^ m, O ^ f)
        best, chosen, count = _keep_best(v, m, best, chosen, count, rng)
    return chosen


@njit(cache=True, inline="always")
def pick_move(P, O, moves, policy, bad, rules, table, rng):
    """One move (a bit of ``moves``) of a rollout policy; ``bad`` from bad_squares_of."""
    if policy == RANDOM:
        return _pick_uniform(moves, rng)
    if policy == PSEUDO or policy == PSEUDO_X:
        return pick_pseudo(moves, bad, rng)
    if policy == TABLE:
        return pick_table(moves, table, rng)
    return pick_heuristic(P, O, moves, rules, rng)


@njit(cache=True, **NO_REFCOUNT)
def rollout(P, O, policy, rules, table, rng):
    """Play to the end with ``policy``; returns the final ``(mine, theirs)`` of the starting
    side."""
    flipped = False
    bad = bad_squares_of(policy, rules)
    while True:
        moves = legal_moves(P, O)
        if moves == U0:
            if legal_moves(O, P) == U0:
                break
            P, O = O, P
            flipped = not flipped
            continue
        m = pick_move(P, O, moves, policy, bad, rules, table, rng)
        f = flips(P, O, m)
        P, O = O ^ f, P ^ f ^ m
        flipped = not flipped
    if flipped:
        return popcount(O), popcount(P)
    return popcount(P), popcount(O)


@njit(cache=True, **NO_REFCOUNT)
def choose_move(P, O, policy, rules, table, rng):
    """One move of a rollout policy as a square index (64 = pass, -1 = game over)."""
    moves = legal_moves(P, O)
    if moves == U0:
        return 64 if legal_moves(O, P) != U0 else -1
    m = pick_move(P, O, moves, policy, bad_squares_of(policy, rules), rules, table, rng)
    return popcount(m - U1)


def table_for(policy_name: str, rules: int) -> np.ndarray:
    """The int64 table a TABLE rollout uses, signed for ``rules`` (higher = preferred)."""
    from engine_server.game.valuemaps import FINAL_VALUE_MAP, ROXANNE_PRIORITY, for_rules

    if policy_name == "roxanne":
        return for_rules(-ROXANNE_PRIORITY, rules).astype(np.int64)
    if policy_name == "valuemap":
        return for_rules(FINAL_VALUE_MAP, rules).astype(np.int64)
    return np.zeros(64, dtype=np.int64)


@njit(cache=True, **NO_REFCOUNT)
def policy_games(P, O, black, white, rules, games, table, rng):
    """``games`` games from (P, O) with black to move, black playing ``black`` and white
    ``white`` (policy ids), as the MCTS blog post's Table 1 pits its playout policies against each
    other.

    Returns ``(black_wins, white_wins, draws)`` under ``rules``; the calibration of the
    pseudo-random definitions (docs/papers/dk.md) runs thousands of games a second here.
    """
    b_wins = 0
    w_wins = 0
    draws = 0
    bad_b = bad_squares_of(black, rules)
    bad_w = bad_squares_of(white, rules)
    for _ in range(games):
        me = P
        op = O
        black_to_move = True
        while True:
            moves = legal_moves(me, op)
            if moves == U0:
                if legal_moves(op, me) == U0:
                    break
                me, op = op, me
                black_to_move = not black_to_move
                continue
            pol = black if black_to_move else white
            m = pick_move(me, op, moves, pol, bad_b if black_to_move else bad_w, rules, table,
                          rng)
            f = flips(me, op, m)
            me, op = op ^ f, me ^ f ^ m
            black_to_move = not black_to_move
        nb = popcount(me) if black_to_move else popcount(op)
        nw = popcount(op) if black_to_move else popcount(me)
        d = nb - nw if rules != REVERSED else nw - nb
        if d > 0:
            b_wins += 1
        elif d < 0:
            w_wins += 1
        else:
            draws += 1
    return b_wins, w_wins, draws
