"""Where numba keeps the compiled kernels: a directory named by the kernels' sources.

numba's own cache (``cache=True``) is checked against the file that defines a kernel only. Our
kernels call and inline kernels of other files (alpha-beta inlines the evaluation, the tree runs the
endgame solver and the rollouts) and read module constants at compile time, so an edit to a callee,
or an upgrade of the package, would leave the callers' cached machine code running the old behaviour
in every process that loads it. Here the cache directory is named by a hash of every source file
that kernels are made of (the ``game``, ``eval`` and ``search`` layers, the ``training`` package,
the AlphaZero loop's ``papers/alphazero`` and ``protocol/notation.py``, whose pass square the
kernels read) and of the numba, llvmlite and Python versions, so any change there starts from an
empty directory and compiles what it uses.  Inside it, a file's kernels are filed by the file's
place in the project rather than on the disk (``kernel_locator.py``), so copies of the same
sources in other places (the wheel built from a checkout, a second clone) share them.

It must run before the first kernel is decorated, so ``engine_server/__init__.py`` calls
:func:`configure` on import.  The base directory is ``$OTHELLO_NUMBA_CACHE``, else
``$NUMBA_CACHE_DIR``, else the user's cache directory (``$XDG_CACHE_HOME`` or ``~/.cache``)
``/othello-engine/numba``: writable also when the package is installed read-only.  Directories
of other source versions unused for ``KEEP_DAYS`` are removed.

It also turns on LLVM's superword-level (SLP) vectorizer, which packs the same operation on
neighbouring values into one SIMD instruction: the flips of four directions at once, the four
directions of move generation.  numba has left it off by default since 0.57 (its pull request
8852, after miscompilations under LLVM 11 and 14); under llvmlite's LLVM 22 the solver and the
midgame search take 0.82-0.86 of the time with it, on the same trees (``docs/endgame.md``,
``docs/search.md``), and the known-answer tests (perft, the FFO scores, the evaluation's
symmetries) hold.  ``NUMBA_SLP_VECTORIZE=0`` turns it off; the setting is part of
the directory's name, so the two kinds of machine code never share a cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
# The kernel layers: everything a kernel can call, inline or read at compile time.  Layers
# above them (agents, session, commands, front ends) hold no kernels and cannot be imported by
# them (tests/test_layers.py), so editing them keeps the cache.
KERNEL_SOURCES = (PACKAGE_ROOT.parent / "protocol" / "notation.py", PACKAGE_ROOT / "game",
                  PACKAGE_ROOT / "eval", PACKAGE_ROOT / "search", PACKAGE_ROOT.parent / "training",
                  PACKAGE_ROOT.parent / "papers" / "alphazero")
KEEP_DAYS = 14
# Inside that directory a project file's kernels go to a folder named by its place in the
# project, not on the disk (kernel_locator.py), so a wheel built from a checkout, or a clone
# made again elsewhere, loads what the other compiled; numba's own locators follow, in numba's
# order, for everything else.
LOCATORS = ",".join(["engine_server.kernel_locator.ProjectCacheLocator",
                     "UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator",
                     "IPythonCacheLocator", "ZipCacheLocator"])
SLP_DEFAULT = "1"
_configured: Path | None = None


def source_files() -> list[Path]:
    files = [p for p in KERNEL_SOURCES if p.is_file()]
    files += [p for d in KERNEL_SOURCES if d.is_dir() for p in d.rglob("*.py")]
    return sorted(files)


def _installed(module: str) -> str:
    """Where ``module`` is installed and its version file's size and time: any upgrade or
    reinstall changes it (importlib.metadata would cost 25 ms of start-up to read versions)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return f"{module}: none"
    origin = Path(spec.origin)
    stamps = []
    for name in ("_version.py", "version.py", "__init__.py"):
        f = origin.parent / name
        if f.is_file():
            st = f.stat()
            stamps.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return f"{module}: {origin.parent} {' '.join(stamps)}"


def slp_vectorize() -> int:
    """Whether numba's code generator runs LLVM's SLP vectorizer: 1 unless
    ``NUMBA_SLP_VECTORIZE`` says otherwise."""
    value = os.environ.get("NUMBA_SLP_VECTORIZE", SLP_DEFAULT).strip()
    try:
        return 1 if int(value) else 0
    except ValueError:
        return int(SLP_DEFAULT)


def source_hash() -> str:
    """A hash of the kernel sources (relative paths and contents), of the toolchain, of the
    vectorizer setting and of the cache's layout (the locators)."""
    h = hashlib.blake2b(digest_size=10)
    h.update(f"{sys.version}|{_installed('numba')}|{_installed('llvmlite')}|"
             f"{_installed('numpy')}|slp={slp_vectorize()}|{LOCATORS}".encode())
    for path in source_files():
        h.update(str(path.relative_to(PACKAGE_ROOT.parent)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def base_dir() -> Path:
    for var in ("OTHELLO_NUMBA_CACHE", "NUMBA_CACHE_DIR"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return root / "othello-engine" / "numba"


def _prune(base: Path, keep: Path) -> None:
    """Remove directories of other source versions not touched for ``KEEP_DAYS``."""
    cutoff = time.time() - KEEP_DAYS * 86400
    try:
        entries = list(base.iterdir())
    except OSError:
        return
    for d in entries:
        if d == keep or not d.name.startswith("kernels-"):
            continue
        try:
            if d.stat().st_mtime < cutoff:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass


def configure() -> Path:
    """Point numba's cache at this source version's directory (once per process) and return
    it.  ``OTHELLO_NUMBA_CACHE`` is set for child processes, so they agree even when they
    run with another working directory."""
    global _configured
    if _configured is not None:
        return _configured
    base = base_dir()
    slp = slp_vectorize()
    # numba reads its settings from the environment again before each compilation, so the
    # variable (not only numba.config) must say it; child processes inherit it.
    os.environ["NUMBA_SLP_VECTORIZE"] = str(slp)
    cache = base / f"kernels-{source_hash()}"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        os.utime(cache)  # marks it used, for the pruning of other versions
    except OSError:
        pass  # numba warns and runs without caching when it cannot write there
    os.environ["NUMBA_CACHE_DIR"] = str(cache)
    os.environ.setdefault("OTHELLO_NUMBA_CACHE", str(base))
    os.environ["NUMBA_CACHE_LOCATOR_CLASSES"] = LOCATORS
    if "numba" in sys.modules:  # imported before us: its configuration is already read
        sys.modules["numba"].config.CACHE_DIR = str(cache)
        sys.modules["numba"].config.SLP_VECTORIZE = slp
        sys.modules["numba"].config.CACHE_LOCATOR_CLASSES = LOCATORS
    _prune(base, cache)
    _configured = cache
    return cache


__all__ = ["KERNEL_SOURCES", "base_dir", "configure", "slp_vectorize", "source_files",
           "source_hash"]
