"""Tournaments: play a match's missing games and write its results.

Files in the output directory:

* ``match.json``   what defines the match (players, rules, time control, openings, seed); a
  second run with the same definition resumes, a different one is refused;
* ``journal.jsonl`` one line per finished game (a :class:`record.GameRecord`), appended and
  fsynced as each game ends: the only source of truth when resuming;
* ``games.ggf``    every game as a GGF record, one per line, rebuilt from the journal;
* ``results.json`` the results table (machine-readable), ``score_matrix.png`` and ``elo.png``.

A game is identified by (pairing, opening index, colour swap, round); resuming plays exactly the
scheduled games the journal does not hold, so no finished game is lost or played twice.

The parts live beside this module: :mod:`.config` (MatchConfig), :mod:`.schedule` (which games),
:mod:`.journal` (the directory and resume), :mod:`.progress` (the bar), :mod:`.pool` (worker
processes), :mod:`.results` (the tables).  Their public names are importable from here too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine_server.log import get_logger

from .config import FORMATS, MatchConfig, MatchError
from .journal import Journal, prepare_dir
from .pool import WorkerPool, run_pool, run_serial, run_task, worker_init
from .progress import Progress
from .record import GameFailure, GameRecord, SideStats
from .referee import GameTask, close_process_players
from .results import format_table, summarize, tally, write_results
from .schedule import labels, pairings, schedule

if TYPE_CHECKING:  # Dask is an optional extra: the cluster module is imported only when asked
    from .cluster import ClusterOptions

__all__ = [
    "FORMATS", "GameFailure", "GameRecord", "GameTask", "Journal", "MatchConfig", "MatchError",
    "Progress", "SideStats", "WorkerPool", "format_table", "labels", "pairings", "prepare_dir",
    "run_match", "run_matches", "run_pool", "run_serial", "run_task", "schedule", "summarize",
    "tally", "worker_init", "write_results",
]

log = get_logger("match.tournament")


@dataclass
class _Match:
    config: MatchConfig
    journal: Journal
    records: list[GameRecord]
    pending: list[GameTask]
    first_label: str
    stopped: str | None = None  # why no more games are started (SPRT)

    def sprt_status(self) -> str | None:
        if self.config.sprt is None:
            return None
        w, d, l = tally(self.records, self.first_label)
        return self.config.sprt.status(w, d, l)


def run_matches(configs: list[MatchConfig], concurrency: int | None = None,
                max_games: int | None = None, progress: bool = True,
                plots: bool = True, cluster: ClusterOptions | str | None = None) -> list[dict]:
    """Play every scheduled game not yet in the journals (at most ``max_games`` of them in this
    run), ``concurrency`` at a time, or on the Dask cluster ``cluster`` (a scheduler address or
    :class:`.cluster.ClusterOptions`; ``concurrency`` is then the cluster's), then write each
    match's results.  Returns the results."""
    matches: list[_Match] = []
    for config in configs:
        journal = prepare_dir(config)
        records = journal.load()
        journal.rebuild_ggf(records)
        done = {r.key for r in records}
        tasks = schedule(config)
        pending = [t for t in tasks if t.key not in done]
        first = labels(config.specs())[0]
        m = _Match(config, journal, records, pending, first)
        if m.sprt_status() in ("H0", "H1"):
            m.stopped = f"SPRT accepted {m.sprt_status()}"
            m.pending = []
        matches.append(m)
    queue: list[tuple[_Match, GameTask]] = []
    longest = max((len(m.pending) for m in matches), default=0)
    for i in range(longest):  # interleave matches so that each makes progress
        for m in matches:
            if i < len(m.pending):
                queue.append((m, m.pending[i]))
    if max_games is not None:
        queue = queue[:max_games]
    bar = Progress(len(queue), progress)

    def finish(m: _Match, outcome: GameRecord | GameFailure) -> None:
        if isinstance(outcome, GameFailure):
            log.error("game_failed", game=outcome.key, error=outcome.error,
                      traceback=outcome.traceback)
            bar.update(None)
            return
        m.journal.append(outcome)
        m.records.append(outcome)
        bar.update(outcome, m.first_label if len(matches) == 1 else None)
        status = m.sprt_status()
        if status in ("H0", "H1") and m.stopped is None:
            m.stopped = f"SPRT accepted {status}"
            log.info("sprt_stop", match=str(m.config.out), status=status)

    def skip(m: _Match) -> bool:
        return bool(m.stopped)

    workers = max(1, concurrency or os.cpu_count() or 1)
    serial = cluster is None and (workers == 1 or len(queue) <= 1)
    try:
        if cluster is not None:
            from .cluster import run_cluster

            run_cluster(queue, cluster, finish, skip)
        elif serial:
            run_serial(queue, finish, skip)
        else:
            run_pool(queue, workers, finish, skip)
    finally:
        bar.close()
        if serial:
            close_process_players()
    out = []
    for m in matches:
        m.journal.rebuild_ggf(m.records)
        results = summarize(m.config, m.records, len(schedule(m.config)), m.stopped)
        write_results(m.config, results, plots)
        out.append(results)
    return out


def run_match(config: MatchConfig, concurrency: int | None = None,
              max_games: int | None = None, progress: bool = True,
              plots: bool = True, cluster: ClusterOptions | str | None = None) -> dict:
    return run_matches([config], concurrency, max_games, progress, plots, cluster)[0]
