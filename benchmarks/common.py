"""Shared helpers: timing repeats, the C reference build, and JSON/human output."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO_ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port free on loopback now (for a server about to be started on it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def emit(obj: dict[str, Any], as_json: bool) -> None:
    """One result: a JSON object on one line, or ``key: value`` text for a person."""
    if as_json:
        print(json.dumps(obj), flush=True)
    else:
        print("  ".join(f"{k}={_fmt(v)}" for k, v in obj.items()), flush=True)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def c_reference_source() -> Path | None:
    """The plain C playout reference: $OTHELLO_C_REF, else ../shared/bench beside the repo."""
    env = os.environ.get("OTHELLO_C_REF")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "bench" / "playout_ref.c")
    for c in candidates:
        if c.is_file():
            return c
    return None


def build_c_reference() -> tuple[Path | None, str]:
    """Compile the C reference with ``gcc -O2`` (cached by source hash).

    Returns ``(binary, note)``; ``binary`` is None with the reason in ``note`` when it cannot be
    built (no gcc, no source).
    """
    src = c_reference_source()
    if src is None:
        return None, "C reference source not found (set OTHELLO_C_REF to playout_ref.c)"
    gcc = shutil.which("gcc")
    if gcc is None:
        return None, "gcc not found: C reference skipped"
    digest = hashlib.sha256(src.read_bytes()).hexdigest()[:16]
    out_dir = Path(tempfile.gettempdir()) / "othello-bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    binary = out_dir / f"playout_ref-{digest}"
    if not binary.exists():
        tmp = binary.with_suffix(f".tmp{os.getpid()}")
        r = subprocess.run([gcc, "-O2", "-o", str(tmp), str(src)], capture_output=True, text=True)
        if r.returncode != 0:
            return None, f"gcc failed: {r.stderr.strip()[:300]}"
        tmp.replace(binary)
    return binary, f"gcc -O2 {src.name}"


def run_c(binary: Path, *args: str) -> tuple[str, str]:
    r = subprocess.run([str(binary), *args], capture_output=True, text=True, check=True)
    return r.stdout, r.stderr


def without_book(spec: str) -> str:
    """``spec`` (a preset or an agent spec) with ``book=off`` unless it sets the book itself:
    a search benchmark times the search, not a book lookup."""
    from engine_server.config import resolve_agent

    spec = resolve_agent(spec)
    name, _, params = spec.partition(":")
    if any(p.split("=")[0].strip() == "book" for p in params.split(",") if p):
        return spec
    return f"{name}:{params},book=off" if params else f"{name}:book=off"


def out_of_book_game(seed: int, plies: int = 12, rules: str = "standard") -> Any:
    """A game of seeded random moves from the start, at least ``plies`` long and continued until
    the shipped book has no move for the side to move, so that timing and search benchmarks
    exercise the search (an agent with the book answers book positions in about 1 ms)."""
    import random

    from engine_server.eval.book import shipped
    from engine_server.game import Game, Position, Rules

    r = Rules.parse(rules)
    book = shipped(int(r))
    rng = random.Random(seed)
    game = Game(Position.start(r))
    while len(game.moves) < plies or (book is not None and book.moves(game.position)):
        if game.is_over():  # practically never: start again from the next seed
            return out_of_book_game(seed + 1_000_003, plies, rules)
        game.play(rng.choice(game.position.legal_moves()))
    return game


def in_book(position: Any) -> bool:
    """Whether the shipped book has a move in ``position`` (an agent with a book might answer
    from it without searching)."""
    from engine_server.eval.book import shipped

    book = shipped(int(position.rules))
    return bool(book is not None and book.moves(position))

