from __future__ import annotations

from pathlib import Path

import pytest

from .protocol_harness import Harness

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
DATA = Path(__file__).resolve().parent / "data"


def data_file(name: str) -> Path:
    """A test data file: the copy in tests/data, else ../shared/data; skip when neither."""
    for d in (DATA, SHARED / "data"):
        if (d / name).exists():
            return d / name
    pytest.skip(f"test data {name} is in neither tests/data nor ../shared/data")


def load_ffo(name: str) -> list[dict]:
    """FFO endgame positions: board, side, best moves, exact score."""
    rows = []
    for i, line in enumerate(data_file(name).read_text().splitlines()):
        if not line.strip():
            continue
        board, side, moves, score = line.split()
        rows.append({"board": board, "side": side, "best": moves.split(","), "score": int(score),
                     "line": i})
    return rows


@pytest.fixture(scope="session")
def ffo_easy() -> list[dict]:
    return load_ffo("ffo1-19.txt")


@pytest.fixture
def gtp():
    """A GTP handler over a real session, driven line by line."""
    h = Harness("gtp")
    yield h
    h.close()
