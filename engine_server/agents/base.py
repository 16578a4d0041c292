"""The agent protocol (``Agent``, and ``AgentWrapper`` for agents that wrap another) and
typed, validated agent parameters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from engine_server.game import Position
from engine_server.search.limits import Limits, ProgressCallback, SearchResult

if TYPE_CHECKING:
    from engine_server.eval.book import BookMove
    from engine_server.search.mcts.driver import TreeSearch


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
    """The agent protocol: everything a session, a protocol handler, a tool or a wrapping
    agent may use of an agent.  Nothing else is part of it; what a class has beyond these
    members is its own business.

    * ``search(position, limits, progress, progress_interval, threads)``: the search itself
      (the only member without a default);
    * ``advance(moves)`` / ``reset()``: keep or drop what the agent learned of the game;
    * ``book_moves(position)``: the opening book's moves (none without ``book=on``);
    * ``threads``: how many threads the agent's searches keep busy;
    * ``preferred_moves(position)``: its current favourites for ``position`` (may be called
      from another thread while it searches);
    * ``tree``: its search tree, for tools and tests that look inside, or None.

    A wrapper (:class:`AgentWrapper`) forwards each of them explicitly.
    """

    name = "agent"

    def __init__(self, spec: str, params: dict[str, Any]):
        self.spec = spec
        self.params = params

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5, threads: int | None = None) -> SearchResult:
        """Search ``position`` within ``limits`` (none: the agent's default budget), calling
        ``progress`` with interim results about every ``progress_interval`` seconds.
        ``threads``: use at most this many of the agent's ``threads`` (None: all); a wrapper
        that runs the root solver beside the search lends one of them to it."""
        raise NotImplementedError

    def advance(self, moves: list[int]) -> float:
        """Moves played since the last search (both sides, passes included).  Returns the
        fraction of the tree kept; agents without a tree keep nothing."""
        return 0.0

    def reset(self) -> None:
        """Forget everything about the current game."""

    def book_moves(self, position: Position) -> list[BookMove]:
        """The opening book's moves for ``position`` (best first); agents built with
        ``book=on`` have them (book_agent.py)."""
        return []

    @property
    def threads(self) -> int:
        """Threads a search keeps busy when ``search`` is not told fewer (what the root solver
        may borrow one of); one unless the agent searches in parallel."""
        return 1

    def preferred_moves(self, position: Position) -> list[int]:
        """The agent's favourite moves for ``position``, best first, from what its last or
        running search found (none if it has not searched ``position``).  Safe to call from
        another thread during a search: the root solver asks which won moves to check first."""
        return []

    @property
    def tree(self) -> TreeSearch | None:
        """The agent's search tree (the first one when it searches several), or None for
        agents without one; for tools and tests that look inside."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"


class AgentWrapper(Agent):
    """An agent that adds something to another (``inner``) and is otherwise that agent: each
    member of the protocol is forwarded here, one by one; subclasses override what they
    change (``search`` at least)."""

    def __init__(self, inner: Agent, spec: str, params: dict[str, Any]):
        super().__init__(spec, params)
        self.inner = inner

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5, threads: int | None = None) -> SearchResult:
        return self.inner.search(position, limits, progress, progress_interval, threads)

    def advance(self, moves: list[int]) -> float:
        return self.inner.advance(moves)

    def reset(self) -> None:
        self.inner.reset()

    def book_moves(self, position: Position) -> list[BookMove]:
        return self.inner.book_moves(position)

    @property
    def threads(self) -> int:
        return self.inner.threads

    def preferred_moves(self, position: Position) -> list[int]:
        return self.inner.preferred_moves(position)

    @property
    def tree(self) -> TreeSearch | None:
        return self.inner.tree
