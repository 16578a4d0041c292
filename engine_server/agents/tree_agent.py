"""Agents that run on the shared tree search driver."""

from __future__ import annotations

from typing import Any

from engine_server.game import Position
from engine_server.search.limits import Limits, ProgressCallback, SearchResult
from engine_server.search.mcts.driver import TreeSearch

from .base import Agent


class TreeAgent(Agent):
    """An agent defined by its driver configuration; the driver owns tree and loop."""

    def __init__(self, spec: str, params: dict[str, Any], search: TreeSearch):
        super().__init__(spec, params)
        self._search = search

    @property
    def tree(self) -> TreeSearch:
        return self._search

    def preferred_moves(self, position: Position) -> list[int]:
        return self._search.preferred_moves(position)

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5, threads: int | None = None) -> SearchResult:
        # one tree, one thread: ``threads`` cannot ask for fewer
        return self._search.search(position, limits, progress, progress_interval)

    def advance(self, moves: list[int]) -> float:
        return self._search.advance(list(moves))

    def reset(self) -> None:
        self._search.reset()
