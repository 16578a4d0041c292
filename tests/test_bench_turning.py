"""The turning-positions benchmark: its set parses and holds what it says, a broken line is named,
an agent that solves the position keeps its outcome, and the solver's proof finds its value."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.turning import TURNING, bench_turning, load, prove_turning
from engine_server.game import PASS, Position
from engine_server.search.endgame.solver import solve_move_scores
from protocol.notation import square_name


def test_the_shipped_set_is_late_positions_where_some_move_gives_the_outcome_away() -> None:
    cases = load()
    assert len(cases) >= 10
    assert len({c.name for c in cases}) == len(cases)
    assert len({c.position.to_string() + str(c.position.side) for c in cases}) == len(cases)
    for c in cases:
        assert 22 <= c.position.empties <= 26
        # a position where every move kept the outcome could not have been turned
        assert c.keeps and c.keeps < frozenset(c.position.legal_moves())


def test_a_keeping_move_that_is_not_legal_is_named_with_its_line(tmp_path: Path) -> None:
    line = next(x for x in TURNING.read_text().splitlines() if x and not x.startswith("#"))
    board, side, value, _keeps, name = line.split()
    pos = Position.from_string(board, side)
    illegal = next(sq for sq in range(64) if not pos.is_legal(sq))
    bad = tmp_path / "bad.txt"
    bad.write_text(f"# header\n{board} {side} {value} {square_name(illegal)} {name}\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: .*" + square_name(illegal)):
        load(bad)


def _turning_position(empties: int) -> tuple[Position, int, list[int]]:
    """A position of seeded random play with ``empties`` empties where some move changes the
    win/draw/loss outcome, its value and its keeping moves (every move solved exactly)."""
    for seed in range(100):
        rng = np.random.default_rng(seed)
        pos = Position.start()
        while pos.empties > empties and not pos.is_game_over():
            moves = pos.legal_moves()
            pos = pos.play(int(rng.choice(moves)) if moves else PASS)
        if pos.is_game_over() or pos.empties != empties or len(pos.legal_moves()) < 2:
            continue
        signs = {m: (v > 0) - (v < 0) for m, v in solve_move_scores(pos).items()}
        best = max(signs.values())
        keeps = [m for m, s in signs.items() if s == best]
        if len(keeps) < len(signs):
            return pos, best, keeps
    raise AssertionError("no seeded position with a move that turns the outcome")


def test_an_agent_that_solves_the_position_keeps_its_outcome(tmp_path: Path) -> None:
    pos, value, keeps = _turning_position(10)
    f = tmp_path / "set.txt"
    f.write_text(f"{pos.to_string()} {pos.side} {value} "
                 f"{','.join(square_name(m) for m in keeps)} seeded-10\n")
    r = bench_turning("best:threads=1", 0.3, 2, path=f)
    assert r["positions"] == 1 and r["tries"] == 2
    assert r["kept"] == 2, r
    # and one that plays a losing move every time is counted as not keeping it
    lose = next(m for m in pos.legal_moves() if m not in keeps)
    g = tmp_path / "other.txt"
    g.write_text(f"{pos.to_string()} {pos.side} {value} {square_name(lose)} seeded-10\n")
    assert bench_turning("best:threads=1", 0.3, 1, path=g)["kept"] == 0


def test_the_proof_of_a_position_finds_its_value_and_a_wrong_value_fails(tmp_path: Path) -> None:
    pos, value, keeps = _turning_position(14)
    line = f"{pos.to_string()} {pos.side} {{}} {','.join(square_name(m) for m in keeps)} s-14\n"
    f = tmp_path / "set.txt"
    f.write_text(line.format(value))
    rows, summary = prove_turning(1, 0.85, path=f)
    assert [r["value"] for r in rows] == [value] and rows[0]["nodes"] > 0
    assert summary["correct"] == summary["positions"] == 1
    # a set whose value is wrong is counted as not proved
    wrong = tmp_path / "wrong.txt"
    wrong.write_text(line.format(-value if value else 1))
    assert prove_turning(2, 0.85, path=wrong)[1]["correct"] == 0
