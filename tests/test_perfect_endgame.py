"""Perfect endgames a GUI can trust: every move and value checked against the exact solver."""

from __future__ import annotations

import re

import pytest

from engine_server.game import PASS, Color, Game, Position, parse_move
from engine_server.search import endgame as EG

from .endgame_positions import ffo_positions, random_position, random_positions
from .protocol_harness import Harness

# The move time: each search here ends when the solver has proven the position (a fraction of a
# second on a quiet machine), and a busy machine must not make the clock end it first.  That
# best plays these moves at 1 s is othello-bench endgame --set ffo1-19 --agent best's figure.
PROVE = 30.0


def _ggf(pos: Position, moves: list[int] = ()) -> str:
    text = "".join(
        f"{'B' if c == Color.BLACK else 'W'}[{'PA' if m == PASS else _name(m)}]"
        for c, m in _colored(pos, moves))
    ty = "8a" if int(pos.rules) == 1 else "8"  # the anti flag: reversed rules
    return f"(;GM[Othello]PC[test]TY[{ty}]BO[{pos.to_ggf()}]{text};)"


def _name(m: int) -> str:
    from engine_server.game import square_name

    return square_name(m).upper()


def _colored(pos: Position, moves):
    for m in moves:
        yield pos.side, m
        pos = pos.play(m)


def _nboard_go(h: Harness, ping: int) -> tuple[int, float, int]:
    """(move, eval, nodes) of one ``go``."""
    n0 = len(h.lines)
    h.send(f"ping {ping}", "go")
    lines = h.wait_for(lambda ls: any(l.startswith("=== ") for l in ls[n0:]), 2 * PROVE)[n0:]
    m = re.match(r"=== (\w+)/(-?[\d.]+)/", next(l for l in lines if l.startswith("=== ")))
    nodes = int(next(l for l in lines if l.startswith("nodestats")).split()[1])
    return parse_move(m.group(1)), float(m.group(2)), nodes


@pytest.mark.slow  # endgames solved in an engine process
def test_go_plays_a_move_of_maximal_exact_margin():
    """The perfect-endgame goal's positions: FFO #1-#19 and 31 random-play positions with 8-18
    empties (the goal's time, 1 s a move, is the benchmark's; see PROVE)."""
    positions = ffo_positions() + random_positions(31, seed=130)
    assert len(positions) == 50
    h = Harness("nboard", agent="best", move_time=PROVE)
    try:
        for k, pos in enumerate(positions):
            h.send(f"set game {_ggf(pos)}", "set depth 20")
            move, ev, nodes = _nboard_go(h, k + 1)
            scores = EG.solve_move_scores(pos)
            best = max(scores.values())
            assert scores[move] == best, (k, pos.to_string(), move, scores)
            assert ev == best and nodes > 0
    finally:
        h.close()


def _selfplay_nboard(h: Harness, start: Position) -> int:
    h.send(f"set game {_ggf(start)}", "set depth 20")
    pos, ping, checked = start, 1, 0
    while not pos.is_game_over():
        scores = EG.solve_move_scores(pos)
        move, ev, nodes = _nboard_go(h, ping)
        ping += 1
        assert scores[move] == max(scores.values()), (pos.to_string(), move, scores)
        assert ev == scores[move], (pos.to_string(), move, ev, scores)
        assert nodes > 0  # every go searched, or checked its proof with the solver
        h.send(f"move {'PA' if move == PASS else _name(move)}/{ev:.2f}/0.1")
        pos = pos.play(move)
        checked += 1
    return checked


@pytest.mark.parametrize("rules", ["standard", "reversed"])
@pytest.mark.slow  # whole endgames in an engine process
def test_one_nboard_process_plays_both_colours_perfectly_from_18_empties(rules):
    h = Harness("nboard", agent="best", move_time=PROVE)
    try:
        for seed in (3, 4):
            assert _selfplay_nboard(h, random_position(18, seed, rules)) >= 15
    finally:
        h.close()


@pytest.mark.slow  # whole endgames in an engine process
def test_one_gtp_process_plays_both_colours_perfectly_from_18_empties():
    g = Harness("gtp", agent="best", move_time=PROVE)
    try:
        for seed in (5, 6):
            pos = random_position(18, seed)
            assert g.send(f"othello-setboard {pos.to_string()} "
                          f"{'X' if pos.side == Color.BLACK else 'O'}")[0] == "= "
            while not pos.is_game_over():
                color = "black" if pos.side == Color.BLACK else "white"
                scores = EG.solve_move_scores(pos)
                reply = g.send(f"genmove {color}")
                move = parse_move(reply[0][2:])
                assert scores[move] == max(scores.values()), (pos.to_string(), move, scores)
                pos = pos.play(move)
            assert g.send("final_score")[0] == "= " + _gtp_score(pos)
    finally:
        g.close()


def _gtp_score(pos: Position) -> str:
    b, w = pos.discs()
    from engine_server.game import bitboard as bb

    s = int(bb.disc_score(b, w, int(pos.rules)))
    return f"B+{s}" if s > 0 else (f"W+{-s}" if s < 0 else "0")


def test_hint_at_a_solved_position_lists_exact_values_marked_100_percent_best_first():
    pos = ffo_positions()[0]
    scores = EG.solve_move_scores(pos)
    h = Harness("nboard", agent="best")
    try:
        h.send(f"set game {_ggf(pos)}", "set depth 20", "ping 1", "hint 64")
        lines = h.wait_for(lambda ls: ls[-1:] == ["status"] and len(ls) > 3, 2 * PROVE)
        rounds = [l.split() for l in lines if l.startswith("search ")]
        final = rounds[-len(scores):]
        assert all(r[4] == "100%" for r in final)
        got = {parse_move(r[1].split("-")[0]): float(r[2]) for r in final}
        assert got == {m: float(v) for m, v in scores.items()}
        first = parse_move(final[0][1].split("-")[0])
        assert scores[first] == max(scores.values())
        # the first line is the move go plays
        move, ev, _ = _nboard_go(h, 2)
        assert scores[move] == scores[first] and ev == float(scores[first])
    finally:
        h.close()


@pytest.mark.slow  # exact solves of every move
def test_analyze_gives_exact_values_in_the_endgame_even_after_a_pass():
    # a random game with a pass among its last 16 positions
    seed = 1
    while True:
        import random

        rng = random.Random(seed)
        game = Game(Position.start())
        while not game.is_over():
            game.play(rng.choice(game.position.legal_moves()))
        if PASS in game.moves[-14:]:
            break
        seed += 1
    h = Harness("nboard", agent="best")
    try:
        h.send(f"set game {_ggf(game.start, game.moves)}", "ping 1", "analyze")
        n = len(game.moves) + 1
        lines = h.wait_for(lambda ls: sum(l.startswith("analysis ") for l in ls) == n, 120)
        values = {int(l.split()[1]): float(l.split()[2]) for l in lines
                  if l.startswith("analysis ")}
        positions = game.positions()
        assert sorted(values) == list(range(n))
        for k, pos in enumerate(positions):
            if pos.empties <= 14:
                exact = EG.solve(pos).score
                assert values[k] == exact, (k, pos.to_string(), values[k], exact)
        passes = [k for k, pos in enumerate(positions) if pos.must_pass()]
        assert passes and all(values[k] == EG.solve(positions[k]).score for k in passes)
    finally:
        h.close()


def test_gtp_analysis_of_a_solved_position_shows_proven_win_rates_and_exact_scores():
    pos = ffo_positions()[1]
    scores = EG.solve_move_scores(pos)
    g = Harness("gtp", agent="best")
    try:
        g.send(f"othello-setboard {pos.to_string()} X")
        g.send("kata-analyze interval 10")
        # the search ends once every move is solved; its last line stays up until "stop"
        g.wait_for(lambda ls: g.session.current_job is not None
                   and g.session.current_job.done() and any(l.startswith("info ") for l in ls),
                   2 * PROVE)
        g.send("stop")
        last = [l for l in g.lines if l.startswith("info ")][-1]
        infos = re.findall(r"info move (\w+) visits \d+ utility \S+ winrate (\S+) "
                           r"scoreMean (\S+)", last)
        assert infos
        first = parse_move(infos[0][0])
        assert scores[first] == max(scores.values())
        for name, wr, score in infos:
            v = scores[parse_move(name)]
            assert float(score) == v
            assert float(wr) == (1.0 if v > 0 else 0.0 if v < 0 else 0.5)
        best = scores[first]  # black is to move
        expect = f"B+{best}" if best > 0 else (f"W+{-best}" if best < 0 else "0")
        assert g.send("final_score") == [f"= {expect}", ""]
    finally:
        g.close()
