"""Rules on hand-built positions and property tests against a ray-walking reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_server.game import PASS, Color, Game, IllegalMoveError, Position, Rules, parse_move
from engine_server.game import bitboard as bb
from protocol.notation import board_from_string

from .ref_rules import ref_flips, ref_moves

U = np.uint64


def test_start_position_moves():
    p = Position.start()
    assert [parse_move(m) for m in ("d3", "c4", "f5", "e6")] == sorted(p.legal_moves())
    assert p.discs() == (2, 2) and p.side == Color.BLACK


def test_forced_pass_is_the_only_move_and_must_be_played_explicitly():
    # White to move cannot bracket the edge discs a1/h8; black can play c1 and f8.
    rows = ["XO------", "--------", "--------", "--------",
            "--------", "--------", "--------", "------OX"]
    p = Position.from_string("".join(rows), "O")
    assert p.legal_mask == 0
    assert p.must_pass() and not p.is_game_over()
    assert p.legal_moves() == [PASS]
    with pytest.raises(IllegalMoveError):
        p.play("c1")
    q = p.play("pass")
    assert q.side == Color.BLACK and q.black == p.black and q.white == p.white
    assert sorted(q.legal_moves()) == [parse_move("c1"), parse_move("f8")]
    # Passing when a move exists is illegal.
    with pytest.raises(IllegalMoveError, match="has a move"):
        q.play(PASS)


def test_game_end_with_empty_squares_both_rule_variants():
    # White wiped out: 13 X, 0 O, 51 empties.
    p = Position.from_string("X" * 13 + "-" * 51, "O")
    assert p.is_game_over() and p.legal_moves() == []
    assert p.score() == -64  # white to move, loses 0-13 with 51 empties given to black
    assert p.black_score() == 64 and p.winner() == Color.BLACK
    r = p.with_rules("reversed")
    assert r.score() == 64 and r.black_score() == -64 and r.winner() == Color.WHITE


def test_final_scores_full_board_and_draws():
    full = Position.from_string("X" * 40 + "O" * 24, "X")
    assert full.score() == 16
    assert full.with_rules(Rules.REVERSED).score() == -16
    draw = Position.from_string("X" * 8 + "-" * 48 + "O" * 8, "X")
    assert draw.is_game_over()
    assert draw.score() == 0 and draw.with_rules("reversed").score() == 0 and draw.winner() is None
    # Unequal counts with empties: 3 X, 5 O, 56 empty, black to move.
    p = Position.from_string("XXXOOOOO" + "-" * 56, "X")
    assert p.is_game_over()
    assert p.score() == -(2 + 56)
    assert p.with_rules("reversed").score() == 2 + 56
    assert int(bb.disc_score(3, 5, bb.STANDARD)) == -58
    assert int(bb.outcome(U(0b111), U(0b11111000), bb.REVERSED)) == 1


def test_game_undo_restores_positions_and_result():
    g = Game()
    seq = ["f5", "d6", "c3", "d3", "c4"]
    snapshots = [g.position]
    for m in seq:
        g.play(m)
        snapshots.append(g.position)
    for i in range(len(seq), 0, -1):
        assert g.position == snapshots[i]
        assert g.undo() == parse_move(seq[i - 1])
    assert g.position == Position.start() and g.moves == []
    with pytest.raises(IndexError):
        g.undo()


def test_illegal_move_leaves_game_unchanged():
    g = Game.from_moves(["f5"])
    before = (g.position, list(g.moves))
    with pytest.raises(IllegalMoveError):
        g.play("a1")
    with pytest.raises(ValueError):
        g.play("z9")
    assert (g.position, g.moves) == before


def _random_position(choices: list[int]) -> tuple[int, int]:
    """A reachable position: play legal moves picked by ``choices`` from the start."""
    P, O = int(bb.START_BLACK), int(bb.START_WHITE)
    for c in choices:
        moves = ref_moves(P, O)
        if not moves:
            if not ref_moves(O, P):
                break
            P, O = O, P
            continue
        squares = [i for i in range(64) if moves >> i & 1]
        sq = squares[c % len(squares)]
        f = ref_flips(P, O, sq)
        P, O = O ^ f, P ^ f ^ (1 << sq)
    return P, O


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 1000), max_size=60))
def test_moves_and_flips_match_reference_on_reachable_positions(choices):
    P, O = _random_position(choices)
    assert int(bb.legal_moves(U(P), U(O))) == ref_moves(P, O)
    for sq in range(64):
        if ref_moves(P, O) >> sq & 1:
            assert int(bb.flips(U(P), U(O), U(1 << sq))) == ref_flips(P, O, sq)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1), st.integers(0, 63))
def test_flips_are_exactly_the_bracketed_lines_on_arbitrary_boards(a, b, sq):
    P, O = a & ~b, b & ~a  # any disjoint pair, reachable or not
    P &= ~(1 << sq)
    O &= ~(1 << sq)
    assert int(bb.flips(U(P), U(O), U(1 << sq))) == ref_flips(P, O, sq)
    assert (int(bb.legal_moves(U(P), U(O))) >> sq & 1) == (ref_flips(P, O, sq) != 0)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(0, 63))
def test_the_last_empty_flip_count_equals_the_bracketed_lines(a, sq):
    from engine_server.search.endgame.last import _count_last_flips

    P = a & ~(1 << sq)              # a full board but for sq: everything else is the opponent's
    O = ~P & ~(1 << sq) & (2**64 - 1)
    assert _count_last_flips(U(P), sq) == ref_flips(P, O, sq).bit_count()
    assert _count_last_flips(U(O), sq) == ref_flips(O, P, sq).bit_count()


def test_no_move_flips_nothing():
    assert bb.flips(U(0x0000000810000000), U(0x0000001008000000), U(0)) == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=1, max_size=60))
def test_make_then_undo_round_trips(choices):
    g = Game()
    history = [g.position]
    for c in choices:
        moves = g.position.legal_moves()
        if not moves:
            break
        g.play(moves[c % len(moves)])
        history.append(g.position)
        mover_before = history[-2]
        # The mover gains the placed disc plus the flips; the opponent loses the flips.
        if g.moves[-1] != PASS:
            n_flips = mover_before.flips(g.moves[-1]).bit_count()
            before = mover_before.player.bit_count()
            after = (g.position.black if mover_before.side == Color.BLACK
                     else g.position.white).bit_count()
            assert after == before + n_flips + 1 and n_flips >= 1
    while g.moves:
        g.undo()
        history.pop()
        assert g.position == history[-1]


def test_rules_parse_errors_name_the_accepted_values():
    with pytest.raises(ValueError, match="standard, reversed"):
        Rules.parse("chess")
    assert Rules.parse("reversed") == Rules.REVERSED


def test_board_text_round_trip_matches_bitboards():
    text = "--XXXXX--OOOXX-O-OOOXXOX-OXOXOXXOXXXOXXX--XOXOXX-XXXOOO--OOOOO--"
    b, w = board_from_string(text)
    assert Position(b, w).to_string() == text
