"""The exact solver's two arrays shared with Python: the control array (node counters, the node
budget, per-ply move lists) and the transposition table of proven bounds (:func:`tt_probe`,
:func:`tt_store`, :func:`new_table`).  The layers of the solver are described in
engine_server/search/endgame/__init__.py."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine_server.game.bitboard import U0, U1, U
from engine_server.game.memory import zeros_on_lines

INF = 65             # above any score (|score| <= 64)

# ctl (int64 array) layout: counters shared with Python, then move-list scratch space per ply.
NODES = 0
LIMIT = 1
ABORTED = 2
BEST = 3
GENERATION = 4
SHARED = 5           # nonzero: other threads search the same tree (busy marks, ABDADA)
SCRATCH = 16
KEYS = 64            # per ply: up to 64 moves, then their sort keys, their flips, the replies
FLIPS = 2 * KEYS
REPLIES = 3 * KEYS
SLOT = 4 * KEYS
# After the plies, each thread's small tables of the nodes from SHALLOW + 1 to SIMPLE empties
# (simple.py): LOCAL_LEVELS tables of LOCAL_SIZE entries of LOCAL_WORDS words each.
LOCAL = SCRATCH + 65 * SLOT    # plies are indexed by empties (0..63) and 64 for the root
LOCAL_BITS = 10
LOCAL_SIZE = 1 << LOCAL_BITS
LOCAL_WORDS = 3
LOCAL_LEVELS = 6
# Then the pattern indices of a node that evaluates its children one after the other (deep.py):
# two sets of the evaluation's reads and the first child's move.  One is enough: such a node
# finishes its evaluations before any child is searched.
EVAL_SCRATCH = LOCAL + LOCAL_LEVELS * LOCAL_SIZE * LOCAL_WORDS
EVAL_WORDS = 96
CTL_SIZE = EVAL_SCRATCH + EVAL_WORDS

# tt (uint64 array, shape (size + BUSY_ROWS, 4)) columns: the position (each word xor-ed with
# the data word, so that an entry torn by two threads writing it at once never matches), packed
# data, subtree node count.  The last BUSY_ROWS rows hold the busy marks (:func:`busy_mark`).
BUSY_ROWS = 256
TT_P = 0
TT_O = 1
TT_DATA = 2
TT_COST = 3
# data fields (int64 arithmetic after a cast, all values non-negative)
_LO_SHIFT = 0        # lower bound + 64
_UP_SHIFT = 8        # upper bound + 64
_MOVE_SHIFT = 16     # best move square, 64 = none
_RULES_SHIFT = 24
_GEN_SHIFT = 32
_VALID = 1 << 40     # marks a used entry (a zeroed row is empty)

_HASH_K1 = U(0x9E3779B97F4A7C15)
_HASH_K2 = U(0xC2B2AE3D27D4EB4F)
_HASH_SHIFT = U(32)

NO_SQ = 64


# An entry's data word is read and written only through these accessors.
@njit(cache=True, inline="always")
def entry_lower(d):
    return ((d >> _LO_SHIFT) & 255) - 64


@njit(cache=True, inline="always")
def entry_upper(d):
    return ((d >> _UP_SHIFT) & 255) - 64


@njit(cache=True, inline="always")
def entry_move(d):
    """The best move's square, or NO_SQ."""
    return (d >> _MOVE_SHIFT) & 255


@njit(cache=True, inline="always")
def entry_gen(d):
    return (d >> _GEN_SHIFT) & 255


@njit(cache=True, inline="always")
def entry_rules(d):
    return (d >> _RULES_SHIFT) & 1


@njit(cache=True, inline="always")
def pack_entry(lower, upper, move, rules, gen):
    return _VALID | (gen << _GEN_SHIFT) | (rules << _RULES_SHIFT) | (move << _MOVE_SHIFT) \
        | ((upper + 64) << _UP_SHIFT) | ((lower + 64) << _LO_SHIFT)


@njit(cache=True, inline="always")
def pick(ctl, base, i, count):
    """Move the lowest key of the list at ``base`` from ``i`` on to ``i`` (with its square,
    flips and replies): one step of a selection sort, since a cutoff usually comes early and
    most of the list is never sorted."""
    k = i
    for t in range(i + 1, count):
        if ctl[base + KEYS + t] < ctl[base + KEYS + k]:
            k = t
    if k != i:
        for w in range(0, SLOT, KEYS):
            x = ctl[base + w + k]
            ctl[base + w + k] = ctl[base + w + i]
            ctl[base + w + i] = x


@njit(cache=True, inline="always")
def tt_index(tt, P, O):
    h = P * _HASH_K1 + O * _HASH_K2
    # two-entry buckets: index even, partner index + 1
    return np.int64(h >> _HASH_SHIFT) & (tt.shape[0] - BUSY_ROWS - 2)


@njit(cache=True, inline="always")
def tt_probe(tt, i, P, O, rules):
    """(row, data word) of (P, O) under ``rules`` in the bucket at ``i``, or (-1, 0).  Use
    this data word, never a second read of the row: another thread may have replaced the
    entry since it was checked against the position."""
    for j in range(i, i + 2):
        w = tt[j, TT_DATA]
        if tt[j, TT_P] ^ w == P and tt[j, TT_O] ^ w == O:
            d = np.int64(w)
            if d & _VALID and entry_rules(d) == rules:
                return j, d
    return -1, np.int64(0)


@njit(cache=True, inline="always")
def busy_mark(tt, P, O):
    """(row, column, tag) of (P, O)'s busy mark: while a thread searches (P, O) with
    ``ctl[SHARED]`` set, ``tt[row, column] == tag``, and the other threads search it after
    their other moves (Weill's ABDADA).  Written without locks: a lost or stale mark costs a
    move searched twice or late, never a wrong value."""
    h = (P * _HASH_K2) ^ (O * _HASH_K1)
    h ^= h >> _HASH_SHIFT
    i = np.int64(h & U(4 * BUSY_ROWS - 1))
    return tt.shape[0] - BUSY_ROWS + (i >> 2), i & 3, h | U1


@njit(cache=True, inline="always")
def claim(tt, ctl, base, nP, nO, sq, defer, total):
    """ABDADA at a move to (nP, nO), square ``sq``: (row, column, tag, total).  When ``defer``
    (the node has searched a move, this one is not yet a deferred one) and another thread is
    searching the child, the move is appended to the node's list at ``ctl[base + total]`` and
    the tag is 0 (the caller goes on to the next move); otherwise the child is marked busy
    under the tag."""
    row, col, tag = busy_mark(tt, nP, nO)
    if defer and tt[row, col] == tag and total < KEYS:
        ctl[base + total] = sq
        return row, col, U0, total + 1
    tt[row, col] = tag
    return row, col, tag, total


@njit(cache=True, inline="always")
def release(tt, row, col, tag):
    # another thread may have marked the same slot since: only our own mark goes
    if tt[row, col] == tag:
        tt[row, col] = U0


@njit(cache=True)
def tt_store(tt, P, O, rules, lower, upper, move, cost, gen):
    i = tt_index(tt, P, O)
    j, d = tt_probe(tt, i, P, O, rules)
    if j >= 0:
        # both old and new bounds are proven: keep their intersection
        lower = max(lower, entry_lower(d))
        upper = min(upper, entry_upper(d))
        if move == NO_SQ:
            move = entry_move(d)
        cost += np.int64(tt[j, TT_COST])
    else:
        # replace the cheaper entry, preferring one left from an older solve
        j = i
        d0 = np.int64(tt[i, TT_DATA])
        d1 = np.int64(tt[i + 1, TT_DATA])
        old0 = (d0 & _VALID) == 0 or entry_gen(d0) != gen
        old1 = (d1 & _VALID) == 0 or entry_gen(d1) != gen
        if old0 != old1:
            j = i if old0 else i + 1
        elif tt[i + 1, TT_COST] < tt[i, TT_COST]:
            j = i + 1
    w = U(pack_entry(lower, upper, move, rules, gen))
    tt[j, TT_P] = P ^ w
    tt[j, TT_O] = O ^ w
    tt[j, TT_DATA] = w
    tt[j, TT_COST] = U(cost)


DEFAULT_TABLE_BITS = 20


def new_table(bits: int = DEFAULT_TABLE_BITS) -> np.ndarray:
    """A transposition table of ``2**bits`` entries, 32 bytes each (20 bits: 32 MiB), and
    the busy marks of threads sharing it."""
    if not 4 <= bits <= 30:
        raise ValueError(f"table bits must be in 4..30, got {bits}")
    # a bucket (two rows of 32 bytes) on one cache line: one memory access a probe, not two
    return zeros_on_lines(((1 << bits) + BUSY_ROWS, 4), np.uint64)
