"""GGF game records (as NBoard, NTest, Edax and GGS write them): their text, read and written.

Grammar (docs/reference/protocols.md section 2)::

    record := [ "1" | "2" ] "(;" { TAG "[" value "]" } ";)"

Known tags: GM PC DT PB PW RB RW TI TB TW TY BO B W RE CO KB KW KM.  Unknown tags are rejected,
as NBoard and NTest do.  ``GM`` must be Othello (any case, Edax writes ``othello``).  ``TY``
carries the match type ``[s]<size>[k][a][r<N>]``; the ``a`` flag (anti) selects reversed rules.
Moves are ``B[..]``/``W[..]`` with ``move[/eval[/time]]``.

This module reads and writes the text only; whether the moves are legal, and where a record
left out a forced pass (Edax style), is the rules core's business
(``engine_server.game.ggf``, which builds a game from a :class:`RecordText`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .notation import BLACK, PASS, NotationError, finite_float, parse_move, square_name

KNOWN_TAGS = frozenset("GM PC DT PB PW RB RW TI TB TW TY BO B W RE CO KB KW KM".split())
# The order tags are written in (BO and the moves follow them).
TAG_ORDER = ("GM", "PC", "DT", "PB", "PW", "RB", "RW", "TI", "TB", "TW", "TY", "RE", "KB", "KW",
             "KM", "CO")

_TAG_RE = re.compile(r"\s*([A-Z]{1,2})\[([^\]]*)\]")


class GgfError(ValueError):
    """A record that is not valid GGF for an 8x8 Othello game."""


@dataclass
class MoveItem:
    """One ``B[..]``/``W[..]`` entry: the move, and the eval (discs) and time (s) if given."""

    move: int
    eval: float | None = None
    time: float | None = None
    color: int | None = None   # BLACK or WHITE (the rules core's Color is an int)
    inserted: bool = False     # a pass the record left out

    def text(self) -> str:
        s = "PA" if self.move == PASS else square_name(self.move).upper()
        if self.eval is not None or self.time is not None:
            s += "/" + ("" if self.eval is None else f"{self.eval:z.2f}")
            if self.time is not None:
                s += f"/{self.time:g}"
        return s


def parse_move_item(text: str) -> MoveItem:
    """``F5``, ``F5/1.23``, ``F5//3.215``, ``D6/-1.00/0.5``, ``PA``, ``pass``."""
    parts = text.strip().split("/")
    if not parts[0]:
        raise GgfError(f"empty move in {text!r}")
    try:
        move = parse_move(parts[0])
    except NotationError as e:
        raise GgfError(str(e)) from None
    ev = tm = None
    try:
        if len(parts) > 1 and parts[1].strip():
            ev = finite_float(parts[1])
        if len(parts) > 2 and parts[2].strip():
            tm = max(0.0, finite_float(parts[2]))
    except ValueError:
        raise GgfError(f"bad eval/time in move {text!r}") from None
    if len(parts) > 3:
        raise GgfError(f"too many '/' fields in move {text!r}")
    return MoveItem(move, ev, tm)


@dataclass
class TimeControl:
    """``TI``: main time, increment and grace, in seconds (GGF ``time[/increment[/grace]]``)."""

    main: float
    increment: float = 0.0
    grace: float = 120.0

    def text(self, grace: bool = True) -> str:
        """The ``TI`` value; without ``grace`` readers assume their default (120 s)."""
        parts = [self.main, self.increment] + ([self.grace] if grace else [])
        if not grace and self.increment == 0:
            parts = parts[:1]
        return "/".join(format_clock(x) for x in parts)


def parse_clock(value: str) -> float:
    """``[[d.]h:]m:s`` or plain seconds."""
    v = value.strip()
    if not v:
        return 0.0
    days = 0.0
    try:
        if "." in v.split(":")[0] and ":" in v:
            d, v = v.split(".", 1)
            days = finite_float(d)
        nums = [finite_float(p) for p in v.split(":")]
    except ValueError:
        raise GgfError(f"bad clock value {value!r}") from None
    if days < 0 or any(n < 0 for n in nums):
        raise GgfError(f"negative clock value {value!r}")
    if len(nums) > 3:
        raise GgfError(f"bad clock value {value!r}")
    secs = 0.0
    for n in nums:
        secs = secs * 60 + n
    return days * 86400 + secs


def format_clock(seconds: float) -> str:
    """``mm:ss`` for whole seconds, else plain seconds (``0.3``): readers take both, and
    ``mm:ss`` alone would round a fraction away."""
    if seconds == int(seconds):
        s = int(seconds)
        return f"{s // 60:02d}:{s % 60:02d}"
    return f"{seconds:g}"


def parse_time_control(value: str) -> TimeControl:
    parts = value.split("/")
    main = parse_clock(parts[0])
    inc = parse_clock(parts[1]) if len(parts) > 1 else 0.0
    grace = parse_clock(parts[2]) if len(parts) > 2 and parts[2].strip() else 120.0
    return TimeControl(main, inc, grace)


def match_type_is_anti(value: str) -> bool:
    """``TY``: ``[s]<size>[k][a][r<N>]``; only size 8 is playable here; ``a`` (anti) means the
    reversed rules."""
    m = re.fullmatch(r"\s*(s?)(\d+)(k?)(a?)(r\d+)?\s*", value)
    if not m:
        raise GgfError(f"bad match type TY[{value}]")
    if m.group(2) != "8":
        raise GgfError(f"only 8x8 Othello is supported, TY[{value}] has size {m.group(2)}")
    return bool(m.group(4))


def match_type(anti: bool) -> str:
    return "8a" if anti else "8"


@dataclass
class RecordText:
    """A record as written: its tags (``BO`` among them) and its move entries in order, as
    ``(tag, value)`` with tag ``B`` or ``W``, each read by :func:`parse_move_item`."""

    tags: dict[str, str] = field(default_factory=dict)
    entries: list[tuple[str, str]] = field(default_factory=list)



def read_record(text: str) -> RecordText:
    """The tags and move entries of one GGF record; :class:`GgfError` naming what is wrong.
    The rules core reads the entries one by one, against the position each is played in."""
    s = text.strip()
    if s[:1] in ("1", "2") and s[1:].lstrip().startswith("(;"):
        s = s[1:].lstrip()
    if not s.startswith("(;") or not s.endswith(";)"):
        raise GgfError("a GGF record starts with '(;' and ends with ';)'")
    body = s[2:-2]
    pos = 0
    record = RecordText()
    while pos < len(body):
        if body[pos:].strip() == "":
            break
        m = _TAG_RE.match(body, pos)
        if not m:
            raise GgfError(f"cannot read a TAG[value] at {body[pos:pos + 20]!r}")
        tag, value = m.group(1), m.group(2)
        if tag not in KNOWN_TAGS:
            raise GgfError(f"unknown GGF tag {tag}")
        if tag in ("B", "W"):
            record.entries.append((tag, value))
        else:
            record.tags[tag] = value
        pos = m.end()
    gm = record.tags.get("GM")
    if gm is None or gm.strip().lower() != "othello":
        raise GgfError(f"GM must be Othello, got {gm!r}")
    return record


def write_record(tags: dict[str, str], first_color: int, moves: list[MoveItem]) -> str:
    """One GGF record: ``tags`` (``BO`` required; GM, PC, PB, PW, RE and TI get their defaults)
    and the moves, alternating colours from ``first_color``."""
    tags = dict(tags)
    tags.setdefault("GM", "Othello")
    tags.setdefault("PC", "")
    tags.setdefault("PB", "")
    tags.setdefault("PW", "")
    tags.setdefault("RE", "?")
    tags.setdefault("TI", "0")
    out = ["(;"]
    out.extend(f"{k}[{tags[k]}]" for k in TAG_ORDER if k in tags)
    out.append(f"BO[{tags['BO']}]")
    color = first_color
    for m in moves:
        out.append(f"{'B' if color == BLACK else 'W'}[{m.text()}]")
        color = 1 - color
    out.append(";)")
    return "".join(out)
