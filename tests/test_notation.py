"""Every conversion on asymmetric positions (the start position would hide x/y swaps)."""

import numpy as np
import pytest

from engine_server.game import PASS, Color, Game, Position, parse_move, square_name
from protocol import notation as nt

# After f5 d6 c3: black discs on c3, d4?  Checked square by square below.
ASYM = Game.from_moves(["f5", "d6", "c3"]).position


def test_square_names_follow_a1_top_left_row_major():
    assert parse_move("a1") == 0 and parse_move("h1") == 7
    assert parse_move("a8") == 56 and parse_move("H8") == 63
    assert parse_move("d3") == 3 + 8 * 2
    for sq in range(64):
        assert parse_move(square_name(sq)) == sq
    for p in ("pass", "PA", "pa", "Pass"):
        assert parse_move(p) == PASS
    assert square_name(PASS) == "pass"
    for bad in ("i1", "a9", "a0", "", "d33", "resign"):
        with pytest.raises(nt.NotationError):
            parse_move(bad)


def test_asymmetric_position_contents():
    # f5 (black) flips e5; d6 (white) flips d5; c3 (black) flips d4.
    s = ASYM.to_string()
    assert s[parse_move("c3")] == "X" and s[parse_move("d4")] == "X"
    assert s[parse_move("d6")] == "O" and s[parse_move("d5")] == "O"
    assert s[parse_move("f5")] == "X" and s[parse_move("e5")] == "X"
    assert ASYM.side == Color.WHITE


def test_board_string_round_trip_and_ffo_orientation():
    assert Position.from_string(ASYM.to_string(), "O") == ASYM
    # FFO #1's best move G8 must be legal: g8 is column 6 of the last row.
    ffo1 = "--XXXXX--OOOXX-O-OOOXXOX-OXOXOXXOXXXOXXX--XOXOXX-XXXOOO--OOOOO--"
    assert parse_move("g8") in Position.from_string(ffo1, "X").legal_moves()


def test_ggf_board_round_trip_and_reader_variants():
    bo = ASYM.to_ggf()
    assert bo.startswith("8 ") and bo.endswith(" O")
    assert Position.from_ggf(bo) == ASYM
    # GGS style: spaces after each row, lowercase/alternative characters.
    squares = ASYM.to_string().replace("X", "x").replace("-", ".")
    spaced = " ".join(squares[i:i + 8] for i in range(0, 64, 8))
    assert Position.from_ggf(f"8 {spaced} O") == ASYM
    start = Position.from_ggf(
        "8 ---------------------------O*------*O--------------------------- *")
    assert start == Position.start()
    for bad in ("10 " + "-" * 64 + " *", "8 " + "-" * 63 + " *", "8 " + "-" * 64 + " ?", ""):
        with pytest.raises(nt.NotationError):
            Position.from_ggf(bad)


def test_cs303_board_is_row_col_with_minus_one_black():
    arr = ASYM.to_cs303()
    r, c = nt.row_col(parse_move("c3"))
    assert (r, c) == (2, 2) and arr[2][2] == -1
    r, c = nt.row_col(parse_move("d6"))
    assert (r, c) == (5, 3) and arr[5][3] == 1  # row 6 -> index 5, column d -> index 3
    assert arr[3][5] == 0  # the transposed square is empty: no x/y swap
    assert Position.from_cs303(arr, -1 if ASYM.side == Color.BLACK else 1,
                               rules="standard") == ASYM
    assert Position.from_cs303(arr, Color.WHITE).rules.name == "REVERSED"
    with pytest.raises(nt.NotationError):
        nt.board_from_cs303(np.zeros((7, 8)))
    bad = arr.copy()
    bad[0][0] = 2
    with pytest.raises(nt.NotationError):
        nt.board_from_cs303(bad)


def test_botzone_x_is_column_y_is_row():
    sq = parse_move("d6")  # column 3, row 5
    assert nt.botzone_xy(sq) == (3, 5)
    assert nt.square_from_botzone(3, 5) == sq
    assert nt.square_from_botzone(-1, -1) == PASS and nt.botzone_xy(PASS) == (-1, -1)
    grid = nt.board_to_botzone(ASYM.black, ASYM.white)
    assert grid[3][5] == -1  # white (Botzone -1) on d6
    assert grid[2][2] == 1   # black on c3
    assert grid[5][3] == 0   # f4 is empty: transposition would be caught
    # Botzone's own statement: black starts on [3][4] and [4][3].
    start = nt.board_to_botzone(Position.start().black, Position.start().white)
    assert start[3][4] == 1 and start[4][3] == 1 and start[3][3] == -1
    with pytest.raises(nt.NotationError):
        nt.square_from_botzone(8, 0)
