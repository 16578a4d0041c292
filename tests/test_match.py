"""The referee and tournament runner (clients/match): tables, engines of every kind, faults,
resume, reversed rules, Elo arithmetic and the opening set."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from clients.channels import PipeChannel
from clients.match import elo as E
from clients.match import openings as O
from clients.match import pool as P
from clients.match.cli import main as cli_main
from clients.match.cli import parse_clock
from clients.match.compare import compare
from clients.match.journal import Journal
from clients.match.players import (
    PlayerSpec,
    PlayerTimeout,
    TimeControl,
    Turn,
    make_player,
    nboard_clock,
)
from clients.match.record import GameRecord
from clients.match.referee import GameTask, PlayerCache, play_game
from clients.match.tournament import (
    MatchConfig,
    MatchError,
    format_table,
    run_match,
    schedule,
    summarize,
)
from engine_server.game import Game, Position, Rules, ggf, parse_move

from .cs303_sources import LEGAL_MOVES

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
FAST = "agent:uct:iterations=50"


def _config(tmp_path: Path, players, **kw) -> MatchConfig:
    kw.setdefault("games", 2)
    return MatchConfig(players=list(players), out=tmp_path / kw.pop("name", "m"), **kw)


def _journal(config: MatchConfig) -> list[dict]:
    return [json.loads(l) for l in (config.out / "journal.jsonl").read_text().splitlines()]


def _replay(rec: dict) -> Game:
    return Game.from_moves(rec["moves"].split(), rules=rec["rules"])


# --- openings -----------------------------------------------------------------------------------

def test_symmetries_map_the_start_to_itself_or_its_colour_swap():
    start = Position.start()
    fixed = {n for n, t in O.SYMMETRIES.items()
             if O.transform_board(start.black, t) == start.black}
    swapped = {n for n, t in O.SYMMETRIES.items()
               if O.transform_board(start.black, t) == start.white}
    assert fixed == {"identity", "rot180", "transpose", "antitranspose"}
    assert swapped == {"rot90", "rot270", "mirror", "flip"}
    assert len(set(O.SYMMETRIES.values())) == 8


def test_opening_dedup_by_symmetry():
    first = [Game.from_moves([m]).position for m in ("d3", "c4", "f5", "e6")]
    assert len({O.canonical_key(p) for p in first}) == 1
    # the known counts of distinct positions up to symmetry: 1, 3 (perpendicular, diagonal,
    # parallel) and 14
    assert [len(O.enumerate_unique(k)) for k in (1, 2, 3)] == [1, 3, 14]
    two_ply = [(a, b) for a in Position.start().legal_moves()
               for b in Position.start().play(a).legal_moves()]
    assert len(two_ply) == 12 and len(O.dedup(two_ply)) == 3
    # an opening and its mirror images are one opening; a different line is not
    a = Game.from_moves("f5 d6 c3".split()).position
    for name in ("transpose", "rot180", "antitranspose"):
        image = Game.from_moves([O.transform_move(parse_move(m), O.SYMMETRIES[name])
                                 for m in "f5 d6 c3".split()]).position
        assert image != a and O.same_opening(a, image)
    assert not O.same_opening(a, Game.from_moves("f5 d6 c5".split()).position)


def test_builtin_openings_are_unique_legal_and_balanced():
    book = O.load()
    assert len(book) >= 100
    keys = {O.canonical_key(o.position()) for o in book}
    assert len(keys) == len(book)
    assert all(len(o.moves) == 6 for o in book)
    assert all(o.value is not None and abs(o.value) < 0.1 for o in book)
    assert O.load("start")[0].moves == ()


# --- Elo arithmetic -----------------------------------------------------------------------------

def test_elo_of_known_scores():
    assert E.elo_from_score(0.5) == 0.0
    assert E.elo_from_score(0.75) == pytest.approx(190.8485, abs=1e-3)
    assert E.expected_score(E.elo_from_score(0.3)) == pytest.approx(0.3)
    assert E.elo_from_score(1.0) == math.inf and E.elo_from_score(0.0) == -math.inf
    # 30 wins, 10 losses: s = 0.75, per-game variance 0.1875, se = sqrt(0.1875 / 40)
    iv = E.elo_interval(30, 0, 10)
    assert iv.elo == pytest.approx(190.85, abs=0.01)
    assert iv.low == pytest.approx(81.96, abs=0.01)
    assert iv.high == pytest.approx(353.12, abs=0.01)
    # draws shrink the variance: 20/10/10 is s = 0.625, variance 0.171875
    iv = E.elo_interval(20, 10, 10)
    assert iv.elo == pytest.approx(88.74, abs=0.01)
    assert iv.low == pytest.approx(-2.42, abs=0.01)
    assert E.elo_interval(10, 5, 10).elo == 0.0
    assert E.likelihood_of_superiority(10, 10) == 0.5


def test_bradley_terry_ratings():
    two = E.bradley_terry(["a", "b"], {("a", "b"): (30, 0, 10)})
    assert two[0].elo - two[1].elo == pytest.approx(190.85, abs=1.0)  # the prior barely pulls
    assert two[0].elo == pytest.approx(-two[1].elo)
    three = E.bradley_terry(["a", "b", "c"], {("a", "b"): (30, 0, 10), ("b", "c"): (30, 0, 10),
                                              ("a", "c"): (36, 0, 4)}, anchor="a")
    r = {x.name: x for x in three}
    assert r["a"].elo == 0.0 and r["a"].se == 0.0
    assert r["b"].elo == pytest.approx(-190.5, abs=2) and r["c"].elo == pytest.approx(-381, abs=3)
    perfect = E.bradley_terry(["a", "b"], {("a", "b"): (10, 0, 0)})
    assert math.isfinite(perfect[0].elo) and perfect[0].elo > 200


def test_sprt():
    s = E.Sprt.parse("0,10,0.05,0.05")
    assert s.lower == pytest.approx(-2.944, abs=1e-3) and s.upper == pytest.approx(2.944, abs=1e-3)
    assert s.status(0, 0, 0) == "continue"
    assert s.status(300, 100, 100) == "H1"
    assert s.status(100, 100, 300) == "H0"
    assert s.llr(100, 50, 100) < 0  # an even score is evidence for elo0 = 0 against elo1 = 10
    with pytest.raises(ValueError):
        E.Sprt.parse("10,0")


def test_game_pairs_give_the_pentanomial_interval():
    assert E.pentanomial([0, 0.5, 1, 1, 1.5, 2, 2, 2]) == [1, 1, 2, 1, 3]
    with pytest.raises(ValueError):
        E.pentanomial([0.25])
    # 40 pairs split 1-1 (each opening won by the colour it favours): the same 50% as 40
    # draws or as 20 pairs of 2 and 20 of 0, but no spread at all
    s, lo, hi = E.pair_score_interval([0, 0, 40, 0, 0])
    assert (s, lo, hi) == (0.5, 0.5, 0.5)
    # 10 pairs of 2 points and 10 of 0: mean 0.5, pair variance 0.25, se = sqrt(0.25 / 20)
    s, lo, hi = E.pair_score_interval([10, 0, 0, 0, 10])
    assert s == 0.5 and hi - s == pytest.approx(E.Z95 * math.sqrt(0.25 / 20))
    # the same 40 games as single games (20 wins, 20 losses): wider than paired 1-1 splits,
    # narrower than pairs that move together
    _, tlo, thi = E.score_interval(20, 0, 20)
    assert thi - 0.5 == pytest.approx(E.Z95 * math.sqrt(0.25 / 40))
    assert 0 < thi - 0.5 < hi - 0.5
    iv = E.pair_elo_interval([2, 5, 20, 8, 5])
    s, lo, hi = E.pair_score_interval([2, 5, 20, 8, 5])
    assert iv.elo == pytest.approx(E.elo_from_score(s)) and iv.low == pytest.approx(
        E.elo_from_score(lo)) and iv.high == pytest.approx(E.elo_from_score(hi))
    assert math.isinf(E.pair_elo_interval([0, 0, 0, 0, 0]).low)


def _record(opening: int, swap: int, a_wins: bool | None) -> GameRecord:
    """A played-out game of ``a`` against ``b``: ``a`` is black in swap 0."""
    rec = GameRecord.from_dict(json.loads(OLD_JOURNAL_LINE))
    rec.key = f"a vs b|o{opening}|s{swap}|r0"
    rec.opening_index, rec.swap = opening, swap
    rec.black, rec.white = ("a", "b") if swap == 0 else ("b", "a")
    rec.reason, rec.loser = "normal", None
    a_color = "black" if swap == 0 else "white"
    b_color = "white" if swap == 0 else "black"
    rec.winner = None if a_wins is None else (a_color if a_wins else b_color)
    rec.black_score = 0 if a_wins is None else (2 if rec.winner == "black" else -2)
    return rec


def test_the_table_reports_game_pairs_beside_single_games(tmp_path):
    # openings 0-5 each won by black whoever plays it, opening 6 a draw and a win for a,
    # opening 7 played once (its pair unfinished)
    recs = [_record(o, sw, sw == 0) for o in range(6) for sw in (0, 1)]
    recs += [_record(6, 0, None), _record(6, 1, True), _record(7, 0, True)]
    config = MatchConfig(players=["a=agent:random", "b=agent:random"], out=tmp_path)
    res = summarize(config, recs, 16)
    (pr,) = res["pairings"]
    assert (pr["wins"], pr["draws"], pr["losses"]) == (8, 1, 6)
    gp = pr["game_pairs"]
    assert gp["pairs"] == 7 and gp["pentanomial"] == [0, 0, 6, 1, 0]
    s, lo, hi = E.pair_score_interval([0, 0, 6, 1, 0])
    assert gp["score"] == round(s, 4) and gp["score_interval"] == [round(lo, 4), round(hi, 4)]
    # pairs split by colour are far more certain than the same games counted one by one
    assert gp["score_interval"][1] - gp["score_interval"][0] < \
        0.5 * (pr["score_interval"][1] - pr["score_interval"][0])
    text = format_table(res)
    assert "7 pairs scoring 0/0.5/1/1.5/2: 0/0/6/1/0" in text
    assert f"score {100 * pr['score']:.1f}% [" in text
    # without colour swaps there are no pairs to report
    config.swap = False
    assert "game_pairs" not in summarize(config, recs, 16)["pairings"][0]


def test_compare_pairs_two_matches_game_by_game(tmp_path, capsys):
    # match A: a wins openings 0-3 as black only; match B: the same, and opening 4 as white
    # too, a draw in opening 5 as black, and one game A never played
    a = [_record(o, sw, sw == 0) for o in range(6) for sw in (0, 1)]
    b = [_record(o, sw, sw == 0 or o == 4) for o in range(6) for sw in (0, 1)]
    b[10] = _record(5, 0, None)
    b.append(_record(9, 0, True))
    for name, recs in (("A", a), ("B", b)):
        j = Journal(tmp_path / name)
        j.dir.mkdir()
        for r in recs:
            j.append(r)
    c = compare(a, b)
    assert (c.player_a, c.games, c.changed, c.only_a, c.only_b) == ("a", 12, 2, 0, 1)
    assert c.score_a == 0.5 and c.mean_diff == pytest.approx(0.5 / 12)
    diffs = [0.0] * 10 + [1.0, -0.5]
    sd = math.sqrt(sum((d - 0.5 / 12) ** 2 for d in diffs) / 11)
    assert c.high - c.mean_diff == pytest.approx(E.Z95 * sd / math.sqrt(12))
    assert cli_main(["compare", str(tmp_path / "A"), str(tmp_path / "B")]) == 0
    out = capsys.readouterr().out
    assert "12 games matched" in out and "2 results differ" in out and "+0.042" in out
    assert cli_main(["compare", str(tmp_path / "A"), str(tmp_path / "nothing")]) == 2
    assert "holds no journal.jsonl" in capsys.readouterr().err
    with pytest.raises(MatchError, match="no game of 'c'"):
        compare(a, b, player_b="c")


# --- tournaments with in-process agents ---------------------------------------------------------

@pytest.mark.slow  # a tournament
def test_round_robin_of_three_agents(tmp_path):
    players = ["agent:random", "agent:pseudo-random", FAST]
    config = _config(tmp_path, players, games=4)
    res = run_match(config, concurrency=2, progress=False)
    recs = _journal(config)
    assert len(recs) == 12 == res["games_played"] == res["games_scheduled"]
    assert len({r["key"] for r in recs}) == 12
    by_name = {p["name"]: p for p in res["players"]}
    for p in res["players"]:
        assert p["games"] == 8 and p["wins"] + p["draws"] + p["losses"] == 8
        assert p["score"] == pytest.approx((p["wins"] + p["draws"] / 2) / 8)
        assert p["time_losses"] == 0 and p["forfeits"] == {}
    # the table agrees with the games themselves
    for name, p in by_name.items():
        wins = sum(1 for r in recs if r["winner"] and r[r["winner"]] == name)
        assert wins == p["wins"]
    for r in recs:
        g = _replay(r)
        assert r["reason"] == "normal"
        res_ = g.result()
        assert r["black_score"] == res_.black_score
        assert r["winner"] == (None if res_.winner is None else str(res_.winner))
    assert sum(p["wins"] for p in res["players"]) == sum(p["losses"] for p in res["players"])
    for pr in res["pairings"]:
        assert pr["games"] == 4
    # each opening twice, colours swapped
    per_opening = Counter((r["pairing"], r["opening_index"]) for r in recs)
    assert set(per_opening.values()) == {2}
    for (pairing, idx), _ in per_opening.items():
        pair = [r for r in recs if r["pairing"] == pairing and r["opening_index"] == idx]
        assert {r["swap"] for r in pair} == {0, 1}
        assert pair[0]["black"] == pair[1]["white"]
        assert all(r["moves"].startswith(r["opening"]) for r in pair)
    # GGF records: one per game, readable, and the same games as the journal
    records = [ggf.parse(line) for line in (config.out / "games.ggf").read_text().splitlines()]
    assert len(records) == 12
    assert sorted(" ".join(m.text()[:2].lower() if m.move != 64 else "pass"
                           for m in rec.moves) for rec in records) == \
        sorted(r["moves"] for r in recs)
    uct_moves = [m for rec in records for m in rec.moves
                 if m.eval is not None and m.time is not None]
    assert uct_moves, "the searching agent's moves carry eval and time"
    saved = json.loads((config.out / "results.json").read_text())
    assert saved["players"] == res["players"]
    assert (config.out / "score_matrix.png").stat().st_size > 0
    assert (config.out / "elo.png").stat().st_size > 0
    assert FAST in format_table(res)


def test_reversed_rules_score_correctly(tmp_path):
    config = _config(tmp_path, ["agent:random", "agent:pseudo-random"], games=8,
                     rules="reversed", openings="start")
    res = run_match(config, concurrency=1, progress=False, plots=False)
    recs = _journal(config)
    assert len(recs) == 8
    decided = 0
    for r in recs:
        g = _replay(r)
        assert g.rules == Rules.REVERSED and r["rules"] == "reversed"
        b, w = r["black_discs"], r["white_discs"]
        if b != w:
            decided += 1
            assert r["winner"] == ("black" if b < w else "white")  # fewer discs win
            assert (r["black_score"] > 0) == (b < w)
        assert "TY[8a]" in (config.out / "games.ggf").read_text()
    assert decided > 0
    total = {p["name"]: p for p in res["players"]}
    wins = Counter(r[r["winner"]] for r in recs if r["winner"])
    for name, p in total.items():
        assert p["wins"] == wins[name]


def test_kill_and_resume_keeps_every_game_once(tmp_path):
    players = ["agent:random", FAST]
    config = _config(tmp_path, players, games=6)
    first = run_match(config, concurrency=1, max_games=4, progress=False, plots=False)
    assert first["games_played"] == 4 and not first["complete"]
    keys_before = [r["key"] for r in _journal(config)]
    # a write cut by a kill leaves half a line; it must not survive or swallow the next game
    with open(config.out / "journal.jsonl", "a") as f:
        f.write('{"key": "cut-short", "winn')
    again = MatchConfig(players=players, out=config.out, games=6)
    done = run_match(again, concurrency=1, progress=False, plots=False)
    recs = _journal(again)
    keys = [r["key"] for r in recs]
    assert keys[:4] == keys_before
    assert len(keys) == len(set(keys)) == 6 == done["games_played"]
    assert sorted(keys) == sorted(t.key for t in schedule(again))
    assert len((config.out / "games.ggf").read_text().splitlines()) == 6
    # a third run finds nothing to do
    assert run_match(again, concurrency=1, progress=False, plots=False)["games_played"] == 6
    assert len(_journal(again)) == 6
    # another match in the same directory is refused
    with pytest.raises(MatchError):
        run_match(MatchConfig(players=["agent:random", "agent:random"], out=config.out),
                  concurrency=1, progress=False, plots=False)


@pytest.mark.slow  # a match process killed and rerun
def test_cli_killed_with_sigkill_resumes(tmp_path):
    out = tmp_path / "cli"
    args = [PY, "-m", "clients.match.cli", "agent:random", "agent:uct:iterations=400",
            "--games", "6", "--openings", "start", "--concurrency", "1", "--out", str(out),
            "--no-plots", "--no-progress"]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = out / "journal.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if journal.exists() and len(journal.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    n_killed = len(journal.read_text().splitlines())
    assert 2 <= n_killed < 6
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    keys = [json.loads(l)["key"] for l in journal.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 6
    assert "6/6 games" in done.stdout


def test_sprt_stops_a_decided_match(tmp_path):
    config = _config(tmp_path, [FAST, "agent:random"], games=40, openings="start",
                     sprt=E.Sprt(0, 200, 0.05, 0.05))
    res = run_match(config, concurrency=1, progress=False, plots=False)
    assert res["sprt"]["status"] == "H1"
    assert res["games_played"] < 40 and res["complete"] and res["stopped"]


# --- engines over pipes and sockets -------------------------------------------------------------

@pytest.mark.slow  # whole games against engine processes
def test_gtp_nboard_and_zmq_engines_take_part(tmp_path):
    from engine_server.serve.zmq_server import ServerConfig, ZmqServer
    from engine_server.session import EngineOptions

    server = ZmqServer(EngineOptions(agent="uct:iterations=100", warmup=False),
                       ServerConfig(endpoint="tcp://127.0.0.1:*"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        engine = f"{PY} -m engine_server --agent uct:iterations=100 --no-warmup"
        players = ["agent:random", f"gtp:{engine}", f"nboard:{engine}", f"zmq:{server.endpoint}"]
        # NBoard 'set depth 1' is a 2,000-playout budget for our engine
        config = _config(tmp_path, players, format="gauntlet", games=2,
                         tc=TimeControl(grace=5.0, nboard_depth=1))
        res = run_match(config, concurrency=2, progress=False, plots=False)
    finally:
        server.stop()
        thread.join(5)
    recs = _journal(config)
    assert len(recs) == 6
    assert all(r["reason"] == "normal" for r in recs), [r["detail"] for r in recs]
    for r in recs:
        assert len(_replay(r).moves) >= 58
    engines = {r["stats"][c]["engine"] for r in recs for c in ("black", "white")
               if not r[c].startswith("agent:")}
    assert engines == {"OthelloPy"}  # the name the engines gave (GTP name, NBoard set myname)
    nboard_evals = [e for r in recs for e, i in zip(r["evals"], range(len(r["evals"])))
                    if e is not None and (r["black"].startswith("nboard:") == (i % 2 == 0))]
    assert nboard_evals, "NBoard moves carry the engine's eval"
    assert res["players"][0]["losses"] >= 4  # random play loses to the searching engines


def test_nboard_clock_carries_a_per_move_limit_and_a_game_clock():
    items = [ggf.MoveItem(parse_move("f5")), ggf.MoveItem(parse_move("d6"), 1.5, 0.12)]
    ti, sent = nboard_clock(TimeControl(move_time=0.3), items)
    # M now and M after each move, every earlier move charged M: the mover's clock reads M.
    assert ti == "0.3/0.3" and [i.time for i in sent] == [0.3, 0.3]
    assert [(i.move, i.eval) for i in sent] == [(i.move, i.eval) for i in items]
    ti, sent = nboard_clock(TimeControl(move_time=5.0), items)
    assert ti == "00:05/00:05"
    ti, sent = nboard_clock(TimeControl(clock=90.0, increment=2.0), items)
    assert ti == "01:30/00:02" and sent == items
    assert nboard_clock(TimeControl(clock=60.0), items)[0] == "01:00"
    assert nboard_clock(TimeControl(), items) == ("0", items)
    # What our engine makes of it: exactly the per-move limit, less its lag buffer.
    from engine_server.commands.nboard import NBoardHandler
    from engine_server.search.timeman import TimeManager

    rec = ggf.GgfRecord(start=Position.start(), moves=nboard_clock(TimeControl(move_time=2.0),
                                                                 items)[1],
                        tags={"TI": nboard_clock(TimeControl(move_time=2.0), items)[0]})
    parsed = ggf.parse(rec.to_text())
    h = NBoardHandler.__new__(NBoardHandler)
    h.tc, h.times = parsed.time_control(), [m.time for m in parsed.moves]
    h.session = type("S", (), {"game": parsed.game()})()
    clock = h._clock(parsed.game().position.side)
    assert clock is not None and clock.left == pytest.approx(2.0)
    budget = TimeManager().budget(clock, 58, None)
    assert budget == pytest.approx(2.0 - TimeManager().lag_buffer)


@pytest.mark.slow  # whole games between engine processes
def test_nboard_engines_play_a_per_move_limit_from_the_ggf_clock(tmp_path):
    log = tmp_path / "to_engine.txt"
    engine = f"{PY} -m engine_server --no-warmup"
    tee = f"sh -c 'tee -a {log} | {engine} --agent best:threads=1'"
    players = [f"best=nboard:{tee}", f"mcts=nboard:{engine} --agent mcts:threads=1"]
    config = _config(tmp_path, players, games=2, openings="start",
                     tc=TimeControl(move_time=0.3, grace=1.0))
    run_match(config, concurrency=1, progress=False, plots=False)
    recs = _journal(config)
    assert len(recs) == 2
    assert all(r["reason"] == "normal" for r in recs), [r["detail"] for r in recs]
    # played to the end (best can wipe mcts out in 17 plies at 0.3 s, so no length is assumed)
    assert all(_replay(r).is_over() for r in recs)
    games = [l for l in log.read_text().splitlines() if l.startswith("set game ")]
    assert games and all("TI[0.3/0.3]" in l for l in games)
    last = ggf.parse(games[-1][len("set game "):])
    assert last.moves and all(m.time == 0.3 for m in last.moves)


SLOW_NBOARD = textwrap.dedent('''\
    # An NBoard engine that ignores the clock: every go takes 30 s.
    import sys, time
    for line in sys.stdin:
        word = line.split()[0] if line.split() else ""
        if word == "ping":
            print("pong " + line.split()[1], flush=True)
        elif word == "go":
            time.sleep(30)
            print("=== F5", flush=True)
        elif word == "quit":
            break
    ''')


def test_an_nboard_engine_that_ignores_the_clock_is_told_what_to_set(tmp_path):
    script = tmp_path / "slow_nboard.py"
    script.write_text(SLOW_NBOARD)
    spec = PlayerSpec.parse(f"deep=nboard:{PY} {script}")
    player = make_player(spec, TimeControl(move_time=0.1, grace=0.2))
    try:
        player.channel = PipeChannel.spawn([PY, str(script)])  # no handshake: straight to go
        game = Game()
        with pytest.raises(PlayerTimeout) as e:
            player.genmove(Turn(game, game.position.side, None, [], 0.3))
    finally:
        player.kill()
    assert "TI[0.1/0.1]" in str(e.value) and "--nboard-depth" in str(e.value)


FAKE_GTP = textwrap.dedent('''\
    # A minimal GTP engine that plays its first legal move, with a fault chosen by MODE.
    import sys, time
    from engine_server.game import PASS, Game, parse_move, square_name
    MODE = sys.argv[1]
    game = Game()
    game.play(parse_move(square_name(game.position.legal_moves()[0])))
    game = Game()  # the kernels loaded before the handshake, not billed to the first move
    asked = 0
    def out(text):
        sys.stdout.write(text + "\\n\\n")
        sys.stdout.flush()
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        cmd = parts[0]
        if cmd == "quit":
            out("=")
            break
        if cmd == "protocol_version":
            if MODE == "slowstart":
                time.sleep(3)  # a cold start, as an engine compiling its kernels
            out("= 2")
        elif cmd == "name":
            out("= Fake" + MODE)
        elif cmd == "list_commands":
            out("= protocol_version\\nname\\nlist_commands\\nboardsize\\nclear_board\\nplay"
                "\\ngenmove\\nquit")
        elif cmd == "clear_board":
            game = Game()
            asked = 0
            out("=")
        elif cmd == "play":
            game.play(parse_move(parts[2]))
            out("=")
        elif cmd == "genmove":
            asked += 1
            if MODE == "illegal":
                out("= d4")  # an occupied square
                continue
            if MODE == "sleep":
                time.sleep(30)
            elif MODE == "crash":
                sys.exit(3)
            elif MODE == "garbage":
                out("= hello")
                continue
            elif MODE == "late" and asked <= 2:
                time.sleep(0.45)
            elif MODE == "slowclock":
                time.sleep(0.25)
            move = game.position.legal_moves()[0]
            game.play(move)
            out("= " + square_name(move))
        elif cmd == "boardsize":
            out("=")
        else:
            out("? unknown command")
    ''')


@pytest.mark.slow  # a gauntlet against engine processes
def test_faulty_engines_lose_with_the_right_reason(tmp_path):
    script = tmp_path / "fake_gtp.py"
    script.write_text(FAKE_GTP)
    modes = ("illegal", "sleep", "crash", "garbage", "late")
    players = [FAST] + [f"{m}=gtp:{PY} {script} {m}" for m in modes]
    # A playout budget keeps the agent from thinking the whole move time.  The grace is wide
    # (the late engine answers 0.15 s past the limit, the sleeper 30 s) so that what a busy
    # machine adds to a reply cannot turn a late move into a lost one.
    config = _config(tmp_path, players, format="gauntlet", games=2,
                     tc=TimeControl(move_time=0.3, grace=1.5, playouts=200))
    res = run_match(config, concurrency=1, progress=False, plots=False)
    recs = _journal(config)
    # the sleeper was cut off at the limit, not waited for
    assert all(r["duration"] < 15 for r in recs if "sleep" in r["pairing"])
    assert len(recs) == 10
    late = [r for r in recs if "late" in r["pairing"]]
    recs = [r for r in recs if "late" not in r["pairing"]]
    expected = {"illegal": "illegal", "sleep": "timeout", "crash": "crash",
                "garbage": "protocol"}
    # a move later than the limit but within the grace margin stands
    assert all(r["reason"] == "normal" for r in late), [r["detail"] for r in late]
    assert all(r["stats"][c]["max_time"] > 0.3 for r in late
               for c in ("black", "white") if r[c] == "late")
    for r in recs:
        fake = r["black"] if r["black"] in expected else r["white"]
        fake_color = "black" if r["black"] == fake else "white"
        assert r["loser"] == fake_color
        assert r["reason"] == expected[fake], r["detail"]
        assert r["winner"] != fake_color
        assert ":t]" in r["ggf"] if expected[fake] == "timeout" else ":r]" in r["ggf"]
    by_name = {p["name"]: p for p in res["players"]}
    assert by_name[FAST]["wins"] >= 8 and by_name[FAST]["time_losses"] == 0
    assert by_name["sleep"]["time_losses"] == 2  # the restarted engine timed out again
    assert by_name["crash"]["forfeits"] == {"crash": 2}
    assert by_name["illegal"]["forfeits"] == {"illegal": 2}
    assert by_name["garbage"]["forfeits"] == {"protocol": 2}
    assert "played d4" in next(r["detail"] for r in recs if r["reason"] == "illegal")


@pytest.mark.slow  # engine processes
def test_setup_timeout_bounds_the_handshake_and_is_not_part_of_the_match(tmp_path, capsys):
    script = tmp_path / "fake_gtp.py"
    script.write_text(FAKE_GTP)
    slow = f"slow=gtp:{PY} {script} slowstart"
    out = tmp_path / "m"
    argv = [FAST, slow, "--games", "2", "--move-time", "1", "--playouts", "200", "--out",
            str(out), "--concurrency", "1", "--no-progress", "--no-plots", "--seed", "5"]
    # 3 s to answer protocol_version: past a 0.5 s limit, each game lost before it starts
    assert cli_main(argv + ["--setup-timeout", "0.5"]) == 0
    recs = [json.loads(l) for l in (out / "journal.jsonl").read_text().splitlines()]
    assert len(recs) == 2
    for r in recs:
        assert r["reason"] == "timeout" and "at game start" in r["detail"], r["detail"]
        assert r[r["loser"]] == "slow"
    # the same match with more games under a longer limit resumes (the limit does not change
    # which games exist) and the new games are played out
    assert cli_main(argv[:3] + ["4"] + argv[4:] + ["--setup-timeout", "30"]) == 0
    recs = [json.loads(l) for l in (out / "journal.jsonl").read_text().splitlines()]
    assert len(recs) == 4
    assert all(r["reason"] != "timeout" for r in recs[2:]), [r["detail"] for r in recs[2:]]
    capsys.readouterr()


@pytest.mark.slow  # whole games against engine processes
def test_game_clock_is_enforced_and_sent(tmp_path):
    script = tmp_path / "fake_gtp.py"
    script.write_text(FAKE_GTP)
    # 0.25 s a move against a 1 s clock: the flag falls on the fifth move or so
    config = _config(tmp_path, [FAST, f"slow=gtp:{PY} {script} slowclock"], games=2,
                     openings="start", tc=TimeControl(clock=1.0, increment=0.0, grace=0.2))
    res = run_match(config, concurrency=1, progress=False, plots=False)
    recs = _journal(config)
    for r in recs:
        assert r["reason"] == "timeout" and r[r["loser"]] == "slow", r["detail"]
        assert "clock fell" in r["detail"] or "the clock" in r["detail"]
        slow_color = r["loser"]
        # Not on its first move: the clock runs over moves.  Five moves take 1.25 s here; a busy
        # machine makes each take longer, so the flag can fall sooner, never later.
        assert 2 <= r["stats"][slow_color]["moves"] <= 6
        assert "TI[00:01" in r["ggf"]
    assert {p["name"]: p for p in res["players"]}["slow"]["time_losses"] == 2
    # An agent that never stops on its own budget plans from the clock and does not flag.  The
    # clock is 3 s, not less: the time manager keeps half of a small allotment per move for
    # lag (0.06 s a move here), and at 0.6 s that half (0.01 s) was less than what a busy
    # machine adds to a move.
    clock, inc, grace = 3.0, 0.01, 0.2
    task = GameTask(key="k", pairing="p", opening_index=0, opening=(), swap=0, round=0,
                    black="agent:uct:iterations=100000000", white="agent:random",
                    black_label="slow", white_label="random", rules="standard",
                    tc=TimeControl(clock=clock, increment=inc, grace=grace), seed=1)
    rec = play_game(task, PlayerCache())
    assert rec["reason"] == "normal", rec["detail"]
    assert rec["stats"]["black"]["time"] < clock + 30 * inc + grace


CS303_AI = textwrap.dedent('''\
    import random
    import time
    import numpy as np
    COLOR_BLACK, COLOR_WHITE, COLOR_NONE = -1, 1, 0
    MODE = {mode!r}
    ''') + LEGAL_MOVES + textwrap.dedent('''\
    class AI(object):
        def __init__(self, chessboard_size, color, time_out):
            self.size = chessboard_size
            self.color = color
            self.time_out = time_out
            self.candidate_list = []
            self.rng = random.Random(0)
            self.calls = 0

        def go(self, chessboard):
            self.candidate_list.clear()
            moves = legal_moves(chessboard, self.color)
            self.candidate_list.extend(moves)
            if moves:
                self.candidate_list.append(self.rng.choice(moves))
            self.calls += 1
            if MODE == "slow" and moves and self.calls <= 2:
                time.sleep(10)
            if MODE == "raise" and moves:
                raise ValueError("student bug")
    ''')


@pytest.mark.slow  # whole games as the CS303 judge runs them
def test_cs303_ai_files_play_as_the_judge_runs_them(tmp_path):
    files = {}
    for mode in ("ok", "slow", "raise"):
        path = tmp_path / f"ai_{mode}.py"
        path.write_text(CS303_AI.format(mode=mode))
        files[mode] = path
    players = ["agent:random", f"cs303:{files['ok']}", f"slow=cs303:{files['slow']}",
               f"raise=cs303:{files['raise']}"]
    # the grace is wide for a busy machine; the slow player's go would take 10 s uncut
    config = _config(tmp_path, players, format="gauntlet", games=2, rules="reversed",
                     openings="start", tc=TimeControl(move_time=0.3, grace=3.0))
    res = run_match(config, concurrency=2, progress=False, plots=False)
    recs = _journal(config)
    assert len(recs) == 6
    ok = [r for r in recs if "ai_ok" in r["pairing"] and "slow" not in r["pairing"]
          and "raise" not in r["pairing"]]
    assert len(ok) == 2 and all(r["reason"] == "normal" for r in ok)
    # a go() cut by the judge's timer still plays candidate_list[-1]: no time loss
    slow = [r for r in recs if "slow" in r["pairing"]]
    assert all(r["reason"] == "normal" for r in slow), [r["detail"] for r in slow]
    for r in slow:
        color = "black" if r["black"] == "slow" else "white"
        assert 0.3 <= r["stats"][color]["max_time"] < 0.3 + 3.0
    raised = [r for r in recs if "raise" in r["pairing"]]
    assert all(r["reason"] == "crash" and "student bug" in r["detail"] for r in raised)
    assert {p["name"]: p for p in res["players"]}["raise"]["forfeits"] == {"crash": 2}


# --- the command line ---------------------------------------------------------------------------

def test_cli_prints_the_table_and_writes_results(tmp_path, capsys):
    out = tmp_path / "cli"
    rc = cli_main(["agent:random", "agent:pseudo-random", "--games", "2", "--out", str(out),
                   "--concurrency", "1", "--no-progress", "--no-plots", "--seed", "3"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "2/2 games" in text and "agent:pseudo-random" in text
    data = json.loads((out / "results.json").read_text())
    assert data["games_played"] == 2 and data["match"]["seed"] == 3
    assert parse_clock("180/0") == (180.0, 0.0) and parse_clock("5:00/2") == (300.0, 2.0)
    with pytest.raises(SystemExit):
        cli_main(["agent:random", "agent:nosuchagent", "--out", str(tmp_path / "x")])


def test_player_specs():
    s = PlayerSpec.parse("strong=agent:uct:c=1,iterations=5")
    assert (s.kind, s.target, s.name) == ("agent", "uct:c=1,iterations=5", "strong")
    s = PlayerSpec.parse("agent:uct:c=1")
    assert s.name == "agent:uct:c=1" and s.target == "uct:c=1"
    assert PlayerSpec.parse("gtp:edax -gtp").target == "edax -gtp"
    for bad in ("uct", "agent:", "foo:bar", "agent:nosuch"):
        with pytest.raises(ValueError):
            PlayerSpec.parse(bad)


# --- typed game records and the worker pool -----------------------------------------------------

# A journal line as the referee wrote it before records were typed (a forfeit: nulls included).
OLD_JOURNAL_LINE = (
    '{"key":"a vs b|o0|s0|r0","pairing":"a vs b","opening_index":0,"opening":"","swap":0,'
    '"round":0,"seed":12345,"rules":"standard","black":"a","white":"b",'
    '"black_spec":"a=agent:random","white_spec":"b=agent:random","winner":"white",'
    '"black_score":null,"black_discs":2,"white_discs":2,"reason":"protocol","loser":"black",'
    '"detail":"said \\"hello\\"","moves":"","evals":[],"times":[],'
    '"stats":{"black":{"moves":0,"time":0.0,"max_time":0.0,"playouts":0,"searched":0,'
    '"engine":"a"},"white":{"moves":0,"time":0.0,"max_time":0.0,"playouts":0,"searched":0,'
    '"engine":"b"}},"started":1700000000.5,"duration":0.25,'
    '"ggf":"(;GM[Othello]PB[a]PW[b]RE[-64.000:r];)"}')


def test_game_record_round_trips_to_the_same_journal_line(tmp_path):
    task = schedule(_config(tmp_path, ["agent:random", FAST], games=1))[0]
    raw = play_game(task, PlayerCache())
    rec = GameRecord.from_dict(raw)
    assert rec.to_dict() == raw and list(rec.to_dict()) == list(raw)
    assert list(rec.stats["black"].to_dict()) == list(raw["stats"]["black"])
    journal = Journal(tmp_path)
    journal.append(rec)
    line = (tmp_path / "journal.jsonl").read_text()
    assert line == json.dumps(raw, separators=(",", ":")) + "\n"
    (back,) = journal.load()
    assert back == rec and back.to_dict() == raw
    assert (tmp_path / "games.ggf").read_text() == raw["ggf"] + "\n"


def test_journals_written_before_typed_records_load_unchanged(tmp_path):
    extra = OLD_JOURNAL_LINE[:-1] + ',"future_key":[1,2]}'
    (tmp_path / "journal.jsonl").write_text(OLD_JOURNAL_LINE + "\n" + extra.replace(
        "|r0", "|r1") + "\n" + '{"not":"a record"}\n')
    recs = Journal(tmp_path).load()  # the line that is no record is skipped, not fatal
    assert [r.key for r in recs] == ["a vs b|o0|s0|r0", "a vs b|o0|s0|r1"]
    assert json.dumps(recs[0].to_dict(), separators=(",", ":")) == OLD_JOURNAL_LINE
    assert recs[1].extra == {"future_key": [1, 2]}
    assert json.dumps(recs[1].to_dict(), separators=(",", ":")) == extra.replace("|r0", "|r1")
    assert recs[0].winner_label == "b" and recs[0].outcome_for("a") == "loss"
    config = MatchConfig(players=["a=agent:random", "b=agent:random"], out=tmp_path)
    res = summarize(config, recs, 2)
    by_name = {p["name"]: p for p in res["players"]}
    assert by_name["a"]["forfeits"] == {"protocol": 2} and by_name["b"]["wins_by_forfeit"] == 2
    assert by_name["a"]["margin"] is None and res["complete"]
    # slow moves were not counted then: unknown, not none
    assert by_name["a"]["slow_moves"] is None and recs[0].stats["black"].slow_moves is None
    row = next(line for line in format_table(res).splitlines() if line.startswith("a "))
    assert row.split()[-4:] == ["0", "-", "protocol", "2"]  # time losses, slow moves, other


def _pool_work(task: dict) -> str:
    """Work for the pool tests, run in spawned workers."""
    marker = Path(task.get("marker", "/nonexistent"))
    if task["kind"] == "die_once" and not marker.exists():
        marker.write_text("died")
        os._exit(3)  # a native crash, as far as the pool can tell
    if task["kind"] == "stuck":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as a worker deep in native code
        marker.write_text(str(os.getpid()))
        time.sleep(120)
    if task["kind"] == "after":  # returns once the stuck worker is in place
        while not marker.exists():
            time.sleep(0.02)
    return task["key"]


@pytest.mark.slow  # spawned worker processes
def test_pool_replays_only_the_game_a_dead_worker_held(tmp_path):
    tasks = [{"key": f"g{i}", "kind": "ok"} for i in range(5)]
    tasks[2] = {"key": "g2", "kind": "die_once", "marker": str(tmp_path / "died")}
    got: list[str] = []
    P.run_pool([(None, t) for t in tasks], 2, lambda _, out: got.append(out),
               lambda _: False, work=_pool_work)
    assert sorted(got) == [f"g{i}" for i in range(5)]  # each once, the lost one replayed
    assert (tmp_path / "died").exists()


@pytest.mark.slow  # spawned worker processes
def test_pool_interrupt_kills_a_worker_that_ignores_sigterm(tmp_path, monkeypatch):
    monkeypatch.setattr(P, "TERM_WAIT", 0.5)
    marker = tmp_path / "stuck.pid"
    tasks = [{"key": "stuck", "kind": "stuck", "marker": str(marker)},
             {"key": "after", "kind": "after", "marker": str(marker)}]

    def finish(_, out):
        raise KeyboardInterrupt  # Ctrl-C while the stuck game runs

    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        P.run_pool([(None, t) for t in tasks], 2, finish, lambda _: False, work=_pool_work)
    assert time.monotonic() - t0 < 60
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped


# Submissions that fail the way students' files do, each named as the course names it.
FAULTY_AI = textwrap.dedent('''\
    import time
    MODE = {mode!r}
    ''') + LEGAL_MOVES + textwrap.dedent('''\
    class AI(object):
        def __init__(self, chessboard_size, color, time_out):
            if MODE == "init":
                raise RuntimeError("bad constructor")
            self.color = color
            self.candidate_list = []

        def go(self, chessboard):
            self.candidate_list.clear()
            if MODE == "sleep":
                time.sleep(30)  # the judge's timer cuts it with nothing in the list
            moves = legal_moves(chessboard, self.color)
            if MODE == "empty":
                return
            self.candidate_list.extend(moves)
            if MODE == "slow":
                time.sleep(0.4)
            self.candidate_list.append({{"occupied": (3, 3), "outside": (9, 9),
                                        "noflip": (0, 0), "list": [2, 3]}}.get(MODE, moves[0]))
    ''')


def _faulty(tmp_path: Path, mode: str) -> Path:
    path = tmp_path / f"{mode}.py"
    path.write_text(FAULTY_AI.format(mode=mode))
    return path


@pytest.mark.parametrize("mode, reason, words", [
    ("sleep", "timeout", "timeout: go ran past time_out (0.3 s) with an empty candidate_list"),
    ("empty", "illegal", "empty candidate_list (a pass) while moves exist: (2, 3), "),
    ("occupied", "illegal", "candidate_list[-1] = (3, 3) is an occupied square"),
    ("outside", "illegal", "candidate_list[-1] = (9, 9) is outside the board"),
    ("noflip", "illegal", "candidate_list[-1] = (0, 0) flips nothing"),
    ("init", "crash", "exception in __init__: RuntimeError: bad constructor"),
])
def test_cs303_faults_are_named_as_the_course_names_them(tmp_path, mode, reason, words):
    from clients.match.players import Cs303Player, PlayerError, Turn
    from engine_server.game import Color

    player = Cs303Player(PlayerSpec.parse(f"cs303:{_faulty(tmp_path, mode)}"),
                         TimeControl(move_time=0.3, grace=3.0))
    game = Game()
    try:
        with pytest.raises(PlayerError) as e:
            player.new_game(game, Color.BLACK, 1)
            player.genmove(Turn(game, Color.BLACK, None, [], 3.3))
    finally:
        player.kill()
    assert e.value.reason == reason and words in str(e.value), str(e.value)


def test_a_cs303_go_cut_with_an_empty_list_loses_on_time_and_the_clock_is_excess_total_time(
        tmp_path):
    sleep = f"sleep=cs303:{_faulty(tmp_path, 'sleep')}"
    config = _config(tmp_path, ["agent:random", sleep], games=1, swap=False, rules="reversed",
                     openings="start", tc=TimeControl(move_time=0.3, grace=3.0), name="a")
    (task,) = schedule(config)
    rec = play_game(task, PlayerCache())
    assert (rec["loser"], rec["reason"]) == ("white", "timeout"), rec["detail"]
    assert rec["ggf"].count(":t]") == 1
    slow = f"slow=cs303:{_faulty(tmp_path, 'slow')}"
    config = _config(tmp_path, [slow, "agent:random"], games=1, swap=False, rules="reversed",
                     openings="start", tc=TimeControl(clock=1.0, grace=0.2), name="b")
    (task,) = schedule(config)
    rec = play_game(task, PlayerCache())
    assert (rec["loser"], rec["reason"]) == ("black", "timeout")
    # over the clock while the referee waits, or after the answer: the course's words
    assert rec["detail"].startswith("excess total time: "), rec["detail"]
    assert "clock" in rec["detail"]


@pytest.mark.slow  # whole games as the CS303 judge runs them
def test_course_staff_play_a_folder_of_submissions_by_glob_and_resume(tmp_path, capsys):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "11111111.py").write_text(CS303_AI.format(mode="ok").replace(
        "self.calls += 1", "self.calls += 1\n        print('thinking...')"))  # prints: harmless
    (subs / "22222222.py").write_text(FAULTY_AI.format(mode="sleep"))
    (subs / "33333333.py").write_text(CS303_AI.format(mode="raise"))
    out = tmp_path / "standings"
    argv = [f"cs303:{subs}/*.py", "--format", "round-robin", "--rules", "reversed",
            "--games", "1", "--no-swap", "--openings", "start", "--move-time", "0.3",
            "--grace", "3", "--concurrency", "2", "--out", str(out), "--no-plots",
            "--no-progress"]
    assert cli_main(argv) == 0
    table = capsys.readouterr().out
    assert "3/3 games" in table
    for student in ("11111111", "22222222", "33333333"):
        assert f"\n{student} " in table
    recs = {frozenset((r["black"], r["white"])): r for r in _journal(MatchConfig(
        players=["a", "b"], out=out))}
    sleep_vs_ok = recs[frozenset(("11111111", "22222222"))]
    assert sleep_vs_ok["reason"] == "timeout" and "empty candidate_list" in sleep_vs_ok["detail"]
    raised = recs[frozenset(("11111111", "33333333"))]
    assert raised[raised["loser"]] == "33333333" and raised["reason"] == "crash"
    assert raised["detail"].startswith("exception in go: ValueError: student bug")
    # run again: nothing left to play, the same standings
    assert cli_main(argv) == 0
    assert "3/3 games" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli_main([f"cs303:{tmp_path}/none/*.py", "agent:random", "--out", str(tmp_path / "x")])


def test_an_in_process_agent_loads_its_kernels_before_its_first_game_on_a_throwaway_agent(
        monkeypatch):
    import engine_server.agents as A
    from clients.match.players.agent import AgentPlayer
    from engine_server.game import Color
    from engine_server.search.limits import Limits

    made = []
    real = A.make_agent

    def counting(spec, **kw):
        made.append(spec)
        return real(spec, **kw)

    monkeypatch.setattr(A, "make_agent", counting)
    monkeypatch.setattr(AgentPlayer, "_warmed", set())
    tc = TimeControl(move_time=0.05)
    first = AgentPlayer(PlayerSpec.parse("agent:random"), tc)
    first.new_game(Game(), Color.BLACK, 7)
    assert len(made) == 2          # the game's agent and the one warmed
    second = AgentPlayer(PlayerSpec.parse("agent:random"), tc)
    second.new_game(Game(), Color.WHITE, 7)
    assert len(made) == 3          # once per process and spec
    # the game's agent plays the moves of an agent that no warm-up touched
    fresh = real("random", seed=7)
    pos = Game().position
    got = [first.agent.search(pos, Limits(iterations=1)).best_move for _ in range(12)]
    want = [fresh.search(pos, Limits(iterations=1)).best_move for _ in range(12)]
    assert got == want
