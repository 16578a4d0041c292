"""FFO endgame positions parse and their best moves are legal for the side to move."""

from engine_server.game import Position, parse_move

from .conftest import load_ffo


def test_ffo_easy_set_parses_with_listed_best_moves_legal(ffo_easy):
    assert len(ffo_easy) == 19
    for row in ffo_easy:
        p = Position.from_string(row["board"], row["side"])
        legal = set(p.legal_moves())
        for mv in row["best"]:
            assert parse_move(mv) in legal, (row["line"], mv)
        assert 14 <= p.empties <= 16


def test_all_ffo_files_parse():
    for name, n in (("ffo20-39.txt", 20), ("ffo40-59.txt", 20)):
        rows = load_ffo(name)
        assert len(rows) == n
        for row in rows:
            p = Position.from_string(row["board"], row["side"])
            assert all(parse_move(m) in p.legal_moves() for m in row["best"])
