"""The typed tree configuration: options are checked when an agent is built, and the kernels
read them as typed fields."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from engine_server.agents import AGENTS, make_agent
from engine_server.agents.base import COMMON_PARAMS, TREE_PARAMS, AgentInfo
from engine_server.agents.common import table_maker
from engine_server.agents.tree_agent import TreeAgent
from engine_server.game import Game
from engine_server.game.bitboard import REVERSED, STANDARD
from engine_server.search import mcts as T
from engine_server.search.limits import Limits
from engine_server.search.mcts.driver import Budget, TreeSearch

POS = Game.from_moves(["f5", "d6", "c3", "d3", "c4"]).position


def _tree(cfg, seed=1, **kw) -> TreeSearch:
    return TreeSearch("test", cfg, table_maker("random"), seed,
                      lambda pos: Budget(iterations=10), **kw)


def test_a_misspelt_option_fails_when_the_agent_is_built_naming_it(monkeypatch):
    built = []

    def factory(spec, p):
        built.append(spec)
        return TreeAgent(spec, p, _tree(T.tree_config(explroe=1.0)))

    monkeypatch.setitem(AGENTS, "typo", AgentInfo("typo", "test", "an agent with a typo",
                                                  COMMON_PARAMS + TREE_PARAMS, factory))
    with pytest.raises(ValueError, match=r"unknown tree option 'explroe' \(did you mean "
                                         r"'explore'\?\); valid options: select, explore, "):
        make_agent("typo")  # no search: the error comes from building the agent
    assert built == ["typo"]


def test_an_option_of_the_wrong_type_fails_naming_it():
    with pytest.raises(TypeError, match=r"tree option q01=1 must be bool, not int"):
        T.tree_config(q01=1)
    with pytest.raises(TypeError, match=r"tree option sims=2.0 must be int, not float"):
        T.tree_config(sims=2.0)
    with pytest.raises(TypeError, match=r"tree option explore='1.4' must be float"):
        T.tree_config(explore="1.4")
    with pytest.raises(TypeError, match=r"tree option expand_at=True must be int"):
        T.tree_config(expand_at=True)


def test_a_config_built_by_hand_is_checked_when_the_search_is_built():
    # TreeConfig(...) skips tree_config; the driver checks it again before any kernel sees it
    with pytest.raises(TypeError, match=r"tree option sims=1.0 must be int"):
        _tree(T.TreeConfig(sims=1.0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"eval > 0 needs evaluation weights"):
        _tree(T.tree_config(eval=0.5))


def test_an_unknown_rule_id_fails_listing_the_known_ones():
    with pytest.raises(ValueError, match=r"select=9 is not one of 0 \(ucb1\), 1 \(ocba\), "
                                         r"2 \(puct\), 3 \(round-robin\), 4 \(minmax\)"):
        T.tree_config(select=9)
    with pytest.raises(ValueError, match=r"reward=5"):
        T.tree_config(reward=5)
    with pytest.raises(ValueError, match=r"policy=42 is not one of 0 \(random\)"):
        T.tree_config(policy=42)


def test_ints_given_for_float_options_become_floats():
    cfg = T.tree_config(explore=1, sigma0=np.int64(2))
    assert type(cfg.explore) is float and cfg.explore == 1.0
    assert type(cfg.sigma0) is float and cfg.sigma0 == 2.0


def test_defaults_equal_the_documented_defaults():
    assert T.tree_config()._asdict() == {
        "select": T.SELECT_UCB1, "explore": math.sqrt(2), "logk": 1.0, "q01": False,
        "parent_sum": False, "expand_at": 0, "sim_all": False, "descend": False, "sims": 1,
        "policy": 0, "reward": T.REWARD_WIN, "rules": 0, "n0": 0, "sigma0": 0.0, "depth": 0,
        "per_node": 0, "solver": False, "solve_empties": 0, "solve_nodes": 0, "bias": 0.0,
        "eval": 0.0, "eval_scale": 8.0}
    # the defaults already have the declared types, so they compile nothing extra
    assert T.TreeConfig() == T.tree_config()
    assert numba.typeof(T.TreeConfig()) == numba.typeof(T.tree_config())


def test_every_tree_agent_gets_the_same_numba_type():
    # one compiled (and cached) kernel serves every agent and every option value
    types = set()
    for name in AGENTS:
        tree = make_agent(name).tree
        if isinstance(tree, TreeSearch):
            types.add(numba.typeof(tree.config))
    assert len(types) == 1


def test_agent_parameters_reach_the_config():
    tree = make_agent("uct:c=0.7,rollout=valuemap,solver=on,eval=0.25").tree
    assert tree.config.select == T.SELECT_UCB1 and tree.config.explore == 0.7
    assert tree.config.solver is True and tree.config.eval == 0.25 and tree.config.sim_all
    tree = make_agent("ocba:n0=3,sigma0=0.5").tree
    assert (tree.config.select, tree.config.n0, tree.config.sigma0) == (T.SELECT_OCBA, 3, 0.5)


def test_the_search_takes_the_rules_from_the_position():
    tree = _tree(T.tree_config(sim_all=True))
    tree.search(POS.with_rules("reversed"), Limits(iterations=5))
    assert tree.config.rules == STANDARD and tree._cfg.rules == REVERSED


def _root_visits(explore: float) -> list[int]:
    tree = _tree(T.tree_config(explore=explore, logk=2.0, q01=True, sim_all=True), seed=5)
    r = tree.search(POS, Limits(iterations=400))
    return sorted((m.visits for m in r.moves), reverse=True)


def test_the_explore_constant_reaches_the_kernel_and_spreads_the_visits():
    greedy, spread = _root_visits(0.05), _root_visits(5.0)
    assert greedy[0] > 2 * spread[0]      # little exploration: one move takes most visits
    assert spread[0] < 2 * spread[-1]     # much exploration: nearly uniform
    assert _root_visits(0.05) == greedy   # the same seed and config give the same tree
