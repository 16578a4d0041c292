"""The CS303 judge's way of running a player file (``docs/reference/judges.md`` section 1).

The judge imports the student's file, builds ``AI(8, color, time_out)`` and calls
``go(np.copy(board))`` under ``timeout_decorator``: a SIGALRM timer whose exception is an
``AssertionError``.  Whether ``go`` returned or was interrupted, the last element of
``candidate_list`` is the move and an empty list is a pass.

One emulation for every user, so that the local checker (:mod:`clients.cs303.checker`) and the
referee's worker process (:mod:`clients.match.cs303_worker`) cannot drift apart.  Only the
standard library and numpy are imported: the worker loads this module before the student's file,
and its process should hold no more than the judge's does.
"""

from __future__ import annotations

import importlib.util
import itertools
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

BOARD_SIZE = 8
DEFAULT_TIME_OUT = 5.0       # the platform's time_out, when nothing else says
# What timeout_decorator's exception says; the checker words its own (see judge_go).
DECORATOR_MESSAGE = "Timed Out"

_loads = itertools.count()


class JudgeTimeout(AssertionError):
    """What ``timeout_decorator`` raises inside the player's ``go`` (an AssertionError)."""


@dataclass
class GoOutcome:
    elapsed: float
    timed_out: bool = False
    error: str | None = None   # formatted traceback of an exception from go
    # The exception itself, for callers that report it in their own format (the worker).
    exception: BaseException | None = field(default=None, repr=False, compare=False)


def judge_go(ai: Any, board: np.ndarray, time_out: float,
             message: str | None = None) -> GoOutcome:
    """Call ``ai.go(np.copy(board))`` the way the judge does: a SIGALRM timer of ``time_out``
    seconds that raises :class:`JudgeTimeout` (text ``message``, by default naming the limit)
    inside ``go``.  Without SIGALRM (not the main thread, or no POSIX timers) the call is only
    timed.  An exception from ``go`` is returned, not raised: the judge scores it as a loss."""
    armed = [False]
    text = f"go() ran past {time_out} s" if message is None else message

    def on_alarm(signum: int, frame: Any) -> None:
        # An alarm landing after go returned, while the timer is cancelled, is no timeout.
        if armed[0]:
            armed[0] = False
            raise JudgeTimeout(text)

    use_timer = hasattr(signal, "setitimer") and _in_main_thread()
    old = None
    if use_timer:
        # Installed per call, as the decorator does: a handler the student's import set is
        # not the one that fires inside go.
        old = signal.signal(signal.SIGALRM, on_alarm)
    t0 = time.monotonic()
    try:
        if use_timer:
            armed[0] = True
            signal.setitimer(signal.ITIMER_REAL, time_out)
        try:
            # Written as the worker always wrote it: its crash details quote this line.
            ai.go(np.copy(board))
        finally:
            armed[0] = False
            elapsed = time.monotonic() - t0
            if use_timer:
                signal.setitimer(signal.ITIMER_REAL, 0)
        return GoOutcome(elapsed)
    except JudgeTimeout:
        return GoOutcome(time.monotonic() - t0, timed_out=True)
    except Exception as e:  # the judge records any exception from go as a lost game
        return GoOutcome(time.monotonic() - t0, error=traceback.format_exc(limit=6), exception=e)
    finally:
        if use_timer:
            signal.signal(signal.SIGALRM, old)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def load_player_module(path: str | Path, module_name: str | None = None) -> ModuleType:
    """Import the file by path, under ``module_name`` or a fresh name per load (two loads give
    two independent modules, as two judge processes would)."""
    path = Path(path)
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # sibling modules import as they do beside the judge
    name = module_name or f"_cs303_player_{next(_loads)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_ai_class(path: str | Path, module_name: str | None = None) -> type:
    """The ``AI`` class of a player file (see :func:`load_player_module`)."""
    module = load_player_module(path, module_name)
    cls = getattr(module, "AI", None)
    if not isinstance(cls, type):
        raise ImportError(f"{path} defines no class AI")
    return cls


def read_candidates(ai: Any) -> list[list[int] | str]:
    """``candidate_list`` as JSON-ready ``[row, col]`` pairs; an entry that is not a pair of
    integers is kept as its ``repr``, so that the referee can reject it if it is the decision
    and ignore it otherwise, as the judge only looks at the last element."""
    out: list[list[int] | str] = []
    for c in list(getattr(ai, "candidate_list", []) or []):
        try:
            out.append([int(c[0]), int(c[1])])
        except (TypeError, ValueError, IndexError):
            out.append(repr(c))
    return out
