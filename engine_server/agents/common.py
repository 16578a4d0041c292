"""Pieces several tree agents share: rollout parameters and their tables."""

from __future__ import annotations

from typing import Callable

import numpy as np

from engine_server.search.mcts import rollout as R

from .base import Param

ROLLOUT_CHOICES = ("random", "pseudo", "valuemap", "roxanne", "heuristic")


def rollout_param(default: str, help_text: str = "rollout policy") -> Param:
    return Param("rollout", str, default, help_text, choices=ROLLOUT_CHOICES)


def policy_id(name: str) -> int:
    return R.POLICY_NAMES[name]


def table_maker(name: str) -> Callable[[int], np.ndarray]:
    def make(rules: int) -> np.ndarray:
        return R.table_for(name, rules)
    return make


def eval_params(default: float = 0.0) -> tuple[Param, ...]:
    """Leaf values (and PUCT / progressive-bias priors) from the learned pattern evaluation."""
    return (Param("eval", float, default, "share of the pattern evaluation in a leaf's value: "
                  "0 rollouts only, 1 the evaluation only (it also gives PUCT's priors)",
                  min=0.0, max=1.0),
            Param("eval_scale", float, 8.0, "discs of evaluation per unit of tanh in the "
                  "leaf value, and the softmax temperature of evaluation priors", min=0.5))


def weights_maker() -> Callable[[int], np.ndarray]:
    from engine_server.eval.weights import default_weights

    return default_weights
