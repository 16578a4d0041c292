"""Pattern features of a position and the linear evaluation over them (numba, ``cache=True``).

The evaluation is the one every strong Othello program since Logistello uses: a sum of weights
looked up by the configuration of small groups of squares ("patterns"), one weight table per
game stage, fitted to game results (see ``training/patterns.py``).

Patterns (Logistello's set, also Edax's core): ``edge+2X`` (a row-1 edge with b2 and g2: who
owns the X-squares decides whether a corner falls), the ``3x3`` and ``2x5`` corner blocks
(corner stability and the regions next to it), the straight lines 2, 3 and 4 (access to the
edges, walls), and the diagonals of length 8 to 4 (corner access along the diagonal).  Beside
them, the numbers of legal moves of each side (mobility, the midgame's main positional idea) as
two small tables and a constant per stage.

Symmetry: each pattern is defined once, on the top-left of the board, and read on all eight
symmetric images of the position (the dihedral group of the square).  The images of the
position under any symmetry are the same eight boards in another order, so the evaluation is
exactly invariant (the weights are integers: no rounding-order differences).  Patterns with
their own symmetry (an edge read left-to-right and right-to-left) are counted twice, which only
doubles their learned weights.

Digits: an empty square counts 0, the side to move's disc 1, the opponent's 2; a pattern's
index is the base-3 number of its squares' digits, first square least significant.
"""

from __future__ import annotations

import hashlib
import threading

import numpy as np
from numba import njit

from engine_server.game.bitboard import U, legal_moves, lowest_square, popcount
from engine_server.game.symmetry import flip_vertical, mirror_horizontal, symmetry, transpose

# pattern ids and sizes (number of configurations)
EDGE2X, CORNER33, CORNER25, LINE2, LINE3, LINE4, DIAG8, DIAG7, DIAG6, DIAG5, DIAG4, \
    MOB_OWN, MOB_OPP, BIAS = range(14)
NAMES = ("edge+2X", "corner3x3", "corner2x5", "line2", "line3", "line4", "diag8", "diag7",
         "diag6", "diag5", "diag4", "mobility", "opp-mobility", "bias")
SIZES = np.array([3 ** 10, 3 ** 9, 3 ** 10, 3 ** 8, 3 ** 8, 3 ** 8, 3 ** 8, 3 ** 7, 3 ** 6,
                  3 ** 5, 3 ** 4, 32, 32, 1], dtype=np.int64)
OFFSETS = np.concatenate([[0], np.cumsum(SIZES)[:-1]]).astype(np.int64)
N_WEIGHTS = int(SIZES.sum())
N_PATTERNS = 11                          # read on each of the 8 images
N_FEATURES = 8 * N_PATTERNS + 3          # indices per position (two mobilities and the bias)

N_STAGES = 15                            # the shipped files' stages (4 plies each)
PLIES_PER_STAGE = 4
# A weights file may split the game finer: its stage count says how (60 / stages plies each).
STAGE_COUNTS = (15, 30, 60)
WEIGHT_SCALE = 64                        # weights are stored in 1/64 disc


@njit(cache=True)
def stage_of(empties, n_stages=N_STAGES):
    """Game stage of a position with ``empties`` empty squares among ``n_stages`` equal stages
    of ``60 // n_stages`` plies (the last one takes the final ply too)."""
    s = (60 - empties) // (60 // n_stages)
    if s < 0:
        return 0
    if s >= n_stages:
        return n_stages - 1
    return s


def _ternary_table(bits: int) -> np.ndarray:
    t = np.zeros(1 << bits, dtype=np.int64)
    for b in range(1 << bits):
        t[b] = sum(3 ** k for k in range(bits) if b >> k & 1)
    return t


_T = _ternary_table(8)

_B = U(0xFF)
_GATHER = U(0x0101010101010101)
# diagonals of length L from (8 - L, 0) down-right: squares 9 * j + 8 - L
_M8, _M7, _M6, _M5, _M4 = (U(sum(1 << (9 * j + 8 - L) for j in range(L))) for L in (8, 7, 6, 5, 4))


@njit(cache=True, inline="always")
def _tri(T, p, o):
    return T[p] + 2 * T[o]


@njit(cache=True, inline="always")
def _diag(x, m, shift):
    # the diagonal's squares gathered into the top byte by one multiplication
    return np.int64((((x & m) * _GATHER) >> U(56)) >> shift)


@njit(cache=True, inline="always")
def _image(p, o, T):
    """Weight indices (offsets included) of the 11 patterns read on one image (p, o)."""
    p0 = np.int64(p & _B)
    o0 = np.int64(o & _B)
    p1 = np.int64((p >> U(8)) & _B)
    o1 = np.int64((o >> U(8)) & _B)
    p2 = np.int64((p >> U(16)) & _B)
    o2 = np.int64((o >> U(16)) & _B)
    p3 = np.int64((p >> U(24)) & _B)
    o3 = np.int64((o >> U(24)) & _B)
    xp = np.int64(((p >> U(9)) & U(1)) | ((p >> U(13)) & U(2)))
    xo = np.int64(((o >> U(9)) & U(1)) | ((o >> U(13)) & U(2)))
    return (_tri(T, p0, o0) + 6561 * _tri(T, xp, xo),
            _tri(T, p0 & 7, o0 & 7) + 27 * _tri(T, p1 & 7, o1 & 7)
            + 729 * _tri(T, p2 & 7, o2 & 7) + 59049,
            _tri(T, p0 & 31, o0 & 31) + 243 * _tri(T, p1 & 31, o1 & 31) + 78732,
            _tri(T, p1, o1) + 137781,
            _tri(T, p2, o2) + 144342,
            _tri(T, p3, o3) + 150903,
            _tri(T, _diag(p, _M8, U(0)), _diag(o, _M8, U(0))) + 157464,
            _tri(T, _diag(p, _M7, U(1)), _diag(o, _M7, U(1))) + 164025,
            _tri(T, _diag(p, _M6, U(2)), _diag(o, _M6, U(2))) + 166212,
            _tri(T, _diag(p, _M5, U(3)), _diag(o, _M5, U(3))) + 166941,
            _tri(T, _diag(p, _M4, U(4)), _diag(o, _M4, U(4))) + 167184)


@njit(cache=True)
def feature_indices(P, O, out):
    """The N_FEATURES weight indices of position (P, O) into ``out`` (int64 array)."""
    T = _T
    for k in range(8):
        t = _image(symmetry(P, k), symmetry(O, k), T)
        base = k * N_PATTERNS
        for j in range(N_PATTERNS):
            out[base + j] = t[j]
    out[88] = OFF_MOB_OWN + min(popcount(legal_moves(P, O)), 31)
    out[89] = OFF_MOB_OPP + min(popcount(legal_moves(O, P)), 31)
    out[90] = OFF_BIAS


OFF_MOB_OWN = int(OFFSETS[MOB_OWN])
OFF_MOB_OPP = int(OFFSETS[MOB_OPP])
OFF_BIAS = int(OFFSETS[BIAS])


@njit(cache=True)
def evaluate_raw(P, O, W):
    """Evaluation of (P, O) for the side to move in 1/WEIGHT_SCALE disc (``W``: int16 or
    int32 array [stages, N_WEIGHTS], stages one of STAGE_COUNTS)."""
    w = W[stage_of(64 - popcount(P | O), W.shape[0])]
    T = _T
    s = np.int64(0)
    for k in range(8):
        t = _image(symmetry(P, k), symmetry(O, k), T)
        s += (w[t[0]] + w[t[1]] + w[t[2]] + w[t[3]] + w[t[4]] + w[t[5]] + w[t[6]] + w[t[7]]
              + w[t[8]] + w[t[9]] + w[t[10]])
    s += w[OFF_MOB_OWN + min(popcount(legal_moves(P, O)), 31)]
    s += w[OFF_MOB_OPP + min(popcount(legal_moves(O, P)), 31)]
    s += w[OFF_BIAS]
    return s


@njit(cache=True)
def evaluate_batch(Ps, Os, W, out):
    """Evaluations (1/WEIGHT_SCALE disc) of many positions."""
    for i in range(Ps.shape[0]):
        out[i] = evaluate_raw(Ps[i], Os[i], W)


# --- the same evaluation, reading each self-symmetric pattern once per distinct image -----------
#
# Ten of the eleven patterns are symmetric (an edge read left to right or right to left covers
# the same squares): of the eight images, pairs (or fours, for the long diagonal) read the same
# squares in another order.  ``eval_tables`` adds the weights of those readings into one table
# entry, so :func:`evaluate` reads 46 entries instead of 88 and returns exactly
# ``evaluate_raw``'s value (integer sums).  Images: 0 identity, 1 flip_vertical, 2
# mirror_horizontal, 3 both, 4-7 the transposes of 0-3 (``symmetry``'s numbering).

# Squares of each pattern on image 0, in digit order (first digit least significant).
PATTERN_SQUARES: tuple[tuple[int, ...], ...] = (
    tuple(range(8)) + (9, 14),                                      # edge+2X
    (0, 1, 2, 8, 9, 10, 16, 17, 18),                                # corner3x3
    (0, 1, 2, 3, 4, 8, 9, 10, 11, 12),                              # corner2x5
    tuple(range(8, 16)), tuple(range(16, 24)), tuple(range(24, 32)),  # lines 2-4
) + tuple(tuple(9 * j + 8 - L for j in range(L)) for L in (8, 7, 6, 5, 4))
# The image read for each pattern (one per group of images covering the same squares); the
# kernel below is written for exactly these, and _merge_plan checks them.
READ_IMAGES: tuple[tuple[int, ...], ...] = (
    (0, 1, 4, 6), (0, 1, 2, 3), tuple(range(8)), (0, 1, 4, 6), (0, 1, 4, 6), (0, 1, 4, 6),
    (0, 1), (0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))


def _image_reads() -> np.ndarray:
    """``reads[k, u]``: the square of the position that square ``u`` of image ``k`` shows."""
    reads = np.zeros((8, 64), np.int64)
    for k in range(8):
        for t in range(64):
            u = int(symmetry(U(1 << t), k)).bit_length() - 1
            reads[k, u] = t
    return reads


def _merge_plan() -> list[list[tuple[int, ...]]]:
    """Per pattern, the digit permutations that turn the index read on a chosen image into
    the indices of the other images of its group (the identity included)."""
    reads = _image_reads()
    plan = []
    for j, squares in enumerate(PATTERN_SQUARES):
        seqs = [tuple(int(reads[k, s]) for s in squares) for k in range(8)]
        groups: dict[frozenset, list[int]] = {}
        for k in range(8):
            groups.setdefault(frozenset(seqs[k]), []).append(k)
        chosen = []
        perms: set[tuple[tuple[int, ...], ...]] = set()
        for members in groups.values():
            rep = [k for k in members if k in READ_IMAGES[j]]
            assert len(rep) == 1, (NAMES[j], members, READ_IMAGES[j])
            r = rep[0]
            chosen.append(r)
            perms.add(tuple(tuple(seqs[r].index(sq) for sq in seqs[k]) for k in members))
        assert sorted(chosen) == sorted(READ_IMAGES[j]), NAMES[j]
        assert len(perms) == 1, NAMES[j]  # every group relates its readings the same way
        plan.append(list(perms.pop()))
    return plan


_PLAN = _merge_plan()


_TABLES: dict[bytes, np.ndarray] = {}
_TABLES_LOCK = threading.Lock()


def eval_tables(W: np.ndarray) -> np.ndarray:
    """The weight tables :func:`evaluate` reads, from weights ``W`` [stages, N_WEIGHTS]: each
    pattern's entry holds the sum over the images that read the same squares.  int16 when the
    sums fit (half the cache footprint), else int32.  Built once per distinct weight set in a
    process (0.2 s) and shared: callers must not write to the result."""
    key = hashlib.blake2b(np.ascontiguousarray(W).tobytes() + str(np.shape(W)).encode(),
                          digest_size=16).digest()
    with _TABLES_LOCK:
        E = _TABLES.get(key)
        if E is None:
            # shared, so never to be written (numba types a read-only array apart: the
            # kernels' signatures take writable ones)
            E = _build_tables(W)
            _TABLES[key] = E
    return E


def _build_tables(W: np.ndarray) -> np.ndarray:
    W = np.asarray(W, dtype=np.int64)
    E = W.copy()
    for j, perms in enumerate(_PLAN):
        n = len(PATTERN_SQUARES[j])
        idx = np.arange(3 ** n, dtype=np.int64)
        digits = (idx[:, None] // (3 ** np.arange(n, dtype=np.int64))) % 3
        off = int(OFFSETS[j])
        total = np.zeros((W.shape[0], 3 ** n), np.int64)
        for perm in perms:
            other = (digits[:, list(perm)] * (3 ** np.arange(n, dtype=np.int64))).sum(axis=1)
            total += W[:, off + other]
        E[:, off:off + 3 ** n] = total
    if np.abs(E).max() <= np.iinfo(np.int16).max:
        return np.ascontiguousarray(E, dtype=np.int16)
    return np.ascontiguousarray(E, dtype=np.int32)


@njit(cache=True, inline="always")
def _edge(p, o, T):
    xp = np.int64(((p >> U(9)) & U(1)) | ((p >> U(13)) & U(2)))
    xo = np.int64(((o >> U(9)) & U(1)) | ((o >> U(13)) & U(2)))
    return _tri(T, np.int64(p & _B), np.int64(o & _B)) + 6561 * _tri(T, xp, xo)


@njit(cache=True, inline="always")
def _c33(p, o, T):
    return (_tri(T, np.int64(p & U(7)), np.int64(o & U(7)))
            + 27 * _tri(T, np.int64((p >> U(8)) & U(7)), np.int64((o >> U(8)) & U(7)))
            + 729 * _tri(T, np.int64((p >> U(16)) & U(7)), np.int64((o >> U(16)) & U(7))))


@njit(cache=True, inline="always")
def _c25(p, o, T):
    return (_tri(T, np.int64(p & U(31)), np.int64(o & U(31)))
            + 243 * _tri(T, np.int64((p >> U(8)) & U(31)), np.int64((o >> U(8)) & U(31))))


@njit(cache=True, inline="always")
def _row(p, o, T, r):
    return _tri(T, np.int64((p >> U(8 * r)) & _B), np.int64((o >> U(8 * r)) & _B))


@njit(cache=True, inline="always")
def _diags(p, o, T, w):
    """Diagonals of length 7 to 4 (those read on images 0-3)."""
    return (w[164025 + _tri(T, _diag(p, _M7, U(1)), _diag(o, _M7, U(1)))]
            + w[166212 + _tri(T, _diag(p, _M6, U(2)), _diag(o, _M6, U(2)))]
            + w[166941 + _tri(T, _diag(p, _M5, U(3)), _diag(o, _M5, U(3)))]
            + w[167184 + _tri(T, _diag(p, _M4, U(4)), _diag(o, _M4, U(4)))])


@njit(cache=True, inline="always")
def _edge_lines(p, o, T, w):
    """edge+2X and lines 2-4 (read on images 0, 1, 4, 6)."""
    return (w[_edge(p, o, T)] + w[137781 + _row(p, o, T, 1)] + w[144342 + _row(p, o, T, 2)]
            + w[150903 + _row(p, o, T, 3)])


@njit(cache=True, inline="always")
def _images(x):
    """Images 1-7 of ``x`` (``symmetry``'s numbering) from one transpose and two mirrors:
    flipping the rows is a byte swap, and transpose(flip(x)) = mirror(transpose(x)),
    transpose(mirror(x)) = flip(transpose(x))."""
    x2 = mirror_horizontal(x)
    x4 = transpose(x)
    x5 = mirror_horizontal(x4)
    return (flip_vertical(x), x2, flip_vertical(x2), x4, x5, flip_vertical(x4),
            flip_vertical(x5))


@njit(cache=True)
def evaluate_moves(P, O, E, own_moves):
    """:func:`evaluate_raw`'s value from the tables of :func:`eval_tables`; ``own_moves`` is
    ``legal_moves(P, O)``, which a search has at hand."""
    w = E[stage_of(64 - popcount(P | O), E.shape[0])]
    T = _T
    P1, P2, P3, P4, P5, P6, P7 = _images(P)
    O1, O2, O3, O4, O5, O6, O7 = _images(O)
    s = np.int64(0)
    s += w[59049 + _c33(P, O, T)] + w[59049 + _c33(P1, O1, T)] \
        + w[59049 + _c33(P2, O2, T)] + w[59049 + _c33(P3, O3, T)]
    s += w[78732 + _c25(P, O, T)] + w[78732 + _c25(P1, O1, T)] \
        + w[78732 + _c25(P2, O2, T)] + w[78732 + _c25(P3, O3, T)] \
        + w[78732 + _c25(P4, O4, T)] + w[78732 + _c25(P5, O5, T)] \
        + w[78732 + _c25(P6, O6, T)] + w[78732 + _c25(P7, O7, T)]
    s += _edge_lines(P, O, T, w) + _edge_lines(P1, O1, T, w) \
        + _edge_lines(P4, O4, T, w) + _edge_lines(P6, O6, T, w)
    s += w[157464 + _tri(T, _diag(P, _M8, U(0)), _diag(O, _M8, U(0)))] \
        + w[157464 + _tri(T, _diag(P1, _M8, U(0)), _diag(O1, _M8, U(0)))]
    s += _diags(P, O, T, w) + _diags(P1, O1, T, w) + _diags(P2, O2, T, w) \
        + _diags(P3, O3, T, w)
    s += w[OFF_MOB_OWN + min(popcount(own_moves), 31)]
    s += w[OFF_MOB_OPP + min(popcount(legal_moves(O, P)), 31)]
    s += w[OFF_BIAS]
    return s


# --- a child's evaluation from its parent's indices ---------------------------------------------
#
# At a node whose children are all evaluated (the leaves below a depth-1 node, the move ordering
# of deeper ones) the children differ from each other by a few squares.  Edax and Egaroucid
# update their feature indices from the flipped discs instead of reading the board again; here
# the node reads one child in full (:func:`read_indices`), turns that into its own indices as the
# opponent sees them (:func:`to_reply_view`), and each further child is that plus its move's
# digits (:func:`child_indices`): about 20 additions instead of 14 board symmetries and 132
# table reads.  The sums are :func:`evaluate_moves`'s to the unit (tests compare them).

N_READS = 46                             # entries evaluate_moves reads besides mobility and bias


@njit(cache=True, inline="always")
def _put_edge_lines(p, o, T, out, b):
    out[b] = _edge(p, o, T)
    out[b + 1] = 137781 + _row(p, o, T, 1)
    out[b + 2] = 144342 + _row(p, o, T, 2)
    out[b + 3] = 150903 + _row(p, o, T, 3)


@njit(cache=True, inline="always")
def _put_diags(p, o, T, out, b):
    out[b] = 164025 + _tri(T, _diag(p, _M7, U(1)), _diag(o, _M7, U(1)))
    out[b + 1] = 166212 + _tri(T, _diag(p, _M6, U(2)), _diag(o, _M6, U(2)))
    out[b + 2] = 166941 + _tri(T, _diag(p, _M5, U(3)), _diag(o, _M5, U(3)))
    out[b + 3] = 167184 + _tri(T, _diag(p, _M4, U(4)), _diag(o, _M4, U(4)))


@njit(cache=True)
def read_indices(P, O, out, b):
    """The N_READS entries of the merged tables that :func:`evaluate_moves` sums for (P, O)
    (besides mobility and bias) into ``out[b:b + N_READS]``, in the order of ``READ_SLOTS``."""
    T = _T
    P1, P2, P3, P4, P5, P6, P7 = _images(P)
    O1, O2, O3, O4, O5, O6, O7 = _images(O)
    out[b] = 59049 + _c33(P, O, T)
    out[b + 1] = 59049 + _c33(P1, O1, T)
    out[b + 2] = 59049 + _c33(P2, O2, T)
    out[b + 3] = 59049 + _c33(P3, O3, T)
    out[b + 4] = 78732 + _c25(P, O, T)
    out[b + 5] = 78732 + _c25(P1, O1, T)
    out[b + 6] = 78732 + _c25(P2, O2, T)
    out[b + 7] = 78732 + _c25(P3, O3, T)
    out[b + 8] = 78732 + _c25(P4, O4, T)
    out[b + 9] = 78732 + _c25(P5, O5, T)
    out[b + 10] = 78732 + _c25(P6, O6, T)
    out[b + 11] = 78732 + _c25(P7, O7, T)
    _put_edge_lines(P, O, T, out, b + 12)
    _put_edge_lines(P1, O1, T, out, b + 16)
    _put_edge_lines(P4, O4, T, out, b + 20)
    _put_edge_lines(P6, O6, T, out, b + 24)
    out[b + 28] = 157464 + _tri(T, _diag(P, _M8, U(0)), _diag(O, _M8, U(0)))
    out[b + 29] = 157464 + _tri(T, _diag(P1, _M8, U(0)), _diag(O1, _M8, U(0)))
    _put_diags(P, O, T, out, b + 30)
    _put_diags(P1, O1, T, out, b + 34)
    _put_diags(P2, O2, T, out, b + 38)
    _put_diags(P3, O3, T, out, b + 42)


# (pattern, image) of each slot of read_indices
READ_SLOTS: tuple[tuple[int, int], ...] = (
    tuple((CORNER33, k) for k in (0, 1, 2, 3)) + tuple((CORNER25, k) for k in range(8))
    + tuple((j, k) for k in (0, 1, 4, 6) for j in (EDGE2X, LINE2, LINE3, LINE4))
    + ((DIAG8, 0), (DIAG8, 1))
    + tuple((j, k) for k in (0, 1, 2, 3) for j in (DIAG7, DIAG6, DIAG5, DIAG4)))


def _square_digits() -> tuple[np.ndarray, np.ndarray]:
    """Per square of the position, the slots of read_indices that read it and the value of
    its digit there: ``DIGITS[s, t] = slot | 3 ** digit << 6`` for ``t < DIGIT_COUNT[s]``."""
    reads = _image_reads()
    lists: list[list[int]] = [[] for _ in range(64)]
    for slot, (j, k) in enumerate(READ_SLOTS):
        for d, u in enumerate(PATTERN_SQUARES[j]):
            lists[int(reads[k, u])].append(slot | 3 ** d << 6)
    width = max(len(x) for x in lists)
    digits = np.zeros((64, width), np.int64)
    count = np.zeros(64, np.int64)
    for s, x in enumerate(lists):
        digits[s, :len(x)] = x
        count[s] = len(x)
    return digits, count


DIGITS, DIGIT_COUNT = _square_digits()


@njit(cache=True, inline="always")
def _add_square(buf, b, s, k):
    for t in range(DIGIT_COUNT[s]):
        e = DIGITS[s, t]
        buf[b + (e & 63)] += k * (e >> 6)


@njit(cache=True)
def to_reply_view(buf, b, x, f):
    """Turn the indices at ``buf[b:]`` of the child reached by the move on square ``x``
    flipping discs ``f`` into those of its parent as read by the parent's opponent."""
    _add_square(buf, b, x, -2)
    while f != U(0):
        _add_square(buf, b, lowest_square(f), -1)
        f &= f - U(1)


@njit(cache=True)
def child_indices(buf, src, dst, x, f):
    """The indices of the child reached by the move on square ``x`` flipping ``f`` into
    ``buf[dst:]``, from the parent's reply view at ``buf[src:]`` (:func:`to_reply_view`)."""
    for j in range(N_READS):
        buf[dst + j] = buf[src + j]
    _add_square(buf, dst, x, 2)
    while f != U(0):
        _add_square(buf, dst, lowest_square(f), 1)
        f &= f - U(1)


@njit(cache=True, inline="always")
def evaluate_indices(buf, b, w, own_moves, opp_moves):
    """:func:`evaluate_moves`'s value from the indices at ``buf[b:]``; ``w``: the position's
    stage row of the tables, ``own_moves``/``opp_moves``: both sides' legal moves."""
    s = np.int64(0)
    for j in range(N_READS):
        s += w[buf[b + j]]
    s += w[OFF_MOB_OWN + min(popcount(own_moves), 31)]
    s += w[OFF_MOB_OPP + min(popcount(opp_moves), 31)]
    return s + w[OFF_BIAS]


@njit(cache=True, inline="always")
def child_eval(buf, fb, have, w, m, f, nP, nO, own_moves):
    """The evaluation of the child (nP, nO) reached by move ``m`` flipping ``f`` (1/64 disc),
    for a node that evaluates its children one after the other; ``w``: the children's stage
    row, ``own_moves``: the child's legal moves.  ``buf[fb - 2:fb + 2 * N_READS]`` is the
    node's scratch.  ``have`` 0: the node's first child, read in full into ``buf[fb:]``, its
    square and flips kept in ``buf[fb - 2:fb]``.  ``have`` 1: the second child, which first
    turns those indices into the node's reply view.  ``have`` 2: the view is there; a child is
    a few additions away from it.  Returns the value and the new ``have``.  A node that stops
    at its first child pays a full read and the stores."""
    if have == 0:
        read_indices(nP, nO, buf, fb)
        buf[fb - 2] = lowest_square(m)
        buf[fb - 1] = np.int64(f)
        return evaluate_indices(buf, fb, w, own_moves, legal_moves(nO, nP)), 1
    if have == 1:
        to_reply_view(buf, fb, buf[fb - 2], U(buf[fb - 1]))
    child_indices(buf, fb, fb + N_READS, lowest_square(m), f)
    return evaluate_indices(buf, fb + N_READS, w, own_moves, legal_moves(nO, nP)), 2


@njit(cache=True)
def evaluate(P, O, E):
    """:func:`evaluate_raw`'s value from the tables of :func:`eval_tables`."""
    return evaluate_moves(P, O, E, legal_moves(P, O))


@njit(cache=True)
def evaluate_fast_batch(Ps, Os, E, out):
    for i in range(Ps.shape[0]):
        out[i] = evaluate(Ps[i], Os[i], E)


def _check_layout() -> None:
    # the literal offsets in _image must match SIZES
    expect = [0, 59049, 78732, 137781, 144342, 150903, 157464, 164025, 166212, 166941, 167184]
    assert list(OFFSETS[:11]) == expect, OFFSETS


_check_layout()

__all__ = ["NAMES", "SIZES", "OFFSETS", "N_WEIGHTS", "N_FEATURES", "N_STAGES", "STAGE_COUNTS",
           "WEIGHT_SCALE",
           "stage_of", "symmetry", "feature_indices", "evaluate_raw", "evaluate_batch",
           "eval_tables", "evaluate", "evaluate_moves", "evaluate_fast_batch",
           "flip_vertical", "mirror_horizontal", "transpose", "N_READS", "READ_SLOTS",
           "read_indices", "to_reply_view", "child_indices", "evaluate_indices"]
