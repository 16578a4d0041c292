"""The paired-decisions benchmark: its set parses and holds what it says, a broken line is
named, and its judgement of two agents agrees with every move solved on its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.decisions import bench_decisions, choose, load
from engine_server.game import Position
from engine_server.search.endgame.solver import solve_move_scores

from .endgame_positions import random_position


def test_the_shipped_set_is_300_distinct_late_positions_with_a_choice() -> None:
    positions = load()
    assert len(positions) == 300
    assert len({p.to_string() + str(p.side) for p in positions}) == 300
    assert {p.empties for p in positions} == set(range(24, 29))
    assert all(len(p.legal_moves()) >= 2 for p in positions)


def test_a_line_without_a_choice_or_that_does_not_parse_is_named(tmp_path: Path) -> None:
    forced = Position.from_string("-" * 8 + "-XO-----" + "-" * 48, "X")
    assert len(forced.legal_moves()) == 1
    bad = tmp_path / "bad.txt"
    bad.write_text(f"# header\n{forced.to_string()} X\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: fewer than two legal moves"):
        load(bad)
    bad.write_text("XO X\n")
    with pytest.raises(ValueError, match=r"bad.txt:1: "):
        load(bad)


def test_the_judgement_matches_every_move_solved_exactly(tmp_path: Path) -> None:
    positions = [random_position(12, seed) for seed in range(6)]
    f = tmp_path / "set.txt"
    f.write_text("".join(f"{p.to_string()} {p.side}\n" for p in positions))
    # the alpha-beta agent solves 12 empties at its root: its moves are of maximal margin
    agents = ("ab:threads=1,book=off", "random:seed=3")
    got = bench_decisions(agents, seconds=None, depth=2, path=f, solver_threads=1)
    a = choose(agents[0], positions, None, 2)
    b = choose(agents[1], positions, None, 2)
    diffs = []
    for p, ma, mb in zip(positions, a, b):
        scores = solve_move_scores(p)
        assert scores[ma] == max(scores.values())
        if ma != mb:
            diffs.append(scores[ma] - scores[mb])
    assert diffs, "the random agent should differ somewhere"
    assert got["differ"] == len(diffs)
    assert got["b_better"] == 0
    assert got["a_better"] == sum(d > 0 for d in diffs)
    assert got["equal"] == sum(d == 0 for d in diffs)
    assert got["margin_a_minus_b"] == round(sum(diffs) / len(diffs), 3)
    assert got["margin_a_minus_b_per_position"] == round(sum(diffs) / len(positions), 4)
