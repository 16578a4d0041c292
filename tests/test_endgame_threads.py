"""The exact solver with several threads over one table (``Solver(threads=N)``, ABDADA)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from engine_server.game import Position, parse_move
from engine_server.search import endgame as E
from engine_server.search.endgame import table as ET

from .conftest import load_ffo
from .loadsafe import SLACK
from .test_endgame import _random_positions


def _ffo(k: int) -> tuple[Position, int, set[int]]:
    row = load_ffo("ffo40-59.txt")[k]
    pos = Position.from_string(row["board"], row["side"])
    return pos, row["score"], {parse_move(m) for m in row["best"]}


@pytest.mark.parametrize("rules", ["standard", "reversed"])
@pytest.mark.slow  # deep solves on two threads
def test_two_threads_find_the_single_thread_values_and_moves_that_reach_them(rules):
    one = E.Solver(table_bits=16)
    two = E.Solver(table_bits=16, threads=2)
    for pos in _random_positions(23, 18, 6):
        pos = pos.with_rules(rules)
        want = one.solve(pos)
        got = two.solve(pos)
        assert got.exact and got.score == want.score, pos.to_string()
        # the move the two threads give reaches that score
        assert -one.solve(pos.play(got.best_move)).score == got.score, pos.to_string()
        # fail-soft windows either side of the value bound it from the right side
        below = two.window(pos, want.score - 2, want.score - 1)
        above = two.window(pos, want.score + 1, want.score + 2)
        assert below.finished and below.value >= want.score - 1
        assert above.finished and above.value <= want.score + 1


def test_two_threads_solve_ffo_40_and_both_search():
    pos, score, best = _ffo(0)
    s = E.Solver(threads=2)
    r = s.solve(pos)
    assert r.exact and r.score == score and r.best_move in best
    # the helper searched too, and its nodes are counted in the result
    helper = int(s._helper_ctl[0][E.NODES])
    assert helper > 100_000 and r.nodes > helper
    assert s.ctl[E.SHARED] == 0 and s._helper_ctl[0][E.SHARED] == 0


def test_a_torn_table_entry_never_matches():
    # Two threads writing one entry at once can leave the words of two different stores in it:
    # the position is kept xor-ed with the data word, so such an entry matches nothing.
    tt = E.new_table(8)
    a, b = _random_positions(5, 30, 2)
    Pa, Oa = a.bitboards()
    Pb, Ob = b.bitboards()
    r = np.int64(0)
    ET.tt_store(tt, Pa, Oa, r, np.int64(-4), np.int64(10), np.int64(19), np.int64(7), np.int64(1))
    j, d = ET.tt_probe(tt, ET.tt_index(tt, Pa, Oa), Pa, Oa, r)
    # the probe hands back the data word it checked (a second read could be another entry's)
    assert j >= 0 and d == np.int64(tt[j, ET.TT_DATA])
    assert (d >> ET._LO_SHIFT) & 255 == 60 and (d >> ET._UP_SHIFT) & 255 == 74
    other = tt.copy()
    ET.tt_store(other, Pb, Ob, r, np.int64(2), np.int64(2), np.int64(20), np.int64(7),
                np.int64(1))
    k, _ = ET.tt_probe(other, ET.tt_index(other, Pb, Ob), Pb, Ob, r)
    tt[j, ET.TT_DATA] = other[k, ET.TT_DATA]   # a's keys with b's data
    assert ET.tt_probe(tt, ET.tt_index(tt, Pa, Oa), Pa, Oa, r) == (-1, 0)
    assert ET.tt_probe(tt, ET.tt_index(tt, Pb, Ob), Pb, Ob, r)[0] == -1


def test_stop_and_deadline_end_every_thread():
    pos, _, _ = _ffo(1)   # FFO #41: about a second of work for two threads on a quiet machine
    # No estimate first, and the kernels loaded before the clock starts: either, on a busy
    # machine, could outlast the 0.1 s and leave the stop an exact solve not yet started.
    s = E.Solver(table_bits=18, threads=2, aspiration=False)
    s.solve(pos, max_nodes=1000)
    s.clear()
    before = threading.active_count()
    stop = threading.Event()
    threading.Timer(0.1, stop.set).start()
    t0 = time.monotonic()
    r = s.solve(pos, stop=stop)
    assert not r.exact and r.nodes > 0 and time.monotonic() - t0 < 0.1 + SLACK
    s.clear()
    t0 = time.monotonic()
    r = s.solve(pos, deadline=t0 + 0.1)
    assert not r.exact and time.monotonic() - t0 < 0.1 + SLACK
    assert threading.active_count() == before   # the helper was joined each time
    assert int(s._helper_ctl[0][E.NODES]) > 0


def test_a_node_budget_is_searched_by_one_thread_and_reproducible():
    pos, _, _ = _ffo(0)
    s = E.Solver(table_bits=16, threads=2)
    runs = []
    for _ in range(2):
        s.clear()
        r = s.solve(pos, max_nodes=30_000)
        runs.append((r.exact, r.nodes, r.best_move))
        assert int(s._helper_ctl[0][E.NODES]) == 0
    assert runs[0] == runs[1] and not runs[0][0]


def test_threads_must_be_positive():
    with pytest.raises(ValueError, match="threads"):
        E.Solver(table_bits=8, threads=0)
