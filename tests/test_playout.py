"""The random playout kernel: complete, legal, reproducible games."""

import numpy as np

from engine_server.game import bitboard as bb
from engine_server.game.playout import c_reference_rng, random_games_from_start, random_playout


def test_playout_reaches_a_finished_game_and_counts_are_consistent():
    rng = bb.make_rng(7)
    for _ in range(200):
        mine, theirs, plies = random_playout(bb.START_BLACK, bb.START_WHITE, rng)
        assert 0 <= mine <= 64 and 0 <= theirs <= 64 and mine + theirs <= 64
        assert plies >= 9  # the shortest Othello game has 9 plies
        assert mine + theirs <= 4 + plies  # each non-pass ply adds one disc


def test_same_seed_same_games_different_seed_different_games():
    a = random_games_from_start(500, bb.make_rng(42))
    b = random_games_from_start(500, bb.make_rng(42))
    c = random_games_from_start(500, bb.make_rng(43))
    assert a == b
    assert a != c
    assert a[0] + a[1] + a[2] == 500


def test_random_play_favours_white_over_many_games():
    # A known property of uniformly random Othello (docs/reference/performance.md section 4.2).
    black, white, draws, plies = random_games_from_start(20000, c_reference_rng())
    assert white > black
    assert 60.0 < plies / 20000 < 61.0


def test_make_rng_never_zero_state():
    for seed in range(100):
        assert bb.make_rng(seed)[0] != np.uint64(0)
