"""The agent interface and typed, validated agent parameters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from engine_server.game import Position
from engine_server.search.limits import Limits, ProgressCallback, SearchResult


class AgentSpecError(ValueError):
    """A bad agent spec: unknown name or key, or a value of the wrong type or range."""


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: Any
    help: str
    choices: tuple | None = None
    min: float | None = None
    max: float | None = None

    def parse(self, text: str, agent: str) -> Any:
        try:
            if self.type is bool:
                t = text.strip().lower()
                if t not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(text)
                value: Any = t in ("1", "true", "yes", "on")
            else:
                value = self.type(text)
        except ValueError:
            raise AgentSpecError(
                f"{agent}: {self.name}={text!r} is not a valid {self.type.__name__} "
                f"({self.describe()})") from None
        self.check(value, agent)
        return value

    def check(self, value: Any, agent: str) -> None:
        if self.choices is not None and value not in self.choices:
            raise AgentSpecError(f"{agent}: {self.name}={value!r} not one of "
                                 f"{', '.join(map(str, self.choices))}")
        if self.min is not None and value < self.min:
            raise AgentSpecError(f"{agent}: {self.name}={value} is below the minimum {self.min}")
        if self.max is not None and value > self.max:
            raise AgentSpecError(f"{agent}: {self.name}={value} is above the maximum {self.max}")

    def describe(self) -> str:
        s = f"{self.type.__name__}, default {self.default}"
        if self.choices:
            s += f", one of {'/'.join(map(str, self.choices))}"
        if self.min is not None or self.max is not None:
            s += f", range [{self.min if self.min is not None else ''}, " \
                 f"{self.max if self.max is not None else ''}]"
        return s


COMMON_PARAMS = (
    Param("seed", int, 1, "seed of the agent's random stream"),
)
TREE_PARAMS = (
    Param("memory", int, 1024, "tree memory cap in MiB; when full the search goes on "
          "without expanding", min=1),
)


@dataclass(frozen=True)
class AgentInfo:
    name: str
    source: str            # which seed document the agent comes from
    summary: str
    params: tuple[Param, ...]
    factory: Callable[..., "Agent"] = field(repr=False)

    def param(self, key: str) -> Param | None:
        return next((p for p in self.params if p.name == key), None)


class Agent:
    """``search(position, limits) -> SearchResult`` plus tree reuse through ``advance``."""

    name = "agent"

    def __init__(self, spec: str, params: dict[str, Any]):
        self.spec = spec
        self.params = params

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5) -> SearchResult:
        raise NotImplementedError

    def advance(self, moves: list[int]) -> float:
        """Moves played since the last search (both sides, passes included).  Returns the
        fraction of the tree kept; agents without a tree keep nothing."""
        return 0.0

    def reset(self) -> None:
        """Forget everything about the current game."""

    def book_moves(self, position: Position) -> list:
        """The opening book's moves for ``position`` (``BookMove``s, best first); agents built
        with ``book=on`` have them (book_agent.py)."""
        return []

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"
