"""Opening book for any agent: ``book=on`` answers book positions without searching.

:class:`BookAgent` wraps the agent ``make_agent`` built.  A search of a position the book holds
returns the book's move at once (the best, or one drawn among the moves within ``book_random``
discs of it, seeded) unless the book's best move is one that leaves it (a search found a better
move there than any book line: then the agent searches).  Analyses (NBoard hints, GTP analyze)
always search, and the moves the book holds are marked in their results.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from engine_server.eval import book as B
from engine_server.game import PASS, Position, Rules
from engine_server.search.limits import Limits, MoveStat, ProgressCallback, SearchResult

from .base import Agent, AgentSpecError, AgentWrapper, Param


def book_params(default: str) -> tuple[Param, ...]:
    return (
        Param("book", str, default, "opening book: on (the shipped book of the rules, or "
              "book_file), auto (the shipped standard book only: the reversed one lost its "
              "match, docs/book.md) or off", choices=("auto", "on", "off")),
        Param("book_file", str, "", "book file made by othello-book build (default: the "
              "shipped book)"),
        Param("book_depth", int, 60, "use the book for the first N plies of a game",
              min=0, max=60),
        Param("book_random", float, 0.0, "play a book move drawn among those within this "
              "many discs of the best (0: always the best; seeded)", min=0.0, max=64.0),
    )


def load_book_file(path: str) -> B.Book:
    try:
        return B.load(Path(path))
    except B.BookError as e:
        raise AgentSpecError(f"book_file: {e}") from None


class BookAgent(AgentWrapper):
    """The wrapped agent with an opening book in front of its searches (module docstring);
    everything else of the agent protocol is the wrapped agent's."""

    def __init__(self, inner: Agent, spec: str, params: dict[str, Any]):
        super().__init__(inner, spec, params)
        self.mode = str(params["book"])
        self.depth = int(params["book_depth"])
        self.spread = float(params["book_random"])
        self._rng = random.Random(params.get("seed", 1))
        self._file = load_book_file(params["book_file"]) if params["book_file"] else None

    def book(self, rules: int) -> B.Book | None:
        if self._file is not None:
            return self._file if self._file.rules == int(rules) else None
        if self.mode == "auto" and int(rules) != int(Rules.STANDARD):
            return None
        return B.shipped(int(rules))

    def book_moves(self, position: Position) -> list[B.BookMove]:
        if 60 - position.empties >= self.depth:
            return []
        book = self.book(int(position.rules))
        return [] if book is None else book.moves(position, lines=True)

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5, threads: int | None = None) -> SearchResult:
        limits = limits or Limits()
        if not limits.analysis:
            hit = self._from_book(position)
            if hit is not None:
                return hit
        if not limits.analysis:
            return self.inner.search(position, limits, progress, progress_interval, threads)
        marks = {m.move: m.games for m in self.book_moves(position)}

        def mark(r: SearchResult) -> SearchResult:
            for st in r.moves:
                if st.move in marks:
                    st.book_games = marks[st.move]
            return r

        report = None if progress is None else (lambda r: progress(mark(r)))
        return mark(self.inner.search(position, limits, report, progress_interval, threads))

    def _from_book(self, position: Position) -> SearchResult | None:
        t0 = time.monotonic()
        if 60 - position.empties >= self.depth or position.legal_moves() == [PASS]:
            return None
        book = self.book(int(position.rules))
        if book is None:
            return None
        moves = book.moves(position)
        choice = book.choose(position, self.spread, self._rng if self.spread > 0 else None,
                             moves)
        if choice is None:
            return None
        stats = []
        for m in moves:
            stats.append(MoveStat(m.move, m.games, max(-1.0, min(1.0, m.value / 64.0)),
                                  margin=m.value, book_games=m.games))
        listed = {st.move for st in stats}
        stats += [MoveStat(mv, 0, 0.0) for mv in position.legal_moves() if mv not in listed]
        stats.sort(key=lambda st: st.move != choice.move)
        return SearchResult(choice.move, stats, book.line(position, choice.move),
                            max(-1.0, min(1.0, choice.value / 64.0)), stopped_by="book",
                            agent=self.spec, elapsed=time.monotonic() - t0)


__all__ = ["BookAgent", "book_params", "load_book_file"]
