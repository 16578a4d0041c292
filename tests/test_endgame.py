"""The exact endgame solver: FFO answers, both rule variants, budgets and stops, the numba cache."""

from __future__ import annotations

import textwrap
import threading
import time

import numpy as np
import pytest
from numba import njit, types

from engine_server.game import PASS, Position, parse_move
from engine_server.game import bitboard as bb
from engine_server.search import endgame as E
from engine_server.search.endgame import deep as ED
from engine_server.search.endgame import last as EL
from engine_server.search.endgame import shallow as ES
from engine_server.search.endgame import simple as ESI
from engine_server.search.endgame import solver as ESV
from engine_server.search.endgame import table as ET

from .conftest import load_ffo
from .loadsafe import SLACK
from .second_process import run_probe
from .solver_ref import move_scores as ref_move_scores
from .solver_ref import solve as ref_solve

# Black to move; h6 is best under standard rules (+4), a3 under reversed rules (+16).
RULES_SPLIT = Position.from_string(
    "X-XOOOOOOXXXOOOX-XXOXOOXXXXXOOOXXXOOOOOXXOXOOOO-XXOOOOOOXXXO-O--", "X")
# White has no move, black has: white must pass.
MUST_PASS = Position.from_string("XO------" + "-" * 48 + "------OX", "O")


@pytest.fixture(scope="module")
def solver() -> E.Solver:
    return E.Solver(table_bits=18)


def _random_positions(seed: int, empties: int, count: int) -> list[Position]:
    """Positions reached by seeded random play, ``empties`` squares left, game not over."""
    rng = np.random.default_rng(seed)
    out: list[Position] = []
    while len(out) < count:
        pos = Position.start()
        while pos.empties > empties and pos.legal_moves():
            moves = pos.legal_moves()
            pos = pos.play(int(moves[rng.integers(len(moves))]))
        if pos.empties == empties and pos.legal_moves():
            out.append(pos)
    return out


_SIG_REF = types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64)


@njit(_SIG_REF)
def _ref_alphabeta(P, O, alpha, beta, rules):
    # Plain fail-hard alpha-beta over the rules kernels: no table, no ordering, no shortcuts.
    moves = bb.legal_moves(P, O)
    if moves == bb.U0:
        if bb.legal_moves(O, P) == bb.U0:
            return bb.final_score(P, O, rules)
        return -_ref_alphabeta(O, P, -beta, -alpha, rules)
    while moves != bb.U0:
        m = moves & (~moves + bb.U1)
        moves ^= m
        f = bb.flips(P, O, m)
        v = -_ref_alphabeta(O ^ f, P ^ f ^ m, -beta, -alpha, rules)
        if v >= beta:
            return beta
        if v > alpha:
            alpha = v
    return alpha


def _ref_value(pos: Position) -> int:
    P, O = pos.bitboards()
    lo, hi = np.int64(-65), np.int64(65)
    return int(_ref_alphabeta(P, O, lo, hi, np.int64(int(pos.rules))))


# --- FFO #1-#19 -------------------------------------------------------------------------------


def test_ffo_1_to_19_exact(ffo_easy, solver):
    for row in ffo_easy:
        pos = Position.from_string(row["board"], row["side"])
        r = solver.solve(pos)
        assert r.exact and r.mode == "exact"
        assert r.score == row["score"], row["line"]
        assert r.best_move in {parse_move(m) for m in row["best"]}, row["line"]
        assert r.nodes > 0


def test_ffo_1_to_19_win_loss_draw_agrees_with_the_sign(ffo_easy):
    s = E.Solver(table_bits=16)
    for row in ffo_easy:
        pos = Position.from_string(row["board"], row["side"])
        r = s.solve(pos, mode="wld")
        assert r.exact and r.mode == "wld"
        assert r.score == (row["score"] > 0) - (row["score"] < 0), row["line"]
        # the move proves the outcome: after it the opponent cannot do better
        after = s.solve(pos.play(r.best_move), mode="wld")
        assert -after.score == r.score


def test_a_table_shared_by_many_solves_stays_exact(ffo_easy, solver):
    # The table keeps bounds from earlier solves (and both rule variants side by side).
    rows = ffo_easy[:6]
    first = [solver.solve(Position.from_string(r["board"], r["side"])).score for r in rows]
    rev = [solver.solve(Position.from_string(r["board"], r["side"], "reversed")).score
           for r in rows]
    again = [solver.solve(Position.from_string(r["board"], r["side"])).score for r in rows]
    assert first == again == [r["score"] for r in rows]
    fresh = E.Solver(table_bits=16)
    assert rev == [fresh.solve(Position.from_string(r["board"], r["side"], "reversed")).score
                   for r in rows]


# --- both rule variants against references ------------------------------------------------------


@pytest.mark.parametrize("rules", ["standard", "reversed"])
def test_small_endgames_match_the_python_negamax(rules, solver):
    for empties in (1, 2, 3, 4, 5, 6, 7):
        for pos in _random_positions(100 + empties, empties, 3):
            pos = pos.with_rules(rules)
            want = ref_move_scores(pos)
            r = solver.solve(pos)
            assert r.exact and r.score == max(want.values()), (pos.to_string(), rules)
            assert want[r.best_move] == r.score
            assert E.Solver(table_bits=8).move_scores(pos) == want


@pytest.mark.parametrize("rules", ["standard", "reversed"])
@pytest.mark.slow  # deep solves against plain alpha-beta
def test_deeper_endgames_match_plain_alpha_beta(rules):
    # 8..14 empties reach the table, the sorted layer, the stability and transposition cutoffs.
    s = E.Solver(table_bits=14)  # a small table: replacements happen
    for empties in (8, 10, 12, 14):
        for pos in _random_positions(200 + empties, empties, 4):
            pos = pos.with_rules(rules)
            want = _ref_value(pos)
            r = s.solve(pos)
            assert r.exact and r.score == want, (pos.to_string(), rules)
            assert -_ref_value(pos.play(r.best_move)) == want
            w = s.solve(pos, mode="wld")
            assert w.score == (want > 0) - (want < 0)


def _local_entries(ctl: np.ndarray) -> list[tuple[Position, int, int]]:
    # (position, lower, upper) of every used entry of the small tables (endgame_simple.py)
    from engine_server.search.endgame.table import LOCAL_WORDS

    out = []
    words = ctl[ET.LOCAL:ET.EVAL_SCRATCH].reshape(-1, LOCAL_WORDS)
    for p, o, d in words[words[:, 2] != 0]:
        rules = (int(d) >> 16) - 1
        pos = Position(int(p) & (2**64 - 1), int(o) & (2**64 - 1),
                       rules=("standard", "reversed")[rules])
        out.append((pos, (int(d) & 255) - 64, ((int(d) >> 8) & 255) - 64))
    return out


@pytest.mark.slow  # many solves
def test_small_tables_hold_true_bounds_of_both_rule_variants():
    # Null-window nodes of SHALLOW + 1 to SIMPLE empties keep their bounds in the thread's small
    # tables (not in the big one); a wrong bound there would change some later solve's answer.
    s = E.Solver(table_bits=12)
    for rules in ("standard", "reversed"):
        for pos in _random_positions(300, 14, 3):
            assert s.solve(pos.with_rules(rules)).score == _ref_value(pos.with_rules(rules))
    entries = _local_entries(s.ctl)
    assert len(entries) > 500
    kinds = {pos.rules for pos, _, _ in entries}
    assert len(kinds) == 2
    for pos, lo, hi in entries[::7]:
        assert pos.empties <= ESI.SIMPLE and lo <= _ref_value(pos) <= hi, (pos.to_string(), lo, hi)
    s.clear()
    assert _local_entries(s.ctl) == []


def test_reversed_rules_flip_the_best_move(solver):
    std = solver.solve(RULES_SPLIT)
    rev = solver.solve(RULES_SPLIT.with_rules("reversed"))
    assert (std.score, std.best_move) == (4, parse_move("h6"))
    assert (rev.score, rev.best_move) == (16, parse_move("a3"))
    assert rev.score == ref_solve(RULES_SPLIT.with_rules("reversed"))


def test_finished_games_and_passes(solver):
    # One black disc, nothing else: over at once; the empties go to the winner.
    lone = Position(1, 0)
    for rules, want in (("standard", 64), ("reversed", -64)):
        r = solver.solve(lone.with_rules(rules))
        assert (r.score, r.best_move, r.exact) == (want, None, True)
    for rules in ("standard", "reversed"):
        pos = MUST_PASS.with_rules(rules)
        r = solver.solve(pos)
        assert r.best_move == PASS and r.score == -ref_solve(pos.play(PASS))


def test_stable_discs_never_flip():
    # The stability cutoff is only sound if no disc it calls stable is ever flipped.
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(150):
        pos = Position.start()
        snapshots = []
        while pos.legal_moves():
            P, O = pos.bitboards()
            occ = P | O
            snapshots.append((pos.side, int(ES._stable(P, occ)), int(ES._stable(O, occ))))
            moves = pos.legal_moves()
            pos = pos.play(int(moves[rng.integers(len(moves))]))
        for side, mine, theirs in snapshots:
            own = pos.player if pos.side == side else pos.opponent
            other = pos.opponent if pos.side == side else pos.player
            assert mine & ~own == 0 and theirs & ~other == 0
            checked += bin(mine).count("1") + bin(theirs).count("1")
    assert checked > 1000  # the test saw real stable discs


def _boards_of_four_empties(seed: int, count: int) -> list[tuple[int, int]]:
    # (P, O) of seeded random games at 4 empties, each from both sides: some sides to move have
    # no move, some games are over
    rng = np.random.default_rng(seed)
    out: list[tuple[int, int]] = []
    while len(out) < 2 * count:
        pos = Position.start()
        while pos.empties > 4 and pos.legal_moves():
            moves = pos.legal_moves()
            pos = pos.play(int(moves[rng.integers(len(moves))]))
        if pos.empties == 4:
            P, O = pos.bitboards()
            out += [(P, O), (O, P)]
    return out


@pytest.mark.parametrize("rules", [0, 1])
def test_nodes_of_four_empties_search_as_the_general_shallow_node(rules):
    # _solve4 tries the four empties in turn instead of generating the moves: the same order,
    # values and node counts as shallow over the generated moves, in every window
    ctl_a = np.zeros(ET.CTL_SIZE, dtype=np.int64)
    ctl_b = np.zeros(ET.CTL_SIZE, dtype=np.int64)
    passes = 0
    for P, O in _boards_of_four_empties(41 + rules, 150):
        P, O = np.uint64(P), np.uint64(O)
        passes += bb.legal_moves(P, O) == bb.U0
        for alpha, beta in ((-65, 65), (-1, 1), (3, 4), (-20, -10), (10, 30)):
            a, b = np.int64(alpha), np.int64(beta)
            v = ES._solve4(P, O, a, b, np.int64(rules), ctl_a)
            w = ES.shallow(P, O, a, b, np.int64(4), np.int64(rules), ctl_b, ES.UNKNOWN_MOVES)
            assert v == w and ctl_a[ET.NODES] == ctl_b[ET.NODES], (int(P), int(O), alpha, beta)
    assert passes > 3  # the pass branch ran


def test_shallow_nodes_given_their_moves_search_as_when_they_generate_them():
    ctl_a = np.zeros(ET.CTL_SIZE, dtype=np.int64)
    ctl_b = np.zeros(ET.CTL_SIZE, dtype=np.int64)
    for rules in (0, 1):
        for pos in _random_positions(55 + rules, ES.SHALLOW, 40):
            P, O = pos.bitboards()
            P, O = np.uint64(P), np.uint64(O)
            moves = bb.legal_moves(P, O)
            for alpha in (-65, -3, 0, 8):
                a, b, r, n = np.int64(alpha), np.int64(alpha + 1), np.int64(rules), np.int64(5)
                v = ES.shallow(P, O, a, b, n, r, ctl_a, moves)
                w = ES.shallow(P, O, a, b, n, r, ctl_b, ES.UNKNOWN_MOVES)
                assert v == w and ctl_a[ET.NODES] == ctl_b[ET.NODES]


# --- budgets, deadlines, stops ------------------------------------------------------------------


def _ffo40() -> Position:
    row = load_ffo("ffo40-59.txt")[0]
    return Position.from_string(row["board"], row["side"])


def _ffo41() -> Position:
    row = load_ffo("ffo40-59.txt")[1]
    return Position.from_string(row["board"], row["side"])


def test_node_budget_returns_an_inexact_result():
    s = E.Solver(table_bits=16)
    r = s.solve(_ffo40(), max_nodes=5000)
    assert not r.exact and r.score is None
    assert 5000 <= r.nodes < 5000 + 20_000  # shallow subtrees finish before the budget is seen
    assert r.best_move is None or r.best_move in _ffo40().legal_moves()


def test_stop_event_and_deadline_return_promptly():
    pos = _ffo41()  # several seconds of work
    s = E.Solver(table_bits=18)
    stop = threading.Event()
    stop.set()
    r = s.solve(pos, stop=stop)
    assert not r.exact and r.nodes == 0 and r.best_move is None

    # Stopped and out of time before the work is done (several seconds on a quiet machine, so
    # longer on a busy one): the bounds say that the stop and the deadline ended the solves.
    # How soon after them is othello-bench endgame --latency.
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    t0 = time.monotonic()
    r = s.solve(pos, stop=stop)
    waited = time.monotonic() - t0
    assert not r.exact and r.score is None and r.nodes > 0
    assert 0.19 <= waited < 0.2 + SLACK, waited  # (the timer started just before t0)

    t0 = time.monotonic()
    r = s.solve(pos, mode="wld", deadline=t0 + 0.15)
    waited = time.monotonic() - t0
    assert not r.exact and 0.15 <= waited < 0.15 + SLACK, waited


def test_chunked_search_gives_the_same_answers(ffo_easy, monkeypatch):
    # Tiny chunks: every solve is aborted and resumed many times through the table.
    monkeypatch.setattr(ESV, "FIRST_CHUNK", 500)
    monkeypatch.setattr(ESV, "CHUNK_SECONDS", 1e-5)
    calls = []
    kernel = E.solve_root_eval

    def counted(*args):
        calls.append(1)
        return kernel(*args)

    monkeypatch.setattr(ESV, "solve_root_eval", counted)
    s = E.Solver(table_bits=18)
    never = threading.Event()
    for row in ffo_easy[:8]:
        pos = Position.from_string(row["board"], row["side"])
        r = s.solve(pos, stop=never)
        assert r.exact and r.score == row["score"], row["line"]
        assert r.best_move in {parse_move(m) for m in row["best"]}
    assert len(calls) > 3 * 8
    # a node budget spread over chunks still stops at about the budget
    r = s.solve(_ffo40(), stop=never, max_nodes=50_000)
    assert not r.exact and 50_000 <= r.nodes < 120_000


def test_solve_root_is_callable_from_numba(ffo_easy):
    @njit
    def from_kernel(P, O, rules, tt, ctl):
        return E.solve_root(P, O, np.int64(-1), np.int64(1), rules, tt, ctl)

    row = ffo_easy[0]
    pos = Position.from_string(row["board"], row["side"])
    P, O = pos.bitboards()
    tt, ctl = E.new_table(12), E.new_control()
    v, move = from_kernel(P, O, np.int64(0), tt, ctl)
    assert v >= 1 and ctl[E.ABORTED] == 0 and ctl[E.NODES] > 0
    tt, ctl = E.new_table(12), E.new_control()
    ctl[E.LIMIT] = 100
    from_kernel(P, O, np.int64(0), tt, ctl)
    assert ctl[E.ABORTED] == 1


def _full_lines_by_walking(occ: int) -> tuple[int, ...]:
    # every line of each direction walked square by square: full when no square is empty
    out = []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        full = 0
        for x in range(64):
            r, c = divmod(x, 8)
            while 0 <= r - dr < 8 and 0 <= c - dc < 8:
                r, c = r - dr, c - dc
            line = []
            while 0 <= r < 8 and 0 <= c < 8:
                line.append(8 * r + c)
                r, c = r + dr, c + dc
            if all(occ >> y & 1 for y in line):
                full |= 1 << x
        out.append(full)
    return tuple(out)


def test_full_lines_are_the_lines_without_an_empty_square():
    rng = np.random.default_rng(5)
    bit = np.uint64(1) << np.arange(64, dtype=np.uint64)
    cases = [0, (1 << 64) - 1, (1 << 64) - 1 - (1 << 27), 0xFF00FF00FF00FF00, 0x8040201008040201]
    for density in (0.7, 0.9, 0.97, 0.99):
        for _ in range(60):
            cases.append(int(bit[rng.random(64) < density].sum(dtype=np.uint64)))
    for occ in cases:
        got = tuple(int(x) for x in ES._full_lines(np.uint64(occ)))
        assert got == _full_lines_by_walking(occ), hex(occ)


def test_table_buckets_start_on_cache_lines():
    # a probe reads a bucket of two 32-byte rows: aligned, that is one line of memory, not two
    for bits in (4, 12, 16):
        tt = E.new_table(bits)
        assert tt.ctypes.data % 64 == 0
        assert tt.shape == ((1 << bits) + ET.BUSY_ROWS, 4)
        assert tt.dtype == np.uint64 and tt.flags.c_contiguous and not tt.any()


def test_prefetch_reads_rows_of_one_and_two_dimensional_tables_without_changing_them():
    from engine_server.game.memory import prefetch

    @njit
    def touch(a2, a1):
        s = np.int64(0)
        for i in range(a2.shape[0]):
            prefetch(a2, i)
            prefetch(a1, np.int64(a1.shape[0] - 1 - i))
            s += np.int64(a2[i, 1]) + a1[i]
        return s

    a2 = np.arange(40, dtype=np.uint64).reshape(10, 4)
    a1 = np.arange(10, dtype=np.int64)
    before = (a2.copy(), a1.copy())
    assert touch(a2, a1) == int(a2[:, 1].sum()) + 45
    assert (a2 == before[0]).all() and (a1 == before[1]).all()


def test_bad_arguments():
    with pytest.raises(ValueError):
        E.solve(Position.start(), mode="score")
    with pytest.raises(ValueError):
        E.new_table(2)


# --- numba cache ----------------------------------------------------------------------------------

PROBE = textwrap.dedent(
    """
    import json
    from numba.core.registry import CPUDispatcher
    from engine_server.game import Position
    from engine_server.search import endgame as E
    board = "O--OOOOX-OOOOOOXOOXXOOOXOOXOOOXXOOOOOOXX---OOOOX----O--X--------"
    small = "--XXXXX--OOOXX-O-OOOXXOX-OXOXOXXOXXXOXXX--XOXOXX-XXXOOO--OOOOO--"
    s = E.Solver(table_bits=16)
    out = {}
    for rules in ("standard", "reversed"):
        p = Position.from_string(small, "X", rules)
        r = s.solve(p)
        w = s.solve(p, mode="wld")
        out[rules] = [r.score, r.best_move, r.nodes, w.score, w.best_move]
    r = s.solve(Position.from_string(board, "X"), max_nodes=20000)
    out["budget"] = [r.exact, r.nodes]
    from engine_server.search.endgame import deep, last, shallow, simple, solver, table
    stats = {}
    mods = (solver, deep, simple, shallow, last, table)
    kernels = {n: o for m in mods for n, o in vars(m).items()}
    for name, obj in kernels.items():
        if isinstance(obj, CPUDispatcher):
            hits = sum(obj.stats.cache_hits.values())
            misses = sum(obj.stats.cache_misses.values())
            if hits or misses:
                stats[name] = [hits, misses]
    print(json.dumps({"out": out, "stats": stats}))
    """
)


def _probe() -> dict:
    return run_probe(PROBE)


@pytest.mark.slow  # kernels in a second process (a compile when the cache is cold)
def test_second_process_loads_cached_solver_kernels():
    first = _probe()  # writes the cache if it is cold
    second = _probe()
    assert second["out"] == first["out"]
    assert second["out"]["budget"][0] is False
    for name in ("solve_root_eval", "_deep", "simple", "shallow"):
        assert second["stats"][name][0] >= 1, (name, second["stats"])
    for name, (hits, misses) in second["stats"].items():
        assert misses == 0, (name, hits, misses)


def test_evaluation_ordering_finds_the_same_values_with_fewer_nodes(ffo_easy):
    from engine_server.eval.features import eval_tables
    from engine_server.eval.weights import default_weights

    nodes = {"eval": 0, "plain": 0}
    for row in ffo_easy[8:19]:
        pos = Position.from_string(row["board"], row["side"])
        P, O = pos.bitboards()
        for kind, W in (("eval", eval_tables(default_weights(0))),
                        ("plain", np.zeros((1, 1), np.int16))):
            tt, ctl = E.new_table(18), E.new_control()
            v, _ = E.solve_root_eval(P, O, np.int64(-65), np.int64(65), np.int64(0), tt, ctl, W)
            assert v == row["score"], (row["line"], kind)
            nodes[kind] += int(ctl[E.NODES])
    assert nodes["eval"] < 0.9 * nodes["plain"], nodes


def _negamax_over_evaluation(P, O, depth, E_, rules):
    """Plain negamax over the evaluation (1/64 disc), written without the solver's kernels."""
    moves = int(bb.legal_moves(P, O))
    if depth == 0:
        from engine_server.eval.features import evaluate_moves
        return int(evaluate_moves(P, O, E_, np.uint64(moves)))
    if moves == 0:
        if int(bb.legal_moves(O, P)) == 0:
            return 64 * int(bb.disc_score(int(P).bit_count(), int(O).bit_count(), rules))
        return -_negamax_over_evaluation(O, P, depth, E_, rules)
    best = None
    for sq in range(64):
        if moves >> sq & 1:
            m = np.uint64(1 << sq)
            f = np.uint64(bb.flips(P, O, m))
            v = -_negamax_over_evaluation(np.uint64(O ^ f), np.uint64(P ^ f ^ m), depth - 1, E_,
                                          rules)
            best = v if best is None else max(best, v)
    return best


@pytest.mark.parametrize("rules", [bb.STANDARD, bb.REVERSED])
def test_ordering_searches_give_the_negamax_of_the_evaluation(rules):
    """The shallow searches that order the big nodes' moves evaluate a depth-1 node's children
    from one another's pattern indices: with a full window their values must be the plain
    negamax's, also on random weights and with passes."""
    from engine_server.eval.features import N_STAGES, N_WEIGHTS, eval_tables
    from engine_server.eval.weights import default_weights

    from .test_eval import random_positions

    rng = np.random.default_rng(5 + rules)
    ctl = E.new_control()
    big = np.int64(1 << 20)
    positions = random_positions(120, seed=17 + rules)
    for W in (default_weights(rules),
              rng.integers(-300, 300, size=(N_STAGES, N_WEIGHTS)).astype(np.int32)):
        E_ = eval_tables(W)
        for i, (P, O) in enumerate(positions):
            depth = 1 + i % 3
            got = ED._probe(P, O, np.int64(depth), -big, big, E_, np.int64(rules), ctl)
            assert got == _negamax_over_evaluation(P, O, depth, E_, rules), (hex(P), hex(O))


def test_sort_keys_of_nodes_ordered_by_the_evaluation_read_each_child_in_full():
    """From EVAL_ORDER_MIN empties a node's keys add each child's evaluation, taken from one
    another's pattern indices: the keys must be those of full reads."""
    from engine_server.eval.features import eval_tables, evaluate_moves
    from engine_server.eval.weights import default_weights

    from .test_eval import random_positions

    E_ = eval_tables(default_weights(0))
    ctl = E.new_control()
    tt = E.new_table(10)
    base = ET.SCRATCH + 20 * ET.SLOT
    checked = 0
    for P, O in random_positions(4000, seed=23):
        n = 64 - int(P | O).bit_count()
        moves = np.uint64(bb.legal_moves(P, O))
        if not ED.EVAL_ORDER_MIN <= n < ED.ORDER_SEARCH_MIN or moves == 0:
            continue
        i0 = np.int64(0)
        count = ED._sort_keys(P, O, moves, np.int64(n), i0, np.int64(base), i0, tt, ctl, E_)
        odd = np.uint64(EL.odd_quadrants(np.uint64(~(P | O))))
        for i in range(count):
            m = np.uint64(1 << int(ctl[base + i]))
            f = np.uint64(bb.flips(P, O, m))
            nP, nO = np.uint64(O ^ f), np.uint64(P ^ f ^ m)
            replies = np.uint64(bb.legal_moves(nP, nO))
            want = ESI.child_key(nP, nO, m, odd, replies) \
                + ED.EVAL_ORDER_WEIGHT * evaluate_moves(nP, nO, E_, replies)
            assert ctl[base + ET.KEYS + i] == want, (hex(P), hex(O), i)
            checked += 1
    assert checked > 300


@pytest.mark.slow  # many solves
def test_positions_ordered_by_shallow_searches_are_solved_exactly():
    # FFO #40 (20 empties) and #41 (22): nodes from ORDER_SEARCH_MIN empties up sort their
    # moves by shallow searches over the evaluation, and the table's move goes first
    assert ED.ORDER_SEARCH_MIN < 20
    s = E.Solver()
    for row in load_ffo("ffo40-59.txt")[:2]:
        pos = Position.from_string(row["board"], row["side"])
        r = s.solve(pos)
        assert r.exact and r.score == row["score"], row["line"]
        assert r.best_move in {parse_move(m) for m in row["best"]}


# --- aspiration: windows of width 2 around a guess ---------------------------------------------


def test_exact_solves_from_any_guess_reach_the_full_window_score(ffo_easy):
    s = E.Solver(table_bits=18, aspiration=False)
    for row in ffo_easy[:4]:
        pos = Position.from_string(row["board"], row["side"])
        best = {parse_move(m) for m in row["best"]}
        plain = s.solve(pos)
        assert plain.guess is None and plain.score == row["score"]
        for g in (-64, -7, row["score"], 31, 64):
            r = s.solve(pos, guess=g)
            assert r.exact and r.score == row["score"], (row["line"], g)
            assert r.best_move in best, (row["line"], g)
            assert r.guess == max(-64, min(64, round(g / 2) * 2))


def test_a_right_guess_searches_fewer_nodes_than_the_full_window(ffo_easy):
    s = E.Solver(table_bits=18, aspiration=False)
    full = guessed = 0
    for row in ffo_easy[10:19]:
        pos = Position.from_string(row["board"], row["side"])
        s.clear()
        full += s.solve(pos).nodes
        s.clear()
        guessed += s.solve(pos, guess=row["score"]).nodes
    assert guessed < 0.9 * full, (guessed, full)


@pytest.mark.slow  # deep solves
def test_solves_from_aspiration_min_empties_estimate_their_score_first():
    s = E.Solver(table_bits=18)
    plain = E.Solver(table_bits=18, aspiration=False)
    for rules in (0, 1):
        for pos in _random_positions(31 + rules, E.ASPIRATION_MIN, 3):
            pos = Position(pos.black, pos.white, pos.side, rules)
            r = s.solve(pos)
            assert r.exact and r.guess is not None and r.guess_nodes > 0
            assert r.guess % 2 == 0 and -64 <= r.guess <= 64
            assert r.score == plain.solve(pos).score
            assert s.estimate(pos) == (r.guess, r.guess_nodes)  # the same guess again
    small = _random_positions(5, E.ASPIRATION_MIN - 1, 1)[0]
    assert s.solve(small).guess is None
    assert s.solve(small, mode="wld").guess is None


def test_the_root_solver_centres_its_exact_windows_on_the_estimate(monkeypatch):
    from engine_server.search.endgame.rootsolve import RootSolver

    rs = RootSolver(table_bits=18)
    asked = []
    estimate = rs.solver.estimate

    def spy(pos, deadline=None, stop=None):
        got = estimate(pos, deadline, stop)
        asked.append(got)
        return got

    monkeypatch.setattr(rs.solver, "estimate", spy)
    plain = E.Solver(table_bits=18, aspiration=False)
    for pos in _random_positions(41, E.ASPIRATION_MIN, 2):
        proof = rs.run(pos)
        assert proof.exact and proof.lower == plain.solve(pos).score
        assert proof.move is not None and proof.move in pos.legal_moves()
    assert len(asked) == 2 and all(a is not None for a in asked)
    # a caller's guess wins over the estimate
    rs.run(_random_positions(42, E.ASPIRATION_MIN, 1)[0], guess=10)
    assert len(asked) == 2
