"""Games in parallel: worker processes this module starts and owns.

Each worker is a spawned :class:`multiprocessing.Process` with its own pipe and plays one game
at a time, keeping its engines between games (the per-process player cache).  Holding the
process handles ourselves is what lets an interrupt stop the run at once: every worker is sent
SIGTERM (it kills its engines and exits) and, if it has not gone within a few seconds, SIGKILL.
A worker that dies mid-game (a native crash in an in-process agent) loses only that game, which
is played again by a fresh worker; a run where workers keep dying stops with a MatchError.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection as mpc
import multiprocessing.util
import os
import signal
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any, Generic, TypeVar

from engine_server.log import get_logger

from .config import MatchError
from .record import GameFailure, GameRecord
from .referee import GameTask, close_process_players, play_game

# The name these events had before the tournament module was split: log filters select on it.
log = get_logger("match.tournament")

Owner = TypeVar("Owner")
Outcome = GameRecord | GameFailure
Work = Callable[[Any], Any]

MAX_RESTARTS = 3        # rounds of worker deaths tolerated before the run gives up
TERM_WAIT = 5.0         # seconds a terminated worker gets to kill its engines and exit


def run_task(task: GameTask) -> Outcome:
    """Play one game; a failure of the harness itself comes back as a GameFailure."""
    try:
        return GameRecord.from_dict(play_game(task))
    except Exception as e:
        return GameFailure(task.key, f"{type(e).__name__}: {e}", traceback.format_exc())


def worker_init() -> None:
    # Ctrl-C reaches the whole process group; only the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def on_term(signum: int, frame: Any) -> None:
        close_process_players(kill=True)
        os._exit(1)

    signal.signal(signal.SIGTERM, on_term)
    multiprocessing.util.Finalize(None, close_process_players, exitpriority=100)


def _worker_main(conn: mpc.Connection, work: Work) -> None:
    worker_init()
    while True:
        try:
            task = conn.recv()
        except EOFError:  # the parent is gone
            return
        if task is None:
            return
        conn.send(work(task))


@dataclass
class _Worker(Generic[Owner]):
    process: BaseProcess
    conn: mpc.Connection
    job: tuple[Owner, Any] | None = None


class WorkerPool(Generic[Owner]):
    """Up to ``size`` worker processes, started as jobs need them, one job each at a time."""

    def __init__(self, size: int, work: Work = run_task) -> None:
        self.size = size
        self.work = work
        self.ctx = multiprocessing.get_context("spawn")
        self.workers: list[_Worker[Owner]] = []

    @property
    def busy(self) -> int:
        return sum(w.job is not None for w in self.workers)

    def has_room(self) -> bool:
        return self.busy < self.size

    def _spawn(self) -> _Worker[Owner]:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker_main, args=(child, self.work),
                                name=f"match-worker-{len(self.workers) + 1}")
        proc.start()
        child.close()  # so that the worker's death reads as EOF here
        w: _Worker[Owner] = _Worker(proc, parent)
        self.workers.append(w)
        return w

    def submit(self, job: tuple[Owner, Any]) -> bool:
        """Hand ``job`` to an idle worker (started if needed); False when that worker turned out
        to be dead (it is dropped, the job not taken)."""
        w = next((w for w in self.workers if w.job is None and w.process.is_alive()), None)
        if w is None:
            w = self._spawn()
        try:
            w.conn.send(job[1])
        except OSError:
            self.workers.remove(w)
            _stop([w], signal_first=True)
            return False
        w.job = job
        return True

    def wait(self) -> tuple[list[tuple[tuple[Owner, Any], Any]], list[tuple[Owner, Any]], int]:
        """Block until something happens: (finished jobs with their outcomes, jobs lost with a
        worker that died, how many workers died)."""
        waitables: list[Any] = [w.conn for w in self.workers if w.job is not None]
        waitables += [w.process.sentinel for w in self.workers]
        ready = set(mpc.wait(waitables))
        done: list[tuple[tuple[Owner, Any], Any]] = []
        lost: list[tuple[Owner, Any]] = []
        dead: list[_Worker[Owner]] = []
        for w in self.workers:
            gone = w.process.sentinel in ready
            if w.job is not None and w.conn in ready:
                try:
                    outcome = w.conn.recv()
                except (EOFError, OSError):
                    gone = True
                else:
                    done.append((w.job, outcome))
                    w.job = None
            if gone:
                if w.job is not None:
                    lost.append(w.job)
                dead.append(w)
        for w in dead:
            self.workers.remove(w)
            _stop([w])
        return done, lost, len(dead)

    def close(self) -> None:
        """Let idle workers finish: each closes its engines and exits."""
        for w in self.workers:
            try:
                w.conn.send(None)
            except OSError:
                pass
        for w in self.workers:
            w.process.join()
            w.conn.close()
        self.workers = []

    def terminate(self) -> None:
        """Stop at once: running games are abandoned (they are not in the journal, so a resumed
        run plays them again); the workers kill their engines on SIGTERM."""
        _stop(self.workers, signal_first=True)
        self.workers = []


def _stop(workers: Iterable[_Worker[Any]], signal_first: bool = False) -> None:
    workers = list(workers)
    if signal_first:
        for w in workers:
            if w.process.is_alive():
                w.process.terminate()
    for w in workers:
        w.process.join(TERM_WAIT)
        if w.process.is_alive():
            # Stuck where SIGTERM's handler cannot run (native code): it must not outlive us.
            w.process.kill()
            w.process.join(TERM_WAIT)
        w.conn.close()


def run_pool(queue: list[tuple[Owner, Any]], workers: int,
             finish: Callable[[Owner, Any], None], skip: Callable[[Owner], bool],
             work: Work = run_task) -> None:
    """Run every job ``(owner, task)`` of ``queue`` in order, ``workers`` at a time, calling
    ``finish(owner, outcome)`` in this process as each ends.  Jobs whose ``skip(owner)`` is true
    when their turn comes are dropped (a match the SPRT has decided)."""
    todo = deque(queue)
    pool: WorkerPool[Owner] = WorkerPool(min(workers, len(todo)), work)
    restarts = 0
    try:
        while True:
            refused = False
            while todo and pool.has_room():
                job = todo.popleft()
                if skip(job[0]):
                    continue
                if not pool.submit(job):
                    todo.appendleft(job)
                    refused = True
                    break
            done, lost, died = pool.wait() if pool.busy else ([], [], 0)
            for (owner, _), outcome in done:
                finish(owner, outcome)
            if died or refused:
                restarts += 1
                log.error("worker_died", restarts=restarts, games=[task_key(t) for _, t in lost])
                todo.extendleft(reversed(lost))  # lost games first, in their order
                if restarts > MAX_RESTARTS:
                    raise MatchError("worker processes keep dying; see the log")
            elif not todo and not pool.busy:
                break
        pool.close()
    except BaseException:
        pool.terminate()
        raise


def task_key(task: Any) -> str:
    """The game key of a task (a GameTask's ``key``; any other job prints itself)."""
    return str(getattr(task, "key", task))


def run_serial(queue: list[tuple[Owner, Any]], finish: Callable[[Owner, Any], None],
               skip: Callable[[Owner], bool], work: Work = run_task) -> None:
    """The same as :func:`run_pool` in this process (engines are kept in its player cache)."""
    for owner, task in queue:
        if skip(owner):
            continue
        finish(owner, work(task))
