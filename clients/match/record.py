"""A finished game as the journal holds it, typed.

:func:`clients.match.referee.play_game` returns a JSON-ready dict; :class:`GameRecord` is that
dict with named fields.  ``to_dict`` gives back the same keys in the same order, so that a journal
line written from a record is byte for byte the line the dict would have made, and lines written
before the records were typed load unchanged.  Keys the record does not know (a newer referee, a
hand-edited journal) are kept in ``extra`` and written back after the known ones.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

COLORS = ("black", "white")
POINTS = {"win": 1.0, "draw": 0.5, "loss": 0.0}   # a game's points by outcome


def _split(cls: type, data: dict[str, Any], what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(known fields, other keys) of ``data`` for the dataclass ``cls``; a field with a
    default (one added after journals were written) may be missing."""
    names = [f.name for f in fields(cls) if f.name != "extra"]
    optional = {f.name for f in fields(cls) if f.default is not MISSING}
    missing = [n for n in names if n not in data and n not in optional]
    if missing:
        raise ValueError(f"{what} lacks {', '.join(missing)}")
    known = {n: data[n] for n in names if n in data}
    extra = {k: v for k, v in data.items() if k not in known}
    return known, extra


@dataclass
class SideStats:
    """One colour's numbers over a game."""

    moves: int
    time: float                 # seconds over all its moves
    max_time: float
    playouts: int
    searched: int               # moves that reported playouts
    engine: str                 # the name the engine gave itself
    # Moves played after running past the per-move limit (within the grace; for CS303, a go
    # the judge's timer cut).  None: a journal written before it was counted.
    slow_moves: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SideStats:
        known, extra = _split(cls, data, "game stats")
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        out = {"moves": self.moves, "time": self.time, "max_time": self.max_time,
               "playouts": self.playouts, "searched": self.searched, "engine": self.engine}
        if self.slow_moves is not None:  # an older line is written back as it was
            out["slow_moves"] = self.slow_moves
        return {**out, **self.extra}


@dataclass
class GameRecord:
    """One journal line.  Fields in the journal's key order (``to_dict`` relies on it)."""

    key: str                    # pairing|o<opening>|s<swap>|r<round>
    pairing: str                # "A vs B", labels in schedule order
    opening_index: int
    opening: str                # the opening's moves, space-separated
    swap: int
    round: int
    seed: int
    rules: str
    black: str                  # player labels
    white: str
    black_spec: str
    white_spec: str
    winner: str | None          # "black", "white" or None for a draw
    black_score: int | None     # rules applied, empties to the winner; None for forfeits
    black_discs: int
    white_discs: int
    reason: str                 # referee.REASONS
    loser: str | None           # the colour that forfeited, None when played out
    detail: str
    moves: str                  # every move, opening included, space-separated
    evals: list[float | None]
    times: list[float | None]
    stats: dict[str, SideStats]  # by colour
    started: float              # epoch seconds
    duration: float
    ggf: str
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GameRecord:
        """Raises ValueError when a key is missing or ``stats`` is not per colour."""
        known, extra = _split(cls, data, f"game record {data.get('key')!r}")
        stats = known["stats"]
        if not isinstance(stats, dict):
            raise ValueError(f"game record {data.get('key')!r}: stats is not an object")
        known["stats"] = {c: SideStats.from_dict(s) for c, s in stats.items()}
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if f.name == "stats":
                value = {c: s.to_dict() for c, s in value.items()}
            elif isinstance(value, list):
                value = list(value)
            out[f.name] = value
        out.update(self.extra)
        return out

    def label_of(self, color: str) -> str:
        return self.black if color == "black" else self.white

    @property
    def winner_label(self) -> str | None:
        return None if self.winner is None else self.label_of(self.winner)

    def outcome_for(self, label: str) -> str | None:
        """'win', 'draw' or 'loss' for the player ``label``; None when it did not play."""
        if label not in (self.black, self.white):
            return None
        if self.winner is None:
            return "draw"
        return "win" if self.winner_label == label else "loss"


@dataclass
class GameFailure:
    """A game the harness itself failed to play (a bug, not a forfeit): logged, not journaled."""

    key: str
    error: str
    traceback: str = ""
