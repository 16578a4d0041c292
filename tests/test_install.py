"""The package as a user installs it: a wheel in a fresh virtual environment, run from outside
the checkout.

The wheel is built from a copy of the sources (so that nothing is written into the checkout)
with the dev environment's setuptools, offline.  The new environment sees the dev
environment's dependencies through a ``.pth`` line naming its site-packages: ``.pth`` files
inside a directory added that way are not run, so the dev environment's editable install of
this project stays invisible and only the wheel's copy can be imported.

The user's kernel cache starts as a copy of the checkout's: the same sources in another place
load what the checkout compiled (``engine_server/kernel_locator.py``), and the test checks that
the wheel recompiles none of it.  A cold compile is what ``make setup`` and the kernel cache's
own tests do; here it would cost a minute and a half of a core for no further check.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

from engine_server import __version__
from engine_server.game import PASS, Game, parse_move

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "protocol", "engine_server", "clients", "benchmarks",
           "training", "papers")


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert r.returncode == 0, f"{cmd}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def _user_env(tmp: Path) -> dict[str, str]:
    """A user's environment: no PYTHONPATH into the checkout, no numba cache directory chosen
    by this test process (kernel_cache exported it), a cache home of its own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "OTHELLO_NUMBA_CACHE", "NUMBA_CACHE_DIR", "VIRTUAL_ENV",
                        "NUMBA_CACHE_LOCATOR_CLASSES")}
    env["XDG_CACHE_HOME"] = str(tmp / "cache")
    env["HOME"] = str(tmp / "home")
    return env


def test_a_wheel_in_a_fresh_venv_has_its_data_its_cache_and_plays_a_gtp_game(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=ignore)
        else:
            shutil.copy2(REPO / name, src / name)
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
          "--no-index", "-w", str(dist)], cwd=tmp_path)
    (wheel,) = dist.glob("*.whl")
    assert f"-{__version__}-" in wheel.name

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    purelib = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
                   ).stdout.strip()
    deps = site.getsitepackages()[0] if site.getsitepackages() else sysconfig.get_paths()["purelib"]
    Path(purelib, "dev-dependencies.pth").write_text(deps + "\n", encoding="utf-8")
    _run([str(venv / "bin" / "pip"), "install", "--no-deps", "--no-index", str(wheel)])

    env = _user_env(tmp_path)
    # The user's cache, seeded with every kernel of the checkout's agents (compiled there if
    # the checkout's cache lacks them: make setup has done it); the directory is named by the
    # sources, so the wheel's must be named alike.
    _run([sys.executable, "-m", "engine_server", "--precompile"], cwd=REPO)
    dev_cache = Path(os.environ["NUMBA_CACHE_DIR"])
    cache = tmp_path / "cache" / "othello-engine" / "numba" / dev_cache.name
    # numba writes a file under a temporary name, then renames it
    shutil.copytree(dev_cache, cache, ignore=shutil.ignore_patterns("*.tmp.*"))
    seeded = {p: p.read_bytes() for p in cache.rglob("*.nbi")}
    assert list(cache.glob("engine_server/search/alphabeta/*.nbi")), "the search is not seeded"
    home = tmp_path / "elsewhere"      # outside the checkout: nothing imports from it
    home.mkdir()
    run = dict(env=env, cwd=home)
    package = Path(purelib) / "engine_server"
    where = _run([str(py), "-c", (
        "import engine_server, engine_server.eval.weights as w, engine_server.eval.net as n, "
        "engine_server.eval.book as b, engine_server.serve.web as s, benchmarks.midgame as m, "
        "clients.match.openings as o; "
        "print(engine_server.__file__); print(w.DATA_DIR); print(n.DATA_DIR); "
        "print(b.DATA_DIR); print(s.STATIC); print(m.SETS['midgame']); print(m.SETS['late']); "
        "print(engine_server.kernel_cache.configure())")], **run).stdout.split()
    assert Path(where[0]).parent == package
    for data in map(Path, where[1:7]):
        assert data.is_relative_to(Path(purelib)) and data.exists(), data
    for pattern in ("eval/data/*.npz", "eval/data/*.onnx", "eval/data/mpc-*.json",
                    "eval/data/book-*.npz", "serve/static/index.html"):
        assert list(package.glob(pattern)), pattern
    assert Path(where[7]) == cache

    # Every console script of the project answers --version.
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    for name in scripts:
        out = _run([str(venv / "bin" / name), "--version"], **run).stdout
        assert out == f"{name} {__version__}\n", name

    # A whole GTP game of the default agent (book, weights, MPC statistics, exact endgames)
    # against itself, as a GUI drives it.
    script = "\n".join(["name", "version", "boardsize 8", "clear_board"]
                       + [f"genmove {c}" for _ in range(40) for c in ("black", "white")]
                       + ["final_score", "quit"]) + "\n"
    out = _run([str(venv / "bin" / "othello-engine"), "--move-time", "0.1"], input=script,
               **run).stdout
    answers = [block.strip() for block in out.split("\n\n") if block.strip()]
    assert answers[0] == "= OthelloPy" and answers[1] == f"= {__version__}"
    moves = [a[2:] for a in answers[4:-2]]
    game = Game()
    for text in moves:
        move = parse_move(text)
        if move == PASS and game.is_over():
            continue   # a finished game answers pass for either colour
        game.play(move)
    assert game.is_over()
    r = game.result()
    score = r.black_score
    assert answers[-2] == ("= 0" if score == 0 else f"= B+{score}" if score > 0
                           else f"= W+{-score}")
    # The installed package loaded the checkout's kernels from the user's cache and compiled
    # none (numba writes or rewrites a kernel's index file when it compiles it), nothing
    # into the installed package either.
    now = {p: p.read_bytes() for p in cache.rglob("*.nbi")}
    compiled = sorted(str(p.relative_to(cache)) for p in now if now[p] != seeded.get(p))
    assert not compiled, f"the wheel compiled kernels the checkout had compiled: {compiled}"
    assert not list(package.rglob("*.nbi")) and not list(package.rglob("*.nbc"))
