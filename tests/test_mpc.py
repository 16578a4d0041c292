"""Multi-ProbCut statistics: shipped for the shipped weights, refused for others, refitted
reproducibly by othello-train mpc, and the selective search they drive."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine_server.agents import AgentSpecError, make_agent
from engine_server.eval import mpc as M
from engine_server.eval import weights as wts
from engine_server.eval.weights import default_weights
from engine_server.game import Game, Position, square_name
from engine_server.search.alphabeta import SCALE, SELECTIVITY_PCT, AlphaBeta
from engine_server.search.limits import Limits
from training.cli import main as train_main

from .conftest import data_file


def test_the_shipped_statistics_belong_to_the_shipped_weights():
    stats = M.shipped(0, wts.default_weights(0))
    assert stats.sigma.shape == (61, 65)
    assert stats.sigma[:M.MIN_DEPTH].max() == 0 and stats.sigma[10, 30] >= M.SIGMA_FLOOR
    margins = stats.margins(1.81, 4)
    assert margins.dtype == np.int64 and margins[10, 30] == int(np.ceil(1.81 * 4 *
                                                                        stats.sigma[10, 30]))


def test_statistics_of_other_weights_or_damaged_files_are_refused(tmp_path):
    other = wts.default_weights(0).copy()
    other[3, 100] += 1
    with pytest.raises(M.MpcError, match="other weights"):
        M.load(M.default_path(0), other, 0)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(M.MpcError, match="unreadable"):
        M.load(bad, other)
    with pytest.raises(M.MpcError, match="not found"):
        M.load(tmp_path / "missing.json", other)
    with pytest.raises(AgentSpecError, match="mpc_file"):
        make_agent(f"ab:selectivity=93,weights={wts.weights_path(0)}")


def test_a_tiny_refit_is_reproducible_and_usable(tmp_path):
    sample = data_file("wthor-sample.wtb")
    outs = []
    for k in range(2):
        out = tmp_path / f"mpc{k}.json"
        assert train_main(["mpc", "--wthor", str(sample), "--positions", "120", "--depth", "5",
                           "--min-count", "5", "--threads", "1", "--work",
                           str(tmp_path / f"work{k}"), "--out", str(out)]) == 0
        outs.append(json.loads(out.read_text()))
    a, b = outs
    assert a["sigma"] == b["sigma"] and a["model"] == b["model"] and a["weights"] == b["weights"]
    assert a["meta"]["positions"] == 120 and a["meta"]["cells"]
    agent = make_agent(f"ab:selectivity=88,mpc_file={tmp_path / 'mpc0.json'},threads=1,book=off")
    pos = Game.from_moves(["f5", "d6", "c3", "d3", "c4", "f4"]).position
    r = agent.search(pos, Limits(depth=6))
    assert r.best_move in pos.legal_moves() and r.selectivity == 88


def test_selectivity_reaches_deeper_with_fewer_nodes():
    pos = Game.from_moves(["f5", "d6", "c3", "d3", "c4", "f4", "f6", "f3", "e6", "e7"]).position
    exact = make_agent("ab:threads=1,book=off,root_solve=0").search(pos, Limits(depth=9))
    cut = make_agent("ab:threads=1,book=off,root_solve=0,selectivity=88").search(
        pos, Limits(depth=9))
    assert cut.iterations == exact.iterations == 9
    assert cut.search_nodes < exact.search_nodes / 2
    assert exact.selectivity == 100 and cut.selectivity == 88


def test_the_levels_below_74_cut_with_narrower_margins_and_report_themselves():
    # node counts at a fixed depth are no measure here: each level's own move order reshapes
    # the tree, so the level's margins are checked instead, and the depth in a second is a
    # benchmark (docs/search.md)
    pos = Game.from_moves(["f5", "d6", "c3", "d3", "c4", "f4", "f6", "f3", "e6", "e7"]).position
    agents = {pct: make_agent(f"ab:threads=1,book=off,root_solve=0,selectivity={pct}")
              for pct in (50, 60, 74)}
    m = {pct: a.inner.margins(0, default_weights(0)) for pct, a in agents.items()}
    assert (m[50] <= m[60]).all() and (m[60] <= m[74]).all() and (m[50] < m[74]).any()
    for pct, agent in agents.items():
        r = agent.search(pos, Limits(depth=9))
        assert r.iterations == 9 and r.selectivity == pct and r.best_move in pos.legal_moves()


def test_the_lowest_level_rises_through_every_level_to_an_exact_solve(ffo_easy):
    row = ffo_easy[0]
    pos = Position.from_string(row["board"], row["side"])
    agent = make_agent("ab:threads=1,book=off,root_solve=0,selectivity=50")
    levels = agent.inner.endgame_levels(0, default_weights(0))
    assert [(*SELECTIVITY_PCT, 100)[lv] for lv, _ in levels] == [60, 74, 88, 93, 98, 99, 100]
    r = agent.search(pos, Limits(iterations=50_000_000))
    assert r.stopped_by == "solved" and r.selectivity == 100 and r.exact and r.lower == row["score"]


def test_a_selective_search_with_budget_left_at_the_end_rises_to_an_exact_solve(ffo_easy):
    # Edax's endgame: once 74% reaches the end of the game, the budget left buys 88%, 93%, ...
    # and finally full width, whose answer is the exact margin
    row = ffo_easy[0]   # FFO #1: 14 empties, +18 by G8
    pos = Position.from_string(row["board"], row["side"])
    agent = make_agent("ab:threads=1,book=off,root_solve=0,selectivity=74")
    r = agent.search(pos, Limits(iterations=50_000_000))   # a node budget: reproducible
    assert r.stopped_by == "solved" and r.selectivity == 100 and r.iterations == 14
    assert r.exact and r.lower == row["score"]
    assert square_name(r.best_move).upper() in row["best"]


def test_a_depth_budget_keeps_its_selectivity_at_the_end_of_the_game(ffo_easy):
    row = ffo_easy[0]
    pos = Position.from_string(row["board"], row["side"])
    agent = make_agent("ab:threads=1,book=off,root_solve=0,selectivity=74")
    r = agent.search(pos, Limits(depth=30))
    assert r.stopped_by == "depth" and r.selectivity == 74 and r.iterations == 14


def test_a_rise_cut_short_reports_the_last_finished_level(ffo_easy):
    row = ffo_easy[0]
    pos = Position.from_string(row["board"], row["side"])
    spec = "ab:threads=1,book=off,root_solve=0,selectivity=74"
    capped = make_agent(spec).search(pos, Limits(depth=30))
    # a node budget a little above what 74% needed: the 88% pass starts and cannot finish
    r = make_agent(spec).search(pos, Limits(iterations=capped.search_nodes + 50))
    assert r.stopped_by == "nodes"
    assert r.selectivity == 74 and r.iterations == 14 and r.best_move == capped.best_move


def test_raised_levels_must_rise_to_full_width():
    w = default_weights(0)
    ab = AlphaBeta(w, 12)
    margins = M.shipped(0, w).margins(1.55, SCALE)
    pos = Game.from_moves(["f5", "d6", "c3"]).position
    with pytest.raises(ValueError, match="rise"):
        ab.search(pos, max_depth=2, selectivity=1, mpc=margins, raise_to=[(0, margins)])
    with pytest.raises(ValueError, match="margins"):
        ab.search(pos, max_depth=2, selectivity=0, mpc=margins, raise_to=[(1, None)])
