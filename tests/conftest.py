from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"


def load_ffo(name: str) -> list[dict]:
    rows = []
    for i, line in enumerate((SHARED / "data" / name).read_text().splitlines()):
        if not line.strip():
            continue
        board, side, moves, score = line.split()
        rows.append({"board": board, "side": side, "best": moves.split(","), "score": int(score),
                     "line": i})
    return rows


@pytest.fixture(scope="session")
def ffo_easy() -> list[dict]:
    return load_ffo("ffo1-19.txt")
