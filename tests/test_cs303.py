"""The CS303 adapter driven as the course's judge drives it: ``go(np.copy(board))`` under a
SIGALRM timer whose exception is an AssertionError, ``candidate_list`` read afterwards, both
players in one process, reversed rules."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from clients.backend import InProcessBackend, moves_between
from clients.cs303 import checker as ck
from clients.cs303.ai import AI, default_cutoff
from engine_server.game import PASS, Color, Position, Rules
from protocol import notation as nt

from .cs303_sources import LEGAL_MOVES
from .loadsafe import SLACK
from .solver_ref import move_scores

REPO = Path(__file__).resolve().parent.parent
CS303 = REPO / "clients" / "cs303"
ENV = dict(os.environ, PYTHONPATH=str(REPO))

# Black to move: h6 wins under standard rules, a3 under reversed rules (see test_agents.py).
RULES_SPLIT = Position.from_string(
    "X-XOOOOOOXXXOOOX-XXOXOOXXXXXOOOXXXOOOOOXXOXOOOO-XXOOOOOOXXXO-O--", "X", "reversed")

QUICK = 300  # iterations per search: the contract is under test here, not playing strength
# The judge's timer where a test is about what go leaves in candidate_list: a busy machine must
# not make it interrupt go there.  The two tests about time say what they need; the quiet
# machine's figures are othello-bench cs303's.
PATIENT = 30.0


def quick_ai(color: int, time_out: float = 1.0, **kw) -> AI:
    kw.setdefault("iterations", QUICK)
    kw.setdefault("seed", 7)
    return AI(8, color, time_out, **kw)


def strict_problems(ai: AI, pos: Position) -> list[str]:
    """The course's criterion plus this adapter's own promises: legal moves first, in index
    order, as tuples of plain ints, then only decisions."""
    problems = ck.candidate_problems(ai.candidate_list, ck.expected_moves(pos))
    legal = [nt.row_col(m) for m in pos.legal_moves() if m != PASS]
    cl = ai.candidate_list
    if cl[:len(legal)] != legal:
        problems.append(f"list does not start with the legal moves: {cl}")
    if any(type(v) is not int for e in cl for v in e):
        problems.append(f"entries are not plain ints: {cl}")
    if legal and len(cl) <= len(legal):
        problems.append("no decision appended after the legal moves")
    return problems


def find_position(pred, rules=Rules.REVERSED, seed=0, games=400) -> Position:
    rng = random.Random(seed)
    for _ in range(games):
        for pos in ck.random_game(rng, rules):
            if pred(pos):
                return pos
    raise AssertionError("no such position in the sampled games")


def only_move_off_diagonal(pos: Position) -> bool:
    legal = ck.expected_moves(pos)
    if len(legal) != 1:
        return False
    (r, c), = legal
    return r != c and (c, r) not in legal


@pytest.fixture(scope="module")
def players():
    return {Color.BLACK: quick_ai(-1), Color.WHITE: quick_ai(1)}


def test_constructor_keeps_the_course_contract():
    ai = quick_ai(-1, time_out=5)
    assert (ai.chessboard_size, ai.color, ai.time_out, ai.candidate_list) == (8, -1, 5, [])
    assert ai.rules == Rules.REVERSED
    assert ai.cutoff == pytest.approx(4.8) and default_cutoff(1) == pytest.approx(0.8)
    assert default_cutoff(0.2) == pytest.approx(0.1)  # never the whole limit, never negative
    for bad in ((9, -1, 5), (8, 0, 5), (8, -1, 0)):
        with pytest.raises(ValueError):
            AI(*bad)
    assert ck.shared_class_state(AI) == []


def test_candidate_list_on_sampled_positions_for_both_colours(players):
    cases = ck.sample_cases(seed=3, per_colour=3)
    assert any(ck.is_asymmetric(c.position) for c in cases)
    assert {c.position.side for c in cases} == {Color.BLACK, Color.WHITE}
    for case in cases:
        ai = players[case.position.side]
        out = ck.judge_go(ai, case.position.to_cs303(), PATIENT)
        assert out.error is None and not out.timed_out, (case.label, out)
        if ck.expected_moves(case.position):
            assert strict_problems(ai, case.position) == [], case.label
        else:
            assert ai.candidate_list == [], case.label


def test_single_off_diagonal_move_is_given_as_row_col(players):
    for seed, side in ((1, Color.BLACK), (2, Color.WHITE)):
        pos = find_position(lambda p, side=side: p.side == side and only_move_off_diagonal(p),
                            seed=seed)
        (rc,) = ck.expected_moves(pos)
        ai = players[side]
        ck.judge_go(ai, pos.to_cs303(), PATIENT)
        assert ai.candidate_list == [rc, rc]


def test_pass_leaves_an_emptied_list(players):
    black, white = players[Color.BLACK], players[Color.WHITE]
    ck.judge_go(white, Position.start("reversed").play(19).to_cs303(), PATIENT)
    assert white.candidate_list  # a full list first, so that clearing is what gets tested
    board = np.zeros((8, 8), dtype=np.int64)
    board[0, 0], board[0, 1] = -1, 1  # black a1, white b1: white has no move, black has c1
    out = ck.judge_go(white, board, PATIENT)
    assert out.error is None and white.candidate_list == []
    ck.judge_go(black, board, PATIENT)
    assert black.candidate_list == [(0, 2), (0, 2)]
    random_pass = find_position(lambda p: p.must_pass() and p.side == Color.BLACK, seed=4)
    ck.judge_go(black, random_pass.to_cs303(), PATIENT)
    assert black.candidate_list == []
    ck.judge_go(black, np.zeros((8, 8), dtype=np.int64), PATIENT)  # the ancestor's empty board
    assert black.candidate_list == []


def test_reversed_rules_by_default_and_standard_on_request():
    std = move_scores(RULES_SPLIT.with_rules("standard"))
    rev = move_scores(RULES_SPLIT)
    assert max(std, key=std.get) == nt.parse_move("h6")
    assert max(rev, key=rev.get) == nt.parse_move("a3")
    board = RULES_SPLIT.to_cs303()
    # the iterations, not a cutoff that a busy machine reaches first, bound these searches
    reversed_ai = quick_ai(-1, PATIENT, iterations=3000)
    standard_ai = quick_ai(-1, PATIENT, iterations=3000, rules="standard")
    ck.judge_go(reversed_ai, board, PATIENT)
    ck.judge_go(standard_ai, board, PATIENT)
    assert reversed_ai.candidate_list[-1] == (2, 0)   # a3: row 2, column 0
    assert standard_ai.candidate_list[-1] == (5, 7)   # h6: row 5, column 7


def test_judge_timeout_interrupts_go_and_the_last_element_stands():
    ai = AI(8, -1, 60, seed=1)  # cutoff 59.8 s: only the judge's 0.4 s timer can end go soon
    pos = find_position(lambda p: p.side == Color.BLACK and len(ck.expected_moves(p)) >= 6,
                        seed=5)
    out = ck.judge_go(ai, pos.to_cs303(), 0.4)
    # The timer ended go, long before the adapter's own cutoff.  How soon after it fires is
    # othello-bench cs303's interrupt latency: the handler runs only once the search's current
    # kernel call (an alpha-beta iteration) returns, hundreds of ms even on a quiet machine.
    assert out.timed_out and out.error is None and 0.39 < out.elapsed < 60 / 3, out
    assert strict_problems(ai, pos) == []
    # The interrupted search must not poison the next move: the backend starts afresh.
    ai.cutoff = 0.3
    nxt = pos.play(nt.square_from_row_col(*ai.candidate_list[-1]))
    nxt = nxt.play(next(m for m in nxt.legal_moves()))
    if nxt.side == Color.BLACK and not nxt.must_pass():
        out = ck.judge_go(ai, nxt.to_cs303(), PATIENT)  # go ends by its own 0.3 s cutoff
        assert not out.timed_out and out.error is None
        assert strict_problems(ai, nxt) == []


def test_go_keeps_the_time_limit_and_improves_the_decision_as_it_searches():
    ai = AI(8, 1, 1, seed=2)  # cutoff 0.8 s of the 1 s time_out (see the constructor test)
    pos = find_position(lambda p: p.side == Color.WHITE and len(ck.expected_moves(p)) >= 8,
                        seed=6)
    # The judge's timer is further away than the platform's 1 s so that a busy machine cannot
    # make it fire: the test is that go ended by its own cutoff, which it used, and not later.
    # That this lands under 1 s on a quiet machine is othello-bench cs303's go figure.
    out = ck.judge_go(ai, pos.to_cs303(), 1.0 + SLACK)
    assert not out.timed_out and 0.79 < out.elapsed < 0.8 + SLACK, out
    assert strict_problems(ai, pos) == []
    assert ai.last_result.stopped_by == "time"
    best = nt.row_col(ai.last_result.best_move)
    assert ai.candidate_list[-1] == best


def test_tree_is_reused_across_the_opponents_move_and_passes():
    black, white = quick_ai(-1, iterations=2000), quick_ai(1, iterations=2000)
    pos = Position.start("reversed")
    for _ in range(3):
        ai = black if pos.side == Color.BLACK else white
        ck.judge_go(ai, pos.to_cs303(), PATIENT)
        pos = pos.play(nt.square_from_row_col(*ai.candidate_list[-1]))
    assert black.last_result.reused_fraction > 0  # black's second search kept part of its tree
    # moves_between finds the line, passes included, that the judge never reports.
    rng = random.Random(8)
    while True:
        game = ck.random_game(rng, Rules.REVERSED)
        moves = [_move(a, b) for a, b in zip(game, game[1:])]
        k = next((i for i, m in enumerate(moves) if m == PASS and i >= 2), None)
        if k is not None:
            break
    assert moves_between(game[k - 1], game[k + 2]) == moves[k - 1:k + 2]
    assert moves_between(game[k + 2], game[k - 1]) is None
    assert moves_between(game[k], game[k]) == []
    assert moves_between(Position.start("reversed"), game[-1]) is None  # too far apart


def _move(a: Position, b: Position) -> int:
    added = (b.black | b.white) & ~(a.black | a.white)
    return PASS if not added else added.bit_length() - 1


@pytest.mark.slow  # a whole judge game
def test_two_players_in_one_process_finish_a_judge_game():
    black, white = quick_ai(-1, seed=1), quick_ai(1, seed=2)
    rec = ck.play_judge_game(black, white, time_out=PATIENT)
    assert rec.ok, rec.problems
    assert rec.final.is_game_over() and len(rec.moves) >= 58
    assert black.backend is not white.backend
    assert black.backend.agent is not white.backend.agent


def test_backend_is_a_small_replaceable_object():
    b = InProcessBackend("uct:seed=5,memory=4", seed=1, memory_mib=64, iterations=50)
    assert b.agent.params["seed"] == 5 and b.agent.params["memory"] == 4  # the spec wins
    r = b.search(Position.start("reversed"), deadline=float("inf"))
    assert r.best_move in Position.start().legal_moves() and r.iterations == 50


def test_player_files_pass_the_platform_scan_and_parse_as_python_37():
    backend = CS303.parent / "backend.py"  # not uploaded; ai.py and player.py are
    for path in (CS303 / "ai.py", CS303 / "player.py", backend, CS303 / "__init__.py"):
        text = path.read_text()
        assert ck.scan_source(text) == [], path.name
        if path != backend:
            assert ck.syntax_problem(text) is None, path.name
    for path in (CS303 / "ai.py", backend):  # the judge's timer is a signal: no helper threads
        assert "threading" not in path.read_text()


def test_case_files_in_the_course_format():
    text = textwrap.dedent("""\
        # 2 is black, 1 white, 3 the expected moves
        ###############
        3 3
        12
        21
        ---------------
        2 3
        3
        ---------------
        3 2
        3
        ---------------
        4 5
        3
        ---------------
        5 4
        3
        ###############
        """)
    (case,) = ck.parse_case_file(text, Color.BLACK)
    assert case.expected == ck.expected_moves(case.position) == {(2, 3), (3, 2), (4, 5), (5, 4)}
    with pytest.raises(ValueError, match="digit 7"):
        ck.parse_case_file("0 0\n17\n", Color.BLACK)


BROKEN = {
    "forbidden": ("scan", "import os\n"),
    "decision_only": ("legal moves missing",
                      "        self.candidate_list.append(legal[0])\n"),
    "lists_not_tuples": ("tuples of ints",
                         "        self.candidate_list.extend([list(m) for m in legal])\n"
                         "        self.candidate_list.append(list(legal[0]))\n"),
    "appends_on_pass": ("must stay empty",
                        "        self.candidate_list.extend(legal + [(0, 0)])\n"),
    "too_slow": ("past time_out",
                 "        self.candidate_list.extend(legal + legal[:1])\n"
                 "        time.sleep(30)\n"),
}


@pytest.mark.parametrize("kind", list(BROKEN))
def test_checker_fails_broken_players(tmp_path, kind):
    expect, body = BROKEN[kind]
    head = "import os\n" if kind == "forbidden" else ""
    go = "" if kind == "forbidden" else body
    src = head + textwrap.dedent("""\
        import time
        import numpy as np
        from engine_server.game import Position, PASS
        from protocol import notation as nt


        class AI(object):
            def __init__(self, chessboard_size, color, time_out):
                self.color = color
                self.candidate_list = []

            def go(self, chessboard):
                self.candidate_list.clear()
                pos = Position.from_cs303(chessboard, self.color)
                legal = [nt.row_col(m) for m in pos.legal_moves() if m != PASS]
                if not legal and %r == "appends_on_pass":
                    self.candidate_list.append((0, 0))
                if not legal:
                    return
        """ % kind) + go
    f = tmp_path / f"{kind}.py"
    f.write_text(src)
    report = ck.run_check(f, time_out=0.3, per_colour=1)
    assert not report.ok
    failed = "\n".join(f"{i.title} {' '.join(i.detail)}" for i in report.items
                       if i.status == "FAIL")
    assert expect in failed, report.render()


@pytest.mark.slow  # the checker's judge games
def test_checker_cli_passes_the_ready_made_player():
    r = subprocess.run([sys.executable, "-m", "clients.cs303.cli", "check",
                        str(CS303 / "player.py"), "--time-out", "0.4", "--positions", "1"],
                       capture_output=True, text=True, env=ENV, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK:" in r.stdout and "[FAIL]" not in r.stdout
    assert "forced pass" in r.stdout and "empty board" in r.stdout
    r = subprocess.run([sys.executable, "-m", "clients.cs303.cli", "check", "no/such.py"],
                       capture_output=True, text=True, env=ENV, cwd=REPO, timeout=60)
    assert r.returncode == 2 and "no such file" in r.stderr


class ScriptedBackend:
    """A backend that reports a fixed script of moves, as a faulty remote engine might."""

    def __init__(self, script):
        self.script = script

    def search(self, position, deadline, progress=None):
        from engine_server.search.limits import SearchResult

        def result(move, final):
            return SearchResult(best_move=move, moves=[], pv=[], root_value=0.0, final=final)

        for move in self.script[:-1]:
            progress(result(move, False))
        return result(self.script[-1], True)

    def reset(self):
        pass


def test_a_backend_cannot_make_the_decision_illegal():
    d3, c4, f5, a1 = (nt.parse_move(t) for t in ("d3", "c4", "f5", "a1"))
    ai = AI(8, -1, 1, backend=ScriptedBackend([c4, a1, 99, f5, c4, f5, PASS]))
    pos = Position.start("reversed")
    ck.judge_go(ai, pos.to_cs303(), PATIENT)
    assert strict_problems(ai, pos) == []
    assert ai.candidate_list[4:][-3:] == [nt.row_col(f5), nt.row_col(c4), nt.row_col(f5)]
    assert d3 in pos.legal_moves()


def test_checker_and_referee_worker_share_one_judge_emulation(tmp_path):
    from clients.cs303 import judge
    from clients.match import cs303_worker

    assert ck.judge_go is judge.judge_go is cs303_worker.judge_go
    assert ck.load_ai_class is judge.load_ai_class is cs303_worker.load_ai_class
    assert ck.JudgeTimeout is judge.JudgeTimeout and issubclass(judge.JudgeTimeout, AssertionError)
    f = tmp_path / "odd.py"
    f.write_text(textwrap.dedent("""\
        class AI(object):
            def __init__(self, chessboard_size, color, time_out):
                self.candidate_list = []

            def go(self, chessboard):
                self.candidate_list.extend([(2, 3), "junk", (4, 5)])
                raise KeyError("student bug")
        """))
    ai = judge.load_ai_class(f)(8, -1, 1.0)
    out = judge.judge_go(ai, Position.start().to_cs303(), PATIENT)
    assert not out.timed_out and isinstance(out.exception, KeyError)
    assert "student bug" in out.error
    # What the worker sends the referee: pairs as lists, anything else as its repr.
    assert judge.read_candidates(ai) == [[2, 3], "'junk'", [4, 5]]


def test_checker_quiet_prints_only_what_fails_and_the_verdict(tmp_path, capsys):
    from clients.cs303.cli import main as cs303_main

    good = tmp_path / "good.py"
    good.write_text(LEGAL_MOVES + textwrap.dedent("""\
        class AI(object):
            def __init__(self, chessboard_size, color, time_out):
                self.color = color
                self.candidate_list = []

            def go(self, board):
                self.candidate_list.clear()
                self.candidate_list.extend(legal_moves(board, self.color))
                if self.candidate_list:
                    self.candidate_list.append(self.candidate_list[0])
        """))
    assert cs303_main(["check", str(good), "--quiet", "--time-out", "0.3",
                       "--positions", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: ") and out.count("\n") == 1, out  # the verdict alone
    bad = tmp_path / "bad.py"
    bad.write_text(textwrap.dedent("""\
        class AI(object):
            def __init__(self, chessboard_size, color, time_out):
                self.candidate_list = []

            def go(self, chessboard):
                self.candidate_list.clear()
                self.candidate_list.append([9, 9])
        """))
    assert cs303_main(["check", str(bad), "--quiet", "--time-out", "0.3",
                       "--positions", "0"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("FAILED: ") and "[PASS]" not in "\n".join(lines)
    assert any(line.startswith("  [FAIL] ") for line in lines)
    assert not lines[0].startswith("CS303 usability check")
