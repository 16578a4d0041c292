"""The alpha-beta search: equal to plain minimax, exact at the end, anytime under deadlines."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from engine_server.agents import make_agent
from engine_server.eval.weights import default_weights
from engine_server.game import PASS, REVERSED, STANDARD, Game, Position
from engine_server.search.alphabeta import MPC_SHAPE, SCALE, AlphaBeta, static_eval
from engine_server.search.endgame import solve, solve_move_scores
from engine_server.search.limits import Limits

from .loadsafe import SLACK
from .test_eval import random_positions


def minimax(pos: Position, depth: int, W) -> int:
    """Plain negamax without pruning or a table: the evaluation at depth 0, exact finished
    games, and a pass that does not use up depth (as the search does)."""
    P, O = pos.bitboards()
    rules = np.int64(int(pos.rules))
    if pos.is_game_over():
        return int(static_eval(P, O, W, rules))
    legal = pos.legal_moves()
    if legal == [PASS]:
        return -minimax(pos.play(PASS), depth, W)
    if depth == 0:
        return int(static_eval(P, O, W, rules))
    return max(-minimax(pos.play(m), depth - 1, W) for m in legal)


def positions_with(rules: int, empties_range: tuple[int, int], n: int, seed: int):
    out = []
    for P, O in random_positions(4000, seed):
        e = 64 - bin(int(P | O)).count("1")
        if empties_range[0] <= e <= empties_range[1]:
            out.append((P, O))
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(out), size=min(n, len(out)), replace=False)
    return [_position(*out[i], rules) for i in idx]


def _position(P, O, rules) -> Position:
    # the side to move is black in the returned Position; only P/O matter to the search
    return Position.from_string(_board(P, O), "X").with_rules(rules)


def _board(P, O) -> str:
    s = []
    for sq in range(64):
        bit = 1 << sq
        s.append("X" if int(P) & bit else "O" if int(O) & bit else "-")
    return "".join(s)


@pytest.mark.parametrize("rules", [STANDARD, REVERSED])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_alpha_beta_equals_plain_minimax(rules, depth):
    W = default_weights(rules)
    ab = AlphaBeta(W, table_bits=12)
    for pos in positions_with(rules, (20, 50), 8, seed=depth + 10 * rules):
        if pos.is_game_over():
            continue
        r = ab.search(pos, max_depth=depth)
        assert r.depth == depth or r.stopped_by == "solved"
        assert r.score * SCALE == minimax(pos, r.depth, W), pos.to_string()


@pytest.mark.parametrize("depth", [5, 7, 9])
def test_two_threads_at_a_fixed_depth_give_the_single_thread_value(depth):
    """Two threads sharing the iteration (ABDADA: busy moves deferred, the first to finish
    answers) change no full-width value at a fixed depth (moves may differ on ties)."""
    W = default_weights(STANDARD)
    one, two = AlphaBeta(W, table_bits=16), AlphaBeta(W, table_bits=16)
    for pos in positions_with(STANDARD, (24, 44), 10, seed=depth):
        if pos.is_game_over():
            continue
        one.clear()
        two.clear()
        a = one.search(pos, max_depth=depth)
        b = two.search(pos, max_depth=depth, threads=2)
        assert b.score == a.score and b.depth == a.depth == depth, pos.to_string()
        if depth == 7:   # analysis: every root move's exact value, helpers from the start
            one.clear()
            two.clear()
            a = one.search(pos, max_depth=depth, analysis=True)
            b = two.search(pos, max_depth=depth, analysis=True, threads=2)
            assert b.moves == a.moves, pos.to_string()


def test_deferring_busy_moves_changes_no_value():
    """With ctl[SHARED] a node searches the moves another thread has marked busy last: every
    grandchild of the root marked, every node below the root searches its moves after the
    first in another order, and the full-width value is the same."""
    from engine_server.search import alphabeta as AB
    from engine_server.search.alphabeta.table import busy_mark

    W = default_weights(STANDARD)
    depth = AB.DEFER_DEPTH + 2
    for pos in positions_with(STANDARD, (30, 44), 6, seed=11):
        if pos.is_game_over() or pos.legal_moves() == [PASS]:
            continue
        P, O = pos.bitboards()
        order = np.array(pos.legal_moves(), np.int64)
        values, nodes = [], []
        for shared in (0, 1):
            ab = AlphaBeta(W, table_bits=16)
            ctl = ab.ctl
            ctl[AB.SHARED], ctl[AB.LIMIT], ctl[AB.SEL] = shared, np.iinfo(np.int64).max, \
                AB.SEL_EXACT
            if shared:
                for m in pos.legal_moves():
                    child = pos.play(m)
                    cP, cO = child.bitboards()
                    i, tag = busy_mark(ab.keys, cP, cO)
                    ab.data[i] = tag   # the root's other moves: busy
                    for g in child.legal_moves():
                        gP, gO = child.play(g).bitboards()
                        i, tag = busy_mark(ab.keys, gP, gO)
                        ab.data[i] = tag
            scores = np.zeros(len(order), np.int64)
            kinds = np.zeros(len(order), np.int64)
            v = AB.search_root(P, O, np.int64(-AB.INF), np.int64(AB.INF), np.int64(depth), ab.W,
                               np.int64(STANDARD), ab.keys, ab.data, ctl, order, scores, kinds,
                               False, AB.NO_MPC)
            assert ctl[AB.ROOT_DONE] == 1
            values.append(int(v))
            nodes.append(int(ctl[AB.NODES]))
        assert values[0] == values[1], pos.to_string()
        assert nodes[0] != nodes[1]   # the marks were read: another order, another tree


def test_probes_that_can_never_cut_change_no_value():
    """A selective search whose margins put every probe beyond the score range searches
    full width: the same values as the exact search."""
    W = default_weights(STANDARD)
    ab = AlphaBeta(W, table_bits=16)
    wide = np.full(MPC_SHAPE, 100_000, np.int64)
    for pos in positions_with(STANDARD, (24, 44), 8, seed=3):
        if pos.is_game_over():
            continue
        ab.clear()
        exact = ab.search(pos, max_depth=6)
        ab.clear()
        r = ab.search(pos, max_depth=6, selectivity=2, mpc=wide)
        assert r.score == exact.score and r.selectivity == 2


def test_probes_cut_nodes_and_keep_the_value_close():
    W = default_weights(STANDARD)
    ab = AlphaBeta(W, table_bits=18)
    margins = np.zeros(MPC_SHAPE, np.int64)
    margins[3:, :] = 4 * SCALE   # a 4-disc margin everywhere
    exact_nodes = probed_nodes = 0
    for pos in positions_with(STANDARD, (28, 40), 6, seed=5):
        if pos.is_game_over():
            continue
        ab.clear()
        exact = ab.search(pos, max_depth=8)
        ab.clear()
        r = ab.search(pos, max_depth=8, selectivity=0, mpc=margins)
        exact_nodes += exact.nodes
        probed_nodes += r.nodes
        assert abs(r.score - exact.score) <= 12, pos.to_string()
    assert probed_nodes < exact_nodes / 2
    with pytest.raises(ValueError):
        ab.search(pos, max_depth=3, selectivity=1)  # no margins


@pytest.mark.parametrize("rules", [STANDARD, REVERSED])
def test_search_to_the_end_is_the_exact_solve(rules):
    """Full width to the end: the root's value and, in analysis, every move's value are the
    exact solver's (the nodes of at most ENDGAME_EMPTIES empties are the solver's own, the
    wider ones the search's)."""
    W = default_weights(rules)
    ab = AlphaBeta(W, table_bits=14)
    for pos in positions_with(rules, (6, 15), 8, seed=7 + rules):
        if pos.is_game_over() or pos.must_pass():
            continue
        ab.clear()
        r = ab.search(pos, max_depth=60)
        assert r.stopped_by == "solved"
        assert r.score == solve(pos).score
        r = ab.search(pos, max_depth=60, analysis=True)
        exact = solve_move_scores(pos)
        assert {m: v[0] for m, v in r.moves.items()} == exact, pos.to_string()


def test_an_open_window_searches_past_the_table_and_a_null_window_trusts_it():
    """A node of the principal variation (an open window) is searched whatever its own table
    entry holds: with every child of the root given a false exact value, the analysis of every
    root move (each child an open window) still finds the values of a search from an empty
    table, at full width and at 74%.  A null window around the false value takes it."""
    from engine_server.eval import mpc as M
    from engine_server.search import alphabeta as AB
    from engine_server.search.alphabeta.pvs import _pvs
    from engine_server.search.alphabeta.table import GEN, NO_MOVE, store

    W = default_weights(STANDARD)
    level = AB.SELECTIVITY_PCT.index(74)
    margins = M.shipped(STANDARD, W).margins(AB.SELECTIVITY_T[level], SCALE)
    false = 50 * SCALE
    depth = 7

    def poison(ab, child):
        cP, cO = child.bitboards()
        store(ab.keys, ab.data, cP, cO, np.int64(STANDARD), np.int64(-AB.INF), np.int64(AB.INF),
               np.int64(false), np.int64(60), np.int64(NO_MOVE), ab.ctl[GEN],
               np.int64(AB.SEL_EXACT))

    checked = 0
    for sel, table in ((AB.SEL_EXACT, AB.NO_MPC), (level, margins)):
        for pos in positions_with(STANDARD, (30, 44), 3, seed=23):
            if pos.is_game_over() or pos.must_pass():
                continue
            P, O = pos.bitboards()
            order = np.array(pos.legal_moves(), np.int64)
            n = len(order)
            found = []
            for poisoned in (False, True):
                ab = AlphaBeta(W, table_bits=16)
                ctl = ab.ctl
                ctl[AB.LIMIT], ctl[AB.SEL] = np.iinfo(np.int64).max, sel
                if poisoned:
                    for m in order:
                        poison(ab, pos.play(int(m)))
                scores = np.zeros(n, np.int64)
                AB.search_root(P, O, np.int64(-AB.INF), np.int64(AB.INF), np.int64(depth), ab.W,
                               np.int64(STANDARD), ab.keys, ab.data, ctl, order, scores,
                               np.zeros(n, np.int64), True, table)
                assert ctl[AB.ROOT_DONE] == 1
                found.append(scores.tolist())
            assert found[1] == found[0], (pos.to_string(), sel)
            assert -false not in found[0]
            child = pos.play(int(order[0]))
            poison(ab, child)   # (the search above stored its true value)
            cP, cO = child.bitboards()
            v = _pvs(cP, cO, np.int64(false - 1), np.int64(false), np.int64(depth - 1),
                     np.int64(1), ab.W, np.int64(STANDARD), ab.keys, ab.data, ctl, table)
            assert v == false
            checked += 1
    assert checked >= 4


def test_windows_on_exact_nodes_are_fail_soft_in_score_units():
    """A search to the end against any window (score units, four to a disc, not multiples of
    four): a value at or below alpha bounds the exact value from above, one at or above beta
    from below, one in between is it."""
    from engine_server.search.alphabeta.probcut import NO_MPC
    from engine_server.search.alphabeta.pvs import ENDGAME_EMPTIES, search_root
    from engine_server.search.alphabeta.table import CTL_SIZE

    W = default_weights(STANDARD)
    ab = AlphaBeta(W, table_bits=12)
    rng = np.random.default_rng(11)
    checked = 0
    for pos in positions_with(STANDARD, (6, ENDGAME_EMPTIES + 1), 12, seed=13):
        if pos.is_game_over() or pos.must_pass():
            continue
        P, O = pos.bitboards()
        exact = SCALE * solve(pos).score
        order = np.array(pos.legal_moves(), np.int64)
        for _ in range(6):
            lo = int(rng.integers(-70 * SCALE, 66 * SCALE))
            hi = lo + int(rng.choice([1, 2, 3, 5, 9, 40]))
            ab.clear()
            ctl = np.zeros(CTL_SIZE, np.int64)
            n = len(order)
            v = int(search_root(P, O, np.int64(lo), np.int64(hi), np.int64(pos.empties), ab.W,
                                np.int64(0), ab.keys, ab.data, ctl, order, np.zeros(n, np.int64),
                                np.zeros(n, np.int64), False, NO_MPC))
            if v <= lo:
                assert exact <= v, (pos.to_string(), lo, hi, v, exact)
            elif v >= hi:
                assert exact >= v, (pos.to_string(), lo, hi, v, exact)
            else:
                assert v == exact, (pos.to_string(), lo, hi, v, exact)
            checked += 1
    assert checked >= 30


def test_iterations_jump_to_the_end_once_it_is_near():
    """Deepening stops short of the end and searches to it next (END_JUMP); a depth cap short
    of the end keeps every iteration."""
    from engine_server.search.alphabeta.search import END_JUMP, END_JUMP_FROM

    W = default_weights(STANDARD)
    ab = AlphaBeta(W, table_bits=16)
    pos = positions_with(STANDARD, (15, 15), 1, seed=17)[0]
    assert END_JUMP_FROM >= pos.empties - END_JUMP
    depths: list[int] = []
    r = ab.search(pos, max_depth=60, on_iteration=lambda it: depths.append(it.depth))
    assert depths == [*range(1, END_JUMP_FROM), pos.empties]
    assert r.stopped_by == "solved" and r.score == solve(pos).score
    depths.clear()
    ab.search(pos, max_depth=pos.empties - 1, on_iteration=lambda it: depths.append(it.depth))
    assert depths == list(range(1, pos.empties))


def test_the_table_kept_between_searches_makes_the_next_one_cheaper():
    W = default_weights(STANDARD)
    ab = AlphaBeta(W, table_bits=18)
    pos = Game.from_moves(["f5", "d6", "c3", "d3", "c4", "f4", "f6", "f3", "e6", "e7"]).position
    first = ab.search(pos, max_depth=6)
    again = ab.search(pos, max_depth=6)
    assert again.move == first.move and again.score == first.score
    assert again.nodes < first.nodes / 2


def test_a_bucket_keeps_the_deeper_entry_of_the_search_and_takes_every_new_one():
    from engine_server.search import alphabeta as AB
    from engine_server.search.alphabeta.table import (
        BUSY,
        entry_depth,
        new_table,
        probe,
        slot,
        store,
    )

    keys, data = new_table(10)
    assert keys.ctypes.data % 64 == 0 and data.ctypes.data % 64 == 0
    assert keys.shape == (1 << 10, 2) and data.shape == ((1 << 10) + BUSY,)
    # five positions whose entries share one bucket
    rng = np.random.default_rng(5)
    by_bucket: dict[int, list] = {}
    while True:
        P = np.uint64(rng.integers(1 << 62)) & np.uint64(0x00FF00FF00FF00FF)
        O = np.uint64(rng.integers(1 << 62)) & ~P & np.uint64(0x0000FFFF0000FFFF)
        i = int(slot(keys, P, O))
        assert i % 2 == 0
        same = by_bucket.setdefault(i, [])
        if (P, O) not in same:
            same.append((P, O))
        if len(same) == 5:
            break
    (a, b, c, d, e) = same
    rules = np.int64(STANDARD)

    def put(pos, depth, gen):
        store(keys, data, pos[0], pos[1], rules, np.int64(-10), np.int64(10), np.int64(3),
               np.int64(depth), np.int64(19), np.int64(gen), np.int64(AB.SEL_EXACT))

    def depth_of(pos):
        w = probe(keys, data, np.int64(i), pos[0], pos[1], rules)
        return None if w == 0 else int(entry_depth(w))

    put(a, 5, 1)
    put(b, 3, 1)
    assert (depth_of(a), depth_of(b)) == (5, 3)          # two positions, one bucket
    put(c, 2, 1)
    assert (depth_of(a), depth_of(b), depth_of(c)) == (5, None, 2)   # the shallower goes
    put(a, 6, 1)
    assert (depth_of(a), depth_of(c)) == (6, 2)           # a position's own entry is updated
    put(d, 1, 2)                                         # a new search: older entries go first,
    assert (depth_of(a), depth_of(c), depth_of(d)) == (6, None, 1)  # the shallower of them
    put(e, 1, 2)
    assert (depth_of(a), depth_of(d), depth_of(e)) == (None, 1, 1)  # then the deep old one
    assert probe(keys, data, np.int64(i), d[0], d[1], np.int64(REVERSED)) == 0   # rules differ


@pytest.mark.parametrize("spec", ["ab", "ab:threads=2,selectivity=74"])
def test_a_deadline_holds_and_the_answer_is_a_finished_iteration(spec):
    agent = make_agent(spec)
    pos = Game.from_moves(["f5", "d6", "c3", "d3", "c4"]).position
    agent.search(pos, Limits(depth=2))  # compiled and warm
    for budget in (0.05, 1.0):
        t0 = time.monotonic()
        r = agent.search(pos, Limits(time=budget))
        took = time.monotonic() - t0
        # The deadline ended a depth-60 search, and not before it; how soon after it is
        # othello-bench search --agent ab's max_overrun_s.
        assert r.stopped_by == "time" and budget <= took < budget + SLACK, took
        assert r.best_move in pos.legal_moves()
        if budget >= 1.0:  # (a paused process may not finish depth 1 in 50 ms of wall time)
            assert r.iterations >= 1


@pytest.mark.parametrize("spec", ["ab", "ab:threads=2,selectivity=74"])
def test_a_stop_event_ends_a_search_without_a_clock(spec):
    agent = make_agent(spec)
    pos = Game.from_moves(["f5", "d6", "c3", "d3", "c4"]).position
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    t0 = time.monotonic()
    r = agent.search(pos, Limits(stop=stop, depth=60))
    # a depth-60 midgame search never ends by itself: the stop ended it (how soon after the
    # stop is othello-bench search --agent ab's max_stop_latency_s)
    assert r.stopped_by == "stop" and time.monotonic() - t0 < 0.2 + SLACK
    assert r.best_move in pos.legal_moves()


@pytest.mark.parametrize("spec", ["ab", "ab:threads=2,selectivity=74"])
def test_a_long_iteration_reports_its_progress_on_the_clocks_ticks(spec):
    """Between finished iterations (minutes apart at depth 60), the clock's ticks repeat the
    last finished one with the nodes so far and the depth under way.  The callback itself
    stops the search after three ticks: nothing here waits on a time."""
    agent = make_agent(spec)
    pos = Game.from_moves(["f5", "d6", "c3", "d3", "c4", "f4", "f6", "f3", "e6", "e7"]).position
    stop = threading.Event()
    reports = []

    def progress(r):
        reports.append(r)
        if sum(1 for x in reports if x.searching) >= 3:
            stop.set()

    r = agent.search(pos, Limits(stop=stop, depth=60), progress, progress_interval=0.01)
    ticks = [x for x in reports if x.searching]
    assert r.stopped_by == "stop" and len(ticks) >= 3
    finished = {x.iterations: x for x in reports if not x.searching}
    for t in ticks:
        # the last finished iteration's move, PV and depth; the depth under way beyond it
        done = finished[t.iterations]
        assert (t.best_move, t.pv, t.eval) == (done.best_move, done.pv, done.eval)
        assert t.searching > t.iterations >= 1 and not t.final
        assert t.search_nodes >= done.search_nodes
    nodes = [x.search_nodes for x in reports]
    assert nodes == sorted(nodes)


def test_node_budgets_are_reproducible():
    pos = Game.from_moves(["f5", "f6", "e6", "f4"]).position
    a = make_agent("ab").search(pos, Limits(playouts=30_000))
    b = make_agent("ab").search(pos, Limits(playouts=30_000))
    assert (a.best_move, a.eval, a.search_nodes) == (b.best_move, b.eval, b.search_nodes)


def test_analysis_gives_every_move_a_value():
    agent = make_agent("ab")
    pos = Game.from_moves(["f5", "d6", "c3"]).position
    r = agent.search(pos, Limits(depth=4, analysis=True))
    assert {m.move for m in r.moves} == set(pos.legal_moves())
    assert all(m.margin is not None for m in r.moves)
    assert r.moves[0].margin == max(m.margin for m in r.moves)


def test_ab_plays_perfect_endgames_through_the_root_solver():
    agent = make_agent("ab")
    pos = Position.from_string(
        "--XXXXX--OOOXX-O-OOOXXOX-OXOXOXXOXXXOXXX--XOXOXX-XXXOOO--OOOOO--", "X")
    r = agent.search(pos, Limits(time=30.0))  # solved in well under a second: it ends there
    scores = {m: -solve(pos.play(m)).score for m in pos.legal_moves()}
    assert r.exact and scores[r.best_move] == max(scores.values()) == r.eval


def test_random_opening_plies_are_seeded():
    def opening(seed: int) -> list[int]:
        agent = make_agent(f"ab:random=4,seed={seed}")
        g = Game()
        for _ in range(4):
            g.play(agent.search(g.position, Limits(depth=1)).best_move)
        return g.moves

    assert opening(3) == opening(3)
    assert len({tuple(opening(s)) for s in range(6)}) > 1


def test_a_stopped_shared_iteration_keeps_what_every_thread_proved():
    """The threads divide the root moves: when the clock stops an iteration, a better move
    with an exact value that a helper proved is the answer, and the moves' values merge."""
    from engine_server.search.alphabeta.table import CTL_SIZE, ROOT_BEST, ROOT_SCORE
    from engine_server.search.alphabeta.threads import _merge_stopped

    order = [19, 26, 37, 44]
    for helper_value, expect in ((14, 37), (6, 19)):
        main_ctl, help_ctl = np.zeros(CTL_SIZE, np.int64), np.zeros(CTL_SIZE, np.int64)
        main_ctl[ROOT_BEST], main_ctl[ROOT_SCORE] = 19, 10
        parts = [(np.array([10, 3, 0, 0]), np.array([0, -1, -2, -2])),
                 (np.array([0, 0, helper_value, 2]), np.array([-2, -2, 0, -1]))]
        _merge_stopped(order, [main_ctl, help_ctl], parts)
        assert main_ctl[ROOT_BEST] == expect
        assert main_ctl[ROOT_SCORE] == (10 if expect == 19 else helper_value)
        assert parts[0][1].tolist() == [0, -1, 0, -1]
        assert parts[0][0].tolist() == [10, 3, helper_value, 2]
