"""othello-match phases: every move of a match's middle judged by an outside engine's values."""

from __future__ import annotations

import json
import statistics

import pytest

import clients.match.outside_judge as judging
from clients.match.phases import bands, judged_moves, main, run, summarize
from clients.match.players import Reply
from engine_server.game import PASS, Color, Position, Rules
from protocol.notation import square_name

from .test_match_turns import random_game, write_journal


def value(p: Position) -> float:
    """A judge's value that differs by position and side: half the mover's discs ahead, a
    term of the position's bits, a quarter disc more for black."""
    b, w = p.discs()
    ahead = b - w if p.side == Color.BLACK else w - b
    return 0.5 * ahead + float((p.black ^ p.white) % 11 - 5) + (0.25 if p.side == Color.BLACK
                                                                  else 0.0)


class Judge:
    """A judge engine that answers each position with ``value`` (never a forced move alone)."""

    asked: list[Position] = []

    def __init__(self, *a):
        pass

    def new_game(self, *a):
        pass

    def genmove(self, turn):
        p = turn.game.position
        Judge.asked.append(p)
        return Reply(p.legal_moves()[0], value(p))

    def close(self):
        pass


GAMES = [(random_game(11, Rules.STANDARD), Rules.STANDARD, False),
         (random_game(12, Rules.STANDARD), Rules.STANDARD, True),
         (random_game(13, Rules.REVERSED), Rules.REVERSED, False)]


def _expected(first: int, last: int) -> list[tuple[int, int, str, int, float]]:
    # (game, ply, player, empties, loss) by replaying the games here
    out = []
    for gi, (moves, rules, swap) in enumerate(GAMES):
        pos = Position.start(rules)
        for ply, text in enumerate(moves):
            move = PASS if text == "pass" else next(
                m for m in pos.legal_moves() if square_name(m) == text)
            nxt = pos.play(move)
            if (last < pos.empties <= first and move != PASS and len(pos.legal_moves()) > 1
                    and not nxt.is_game_over()):
                after = value(nxt) if nxt.side == pos.side else -value(nxt)
                mover = ("b" if swap else "a") if pos.side == Color.BLACK else \
                    ("a" if swap else "b")
                out.append((gi, ply, mover, pos.empties, value(pos) - after))
            pos = nxt
    return out


def test_each_move_loses_the_judges_value_before_it_minus_after_it(tmp_path, monkeypatch):
    write_journal(tmp_path, GAMES)
    monkeypatch.setattr(judging, "make_player", Judge)
    Judge.asked = []
    records, moves, summary = run(tmp_path, "j=agent:random", 20, first=50, last=20, width=7)
    want = _expected(50, 20)
    assert [(m.game, m.ply, m.player, m.empties, m.loss) for m in moves] == want
    assert len(want) > 40 and any(w[4] > 0 for w in want) and any(w[4] < 0 for w in want)
    assert all(20 <= p.empties <= 50 for p in Judge.asked)
    # the bands: per player, the moves and their losses; the pair's difference by game
    rows = summary["bands"]
    assert [r["empties"] for r in rows] == [[50, 44], [43, 37], [36, 30], [29, 23], [22, 21],
                                            [50, 21]]
    for row in rows:
        hi, lo = row["empties"]
        diffs = []
        for gi in range(3):
            mine = {p: sum(w[4] for w in want if w[0] == gi and w[2] == p and lo <= w[3] <= hi)
                    for p in ("a", "b")}
            diffs.append(mine["a"] - mine["b"])
        for p in ("a", "b"):
            losses = [w[4] for w in want if w[2] == p and lo <= w[3] <= hi]
            assert row[p]["moves"] == len(losses)
            assert row[p]["loss_per_game"] == round(sum(losses) / 3, 3)
        assert row["difference_per_game"][0] == round(statistics.fmean(diffs), 3)
        assert row["difference_per_game"][1] < row["difference_per_game"][0] \
            < row["difference_per_game"][2]
    assert rows[-1]["a"]["moves"] + rows[-1]["b"]["moves"] == len(want)
    # the answers are kept: the same run asks the judge nothing more
    Judge.asked = []
    assert run(tmp_path, "j=agent:random", 20, first=50, last=20, width=7)[1] == moves
    assert Judge.asked == []


def test_bands_cover_the_judged_moves_once():
    assert bands(54, 27, 4) == [(54, 51), (50, 47), (46, 43), (42, 39), (38, 35), (34, 31),
                                (30, 28)]
    assert bands(31, 27, 5) == [(31, 28)]
    one = summarize([], [], [(31, 28)])["bands"]
    assert [r["empties"] for r in one] == [[31, 28]]   # no "all" row beside a single band
    assert bands(10, 9, 4) == [(10, 10)]


def test_a_journal_without_games_asks_the_judge_nothing():
    assert judged_moves([], lambda ps: pytest.fail("asked"), 54, 27) == []


def test_the_command_prints_the_table_or_json_and_refuses_what_it_cannot_judge(
        tmp_path, monkeypatch, capsys):
    write_journal(tmp_path, GAMES[:2])
    monkeypatch.setattr(judging, "make_player", Judge)
    args = [str(tmp_path), "--judge", "j=agent:random", "--depth", "4", "--from", "40",
            "--to", "30"]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["players"] == ["a", "b"] and out["depth"] == 4
    assert len(out["moves"]) == sum(r["a"]["moves"] + r["b"]["moves"]
                                    for r in out["bands"][:-1])
    assert main(args) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("2 games") and table[-1].startswith("40-31")
    assert main([str(tmp_path / "nothing"), "--judge", "j=agent:random", "--depth", "4"]) == 2
    assert "no such journal" in capsys.readouterr().err
    for bad in (["--from", "30", "--to", "30"], ["--band", "0"], ["--depth", "0"]):
        with pytest.raises(SystemExit):
            main([str(tmp_path), "--judge", "j=agent:random", "--depth", "4", *bad])
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--depth", "4"])      # no judge
