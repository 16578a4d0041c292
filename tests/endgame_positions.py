"""Endgame test positions: FFO #1-#19 and seeded random-play positions (8-18 empties)."""

from __future__ import annotations

import random

from engine_server.game import Position

from .conftest import load_ffo


def ffo_positions() -> list[Position]:
    return [Position.from_string(r["board"], r["side"]) for r in load_ffo("ffo1-19.txt")]


def random_position(empties: int, seed: int, rules: str = "standard") -> Position:
    """The first position with ``empties`` empties of a seeded random game whose side to move
    has a choice (random games end early now and then: the seed is bumped until one fits)."""
    while True:
        rng = random.Random(seed)
        pos = Position.start(rules)
        while not pos.is_game_over() and pos.empties > empties:
            pos = pos.play(rng.choice(pos.legal_moves()))
        if pos.empties == empties and len(pos.legal_moves()) > 1:
            return pos
        seed += 1000


def random_positions(count: int, seed: int, lo: int = 8, hi: int = 18,
                     rules: str = "standard") -> list[Position]:
    return [random_position(lo + i % (hi - lo + 1), seed + i, rules) for i in range(count)]
