"""The opening book: building, symmetric lookup, negamax values, damaged files, and its use by
agents, the protocols and othello-match."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from clients.match import openings as O
from engine_server.agents import AgentSpecError, make_agent
from engine_server.eval import book as B
from engine_server.game import PASS, Game, Position, parse_move
from engine_server.search.limits import Limits
from tests.protocol_harness import Harness
from training import book as TB

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def book_file(tmp_path_factory) -> Path:
    """A small book from the 300 sample WTHOR games: shallow leaves, one extension round."""
    P, O_, counts, _ = TB.wthor_positions(DATA, max_ply=12)
    keep = counts >= 2
    arrays = TB.build(P[keep], O_[keep], counts[keep], rules=0, leaf_depth=2, extend=1,
                      extend_games=20, jobs=1)
    path = tmp_path_factory.mktemp("book") / "book.npz"
    B.save(path, arrays, {"rules": 0, "leaf_depth": 2, "source": "test sample"})
    return path


@pytest.fixture(scope="module")
def book(book_file) -> B.Book:
    return B.load(book_file, 0)


def images(position: Position) -> list[Position]:
    """The position under the eight symmetries of the board."""
    out = []
    for perm in O.SYMMETRIES.values():
        out.append(Position(O.transform_board(position.black, perm),
                            O.transform_board(position.white, perm), position.side,
                            position.rules))
    return out


def test_the_sample_book_holds_the_main_lines_and_extensions(book):
    assert len(book) > 100
    start = Position.start()
    assert book.index(start) >= 0 and int(book.games[book.index(start)]) == 300
    # the four first moves are one position under symmetry: all four are book moves with the
    # same value and games
    moves = book.moves(start)
    assert sorted(m.move for m in moves) == sorted(start.legal_moves())
    assert len({(m.value, m.games) for m in moves}) == 1
    # the extension round added positions no sample game reached
    assert int((book.games == 0).sum()) > 0


def test_symmetric_positions_find_the_same_entry(book):
    line = Game.from_moves([parse_move(m) for m in ("f5", "d6", "c3", "d3")]).position
    rng = random.Random(3)
    positions = [line]
    pos = Position.start()
    while len(positions) < 6 and book.moves(pos):   # a walk along book moves
        pos = pos.play(rng.choice(book.moves(pos)).move)
        positions.append(pos)
    for p in positions:
        idx = {book.index(q) for q in images(p)}
        assert len(idx) == 1
        values = {tuple(sorted((m.value, m.games) for m in book.moves(q))) for q in images(p)}
        assert len(values) == 1


def test_book_moves_map_back_to_the_board_they_were_asked_for(book):
    pos = Position.start().play(parse_move("f5"))
    for q, perm in zip(images(pos), O.SYMMETRIES.values()):
        got = {m.move: m.value for m in book.moves(q)}
        want = {O.transform_move(m.move, perm): m.value for m in book.moves(pos)}
        assert got == want
        for m in book.moves(q):
            assert q.is_legal(m.move)


def python_negamax(book: B.Book) -> dict[tuple[int, int], int]:
    """Negamax over the stored tree written independently of the kernel: children by playing
    every legal move on a Position and looking it up by the match code's canonical key."""
    keys = {(int(p), int(o)): i for i, (p, o) in enumerate(zip(book.P, book.O))}
    memo: dict[int, int] = {}

    def value(i: int) -> int:
        if i in memo:
            return memo[i]
        pos = Position(int(book.P[i]), int(book.O[i]))
        best = int(book.leaf[i])
        for mv in pos.legal_moves():
            child = pos.play(mv)
            sign = -1
            if child.is_game_over():
                continue
            if child.must_pass():
                child = child.play(PASS)
                sign = 1
            j = keys.get(O.canonical_key(child))
            if j is not None:
                best = max(best, sign * value(j))
        memo[i] = best
        return best

    return {k: value(i) for k, i in keys.items()}


def test_book_values_equal_a_negamax_over_the_stored_tree(book):
    want = python_negamax(book)
    got = {(int(p), int(o)): int(v) for p, o, v in zip(book.P, book.O, book.value)}
    assert got == want
    # and interior positions take a child's value where no leaf is better
    assert any(int(v) != int(leaf) for v, leaf in zip(book.value, book.leaf))


def test_a_leaf_value_is_the_search_of_the_moves_leaving_the_book(book):
    from engine_server.eval.weights import default_weights
    from engine_server.search.alphabeta import AlphaBeta

    ab = AlphaBeta(default_weights(0), 16)
    checked = 0
    for i in range(len(book)):
        if int(book.leaf[i]) == B.LEAF_NONE:
            continue
        pos = Position(int(book.P[i]), int(book.O[i]))
        leaving = [m for m in pos.legal_moves()
                   if pos.play(m).is_game_over()
                   or book.index(pos.play(m) if not pos.play(m).must_pass()
                                 else pos.play(m).play(PASS)) < 0]
        ab.clear()
        r = ab.search(pos, max_depth=2, moves=leaving)
        assert int(book.leaf[i]) == round(r.score * B.SCALE)
        assert int(book.leaf_move[i]) in leaving
        checked += 1
        if checked == 25:
            break
    assert checked == 25


def test_a_book_with_a_better_move_outside_it_lets_the_search_decide(book):
    pos = Position.start().play(parse_move("f5"))
    i = book.index(pos)
    patched = {k: getattr(book, k).copy() for k in ("P", "O", "value", "leaf", "leaf_move",
                                                     "games")}
    patched["leaf"][i] = 64 * B.SCALE
    better = B.Book(patched, dict(book.meta))
    assert better.choose(pos) is None
    assert book.choose(pos) is not None


def test_book_random_draws_within_the_spread_and_is_seeded(book):
    start = Position.start()
    best = book.moves(start)[0].value
    picks = [book.choose(start, 64.0, random.Random(s)).move for s in range(20)]
    assert len(set(picks)) > 1
    assert picks == [book.choose(start, 64.0, random.Random(s)).move for s in range(20)]
    assert all(m.value >= best - 64 for m in book.moves(start))
    assert book.choose(start).move == book.moves(start)[0].move


# --- damaged files ------------------------------------------------------------------------------

def test_missing_corrupt_and_foreign_books_raise_a_clear_error(book_file, tmp_path):
    with pytest.raises(B.BookError, match="no such book file"):
        B.load(tmp_path / "none.npz")
    cut = tmp_path / "cut.npz"
    cut.write_bytes(book_file.read_bytes()[:500])
    with pytest.raises(B.BookError, match="cut.npz: not a readable book file"):
        B.load(cut)
    with pytest.raises(B.BookError, match="standard rules, not reversed"):
        B.load(book_file, 1)
    b = B.load(book_file)
    arrays = {k: getattr(b, k).copy() for k in ("P", "O", "value", "leaf", "leaf_move",
                                                "games")}
    arrays["value"][3] = 2000
    bad = tmp_path / "bad.npz"
    B.save(bad, arrays, {"rules": 0})
    with pytest.raises(B.BookError, match="outside"):
        B.load(bad)


def test_a_damaged_shipped_book_leaves_the_engine_searching(tmp_path, monkeypatch):
    bad = tmp_path / "book-standard.npz"
    bad.write_bytes(b"not a zip file")
    monkeypatch.setattr(B, "DATA_DIR", tmp_path)
    monkeypatch.setattr(B, "_SHIPPED", {})
    agent = make_agent("best:depth=2")
    r = agent.search(Position.start(), Limits(time=1))
    assert r.stopped_by != "book" and r.best_move in Position.start().legal_moves()
    assert isinstance(B._SHIPPED[0], B.BookError)


def test_a_bad_book_file_is_refused_and_the_session_keeps_its_agent(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"\x00" * 64)
    with pytest.raises(AgentSpecError, match="bad.npz"):
        make_agent(f"best:book_file={bad}")
    h = Harness("gtp", agent="best:depth=2,book=off")
    try:
        out = h.send(f"1 othello-agent best:book_file={bad}")
        assert out[0].startswith("?1") and "bad.npz" in out[0]
        out = h.send("2 genmove b")
        assert out[0].startswith("=2 ")
    finally:
        h.close()


# --- agents and protocols -----------------------------------------------------------------------

def test_an_agent_with_the_book_answers_without_searching(book_file):
    agent = make_agent(f"best:book_file={book_file}")
    r = agent.search(Position.start(), Limits(time=5))
    assert r.stopped_by == "book" and r.search_nodes == 0
    assert r.best_move in Position.start().legal_moves()
    assert r.pv[0] == r.best_move and len(r.pv) > 1
    assert r.moves[0].move == r.best_move and r.moves[0].book_games is not None
    off = make_agent(f"best:book_file={book_file},book=off,depth=2")
    assert off.search(Position.start(), Limits(time=5)).stopped_by != "book"
    late = make_agent(f"best:book_file={book_file},book_depth=0,depth=2")
    assert late.search(Position.start(), Limits(time=5)).stopped_by != "book"
    # an analysis searches and marks the book's moves
    a = agent.search(Position.start(), Limits(depth=2, analysis=True))
    assert a.stopped_by != "book" and all(m.book_games is not None for m in a.moves)


def test_a_book_file_for_other_rules_is_not_used(book_file):
    agent = make_agent(f"best:book_file={book_file},depth=2")
    r = agent.search(Position.start("reversed"), Limits(time=5))
    assert r.stopped_by != "book"


def test_nboard_hint_sends_book_lines_before_search_lines(book_file):
    h = Harness("nboard", agent=f"best:book_file={book_file}")
    try:
        start = "-" * 27 + "O*------*O" + "-" * 27
        h.send("nboard 2", "set depth 3", f"set game (;GM[Othello]PC[x]PB[a]PW[b]RE[?]"
               f"TI[5:00]TY[8]BO[8 {start} *]B[F5];)", "ping 1", "hint 3")
        lines = h.wait_for(lambda ls: "status" in ls[-1:] and any(
            x.startswith("search ") for x in ls))
        book_lines = [x for x in lines if x.startswith("book ")]
        first_search = next(i for i, x in enumerate(lines) if x.startswith("search "))
        assert book_lines and lines.index(book_lines[-1]) < first_search
        for line in book_lines:
            _, pv, value, games, depth = line.split()
            assert parse_move(pv.split("-")[0]) in Position.start().play(
                parse_move("f5")).legal_moves()
            float(value), int(games), int(depth)
    finally:
        h.close()


def test_nboard_go_answers_from_the_book(book_file):
    h = Harness("nboard", agent=f"best:book_file={book_file}")
    try:
        h.send("nboard 2", "set depth 20", "ping 1", "go")
        lines = h.wait_for(lambda ls: any(x.startswith("===") for x in ls))
        move = next(x for x in lines if x.startswith("===")).split()[1].split("/")[0]
        assert parse_move(move) in Position.start().legal_moves()
        assert h.session.last_result.stopped_by == "book"
    finally:
        h.close()


def test_gtp_analysis_marks_book_moves(book_file):
    h = Harness("gtp", agent=f"best:book_file={book_file},depth=2")
    try:
        h.send("1 kata-analyze b interval 5")
        lines = h.wait_for(lambda ls: any(x.startswith("info ") for x in ls))
        h.send("2 name")
        info = next(x for x in lines if x.startswith("info "))
        assert " book 300 order " in info
    finally:
        h.close()


def test_remote_sessions_may_not_name_a_book_file():
    from engine_server.config import _remote_defaults

    policy = _remote_defaults().policy()
    with pytest.raises(AgentSpecError, match="book_file"):
        policy.admit("best:book_file=/etc/passwd", {})
    assert policy.admit("best:book=off", {}).startswith("best")


# --- othello-match and othello-book -------------------------------------------------------------

def test_match_openings_from_the_book_are_balanced_and_distinct(book_file, book):
    ops = O.load(f"book:ply=4,within=3,file={book_file}")
    assert ops
    keys = set()
    for op in ops:
        assert len(op.moves) == 4 and abs(op.value) <= 3
        pos = op.position()
        assert book.entry_value(pos) == op.value
        keys.add(O.canonical_key(pos))
    assert len(keys) == len(ops)
    with pytest.raises(ValueError, match="ply=N"):
        O.load(f"book:depth=4,file={book_file}")


def test_othello_book_show_prints_the_moves(book_file, capsys):
    assert TB.main(["show", "--book", str(book_file), "f5"]) == 0
    out = capsys.readouterr().out
    assert "in the book" in out and "book move:" in out
    assert TB.main(["show", "--book", str(book_file), "zz"]) == 2
    board = Position.start().to_string()
    assert TB.main(["show", "--book", str(book_file), "--", board + " X"]) == 0


def test_the_shipped_books_load():
    for rules in (0, 1):
        b = B.load(B.default_path(rules), rules)
        assert len(b) > 1000
        assert b.moves(Position.start(["standard", "reversed"][rules]))


def test_arrays_round_trip_through_save_and_load(book, tmp_path):
    path = tmp_path / "again.npz"
    B.save(path, {k: getattr(book, k) for k in ("P", "O", "value", "leaf", "leaf_move",
                                                "games")}, {"rules": 0})
    again = B.load(path)
    for k in ("P", "O", "value", "leaf", "leaf_move", "games"):
        assert np.array_equal(getattr(again, k), getattr(book, k))


def test_reversed_books_come_from_seeded_self_play():
    a = TB.selfplay_positions(1, games=6, max_ply=6, depth=1, spread=3.0, seed=5)
    b = TB.selfplay_positions(1, games=6, max_ply=6, depth=1, spread=3.0, seed=5)
    for x, y in zip(a[:3], b[:3]):
        assert np.array_equal(x, y)
    P, O_, counts, games = a
    assert games == 6 and int(counts.sum()) == 6 * 7   # plies 0..6 of every game
    start = Position.start("reversed")
    i = [k for k in range(len(P)) if (int(P[k]), int(O_[k])) == O.canonical_key(start)]
    assert i and int(counts[i[0]]) == 6
    arrays = TB.build(P, O_, counts, rules=1, leaf_depth=1)
    assert arrays["value"].shape == P.shape


def test_best_opens_from_the_shipped_book_under_standard_rules_only_unless_told():
    standard = make_agent("best:depth=2").search(Position.start(), Limits(time=5))
    assert standard.stopped_by == "book"
    auto = make_agent("best:depth=2").search(Position.start("reversed"), Limits(time=5))
    assert auto.stopped_by != "book"
    forced = make_agent("best:depth=2,book=on").search(Position.start("reversed"),
                                                       Limits(time=5))
    assert forced.stopped_by == "book"
    assert make_agent("uct:iterations=10").search(Position.start(), Limits()).stopped_by \
        != "book"


def _ggf_game(moves: list[int], rules: str = "standard") -> str:
    from engine_server.game import Rules, ggf

    start = Position.start(Rules.parse(rules))
    game = Game.from_moves(moves, start=start)
    items = [ggf.MoveItem(m) for m in game.moves]
    return ggf.GgfRecord(start=start, moves=items).to_text()


def _seeded_game(seed: int, plies: int) -> list[int]:
    """A legal game of ``plies`` random moves (passes played when forced)."""
    rng = random.Random(seed)
    pos = Position.start()
    moves = []
    while len(moves) < plies and not pos.is_game_over():
        m = rng.choice(pos.legal_moves())
        moves.append(m)
        pos = pos.play(m)
    return moves


def test_learning_adds_a_played_line_and_values_it_by_the_book_depth(book, tmp_path):
    moves = _seeded_game(5, 40)
    games = tmp_path / "games.ggf"
    # two games along one line, one under reversed rules (not this book's), one wrong start
    games.write_text(_ggf_game(moves) + "\n" + _ggf_game(moves) + "\n"
                     + _ggf_game(moves[:10], "reversed") + "\n")
    out = tmp_path / "learned.npz"
    assert TB.main(["learn", str(games), "--book", str(book.path), "--max-ply", "16",
                    "-o", str(out), "--jobs", "1"]) == 0
    grown = B.load(out, 0)
    pos = Position.start()
    for ply, m in enumerate(moves):
        if ply <= 16:
            i = grown.index(pos)
            assert i >= 0, f"ply {ply} of the played line is not in the learned book"
            old = book.index(pos)
            assert int(grown.games[i]) == (int(book.games[old]) if old >= 0 else 0) + 2
        pos = pos.play(m)
    assert grown.index(pos) < 0   # positions past --max-ply stay out
    assert len(grown) > len(book)
    # the values are a negamax over the grown tree, and each new leaf is the book depth's search
    want = python_negamax(grown)
    assert {(int(p), int(o)): int(v) for p, o, v in zip(grown.P, grown.O, grown.value)} == want
    assert grown.meta["learned"][-1]["games"] == 2
    assert grown.leaf_depth == book.leaf_depth
    # learning the same games again adds no position and the same tree
    again = tmp_path / "again.npz"
    assert TB.main(["learn", str(games), "--book", str(out), "--max-ply", "16",
                    "-o", str(again), "--jobs", "1"]) == 0
    twice = B.load(again, 0)
    assert np.array_equal(twice.P, grown.P) and np.array_equal(twice.value, grown.value)
    more = twice.games.astype(np.int64) - grown.games.astype(np.int64)
    assert set(more.tolist()) == {0, 2} and int((more == 2).sum()) == 17   # plies 0-16


def test_learning_refuses_unreadable_records_and_keeps_the_book(book, tmp_path, capsys):
    bad = tmp_path / "bad.ggf"
    bad.write_text("(;GM[Othello]BO[8 nonsense *]B[zz];)")
    out = tmp_path / "out.npz"
    assert TB.main(["learn", str(bad), "--book", str(book.path), "-o", str(out)]) == 2
    assert "cannot be read" in capsys.readouterr().err
    assert not out.exists()
    assert TB.main(["learn", str(tmp_path / "missing.ggf"), "--book", str(book.path),
                    "-o", str(out)]) == 2


def _leaving(book: B.Book, pos: Position) -> list[int]:
    def child(m: int) -> Position:
        c = pos.play(m)
        return c.play(PASS) if c.must_pass() else c
    return [m for m in pos.legal_moves()
            if pos.play(m).is_game_over() or book.index(child(m)) < 0]


def test_deepening_searches_the_most_played_leaves_first_and_resumes(book, tmp_path):
    from engine_server.eval import mpc as M
    from engine_server.eval.weights import default_weights
    from engine_server.search.alphabeta import SCALE, SELECTIVITY_PCT, SELECTIVITY_T, AlphaBeta

    assert set(book.depth.tolist()) == {2}   # a file without the array: the header's depth
    order = TB.deepen_order(book, 4)
    assert len(order) == sum(int(v) != B.LEAF_NONE for v in book.leaf)
    games = book.games.astype(np.int64)[order]
    assert np.all(games[:-1] >= games[1:])
    part = tmp_path / "part.npz"
    assert TB.main(["deepen", "--book", str(book.path), "--depth", "4", "--selectivity", "74",
                    "--positions", "10", "--jobs", "1", "-o", str(part)]) == 0
    half = B.load(part, 0)
    step = half.meta["deepened"][-1]
    assert (step["depth"], step["searched"], step["left"]) == (4, 10, len(order) - 10)
    assert np.array_equal(np.nonzero(half.depth == 4)[0], np.sort(order[:10]))
    # each deepened leaf is a depth-4 search at 74% of the moves that leave the book
    w = default_weights(0)
    level = SELECTIVITY_PCT.index(74)
    margins = M.shipped(0, w).margins(SELECTIVITY_T[level], SCALE)
    ab = AlphaBeta(w, 16)
    changed = 0
    for i in order[:10]:
        pos = Position(int(half.P[i]), int(half.O[i]))
        ab.clear()
        r = ab.search(pos, max_depth=4, moves=_leaving(half, pos), selectivity=level,
                      mpc=margins)
        assert int(half.leaf[i]) == round(r.score * B.SCALE)
        changed += int(half.leaf[i]) != int(book.leaf[i])
    assert changed > 0
    assert {(int(p), int(o)): int(v) for p, o, v in zip(half.P, half.O, half.value)} \
        == python_negamax(half)
    # the rest in a second run from the first one's file: the same book as one run of all
    rest = tmp_path / "rest.npz"
    assert TB.main(["deepen", "--book", str(part), "--depth", "4", "--selectivity", "74",
                    "--jobs", "1", "-o", str(rest)]) == 0
    whole = tmp_path / "whole.npz"
    assert TB.main(["deepen", "--book", str(book.path), "--depth", "4", "--selectivity", "74",
                    "--jobs", "2", "-o", str(whole)]) == 0
    a, b = B.load(rest, 0), B.load(whole, 0)
    for k in ("leaf", "leaf_move", "value", "depth"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    assert [s["searched"] for s in a.meta["deepened"]] == [10, len(order) - 10]
    assert a.meta["deepened"][-1]["left"] == 0
    # a book move shows the depth of the leaf search its value comes from: all deepened now
    pos = Position.start().play(parse_move("f5"))
    assert {m.leaf_depth for m in book.moves(pos, lines=True)} == {2}
    assert {m.leaf_depth for m in a.moves(pos, lines=True)} == {4}
    again = tmp_path / "again.npz"
    assert TB.main(["deepen", "--book", str(rest), "--depth", "4", "--jobs", "1",
                    "-o", str(again)]) == 0
    assert B.load(again, 0).meta["deepened"][-1]["searched"] == 0


def test_a_malformed_depth_array_is_refused(book, tmp_path):
    arrays = {k: getattr(book, k) for k in ("P", "O", "value", "leaf", "leaf_move", "games")}
    path = tmp_path / "deep.npz"
    B.save(path, dict(arrays, depth=np.full(len(book), 12, np.uint8)), {"rules": 0})
    assert set(B.load(path).depth.tolist()) == {12}
    B.save(path, dict(arrays, depth=np.full(len(book), 99, np.uint8)), {"rules": 0})
    with pytest.raises(B.BookError, match="depth"):
        B.load(path)


def test_deepening_refuses_a_missing_book_and_a_depth_off_the_board(book, tmp_path, capsys):
    out = tmp_path / "out.npz"
    assert TB.main(["deepen", "--book", str(tmp_path / "none.npz"), "-o", str(out)]) == 2
    assert "othello-book deepen: " in capsys.readouterr().err
    assert TB.main(["deepen", "--book", str(book.path), "--depth", "61", "-o", str(out)]) == 2
    assert "--depth 61" in capsys.readouterr().err
    assert not out.exists()


def test_a_fit_can_take_the_books_positions_labelled_by_their_negamax_values(book_file, book,
                                                                            tmp_path, capsys):
    from engine_server.eval import weights as wts
    from engine_server.eval.features import WEIGHT_SCALE
    from training import cli, fit, patterns

    d = patterns.book_dataset(book_file, 0)
    assert len(d) == len(book)
    assert np.array_equal(d.empties, 64 - np.bitwise_count(book.P | book.O))
    for i in range(0, len(book), max(1, len(book) // 25)):
        p = Position(int(book.P[i]), int(book.O[i]), side=0)   # the mover as black
        assert d.target[i] == d.value[i] == book.entry_value(p)

    out = tmp_path / "w.npz"
    assert cli.main(["patterns", "--no-wthor", "--book", str(book_file), "--iterations", "10",
                     "--work", str(tmp_path / "work"), "--out", str(out)]) == 0
    w, meta = wts.load(out, 0)
    assert meta["data"][0].startswith(f"book {book_file}")
    # the fitted evaluation follows the book's values better than a constant does
    stage = np.minimum((60 - d.empties.astype(np.int64)) // 4, len(w) - 1)
    pred = np.zeros(len(d))
    for s in np.unique(stage):
        rows = np.nonzero(stage == s)[0]
        p = np.zeros(len(rows))
        fit.predict(fit.features_of(d.P[rows], d.O[rows]), w[s].astype(np.float64) / WEIGHT_SCALE,
                    p)
        pred[rows] = p
    assert np.mean(np.abs(pred - d.target)) < 0.8 * np.mean(np.abs(d.target - d.target.mean()))

    # a book of the other rules is refused, naming the file
    assert cli.main(["patterns", "--rules", "reversed", "--book", str(book_file),
                     "--work", str(tmp_path / "work"), "--out", str(tmp_path / "r.npz")]) == 2
    assert "book.npz" in capsys.readouterr().err and not (tmp_path / "r.npz").exists()


def test_a_board_whose_canonical_bitboards_pass_2_to_the_63_is_looked_up_after_a_small_one():
    book = B.shipped(0)
    assert book.index(Game().position) >= 0     # small bitboards first, as in a game
    # a held-out WTHOR position (27 empties): its canonical O has the top bit set
    p = Position(72633850271629312, 18229710240325083136, side=0)
    cP, cO, _ = B.canonical(*p.bitboards())
    assert cO >= 1 << 63 > cP
    assert book.index(p) == -1 and book.entry_value(p) is None and book.leaf_of(p) is None
