"""numba's cache never runs stale code: an edit to a callee kernel in another file changes the
caller's behaviour in the next process (engine_server/kernel_cache.py).

numba checks a cached kernel against its own file only, and ``perft_bik`` (game/perft.py) calls
``legal_moves`` (game/bitboard.py): with numba's plain cache beside the sources, editing
``legal_moves`` left ``perft_bik``'s cached machine code counting the old moves.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

PROBE = """
import json, os
import numba
from engine_server.game import bitboard as bb
from engine_server.game.perft import perft_bik
n = perft_bik(bb.START_BLACK, bb.START_WHITE, 3)
hits = sum(perft_bik.stats.cache_hits.values())
print(json.dumps({"perft3": n, "hits": hits, "cache": os.environ.get("NUMBA_CACHE_DIR"),
                  "slp": numba.config.SLP_VECTORIZE}))
"""

D3 = 19  # a legal first move for black; the edit below takes it out of legal_moves


def _probe(root: Path, cache: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "OTHELLO_NUMBA_CACHE", "NUMBA_SLP_VECTORIZE")}
    env.update(PYTHONPATH=str(root), OTHELLO_NUMBA_CACHE=str(cache), **extra)
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env,
                       cwd=root, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def edit_callee_then_probe(source: Path, tmp: Path) -> list[dict]:
    """Copy the package ``source`` to a scratch directory, run the probe, run it again (the
    cache is used), edit the callee, run it a third time."""
    root, cache = tmp / "pkg", tmp / "cache"
    for name in ("engine_server", "protocol"):
        shutil.copytree(source.parent / name, root / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    first, second = _probe(root, cache), _probe(root, cache)
    bitboard = root / "engine_server" / "game" / "bitboard.py"
    text = bitboard.read_text()
    at = text.index("def legal_moves(P, O):")
    end = text.index("    return m & ~(P | O)\n", at)
    bitboard.write_text(text[:end] + f"    return m & ~(P | O) & ~(U1 << np.uint64({D3}))\n"
                        + text[end + len("    return m & ~(P | O)\n"):])
    return [first, second, _probe(root, cache)]


def test_a_callee_edit_reaches_the_cached_caller_in_the_next_process(tmp_path):
    first, second, edited = edit_callee_then_probe(REPO / "engine_server", tmp_path)
    assert first["perft3"] == second["perft3"] == 56
    assert second["hits"] > 0  # the cache works: the second process compiled nothing
    assert first["cache"] == second["cache"] and first["cache"].startswith(str(tmp_path))
    # without d3 black has 3 first moves; perft(3) must change with them
    assert edited["perft3"] != 56 and edited["hits"] == 0
    assert edited["cache"] != first["cache"]


def test_the_cache_directory_is_named_by_the_kernel_sources_only(tmp_path):
    from engine_server import kernel_cache as K

    assert Path(os.environ["NUMBA_CACHE_DIR"]).name == f"kernels-{K.source_hash()}"
    files = {p.relative_to(REPO).parts[:2] for p in K.source_files()}
    assert ("engine_server", "search") in files and ("engine_server", "game") in files
    assert ("papers", "alphazero") in files   # the AlphaZero loop's kernels
    # the kernels read the pass square of the notation at compile time
    assert ("protocol", "notation.py") in files
    # the layers above the kernels hold none and are left out: editing them keeps the cache
    assert not any(p[1] in ("commands", "serve", "agents") for p in files)
    for path in K.source_files():
        assert "njit" not in path.read_text() or {"game", "eval", "search", "training",
                                                   "alphazero"} & set(path.parts[-3:-1])
    for layer in ("commands", "serve", "agents"):
        for path in (REPO / "engine_server" / layer).rglob("*.py"):
            assert "@njit" not in path.read_text(), f"{path}: kernels belong to the kernel layers"


def test_the_vectorizer_is_on_by_default_and_its_setting_names_the_cache(tmp_path):
    # numba imported first, as training/book.py does: the setting must still reach it
    on = _probe(REPO, tmp_path)
    off = _probe(REPO, tmp_path, NUMBA_SLP_VECTORIZE="0")
    assert on["slp"] == 1 and off["slp"] == 0
    assert on["perft3"] == off["perft3"] == 56
    # code compiled one way is never loaded by a process set the other way
    assert on["cache"] != off["cache"] and on["hits"] == off["hits"] == 0
    assert _probe(REPO, tmp_path, NUMBA_SLP_VECTORIZE="0")["hits"] > 0


def test_a_copy_of_the_sources_elsewhere_loads_the_kernels_the_first_copy_compiled(tmp_path):
    # A wheel built from a checkout, or a second clone: the same sources in another place
    # share the cache (kernel_locator.py); numba's own layout compiled everything again.
    cache = tmp_path / "cache"
    roots = []
    for name in ("first", "second"):
        root = tmp_path / name / "deeper" if name == "second" else tmp_path / name
        for pkg in ("engine_server", "protocol", "training", "papers"):
            shutil.copytree(REPO / pkg, root / pkg, ignore=shutil.ignore_patterns(
                "__pycache__", "*.nbi", "*.nbc", "*.npz", "*.onnx", "*.json", "static"))
        roots.append(root)
    first, second = _probe(roots[0], cache), _probe(roots[1], cache)
    assert first["perft3"] == second["perft3"] == 56
    assert first["cache"] == second["cache"]
    assert first["hits"] == 0 and second["hits"] > 0
    # filed by their place in the project
    assert list(Path(first["cache"]).glob("engine_server/game/perft.perft_bik-*.nbi"))
