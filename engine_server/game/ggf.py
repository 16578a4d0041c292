"""GGF game records (as NBoard, NTest, Edax and GGS write them): parse and write, no I/O.

Grammar (docs/reference/protocols.md section 2)::

    record := [ "1" | "2" ] "(;" { TAG "[" value "]" } ";)"

Known tags: GM PC DT PB PW RB RW TI TB TW TY BO B W RE CO KB KW KM.  Unknown tags are rejected,
as NBoard and NTest do.  ``GM`` must be Othello (any case, Edax writes ``othello``).  ``TY``
carries the match type ``[s]<size>[k][a][r<N>]``; the ``a`` flag (anti) selects reversed rules.
Moves are ``B[..]``/``W[..]`` with ``move[/eval[/time]]``; passes are explicit (``PA``/``pass``),
but a record that omits a pass (Edax style) is accepted: when the side that should move has no
move and the record gives a move of the other colour, the pass is inserted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .bitboard import PASS
from .notation import NotationError, finite_float, parse_move, square_name
from .position import Color, Game, IllegalMoveError, Position, Rules

KNOWN_TAGS = frozenset("GM PC DT PB PW RB RW TI TB TW TY BO B W RE CO KB KW KM".split())

_TAG_RE = re.compile(r"\s*([A-Z]{1,2})\[([^\]]*)\]")


class GgfError(ValueError):
    """A record that is not valid GGF for an 8x8 Othello game."""


@dataclass
class MoveItem:
    """One ``B[..]``/``W[..]`` entry: the move, and the eval (discs) and time (s) if given."""

    move: int
    eval: float | None = None
    time: float | None = None
    color: Color | None = None
    inserted: bool = False  # a pass the record left out

    def text(self) -> str:
        s = "PA" if self.move == PASS else square_name(self.move).upper()
        if self.eval is not None or self.time is not None:
            s += "/" + ("" if self.eval is None else f"{self.eval:.2f}")
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


@dataclass
class GgfRecord:
    start: Position
    moves: list[MoveItem] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def rules(self) -> Rules:
        return self.start.rules

    def game(self) -> Game:
        """The game as the rules core sees it (inserted passes included)."""
        return Game.from_moves([m.move for m in self.moves], start=self.start)

    def time_control(self, color: Color | None = None) -> TimeControl | None:
        key = {Color.BLACK: "TB", Color.WHITE: "TW"}.get(color) if color is not None else None
        value = self.tags.get(key) if key else None
        value = value or self.tags.get("TI")
        return parse_time_control(value) if value else None

    def to_text(self) -> str:
        tags = dict(self.tags)
        tags.setdefault("GM", "Othello")
        tags.setdefault("PC", "")
        tags.setdefault("PB", "")
        tags.setdefault("PW", "")
        tags.setdefault("RE", "?")
        tags.setdefault("TI", "0")
        ty = "8a" if self.rules == Rules.REVERSED else "8"
        tags["TY"] = ty
        out = ["(;"]
        for k in ("GM", "PC", "DT", "PB", "PW", "RB", "RW", "TI", "TB", "TW", "TY", "RE", "KB",
                  "KW", "KM", "CO"):
            if k in tags:
                out.append(f"{k}[{tags[k]}]")
        out.append(f"BO[{self.start.to_ggf()}]")
        color = self.start.side
        for m in self.moves:
            out.append(f"{'B' if color == Color.BLACK else 'W'}[{m.text()}]")
            color = color.other
        out.append(";)")
        return "".join(out)


def parse_match_type(value: str) -> Rules:
    """``TY``: ``[s]<size>[k][a][r<N>]``; only size 8 is playable here; ``a`` = reversed."""
    m = re.fullmatch(r"\s*(s?)(\d+)(k?)(a?)(r\d+)?\s*", value)
    if not m:
        raise GgfError(f"bad match type TY[{value}]")
    if m.group(2) != "8":
        raise GgfError(f"only 8x8 Othello is supported, TY[{value}] has size {m.group(2)}")
    return Rules.REVERSED if m.group(4) else Rules.STANDARD


def parse(text: str, rules: Rules | str | None = None) -> GgfRecord:
    """Parse one GGF record.  ``rules`` overrides ``TY`` when given."""
    s = text.strip()
    if s[:1] in ("1", "2") and s[1:].lstrip().startswith("(;"):
        s = s[1:].lstrip()
    if not s.startswith("(;") or not s.endswith(";)"):
        raise GgfError("a GGF record starts with '(;' and ends with ';)'")
    body = s[2:-2]
    pos = 0
    tags: dict[str, str] = {}
    raw_moves: list[tuple[str, str]] = []
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
            raw_moves.append((tag, value))
        else:
            tags[tag] = value
        pos = m.end()
    gm = tags.get("GM")
    if gm is None or gm.strip().lower() != "othello":
        raise GgfError(f"GM must be Othello, got {gm!r}")
    variant = parse_match_type(tags["TY"]) if "TY" in tags else Rules.STANDARD
    if rules is not None:
        variant = Rules.parse(rules)
    if "BO" not in tags:
        raise GgfError("the record has no BO[...] start position")
    try:
        start = Position.from_ggf(tags["BO"], variant)
    except NotationError as e:
        raise GgfError(f"bad BO: {e}") from None
    record = GgfRecord(start=start, tags=tags)
    position = start
    for tag, value in raw_moves:
        item = parse_move_item(value)
        color = Color.BLACK if tag == "B" else Color.WHITE
        if color != position.side:
            # Edax-style records leave passes out: insert one when it is forced.
            if position.must_pass():
                record.moves.append(MoveItem(PASS, color=position.side, inserted=True))
                position = position.play(PASS)
            else:
                raise GgfError(f"{tag}[{value}] played out of turn: {position.side} to move")
        item.color = color
        try:
            position = position.play(item.move)
        except IllegalMoveError as e:
            raise GgfError(f"{tag}[{value}]: {e}") from None
        record.moves.append(item)
    return record
