"""Multi-ProbCut statistics: shipped for the shipped weights, refused for others, refitted
reproducibly by othello-train mpc, and the selective search they drive."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine_server.agents import AgentSpecError, make_agent
from engine_server.eval import mpc as M
from engine_server.eval import weights as wts
from engine_server.game import Game
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
