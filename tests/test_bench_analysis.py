"""``othello-bench analysis`` runs the page's whole-game analysis and reports what it found."""

from __future__ import annotations

import json

from benchmarks.cli import main


def test_the_analysis_benchmark_reports_each_game_and_the_medians(capsys):
    assert main(["analysis", "--games", "1", "--time", "0.1", "--analyst",
                 "best:depth=4,threads=1,root_solve=12", "--json"]) == 0
    game, summary = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert game["plies"] >= 50 and game["depths"] == [4] and game["book"] >= 1
    assert game["exact"] >= 1 and game["seconds"] > 0
    assert summary["games"] == 1 and summary["median_plies"] == game["plies"]
