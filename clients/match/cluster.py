"""Games on a Dask cluster: ``othello-match ... --cluster tcp://HOST:8786``.

The same jobs as :mod:`.pool` (one ``(owner, task)`` per game, ``work(task)`` played where it
runs), handed to the workers of a running Dask scheduler instead of local processes.  Each game
is one Dask task; its engines are started on the worker that plays it and kept there between
games in that process's player cache (:data:`.referee.PROCESS_PLAYERS`), which is why workers
should run ``--nthreads 1``: the cache and the engines are one game's at a time.  Outcomes come
back to this process, which alone writes the journal (through the ``finish`` callback the
tournament also gives the local pool), so nothing about resuming changes.

Faults: when a worker dies mid-game the scheduler runs that task again on another worker (Dask's
own rescheduling); a game that keeps killing workers ends as ``KilledWorker`` and stops the run
with a MatchError, as the local pool does when its workers keep dying.  A game is handed to
``finish`` at most once, by its game key, whatever the cluster reports.  Only a bounded window of
games is submitted ahead (twice the cluster's threads), so that an SPRT decision or Ctrl-C drops
the games not yet started, and a client killed outright leaves little queued work behind: its
futures are released by the scheduler when its connection drops.

Dask (``distributed``) is the optional ``cluster`` extra; this module is imported only when a
cluster is asked for.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import CancelledError
from dataclasses import dataclass
from typing import Any, TypeVar

from distributed import Client, KilledWorker, Security, as_completed
from distributed.diagnostics.plugin import WorkerPlugin

from engine_server.log import get_logger

from .config import MatchError
from .pool import Work, run_task, task_key
from .referee import close_process_players

log = get_logger("match.cluster")

Owner = TypeVar("Owner")

CONNECT_TIMEOUT = 30.0  # seconds to reach the scheduler before the run is refused
WINDOW_REFRESH = 2.0    # seconds between looks at how many threads the cluster has (workers come
                        # and go; one look per game would cost a round trip per game)
RETRIES = 1             # an exception raised by the task itself (not a forfeit: run_task turns a
                        # failed game into a GameFailure) is tried once more, for transient faults
                        # of a worker such as a full disk


@dataclass(frozen=True)
class ClusterOptions:
    """Where the scheduler is and how to reach it.  With no TLS files the client takes Dask's own
    configuration (``distributed.comm.tls.*`` in ``~/.config/dask/*.yaml`` or ``DASK_*``
    variables), so a site-wide TLS setup needs no flags."""

    address: str
    tls_ca_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    def security(self, every_role: bool = False) -> Security | None:
        """Mutual TLS as a client (``every_role``: also as the scheduler and the workers, for a
        cluster of one machine with one certificate)."""
        if not (self.tls_ca_file or self.tls_cert or self.tls_key):
            return None
        if not (self.tls_ca_file and self.tls_cert and self.tls_key):
            raise MatchError("TLS needs --tls-ca-file, --tls-cert and --tls-key together")
        roles = ("client", "scheduler", "worker") if every_role else ("client",)
        files = {}
        for role in roles:
            files[f"tls_{role}_cert"], files[f"tls_{role}_key"] = self.tls_cert, self.tls_key
        return Security(tls_ca_file=self.tls_ca_file, require_encryption=True, **files)


class EnginePlugin(WorkerPlugin):
    """Closes the engines a worker kept between games when that worker shuts down (engine
    subprocesses would otherwise outlive it)."""

    name = "othello-match-engines"

    def setup(self, worker: Any) -> None:
        nthreads = getattr(worker, "state", worker).nthreads
        if nthreads > 1:
            # the player cache hands an idle engine to one game at a time per process
            log.warning("worker_threads", worker=str(worker.address), nthreads=nthreads,
                        advice="start workers with --nthreads 1")

    def teardown(self, worker: Any) -> None:
        close_process_players(kill=True)


def connect(options: ClusterOptions | str) -> Client:
    opts = ClusterOptions(options) if isinstance(options, str) else options
    try:
        return Client(opts.address, security=opts.security(), timeout=CONNECT_TIMEOUT,
                      set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise MatchError(f"cannot reach the Dask scheduler at {opts.address}: {e}") from None


def _threads(client: Client) -> int:
    try:
        return sum(client.nthreads().values())
    except (OSError, TimeoutError):
        return 0


def run_cluster(queue: list[tuple[Owner, Any]], options: ClusterOptions | str,
                finish: Callable[[Owner, Any], None], skip: Callable[[Owner], bool],
                work: Work = run_task, shared: Any = None) -> None:
    """Run every job ``(owner, task)`` of ``queue`` on the cluster's workers, calling
    ``finish(owner, outcome)`` here as each ends (in completion order).  Jobs whose
    ``skip(owner)`` is true when their turn comes are dropped.  The same contract as
    :func:`.pool.run_pool`.  With ``shared`` (data every task needs, such as a weight table)
    the work is ``work(task, shared)`` and ``shared`` is sent to each worker once, not with
    every task."""
    if not queue:  # a finished match needs no cluster, reachable or not
        return
    todo = deque(queue)
    client = connect(options)
    run = uuid.uuid4().hex[:8]  # keys of this run, distinct from any other client's
    numbers = itertools.count()
    running: dict[str, tuple[Owner, Any]] = {}
    futures: dict[str, Any] = {}
    finished: set[str] = set()
    window, looked = 2, -WINDOW_REFRESH
    try:
        completed = as_completed(loop=client.loop)  # the client is not Dask's default one
        client.register_plugin(EnginePlugin(), name=EnginePlugin.name)
        extra = () if shared is None else (client.scatter(shared, broadcast=True, hash=False),)
        while True:
            now = time.monotonic()
            if now - looked >= WINDOW_REFRESH:
                # at least two ahead so that a worker never waits for the round trip
                window, looked = max(2, 2 * _threads(client)), now
            while todo and len(running) < window:
                job = todo.popleft()
                if skip(job[0]):
                    continue
                key = f"othello-game-{run}-{next(numbers)}"
                fut = client.submit(work, job[1], *extra, key=key, pure=False,
                                    retries=RETRIES)
                running[key], futures[key] = job, fut
                completed.add(fut)
            if not running:
                break
            fut = next(completed)
            key = str(fut.key)  # the string this run gave it
            job = running.pop(key)
            futures.pop(key)
            game = task_key(job[1])
            try:
                outcome = fut.result()
            except KilledWorker as e:
                raise MatchError(f"game {game} killed every worker that played it ({e}); "
                                 "see the workers' logs") from None
            except CancelledError:
                # the scheduler went away (or another client cancelled the run's keys)
                raise MatchError(f"the cluster dropped game {game}; run the same command "
                                 "again to resume") from None
            finally:
                fut.release()
            if game in finished:
                log.warning("duplicate_result_dropped", game=game)
                continue
            finished.add(game)
            finish(job[0], outcome)
    except BaseException:
        # games not finished are not in the journal: a resumed run plays them again
        try:
            client.cancel(list(futures.values()), force=True)
        except (OSError, TimeoutError, RuntimeError) as e:  # the scheduler may be gone
            log.warning("cancel_failed", error=str(e))
        raise
    finally:
        client.close()


def start_local(workers: int, host: str = "127.0.0.1", port: int = 8786,
                dashboard: str | None = None, options: ClusterOptions | None = None) -> Any:
    """A scheduler and ``workers`` single-threaded worker processes on this machine (what
    ``othello-match cluster`` runs); returns the ``LocalCluster``."""
    from distributed import LocalCluster

    security = options.security(every_role=True) if options is not None else None
    kw: dict[str, Any] = {}
    if security is not None:
        kw = {"security": security, "protocol": "tls://"}
    try:
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host=host,
                            scheduler_port=port, dashboard_address=dashboard, **kw)
    except OSError as e:
        raise MatchError(f"cannot start a scheduler on {host}:{port}: {e}") from None
