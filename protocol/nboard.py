"""NBoard v2 lines (docs/reference/protocols.md section 1): the ones the engine writes and its
clients (the referee, benchmarks, GUIs) read, each written and parsed here.

Engine to GUI::

    === F5/1.23/0.120              the move of a go, with its eval (discs) and time (s)
    search F5-D6-C3 1.23 0 22@93%  a hint: pv, eval, 0, depth token
    book F5-D6 0.50 1200 8         a book move: pv, value, games, depth of its leaf
    nodestats 123456 0.84          nodes and seconds of the last search
    status thinking                what the engine is doing ("status" alone: idle)
    pong 3 / set myname NAME / learned

GUI to engine: ``nboard 2``, ``set depth N``, ``set game <GGF>``, ``move F5[/eval/time]``,
``hint N``, ``go``, ``ping N``, ``learn``, ``analyze``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .ggf import GgfError, MoveItem, parse_move_item
from .notation import NotationError, move_text, parse_move

MOVE_PREFIX = "=== "


def move_line(move: int, eval: float, seconds: float) -> str:
    return f"{MOVE_PREFIX}{move_text(move)}/{eval:z.2f}/{seconds:.3f}"


def is_move_line(line: str) -> bool:
    return line.startswith(MOVE_PREFIX)


def move_fields(line: str) -> list[str]:
    """A move line's fields, move first: ``=== F5/1.23/0.120`` or the same separated by
    spaces, as some engines write them; an empty field (NTest's zero eval, ``G4//2.32``)
    stays empty."""
    return "/".join(line[len(MOVE_PREFIX):].split()).split("/")


def parse_move_line(line: str) -> MoveItem:
    """A move line (:func:`move_fields`) to its move, eval and time; :class:`GgfError` naming
    the problem."""
    if not is_move_line(line):
        raise GgfError(f"not a move line: {line!r}")
    return parse_move_item("/".join(move_fields(line)))


def depth_token(exact: bool, wld: bool, depth: int | None, selectivity: int = 100) -> str:
    """The depth field of a ``search`` line: ``100%`` for an exact solve, ``100%W`` for a
    win/draw/loss solve, else the depth (``22@93%`` when Multi-ProbCut cut at 93% confidence,
    as Edax writes it)."""
    if exact:
        return "100%"
    if wld:
        return "100%W"
    return f"{depth}@{selectivity}%" if selectivity < 100 else str(depth)


def _pv_text(pv: Iterable[int]) -> str:
    return "-".join(move_text(m) for m in pv)


def search_line(pv: Iterable[int], eval: float, depth: str) -> str:
    return f"search {_pv_text(pv)} {eval:z.2f} 0 {depth}"


def book_line(pv: Iterable[int], value: float, games: int, depth: int) -> str:
    return f"book {_pv_text(pv)} {value:z.2f} {games} {depth}"


@dataclass(frozen=True)
class HintLine:
    """A ``search`` or ``book`` line read back."""

    kind: str               # "search" or "book"
    pv: tuple[int, ...]
    eval: float
    depth: str              # the depth token of a search line, the leaf depth of a book line
    games: int = 0          # a book line's games


def parse_hint_line(line: str) -> HintLine:
    """A ``search``/``book`` line; ValueError naming the problem."""
    parts = line.split()
    if len(parts) != 5 or parts[0] not in ("search", "book"):
        raise ValueError(f"not a search or book line: {line!r}")
    try:
        pv = tuple(parse_move(m) for m in parts[1].split("-"))
        ev = float(parts[2])
        games = int(parts[3])
    except (NotationError, ValueError):
        raise ValueError(f"bad search or book line: {line!r}") from None
    return HintLine(parts[0], pv, ev, parts[4], games if parts[0] == "book" else 0)


def nodestats_line(nodes: int, seconds: float) -> str:
    return f"nodestats {nodes} {seconds:.2f}"


def status_line(text: str = "") -> str:
    return f"status {text}".rstrip()


def set_game_line(ggf_text: str) -> str:
    return f"set game {ggf_text}"


def myname_line(name: str) -> str:
    return f"set myname {name}"


def pong_line(n: str) -> str:
    return f"pong {n}"


def analysis_line(ply: int, eval: float) -> str:
    """One move of an ``analyze``: its index in the game and its value."""
    return f"analysis {ply} {eval:z.2f}"


def parse_myname(line: str) -> str | None:
    """The engine's name from ``set myname NAME``; None for any other line."""
    if not line.startswith("set myname "):
        return None
    words = line[len("set myname "):].split()
    return words[0] if words else None


__all__ = [
    "GgfError", "HintLine", "MOVE_PREFIX", "analysis_line", "book_line", "depth_token",
    "is_move_line", "move_fields", "move_line", "myname_line", "nodestats_line", "parse_hint_line",
    "parse_move_line", "parse_myname", "pong_line", "search_line", "set_game_line",
    "status_line",
]
