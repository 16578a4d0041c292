"""Behaviour tests of every agent on hand-built positions (OpenSpiel mcts-test style)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from engine_server.agents import AGENTS, AgentSpecError, make_agent, parse_spec
from engine_server.game import PASS, Game, Position, parse_move
from engine_server.search.limits import Limits

from .loadsafe import SLACK
from .solver_ref import move_scores

TREE_AGENTS = ["shallow", "minmax", "ucb1", "uct", "ocba", "dk", "puct", "mcts"]

# Black to move; a1 (corner) is the only winning move (+14), the three others lose.
CORNER_WIN = Position.from_string(
    "-OOXOOXXXX-OXOXXXOOOXXOXXOXOXXXOOXXOOXXOOXOOOXXO-OXOOOXO-XOOOXOO", "X")
# Black to move, 8 empties; b8 is the only winning move (+4).
FORCED_WIN = Position.from_string(
    "-O-XXXXOO-XXXXX--OOOOXXXXOOXXOXXOOOXXOX-OOXOOXOX-XOOOOXXX-OOOOOX", "X")
# Black to move; h6 is best under standard rules (+4), a3 under reversed rules (+16), and each
# loses under the other rules.
RULES_SPLIT = Position.from_string(
    "X-XOOOOOOXXXOOOX-XXOXOOXXXXXOOOXXXOOOOOXXOXOOOO-XXOOOOOOXXXO-O--", "X")
# White to move has no move, black has: white must pass.
MUST_PASS = Position.from_string("XO------" + "-" * 48 + "------OX", "O")

MIDGAME = Game.from_moves(["f5", "d6", "c3", "d3", "c4", "f4", "c5", "b3", "c2"]).position


def test_reference_positions_are_what_the_tests_claim():
    s = move_scores(CORNER_WIN)
    assert max(s, key=s.get) == parse_move("a1") and sorted(s.values())[-2] < 0
    s = move_scores(FORCED_WIN)
    assert [m for m, v in s.items() if v > 0] == [parse_move("b8")]
    std = move_scores(RULES_SPLIT)
    rev = move_scores(RULES_SPLIT.with_rules("reversed"))
    assert max(std, key=std.get) == parse_move("h6") and max(rev, key=rev.get) == parse_move("a3")


@pytest.mark.parametrize("name", list(AGENTS))
def test_every_agent_returns_a_legal_move(name):
    agent = make_agent(name, seed=3)
    for pos in (Position.start(), MIDGAME, MIDGAME.with_rules("reversed")):
        r = agent.search(pos, Limits(playouts=300, time=2.0))
        assert r.best_move in pos.legal_moves()
        assert {m.move for m in r.moves} == set(pos.legal_moves())
        assert r.agent == name


@pytest.mark.parametrize("name", list(AGENTS))
def test_every_agent_passes_when_it_must(name):
    r = make_agent(name).search(MUST_PASS, Limits(playouts=100))
    assert r.best_move == PASS


@pytest.mark.parametrize("name", list(AGENTS))
def test_game_over_position_has_no_move(name):
    over = Position.from_string("X" * 8 + "-" * 48 + "O" * 8, "X")
    assert make_agent(name).search(over, Limits(iterations=10)).best_move is None


@pytest.mark.parametrize("name", TREE_AGENTS)
def test_tree_agents_take_the_winning_corner(name):
    r = make_agent(name, seed=5).search(CORNER_WIN, Limits(playouts=3000))
    assert r.best_name == "a1", [(m.name, m.visits, round(m.value, 3)) for m in r.moves]


@pytest.mark.parametrize("name", TREE_AGENTS)
def test_tree_agents_find_the_only_winning_move_of_a_small_endgame(name):
    # dk's position penalties would veto b8, a C-square (see the next test): switched off here.
    spec = {"minmax": "minmax:n=60,k=4", "shallow": "shallow:n=400",
            "dk": "dk:c=0,d=0"}.get(name, name)
    r = make_agent(spec, seed=7).search(FORCED_WIN, Limits(playouts=20000))
    assert r.best_name == "b8", [(m.name, m.visits, round(m.value, 3)) for m in r.moves]


def test_dk_domain_knowledge_can_override_the_search():
    # The MCTS blog post reports that its penalties cost wins late in the game: the C-square penalty
    # (d * UCT) makes dk avoid b8 here although its playouts found it winning.
    r = make_agent("dk", seed=7).search(FORCED_WIN, Limits(playouts=20000))
    b8 = next(m for m in r.moves if m.name == "b8")
    assert b8.visits == max(m.visits for m in r.moves) and b8.value > 0.5
    assert r.best_name != "b8"


@pytest.mark.parametrize("name", ["ucb1", "uct", "ocba", "puct", "dk"])
def test_tree_agents_choose_differently_under_reversed_rules(name):
    std = make_agent(name, seed=11).search(RULES_SPLIT, Limits(playouts=20000))
    rev = make_agent(name, seed=11).search(RULES_SPLIT.with_rules("reversed"),
                                           Limits(playouts=20000))
    assert (std.best_name, rev.best_name) == ("h6", "a3")


def test_tree_reuse_keeps_the_visits_of_the_played_child():
    agent = make_agent("uct", seed=2)
    pos = Position.start()
    first = agent.search(pos, Limits(iterations=3000))
    tree = agent.tree
    bbs, links, stats, meta = tree._arrays
    # The child f5 and its most visited reply, with their visit counts.
    f5 = parse_move("f5")
    from engine_server.search import mcts as T

    c0, n0 = int(links[0, T.FIRST]), int(links[0, T.NCHILD])
    row = next(i for i in range(c0, c0 + n0) if links[i, T.MOVE] == f5)
    c1, n1 = int(links[row, T.FIRST]), int(links[row, T.NCHILD])
    reply = max(range(c1, c1 + n1), key=lambda i: stats[i, T.N])
    reply_move, reply_visits = int(links[reply, T.MOVE]), int(stats[reply, T.N])
    assert reply_visits > 10 and first.tree_nodes > 100
    kept = agent.advance([f5, reply_move])
    assert 0.0 < kept < 1.0
    _, links2, stats2, _ = agent.tree._arrays
    assert int(stats2[0, T.N]) == reply_visits
    after = pos.play(f5).play(reply_move)
    r = agent.search(after, Limits(iterations=1))
    assert r.reused_fraction == pytest.approx(kept)
    assert sum(m.visits for m in r.moves) >= reply_visits - 1


def test_search_from_a_descendant_reuses_without_advance_and_unrelated_clears():
    agent = make_agent("uct", seed=2)
    agent.search(Position.start(), Limits(iterations=2000))
    r = agent.search(Position.start().play("f5").play("d6"), Limits(iterations=10))
    assert r.reused_fraction > 0
    r = agent.search(MIDGAME.play(MIDGAME.legal_moves()[0]).with_rules("reversed"),
                     Limits(iterations=10))
    assert r.reused_fraction == 0
    agent.advance([parse_move("a1")])  # illegal continuation: tree cleared, no error
    assert agent.tree.nodes == 0


@pytest.mark.parametrize("name", ["uct", "ucb1", "ocba", "dk", "puct", "shallow", "mcts"])
def test_deadline_returns_promptly(name):
    agent = make_agent(name)
    agent.search(MIDGAME, Limits(iterations=5))
    t0 = time.monotonic()
    r = agent.search(MIDGAME, Limits(time=0.3))
    wall = time.monotonic() - t0
    # The deadline ended a search that nothing else would end, and not before it.  How soon
    # after it (the goal is +20 ms) is othello-bench search's max_overrun_s, on a quiet machine.
    assert r.stopped_by == "time" and r.iterations > 0
    assert 0.29 <= wall < 0.3 + SLACK, wall


def _lead_the_first_child(agent, visits: float) -> int:
    """Give the root's first child ``visits`` extra visits (as if searched earlier)."""
    from engine_server.search import mcts as T

    _, links, stats, _ = agent.tree._arrays
    row = int(links[0, T.FIRST])
    mean = stats[row, T.W] / max(stats[row, T.N], 1.0)
    stats[row, T.N] += visits
    stats[row, T.W] += mean * visits
    return int(links[row, T.MOVE])


def test_early_stop_answers_once_the_most_visited_move_cannot_be_caught():
    agent = make_agent("mcts:threads=1,early_stop=on")
    agent.search(MIDGAME, Limits(iterations=300))
    move = _lead_the_first_child(agent, 1e9)
    t0 = time.monotonic()
    r = agent.search(MIDGAME, Limits(time=60.0))
    assert r.stopped_by == "unassailable" and r.best_move == move and r.iterations >= 256
    assert time.monotonic() - t0 < 60.0 / 3  # long before the deadline


def test_early_stop_waits_while_the_lead_can_change_and_can_be_switched_off():
    from engine_server.search import mcts as T
    from engine_server.search.mcts.driver import _unassailable

    bbs, links, stats, meta = T.new_tree(64)
    start = Position.start()
    T.init_root(bbs, links, stats, meta, np.uint64(start.black), np.uint64(start.white))
    T.expand(bbs, links, stats, meta, 0)
    first = int(links[0, T.FIRST])
    stats[first:first + 4, T.N] = [100, 90, 5, 5]
    now = 1000.0  # the clock is the test's: a pause of this thread cannot change the rate
    # 1000 root visits in the last second: 500 more fit in 0.5 s, 5 in 5 ms.
    assert not _unassailable(links, stats, 1000, now - 1.0, now + 0.5, now=now)
    assert _unassailable(links, stats, 1000, now - 1.0, now + 0.005, now=now)
    stats[first + 2, T.LO] = 2.0  # a proof may still change the solver's choice
    assert not _unassailable(links, stats, 1000, now - 1.0, now + 0.005, now=now)
    off = make_agent("mcts:threads=1")  # off by default
    off.search(MIDGAME, Limits(iterations=300))
    _lead_the_first_child(off, 1e9)
    r = off.search(MIDGAME, Limits(time=0.3))
    assert r.stopped_by == "time"


def test_stop_flag_from_another_thread_returns_best_so_far_at_once():
    agent = make_agent("uct")
    agent.search(MIDGAME, Limits(iterations=5))
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    t0 = time.monotonic()
    r = agent.search(MIDGAME, Limits(time=60.0, stop=stop))
    # Ended by the stop, long before its own deadline; how soon after the stop is
    # othello-bench search's max_stop_latency_s.
    assert r.stopped_by == "stop" and r.best_move in MIDGAME.legal_moves()
    assert time.monotonic() - t0 < 60.0 / 3


def test_progress_callback_sees_best_so_far():
    seen = []
    agent = make_agent("uct")
    # ten intervals: a busy machine's pauses cannot leave fewer than two reports
    r = agent.search(MIDGAME, Limits(time=1.0), progress=seen.append, progress_interval=0.1)
    assert len(seen) >= 2
    assert all(not s.final and s.best_move in MIDGAME.legal_moves() for s in seen)
    assert seen[-1].iterations <= r.iterations and r.final


@pytest.mark.parametrize("name", list(AGENTS))
def test_same_seed_same_move(name):
    a = make_agent(name, seed=9).search(MIDGAME, Limits(iterations=300))
    b = make_agent(name, seed=9).search(MIDGAME, Limits(iterations=300))
    assert a.best_move == b.best_move
    assert [(m.move, m.visits, m.value) for m in a.moves] == \
        [(m.move, m.visits, m.value) for m in b.moves]


def test_default_budgets_come_from_the_papers():
    assert make_agent("ucb1").search(MIDGAME).playouts == 1200
    assert make_agent("uct").search(MIDGAME).iterations == 500
    assert make_agent("ocba").search(MIDGAME).playouts == 100
    r = make_agent("dk").search(MIDGAME)
    assert r.iterations == 200 and r.playouts == 200 * 50
    n_moves = len(MIDGAME.legal_moves())
    assert make_agent("shallow").search(MIDGAME).playouts == 100 * n_moves
    r = make_agent("minmax").search(MIDGAME)
    assert r.stopped_by == "done" and r.playouts > 0


def test_memory_cap_stops_expansion_but_not_the_search():
    agent = make_agent("uct:memory=1")
    # an iteration budget, not a time: a busy machine must not leave the 1 MiB tree unfilled
    r = agent.search(Position.start(), Limits(iterations=60_000))
    assert r.tree_full
    from engine_server.search import mcts as T

    assert r.tree_nodes <= (1 << 20) // T.BYTES_PER_NODE + 1
    assert r.playouts > 2 * r.tree_nodes  # it kept simulating after the tree filled


def test_spec_errors_list_what_is_accepted():
    with pytest.raises(AgentSpecError, match="known agents: random, pseudo-random"):
        parse_spec("alphabeta")
    with pytest.raises(AgentSpecError, match="accepted: c "):
        parse_spec("uct:cp=1")
    with pytest.raises(AgentSpecError, match="not a valid float"):
        parse_spec("uct:c=abc")
    with pytest.raises(AgentSpecError, match="not one of random, pseudo"):
        parse_spec("uct:rollout=smart")
    with pytest.raises(AgentSpecError, match="below the minimum"):
        parse_spec("ucb1:n=0")
    info, params = parse_spec("uct:c=1,rollout=valuemap")
    assert params["c"] == 1.0 and params["rollout"] == "valuemap" and params["seed"] == 1


def test_tree_solver_proves_margins_and_stops_once_the_root_is_settled():
    # the tree alone (no root solver): b8 is proven to win by exactly 4 and played
    r = make_agent("uct:solver=1,root_solve=0", seed=1).search(FORCED_WIN,
                                                              Limits(playouts=200_000))
    assert r.best_name == "b8" and (r.moves[0].lower, r.moves[0].upper) == (4, 4)
    assert r.moves[0].proven == 1
    # a 4-empty root is proven outright: every other move is bounded below a1's +14
    r = make_agent("uct:solver=1,root_solve=0", seed=1).search(CORNER_WIN,
                                                              Limits(playouts=500_000))
    assert r.best_name == "a1" and r.stopped_by == "solved" and r.playouts < 500_000
    assert r.exact and r.lower == r.upper == 14
    assert all(m.upper < 14 for m in r.moves[1:])


def test_root_solver_settles_the_move_and_stops_searching():
    r = make_agent("uct:solver=1", seed=1).search(FORCED_WIN, Limits(playouts=500_000))
    assert r.stopped_by == "solved" and r.playouts < 500_000 and r.solver_nodes > 0
    assert r.best_name == "b8" and r.exact and r.lower == 4 and r.moves[0].proven == 1


def _hand_built_root(visits, bounds):
    """A root with children of given visit counts; ``bounds`` entries None (unproven) or the
    proven (lower, upper) margin for the side choosing the child."""
    from engine_server.search import mcts as T

    bbs, links, stats, meta = T.new_tree(16)
    stats[:, T.LO], stats[:, T.HI] = -64.0, 64.0
    links[0, T.PARENT] = -1
    links[0, T.FIRST], links[0, T.NCHILD] = 1, len(visits)
    for j, (n, b) in enumerate(zip(visits, bounds)):
        i = 1 + j
        links[i, T.PARENT], links[i, T.MOVE], links[i, T.NCHILD] = 0, j, -1
        stats[i, T.N], stats[i, T.W] = n, 0.1 * n
        if b is not None:
            T.set_bounds(links, stats, i, float(b[0]), float(b[1]))
    return links, stats


WIN, DRAW, LOSS = (2, 64), (0, 0), (-64, -2)


def test_solver_choice_avoids_a_proven_loss_even_with_the_most_visits():
    from engine_server.search.mcts.driver import _solver_choice, most_visits

    links, stats = _hand_built_root([100, 10, 50], [LOSS, None, None])
    chosen = most_visits(links, stats, 1, 3, None)
    assert chosen == 1
    assert _solver_choice(links, stats, 1, 3, chosen) == 3


def test_solver_choice_plays_a_proven_win_over_more_visited_moves():
    from engine_server.search.mcts.driver import _solver_choice

    links, stats = _hand_built_root([100, 3, 50], [None, WIN, None])
    assert _solver_choice(links, stats, 1, 3, 1) == 2


def test_solver_choice_plays_the_best_proven_margin_among_wins_and_the_least_bad_loss():
    from engine_server.search.mcts.driver import _solver_choice

    links, stats = _hand_built_root([100, 3, 50], [(10, 10), (24, 24), (2, 20)])
    assert _solver_choice(links, stats, 1, 3, 1) == 2      # +24 beats +10 and "+2 to +20"
    # among wins that may still beat the best proven one, the search's pick stands
    links, stats = _hand_built_root([100, 3, 50], [(10, 10), (24, 24), (2, 64)])
    assert _solver_choice(links, stats, 1, 3, 1) == 3      # +10 is out; "+2 or more" is open
    assert _solver_choice(links, stats, 1, 3, 2) == 2
    links, stats = _hand_built_root([100, 3, 50], [(-30, -30), (-4, -4), (-12, -12)])
    assert _solver_choice(links, stats, 1, 3, 1) == 2      # every move loses: lose by 4
    # a move no other can beat is played even when nothing wins
    links, stats = _hand_built_root([100, 3, 50], [(-64, -6), (-4, -4), (-64, -8)])
    assert _solver_choice(links, stats, 1, 3, 1) == 2


def test_solver_choice_leaves_open_moves_to_the_search():
    from engine_server.search.mcts.driver import _solver_choice

    # a proven draw does not overrule a move that may still win
    links, stats = _hand_built_root([100, 3, 50], [None, DRAW, None])
    assert _solver_choice(links, stats, 1, 3, 1) == 1
    # but a move that cannot beat the proven draw is dominated
    links, stats = _hand_built_root([100, 3, 50], [(-64, 0), DRAW, None])
    assert _solver_choice(links, stats, 1, 3, 1) == 3


def test_prove_up_marks_the_parent_when_every_child_is_decided():
    from engine_server.search import mcts as T

    # bounds are stored for the mover into a node: the root's are its opponent's view
    links, stats = _hand_built_root([5, 5], [(-8, -8), DRAW])
    T.prove_up(links, stats, 2, 0)
    assert links[0, T.FLAGS] & T.SOLVED and stats[0, T.LO] == stats[0, T.HI] == 0.0
    links, stats = _hand_built_root([5, 5], [None, WIN])
    T.prove_up(links, stats, 2, 0)
    assert not links[0, T.FLAGS] & T.SOLVED  # won, but by how much is still open
    assert stats[0, T.HI] == -2.0 and stats[0, T.LO] == -64.0
    T.set_bounds(links, stats, 1, -64.0, 0.0)
    T.set_bounds(links, stats, 2, 6.0, 6.0)
    T.prove_up(links, stats, 2, 0)
    assert links[0, T.FLAGS] & T.SOLVED and stats[0, T.LO] == -6.0


def test_a_root_solved_before_its_children_are_known_is_not_settled():
    from engine_server.search import mcts as T

    links, stats = _hand_built_root([5, 5], [None, None])
    T.set_bounds(links, stats, 0, -6.0, -6.0)  # e.g. solved as a leaf of an earlier tree
    assert links[0, T.FLAGS] & T.SOLVED and not T.settled(links, stats, 0)
    T.set_bounds(links, stats, 2, 6.0, 6.0)
    assert T.settled(links, stats, 0)


def test_leaf_solver_proves_children_directly_and_keeps_batches_short():
    from engine_server.search import mcts as T

    agent = make_agent("mcts:threads=1,solve_empties=16,solve_nodes=200000,root_solve=0",
                       seed=3)
    r = agent.search(FORCED_WIN, Limits(time=5.0))
    # each child: a win/draw/loss solve, then an exact one when the tree comes back to it
    assert r.stopped_by == "solved" and r.best_name == "b8" and r.iterations < 100
    # A budget too small for the position: the node is marked and searched as usual.
    ffo1 = Position.from_string(
        "--XXXXX--OOOXX-O-OOOXXOX-OXOXOXXOXXXOXXX--XOXOXX-XXXOOO--OOOOO--", "X")
    agent = make_agent("mcts:threads=1,solve_empties=16,solve_nodes=100,root_solve=0", seed=3)
    r = agent.search(ffo1, Limits(iterations=5))
    _, links, _, _ = agent.tree._arrays
    assert any(links[i, T.FLAGS] & T.NOSOLVE for i in range(1, r.tree_nodes))


def test_progressive_bias_prefers_the_higher_prior_among_equal_children():
    from engine_server.search import mcts as T

    links, stats = _hand_built_root([10, 10, 10], [None, None, None])
    stats[1:4, T.PRIOR] = [0.0, 1.0, 0.0]
    bbs = np.zeros((16, 2), dtype=np.uint64)
    rng = np.array([1], dtype=np.uint64)
    plain = T.tree_config(select=T.SELECT_UCB1, explore=0.4, logk=2.0, q01=True)
    biased = plain._replace(bias=1.0)
    assert T.select_child(bbs, links, stats, 0, plain, rng) == 1
    assert T.select_child(bbs, links, stats, 0, biased, rng) == 2


def test_table_priors_scale_the_square_values_among_siblings():
    from engine_server.search.mcts.rollout import table_for

    agent = make_agent("mcts:threads=1,bias=1")
    pos = Game.from_moves(["f5", "d6", "c3", "d3", "c4"]).position
    r = agent.search(pos, Limits(iterations=1))
    table = table_for("valuemap", 0)
    by_value = sorted(r.moves, key=lambda m: table[m.move])
    assert by_value[0].prior == 0.0 and by_value[-1].prior == 1.0


def test_wrappers_forward_the_whole_agent_protocol_and_nothing_else():
    from engine_server.agents.base import Agent, AgentWrapper
    from engine_server.search.mcts.driver import TreeSearch

    # A capability added to Agent but not to AgentWrapper would answer its default for every
    # wrapped agent (book=on, the root solver) without anyone noticing.
    declared = {k for k in vars(Agent) if not k.startswith("_")} - {"name"}
    assert declared == {k for k in vars(AgentWrapper) if not k.startswith("_")}
    mcts = make_agent("mcts:threads=3,book=on", seed=1)  # book, root solver, 3 trees
    assert mcts.threads == 3 and isinstance(mcts.tree, TreeSearch)
    assert mcts.book_moves(Position.start()) and mcts.preferred_moves(MIDGAME) == []
    mcts.search(MIDGAME, Limits(iterations=300, analysis=True))  # analysis: never the book
    assert mcts.preferred_moves(MIDGAME) == mcts.tree.preferred_moves(MIDGAME) != []
    best = make_agent("best:threads=2,book=on", seed=1)  # alpha-beta: no tree, two threads
    assert best.threads == 2 and best.tree is None
    best.search(MIDGAME, Limits(iterations=2000, analysis=True))
    inner = best
    while isinstance(inner, AgentWrapper):
        inner = inner.inner
    assert best.preferred_moves(MIDGAME) == inner.preferred_moves(MIDGAME) != []
    # the table's root move is the search's best; with one thread, so that no helper thread's
    # unfinished deeper iteration has stored another move there by the time the search stops
    one = make_agent("best:threads=1,book=on", seed=1)
    r = one.search(MIDGAME, Limits(iterations=2000, analysis=True))
    assert one.preferred_moves(MIDGAME) == [r.best_move]
    # no forwarding beyond the protocol: the inner agent's own attributes stay its own
    assert not hasattr(mcts, "trees") and not hasattr(best, "random_plies")


def test_each_source_fills_its_own_typed_move_fields():
    r = make_agent("dk", seed=1).search(MIDGAME, Limits(iterations=50))
    assert all(m.mobility is not None and m.line_value is None for m in r.moves)
    r = make_agent("minmax:n=2,k=2", seed=1).search(MIDGAME)
    assert all(m.line_value is not None and m.mobility is None for m in r.moves)
    r = make_agent("ab:depth=3", seed=1).search(MIDGAME)
    assert r.moves[0].margin_bound == 0 and {m.margin_bound for m in r.moves} <= {-1, 0, 1}
    assert all(m.book_games is None for m in r.moves)
