"""GTP v2 text: a command line into its id, name and arguments, and a response into its lines
and back (docs/reference/protocols.md section 3).

A response is ``=[id] result`` or ``?[id] message``, possibly over several lines, ended by a
blank line.  A streamed response (``lz-analyze``, ``genmove_analyze``) is its head ``=[id]``
alone on a line, then lines of its own, then the blank line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from .text import clean_line

_HEAD = re.compile(r"^([=?])(\d*)\s?")
_STRICT_HEAD = re.compile(r"^[=?]\d*( |$)")


class GtpSyntaxError(ValueError):
    """A line that is not a command: an id with no command after it."""

    def __init__(self, message: str, id: str = ""):
        super().__init__(message)
        self.id = id


class Command(NamedTuple):
    id: str          # "" when the line had none
    name: str
    args: list[str]


def parse_command(raw: str) -> Command | None:
    """The command on one input line; None for a line with nothing on it (blank, or a comment
    alone); :class:`GtpSyntaxError` for an id without a command."""
    line = clean_line(raw, cut_comments=True)
    if not line:
        return None
    parts = line.split()
    cid = ""
    if parts[0].isdigit():
        cid = parts.pop(0)
        if not parts:
            raise GtpSyntaxError("missing command", cid)
    return Command(cid, parts[0], parts[1:])


def split_id(text: str) -> tuple[str, str]:
    """``"12 genmove b"`` -> ``("12", "genmove b")``; ``("", text)`` without an id."""
    head, _, rest = text.strip().partition(" ")
    return (head, rest.strip()) if head.isdigit() else ("", text.strip())


def response_lines(id: str, ok: bool, text: str) -> list[str]:
    """The lines of a whole response, the blank line that ends it included."""
    lines = text.split("\n") if text else [""]
    return [f"{'=' if ok else '?'}{id} {lines[0]}", *lines[1:], ""]


def is_response_head(line: str) -> bool:
    """Whether ``line`` can open a response as the engine writes them: ``=``/``?``, the id,
    then a space or nothing."""
    return _STRICT_HEAD.match(line) is not None


def stream_head(id: str) -> str:
    """The first line of a streamed response; its own lines and a blank line follow."""
    return "=" + id


@dataclass(frozen=True)
class Response:
    ok: bool        # '=' (or a head with neither '=' nor '?', taken as success as engines expect)
    text: str       # the result or error message without its '=id'/'?id' head, stripped
    id: str = ""    # the command id the engine echoed ("" when the command had none)


def parse_response(lines: list[str] | tuple[str, ...]) -> Response:
    """One GTP response from its lines (without the blank line that ends it)."""
    if not lines:
        raise ValueError("a GTP response has at least one line")
    head = lines[0]
    m = _HEAD.match(head)
    if m is None:
        # Lenient, like every client before this one: a head without '='/'?' is a result.
        return Response(True, "\n".join(lines).strip())
    text = "\n".join([head[m.end():], *lines[1:]]).strip()
    return Response(m.group(1) == "=", text, m.group(2))


# --- analysis (lz-analyze / kata-analyze and their genmove_analyze) ------------------------------

def info_lz(move: str, visits: int, winrate: float, prior: float, lcb: float, extra: str,
            order: int, pv: list[str]) -> str:
    """One move of an ``lz-analyze`` line; rates in [0, 1] are written in 1/10000."""
    return (f"info move {move} visits {visits} winrate {int(round(winrate * 10000))} "
            f"prior {int(round(prior * 10000))} lcb {int(round(lcb * 10000))} "
            f"{extra}order {order} pv {' '.join(pv)}")


def info_kata(move: str, visits: int, winrate: float, score: float, prior: float, lcb: float,
              extra: str, order: int, pv: list[str]) -> str:
    """One move of a ``kata-analyze`` line (utility and scores as KataGo writes them)."""
    return (f"info move {move} visits {visits} utility {2 * winrate - 1:.6f} "
            f"winrate {winrate:.6f} scoreMean {score:.4f} scoreLead {score:.4f} "
            f"scoreSelfplay {score:.4f} prior {prior:.6f} lcb {lcb:.6f} "
            f"utilityLcb {2 * lcb - 1:.6f} {extra}order {order} pv {' '.join(pv)}")


def play_line(move: str) -> str:
    """The line that ends a ``genmove_analyze``'s stream (a blank line follows it)."""
    return f"play {move}"
