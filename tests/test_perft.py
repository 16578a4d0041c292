"""perft counts against the published tables (docs/reference/performance.md section 1)."""

import pytest

from engine_server.game.bitboard import START_BLACK, START_WHITE
from engine_server.game.perft import perft_bik, perft_edax

BIK = [4, 12, 56, 244, 1396, 8200, 55092, 390216, 3005288, 24571284]


@pytest.mark.parametrize("depth", range(1, 10))
def test_perft_bik_depths_1_to_9(depth):
    assert perft_bik(START_BLACK, START_WHITE, depth) == BIK[depth - 1]


def test_perft_bik_depth_10():
    assert perft_bik(START_BLACK, START_WHITE, 10) == 24_571_284


def test_perft_edax_convention_differs_from_bik_by_finished_games():
    # 228 games end after exactly 9 plies; Edax does not count them at depth 10.
    assert perft_edax(START_BLACK, START_WHITE, 10) == 24_571_056
    assert perft_edax(START_BLACK, START_WHITE, 9) == 3_005_288
