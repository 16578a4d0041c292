"""GTP transcripts (docs/reference/protocols.md section 4, items 13-18) and GTP behaviour."""

import time

import pytest

from engine_server.game import Game, parse_move

from .loadsafe import SLACK, wait_until
from .protocol_harness import Harness

QUARRY = ["play black d3", "play white c3", "play black b3", "play white b2",
          "play black f5", "play white a3", "play black a1", "play white c1"]


def test_13_basics(gtp):
    assert gtp.send("protocol_version") == ["= 2", ""]
    assert gtp.send("7 name") == ["=7 OthelloPy", ""]
    out = gtp.send("list_commands")
    names = [out[0][2:]] + out[1:-1]
    for c in ("boardsize", "clear_board", "play", "genmove", "undo", "time_settings",
              "time_left", "list_games", "set_game", "othello-agent", "othello-rules"):
        assert c in names
    assert out[-1] == "" and all(" " not in n for n in names)
    assert gtp.send("known_command genmove") == ["= true", ""]
    assert gtp.send("known_command frob") == ["= false", ""]
    assert gtp.send("frobnicate") == ["? unknown command", ""]
    assert gtp.send("12 frobnicate") == ["?12 unknown command", ""]


def test_14_board_commands(gtp):
    assert gtp.send("list_games") == ["= Othello", ""]
    assert gtp.send("set_game Othello") == ["= ", ""]
    assert gtp.send("boardsize 19") == ["? unacceptable size 19: Othello here is 8x8 only", ""]
    assert gtp.send("boardsize 8") == ["= ", ""]
    assert gtp.send("clear_board") == ["= ", ""]
    assert gtp.send("undo") == ["? cannot undo: no move has been played", ""]
    assert gtp.send("play black a1") == ["? illegal move: A1 flips nothing", ""]
    assert gtp.send("play white c4") == [
        "? illegal move: white cannot move now: it is black's turn", ""]
    assert gtp.send("play black pass") == [
        "? illegal move: black cannot pass: it has a move (D3 C4 F5 E6)", ""]
    assert gtp.send("play B D3") == ["= ", ""]
    assert gtp.send("play white d3") == ["? illegal move: D3 is occupied", ""]
    assert gtp.send("play purple e3") == ["? invalid color 'purple': black, white, b or w", ""]
    assert gtp.send("play white z9") == ["? invalid vertex 'z9': a1..h8 or pass", ""]
    assert gtp.send("genmove black") == [
        "? wrong color: it is white's turn, and white has a move", ""]
    assert gtp.session.game.moves == [parse_move("d3")]


def test_15_quarry_implicit_pass(gtp):
    gtp.send("clear_board", *QUARRY)
    assert gtp.send("reg_genmove black")[0] == "= pass"
    out = gtp.send("genmove white")
    assert out[0] in ("= E3", "= F6")
    moves = gtp.session.game.moves
    assert moves[-2] == 64  # the inserted pass
    gtp.send("undo")  # takes back white's move and the inserted pass
    assert len(gtp.session.game.moves) == 8
    assert gtp.send("genmove black") == ["= pass", ""]


def test_reg_genmove_for_the_other_colour_searches_after_the_pass_and_changes_nothing(gtp):
    gtp.send("clear_board", *QUARRY)  # black to move, and black must pass
    assert gtp.send("reg_genmove white")[0] in ("= E3", "= F6")
    assert len(gtp.session.game.moves) == 8 and not gtp.handler.inserted
    assert gtp.send("genmove white")[0] in ("= E3", "= F6")
    assert gtp.session.game.moves[-2] == 64


def test_quarry_play_for_the_other_colour_inserts_the_pass(gtp):
    gtp.send("clear_board", *QUARRY)
    assert gtp.send("play white e3") == ["= ", ""]
    assert gtp.session.game.moves[-2:] == [64, parse_move("e3")]


def test_16_time_commands(gtp):
    for cmd in ("time_settings 300 0 0", "time_left black 120 0", "time_settings 0 1 0",
                "kata-time_settings fischer 300 5", "kgs-time_settings byoyomi 60 10 3",
                "kgs-time_settings canadian 60 30 10", "kgs-time_settings none"):
        assert gtp.send(cmd) == ["= ", ""], cmd
    assert gtp.send("time_settings x")[0].startswith("? ")
    assert gtp.send("kgs-time_settings fischer 1 2")[0].startswith("? ")


def test_time_left_drives_genmove_budget(gtp):
    gtp.session.set_agent("uct:iterations=100000000")
    gtp.send("time_settings 300 0 0", "time_left black 6 0")
    t0 = time.monotonic()
    out = gtp.send("genmove black")
    dt = time.monotonic() - t0
    assert out[0][2:] in ("D3", "C4", "F5", "E6")
    # 6 s over ~32 of our moves, less the lag buffer: well under a second, more than nothing
    (job,) = gtp.jobs
    budget = job.limits.deadline - gtp.received
    assert 0.05 < budget < 0.5, budget
    # and that budget (10^8 iterations otherwise) ended the search, not before it
    assert job.result.stopped_by == "time" and budget <= dt < budget + SLACK, (budget, dt)


@pytest.mark.parametrize("overhead", [None, 0.05, 0.4])
def test_the_move_overhead_is_kept_back_of_a_per_move_limit(overhead):
    # time_settings 0 1 1 is how a referee says "1 s a move" (Canadian, one stone a period);
    # the engine's budget is that second less the overhead, 0.15 s unless the option says
    from engine_server.search.timeman import DEFAULT_LAG_BUFFER

    opts = {} if overhead is None else {"move_overhead": overhead}
    h = Harness("gtp", agent="uct:iterations=100000000", **opts)
    try:
        h.send("time_settings 0 1 1", "genmove black")
        (job,) = h.jobs
        expected = 1.0 - (DEFAULT_LAG_BUFFER if overhead is None else overhead)
        assert job.limits.deadline - h.received == pytest.approx(expected, abs=1e-6)
    finally:
        h.close()


def test_move_time_cap_always_wins(gtp):
    gtp.session.set_agent("uct:iterations=100000000")
    gtp.session.options.move_time = 0.3
    gtp.send("time_settings 3000 0 0")
    t0 = time.monotonic()
    gtp.send("genmove black")
    dt = time.monotonic() - t0
    (job,) = gtp.jobs
    assert job.limits.deadline - gtp.received == pytest.approx(0.3)  # not 3000 s / ~32 moves
    assert job.result.stopped_by == "time" and 0.28 < dt < 0.3 + SLACK, dt


def test_17_analysis_streams_until_any_line(gtp):
    gtp.session.set_agent("uct:iterations=100000000")
    out = gtp.send("lz-analyze 5")
    assert out == ["="]
    lines = gtp.wait_for(lambda ls: any(l.startswith("info move ") for l in ls))
    first = next(l for l in lines if l.startswith("info move "))
    f = first.split()
    assert f[3] == "visits" and f[5] == "winrate" and int(f[6]) >= 0 and "pv" in f
    n_before = len(gtp.lines)
    out = gtp.send("name")
    assert out[0] == "" and out[1:] == ["= OthelloPy", ""]
    assert not gtp.session.busy  # the analysis was stopped before the answer...
    time.sleep(0.2)
    assert len(gtp.lines) == n_before + 3  # ...and nothing more came from it
    out = gtp.send("3 kata-analyze b interval 5")
    assert out == ["=3"]
    lines = gtp.wait_for(lambda ls: any(l.startswith("info move ") and "scoreLead" in l
                                        for l in ls))
    kinfo = next(l for l in lines if "scoreLead" in l).split()
    float(kinfo[kinfo.index("winrate") + 1])
    assert gtp.send("") == [""]


def test_18_genmove_analyze_plays_the_move(gtp):
    out = gtp.send("lz-genmove_analyze b 5")
    assert out[0] == "=" and out[-1] == "" and out[-2].startswith("play ")
    mv = out[-2].split()[1]
    assert gtp.session.game.moves == [parse_move(mv)]
    assert any(l.startswith("info move ") for l in out[1:-2])


def test_final_score_and_rules_extension(gtp):
    gtp.send("clear_board")
    assert gtp.send("final_score") == ["= 0", ""]
    assert gtp.send("othello-rules reversed") == ["= ", ""]
    assert gtp.send("othello-rules") == ["= reversed", ""]
    assert gtp.send("othello-rules chess")[0].startswith("? unknown rules")
    gtp.send("play black f5")
    # Mid-game, too far from the end to solve: the disc difference as it stands (4 black,
    # 1 white: under reversed rules white leads by 3); no empty square goes to anyone.
    assert gtp.send("final_score") == ["= W+3", ""]


SHORT_GAME = ["d3", "c3", "b3", "d2", "e1", "d6", "d7", "e3", "f4"]  # over after 9 moves


def test_final_score_mid_game_is_the_board_as_it_stands(gtp):
    gtp.send("clear_board", "play black f5", "play white d6", "play black c3", "play white d3",
             "play black c4")
    b, w = gtp.session.position.discs()
    assert (b, w) == (6, 3) and gtp.session.position.empties > 24
    assert gtp.send("final_score") == ["= B+3", ""]


def test_a_finished_game_answers_pass_for_both_colours_and_shows_the_result(gtp):
    gtp.send("clear_board")
    colour = "black"
    for mv in SHORT_GAME:
        assert gtp.send(f"play {colour} {mv}") == ["= ", ""]
        colour = "white" if colour == "black" else "black"
    pos = gtp.session.position
    assert pos.is_game_over()
    assert gtp.send("genmove black") == ["= pass", ""]
    assert gtp.send("genmove white") == ["= pass", ""]
    assert gtp.send("reg_genmove white") == ["= pass", ""]
    assert gtp.send("play white pass") == ["= ", ""]  # the other engine's pass, echoed
    assert gtp.send("play black c4") == ["? illegal move: the game is over", ""]
    assert gtp.session.game.moves == [parse_move(m) for m in SHORT_GAME]  # nothing played
    board = gtp.send("showboard")
    assert "game over" in board[-2] and "to move" not in board[-2]
    expect = pos.black_score()
    assert gtp.send("final_score") == [f"= B+{expect}" if expect > 0 else f"= W+{-expect}", ""]


@pytest.mark.slow  # a whole game
def test_two_engines_play_to_the_end_in_a_plain_twogtp_loop():
    """What gogui-twogtp does: ask the side to move, tell the other, stop after two passes."""
    engines = {"black": Harness("gtp", agent="ab:depth=1"),
               "white": Harness("gtp", agent="uct:iterations=50")}
    try:
        for e in engines.values():
            assert e.send("clear_board") == ["= ", ""]
        colour, passes, plies = "black", 0, 0
        while passes < 2:
            other = "white" if colour == "black" else "black"
            out = engines[colour].send(f"genmove {colour}")
            assert out[0].startswith("= ") and out[-1] == "", out
            move = out[0][2:]
            assert engines[other].send(f"play {colour} {move}") == ["= ", ""]
            passes = passes + 1 if move == "pass" else 0
            colour, plies = other, plies + 1
            assert plies < 130
        a, b = engines["black"].session.game, engines["white"].session.game
        assert a.is_over() and a.position == b.position
        scores = {e.send("final_score")[0] for e in engines.values()}
        s = a.result().black_score
        assert scores == {f"= B+{s}" if s > 0 else f"= W+{-s}" if s < 0 else "= 0"}
    finally:
        for e in engines.values():
            e.close()


def test_agent_extension_reports_errors_and_keeps_state(gtp):
    gtp.send("play black f5")
    assert gtp.send("othello-agent ocba:n0=3") == ["= ", ""]
    assert gtp.send("othello-agent") == ["= ocba:n0=3", ""]
    out = gtp.send("othello-agent ocba:zz=1")
    assert out[0].startswith("? ocba: unknown parameter 'zz'")
    assert gtp.send("othello-agent") == ["= ocba:n0=3", ""]
    assert gtp.session.game.moves == [parse_move("f5")]


def test_showboard_and_undo(gtp):
    gtp.send("play black f5", "play white d6")
    out = gtp.send("showboard")
    assert out[0] == "= " and "a b c d e f g h" in out[1] and out[-1] == ""
    gtp.send("undo")
    assert gtp.session.position == Game.from_moves(["f5"]).position


def test_comments_ids_and_blank_lines(gtp):
    assert gtp.send("# just a comment", "   ") == []
    assert gtp.send("5 protocol_version # trailing") == ["=5 2", ""]


def test_tree_is_kept_between_genmove_and_play(gtp):
    gtp.session.set_agent("uct:iterations=3000")
    gtp.send("genmove black")
    reply = gtp.session.position.legal_moves()[0]
    from engine_server.game import square_name

    gtp.send(f"play white {square_name(reply)}")
    gtp.send("genmove black")
    assert gtp.session.last_result.reused_fraction > 0


def test_genmove_is_recorded_and_reg_genmove_is_not(gtp):
    reply = gtp.send("genmove black")[0][2:]
    first = gtp.session.last_result
    assert first is not None and first.best_name.upper() == reply
    gtp.send("reg_genmove white")
    assert gtp.session.last_result is first


def test_pondering_searches_on_the_opponents_time_and_is_stopped_by_the_next_command():
    h = Harness("gtp", agent="uct:iterations=2000", ponder=True, ponder_limit=30.0)
    try:
        h.send("genmove black")
        job = h.session.current_job
        assert job is not None and job.kind == "ponder"
        # a tree worth reusing, several times the 2000 iterations of the genmove (a sleep would
        # leave it to the machine's load how big it gets)
        wait_until(lambda: h.session.agent.tree.nodes >= 20_000, what="the ponder grew a tree")
        assert h.session.busy
        opp = h.session.position.legal_moves()[0]
        from engine_server.game import square_name

        t0 = time.monotonic()
        assert h.send(f"play white {square_name(opp)}") == ["= ", ""]
        # the play ended the 30 s ponder before answering (how fast a stop lands is
        # othello-bench search's max_stop_latency_s)
        assert not job.thread.is_alive()
        assert time.monotonic() - t0 < SLACK
        # the tree built while pondering is reused by the next search
        h.send("genmove black")
        assert h.session.last_result.reused_fraction > 0
        assert sum(m.visits for m in h.session.last_result.moves) > 2000
    finally:
        h.close()


def test_setboard_extension_starts_from_any_position(gtp):
    pos = Game.from_moves(["f5", "d6", "c3"]).position
    assert gtp.send(f"othello-setboard {pos.to_string()} O") == ["= ", ""]
    assert gtp.session.position == pos and gtp.session.game.moves == []
    assert gtp.send("othello-setboard XXX O")[0].startswith("? bad board")
    assert gtp.session.position == pos


def test_analysis_of_a_depth_first_search_names_its_depth_and_selectivity():
    h = Harness("gtp", agent="ab:selectivity=88,threads=1,book=off")
    try:
        out = h.send("play black f5", "play white d6", "kata-genmove_analyze b 5")
        info = [l for l in out if l.startswith("info ")]
        assert info and all(" selectivity 88 " in l and " depth " in l for l in info)
    finally:
        h.close()


def test_help_is_list_commands(gtp):
    listed = gtp.send("list_commands")
    assert gtp.send("help") == listed and "help" in "\n".join(listed)
    assert gtp.send("5 help")[0].startswith("=5 ")


def test_gogui_rules_commands_describe_the_game_as_gogui_reads_them(gtp):
    """docs/reference/protocols.md 3.8: GoGui puts row 1 at the bottom, tests moves in upper
    case, reads "pass" when the side to move has none and an empty answer as the end."""
    assert gtp.send("gogui-rules_game_id") == ["= Othello", ""]
    assert gtp.send("gogui-rules_board_size") == ["= 8", ""]
    assert gtp.send("gogui-rules_side_to_move") == ["= black", ""]
    assert gtp.send("gogui-rules_legal_moves") == ["= D3 C4 F5 E6", ""]
    assert gtp.send("play black d3") == ["= ", ""]
    board = gtp.send("gogui-rules_board")
    assert board[0].startswith("= ") and board[-1] == "" and len(board) == 9
    rows = [board[0][2:]] + board[1:8]
    assert rows[8 - 3] == ". . . X . . . ."            # row 3, printed sixth from the top
    assert rows[8 - 4] == ". . . X X . . ." and rows[8 - 5] == ". . . X O . . ."
    assert gtp.send("gogui-rules_side_to_move") == ["= white", ""]
    assert gtp.send("gogui-rules_final_result") == ["= Game is not over yet.", ""]
    gtp.send("othello-setboard -XO" + "X" * 61 + " X")   # black must pass, white has a1
    assert gtp.send("gogui-rules_legal_moves") == ["= pass", ""]
    gtp.send("othello-setboard " + "X" * 63 + "O X")    # full board: over
    assert gtp.send("gogui-rules_legal_moves") == ["= ", ""]
    assert gtp.send("gogui-rules_final_result") == ["= Black wins 63-1.", ""]


def test_at_the_end_of_input_genmoves_are_answered_and_an_analysis_is_closed():
    import subprocess
    import sys
    from pathlib import Path

    p = subprocess.run([sys.executable, "-m", "engine_server", "--no-warmup", "--agent",
                        "uct:iterations=300"], input="genmove b\ngenmove w\nlz-analyze 10\n",
                       capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).resolve().parent.parent)
    assert p.returncode == 0, p.stderr
    blocks = p.stdout.split("\n\n")
    assert [b.split(" ")[0] for b in blocks[:3]] == ["=", "=", "="], p.stdout
    assert p.stdout.endswith("\n\n")  # the analysis's response ends with its blank line


def test_every_reply_writes_moves_in_upper_case_and_input_is_read_in_either(gtp):
    """genmove, the analyses, the rules extension and the errors name squares one way: upper
    case, as GoGui and GTP's vertices; play reads both cases."""
    assert gtp.send("play black d3") == ["= ", ""]
    assert gtp.send("play WHITE C5") == ["= ", ""]
    legal = gtp.send("gogui-rules_legal_moves")[0][2:].split()
    assert legal and all(m == m.upper() for m in legal)
    move = gtp.send("genmove black")[0][2:]
    assert move == move.upper() and move in legal
    out = gtp.send("lz-genmove_analyze white 10")
    info = [l for l in out if l.startswith("info move ")]
    assert info and out[-2].startswith("play ")
    words = " ".join(info).split() + [out[-2].split()[1]]
    squares = [w for w in words if len(w) == 2 and w[0].isalpha() and w[1].isdigit()]
    assert squares and all(w == w.upper() for w in squares), squares
    assert gtp.send("play black a1")[0].startswith("? illegal move: A1 ")
