"""One declaration per protocol command, and the typed reply a GTP command returns.

A handler class owns a ``CommandRegistry``; each command is a method decorated with
``@commands("name")``.  Dispatch, ``list_commands`` and ``known_command`` all read the same
registry, so a command cannot be listed without being implemented or the other way round
(gomill's engine keeps one handler table for the same reason).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Command(Generic[F]):
    name: str
    func: F
    summary: str  # the first line of the method's docstring


class CommandRegistry(Generic[F]):
    """Commands in declaration order (the order ``list_commands`` shows them in)."""

    def __init__(self, protocol: str):
        self.protocol = protocol
        self._by_name: dict[str, Command[F]] = {}

    def __call__(self, name: str) -> Callable[[F], F]:
        def register(func: F) -> F:
            if name in self._by_name:
                raise ValueError(f"{self.protocol} command {name!r} is declared twice")
            doc = (func.__doc__ or "").strip().splitlines()
            self._by_name[name] = Command(name, func, doc[0] if doc else "")
            return func

        return register

    def extended(self, protocol: str | None = None) -> CommandRegistry[F]:
        """A copy to add commands to or replace commands in, leaving this one as it is (a
        handler subclass, or a test that swaps in a broken command)."""
        copy: CommandRegistry[F] = CommandRegistry(protocol or self.protocol)
        copy._by_name = dict(self._by_name)
        return copy

    def replace(self, name: str) -> Callable[[F], F]:
        """Like registering, for a command that exists already (KeyError if it does not)."""
        if name not in self._by_name:
            raise KeyError(f"{self.protocol} has no command {name!r} to replace")

        def register(func: F) -> F:
            doc = (func.__doc__ or "").strip().splitlines()
            self._by_name[name] = Command(name, func, doc[0] if doc else "")
            return func

        return register

    def get(self, name: str) -> Command[F] | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return list(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[Command[F]]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)


@dataclass(frozen=True)
class Reply:
    """What a GTP command answers.

    ``streamed``: the command has written the response header itself and the rest follows
    asynchronously (analysis commands), so the dispatcher writes nothing.  ``then`` runs after the
    reply has been written (``genmove`` starts pondering only once its move is out, KataGo's
    order).  ``quit``: the controller stops reading after this reply."""

    text: str = ""
    ok: bool = True
    streamed: bool = False
    then: Callable[[], None] | None = None
    quit: bool = False


@dataclass(frozen=True)
class Call:
    """One parsed GTP command line: its arguments, the id to echo, and the arrival time that
    deadlines are measured from."""

    args: list[str]
    cid: str = ""
    received: float = 0.0


__all__ = ["Call", "Command", "CommandRegistry", "Reply"]
