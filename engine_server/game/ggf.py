"""GGF game records as games of the rules core: the text is :mod:`protocol.ggf`'s; this module
checks the moves against the rules and builds the :class:`~.position.Game`.

A record that omits a pass (Edax style) is accepted: when the side that should move has no move
and the record gives a move of the other colour, the pass is inserted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.ggf import (
    KNOWN_TAGS,
    GgfError,
    MoveItem,
    TimeControl,
    format_clock,
    match_type,
    match_type_is_anti,
    parse_clock,
    parse_move_item,
    parse_time_control,
    read_record,
    write_record,
)
from protocol.notation import NotationError

from .bitboard import PASS
from .position import Color, Game, IllegalMoveError, Position, Rules

__all__ = [
    "KNOWN_TAGS", "GgfError", "GgfRecord", "MoveItem", "TimeControl", "format_clock",
    "parse", "parse_clock", "parse_match_type", "parse_move_item", "parse_time_control",
]


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
        tags["TY"] = match_type(self.rules == Rules.REVERSED)
        tags["BO"] = self.start.to_ggf()
        return write_record(tags, int(self.start.side), self.moves)


def parse_match_type(value: str) -> Rules:
    """``TY``: ``[s]<size>[k][a][r<N>]``; ``a`` = reversed."""
    return Rules.REVERSED if match_type_is_anti(value) else Rules.STANDARD


def parse(text: str, rules: Rules | str | None = None) -> GgfRecord:
    """Parse one GGF record.  ``rules`` overrides ``TY`` when given."""
    text_record = read_record(text)
    tags = text_record.tags
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
    for tag, value in text_record.entries:
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
