"""Pieces several tree agents share: rollout parameters and their tables."""

from __future__ import annotations

import numpy as np

from engine_server.search import rollout as R

from .base import Param

ROLLOUT_CHOICES = ("random", "pseudo", "valuemap", "roxanne", "heuristic")


def rollout_param(default: str, help_text: str = "rollout policy") -> Param:
    return Param("rollout", str, default, help_text, choices=ROLLOUT_CHOICES)


def policy_id(name: str) -> int:
    return R.POLICY_NAMES[name]


def table_maker(name: str):
    def make(rules: int) -> np.ndarray:
        return R.table_for(name, rules)
    return make
