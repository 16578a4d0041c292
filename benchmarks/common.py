"""Shared helpers: timing repeats, the C reference build, and JSON/human output."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO_ROOT = Path(__file__).resolve().parent.parent


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
