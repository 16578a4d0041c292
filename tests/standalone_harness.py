"""Runs an exported CS303 player the judge's way in a bare interpreter (tests/test_cs303_export.py).

Started as ``python -S standalone_harness.py PLAYER.py TIME_OUT [MAX_GOES]`` with only numpy on
``PYTHONPATH``: it first proves that this project and numba cannot be imported, loads the
player file twice under two module names (the judge imports both players into one process),
builds ``AI(8, -1, t)`` and ``AI(8, 1, t)`` and plays a whole game between them, each ``go`` on
a copy of the board under a SIGALRM timer that raises an ``AssertionError`` subclass.  The
rules here are its own few lines, independent of both the engine and the player; the caller
replays the moves with the engine to check them.  Prints one JSON line: the moves
(``[row, col]`` or null for a pass), each ``go``'s wall and CPU seconds, timeouts, and the
peak resident memory after loading numpy, after building both players and at the end.  CPU
seconds let a test tell a missed deadline (ours) from a machine too busy to run us (not ours).

Written for Python 3.7 too (no newer syntax), so the same harness can drive a real 3.7.
"""

import importlib.util
import json
import resource
import signal
import sys
import time

import numpy as np


class Timeout(AssertionError):
    pass


def numpy_only_env(root, environ):
    """Environment for ``python -S`` with numpy alone on the path: links in ``root`` to the
    installed numpy and its bundled libraries, and no other ``PYTHON*`` variable."""
    import pathlib

    src = pathlib.Path(np.__file__).resolve().parent.parent
    for name in ("numpy", "numpy.libs"):
        if (src / name).exists() and not (pathlib.Path(root) / name).exists():
            (pathlib.Path(root) / name).symlink_to(src / name)
    env = dict((k, v) for k, v in environ.items() if not k.startswith("PYTHON"))
    env["PYTHONPATH"] = str(root)
    return env


def peak_mib():
    """Peak resident memory of this process.  VmHWM, not ru_maxrss: Linux carries ru_maxrss
    over an exec, so a harness started from a big test process would report its parent's."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def importable(name):
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DIRS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


def flips(board, r, c, color):
    out = []
    for dr, dc in DIRS:
        line = []
        rr, cc = r + dr, c + dc
        while 0 <= rr < 8 and 0 <= cc < 8 and board[rr][cc] == -color:
            line.append((rr, cc))
            rr, cc = rr + dr, cc + dc
        if line and 0 <= rr < 8 and 0 <= cc < 8 and board[rr][cc] == color:
            out.extend(line)
    return out


def legal(board, color):
    return [(r, c) for r in range(8) for c in range(8)
            if board[r][c] == 0 and flips(board, r, c, color)]


def judge_go(ai, board, time_out):
    def on_alarm(signum, frame):
        raise Timeout("timed out")

    old = signal.signal(signal.SIGALRM, on_alarm)
    t0 = time.perf_counter()
    c0 = time.process_time()
    timed_out = False
    try:
        signal.setitimer(signal.ITIMER_REAL, time_out)
        try:
            ai.go(np.copy(board))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except Timeout:
        timed_out = True
    finally:
        signal.signal(signal.SIGALRM, old)
    return time.perf_counter() - t0, time.process_time() - c0, timed_out


def main():
    path, time_out = sys.argv[1], float(sys.argv[2])
    max_goes = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    leaked = [n for n in ("engine_server", "clients", "numba") if importable(n)]
    report = {"leaked": leaked, "python": sys.version.split()[0], "numpy": np.__version__,
              "peak_numpy_mib": peak_mib()}
    t0 = time.perf_counter()
    players = {-1: load(path, "player_black").AI(8, -1, time_out),
               1: load(path, "player_white").AI(8, 1, time_out)}
    report["load_seconds"] = time.perf_counter() - t0
    report["peak_loaded_mib"] = peak_mib()
    board = np.zeros((8, 8), dtype=int)
    board[3][3] = board[4][4] = 1
    board[3][4] = board[4][3] = -1
    color = -1
    moves, seconds, cpu_seconds, timeouts, problems = [], [], [], 0, []
    while len(moves) < max_goes and (legal(board, color) or legal(board, -color)):
        ai = players[color]
        took, cpu, timed_out = judge_go(ai, board, time_out)
        seconds.append(took)
        cpu_seconds.append(cpu)
        timeouts += timed_out
        expected = legal(board, color)
        cands = list(ai.candidate_list)
        if set(cands) != set(expected) or any(type(e) is not tuple for e in cands):
            problems.append("move %d: candidate_list %r, legal %r" % (len(moves), cands,
                                                                      expected))
        if not expected:
            moves.append(None)
        else:
            r, c = cands[-1]
            for rr, cc in flips(board, r, c, color) + [(r, c)]:
                board[rr][cc] = color
            moves.append([int(r), int(c)])
        color = -color
    report.update(moves=moves, seconds=seconds, cpu_seconds=cpu_seconds, timeouts=timeouts,
                  problems=problems,
                  peak_end_mib=peak_mib(), black=int((board == -1).sum()),
                  white=int((board == 1).sum()))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
