"""Analysis a player can trust: what a player's eye would check of the marks and values.

A move and its mirror image get one value and one mark, in a position and in its images (the
eight symmetries of the board); a first move is never marked; where the values are exact every
mark is right; the same game analysed live (after hints) and from a link gets the same marks;
NBoard's hints value mirror-image moves alike.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine_server.agents import make_agent
from engine_server.agents.policy import BUILTIN_PRESETS
from engine_server.agents.verdict import (
    EXACT_BLUNDER,
    EXACT_MISTAKE,
    analysis_depth,
    judge,
    judge_book,
    thresholds,
)
from engine_server.game import PASS, Game, Position, ggf, parse_move, square_name
from engine_server.game.symmetry import (
    SYMMETRIES,
    canonical,
    image,
    orbits,
    square_image,
    stabilizer,
)
from engine_server.search.limits import Limits

from .endgame_positions import random_position
from .loadsafe import WAIT
from .protocol_harness import Harness
from .solver_ref import move_scores
from .test_web_protocol import WebHarness

# One thread and a depth: the values do not depend on the machine's speed.  Exact at 12 empties
# and below, so that the endgame of a game is solved in the fast tier.
ANALYST = "best:depth=6,threads=1,root_solve=12"


def random_game(seed: int, plies: int = 60) -> Game:
    rng = random.Random(seed)
    game = Game(Position.start())
    while not game.is_over() and len(game.moves) < plies:
        game.play(rng.choice(game.position.legal_moves()))
    return game


def positions() -> list[Position]:
    """The start, book positions, midgame positions of seeded random games, endgames."""
    out = [Position.start()]
    book = Game.from_moves([parse_move("c4"), parse_move("c3")])   # a book line
    out.append(book.position)
    for seed in (1, 2, 3):
        game = random_game(seed, 40)
        out += [Game.from_moves(game.moves[:k]).position for k in (8, 24)]
    out += [random_position(e, 7) for e in (14, 18)]
    return out


def analyse(position: Position, depth: int = 6) -> dict[int, Any]:
    """Every legal move's verdict from one analysis search (a fresh agent, as a fresh table)."""
    agent = make_agent(f"best:threads=1,table=16,root_solve=12,depth={depth}", book="off")
    r = agent.search(position, Limits(depth=depth, analysis=True))
    return {m: judge(position, m, r) for m in position.legal_moves() if m != PASS}


# --- symmetry -------------------------------------------------------------------------------
def test_symmetry_tables_are_a_group_action_and_canonical_is_one_per_orbit():
    pos = random_game(4, 20).position
    images = [image(pos, k) for k in SYMMETRIES]
    assert len({(p.black, p.white) for p in images}) == 8   # no symmetry of its own
    assert {canonical(p)[1] for p in images} == {canonical(pos)[1]}
    for k in SYMMETRIES:
        k2, canon = canonical(images[k])
        assert image(images[k], k2) == canon
        assert sorted(square_image(m, k) for m in pos.legal_moves()) == \
            sorted(images[k].legal_moves())
    start = Position.start()
    # the start keeps four: the identity, the half turn and the two diagonal reflections
    assert sorted(stabilizer(start)) == [0, 3, 4, 7]
    assert orbits(start, start.legal_moves()) == [start.legal_moves()]


@pytest.mark.parametrize("index", range(len(positions())))
def test_a_move_and_its_image_get_one_value_and_one_mark(index):
    pos = positions()[index]
    base = analyse(pos)
    for group in orbits(pos, list(base)):   # mirror-image moves of the position itself
        assert len({(base[m].value, base[m].loss, base[m].mark) for m in group}) == 1
    for k in range(1, 8):
        other = analyse(image(pos, k))
        for m, v in base.items():
            w = other[square_image(m, k)]
            assert (w.value, w.best_value, w.loss, w.mark, w.exact) == \
                (v.value, v.best_value, v.loss, v.mark, v.exact), (k, square_name(m))
            assert w.best is not None and v.best is not None
            assert base[v.best].value == other[w.best].value   # the best move's image or a twin


def test_a_first_move_is_never_marked():
    for rules in ("standard", "reversed"):
        start = Position.start(rules)
        verdicts = analyse(start, 8)
        assert {v.loss for v in verdicts.values()} == {0.0}
        assert all(v.mark is None for v in verdicts.values())
        book = make_agent("best").book_moves(start)
        if rules == "standard":   # the book holds all four, at one value
            assert sorted(b.move for b in book) == sorted(start.legal_moves())
            for m in start.legal_moves():
                v = judge_book(start, m, book)
                assert v is not None and v.book and v.loss == 0 and v.mark is None


@pytest.mark.parametrize("seed", range(6))
def test_where_the_values_are_exact_every_mark_is_right(seed):
    pos = random_position(8, 100 + seed)
    exact = move_scores(pos)   # a plain negamax, apart from the engine's solver
    best = max(exact.values())
    verdicts = analyse(pos)
    for m, v in verdicts.items():
        assert v.exact and v.value == exact[m] and v.best_value == best
        truth = best - exact[m]
        assert v.loss == truth
        want = None if truth < EXACT_MISTAKE else "??" if truth >= EXACT_BLUNDER else "?"
        assert v.mark == want, (square_name(m), truth, v)


def test_the_noise_threshold_follows_the_depth_and_the_stage():
    mid = random_game(2, 30).position
    shallow, _ = thresholds(mid, 4, False)
    assert thresholds(mid, None, True) == (EXACT_MISTAKE, EXACT_BLUNDER)
    assert shallow >= EXACT_MISTAKE and thresholds(mid, 12, False)[1] >= EXACT_BLUNDER
    assert thresholds(Position.start(), 12, False)[0] <= thresholds(mid, 12, False)[0]
    assert [analysis_depth(t) for t in (0.1, 0.25, 1.0, 5.0)] == [10, 12, 14, 18]


# --- the page's analysis ----------------------------------------------------------------------
def analysed(h: WebHarness, time: float = 0.25) -> list[dict[str, Any]]:
    """Analyse the handler's game; its verdicts by ply."""
    start = len(h.messages)
    assert h.send(type="analyze", time=time)[0]["type"] == "analysis"
    h.wait_for(lambda m: m["type"] == "analysis" and m["done"], start=start, timeout=WAIT * 4)
    got = {a["ply"]: a for m in h.messages[start:] if m["type"] == "analysis"
           for a in m["moves"]}
    return [got[k] for k in sorted(got)]


def verdicts_of(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(a["ply"], a["value"], a["best_value"], a["loss"], a["mark"], a["exact"],
             a["book"]) for a in entries]


def record_text(game: Game, k: int) -> str:
    """``game`` under symmetry ``k`` as a GGF record (its start is the start's image, which is
    the usual start only for the start's own four symmetries)."""
    items = [ggf.MoveItem(square_image(m, k)) for m in game.moves]
    return ggf.GgfRecord(start=image(game.start, k), moves=items, tags={}).to_text()


@pytest.fixture
def page_analyst():
    h = WebHarness(agent="random", presets=dict(BUILTIN_PRESETS, analyst=ANALYST))
    yield h
    h.close()


@pytest.mark.slow   # eight whole games analysed
def test_the_page_gives_a_game_and_its_mirror_images_the_same_marks(page_analyst):
    h = page_analyst
    game = random_game(11)
    seen = []
    for k in SYMMETRIES:
        h.send(type="new", white="random", time=0.2)
        h.send(type="import", text=record_text(game, k))
        entries = analysed(h)
        assert len(entries) == len([m for m in game.moves if m != PASS]), k
        first = entries[0]
        assert first["ply"] == 0 and first["loss"] == 0 and first["mark"] is None
        seen.append(verdicts_of(entries))
        if k == 0:
            marks = [a for a in entries if a["mark"]]
            assert marks, "a random game has moves that lost discs"
            assert all(a["loss"] >= a["mistake"] for a in marks)
            assert entries[0]["book"]   # the first move is the book's
    assert all(s == seen[0] for s in seen)


@pytest.mark.slow   # a game played, then analysed twice
def test_a_live_game_with_hints_and_the_same_moves_from_a_link_get_the_same_marks():
    presets = dict(BUILTIN_PRESETS, analyst=ANALYST)
    live = WebHarness(agent="random", presets=presets)
    link = WebHarness(agent="random", presets=presets)
    try:
        live.send(type="new", white="beginner", time=0.2)
        live.send(type="evaluate")          # the bar, as the page asks for it
        rng = random.Random(3)
        while True:
            s = live.settled()
            if s["over"] or s["ply"] >= 24:
                break
            if s["side"] != "black":
                continue
            if s["ply"] in (4, 12):   # a hint first, as a player would ask
                start = len(live.messages)
                live.send(type="hint", time=0.5)
                live.wait_for(lambda m: m["type"] == "hints", start=start, timeout=WAIT)
                live.settled()
            moves = parse_state(s).legal_moves()
            if moves == [PASS]:
                live.send(type="pass")
            else:
                live.send(type="move", square=square_name(rng.choice(moves)))
        played = live.settled()["moves"]
        a = analysed(live)
        link.send(type="new", white="random", time=0.2)
        link.send(type="import", text="".join(m for m in played if m != "pass"))
        b = analysed(link)
        assert verdicts_of(a) == verdicts_of(b)
        assert a[0]["mark"] is None and a[0]["loss"] == 0
    finally:
        live.close()
        link.close()


def parse_state(s: dict[str, Any]) -> Position:
    """The position of a ``state`` message."""
    from engine_server.commands.web import parse_move_list

    return parse_move_list("".join(m for m in s["moves"] if m != "pass"),
                           Position.start()).position


# --- NBoard's hints ---------------------------------------------------------------------------
def hint_values(pos: Position) -> dict[int, float]:
    """The last search line of each move of an NBoard ``hint`` on a fresh engine."""
    h = Harness("nboard", agent="best:threads=1,table=16")
    try:
        record = ggf.GgfRecord(start=pos, moves=[], tags={}).to_text()
        h.send("nboard 2", f"set game {record}", "set depth 6", "ping 1",
               f"hint {len(pos.legal_moves())}")
        lines = h.wait_for(lambda ls: any(l.strip() == "status" for l in ls[2:]), WAIT)
        out: dict[int, float] = {}
        for line in lines:
            if line.startswith("search "):
                pv, ev = line.split()[1:3]
                first = pv.split("-")[0].lower()
                out[parse_move(first)] = float(ev)
        return out
    finally:
        h.close()


@pytest.mark.parametrize("index", [0, 3, 4])
def test_nboard_hints_value_a_move_and_its_image_alike(index):
    pos = positions()[index]
    base = hint_values(pos)
    assert set(base) == set(pos.legal_moves())
    for group in orbits(pos, list(base)):
        assert len({base[m] for m in group}) == 1
    for k in (1, 2, 5, 6):
        other = hint_values(image(pos, k))
        assert {square_image(m, k): v for m, v in base.items()} == other, k
