"""othello-match turns: every move of a match's last empties judged by the exact solver."""

from __future__ import annotations

import json
import random

import pytest

from clients.match.journal import Journal
from clients.match.turns import main, run
from engine_server.game import PASS, Position, Rules
from engine_server.search.endgame.solver import solve_move_scores
from protocol.notation import square_name

TEMPLATE = {
    "key": "", "pairing": "a vs b", "opening_index": 0, "opening": "", "swap": 0, "round": 0,
    "seed": 1, "rules": "standard", "black": "a", "white": "b", "black_spec": "a=agent:random",
    "white_spec": "b=agent:random", "winner": None, "black_score": 0, "black_discs": 0,
    "white_discs": 0, "reason": "normal", "loser": None, "detail": "", "moves": "",
    "evals": [], "times": [],
    "stats": {c: {"moves": 0, "time": 0.0, "max_time": 0.0, "playouts": 0, "searched": 0,
                  "engine": "x"} for c in ("black", "white")},
    "started": 1700000000.0, "duration": 1.0, "ggf": "(;GM[Othello];)"}


def random_game(seed: int, rules: Rules) -> list[str]:
    rng = random.Random(seed)
    pos, moves = Position.start(rules), []
    while not pos.is_game_over():
        m = rng.choice(pos.legal_moves())
        moves.append("pass" if m == PASS else square_name(m))
        pos = pos.play(m)
    return moves


def write_journal(tmp_path, games: list[tuple[list[str], Rules, bool]]) -> None:
    lines = []
    for i, (moves, rules, swap) in enumerate(games):
        d = json.loads(json.dumps(TEMPLATE))
        d.update(key=f"a vs b|o{i}|s{int(swap)}|r0", opening_index=i, swap=int(swap),
                 rules=str(rules), moves=" ".join(moves),
                 black="b" if swap else "a", white="a" if swap else "b")
        lines.append(json.dumps(d))
    (tmp_path / "journal.jsonl").write_text("\n".join(lines) + "\n")


def test_every_judged_move_matches_the_exact_scores_of_its_moves(tmp_path):
    games = [(random_game(1, Rules.STANDARD), Rules.STANDARD, False),
             (random_game(2, Rules.STANDARD), Rules.STANDARD, True),
             (random_game(3, Rules.REVERSED), Rules.REVERSED, False)]
    write_journal(tmp_path, games)
    records, verdicts, players = run(tmp_path, wld_from=12, exact_from=9)
    assert len(records) == 3
    expected = 0
    for gi, (moves, rules, swap) in enumerate(games):
        pos = Position.start(rules)
        for ply, text in enumerate(moves):
            move = PASS if text == "pass" else None
            if move is None:
                move = next(m for m in pos.legal_moves() if square_name(m) == text)
            if pos.empties <= 12 and move != PASS and len(pos.legal_moves()) > 1:
                scores = solve_move_scores(pos)
                best, got = max(scores.values()), scores[move]
                (v,) = [v for v in verdicts if v.game == gi and v.ply == ply]
                mover = ("b" if swap else "a") if pos.side.name == "BLACK" else \
                    ("a" if swap else "b")
                assert v.player == mover and v.move == text and v.empties == pos.empties
                if pos.empties <= 9:
                    assert v.exact and (v.before, v.after) == (best, got)
                else:
                    assert not v.exact
                    assert (v.before, v.after) == ((best > 0) - (best < 0), (got > 0) - (got < 0))
                if v.keeps is not None:
                    assert scores[next(m for m in scores if square_name(m) == v.keeps)] \
                        == best or not v.exact
                expected += 1
            pos = pos.play(move)
    assert len(verdicts) == expected
    # random play gives games away: the totals are the verdicts' sums, by player
    for p in players:
        mine = [v for v in verdicts if v.player == p.player]
        assert p.moves == len(mine) and p.games == 3
        assert p.turns == sum(v.points_lost > 0 for v in mine) > 0
        assert p.points_lost == sum(v.points_lost for v in mine)
        assert p.discs_lost == sum(v.before - v.after for v in mine if v.exact) > 0


def test_the_command_prints_the_table_or_json_and_refuses_what_it_cannot_judge(tmp_path,
                                                                                capsys):
    write_journal(tmp_path, [(random_game(4, Rules.STANDARD), Rules.STANDARD, False)])
    assert main([str(tmp_path), "--from", "10", "--exact", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [p["player"] for p in out["players"]] == ["a", "b"]
    assert sum(p["turns"] for p in out["players"]) == len(out["turns"])
    assert main([str(tmp_path), "--from", "10", "--exact", "8"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:2] == ["player", "games"]
    assert main([str(tmp_path / "nothing")]) == 2
    assert "no such journal" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--from", "10", "--exact", "12"])
    assert Journal(tmp_path).load()[0].black == "a"      # the journal is only read
