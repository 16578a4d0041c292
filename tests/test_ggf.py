"""GGF records: all of docs/reference/protocols.md section 2, explicit and implicit passes."""

import pytest

from engine_server.game import PASS, Color, Game, Position, Rules, ggf, parse_move

S = "8 ---------------------------O*------*O--------------------------- *"
P8 = "B[D3]W[C3]B[B3]W[B2]B[F5]W[A3]B[A1]W[C1]"


def rec(moves="", extra="TI[0]TY[8]"):
    return f"(;GM[Othello]PC[t]PB[a]PW[b]RE[?]{extra}BO[{S}]{moves};)"


def test_p8_leaves_black_to_pass_with_white_moves_e3_f6():
    g = ggf.parse(rec(P8)).game()
    assert g.position.side == Color.BLACK and g.position.must_pass()
    assert sorted(g.position.play(PASS).legal_moves()) == sorted(
        [parse_move("e3"), parse_move("f6")])


def test_explicit_pass_spellings_and_ggs_style_give_the_same_position():
    a = ggf.parse(rec(P8 + "B[PA]W[E3]")).game().position
    b = ggf.parse(rec(P8 + "B[pass]W[E3]")).game().position
    rows = " ".join(S[2:66][i:i + 8] for i in range(0, 64, 8))
    ggs_moves = "".join(f"{c}[{m.lower()}//0.01]" for c, m in
                        [(t[0], t[2:4]) for t in P8.replace("]", "] ").split()])
    ggs = (f"1 (;GM[Othello]PC[GGS/os]DT[2003.12.15_12:33:18.MST]PB[x]PW[y]RB[2197.01]"
           f"RW[2199.72]TI[05:00//02:00]TY[8r4]RE[+0.000]BO[8 {rows} *]{ggs_moves}"
           f"B[pass]W[e3//0.01];)")
    c = ggf.parse(ggs).game().position
    d = ggf.parse(rec(P8 + "W[E3]")).game().position  # Edax style: the pass left out
    assert a == b == c == d
    assert a.side == Color.BLACK and a.white >> parse_move("e3") & 1


def test_move_fields_with_eval_and_time():
    r = ggf.parse(rec("B[F5/1.23]W[d6//3.215]B[C3/-1.00/0.5]"))
    assert [m.eval for m in r.moves] == [1.23, None, -1.0]
    assert [m.time for m in r.moves] == [None, 3.215, 0.5]
    assert r.game().moves == [parse_move(x) for x in ("f5", "d6", "c3")]


def test_time_control_and_reversed_match_type():
    r = ggf.parse(rec(extra="TI[15:00/5]TY[8a]"))
    assert r.rules == Rules.REVERSED
    tc = r.time_control()
    assert tc.main == 900 and tc.increment == 5 and tc.grace == 120
    assert ggf.parse_time_control("1:00:00//02:00").main == 3600
    assert ggf.parse_time_control("05:00//02:00").grace == 120


def test_round_trip_to_text():
    g = Game.from_moves(["f5", "d6", "c3"])
    r = ggf.GgfRecord(start=g.start, moves=[ggf.MoveItem(m) for m in g.moves])
    again = ggf.parse(r.to_text())
    assert again.game().position == g.position
    rv = ggf.GgfRecord(start=Position.start("reversed"))
    assert ggf.parse(rv.to_text()).rules == Rules.REVERSED


@pytest.mark.parametrize("bad", [
    "", "(;GM[Othello]BO[" + S + "];", "(;GM[Chess]BO[" + S + "];)",
    "(;GM[Othello]XX[1]BO[" + S + "];)", "(;GM[Othello];)",
    "(;GM[Othello]TY[10]BO[" + S + "];)", "(;GM[Othello]BO[" + S + "]B[A1];)",
    "(;GM[Othello]BO[" + S + "]W[F5];)", "(;GM[Othello]BO[" + S + "]B[Z9];)",
    "(;GM[Othello]BO[8 ---;)",
])
def test_malformed_records_are_rejected_with_a_reason(bad):
    with pytest.raises(ggf.GgfError):
        ggf.parse(bad)
