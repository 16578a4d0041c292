"""The wire formats (``protocol/``): every line the engine writes reads back, with the module
its clients read it with, as what the engine meant.

The engine's handlers run over a real session (``Harness``); the referee, the remote client and
the benchmarks read through ``protocol.gtp``, ``protocol.nboard``, ``protocol.ggf`` and
``protocol.zmq``, so a reading that fails here fails for them.
"""

from __future__ import annotations

import pytest

from engine_server.game import PASS, Color, Game, Position, ggf, parse_move
from protocol import ggf as ggf_text
from protocol import gtp, nboard, notation, web, zmq

from .protocol_harness import Harness

START = "8 ---------------------------O*------*O--------------------------- *"


def _responses(lines: list[str]) -> list[gtp.Response]:
    """GTP output split at the blank lines that end responses, each read by protocol.gtp."""
    out, current = [], []
    for line in lines:
        if line == "":
            out.append(gtp.parse_response(current))
            current = []
        else:
            current.append(line)
    assert current == [], f"a response was left open: {current}"
    return out


# --- GTP -----------------------------------------------------------------------------------------

def test_every_gtp_response_of_a_game_reads_back_with_its_id_and_outcome():
    h = Harness("gtp", agent="ab:depth=2,book=off")
    try:
        sent = ["1 protocol_version", "2 boardsize 8", "3 clear_board", "4 play black d3",
                "5 genmove white", "6 frobnicate", "7 play black a1", "8 showboard",
                "9 final_score", "10 list_commands"]
        out = h.send(*sent)
        h.wait()
        responses = _responses(out)
        assert [r.id for r in responses] == [str(i) for i in range(1, 11)]
        assert [r.ok for r in responses] == [True] * 5 + [False, False] + [True] * 3
        reply = responses[4].text
        assert parse_move(reply) in Game.from_moves([parse_move("d3")]).position.legal_moves()
        assert responses[5].text == "unknown command"
        assert "\n" in responses[7].text and "\n" in responses[9].text  # multi-line texts
    finally:
        h.close()


def test_the_analysis_stream_reads_as_a_head_info_lines_and_the_move():
    h = Harness("gtp", agent="uct:iterations=200")
    try:
        out = h.send("4 lz-genmove_analyze b 5")
        lines = h.wait_for(lambda ls: "" in ls[len(ls) - 1:] and any(
            x.startswith("play ") for x in ls))
        assert gtp.is_response_head(lines[0]) and lines[0] == gtp.stream_head("4")
        assert out[0] == lines[0]
        infos = [x for x in lines if x.startswith("info ")]
        assert infos, lines
        for info in infos:
            words = info.split()
            assert words[1] == "move" and parse_move(words[2]) in Position.start().legal_moves()
            assert words[3] == "visits" and int(words[4]) >= 0
        play = next(x for x in lines if x.startswith("play "))
        assert parse_move(play.split()[1]) in Position.start().legal_moves()
    finally:
        h.close()


@pytest.mark.parametrize("line, expected", [
    ("genmove b", gtp.Command("", "genmove", ["b"])),
    ("12 play black d3 # a comment", gtp.Command("12", "play", ["black", "d3"])),
    ("\tname\r", gtp.Command("", "name", [])),
    ("   ", None),
    ("# only a comment", None),
])
def test_a_command_line_splits_into_id_name_and_arguments(line, expected):
    assert gtp.parse_command(line) == expected


def test_an_id_without_a_command_is_refused_with_that_id():
    with pytest.raises(gtp.GtpSyntaxError) as e:
        gtp.parse_command("17")
    assert e.value.id == "17" and str(e.value) == "missing command"


@pytest.mark.parametrize("ok, text", [(True, ""), (True, "d3"), (False, "illegal move"),
                                      (True, "A B C D\n1 - - -\n2 - - -")])
@pytest.mark.parametrize("cid", ["", "42"])
def test_a_written_response_reads_back_as_itself(ok, text, cid):
    lines = gtp.response_lines(cid, ok, text)
    assert lines[-1] == "" and "" not in lines[:-1] or text == ""
    assert gtp.parse_response(lines[:-1]) == gtp.Response(ok, text, cid)


# --- NBoard --------------------------------------------------------------------------------------

def test_every_nboard_line_of_a_hint_and_a_go_reads_back():
    h = Harness("nboard", agent="ab:book=off")
    try:
        game = f"(;GM[Othello]PC[x]PB[a]PW[b]RE[?]TI[0]TY[8]BO[{START}]B[F5];)"
        h.send("nboard 2", "set depth 4", f"set game {game}", "hint 3")
        h.wait_for(lambda ls: any(x.startswith("nodestats") for x in ls))
        h.send("go")
        lines = h.wait_for(lambda ls: any(nboard.is_move_line(x) for x in ls))
        pos = Position.start().play(parse_move("f5"))
        hints = [nboard.parse_hint_line(x) for x in lines if x.startswith(("search ", "book "))]
        assert hints and all(x.kind == "search" for x in hints)
        for hint in hints:  # a round per finished iteration, the last at the set depth
            assert hint.pv[0] in pos.legal_moves()
            assert 1 <= int(hint.depth.split("@")[0]) <= 4
        assert hints[-1].depth.split("@")[0] == "4"
        move = nboard.parse_move_line(next(x for x in lines if nboard.is_move_line(x)))
        assert move.move in pos.legal_moves()
        assert move.eval is not None and move.time is not None and move.time >= 0
        assert nboard.parse_myname(lines[0]) == h.session.options.name
        assert nboard.status_line() in lines
    finally:
        h.close()


def test_book_lines_read_back_with_games_and_depth():
    line = nboard.book_line([parse_move("f5"), parse_move("d6")], 0.5, 1200, 8)
    assert line == "book F5-D6 0.50 1200 8"
    assert nboard.parse_hint_line(line) == nboard.HintLine(
        "book", (parse_move("f5"), parse_move("d6")), 0.5, "8", 1200)


def test_a_value_that_rounds_to_zero_is_written_without_a_minus():
    f5 = parse_move("f5")
    assert nboard.move_line(f5, -0.001, 0.5) == "=== F5/0.00/0.500"
    assert nboard.search_line([f5], -0.0, "12") == "search F5 0.00 0 12"
    assert nboard.book_line([f5], -0.004, 10, 8) == "book F5 0.00 10 8"
    assert nboard.analysis_line(3, -0.0) == "analysis 3 0.00"
    assert ggf_text.MoveItem(f5, -0.001, 1.0).text() == "F5/0.00/1"


@pytest.mark.parametrize("exact, wld, depth, sel, token", [
    (True, False, 20, 100, "100%"), (False, True, 20, 100, "100%W"),
    (False, False, 22, 93, "22@93%"), (False, False, 12, 100, "12"),
])
def test_depth_tokens_are_written_as_edax_and_nboard_read_them(exact, wld, depth, sel, token):
    assert nboard.depth_token(exact, wld, depth, sel) == token
    line = nboard.search_line([parse_move("c4"), PASS], -1.25, token)
    assert nboard.parse_hint_line(line) == nboard.HintLine(
        "search", (parse_move("c4"), PASS), -1.25, token)


@pytest.mark.parametrize("line", ["=== F5/1.23/0.120", "=== F5 1.23 0.120", "=== PA"])
def test_move_lines_read_in_the_forms_engines_write(line):
    item = nboard.parse_move_line(line)
    assert item.move in (parse_move("f5"), PASS)


@pytest.mark.parametrize("line", ["== F5", "=== Z9/1", "=== F5/x", "search F5 1 0 4"])
def test_a_bad_move_line_is_refused_by_name(line):
    with pytest.raises(ggf_text.GgfError):
        nboard.parse_move_line(line)


def test_a_written_move_line_reads_back_as_its_move_eval_and_time():
    item = nboard.parse_move_line(nboard.move_line(parse_move("h8"), -3.5, 0.25))
    assert (item.move, item.eval, item.time) == (parse_move("h8"), -3.5, 0.25)


# --- GGF -----------------------------------------------------------------------------------------

def test_a_record_written_by_the_engine_reads_back_tag_for_tag_and_move_for_move():
    game = Game.from_moves([parse_move(m) for m in ("f5", "d6", "c3", "d3", "c4")])
    items = [ggf.MoveItem(m, 0.5 * i, i / 8) for i, m in enumerate(game.moves)]
    record = ggf.GgfRecord(start=game.start, moves=items,
                           tags={"PB": "black", "PW": "white", "TI": "05:00"})
    text = record.to_text()
    raw = ggf_text.read_record(text)
    assert raw.tags["PB"] == "black" and raw.tags["TI"] == "05:00" and raw.tags["TY"] == "8"
    assert raw.tags["BO"] == game.start.to_ggf()
    read = [ggf_text.parse_move_item(v) for _, v in raw.entries]
    assert [(m.move, m.eval, m.time) for m in read] == [(m.move, m.eval, m.time) for m in items]
    assert [t for t, _ in raw.entries] == ["B", "W", "B", "W", "B"]
    again = ggf.parse(text)
    assert again.game().moves == game.moves and again.to_text() == text


def test_a_reversed_record_says_so_in_its_match_type():
    start = Position.start(rules="reversed")
    text = ggf.GgfRecord(start=start).to_text()
    assert "TY[8a]" in text and ggf.parse(text).rules == start.rules


def test_time_controls_read_back_to_the_second():
    for tc in (ggf_text.TimeControl(300, 0, 120), ggf_text.TimeControl(0.3, 0.3, 1),
               ggf_text.TimeControl(3600, 5, 0)):
        assert ggf_text.parse_time_control(tc.text()) == tc


# --- ZeroMQ frames -------------------------------------------------------------------------------

def test_zmq_requests_read_back_with_their_number_and_line():
    req = zmq.parse_request(zmq.request_frames(7, "genmove b"))
    assert req == zmq.Request(False, 7, b"genmove b", len(b"genmove b"))
    assert zmq.parse_request([b"", b"name"]) == zmq.Request(True, 0, b"name", 4)  # REQ socket
    assert zmq.parse_request([b"x1", b"name"]).seq is None
    assert zmq.parse_request([b"1" * 19, b"name"]).seq is None
    malformed = zmq.parse_request([b"1", b"a", b"bc"])
    assert malformed.line is None and malformed.size == 4


def test_zmq_replies_read_back_and_bare_replies_carry_no_number():
    assert zmq.parse_reply(zmq.reply_frames(7, "= d3")) == (7, "= d3")
    assert zmq.reply_frames(None, "") == [b""]
    with pytest.raises(ValueError):
        zmq.parse_reply([b"= d3"])


# --- notation ------------------------------------------------------------------------------------

def test_move_text_reads_back_in_both_cases():
    for sq in [*range(64), PASS]:
        assert parse_move(notation.move_text(sq)) == sq
        assert parse_move(notation.move_text(sq, upper=False)) == sq
    assert Color.BLACK == notation.BLACK and PASS == notation.PASS


# --- the web page's messages ---------------------------------------------------------------------

def test_every_message_of_a_web_game_reads_back_and_has_a_known_type():
    from .test_web_protocol import WebHarness

    h = WebHarness(agent="ab:depth=2,book=off")
    try:
        h.send_raw(web.encode({"type": "new", "black": "human", "white": "ab:depth=2,book=off",
                               "id": 1}))
        h.send_raw(web.encode({"type": "move", "square": "f5", "id": "two"}))
        h.wait_for(lambda m: m["type"] == "move" and m.get("color") == "white")
        h.settled()
        h.send_raw(web.encode({"type": "export"}))
        h.send_raw(web.encode({"type": "frobnicate", "id": 3}))
        with h._lock:
            messages = list(h.messages)
        assert {m["type"] for m in messages} >= {"welcome", "state", "move", "record", "error"}
        for m in messages:
            assert m["type"] in web.REPLY_TYPES
            assert web.decode(web.encode(m), 1 << 20) == m
        state = next(m for m in reversed(messages) if m["type"] == "state")
        pos = Game.from_moves([parse_move(x) for x in state["moves"]]).position
        assert state["board"] == web.board_text(pos.black, pos.white)
        record = next(m for m in messages if m["type"] == "record")
        assert [m.move for m in ggf.parse(record["ggf"]).moves if m.move != PASS] == [
            parse_move(x) for x in web.move_tokens(record["moves"])]
        unknown = next(m for m in messages if m.get("id") == 3)
        assert unknown["type"] == "error" and "frobnicate" in unknown["message"]
    finally:
        h.close()


@pytest.mark.parametrize("raw, says", [
    (b"\xff\xfe", "not UTF-8"), ("{", "malformed JSON"), ("[" * 100000, "nested too deeply"),
    ("x" * 65, "over this server's limit"),
])
def test_a_message_that_cannot_be_read_says_why(raw, says):
    with pytest.raises(web.MessageError, match=says):
        web.decode(raw, 64 if says.startswith("over") else 1 << 20)


def test_move_lists_cut_into_moves_in_any_of_their_forms():
    assert web.move_tokens("F5d6, c3-PASS pa  e6") == ["f5", "d6", "c3", "pass", "pa", "e6"]
    assert web.move_tokens("f5 z9") == ["f5", "z", "9"]
    assert [web.message_id({"id": x}) for x in (1, "a", True, None, 1.5)] == [
        1, "a", None, None, None]
