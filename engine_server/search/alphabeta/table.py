"""The midgame search's two arrays shared with Python: the control array (node counters, the
stop flags the kernels poll, the root's result, per-ply move lists) and the transposition table of
depth-tagged bounds (:func:`store`, :func:`table_move`, :func:`known_children`).  The search is
described in engine_server/search/alphabeta/__init__.py."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine_server.game.bitboard import U0, U1, U, flips, legal_moves
from engine_server.game.memory import zeros_on_lines

from ..endgame.table import CTL_SIZE as EXACT_CTL_SIZE

INF = 30000

# ctl layout
NODES, LIMIT, ABORTED, STOP, GEN, ROOT_BEST, ROOT_SCORE, ROOT_DONE, SEL, PC_NEST, HALT, \
    SHARED = range(12)
SCRATCH = 16
MAX_PLY = 96
SLOT = 224                # per ply: up to 64 moves, their keys, then the children's evaluation:
FEAT = 130                # the first child's move and flips, then two sets of pattern indices
KILLER = 222              # the last two moves that cut at a depth-1 node of this ply
# then the exact solver's own control array (endgame/table.py's layout), for the nodes that
# reach the end of the game with few empties (pvs.py, ENDGAME_EMPTIES)
EXACT = SCRATCH + MAX_PLY * SLOT
CTL_SIZE = EXACT + EXACT_CTL_SIZE
POLL = 1023

# tt: keys uint64 [size, 2] (P, O); data int64 [size + BUSY]: the entries, two to a bucket
# (:func:`slot`), then the marks of the positions some thread is searching now (ABDADA,
# :func:`busy_mark`)
BUSY = 1 << 12
_OFF = 1 << 15
_LO_SHIFT = 0
_UP_SHIFT = 16
_DEPTH_SHIFT = 32
_MOVE_SHIFT = 40
_GEN_SHIFT = 48
_RULES_SHIFT = 56
_SEL_SHIFT = 58           # the selectivity the bounds were found at (SEL_EXACT: none)
_VALID = 1 << 62
_M16 = (1 << 16) - 1
_M8 = 255
NO_MOVE = 127
_HK1 = U(0x9E3779B97F4A7C15)
_HK2 = U(0xC2B2AE3D27D4EB4F)
_S32 = U(32)


def new_table(bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The table's keys (uint64 [2**bits, 2]) and data words (int64 [2**bits + BUSY], the
    busy marks after the entries), both starting on a cache line, so that each two-entry
    bucket of :func:`slot` lies in one line of each."""
    return (zeros_on_lines((1 << bits, 2), np.uint64),
            zeros_on_lines(((1 << bits) + BUSY,), np.int64))


# An entry's data word, read and written only through the accessors below: the lower and upper
# bound (16 bits each, offset by _OFF), the depth searched, the best move, the generation of the
# search that stored it (8 bits each), the rules (2), the selectivity (3) and a valid bit.
@njit(cache=True, inline="always")
def entry_lower(d):
    return ((d >> _LO_SHIFT) & _M16) - _OFF


@njit(cache=True, inline="always")
def entry_upper(d):
    return ((d >> _UP_SHIFT) & _M16) - _OFF


@njit(cache=True, inline="always")
def entry_depth(d):
    return (d >> _DEPTH_SHIFT) & _M8


@njit(cache=True, inline="always")
def entry_move(d):
    """The best move's square, or NO_MOVE."""
    return (d >> _MOVE_SHIFT) & _M8


@njit(cache=True, inline="always")
def entry_gen(d):
    return (d >> _GEN_SHIFT) & _M8


@njit(cache=True, inline="always")
def entry_rules(d):
    return (d >> _RULES_SHIFT) & 3


@njit(cache=True, inline="always")
def entry_sel(d):
    return (d >> _SEL_SHIFT) & 7


@njit(cache=True, inline="always")
def pack_entry(lo, up, depth, move, gen, rules, sel):
    return ((lo + _OFF) << _LO_SHIFT) | ((up + _OFF) << _UP_SHIFT) | \
        (np.int64(depth) << _DEPTH_SHIFT) | (np.int64(move) << _MOVE_SHIFT) | \
        (np.int64(gen) << _GEN_SHIFT) | (np.int64(rules) << _RULES_SHIFT) | \
        (np.int64(sel) << _SEL_SHIFT) | _VALID


@njit(cache=True, inline="always")
def ply_scratch(ply):
    """Where ply ``ply``'s scratch slot starts in ``ctl``: its moves at +0, their sort keys at
    +64, the reply view and one child's pattern indices at +FEAT, the killer moves at +KILLER."""
    return SCRATCH + ply * SLOT


@njit(cache=True, inline="always")
def slot(keys, P, O):
    """The first of the two entries of (P, O)'s bucket.  A bucket is two neighbouring entries,
    so its keys (32 bytes) and data words (16 bytes) each lie in one cache line: the second
    way costs a comparison, not a memory access."""
    h = (P * _HK1) ^ (O * _HK2)
    h ^= h >> _S32
    return np.int64(h & U(keys.shape[0] - 2))


@njit(cache=True, inline="always")
def _holds(keys, data, i, P, O):
    """Entry ``i`` is (P, O)'s.  The keys are stored xor-ed with the data word, so an entry
    torn by another search thread writing it at the same time never matches."""
    d = data[i]
    w = U(d)
    return (d & _VALID) != 0 and (keys[i, 0] ^ w) == P and (keys[i, 1] ^ w) == O


@njit(cache=True, inline="always")
def probe(keys, data, i, P, O, rules):
    """The data word of (P, O)'s entry in the bucket at ``i`` (from :func:`slot`) under
    ``rules``, or 0 when the bucket holds no such entry."""
    d = data[i]
    if _holds(keys, data, i, P, O):
        return d if entry_rules(d) == rules else np.int64(0)
    d = data[i + 1]
    if _holds(keys, data, i + 1, P, O) and entry_rules(d) == rules:
        return d
    return np.int64(0)


@njit(cache=True, inline="always")
def _keep(d, gen):
    """How much an entry is worth keeping: any of the current search before any older one,
    then the deeper (an empty way is worth nothing)."""
    if d & _VALID == 0:
        return np.int64(-1)
    return entry_depth(d) + (np.int64(256) if entry_gen(d) == gen else np.int64(0))


@njit(cache=True)
def store(keys, data, P, O, rules, alpha, beta, best, depth, move, gen, sel):
    i = slot(keys, P, O)
    same = _holds(keys, data, i, P, O)
    if not same:
        if _holds(keys, data, i + 1, P, O):
            i += 1
            same = True
        elif _keep(data[i + 1], gen) < _keep(data[i], gen):
            # a new position takes the way less worth keeping: the other one, the deeper
            # entry of the current search, stays
            i += 1
    d = data[i]
    lo = -INF
    up = INF
    if best > alpha:
        lo = best
    if best < beta:
        up = best
    if same and entry_depth(d) == depth and entry_rules(d) == rules and entry_sel(d) == sel:
        # same depth: intersect the bounds
        olo = entry_lower(d)
        oup = entry_upper(d)
        if olo > lo and olo <= up:
            lo = olo
        if oup < up and oup >= lo:
            up = oup
    nd = pack_entry(lo, up, depth, move, gen, rules, sel)
    data[i] = nd
    keys[i, 0] = P ^ U(nd)
    keys[i, 1] = O ^ U(nd)


@njit(cache=True, inline="always")
def busy_mark(keys, P, O):
    """(index, tag) of (P, O) among the busy marks that follow the table in ``data``: while a
    thread searches (P, O) with ``ctl[SHARED]`` set, ``data[index] == tag``, and the other
    threads search it last (Weill's ABDADA: the first move of a node is searched by all
    threads, the others by one).  Marks are written without locks: a lost or stale mark costs
    only a move searched twice or late, never a wrong value."""
    h = (P * _HK2) ^ (O * _HK1)
    h ^= h >> _S32
    return keys.shape[0] + np.int64(h & U(BUSY - 1)), np.int64(h >> U(1)) | 1


@njit(cache=True)
def table_move(keys, data, P, O, rules):
    d = probe(keys, data, slot(keys, P, O), P, O, rules)
    if d != 0:
        m = entry_move(d)
        return -1 if m == NO_MOVE else m
    return -1


@njit(cache=True)
def known_children(keys, data, P, O, rules):
    """How many of the position's children the table already holds (what a previous search
    left for this one)."""
    moves = legal_moves(P, O)
    n = 0
    while moves != U0:
        m = moves & (~moves + U1)
        moves ^= m
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
        if probe(keys, data, slot(keys, nP, nO), nP, nO, rules) != 0:
            n += 1
    return n
