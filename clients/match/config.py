"""What defines a match: players, format, rules, time control, openings, seed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import elo as E
from .players import CS303_MEMORY_MB, PlayerSpec, TimeControl

FORMATS = ("round-robin", "gauntlet")


class MatchError(RuntimeError):
    """A match that cannot run as asked (bad players, a directory holding another match)."""


@dataclass
class MatchConfig:
    players: list[str]
    out: Path
    games: int = 2                      # per pairing, both colours together
    format: str = "round-robin"
    rules: str = "standard"
    tc: TimeControl = field(default_factory=TimeControl)
    openings: str = "builtin"           # "builtin", "start" or a file
    seed: int = 1
    swap: bool = True                   # each opening twice, colours swapped
    sprt: E.Sprt | None = None
    event: str = "othello-match"

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.format not in FORMATS:
            raise MatchError(f"unknown format {self.format!r}; accepted: {', '.join(FORMATS)}")
        if len(self.players) < 2:
            raise MatchError("a match needs at least two players")
        if self.games < 1:
            raise MatchError("--games must be at least 1")
        if self.sprt is not None and len(self.players) != 2:
            raise MatchError("--sprt is for two-player matches")

    def specs(self) -> list[PlayerSpec]:
        try:
            return [PlayerSpec.parse(p) for p in self.players]
        except ValueError as e:
            raise MatchError(str(e)) from None

    def identity(self) -> dict[str, Any]:
        """Everything that decides which games exist and how they are played (the start-up
        limit decides neither, so a match resumes under another one)."""
        tc = {k: v for k, v in self.tc.as_dict().items() if k != "setup"}
        # The CS303 memory limit came after matches were journaled: at the course's figure it
        # is left out, so that those matches resume (and keep their default directory).
        if tc.get("cs303_memory_mb") == CS303_MEMORY_MB:
            del tc["cs303_memory_mb"]
        return {"players": list(self.players), "format": self.format, "rules": self.rules,
                "tc": tc, "openings": self.openings, "seed": self.seed,
                "swap": self.swap, "event": self.event}
