from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from .loadsafe import WAIT
from .protocol_harness import Harness

# Servers started by the tests (in this process or as subprocesses) keep their sessions in a
# store under the per-user data folder: a folder of this run's own, never the user's.
_DATA_HOME = tempfile.mkdtemp(prefix="othello-tests-data-")
os.environ["XDG_DATA_HOME"] = _DATA_HOME
atexit.register(shutil.rmtree, _DATA_HOME, True)

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
DATA = Path(__file__).resolve().parent / "data"

# The slow tier (`make test` runs it, `make check` leaves it out with -m "not slow"): wheel
# installs, cold compiles in second processes, soaks, fuzzing, whole games against a judge or
# between processes, the browser.  Tests mark themselves with @pytest.mark.slow or a module's
# pytestmark; the modules below do not import pytest, so they are marked here.
SLOW_MODULES = {
    "test_install.py": "builds a wheel and installs it in a fresh venv",
    "test_kernel_cache.py": "cold compiles in second processes",
    "test_numba_cache.py": "every kernel in second processes: a cold compile on a cold cache",
}
SLOW_TESTS = {
    "test_cli.py": {
        "test_bench_perft_and_search_print_json_lines": "benchmarks in a second process",
        "test_bench_eval_times_both_evaluation_kernels": "benchmarks in a second process",
        "test_bench_prints_the_latency_figures_the_tests_leave_to_it": "benchmarks",
        "test_bench_startup_times_both_typings_of_the_recursive_kernels": "four engine starts",
        "test_precompile_is_quiet_on_stderr": "compiles every kernel in a second process",
        "test_cs303_check_on_a_terminal_prints_each_line_once": "the checker's judge games",
    },
}


@pytest.hookimpl(tryfirst=True)  # before -m selects on the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.path.name
        if module in SLOW_MODULES or \
                getattr(item, "originalname", item.name) in SLOW_TESTS.get(module, {}):
            item.add_marker(pytest.mark.slow)


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


def context_carries_a_message(ctx=None, timeout_s: float = WAIT) -> bool:
    """A message over tcp between two fresh sockets of ``ctx`` (pyzmq's shared context by
    default) within ``timeout_s``."""
    import zmq

    ctx = ctx or zmq.Context.instance()
    a = ctx.socket(zmq.ROUTER)
    b = ctx.socket(zmq.DEALER)
    try:
        a.setsockopt(zmq.LINGER, 0)
        b.setsockopt(zmq.LINGER, 0)
        port = a.bind_to_random_port("tcp://127.0.0.1")
        b.connect(f"tcp://127.0.0.1:{port}")
        b.send(b"?")
        return bool(a.poll(int(timeout_s * 1000)))
    finally:
        a.close(0)
        b.close(0)


_BLOCKED_CONTEXTS: list = []


@pytest.fixture(autouse=True)
def _zmq_context_still_works(request):
    """Fail the test after which the process's shared ZeroMQ context carries nothing more.

    In two of four full runs on one machine, every ZeroMQ socket of one pytest worker stopped
    carrying messages (engines and in-process servers idle in their polls, clients waiting for
    replies) and every later ZeroMQ test there waited out its timeouts: the form a blocked libzmq
    I/O thread takes (as when a socket monitor's reader is closed while the monitor is still on).
    One way there is known and closed: a monitor's reader closed while monitoring was on (a
    client dropped without ``close()`` had its sockets closed in the collector's order; the
    channel now stops monitoring first, ``test_zmq.py`` checks it).  Whether that was the only
    one is not known, so this stays: it names the test after which it happened and gives the
    tests after it a context of their own."""
    yield
    if "zmq" not in sys.modules:
        return
    if not context_carries_a_message():
        import zmq

        # The next Context.instance() is a new context; the blocked one is kept, never
        # collected: destroying it would wait for its I/O thread for ever.
        _BLOCKED_CONTEXTS.append(zmq.Context.instance())
        zmq.Context._instance = None
        pytest.fail(f"after {request.node.nodeid} the shared ZeroMQ context carries no message "
                    "between two fresh sockets: its I/O thread is blocked")


# --- session stores: the embedded SQLite file and a real PostgreSQL server --------------------

def _postgres_missing(why: str) -> None:
    """A test that needs PostgreSQL skips, saying why; CI (OTHELLO_REQUIRE_POSTGRES=1, set by
    .ci/run after installing it) fails instead, so that the PostgreSQL store is never left
    untested there."""
    if os.environ.get("OTHELLO_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"PostgreSQL is required here (OTHELLO_REQUIRE_POSTGRES=1): {why}")
    pytest.skip(f"no PostgreSQL server for the store tests: {why}")


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server of this test process (Debian's initdb and pg_ctl, on a loopback
    port, in a temporary folder), stopped at the end."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _postgres_missing("the psycopg package is not installed (the postgres extra)")
    from benchmarks.pgserver import LocalPostgres, PostgresUnavailable

    try:
        pg = LocalPostgres().start()
    except (PostgresUnavailable, OSError) as e:
        _postgres_missing(str(e))
    yield pg
    pg.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request, tmp_path):
    """Where a fresh session store is: an SQLite file, or a new database of the PostgreSQL
    server; every test that takes it runs against both."""
    if request.param == "sqlite":
        return str(tmp_path / "sessions.sqlite3")
    return request.getfixturevalue("postgres").create_db()
